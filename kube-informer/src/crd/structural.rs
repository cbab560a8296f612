//! The rewrite of a schemars schema into a structural one (apiextensions-apiserver's `structuralschema` rules), and
//! the errors for what has no structural form.

use std::fmt;

use serde_json::{Map, Value, json};

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
const JUNCTORS: [&str; 3] = ["allOf", "anyOf", "oneOf"];

/// Keywords JSONSchemaProps knows (besides `x-kubernetes-*`). Anything else is refused or, when it only annotates,
/// dropped.
const KNOWN: &[&str] = &[
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "nullable",
    "example",
    "externalDocs",
];

#[cfg(test)]
pub(crate) const KNOWN_FOR_TESTS: &[&str] = KNOWN;

/// Annotations apiextensions has no field for: dropped, they validate nothing.
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "examples",
    "readOnly",
    "writeOnly",
    "deprecated",
    "contentEncoding",
    "contentMediaType",
    "definitions",
    "$defs",
];

/// What stays in the branches of an `anyOf`/`oneOf`/`allOf`/`not`: value validations only.
const VALUE_VALIDATIONS: &[&str] = &[
    "required",
    "enum",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "multipleOf",
    "maxProperties",
    "minProperties",
    "format",
];

/// Formats the API server knows (kube-openapi's `strfmt` registry, with int32/int64/float/double); others draw a
/// warning on every write of the definition and validate nothing.
const KNOWN_FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "binary",
    "password",
    "date",
    "date-time",
    "datetime",
    "duration",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "bsonobjectid",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
];

/// Why a CustomResourceDefinition could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CrdError {
    /// A type of the spec or status has no structural schema.
    Unstructural {
        /// The field, as a path from the object's root (`spec.mode`, `spec.items[]`, `spec.labels{}`).
        path: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// Definitions merged into one are not of one resource, or their versions clash.
    Mismatch(String),
    /// The definition could not be written as YAML.
    Yaml(String),
}

impl fmt::Display for CrdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrdError::Unstructural { path, reason } => write!(f, "{path}: no structural schema: {reason}"),
            CrdError::Mismatch(m) => write!(f, "cannot merge the definitions: {m}"),
            CrdError::Yaml(e) => write!(f, "cannot write the definition as YAML: {e}"),
        }
    }
}

impl std::error::Error for CrdError {}

fn unstructural(path: &str, reason: impl Into<String>) -> CrdError {
    CrdError::Unstructural {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Rewrites `schema` (of the value at `path`) into a structural schema.
pub(crate) fn rewrite(mut schema: Value, path: &str) -> Result<Value, CrdError> {
    node(&mut schema, path)?;
    Ok(schema)
}

/// Rewrites one schema node and, through it, everything below.
fn node(v: &mut Value, path: &str) -> Result<(), CrdError> {
    match v {
        Value::Bool(true) => {
            *v = json!({PRESERVE: true});
            return Ok(());
        }
        Value::Bool(false) => return Err(unstructural(path, "a schema that allows nothing (`false`)")),
        Value::Object(_) => {}
        _ => return Err(unstructural(path, "a schema must be an object")),
    }
    let m = v.as_object_mut().expect("checked above");
    for k in DROPPED {
        m.remove(*k);
    }
    check_keywords(m, path)?;
    normalize_type(m, path)?;
    normalize_exclusive_bounds(m);

    // Junctors first, top-down: their branches are whole schemas (Option's `null`, enum variants) that the
    // flattening reads as schemars wrote them.
    while flatten_junctors(m, path)? {}

    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for (name, child) in props.iter_mut() {
            node(child, &format!("{path}.{name}"))?;
        }
    }
    match m.get_mut("items") {
        Some(Value::Array(_)) => {
            return Err(unstructural(
                path,
                "a tuple (an array whose items differ by position); use a struct",
            ));
        }
        Some(items) => node(items, &format!("{path}[]"))?,
        None => {}
    }
    additional_properties(m, path)?;
    unique_items(m);
    normalize_format(m);
    if m.get("default") == Some(&Value::Null) && m.get("nullable") != Some(&Value::Bool(true)) {
        m.remove("default");
    }
    // What says nothing of its type (serde_json::Value, a description alone) keeps whatever it is given.
    let typed = m.contains_key("type") || flag(m, INT_OR_STRING) || flag(m, PRESERVE);
    if !typed && !JUNCTORS.iter().any(|j| m.contains_key(*j)) && !m.contains_key("not") {
        m.insert(PRESERVE.into(), Value::Bool(true));
    }
    if m.get("type").and_then(Value::as_str) == Some("array") && !m.contains_key("items") {
        return Err(unstructural(path, "an array without `items`"));
    }
    check_value_junctors(m, path)
}

fn flag(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key) == Some(&Value::Bool(true))
}

fn check_keywords(m: &Map<String, Value>, path: &str) -> Result<(), CrdError> {
    for k in m.keys() {
        if k == "$ref" {
            return Err(unstructural(
                path,
                "a recursive type (`$ref`); CRD schemas cannot refer to themselves: bound the depth, or use \
                 serde_json::Value",
            ));
        }
        if !KNOWN.contains(&k.as_str()) && !k.starts_with("x-kubernetes-") {
            return Err(unstructural(
                path,
                format!("`{k}` is not a keyword of CRD schemas (apiextensions JSONSchemaProps)"),
            ));
        }
    }
    Ok(())
}

/// `type: [T, "null"]` → `type: T, nullable: true`; other type lists are refused.
fn normalize_type(m: &mut Map<String, Value>, path: &str) -> Result<(), CrdError> {
    let Some(Value::Array(types)) = m.get("type") else {
        if m.get("type").and_then(Value::as_str) == Some("null") {
            return Err(unstructural(
                path,
                "the type `null` (the unit type `()`) has no CRD schema",
            ));
        }
        return Ok(());
    };
    let nullable = types.iter().any(|t| t == "null");
    let others: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
    match others.as_slice() {
        [one] => {
            m.insert("type".into(), one.clone());
        }
        _ => return Err(unstructural(path, format!("several types {types:?}; a field has one"))),
    }
    if nullable {
        m.insert("nullable".into(), Value::Bool(true));
    }
    Ok(())
}

/// JSON Schema's numeric `exclusiveMinimum: n` → OpenAPI v3.0's `minimum: n, exclusiveMinimum: true`.
fn normalize_exclusive_bounds(m: &mut Map<String, Value>) {
    for (exclusive, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(n @ Value::Number(_)) = m.get(exclusive).cloned() {
            m.insert(bound.into(), n);
            m.insert(exclusive.into(), Value::Bool(true));
        }
    }
}

/// A branch that only says "or null" (`Option`'s second half).
fn is_null_branch(b: &Value) -> bool {
    let Some(o) = b.as_object() else { return false };
    let null_enum = o.get("enum").is_some_and(|e| e == &json!([null]));
    let null_type = o.get("type").is_some_and(|t| t == "null");
    (null_enum || null_type)
        && o.keys()
            .all(|k| matches!(k.as_str(), "enum" | "type" | "nullable" | "description" | "title"))
}

fn type_of(b: &Map<String, Value>) -> Option<&str> {
    b.get("type").and_then(Value::as_str)
}

/// Flattens one `allOf`/`anyOf`/`oneOf` of `m` if it has one; true when something changed (call again: a merged
/// branch may bring its own).
fn flatten_junctors(m: &mut Map<String, Value>, path: &str) -> Result<bool, CrdError> {
    if let Some(Value::Array(branches)) = m.remove("allOf") {
        for b in branches {
            let Value::Object(b) = b else {
                return Err(unstructural(path, "an `allOf` branch that is not an object"));
            };
            merge_into(m, b, path)?;
        }
        return Ok(true);
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = m.get(key) else {
            continue;
        };
        let branches = branches.clone();
        // Option<T>: T, nullable.
        if branches.len() == 2 && branches.iter().any(is_null_branch) {
            m.remove(key);
            let other = branches
                .into_iter()
                .find(|b| !is_null_branch(b))
                .expect("two branches, one null");
            match other {
                Value::Object(o) => merge_into(m, o, path)?,
                Value::Bool(true) => {
                    m.insert(PRESERVE.into(), Value::Bool(true));
                }
                _ => return Err(unstructural(path, "an optional value of no type")),
            }
            m.insert("nullable".into(), Value::Bool(true));
            return Ok(true);
        }
        if branches.iter().any(is_null_branch) {
            return Err(unstructural(path, format!("`null` among several `{key}` branches")));
        }
        let objects: Vec<&Map<String, Value>> = branches.iter().filter_map(Value::as_object).collect();
        if objects.len() != branches.len() {
            return Err(unstructural(path, format!("a `{key}` branch that is not an object")));
        }
        if objects.iter().all(|b| only_value_validations(b)) {
            return Ok(false); // already structural: value validations only
        }
        // An untagged integer-or-string.
        let mut types: Vec<&str> = objects.iter().filter_map(|b| type_of(b)).collect();
        types.sort_unstable();
        if objects.len() == 2 && types == ["integer", "string"] && objects.iter().all(|b| !b.contains_key("enum")) {
            m.remove(key);
            m.remove("type");
            m.insert(INT_OR_STRING.into(), Value::Bool(true));
            return Ok(true);
        }
        // A unit-only enum: one enum of every value.
        if objects
            .iter()
            .all(|b| b.contains_key("enum") && !b.contains_key("properties"))
        {
            let ty = common_type(&objects, m, path)?;
            let mut values = Vec::new();
            for b in &objects {
                if let Some(Value::Array(vs)) = b.get("enum") {
                    values.extend(vs.iter().cloned());
                }
            }
            m.remove(key);
            if let Some(ty) = ty {
                m.insert("type".into(), ty.into());
            }
            m.insert("enum".into(), Value::Array(values));
            return Ok(true);
        }
        // Variants with data: objects whose properties join one object.
        if objects.iter().all(|b| type_of(b).is_none_or(|t| t == "object")) {
            hoist_properties(m, key, &objects, path)?;
            return Ok(true);
        }
        let mut kinds: Vec<String> = objects
            .iter()
            .map(|b| {
                type_of(b)
                    .unwrap_or(if b.contains_key("enum") { "enum" } else { "untyped" })
                    .to_owned()
            })
            .collect();
        kinds.dedup();
        return Err(unstructural(
            path,
            format!(
                "a `{key}` of {} values (an enum mixing unit and data variants, or an untagged enum of \
                 different types); a CRD field has one type: give every variant data, or use a struct of \
                 optional fields",
                kinds.join(" and ")
            ),
        ));
    }
    Ok(false)
}

fn only_value_validations(b: &Map<String, Value>) -> bool {
    b.keys().all(|k| VALUE_VALIDATIONS.contains(&k.as_str()))
}

/// The one type of enum branches (refusing two), which must agree with `m`'s own.
fn common_type<'a>(
    branches: &[&'a Map<String, Value>],
    m: &Map<String, Value>,
    path: &str,
) -> Result<Option<&'a str>, CrdError> {
    let mut ty: Option<&str> = None;
    for b in branches {
        match (ty, type_of(b)) {
            (_, None) => {}
            (None, Some(t)) => ty = Some(t),
            (Some(a), Some(t)) if a == t => {}
            (Some(a), Some(t)) => {
                return Err(unstructural(
                    path,
                    format!("an enum whose values are of types {a} and {t}"),
                ));
            }
        }
    }
    if let (Some(own), Some(t)) = (type_of(m), ty)
        && own != t
    {
        return Err(unstructural(
            path,
            format!("an enum of {t} values in a field of type {own}"),
        ));
    }
    Ok(ty)
}

/// The variants' properties become `m`'s; the junctor keeps only what each variant requires.
fn hoist_properties(
    m: &mut Map<String, Value>,
    key: &str,
    branches: &[&Map<String, Value>],
    path: &str,
) -> Result<(), CrdError> {
    if type_of(m).is_some_and(|t| t != "object") {
        return Err(unstructural(
            path,
            "variants with data in a field that is not an object",
        ));
    }
    m.insert("type".into(), "object".into());
    let mut kept = Vec::new();
    let mut empty_branch = false;
    for b in branches {
        for k in b.keys() {
            let allowed = matches!(
                k.as_str(),
                "type" | "properties" | "required" | "description" | "title" | "additionalProperties"
            );
            if !allowed {
                return Err(unstructural(
                    path,
                    format!("`{k}` on one variant of an enum; a variant may only have fields"),
                ));
            }
        }
        let mut props = b
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // An externally tagged variant's doc describes its one field (kube-rs does the same).
        if key == "oneOf"
            && props.len() == 1
            && let Some(Value::String(d)) = b.get("description")
            && let Some(Value::Object(only)) = props.values_mut().next()
        {
            only.entry("description").or_insert_with(|| Value::String(d.clone()));
        }
        let target = m
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("properties is an object");
        for (name, schema) in props {
            match target.get_mut(&name) {
                None => {
                    target.insert(name, schema);
                }
                Some(existing) if *existing == schema => {}
                Some(existing) => merge_variant_property(existing, schema, &format!("{path}.{name}"))?,
            }
        }
        match b.get("required") {
            Some(Value::Array(r)) if !r.is_empty() => kept.push(json!({"required": r})),
            _ => empty_branch = true,
        }
    }
    m.remove(key);
    // A variant that requires nothing matches every object: the junctor would say nothing (anyOf), or refuse
    // objects matching another variant too (oneOf).
    if !empty_branch && kept.len() > 1 {
        m.insert(key.into(), Value::Array(kept));
    } else if !empty_branch && let [only] = kept.as_slice() {
        let r = only["required"].clone();
        merge_required(m, &r);
    }
    Ok(())
}

/// Two variants declare one property: equal but for their enums (an internal tag: `kind: A` and `kind: B`) unite.
fn merge_variant_property(existing: &mut Value, schema: Value, path: &str) -> Result<(), CrdError> {
    let (Some(a), Some(b)) = (existing.as_object_mut(), schema.as_object()) else {
        return Err(unstructural(path, "a field two variants define differently"));
    };
    let strip = |o: &Map<String, Value>| {
        let mut o = o.clone();
        o.remove("enum");
        o.remove("description");
        o
    };
    if let (Some(Value::Array(ea)), Some(Value::Array(eb))) = (a.get("enum").cloned(), b.get("enum"))
        && strip(a) == strip(b)
    {
        let mut values = ea;
        for v in eb {
            if !values.contains(v) {
                values.push(v.clone());
            }
        }
        a.insert("enum".into(), Value::Array(values));
        return Ok(());
    }
    Err(unstructural(
        path,
        "two variants of an enum give this field different types; a CRD field has one type",
    ))
}

/// Merges a schema into `m` (an `allOf` branch, or `T` of an `Option<T>`): properties and `required` unite, `m`'s
/// own description and default stay, anything else must agree.
fn merge_into(m: &mut Map<String, Value>, b: Map<String, Value>, path: &str) -> Result<(), CrdError> {
    for (k, v) in b {
        match k.as_str() {
            "properties" => {
                let Value::Object(props) = v else { continue };
                let target = m
                    .entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .expect("properties is an object");
                for (name, schema) in props {
                    match target.get(&name) {
                        Some(existing) if *existing != schema => {
                            return Err(unstructural(
                                &format!("{path}.{name}"),
                                "a field defined twice, differently",
                            ));
                        }
                        _ => {
                            target.insert(name, schema);
                        }
                    }
                }
            }
            "required" => merge_required(m, &v),
            "x-kubernetes-validations" => {
                let Value::Array(rules) = v else { continue };
                if let Value::Array(own) = m.entry(k).or_insert_with(|| Value::Array(Vec::new())) {
                    own.extend(rules);
                }
            }
            "description" | "title" | "default" | "example" => {
                m.entry(k).or_insert(v);
            }
            _ => match m.get(&k) {
                None => {
                    m.insert(k, v);
                }
                Some(own) if *own == v => {}
                Some(own) => {
                    return Err(unstructural(path, format!("`{k}` is both {own} and {v}")));
                }
            },
        }
    }
    check_keywords(m, path)?;
    normalize_type(m, path)
}

fn merge_required(m: &mut Map<String, Value>, r: &Value) {
    let Value::Array(names) = r else { return };
    if let Value::Array(own) = m.entry("required").or_insert_with(|| Value::Array(Vec::new())) {
        for n in names {
            if !own.contains(n) {
                own.push(n.clone());
            }
        }
    }
}

/// `additionalProperties`: `true` (a free-form map, a flattened map) preserves unknown fields; `false` goes (the
/// server prunes unknown fields); a schema beside `properties` (a flattened typed map) preserves too.
fn additional_properties(m: &mut Map<String, Value>, path: &str) -> Result<(), CrdError> {
    let Some(ap) = m.remove("additionalProperties") else {
        return Ok(());
    };
    let has_properties = m
        .get("properties")
        .is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty()));
    let free = match &ap {
        Value::Bool(true) => true,
        Value::Bool(false) => return Ok(()),
        Value::Object(o) => o.is_empty() || has_properties,
        _ => {
            return Err(unstructural(
                path,
                "`additionalProperties` must be a schema or a boolean",
            ));
        }
    };
    if free {
        if type_of(m).is_some_and(|t| t != "object") {
            return Err(unstructural(path, "a map in a field that is not an object"));
        }
        m.insert("type".into(), "object".into());
        m.insert(PRESERVE.into(), Value::Bool(true));
        return Ok(());
    }
    let mut ap = ap;
    node(&mut ap, &format!("{path}{{}}"))?;
    m.insert("additionalProperties".into(), ap);
    Ok(())
}

/// `uniqueItems: true` is forbidden (quadratic); a list of scalars becomes a set list, whose duplicates the
/// server refuses too.
fn unique_items(m: &mut Map<String, Value>) {
    if m.remove("uniqueItems") != Some(Value::Bool(true)) || m.contains_key("x-kubernetes-list-type") {
        return;
    }
    let scalar = m
        .get("items")
        .and_then(Value::as_object)
        .and_then(|i| type_of(i))
        .is_some_and(|t| matches!(t, "string" | "integer" | "number" | "boolean"));
    if scalar {
        m.insert("x-kubernetes-list-type".into(), "set".into());
    }
}

/// schemars' integer formats (`uint8`, `int16`, `uint64`…) become the API server's `int32`/`int64` (the bounds
/// schemars adds stay); formats it does not know go.
fn normalize_format(m: &mut Map<String, Value>) {
    let Some(format) = m.get("format").and_then(Value::as_str) else {
        return;
    };
    let mapped = match format {
        "int8" | "int16" | "uint8" | "uint16" => Some("int32"),
        "uint32" | "uint64" | "uint" | "int" | "int128" | "uint128" | "usize" | "isize" => Some("int64"),
        f if KNOWN_FORMATS.contains(&f) => return,
        _ => None,
    };
    match mapped {
        Some(f) => {
            m.insert("format".into(), f.into());
        }
        None => {
            m.remove("format");
        }
    }
}

/// What junctors remain may only validate values.
fn check_value_junctors(m: &Map<String, Value>, path: &str) -> Result<(), CrdError> {
    for key in JUNCTORS {
        let Some(branches) = m.get(key) else { continue };
        let Some(branches) = branches.as_array() else {
            return Err(unstructural(path, format!("`{key}` must be a list")));
        };
        for b in branches {
            if !b.as_object().is_some_and(only_value_validations) {
                return Err(unstructural(
                    path,
                    format!("a `{key}` branch with more than value validations: {b}"),
                ));
            }
        }
    }
    if let Some(not) = m.get("not")
        && !not.as_object().is_some_and(only_value_validations)
    {
        return Err(unstructural(
            path,
            format!("a `not` with more than value validations: {not}"),
        ));
    }
    Ok(())
}
