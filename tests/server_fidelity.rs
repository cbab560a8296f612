//! The embedded API server answering as kube-apiserver does where kubectl and other clients look: trailing-slash
//! paths, discovery categories, server-side Table, the scale subresource, access reviews, and the metadata a real
//! server keeps (generation, empty maps).

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::testing::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

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

// ----- metadata -----

fn collection(server: &ApiServer, prefix: &str, plural: &str, namespaced: bool) -> String {
    if namespaced {
        format!("{}/{prefix}/namespaces/default/{plural}", server.url())
    } else {
        format!("{}/{prefix}/{plural}", server.url())
    }
}

#[test]
fn only_pods_deployments_and_custom_resources_count_generations() {
    let server = ApiServer::builder()
        .resource(kube_informer::object::ApiResource::new(
            "example.com",
            "v1",
            "Widget",
            "widgets",
            true,
        ))
        .start()
        .unwrap();
    let cases = [
        ("api/v1", "configmaps", true, false),
        ("api/v1", "secrets", true, false),
        ("api/v1", "namespaces", false, false),
        ("api/v1", "events", true, false),
        ("api/v1", "nodes", false, false),
        ("api/v1", "services", true, false),
        ("apis/coordination.k8s.io/v1", "leases", true, false),
        ("api/v1", "pods", true, true),
        ("apis/apps/v1", "deployments", true, true),
        ("apis/example.com/v1", "widgets", true, true),
    ];
    for (prefix, plural, namespaced, counted) in cases {
        let url = collection(&server, prefix, plural, namespaced);
        let (code, created) = post(&url, &json!({"metadata": {"name": "g"}, "spec": {"x": 1}}));
        assert_eq!(code, 201, "{plural}: {created}");
        let want = if counted { json!(1) } else { Value::Null };
        assert_eq!(created["metadata"]["generation"], want, "{plural} create");
        let mut changed = created.clone();
        changed["spec"]["x"] = json!(2);
        let (code, updated) = put(&format!("{url}/g"), &changed);
        assert_eq!(code, 200, "{plural}: {updated}");
        let want = if counted { json!(2) } else { Value::Null };
        assert_eq!(updated["metadata"]["generation"], want, "{plural} spec update");
        // A label never counts.
        let (_, labelled) = send(
            "PATCH",
            &format!("{url}/g"),
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"a":"b"}}}"#,
        );
        assert_eq!(
            labelled["metadata"]["generation"], updated["metadata"]["generation"],
            "{plural} label"
        );
    }
}

#[test]
fn deployments_count_annotation_changes_and_custom_resources_count_status_without_its_subresource() {
    let widgets = kube_informer::testing::ResourceSpec::new(kube_informer::object::ApiResource::new(
        "example.com",
        "v1",
        "Widget",
        "widgets",
        true,
    ));
    let server = ApiServer::builder().resource(widgets).start().unwrap();
    let merge = |url: &str, body: &str| send("PATCH", url, "application/merge-patch+json", body).1;
    let deploys = collection(&server, "apis/apps/v1", "deployments", true);
    post(&deploys, &json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}}));
    let d = merge(&format!("{deploys}/d"), r#"{"metadata":{"annotations":{"a":"1"}}}"#);
    assert_eq!(d["metadata"]["generation"], 2, "annotations are copied to replica sets");
    let d = merge(&format!("{deploys}/d/status"), r#"{"status":{"replicas":1}}"#);
    assert_eq!(d["metadata"]["generation"], 2, "status writes never count");

    let widgets = collection(&server, "apis/example.com/v1", "widgets", true);
    post(&widgets, &json!({"metadata": {"name": "w"}, "spec": {"x": 1}}));
    let w = merge(&format!("{widgets}/w"), r#"{"metadata":{"annotations":{"a":"1"}}}"#);
    assert_eq!(w["metadata"]["generation"], 1);
    let w = merge(&format!("{widgets}/w"), r#"{"status":{"ready":true}}"#);
    assert_eq!(
        w["metadata"]["generation"], 2,
        "no status subresource: status is content"
    );
}

#[test]
fn deletion_bumps_only_a_generation_that_exists() {
    let server = ApiServer::start().unwrap();
    let deploys = collection(&server, "apis/apps/v1", "deployments", true);
    let hold = json!({"metadata": {"name": "d", "finalizers": ["example.com/hold"]}});
    post(&deploys, &hold);
    let (_, marked) = send("DELETE", &format!("{deploys}/d"), "", "");
    assert_eq!(marked["metadata"]["generation"], 2);
    let cms = cms(&server, "default");
    post(&cms, &hold);
    let (_, marked) = send("DELETE", &format!("{cms}/d"), "", "");
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert!(marked["metadata"].get("generation").is_none());
}

#[test]
fn empty_metadata_maps_and_lists_are_dropped_on_every_write() {
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    let empty = json!({"labels": {}, "annotations": {}, "finalizers": [], "ownerReferences": [], "generateName": ""});
    let no_empty = |v: &Value, what: &str| {
        for key in ["labels", "annotations", "finalizers", "ownerReferences", "generateName"] {
            assert!(v["metadata"].get(key).is_none(), "{what}: {key} in {v}");
        }
    };
    let mut body = json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
    body["metadata"]
        .as_object_mut()
        .unwrap()
        .extend(empty.as_object().unwrap().clone());
    let (code, created) = post(&url, &body);
    assert_eq!(code, 201);
    no_empty(&created, "create");
    no_empty(&get(&format!("{url}/a")).1, "get");
    // A PUT that only adds empty maps changes nothing: no new revision.
    let mut same = created.clone();
    same["metadata"]
        .as_object_mut()
        .unwrap()
        .extend(empty.as_object().unwrap().clone());
    let (_, unchanged) = put(&format!("{url}/a"), &same);
    assert_eq!(
        unchanged["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    no_empty(&unchanged, "put");
    // Removing the last label or annotation removes the map.
    let patch = |body: &str| send("PATCH", &format!("{url}/a"), "application/merge-patch+json", body).1;
    let labelled = patch(r#"{"metadata":{"labels":{"x":"1"},"annotations":{"y":"2"}}}"#);
    assert_eq!(labelled["metadata"]["labels"]["x"], "1");
    let cleared = patch(r#"{"metadata":{"labels":{"x":null},"annotations":{"y":null}}}"#);
    no_empty(&cleared, "merge patch");
    let labelled = patch(r#"{"metadata":{"labels":{"x":"1"}}}"#);
    let (_, cleared) = send(
        "PATCH",
        &format!("{url}/a"),
        "application/json-patch+json",
        r#"[{"op":"remove","path":"/metadata/labels/x"}]"#,
    );
    assert!(labelled["metadata"]["labels"].is_object());
    no_empty(&cleared, "json patch");
}
