//! The rest of apiextensions' schema rules for a CRD (`validateCustomResourceDefinitionOpenAPISchema`, the OpenAPI
//! v3 standard validator, and `ValidateStructural`'s invariants on value validations): keywords CRD schemas do not
//! support, `uniqueItems`, `additionalProperties` set to false, beside `properties` or at the root, and junctors
//! (`allOf`, `anyOf`, `oneOf`, `not`) that say more than value validations. The type rules are in `validation.rs`.

use serde_json::Value;

use crate::api::errors::FieldError;

const JUNCTORS: [&str; 3] = ["allOf", "anyOf", "oneOf"];

/// Checks the schema node `s` at `path` (`root`: the object's root) and everything below it.
pub(crate) fn check(s: &Value, path: &str, root: bool, errs: &mut Vec<FieldError>) {
    let Some(o) = s.as_object() else { return };
    for (key, what) in [
        ("$ref", "$ref is not supported"),
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
    ] {
        if o.contains_key(key) {
            errs.push(FieldError::forbidden(&format!("{path}.{key}"), what));
        }
    }
    if o.get("type").and_then(Value::as_str) == Some("null") {
        errs.push(FieldError::forbidden(
            &format!("{path}.type"),
            "type cannot be set to null",
        ));
    }
    if o.get("uniqueItems") == Some(&Value::Bool(true)) {
        errs.push(FieldError::forbidden(
            &format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(ap) = o.get("additionalProperties") {
        if ap == &Value::Bool(false) {
            errs.push(FieldError::forbidden(
                &format!("{path}.additionalProperties"),
                "additionalProperties cannot be set to false",
            ));
        }
        if o.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty())
        {
            errs.push(FieldError::forbidden(
                &format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if root {
            errs.push(FieldError::forbidden(
                &format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if ap.is_object() {
            check(ap, &format!("{path}.additionalProperties"), false, errs);
        }
    }
    match o.get("items") {
        Some(Value::Array(_)) => errs.push(FieldError::forbidden(
            &format!("{path}.items"),
            "items must be a schema object and not an array",
        )),
        Some(items) => check(items, &format!("{path}.items"), false, errs),
        None => {}
    }
    if flag(o, "x-kubernetes-int-or-string") && flag(o, "x-kubernetes-preserve-unknown-fields") {
        errs.push(FieldError::invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if let Some(Value::Object(props)) = o.get("properties") {
        for (k, p) in props {
            check(p, &format!("{path}.properties[{k}]"), false, errs);
        }
    }
    let int_or_string = is_int_or_string_any_of(o.get("anyOf"));
    junctor_branches(o, path, int_or_string, errs);
}

fn flag(o: &serde_json::Map<String, Value>, key: &str) -> bool {
    o.get(key) == Some(&Value::Bool(true))
}

/// The one junctor that may say types: `anyOf: [{type: integer}, {type: string}]` (an int-or-string).
fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    let Some(Value::Array(branches)) = any_of else {
        return false;
    };
    branches.len() == 2
        && branches[0] == serde_json::json!({"type": "integer"})
        && branches[1] == serde_json::json!({"type": "string"})
}

/// A branch of a junctor: value validations only (`ValidateStructural`'s nested value validation).
fn nested(s: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(o) = s.as_object() else { return };
    for (key, what) in [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("externalDocs", "must be undefined to be structural"),
        ("x-kubernetes-list-map-keys", "must be empty to be structural"),
        ("x-kubernetes-list-type", "must be undefined to be structural"),
        ("x-kubernetes-map-type", "must be undefined to be structural"),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ] {
        if o.contains_key(key) {
            errs.push(FieldError::forbidden(&format!("{path}.{key}"), what));
        }
    }
    for key in [
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(o, key) {
            errs.push(FieldError::forbidden(
                &format!("{path}.{key}"),
                "must be false to be structural",
            ));
        }
    }
    if let Some(Value::Object(props)) = o.get("properties") {
        if props.contains_key("metadata") {
            errs.push(FieldError::forbidden(
                &format!("{path}.properties[metadata]"),
                "must not be specified in a nested context",
            ));
        }
        for (k, p) in props {
            nested(p, &format!("{path}.properties[{k}]"), errs);
        }
    }
    if let Some(items) = o.get("items") {
        nested(items, &format!("{path}.items"), errs);
    }
    junctor_branches(o, path, false, errs);
}

/// Checks every branch of `o`'s junctors (`allOf`, `anyOf`, `oneOf`, then `not`) as a nested schema; an
/// int-or-string `anyOf` is left alone when `skip_any_of`.
fn junctor_branches(o: &serde_json::Map<String, Value>, path: &str, skip_any_of: bool, errs: &mut Vec<FieldError>) {
    for junctor in JUNCTORS {
        if junctor == "anyOf" && skip_any_of {
            continue;
        }
        let branches = o.get(junctor).and_then(Value::as_array).into_iter().flatten();
        for (i, b) in branches.enumerate() {
            nested(b, &format!("{path}.{junctor}[{i}]"), errs);
        }
    }
    if let Some(not) = o.get("not") {
        nested(not, &format!("{path}.not"), errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value) -> Vec<String> {
        let mut errs = Vec::new();
        check(&schema, "s", true, &mut errs);
        errs.iter().map(|e| format!("{}: {}", e.field, e.message)).collect()
    }

    #[test]
    fn keywords_crds_do_not_support_are_forbidden() {
        assert_eq!(
            errors(json!({"type": "object", "properties": {
                "a": {"$ref": "#/definitions/a"},
                "b": {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
                "c": {"type": "array", "items": [{"type": "string"}], "uniqueItems": true},
                "d": {"type": "object", "additionalProperties": false},
                "e": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
                "f": {"type": "null"},
            }})),
            [
                "s.properties[a].$ref: Forbidden: $ref is not supported",
                "s.properties[b].patternProperties: Forbidden: patternProperties is not supported",
                "s.properties[c].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                "s.properties[c].items: Forbidden: items must be a schema object and not an array",
                "s.properties[d].additionalProperties: Forbidden: additionalProperties cannot be set to false",
                "s.properties[e].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
                "s.properties[f].type: Forbidden: type cannot be set to null",
            ]
        );
        assert_eq!(
            errors(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            ["s.additionalProperties: Forbidden: must not be used at the root"]
        );
    }

    #[test]
    fn junctors_carry_value_validations_only() {
        assert_eq!(
            errors(json!({"type": "object", "properties": {"m": {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "oneOf": [{"required": ["a"]}, {"type": "object", "description": "d", "nullable": true,
                                               "properties": {"metadata": {"type": "object"}}}],
                "not": {"x-kubernetes-preserve-unknown-fields": true},
            }}})),
            [
                "s.properties[m].oneOf[1].type: Forbidden: must be empty to be structural",
                "s.properties[m].oneOf[1].description: Forbidden: must be empty to be structural",
                "s.properties[m].oneOf[1].nullable: Forbidden: must be false to be structural",
                "s.properties[m].oneOf[1].properties[metadata]: Forbidden: must not be specified in a nested context",
                "s.properties[m].oneOf[1].properties[metadata].type: Forbidden: must be empty to be structural",
                "s.properties[m].not.x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural",
            ]
        );
        // An int-or-string may spell its two types out.
        assert!(
            errors(
                json!({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": true,
                "anyOf": [{"type": "integer"}, {"type": "string"}]}}})
            )
            .is_empty()
        );
        assert_eq!(
            errors(
                json!({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": true,
                "x-kubernetes-preserve-unknown-fields": true}}})
            ),
            [
                r#"s.properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: "true": must be false if x-kubernetes-int-or-string is true"#
            ]
        );
    }
}
