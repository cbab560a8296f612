//! Values walked with their [`Schema`], as structured-merge-diff's `typed` package walks them: validation (what
//! makes an applied configuration unusable), the set of fields a value sets, the element naming a list item, and the
//! named fields a set's parents imply. Comparison, merging and removal live beside this file.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

use super::path::{PathElement, go_quote};
use super::schema::{Atom, List, ListKind, Scalar, Schema, Ty};
use super::set::Set;

/// A problem of a value against its schema: where (a printed path), and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValidationError {
    pub(crate) path: String,
    pub(crate) message: String,
}

/// Every problem found; printed as structured-merge-diff prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ValidationErrors(pub(crate) Vec<ValidationError>);

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0[..] {
            [] => Ok(()),
            [one] => write!(f, "{one}"),
            all => {
                f.write_str("errors:")?;
                for e in all {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
        }
    }
}

impl ValidationErrors {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The element naming `item` in an associative list (its key fields, or its value for a set), or why there is
/// none.
pub(crate) fn item_element(schema: &Schema<'_>, list: &List<'_>, item: &Value) -> Result<PathElement, String> {
    match list.kind {
        ListKind::Atomic => Err("invalid indexing of non-associative list".to_owned()),
        ListKind::Set => match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".to_owned()),
            Value::Array(_) => Err("not supported: associative list with lists as elements".to_owned()),
            Value::Null => Err("associative list without keys has an element that's an explicit null".to_owned()),
            v => Ok(PathElement::Value(v.clone())),
        },
        ListKind::Map(_) | ListKind::MergeKey(_) => {
            let m = match item {
                Value::Null => return Err("associative list with keys may not have a null element".to_owned()),
                Value::Object(m) => m,
                _ => return Err("associative list with keys may not have non-map elements".to_owned()),
            };
            let keys = list.keys();
            let mut fields: Vec<(String, Value)> = keys
                .iter()
                .filter_map(|k| match m.get(*k) {
                    Some(v) => Some(((*k).to_owned(), v.clone())),
                    None => schema.key_default(list, k).map(|d| ((*k).to_owned(), d)),
                })
                .collect();
            if fields.is_empty() {
                let quoted: Vec<String> = keys.iter().map(|k| go_quote(k)).collect();
                return Err(format!(
                    "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                    quoted.join(" ")
                ));
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(PathElement::Key(fields))
        }
    }
}

/// Go's `%T` of a decoded JSON value, as structured-merge-diff's messages print it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Walks of one schema.
pub(crate) struct Typed<'a, 's> {
    pub(crate) schema: &'a Schema<'s>,
}

impl<'s> Typed<'_, 's> {
    /// The problems of `v` as a value of `ty`; repeated items of associative lists are problems unless
    /// `allow_duplicates` (kube-apiserver allows them in stored objects, not in applied configurations).
    pub(crate) fn validate(&self, ty: Ty<'s>, v: &Value, allow_duplicates: bool) -> ValidationErrors {
        let mut errs = Vec::new();
        self.validate_at(ty, v, allow_duplicates, &mut String::new(), &mut errs);
        ValidationErrors(errs)
    }

    fn validate_at(&self, ty: Ty<'s>, v: &Value, dups: bool, path: &mut String, errs: &mut Vec<ValidationError>) {
        let atom = self.schema.atom(ty).deduce(Some(v));
        if let Some(m) = atom.map {
            let obj = match v {
                Value::Null => return,
                Value::Object(obj) => obj,
                other => return fail(errs, path, format!("expected map, got {other}")),
            };
            for (k, child) in obj {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                let Some(t) = m.field(k).or(m.elem()) else {
                    fail(errs, path, "field not declared in schema".to_owned());
                    path.truncate(len);
                    return;
                };
                self.validate_at(t, child, dups, path, errs);
                path.truncate(len);
            }
        } else if let Some(s) = atom.scalar {
            if let Some(message) = scalar_problem(s, v) {
                fail(errs, path, message);
            }
        } else if let Some(list) = atom.list {
            let items = match v {
                Value::Null => return,
                Value::Array(items) => items,
                other => return fail(errs, path, format!("expected list, got {other}")),
            };
            let mut seen = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let pe = if list.associative() {
                    match item_element(self.schema, &list, item) {
                        Ok(pe) => pe,
                        Err(e) => return fail(errs, path, format!("element {i}: {e}")),
                    }
                } else {
                    PathElement::Index(i as i64)
                };
                if list.associative() && !seen.insert(pe.clone()) && !dups {
                    fail(errs, path, format!("duplicate entries for key {pe}"));
                }
                let len = path.len();
                path.push_str(&pe.to_string());
                self.validate_at(list.elem, item, dups, path, errs);
                path.truncate(len);
            }
        } else {
            fail(errs, path, "schema error: invalid atom: inlined".to_owned());
        }
    }

    /// Every field `v` sets, as structured-merge-diff's `ToFieldSet` lists them: leaves, associative list items,
    /// undeclared map keys, empty or null maps; declared fields with members below them are not listed themselves.
    pub(crate) fn to_set(&self, ty: Ty<'s>, v: &Value) -> Set {
        let mut set = Set::new();
        self.to_set_at(ty, v, &mut Vec::new(), &mut set);
        set
    }

    fn to_set_at(&self, ty: Ty<'s>, v: &Value, path: &mut Vec<PathElement>, set: &mut Set) {
        let atom: Atom<'s> = self.schema.atom(ty).deduce(Some(v));
        if let Some(m) = atom.map {
            if m.atomic {
                return set.insert(path);
            }
            let Value::Object(obj) = v else { return };
            for (k, child) in obj {
                path.push(PathElement::Field(k.clone()));
                self.to_set_at(m.child(k), child, path, set);
                let empty = matches!(child, Value::Null) || matches!(child, Value::Object(o) if o.is_empty());
                if empty || !m.declares(k) {
                    set.insert(path);
                }
                path.pop();
            }
        } else if atom.scalar.is_some() {
            set.insert(path);
        } else if let Some(list) = atom.list {
            if !list.associative() {
                return set.insert(path);
            }
            let Value::Array(items) = v else { return };
            let elements: Vec<Option<PathElement>> =
                items.iter().map(|i| item_element(self.schema, &list, i).ok()).collect();
            // Items repeated in a stored object are owned as one item, never field by field.
            let mut seen = BTreeSet::new();
            let mut repeated = BTreeSet::new();
            for pe in elements.iter().flatten() {
                if !seen.insert(pe) && repeated.insert(pe) {
                    path.push(pe.clone());
                    set.insert(path);
                    path.pop();
                }
            }
            for (item, pe) in items.iter().zip(&elements) {
                let Some(pe) = pe.as_ref().filter(|pe| !repeated.contains(pe)) else {
                    continue;
                };
                path.push(pe.clone());
                self.to_set_at(list.elem, item, path, set);
                set.insert(path);
                path.pop();
            }
        }
    }

    /// `set` with every declared field that has members below it made a member too (structured-merge-diff's
    /// `EnsureNamedFieldsAreMembers`): what removing a manager's fields must remove whole.
    pub(crate) fn with_named_fields(&self, set: &Set, ty: Option<Ty<'s>>) -> Set {
        let atom = ty.map(|t| self.schema.atom(t)).unwrap_or_default();
        let mut members = set.members().to_vec();
        let mut children = Vec::with_capacity(set.children().len());
        for (pe, child) in set.children() {
            let child_ty = match (pe, atom.map, atom.list) {
                (PathElement::Field(name), Some(m), _) => {
                    if m.declares(name) {
                        members.push(pe.clone());
                    }
                    m.field(name).or(m.elem())
                }
                (PathElement::Key(_), _, Some(l)) => Some(l.elem),
                _ => None,
            };
            children.push((pe.clone(), self.with_named_fields(child, child_ty)));
        }
        Set::from_parts(members, children)
    }
}

fn fail(errs: &mut Vec<ValidationError>, path: &str, message: String) {
    errs.push(ValidationError {
        path: path.to_owned(),
        message,
    });
}

/// What is wrong with `v` as a scalar of type `s` (nothing when null).
pub(crate) fn scalar_problem(s: Scalar, v: &Value) -> Option<String> {
    let ok = matches!(
        (s, v),
        (_, Value::Null)
            | (Scalar::Numeric, Value::Number(_))
            | (Scalar::String, Value::String(_))
            | (Scalar::Boolean, Value::Bool(_))
            | (Scalar::Untyped, Value::Number(_) | Value::String(_) | Value::Bool(_))
    );
    (!ok).then(|| match s {
        Scalar::Numeric => format!("expected numeric (int or float), got {}", go_type(v)),
        Scalar::String => format!("expected string, got {v}"),
        Scalar::Boolean => format!("expected boolean, got {v}"),
        Scalar::Untyped => format!("expected any scalar, got {v}"),
    })
}

#[cfg(test)]
mod tests {
    use super::super::fields_v1;
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "list": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                     "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "number"}}}},
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "atomic": {"type": "array", "items": {"type": "string"}},
            "struct": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "object", "properties": {"c": {"type": "integer"}}}}},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "whole": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"x": {"type": "string"}}},
        }})
    }

    #[test]
    fn field_sets_list_what_apply_owns() {
        let s = schema();
        let schema = Schema::new(Some(&s), true);
        let t = Typed { schema: &schema };
        let v = json!({
            "list": [{"name": "a", "value": 1}, {"name": "b"}],
            "set": ["x", "y"],
            "atomic": ["p"],
            "struct": {"a": "1", "b": {}},
            "map": {"k": "v"},
            "whole": {"x": "1"},
        });
        assert_eq!(
            fields_v1::encode(&t.to_set(Ty::Root, &v)),
            json!({
                "f:atomic": {},
                "f:list": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:value": {}}, "k:{\"name\":\"b\"}": {".": {}, "f:name": {}}},
                "f:map": {"f:k": {}},
                "f:set": {"v:\"x\"": {}, "v:\"y\"": {}},
                "f:struct": {"f:a": {}, "f:b": {}},
                "f:whole": {},
            })
        );
        // Repeated items in a stored object are owned whole.
        let dup = json!({"list": [{"name": "a", "value": 1}, {"name": "a", "value": 2}]});
        assert_eq!(
            fields_v1::encode(&t.to_set(Ty::Root, &dup)),
            json!({"f:list": {"k:{\"name\":\"a\"}": {}}})
        );
    }

    #[test]
    fn validation_reports_what_structured_merge_diff_reports() {
        let s = schema();
        let schema = Schema::new(Some(&s), true);
        let t = Typed { schema: &schema };
        let errs = |v: Value, dups: bool| t.validate(Ty::Root, &v, dups).to_string();
        assert_eq!(errs(json!({"list": [{"name": "a"}, {"name": "a"}]}), true), "");
        assert_eq!(
            errs(json!({"list": [{"name": "a"}, {"name": "a"}]}), false),
            ".list: duplicate entries for key [name=\"a\"]"
        );
        assert_eq!(
            errs(json!({"struct": {"z": 1}}), false),
            ".struct.z: field not declared in schema"
        );
        assert_eq!(
            errs(json!({"list": [{"value": 1}]}), false),
            ".list: element 0: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)"
        );
        assert_eq!(
            errs(json!({"struct": {"b": {"c": "x"}}, "set": [{}]}), false),
            "errors:\n  .set: element 0: associative list without keys has an element that's a map type\n  .struct.b.c: expected numeric (int or float), got string"
        );
        assert_eq!(errs(json!({"map": 1}), false), ".map: expected map, got 1");
        assert_eq!(
            errs(json!({"atomic": {"a": 1}}), false),
            ".atomic: expected list, got {\"a\":1}"
        );
        assert_eq!(
            errs(json!({"metadata": {"labels": {"a": "b"}}, "apiVersion": "v1"}), false),
            ""
        );
    }

    #[test]
    fn named_fields_become_members() {
        let s = schema();
        let schema = Schema::new(Some(&s), true);
        let t = Typed { schema: &schema };
        let set = t.to_set(
            Ty::Root,
            &json!({"struct": {"b": {"c": 1}}, "map": {"k": "v"}, "list": [{"name": "a"}]}),
        );
        let named = t.with_named_fields(&set, Some(Ty::Root));
        assert_eq!(
            fields_v1::encode(&named),
            json!({
                "f:list": {".": {}, "k:{\"name\":\"a\"}": {".": {}, "f:name": {}}},
                "f:map": {".": {}, "f:k": {}},
                "f:struct": {".": {}, "f:b": {".": {}, "f:c": {}}},
            })
        );
    }
}
