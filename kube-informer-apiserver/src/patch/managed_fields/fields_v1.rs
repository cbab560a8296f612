//! FieldsV1, the JSON form of a [`Set`] in a `managedFields` entry: a tree of objects keyed by path elements
//! (`f:spec`, `k:{"name":"web"}`, `v:"x"`, `i:0`), where an empty object marks a member and `"."` marks a node that
//! is a member and also has members below it.

use serde_json::{Map, Value};

use super::path::PathElement;
use super::set::Set;

/// The FieldsV1 object of a set.
pub(crate) fn encode(set: &Set) -> Value {
    Value::Object(encode_node(set, false))
}

fn encode_node(set: &Set, member: bool) -> Map<String, Value> {
    let mut out = Map::new();
    if member && !set.is_empty() {
        out.insert(".".to_owned(), Value::Object(Map::new()));
    }
    for m in set.members() {
        if set.child(m).is_none() {
            out.insert(m.to_key(), Value::Object(Map::new()));
        }
    }
    for (pe, child) in set.children() {
        out.insert(pe.to_key(), Value::Object(encode_node(child, set.has_member(pe))));
    }
    out
}

/// The set a FieldsV1 object names; keys of an unknown kind are skipped, malformed ones refused.
pub(crate) fn decode(fields: &Value) -> Result<Set, String> {
    match fields {
        Value::Null => Ok(Set::new()),
        Value::Object(m) => Ok(decode_node(m)?.0),
        other => Err(format!("expected an object, found {other}")),
    }
}

/// A node's set, and whether the node is itself a member (`"."`, or nothing below it).
fn decode_node(m: &Map<String, Value>) -> Result<(Set, bool), String> {
    let mut member = false;
    let mut members = Vec::new();
    let mut children = Vec::new();
    for (key, value) in m {
        if key == "." {
            member = true;
            continue;
        }
        let Some(pe) = PathElement::from_key(key).map_err(|e| format!("parsing key as path element: {e}"))? else {
            continue;
        };
        let (below, is_member) = match value {
            Value::Object(inner) => decode_node(inner)?,
            Value::Null => (Set::new(), true),
            other => return Err(format!("{key}: expected an object, found {other}")),
        };
        if is_member {
            members.push(pe.clone());
        }
        if !below.is_empty() {
            children.push((pe, below));
        }
    }
    let set = Set::from_parts(members, children);
    // A node with nothing (known) below it is a member.
    let member = member || set.is_empty();
    Ok((set, member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    #[test]
    fn encodes_members_children_and_dots() {
        let item = PathElement::Key(vec![("name".into(), json!("web"))]);
        let mut s = Set::new();
        s.insert(&[f("metadata"), f("labels"), f("app")]);
        s.insert(&[f("spec"), f("containers"), item.clone()]);
        s.insert(&[f("spec"), f("containers"), item.clone(), f("image")]);
        s.insert(&[f("spec"), f("finalizers"), PathElement::Value(json!("a"))]);
        s.insert(&[f("spec"), f("replicas")]);
        let v = encode(&s);
        assert_eq!(
            v,
            json!({
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}},
                    "f:finalizers": {"v:\"a\"": {}},
                    "f:replicas": {},
                },
            })
        );
        assert_eq!(decode(&v).unwrap(), s);
        assert_eq!(encode(&Set::new()), json!({}));
        assert!(decode(&json!({})).unwrap().is_empty());
    }

    #[test]
    fn decoding_skips_unknown_kinds_and_refuses_malformed_keys() {
        let s = decode(&json!({"f:a": {"z:future": {}}, "f:b": {".": {}, "f:c": {}}})).unwrap();
        // `a`'s only child is unknown: `a` itself is a member.
        assert!(s.has(&[f("a")]) && s.has(&[f("b")]) && s.has(&[f("b"), f("c")]));
        assert!(decode(&json!({"f": {}})).is_err());
        assert!(decode(&json!({"f:a": 1})).is_err());
        assert!(decode(&json!([1])).is_err());
        assert!(decode(&json!({"k:[": {}})).is_err());
    }
}
