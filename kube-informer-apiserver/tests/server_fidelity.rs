//! The embedded API server answering as kube-apiserver does where kubectl and other clients look: trailing-slash
//! paths, discovery categories, server-side Table, the scale subresource, access reviews, and the metadata a real
//! server keeps (generation, empty maps).

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer_apiserver::ApiServer;
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
fn discovery_puts_the_workloads_and_services_in_the_all_category() {
    let server = ApiServer::start().unwrap();
    let mut in_all = Vec::new();
    for gv in [
        "api/v1",
        "apis/apps/v1",
        "apis/coordination.k8s.io/v1",
        "apis/batch/v1",
        "apis/autoscaling/v2",
    ] {
        let (_, list) = get(&format!("{}/{gv}", server.url()));
        for r in list["resources"].as_array().unwrap() {
            if r["categories"].as_array().is_some_and(|c| c.contains(&json!("all"))) {
                in_all.push(r["name"].as_str().unwrap().to_owned());
            }
        }
    }
    in_all.sort();
    // What `kubectl get all` lists on a cluster (kube-apiserver 1.34's storages' `Categories()`).
    assert_eq!(
        in_all,
        [
            "cronjobs",
            "daemonsets",
            "deployments",
            "horizontalpodautoscalers",
            "jobs",
            "pods",
            "replicasets",
            "replicationcontrollers",
            "services",
            "statefulsets"
        ]
    );
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
    // The spec field changed: one the kind's schema knows where it counts generations (the default resources'
    // schemas prune unknown fields, so a change of `spec.x` would change nothing).
    let cases = [
        ("api/v1", "configmaps", true, false, "x"),
        ("api/v1", "secrets", true, false, "x"),
        ("api/v1", "namespaces", false, false, "x"),
        ("api/v1", "events", true, false, "x"),
        ("api/v1", "nodes", false, false, "x"),
        ("api/v1", "services", true, false, "x"),
        (
            "apis/coordination.k8s.io/v1",
            "leases",
            true,
            false,
            "leaseDurationSeconds",
        ),
        ("api/v1", "pods", true, true, "activeDeadlineSeconds"),
        ("apis/apps/v1", "deployments", true, true, "replicas"),
        ("apis/example.com/v1", "widgets", true, true, "x"),
    ];
    for (prefix, plural, namespaced, counted, field) in cases {
        let url = collection(&server, prefix, plural, namespaced);
        let (code, created) = post(&url, &json!({"metadata": {"name": "g"}, "spec": {field: 1}}));
        assert_eq!(code, 201, "{plural}: {created}");
        let want = if counted { json!(1) } else { Value::Null };
        assert_eq!(created["metadata"]["generation"], want, "{plural} create");
        let mut changed = created.clone();
        changed["spec"][field] = json!(2);
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
    let widgets = kube_informer_apiserver::ResourceSpec::new(kube_informer::object::ApiResource::new(
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

// ----- scale -----

#[test]
fn deployments_scale_through_their_scale_subresource() {
    let server = ApiServer::start().unwrap();
    let deploys = collection(&server, "apis/apps/v1", "deployments", true);
    let body =
        json!({"metadata": {"name": "web"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}}});
    let (_, d) = post(&deploys, &body);
    let url = format!("{deploys}/web/scale");
    let (code, scale) = get(&url);
    assert_eq!(code, 200);
    assert_eq!(
        scale,
        json!({
            "kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": "web", "namespace": "default", "uid": d["metadata"]["uid"],
                         "resourceVersion": d["metadata"]["resourceVersion"], "creationTimestamp": d["metadata"]["creationTimestamp"]},
            "spec": {"replicas": 2},
            "status": {"replicas": 0, "selector": "app=web"},
        })
    );
    // kubectl scale: a merge patch of the Scale.
    let (code, patched) = send(
        "PATCH",
        &url,
        "application/merge-patch+json",
        r#"{"spec":{"replicas":3}}"#,
    );
    assert_eq!((code, patched["spec"]["replicas"].as_i64()), (200, Some(3)));
    let (_, d) = get(&format!("{deploys}/web"));
    assert_eq!(
        (d["spec"]["replicas"].as_i64(), d["metadata"]["generation"].as_i64()),
        (Some(3), Some(2))
    );
    assert_eq!(patched["metadata"]["resourceVersion"], d["metadata"]["resourceVersion"]);
    // PUT with the Scale's resourceVersion; then again with the now stale one.
    let mut put_body = patched.clone();
    put_body["spec"]["replicas"] = json!(5);
    let (code, updated) = put(&url, &put_body);
    assert_eq!((code, updated["spec"]["replicas"].as_i64()), (200, Some(5)));
    let (code, st) = put(&url, &put_body);
    assert_eq!((code, st["reason"].as_str()), (409, Some("Conflict")));
    // Scaling to zero leaves spec.replicas out of the Scale (omitempty) and 0 in the deployment.
    let (_, zero) = send(
        "PATCH",
        &url,
        "application/json-patch+json",
        r#"[{"op":"replace","path":"/spec/replicas","value":0}]"#,
    );
    assert!(zero["spec"].get("replicas").is_none(), "{zero}");
    assert_eq!(get(&format!("{deploys}/web")).1["spec"]["replicas"], 0);
    let (code, st) = send(
        "PATCH",
        &url,
        "application/merge-patch+json",
        r#"{"spec":{"replicas":-1}}"#,
    );
    assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        st["message"],
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    // Status writes reach the Scale's status.
    send(
        "PATCH",
        &format!("{deploys}/web/status"),
        "application/merge-patch+json",
        r#"{"status":{"replicas":4}}"#,
    );
    assert_eq!(get(&url).1["status"]["replicas"], 4);
    // Missing objects, kinds without scale, and verbs the subresource does not have.
    assert_eq!(get(&format!("{deploys}/nope/scale")).0, 404);
    make(&server, "default", "c", json!({}));
    assert_eq!(get(&format!("{}/c/scale", cms(&server, "default"))).0, 404);
    assert_eq!(send("DELETE", &url, "", "").0, 405);
    assert_eq!(
        get(&format!("{deploys}/web")).0,
        200,
        "a DELETE of the subresource deleted nothing"
    );
}

#[test]
fn discovery_lists_deployments_scale_as_an_autoscaling_scale() {
    let server = ApiServer::start().unwrap();
    let (_, apps) = get(&format!("{}/apis/apps/v1", server.url()));
    let scale = apps["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "deployments/scale")
        .cloned()
        .unwrap();
    assert_eq!(
        (
            scale["group"].as_str(),
            scale["version"].as_str(),
            scale["kind"].as_str()
        ),
        (Some("autoscaling"), Some("v1"), Some("Scale"))
    );
    assert_eq!(scale["verbs"], json!(["get", "patch", "update"]));
}

#[test]
fn custom_resources_scale_by_their_declared_paths() {
    use kube_informer_apiserver::{ResourceSpec, ScaleSubresource};
    let workers = ResourceSpec::new(kube_informer::object::ApiResource::new(
        "example.com",
        "v1",
        "Worker",
        "workers",
        true,
    ))
    .with_status_subresource()
    .with_scale_subresource(
        ScaleSubresource::new(".spec.size", ".status.size").label_selector_path(".status.selector"),
    );
    let server = ApiServer::builder().resource(workers).start().unwrap();
    let url = collection(&server, "apis/example.com/v1", "workers", true);
    post(&url, &json!({"metadata": {"name": "w"}, "spec": {}}));
    send(
        "PATCH",
        &format!("{url}/w/status"),
        "application/merge-patch+json",
        r#"{"status":{"size":1,"selector":"app=w"}}"#,
    );
    let (_, scale) = send(
        "PATCH",
        &format!("{url}/w/scale"),
        "application/merge-patch+json",
        r#"{"spec":{"replicas":2}}"#,
    );
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=w"}));
    assert_eq!(get(&format!("{url}/w")).1["spec"]["size"], 2);
}

// ----- access reviews -----

fn can_i(server: &ApiServer, token: &str, attrs: Value) -> (u16, Value) {
    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attrs}});
    let r = agent()
        .post(&format!(
            "{}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            server.url()
        ))
        .header("Authorization", &format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(&body.to_string())
        .unwrap();
    let code = r.status().as_u16();
    (
        code,
        serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap(),
    )
}

#[test]
fn self_subject_access_reviews_answer_from_the_access_rules() {
    use kube_informer_apiserver::AccessRule;
    let server = ApiServer::builder()
        .token("v", "viewer")
        .token("a", "admin")
        .rule(AccessRule::user("admin"))
        .rule(
            AccessRule::user("viewer")
                .verbs(&["get", "list", "watch"])
                .resources(&["configmaps", "deployments.apps/scale"]),
        )
        .start()
        .unwrap();
    let (code, yes) = can_i(
        &server,
        "v",
        json!({"verb": "list", "resource": "configmaps", "namespace": "default"}),
    );
    assert_eq!((code, yes["status"]["allowed"].as_bool()), (201, Some(true)));
    assert_eq!(yes["kind"], "SelfSubjectAccessReview");
    assert_eq!(yes["spec"]["resourceAttributes"]["resource"], "configmaps");
    let (_, no) = can_i(&server, "v", json!({"verb": "delete", "resource": "configmaps"}));
    assert_eq!(no["status"]["allowed"], false);
    // RBAC's denial carries no reason: kubectl prints a bare "no".
    assert_eq!(no["status"].get("reason"), None, "{no}");
    let (_, sub) = can_i(
        &server,
        "v",
        json!({"verb": "get", "resource": "deployments", "group": "apps", "subresource": "scale"}),
    );
    assert_eq!(sub["status"]["allowed"], true);
    assert_eq!(
        can_i(&server, "a", json!({"verb": "*", "resource": "*"})).1["status"]["allowed"],
        true
    );
    // The review is open to every authenticated user, whatever their rules; not to strangers.
    assert_eq!(
        can_i(&server, "wrong", json!({"verb": "get", "resource": "pods"})).0,
        401
    );
    // Only create exists.
    assert_eq!(
        get(&format!(
            "{}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            server.url()
        ))
        .0,
        401
    );
    let (_, discovery) = get(&format!("{}/apis/authorization.k8s.io/v1", server.url()));
    assert_eq!(
        discovery.get("code").and_then(Value::as_u64),
        Some(401),
        "discovery needs credentials too"
    );
}

#[test]
fn access_review_paths_and_discovery() {
    let server = ApiServer::start().unwrap();
    let base = format!("{}/apis/authorization.k8s.io/v1", server.url());
    let (_, list) = get(&base);
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "localsubjectaccessreviews",
            "selfsubjectaccessreviews",
            "selfsubjectrulesreviews",
            "subjectaccessreviews"
        ]
    );
    let (_, authn) = get(&format!("{}/apis/authentication.k8s.io/v1", server.url()));
    let names: Vec<&str> = authn["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["selfsubjectreviews", "tokenreviews"]);
    assert_eq!(get(&format!("{base}/selfsubjectaccessreviews")).0, 405);
    let (code, rules) = post(
        &format!("{base}/selfsubjectrulesreviews"),
        &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}}),
    );
    assert_eq!(
        (code, rules["status"]["resourceRules"][0]["verbs"].clone()),
        (201, json!(["*"]))
    );
    let (code, st) = post(&format!("{base}/selfsubjectaccessreviews"), &json!({"spec": {}}));
    assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")));
}

// ----- server-side tables -----

/// What kubectl 1.32 sends when it prints (`kubectl get`).
const KUBECTL_TABLE: &str =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

fn get_accepting(url: &str, accept: &str) -> (u16, Value) {
    let r = agent().get(url).header("Accept", accept).call().unwrap();
    let code = r.status().as_u16();
    let text = r.into_body().read_to_string().unwrap();
    (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn column_names(table: &Value) -> Vec<(String, i64)> {
    table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c["priority"].as_i64().unwrap()))
        .collect()
}

fn names(cols: &[(&str, i64)]) -> Vec<(String, i64)> {
    cols.iter().map(|(n, p)| ((*n).to_owned(), *p)).collect()
}

#[test]
fn kubectl_get_is_answered_with_a_table_of_the_built_in_printers_columns() {
    let server = ApiServer::start().unwrap();
    post(
        &cms(&server, "default"),
        &json!({"metadata": {"name": "settings"}, "data": {"a": "1", "b": "2"}}),
    );
    let (code, t) = get_accepting(&cms(&server, "default"), KUBECTL_TABLE);
    assert_eq!(
        (code, t["kind"].as_str(), t["apiVersion"].as_str()),
        (200, Some("Table"), Some("meta.k8s.io/v1"))
    );
    assert_eq!(column_names(&t), names(&[("Name", 0), ("Data", 0), ("Age", 0)]));
    assert_eq!(t["columnDefinitions"][0]["format"], "name");
    assert!(
        t["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| !rv.is_empty()),
        "{t}"
    );
    let row = &t["rows"][0];
    assert_eq!(
        (row["cells"][0].as_str(), row["cells"][1].as_i64()),
        (Some("settings"), Some(2))
    );
    // Rows carry the object's metadata by default (includeObject=Metadata).
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(row["object"]["metadata"]["name"], "settings");
    assert_eq!(row["object"].get("data"), None);

    let pods = collection(&server, "api/v1", "pods", true);
    post(
        &pods,
        &json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}),
    );
    let (_, t) = get_accepting(&pods, KUBECTL_TABLE);
    assert_eq!(
        column_names(&t),
        names(&[
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1)
        ])
    );
    assert_eq!(t["rows"][0]["cells"][1], "0/2");
    assert_eq!(t["rows"][0]["cells"][6], "n1");

    let deployments = collection(&server, "apis/apps/v1", "deployments", true);
    let (_, t) = get_accepting(&deployments, KUBECTL_TABLE);
    assert_eq!(
        column_names(&t),
        names(&[
            ("Name", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ])
    );
    assert_eq!(t["rows"], json!([]));
    for (prefix, plural, namespaced, columns) in [
        ("api/v1", "secrets", true, vec!["Name", "Type", "Data", "Age"]),
        ("api/v1", "namespaces", false, vec!["Name", "Status", "Age"]),
        (
            "api/v1",
            "services",
            true,
            vec![
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age",
                "Selector",
            ],
        ),
        (
            "api/v1",
            "nodes",
            false,
            vec![
                "Name",
                "Status",
                "Roles",
                "Age",
                "Version",
                "Internal-IP",
                "External-IP",
                "OS-Image",
                "Kernel-Version",
                "Container-Runtime",
            ],
        ),
        (
            "apis/coordination.k8s.io/v1",
            "leases",
            true,
            vec!["Name", "Holder", "Age"],
        ),
        (
            "apis/apiextensions.k8s.io/v1",
            "customresourcedefinitions",
            false,
            vec!["Name", "Created At"],
        ),
    ] {
        let (code, t) = get_accepting(&collection(&server, prefix, plural, namespaced), KUBECTL_TABLE);
        let got: Vec<String> = column_names(&t).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            (code, got),
            (200, columns.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>()),
            "{plural}"
        );
    }
}

#[test]
fn one_object_and_writes_are_tables_too_and_include_object_says_what_rows_carry() {
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    let created = agent()
        .post(&url)
        .header("Content-Type", "application/json")
        .header("Accept", KUBECTL_TABLE)
        .send(r#"{"metadata":{"name":"a"},"data":{"x":"1"}}"#)
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let t: Value = serde_json::from_str(&created.into_body().read_to_string().unwrap()).unwrap();
    assert_eq!(t["kind"], "Table");
    let stored = get(&format!("{url}/a")).1;
    assert_eq!(t["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"]);
    assert_eq!(t["rows"][0]["cells"][1], 1);

    let (_, t) = get_accepting(&format!("{url}/a?includeObject=Object"), KUBECTL_TABLE);
    assert_eq!(t["rows"].as_array().map(Vec::len), Some(1));
    assert_eq!(t["rows"][0]["object"], stored);
    let (_, t) = get_accepting(&format!("{url}?includeObject=None"), KUBECTL_TABLE);
    assert_eq!(t["rows"][0]["object"], Value::Null);
    let (code, st) = get_accepting(&format!("{url}?includeObject=All"), KUBECTL_TABLE);
    assert_eq!((code, st["reason"].as_str()), (400, Some("BadRequest")));
    assert!(st["message"].as_str().unwrap().contains("includeObject"), "{st}");
    // Without a Table asked for, includeObject means nothing.
    assert_eq!(get(&format!("{url}?includeObject=All")).0, 200);
    // Errors stay statuses.
    let (code, st) = get_accepting(&format!("{url}/missing"), KUBECTL_TABLE);
    assert_eq!((code, st["kind"].as_str()), (404, Some("Status")));
}

#[test]
fn accept_is_negotiated_as_kube_apiserver_does() {
    let server = ApiServer::start().unwrap();
    make(&server, "default", "a", json!({"k": "v"}));
    let url = cms(&server, "default");
    let (code, st) = get_accepting(&url, "text/html");
    assert_eq!((code, st["reason"].as_str()), (406, Some("NotAcceptable")));
    assert_eq!(
        get_accepting(&url, "application/vnd.kubernetes.protobuf, application/json").1["kind"],
        "ConfigMapList"
    );
    assert_eq!(get_accepting(&url, "*/*").1["kind"], "ConfigMapList");
    // A metadata-only client (client-go's metadata informers).
    let (_, list) = get_accepting(&url, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["metadata"]["labels"], json!({"k": "v"}));
    assert_eq!(list["items"][0].get("data"), None);
    let (_, one) = get_accepting(
        &format!("{url}/a"),
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    );
    assert_eq!(
        (one["kind"].as_str(), one["metadata"]["name"].as_str()),
        (Some("PartialObjectMetadata"), Some("a"))
    );
    let (code, _) = get_accepting(
        &format!("{url}/a"),
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    );
    assert_eq!(code, 406);
}

fn watch_accepting(server: &ApiServer, path: &str, accept: &str) -> Raw {
    Raw::request_with(server.addr(), "GET", path, &[("Accept", accept)])
}

#[test]
fn kubectl_get_watch_gets_table_rows_with_the_columns_once() {
    let server = ApiServer::start().unwrap();
    make(&server, "default", "a", json!({}));
    let mut w = watch_accepting(
        &server,
        "/api/v1/namespaces/default/configmaps?watch=true",
        KUBECTL_TABLE,
    );
    assert_eq!(w.code, 200);
    let first = w.event();
    assert_eq!(
        (first["type"].as_str(), first["object"]["kind"].as_str()),
        (Some("ADDED"), Some("Table"))
    );
    assert_eq!(
        column_names(&first["object"]),
        names(&[("Name", 0), ("Data", 0), ("Age", 0)])
    );
    assert_eq!(first["object"]["rows"][0]["cells"][0], "a");
    send(
        "PATCH",
        &format!("{}/a", cms(&server, "default")),
        "application/merge-patch+json",
        r#"{"data":{"x":"1","y":"2"}}"#,
    );
    let second = w.event();
    assert_eq!(second["type"], "MODIFIED");
    assert_eq!(second["object"]["columnDefinitions"], Value::Null);
    // `make` gave it one entry; the patch added two.
    assert_eq!(second["object"]["rows"][0]["cells"][1], 3);
    assert_eq!(second["object"]["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    // A bad includeObject refuses the watch.
    let refused = watch_accepting(
        &server,
        "/api/v1/namespaces/default/configmaps?watch=true&includeObject=Some",
        KUBECTL_TABLE,
    );
    assert_eq!(refused.code, 400);
}

const WIDGETS_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size, labelSelectorPath: .status.selector}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color, description: The color.}
    - {name: Size, type: integer, jsonPath: .spec.size, priority: 1}
    - {name: Ready, type: string, jsonPath: ".status.conditions[?(@.type==\"Ready\")].status"}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}, size: {type: integer}}}
          status:
            type: object
            properties:
              size: {type: integer}
              selector: {type: string}
              conditions: {type: array, items: {type: object, properties: {type: {type: string}, status: {type: string}}}}
"#;

#[test]
fn a_crds_additional_printer_columns_and_scale_subresource_are_served() {
    let server = ApiServer::builder().crd(WIDGETS_CRD).start().unwrap();
    let url = collection(&server, "apis/example.com/v1", "widgets", true);
    let (code, _) = post(
        &url,
        &json!({"metadata": {"name": "w"}, "spec": {"color": "blue", "size": 1}}),
    );
    assert_eq!(code, 201);
    send(
        "PATCH",
        &format!("{url}/w/status"),
        "application/merge-patch+json",
        r#"{"status":{"size":1,"selector":"app=w","conditions":[{"type":"Ready","status":"True"}]}}"#,
    );
    let (_, t) = get_accepting(&url, KUBECTL_TABLE);
    assert_eq!(
        column_names(&t),
        names(&[("Name", 0), ("Color", 0), ("Size", 1), ("Ready", 0)])
    );
    assert_eq!(t["columnDefinitions"][1]["description"], "The color.");
    assert_eq!(t["rows"][0]["cells"], json!(["w", "blue", 1, "True"]));

    let (code, scale) = get(&format!("{url}/w/scale"));
    assert_eq!((code, scale["kind"].as_str()), (200, Some("Scale")));
    assert_eq!(scale["spec"], json!({"replicas": 1}));
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=w"}));
    let (code, _) = send(
        "PATCH",
        &format!("{url}/w/scale"),
        "application/merge-patch+json",
        r#"{"spec":{"replicas":4}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(get(&format!("{url}/w")).1["spec"]["size"], 4);
    let (_, discovery) = get(&format!("{}/apis/example.com/v1", server.url()));
    let resources: Vec<&str> = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(resources.contains(&"widgets/scale"), "{resources:?}");

    // Without declared columns, a CRD's table has NAME and AGE.
    let plain = WIDGETS_CRD
        .replace("widgets", "gadgets")
        .replace("widget", "gadget")
        .replace("Widget", "Gadget");
    let plain: String = plain.split("    additionalPrinterColumns:").next().unwrap().to_owned()
        + "    schema:"
        + plain.split("    schema:").nth(1).unwrap();
    let server = ApiServer::builder().crd(&plain).start().unwrap();
    let url = collection(&server, "apis/example.com/v1", "gadgets", true);
    post(&url, &json!({"metadata": {"name": "g"}}));
    let (_, t) = get_accepting(&url, KUBECTL_TABLE);
    assert_eq!(column_names(&t), names(&[("Name", 0), ("Age", 0)]));
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
}

#[test]
fn invalid_printer_columns_and_scale_paths_refuse_the_crd() {
    let server = ApiServer::start().unwrap();
    let crds = collection(
        &server,
        "apis/apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        false,
    );
    let bad = WIDGETS_CRD
        .replace("{name: Color, type: string", "{name: Color, type: text")
        .replace("specReplicasPath: .spec.size", "specReplicasPath: .metadata.size");
    let (code, st) = send("POST", &crds, "application/yaml", &bad);
    assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")), "{st}");
    let fields: Vec<&str> = st["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.versions[0].additionalPrinterColumns[0].type",
            "spec.versions[0].subresources.scale.specReplicasPath"
        ]
    );
}
