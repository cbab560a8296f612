//! kubectl's client-side apply annotation (`kubectl.kubernetes.io/last-applied-configuration`) as kube-apiserver's
//! field manager treats it when `kubectl apply --server-side` (manager `kubectl`) takes over an object that
//! client-side apply managed: conflicts with fields the annotation says kubectl applied, unchanged since, are no
//! conflicts (the apply is forced), and the annotation is kept up to date with what is applied, so that a later
//! client-side apply still works.

use serde_json::{Map, Value};

use crate::serializer;

use super::compare::compare;
use super::schema::{Schema, Ty};
use super::set::Set;
use super::typed::Typed;

/// The annotation.
pub(crate) const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The only manager whose applies read and write the annotation.
pub(crate) const KUBECTL: &str = "kubectl";

/// The total size annotations may have (`ValidateAnnotationsSize`): past it, the annotation is dropped.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * (1 << 10);

fn annotations(obj: &Value) -> Option<&Map<String, Value>> {
    obj.pointer("/metadata/annotations").and_then(Value::as_object)
}

/// True when `obj` carries a non-empty annotation.
pub(crate) fn has(obj: &Value) -> bool {
    annotations(obj)
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

/// The fields the annotation of `live` says kubectl applied and that still have the applied values: the conflicts a
/// takeover by `kubectl` may force. `None` when there is no usable annotation (of another version, unreadable).
pub(crate) fn allowed_conflicts(schema: &Schema<'_>, api_version: &str, live: &Value) -> Option<Set> {
    let text = annotations(live)?.get(ANNOTATION)?.as_str().filter(|s| !s.is_empty())?;
    let last: Value = serde_json::from_str(text).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let t = Typed { schema };
    if !t.validate(Ty::Root, &last, false).is_empty() || !t.validate(Ty::Root, live, true).is_empty() {
        return None;
    }
    let cmp = compare(schema, Ty::Root, &last, live);
    Some(
        t.to_set(Ty::Root, &last)
            .difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// Records `applied` (without the annotation itself) as the annotation of `obj`, as kubectl's JSON encoding writes
/// it; left out when the annotations would grow past their size limit.
pub(crate) fn record(obj: &mut Value, applied: &Value) {
    let mut applied = applied.clone();
    if let Some(a) = applied
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        a.remove(ANNOTATION);
    }
    // Go's encoding/json of the unstructured object: keys sorted, Go's escaping and float format.
    let mut text = String::from_utf8_lossy(&serializer::json::to_vec_unstructured(&applied)).into_owned();
    text.push('\n');
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let entry = meta.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
    let Some(a) = entry.as_object_mut() else {
        return;
    };
    a.insert(ANNOTATION.to_owned(), Value::String(text));
    let size: usize = a.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        a.remove(ANNOTATION);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fields_v1;
    use super::*;
    use serde_json::json;

    #[test]
    fn the_annotation_allows_what_kubectl_applied_unchanged() {
        let cm = crate::schema::builtin_schemas::schema("v1", "ConfigMap").unwrap();
        let schema = Schema::new(Some(&cm), false);
        let last =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
        let live = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {ANNOTATION: last.to_string()}},
            "data": {"a": "1", "b": "changed"},
        });
        let allowed = allowed_conflicts(&schema, "v1", &live).unwrap();
        let data = fields_v1::encode(&allowed)["f:data"].clone();
        assert_eq!(data, json!({"f:a": {}}), "b changed since kubectl applied it");
        assert!(allowed_conflicts(&schema, "v2", &live).is_none());
        assert!(!has(&json!({"metadata": {"annotations": {ANNOTATION: ""}}})));

        let mut obj = live.clone();
        record(
            &mut obj,
            &json!({"apiVersion": "v1", "metadata": {"annotations": {ANNOTATION: "x", "k": "<v>"}}}),
        );
        assert_eq!(
            obj["metadata"]["annotations"][ANNOTATION],
            "{\"apiVersion\":\"v1\",\"metadata\":{\"annotations\":{\"k\":\"\\u003cv\\u003e\"}}}\n"
        );
        let mut big = json!({"metadata": {"annotations": {"other": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)}}});
        record(&mut big, &json!({"data": {}}));
        assert!(big["metadata"]["annotations"].get(ANNOTATION).is_none());
    }
}
