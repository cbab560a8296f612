//! The embedded API server answering as kube-apiserver does where kubectl and other clients look: trailing-slash
//! paths, discovery categories, server-side Table, the scale subresource, access reviews, and the metadata a real
//! server keeps (generation, empty maps).

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::testing::ApiServer;
use raw_http::*;
use serde_json::json;

// ----- paths -----

#[test]
fn trailing_slashes_are_answered_as_without_them() {
    let server = ApiServer::start().unwrap();
    let url = server.url();
    for path in [
        "/version/",
        "/api/",
        "/apis/",
        "/api/v1/",
        "/apis/apps/",
        "/apis/apps/v1/",
    ] {
        let (code, with) = get(&format!("{url}{path}"));
        let (_, without) = get(&format!("{url}{}", path.trim_end_matches('/')));
        assert_eq!((code, &with), (200, &without), "{path}");
    }
    make(&server, "default", "a", json!({}));
    let (code, list) = get(&format!("{}/", cms(&server, "default")));
    assert_eq!((code, list["kind"].as_str()), (200, Some("ConfigMapList")));
    let (code, obj) = get(&format!("{}/a/", cms(&server, "default")));
    assert_eq!((code, obj["metadata"]["name"].as_str()), (200, Some("a")));
    // A doubled slash inside a path still names nothing.
    assert_eq!(get(&format!("{url}/api/v1/namespaces//configmaps")).0, 404);
}

// ----- discovery -----

#[test]
fn discovery_puts_pods_services_and_deployments_in_the_all_category() {
    let server = ApiServer::start().unwrap();
    let mut in_all = Vec::new();
    for gv in ["api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"] {
        let (_, list) = get(&format!("{}/{gv}", server.url()));
        for r in list["resources"].as_array().unwrap() {
            if r["categories"].as_array().is_some_and(|c| c.contains(&json!("all"))) {
                in_all.push(r["name"].as_str().unwrap().to_owned());
            }
        }
    }
    in_all.sort();
    assert_eq!(in_all, ["deployments", "pods", "services"]);
}
