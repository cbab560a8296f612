//! CEL values (cel-go's `ref.Val`s as Kubernetes uses them): the standard types, optionals, type values (`int`, `net.IP`: cel-go's type values), and the opaque
//! Kubernetes types of k8s.io/apiserver's CEL libraries (quantity, IP, CIDR, URL, semver, format). JSON values
//! become CEL values by their schema ([`from_json`]): integers and numbers apart, `date-time` strings as timestamps,
//! `duration` strings as durations, `byte` strings as bytes, as apiextensions-apiserver's `UnstructuredToVal` does.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use cel::common::ast::{Expr, IdedExpr};
use serde_json::Value as Json;

use super::types::Type;
use crate::api::quantity::Quantity;

/// A map key: CEL allows bool, int, uint and string keys.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Key {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Str(Arc<str>),
}

impl Key {
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Key::Bool(b) => Value::Bool(*b),
            Key::Int(i) => Value::Int(*i),
            Key::Uint(u) => Value::Uint(*u),
            Key::Str(s) => Value::String(s.clone()),
        }
    }

    /// The key a value indexes a map with; numbers of either sign kind compare as numbers.
    pub(crate) fn from_value(v: &Value) -> Option<Key> {
        match v {
            Value::Bool(b) => Some(Key::Bool(*b)),
            Value::Int(i) => Some(Key::Int(*i)),
            Value::Uint(u) => Some(Key::Uint(*u)),
            Value::String(s) => Some(Key::Str(s.clone())),
            _ => None,
        }
    }
}

/// A URL as Go's `url.Parse` splits it (what the URL library's getters return).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Url {
    pub(crate) text: String,
    pub(crate) scheme: String,
    pub(crate) host: String,
    pub(crate) path: String,
    pub(crate) query: String,
}

/// A semantic version (the semver library: `major.minor.patch`, pre-release and build ignored in comparisons
/// beyond precedence).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Semver {
    pub(crate) major: u64,
    pub(crate) minor: u64,
    pub(crate) patch: u64,
    pub(crate) pre: Vec<String>,
}

/// A CEL value.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(Arc<str>),
    Bytes(Arc<[u8]>),
    List(Arc<Vec<Value>>),
    /// Maps and objects (an object's fields are string keys; absent fields are absent keys).
    Map(Arc<BTreeMap<Key, Value>>),
    /// Nanoseconds.
    Duration(i128),
    /// Nanoseconds since the epoch.
    Timestamp(i128),
    /// A type value (`type(x)`, `int`, …), by name.
    Type(Arc<str>),
    Optional(Option<Box<Value>>),
    Quantity(Arc<Quantity>),
    Ip(IpAddr),
    Cidr(IpAddr, u8),
    Url(Arc<Url>),
    Semver(Arc<Semver>),
    /// A named format of the format library (`format.dns1123Label()`).
    Format(&'static str),
}

impl Value {
    pub(crate) fn str(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    pub(crate) fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(items))
    }

    /// The type name cel-go prints (`int`, `string`, `list`, `map`, `google.protobuf.Duration`, …).
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Duration(_) => "google.protobuf.Duration",
            Value::Timestamp(_) => "google.protobuf.Timestamp",
            Value::Type(_) => "type",
            Value::Optional(_) => "optional_type",
            Value::Quantity(_) => "kubernetes.Quantity",
            Value::Ip(_) => "net.IP",
            Value::Cidr(..) => "net.CIDR",
            Value::Url(_) => "kubernetes.URL",
            Value::Semver(_) => "kubernetes.Semver",
            Value::Format(_) => "kubernetes.NamedFormat",
        }
    }

    /// A size for cost accounting: characters of a string, bytes, items of a list or map; 1 otherwise.
    pub(crate) fn size(&self) -> u64 {
        match self {
            Value::String(s) => s.chars().count() as u64,
            Value::Bytes(b) => b.len() as u64,
            Value::List(l) => l.len() as u64,
            Value::Map(m) => m.len() as u64,
            _ => 1,
        }
    }

    /// CEL's equality (heterogeneous: numbers compare by value across int, uint and double; other kinds never
    /// equal each other).
    pub(crate) fn equals(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (String(a), String(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (Duration(a), Duration(b)) | (Timestamp(a), Timestamp(b)) => a == b,
            (Type(a), Type(b)) => a == b,
            (List(a), List(b)) => a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.equals(y)),
            (Map(a), Map(b)) => a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v.equals(w))),
            (Optional(a), Optional(b)) => match (a, b) {
                (None, None) => true,
                (Some(x), Some(y)) => x.equals(y),
                _ => false,
            },
            (Quantity(a), Quantity(b)) => a.cmp_value(b) == Ordering::Equal,
            (Ip(a), Ip(b)) => a == b,
            (Cidr(a, n), Cidr(b, m)) => a == b && n == m,
            (Url(a), Url(b)) => a.text == b.text,
            (Semver(a), Semver(b)) => a == b,
            (Format(a), Format(b)) => a == b,
            _ => match self.compare_numbers(other) {
                Some(o) => o == Ordering::Equal,
                None => false,
            },
        }
    }

    fn compare_numbers(&self, other: &Value) -> Option<Ordering> {
        use Value::*;
        match (self, other) {
            (Int(a), Int(b)) => Some(a.cmp(b)),
            (Uint(a), Uint(b)) => Some(a.cmp(b)),
            (Double(a), Double(b)) => a.partial_cmp(b),
            (Int(a), Uint(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
            (Uint(a), Int(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
            (Int(a), Double(b)) => (*a as f64).partial_cmp(b),
            (Double(a), Int(b)) => a.partial_cmp(&(*b as f64)),
            (Uint(a), Double(b)) => (*a as f64).partial_cmp(b),
            (Double(a), Uint(b)) => a.partial_cmp(&(*b as f64)),
            _ => None,
        }
    }

    /// CEL's ordering (`<`, `>`, …): numbers across kinds, strings, bytes, bools, durations, timestamps; `None`
    /// when the kinds do not compare (no such overload) or a double is NaN.
    pub(crate) fn compare(&self, other: &Value) -> Option<Ordering> {
        use Value::*;
        match (self, other) {
            (String(a), String(b)) => Some(a.cmp(b)),
            (Bytes(a), Bytes(b)) => Some(a.cmp(b)),
            (Bool(a), Bool(b)) => Some(a.cmp(b)),
            (Duration(a), Duration(b)) | (Timestamp(a), Timestamp(b)) => Some(a.cmp(b)),
            _ => self.compare_numbers(other),
        }
    }

    /// Whether two values can be ordered at all (to tell "no such overload" from NaN).
    pub(crate) fn comparable(&self, other: &Value) -> bool {
        use Value::*;
        let num = |v: &Value| matches!(v, Int(_) | Uint(_) | Double(_));
        (num(self) && num(other))
            || matches!(
                (self, other),
                (String(_), String(_))
                    | (Bytes(_), Bytes(_))
                    | (Bool(_), Bool(_))
                    | (Duration(_), Duration(_))
                    | (Timestamp(_), Timestamp(_))
            )
    }
}

/// Converts a JSON value to CEL by its declared type, as apiextensions-apiserver's `UnstructuredToVal` does. A
/// value that does not fit its type (never after schema validation) is converted by its JSON kind.
pub(crate) fn from_json(v: &Json, t: &Type) -> Value {
    match (v, t) {
        (Json::Null, _) => Value::Null,
        (Json::Bool(b), _) => Value::Bool(*b),
        (Json::Number(n), Type::Double) => Value::Double(n.as_f64().unwrap_or(0.0)),
        (Json::Number(n), _) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => match n.as_u64() {
                Some(u) => Value::Uint(u),
                None => {
                    let f = n.as_f64().unwrap_or(0.0);
                    if matches!(t, Type::Int) && f.fract() == 0.0 && f.abs() < 9.2e18 {
                        Value::Int(f as i64)
                    } else {
                        Value::Double(f)
                    }
                }
            },
        },
        (Json::String(s), Type::Timestamp) => match super::time::parse_timestamp(s) {
            Some(ts) => Value::Timestamp(ts),
            None => Value::str(s),
        },
        (Json::String(s), Type::Duration) => match super::time::parse_duration(s) {
            Some(d) => Value::Duration(d),
            None => Value::str(s),
        },
        (Json::String(s), Type::Bytes { .. }) => match crate::api::util::base64_std_decode(s) {
            Some(b) => Value::Bytes(Arc::from(b)),
            None => Value::str(s),
        },
        (Json::String(s), _) => Value::str(s),
        (Json::Array(items), t) => {
            let elem = match t {
                Type::List { elem, .. } => elem.as_ref(),
                _ => &Type::Dyn,
            };
            Value::list(items.iter().map(|i| from_json(i, elem)).collect())
        }
        (Json::Object(m), t) => {
            let mut out = BTreeMap::new();
            for (k, v) in m {
                let (name, ft) = match t {
                    // Fields by their escaped names; a property CEL cannot name is left out.
                    Type::Object(o) => match super::types::escape(k) {
                        Some(e) => {
                            let ft = o.fields.get(&e).cloned().unwrap_or(Type::Dyn);
                            (e, ft)
                        }
                        None => continue,
                    },
                    Type::Map { value, .. } => (k.clone(), value.as_ref().clone()),
                    _ => (k.clone(), Type::Dyn),
                };
                // Nulls of object fields are absent fields to CEL (apiextensions-apiserver skips them).
                if v.is_null() && matches!(t, Type::Object(_)) {
                    continue;
                }
                out.insert(Key::Str(Arc::from(name.as_str())), from_json(v, &ft));
            }
            Value::Map(Arc::new(out))
        }
    }
}

/// A value back to JSON (for `params`-free uses: messages, audit annotations, a mutation's result).
pub(crate) fn to_json(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Uint(u) => Json::from(*u),
        Value::Double(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.to_string()),
        Value::Bytes(b) => Json::String(crate::api::util::base64_std(b)),
        Value::List(l) => Json::Array(l.iter().map(to_json).collect()),
        Value::Map(m) => Json::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Key::Str(s) => s.to_string(),
                        Key::Int(i) => i.to_string(),
                        Key::Uint(u) => u.to_string(),
                        Key::Bool(b) => b.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Value::Duration(d) => Json::String(super::time::format_duration(*d)),
        Value::Timestamp(t) => Json::String(super::time::format_timestamp(*t)),
        Value::Type(t) => Json::String(t.to_string()),
        Value::Optional(o) => o.as_deref().map_or(Json::Null, to_json),
        Value::Quantity(q) => Json::String(q.canonical()),
        Value::Ip(ip) => Json::String(ip.to_string()),
        Value::Cidr(ip, n) => Json::String(format!("{ip}/{n}")),
        Value::Url(u) => Json::String(u.text.clone()),
        Value::Semver(s) => Json::String(format!("{}.{}.{}", s.major, s.minor, s.patch)),
        Value::Format(f) => Json::String((*f).to_owned()),
    }
}

/// A map key as error messages print it.
pub(crate) fn key_text(k: &Key) -> String {
    match k {
        Key::Str(s) => s.to_string(),
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
    }
}

/// The type values CEL names (`int`, `string`, …).
pub(crate) fn type_value(name: &str) -> Option<Value> {
    matches!(
        name,
        "int" | "uint" | "double" | "bool" | "string" | "bytes" | "list" | "map" | "null_type" | "type"
    )
    .then(|| Value::Type(Arc::from(name)))
}

/// The library types CEL names with a qualified name (`net.IP`, `net.CIDR`), unless `net` is a variable.
pub(crate) fn qualified_type(operand: &IdedExpr, field: &str, is_variable: impl Fn(&str) -> bool) -> Option<Value> {
    match &operand.expr {
        Expr::Ident(ns) if ns == "net" && matches!(field, "IP" | "CIDR") && !is_variable(ns) => {
            Some(Value::Type(Arc::from(format!("net.{field}").as_str())))
        }
        _ => None,
    }
}
