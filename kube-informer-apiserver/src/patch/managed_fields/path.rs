//! Field paths as structured-merge-diff names them: a path is a list of [`PathElement`]s, each a struct or map
//! field, the item of an associative list by its key fields, the item of a set by its value, or an index. Their
//! order, equality and printed form (`.spec.containers[name="web"].image`, the one conflict messages carry) and their
//! FieldsV1 keys (`f:spec`, `k:{"name":"web"}`, `v:"x"`, `i:0`) follow `sigs.k8s.io/structured-merge-diff`'s
//! `fieldpath` package, and values compare as its `value` package compares them (numbers by value, whatever their
//! JSON form).

use std::cmp::Ordering;
use std::fmt::{self, Write as _};

use serde_json::Value;

use crate::api::strconv::format_float_g;

/// One step of a field path. Ordered as structured-merge-diff orders them: fields, then keys, then values, then
/// indexes.
#[derive(Clone, Debug)]
pub(crate) enum PathElement {
    /// A field of a struct or map (`f:name`).
    Field(String),
    /// The item of an associative list whose key fields have these values; sorted by field name, never empty
    /// (`k:{"name":"web"}`).
    Key(Vec<(String, Value)>),
    /// The item of a set: a scalar (`v:"x"`).
    Value(Value),
    /// The item at this position of a list (`i:0`); never part of what a manager owns.
    Index(i64),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The key of this element in FieldsV1 (`f:spec`, `k:{"name":"web"}`).
    pub(crate) fn to_key(&self) -> String {
        match self {
            PathElement::Field(f) => {
                let mut s = String::with_capacity(f.len() + 2);
                s.push_str("f:");
                s.push_str(f);
                s
            }
            PathElement::Key(fields) => {
                let mut s = String::from("k:{");
                for (i, (name, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    s.push_str(&Value::String(name.clone()).to_string());
                    s.push(':');
                    s.push_str(&json_text(v));
                }
                s.push('}');
                s
            }
            PathElement::Value(v) => format!("v:{}", json_text(v)),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a FieldsV1 key. `Ok(None)` for a key of a kind this version does not know (structured-merge-diff
    /// skips those); `Err` for a malformed one, worded as its parser words it.
    pub(crate) fn from_key(key: &str) -> Result<Option<PathElement>, String> {
        let b = key.as_bytes();
        if b.len() < 2 {
            return Err("key must be 2 characters long:".to_owned());
        }
        if b[1] != b':' {
            return Err(format!("missing colon: {key}"));
        }
        let rest = &key[2..];
        Ok(Some(match b[0] {
            b'f' => PathElement::Field(rest.to_owned()),
            b'v' => PathElement::Value(serde_json::from_str(rest).map_err(|e| e.to_string())?),
            b'k' => {
                let map: serde_json::Map<String, Value> = serde_json::from_str(rest).map_err(|e| e.to_string())?;
                // A JSON object's keys come sorted (serde_json's map is ordered by key).
                PathElement::Key(map.into_iter().collect())
            }
            b'i' => PathElement::Index(
                rest.parse()
                    .map_err(|_| format!("strconv.Atoi: parsing {rest:?}: invalid syntax"))?,
            ),
            _ => return Ok(None),
        }))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.as_bytes().cmp(b.as_bytes()),
            (PathElement::Key(a), PathElement::Key(b)) => compare_key_lists(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    /// `.name`, `[name="web",port=80]`, `[="x"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_char('[')?;
                for (i, (name, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{name}={}", value_string(v))?;
                }
                f.write_char(']')
            }
            PathElement::Value(v) => write!(f, "[={}]", value_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path as structured-merge-diff prints it: its elements' strings, joined.
pub(crate) fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

fn compare_key_lists(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        let c = an.as_bytes().cmp(bn.as_bytes()).then_with(|| compare_values(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// A JSON value's text as a FieldsV1 key carries it: compact, with `<`, `>` and `&` escaped in strings as Go's
/// standard-library-compatible encoders escape them.
fn json_text(v: &Value) -> String {
    let s = v.to_string();
    if s.contains(['<', '>', '&']) {
        s.replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
    } else {
        s
    }
}

/// Go's `%q` of a string: double-quoted, with Go's escapes for quotes, backslashes and control characters.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A value as structured-merge-diff's `value.ToString` prints it in paths: strings quoted, numbers and booleans
/// bare, lists bracketed, maps as `k=v` pairs.
pub(crate) fn value_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_f64() => format_float_g(n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) => go_quote(s),
        Value::Array(items) => format!("[{}]", items.iter().map(value_string).collect::<Vec<_>>().join(",")),
        Value::Object(m) => m.iter().map(|(k, v)| format!("{k}={}", value_string(v))).collect(),
    }
}

fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

fn number_cmp(a: &serde_json::Number, b: &serde_json::Number) -> Ordering {
    if a.is_f64() || b.is_f64() {
        let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
        x.partial_cmp(&y).unwrap_or(Ordering::Equal)
    } else {
        let int = |n: &serde_json::Number| {
            n.as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .unwrap_or(0)
        };
        int(a).cmp(&int(b))
    }
}

/// The total order structured-merge-diff gives values: numbers (integers and floats compared by value), then
/// strings, booleans, lists, maps, null.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_cmp(x, y),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y) {
                let c = compare_values(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            // Both maps' keys in lexical order; the first difference decides, a map that runs out first is less.
            let (mut li, mut ri) = (x.iter().peekable(), y.iter().peekable());
            loop {
                match (li.peek(), ri.peek()) {
                    (None, None) => return Ordering::Equal,
                    (None, Some(_)) => return Ordering::Less,
                    (Some(_), None) => return Ordering::Greater,
                    (Some((lk, lv)), Some((rk, rv))) => match lk.as_bytes().cmp(rk.as_bytes()) {
                        // The key only the right side has comes first: the left map lacks it.
                        Ordering::Greater => return Ordering::Greater,
                        Ordering::Less => return Ordering::Less,
                        Ordering::Equal => {
                            let c = compare_values(lv, rv);
                            if c != Ordering::Equal {
                                return c;
                            }
                            li.next();
                            ri.next();
                        }
                    },
                }
            }
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => type_rank(a).cmp(&type_rank(b)),
    }
}

/// Structured-merge-diff's value equality: numbers by value (`1` equals `1.0`), maps whatever their key order.
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_cmp(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(l, r)| values_equal(l, r)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(pairs: &[(&str, Value)]) -> PathElement {
        PathElement::Key(pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect())
    }

    #[test]
    fn elements_order_as_structured_merge_diff_orders_them() {
        let mut elements = [
            PathElement::Index(0),
            PathElement::Value(json!("b")),
            PathElement::Value(json!(2)),
            key(&[("name", json!("b"))]),
            key(&[("name", json!("a"))]),
            PathElement::Field("b".into()),
            PathElement::Field("a".into()),
        ];
        elements.sort();
        let keys: Vec<String> = elements.iter().map(PathElement::to_key).collect();
        assert_eq!(
            keys,
            [
                "f:a",
                "f:b",
                r#"k:{"name":"a"}"#,
                r#"k:{"name":"b"}"#,
                "v:2",
                r#"v:"b""#,
                "i:0"
            ]
        );
        // Numbers compare by value: 9 before 10 (their keys' text would not), and 1 equals 1.0.
        assert!(key(&[("port", json!(9))]) < key(&[("port", json!(10))]));
        assert_eq!(PathElement::Value(json!(1)), PathElement::Value(json!(1.0)));
        // Numbers < strings < booleans < lists < maps < null.
        let ranked = [
            json!(5),
            json!("a"),
            json!(false),
            json!([1]),
            json!({"a": 1}),
            Value::Null,
        ];
        for pair in ranked.windows(2) {
            assert_eq!(compare_values(&pair[0], &pair[1]), Ordering::Less, "{pair:?}");
        }
        assert_eq!(compare_values(&json!({"a": 1}), &json!({"b": 1})), Ordering::Less);
        assert_eq!(
            compare_values(&json!({"a": 1}), &json!({"a": 1, "b": 2})),
            Ordering::Less
        );
    }

    #[test]
    fn keys_round_trip_and_paths_print_as_in_conflicts() {
        for k in [
            "f:spec",
            r#"k:{"containerPort":80,"protocol":"TCP"}"#,
            r#"v:"a""#,
            "v:3",
            "i:2",
            "f:",
            "f:with:colon",
        ] {
            let pe = PathElement::from_key(k).unwrap().unwrap();
            assert_eq!(pe.to_key(), k);
        }
        assert_eq!(PathElement::from_key("x:1").unwrap(), None);
        assert!(PathElement::from_key("f").is_err());
        assert!(PathElement::from_key("fx").is_err());
        assert!(PathElement::from_key("k:[1]").is_err());
        assert!(PathElement::from_key("i:a").is_err());
        assert_eq!(
            PathElement::Value(json!("a<b")).to_key(),
            r#"v:"a\u003cb""#,
            "Go's encoder escapes HTML characters"
        );
        let path = [
            PathElement::Field("spec".into()),
            PathElement::Field("ports".into()),
            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
            PathElement::Field("targetPort".into()),
        ];
        assert_eq!(path_string(&path), r#".spec.ports[port=80,protocol="TCP"].targetPort"#);
        assert_eq!(PathElement::Value(json!("x")).to_string(), r#"[="x"]"#);
        assert_eq!(PathElement::Index(3).to_string(), "[3]");
    }

    #[test]
    fn floats_and_strings_print_as_go_prints_them() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        // `strconv.FormatFloat(f, 'g', -1, 64)`, whose own cases are `api::strconv`'s.
        assert_eq!(value_string(&json!(1.5)), "1.5");
        assert_eq!(value_string(&json!([1e6, 0.00001])), "[1e+06,1e-05]");
        assert_eq!(value_string(&json!([1, "a"])), r#"[1,"a"]"#);
    }
}
