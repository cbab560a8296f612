//! `fieldValidation` over real HTTP: unknown and repeated fields dropped and reported as kube-apiserver does —
//! `Warning` headers by default, 400 with its wording for `Strict`, nothing for `Ignore` — where the resource's
//! schema is known.

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::object::ApiResource;
use kube_informer_apiserver::{ApiServer, ResourceSpec};
use raw_http::*;
use serde_json::{Value, json};

fn widgets() -> ResourceSpec {
    ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true)).schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "color": {"type": "string"},
            "parts": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        }}},
    }))
}

/// A write with a raw body: (status, `Warning` headers, body).
fn write(method: &str, url: &str, content_type: &str, body: &str) -> (u16, Vec<String>, Value) {
    let a = agent();
    let req = match method {
        "POST" => a.post(url),
        "PUT" => a.put(url),
        "PATCH" => a.patch(url),
        m => panic!("{m}"),
    };
    let resp = req.header("Content-Type", content_type).send(body).unwrap();
    let code = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let text = resp.into_body().read_to_string().unwrap();
    (
        code,
        warnings,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

const BODY: &str = r#"{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "NAME", "bogus": 1},
    "spec": {"color": "red", "colour": "blue", "color": "green", "parts": [{"name": "a", "size": 3}]}}"#;

fn body(name: &str) -> String {
    BODY.replace("NAME", name)
}

#[test]
fn create_warns_by_default_refuses_when_strict_and_keeps_quiet_when_ignoring() {
    let server = ApiServer::builder().resource(widgets()).start().unwrap();
    let url = format!("{}/apis/example.com/v1/namespaces/default/widgets", server.url());
    let (code, warnings, obj) = write("POST", &url, "application/json", &body("w1"));
    assert_eq!(code, 201, "{obj}");
    assert_eq!(
        warnings,
        [
            r#"299 - "unknown field \"metadata.bogus\"""#,
            r#"299 - "unknown field \"spec.colour\"""#,
            r#"299 - "duplicate field \"spec.color\"""#,
            r#"299 - "unknown field \"spec.parts[0].size\"""#,
        ]
    );
    // Dropped, whatever the directive; the last of repeated keys wins.
    assert_eq!(obj["spec"], json!({"color": "green", "parts": [{"name": "a"}]}));
    assert!(obj["metadata"].get("bogus").is_none());

    let (code, warnings, st) = write(
        "POST",
        &format!("{url}?fieldValidation=Strict"),
        "application/json",
        &body("w2"),
    );
    assert_eq!((code, warnings.len()), (400, 0));
    assert_eq!(st["reason"], "BadRequest");
    assert_eq!(
        st["message"],
        r#"Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "metadata.bogus", unknown field "spec.colour", duplicate field "spec.color", unknown field "spec.parts[0].size""#
    );
    let (code, _) = get(&format!("{url}/w2"));
    assert_eq!(code, 404, "a refused write stores nothing");

    let (code, warnings, obj) = write(
        "POST",
        &format!("{url}?fieldValidation=Ignore"),
        "application/json",
        &body("w3"),
    );
    assert_eq!((code, warnings.len()), (201, 0));
    assert!(obj["spec"].get("colour").is_none());

    let (code, _, st) = write(
        "POST",
        &format!("{url}?fieldValidation=strict"),
        "application/json",
        &body("w4"),
    );
    assert_eq!(code, 422);
    assert_eq!(st["details"]["causes"][0]["field"], "fieldValidation");
}

#[test]
fn updates_and_patches_are_checked_on_the_object_they_make() {
    let server = ApiServer::builder().resource(widgets()).start().unwrap();
    let url = format!("{}/apis/example.com/v1/namespaces/default/widgets", server.url());
    write(
        "POST",
        &url,
        "application/json",
        r#"{"metadata": {"name": "w"}, "spec": {"color": "red"}}"#,
    );
    let (code, warnings, _) = write(
        "PUT",
        &format!("{url}/w?fieldValidation=Warn"),
        "application/json",
        r#"{"metadata": {"name": "w"}, "spec": {"color": "red", "extra": 1}}"#,
    );
    assert_eq!(
        (code, warnings),
        (200, vec![r#"299 - "unknown field \"spec.extra\"""#.to_owned()])
    );
    let (code, _, st) = write(
        "PATCH",
        &format!("{url}/w?fieldValidation=Strict"),
        "application/merge-patch+json",
        r#"{"spec": {"color": "blue", "color": "red", "shade": "dark"}}"#,
    );
    assert_eq!(code, 400);
    assert_eq!(
        st["message"],
        r#"strict decoding error: duplicate field "spec.color", unknown field "spec.shade""#
    );
    let (code, _, st) = write(
        "PATCH",
        &format!("{url}/w?fieldValidation=Strict"),
        "application/json-patch+json",
        r#"[{"op": "add", "path": "/spec/size", "value": 1, "foo": "bar"}]"#,
    );
    assert_eq!(code, 400);
    assert_eq!(
        st["message"],
        r#"strict decoding error: json patch unknown field "[0].foo", unknown field "spec.size""#
    );
    let (code, warnings, obj) = write(
        "PATCH",
        &format!("{url}/w"),
        "application/merge-patch+json",
        r#"{"spec": {"color": "blue", "shade": "dark"}}"#,
    );
    assert_eq!((code, warnings.len()), (200, 1));
    assert_eq!(obj["spec"], json!({"color": "blue"}));
}

#[test]
fn resources_without_a_schema_keep_every_field() {
    let bare = ResourceSpec::new(ApiResource::new("example.com", "v1", "Gadget", "gadgets", true));
    let server = ApiServer::builder().resource(bare).start().unwrap();
    let url = format!(
        "{}/apis/example.com/v1/namespaces/default/gadgets?fieldValidation=Strict",
        server.url()
    );
    let (code, warnings, obj) = write(
        "POST",
        &url,
        "application/json",
        r#"{"metadata": {"name": "g"}, "anything": 1}"#,
    );
    assert_eq!((code, warnings.len()), (201, 0));
    assert_eq!(obj["anything"], 1);
}
