//! `metadata` is ObjectMeta whatever the schema says: kube-apiserver decodes it into its Go type, which drops every
//! field ObjectMeta (and its owner references and managed-fields entries) does not have — at the resource root and in
//! every `x-kubernetes-embedded-resource`. The dropped paths are reported for `fieldValidation`. An embedded
//! resource must also say what it is: its `apiVersion` and `kind` are required and checked.

use serde_json::Value;

use super::field_path::FieldPath;
use super::structural::SchemaNode;
use crate::api::errors::FieldError;

const OBJECT_META: &[&str] = &[
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
];
const OWNER_REFERENCE: &[&str] = &["apiVersion", "blockOwnerDeletion", "controller", "kind", "name", "uid"];
const MANAGED_FIELDS_ENTRY: &[&str] = &[
    "apiVersion",
    "fieldsType",
    "fieldsV1",
    "manager",
    "operation",
    "subresource",
    "time",
];

fn keep_known(x: &mut Value, known: &[&str], path: &FieldPath, out: &mut Vec<String>) {
    if let Value::Object(map) = x {
        map.retain(|k, _| {
            let keep = known.contains(&k.as_str());
            if !keep {
                out.push(path.child(k).as_str().to_owned());
            }
            keep
        });
    }
}

/// Drops from `meta` (the value of a `metadata` field at `path`) what ObjectMeta does not have; returns the paths.
pub(crate) fn prune_object_meta(meta: &mut Value, path: &FieldPath) -> Vec<String> {
    let mut out = Vec::new();
    keep_known(meta, OBJECT_META, path, &mut out);
    for (list, known) in [
        ("ownerReferences", OWNER_REFERENCE),
        ("managedFields", MANAGED_FIELDS_ENTRY),
    ] {
        if let Some(Value::Array(items)) = meta.get_mut(list) {
            let list_path = path.child(list);
            for (i, item) in items.iter_mut().enumerate() {
                keep_known(item, known, &list_path.index(i), &mut out);
            }
        }
    }
    out
}

/// Applies [`prune_object_meta`] to the metadata of every embedded resource below the root of `obj`; returns the
/// paths dropped, sorted.
pub(crate) fn coerce_embedded_metadata(obj: &mut Value, schema: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    walk(obj, schema, &FieldPath::default(), &mut out);
    out.sort();
    out
}

fn walk(x: &mut Value, s: Option<&Value>, path: &FieldPath, out: &mut Vec<String>) {
    let Some(s) = s else {
        return;
    };
    match x {
        Value::Object(map) => {
            if s.embedded()
                && !path.as_str().is_empty()
                && let Some(meta) = map.get_mut("metadata")
            {
                out.extend(prune_object_meta(meta, &path.child("metadata")));
            }
            for (k, v) in map.iter_mut() {
                if let Some(p) = s.properties().and_then(|p| p.get(k)) {
                    walk(v, Some(p), &path.child(k), out);
                } else if let Some(values) = s.additional() {
                    walk(v, values, &path.child(k), out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                walk(v, s.items(), &path.index(i), out);
            }
        }
        _ => {}
    }
}

/// The type checks kube-apiserver makes on every embedded resource below the root of `obj` (apiextensions-apiserver's
/// `objectmeta.Validate`): `apiVersion` and `kind` present, strings, not empty, the version a group/version and the
/// kind (lowercased) a DNS-1035 label. Its metadata's values are not validated here.
pub(crate) fn validate_embedded(obj: &Value, schema: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    check_embedded(obj, schema, &FieldPath::default(), &mut out);
    out
}

fn check_embedded(x: &Value, s: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    match x {
        Value::Object(map) => {
            if s.embedded() && !path.as_str().is_empty() {
                type_meta(map, path, out);
            }
            for (k, v) in map {
                if let Some(p) = s.properties().and_then(|p| p.get(k)) {
                    check_embedded(v, p, &path.child(k), out);
                } else if let Some(Some(values)) = s.additional() {
                    check_embedded(v, values, &path.key(k), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = s.items() {
                for (i, v) in items.iter().enumerate() {
                    check_embedded(v, item, &path.index(i), out);
                }
            }
        }
        _ => {}
    }
}

/// An embedded resource's `apiVersion` and `kind`.
fn type_meta(map: &serde_json::Map<String, Value>, path: &FieldPath, out: &mut Vec<FieldError>) {
    for key in ["apiVersion", "kind"] {
        if !map.contains_key(key) {
            out.push(FieldError::required(path.child(key).as_str(), ""));
        }
    }
    for key in ["apiVersion", "kind"] {
        let Some(v) = map.get(key) else {
            continue;
        };
        let field = path.child(key);
        let problem = match v.as_str() {
            None => Some((bad_value(v), "must be a string".to_owned())),
            Some("") => Some((bad_value(v), "must not be empty".to_owned())),
            Some(version) if key == "apiVersion" && version != "/" && version.matches('/').count() > 1 => {
                Some((bad_value(v), format!("unexpected GroupVersion string: {version}")))
            }
            Some(kind) if key == "kind" => dns1035_label(&kind.to_ascii_lowercase()).map(|e| {
                (
                    bad_value(v),
                    format!("may have mixed case, but should otherwise match: {e}"),
                )
            }),
            Some(_) => None,
        };
        if let Some((value, detail)) = problem {
            out.push(FieldError {
                reason: "FieldValueInvalid",
                field: field.as_str().to_owned(),
                message: format!("Invalid value: {value}: {detail}"),
            });
        }
    }
}

/// A bad value as a field error prints it: strings quoted, scalars bare, the rest as JSON.
fn bad_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".to_owned(),
        Value::Number(_) | Value::Bool(_) => v.to_string(),
        other => other.to_string(),
    }
}

/// apimachinery's `IsDNS1035Label` messages, joined as kube-apiserver joins them; `None` when `s` is one.
fn dns1035_label(s: &str) -> Option<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    let b = s.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_lowercase)
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.last().is_some_and(|c| *c != b'-');
    if !ok {
        errs.push(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic \
             character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for \
             validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                .to_owned(),
        );
    }
    (!errs.is_empty()).then(|| errs.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_meta_keeps_only_its_fields() {
        let mut meta = json!({"name": "a", "labels": {"x": "y"}, "unknownMeta": 1,
                              "ownerReferences": [{"uid": "u", "kind": "K", "extra": true}]});
        let dropped = prune_object_meta(&mut meta, &FieldPath::default().child("metadata"));
        assert_eq!(dropped, ["metadata.unknownMeta", "metadata.ownerReferences[0].extra"]);
        assert_eq!(
            meta,
            json!({"name": "a", "labels": {"x": "y"}, "ownerReferences": [{"uid": "u", "kind": "K"}]})
        );
    }

    #[test]
    fn embedded_resources_have_their_metadata_pruned() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "embeddedObj": {"type": "object", "x-kubernetes-embedded-resource": true,
                            "x-kubernetes-preserve-unknown-fields": true},
            "list": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true,
                                                "x-kubernetes-preserve-unknown-fields": true}},
        }}}});
        let mut obj = json!({"metadata": {"unknownTop": 1}, "spec": {
            "embeddedObj": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "unknownEmbeddedMeta": 1}},
            "list": [{"metadata": {"bad": 1}}],
        }});
        let dropped = coerce_embedded_metadata(&mut obj, Some(&schema));
        assert_eq!(
            dropped,
            [
                "spec.embeddedObj.metadata.unknownEmbeddedMeta",
                "spec.list[0].metadata.bad"
            ]
        );
        // The root's metadata is not this function's business.
        assert_eq!(obj["metadata"]["unknownTop"], 1);
        assert_eq!(obj["spec"]["embeddedObj"]["metadata"], json!({"name": "x"}));
    }

    #[test]
    fn embedded_resources_must_say_their_api_version_and_kind() {
        let embedded = json!({"type": "object", "x-kubernetes-embedded-resource": true,
                              "x-kubernetes-preserve-unknown-fields": true});
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "one": embedded.clone(),
            "many": {"type": "array", "items": embedded.clone()},
            "byName": {"type": "object", "additionalProperties": embedded},
        }}}});
        let check = |spec: Value| -> Vec<String> {
            validate_embedded(&json!({"apiVersion": "v1", "spec": spec}), &schema)
                .iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect()
        };
        // The root is checked elsewhere; well-formed embedded resources pass.
        assert!(check(json!({"one": {"apiVersion": "apps/v1", "kind": "Deployment"}})).is_empty());
        assert_eq!(
            check(json!({"one": {"metadata": {"name": "x"}}, "many": [{"apiVersion": "v1"}]})),
            [
                "spec.many[0].kind: Required value",
                "spec.one.apiVersion: Required value",
                "spec.one.kind: Required value",
            ]
        );
        assert_eq!(
            check(
                json!({"byName": {"a": {"apiVersion": "a/b/c", "kind": ""}, "b": {"apiVersion": 1, "kind": "Bad_Kind"}}})
            ),
            [
                r#"spec.byName[a].apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
                r#"spec.byName[a].kind: Invalid value: "": must not be empty"#,
                "spec.byName[b].apiVersion: Invalid value: 1: must be a string",
                "spec.byName[b].kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: \
                 a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic \
                 character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for \
                 validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
    }
}
