//! Which old value a node of an update is compared with (apiserver's `CorrelatedObject`, as validation ratcheting
//! and CEL's `oldSelf` use it): an object's field with the old object's same field (maps of either `x-kubernetes-map-
//! type`), a `map` list's item with the old item of the same keys, a `set` list's item with an equal old item; items
//! of other lists have none.

use serde_json::Value;

use super::structural::SchemaNode;

/// The old value of field `key` of an object whose old value is `old`.
pub(crate) fn field<'a>(old: Option<&'a Value>, _schema: &Value, key: &str) -> Option<&'a Value> {
    old?.as_object()?.get(key)
}

/// The old value of `item`, an item of a list under `schema` whose old value is `old`.
pub(crate) fn item<'a>(old: Option<&'a Value>, schema: &Value, item: &Value) -> Option<&'a Value> {
    let old = old?.as_array()?;
    match schema.keyword("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("map") => {
            let keys: Vec<&str> = schema
                .keyword("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if keys.is_empty() {
                return None;
            }
            old.iter()
                .find(|o| o.is_object() && keys.iter().all(|k| o.get(*k) == item.get(*k)))
        }
        Some("set") => old.iter().find(|o| *o == item),
        _ => None,
    }
}

#[cfg(feature = "cel")]
/// Whether items of a list under `schema` can be correlated with old ones (only `map` lists, for `oldSelf`).
pub(crate) fn correlatable_items(schema: &Value) -> bool {
    schema.keyword("x-kubernetes-list-type").and_then(Value::as_str) == Some("map")
}
