//! What changed between two values of one type, as structured-merge-diff's `Compare` finds it: the fields the right
//! side removed, modified and added. A field whose parent is absent on one side counts with its parent: a map or
//! associative list item that appears is itself added (FieldsV1's `"."`), beside what it holds.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::path::{PathElement, values_equal};
use super::schema::{Atom, List, MapType, Schema, Ty};
use super::set::Set;
use super::typed::{item_element, scalar_problem};

/// The result of a comparison; no field is in two of the sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    pub(crate) removed: Set,
    pub(crate) modified: Set,
    pub(crate) added: Set,
}

impl Comparison {
    /// Applies a filter to the three sets.
    pub(crate) fn filtered(self, f: impl Fn(Set) -> Set) -> Comparison {
        Comparison {
            removed: f(self.removed),
            modified: f(self.modified),
            added: f(self.added),
        }
    }
}

/// Compares `lhs` with `rhs`, both of type `ty`.
pub(crate) fn compare<'s>(schema: &Schema<'s>, ty: Ty<'s>, lhs: &Value, rhs: &Value) -> Comparison {
    let mut w = Walker {
        schema,
        path: Vec::new(),
        out: Comparison::default(),
    };
    w.compare(ty, Some(lhs), Some(rhs));
    w.out
}

/// A step of the path walked: fields are borrowed from the values (most fields visited are unchanged, and their
/// paths never owned).
enum Step<'v> {
    Field(&'v str),
    Item(PathElement),
}

struct Walker<'a, 's, 'v> {
    schema: &'a Schema<'s>,
    path: Vec<Step<'v>>,
    out: Comparison,
}

fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn as_list(v: Option<&Value>) -> Option<&Vec<Value>> {
    v.and_then(Value::as_array)
}

/// The keys of two sorted maps, each once, in order, with their values on each side.
fn zip<'v>(
    l: Option<&'v Map<String, Value>>,
    r: Option<&'v Map<String, Value>>,
) -> impl Iterator<Item = (&'v str, Option<&'v Value>, Option<&'v Value>)> {
    let mut li = l.into_iter().flat_map(Map::iter).peekable();
    let mut ri = r.into_iter().flat_map(Map::iter).peekable();
    std::iter::from_fn(move || match (li.peek(), ri.peek()) {
        (None, None) => None,
        (Some((lk, _)), Some((rk, _))) if lk == rk => {
            let ((k, lv), (_, rv)) = (li.next()?, ri.next()?);
            Some((k.as_str(), Some(lv), Some(rv)))
        }
        (Some((lk, _)), Some((rk, _))) if lk.as_str() > rk.as_str() => {
            let (k, rv) = ri.next()?;
            Some((k.as_str(), None, Some(rv)))
        }
        (Some(_), _) => {
            let (k, lv) = li.next()?;
            Some((k.as_str(), Some(lv), None))
        }
        (None, Some(_)) => {
            let (k, rv) = ri.next()?;
            Some((k.as_str(), None, Some(rv)))
        }
    })
}

#[derive(Clone, Copy)]
enum Which {
    Removed,
    Modified,
    Added,
}

impl<'s, 'v> Walker<'_, 's, 'v> {
    /// Inserts the current path, made owned, into one of the sets.
    fn insert(&mut self, which: Which) {
        let path: Vec<PathElement> = self
            .path
            .iter()
            .map(|s| match s {
                Step::Field(f) => PathElement::Field((*f).to_owned()),
                Step::Item(pe) => pe.clone(),
            })
            .collect();
        let set = match which {
            Which::Removed => &mut self.out.removed,
            Which::Modified => &mut self.out.modified,
            Which::Added => &mut self.out.added,
        };
        set.insert(&path);
    }

    fn compare(&mut self, ty: Ty<'s>, lhs: Option<&'v Value>, rhs: Option<&'v Value>) {
        let atom = self.schema.atom(ty);
        let (al, ar) = (atom.deduce(lhs), atom.deduce(rhs));
        let mut leaf = false;
        if rhs.is_none() {
            self.handle(al, lhs, rhs, &mut leaf);
        } else if lhs.is_none() || al.same_kinds(&ar) {
            self.handle(ar, lhs, rhs, &mut leaf);
        } else {
            // The value changed kind (an untyped field): both readings count.
            let mut other_leaf = leaf;
            self.handle(al, lhs, rhs, &mut other_leaf);
            self.handle(ar, lhs, rhs, &mut leaf);
        }
        if !leaf {
            if lhs.is_none() {
                self.insert(Which::Added);
            } else if rhs.is_none() {
                self.insert(Which::Removed);
            }
        }
    }

    fn handle(&mut self, atom: Atom<'s>, lhs: Option<&'v Value>, rhs: Option<&'v Value>, leaf: &mut bool) {
        if let Some(m) = atom.map {
            self.map(m, lhs, rhs, leaf);
        } else if let Some(s) = atom.scalar {
            let bad = |v: Option<&Value>| v.is_some_and(|v| scalar_problem(s, v).is_some());
            if !(bad(lhs) && bad(rhs)) {
                self.leaf(lhs, rhs, leaf);
            }
        } else if let Some(l) = atom.list {
            self.list(l, lhs, rhs, leaf);
        }
    }

    fn leaf(&mut self, lhs: Option<&Value>, rhs: Option<&Value>, leaf: &mut bool) {
        if *leaf {
            return;
        }
        *leaf = true;
        match (lhs, rhs) {
            (None, _) => self.insert(Which::Added),
            (_, None) => self.insert(Which::Removed),
            (Some(l), Some(r)) if !values_equal(l, r) => self.insert(Which::Modified),
            _ => {}
        }
    }

    fn map(&mut self, m: MapType<'s>, lhs: Option<&'v Value>, rhs: Option<&'v Value>, leaf: &mut bool) {
        let (lm, rm) = (as_map(lhs), as_map(rhs));
        let empty = |x: Option<&Map<String, Value>>| x.is_none_or(Map::is_empty);
        if m.atomic || (empty(lm) && empty(rm)) {
            return self.leaf(lhs, rhs, leaf);
        }
        for (k, lv, rv) in zip(lm, rm) {
            self.path.push(Step::Field(k));
            self.compare(m.child(k), lv, rv);
            self.path.pop();
        }
    }

    fn list(&mut self, l: List<'s>, lhs: Option<&'v Value>, rhs: Option<&'v Value>, leaf: &mut bool) {
        let (ll, rl) = (as_list(lhs), as_list(rhs));
        let empty = |x: Option<&Vec<Value>>| x.is_none_or(Vec::is_empty);
        if !l.associative() || (empty(ll) && empty(rl)) {
            return self.leaf(lhs, rhs, leaf);
        }
        // Every element on either side, in order of first appearance, with its items on each side.
        let mut order: Vec<PathElement> = Vec::new();
        let mut sides: BTreeMap<PathElement, (Vec<&'v Value>, Vec<&'v Value>)> = BTreeMap::new();
        for (items, right) in [(ll, false), (rl, true)] {
            for item in items.into_iter().flatten() {
                let Ok(pe) = item_element(self.schema, &l, item) else {
                    continue;
                };
                let entry = sides.entry(pe.clone()).or_insert_with(|| {
                    order.push(pe);
                    (Vec::new(), Vec::new())
                });
                if right {
                    entry.1.push(item);
                } else {
                    entry.0.push(item);
                }
            }
        }
        for pe in order {
            let (left, right) = sides.remove(&pe).unwrap_or_default();
            self.path.push(Step::Item(pe));
            match (left.len(), right.len()) {
                (0..=1, 0..=1) => self.compare(l.elem, left.first().copied(), right.first().copied()),
                // Repeated on both sides: compared whole.
                (2.., 2..) => {
                    let same = left.len() == right.len() && left.iter().zip(&right).all(|(a, b)| values_equal(a, b));
                    if !same {
                        self.insert(Which::Modified);
                    }
                }
                // No longer repeated: the single item is new, the repeated ones are gone.
                (2.., _) => {
                    if let Some(r) = right.first() {
                        self.compare(l.elem, None, Some(r));
                    }
                    self.insert(Which::Removed);
                }
                (_, _) => {
                    if let Some(x) = left.first() {
                        self.compare(l.elem, Some(x), None);
                    }
                    self.insert(Which::Added);
                }
            }
            self.path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fields_v1::encode;
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_removed_modified_and_added_fields() {
        let s = json!({"type": "object", "properties": {
            "list": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                     "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "atomic": {"type": "array", "items": {"type": "string"}},
        }});
        let schema = Schema::new(Some(&s), true);
        let c = compare(
            &schema,
            Ty::Root,
            &json!({"list": [{"name": "a", "v": 1}, {"name": "b"}], "atomic": ["x"], "keep": 1}),
            &json!({"list": [{"name": "a", "v": 2}, {"name": "c"}], "atomic": ["x"], "labels": {"k": "v"}}),
        );
        assert_eq!(
            encode(&c.modified),
            json!({"f:list": {"k:{\"name\":\"a\"}": {"f:v": {}}}})
        );
        assert_eq!(
            encode(&c.added),
            json!({"f:labels": {".": {}, "f:k": {}}, "f:list": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}}}})
        );
        assert_eq!(
            encode(&c.removed),
            json!({"f:keep": {}, "f:list": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}}}})
        );
        // Repeated items: compared whole.
        let d = compare(
            &schema,
            Ty::Root,
            &json!({"list": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]}),
            &json!({"list": [{"name": "a", "v": 1}]}),
        );
        assert_eq!(encode(&d.removed), json!({"f:list": {"k:{\"name\":\"a\"}": {}}}));
        // (The single item left is new, and so are its fields.)
        assert_eq!(
            encode(&d.added),
            json!({"f:list": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:v": {}}}})
        );
        // Equal numbers in different forms are equal.
        assert_eq!(
            compare(&schema, Ty::Root, &json!({"x": 1}), &json!({"x": 1.0})),
            Comparison::default()
        );
    }
}
