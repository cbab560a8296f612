//! `/openapi/v2` and `/openapi/v3` over real HTTP: what kubectl fetches (the protobuf v2 document, the v3 index and
//! a group-version by hash), with the caching headers it relies on. kubectl itself drives them in
//! `tests/real-clients/run`.

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::object::ApiResource;
use kube_informer_apiserver::{ApiServer, ResourceSpec};
use raw_http::*;
use serde_json::{Value, json};

fn widgets() -> ResourceSpec {
    ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true))
        .with_status_subresource()
        .schema(json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "required": ["color"], "properties": {
                    "color": {"type": "string", "enum": ["red", "blue"]},
                    "size": {"type": "integer", "minimum": 1},
                }},
            },
        }))
}

/// GET with headers: (status, headers, body bytes).
fn fetch(url: &str, headers: &[(&str, &str)]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut req = agent().get(url);
    for (n, v) in headers {
        req = req.header(*n, *v);
    }
    let resp = req.call().unwrap();
    let code = resp.status().as_u16();
    let hs = resp
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body = resp.into_body().read_to_vec().unwrap();
    (code, hs, body)
}

fn header<'a>(hs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    hs.iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn v2_answers_kubectl_in_protobuf_and_revalidates_with_etags() {
    let server = ApiServer::builder().resource(widgets()).start().unwrap();
    let url = format!("{}/openapi/v2", server.url());
    let accept = ("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
    let (code, hs, body) = fetch(&url, &[accept]);
    assert_eq!(code, 200);
    assert_eq!(
        header(&hs, "content-type"),
        Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    );
    // Document.swagger (field 1, length-delimited) = "2.0".
    assert_eq!(body[..5], [0x0a, 3, b'2', b'.', b'0']);
    let etag = header(&hs, "etag").unwrap().to_owned();
    let (code, _, body) = fetch(&url, &[accept, ("If-None-Match", &etag)]);
    assert_eq!((code, body.len()), (304, 0));
    let (code, hs, body) = fetch(&url, &[("Accept", "application/json")]);
    assert_eq!((code, header(&hs, "etag")), (200, Some(etag.as_str())));
    let doc: Value = serde_json::from_slice(&body).unwrap();
    let widget = &doc["definitions"]["com.example.v1.Widget"];
    assert_eq!(widget["properties"]["spec"]["required"], json!(["color"]));
    assert_eq!(widget["x-kubernetes-group-version-kind"][0]["kind"], "Widget");
    let create = &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets"]["post"];
    assert!(
        create["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation")
    );
    // Registering a resource changes the document.
    server.register(ApiResource::new("example.com", "v1", "Gadget", "gadgets", false));
    let (code, hs, _) = fetch(&url, &[accept, ("If-None-Match", &etag)]);
    assert_eq!(code, 200);
    assert_ne!(header(&hs, "etag"), Some(etag.as_str()));
}

#[test]
fn v3_index_leads_to_immutable_group_version_documents() {
    let server = ApiServer::builder().resource(widgets()).start().unwrap();
    let (code, index) = get(&format!("{}/openapi/v3", server.url()));
    assert_eq!(code, 200);
    for gv in ["api/v1", "apis/apps/v1", "apis/example.com/v1"] {
        assert!(index["paths"][gv]["serverRelativeURL"].is_string(), "{gv}: {index}");
    }
    let relative = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let (code, hs, body) = fetch(
        &format!("{}{relative}", server.url()),
        &[("Accept", "application/json")],
    );
    assert_eq!(code, 200);
    assert_eq!(header(&hs, "cache-control"), Some("public, immutable"));
    let doc: Value = serde_json::from_slice(&body).unwrap();
    let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        widget["properties"]["spec"]["properties"]["color"]["enum"],
        json!(["red", "blue"])
    );
    let patch = &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Widget");
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation")
    );
    let (code, _) = get(&format!("{}/openapi/v3/apis/nothing.example.com/v1", server.url()));
    assert_eq!(code, 404);
}
