//! Cases ported from apiextensions-apiserver's CEL validation tests (`schema/cel/validation_test.go`) and CRD
//! validation tests of `x-kubernetes-validations`.
use std::sync::Arc;

use serde_json::{Value, json};

use super::*;

fn obj(props: Value, rules: Value) -> Arc<Value> {
    Arc::new(json!({"type": "object", "properties": props, "x-kubernetes-validations": rules}))
}

fn errors(s: &Arc<Value>, new: Value, old: Option<Value>) -> Vec<String> {
    let o = validate(s, &new, old.as_ref());
    o.errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect()
}

#[test]
fn rules_on_the_root_and_nested_fields() {
    let s = Arc::new(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "max": {"type": "integer"},
            "name": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]},
        }, "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.max", "message": "replicas must not exceed max"},
            {"rule": "self.replicas >= 0", "messageExpression": "'replicas is ' + string(self.replicas)", "reason": "FieldValueForbidden", "fieldPath": ".replicas"},
        ]}},
        "x-kubernetes-validations": [{"rule": "self.metadata.name != 'forbidden'"}]}));
    assert!(
        errors(
            &s,
            json!({"metadata": {"name": "ok"}, "spec": {"replicas": 1, "max": 2, "name": "abc"}}),
            None
        )
        .is_empty()
    );
    assert_eq!(
        errors(
            &s,
            json!({"metadata": {"name": "forbidden"}, "spec": {"replicas": -3, "max": -5, "name": "b"}}),
            None
        ),
        [
            r#"<nil>: Invalid value: "object": failed rule: self.metadata.name != 'forbidden'"#,
            r#"spec: Invalid value: "object": replicas must not exceed max"#,
            "spec.replicas: Forbidden: replicas is -3",
            r#"spec.name: Invalid value: "string": failed rule: self.startsWith('a')"#,
        ]
    );
}

#[test]
fn runtime_errors_and_transition_rules() {
    let s = obj(
        json!({"a": {"type": "integer"}, "b": {"type": "string"}}),
        json!([
            {"rule": "self.a > 0"},
            {"rule": "self.b == oldSelf.b", "message": "b is immutable"},
        ]),
    );
    // `a` absent: no such key; the transition rule does not run on create.
    assert_eq!(
        errors(&s, json!({"b": "x"}), None),
        [r#"<nil>: Invalid value: "object": no such key: a evaluating rule: self.a > 0"#]
    );
    assert_eq!(
        errors(&s, json!({"a": 1, "b": "y"}), Some(json!({"a": 1, "b": "x"}))),
        [r#"<nil>: Invalid value: "object": b is immutable"#]
    );
    // optionalOldSelf: runs on create too, with oldSelf empty.
    let s = obj(
        json!({"b": {"type": "string"}}),
        json!([
            {"rule": "!oldSelf.hasValue() || self.b == oldSelf.value().b", "optionalOldSelf": true, "message": "immutable once set"},
            {"rule": "oldSelf.hasValue() || self.b.size() < 3", "optionalOldSelf": true, "message": "short on create"},
        ]),
    );
    assert_eq!(
        errors(&s, json!({"b": "long"}), None),
        [r#"<nil>: Invalid value: "object": short on create"#]
    );
    assert_eq!(
        errors(&s, json!({"b": "no"}), Some(json!({"b": "ok"}))),
        [r#"<nil>: Invalid value: "object": immutable once set"#]
    );
}

#[test]
fn ratcheting_turns_unchanged_errors_into_warnings() {
    let s = obj(
        json!({"a": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]},
               "b": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]}}),
        json!([]),
    );
    let o = validate(
        &s,
        &json!({"a": "long", "b": "longer"}),
        Some(&json!({"a": "long", "b": "x"})),
    );
    let errs: Vec<String> = o.errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
    assert_eq!(errs, [r#"b: Invalid value: "string": failed rule: self.size() < 3"#]);
    assert_eq!(
        o.warnings,
        [r#"a: Invalid value: "string": failed rule: self.size() < 3"#]
    );
}

#[test]
fn map_lists_correlate_items_for_old_self() {
    let s = Arc::new(json!({"type": "object", "properties": {"items": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}},
                  "x-kubernetes-validations": [{"rule": "self.v >= oldSelf.v", "message": "v may only grow"}]}}}}));
    let old = json!({"items": [{"name": "a", "v": 2}, {"name": "b", "v": 1}]});
    assert_eq!(
        errors(
            &s,
            json!({"items": [{"name": "b", "v": 0}, {"name": "a", "v": 3}, {"name": "c", "v": 0}]}),
            Some(old)
        ),
        [r#"items[0]: Invalid value: "object": v may only grow"#]
    );
}

fn crd_errors(schema: Value) -> Vec<String> {
    check_definition(&schema, "spec.versions[0].schema.openAPIV3Schema")
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect()
}

#[test]
fn crds_with_bad_rules_are_refused_with_kube_wording() {
    let p = "spec.versions[0].schema.openAPIV3Schema";
    let e = crd_errors(json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.b > 0"}]}));
    assert_eq!(
        e,
        [format!(
            "{p}.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.b > 0\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:5: undefined field 'b'\n | self.b > 0\n | ....^"
        )]
    );
    let e = crd_errors(json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a"}, {"rule": " "}, {"rule": "true", "reason": "Bad"},
                                     {"rule": "true", "fieldPath": ".nope"}]}));
    assert_eq!(
        e,
        [
            format!("{p}.x-kubernetes-validations[1].rule: Required value: rule is not specified"),
            format!(
                "{p}.x-kubernetes-validations[2].reason: Unsupported value: \"Bad\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
            ),
            format!(
                "{p}.x-kubernetes-validations[3].fieldPath: Invalid value: \".nope\": fieldPath must be a valid path: does not refer to a valid field"
            ),
        ]
    );
    let e = crd_errors(json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a"}]}));
    assert!(e[0].ends_with(": cel expression must evaluate to a bool"), "{e:?}");
    // Transition rules under a list that cannot be correlated.
    let e = crd_errors(
        json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 5, "items": {
        "type": "string", "maxLength": 5, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}),
    );
    assert_eq!(
        e,
        [format!(
            "{p}.properties[l].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {p}.properties[l].items"
        )]
    );
}

#[test]
fn unbounded_rules_cost_too_much() {
    let p = "spec.versions[0].schema.openAPIV3Schema";
    let e = crd_errors(
        json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"}}},
        "x-kubernetes-validations": [{"rule": "self.l.all(x, self.l.all(y, x == y))"}]}),
    );
    assert!(
        e.iter().any(|m| m.starts_with(&format!("{p}.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"))),
        "{e:?}"
    );
    // Bounded: accepted.
    let e = crd_errors(
        json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}}},
        "x-kubernetes-validations": [{"rule": "self.l.all(x, self.l.all(y, x == y))"}]}),
    );
    assert!(e.is_empty(), "{e:?}");
}
