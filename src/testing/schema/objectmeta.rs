//! `metadata` is ObjectMeta whatever the schema says: kube-apiserver decodes it into its Go type, which drops every
//! field ObjectMeta (and its owner references and managed-fields entries) does not have — at the resource root and in
//! every `x-kubernetes-embedded-resource`. The dropped paths are reported for `fieldValidation`.

use serde_json::Value;

use super::{FieldPath, SchemaNode};

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
            if s.embedded() && !path.as_str().is_empty() {
                if let Some(meta) = map.get_mut("metadata") {
                    out.extend(prune_object_meta(meta, &path.child("metadata")));
                }
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
}
