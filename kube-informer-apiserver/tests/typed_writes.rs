//! Built-in objects are decoded as kube-apiserver decodes them into its Go types, on every write: a field of the
//! wrong type is refused with kube-apiserver's status and words (a body's 400, a patch's 422, server-side apply's
//! 500), whatever `fieldValidation` says, and no accepted write leaves an object a typed client cannot read back.

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::client::Api;
use kube_informer::object::core::ConfigMap;
use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

fn message(st: &Value) -> &str {
    st["message"].as_str().unwrap_or_default()
}

#[test]
fn wrongly_typed_bodies_get_kube_apiservers_400() {
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    let cases = [
        (
            json!({"metadata": {"name": "a"}, "data": {"k": {"nested": "object"}}}),
            "json: cannot unmarshal object into Go struct field ConfigMap.data of type string",
        ),
        (
            json!({"metadata": {"name": "b"}, "immutable": "yes"}),
            "json: cannot unmarshal string into Go struct field ConfigMap.immutable of type bool",
        ),
    ];
    for (body, want) in cases {
        let (code, st) = post(&url, &body);
        assert_eq!(code, 400, "{st}");
        assert_eq!(st["reason"], "BadRequest");
        assert_eq!(
            message(&st),
            format!("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: {want}")
        );
        // Whatever fieldValidation asks: the decoding fails before it.
        let (code, _) = post(&format!("{url}?fieldValidation=Ignore"), &body);
        assert_eq!(code, 400);
    }
    let services = format!("{}/api/v1/namespaces/default/services", server.url());
    let (code, st) = post(
        &services,
        &json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": "eighty"}]}}),
    );
    assert_eq!(code, 400, "{st}");
    assert_eq!(
        message(&st),
        "Service in version \"v1\" cannot be handled as a Service: json: cannot unmarshal string into Go struct field \
         ServicePort.spec.ports.port of type int32"
    );
    // An update too.
    make(&server, "default", "kept", json!({}));
    let (code, st) = put(
        &format!("{url}/kept"),
        &json!({"metadata": {"name": "kept"}, "data": {"k": 1}}),
    );
    assert_eq!(code, 400, "{st}");
    assert!(message(&st).ends_with("json: cannot unmarshal number into Go struct field ConfigMap.data of type string"));
    // The first problem in the body's order is the one named (Go's decoder reads in order).
    for (body, field) in [
        (
            r#"{"metadata":{"name":"web"},"spec":{"ports":[{"port":"eighty","name":5}]}}"#,
            "port of type int32",
        ),
        (
            r#"{"metadata":{"name":"web"},"spec":{"ports":[{"name":5,"port":"eighty"}]}}"#,
            "name of type string",
        ),
    ] {
        let (code, st) = send("POST", &services, "application/json", body);
        assert_eq!(code, 400);
        assert!(
            message(&st).ends_with(&format!("ServicePort.spec.ports.{field}")),
            "{st}"
        );
    }
}

#[test]
fn wrongly_typed_patch_results_get_kube_apiservers_answers() {
    let server = ApiServer::start().unwrap();
    make(&server, "default", "target", json!({}));
    let url = format!("{}/target", cms(&server, "default"));
    let to_object = json!({"data": {"k": {"a": "b"}}});
    // JSON and merge patches: 422, the patched object as the invalid value.
    for (ct, body) in [
        (
            "application/json-patch+json",
            json!([{"op": "add", "path": "/data", "value": {"k": {"a": "b"}}}]),
        ),
        ("application/merge-patch+json", to_object.clone()),
    ] {
        let (code, st) = send("PATCH", &url, ct, &body.to_string());
        assert_eq!(code, 422, "{ct}: {st}");
        assert_eq!(st["reason"], "Invalid");
        let m = message(&st);
        assert!(m.starts_with(r#" "" is invalid: patch: Invalid value: "{"#), "{m}");
        assert!(
            m.ends_with(r#"": json: cannot unmarshal object into Go struct field ConfigMap.data of type string"#),
            "{m}"
        );
        assert_eq!(st["details"]["causes"][0]["field"], "patch");
    }
    // A strategic merge patch: the unstructured converter's words, the patch printed as Go prints it.
    let (code, st) = send(
        "PATCH",
        &url,
        "application/strategic-merge-patch+json",
        &to_object.to_string(),
    );
    assert_eq!(code, 422, "{st}");
    assert_eq!(
        message(&st),
        r#" "" is invalid: patch: Invalid value: "map[data:map[k:map[a:b]]]": unrecognized type: string"#
    );
    // Server-side apply: a value its schema takes (a number for an int32) that the Go type does not: 500.
    let deployments = format!("{}/apis/apps/v1/namespaces/default/deployments", server.url());
    let apply = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 1.5, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (code, st) = send(
        "PATCH",
        &format!("{deployments}/d?fieldManager=test"),
        "application/apply-patch+yaml",
        &apply.to_string(),
    );
    assert_eq!(code, 500, "{st}");
    assert!(message(&st).ends_with("cannot convert float64 to int32"), "{st}");
    // Nothing was stored.
    let (_, v) = get(&url);
    assert_eq!(v["data"], json!({"v": "0"}));
}

/// A deterministic xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

#[test]
fn no_accepted_write_breaks_a_typed_clients_list() {
    let server = ApiServer::start().unwrap();
    let api = Api::<ConfigMap>::namespaced(server.client().unwrap(), "default");
    let url = cms(&server, "default");
    for i in 0..4 {
        make(&server, "default", &format!("cm-{i}"), json!({}));
    }
    let values = [
        json!("text"),
        json!(42),
        json!(1.5),
        json!(true),
        json!(null),
        json!({"nested": "object"}),
        json!(["list"]),
        json!("2024-01-02T03:04:05Z"),
        json!("aGk="),
        json!("not base64!"),
    ];
    let paths = [
        "/data/k",
        "/data",
        "/binaryData/b",
        "/binaryData",
        "/immutable",
        "/metadata/labels",
        "/metadata/labels/l",
        "/metadata/annotations/a",
        "/metadata/finalizers",
        "/metadata/creationTimestamp",
        "/metadata/ownerReferences",
        "/metadata/generateName",
    ];
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..300 {
        let name = format!("cm-{}", rng.next() % 4);
        let path = *rng.pick(&paths);
        let value = rng.pick(&values).clone();
        // Containers first, so that deeper paths have somewhere to go.
        let ops = json!([
            {"op": "add", "path": "/data", "value": {}},
            {"op": "add", "path": "/binaryData", "value": {}},
            {"op": "add", "path": "/metadata/labels", "value": {}},
            {"op": "add", "path": "/metadata/annotations", "value": {}},
            {"op": "add", "path": path, "value": value},
        ]);
        let (code, st) = send(
            "PATCH",
            &format!("{url}/{name}"),
            "application/json-patch+json",
            &ops.to_string(),
        );
        match code {
            200 => accepted += 1,
            400 | 422 => refused += 1,
            other => panic!("{path} = {value}: {other} {st}"),
        }
        // Whatever was accepted, a typed client reads the whole list.
        let list = api
            .list(&Default::default())
            .unwrap_or_else(|e| panic!("after {path} = {value} ({code}): {e}"));
        assert_eq!(list.items.len(), 4);
    }
    assert!(accepted > 20 && refused > 20, "accepted {accepted}, refused {refused}");
}
