//! The embedded server serves what kube-apiserver 1.34 serves by default: every resource of every stable
//! group-version, with its discovery (legacy and aggregated), verbs, subresources and schemas; 404 for what it does
//! not serve and 405 for a verb a resource does not have; JSON bodies ending with a newline; a DELETE answering the
//! deleted object for the kinds whose storage does so.

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

/// `(path prefix, group version)` of every group-version `/api` and `/apis` list.
fn group_versions(server: &ApiServer) -> Vec<(String, String)> {
    let mut out = vec![("api/v1".to_owned(), "v1".to_owned())];
    let (_, apis) = get(&format!("{}/apis", server.url()));
    for g in apis["groups"].as_array().unwrap() {
        for v in g["versions"].as_array().unwrap() {
            let gv = v["groupVersion"].as_str().unwrap().to_owned();
            out.push((format!("apis/{gv}"), gv));
        }
    }
    out
}

fn verbs(r: &Value) -> Vec<&str> {
    r["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

fn raw(method: &str, url: &str, body: &str) -> (u16, String, Vec<(String, String)>) {
    let a = agent();
    let r = match method {
        "GET" => a.get(url).call(),
        "DELETE" => a.delete(url).call(),
        "POST" => a.post(url).content_type("application/json").send(body),
        _ => unreachable!(),
    }
    .unwrap();
    let code = r.status().as_u16();
    let headers = r
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    (code, r.into_body().read_to_string().unwrap(), headers)
}

#[test]
fn every_stable_group_of_kube_apiserver_1_34_is_served() {
    let server = ApiServer::start().unwrap();
    let gvs: Vec<String> = group_versions(&server).into_iter().map(|(_, gv)| gv).collect();
    for gv in [
        "v1",
        "apiregistration.k8s.io/v1",
        "apps/v1",
        "events.k8s.io/v1",
        "authentication.k8s.io/v1",
        "authorization.k8s.io/v1",
        "autoscaling/v2",
        "batch/v1",
        "certificates.k8s.io/v1",
        "networking.k8s.io/v1",
        "policy/v1",
        "rbac.authorization.k8s.io/v1",
        "storage.k8s.io/v1",
        "admissionregistration.k8s.io/v1",
        "apiextensions.k8s.io/v1",
        "scheduling.k8s.io/v1",
        "coordination.k8s.io/v1",
        "node.k8s.io/v1",
        "discovery.k8s.io/v1",
        "flowcontrol.apiserver.k8s.io/v1",
        "resource.k8s.io/v1",
    ] {
        assert!(gvs.iter().any(|g| g == gv), "{gv} not in {gvs:?}");
    }
    // No alpha or beta version is served by default.
    assert!(
        gvs.iter().all(|gv| !gv.contains("alpha") && !gv.contains("beta")),
        "{gvs:?}"
    );
}

/// Every resource discovery lists with `create`, `get` and `delete` round-trips: created (201), read, listed,
/// deleted — the delete answering the object itself or a `Success` Status, as the kind's storage does.
#[test]
fn every_listed_resource_round_trips() {
    let server = ApiServer::builder().namespace("rt").start().unwrap();
    let returns_object = [
        "pods",
        "services",
        "namespaces",
        "serviceaccounts",
        "persistentvolumes",
        "persistentvolumeclaims",
        "storageclasses",
        "volumeattachments",
        "csidrivers",
        "csinodes",
    ];
    let mut served = 0;
    for (prefix, gv) in group_versions(&server) {
        let (code, list) = get(&format!("{}/{prefix}", server.url()));
        assert_eq!(code, 200, "{prefix}");
        for r in list["resources"].as_array().unwrap() {
            let plural = r["name"].as_str().unwrap();
            let v = verbs(r);
            // CRDs are validated as kube-apiserver validates them (crd.rs).
            if plural.contains('/')
                || plural == "customresourcedefinitions"
                || !v.contains(&"create")
                || !v.contains(&"get")
                || !v.contains(&"delete")
            {
                continue;
            }
            let namespaced = r["namespaced"].as_bool().unwrap();
            let collection = if namespaced {
                format!("{}/{prefix}/namespaces/rt/{plural}", server.url())
            } else {
                format!("{}/{prefix}/{plural}", server.url())
            };
            let name = format!("x-{}", r["singularName"].as_str().unwrap());
            let mut body = json!({"apiVersion": gv, "kind": r["kind"], "metadata": {"name": name}});
            // Bindings are validated (rbac): they need a role.
            match plural {
                "rolebindings" => {
                    body["roleRef"] = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"})
                }
                "clusterrolebindings" => {
                    body["roleRef"] =
                        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"})
                }
                // So are admission policies and their bindings (validating_admission_policy.rs).
                "validatingadmissionpolicies" => {
                    body["spec"] = json!({
                        "matchConstraints": {"resourceRules": [{
                            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]
                        }]},
                        "validations": [{"expression": "true"}]
                    })
                }
                "validatingadmissionpolicybindings" => {
                    body["spec"] = json!({"policyName": "p", "validationActions": ["Deny"]})
                }
                _ => {}
            }
            let (code, created) = post(&collection, &body);
            assert_eq!(code, 201, "{gv} {plural}: {created}");
            assert_eq!(created["kind"], r["kind"], "{gv} {plural}");
            assert_eq!(created["apiVersion"], gv.as_str(), "{gv} {plural}");
            let (code, _) = get(&format!("{collection}/{name}"));
            assert_eq!(code, 200, "{gv} {plural}");
            let (code, listed) = get(&collection);
            assert_eq!(code, 200, "{gv} {plural}");
            let listed: Vec<&str> = listed["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect();
            assert!(listed.contains(&name.as_str()), "{gv} {plural}: {listed:?}");
            let (code, deleted) = send("DELETE", &format!("{collection}/{name}"), "application/json", "");
            assert_eq!(code, 200, "{gv} {plural}: {deleted}");
            if returns_object.contains(&plural) {
                assert_eq!(
                    (deleted["kind"].as_str(), deleted["metadata"]["name"].as_str()),
                    (r["kind"].as_str(), Some(name.as_str())),
                    "{gv} {plural}"
                );
            } else {
                assert_eq!(
                    (deleted["kind"].as_str(), deleted["status"].as_str()),
                    (Some("Status"), Some("Success")),
                    "{gv} {plural}"
                );
            }
            served += 1;
        }
    }
    // Every stored resource of kube-apiserver 1.34's stable versions but CRDs (crd.rs): core/v1 15, apps 5, … —
    // horizontal pod autoscalers once, in autoscaling/v2.
    assert_eq!(served, 56);
}

#[test]
fn unknown_resources_are_not_found_and_unserved_verbs_not_allowed() {
    let server = ApiServer::start().unwrap();
    let url = server.url();
    for (method, path) in [
        ("GET", "/api/v1/namespaces/default/widgets"),
        ("POST", "/api/v1/namespaces/default/widgets"),
        ("DELETE", "/api/v1/namespaces/default/widgets"),
        ("GET", "/api/v1/widgets"),
        ("POST", "/api/v1/widgets"),
        ("GET", "/apis/apps/v1/namespaces/default/widgets"),
        ("POST", "/apis/apps/v1/widgets"),
        ("GET", "/apis/apps/v1beta1/deployments"),
        ("GET", "/api/v1/namespaces/default/pods/p/nonsense"),
        ("POST", "/api/v1/namespaces/default/configmaps/c/status"),
    ] {
        let (code, st) = send(method, &format!("{url}{path}"), "application/json", "{}");
        assert_eq!(
            (code, st["reason"].as_str()),
            (404, Some("NotFound")),
            "{method} {path}: {st}"
        );
    }
    for (method, path) in [
        // Namespaces have no deletecollection; component statuses are only read; subresources only have theirs.
        ("DELETE", "/api/v1/namespaces"),
        ("POST", "/api/v1/componentstatuses"),
        ("DELETE", "/api/v1/componentstatuses/etcd-0"),
        ("PUT", "/api/v1/namespaces/default/pods/p/log"),
        ("DELETE", "/api/v1/namespaces/default/pods/p/status"),
    ] {
        let (code, st) = send(method, &format!("{url}{path}"), "application/json", "{}");
        assert_eq!(
            (code, st["reason"].as_str()),
            (405, Some("MethodNotAllowed")),
            "{method} {path}: {st}"
        );
    }
}

#[test]
fn json_bodies_end_with_a_newline_as_kube_apiserver_s_encoder_writes_them() {
    let server = ApiServer::start().unwrap();
    let url = server.url();
    make(&server, "default", "a", json!({}));
    for (method, path) in [
        ("GET", "/api/v1/namespaces/default/configmaps/a"),
        ("GET", "/api/v1/namespaces/default/configmaps"),
        ("GET", "/api/v1/namespaces/default/configmaps/missing"),
        ("GET", "/api/v1"),
        ("GET", "/apis"),
        ("GET", "/version"),
        ("DELETE", "/api/v1/namespaces/default/configmaps/a"),
    ] {
        let (_, body, headers) = raw(method, &format!("{url}{path}"), "");
        assert!(
            body.ends_with("}\n") && !body.ends_with("\n\n"),
            "{method} {path}: {body:?}"
        );
        let length = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .unwrap();
        assert_eq!(length.1, body.len().to_string(), "{path}");
    }
    let (_, body, _) = raw("GET", &format!("{url}/healthz"), "");
    assert_eq!(body, "ok");
}

/// kube-apiserver's pod storage returns the deleted object, at the deletion's resourceVersion: the same bytes
/// its watch sends in the DELETED event (plus the encoder's newline).
#[test]
fn deleting_a_pod_answers_the_object_a_watch_sees_deleted() {
    let server = ApiServer::start().unwrap();
    let pods = format!("{}/api/v1/namespaces/default/pods", server.url());
    let (code, created) = post(
        &pods,
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    );
    assert_eq!(code, 201, "{created}");
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap();
    let (code, answer, _) = raw("DELETE", &format!("{pods}/p"), "");
    assert_eq!(code, 200);
    let deleted: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        (deleted["kind"].as_str(), deleted["metadata"]["name"].as_str()),
        (Some("Pod"), Some("p"))
    );
    assert_ne!(
        deleted["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    let (_, events, _) = raw(
        "GET",
        &format!("{pods}?watch=1&resourceVersion={rv}&timeoutSeconds=1"),
        "",
    );
    let line = events.lines().find(|l| l.starts_with("{\"type\":\"DELETED\"")).unwrap();
    // The event's object, byte for byte.
    let object = line
        .strip_prefix("{\"type\":\"DELETED\",\"object\":")
        .and_then(|l| l.strip_suffix('}'))
        .unwrap();
    assert_eq!(format!("{object}\n"), answer);
    // A config map's storage answers a Status naming it.
    make(&server, "default", "a", json!({}));
    let (_, st) = send(
        "DELETE",
        &format!("{}/a", cms(&server, "default")),
        "application/json",
        "",
    );
    assert_eq!(
        st,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
               "details": {"name": "a", "kind": "configmaps", "uid": st["details"]["uid"]}})
    );
}

const V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const V2BETA1: &str = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

fn aggregated(url: &str, accept: &str, etag: Option<&str>) -> (u16, Value, Vec<(String, String)>) {
    let mut req = agent().get(url).header("Accept", accept);
    if let Some(t) = etag {
        req = req.header("If-None-Match", t);
    }
    let r = req.call().unwrap();
    let code = r.status().as_u16();
    let headers = r
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let text = r.into_body().read_to_string().unwrap();
    (code, serde_json::from_str(&text).unwrap_or(Value::Null), headers)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
}

#[test]
fn aggregated_discovery_lists_every_group_as_client_go_asks() {
    let server = ApiServer::start().unwrap();
    // What client-go and kubectl 1.30+ send.
    let accept = format!("{V2},{V2BETA1},application/json");
    let (code, apis, headers) = aggregated(&format!("{}/apis", server.url()), &accept, None);
    assert_eq!(code, 200);
    assert_eq!(header(&headers, "content-type"), V2);
    assert_eq!(header(&headers, "vary"), "Accept");
    assert_eq!(
        (apis["kind"].as_str(), apis["apiVersion"].as_str()),
        (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io/v2"))
    );
    let items = apis["items"].as_array().unwrap();
    let names: Vec<&str> = items.iter().map(|g| g["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names[..3], ["apiregistration.k8s.io", "apps", "events.k8s.io"]);
    assert!(
        names.contains(&"apiextensions.k8s.io") && !names.contains(&""),
        "{names:?}"
    );
    let apps = &items[1]["versions"][0];
    assert_eq!(
        (apps["version"].as_str(), apps["freshness"].as_str()),
        (Some("v1"), Some("Current"))
    );
    let deployments = apps["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap();
    assert_eq!(
        deployments,
        &json!({
            "resource": "deployments",
            "responseKind": {"group": "", "version": "", "kind": "Deployment"},
            "scope": "Namespaced",
            "singularResource": "deployment",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["deploy"],
            "categories": ["all"],
            "subresources": [
                {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                 "verbs": ["get", "patch", "update"]},
                {"subresource": "status", "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                 "verbs": ["get", "patch", "update"]},
            ],
        })
    );
    // Unchanged: 304 for its ETag.
    let etag = header(&headers, "etag").to_owned();
    assert!(etag.starts_with('"') && etag.len() > 2, "{etag}");
    assert_eq!(
        aggregated(&format!("{}/apis", server.url()), &accept, Some(&etag)).0,
        304
    );

    // The core group under /api, without a name.
    let (code, core, _) = aggregated(&format!("{}/api", server.url()), &accept, None);
    assert_eq!(code, 200);
    let item = &core["items"][0];
    assert!(item["metadata"].get("name").is_none(), "{item}");
    let pods = item["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .unwrap();
    let subs: Vec<&str> = pods["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subresource"].as_str().unwrap())
        .collect();
    assert!(
        subs.contains(&"log") && subs.contains(&"eviction") && subs.contains(&"status"),
        "{subs:?}"
    );

    // v2beta1, asked alone; the legacy list for a plain client.
    let (_, beta, headers) = aggregated(&format!("{}/apis", server.url()), V2BETA1, None);
    assert_eq!(beta["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    assert_eq!(header(&headers, "content-type"), V2BETA1);
    let (_, legacy, _) = aggregated(&format!("{}/apis", server.url()), "application/json", None);
    assert_eq!(legacy["kind"], "APIGroupList");
}

#[test]
fn built_in_kinds_carry_kubernetes_schemas() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/apis/apps/v1/namespaces/default/daemonsets", server.url());
    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
                    "spec": {"selector": {"matchLabels": {"a": "b"}},
                             "template": {"metadata": {"labels": {"a": "b"}},
                                          "spec": {"containers": [{"name": "c", "image": "one"}, {"name": "d", "image": "two"}]}}}});
    assert_eq!(post(&url, &ds).0, 201);
    // A strategic merge patch merges containers by name, as the DaemonSet's schema says.
    let (code, patched) = send(
        "PATCH",
        &format!("{url}/d"),
        "application/strategic-merge-patch+json",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"d","image":"three"}]}}}}"#,
    );
    assert_eq!(code, 200, "{patched}");
    let images: Vec<&str> = patched["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["image"].as_str().unwrap())
        .collect();
    assert_eq!(images, ["one", "three"]);
    // Unknown fields are reported as kube-apiserver reports them for a typed kind.
    let (code, st) = send(
        "POST",
        &format!("{url}?fieldValidation=Strict"),
        "application/json",
        r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"e"},"spec":{"bogus":1}}"#,
    );
    assert_eq!(code, 400, "{st}");
    assert!(
        st["message"].as_str().unwrap().contains("unknown field \"spec.bogus\""),
        "{st}"
    );
}

#[test]
fn self_subject_and_subject_access_reviews_are_answered() {
    let server = ApiServer::builder()
        .token("admin-token", "admin")
        .rule(kube_informer_apiserver::AccessRule::user("admin"))
        .rule(
            kube_informer_apiserver::AccessRule::user("viewer")
                .verbs(&["get"])
                .resources(&["pods"]),
        )
        .start()
        .unwrap();
    let a = agent();
    let call = |path: &str, body: Value| {
        let r = a
            .post(&format!("{}{path}", server.url()))
            .header("Authorization", "Bearer admin-token")
            .content_type("application/json")
            .send(body.to_string())
            .unwrap();
        let code = r.status().as_u16();
        (
            code,
            serde_json::from_str::<Value>(&r.into_body().read_to_string().unwrap()).unwrap(),
        )
    };
    // `kubectl auth whoami`.
    let (code, me) = call(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    );
    assert_eq!(
        (code, me["status"]["userInfo"]["username"].as_str()),
        (201, Some("admin"))
    );
    let ask = |verb: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": "viewer", "resourceAttributes": {"verb": verb, "resource": "pods", "namespace": "default"}}})
    };
    let (code, yes) = call("/apis/authorization.k8s.io/v1/subjectaccessreviews", ask("get"));
    assert_eq!((code, yes["status"]["allowed"].as_bool()), (201, Some(true)));
    let (_, no) = call("/apis/authorization.k8s.io/v1/subjectaccessreviews", ask("delete"));
    assert_eq!(no["status"], json!({"allowed": false}));
    let mut local = ask("get");
    local["kind"] = json!("LocalSubjectAccessReview");
    let (code, yes) = call(
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        local,
    );
    assert_eq!((code, yes["status"]["allowed"].as_bool()), (201, Some(true)));
}

#[test]
fn component_statuses_answer_healthy_with_kube_apiserver_s_deprecation_warning() {
    let server = ApiServer::start().unwrap();
    let r = agent()
        .get(&format!("{}/api/v1/componentstatuses", server.url()))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        r.headers()["warning"],
        "299 - \"v1 ComponentStatus is deprecated in v1.19+\""
    );
    let list: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
    assert_eq!(list["kind"], "ComponentStatusList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["controller-manager", "etcd-0", "scheduler"]);
    let (code, etcd) = get(&format!("{}/api/v1/componentstatuses/etcd-0", server.url()));
    assert_eq!(code, 200);
    assert_eq!(
        etcd["conditions"],
        json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );
    assert_eq!(get(&format!("{}/api/v1/componentstatuses/nope", server.url())).0, 404);
    let (code, _) = post(
        &format!("{}/api/v1/componentstatuses", server.url()),
        &json!({"metadata": {"name": "x"}}),
    );
    assert_eq!(code, 405);
}

#[test]
fn a_csr_is_approved_through_its_approval_subresource_which_writes_only_conditions() {
    let server = ApiServer::start().unwrap();
    let url = format!(
        "{}/apis/certificates.k8s.io/v1/certificatesigningrequests",
        server.url()
    );
    let (code, csr) = post(
        &url,
        &json!({"metadata": {"name": "c"}, "spec": {"request": "LS0tLS1CRUdJTg==", "signerName": "example.com/s",
                                                      "usages": ["client auth"]}}),
    );
    assert_eq!(code, 201, "{csr}");
    let mut approved = csr.clone();
    approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True", "reason": "KubectlApprove",
                                                "message": "This CSR was approved by kubectl certificate approve."}]});
    approved["spec"]["signerName"] = json!("changed.example.com/s");
    let (code, after) = put(&format!("{url}/c/approval"), &approved);
    assert_eq!(code, 200, "{after}");
    let c = &after["status"]["conditions"][0];
    assert_eq!(
        (&c["type"], &c["reason"]),
        (&json!("Approved"), &json!("KubectlApprove"))
    );
    assert!(c["lastUpdateTime"].is_string(), "{c}");
    assert_eq!(
        after["spec"]["signerName"], "example.com/s",
        "only the conditions change"
    );
    let mut both = after.clone();
    both["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "Denied", "status": "True"}));
    let (code, st) = put(&format!("{url}/c/approval"), &both);
    assert_eq!(code, 422, "{st}");
    // The main resource does not write the status.
    let (_, got) = get(&format!("{url}/c"));
    assert_eq!(got["status"]["conditions"].as_array().unwrap().len(), 1);
}

#[test]
fn field_selectors_read_a_kind_s_field_labels_with_their_defaults() {
    let server = ApiServer::builder().namespace("fs").start().unwrap();
    let nodes = format!("{}/api/v1/nodes", server.url());
    assert_eq!(post(&nodes, &json!({"metadata": {"name": "plain"}})).0, 201);
    assert_eq!(
        post(
            &nodes,
            &json!({"metadata": {"name": "cordoned"}, "spec": {"unschedulable": true}})
        )
        .0,
        201
    );
    let names = |url: &str| -> Vec<String> {
        let (code, list) = get(url);
        assert_eq!(code, 200, "{url}: {list}");
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names(&format!("{nodes}?fieldSelector=spec.unschedulable%3Dfalse")),
        ["plain"]
    );
    assert_eq!(
        names(&format!("{nodes}?fieldSelector=spec.unschedulable%3Dtrue")),
        ["cordoned"]
    );
    let jobs = format!("{}/apis/batch/v1/namespaces/fs/jobs", server.url());
    let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "a", "image": "x"}]}}}});
    assert_eq!(post(&jobs, &job).0, 201);
    assert_eq!(names(&format!("{jobs}?fieldSelector=status.successful%3D0")), ["j"]);
    let pods = format!("{}/api/v1/namespaces/fs/pods", server.url());
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "x"}]}});
    assert_eq!(post(&pods, &pod).0, 201);
    assert_eq!(names(&format!("{pods}?fieldSelector=spec.hostNetwork%3Dfalse")), ["p"]);
    let events = format!("{}/api/v1/namespaces/fs/events", server.url());
    let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "fs"},
                       "source": {"component": "kubelet"}});
    assert_eq!(post(&events, &event).0, 201);
    assert_eq!(names(&format!("{events}?fieldSelector=source%3Dkubelet")), ["e"]);
}
