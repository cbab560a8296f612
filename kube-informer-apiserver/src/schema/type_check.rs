//! What decoding a built-in object into kube-apiserver's Go types refuses: a value of the wrong JSON type for its
//! field (`json: cannot unmarshal object into Go struct field ConfigMap.data of type string`), an integer that is
//! not one or does not fit (`number 1.5`, `number 3000000000` for an `int32`), an int-or-string that is neither, a
//! quantity (`quantities must match the regular expression …`), a time (`parsing time …`) or base64 bytes (`illegal
//! base64 data at input byte 4`) that do not parse. The Go types are read from the catalog's OpenAPI schema of the
//! kind ([`builtin_schemas`](crate::schema::builtin_schemas)); `null` is always a zero value; unknown fields are
//! `fieldValidation`'s ([`field_validation`](crate::admission::field_validation)).
//!
//! Two decoders, two wordings, as kube-apiserver uses them:
//! - [`Decoder::Json`] (sigs.k8s.io/json, the JSON serializer): create and update bodies, JSON and merge patches'
//!   results. It reads the document in order and keeps the first type error, but stops at once at an error of a
//!   type that decodes itself (int-or-string, quantity, time), which wins.
//! - [`Decoder::Unstructured`] (apimachinery's `DefaultUnstructuredConverter`): strategic merge patches' results
//!   and server-side apply's. It stops at the first problem, with its own words (`unrecognized type: string`,
//!   `cannot restore struct from: string`).
//!
//! Named Go types the schema does not name (`v1.Protocol`, a string) are printed as their underlying type; a map of
//! quantities is `v1.ResourceList`.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::api::go_literals::{RFC3339, RFC3339_MICRO, check_base64, check_time};
use crate::api::quantity::Quantity;
use crate::api::strconv::format_float_g;
use crate::schema::field_path::FieldPath;

/// Which of kube-apiserver's decoders reads the object, and so how a problem is worded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoder {
    /// The JSON serializer (bodies, JSON and merge patches).
    Json,
    /// The unstructured converter (strategic merge patches, server-side apply).
    Unstructured,
}

/// A Go type, as the schema describes it.
#[derive(Clone, Copy, Debug)]
enum Ty<'a> {
    /// Any JSON (`runtime.RawExtension`, `metav1.FieldsV1`).
    Any,
    /// A struct: its Go name (`v1.PodSpec`) and properties.
    Struct(&'a str, &'a Map<String, Value>),
    /// A map with string keys, of the element's schema.
    Map(&'a Value),
    /// A slice, of the element's schema.
    Slice(&'a Value),
    String,
    /// `[]byte`: a base64 string.
    Bytes,
    Int32,
    Int64,
    Float64,
    Bool,
    IntOrString,
    Quantity,
    Time,
    MicroTime,
}

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";
const FIELDS_V1: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1";

/// `resource.ParseQuantity`'s error for text that is not a quantity.
const QUANTITY_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// The short Go name of a definition (`io.k8s.api.core.v1.PodSpec` → `v1.PodSpec`).
fn go_name(definition: &str) -> &str {
    let mut dots = definition.rmatch_indices('.').map(|(i, _)| i);
    match (dots.next(), dots.next()) {
        (Some(_), Some(i)) => &definition[i + 1..],
        _ => definition,
    }
}

/// One problem, where the decoder meets it.
struct Problem {
    /// Position in document order (or in the walk's order).
    at: usize,
    /// Stops the JSON decoder at once (an error of a type that decodes itself), instead of being kept while it
    /// reads on.
    stops: bool,
    message: String,
}

/// The schema's definitions and how to read them.
struct Walk<'a> {
    definitions: &'a Map<String, Value>,
    decoder: Decoder,
    /// First position of each path in the document (a body's), else none: the walk's order.
    order: Option<&'a HashMap<String, usize>>,
    /// Go's error context: the JSON field names from the root (no indexes, no map keys).
    fields: Vec<&'a str>,
    /// The innermost struct's Go name (`ConfigMap`).
    struct_name: &'a str,
    walked: usize,
    problems: Vec<Problem>,
}

/// The Go type a schema node describes.
fn resolve<'a>(definitions: &'a Map<String, Value>, schema: &'a Value) -> Ty<'a> {
    if let Some(name) = schema.get("$ref").and_then(Value::as_str) {
        return match name {
            QUANTITY => Ty::Quantity,
            INT_OR_STRING => Ty::IntOrString,
            TIME => Ty::Time,
            MICRO_TIME => Ty::MicroTime,
            RAW_EXTENSION | FIELDS_V1 => Ty::Any,
            _ => match definitions.get(name) {
                Some(def) => match def.get("properties").and_then(Value::as_object) {
                    Some(props) => Ty::Struct(go_name(name), props),
                    None => resolve(definitions, def),
                },
                None => Ty::Any,
            },
        };
    }
    if schema.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return Ty::IntOrString;
    }
    match (
        schema.get("type").and_then(Value::as_str),
        schema.get("format").and_then(Value::as_str),
    ) {
        (Some("string"), Some("byte")) => Ty::Bytes,
        (Some("string"), _) => Ty::String,
        (Some("integer"), Some("int32")) => Ty::Int32,
        (Some("integer"), _) => Ty::Int64,
        (Some("number"), _) => Ty::Float64,
        (Some("boolean"), _) => Ty::Bool,
        (Some("array"), _) => schema.get("items").map_or(Ty::Any, Ty::Slice),
        (Some("object"), _) => match (schema.get("additionalProperties"), schema.get("properties")) {
            (Some(elem), _) if elem.is_object() => Ty::Map(elem),
            (_, Some(Value::Object(props))) => Ty::Struct("struct", props),
            _ => Ty::Any,
        },
        _ if schema.get("oneOf").is_some() => Ty::Quantity,
        _ => Ty::Any,
    }
}

impl<'a> Walk<'a> {
    fn resolve(&self, schema: &'a Value) -> Ty<'a> {
        resolve(self.definitions, schema)
    }

    /// Go's `Type.String()` of a type.
    fn type_name(&self, ty: Ty<'_>) -> String {
        match ty {
            Ty::Any => "runtime.RawExtension".to_owned(),
            Ty::Struct(name, _) => name.to_owned(),
            Ty::Map(elem) => match self.resolve(elem) {
                Ty::Quantity => "v1.ResourceList".to_owned(),
                t => format!("map[string]{}", self.type_name(t)),
            },
            Ty::Slice(elem) => format!("[]{}", self.type_name(self.resolve(elem))),
            Ty::String => "string".to_owned(),
            Ty::Bytes => "[]uint8".to_owned(),
            Ty::Int32 | Ty::IntOrString => "int32".to_owned(),
            Ty::Int64 => "int64".to_owned(),
            Ty::Float64 => "float64".to_owned(),
            Ty::Bool => "bool".to_owned(),
            Ty::Quantity => "resource.Quantity".to_owned(),
            Ty::Time => "v1.Time".to_owned(),
            Ty::MicroTime => "v1.MicroTime".to_owned(),
        }
    }

    fn position(&mut self, path: &FieldPath) -> usize {
        self.walked += 1;
        self.order
            .and_then(|o| o.get(path.as_str()).copied())
            .unwrap_or(usize::MAX / 2 + self.walked)
    }

    /// Go's `UnmarshalTypeError` text, with the decoder's context (the innermost struct, the field names).
    fn type_error(&self, value: &str, type_name: &str) -> String {
        if self.fields.is_empty() {
            format!("json: cannot unmarshal {value} into Go value of type {type_name}")
        } else {
            format!(
                "json: cannot unmarshal {value} into Go struct field {}.{} of type {type_name}",
                self.struct_name,
                self.fields.join(".")
            )
        }
    }

    fn problem(&mut self, path: &FieldPath, stops: bool, message: String) {
        let at = self.position(path);
        self.problems.push(Problem { at, stops, message });
    }

    fn value(&mut self, schema: &'a Value, v: &'a Value, path: &FieldPath) {
        let ty = self.resolve(schema);
        self.typed(ty, v, path);
    }

    fn typed(&mut self, ty: Ty<'a>, v: &'a Value, path: &FieldPath) {
        if v.is_null() {
            return;
        }
        match self.decoder {
            Decoder::Json => self.json(ty, v, path),
            Decoder::Unstructured => self.unstructured(ty, v, path),
        }
    }

    fn fields_of(
        &mut self,
        name: &'a str,
        props: &'a Map<String, Value>,
        obj: &'a Map<String, Value>,
        path: &FieldPath,
    ) {
        // Go's `Type.Name()`: without its package.
        let bare = name.rsplit_once('.').map_or(name, |(_, n)| n);
        let outer = std::mem::replace(&mut self.struct_name, bare);
        for (key, child) in obj {
            // Case-sensitive, as sigs.k8s.io/json matches fields; the others are unknown fields.
            if let Some(schema) = props.get(key) {
                self.fields.push(key);
                self.value(schema, child, &path.child(key));
                self.fields.pop();
            }
        }
        self.struct_name = outer;
    }

    /// A quantity, or a time given as a string: parsed by the type itself (its error stops the JSON decoder; the
    /// converter reads it through the same JSON), with the type's own words.
    fn self_decoding(&mut self, ty: Ty<'a>, v: &'a Value, path: &FieldPath) {
        let parsed = match (ty, v) {
            (Ty::Time, Value::String(s)) => check_time(RFC3339, s),
            (Ty::MicroTime, Value::String(s)) => check_time(RFC3339_MICRO, s),
            _ => quantity(v),
        };
        if let Err(e) = parsed {
            self.problem(path, true, e);
        }
    }

    /// The JSON decoder's view of `v` as a `ty`.
    fn json(&mut self, ty: Ty<'a>, v: &'a Value, path: &FieldPath) {
        let kind = json_kind(v);
        let mismatch = |w: &mut Self| {
            let message = w.type_error(kind, &w.type_name(ty));
            w.problem(path, false, message);
        };
        match (ty, v) {
            (Ty::Any, _) => {}
            (Ty::Struct(name, props), Value::Object(obj)) => self.fields_of(name, props, obj, path),
            (Ty::Map(elem), Value::Object(obj)) => {
                for (k, child) in obj {
                    self.value(elem, child, &path.child(k));
                }
            }
            (Ty::Slice(elem), Value::Array(items)) => {
                for (i, child) in items.iter().enumerate() {
                    self.value(elem, child, &path.index(i));
                }
            }
            (Ty::Bytes, Value::String(s)) => {
                if let Err(e) = check_base64(s) {
                    self.problem(path, false, e);
                }
            }
            (Ty::Bytes, Value::Array(items)) => {
                // Go reads an array of numbers into `[]byte` as bytes.
                for (i, b) in items.iter().enumerate() {
                    let fits = b.as_u64().is_some_and(|n| n <= u64::from(u8::MAX));
                    if !fits && !b.is_null() {
                        let message = self.type_error(&number_or_kind(b), "uint8");
                        self.problem(&path.index(i), false, message);
                    }
                }
            }
            (Ty::String, Value::String(_))
            | (Ty::Float64, Value::Number(_))
            | (Ty::Bool, Value::Bool(_))
            | (Ty::IntOrString, Value::String(_)) => {}
            (Ty::Int32 | Ty::Int64, Value::Number(n)) => {
                if !fits(n, ty) {
                    let message = self.type_error(&format!("number {n}"), &self.type_name(ty));
                    self.problem(path, false, message);
                }
            }
            (Ty::IntOrString, _) => {
                // Its UnmarshalJSON reads a non-string into an int32, and its error stops the decoder.
                let ok = v.as_number().is_some_and(|n| fits(n, Ty::Int32));
                if !ok {
                    let message = self.type_error(&number_or_kind(v), "int32");
                    self.problem(path, true, message);
                }
            }
            (Ty::Quantity, _) | (Ty::Time | Ty::MicroTime, Value::String(_)) => self.self_decoding(ty, v, path),
            (Ty::Time | Ty::MicroTime, _) => {
                let message = self.type_error(kind, "string");
                self.problem(path, true, message);
            }
            _ => mismatch(self),
        }
    }

    /// The unstructured converter's view of `v` as a `ty`.
    fn unstructured(&mut self, ty: Ty<'a>, v: &'a Value, path: &FieldPath) {
        let kind = go_kind(v);
        let scalar = |w: &mut Self, ok: bool| {
            if !ok {
                let message = format!("unrecognized type: {}", scalar_kind(ty));
                w.problem(path, true, message);
            }
        };
        match (ty, v) {
            (Ty::Any, _) => {}
            (Ty::Struct(name, props), Value::Object(obj)) => self.fields_of(name, props, obj, path),
            (Ty::Struct(..), _) => self.problem(path, true, format!("cannot restore struct from: {kind}")),
            (Ty::Map(elem), Value::Object(obj)) => {
                for (k, child) in obj {
                    self.value(elem, child, &path.child(k));
                }
            }
            (Ty::Map(_), _) => self.problem(path, true, format!("cannot restore map from {kind}")),
            (Ty::Bytes, Value::String(s)) => {
                if let Err(e) = check_base64(s) {
                    self.problem(path, true, format!("error decoding from json: {e}"));
                }
            }
            (Ty::Slice(elem), Value::Array(items)) => {
                for (i, child) in items.iter().enumerate() {
                    self.value(elem, child, &path.index(i));
                }
            }
            (Ty::Slice(_) | Ty::Bytes, _) => self.problem(path, true, format!("cannot restore slice from {kind}")),
            (Ty::String, Value::Number(n)) if n.is_i64() || n.is_u64() => {
                self.problem(path, true, "cannot convert int64 to string".to_owned());
            }
            (Ty::String, _) => scalar(self, v.is_string()),
            (Ty::Bool, _) => scalar(self, v.is_boolean()),
            (Ty::Float64, _) => scalar(self, v.is_number()),
            (Ty::Int32 | Ty::Int64, Value::Number(n)) => {
                let fraction =
                    n.as_f64().is_some_and(|f| f.trunc() != f) && n.as_i64().is_none() && n.as_u64().is_none();
                if fraction {
                    let message = format!("cannot convert float64 to {}", scalar_kind(ty));
                    self.problem(path, true, message);
                } else if !fits(n, ty) {
                    // Go converts an integral float or a wider integer (dropping high bits); what is stored here is
                    // the JSON as written, which no typed client could read back: refused in the JSON decoder's
                    // words.
                    let message = format!(
                        "json: cannot unmarshal number {n} into Go value of type {}",
                        scalar_kind(ty)
                    );
                    self.problem(path, true, message);
                }
            }
            (Ty::Int32 | Ty::Int64, _) => scalar(self, false),
            // The types that decode themselves are read through their JSON, without the decoder's context.
            (Ty::IntOrString, Value::String(_)) => {}
            (Ty::IntOrString, _) => {
                if !v.as_number().is_some_and(|n| fits(n, Ty::Int32)) {
                    let message = format!(
                        "json: cannot unmarshal {} into Go value of type int32",
                        number_or_kind(v)
                    );
                    self.problem(path, true, message);
                }
            }
            (Ty::Quantity, _) | (Ty::Time | Ty::MicroTime, Value::String(_)) => self.self_decoding(ty, v, path),
            (Ty::Time | Ty::MicroTime, _) => {
                let message = format!("json: cannot unmarshal {} into Go value of type string", json_kind(v));
                self.problem(path, true, message);
            }
        }
    }
}

/// The value's JSON kind, as Go's `UnmarshalTypeError` names it.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `number 1.5` for a number (what Go names one that does not fit), the kind otherwise.
fn number_or_kind(v: &Value) -> String {
    match v {
        Value::Number(n) => format!("number {n}"),
        other => json_kind(other).to_owned(),
    }
}

/// The Go kind of a decoded JSON value (`reflect.Kind`), as the unstructured converter names it.
fn go_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "invalid",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "slice",
        Value::Object(_) => "map",
    }
}

fn scalar_kind(ty: Ty<'_>) -> &'static str {
    match ty {
        Ty::String => "string",
        Ty::Bool => "bool",
        Ty::Float64 => "float64",
        Ty::Int32 => "int32",
        _ => "int64",
    }
}

/// True when `n` is an integer (in JSON's text: no fraction, no exponent) that fits `ty`.
fn fits(n: &serde_json::Number, ty: Ty<'_>) -> bool {
    match (n.as_i64(), ty) {
        (Some(i), Ty::Int32) => i32::try_from(i).is_ok(),
        (Some(_), _) => true,
        (None, _) => false,
    }
}

/// `Quantity.UnmarshalJSON`: the text (a string's content, or the JSON itself) parsed as a quantity.
fn quantity(v: &Value) -> Result<(), String> {
    let text = match v {
        Value::String(s) => s.trim().to_owned(),
        other => other.to_string(),
    };
    match Quantity::parse(&text) {
        Some(_) => Ok(()),
        None => Err(quantity_error(&text)),
    }
}

/// Which of `ParseQuantity`'s errors a text gets: not of the quantity's shape, a numeric part that does not parse,
/// or a suffix it does not know.
fn quantity_error(text: &str) -> String {
    let b = text.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let num_start = i;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    let numeric = &text[num_start..i];
    let mut j = i;
    while j < b.len() && b"eEinumkKMGTP".contains(&b[j]) {
        j += 1;
    }
    if j < b.len() && matches!(b[j], b'+' | b'-') {
        j += 1;
    }
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
    }
    if numeric.is_empty() || j != b.len() {
        return QUANTITY_FORMAT.to_owned();
    }
    if numeric.matches('.').count() > 1 || numeric == "." {
        return "unable to parse numeric part of quantity".to_owned();
    }
    "unable to parse quantity's suffix".to_owned()
}

/// Checks `obj`, a whole object of `api_version` `kind`, as `decoder` reads it into the kind's Go type (`Ok` for a
/// kind without a schema in the catalog). `order`: the first position of each path in the request body, to find the
/// problem the JSON decoder meets first; without it, keys are read in the object's order.
pub(crate) fn check(
    api_version: &str,
    kind: &str,
    obj: &Value,
    decoder: Decoder,
    order: Option<&HashMap<String, usize>>,
) -> Result<(), String> {
    let Some((definitions, root)) = crate::schema::builtin_schemas::definition(api_version, kind) else {
        return Ok(());
    };
    let root = Value::Object(Map::from_iter([("$ref".to_owned(), Value::String(root.to_owned()))]));
    let mut walk = Walk {
        definitions,
        decoder,
        order,
        fields: Vec::new(),
        struct_name: "",
        walked: 0,
        problems: Vec::new(),
    };
    let ty = walk.resolve(&root);
    walk.typed(ty, obj, &FieldPath::default());
    let first = |stops: bool| {
        walk.problems
            .iter()
            .filter(|p| p.stops == stops)
            .min_by_key(|p| p.at)
            .map(|p| p.message.clone())
    };
    // The JSON decoder stops at an error of a type that decodes itself, which then wins over the first type error
    // it kept; the converter stops at its first problem, whichever.
    let found = match decoder {
        Decoder::Json => first(true).or_else(|| first(false)),
        Decoder::Unstructured => walk.problems.iter().min_by_key(|p| p.at).map(|p| p.message.clone()),
    };
    match found {
        Some(message) => Err(message),
        None => Ok(()),
    }
}

/// The zero value kube-apiserver answers for a `null` of this type held by a map or a slice: Go's zero of a string, a
/// number, a bool, a struct, a quantity, an int-or-string; empty bytes (its storage in etcd, protobuf, keeps no nil
/// bytes in a map); `None` for those that stay `null` (maps, slices, times, raw JSON).
fn zero(ty: Ty<'_>) -> Option<Value> {
    match ty {
        Ty::String | Ty::Bytes => Some(Value::String(String::new())),
        Ty::Int32 | Ty::Int64 | Ty::Float64 | Ty::IntOrString => Some(Value::from(0)),
        Ty::Bool => Some(Value::Bool(false)),
        Ty::Struct(..) => Some(Value::Object(Map::new())),
        Ty::Quantity => Some(Value::String("0".to_owned())),
        Ty::Any | Ty::Map(_) | Ty::Slice(_) | Ty::Time | Ty::MicroTime => None,
    }
}

fn zero_nulls_in(definitions: &Map<String, Value>, ty: Ty<'_>, v: &mut Value) {
    match (ty, v) {
        (Ty::Struct(_, props), Value::Object(obj)) => {
            for (k, child) in obj.iter_mut() {
                if let Some(schema) = props.get(k) {
                    zero_nulls_in(definitions, resolve(definitions, schema), child);
                }
            }
        }
        (Ty::Map(elem), Value::Object(obj)) => {
            let t = resolve(definitions, elem);
            for child in obj.values_mut() {
                zero_null(definitions, t, child);
            }
        }
        (Ty::Slice(elem), Value::Array(items)) => {
            let t = resolve(definitions, elem);
            for child in items {
                zero_null(definitions, t, child);
            }
        }
        _ => {}
    }
}

fn zero_null(definitions: &Map<String, Value>, ty: Ty<'_>, v: &mut Value) {
    match zero(ty) {
        Some(z) if v.is_null() => *v = z,
        _ => zero_nulls_in(definitions, ty, v),
    }
}

/// Replaces a `null` held by a map or a slice of a built-in object where its Go type holds a value (a string, a
/// number, a struct) by that value's zero, as decoding into the Go type and writing it back does (`"k": null` in a
/// ConfigMap's data is `"k": ""`): typed clients, which never see such a `null` from kube-apiserver, read the
/// object. Objects of kinds without a schema in the catalog are left alone.
pub(crate) fn zero_nulls(api_version: &str, kind: &str, obj: &mut Value) {
    let Some((definitions, root)) = crate::schema::builtin_schemas::definition(api_version, kind) else {
        return;
    };
    let Some(Value::Object(props)) = definitions.get(root).and_then(|d| d.get("properties")) else {
        return;
    };
    zero_nulls_in(definitions, Ty::Struct(go_name(root), props), obj);
}

/// Go's `%+v` of a decoded JSON value (the strategic merge patch kube-apiserver prints in its 422): `map[k:v …]` with
/// sorted keys, `[a b]`, strings bare, `<nil>`.
pub(crate) fn go_value(v: &Value) -> String {
    let mut out = String::new();
    // Iterative: the patch nests at most as deep as a body may, but a stack keeps it independent of that.
    enum Item<'v> {
        Value(&'v Value),
        Text(&'static str),
        Key(&'v str),
    }
    let mut stack = vec![Item::Value(v)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Text(t) => out.push_str(t),
            Item::Key(k) => {
                out.push_str(k);
                out.push(':');
            }
            Item::Value(v) => match v {
                Value::Null => out.push_str("<nil>"),
                Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Value::Number(n) => match n.as_i64() {
                    Some(i) => out.push_str(&i.to_string()),
                    None => out.push_str(&format_float_g(n.as_f64().unwrap_or(0.0))),
                },
                Value::String(s) => out.push_str(s),
                Value::Array(a) => {
                    out.push('[');
                    stack.push(Item::Text("]"));
                    for (i, x) in a.iter().enumerate().rev() {
                        stack.push(Item::Value(x));
                        if i > 0 {
                            stack.push(Item::Text(" "));
                        }
                    }
                }
                Value::Object(m) => {
                    out.push_str("map[");
                    stack.push(Item::Text("]"));
                    let entries: Vec<_> = m.iter().collect();
                    for (i, (k, x)) in entries.into_iter().enumerate().rev() {
                        stack.push(Item::Value(x));
                        stack.push(Item::Key(k));
                        if i > 0 {
                            stack.push(Item::Text(" "));
                        }
                    }
                }
            },
        }
    }
    out
}

/// The first position of each path in a JSON body, for [`check`].
pub(crate) fn positions(order: &[String]) -> HashMap<String, usize> {
    let mut first = HashMap::with_capacity(order.len());
    for (i, p) in order.iter().enumerate() {
        first.entry(p.clone()).or_insert(i);
    }
    first
}

#[cfg(test)]
mod tests;
