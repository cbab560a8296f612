//! Pruning: fields a structural schema does not specify are dropped (apiextensions-apiserver's `pruning`
//! algorithm). `x-kubernetes-preserve-unknown-fields` keeps a node's unknown fields (its specified ones are still
//! pruned inside); an `x-kubernetes-embedded-resource` keeps `apiVersion`, `kind` and `metadata` (metadata is
//! ObjectMeta's business, see [`objectmeta`](super::objectmeta)); at the resource root the object is an embedded
//! resource. Returns the paths dropped, sorted, for `fieldValidation`.

use serde_json::Value;

use super::field_path::FieldPath;
use super::structural::SchemaNode;

fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

/// Prunes `obj` in place by `schema` (`None`: nothing is specified, every field of every object goes).
pub(crate) fn prune(obj: &mut Value, schema: Option<&Value>, resource_root: bool) -> Vec<String> {
    let mut out = Vec::new();
    walk(obj, schema, resource_root, &FieldPath::default(), &mut out);
    out.sort();
    out
}

/// One node; `embedded` says the node is an embedded resource even if its schema does not (the root).
fn walk(x: &mut Value, s: Option<&Value>, embedded: bool, path: &FieldPath, out: &mut Vec<String>) {
    if let Some(s) = s.filter(|s| s.preserves_unknown()) {
        return skip(x, s, embedded, path, out);
    }
    match x {
        Value::Object(map) => {
            let Some(s) = s else {
                out.extend(map.keys().map(|k| path.child(k).as_str().to_owned()));
                map.clear();
                return;
            };
            let embedded = embedded || s.embedded();
            let props = s.properties();
            let additional = s.additional();
            map.retain(|k, v| {
                if embedded && is_meta_field(k) {
                    return true;
                }
                if let Some(p) = props.and_then(|p| p.get(k)) {
                    walk(v, Some(p), false, &path.child(k), out);
                    true
                } else if let Some(values) = additional {
                    walk(v, values, false, &path.child(k), out);
                    true
                } else {
                    if !is_meta_field(k) || !path.as_str().is_empty() {
                        out.push(path.child(k).as_str().to_owned());
                    }
                    false
                }
            });
        }
        Value::Array(items) => {
            let item_schema = s.and_then(SchemaNode::items);
            for (i, v) in items.iter_mut().enumerate() {
                walk(v, item_schema, false, &path.index(i), out);
            }
        }
        _ => {}
    }
}

/// Below `x-kubernetes-preserve-unknown-fields`: unknown fields stay, specified ones are pruned inside.
fn skip(x: &mut Value, s: &Value, embedded: bool, path: &FieldPath, out: &mut Vec<String>) {
    match x {
        Value::Object(map) => {
            let embedded = embedded || s.embedded();
            for (k, v) in map.iter_mut() {
                if embedded && is_meta_field(k) {
                    continue;
                }
                if let Some(p) = s.properties().and_then(|p| p.get(k)) {
                    walk(v, Some(p), false, &path.child(k), out);
                } else if let Some(values) = s.additional() {
                    walk(v, values, false, &path.child(k), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items() {
                for (i, v) in items.iter_mut().enumerate() {
                    skip(v, item_schema, false, &path.index(i), out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    //! Cases from apiextensions-apiserver's pruning tests.
    use super::*;
    use serde_json::json;

    fn check(input: Value, schema: Option<Value>, root: bool, want: Value, pruned: &[&str]) {
        let mut obj = input;
        let got = prune(&mut obj, schema.as_ref(), root);
        assert_eq!(obj, want);
        assert_eq!(got, pruned);
    }

    #[test]
    fn scalars_arrays_and_objects() {
        check(json!(null), None, false, json!(null), &[]);
        check(json!(4), Some(json!({})), false, json!(4), &[]);
        check(json!([1, 2]), Some(json!({"items": {}})), false, json!([1, 2]), &[]);
        let ac = json!({"items": {"properties": {"a": {}, "c": {}}}});
        check(
            json!([{"a":1},{"b":1},{"a":1,"b":2,"c":3}]),
            Some(ac),
            false,
            json!([{"a":1},{},{"a":1,"c":3}]),
            &["[1].b", "[2].b"],
        );
        check(
            json!([{"a":1},{"b":1},{"a":1,"b":2,"c":3}]),
            None,
            false,
            json!([{}, {}, {}]),
            &["[0].a", "[1].b", "[2].a", "[2].b", "[2].c"],
        );
        check(
            json!({"array":[{"a":1},{"b":1},{"a":1,"b":2,"c":3}],"unspecified":{"a":1},"specified":{"a":1,"b":2,"c":3}}),
            Some(json!({"properties": {
                "array": {"items": {"properties": {"a": {}, "c": {}}}},
                "specified": {"properties": {"a": {}, "c": {}}},
            }})),
            false,
            json!({"array":[{"a":1},{},{"a":1,"c":3}],"specified":{"a":1,"c":3}}),
            &["array[1].b", "array[2].b", "specified.b", "unspecified"],
        );
    }

    #[test]
    fn nested_preserve_unknown_fields() {
        let input = json!({
            "unspecified": "bar", "alpha": "abc", "beta": 42.0,
            "unspecifiedObject": {"unspecified": "bar"},
            "pruning": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                        "pruning": {"unspecified": "bar"}, "apiVersion": "unknown",
                        "preserving": {"unspecified": "bar"}},
            "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                           "pruning": {"unspecified": "bar"}, "preserving": {"unspecified": "bar"},
                           "preservingUnknownType": [{"foo": true}, {"bar": true}]},
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields":
                {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}},
            "preservingAdditionalPropertiesKeyPruneValues":
                {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}},
        });
        let values = json!({"type": "object", "properties": {"specified": {"type": "object"}}});
        let schema = json!({
            "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {
                "alpha": {"type": "string"}, "beta": {"type": "number"},
                "pruning": {"type": "object", "properties": {
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "pruning": {"type": "object"}}},
                "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "preservingUnknownType": {"x-kubernetes-preserve-unknown-fields": true},
                    "pruning": {"type": "object"}}},
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields":
                    {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "additionalProperties": values},
                "preservingAdditionalPropertiesKeyPruneValues": {"type": "object", "additionalProperties": values},
            },
        });
        let want = json!({
            "unspecified": "bar", "alpha": "abc", "beta": 42.0,
            "unspecifiedObject": {"unspecified": "bar"},
            "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
            "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {},
                           "preserving": {"unspecified": "bar"},
                           "preservingUnknownType": [{"foo": true}, {"bar": true}]},
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {}}},
            "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}},
        });
        check(
            input,
            Some(schema),
            false,
            want,
            &[
                "preserving.pruning.unspecified",
                "preservingAdditionalPropertiesKeyPruneValues.foo.specified.unspecified",
                "preservingAdditionalPropertiesKeyPruneValues.foo.unspecified",
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.specified.unspecified",
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.unspecified",
                "pruning.apiVersion",
                "pruning.pruning.unspecified",
                "pruning.unspecified",
                "pruning.unspecifiedObject",
            ],
        );
    }

    #[test]
    fn additional_properties_with_schema_or_bool() {
        check(
            json!({"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1}}}),
            Some(json!({"properties": {"a": {}, "c": {"additionalProperties": {"type": "integer"}}}})),
            false,
            json!({"a":1,"c":{"a":1,"b":2,"c":{}}}),
            &["b", "c.c.a"],
        );
        check(
            json!({"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1, "apiVersion": "unknown"}}}),
            Some(json!({"properties": {"a": {}, "c": {"additionalProperties": false}}})),
            false,
            json!({"a":1,"c":{"a":1,"b":2,"c":{}}}),
            &["b", "c.c.a", "c.c.apiVersion"],
        );
    }

    fn embedded_input() -> Value {
        let res = |extra: Value| {
            let mut v = json!({"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
                               "metadata": {"name": "instance", "unspecified": "bar"},
                               "spec": {"unspecified": "bar"}});
            if let Value::Object(e) = extra {
                for (k, x) in e {
                    v["spec"][k] = x;
                }
            }
            v
        };
        json!({
            "apiVersion": "foo/v1", "kind": "Foo",
            "metadata": {"name": "instance", "unspecified": "bar"},
            "unspecified": "bar",
            "pruned": res(json!({})),
            "preserving": res(json!({})),
            "nested": res(json!({"embedded": res(json!({}))})),
        })
    }

    fn embedded_schema() -> Value {
        json!({"type": "object", "properties": {
            "pruned": {"type": "object", "x-kubernetes-embedded-resource": true,
                       "properties": {"spec": {"type": "object"}}},
            "preserving": {"type": "object", "x-kubernetes-embedded-resource": true,
                           "x-kubernetes-preserve-unknown-fields": true},
            "nested": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
                "spec": {"type": "object", "properties": {
                    "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "properties": {"spec": {"type": "object"}}}}}}},
        }})
    }

    const EMBEDDED_PRUNED: &[&str] = &[
        "nested.spec.embedded.spec.unspecified",
        "nested.spec.embedded.unspecified",
        "nested.spec.unspecified",
        "nested.unspecified",
        "pruned.spec.unspecified",
        "pruned.unspecified",
        "unspecified",
    ];

    #[test]
    fn embedded_resources_keep_their_type_and_metadata() {
        let kept = |extra: Value| {
            let mut v = json!({"apiVersion": "foo/v1", "kind": "Foo",
                               "metadata": {"name": "instance", "unspecified": "bar"}, "spec": {}});
            if let Value::Object(e) = extra {
                for (k, x) in e {
                    v["spec"][k] = x;
                }
            }
            v
        };
        let mut want = json!({
            "pruned": kept(json!({})),
            "preserving": embedded_input()["preserving"].clone(),
            "nested": kept(json!({"embedded": kept(json!({}))})),
        });
        // Not a resource root: the top-level apiVersion, kind and metadata are kept but not reported.
        check(
            embedded_input(),
            Some(embedded_schema()),
            false,
            want.clone(),
            EMBEDDED_PRUNED,
        );
        // A resource root keeps them.
        want["apiVersion"] = json!("foo/v1");
        want["kind"] = json!("Foo");
        want["metadata"] = json!({"name": "instance", "unspecified": "bar"});
        check(embedded_input(), Some(embedded_schema()), true, want, EMBEDDED_PRUNED);
    }
}
