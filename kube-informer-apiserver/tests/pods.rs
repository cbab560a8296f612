//! What kube-apiserver answers for a pod where no kubelet runs: its log, exec/attach/portforward, eviction under
//! PodDisruptionBudgets, graceful deletion, ephemeral containers (`pkg/registry/core/pod`).

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

fn pods(server: &ApiServer) -> String {
    format!("{}/api/v1/namespaces/default/pods", server.url())
}

fn pod(server: &ApiServer, name: &str, labels: Value, spec: Value) -> Value {
    let (code, p) = post(
        &pods(server),
        &json!({"metadata": {"name": name, "labels": labels}, "spec": spec}),
    );
    assert_eq!(code, 201, "{p}");
    p
}

fn one_container() -> Value {
    json!({"containers": [{"name": "app", "image": "nginx"}]})
}

/// The pod's status set to Running and Ready, as a kubelet would.
fn run(server: &ApiServer, name: &str) {
    let url = format!("{}/{name}/status", pods(server));
    let (code, p) = send(
        "PATCH",
        &url,
        "application/merge-patch+json",
        &json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}).to_string(),
    );
    assert_eq!(code, 200, "{p}");
}

#[test]
fn the_log_of_an_unscheduled_pod_is_empty_and_its_container_is_checked() {
    let server = ApiServer::start().unwrap();
    pod(&server, "one", json!({}), one_container());
    let a = agent();
    let r = a.get(&format!("{}/one/log", pods(&server))).call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "text/plain");
    assert_eq!(r.into_body().read_to_string().unwrap(), "");
    let (code, st) = get(&format!("{}/one/log?container=other", pods(&server)));
    assert_eq!(
        (code, st["message"].as_str()),
        (400, Some("container other is not valid for pod one"))
    );
    pod(
        &server,
        "two",
        json!({}),
        json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]}),
    );
    let (code, st) = get(&format!("{}/two/log", pods(&server)));
    assert_eq!(code, 400);
    assert_eq!(st["reason"], "BadRequest");
    assert_eq!(
        st["message"],
        "a container name must be specified for pod two, choose one of: [a b]"
    );
    let (code, _) = get(&format!("{}/two/log?container=b", pods(&server)));
    assert_eq!(code, 200);
    let (code, st) = get(&format!("{}/missing/log", pods(&server)));
    assert_eq!(
        (code, st["message"].as_str()),
        (404, Some("pods \"missing\" not found"))
    );
    // Bound to a node that does not exist.
    pod(
        &server,
        "bound",
        json!({}),
        json!({"nodeName": "n1", "containers": [{"name": "a", "image": "x"}]}),
    );
    let (code, st) = get(&format!("{}/bound/log", pods(&server)));
    assert_eq!((code, st["message"].as_str()), (404, Some("nodes \"n1\" not found")));
}

#[test]
fn exec_attach_and_portforward_of_an_unscheduled_pod_name_the_missing_host() {
    let server = ApiServer::start().unwrap();
    pod(&server, "p", json!({}), one_container());
    for (method, path) in [
        ("POST", "exec?command=ls&stdout=true"),
        ("GET", "exec?command=ls&stdout=true"),
        ("POST", "attach?stdout=true"),
        ("POST", "portforward?ports=80"),
    ] {
        let (code, st) = send(method, &format!("{}/p/{path}", pods(&server)), "", "");
        assert_eq!(code, 400, "{method} {path}: {st}");
        assert_eq!(st["message"], "pod p does not have a host assigned", "{path}");
    }
    let (code, st) = send(
        "POST",
        &format!("{}/p/exec?container=nope&command=ls", pods(&server)),
        "",
        "",
    );
    assert_eq!(
        (code, st["message"].as_str()),
        (400, Some("container nope is not valid for pod p"))
    );
}

fn evict(server: &ApiServer, name: &str) -> (u16, Value) {
    post(
        &format!("{}/{name}/eviction", pods(server)),
        &json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}),
    )
}

fn budget(server: &ApiServer, name: &str, allowed: i64) {
    let url = format!(
        "{}/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        server.url()
    );
    let (code, b) = post(
        &url,
        &json!({"metadata": {"name": name}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    );
    assert_eq!(code, 201, "{b}");
    let status = json!({"status": {"observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": 2,
                                   "desiredHealthy": 2, "expectedPods": 2}});
    let (code, b) = send(
        "PATCH",
        &format!("{url}/{name}/status"),
        "application/merge-patch+json",
        &status.to_string(),
    );
    assert_eq!(code, 200, "{b}");
}

#[test]
fn eviction_respects_the_pod_s_disruption_budget() {
    let server = ApiServer::start().unwrap();
    let scheduled = json!({"nodeName": "n1", "containers": [{"name": "app", "image": "nginx"}]});
    // A pending pod goes whatever the budgets say.
    pod(&server, "pending", json!({"app": "web"}), one_container());
    budget(&server, "web-pdb", 0);
    let (code, st) = evict(&server, "pending");
    assert_eq!(code, 201, "{st}");
    assert_eq!(
        st,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    assert_eq!(get(&format!("{}/pending", pods(&server))).0, 404);
    // A running pod under a budget allowing no disruption: kube-apiserver's 429, byte for byte.
    pod(&server, "web-0", json!({"app": "web"}), scheduled.clone());
    run(&server, "web-0");
    let r = agent()
        .post(&format!("{}/web-0/eviction", pods(&server)))
        .header("Content-Type", "application/json")
        .send(r#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0"}}"#)
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    assert_eq!(
        r.into_body().read_to_string().unwrap(),
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web-pdb needs 2 healthy pods and has 2 currently"}]},"code":429}"#,
            "\n"
        )
    );
    assert_eq!(get(&format!("{}/web-0", pods(&server))).0, 200, "still there");
    // A budget allowing one disruption spends it.
    let url = format!(
        "{}/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        server.url()
    );
    send("DELETE", &format!("{url}/web-pdb"), "", "");
    budget(&server, "web-pdb2", 1);
    let (code, st) = evict(&server, "web-0");
    assert_eq!(code, 201, "{st}");
    let (_, b) = get(&format!("{url}/web-pdb2"));
    assert_eq!(b["status"]["disruptionsAllowed"], 0);
    assert!(b["status"]["disruptedPods"]["web-0"].is_string(), "{b}");
    assert_eq!(b["status"]["conditions"][0]["type"], "DisruptionAllowed");
    assert_eq!(b["status"]["conditions"][0]["status"], "False");
    assert_eq!(get(&format!("{}/web-0", pods(&server))).0, 404);
    // Two budgets: the eviction API supports one.
    budget(&server, "web-pdb3", 5);
    pod(&server, "web-1", json!({"app": "web"}), scheduled);
    run(&server, "web-1");
    let (code, st) = evict(&server, "web-1");
    assert_eq!(code, 500);
    assert_eq!(
        st["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    // Names must agree; a missing pod is 404.
    let (code, st) = post(
        &format!("{}/web-1/eviction", pods(&server)),
        &json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}}),
    );
    assert_eq!(
        (code, st["message"].as_str()),
        (400, Some("name in URL does not match name in Eviction object"))
    );
    assert_eq!(evict(&server, "nobody").0, 404);
}

#[test]
fn a_pod_no_node_runs_is_deleted_at_once_a_scheduled_one_is_marked_then_deleted() {
    let server = ApiServer::start().unwrap();
    pod(&server, "unscheduled", json!({}), one_container());
    let (code, gone) = send("DELETE", &format!("{}/unscheduled", pods(&server)), "", "");
    assert_eq!(code, 200);
    assert!(gone["metadata"].get("deletionTimestamp").is_none(), "{gone}");
    let mut watch = raw_http::Raw::watch(
        &server,
        "/api/v1/namespaces/default/pods?watch=true&fieldSelector=metadata.name%3Dscheduled",
    );
    pod(
        &server,
        "scheduled",
        json!({}),
        json!({"nodeName": "n1", "terminationGracePeriodSeconds": 45, "containers": [{"name": "a", "image": "x"}]}),
    );
    let (code, marked) = send(
        "DELETE",
        &format!("{}/scheduled", pods(&server)),
        "application/json",
        r#"{"gracePeriodSeconds": 7}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 7);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let kinds: Vec<(String, Value)> = (0..3)
        .map(|_| {
            let e = watch.event();
            (
                e["type"].as_str().unwrap().to_owned(),
                e["object"]["metadata"]["deletionGracePeriodSeconds"].clone(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("ADDED".to_owned(), Value::Null),
            ("MODIFIED".to_owned(), json!(7)),
            ("DELETED".to_owned(), json!(7))
        ]
    );
    assert_eq!(get(&format!("{}/scheduled", pods(&server))).0, 404);
}

#[test]
fn ephemeral_containers_are_added_through_their_subresource_only() {
    let server = ApiServer::start().unwrap();
    pod(&server, "p", json!({}), one_container());
    let url = format!("{}/p/ephemeralcontainers", pods(&server));
    let (code, p) = get(&url);
    assert_eq!((code, p["kind"].as_str()), (200, Some("Pod")));
    let patch = json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox"}],
                                "containers": [{"name": "app", "image": "changed"}]}});
    let (code, p) = send(
        "PATCH",
        &url,
        "application/strategic-merge-patch+json",
        &patch.to_string(),
    );
    assert_eq!(code, 200, "{p}");
    assert_eq!(p["spec"]["ephemeralContainers"][0]["name"], "debug");
    assert_eq!(p["spec"]["containers"][0]["image"], "nginx", "nothing else changes");
    let mut removed = p.clone();
    removed["spec"]["ephemeralContainers"] = json!([]);
    let (code, st) = put(&url, &removed);
    assert_eq!(code, 422, "{st}");
}

#[test]
fn the_library_s_evict_reads_the_server_s_answers_as_kube_apiserver_s() {
    use kube_informer::client::{Api, EvictionOutcome};
    use kube_informer::object::core::Pod;
    let server = ApiServer::start().unwrap();
    let api: Api<Pod> = Api::namespaced(server.client().unwrap(), "default");
    pod(&server, "free", json!({}), one_container());
    assert_eq!(
        api.evict("free", &Default::default()).unwrap(),
        EvictionOutcome::Evicted
    );
    pod(
        &server,
        "web-0",
        json!({"app": "web"}),
        json!({"nodeName": "n1", "containers": [{"name": "a", "image": "x"}]}),
    );
    run(&server, "web-0");
    budget(&server, "web-pdb", 0);
    match api.evict("web-0", &Default::default()).unwrap() {
        EvictionOutcome::Blocked(b) => {
            assert_eq!(
                b.causes,
                ["The disruption budget web-pdb needs 2 healthy pods and has 2 currently"]
            );
            assert_eq!(b.retry_after, None);
        }
        other => panic!("{other:?}"),
    }
}
