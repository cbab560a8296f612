//! Protobuf request bodies over HTTP (`application/vnd.kubernetes.protobuf`), as kubectl 1.3x and client-go's
//! typed clients send them: created and updated objects are stored as the JSON kube-apiserver would decode, the
//! answers are JSON, and kinds with no protobuf message (custom resources) keep kube-apiserver's 415.

mod common;
#[path = "common/raw_http.rs"]
mod raw_http;

use common::fixture;
use kube_informer::object::ApiResource;
use kube_informer_apiserver::{ApiServer, ResourceSpec};
use raw_http::agent;
use serde_json::{Value, json};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// The Accept header kubectl 1.32 sends with protobuf bodies.
const KUBECTL_ACCEPT: &str = "application/vnd.kubernetes.protobuf,application/json";

/// Sends `body` with `content_type` and kubectl's Accept; (status, content type of the answer, JSON answer).
fn send(method: &str, url: &str, content_type: &str, body: &[u8]) -> (u16, String, Value) {
    let a = agent();
    let req = match method {
        "POST" => a.post(url),
        "PUT" => a.put(url),
        "DELETE" => a.delete(url).force_send_body(),
        m => panic!("{m}"),
    };
    let r = req
        .header("Content-Type", content_type)
        .header("Accept", KUBECTL_ACCEPT)
        .send(body)
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let code = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = r.into_body().read_to_string().unwrap();
    (code, ct, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn get(url: &str) -> Value {
    let text = agent().get(url).call().unwrap().into_body().read_to_string().unwrap();
    serde_json::from_str(&text).unwrap()
}

fn kubectl_body(name: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("protobuf/{name}.bin"))).unwrap()
}

fn kubectl_json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(&format!("protobuf/{name}.json"))).unwrap()).unwrap()
}

/// The stored object less what the server sets (uid, resourceVersion, creationTimestamp, generation, the managed
/// fields' times).
fn user_part(mut v: Value) -> Value {
    let meta = v["metadata"].as_object_mut().unwrap();
    for k in ["uid", "resourceVersion", "creationTimestamp", "generation", "namespace"] {
        meta.remove(k);
    }
    // The managed fields' times are the writes' own.
    for entry in meta
        .get_mut("managedFields")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        entry.as_object_mut().unwrap().remove("time");
    }
    v
}

// Minimal protobuf writing for hand-made bodies.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

fn field(number: u64, payload: &[u8]) -> Vec<u8> {
    [varint(number << 3 | 2), varint(payload.len() as u64), payload.to_vec()].concat()
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
    [b"k8s\0".to_vec(), field(1, &type_meta), field(2, raw)].concat()
}

/// A ConfigMap `name` at `resource_version` with data {key: value}.
fn config_map(name: &str, resource_version: &str, key: &str, value: &str) -> Vec<u8> {
    let meta = [field(1, name.as_bytes()), field(6, resource_version.as_bytes())].concat();
    let entry = [field(1, key.as_bytes()), field(2, value.as_bytes())].concat();
    envelope("v1", "ConfigMap", &[field(1, &meta), field(2, &entry)].concat())
}

#[test]
fn kubectl_create_bodies_are_stored_as_kubectl_would_have_sent_them_in_json() {
    let server = ApiServer::start().unwrap();
    for (name, path) in [
        ("configmap", "/api/v1/namespaces/default/configmaps"),
        ("secret-generic", "/api/v1/namespaces/default/secrets"),
        ("deployment", "/apis/apps/v1/namespaces/default/deployments"),
        ("namespace", "/api/v1/namespaces"),
        ("service-clusterip", "/api/v1/namespaces/default/services"),
    ] {
        let url = format!(
            "{}{path}?fieldManager=kubectl-create&fieldValidation=Strict",
            server.url()
        );
        let (code, ct, created) = send("POST", &url, PROTOBUF, &kubectl_body(name));
        assert_eq!((code, ct.as_str()), (201, "application/json"), "{name}: {created}");
        let obj_name = created["metadata"]["name"].as_str().unwrap();
        let stored = get(&format!("{}{path}/{obj_name}", server.url()));
        assert_eq!(stored, created, "{name}");
        // Exactly what the same object sent as JSON (kubectl's own JSON of it) gives, less what the server makes up
        // (tests/defaults.rs compares both with what kube-apiserver stores).
        let from_json = ApiServer::start().unwrap();
        let url = format!("{}{path}?fieldManager=kubectl-create", from_json.url());
        let (code, _, want) = send(
            "POST",
            &url,
            "application/json",
            kubectl_json(name).to_string().as_bytes(),
        );
        assert_eq!(code, 201, "{name}: {want}");
        assert_eq!(
            without_cluster_ip(user_part(stored)),
            without_cluster_ip(user_part(want)),
            "{name}"
        );
    }
}

/// A service's allocated address, which differs between servers.
fn without_cluster_ip(mut v: Value) -> Value {
    if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    v
}

#[test]
fn protobuf_updates_keep_optimistic_concurrency() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let (code, _, created) = send("POST", &url, PROTOBUF, &config_map("c", "", "k", "1"));
    assert_eq!(code, 201, "{created}");
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let (code, _, updated) = send("PUT", &format!("{url}/c"), PROTOBUF, &config_map("c", &rv, "k", "2"));
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["data"], json!({"k": "2"}));
    // The same stale resourceVersion again: 409, as for a JSON body.
    let (code, _, st) = send("PUT", &format!("{url}/c"), PROTOBUF, &config_map("c", &rv, "k", "3"));
    assert_eq!((code, st["reason"].as_str()), (409, Some("Conflict")));
    assert_eq!(get(&format!("{url}/c"))["data"], json!({"k": "2"}));
}

#[test]
fn protobuf_delete_options_are_read() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let (code, _, created) = send("POST", &url, PROTOBUF, &config_map("c", "", "k", "1"));
    assert_eq!(code, 201);
    let uid = created["metadata"]["uid"].as_str().unwrap();
    let options = |uid: &str| envelope("v1", "DeleteOptions", &field(2, &field(1, uid.as_bytes())));
    // A uid precondition that does not hold: 409, and the object stays.
    let (code, _, st) = send("DELETE", &format!("{url}/c"), PROTOBUF, &options("another-uid"));
    assert_eq!((code, st["reason"].as_str()), (409, Some("Conflict")), "{st}");
    let (code, _, st) = send("DELETE", &format!("{url}/c"), PROTOBUF, &options(uid));
    assert_eq!((code, st["status"].as_str()), (200, Some("Success")), "{st}");
    let (code, _, st) = send("DELETE", &format!("{url}/c"), PROTOBUF, b"k8s\0\x0a");
    assert_eq!((code, st["reason"].as_str()), (400, Some("BadRequest")), "{st}");
}

#[test]
fn undecodable_bodies_get_kube_apiservers_answers() {
    let widgets = ApiResource::new("example.com", "v1", "Widget", "widgets", true);
    let server = ApiServer::builder()
        .resource(ResourceSpec::new(widgets))
        .start()
        .unwrap();
    let cms = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    // Not a protobuf message.
    let (code, _, st) = send("POST", &cms, PROTOBUF, b"{}");
    assert_eq!((code, st["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        st["message"],
        "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a \
         protobuf message, expected prefix [107 56 115 0] ({})"
    );
    // A Secret sent to configmaps decodes, then is refused as a JSON one would be.
    let (code, _, st) = send("POST", &cms, PROTOBUF, &kubectl_body("secret-generic"));
    assert_eq!((code, st["reason"].as_str()), (400, Some("BadRequest")), "{st}");
    // A media type no resource decodes.
    let (code, _, st) = send("POST", &cms, "text/plain", b"x");
    assert_eq!((code, st["reason"].as_str()), (415, Some("UnsupportedMediaType")));
    assert_eq!(
        st["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, \
         application/yaml, application/vnd.kubernetes.protobuf"
    );
    // Custom resources have no protobuf, as with kube-apiserver: 415, JSON and YAML only.
    let widget = envelope("example.com/v1", "Widget", &field(1, &field(1, b"w")));
    let url = format!("{}/apis/example.com/v1/namespaces/default/widgets", server.url());
    let (code, _, st) = send("POST", &url, PROTOBUF, &widget);
    assert_eq!((code, st["reason"].as_str()), (415, Some("UnsupportedMediaType")));
    assert_eq!(
        st["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, \
         application/yaml"
    );
}

/// The groups whose protobuf came with their Go field order (storage, apiextensions, discovery, …) take protobuf
/// bodies as kube-apiserver does (they were refused with 415): a StorageClass and a CustomResourceDefinition are
/// stored as their JSON would have been.
#[test]
fn kinds_of_the_added_groups_take_protobuf_bodies() {
    let server = ApiServer::start().unwrap();
    let classes = format!("{}/apis/storage.k8s.io/v1/storageclasses", server.url());
    // metadata.name, provisioner (2), parameters (3), allowVolumeExpansion (6)
    let sc = [
        field(1, &field(1, b"fast")),
        field(2, b"example.com/p"),
        field(3, &[field(1, b"k"), field(2, b"v")].concat()),
        vec![6 << 3, 1],
    ]
    .concat();
    let (code, _, created) = send(
        "POST",
        &classes,
        PROTOBUF,
        &envelope("storage.k8s.io/v1", "StorageClass", &sc),
    );
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        (
            &created["provisioner"],
            &created["parameters"],
            &created["allowVolumeExpansion"]
        ),
        (&json!("example.com/p"), &json!({"k": "v"}), &json!(true))
    );
    assert_eq!(get(&format!("{classes}/fast")), created);

    // A CRD whose `spec` property's additionalProperties is a schema (JSONSchemaPropsOrBool field 2 of field 30).
    let names = [field(1, b"gadgets"), field(2, b"gadget"), field(4, b"Gadget")].concat();
    let spec_props = [field(5, b"object"), field(30, &field(2, &field(5, b"string")))].concat();
    let props = [
        field(5, b"object"),
        field(29, &[field(1, b"spec"), field(2, &spec_props)].concat()),
    ]
    .concat();
    // CustomResourceValidation.openAPIV3Schema (1) in CustomResourceDefinitionVersion.schema (4)
    let version = [
        field(1, b"v1"),
        vec![2 << 3, 1],
        vec![3 << 3, 1],
        field(4, &field(1, &props)),
    ]
    .concat();
    let spec = [
        field(1, b"example.com"),
        field(3, &names),
        field(4, b"Namespaced"),
        field(7, &version),
    ]
    .concat();
    let crd = [field(1, &field(1, b"gadgets.example.com")), field(2, &spec)].concat();
    let crds = format!(
        "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        server.url()
    );
    let body = envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd);
    let (code, _, created) = send("POST", &crds, PROTOBUF, &body);
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        json!({"type": "object", "properties": {"spec": {"type": "object", "additionalProperties": {"type": "string"}}}})
    );
    assert_eq!(created["spec"]["names"]["kind"], "Gadget");
}
