//! The invariants of `x-kubernetes-list-type` (apiextensions-apiserver's `structurallisttype`): a `set` holds no value
//! twice, a `map` no key (its `x-kubernetes-list-map-keys`) twice. kube-apiserver checks them after the schema and
//! the embedded resources, so their errors come last; each repeated value (or key) is reported once, at its second
//! place.

use serde_json::{Map, Value};

use super::field_path::FieldPath;
use super::structural::SchemaNode;
use super::validation::render;
use crate::api::errors::FieldError;

/// The list-type errors of `x` under `schema`, in kube-apiserver's order: a map's values (`additionalProperties`)
/// before its properties, a list's own duplicates before its items'.
pub(crate) fn validate_list_types(x: &Value, schema: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    walk(x, schema, &FieldPath::default(), &mut out);
    out
}

fn walk(x: &Value, s: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    match x {
        Value::Object(map) => {
            if let Some(Some(values)) = s.additional() {
                for (k, v) in map {
                    walk(v, values, &path.key(k), out);
                }
            }
            if let Some(props) = s.properties() {
                for (k, v) in map {
                    if let Some(p) = props.get(k) {
                        walk(v, p, &path.child(k), out);
                    }
                }
            }
        }
        Value::Array(items) => {
            match s.keyword("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => {
                    for i in repeats(items) {
                        out.push(duplicate(&path.index(i), render(&items[i])));
                    }
                }
                Some("map") => map_list(items, s, path, out),
                _ => {}
            }
            if let Some(item) = s.items() {
                for (i, v) in items.iter().enumerate() {
                    walk(v, item, &path.index(i), out);
                }
            }
        }
        _ => {}
    }
}

/// The indices where a value appears for the second time (a third appearance is not reported again).
fn repeats<T: PartialEq>(items: &[T]) -> Vec<usize> {
    (0..items.len())
        .filter(|&i| items[..i].iter().filter(|a| **a == items[i]).count() == 1)
        .collect()
}

fn duplicate(path: &FieldPath, shown: String) -> FieldError {
    FieldError {
        reason: "FieldValueDuplicate",
        field: path.as_str().to_owned(),
        message: format!("Duplicate value: {shown}"),
    }
}

/// A `map` list: only objects (or nulls) allowed; the keys, as far as each item has them, unique.
fn map_list(items: &[Value], s: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    if let Some((i, bad)) = items.iter().enumerate().find(|(_, v)| !v.is_object() && !v.is_null()) {
        out.push(FieldError {
            reason: "FieldValueInvalid",
            field: path.index(i).as_str().to_owned(),
            message: format!(
                "Invalid value: {}: must be an object for an array of list-type map",
                render(bad)
            ),
        });
        return;
    }
    let key_fields: Vec<&str> = s
        .keyword("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let keys: Vec<Map<String, Value>> = items
        .iter()
        .map(|item| {
            key_fields
                .iter()
                .filter_map(|k| Some(((*k).to_owned(), item.get(*k)?.clone())))
                .collect()
        })
        .collect();
    for i in repeats(&keys) {
        out.push(duplicate(&path.index(i), Value::Object(keys[i].clone()).to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(x: Value, s: &Value) -> Vec<String> {
        validate_list_types(&x, s)
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect()
    }

    fn set_of(items: Value) -> Value {
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": items})
    }

    fn map_of(keys: &[&str]) -> Value {
        json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys,
               "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}})
    }

    // Cases ported from apiextensions-apiserver's TestValidateListSetsAndMaps.
    #[test]
    fn sets_report_each_repeated_value_once() {
        let s = json!({"type": "object", "properties": {
            "strings": set_of(json!({"type": "string"})),
            "nil": set_of(json!({"type": "string", "nullable": true})),
            "maps": set_of(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            "arrays": set_of(json!({"type": "array", "items": {"type": "string"}})),
            "atomic": {"type": "array", "items": {"type": "string"}},
        }});
        assert_eq!(
            errors(json!({"strings": ["a", "a", "b", "c", "d", "c"]}), &s),
            [
                r#"strings[1]: Duplicate value: "a""#,
                r#"strings[5]: Duplicate value: "c""#
            ]
        );
        assert_eq!(
            errors(json!({"nil": ["a", null, null]}), &s),
            ["nil[2]: Duplicate value: null"]
        );
        assert_eq!(
            errors(
                json!({"maps": [{"a": "b"}, {"a": "c"}, {"a": "b"}, {"a": "c"}, {"a": "c"}]}),
                &s
            ),
            [
                r#"maps[2]: Duplicate value: {"a":"b"}"#,
                r#"maps[3]: Duplicate value: {"a":"c"}"#
            ]
        );
        assert_eq!(
            errors(json!({"arrays": [[], ["a"], ["b"], ["a"]]}), &s),
            [r#"arrays[3]: Duplicate value: ["a"]"#]
        );
        assert!(errors(json!({"atomic": ["a", "a"], "strings": ["a"]}), &s).is_empty());
    }

    #[test]
    fn maps_compare_their_keys_an_absent_key_and_null_differing() {
        let s = json!({"type": "object", "properties": {
            "one": map_of(&["a"]),
            "two": map_of(&["a", "b"]),
            "strings": map_of(&["a"]),
        }});
        assert_eq!(
            errors(
                json!({"one": [{"a": "0", "c": "2"}, {"a": "1", "c": "1"}, {"a": "1", "c": "2"}, {}]}),
                &s
            ),
            [r#"one[2]: Duplicate value: {"a":"1"}"#]
        );
        assert_eq!(
            errors(
                json!({"one": [{"a": [], "c": "1"}, {"a": null, "c": "1"}, {"c": "1"}, {"a": null}]}),
                &s
            ),
            [r#"one[3]: Duplicate value: {"a":null}"#]
        );
        assert_eq!(
            errors(
                json!({"one": [null, {"a": "0", "c": "1"}, {"a": null}, {"c": "1"}]}),
                &s
            ),
            ["one[3]: Duplicate value: {}"]
        );
        assert_eq!(
            errors(
                json!({"two": [{"a": "1", "b": "1", "c": "1"}, {"a": "1", "b": "2", "c": "2"}, {"a": "1", "b": "2", "c": "3"}, {}]}),
                &s
            ),
            [r#"two[2]: Duplicate value: {"a":"1","b":"2"}"#]
        );
        assert_eq!(
            errors(json!({"strings": ["a"]}), &s),
            [r#"strings[0]: Invalid value: "a": must be an object for an array of list-type map"#]
        );
    }

    #[test]
    fn nested_lists_and_map_values_are_checked() {
        let s = json!({"type": "object", "properties": {
            "outer": {"type": "array", "x-kubernetes-list-type": "set",
                      "items": set_of(json!({"type": "integer"}))},
            "byName": {"type": "object", "additionalProperties": set_of(json!({"type": "integer"}))},
        }});
        // A list's own duplicates before its items'.
        assert_eq!(
            errors(json!({"outer": [[1], [2, 2], [1]], "byName": {"k": [3, 3]}}), &s),
            [
                "byName[k][1]: Duplicate value: 3",
                "outer[2]: Duplicate value: [1]",
                "outer[1][1]: Duplicate value: 2"
            ]
        );
    }
}
