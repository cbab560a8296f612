//! A set of field paths, as structured-merge-diff's `fieldpath.Set` keeps it: a tree whose every node lists the
//! elements that are themselves in the set (members) and the elements under which deeper paths are (children). A
//! member may also be a child: FieldsV1 writes that as `"."`.

use std::cmp::Ordering;

use super::path::PathElement;

/// A set of paths. Invariants: `members` and `children` are sorted by [`PathElement`]'s order without repeats; no
/// child set is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Set {
    members: Vec<PathElement>,
    children: Vec<(PathElement, Set)>,
}

/// Merges two sorted lists: `pick` is told, for each element present in either (with its counterpart when both have
/// it), what to keep.
fn merge_sorted<'a, T, O>(
    a: &'a [T],
    b: &'a [T],
    key: impl Fn(&T) -> &PathElement,
    mut pick: impl FnMut(Option<&'a T>, Option<&'a T>) -> Option<O>,
) -> Vec<O> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        let ord = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => key(x).cmp(key(y)),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        let kept = match ord {
            Ordering::Less => {
                i += 1;
                pick(Some(&a[i - 1]), None)
            }
            Ordering::Greater => {
                j += 1;
                pick(None, Some(&b[j - 1]))
            }
            Ordering::Equal => {
                i += 1;
                j += 1;
                pick(Some(&a[i - 1]), Some(&b[j - 1]))
            }
        };
        out.extend(kept);
    }
    out
}

fn first<T>(pair: &(PathElement, T)) -> &PathElement {
    &pair.0
}

impl Set {
    /// The empty set.
    pub(crate) fn new() -> Set {
        Set::default()
    }

    /// A set of these paths.
    pub(crate) fn of<'p>(paths: impl IntoIterator<Item = &'p [PathElement]>) -> Set {
        let mut s = Set::new();
        for p in paths {
            s.insert(p);
        }
        s
    }

    /// The elements that are members at this level.
    pub(crate) fn members(&self) -> &[PathElement] {
        &self.members
    }

    /// The elements with members below them, and their sets.
    pub(crate) fn children(&self) -> &[(PathElement, Set)] {
        &self.children
    }

    /// Builds a node from parts; `children` may contain empty sets, which are dropped.
    pub(crate) fn from_parts(mut members: Vec<PathElement>, children: Vec<(PathElement, Set)>) -> Set {
        members.sort();
        members.dedup();
        let mut children: Vec<(PathElement, Set)> = children.into_iter().filter(|(_, s)| !s.is_empty()).collect();
        children.sort_by(|a, b| a.0.cmp(&b.0));
        children.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1 = a.1.union(&b.1);
                true
            } else {
                false
            }
        });
        Set { members, children }
    }

    /// True when no path is in the set.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.iter().all(|(_, s)| s.is_empty())
    }

    /// Adds a path (not its parents). The empty path, the whole object, is never owned: nothing is added.
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut node = self;
        for pe in parents {
            let at = match node.children.binary_search_by(|(p, _)| p.cmp(pe)) {
                Ok(at) => at,
                Err(at) => {
                    node.children.insert(at, (pe.clone(), Set::new()));
                    at
                }
            };
            node = &mut node.children[at].1;
        }
        if let Err(at) = node.members.binary_search(last) {
            node.members.insert(at, last.clone());
        }
    }

    /// True when `path` is a member.
    pub(crate) fn has(&self, path: &[PathElement]) -> bool {
        let Some((last, parents)) = path.split_last() else {
            return false;
        };
        let mut node = self;
        for pe in parents {
            match node.child(pe) {
                Some(next) => node = next,
                None => return false,
            }
        }
        node.members.binary_search(last).is_ok()
    }

    /// True when `pe` is a member at this level.
    pub(crate) fn has_member(&self, pe: &PathElement) -> bool {
        self.members.binary_search(pe).is_ok()
    }

    /// The paths below `pe`, without it (`None`: none).
    pub(crate) fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children
            .binary_search_by(|(p, _)| p.cmp(pe))
            .ok()
            .map(|at| &self.children[at].1)
    }

    /// The paths in either set.
    pub(crate) fn union(&self, other: &Set) -> Set {
        Set {
            members: merge_sorted(&self.members, &other.members, |p| p, |a, b| a.or(b).cloned()),
            children: merge_sorted(&self.children, &other.children, first, |a, b| match (a, b) {
                (Some((pe, x)), Some((_, y))) => Some((pe.clone(), x.union(y))),
                (x, y) => x.or(y).cloned(),
            }),
        }
    }

    /// The paths in both sets.
    pub(crate) fn intersection(&self, other: &Set) -> Set {
        Set {
            members: merge_sorted(&self.members, &other.members, |p| p, |a, b| a.and(b).cloned()),
            children: merge_sorted(&self.children, &other.children, first, |a, b| match (a, b) {
                (Some((pe, x)), Some((_, y))) => Some((pe.clone(), x.intersection(y))).filter(|(_, s)| !s.is_empty()),
                _ => None,
            }),
        }
    }

    /// This set's members that are not `other`'s.
    fn members_not_in(&self, other: &Set) -> Vec<PathElement> {
        merge_sorted(
            &self.members,
            &other.members,
            |p| p,
            |a, b| match (a, b) {
                (Some(a), None) => Some(a.clone()),
                _ => None,
            },
        )
    }

    /// The paths of this set that `other` does not have. A member of `other` removes only itself, not the paths
    /// below it.
    pub(crate) fn difference(&self, other: &Set) -> Set {
        Set {
            members: self.members_not_in(other),
            children: merge_sorted(&self.children, &other.children, first, |a, b| match (a, b) {
                (Some((pe, x)), Some((_, y))) => Some((pe.clone(), x.difference(y))).filter(|(_, s)| !s.is_empty()),
                (Some(x), None) => Some(x.clone()),
                _ => None,
            }),
        }
    }

    /// As [`difference`](Self::difference), but a member of `other` also removes every path below it.
    pub(crate) fn recursive_difference(&self, other: &Set) -> Set {
        Set {
            members: self.members_not_in(other),
            children: self
                .children
                .iter()
                .filter(|(pe, _)| !other.has_member(pe))
                .filter_map(|(pe, s)| {
                    let rest = match other.child(pe) {
                        Some(o) => s.recursive_difference(o),
                        None => s.clone(),
                    };
                    (!rest.is_empty()).then(|| (pe.clone(), rest))
                })
                .collect(),
        }
    }

    /// Only the paths under (and at) the top-level element `pe`.
    pub(crate) fn only(&self, pe: &PathElement) -> Set {
        Set {
            members: self.members.iter().filter(|m| *m == pe).cloned().collect(),
            children: self.children.iter().filter(|(p, _)| p == pe).cloned().collect(),
        }
    }

    /// Calls `f` with every member's path, depth first: a node's members, then its children in order (the order
    /// structured-merge-diff lists conflicts in).
    pub(crate) fn for_each_path(&self, f: &mut dyn FnMut(&[PathElement])) {
        let mut prefix = Vec::new();
        self.walk(&mut prefix, f);
    }

    fn walk(&self, prefix: &mut Vec<PathElement>, f: &mut dyn FnMut(&[PathElement])) {
        for m in &self.members {
            prefix.push(m.clone());
            f(prefix);
            prefix.pop();
        }
        for (pe, s) in &self.children {
            prefix.push(pe.clone());
            s.walk(prefix, f);
            prefix.pop();
        }
    }

    /// Every member's path, in [`for_each_path`](Self::for_each_path)'s order.
    pub(crate) fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.for_each_path(&mut |p| out.push(p.to_vec()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    fn p(parts: &[&str]) -> Vec<PathElement> {
        parts.iter().map(|s| f(s)).collect()
    }

    fn set(paths: &[&[&str]]) -> Set {
        let owned: Vec<Vec<PathElement>> = paths.iter().map(|x| p(x)).collect();
        Set::of(owned.iter().map(Vec::as_slice))
    }

    // Cases from structured-merge-diff's fieldpath/set_test.go.
    #[test]
    fn set_operations() {
        let s1 = set(&[&["a", "b"], &["a", "c"], &["d"]]);
        let s2 = set(&[&["a", "b"], &["e"]]);
        assert_eq!(s1.union(&s2), set(&[&["a", "b"], &["a", "c"], &["d"], &["e"]]));
        assert_eq!(s1.intersection(&s2), set(&[&["a", "b"]]));
        assert_eq!(s1.difference(&s2), set(&[&["a", "c"], &["d"]]));
        // parent - child = parent; child - parent = child (a member removes only itself)...
        let parent = set(&[&["a"]]);
        let child = set(&[&["a", "b"]]);
        assert_eq!(parent.difference(&child), parent);
        assert_eq!(child.difference(&parent), child);
        // ...unless the difference is recursive.
        assert!(child.recursive_difference(&parent).is_empty());
        let deep = set(&[&["a", "b", "c"], &["a", "d"], &["x"]]);
        assert_eq!(
            deep.recursive_difference(&set(&[&["a", "b"]])),
            set(&[&["a", "d"], &["x"]])
        );
        assert!(deep.has(&p(&["a", "b", "c"])) && !deep.has(&p(&["a", "b"])) && !deep.has(&[]));
        assert!(Set::new().is_empty() && !deep.is_empty());
        let mut empty = Set::new();
        empty.insert(&[]);
        assert!(empty.is_empty(), "the whole object is never owned");
        assert_eq!(deep.only(&f("a")), set(&[&["a", "b", "c"], &["a", "d"]]));
    }

    #[test]
    fn paths_come_members_first_then_children() {
        let s = set(&[
            &["spec", "z"],
            &["spec", "b", "c"],
            &["spec", "a"],
            &["metadata", "labels", "x"],
        ]);
        let printed: Vec<String> = s.paths().iter().map(|p| super::super::path::path_string(p)).collect();
        assert_eq!(printed, [".metadata.labels.x", ".spec.a", ".spec.z", ".spec.b.c"]);
        let mut with_key = Set::new();
        with_key.insert(&[f("list"), PathElement::Key(vec![("name".into(), json!("a"))])]);
        with_key.insert(&[
            f("list"),
            PathElement::Key(vec![("name".into(), json!("a"))]),
            f("name"),
        ]);
        assert!(with_key.has(&[f("list"), PathElement::Key(vec![("name".into(), json!("a"))])]));
        assert_eq!(with_key.paths().len(), 2);
    }
}
