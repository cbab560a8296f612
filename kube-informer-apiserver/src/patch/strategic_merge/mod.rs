//! Strategic merge patch (`application/strategic-merge-patch+json`), applied as kube-apiserver applies it to the
//! built-in kinds: a JSON merge patch whose lists follow the object's schema.
//!
//! The rules (apimachinery's `strategicpatch`, server side):
//! - Maps merge key by key; `null` removes a key. A key the original lacks takes the patch's value, without its
//!   `null`s and directive maps.
//! - A list whose schema says `x-kubernetes-patch-strategy: merge` merges: items that are maps are matched by the
//!   `x-kubernetes-patch-merge-key` (a container by `name`, a port by `containerPort`) and merged, unmatched ones
//!   added; primitive items (finalizers) are added once. Any other list is replaced whole.
//! - Directives: `{"$patch": "replace"}` in a map replaces it with the rest of that map, `{"$patch": "delete"}`
//!   empties it; in a merging list, `{"$patch": "delete", <merge key>: v}` removes the items with that key and
//!   `{"$patch": "replace"}` replaces the list with the patch's other items. `$setElementOrder/<list>` orders the
//!   merged list; `$deleteFromPrimitiveList/<list>` removes primitive items; `$retainKeys` (where the schema says
//!   `retainKeys`, such as a deployment's `strategy` or a volume) keeps only the keys it names.
//! - Order of a merged list: the patch's items in the patch's (or `$setElementOrder`'s) order, the original's other
//!   items in their order, interleaved where the original ordered both; an item only the patch has comes before
//!   the original's items that are not in the patch.
//! - A directive is never stored: content taken whole from the patch loses directive keys, as decoding into
//!   kube-apiserver's Go types loses them.
//!
//! Errors are kube-apiserver's: malformed `$retainKeys`, `$setElementOrder` and `$deleteFromPrimitiveList`
//! directives are a 400, lists of lists a 422, and the rest (a missing merge key, an unknown `$patch` value, an
//! order list that contradicts the patch) reach the client as the 500 apiserver answers for an error it did not
//! classify.
//!
//! ```
//! use kube_informer_apiserver::strategic_merge;
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "properties": {"containers": {
//!     "type": "array",
//!     "x-kubernetes-patch-strategy": "merge",
//!     "x-kubernetes-patch-merge-key": "name",
//!     "items": {"type": "object", "properties": {"name": {"type": "string"}, "image": {"type": "string"}}},
//! }}});
//! let original = json!({"containers": [{"name": "a", "image": "nginx:1"}, {"name": "b", "image": "redis"}]});
//! let patch = json!({
//!     "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
//!     "containers": [{"name": "a", "image": "nginx:2"}],
//! });
//! let result = strategic_merge::apply(original, patch, &schema).unwrap();
//! assert_eq!(result, json!({"containers": [{"name": "a", "image": "nginx:2"}, {"name": "b", "image": "redis"}]}));
//! ```

mod fmt;
mod order;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use fmt::{go_s, go_type, go_v, go_v_list};
use order::{Kind, aliased_original, element_kind, key_of, normalize_element_order, partition};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

const BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const BAD_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";
const NO_LIST_OF_LISTS: &str = "lists of lists are not supported";

/// Why a strategic merge patch cannot be applied, grouped by kube-apiserver's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StrategicMergeError {
    /// 400 BadRequest: the patch is malformed (a directive in the wrong shape, a patch that is not an object).
    BadRequest(String),
    /// 422 Invalid: a valid document the patch cannot express (lists of lists). kube-apiserver answers with a
    /// generic message; this is the underlying one.
    Invalid(String),
    /// 500: an error kube-apiserver passes through without classifying it (a list item without its merge key, an
    /// unknown `$patch` value, an order list that contradicts the patch, mixed item types).
    Internal(String),
}

impl StrategicMergeError {
    /// The HTTP status code kube-apiserver answers with.
    pub fn code(&self) -> u16 {
        match self {
            StrategicMergeError::BadRequest(_) => 400,
            StrategicMergeError::Invalid(_) => 422,
            StrategicMergeError::Internal(_) => 500,
        }
    }

    /// The error's message (apimachinery's wording).
    pub fn message(&self) -> &str {
        match self {
            StrategicMergeError::BadRequest(m) | StrategicMergeError::Invalid(m) | StrategicMergeError::Internal(m) => {
                m
            }
        }
    }
}

impl std::fmt::Display for StrategicMergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message(), self.code())
    }
}

impl std::error::Error for StrategicMergeError {}

type Result<T> = std::result::Result<T, StrategicMergeError>;

fn bad_request(m: &str) -> StrategicMergeError {
    StrategicMergeError::BadRequest(m.to_owned())
}

fn internal(m: String) -> StrategicMergeError {
    StrategicMergeError::Internal(m)
}

fn bad_arg_type(expected: &str, actual: &Value) -> StrategicMergeError {
    internal(format!("expected a {expected}, but received a {}", go_type(actual)))
}

fn no_merge_key(item: &Map<String, Value>, key: &str) -> StrategicMergeError {
    internal(format!(
        "map: {} does not contain declared merge key: {key}",
        go_v(&Value::Object(item.clone()))
    ))
}

fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> StrategicMergeError {
    internal(format!(
        "unknown patch type: {} in map: {}",
        go_s(directive),
        go_v(&Value::Object(map.clone()))
    ))
}

/// Applies a strategic merge patch to `original` (an object) as kube-apiserver does, guided by `schema` (the
/// object's OpenAPI schema, inlined, as [`ResourceSpec::object_schema`](crate::ResourceSpec::object_schema) holds
/// it). A `null` patch changes nothing; any other patch that is not an object is a 400, as apiserver decodes it.
pub fn apply(original: Value, patch: Value, schema: &Value) -> std::result::Result<Value, StrategicMergeError> {
    let patch = match patch {
        Value::Object(p) => p,
        Value::Null => return Ok(original),
        other => {
            let what = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Bool(_) => "bool",
                _ => "number",
            };
            return Err(StrategicMergeError::BadRequest(format!(
                "json: cannot unmarshal {what} into Go value of type map[string]interface {{}}"
            )));
        }
    };
    let Value::Object(original) = original else {
        return Err(internal("the original object is not a JSON object".into()));
    };
    merge_map(original, patch, Some(schema)).map(Value::Object)
}

/// True when a schema carries strategic merge information (`x-kubernetes-patch-strategy` or
/// `x-kubernetes-patch-merge-key` anywhere): the built-in kinds do, through `metadata.ownerReferences` if nothing
/// else; a custom resource's schema never does.
pub(crate) fn has_strategy(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => {
            m.contains_key("x-kubernetes-patch-strategy")
                || m.contains_key("x-kubernetes-patch-merge-key")
                || m.values().any(has_strategy)
        }
        Value::Array(a) => a.iter().any(has_strategy),
        _ => false,
    }
}

/// What the schema says of one field: its own schema (`None`: nothing is known) and patch metadata.
struct FieldMeta<'s> {
    schema: Option<&'s Value>,
    strategies: Vec<&'s str>,
    merge_key: &'s str,
}

/// The field `key` of an object schema: a declared property, else the schema of the map's values.
fn field<'s>(schema: Option<&'s Value>, key: &str) -> FieldMeta<'s> {
    let schema = schema.and_then(|s| {
        s.get("properties")
            .and_then(|p| p.get(key))
            .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
    });
    let text = |name: &str| schema.and_then(|s| s.get(name)).and_then(Value::as_str);
    FieldMeta {
        schema,
        strategies: text("x-kubernetes-patch-strategy")
            .map(|s| s.split(',').collect())
            .unwrap_or_default(),
        merge_key: text("x-kubernetes-patch-merge-key").unwrap_or(""),
    }
}

impl<'s> FieldMeta<'s> {
    /// The schema of the list's items; a schema without `items` stands for its items itself, as apimachinery's
    /// lookups take it (a pointer field patched as a list).
    fn items(&self) -> Option<&'s Value> {
        self.schema.map(|s| s.get("items").unwrap_or(s))
    }

    /// The strategy besides `retainKeys` (`merge`, `replace` or none); apimachinery refuses two others at once.
    fn strategy(&self) -> Result<&'s str> {
        match self.strategies[..] {
            [] => Ok(""),
            ["retainKeys"] => Ok(""),
            [one] => Ok(one),
            ["retainKeys", other] | [other, "retainKeys"] => Ok(other),
            _ => Err(internal(format!(
                "unexpected patch strategy: [{}]",
                self.strategies.join(" ")
            ))),
        }
    }
}

/// The key behind a `$setElementOrder/<key>` or `$deleteFromPrimitiveList/<key>` directive.
fn directive_target<'k>(key: &'k str, prefix: &str, error: &str) -> Result<&'k str> {
    match key.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest),
        _ => Err(bad_request(error)),
    }
}

fn merge_map(
    original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Option<&Value>,
) -> Result<Map<String, Value>> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(taken_map(patch, false))
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(directive, &patch)),
        };
    }
    let mut original = original;
    retain_keys(&mut original, &mut patch)?;
    set_element_order(&mut original, &mut patch, schema)?;
    for (key, value) in patch {
        let (key, delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            let target = directive_target(&key, DELETE_FROM_PRIMITIVE_LIST, BAD_PRIMITIVE_LIST)?;
            (target.to_owned(), true)
        } else {
            (key, false)
        };
        if value.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(slot) = original.get_mut(&key) else {
            if !delete_list && let Some(v) = taken(value) {
                original.insert(key, v);
            }
            continue;
        };
        let current = std::mem::take(slot);
        let merged = match (current, value) {
            (Value::Object(current), Value::Object(value)) => {
                let meta = field(schema, &key);
                if meta.strategy()? == "replace" {
                    Some(Value::Object(taken_map(value, false)))
                } else {
                    Some(Value::Object(merge_map(current, value, meta.schema)?))
                }
            }
            (Value::Array(current), Value::Array(value)) => {
                let meta = field(schema, &key);
                Some(Value::Array(merge_list_field(current, value, &meta, delete_list)?))
            }
            // A deletion list aimed at a value of another type changes nothing.
            (current, value) if delete_list && Kind::of(&current) != Kind::of(&value) => Some(current),
            (_, value) => taken(value),
        };
        match merged {
            Some(v) => *slot = v,
            None => {
                original.remove(&key);
            }
        }
    }
    Ok(original)
}

/// `$retainKeys`: the original keeps only the keys named; the patch may set no other key.
fn retain_keys(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<()> {
    let Some(retained) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retained) = retained else {
        return Err(bad_request(BAD_RETAIN_KEYS));
    };
    let names: HashSet<&str> = retained.iter().filter_map(Value::as_str).collect();
    let outside = patch.iter().any(|(k, v)| {
        !v.is_null()
            && !k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            && !k.starts_with(SET_ELEMENT_ORDER)
            && !names.contains(k.as_str())
    });
    if outside {
        return Err(bad_request(BAD_RETAIN_KEYS));
    }
    original.retain(|k, _| names.contains(k.as_str()));
    Ok(())
}

/// Every `$setElementOrder/<key>` of the patch: merges the patch's list `key` (if any) into the original's, then
/// orders the result by the directive. Both leave the patch.
fn set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Option<&Value>,
) -> Result<()> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive in keys {
        let order = match patch.remove(&directive) {
            Some(Value::Array(order)) => order,
            other => return Err(bad_arg_type("[]interface {}", &other.unwrap_or_default())),
        };
        let key = directive_target(&directive, SET_ELEMENT_ORDER, BAD_SET_ELEMENT_ORDER)?.to_owned();
        let as_list = |v: Option<&Value>| match v {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a.clone())),
            Some(other) => Err(bad_arg_type("[]interface {}", other)),
        };
        let current = as_list(original.get(&key))?;
        let patch_list = as_list(patch.get(&key))?;
        let meta = field(schema, &key);
        let strategy = meta.strategy()?;
        validate_order(patch_list.as_deref().unwrap_or_default(), &order, meta.merge_key)?;
        let (merged, server_order) = match (&current, &patch_list) {
            (Some(current), None) => (current.clone(), current.clone()),
            (None, Some(patch_list)) => (patch_list.iter().cloned().filter_map(taken).collect(), Vec::new()),
            (Some(current), Some(patch_list)) => {
                let merged = merge_list(current.clone(), patch_list.clone(), &meta, strategy, false)?;
                let maps = element_kind(&[current, patch_list]).is_ok_and(|k| k == Kind::Map);
                let server_order = if strategy == "merge" && maps {
                    aliased_original(current, patch_list, meta.merge_key)
                } else {
                    current.clone()
                };
                (merged, server_order)
            }
            (None, None) => continue,
        };
        let (in_order, others) = partition(merged, &order, meta.merge_key)?;
        let empty = Vec::new();
        let kind = element_kind(&[
            current.as_ref().unwrap_or(&empty),
            patch_list.as_ref().unwrap_or(&empty),
        ])?;
        let ordered = normalize_element_order(in_order, others, &order, &server_order, meta.merge_key, kind)?;
        original.insert(key.clone(), Value::Array(ordered));
        patch.remove(&key);
    }
    Ok(())
}

/// The patch's items (deletions aside) must appear in the order list, in its order.
fn validate_order(patch_list: &[Value], order: &[Value], merge_key: &str) -> Result<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let kept: Vec<&Value> = if merge_key.is_empty() {
        patch_list.iter().collect()
    } else {
        let mut kept = Vec::new();
        for item in patch_list {
            let Value::Object(m) = item else {
                return Err(bad_arg_type("map[string]interface {}", item));
            };
            if m.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                kept.push(item);
            }
        }
        kept
    };
    let (mut i, mut j) = (0, 0);
    while i < kept.len() && j < order.len() {
        if kept[i].as_object().is_some_and(|m| m.contains_key(DIRECTIVE)) {
            i += 1;
            continue;
        }
        if merge_key_value_equal(kept[i], &order[j], merge_key)? {
            i += 1;
        }
        j += 1;
    }
    if i < kept.len() && j >= order.len() {
        return Err(internal(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_v_list(patch_list),
            go_v_list(order)
        )));
    }
    Ok(())
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let get = |v: &Value| -> Result<Value> {
        let Value::Object(m) = v else {
            return Err(bad_arg_type("map[string]interface {}", v));
        };
        m.get(merge_key).cloned().ok_or_else(|| no_merge_key(m, merge_key))
    };
    Ok(get(left)? == get(right)?)
}

/// A list field present in both: merged (strategy `merge`, or a `$deleteFromPrimitiveList`) or replaced.
fn merge_list_field(
    current: Vec<Value>,
    patch: Vec<Value>,
    meta: &FieldMeta<'_>,
    delete_list: bool,
) -> Result<Vec<Value>> {
    let strategy = meta.strategy()?;
    merge_list(current, patch, meta, strategy, delete_list)
}

fn merge_list(
    current: Vec<Value>,
    patch: Vec<Value>,
    meta: &FieldMeta<'_>,
    strategy: &str,
    delete_list: bool,
) -> Result<Vec<Value>> {
    if strategy != "merge" && !delete_list {
        return Ok(patch.into_iter().filter_map(|v| taken_replaced(v, false)).collect());
    }
    if current.is_empty() && patch.is_empty() {
        return Ok(current);
    }
    let kind = element_kind(&[&current, &patch])?;
    let merge_key = meta.merge_key;
    let (merged, patch, server_order) = if kind != Kind::Map {
        if delete_list {
            let gone: HashSet<String> = patch.iter().map(key_of).collect();
            return Ok(current.into_iter().filter(|v| !gone.contains(&key_of(v))).collect());
        }
        let mut seen = HashSet::new();
        let merged = current
            .iter()
            .chain(&patch)
            .filter(|v| seen.insert(key_of(v)))
            .cloned()
            .collect();
        (merged, patch, current)
    } else {
        if merge_key.is_empty() {
            return Err(internal("cannot merge lists without merge key for struct".into()));
        }
        let (current, patch) = apply_list_directives(current, patch, merge_key)?;
        let merged = merge_items(current.clone(), patch.clone(), merge_key, meta.items())?;
        (merged, patch, current)
    };
    let (in_patch, others) = partition(merged, &patch, merge_key)?;
    normalize_element_order(in_patch, others, &patch, &server_order, merge_key, kind)
}

/// The `$patch` items of a merging list of maps: deletions applied to the original, a `replace` makes the
/// patch's other items the new original. Returns (original, patch without directive items).
fn apply_list_directives(
    mut current: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    let mut deleted = HashSet::new();
    for item in patch {
        let Value::Object(m) = &item else {
            return Err(bad_arg_type("map[string]interface {}", &item));
        };
        match m.get(DIRECTIVE) {
            None => plain.push(item),
            Some(d) => match d.as_str() {
                Some("delete") => {
                    let v = m.get(merge_key).ok_or_else(|| no_merge_key(m, merge_key))?;
                    deleted.insert(key_of(v));
                }
                Some("replace") => replace = true,
                Some("merge") => return Err(internal("merging lists cannot yet be specified in the patch".into())),
                _ => return Err(bad_patch_type(d, m)),
            },
        }
    }
    if !deleted.is_empty() {
        current.retain(|item| !item.get(merge_key).is_some_and(|v| deleted.contains(&key_of(v))));
    }
    if replace {
        return Ok((
            plain.into_iter().filter_map(|v| taken_replaced(v, false)).collect(),
            Vec::new(),
        ));
    }
    Ok((current, plain))
}

/// Merges each patch item into the original item with the same merge key value, or appends it.
fn merge_items(
    mut current: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    items: Option<&Value>,
) -> Result<Vec<Value>> {
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, item) in current.iter().enumerate() {
        let Value::Object(m) = item else {
            return Err(internal(format!("value for key {i} is not a map")));
        };
        if let Some(v) = m.get(merge_key) {
            index.entry(key_of(v)).or_insert(i);
        }
    }
    for item in patch {
        let Value::Object(m) = item else {
            return Err(bad_arg_type("map[string]interface {}", &item));
        };
        let k = key_of(m.get(merge_key).ok_or_else(|| no_merge_key(&m, merge_key))?);
        match index.get(&k) {
            Some(&i) => {
                let Value::Object(original) = std::mem::take(&mut current[i]) else {
                    unreachable!("checked above")
                };
                current[i] = Value::Object(merge_map(original, m, items)?);
            }
            None => {
                index.insert(k, current.len());
                current.push(Value::Object(taken_map(m, false)));
            }
        }
    }
    Ok(current)
}

/// A patch value stored where the original had nothing (or something of another type): without `null`s and
/// directive maps (apimachinery), and without directive keys (which kube-apiserver's decoding drops).
fn taken(value: Value) -> Option<Value> {
    taken_replaced(value, true)
}

/// A patch value stored whole. `drop_directive_maps`: maps holding `$patch` go (as apimachinery's
/// `removeDirectives` does); otherwise only directive keys go (as decoding into the Go types does).
fn taken_replaced(value: Value, drop_directive_maps: bool) -> Option<Value> {
    match value {
        Value::Object(m) if drop_directive_maps && m.get(DIRECTIVE).is_some_and(|d| !d.is_null()) => None,
        Value::Object(m) => Some(Value::Object(taken_map(m, drop_directive_maps))),
        Value::Array(a) => Some(Value::Array(
            a.into_iter()
                .filter_map(|v| taken_replaced(v, drop_directive_maps))
                .collect(),
        )),
        other => Some(other),
    }
}

fn taken_map(m: Map<String, Value>, drop_directive_maps: bool) -> Map<String, Value> {
    m.into_iter()
        .filter(|(k, v)| !v.is_null() && !is_directive_key(k))
        .filter_map(|(k, v)| taken_replaced(v, drop_directive_maps).map(|v| (k, v)))
        .collect()
}

fn is_directive_key(k: &str) -> bool {
    k == DIRECTIVE || k == RETAIN_KEYS || k.starts_with(SET_ELEMENT_ORDER) || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}
