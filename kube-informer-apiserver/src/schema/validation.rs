//! Validation of a value against a structural schema, with the field errors kube-apiserver answers for custom
//! resources (kube-openapi's validator as apiextensions-apiserver maps its results to `field.Error`s): types,
//! `nullable`, `x-kubernetes-int-or-string`, `required`, `enum`, string length, `pattern` (RE2 syntax, as Go's),
//! formats, numeric bounds and `multipleOf`, item and property counts, `uniqueItems`, and the junctors `allOf`,
//! `anyOf`, `oneOf`, `not`. List types are checked apart, after it ([`listtype`](super::listtype)), and so are CEL
//! rules (`x-kubernetes-validations`, [`cel`](super::cel)). An update is validated with ratcheting, as
//! kube-apiserver 1.33+ does ([`validate_update`]): a value equal to the one it replaces (correlated by
//! [`ratcheting`](super::ratcheting)) keeps its errors to itself.

use serde_json::{Map, Value};

use super::field_path::FieldPath;
use super::structural::SchemaNode;
use crate::api::errors::FieldError;

/// Validates `x` against `schema`; the errors in kube-apiserver's order (a node's own checks, then its children).
pub(crate) fn validate(x: &Value, schema: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    node(x, schema, &FieldPath::default(), &mut out, None);
    out
}

/// [`validate`] for an update of `old`: a node equal to its correlated old value is not validated (nor what is
/// below it), as kube-apiserver's validation ratcheting drops such a node's errors.
pub(crate) fn validate_update(x: &Value, schema: &Value, old: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    node(x, schema, &FieldPath::default(), &mut out, Some(old));
    out
}

/// Go's `%v`/`%q` rendering of a bad value in a field error.
pub(super) fn render(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => number_text(n),
        Value::Bool(b) => b.to_string(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

fn number_text(n: &serde_json::Number) -> String {
    if n.is_f64() {
        let f = n.as_f64().unwrap_or(0.0);
        format!("{f}")
    } else {
        n.to_string()
    }
}

/// A bound (minimum, maximum, multipleOf) as Go's `%v` prints a float64.
fn bound_text(f: f64) -> String {
    format!("{f}")
}

/// The JSON type name kube-openapi reports for a value (integers are numbers without a fraction).
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

fn invalid(path: &FieldPath, value: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: path_or_nil(path),
        message: format!("Invalid value: {value}: {detail}"),
    }
}

fn path_or_nil(path: &FieldPath) -> String {
    if path.as_str().is_empty() {
        "<nil>".to_owned()
    } else {
        path.as_str().to_owned()
    }
}

/// `name` as kube-openapi prints it in a message (`.` for the root).
fn name(path: &FieldPath) -> &str {
    if path.as_str().is_empty() { "." } else { path.as_str() }
}

fn type_matches(declared: &str, v: &Value) -> bool {
    match (declared, v) {
        ("object", Value::Object(_)) | ("array", Value::Array(_)) | ("string", Value::String(_)) => true,
        ("boolean", Value::Bool(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => is_integer(n),
        _ => false,
    }
}

fn node(x: &Value, s: &Value, path: &FieldPath, out: &mut Vec<FieldError>, old: Option<&Value>) {
    if !s.is_object() || old == Some(x) {
        return;
    }
    if x.is_null() && s.nullable() {
        return;
    }
    // Types: `type`, or integer-or-string.
    let declared: Option<Vec<&str>> = if s.flag("x-kubernetes-int-or-string") {
        Some(vec!["integer", "string"])
    } else {
        match s.keyword("type") {
            Some(Value::String(t)) if !t.is_empty() => Some(vec![t.as_str()]),
            Some(Value::Array(ts)) if !ts.is_empty() => Some(ts.iter().filter_map(Value::as_str).collect()),
            _ => None,
        }
    };
    if let Some(types) = &declared
        && !types.iter().any(|t| type_matches(t, x))
    {
        let actual = type_name(x);
        out.push(FieldError {
            reason: "FieldValueTypeInvalid",
            field: path_or_nil(path),
            message: format!(
                "Invalid value: {actual:?}: {} in body must be of type {}: {actual:?}",
                name(path),
                types.join(",")
            ),
        });
    }
    if let Some(Value::Array(allowed)) = s.keyword("enum")
        && !allowed.iter().any(|a| a == x)
    {
        let list: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => format!("{s:?}"),
                other => format!("{:?}", serde_json::to_string(other).unwrap_or_default()),
            })
            .collect();
        out.push(FieldError {
            reason: "FieldValueNotSupported",
            field: path_or_nil(path),
            message: format!(
                "Unsupported value: {}: supported values: {}",
                render(x),
                list.join(", ")
            ),
        });
    }
    match x {
        Value::String(text) => string(text, s, path, out),
        Value::Number(n) => number(n, s, path, out),
        Value::Array(items) => array(items, s, path, out, old),
        Value::Object(map) => object(map, s, path, out, old),
        _ => {}
    }
    junctors(x, s, path, out);
}

fn count(s: &Value, key: &str) -> Option<u64> {
    s.keyword(key).and_then(Value::as_u64)
}

fn string(text: &str, s: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    let chars = text.chars().count() as u64;
    if let Some(max) = count(s, "maxLength").filter(|m| chars > *m) {
        out.push(FieldError {
            reason: "FieldValueTooLong",
            field: path_or_nil(path),
            message: format!(
                "Too long: may not be more than {max} {}",
                if max == 1 { "byte" } else { "bytes" }
            ),
        });
    }
    if let Some(min) = count(s, "minLength").filter(|m| chars < *m) {
        let detail = format!("{} in body should be at least {min} chars long", name(path));
        out.push(invalid(path, &format!("{text:?}"), &detail));
    }
    if let Some(pattern) = s.keyword("pattern").and_then(Value::as_str) {
        match regex_lite::Regex::new(pattern) {
            Ok(re) if re.is_match(text) => {}
            Ok(_) => {
                let detail = format!("{} in body should match '{pattern}'", name(path));
                out.push(invalid(path, &format!("{text:?}"), &detail));
            }
            Err(e) => {
                let detail = format!(
                    "{} in body should match '{pattern}, but pattern is invalid: {e}'",
                    name(path)
                );
                out.push(invalid(path, &format!("{text:?}"), &detail));
            }
        }
    }
    if let Some(format) = s.keyword("format").and_then(Value::as_str)
        && !format_ok(format, text)
    {
        let detail = format!("{} in body must be of type {format}: {text:?}", name(path));
        out.push(invalid(path, &format!("{text:?}"), &detail));
    }
}

fn number(n: &serde_json::Number, s: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    let Some(v) = n.as_f64() else {
        return;
    };
    let shown = number_text(n);
    let flag = |k: &str| s.flag(k);
    if let Some(max) = s.keyword("maximum").and_then(Value::as_f64) {
        let exclusive = flag("exclusiveMaximum");
        if v > max || (exclusive && v == max) {
            let how = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            let detail = format!("{} in body should be {how} {}", name(path), bound_text(max));
            out.push(invalid(path, &shown, &detail));
        }
    }
    if let Some(min) = s.keyword("minimum").and_then(Value::as_f64) {
        let exclusive = flag("exclusiveMinimum");
        if v < min || (exclusive && v == min) {
            let how = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let detail = format!("{} in body should be {how} {}", name(path), bound_text(min));
            out.push(invalid(path, &shown, &detail));
        }
    }
    if let Some(m) = s.keyword("multipleOf").and_then(Value::as_f64).filter(|m| *m > 0.0) {
        let q = v / m;
        if (q - q.round()).abs() > 1e-9 {
            let detail = format!("{} in body should be a multiple of {}", name(path), bound_text(m));
            out.push(invalid(path, &shown, &detail));
        }
    }
    if s.keyword("type").and_then(Value::as_str) == Some("integer") && is_integer(n) {
        let range = match s.keyword("format").and_then(Value::as_str) {
            Some("int32") => Some((f64::from(i32::MIN), f64::from(i32::MAX), "int32")),
            _ => None,
        };
        if let Some((lo, hi, f)) = range.filter(|(lo, hi, _)| v < *lo || v > *hi) {
            let _ = (lo, hi);
            out.push(FieldError {
                reason: "FieldValueInvalid",
                field: "<nil>".into(),
                message: format!(
                    "Invalid value: \"\": Checked value must be of type integer with format {f} in {}",
                    name(path)
                ),
            });
        }
    }
}

fn array(items: &[Value], s: &Value, path: &FieldPath, out: &mut Vec<FieldError>, old: Option<&Value>) {
    let len = items.len() as u64;
    if let Some(max) = count(s, "maxItems").filter(|m| len > *m) {
        out.push(FieldError {
            reason: "FieldValueTooMany",
            field: path_or_nil(path),
            message: format!(
                "Too many: {len}: must have at most {max} {}",
                if max == 1 { "item" } else { "items" }
            ),
        });
    }
    if let Some(min) = count(s, "minItems").filter(|m| len < *m) {
        let detail = format!("{} in body should have at least {min} items", name(path));
        out.push(invalid(path, &len.to_string(), &detail));
    }
    if s.flag("uniqueItems") && items.iter().enumerate().any(|(i, a)| items[..i].contains(a)) {
        let detail = format!("{} in body shouldn't contain duplicates", name(path));
        out.push(invalid(path, "\"\"", &detail));
    }
    if let Some(item_schema) = s.items() {
        for (i, v) in items.iter().enumerate() {
            let old_item = super::ratcheting::item(old, s, v);
            node(v, item_schema, &path.index(i), out, old_item);
        }
    }
}

fn object(map: &Map<String, Value>, s: &Value, path: &FieldPath, out: &mut Vec<FieldError>, old: Option<&Value>) {
    let len = map.len() as u64;
    if let Some(max) = count(s, "maxProperties").filter(|m| len > *m) {
        out.push(FieldError {
            reason: "FieldValueTooMany",
            field: path_or_nil(path),
            message: format!(
                "Too many: {len}: must have at most {max} {}",
                if max == 1 { "item" } else { "items" }
            ),
        });
    }
    if let Some(min) = count(s, "minProperties").filter(|m| len < *m) {
        let detail = format!("{} in body should have at least {min} properties", name(path));
        out.push(invalid(path, &len.to_string(), &detail));
    }
    if let Some(Value::Array(required)) = s.keyword("required") {
        for r in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(r) {
                out.push(FieldError {
                    reason: "FieldValueRequired",
                    field: path.child(r).as_str().to_owned(),
                    message: "Required value".into(),
                });
            }
        }
    }
    let props = s.properties();
    let additional = s.additional().flatten();
    for (k, v) in map {
        let old_v = super::ratcheting::field(old, s, k);
        if let Some(p) = props.and_then(|p| p.get(k)) {
            node(v, p, &path.child(k), out, old_v);
        } else if let Some(values) = additional {
            node(v, values, &path.child(k), out, old_v);
        }
    }
}

fn junctor_error(path: &FieldPath, what: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: "<nil>".into(),
        message: format!("Invalid value: \"\": {:?} {what}", name(path)),
    }
}

fn junctors(x: &Value, s: &Value, path: &FieldPath, out: &mut Vec<FieldError>) {
    let sub = |schema: &Value| {
        let mut errs = Vec::new();
        node(x, schema, path, &mut errs, None);
        errs
    };
    if let Some(Value::Array(all)) = s.keyword("allOf") {
        let results: Vec<Vec<FieldError>> = all.iter().map(sub).collect();
        let valid = results.iter().filter(|e| e.is_empty()).count();
        if valid < results.len() {
            let how = if valid == 0 {
                ". None validated".to_owned()
            } else {
                String::new()
            };
            out.push(junctor_error(
                path,
                &format!("must validate all the schemas (allOf){how}"),
            ));
            out.extend(results.into_iter().flatten());
        }
    }
    if let Some(Value::Array(any)) = s.keyword("anyOf") {
        let results: Vec<Vec<FieldError>> = any.iter().map(sub).collect();
        if !results.iter().any(Vec::is_empty) {
            // kube-openapi reports the first alternative's errors.
            out.push(junctor_error(path, "must validate at least one schema (anyOf)"));
            out.extend(results.into_iter().next().unwrap_or_default());
        }
    }
    if let Some(Value::Array(one)) = s.keyword("oneOf") {
        let results: Vec<Vec<FieldError>> = one.iter().map(sub).collect();
        match results.iter().filter(|e| e.is_empty()).count() {
            1 => {}
            0 => {
                out.push(junctor_error(
                    path,
                    "must validate one and only one schema (oneOf). Found none valid",
                ));
                out.extend(results.into_iter().flatten());
            }
            _ => out.push(junctor_error(path, "must validate one and only one schema (oneOf)")),
        }
    }
    if let Some(not) = s.keyword("not").filter(|n| n.is_object())
        && sub(not).is_empty()
    {
        out.push(junctor_error(path, "must not validate the schema (not)"));
    }
}

/// The string formats kube-apiserver checks for CRDs; unknown formats pass.
pub(super) fn format_ok(format: &str, v: &str) -> bool {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    let date = |d: &str| {
        let p: Vec<&str> = d.split('-').collect();
        p.len() == 3 && digits(p[0], 4) && digits(p[1], 2) && digits(p[2], 2)
    };
    match format.replace('-', "").as_str() {
        "date" => date(v),
        "datetime" => kube_informer::object::time::parse_rfc3339(v).is_some(),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => {
            let s: String = v.chars().filter(|c| *c != '-').collect();
            s.len() == 32 && hex(&s)
        }
        "byte" => crate::api::util::base64_std_decode(v).is_some() || v.is_empty(),
        "ipv4" => v.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => v.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => v.split_once('/').is_some_and(|(ip, bits)| {
            ip.parse::<std::net::IpAddr>().is_ok() && bits.parse::<u8>().is_ok_and(|b| b <= 128)
        }),
        "hostname" => {
            !v.is_empty()
                && v.len() <= 253
                && v.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                })
        }
        "k8sshortname" => crate::api::names::validate_name(crate::api::names::NameRule::Label, v).is_ok(),
        "k8slongname" => crate::api::names::validate_name(crate::api::names::NameRule::Subdomain, v).is_ok(),
        "mac" => {
            let parts: Vec<&str> = v.split([':', '-']).collect();
            matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| p.len() == 2 && hex(p))
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    //! Cases from apiextensions-apiserver's `TestValidateCustomResource`.
    use super::*;
    use serde_json::json;

    fn errors(x: Value, schema: &Value) -> Vec<String> {
        validate(&x, schema)
            .into_iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect()
    }

    fn field(s: Value) -> Value {
        json!({"type": "object", "properties": {"field": s}})
    }

    #[test]
    fn types_and_nullable() {
        let strict = field(json!({"type": "object"}));
        assert!(errors(json!({}), &strict).is_empty());
        assert!(errors(json!({"field": {}}), &strict).is_empty());
        for (v, t) in [
            (json!("foo"), "string"),
            (json!(42), "integer"),
            (json!(true), "boolean"),
            (json!(1.2), "number"),
            (json!([]), "array"),
            (json!(null), "null"),
        ] {
            assert_eq!(
                errors(json!({"field": v}), &strict),
                [format!(
                    "field: Invalid value: \"{t}\": field in body must be of type object: \"{t}\""
                )]
            );
        }
        let nullable = field(json!({"type": "object", "nullable": true}));
        assert!(errors(json!({"field": null}), &nullable).is_empty());
        assert_eq!(errors(json!({"field": 42}), &nullable).len(), 1);
        let untyped = field(json!({"nullable": true}));
        for v in [
            json!(null),
            json!("foo"),
            json!(42),
            json!(true),
            json!(1.2),
            json!([]),
            json!({}),
        ] {
            assert!(errors(json!({"field": v}), &untyped).is_empty());
        }
    }

    #[test]
    fn int_or_string() {
        let s = field(json!({"x-kubernetes-int-or-string": true}));
        assert!(errors(json!({"field": 42}), &s).is_empty());
        assert!(errors(json!({"field": "foo"}), &s).is_empty());
        for (v, t) in [
            (json!(null), "null"),
            (json!(true), "boolean"),
            (json!(1.2), "number"),
            (json!({}), "object"),
        ] {
            assert_eq!(
                errors(json!({"field": v}), &s),
                [format!(
                    "field: Invalid value: \"{t}\": field in body must be of type integer,string: \"{t}\""
                )]
            );
        }
        let nullable = field(json!({"x-kubernetes-int-or-string": true, "nullable": true}));
        assert!(errors(json!({"field": null}), &nullable).is_empty());
        let any_of = field(json!({"x-kubernetes-int-or-string": true, "nullable": true,
                                  "anyOf": [{"type": "integer"}, {"type": "string"}]}));
        assert_eq!(
            errors(json!({"field": true}), &any_of),
            [
                r#"field: Invalid value: "boolean": field in body must be of type integer,string: "boolean""#,
                r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
                r#"field: Invalid value: "boolean": field in body must be of type integer: "boolean""#,
            ]
        );
    }

    #[test]
    fn required_and_enum() {
        let s = json!({"type": "object", "required": ["field"], "properties": {
            "field": {"type": "object", "required": ["nested"], "properties": {"nested": {}}}}});
        assert_eq!(errors(json!({"test": "a"}), &s), ["field: Required value"]);
        assert_eq!(errors(json!({"field": {}}), &s), ["field.nested: Required value"]);
        let e = json!({"type": "object", "properties": {"field": {"type": "object",
            "required": ["nestedint", "nestedstring"], "properties": {
                "nestedint": {"type": "integer", "enum": [1, 2]},
                "nestedstring": {"type": "string", "enum": ["a", "b"]}}}}});
        assert_eq!(
            errors(json!({"field": {}}), &e),
            ["field.nestedint: Required value", "field.nestedstring: Required value"]
        );
        assert_eq!(
            errors(json!({"field": {"nestedint": "x", "nestedstring": true}}), &e),
            [
                r#"field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string""#,
                r#"field.nestedint: Unsupported value: "x": supported values: "1", "2""#,
                r#"field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean""#,
                r#"field.nestedstring: Unsupported value: true: supported values: "a", "b""#,
            ]
        );
    }

    #[test]
    fn counts_lengths_and_formats() {
        let s = json!({"type": "object", "properties": {
            "fieldX": {"type": "object", "maxProperties": 2},
            "list": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
            "text": {"type": "string", "maxLength": 2},
            "long": {"type": "string", "format": "k8s-long-name"},
            "short": {"type": "string", "format": "k8s-short-name"},
            "cron": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
            "bad": {"type": "string", "pattern": "+"},
            "n": {"type": "integer", "minimum": 1, "maximum": 10, "multipleOf": 2},
        }});
        assert_eq!(
            errors(json!({"fieldX": {"a": true, "b": true, "c": true}}), &s),
            ["fieldX: Too many: 3: must have at most 2 items"]
        );
        assert_eq!(
            errors(json!({"list": ["a", "b", "c"]}), &s),
            ["list: Too many: 3: must have at most 2 items"]
        );
        assert_eq!(
            errors(json!({"list": []}), &s),
            ["list: Invalid value: 0: list in body should have at least 1 items"]
        );
        assert_eq!(
            errors(json!({"text": "abc"}), &s),
            ["text: Too long: may not be more than 2 bytes"]
        );
        assert_eq!(
            errors(json!({"long": "a.-"}), &s),
            [r#"long: Invalid value: "a.-": long in body must be of type k8s-long-name: "a.-""#]
        );
        assert_eq!(
            errors(json!({"short": "a-"}), &s),
            [r#"short: Invalid value: "a-": short in body must be of type k8s-short-name: "a-""#]
        );
        assert!(errors(json!({"cron": "* * * * */5"}), &s).is_empty());
        assert_eq!(
            errors(json!({"cron": "x"}), &s),
            [r#"cron: Invalid value: "x": cron in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#]
        );
        assert!(
            errors(json!({"bad": "foo"}), &s)[0]
                .starts_with(r#"bad: Invalid value: "foo": bad in body should match '+, but pattern is invalid"#)
        );
        assert_eq!(
            errors(json!({"n": 0}), &s),
            ["n: Invalid value: 0: n in body should be greater than or equal to 1"]
        );
        assert_eq!(
            errors(json!({"n": 11}), &s),
            [
                "n: Invalid value: 11: n in body should be less than or equal to 10",
                "n: Invalid value: 11: n in body should be a multiple of 2",
            ]
        );
    }

    // Cases after apiextensions-apiserver's ratcheting tests (`validation/ratcheting_test.go`).
    #[test]
    fn updates_ratchet_unchanged_values() {
        let s = json!({"type": "object", "properties": {
            "small": {"type": "string", "maxLength": 2},
            "n": {"type": "integer", "minimum": 5},
            "m": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^a"}},
            "keyed": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                      "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer", "maximum": 3}}}},
            "atomic": {"type": "array", "items": {"type": "integer", "maximum": 3}},
        }});
        let update = |new: Value, old: Value| -> Vec<String> {
            validate_update(&new, &s, &old)
                .into_iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect()
        };
        let old = json!({"small": "toolong", "n": 1, "m": {"x": "bad"}, "keyed": [{"k": "a", "v": 9}], "atomic": [9]});
        // Nothing changed: nothing reported.
        assert!(update(old.clone(), old.clone()).is_empty());
        // Other fields changed: the unchanged invalid ones are kept.
        let mut other = old.clone();
        other["extra"] = json!(1);
        assert!(update(other, old.clone()).is_empty());
        // A changed invalid value is reported; a map key's value and a map-list item are correlated by key.
        let changed = json!({"small": "toolonger", "n": 2, "m": {"x": "bad", "y": "bad"},
                             "keyed": [{"k": "b", "v": 8}, {"k": "a", "v": 9}], "atomic": [9, 9]});
        assert_eq!(
            update(changed, old.clone()),
            [
                "atomic[0]: Invalid value: 9: atomic[0] in body should be less than or equal to 3",
                "atomic[1]: Invalid value: 9: atomic[1] in body should be less than or equal to 3",
                "keyed[0].v: Invalid value: 8: keyed[0].v in body should be less than or equal to 3",
                r#"m.y: Invalid value: "bad": m.y in body should match '^a'"#,
                "n: Invalid value: 2: n in body should be greater than or equal to 5",
                "small: Too long: may not be more than 2 bytes",
            ]
        );
        // A create is validated whole.
        assert_eq!(validate(&old, &s).len(), 5);
    }
}
