//! The order of a merged list: which items the patch names, and how the patch's order and the original's combine.
//!
//! Lookups go through hash maps of each item's identity (its merge key's value, or the primitive itself, as compact
//! JSON), so a list of n items costs O(n log n), not the O(n²) of comparing every pair.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::fmt::go_v_lists;
use super::{DIRECTIVE, NO_LIST_OF_LISTS, Result, StrategicMergeError, bad_arg_type, internal, no_merge_key};

/// The JSON type of a list's items as Go's decoder types them (integers and other numbers differ, as `int64` and
/// `float64` do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Null,
    Bool,
    Int,
    Float,
    String,
    Map,
    List,
}

impl Kind {
    pub(super) fn of(v: &Value) -> Kind {
        match v {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(n) if n.is_i64() => Kind::Int,
            Value::Number(_) => Kind::Float,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::List,
            Value::Object(_) => Kind::Map,
        }
    }
}

/// The one type of every item of these lists.
pub(super) fn element_kind(lists: &[&Vec<Value>]) -> Result<Kind> {
    let mut kind = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let k = Kind::of(v);
        match kind {
            None if k == Kind::List => return Err(StrategicMergeError::Invalid(NO_LIST_OF_LISTS.into())),
            None if k == Kind::Null => return Err(internal("a list item is null".into())),
            None => kind = Some(k),
            Some(prev) if prev != k => {
                return Err(internal(format!(
                    "list element types are not identical: {}",
                    go_v_lists(lists)
                )));
            }
            Some(_) => {}
        }
    }
    kind.ok_or_else(|| internal("no elements in any of the given slices".into()))
}

/// An item's identity for lookups: compact JSON, which tells `1` from `1.0` and `"1"` as Go's equality does.
pub(super) fn key_of(v: &Value) -> String {
    v.to_string()
}

/// The identity of an item of a list of maps, by merge key (Go compares a missing key as `nil`, equal to another).
fn map_key_of(v: &Value, merge_key: &str) -> String {
    match v.as_object().and_then(|m| m.get(merge_key)) {
        Some(k) => key_of(k),
        None => "\u{0}absent".into(),
    }
}

/// Where items stand in a list: the first position of each identity.
struct Positions {
    first: HashMap<String, usize>,
    merge_key: Option<String>,
}

impl Positions {
    fn new(list: &[Value], merge_key: &str, kind: Kind) -> Positions {
        let merge_key = (kind == Kind::Map).then(|| merge_key.to_owned());
        let mut first = HashMap::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            first.entry(Self::identity(&merge_key, v)).or_insert(i);
        }
        Positions { first, merge_key }
    }

    fn identity(merge_key: &Option<String>, v: &Value) -> String {
        match merge_key {
            Some(k) => map_key_of(v, k),
            None => key_of(v),
        }
    }

    fn of(&self, v: &Value) -> Option<usize> {
        self.first.get(&Self::identity(&self.merge_key, v)).copied()
    }
}

/// Splits `merged` into the items `by` names (by merge key, or equal primitives) and the others, keeping order.
pub(super) fn partition(merged: Vec<Value>, by: &[Value], merge_key: &str) -> Result<(Vec<Value>, Vec<Value>)> {
    let (mut named, mut others) = (Vec::with_capacity(merged.len()), Vec::new());
    if merge_key.is_empty() {
        let set: HashSet<String> = by.iter().map(key_of).collect();
        for v in merged {
            if set.contains(&key_of(&v)) {
                named.push(v)
            } else {
                others.push(v)
            }
        }
        return Ok((named, others));
    }
    // apimachinery scans `by` for each item and fails on an item that is not a map before it finds a match.
    let first_non_map = by.iter().position(|v| !v.is_object());
    let mut first: HashMap<String, usize> = HashMap::new();
    for (i, v) in by.iter().enumerate() {
        if let Some(k) = v.as_object().and_then(|m| m.get(merge_key)) {
            first.entry(key_of(k)).or_insert(i);
        }
    }
    for v in merged {
        let Value::Object(m) = &v else {
            return Err(bad_arg_type("map[string]interface {}", &v));
        };
        let k = m.get(merge_key).ok_or_else(|| no_merge_key(m, merge_key))?;
        let found = first.get(&key_of(k)).copied();
        match (found, first_non_map) {
            (found, Some(bad)) if found.is_none_or(|f| f > bad) => {
                return Err(internal(format!("value for key {bad} is not a map")));
            }
            (Some(_), _) => named.push(v),
            (None, _) => others.push(v),
        }
    }
    Ok((named, others))
}

/// Orders `patch` items by `patch_order` and `server_only` items by `server_order`, then interleaves them: a
/// server-only item goes before a patch item when the server's order puts it first; otherwise patch items come first.
pub(super) fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    let positions = Positions::new(server_order, merge_key, kind);
    let left: Vec<Option<usize>> = server_only.iter().map(|v| positions.of(v)).collect();
    let right: Vec<Option<usize>> = patch.iter().map(|v| positions.of(v)).collect();
    let mut out = Vec::with_capacity(patch.len() + server_only.len());
    let (mut l, mut r) = (
        server_only.into_iter().zip(left).peekable(),
        patch.into_iter().zip(right).peekable(),
    );
    loop {
        let take_left = match (l.peek(), r.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((_, a)), Some((_, b))) => matches!((a, b), (Some(a), Some(b)) if a < b),
        };
        let next = if take_left { l.next() } else { r.next() };
        out.extend(next.map(|(v, _)| v));
    }
    Ok(out)
}

/// Sorts `items` by their position in `order`, stably; items of a list of maps marked `$patch: delete` go last.
fn normalize_slice_order(items: Vec<Value>, order: &[Value], merge_key: &str, kind: Kind) -> Result<Vec<Value>> {
    let (mut items, deleted) = if kind == Kind::Map {
        for v in items.iter().chain(order) {
            let Value::Object(m) = v else {
                return Err(bad_arg_type("map[string]interface {}", v));
            };
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        items.into_iter().partition::<Vec<_>, _>(|v| !is_delete(v))
    } else {
        (items, Vec::new())
    };
    let positions = Positions::new(order, merge_key, kind);
    let ranks: Vec<Option<usize>> = items.iter().map(|v| positions.of(v)).collect();
    let mut ranked: Vec<(Option<usize>, Value)> = ranks.into_iter().zip(items.drain(..)).collect();
    sort_like_go(&mut ranked);
    items.extend(ranked.into_iter().map(|(_, v)| v));
    items.extend(deleted);
    Ok(items)
}

fn is_delete(v: &Value) -> bool {
    v.as_object()
        .and_then(|m: &Map<String, Value>| m.get(DIRECTIVE))
        .and_then(Value::as_str)
        == Some("delete")
}

/// apimachinery sorts with Go's stable sort and a comparison that calls an item "less" whenever either side is
/// missing from the order list. With every item present that is an ordinary stable sort by position; otherwise the
/// result depends on the algorithm, which for lists of up to 20 items is insertion sort (reproduced here). Longer
/// lists with unplaced items (only malformed patches make them) get the unplaced items first, in their order.
fn sort_like_go(items: &mut [(Option<usize>, Value)]) {
    if items.iter().all(|(r, _)| r.is_some()) {
        items.sort_by_key(|(r, _)| *r);
    } else if items.len() <= 20 {
        let less = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (Some(a), Some(b)) => a < b,
            _ => true,
        };
        for i in 1..items.len() {
            let mut j = i;
            while j > 0 && less(items[j].0, items[j - 1].0) {
                items.swap(j, j - 1);
                j -= 1;
            }
        }
    } else {
        items.sort_by_key(|(r, _)| r.map(|r| r + 1).unwrap_or(0));
    }
}

/// The original list of a `$setElementOrder` merge as apimachinery reads it back afterwards to order the result.
///
/// apimachinery removes `$patch: delete` items by shifting the rest left within the original list's storage and
/// appends new items to what remains, in that same storage; when it then orders the merged list it reads the
/// original list through its old length. So it sees the surviving items, then the new items in the places the
/// deleted ones left, then (if fewer were added than deleted) copies of the list's last item as it stood before
/// each deletion. The order of results depends on it, so it is reproduced: O(n) for a list of n items.
pub(super) fn aliased_original(current: &[Value], patch: &[Value], merge_key: &str) -> Vec<Value> {
    let n = current.len();
    let identity = |v: &Value| v.as_object().and_then(|m| m.get(merge_key)).map(key_of);
    let mut count: HashMap<String, usize> = HashMap::new();
    for k in current.iter().filter_map(identity) {
        *count.entry(k).or_default() += 1;
    }
    let mut deleted: HashSet<String> = HashSet::new();
    // (first position of the stale run, its end, the value copied there), one per deletion that removed items.
    let mut stale: Vec<(usize, usize, usize)> = Vec::new();
    let (mut len, mut last) = (n, n.checked_sub(1));
    let mut replaced = false;
    for item in patch {
        match item.get(DIRECTIVE).and_then(Value::as_str) {
            Some("delete") => {
                let Some(k) = item.get(merge_key).map(key_of) else {
                    continue;
                };
                let removed = if deleted.contains(&k) {
                    0
                } else {
                    count.get(&k).copied().unwrap_or(0)
                };
                if removed == 0 {
                    continue;
                }
                deleted.insert(k);
                if let Some(l) = last {
                    stale.push((len - removed, len, l));
                }
                len -= removed;
                // The list's last surviving item, for the next deletion.
                while let Some(l) = last {
                    if identity(&current[l]).is_some_and(|k| deleted.contains(&k)) {
                        last = l.checked_sub(1);
                    } else {
                        break;
                    }
                }
            }
            Some("replace") => replaced = true,
            _ => {}
        }
    }
    let mut view: Vec<Value> = current
        .iter()
        .filter(|v| !identity(v).is_some_and(|k| deleted.contains(&k)))
        .cloned()
        .collect();
    view.resize(n, Value::Null);
    // Later deletions' runs lie left of earlier ones: write the earliest last so nothing is overwritten wrongly.
    for &(from, to, value) in stale.iter().rev() {
        for slot in &mut view[from..to] {
            *slot = current[value].clone();
        }
    }
    if !replaced {
        let mut present: HashSet<String> = view[..len].iter().filter_map(identity).collect();
        for item in patch.iter().filter(|i| i.get(DIRECTIVE).is_none()) {
            let Some(k) = identity(item) else { continue };
            if present.insert(k) {
                if len < n {
                    view[len] = item.clone();
                }
                len += 1;
            }
        }
    }
    view
}
