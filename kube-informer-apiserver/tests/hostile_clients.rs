//! The server under hostile clients: requests built to exhaust its stack, memory, threads and file descriptors.
//! Each test checks the answer kube-apiserver gives, that the process is still up and serving others, and (where
//! connections are held) that threads and file descriptors come back to where they were. Nothing here sleeps to
//! synchronise or asserts a duration: waits are for conditions, with deadlines.

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::json;

/// The server still answers a plain request.
fn alive(server: &ApiServer) {
    let (code, v) = get(&format!("{}/api/v1/namespaces/default", server.url()));
    assert_eq!(code, 200, "{v}");
}

/// ~14 KB: 3,400 chained additions, the expression that aborted the server.
fn chained_expression() -> String {
    format!("{} > 0", vec!["1"; 3_400].join(" + "))
}

#[cfg(feature = "cel")]
#[test]
fn a_policy_whose_expression_is_past_cel_gos_limits_is_refused_with_422() {
    let server = ApiServer::start().unwrap();
    let url = format!(
        "{}/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        server.url()
    );
    let nested = format!("{}true{}", "(".repeat(2_500), ")".repeat(2_500));
    for (expression, message) in [
        (
            chained_expression(),
            "ERROR: <input>:-1:0: max recursion depth exceeded",
        ),
        (nested, "ERROR: <input>:-1:0: expression recursion limit exceeded: 250"),
    ] {
        let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "deep"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["configmaps"]}]},
                     "validations": [{"expression": expression}]}});
        let (code, st) = post(&url, &body);
        assert_eq!(code, 422, "{st}");
        let cause = &st["details"]["causes"][0];
        assert_eq!(cause["field"], "spec.validations[0].expression", "{st}");
        assert!(
            cause["message"]
                .as_str()
                .unwrap()
                .ends_with(&format!("compilation failed: {message}")),
            "{cause}"
        );
    }
    alive(&server);
}

#[cfg(feature = "cel")]
#[test]
fn a_crd_rule_past_cel_gos_limits_is_refused_with_422() {
    let server = ApiServer::start().unwrap();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "bombs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "bombs", "singular": "bomb", "kind": "Bomb"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                     "type": "object",
                     "x-kubernetes-validations": [{"rule": chained_expression()}]}}}]}});
    let (code, st) = post(
        &format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            server.url()
        ),
        &crd,
    );
    assert_eq!(code, 422, "{st}");
    let message = st["message"].as_str().unwrap();
    assert!(
        message.contains("compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded"),
        "{message}"
    );
    alive(&server);
}
