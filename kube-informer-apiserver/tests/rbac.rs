//! RBAC as kube-apiserver enforces it, service-account tokens, and no open doors — over HTTP, as clients see it.

mod common;
#[path = "common/raw_http.rs"]
mod raw_http;

use std::net::{IpAddr, Ipv4Addr};

use kube_informer::client::Api;
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer_apiserver::{ADMIN_USER, ApiServer, ApiServerBuilder};
use raw_http::send_with;
use serde_json::{Value, json};

fn agent() -> ureq::Agent {
    raw_http::agent()
}

/// A request with a bearer token (none when `token` is empty).
fn call(method: &str, url: &str, token: &str, body: Option<&Value>) -> (u16, Value) {
    let a = agent();
    let mut req = ureq::http::Request::builder().method(method).uri(url);
    if !token.is_empty() {
        req = req.header("Authorization", format!("Bearer {token}"));
    }
    let text = body.map(Value::to_string).unwrap_or_default();
    let req = req.header("Content-Type", "application/json").body(text).unwrap();
    let resp = a.run(req).unwrap();
    let code = resp.status().as_u16();
    let text = resp.into_body().read_to_string().unwrap_or_default();
    (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn rbac() -> ApiServerBuilder {
    ApiServer::builder()
        .namespace("team")
        .rbac()
        .token("alice-token", "alice")
        .token("bob-token", "bob")
}

fn admin(server: &ApiServer) -> String {
    server.token_for(ADMIN_USER).unwrap().to_owned()
}

fn apply(server: &ApiServer, manifest: &str) {
    let dir = common::TempDir::new("rbac-manifest");
    let path = dir.path("m.yaml");
    std::fs::write(&path, manifest).unwrap();
    server.load_manifests(&path).unwrap();
}

const READER: &str = "
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: team}
rules:
- {apiGroups: [''], resources: [configmaps], verbs: [get, list, watch]}
- {apiGroups: [''], resources: [configmaps], resourceNames: [leader], verbs: [update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-reads, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: User, name: alice}]
";

#[test]
fn rbac_denies_by_default_and_grants_what_bindings_grant() {
    let server = rbac().start().unwrap();
    apply(&server, READER);
    let cms = |ns: &str| format!("{}/api/v1/namespaces/{ns}/configmaps", server.url());
    assert_eq!(call("GET", &cms("team"), "alice-token", None).0, 200);
    let (code, st) = call("GET", &cms("other"), "alice-token", None);
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "other""#
    );
    assert_eq!(st["details"], json!({"kind": "configmaps"}));
    let (code, st) = call(
        "POST",
        &cms("team"),
        "alice-token",
        Some(&json!({"metadata": {"name": "x"}})),
    );
    assert_eq!(code, 403, "{st}");
    // resourceNames: update of `leader` only; a list names no object.
    assert_eq!(
        call(
            "POST",
            &cms("team"),
            &admin(&server),
            Some(&json!({"metadata": {"name": "leader"}}))
        )
        .0,
        201
    );
    let leader = format!("{}/leader", cms("team"));
    assert_eq!(
        call(
            "PUT",
            &leader,
            "alice-token",
            Some(&json!({"metadata": {"name": "leader"}, "data": {"a": "1"}}))
        )
        .0,
        200
    );
    let (code, st) = call("PATCH", &leader, "alice-token", Some(&json!({})));
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        r#"configmaps "leader" is forbidden: User "alice" cannot patch resource "configmaps" in API group "" in the namespace "team""#
    );
    // bob has nothing; a resource that does not exist is still 403 for him, 404 for the admin.
    assert_eq!(call("GET", &cms("team"), "bob-token", None).0, 403);
    let widgets = format!("{}/apis/example.com/v1/widgets", server.url());
    assert_eq!(call("GET", &widgets, "bob-token", None).0, 403);
    assert_eq!(call("GET", &widgets, &admin(&server), None).0, 404);
    // Discovery is every authenticated user's (system:discovery), /version everyone's (system:public-info-viewer).
    assert_eq!(call("GET", &format!("{}/api", server.url()), "bob-token", None).0, 200);
    let (code, st) = call("GET", &format!("{}/api", server.url()), "", None);
    assert_eq!(
        (code, st["message"].as_str()),
        (
            403,
            Some(r#"forbidden: User "system:anonymous" cannot get path "/api""#)
        )
    );
    assert_eq!(call("GET", &format!("{}/version", server.url()), "", None).0, 200);
    assert_eq!(
        call("GET", &cms("team"), "wrong-token", None).0,
        401,
        "a bad token is never anonymous"
    );
    // Removing the binding takes the permission away at once.
    let binding = format!(
        "{}/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings/alice-reads",
        server.url()
    );
    assert_eq!(call("DELETE", &binding, &admin(&server), None).0, 200);
    assert_eq!(call("GET", &cms("team"), "alice-token", None).0, 403);
}

#[test]
fn a_binding_to_a_missing_role_is_the_reason_of_the_refusal() {
    let server = rbac().start().unwrap();
    apply(
        &server,
        "
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dangling}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: not-there}
subjects: [{kind: User, name: alice}]
",
    );
    let (code, st) = call("GET", &format!("{}/api/v1/nodes", server.url()), "alice-token", None);
    assert_eq!(code, 403);
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .ends_with(r#": RBAC: clusterrole.rbac.authorization.k8s.io "not-there" not found"#),
        "{st}"
    );
}

#[test]
fn access_reviews_answer_from_rbac_with_its_reasons() {
    let server = rbac().start().unwrap();
    apply(&server, READER);
    let ssar = format!("{}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", server.url());
    let review = |token: &str, attrs: Value| {
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attrs}});
        let (code, v) = call("POST", &ssar, token, Some(&body));
        assert_eq!(code, 201, "{v}");
        v["status"].clone()
    };
    assert_eq!(
        review(
            "alice-token",
            json!({"verb": "list", "resource": "configmaps", "namespace": "team"})
        ),
        json!({"allowed": true, "reason": r#"RBAC: allowed by RoleBinding "alice-reads/team" of Role "reader" to User "alice""#})
    );
    assert_eq!(
        review(
            "alice-token",
            json!({"verb": "delete", "resource": "configmaps", "namespace": "team"})
        ),
        json!({"allowed": false})
    );
    assert_eq!(
        review(&admin(&server), json!({"verb": "delete", "resource": "nodes"})),
        json!({"allowed": true})
    );
    // Anonymous requests may not even ask.
    let (code, _) = call(
        "POST",
        &ssar,
        "",
        Some(&json!({"spec": {"resourceAttributes": {"verb": "get"}}})),
    );
    assert_eq!(code, 403);
    // Rules review: the bootstrap roles of every authenticated user, and alice's role.
    let (code, rules) = call(
        "POST",
        &format!("{}/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", server.url()),
        "alice-token",
        Some(&json!({"spec": {"namespace": "team"}})),
    );
    assert_eq!(code, 201);
    let resource_rules = rules["status"]["resourceRules"].as_array().unwrap();
    assert!(resource_rules.contains(&json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})));
    assert!(resource_rules.contains(
        &json!({"verbs": ["update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["leader"]})
    ));
    assert!(
        rules["status"]["nonResourceRules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["nonResourceURLs"][0] == "/api")
    );
    // SubjectAccessReview: the admin asks about alice (no group is added to the subject).
    let sar = format!("{}/apis/authorization.k8s.io/v1/subjectaccessreviews", server.url());
    let body = json!({"spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": "team"}}});
    let (code, v) = call("POST", &sar, &admin(&server), Some(&body));
    assert_eq!((code, v["status"]["allowed"].as_bool()), (201, Some(true)));
    assert_eq!(
        call("POST", &sar, "alice-token", Some(&body)).0,
        403,
        "SAR needs its own permission"
    );
    let (code, v) = call(
        "POST",
        &sar,
        &admin(&server),
        Some(&json!({"spec": {"resourceAttributes": {"verb": "get"}}})),
    );
    assert_eq!(code, 422);
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("at least one of user or group must be specified")
    );
    let lsar = format!(
        "{}/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews",
        server.url()
    );
    let (code, v) = call("POST", &lsar, &admin(&server), Some(&body));
    assert_eq!((code, v["status"]["allowed"].as_bool()), (201, Some(true)));
    let other = json!({"spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": "x"}}});
    assert_eq!(call("POST", &lsar, &admin(&server), Some(&other)).0, 400);
    // Who am I.
    let (code, v) = call(
        "POST",
        &format!("{}/apis/authentication.k8s.io/v1/selfsubjectreviews", server.url()),
        "alice-token",
        Some(&json!({})),
    );
    assert_eq!(code, 201);
    assert_eq!(
        v["status"]["userInfo"],
        json!({"username": "alice", "groups": ["system:authenticated"]})
    );
}

#[test]
fn escalation_is_prevented_unless_escalate_or_bind_is_granted() {
    let server = rbac().start().unwrap();
    apply(
        &server,
        "
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: rbac-writer, namespace: team}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: [create, update, patch, get]}
- {apiGroups: [''], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: rbac-writer}
subjects: [{kind: User, name: alice}]
",
    );
    let roles = format!(
        "{}/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
        server.url()
    );
    let role = |name: &str, verbs: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]})
    };
    assert_eq!(
        call("POST", &roles, "alice-token", Some(&role("ok", json!(["get"])))).0,
        201
    );
    let (code, st) = call(
        "POST",
        &roles,
        "alice-token",
        Some(&role("more", json!(["get", "delete"]))),
    );
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        "roles.rbac.authorization.k8s.io \"more\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}"
    );
    // Binding a role alice does not hold; then with `bind` on it.
    let bindings = format!(
        "{}/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
        server.url()
    );
    let binding = json!({"metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                         "subjects": [{"kind": "User", "name": "bob"}]});
    assert_eq!(call("POST", &bindings, "alice-token", Some(&binding)).0, 403);
    apply(
        &server,
        "
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: binder, namespace: team}
rules: [{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], resourceNames: [edit], verbs: [bind]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-binds, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: binder}
subjects: [{kind: User, name: alice}]
",
    );
    assert_eq!(call("POST", &bindings, "alice-token", Some(&binding)).0, 201);
    assert_eq!(
        call(
            "GET",
            &format!("{}/apis/apps/v1/namespaces/team/deployments", server.url()),
            "bob-token",
            None
        )
        .0,
        200
    );
    // A role ref never changes.
    let mut changed = binding.clone();
    changed["roleRef"]["name"] = json!("view");
    let (code, st) = call("PUT", &format!("{bindings}/b"), &admin(&server), Some(&changed));
    assert_eq!(code, 422, "{st}");
    assert!(st["message"].as_str().unwrap().contains("cannot change roleRef"));
}

#[test]
fn cluster_roles_aggregate_by_label_and_follow_label_changes() {
    let server = rbac().start().unwrap();
    let crs = ApiResource::new("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false);
    let view = server.get_json(&crs, None, "view").unwrap();
    assert!(
        view["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"].as_array().unwrap().contains(&json!("pods")))
    );
    let admin_rules = server.get_json(&crs, None, "admin").unwrap()["rules"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        admin_rules > view["rules"].as_array().unwrap().len(),
        "admin aggregates edit, which aggregates view"
    );
    // A role labelled to aggregate into view reaches view, edit and admin.
    let widgets = json!({"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]});
    server
        .create_json(&crs, None, json!({"metadata": {"name": "widget-viewer", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}, "rules": [widgets]}))
        .unwrap();
    for name in ["view", "edit", "admin"] {
        assert!(
            server.get_json(&crs, None, name).unwrap()["rules"]
                .as_array()
                .unwrap()
                .contains(&widgets),
            "{name}"
        );
    }
    let view = server.get_json(&crs, None, "view").unwrap();
    let managers: Vec<&str> = view["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"clusterrole-aggregation-controller"), "{managers:?}");
    // The label goes: so do the rules.
    let mut role = server.get_json(&crs, None, "widget-viewer").unwrap();
    role["metadata"]["labels"] = json!({});
    server.replace_json(&crs, None, role).unwrap();
    for name in ["view", "edit", "admin"] {
        assert!(
            !server.get_json(&crs, None, name).unwrap()["rules"]
                .as_array()
                .unwrap()
                .contains(&widgets),
            "{name}"
        );
    }
}

#[test]
fn service_account_tokens_authenticate_as_the_service_account_until_it_is_deleted() {
    let server = rbac().start().unwrap();
    let sa = ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true);
    let created = server
        .create_json(&sa, Some("team"), json!({"metadata": {"name": "ctl"}}))
        .unwrap();
    apply(
        &server,
        "
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ctl-views, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: ctl, namespace: team}]
",
    );
    let url = format!("{}/api/v1/namespaces/team/serviceaccounts/ctl/token", server.url());
    let (code, tr) = call(
        "POST",
        &url,
        &admin(&server),
        Some(
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}),
        ),
    );
    assert_eq!(code, 201, "{tr}");
    assert_eq!(
        tr["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(
        tr["metadata"],
        json!({"name": "ctl", "namespace": "team", "creationTimestamp": tr["metadata"]["creationTimestamp"]})
    );
    let token = tr["status"]["token"].as_str().unwrap().to_owned();
    assert!(tr["status"]["expirationTimestamp"].is_string());
    assert_eq!(
        call(
            "GET",
            &format!("{}/api/v1/namespaces/team/pods", server.url()),
            &token,
            None
        )
        .0,
        200
    );
    let (code, st) = call(
        "GET",
        &format!("{}/api/v1/namespaces/team/secrets", server.url()),
        &token,
        None,
    );
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        r#"secrets is forbidden: User "system:serviceaccount:team:ctl" cannot list resource "secrets" in API group "" in the namespace "team""#
    );
    // A token review says who it is.
    let reviews = format!("{}/apis/authentication.k8s.io/v1/tokenreviews", server.url());
    let (code, v) = call(
        "POST",
        &reviews,
        &admin(&server),
        Some(&json!({"spec": {"token": token}})),
    );
    assert_eq!(code, 201);
    assert_eq!(v["status"]["authenticated"], true);
    assert_eq!(v["status"]["user"]["username"], "system:serviceaccount:team:ctl");
    assert_eq!(v["status"]["user"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        v["status"]["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ])
    );
    let (_, v) = call(
        "POST",
        &reviews,
        &admin(&server),
        Some(&json!({"spec": {"token": token, "audiences": ["vault"]}})),
    );
    assert_eq!(v["status"]["authenticated"], Value::Null);
    assert!(
        v["status"]["error"].as_str().unwrap().starts_with("token audiences"),
        "{v}"
    );
    // Refused requests and reviews.
    assert_eq!(
        call(
            "POST",
            &url,
            &admin(&server),
            Some(&json!({"spec": {"expirationSeconds": 599}}))
        )
        .0,
        422
    );
    let missing = format!("{}/api/v1/namespaces/team/serviceaccounts/nobody/token", server.url());
    assert_eq!(call("POST", &missing, &admin(&server), Some(&json!({}))).0, 404);
    assert_eq!(call("POST", &url, "bob-token", Some(&json!({}))).0, 403);
    // Deleting the service account invalidates its tokens.
    server.delete_json(&sa, Some("team"), "ctl").unwrap();
    assert_eq!(
        call(
            "GET",
            &format!("{}/api/v1/namespaces/team/pods", server.url()),
            &token,
            None
        )
        .0,
        401
    );
    let (_, v) = call(
        "POST",
        &reviews,
        &admin(&server),
        Some(&json!({"spec": {"token": token}})),
    );
    assert_eq!(v["status"]["error"], r#"serviceaccounts "ctl" not found"#);
}

#[test]
fn tokens_bound_to_a_pod_die_with_it() {
    let server = rbac().start().unwrap();
    let sa = ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true);
    let pods = ApiResource::new("", "v1", "Pod", "pods", true);
    server
        .create_json(&sa, Some("team"), json!({"metadata": {"name": "ctl"}}))
        .unwrap();
    let pod = server
        .create_json(&pods, Some("team"), json!({"metadata": {"name": "p"}, "spec": {"serviceAccountName": "ctl", "containers": [{"name": "c", "image": "x"}]}}))
        .unwrap();
    let url = format!("{}/api/v1/namespaces/team/serviceaccounts/ctl/token", server.url());
    let bound =
        |uid: &Value| json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid}}});
    assert_eq!(
        call("POST", &url, &admin(&server), Some(&bound(&json!("other-uid")))).0,
        409
    );
    let (code, tr) = call("POST", &url, &admin(&server), Some(&bound(&pod["metadata"]["uid"])));
    assert_eq!(code, 201, "{tr}");
    let token = tr["status"]["token"].as_str().unwrap().to_owned();
    let whoami = format!("{}/apis/authentication.k8s.io/v1/selfsubjectreviews", server.url());
    let (code, v) = call("POST", &whoami, &token, Some(&json!({})));
    assert_eq!(code, 201);
    assert_eq!(
        v["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["p"])
    );
    server.delete_json(&pods, Some("team"), "p").unwrap();
    assert_eq!(call("POST", &whoami, &token, Some(&json!({}))).0, 401);
}

#[test]
fn impersonation_needs_the_impersonate_verb() {
    let server = rbac().start().unwrap();
    apply(&server, READER);
    let cms = format!("{}/api/v1/namespaces/team/configmaps", server.url());
    let a = agent();
    let get_as = |token: &str, as_user: &str| {
        let req = ureq::http::Request::builder()
            .uri(&cms)
            .header("Authorization", format!("Bearer {token}"))
            .header("Impersonate-User", as_user)
            .body(())
            .unwrap();
        let resp = a.run(req).unwrap();
        let code = resp.status().as_u16();
        (code, resp.into_body().read_to_string().unwrap_or_default())
    };
    assert_eq!(get_as(&admin(&server), "alice").0, 200);
    assert_eq!(get_as(&admin(&server), "bob").0, 403);
    let (code, body) = get_as("bob-token", "alice");
    assert_eq!(code, 403);
    assert!(body.contains(r#"users \"alice\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"#), "{body}");
}

#[test]
fn the_service_account_client_acts_with_exactly_its_bindings() {
    let server = rbac().start().unwrap();
    apply(
        &server,
        "
apiVersion: v1
kind: ServiceAccount
metadata: {name: ctl, namespace: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ctl, namespace: team}
rules: [{apiGroups: [''], resources: [configmaps], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ctl, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ctl}
subjects: [{kind: ServiceAccount, name: ctl}]
",
    );
    let cm = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    let api = Api::<DynamicObject>::namespaced_with(server.service_account_client("team", "ctl").unwrap(), "team", &cm);
    assert!(api.list(&Default::default()).is_ok());
    let err = api.get("x").unwrap_err();
    assert!(
        err.to_string().contains(
            r#"configmaps "x" is forbidden: User "system:serviceaccount:team:ctl" cannot get resource "configmaps""#
        ),
        "{err}"
    );
    assert!(
        server.service_account_client("team", "nobody").is_err(),
        "no service account, no token"
    );
}

#[test]
fn no_open_doors() {
    let every = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    let err = ApiServer::builder().address(every).start().unwrap_err();
    assert!(err.to_string().contains("without authentication"), "{err}");
    // Loopback needs no authentication; with a token, or with the risk named, every interface is served.
    assert!(
        ApiServer::builder()
            .address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)))
            .start()
            .is_ok()
    );
    assert!(ApiServer::builder().address(every).token("t", "u").start().is_ok());
    let open = ApiServer::builder()
        .address(every)
        .insecure_allow_unauthenticated_remote_access()
        .admin_api()
        .start()
        .unwrap();
    // From loopback the admin API still answers.
    let (code, _) = send_with(
        &agent(),
        "GET",
        &format!("{}/kube-informer/admin/status", open.url()),
        "",
        "",
    );
    assert_eq!(code, 200);
}

// ----- one reading of the path: what is authorized is what is served -----

/// A user allowed `get` on the config map `cm-x` only.
const CM_X_READER: &str = "
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-x-reader, namespace: team}
rules:
- {apiGroups: [''], resources: [configmaps], resourceNames: [cm-x], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-reads-cm-x, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-x-reader}
subjects: [{kind: User, name: alice}]
";

#[test]
fn an_encoded_name_is_authorized_as_the_name_it_decodes_to() {
    let server = rbac().start().unwrap();
    apply(&server, CM_X_READER);
    let cms = format!("{}/api/v1/namespaces/team/configmaps", server.url());
    let admin = admin(&server);
    for name in ["cm-x", "cm-y"] {
        let body = json!({"metadata": {"name": name}, "data": {"k": name}});
        assert_eq!(call("POST", &cms, &admin, Some(&body)).0, 201);
    }
    // kube-apiserver reads Go's decoded `URL.Path`: `cm%2Dx` is `cm-x`, for the authorizer and the handler alike.
    for path in ["cm-x", "cm%2Dx", "%63m-x", "cm%2dx"] {
        let (code, cm) = call("GET", &format!("{cms}/{path}"), "alice-token", None);
        assert_eq!((code, cm["data"]["k"].as_str()), (200, Some("cm-x")), "{path}");
    }
    // The other name is refused under any spelling, as the name it decodes to.
    let (code, st) = call("GET", &format!("{cms}/cm%2Dy"), "alice-token", None);
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        r#"configmaps "cm-y" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "team""#
    );
    // An encoded `/` separates segments, as in Go's `URL.Path`: the collection's segment may be written with it.
    let (code, cm) = call(
        "GET",
        &format!("{}/api/v1/namespaces/team/configmaps%2Fcm-x", server.url()),
        "alice-token",
        None,
    );
    assert_eq!((code, cm["data"]["k"].as_str()), (200, Some("cm-x")));
    // ... and never hides a second name inside one: `cm-x%2Fstatus` is a subresource config maps do not have,
    // authorized (and refused) as such.
    let (code, st) = call("GET", &format!("{cms}/cm-x%2Fstatus"), "alice-token", None);
    assert_eq!(code, 403, "{st}");
    assert_eq!(
        st["message"],
        r#"configmaps "cm-x" is forbidden: User "alice" cannot get resource "configmaps/status" in API group "" in the namespace "team""#
    );
}

#[test]
fn an_encoded_non_resource_path_is_authorized_as_the_path_it_decodes_to() {
    let server = rbac().start().unwrap();
    // `system:public-info-viewer` grants `/healthz` to anonymous requests: `/health%7A` is that path.
    for path in ["/healthz", "/health%7A", "/health%7a", "/%76ersion"] {
        let (code, body) = call("GET", &format!("{}{path}", server.url()), "", None);
        assert_eq!(code, 200, "{path}: {body}");
    }
    // A path no one is granted stays refused, as the path it decodes to.
    let (code, st) = call("GET", &format!("{}/metric%73", server.url()), "", None);
    assert_eq!(code, 403);
    assert_eq!(
        st["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/metrics""#
    );
}

#[test]
fn dot_segments_empty_segments_and_bad_escapes_name_nothing_whoever_asks() {
    let server = rbac().start().unwrap();
    apply(&server, READER);
    let url = server.url();
    let admin = admin(&server);
    let body = json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}});
    assert_eq!(
        call(
            "POST",
            &format!("{url}/api/v1/namespaces/team/secrets"),
            &admin,
            Some(&body)
        )
        .0,
        201
    );
    // alice may read config maps in `team`: no spelling of a path reaches a secret, or another namespace, through
    // them. Each is refused before any authorizer reads it, as a path that names nothing (404), for alice and the
    // cluster admin alike.
    for path in [
        "/api/v1/namespaces/team/configmaps/..",
        "/api/v1/namespaces/team/configmaps/%2E%2E",
        "/api/v1/namespaces/team/configmaps/.",
        "/api/v1/namespaces/team/configmaps/..%2Fsecrets%2Fs",
        "/api/v1/namespaces/team/configmaps%2F..%2Fsecrets/s",
        "/api/v1/namespaces/team%2F..%2Fother/configmaps",
        "/api/v1/namespaces//configmaps",
        "/api/v1/namespaces/team/configmaps%2F%2Fx",
        "//api/v1/namespaces/team/configmaps",
        "/api/v1/namespaces/team/configmaps/%zz",
        "/api/v1/namespaces/team/configmaps/%ff",
    ] {
        for token in ["alice-token", admin.as_str()] {
            let (code, st) = call("GET", &format!("{url}{path}"), token, None);
            assert_eq!((code, st["reason"].as_str()), (404, Some("NotFound")), "{path}: {st}");
        }
    }
    // Anonymous requests get no further.
    assert_eq!(call("GET", &format!("{url}/healthz/..%2Fmetrics"), "", None).0, 404);
}

// ----- order of checks, create-on-update -----

/// alice may create, update and get roles and role bindings in `team`, and get config maps there.
const RBAC_WRITER: &str = "
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: rbac-writer, namespace: team}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: [create, update, get]}
- {apiGroups: [''], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-writes-rbac, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: rbac-writer}
subjects: [{kind: User, name: alice}]
";

fn rbac_url(server: &ApiServer, ns: &str, plural: &str) -> String {
    format!(
        "{}/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/{plural}",
        server.url()
    )
}

#[test]
fn a_body_in_another_namespace_is_a_400_before_any_escalation_check() {
    let server = rbac().namespace("other").start().unwrap();
    apply(&server, RBAC_WRITER);
    // A binding of cluster-admin, which alice could never grant (403 if it were judged): its body names another
    // namespace, which apiserver's create handler refuses right after decoding.
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": "b", "namespace": "other"},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                         "subjects": [{"kind": "User", "name": "bob"}]});
    let bindings = rbac_url(&server, "team", "rolebindings");
    for token in ["alice-token", admin(&server).as_str()] {
        let (code, st) = call("POST", &bindings, token, Some(&binding));
        assert_eq!(code, 400, "{st}");
        assert_eq!(st["reason"], "BadRequest");
        assert_eq!(
            st["message"],
            "the namespace of the provided object does not match the namespace sent on the request"
        );
        // PUT alike, to an existing binding and to a missing one.
        for name in ["alice-writes-rbac", "b"] {
            let mut named = binding.clone();
            named["metadata"]["name"] = json!(name);
            let (code, st) = call("PUT", &format!("{bindings}/{name}"), token, Some(&named));
            assert_eq!((code, &st["reason"]), (400, &json!("BadRequest")), "{name}: {st}");
        }
    }
    // Without the foreign namespace the same binding is the escalation it is.
    let mut same = binding.clone();
    same["metadata"]["namespace"] = json!("team");
    let (code, st) = call("POST", &bindings, "alice-token", Some(&same));
    assert_eq!(code, 403, "{st}");
    // Nothing was stored in either namespace.
    let admin = admin(&server);
    for ns in ["team", "other"] {
        let url = format!("{}/b", rbac_url(&server, ns, "rolebindings"));
        assert_eq!(call("GET", &url, &admin, None).0, 404, "{ns}");
    }
}

#[test]
fn a_put_to_a_missing_role_creates_it_when_the_writer_may() {
    let server = rbac().start().unwrap();
    apply(&server, RBAC_WRITER);
    let roles = rbac_url(&server, "team", "roles");
    let role = |name: &str, verbs: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name, "namespace": "team"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]})
    };
    // Rules alice holds: created (201), as kube-apiserver's RBAC strategies allow create-on-update.
    let (code, created) = call(
        "PUT",
        &format!("{roles}/reader"),
        "alice-token",
        Some(&role("reader", json!(["get"]))),
    );
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["namespace"], "team");
    assert_eq!(created["rules"][0]["verbs"], json!(["get"]));
    assert!(created["metadata"]["uid"].is_string());
    assert_eq!(created["metadata"]["managedFields"][0]["operation"], "Update");
    // The next PUT updates it (200).
    let (code, updated) = call(
        "PUT",
        &format!("{roles}/reader"),
        "alice-token",
        Some(&role("reader", json!(["get"]))),
    );
    assert_eq!((code, &updated["metadata"]["uid"]), (200, &created["metadata"]["uid"]));
    // Rules alice does not hold: kube's escalation 403, nothing created.
    let (code, st) = call(
        "PUT",
        &format!("{roles}/deleter"),
        "alice-token",
        Some(&role("deleter", json!(["get", "delete"]))),
    );
    assert_eq!(code, 403, "{st}");
    assert_eq!(
        st["message"],
        "roles.rbac.authorization.k8s.io \"deleter\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}"
    );
    assert_eq!(call("GET", &format!("{roles}/deleter"), "alice-token", None).0, 404);
    // The name in the body must be the URL's.
    let (code, st) = call(
        "PUT",
        &format!("{roles}/x"),
        "alice-token",
        Some(&role("y", json!(["get"]))),
    );
    assert_eq!(code, 400, "{st}");
    assert_eq!(
        st["message"],
        "the name of the object (y) does not match the name on the URL (x)"
    );
}

#[test]
fn a_put_that_would_create_needs_create_as_well_as_update() {
    let server = rbac().start().unwrap();
    apply(
        &server,
        "
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: role-updater, namespace: team}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [update, get]}
- {apiGroups: [''], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-updates-roles, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: role-updater}
subjects: [{kind: User, name: alice}]
",
    );
    let roles = rbac_url(&server, "team", "roles");
    let role = json!({"metadata": {"name": "new"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]});
    let (code, st) = call("PUT", &format!("{roles}/new"), "alice-token", Some(&role));
    assert_eq!(code, 403, "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with(r#"roles.rbac.authorization.k8s.io "new" is forbidden"#),
        "{st}"
    );
    assert_eq!(call("GET", &format!("{roles}/new"), "alice-token", None).0, 404);
    // A kind whose strategy does not allow it is not created by anyone: 404.
    let cm = json!({"metadata": {"name": "c"}, "data": {"k": "v"}});
    let url = format!("{}/api/v1/namespaces/team/configmaps/c", server.url());
    assert_eq!(call("PUT", &url, &admin(&server), Some(&cm)).0, 404);
}
