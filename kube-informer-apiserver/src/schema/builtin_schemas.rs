//! The OpenAPI v3 schemas of the default resources ([`ResourceSpec::defaults`](crate::ResourceSpec::defaults)),
//! one inlined structural tree per kind, with the `x-kubernetes-*` extensions Kubernetes declares on them (strategic
//! merge keys and strategies, list types and map keys, int-or-string).
//!
//! The data, `builtin_schemas.json`, is Kubernetes 1.34's OpenAPI definitions reachable from these kinds, without
//! descriptions, each shared type (ObjectMeta, PodSpec, …) stored once and named by `$ref`;
//! `tools/k8s-schemas/generate.py` makes it and says where it comes from. It is parsed the first time a schema is
//! asked for, and each kind's tree is inlined the first time that kind's is (a server starts without inlining any:
//! most of the ~60 kinds are never written to in a test); later servers share the same trees.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use serde_json::{Map, Value};

/// The generated document: `{"source": …, "kinds": {apiVersion/Kind: definition}, "definitions": {name: schema}}`.
const DOCUMENT: &str = include_str!("builtin_schemas.json");

/// How deep `$ref`s may nest; the data has no cycles (a test checks), this only bounds a broken file.
const MAX_DEPTH: usize = 64;

/// The parsed document: `apiVersion/Kind` → definition name, and the definitions.
struct Document {
    kinds: Map<String, Value>,
    definitions: Map<String, Value>,
}

static DOCUMENT_PARSED: LazyLock<Document> = LazyLock::new(|| {
    let mut document: Value = serde_json::from_str(DOCUMENT).expect("builtin_schemas.json is JSON");
    let mut take = |key: &str| match document.get_mut(key).map(Value::take) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    Document {
        kinds: take("kinds"),
        definitions: take("definitions"),
    }
});

/// `apiVersion/Kind` (`v1/Pod`, `apps/v1/Deployment`) → the kind's inlined schema, once inlined.
static SCHEMAS: LazyLock<Mutex<HashMap<String, Option<Arc<Value>>>>> = LazyLock::new(Mutex::default);

/// The schema of a default resource's kind, by `apiVersion` and `kind`; the same tree for every call.
pub(crate) fn schema(api_version: &str, kind: &str) -> Option<Arc<Value>> {
    let key = format!("{api_version}/{kind}");
    if let Some(known) = SCHEMAS.lock().get(&key) {
        return known.clone();
    }
    let document = &*DOCUMENT_PARSED;
    let inlined = document.kinds.get(&key).and_then(|name| {
        let root = Value::Object(Map::from_iter([("$ref".to_owned(), name.clone())]));
        inline(&root, &document.definitions, 0).map(Arc::new)
    });
    // Two threads may inline the same kind at once: the first one stored wins, so every caller shares one tree.
    SCHEMAS.lock().entry(key).or_insert(inlined).clone()
}

/// The definitions and the name of a default resource's kind's definition (`io.k8s.api.core.v1.ConfigMap`), by
/// `apiVersion` and `kind`: the schema with its `$ref`s, which name the Go types.
pub(crate) fn definition(api_version: &str, kind: &str) -> Option<(&'static Map<String, Value>, &'static str)> {
    let document = &*DOCUMENT_PARSED;
    let name = document.kinds.get(&format!("{api_version}/{kind}"))?.as_str()?;
    Some((&document.definitions, name))
}

/// Replaces every `{"$ref": name, …siblings}` with the named definition, the siblings added over it (a property's
/// own `x-kubernetes-patch-strategy` beside a shared type). `None` when a name is unknown or nesting is absurd.
fn inline(node: &Value, definitions: &Map<String, Value>, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    Some(match node {
        Value::Object(fields) => {
            let mut out = match fields.get("$ref") {
                Some(Value::String(name)) => match inline(definitions.get(name)?, definitions, depth + 1)? {
                    Value::Object(target) => target,
                    _ => return None,
                },
                // A property named `$ref` (in a `properties` map) is no reference.
                Some(Value::Object(_)) | None => Map::new(),
                Some(_) => return None,
            };
            for (key, value) in fields {
                if key != "$ref" || value.is_object() {
                    out.insert(key.clone(), inline(value, definitions, depth + 1)?);
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| inline(v, definitions, depth + 1))
                .collect::<Option<_>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'a>(schema: &'a Value, path: &[&str]) -> &'a Value {
        path.iter().fold(schema, |s, p| &s[*p])
    }

    fn no_refs(v: &Value) -> bool {
        match v {
            Value::Object(m) => !m.contains_key("$ref") && m.values().all(no_refs),
            Value::Array(a) => a.iter().all(no_refs),
            _ => true,
        }
    }

    fn has_description(v: &Value) -> bool {
        match v {
            Value::Object(m) => m
                .iter()
                .any(|(k, v)| (k == "description" && v.is_string()) || has_description(v)),
            Value::Array(a) => a.iter().any(has_description),
            _ => false,
        }
    }

    #[test]
    fn every_default_kind_has_a_complete_inlined_schema() {
        let document: Value = serde_json::from_str(DOCUMENT).unwrap();
        let kinds = document["kinds"].as_object().unwrap();
        for kind in kinds.keys() {
            let (api_version, kind) = kind.rsplit_once('/').unwrap();
            assert!(schema(api_version, kind).is_some(), "{kind} failed to inline");
        }
        for spec in crate::ResourceSpec::defaults() {
            let api = spec.api_resource();
            let schema = schema(&api.api_version(), &api.kind).unwrap_or_else(|| panic!("{}", api.kind));
            assert!(no_refs(&schema), "{}", api.kind);
            assert_eq!(schema["type"], "object");
            for field in ["apiVersion", "kind"] {
                assert_eq!(at(&schema, &["properties", field, "type"]), "string");
            }
            // ObjectMeta, shared by all: owner references merge by uid, finalizers as a set.
            let meta = at(&schema, &["properties", "metadata", "properties"]);
            assert_eq!(meta["ownerReferences"]["x-kubernetes-patch-merge-key"], "uid");
            assert_eq!(meta["finalizers"]["x-kubernetes-patch-strategy"], "merge");
            assert_eq!(meta["finalizers"]["items"]["type"], "string");
            assert_eq!(meta["creationTimestamp"]["format"], "date-time");
            assert_eq!(meta["labels"]["additionalProperties"]["type"], "string");
            // Descriptions are dropped (a property may be named `description`: PriorityClass's).
            assert!(!has_description(&document));
        }
    }

    #[test]
    fn pod_and_deployment_carry_kubernetes_merge_keys_and_strategies() {
        let pod = schema("v1", "Pod").unwrap();
        let spec = at(&pod, &["properties", "spec", "properties"]);
        for list in [
            "containers",
            "initContainers",
            "ephemeralContainers",
            "volumes",
            "imagePullSecrets",
        ] {
            assert_eq!(spec[list]["x-kubernetes-patch-merge-key"], "name", "{list}");
        }
        assert_eq!(spec["volumes"]["x-kubernetes-patch-strategy"], "merge,retainKeys");
        // Tolerations carry no strategy: a patch replaces the list.
        assert!(spec["tolerations"].get("x-kubernetes-patch-strategy").is_none());
        assert_eq!(spec["tolerations"]["x-kubernetes-list-type"], "atomic");
        let container = at(spec, &["containers", "items", "properties"]);
        assert_eq!(container["ports"]["x-kubernetes-patch-merge-key"], "containerPort");
        assert_eq!(
            container["ports"]["x-kubernetes-list-map-keys"],
            serde_json::json!(["containerPort", "protocol"])
        );
        assert_eq!(container["volumeMounts"]["x-kubernetes-patch-merge-key"], "mountPath");
        assert_eq!(container["env"]["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(container["args"]["type"], "array");
        assert_eq!(
            container["ports"]["items"]["required"],
            serde_json::json!(["containerPort"])
        );
        assert_eq!(
            at(container, &["ports", "items", "properties", "containerPort", "format"]),
            "int32"
        );
        assert_eq!(
            at(
                container,
                &["resources", "properties", "limits", "additionalProperties", "oneOf"]
            ),
            &serde_json::json!([{"type": "string"}, {"type": "number"}])
        );
        let probe_port = at(
            container,
            &["livenessProbe", "properties", "httpGet", "properties", "port"],
        );
        assert_eq!(probe_port, &serde_json::json!({"x-kubernetes-int-or-string": true}));

        // The deployment's pod template is the same PodSpec, inlined again; its strategy keeps the property's own
        // retainKeys beside the shared type.
        let deployment = schema("apps/v1", "Deployment").unwrap();
        let dspec = at(&deployment, &["properties", "spec", "properties"]);
        assert_eq!(
            at(dspec, &["template", "properties", "spec"]),
            at(&pod, &["properties", "spec"])
        );
        assert_eq!(dspec["strategy"]["x-kubernetes-patch-strategy"], "retainKeys");
        assert_eq!(at(dspec, &["strategy", "properties", "type", "type"]), "string");
        assert_eq!(dspec["selector"]["properties"]["matchLabels"]["type"], "object");
        let conditions = at(&deployment, &["properties", "status", "properties", "conditions"]);
        assert_eq!(conditions["x-kubernetes-patch-merge-key"], "type");
    }

    #[test]
    fn the_trees_are_built_once_per_process() {
        assert!(Arc::ptr_eq(
            &schema("v1", "Pod").unwrap(),
            &schema("v1", "Pod").unwrap()
        ));
        assert!(schema("v1", "Widget").is_none());
        assert!(schema("v2", "Pod").is_none());
    }

    #[test]
    fn broken_references_are_refused_not_followed_forever() {
        let defs: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "a": {"properties": {"b": {"$ref": "b"}}},
            "b": {"properties": {"a": {"$ref": "a"}}},
            "c": {"$ref": 5},
        }))
        .unwrap();
        assert!(inline(&serde_json::json!({"$ref": "a"}), &defs, 0).is_none());
        assert!(inline(&serde_json::json!({"$ref": "missing"}), &defs, 0).is_none());
        assert!(inline(&serde_json::json!({"$ref": "c"}), &defs, 0).is_none());
    }
}
