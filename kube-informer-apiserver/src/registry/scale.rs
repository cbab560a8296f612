//! The `scale` subresource (`…/{name}/scale`, `autoscaling/v1` `Scale`): described by paths into the object, as
//! a CRD's `subresources.scale` declares it, and served as kube-apiserver serves it for deployments and custom
//! resources (`scaleFromDeployment`, `scaleFromCustomResource`).

use serde_json::{Map, Value, json};

use crate::api::errors::{self, Failure, FieldError};
use crate::patch::json;
use crate::patch::managed_fields::scale::{ScaleHandler, scale_field_manager};
use crate::patch::managed_fields::{Requested, Writer};
use crate::registry::Store;
use crate::registry::resource::ResourceSpec;
use crate::registry::scale_subresource::{ScaleSubresource, read, segments};
use crate::registry::strategy::{self, OnCommit, PatchType, Target, Written};
use crate::storage::store::{StoredObject, object_key};
use kube_informer::selector::{LabelSelector, Selector};

/// Sets `value` at `path`, making the maps on the way (unstructured's `SetNestedField`).
fn write(obj: &mut Value, path: &str, value: Value) -> Result<(), Failure> {
    let segs: Vec<&str> = segments(path).collect();
    let Some((last, parents)) = segs.split_last() else {
        return Err(errors::internal("empty scale path"));
    };
    let mut cur = obj;
    for seg in parents {
        let map = cur
            .as_object_mut()
            .ok_or_else(|| errors::bad_request(format!("cannot set {path}: a value on the way is not an object")))?;
        let next = map.entry(*seg).or_insert_with(|| Value::Object(Map::new()));
        if next.is_null() {
            *next = Value::Object(Map::new());
        }
        cur = next;
    }
    cur.as_object_mut()
        .ok_or_else(|| errors::bad_request(format!("cannot set {path}: a value on the way is not an object")))?
        .insert((*last).to_owned(), value);
    Ok(())
}

/// An integer at `path`: 0 when absent, 400 when not an integer.
fn replicas(obj: &Value, path: &str) -> Result<i64, Failure> {
    match read(obj, path) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_i64()
            .ok_or_else(|| errors::bad_request(format!("{path} is not an integer: {v}"))),
    }
}

/// The `Scale` of an object.
fn scale_of(scale: &ScaleSubresource, obj: &Value) -> Result<Value, Failure> {
    let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
    let mut scale_meta = Map::new();
    for key in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(key) {
            scale_meta.insert(key.to_owned(), v.clone());
        }
    }
    let mut spec = Map::new();
    let desired = replicas(obj, &scale.spec_replicas_path)?;
    if desired != 0 {
        spec.insert("replicas".into(), json!(desired));
    }
    let mut status = Map::new();
    status.insert("replicas".into(), json!(replicas(obj, &scale.status_replicas_path)?));
    let selector = match scale.label_selector_path.as_deref().and_then(|p| read(obj, p)) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => {
            let ls: LabelSelector = serde_json::from_value(v.clone())
                .map_err(|e| errors::bad_request(format!("invalid label selector: {e}")))?;
            Selector::from_label_selector(&ls)
                .map_err(|e| errors::bad_request(e.to_string()))?
                .to_string()
        }
    };
    if !selector.is_empty() {
        status.insert("selector".into(), json!(selector));
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": spec,
        "status": status,
    }))
}

/// The current object, or 404 naming the subresource as kube-apiserver does (`deployments.apps "x" not found`).
fn current(
    store: &Store,
    spec: &ResourceSpec,
    ns: Option<&str>,
    name: &str,
) -> Result<std::sync::Arc<StoredObject>, Failure> {
    let ns = if spec.api.namespaced { ns.unwrap_or("") } else { "" };
    store
        .lock()
        .get(&spec.id(), &object_key(ns, name))
        .ok_or_else(|| errors::not_found(&spec.api, name))
}

/// GET `…/{name}/scale`.
pub(crate) fn get(
    store: &Store,
    spec: &ResourceSpec,
    scale: &ScaleSubresource,
    ns: Option<&str>,
    name: &str,
) -> Result<Value, Failure> {
    scale_of(scale, &current(store, spec, ns, name)?.to_value())
}

/// Checks a `Scale` written by a client (`autoscaling.ValidateScale`, the type and name checks of an update) and
/// returns its desired replicas and resourceVersion precondition.
fn check_scale(body: &Value, name: &str) -> Result<(i64, String), Failure> {
    let obj = body
        .as_object()
        .ok_or_else(|| errors::bad_request("the body of the request must be a JSON object"))?;
    let text = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
    if !text("apiVersion").is_empty() && text("apiVersion") != "autoscaling/v1" {
        return Err(errors::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version (autoscaling/v1)",
            text("apiVersion")
        )));
    }
    if !text("kind").is_empty() && text("kind") != "Scale" {
        return Err(errors::bad_request(format!(
            "the kind in the data ({}) does not match the expected kind (Scale)",
            text("kind")
        )));
    }
    let meta = obj.get("metadata");
    let body_name = meta.and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    if body_name != name {
        return Err(errors::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let rv = meta
        .and_then(|m| m.get("resourceVersion"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let replicas = match body.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| errors::bad_request(format!("spec.replicas must be an integer: {v}")))?,
    };
    if replicas < 0 {
        let e = FieldError::invalid_number("spec.replicas", replicas, "must be greater than or equal to 0");
        return Err(errors::invalid("autoscaling", "Scale", name, vec![e]));
    }
    Ok((replicas, rv))
}

/// What a write of `…/scale` sends: a whole `Scale`, or an apply configuration of one.
#[derive(Clone, Copy)]
enum ScaleWrite<'a> {
    Replace(&'a Value),
    Apply(&'a Value),
}

fn set_entries(obj: &mut Value, entries: Vec<Value>) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if entries.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(entries));
        }
    }
}

/// Writes a `Scale`: its replicas go to the object's `specReplicasPath`, its resourceVersion is the object's
/// precondition (409 when stale, none when empty), and the object is then validated as any update of it (a custom
/// resource's schema: 422 naming the object's kind), as the deployment and custom resource scale storages do. The
/// write is tracked on the Scale, whose managed fields are the parent's owners of the replicas ([`ScaleHandler`]),
/// and moved back to the parent.
fn write_scale(
    target: Target<'_>,
    scale: &ScaleSubresource,
    request: ScaleWrite<'_>,
    writer: &Writer,
    on_commit: OnCommit<'_>,
) -> Result<Value, Failure> {
    let Target {
        store,
        spec,
        namespace: ns,
        name,
        dry_run,
    } = target;
    let checked = match request {
        ScaleWrite::Replace(body) => Some(check_scale(body, name)?),
        ScaleWrite::Apply(_) => None,
    };
    let version = spec.api.api_version();
    let w: Written = strategy::update_current(store, spec, ns, name, dry_run, on_commit, |current| {
        let mut obj = current.to_value();
        let parent_entries = obj
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let handler = ScaleHandler::new(&parent_entries, &version, &scale.spec_replicas_path);
        let mut old = scale_of(scale, &obj)?;
        set_entries(&mut old, handler.to_subresource().map_err(errors::internal)?);
        let fm = scale_field_manager();
        let new = match request {
            ScaleWrite::Replace(body) => {
                let mut new = body.clone();
                if !new.get("metadata").is_some_and(Value::is_object) {
                    new["metadata"] = json!({});
                }
                fm.update(&old, &mut new, Requested::Absent, &writer.manager);
                new
            }
            ScaleWrite::Apply(config) => fm.apply(Some(&old), config, &writer.manager, writer.force)?,
        };
        let (replicas, rv) = match checked.clone() {
            Some(c) => c,
            None => check_scale(&new, name)?,
        };
        let scale_entries = new
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let entries = handler.to_parent(scale_entries).map_err(errors::internal)?;
        write(&mut obj, &scale.spec_replicas_path, json!(replicas))?;
        // The scaled object is written as an update of its resource: admitted as a PUT of it would be, so a custom
        // resource's schema (its bounds on the replicas) holds through the subresource too.
        (store.admission().admit)(spec, &mut obj)?;
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(rv));
        }
        set_entries(&mut obj, entries);
        Ok(obj)
    })?;
    scale_of(scale, &w.object.to_value())
}

/// PUT `…/{name}/scale` by `writer`.
pub(crate) fn update(
    target: Target<'_>,
    scale: &ScaleSubresource,
    body: &Value,
    writer: &Writer,
    on_commit: OnCommit<'_>,
) -> Result<Value, Failure> {
    write_scale(target, scale, ScaleWrite::Replace(body), writer, on_commit)
}

/// PATCH `…/{name}/scale` by `writer`: the patch applies to the current `Scale` (strategic merge as a merge patch:
/// a `Scale` has no lists), then it is written as by PUT; an apply patch is server-side apply to the `Scale`.
pub(crate) fn patch(
    target: Target<'_>,
    scale: &ScaleSubresource,
    kind: PatchType,
    patch_doc: &Value,
    writer: &Writer,
    on_commit: OnCommit<'_>,
) -> Result<Value, Failure> {
    if kind == PatchType::Apply {
        if !patch_doc.is_object() {
            return Err(errors::bad_request("a merge patch must be a JSON object"));
        }
        return write_scale(target, scale, ScaleWrite::Apply(patch_doc), writer, on_commit);
    }
    let mut doc = get(target.store, target.spec, scale, target.namespace, target.name)?;
    match kind {
        PatchType::Json => json::json_patch(&mut doc, patch_doc).map_err(json::failure)?,
        PatchType::Merge | PatchType::Strategic | PatchType::Apply => {
            if !patch_doc.is_object() {
                return Err(errors::bad_request("a merge patch must be a JSON object"));
            }
            json::merge_patch(&mut doc, patch_doc);
        }
    }
    write_scale(target, scale, ScaleWrite::Replace(&doc), writer, on_commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_replicas_and_selectors_by_path() {
        let d = json!({
            "metadata": {"name": "d", "namespace": "ns", "uid": "u", "resourceVersion": "7", "creationTimestamp": "t", "labels": {"x": "y"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}},
            "status": {"replicas": 2},
        });
        let s = scale_of(&ScaleSubresource::deployment(), &d).unwrap();
        assert_eq!(
            s,
            json!({
                "kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "d", "namespace": "ns", "uid": "u", "resourceVersion": "7", "creationTimestamp": "t"},
                "spec": {"replicas": 3},
                "status": {"replicas": 2, "selector": "app=web,tier in (a,b)"},
            })
        );
        let cr = ScaleSubresource::new(".spec.size", ".status.size").label_selector_path(".status.selector");
        let w = json!({"metadata": {"name": "w"}, "status": {"selector": "app=w"}});
        let s = scale_of(&cr, &w).unwrap();
        assert_eq!(
            (s["spec"].clone(), s["status"].clone()),
            (json!({}), json!({"replicas": 0, "selector": "app=w"}))
        );
        assert_eq!(scale_of(&cr, &json!({"spec": {"size": "x"}})).unwrap_err().code, 400);
    }

    #[test]
    fn custom_resources_keep_their_scale_fields_in_range() {
        let scale = ScaleSubresource::new(".spec.replicas", ".status.replicas").label_selector_path(".status.selector");
        let check = |obj: Value| -> Vec<String> {
            scale
                .validate(&obj)
                .iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect()
        };
        assert!(check(json!({"spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "a=b"}})).is_empty());
        assert!(check(json!({"spec": {}})).is_empty(), "absent fields are not checked");
        assert_eq!(
            check(json!({"spec": {"replicas": -1}, "status": {"replicas": 2_147_483_648_i64, "selector": 7}})),
            [
                ".spec.replicas: Invalid value: -1: should be a non-negative integer",
                ".status.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647",
                r#".status.selector: Invalid value: "": .status.selector accessor error: 7 is of the type int64, expected string"#,
            ]
        );
        assert_eq!(
            check(json!({"spec": {"replicas": 1.5}})),
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 1.5 is of the type float64, expected int64"
            ]
        );
    }

    #[test]
    fn writes_make_the_maps_on_the_way() {
        let mut v = json!({"metadata": {}});
        write(&mut v, ".spec.deep.replicas", json!(4)).unwrap();
        assert_eq!(v["spec"]["deep"]["replicas"], 4);
        let mut bad = json!({"spec": 1});
        assert_eq!(write(&mut bad, ".spec.replicas", json!(1)).unwrap_err().code, 400);
    }

    #[test]
    fn scales_written_by_clients_are_validated() {
        let ok = json!({"metadata": {"name": "d", "resourceVersion": "5"}, "spec": {"replicas": 2}});
        assert_eq!(check_scale(&ok, "d").unwrap(), (2, "5".to_owned()));
        let negative = json!({"metadata": {"name": "d"}, "spec": {"replicas": -1}});
        let e = check_scale(&negative, "d").unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Scale.autoscaling \"d\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(check_scale(&ok, "other").unwrap_err().code, 400);
        let wrong_kind = json!({"kind": "Deployment", "metadata": {"name": "d"}});
        assert_eq!(check_scale(&wrong_kind, "d").unwrap_err().code, 400);
    }
}
