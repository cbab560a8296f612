//! CEL types of a structural schema (apiextensions-apiserver's `SchemaDeclType`): objects with their properties as
//! fields (names escaped as `cel.Escape` escapes them), maps of `additionalProperties`, lists, `int-or-string` and
//! `preserve-unknown-fields` as `dyn`, string formats as bytes, durations and timestamps. Each collection carries
//! its largest size — the schema's `maxLength`, `maxItems`, `maxProperties`, or what a request of the largest size
//! kube-apiserver accepts could hold — for cost estimation.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value as Json;

/// kube-apiserver's largest request (`MaxRequestSizeBytes`): the bound of what a schema leaves unbounded.
pub(crate) const MAX_REQUEST_SIZE: u64 = 3 * 1024 * 1024;

/// An object type: its fields by escaped name.
#[derive(Debug, Default)]
pub(crate) struct Object {
    pub(crate) fields: BTreeMap<String, Type>,
    /// Escaped name → property name.
    pub(crate) names: BTreeMap<String, String>,
}

/// A CEL type, with the size bounds cost estimation uses.
#[derive(Clone, Debug)]
pub(crate) enum Type {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    Duration,
    Timestamp,
    /// The type of type values.
    Kind,
    String {
        max: u64,
    },
    Bytes {
        max: u64,
    },
    List {
        elem: Box<Type>,
        max: u64,
    },
    Map {
        key: Box<Type>,
        value: Box<Type>,
        max: u64,
    },
    Object(Arc<Object>),
    Optional(Box<Type>),
    /// A Kubernetes library type, by its CEL name (`kubernetes.Quantity`, `net.IP`, …).
    Opaque(&'static str),
}

impl Type {
    pub(crate) fn string() -> Type {
        Type::String {
            max: MAX_REQUEST_SIZE - 2,
        }
    }

    pub(crate) fn list(elem: Type) -> Type {
        let max = unbounded_items(min_serialized_size(&elem));
        Type::List {
            elem: Box::new(elem),
            max,
        }
    }

    pub(crate) fn map(key: Type, value: Type) -> Type {
        let max = unbounded_items(min_serialized_size(&value) + 4);
        Type::Map {
            key: Box::new(key),
            value: Box::new(value),
            max,
        }
    }

    /// The name cel-go prints in its messages.
    pub(crate) fn name(&self) -> String {
        match self {
            Type::Dyn => "dyn".into(),
            Type::Null => "null_type".into(),
            Type::Bool => "bool".into(),
            Type::Int => "int".into(),
            Type::Uint => "uint".into(),
            Type::Double => "double".into(),
            Type::Duration => "google.protobuf.Duration".into(),
            Type::Timestamp => "google.protobuf.Timestamp".into(),
            Type::Kind => "type".into(),
            Type::String { .. } => "string".into(),
            Type::Bytes { .. } => "bytes".into(),
            Type::List { elem, .. } => format!("list({})", elem.name()),
            Type::Map { key, value, .. } => format!("map({}, {})", key.name(), value.name()),
            Type::Object(_) => "object".into(),
            Type::Optional(t) => format!("optional_type({})", t.name()),
            Type::Opaque(n) => (*n).into(),
        }
    }

    pub(crate) fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn)
    }

    /// Whether a value of `self` may be passed where `want` is declared (dyn on either side fits).
    pub(crate) fn fits(&self, want: &Type) -> bool {
        use Type::*;
        match (self, want) {
            (Dyn, _) | (_, Dyn) => true,
            (Null, Null | Optional(_)) => true,
            (List { elem: a, .. }, List { elem: b, .. }) => a.fits(b),
            (Map { key: k1, value: v1, .. }, Map { key: k2, value: v2, .. }) => k1.fits(k2) && v1.fits(v2),
            (Object(_), Object(_)) => true,
            (Optional(a), Optional(b)) => a.fits(b),
            (Opaque(a), Opaque(b)) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(want),
        }
    }

    /// The largest size of a value of this type (characters, bytes, items), for cost estimation.
    pub(crate) fn max_size(&self) -> u64 {
        match self {
            Type::String { max } | Type::Bytes { max } | Type::List { max, .. } | Type::Map { max, .. } => *max,
            Type::Dyn | Type::Object(_) => MAX_REQUEST_SIZE,
            _ => 1,
        }
    }
}

/// The smallest JSON a value of the type takes, as kube's `EstimateMinSizeJSON`.
fn min_serialized_size(t: &Type) -> u64 {
    match t {
        Type::String { .. } | Type::Bytes { .. } | Type::Duration | Type::Timestamp => 2,
        Type::Bool => 4,
        Type::Int | Type::Uint | Type::Double => 1,
        Type::List { .. } | Type::Map { .. } | Type::Object(_) => 2,
        _ => 1,
    }
}

/// How many items of at least `min` bytes (and a separator) a request of the largest size holds.
fn unbounded_items(min: u64) -> u64 {
    (MAX_REQUEST_SIZE - 2) / (min + 1)
}

/// CEL's reserved words, escaped as `__word__` when they name a property.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// `cel.Escape`: a property name as CEL names the field, `None` when it cannot be one.
pub(crate) fn escape(name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

fn flag(s: &Json, key: &str) -> bool {
    s.get(key).and_then(Json::as_bool) == Some(true)
}

fn bound(s: &Json, key: &str) -> Option<u64> {
    s.get(key).and_then(Json::as_u64)
}

/// The CEL type of a schema node; `resource_root` adds `apiVersion`, `kind` and `metadata` (its `name` and
/// `generateName`) as a resource's root or an embedded resource has them. `None` where rules cannot be declared.
pub(crate) fn of_schema(s: &Json, resource_root: bool) -> Option<Type> {
    if flag(s, "x-kubernetes-int-or-string") {
        return Some(Type::Dyn);
    }
    let ty = s.get("type").and_then(Json::as_str).unwrap_or("");
    match ty {
        "object" | "" if s.get("properties").is_some() || s.get("additionalProperties").is_some() || ty == "object" => {
            object(s, resource_root || flag(s, "x-kubernetes-embedded-resource"))
        }
        "array" => {
            let elem = of_schema(s.get("items")?, false)?;
            let max = bound(s, "maxItems").unwrap_or_else(|| unbounded_items(min_serialized_size(&elem)));
            Some(Type::List {
                elem: Box::new(elem),
                max,
            })
        }
        "string" => {
            let max = bound(s, "maxLength")
                .or_else(|| {
                    s.get("enum").and_then(Json::as_array).map(|e| {
                        e.iter()
                            .filter_map(Json::as_str)
                            .map(|x| x.chars().count() as u64)
                            .max()
                            .unwrap_or(0)
                    })
                })
                .unwrap_or(MAX_REQUEST_SIZE - 2);
            Some(match s.get("format").and_then(Json::as_str) {
                Some("byte") => Type::Bytes { max },
                Some("duration") => Type::Duration,
                Some("date") | Some("date-time") => Type::Timestamp,
                _ => Type::String { max },
            })
        }
        "boolean" => Some(Type::Bool),
        "number" => Some(Type::Double),
        "integer" => Some(Type::Int),
        _ if flag(s, "x-kubernetes-preserve-unknown-fields") => Some(Type::Dyn),
        _ => None,
    }
}

fn object(s: &Json, resource_root: bool) -> Option<Type> {
    if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
        let value = of_schema(ap, false)?;
        let max = bound(s, "maxProperties").unwrap_or_else(|| unbounded_items(min_serialized_size(&value) + 4));
        return Some(Type::Map {
            key: Box::new(Type::string()),
            value: Box::new(value),
            max,
        });
    }
    let props = s.get("properties").and_then(Json::as_object);
    if props.is_none_or(|p| p.is_empty()) && flag(s, "x-kubernetes-preserve-unknown-fields") && !resource_root {
        return Some(Type::Dyn);
    }
    let mut o = Object::default();
    if resource_root {
        for k in ["apiVersion", "kind"] {
            o.fields.insert(k.into(), Type::string());
            o.names.insert(k.into(), k.into());
        }
        let mut meta = Object::default();
        for k in ["name", "generateName"] {
            meta.fields.insert(k.into(), Type::string());
            meta.names.insert(k.into(), k.into());
        }
        o.fields.insert("metadata".into(), Type::Object(Arc::new(meta)));
        o.names.insert("metadata".into(), "metadata".into());
    }
    for (k, p) in props.into_iter().flatten() {
        let Some(escaped) = escape(k) else { continue };
        if resource_root && k == "metadata" {
            continue;
        }
        if let Some(t) = of_schema(p, false) {
            o.fields.insert(escaped.clone(), t);
            o.names.insert(escaped, k.clone());
        }
    }
    Some(Type::Object(Arc::new(o)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_names_are_escaped_as_cel_escape_does() {
        assert_eq!(escape("foo").as_deref(), Some("foo"));
        assert_eq!(escape("x-y.z/w").as_deref(), Some("x__dash__y__dot__z__slash__w"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("1a"), None);
        assert_eq!(escape("a b"), None);
    }
}
