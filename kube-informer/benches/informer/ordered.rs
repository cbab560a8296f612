//! JSON kept in the order it was written (`serde_json::Value` sorts keys): the lean server learns the embedded
//! server's field order from its answers and writes its generated objects in it.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A JSON value whose objects keep their keys in the order read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// The member `key` of an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The member `key` of an object, to change.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Obj(members) => members.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets the member `key` of an object (in place when present, else last).
    pub(crate) fn set(&mut self, key: &str, value: Json) {
        if let Some(slot) = self.get_mut(key) {
            *slot = value;
        } else if let Json::Obj(members) = self {
            members.push((key.to_owned(), value));
        }
    }

    pub(crate) fn str(s: &str) -> Json {
        Json::Str(s.to_owned())
    }

    /// The value of a `serde_json::Value` (its keys in the Value's order).
    pub(crate) fn from_value(v: &Value) -> Json {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Num(n.clone()),
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(a) => Json::Arr(a.iter().map(Json::from_value).collect()),
            Value::Object(m) => Json::Obj(m.iter().map(|(k, v)| (k.clone(), Json::from_value(v))).collect()),
        }
    }

    /// `v`'s content in `self`'s order: members of `self` that `v` lacks are kept (what a server adds), `v`'s members
    /// replace or follow them; array elements take the order of `self`'s element at the same index.
    pub(crate) fn overlay(&self, v: &Value) -> Json {
        match (self, v) {
            (Json::Obj(t), Value::Object(m)) => {
                let mut out: Vec<(String, Json)> = t
                    .iter()
                    .map(|(k, tv)| (k.clone(), m.get(k).map_or_else(|| tv.clone(), |mv| tv.overlay(mv))))
                    .collect();
                for (k, mv) in m {
                    if !t.iter().any(|(tk, _)| tk == k) {
                        out.push((k.clone(), Json::from_value(mv)));
                    }
                }
                Json::Obj(out)
            }
            (Json::Arr(t), Value::Array(a)) if !t.is_empty() => Json::Arr(
                a.iter()
                    .enumerate()
                    .map(|(j, e)| t.get(j).unwrap_or(&t[0]).overlay(e))
                    .collect(),
            ),
            _ => Json::from_value(v),
        }
    }

    /// Every string inside (keys and values) with `"from"` replaced by `"to"` (quoted: whole values only, as
    /// managedFields' `k:{…}` keys hold them), for each pair in turn.
    pub(crate) fn substitute(&mut self, pairs: &[(String, String)]) {
        fn replace(s: &mut String, pairs: &[(String, String)]) {
            if s.contains('"') {
                for (from, to) in pairs {
                    if s.contains(from.as_str()) {
                        *s = s.replace(from.as_str(), to);
                    }
                }
            }
        }
        match self {
            Json::Str(s) => replace(s, pairs),
            Json::Arr(a) => a.iter_mut().for_each(|e| e.substitute(pairs)),
            Json::Obj(m) => {
                for (k, v) in m {
                    replace(k, pairs);
                    v.substitute(pairs);
                }
            }
            _ => {}
        }
    }

    /// Compact JSON, keys in order.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        match self {
            Json::Null => out.extend_from_slice(b"null"),
            Json::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Json::Num(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Json::Str(s) => serde_json::to_writer(&mut *out, s).unwrap(),
            Json::Arr(a) => {
                out.push(b'[');
                for (j, e) in a.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    e.write(out);
                }
                out.push(b']');
            }
            Json::Obj(m) => {
                out.push(b'{');
                for (j, (k, v)) in m.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, k).unwrap();
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
        }
    }
}

/// The strings that differ between `a` and `b` at the same place, as pairs of quoted values (`a`'s first; each of
/// `a`'s values once): what [`Json::substitute`] rewrites.
pub(crate) fn differing_strings(a: &Value, b: &Value, out: &mut Vec<(String, String)>) {
    match (a, b) {
        (Value::String(x), Value::String(y)) if x != y => {
            let from = format!("\"{x}\"");
            if !out.iter().any(|(f, _)| *f == from) {
                out.push((from, format!("\"{y}\"")));
            }
        }
        (Value::Array(x), Value::Array(y)) => x.iter().zip(y).for_each(|(x, y)| differing_strings(x, y, out)),
        (Value::Object(x), Value::Object(y)) => {
            for (k, xv) in x {
                if let Some(yv) = y.get(k) {
                    differing_strings(xv, yv, out);
                }
            }
        }
        _ => {}
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(n)
                    .map(Json::Num)
                    .ok_or_else(|| E::custom("not a JSON number"))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::str(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = a.next_element()? {
                    v.push(e);
                }
                Ok(Json::Arr(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = a.next_entry()? {
                    v.push(kv);
                }
                Ok(Json::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}
