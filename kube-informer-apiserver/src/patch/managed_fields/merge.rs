//! Merging an applied configuration into a live object, and removing fields from an object, as
//! structured-merge-diff's `Merge` and `RemoveItems` do: the configuration's leaves win, maps merge key by key,
//! associative lists item by item (in the configuration's order where it names items, the live order around them),
//! atomic lists and maps are replaced whole.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::path::PathElement;
use super::schema::{Atom, List, MapType, Schema, Ty};
use super::set::Set;
use super::typed::{ValidationError, ValidationErrors, item_element, scalar_problem};

static NULL: Value = Value::Null;

/// `rhs` merged into `lhs` (both of type `ty`); `None` when both are absent.
pub(crate) fn merge<'s>(
    schema: &Schema<'s>,
    ty: Ty<'s>,
    lhs: &Value,
    rhs: &Value,
) -> Result<Option<Value>, ValidationErrors> {
    let mut w = Walker {
        schema,
        path: String::new(),
        errors: Vec::new(),
    };
    let out = w.merge(ty, Some(lhs), Some(rhs));
    if w.errors.is_empty() {
        Ok(out)
    } else {
        Err(ValidationErrors(w.errors))
    }
}

struct Walker<'a, 's> {
    schema: &'a Schema<'s>,
    /// The printed path, for errors.
    path: String,
    errors: Vec<ValidationError>,
}

impl<'s> Walker<'_, 's> {
    fn merge(&mut self, ty: Ty<'s>, lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
        let atom = self.schema.atom(ty);
        let (al, ar) = (atom.deduce(lhs), atom.deduce(rhs));
        let mut leaf = false;
        if rhs.is_none() {
            self.handle(al, lhs, rhs, &mut leaf)
        } else if lhs.is_none() || al.same_kinds(&ar) {
            self.handle(ar, lhs, rhs, &mut leaf)
        } else {
            let mut other_leaf = false;
            let _ = self.handle(al, lhs, rhs, &mut other_leaf);
            self.handle(ar, lhs, rhs, &mut leaf)
        }
    }

    fn handle(&mut self, atom: Atom<'s>, lhs: Option<&Value>, rhs: Option<&Value>, leaf: &mut bool) -> Option<Value> {
        if let Some(m) = atom.map {
            self.map(m, lhs, rhs, leaf)
        } else if let Some(s) = atom.scalar {
            let problem =
                |v: Option<&Value>, side: &str| v.and_then(|v| scalar_problem(s, v)).map(|p| format!("{side}{p}"));
            if let (Some(l), Some(r)) = (problem(lhs, "lhs: "), problem(rhs, "rhs: ")) {
                for message in [l, r] {
                    self.errors.push(ValidationError {
                        path: self.path.clone(),
                        message,
                    });
                }
                return None;
            }
            Self::leaf(lhs, rhs, leaf)
        } else if let Some(l) = atom.list {
            self.list(l, lhs, rhs, leaf)
        } else {
            None
        }
    }

    /// The right side wins whole.
    fn leaf(lhs: Option<&Value>, rhs: Option<&Value>, leaf: &mut bool) -> Option<Value> {
        if *leaf {
            return None;
        }
        *leaf = true;
        rhs.or(lhs).cloned()
    }

    fn map(&mut self, m: MapType<'s>, lhs: Option<&Value>, rhs: Option<&Value>, leaf: &mut bool) -> Option<Value> {
        let (lm, rm) = (lhs.and_then(Value::as_object), rhs.and_then(Value::as_object));
        let empty = |x: Option<&Map<String, Value>>| x.is_none_or(Map::is_empty);
        if m.atomic || (empty(lm) && empty(rm)) {
            return Self::leaf(lhs, rhs, leaf);
        }
        let keys: BTreeSet<&String> = lm.into_iter().chain(rm).flat_map(Map::keys).collect();
        let mut out = Map::new();
        for k in keys {
            let len = self.path.len();
            self.path.push('.');
            self.path.push_str(k);
            if let Some(v) = self.merge(m.child(k), lm.and_then(|x| x.get(k)), rm.and_then(|x| x.get(k))) {
                out.insert(k.clone(), v);
            }
            self.path.truncate(len);
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }

    fn list(&mut self, l: List<'s>, lhs: Option<&Value>, rhs: Option<&Value>, leaf: &mut bool) -> Option<Value> {
        let (ll, rl) = (lhs.and_then(Value::as_array), rhs.and_then(Value::as_array));
        let empty = |x: Option<&Vec<Value>>| x.is_none_or(Vec::is_empty);
        if !l.associative() || (empty(ll) && empty(rl)) {
            return Self::leaf(lhs, rhs, leaf);
        }
        let rhs_items = self.index(&l, rl.map_or(&[][..], Vec::as_slice), false)?;
        let lhs_items = self.index(&l, ll.map_or(&[][..], Vec::as_slice), true)?;
        let (lpes, lseen) = lhs_items;
        let (rpes, rseen) = rhs_items;
        // The configuration's order of the items both sides have.
        let mut shared = rpes.iter().filter(|pe| lseen.contains_key(*pe)).peekable();
        let mut next_shared = shared.next();
        let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
        let mut out = Vec::with_capacity(lpes.len().max(rpes.len()));
        let ll = ll.map_or(&[][..], Vec::as_slice);
        let (mut li, mut ri) = (0, 0);
        while li < lpes.len() || ri < rpes.len() {
            if li < lpes.len() && ri < rpes.len() {
                let pe = &lpes[li];
                if *pe == rpes[ri] {
                    merged_rhs.insert(pe);
                    out.extend(self.item(&l, pe, lseen.get(pe).copied(), rseen.get(pe).copied()));
                    li += 1;
                    ri += 1;
                    next_shared = shared.next();
                    continue;
                }
                if rseen.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    // An item the configuration also names, but later: it comes when its turn does.
                    li += 1;
                    continue;
                }
            }
            if li < lpes.len() {
                let pe = &lpes[li];
                if !rseen.contains_key(pe) {
                    out.extend(self.item(&l, pe, Some(&ll[li]), None));
                    li += 1;
                    continue;
                } else if merged_rhs.contains(pe) {
                    li += 1;
                }
            }
            if ri < rpes.len() {
                let pe = &rpes[ri];
                merged_rhs.insert(pe);
                out.extend(self.item(&l, pe, lseen.get(pe).copied(), rseen.get(pe).copied()));
                ri += 1;
                if next_shared == Some(pe) {
                    next_shared = shared.next();
                }
            }
        }
        (!out.is_empty()).then_some(Value::Array(out))
    }

    /// The elements of a list's items in order, and each element's item (null for an element repeated in a live
    /// list; refused in a configuration).
    #[allow(clippy::type_complexity)]
    fn index<'v>(
        &mut self,
        l: &List<'s>,
        items: &'v [Value],
        allow_duplicates: bool,
    ) -> Option<(Vec<PathElement>, BTreeMap<PathElement, &'v Value>)> {
        let mut pes = Vec::with_capacity(items.len());
        let mut seen: BTreeMap<PathElement, &'v Value> = BTreeMap::new();
        let before = self.errors.len();
        for (i, item) in items.iter().enumerate() {
            let pe = match item_element(self.schema, l, item) {
                Ok(pe) => pe,
                Err(e) => {
                    self.fail(format!("element {i}: {e}"));
                    continue;
                }
            };
            if seen.contains_key(&pe) {
                if !allow_duplicates {
                    self.fail(format!("duplicate entries for key {pe}"));
                    continue;
                }
                seen.insert(pe.clone(), &NULL);
            } else {
                seen.insert(pe.clone(), item);
            }
            pes.push(pe);
        }
        (self.errors.len() == before).then_some((pes, seen))
    }

    fn fail(&mut self, message: String) {
        self.errors.push(ValidationError {
            path: self.path.clone(),
            message,
        });
    }

    fn item(&mut self, l: &List<'s>, pe: &PathElement, lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
        let len = self.path.len();
        self.path.push_str(&pe.to_string());
        let out = self.merge(l.elem, lhs, rhs);
        self.path.truncate(len);
        out
    }
}

/// `v` without the fields and items of `remove` (a value of type `ty`). A map or list whose every entry goes
/// becomes null, as structured-merge-diff leaves it.
pub(crate) fn remove_items<'s>(schema: &Schema<'s>, ty: Ty<'s>, v: &Value, remove: &Set) -> Value {
    let atom = schema.atom(ty).deduce(Some(v));
    if let Some(m) = atom.map {
        let Value::Object(obj) = v else {
            return Value::Null;
        };
        if obj.is_empty() || m.atomic {
            return Value::Null;
        }
        let mut out = Map::new();
        for (k, child) in obj {
            let pe = PathElement::Field(k.clone());
            if remove.has_member(&pe) {
                continue;
            }
            let kept = match remove.child(&pe) {
                Some(below) => remove_items(schema, m.child(k), child, below),
                None => child.clone(),
            };
            out.insert(k.clone(), kept);
        }
        if out.is_empty() {
            Value::Null
        } else {
            Value::Object(out)
        }
    } else if atom.scalar.is_some() {
        v.clone()
    } else if let Some(l) = atom.list {
        let Value::Array(items) = v else {
            return Value::Null;
        };
        if items.is_empty() || !l.associative() {
            return Value::Null;
        }
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let pe = item_element(schema, &l, item).ok();
            if pe.as_ref().is_some_and(|pe| remove.has_member(pe)) {
                continue;
            }
            match pe.as_ref().and_then(|pe| remove.child(pe)) {
                Some(below) => out.push(remove_items(schema, l.elem, item, below)),
                None => out.push(item.clone()),
            }
        }
        if out.is_empty() { Value::Null } else { Value::Array(out) }
    } else {
        Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema_json() -> Value {
        json!({"type": "object", "properties": {
            "list": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key", "id"],
                     "items": {"type": "object", "properties": {
                        "key": {"type": "string"}, "id": {"type": "number"}, "bv": {"type": "boolean"},
                        "nv": {"type": "number"},
                        "value": {"type": "object", "additionalProperties": {"type": "string"}}}}},
            "atomicList": {"type": "array", "items": {"type": "string"}},
            "setStr": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "setBool": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "boolean"}},
            "setNumeric": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}},
            "numeric": {"type": "number"}, "string": {"type": "string"}, "bool": {"type": "boolean"},
        }})
    }

    // The triplets (live, applied, merged) of structured-merge-diff's typed/merge_test.go "scalars and sets" and
    // "associative list" cases.
    const TRIPLETS: &[(&str, &str, &str)] = &[
        (r#"{"numeric":1}"#, r#"{"numeric":3.14159}"#, r#"{"numeric":3.14159}"#),
        (
            r#"{"string":"aoeu"}"#,
            r#"{"bool":true}"#,
            r#"{"string":"aoeu","bool":true}"#,
        ),
        (
            r#"{"setStr":["a","b","c"]}"#,
            r#"{"setStr":["a","b"]}"#,
            r#"{"setStr":["a","b","c"]}"#,
        ),
        (
            r#"{"setStr":["a","b"]}"#,
            r#"{"setStr":["a","b","c"]}"#,
            r#"{"setStr":["a","b","c"]}"#,
        ),
        (
            r#"{"setStr":["a","b","c"]}"#,
            r#"{"setStr":[]}"#,
            r#"{"setStr":["a","b","c"]}"#,
        ),
        (
            r#"{"setStr":[]}"#,
            r#"{"setStr":["a","b","c"]}"#,
            r#"{"setStr":["a","b","c"]}"#,
        ),
        (
            r#"{"setStr":["a","b"]}"#,
            r#"{"setStr":["b","a"]}"#,
            r#"{"setStr":["b","a"]}"#,
        ),
        (
            r#"{"setStr":["a","b","c"]}"#,
            r#"{"setStr":["d","e","f"]}"#,
            r#"{"setStr":["a","b","c","d","e","f"]}"#,
        ),
        (
            r#"{"setStr":["a","b","c"]}"#,
            r#"{"setStr":["c","d","e","f"]}"#,
            r#"{"setStr":["a","b","c","d","e","f"]}"#,
        ),
        (
            r#"{"setStr":["a","b","c","g","f"]}"#,
            r#"{"setStr":["c","d","e","f"]}"#,
            r#"{"setStr":["a","b","c","g","d","e","f"]}"#,
        ),
        (
            r#"{"setStr":["c","d","e","f"]}"#,
            r#"{"setStr":["a","c","e"]}"#,
            r#"{"setStr":["a","c","d","e","f"]}"#,
        ),
        (
            r#"{"setStr":["a","b","c","x","y","z"]}"#,
            r#"{"setStr":["d","e","f","x","y","z"]}"#,
            r#"{"setStr":["a","b","c","d","e","f","x","y","z"]}"#,
        ),
        (
            r#"{"setStr":["c","a","g","f"]}"#,
            r#"{"setStr":["c","f","a","g"]}"#,
            r#"{"setStr":["c","f","a","g"]}"#,
        ),
        (
            r#"{"setStr":["a","b","c","d"]}"#,
            r#"{"setStr":["d","e","f","a"]}"#,
            r#"{"setStr":["b","c","d","e","f","a"]}"#,
        ),
        (
            r#"{"setStr":["c","d","e","f","g","h","i","j"]}"#,
            r#"{"setStr":["2","h","3","e","4","k","l"]}"#,
            r#"{"setStr":["c","d","f","g","2","h","i","j","3","e","4","k","l"]}"#,
        ),
        (
            r#"{"setStr":["a","b","c","d","e","f","g","h","i","j"]}"#,
            r#"{"setStr":["1","b","2","h","3","e","4","k","l"]}"#,
            r#"{"setStr":["a","1","b","c","d","f","g","2","h","i","j","3","e","4","k","l"]}"#,
        ),
        (
            r#"{"setStr":["a","b","b"]}"#,
            r#"{"setStr":["c"]}"#,
            r#"{"setStr":["a","b","b","c"]}"#,
        ),
        (
            r#"{"setStr":["a","b","b"]}"#,
            r#"{"setStr":["b"]}"#,
            r#"{"setStr":["a","b"]}"#,
        ),
        (
            r#"{"setStr":["a","b","b"]}"#,
            r#"{"setStr":["a"]}"#,
            r#"{"setStr":["a","b","b"]}"#,
        ),
        (
            r#"{"setStr":["a","b","c","d","e","c"]}"#,
            r#"{"setStr":["1","b","2","e","d"]}"#,
            r#"{"setStr":["a","1","b","c","2","e","c","d"]}"#,
        ),
        (
            r#"{"setStr":["a","b","c","d","e","c"]}"#,
            r#"{"setStr":["1","b","2","c","e","d"]}"#,
            r#"{"setStr":["a","1","b","2","c","e","d"]}"#,
        ),
        (
            r#"{"setStr":["a","a","b","b"]}"#,
            r#"{"setStr":["b","c","d"]}"#,
            r#"{"setStr":["a","a","b","c","d"]}"#,
        ),
        (
            r#"{"setBool":[true]}"#,
            r#"{"setBool":[false]}"#,
            r#"{"setBool":[true,false]}"#,
        ),
        (
            r#"{"setNumeric":[1,2,3.14159]}"#,
            r#"{"setNumeric":[1,2,3]}"#,
            r#"{"setNumeric":[1,2,3.14159,3]}"#,
        ),
        (
            r#"{"setStr":["c","a","g","f","c","a"]}"#,
            r#"{"setStr":["c","f","a","g"]}"#,
            r#"{"setStr":["c","f","a","g"]}"#,
        ),
        (
            r#"{"setBool":[true,false,true]}"#,
            r#"{"setBool":[true]}"#,
            r#"{"setBool":[true,false]}"#,
        ),
        (
            r#"{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}"#,
            r#"{"list":[{"key":"a","id":2,"value":{"a":"a"}}]}"#,
            r#"{"list":[{"key":"a","id":1,"value":{"a":"a"}},{"key":"a","id":2,"value":{"a":"a"}}]}"#,
        ),
        (
            r#"{"list":[{"key":"a","id":1},{"key":"b","id":1}]}"#,
            r#"{"list":[{"key":"a","id":1},{"key":"a","id":2}]}"#,
            r#"{"list":[{"key":"a","id":1},{"key":"b","id":1},{"key":"a","id":2}]}"#,
        ),
        (
            r#"{"list":[{"key":"b","id":2}]}"#,
            r#"{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}"#,
            r#"{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}"#,
        ),
        (
            r#"{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}"#,
            r#"{"list":[{"key":"c","id":3},{"key":"b","id":2}]}"#,
            r#"{"list":[{"key":"a","id":1},{"key":"c","id":3},{"key":"b","id":2}]}"#,
        ),
        (
            r#"{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}"#,
            r#"{"list":[{"key":"c","id":3},{"key":"a","id":1}]}"#,
            r#"{"list":[{"key":"b","id":2},{"key":"c","id":3},{"key":"a","id":1}]}"#,
        ),
        (
            r#"{"atomicList":["a","a","a"]}"#,
            r#"{"atomicList":null}"#,
            r#"{"atomicList":null}"#,
        ),
        (
            r#"{"atomicList":["a","b","c"]}"#,
            r#"{"atomicList":[]}"#,
            r#"{"atomicList":[]}"#,
        ),
        (
            r#"{"list":[{"key":"a","id":1,"bv":true},{"key":"b","id":2},{"key":"a","id":1,"bv":false,"nv":2}]}"#,
            r#"{"list":[{"key":"a","id":1,"nv":3},{"key":"c","id":3},{"key":"b","id":2}]}"#,
            r#"{"list":[{"key":"a","id":1,"nv":3},{"key":"c","id":3},{"key":"b","id":2}]}"#,
        ),
        (
            r#"{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}"#,
            r#"{}"#,
            r#"{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}"#,
        ),
    ];

    #[test]
    fn merges_as_structured_merge_diff_merges() {
        let s = schema_json();
        let schema = Schema::new(Some(&s), true);
        for (lhs, rhs, want) in TRIPLETS {
            let parse = |t: &str| serde_json::from_str::<Value>(t).unwrap();
            let got = merge(&schema, Ty::Root, &parse(lhs), &parse(rhs)).unwrap().unwrap();
            assert!(
                super::super::path::values_equal(&got, &parse(want)),
                "{lhs} + {rhs}: got {got}, want {want}"
            );
        }
        let dup = merge(&schema, Ty::Root, &json!({}), &json!({"setStr": ["a", "a"]}));
        assert_eq!(
            dup.unwrap_err().to_string(),
            ".setStr: duplicate entries for key [=\"a\"]"
        );
    }

    #[test]
    fn removes_fields_and_items() {
        let s = json!({"type": "object", "properties": {
            "list": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                     "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "atomic": {"type": "array", "items": {"type": "string"}},
            "struct": {"type": "object", "properties": {"a": {"type": "string"}}},
        }});
        let schema = Schema::new(Some(&s), true);
        let key = PathElement::Key(vec![("name".into(), json!("b"))]);
        let mut remove = Set::new();
        remove.insert(&[PathElement::Field("list".into()), key]);
        remove.insert(&[PathElement::Field("struct".into()), PathElement::Field("a".into())]);
        let v = json!({"list": [{"name": "a"}, {"name": "b"}], "struct": {"a": "1"}, "atomic": ["x"]});
        assert_eq!(
            remove_items(&schema, Ty::Root, &v, &remove),
            json!({"list": [{"name": "a"}], "struct": null, "atomic": ["x"]})
        );
    }
}
