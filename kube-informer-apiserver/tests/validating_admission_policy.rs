//! ValidatingAdmissionPolicy and its binding end to end (feature `cel`), with cases of k8s.io/apiserver's
//! validating admission policy tests: Deny and Warn, params by name and selector, parameterNotFoundAction, match
//! conditions, selectors, failurePolicy, reasons, messageExpression, DELETE, and the type-checking status.
#![cfg(feature = "cel")]

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

const ADM: &str = "apis/admissionregistration.k8s.io/v1";

fn policy(server: &ApiServer, name: &str, spec: Value) {
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                      "metadata": {"name": name}, "spec": spec});
    let (code, st) = post(&format!("{}/{ADM}/validatingadmissionpolicies", server.url()), &body);
    assert_eq!(code, 201, "{st}");
}

fn binding(server: &ApiServer, name: &str, spec: Value) {
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                      "metadata": {"name": name}, "spec": spec});
    let (code, st) = post(
        &format!("{}/{ADM}/validatingadmissionpolicybindings", server.url()),
        &body,
    );
    assert_eq!(code, 201, "{st}");
}

fn configmaps_rule() -> Value {
    json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                              "resources": ["configmaps"]}]})
}

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "x"}}, "data": data})
}

fn create_warned(server: &ApiServer, body: &Value) -> (u16, Value, Vec<String>) {
    let r = agent()
        .post(&cms(server, "default"))
        .header("Content-Type", "application/json")
        .send(&body.to_string())
        .unwrap();
    let warnings = r
        .headers()
        .get_all("warning")
        .iter()
        .map(|h| h.to_str().unwrap().to_owned())
        .collect();
    let code = r.status().as_u16();
    (
        code,
        serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap(),
        warnings,
    )
}

#[test]
fn deny_refuses_with_kube_status_and_warn_answers_a_warning() {
    let server = ApiServer::start().unwrap();
    policy(
        &server,
        "small",
        json!({"matchConstraints": configmaps_rule(),
        "validations": [{"expression": "size(object.data) < 2"}]}),
    );
    binding(
        &server,
        "small-deny",
        json!({"policyName": "small", "validationActions": ["Deny"]}),
    );
    let (code, st, _) = create_warned(&server, &cm("big", json!({"a": "1", "b": "2"})));
    assert_eq!(code, 422, "{st}");
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(
        st["message"],
        "configmaps \"big\" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small-deny' denied request: failed expression: size(object.data) < 2"
    );
    assert_eq!(
        st["details"],
        json!({"name": "big", "kind": "configmaps", "causes": [
        {"message": "ValidatingAdmissionPolicy 'small' with binding 'small-deny' denied request: failed expression: size(object.data) < 2"}]})
    );
    let (code, _, w) = create_warned(&server, &cm("ok", json!({"a": "1"})));
    assert_eq!((code, w.len()), (201, 0));
    // Warn: admitted, with a Warning header.
    let (code, _) = send(
        "DELETE",
        &format!("{}/{ADM}/validatingadmissionpolicybindings/small-deny", server.url()),
        "",
        "",
    );
    assert_eq!(code, 200);
    binding(
        &server,
        "small-warn",
        json!({"policyName": "small", "validationActions": ["Warn"]}),
    );
    let (code, _, w) = create_warned(&server, &cm("big", json!({"a": "1", "b": "2"})));
    assert_eq!(code, 201);
    assert_eq!(
        w,
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'small' with binding 'small-warn': failed expression: size(object.data) < 2\""
        ]
    );
}

#[test]
fn params_match_conditions_reasons_and_message_expressions() {
    let server = ApiServer::start().unwrap();
    let (code, _) = post(&cms(&server, "default"), &cm("limits", json!({"max": "2"})));
    assert_eq!(code, 201);
    policy(
        &server,
        "limited",
        json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": configmaps_rule(),
        "matchConditions": [{"name": "not-the-limits", "expression": "object.metadata.name != 'limits'"}],
        "variables": [{"name": "count", "expression": "size(object.data)"}],
        "validations": [{"expression": "variables.count <= int(params.data.max)", "reason": "Forbidden",
                         "messageExpression": "'at most ' + params.data.max + ' keys, not ' + string(variables.count)"}]}),
    );
    binding(
        &server,
        "limited",
        json!({"policyName": "limited", "validationActions": ["Deny"],
        "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}),
    );
    let (code, st, _) = create_warned(&server, &cm("three", json!({"a": "1", "b": "2", "c": "3"})));
    assert_eq!(code, 403, "{st}");
    assert_eq!(st["reason"], "Forbidden");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: at most 2 keys, not 3"),
        "{st}"
    );
    // The match condition excludes the params object itself.
    let (code, st) = put(
        &format!("{}/limits", cms(&server, "default")),
        &cm("limits", json!({"max": "2", "a": "1", "b": "2"})),
    );
    assert_eq!(code, 200, "{st}");
    // No params in another namespace: Deny.
    let (code, _) = post(
        &format!("{}/api/v1/namespaces", server.url()),
        &json!({"metadata": {"name": "other"}}),
    );
    assert_eq!(code, 201);
    let (code, st) = post(&cms(&server, "other"), &cm("one", json!({"a": "1"})));
    assert_eq!(code, 422, "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{st}"
    );
}

#[test]
fn failure_policy_selectors_and_delete() {
    let server = ApiServer::start().unwrap();
    policy(
        &server,
        "strict",
        json!({
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"],
                                                "resources": ["configmaps"]}],
                             "objectSelector": {"matchLabels": {"app": "x"}}},
        "validations": [{"expression": "object.data.key == 'v'"}]}),
    );
    binding(
        &server,
        "strict",
        json!({"policyName": "strict", "validationActions": ["Deny"]}),
    );
    let (code, st) = post(&cms(&server, "default"), &cm("a", json!({"other": "v"})));
    assert_eq!(code, 422);
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .ends_with("expression 'object.data.key == 'v'' resulted in error: no such key: key"),
        "{st}"
    );
    // Not selected: no label.
    let (code, _) = post(
        &cms(&server, "default"),
        &json!({"metadata": {"name": "b"}, "data": {"other": "v"}}),
    );
    assert_eq!(code, 201);
    // DELETE: object is null; the expression's error denies.
    let (code, _) = post(&cms(&server, "default"), &cm("c", json!({"key": "v"})));
    assert_eq!(code, 201);
    let (code, st) = send("DELETE", &format!("{}/c", cms(&server, "default")), "", "");
    assert_eq!(code, 422, "{st}");
    // failurePolicy Ignore: errors are ignored.
    let (code, mut p) = get(&format!("{}/{ADM}/validatingadmissionpolicies/strict", server.url()));
    assert_eq!(code, 200);
    p["spec"]["failurePolicy"] = json!("Ignore");
    let (code, st) = put(
        &format!("{}/{ADM}/validatingadmissionpolicies/strict", server.url()),
        &p,
    );
    assert_eq!(code, 200, "{st}");
    let (code, _) = send("DELETE", &format!("{}/c", cms(&server, "default")), "", "");
    assert_eq!(code, 200);
}

#[test]
fn policies_are_validated_and_type_checked() {
    let server = ApiServer::start().unwrap();
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                      "metadata": {"name": "bad"}, "spec": {"validations": [{"expression": "object.x ==", "reason": "Nope"}]}});
    let (code, st) = post(&format!("{}/{ADM}/validatingadmissionpolicies", server.url()), &body);
    assert_eq!(code, 422);
    let fields: Vec<&str> = st["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.matchConstraints",
            "spec.validations[0].reason",
            "spec.validations[0].expression"
        ]
    );
    // A type error is refused when written too, as kube-apiserver's validateCELCondition compiles every
    // expression (its type-checking controller only warns of what the matched kinds' schemas add).
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                      "metadata": {"name": "typo"}, "spec": {"matchConstraints": configmaps_rule(),
                      "validations": [{"expression": "objekt.data.size() < 2"}]}});
    let (code, st) = post(&format!("{}/{ADM}/validatingadmissionpolicies", server.url()), &body);
    assert_eq!(code, 422, "{st}");
    let cause = &st["details"]["causes"][0];
    assert_eq!(cause["field"], "spec.validations[0].expression");
    assert!(
        cause["message"]
            .as_str()
            .unwrap()
            .contains("compilation failed: ERROR: <input>:1:1: undeclared reference to 'objekt'"),
        "{st}"
    );
    policy(
        &server,
        "typo",
        json!({"matchConstraints": configmaps_rule(),
        "validations": [{"expression": "object.data.size() < 2"}]}),
    );
    let (_, p) = get(&format!("{}/{ADM}/validatingadmissionpolicies/typo", server.url()));
    assert_eq!(p["status"]["observedGeneration"], 1);
    assert_eq!(p["status"]["typeChecking"], json!({}), "{p}");
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                      "metadata": {"name": "b"}, "spec": {"policyName": "typo", "validationActions": ["Deny", "Warn"]}});
    let (code, _) = post(
        &format!("{}/{ADM}/validatingadmissionpolicybindings", server.url()),
        &body,
    );
    assert_eq!(code, 422);
}
