//! The updater against cases ported from structured-merge-diff's merge tests (`smd_cases.json`), plus the reset
//! filters kube-apiserver gives it.

use serde_json::{Value, json};

use super::super::fields_v1;
use super::super::path::{PathElement, path_string};
use super::*;

const CASES: &str = include_str!("smd_cases.json");

/// Runs one case's operations from a null object, as structured-merge-diff's fixture does, and checks the object
/// and the managers left.
fn run_case(schemas: &Value, case: &Value) {
    let name = case["name"].as_str().unwrap();
    let schema_json = &schemas[case["schema"].as_str().unwrap()];
    let schema = Schema::new(schema_json.is_object().then_some(schema_json), true);
    let known = |v: &str| v.starts_with('v');
    let updater = Updater {
        schema: &schema,
        known_version: &known,
        reset: None,
    };
    let mut live = Value::Null;
    let mut managers = ManagedFields::new();
    for (i, op) in case["ops"].as_array().unwrap().iter().enumerate() {
        let version = op["version"].as_str().unwrap();
        let object = &op["object"];
        if let Some(manager) = op["update"].as_str() {
            managers = updater.update(&live, object, version, managers, manager);
            live = object.clone();
            continue;
        }
        let manager = op["apply"].as_str().unwrap();
        let force = op["force"] == json!(true);
        match updater.apply(&live, object, version, managers.clone(), manager, force) {
            Ok((new, m)) => {
                assert!(op.get("conflicts").is_none(), "{name}: op {i} should conflict");
                managers = m;
                if let Some(new) = new {
                    live = new;
                }
            }
            Err(ApplyError::Conflicts(c)) => {
                let got: Vec<(String, String)> = c.iter().map(|c| (c.manager.clone(), path_string(&c.path))).collect();
                let want: Vec<(String, String)> = op["conflicts"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{name}: op {i} conflicts: {got:?}"))
                    .iter()
                    .map(|p| (p[0].as_str().unwrap().to_owned(), p[1].as_str().unwrap().to_owned()))
                    .collect();
                assert_eq!(got, want, "{name}: op {i}");
            }
            Err(ApplyError::Merge(e)) => panic!("{name}: op {i}: {e}"),
        }
    }
    // An object whose last field went is null; the cases write it `{}`.
    let live = if live.is_null() { json!({}) } else { live };
    assert!(values_equal(&live, &case["object"]), "{name}: object {live}");
    if let Some(want) = case.get("managed") {
        let got: serde_json::Map<String, Value> = managers
            .iter()
            .map(|(m, vs)| (format!("{m}@{}", vs.api_version), fields_v1::encode(&vs.set)))
            .collect();
        assert_eq!(&Value::Object(got), want, "{name}: managers");
    }
    assert!(
        managers.values().all(|vs| !vs.set.is_empty()),
        "{name}: an empty manager is left"
    );
}

#[test]
fn structured_merge_diff_cases() {
    let doc: Value = serde_json::from_str(CASES).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() > 30);
    for case in cases {
        run_case(&doc["schemas"], case);
    }
}

// structured-merge-diff's ignore_test.go: fields a filter removes are owned by no update or apply, and their changes
// take nothing from anyone.
#[test]
fn reset_fields_are_never_owned() {
    let s = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"a": {"type": "string"}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}, "deep": {"type": "object", "properties": {"x": {"type": "string"}}}}},
    }});
    let schema = Schema::new(Some(&s), true);
    let known = |_: &str| true;
    let status = PathElement::Field("status".into());
    let drop_status = |set: &Set| set.recursive_difference(&Set::of([std::slice::from_ref(&status)]));
    let updater = Updater {
        schema: &schema,
        known_version: &known,
        reset: Some(&drop_status),
    };
    let live = json!({});
    let new = json!({"spec": {"a": "x"}, "status": {"ready": true, "deep": {"x": "y"}}});
    let m = updater.update(&live, &new, "v1", ManagedFields::new(), "updater");
    assert_eq!(
        fields_v1::encode(&m["updater"].set),
        json!({"f:spec": {".": {}, "f:a": {}}})
    );
    let (_, m) = updater.apply(&new, &new, "v1", m, "applier", false).unwrap();
    assert_eq!(fields_v1::encode(&m["applier"].set), json!({"f:spec": {"f:a": {}}}));
    // The status changing is not a conflict for anyone, and takes nothing.
    let (changed, m) = updater
        .apply(&new, &json!({"status": {"ready": false}}), "v1", m, "other", false)
        .unwrap();
    assert_eq!(changed.unwrap()["status"]["ready"], false);
    assert!(!m.contains_key("other"));
    assert_eq!(m.len(), 2);
}

#[test]
fn managers_of_unknown_versions_are_dropped() {
    let schema = Schema::new(None, true);
    let known = |v: &str| v == "v1";
    let updater = Updater {
        schema: &schema,
        known_version: &known,
        reset: None,
    };
    let mut m = ManagedFields::new();
    m.insert(
        "old".into(),
        VersionedSet {
            set: Set::of([&[PathElement::Field("a".into())][..]]),
            api_version: "v0".into(),
            applied: false,
        },
    );
    let m = updater.update(&json!({"a": 1}), &json!({"a": 1, "b": 2}), "v1", m, "new");
    assert_eq!(m.keys().collect::<Vec<_>>(), ["new"]);
}
