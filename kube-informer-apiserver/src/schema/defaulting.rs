//! Defaulting (apiextensions-apiserver's `defaulting` algorithm): a property missing from an object — or null where
//! the schema does not allow null — takes its schema's `default`, deep-copied; then defaults apply inside it. The
//! same holds for `additionalProperties` values and array items that are a forbidden null.
//! [`prune_non_nullable_nulls`] then drops the nulls no default replaced.

use serde_json::Value;

use super::structural::SchemaNode;

fn non_nullable_null(x: &Value, s: Option<&Value>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable())
}

/// Applies the defaults of `schema` to `x`, recursively.
pub(crate) fn default(x: &mut Value, schema: Option<&Value>) {
    let Some(s) = schema else {
        return;
    };
    match x {
        Value::Object(map) => {
            if let Some(props) = s.properties() {
                for (k, prop) in props {
                    let Some(d) = prop.get("default") else {
                        continue;
                    };
                    if map.get(k).is_none_or(|v| non_nullable_null(v, Some(prop))) {
                        map.insert(k.clone(), d.clone());
                    }
                }
            }
            let additional = s.additional().flatten();
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties().and_then(|p| p.get(k)) {
                    default(v, Some(prop));
                } else if let Some(values) = additional {
                    if non_nullable_null(v, Some(values)) {
                        *v = values.get("default").cloned().unwrap_or(Value::Null);
                    }
                    default(v, Some(values));
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.items();
            for v in items.iter_mut() {
                if let Some(is) = item_schema.filter(|is| non_nullable_null(v, Some(is))) {
                    *v = is.get("default").cloned().unwrap_or(Value::Null);
                }
                default(v, item_schema);
            }
        }
        _ => {}
    }
}

/// Removes object fields whose value is null where the schema neither allows null nor has a default.
pub(crate) fn prune_non_nullable_nulls(x: &mut Value, schema: Option<&Value>) {
    match x {
        Value::Object(map) => {
            map.retain(|k, v| {
                let field_schema = field_schema(k, schema);
                let drop = v.is_null() && field_schema.is_some_and(|f| !f.nullable() && f.get("default").is_none());
                if !drop {
                    prune_non_nullable_nulls(v, field_schema);
                }
                !drop
            });
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(SchemaNode::items);
            items.iter_mut().for_each(|v| prune_non_nullable_nulls(v, item_schema));
        }
        _ => {}
    }
}

fn field_schema<'a>(k: &str, s: Option<&'a Value>) -> Option<&'a Value> {
    let s = s?;
    s.properties()
        .and_then(|p| p.get(k))
        .or_else(|| s.additional().flatten())
}

#[cfg(test)]
mod tests {
    //! Cases from apiextensions-apiserver's defaulting and null-pruning tests.
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_missing_fields_objects_arrays_and_maps() {
        let schema = json!({
            "properties": {
                "a": {"type": "string", "default": "A"},
                "b": {"type": "object", "properties": {
                    "x": {"type": "integer", "default": 1},
                    "y": {"type": "integer"},
                }},
                "c": {"type": "array", "items": {"type": "object", "properties": {
                    "n": {"type": "string", "default": "N"}}}},
                "d": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                    "z": {"type": "boolean", "default": true}}}},
                "e": {"type": "object", "default": {"inner": 1}, "properties": {
                    "inner": {"type": "integer"}, "other": {"type": "integer", "default": 2}}},
            },
        });
        let mut x = json!({"b": {}, "c": [{}, {"n": "set"}], "d": {"k": {}}});
        default(&mut x, Some(&schema));
        assert_eq!(
            x,
            json!({"a": "A", "b": {"x": 1}, "c": [{"n": "N"}, {"n": "set"}], "d": {"k": {"z": true}},
                   "e": {"inner": 1, "other": 2}})
        );
    }

    #[test]
    fn nulls_take_defaults_unless_nullable() {
        let schema = json!({
            "properties": {
                "a": {"type": "string", "default": "A"},
                "b": {"type": "string", "nullable": true, "default": "B"},
                "list": {"type": "array", "items": {"type": "string", "default": "I"}},
                "map": {"type": "object", "additionalProperties": {"type": "string", "default": "M"}},
            },
        });
        let mut x = json!({"a": null, "b": null, "list": ["x", null], "map": {"k": null}});
        default(&mut x, Some(&schema));
        assert_eq!(x, json!({"a": "A", "b": null, "list": ["x", "I"], "map": {"k": "M"}}));
    }

    #[test]
    fn nulls_without_default_go_where_null_is_not_allowed() {
        let schema = json!({
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "string", "nullable": true},
                "c": {"type": "object", "properties": {"d": {"type": "string"}}},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        });
        let mut x = json!({"a": null, "b": null, "c": {"d": null}, "m": {"k": null}, "unknown": null});
        prune_non_nullable_nulls(&mut x, Some(&schema));
        assert_eq!(x, json!({"b": null, "c": {}, "m": {}, "unknown": null}));
    }
}
