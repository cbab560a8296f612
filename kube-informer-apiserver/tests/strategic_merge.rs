//! Strategic merge patch over HTTP against the embedded server: the patches `kubectl apply` sends for a
//! multi-container Deployment store exactly what kube-apiserver stores; status, concurrency and errors as for the
//! other patch types; custom resources answer 415 as kube-apiserver's do.

mod common;
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::object::ApiResource;
use kube_informer_apiserver::{ApiServer, ResourceSpec};
use raw_http::*;
use serde_json::{Value, json};

const SMP: &str = "application/strategic-merge-patch+json";

fn deployments(server: &ApiServer) -> String {
    format!("{}/apis/apps/v1/namespaces/default/deployments", server.url())
}

fn containers() -> Value {
    json!([
        {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
         "env": [{"name": "MODE", "value": "prod"}]},
        {"name": "cache", "image": "redis:7", "ports": [{"containerPort": 6379, "protocol": "TCP"}]},
    ])
}

/// The parts of a stored object a client wrote (no server-set metadata).
fn written(v: &Value) -> Value {
    json!({"labels": v["metadata"]["labels"], "spec": v["spec"]})
}

fn no_directive(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().all(|(k, v)| !k.starts_with('$') && no_directive(v)),
        Value::Array(a) => a.iter().all(no_directive),
        _ => true,
    }
}

#[test]
fn kubectl_apply_patches_store_what_kube_apiserver_stores() {
    let server = ApiServer::start().unwrap();
    let url = deployments(&server);
    let spec = |containers: Value| {
        json!({"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
               "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}})
    };
    let (code, created) = post(
        &url,
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "labels": {"app": "web"}}, "spec": spec(containers())}),
    );
    assert_eq!(code, 201, "{created}");
    // What the server stores for a manifest with these containers, written as a whole (defaults included).
    let mut n = 0;
    let mut stored_for = |containers: Value| {
        n += 1;
        let (code, made) = post(
            &url,
            &json!({"metadata": {"name": format!("want-{n}"), "labels": {"app": "web"}}, "spec": spec(containers)}),
        );
        assert_eq!(code, 201, "{made}");
        written(&made)
    };

    // kubectl apply, one image changed: the patch names only the changed container, plus the element order.
    let (code, after) = send(
        "PATCH",
        &format!("{url}/web"),
        SMP,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"web"},{"name":"cache"}],"containers":[{"image":"nginx:1.28","name":"web"}]}}}}"#,
    );
    assert_eq!(code, 200, "{after}");
    let mut want = containers();
    want[0]["image"] = json!("nginx:1.28");
    let stored = get(&format!("{url}/web")).1;
    assert_eq!(written(&stored), stored_for(want.clone()));
    assert_eq!(stored, after);
    assert_eq!(stored["metadata"]["generation"], 2);

    // kubectl apply with the cache container removed from the manifest.
    let (code, after) = send(
        "PATCH",
        &format!("{url}/web"),
        SMP,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"web"}],"containers":[{"$patch":"delete","name":"cache"}]}}}}"#,
    );
    assert_eq!(code, 200, "{after}");
    let stored = get(&format!("{url}/web")).1;
    assert_eq!(written(&stored), stored_for(json!([want[0].clone()])));

    // A new container with a port and an env var; an env var of the first one removed, one added.
    let (code, after) = send(
        "PATCH",
        &format!("{url}/web"),
        SMP,
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"web"},{"name":"sidecar"}],"containers":[{"$setElementOrder/env":[{"name":"LEVEL"}],"env":[{"name":"LEVEL","value":"debug"},{"$patch":"delete","name":"MODE"}],"name":"web"},{"image":"envoy:1","name":"sidecar","ports":[{"containerPort":9901}]}]}}}}"#,
    );
    assert_eq!(code, 200, "{after}");
    assert!(no_directive(&after), "{after}");
    let mut web = want[0].clone();
    web["env"] = json!([{"name": "LEVEL", "value": "debug"}]);
    let sidecar = json!({"name": "sidecar", "image": "envoy:1", "ports": [{"containerPort": 9901}]});
    assert_eq!(written(&after), stored_for(json!([web, sidecar])));
    assert_eq!(get(&format!("{url}/web")).1, after);
}

#[test]
fn status_concurrency_and_dry_run_hold_for_strategic_patches() {
    let server = ApiServer::start().unwrap();
    let pods = format!("{}/api/v1/namespaces/default/pods", server.url());
    let (_, pod) = post(
        &pods,
        &json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    );
    let status = |body: &str| send("PATCH", &format!("{pods}/p/status"), SMP, body);
    let (code, v) = status(r#"{"status":{"conditions":[{"type":"Ready","status":"False"}]},"spec":{"nodeName":"n"}}"#);
    assert_eq!(code, 200, "{v}");
    let (code, v) = status(r#"{"status":{"conditions":[{"type":"Scheduled","status":"True"}]}}"#);
    assert_eq!(code, 200, "{v}");
    // Conditions merge by type; the status write leaves the spec alone.
    assert_eq!(
        v["status"]["conditions"],
        json!([{"type": "Scheduled", "status": "True"}, {"type": "Ready", "status": "False"}])
    );
    assert!(v["spec"].get("nodeName").is_none());

    let main = |body: &str| send("PATCH", &format!("{pods}/p"), SMP, body);
    let stale = pod["metadata"]["resourceVersion"].as_str().unwrap();
    let (code, st) = main(&format!(
        r#"{{"metadata":{{"resourceVersion":"{stale}","labels":{{"a":"1"}}}}}}"#
    ));
    assert_eq!((code, st["reason"].as_str()), (409, Some("Conflict")), "{st}");
    let (code, v) = send(
        "PATCH",
        &format!("{pods}/p?dryRun=All"),
        SMP,
        r#"{"metadata":{"labels":{"a":"1"}}}"#,
    );
    assert_eq!((code, v["metadata"]["labels"]["a"].as_str()), (200, Some("1")));
    assert!(get(&format!("{pods}/p")).1["metadata"].get("labels").is_none());
    assert_eq!(main("{}").0, 200);
    assert_eq!(send("PATCH", &format!("{pods}/nope"), SMP, "{}").0, 404);
}

#[test]
fn malformed_strategic_patches_get_kube_apiserver_answers() {
    let server = ApiServer::start().unwrap();
    let url = deployments(&server);
    let (_, created) = post(
        &url,
        &json!({"metadata": {"name": "d"},
                "spec": {"selector": {"matchLabels": {"a": "b"}},
                         "template": {"spec": {"containers": containers(), "imagePullSecrets": []}}}}),
    );
    let patch = |body: &str| send("PATCH", &format!("{url}/d"), SMP, body);
    let (code, st) = patch(r#"{"metadata":{"$retainKeys":"name"}}"#);
    assert_eq!(
        (code, st["reason"].as_str(), st["message"].as_str()),
        (400, Some("BadRequest"), Some("invalid patch format of retainKeys"))
    );
    let (code, st) = patch(r#"{"metadata":{"$deleteFromPrimitiveList":["x"]}}"#);
    assert_eq!(
        (code, st["message"].as_str()),
        (400, Some("invalid patch format of primitive list"))
    );
    let (code, st) = patch(r#"{"spec":{"template":{"spec":{"imagePullSecrets":[["x"]]}}}}"#);
    assert_eq!(
        (code, st["reason"].as_str(), st["message"].as_str()),
        (
            422,
            Some("Invalid"),
            Some("the server rejected our request due to an error in our request")
        )
    );
    let (code, st) = patch(r#"{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#);
    assert_eq!(
        (code, st["message"].as_str()),
        (500, Some("map: map[image:x] does not contain declared merge key: name"))
    );
    let (code, st) = patch("[]");
    assert_eq!(
        (code, st["message"].as_str()),
        (
            400,
            Some("json: cannot unmarshal array into Go value of type map[string]interface {}")
        )
    );
    assert_eq!(patch("{").0, 400);
    // Nothing of it was stored.
    assert_eq!(get(&format!("{url}/d")).1, created);
}

#[test]
fn resources_without_strategic_information_answer_415_as_custom_resources_do() {
    let crd_like = |kind: &str, plural: &str| ApiResource::new("example.com", "v1", kind, plural, true);
    let server = ApiServer::builder()
        .resource(ResourceSpec::new(crd_like("Widget", "widgets")))
        .resource(ResourceSpec::new(crd_like("Gadget", "gadgets")).schema(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"parts": {
                "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            }}}},
        })))
        .start()
        .unwrap();
    for plural in ["widgets", "gadgets"] {
        let url = format!("{}/apis/example.com/v1/namespaces/default/{plural}", server.url());
        let (code, _) = post(
            &url,
            &json!({"metadata": {"name": "w"}, "spec": {"parts": [{"name": "a"}]}}),
        );
        assert_eq!(code, 201);
        for ct in [SMP, "text/plain"] {
            let (code, st) = send("PATCH", &format!("{url}/w"), ct, r#"{"spec":{"parts":[{"name":"b"}]}}"#);
            assert_eq!(
                (code, st["reason"].as_str(), st["message"].as_str()),
                (
                    415,
                    Some("UnsupportedMediaType"),
                    Some(
                        "the body of the request was in an unknown format - accepted media types include: \
                         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
                    )
                ),
                "{plural} {ct}"
            );
        }
        let (code, v) = send(
            "PATCH",
            &format!("{url}/w"),
            "application/merge-patch+json",
            r#"{"spec":{"parts":[{"name":"b"}]}}"#,
        );
        assert_eq!((code, &v["spec"]["parts"]), (200, &json!([{"name": "b"}])));
    }
    // A built-in kind lists strategic merge patch among the types it takes.
    let (code, st) = send(
        "PATCH",
        &format!("{}/api/v1/namespaces/default/configmaps/x", server.url()),
        "text/plain",
        "{}",
    );
    assert_eq!(code, 415);
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .ends_with("application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"),
        "{st}"
    );
}
