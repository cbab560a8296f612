//! What a fresh cluster has (kube-apiserver's own objects), the NamespaceLifecycle admission, and a namespace's
//! deletion with its content, as a cluster's namespace controller does it.

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ApiResource, ObjectMeta};
use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect()
}

#[test]
fn a_fresh_server_has_what_kube_apiserver_creates_at_start() {
    let server = ApiServer::start().unwrap();
    let url = server.url();
    let (_, namespaces) = get(&format!("{url}/api/v1/namespaces"));
    assert_eq!(
        names(&namespaces),
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    for ns in namespaces["items"].as_array().unwrap() {
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(
            ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
            ns["metadata"]["name"]
        );
    }
    let (code, svc) = get(&format!("{url}/api/v1/namespaces/default/services/kubernetes"));
    assert_eq!(code, 200);
    assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(
        svc["spec"]["ports"],
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": server.addr().port()}])
    );
    assert_eq!(
        svc["metadata"]["labels"],
        json!({"component": "apiserver", "provider": "kubernetes"})
    );
    let (code, slice) = get(&format!(
        "{url}/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"
    ));
    assert_eq!(code, 200);
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["endpoints"][0]["addresses"],
        json!([server.addr().ip().to_string()])
    );
    assert_eq!(slice["ports"][0]["port"], server.addr().port());
    assert_eq!(slice["metadata"]["labels"]["kubernetes.io/service-name"], "kubernetes");
    let (code, _) = get(&format!("{url}/api/v1/namespaces/default/endpoints/kubernetes"));
    assert_eq!(code, 200);
    let (_, classes) = get(&format!("{url}/apis/scheduling.k8s.io/v1/priorityclasses"));
    assert_eq!(names(&classes), ["system-cluster-critical", "system-node-critical"]);
    assert_eq!(classes["items"][1]["value"], 2_000_001_000);
    // A new service is never given the `kubernetes` service's address.
    let (code, other) = post(
        &format!("{url}/api/v1/namespaces/default/services"),
        &json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}),
    );
    assert_eq!(code, 201);
    assert_ne!(other["spec"]["clusterIP"], "10.96.0.1");
    // Without the default resources, nothing is created.
    let bare = ApiServer::builder().no_default_resources().start().unwrap();
    assert_eq!(bare.revision(), 1);
}

#[test]
fn a_fresh_server_has_the_bootstrap_rbac_policy_without_the_rbac_mode() {
    let server = ApiServer::start().unwrap();
    let url = server.url();
    let rbac = format!("{url}/apis/rbac.authorization.k8s.io/v1");
    let (code, admin) = get(&format!("{rbac}/clusterroles/cluster-admin"));
    assert_eq!(code, 200, "{admin}");
    assert_eq!(
        admin["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    assert_eq!(
        admin["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );
    assert_eq!(
        admin["rules"][0],
        json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
    );
    let (_, roles) = get(&format!("{rbac}/clusterroles"));
    assert_eq!(roles["items"].as_array().unwrap().len(), 69);
    let (_, bindings) = get(&format!("{rbac}/clusterrolebindings"));
    assert_eq!(bindings["items"].as_array().unwrap().len(), 50);
    let (code, masters) = get(&format!("{rbac}/clusterrolebindings/cluster-admin"));
    assert_eq!(code, 200);
    assert_eq!(
        masters["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}])
    );
    // The aggregated roles hold their sources' rules, view's inside edit's inside admin's.
    let rules_of = |name: &str| get(&format!("{rbac}/clusterroles/{name}")).1["rules"].clone();
    let (view, edit, admin) = (rules_of("view"), rules_of("edit"), rules_of("admin"));
    let pods_log = json!({"verbs": ["get", "list", "watch"], "apiGroups": [""],
                          "resources": ["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
                                        "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"]});
    for rules in [&view, &edit, &admin] {
        assert!(rules.as_array().unwrap().contains(&pods_log), "{rules}");
    }
    assert!(view.as_array().unwrap().len() < edit.as_array().unwrap().len());
    assert!(edit.as_array().unwrap().len() < admin.as_array().unwrap().len());
    let (_, roles) = get(&format!("{rbac}/namespaces/kube-system/roles"));
    assert!(names(&roles).contains(&"extension-apiserver-authentication-reader"));
}

#[test]
fn a_fresh_server_has_the_priority_and_fairness_configuration() {
    let server = ApiServer::start().unwrap();
    let fc = format!("{}/apis/flowcontrol.apiserver.k8s.io/v1", server.url());
    let (_, levels) = get(&format!("{fc}/prioritylevelconfigurations"));
    assert_eq!(
        names(&levels),
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    let (_, exempt) = get(&format!("{fc}/prioritylevelconfigurations/exempt"));
    assert_eq!(
        exempt["spec"],
        json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})
    );
    assert_eq!(
        exempt["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
    let (_, schemas) = get(&format!("{fc}/flowschemas"));
    assert_eq!(
        names(&schemas),
        [
            "catch-all",
            "endpoint-controller",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes",
            "workload-leader-election"
        ]
    );
    let (_, probes) = get(&format!("{fc}/flowschemas/probes"));
    assert_eq!(probes["spec"]["matchingPrecedence"], 2);
    assert_eq!(probes["spec"]["priorityLevelConfiguration"]["name"], "exempt");
    assert_eq!(
        probes["spec"]["rules"][0]["nonResourceRules"],
        json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}])
    );
    let dangling = &probes["status"]["conditions"][0];
    assert_eq!(
        (&dangling["type"], &dangling["status"], &dangling["reason"]),
        (&json!("Dangling"), &json!("False"), &json!("Found"))
    );
    assert_eq!(
        dangling["message"],
        "This FlowSchema references the PriorityLevelConfiguration object named \"exempt\" and it exists"
    );
}

#[test]
fn creating_in_a_namespace_that_does_not_exist_is_not_found() {
    let server = ApiServer::start().unwrap();
    let (code, st) = post(&cms(&server, "nope"), &json!({"metadata": {"name": "a"}}));
    assert_eq!(code, 404);
    assert_eq!(
        st,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "namespaces \"nope\" not found", "reason": "NotFound",
               "details": {"name": "nope", "kind": "namespaces"}, "code": 404})
    );
    // The same through the Rust API, server-side apply and a dry run.
    let err = server
        .create(&ConfigMap::new(ObjectMeta::namespaced("nope", "a")))
        .unwrap_err();
    assert!(err.to_string().contains("namespaces \"nope\" not found"), "{err}");
    let (code, _) = send(
        "PATCH",
        &format!("{}/a?fieldManager=m", cms(&server, "nope")),
        "application/apply-patch+yaml",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
    );
    assert_eq!(code, 404);
    let (code, _) = post(
        &format!("{}?dryRun=All", cms(&server, "nope")),
        &json!({"metadata": {"name": "a"}}),
    );
    assert_eq!(code, 404);
    // Once it exists, it works; cluster-scoped objects need no namespace.
    server.create_namespace("nope").unwrap();
    assert_eq!(post(&cms(&server, "nope"), &json!({"metadata": {"name": "a"}})).0, 201);
}

#[test]
fn the_system_namespaces_may_not_be_deleted() {
    let server = ApiServer::start().unwrap();
    for ns in ["default", "kube-system", "kube-public"] {
        let (code, st) = send(
            "DELETE",
            &format!("{}/api/v1/namespaces/{ns}", server.url()),
            "application/json",
            "",
        );
        assert_eq!(code, 403);
        assert_eq!(
            st["message"],
            format!("namespaces \"{ns}\" is forbidden: this namespace may not be deleted")
        );
        assert_eq!(st["reason"], "Forbidden");
    }
    let (code, _) = send(
        "DELETE",
        &format!("{}/api/v1/namespaces/kube-node-lease", server.url()),
        "application/json",
        "",
    );
    assert_eq!(code, 200);
}

#[test]
fn deleting_a_namespace_deletes_its_content_then_the_namespace() {
    let server = ApiServer::builder().namespaces(["team", "keep"]).start().unwrap();
    let url = server.url();
    make(&server, "team", "plain", json!({}));
    make(&server, "keep", "other", json!({}));
    // An object whose controller has a finalizer on it holds the namespace.
    let (code, _) = post(
        &cms(&server, "team"),
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/cleanup"]}}),
    );
    assert_eq!(code, 201);
    let (code, pod) = post(
        &format!("{url}/api/v1/namespaces/team/pods"),
        &json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    );
    assert_eq!(code, 201, "{pod}");

    let (code, ns) = send(
        "DELETE",
        &format!("{url}/api/v1/namespaces/team"),
        "application/json",
        "",
    );
    assert_eq!(code, 200);
    assert_eq!(
        (ns["kind"].as_str(), ns["status"]["phase"].as_str()),
        (Some("Namespace"), Some("Terminating"))
    );
    assert!(ns["metadata"]["deletionTimestamp"].is_string());

    // The content is gone but for the object its finalizer keeps, which is being deleted.
    let (_, left) = get(&cms(&server, "team"));
    assert_eq!(names(&left), ["held"]);
    assert!(left["items"][0]["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(get(&format!("{url}/api/v1/namespaces/team/pods/p")).0, 404);
    assert_eq!(names(&get(&cms(&server, "keep")).1), ["other"]);

    // The namespace says why it waits, with the namespace controller's conditions.
    let (_, ns) = get(&format!("{url}/api/v1/namespaces/team"));
    assert_eq!(ns["status"]["phase"], "Terminating");
    let condition = |kind: &str| {
        ns["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == kind)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        (
            condition("NamespaceContentRemaining")["status"].as_str(),
            condition("NamespaceContentRemaining")["message"].as_str()
        ),
        (
            Some("True"),
            Some("Some resources are remaining: configmaps. has 1 resource instances")
        )
    );
    assert_eq!(
        condition("NamespaceFinalizersRemaining")["message"],
        "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"
    );

    // Nothing new may be created there meanwhile.
    let (code, st) = post(&cms(&server, "team"), &json!({"metadata": {"name": "late"}}));
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        "configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "NamespaceTerminating", "message": "namespace team is being terminated", "field": "metadata.namespace"}])
    );

    // The controller lets go: the object goes, then the namespace.
    let (code, _) = send(
        "PATCH",
        &format!("{}/held", cms(&server, "team")),
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":null}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(get(&format!("{url}/api/v1/namespaces/team")).0, 404);
    // It can be made again, empty.
    server.create_namespace("team").unwrap();
    assert!(names(&get(&cms(&server, "team")).1).is_empty());
}

#[test]
fn a_namespace_deleted_through_the_rust_api_goes_with_its_content() {
    let server = ApiServer::builder().namespace("gone").start().unwrap();
    server
        .create(&ConfigMap::new(ObjectMeta::namespaced("gone", "a")))
        .unwrap();
    let namespaces = ApiResource::new("", "v1", "Namespace", "namespaces", false);
    server.delete_json(&namespaces, None, "gone").unwrap();
    assert!(server.get_json(&namespaces, None, "gone").is_err());
    let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    assert!(server.get_json(&cms, Some("gone"), "a").is_err());
}

#[test]
fn finalize_sets_the_finalizers_of_a_namespace_and_lets_a_deleted_one_go() {
    let server = ApiServer::builder().namespace("f").start().unwrap();
    let url = format!("{}/api/v1/namespaces/f", server.url());
    // Held by a metadata finalizer after its content is gone: still there, Terminating.
    let (code, _) = send(
        "PATCH",
        &url,
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":["example.com/x"]}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(send("DELETE", &url, "application/json", "").0, 200);
    let (_, ns) = get(&url);
    assert_eq!(
        (ns["status"]["phase"].as_str(), ns["spec"].get("finalizers")),
        (Some("Terminating"), None)
    );
    // `finalize` sets the spec finalizers (nothing else changes).
    let (code, ns) = put(
        &format!("{url}/finalize"),
        &json!({"metadata": {"name": "f"}, "spec": {"finalizers": ["kubernetes"]}}),
    );
    assert_eq!((code, ns["spec"]["finalizers"].clone()), (200, json!(["kubernetes"])));
    assert_eq!(ns["metadata"]["finalizers"], json!(["example.com/x"]));
    // The last metadata finalizer removed, the namespace controller finalizes it again: gone.
    let (code, _) = send(
        "PATCH",
        &url,
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":null}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(get(&url).0, 404);
}
