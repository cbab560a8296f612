//! `x-kubernetes-validations` end to end (feature `cel`): rules evaluated on create, update, status and scale
//! writes with kube-apiserver's 422 causes; transition rules; ratcheting of the schema and of rules (warnings); CRDs
//! whose rules do not compile refused. Without the feature, a CRD with rules and a ValidatingAdmissionPolicy are
//! refused, naming it (`cargo test -p kube-informer-apiserver --no-default-features --test crd_validation_rules`).

#![cfg_attr(not(feature = "cel"), allow(dead_code, unused_imports))]

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: self.metadata.name != 'forbidden'
          message: the name forbidden is not allowed
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.replicas <= self.maxReplicas
              messageExpression: "'replicas (' + string(self.replicas) + ') above maxReplicas'"
              fieldPath: .replicas
            - rule: "!has(oldSelf.mode) || self.mode == oldSelf.mode"
              message: mode is immutable
              reason: FieldValueForbidden
            properties:
              replicas: {type: integer}
              maxReplicas: {type: integer}
              mode: {type: string, maxLength: 20}
              tags:
                type: array
                maxItems: 10
                items: {type: string, maxLength: 10}
                x-kubernetes-validations:
                - rule: self.all(t, t.lowerAscii() == t)
                  message: tags are lower case
          status:
            type: object
            properties:
              replicas: {type: integer}
              phase: {type: string, maxLength: 20, x-kubernetes-validations: [{rule: "self in ['Pending', 'Ready']"}]}
"#;

fn url(server: &ApiServer, tail: &str) -> String {
    format!("{}/apis/example.com/v1/namespaces/default/gadgets{tail}", server.url())
}

fn gadget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec})
}

fn causes(v: &Value) -> Vec<String> {
    v["details"]["causes"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|c| {
            format!(
                "{} {}: {}",
                c["reason"].as_str().unwrap(),
                c["field"].as_str().unwrap(),
                c["message"].as_str().unwrap()
            )
        })
        .collect()
}

/// A request answering its status, body and `Warning` headers.
fn send_warned(method: &str, url: &str, content_type: &str, body: &Value) -> (u16, Value, Vec<String>) {
    let a = agent();
    let text = body.to_string();
    let r = match method {
        "POST" => a.post(url).header("Content-Type", content_type).send(&text),
        "PUT" => a.put(url).header("Content-Type", content_type).send(&text),
        "PATCH" => a.patch(url).header("Content-Type", content_type).send(&text),
        m => panic!("{m}"),
    }
    .unwrap();
    let warnings = r
        .headers()
        .get_all("warning")
        .iter()
        .map(|h| h.to_str().unwrap().to_owned())
        .collect();
    let code = r.status().as_u16();
    let body = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
    (code, body, warnings)
}

#[cfg(feature = "cel")]
mod with_cel {
    use super::*;

    #[test]
    fn kube_rs_derive_case_a_forbidden_name_is_refused() {
        let server = ApiServer::start().unwrap();
        server.install_crd(CRD).unwrap();
        let (code, st) = post(
            &url(&server, ""),
            &gadget("forbidden", json!({"replicas": 1, "maxReplicas": 2})),
        );
        assert_eq!(code, 422, "{st}");
        assert_eq!(
            st["message"],
            r#"Gadget.example.com "forbidden" is invalid: <nil>: Invalid value: "object": the name forbidden is not allowed"#
        );
        assert_eq!(
            causes(&st),
            [r#"FieldValueInvalid <nil>: Invalid value: "object": the name forbidden is not allowed"#]
        );
        let (code, _) = post(
            &url(&server, ""),
            &gadget("allowed", json!({"replicas": 1, "maxReplicas": 2})),
        );
        assert_eq!(code, 201);
    }

    #[test]
    fn rules_run_on_create_update_patch_status_and_scale() {
        let server = ApiServer::start().unwrap();
        server.install_crd(CRD).unwrap();
        let (code, st) = post(
            &url(&server, ""),
            &gadget("g", json!({"replicas": 5, "maxReplicas": 2, "tags": ["Big"]})),
        );
        assert_eq!(code, 422);
        assert_eq!(
            causes(&st),
            [
                r#"FieldValueInvalid spec.replicas: Invalid value: "object": replicas (5) above maxReplicas"#,
                r#"FieldValueInvalid spec.tags: Invalid value: "array": tags are lower case"#,
            ]
        );
        let (code, created) = post(
            &url(&server, ""),
            &gadget("g", json!({"replicas": 1, "maxReplicas": 2, "mode": "a"})),
        );
        assert_eq!(code, 201);
        // A transition rule: the mode may not change.
        let mut changed = created.clone();
        changed["spec"]["mode"] = json!("b");
        let (code, st) = put(&url(&server, "/g"), &changed);
        assert_eq!(code, 422);
        assert_eq!(causes(&st), ["FieldValueForbidden spec: Forbidden: mode is immutable"]);
        let (code, st) = send(
            "PATCH",
            &url(&server, "/g"),
            "application/merge-patch+json",
            r#"{"spec": {"replicas": 3}}"#,
        );
        assert_eq!(code, 422);
        assert_eq!(
            causes(&st),
            [r#"FieldValueInvalid spec.replicas: Invalid value: "object": replicas (3) above maxReplicas"#]
        );
        // The status subresource: the whole object is validated, with the status written.
        let (code, st) = send(
            "PATCH",
            &url(&server, "/g/status"),
            "application/merge-patch+json",
            r#"{"status": {"phase": "Gone"}}"#,
        );
        assert_eq!(code, 422, "{st}");
        assert_eq!(
            causes(&st),
            [r#"FieldValueInvalid status.phase: Invalid value: "string": failed rule: self in ['Pending', 'Ready']"#]
        );
        // The scale subresource writes the parent: its rules hold.
        let (code, st) = send(
            "PATCH",
            &url(&server, "/g/scale"),
            "application/merge-patch+json",
            r#"{"spec": {"replicas": 9}}"#,
        );
        assert_eq!(code, 422, "{st}");
        assert_eq!(
            causes(&st),
            [r#"FieldValueInvalid spec.replicas: Invalid value: "object": replicas (9) above maxReplicas"#]
        );
        let (code, _) = send(
            "PATCH",
            &url(&server, "/g/scale"),
            "application/merge-patch+json",
            r#"{"spec": {"replicas": 2}}"#,
        );
        assert_eq!(code, 200);
    }

    #[test]
    fn schema_errors_keep_rules_from_running() {
        let server = ApiServer::start().unwrap();
        server.install_crd(CRD).unwrap();
        let (code, st) = post(
            &url(&server, ""),
            &gadget("g", json!({"replicas": "x", "maxReplicas": 2})),
        );
        assert_eq!(code, 422);
        assert_eq!(
            causes(&st),
            [
                r#"FieldValueTypeInvalid spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
                "FieldValueInvalid .spec.replicas: Invalid value: 0: .spec.replicas accessor error: x is of the type string, expected int64",
                r#"FieldValueInvalid <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#,
            ]
        );
    }

    #[test]
    fn updates_ratchet_values_they_leave_unchanged() {
        let server = ApiServer::start().unwrap();
        server.install_crd(CRD).unwrap();
        let (code, created) = post(
            &url(&server, ""),
            &gadget(
                "g",
                json!({"replicas": 1, "maxReplicas": 2, "mode": "abcdefghijklmnopqrst"}),
            ),
        );
        assert_eq!(code, 201);
        // Tighten the schema: mode at most 5 characters, tags must not be empty.
        let tighter = CRD
            .replace("mode: {type: string, maxLength: 20}", "mode: {type: string, maxLength: 5}")
            .replace(
                "message: tags are lower case",
                "message: tags are lower case\n                - rule: self.size() > 0\n                  message: tags must not be empty",
            );
        server.install_crd(&tighter).unwrap();
        // The invalid mode is kept by an update that changes something else.
        let mut other = created.clone();
        other["spec"]["maxReplicas"] = json!(3);
        let (code, updated, warnings) = send_warned("PUT", &url(&server, "/g"), "application/json", &other);
        assert_eq!(code, 200, "{updated}");
        assert!(warnings.is_empty(), "{warnings:?}");
        // Changing it to another invalid value is refused.
        let mut worse = updated.clone();
        worse["spec"]["mode"] = json!("abcdefghijklmnopqrs");
        let (code, st) = put(&url(&server, "/g"), &worse);
        assert_eq!(code, 422);
        assert_eq!(
            causes(&st)[0],
            "FieldValueTooLong spec.mode: Too long: may not be more than 5 bytes"
        );
        // A rule an unchanged value breaks is a warning.
        let (code, _) = send(
            "PATCH",
            &url(&server, "/g"),
            "application/merge-patch+json",
            r#"{"spec": {"mode": "ab"}}"#,
        );
        assert_eq!(code, 422, "the mode is immutable");
    }

    #[test]
    fn ratcheted_rules_answer_warnings() {
        let server = ApiServer::start().unwrap();
        server.install_crd(CRD).unwrap();
        let (code, created) = post(
            &url(&server, ""),
            &gadget("g", json!({"replicas": 1, "maxReplicas": 2, "tags": []})),
        );
        assert_eq!(code, 201);
        let tighter = CRD.replace(
            "message: tags are lower case",
            "message: tags are lower case\n                - rule: self.size() > 0\n                  message: tags must not be empty",
        );
        server.install_crd(&tighter).unwrap();
        let mut other = created.clone();
        other["spec"]["maxReplicas"] = json!(3);
        let (code, _, warnings) = send_warned("PUT", &url(&server, "/g"), "application/json", &other);
        assert_eq!(code, 200);
        assert_eq!(
            warnings,
            [r#"299 - "spec.tags: Invalid value: \"array\": tags must not be empty""#]
        );
        let (code, st) = send(
            "PATCH",
            &url(&server, "/g"),
            "application/merge-patch+json",
            r#"{"spec": {"tags": []}}"#,
        );
        assert_eq!(code, 200, "unchanged: {st}");
    }

    #[test]
    fn crds_whose_rules_do_not_compile_are_refused() {
        let server = ApiServer::start().unwrap();
        let bad = CRD.replace(
            "rule: self.metadata.name != 'forbidden'",
            "rule: self.metadata.nam != 'forbidden'",
        );
        let e = server.install_crd(&bad).unwrap_err();
        let kube_informer::Error::Api(st) = e else {
            panic!("{e}")
        };
        assert_eq!(st.code, 422);
        let cause = &st.details.unwrap().causes[0];
        assert_eq!(
            cause.field,
            "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule"
        );
        assert!(
            cause
                .message
                .contains("compilation failed: ERROR: <input>:1:14: undefined field 'nam'"),
            "{}",
            cause.message
        );
        let unbounded = CRD.replace("maxItems: 10", "maxItems: 100000000").replace(
            "rule: self.all(t, t.lowerAscii() == t)",
            "rule: self.all(t, self.all(u, t == u))",
        );
        let e = server.install_crd(&unbounded).unwrap_err();
        assert!(
            e.to_string()
                .contains("estimated rule cost exceeds budget by factor of"),
            "{e}"
        );
    }
}

#[cfg(not(feature = "cel"))]
#[test]
fn without_the_cel_feature_crds_with_rules_are_refused() {
    let server = ApiServer::start().unwrap();
    let e = server.install_crd(CRD).unwrap_err();
    let kube_informer::Error::Api(st) = e else {
        panic!("{e}")
    };
    assert_eq!(st.code, 422);
    let causes = st.details.unwrap().causes;
    // As kube-apiserver: the versions share one schema, so the error names the internal `spec.validation`.
    assert_eq!(
        causes[0].field,
        "spec.validation.openAPIV3Schema.x-kubernetes-validations"
    );
    assert!(
        causes[0].message.contains("built without its `cel` feature"),
        "{}",
        causes[0].message
    );
}

#[cfg(not(feature = "cel"))]
#[test]
fn without_the_cel_feature_validating_admission_policies_are_refused() {
    let server = ApiServer::start().unwrap();
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "validations": [{"expression": "true"}]}});
    let (code, st) = post(
        &format!(
            "{}/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            server.url()
        ),
        &policy,
    );
    assert_eq!(code, 422);
    assert!(causes(&st)[0].contains("built without its `cel` feature"), "{st}");
}
