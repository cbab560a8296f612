//! The namespace controller's deletion of a terminating namespace's content (kube's
//! `pkg/controller/namespace/deletion`), run here after each write that allows a step since no controller-manager
//! runs, and the namespace storage's `finalize` subresource: both write through the registry's
//! [`strategy`]. The lifecycle's admission and the marking of a namespace for deletion,
//! which the strategy itself calls, are [`namespace_lifecycle`](crate::registry::namespace_lifecycle)'s.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value, json};

use crate::api::errors::{self, Failure};
use crate::registry::Store;
use crate::registry::namespace_lifecycle::{FINALIZER, NAMESPACES, is_namespaces, namespaces};
use crate::registry::resource::ResourceSpec;
use crate::registry::strategy::{self, DeleteOptions};
use crate::storage::store::{ListQuery, StoredObject, object_key};
use kube_informer::object::time::format_rfc3339;

/// `PUT /api/v1/namespaces/{name}/finalize`: the namespace's `spec.finalizers` become the body's (the finalize
/// strategy changes nothing else); a namespace being deleted whose finalizers are then all gone goes.
pub(crate) fn finalize(
    store: &Store,
    spec: &ResourceSpec,
    name: &str,
    body: &Value,
) -> Result<Arc<StoredObject>, Failure> {
    let body_name = body.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if body_name != name {
        return Err(errors::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let finalizers = body.pointer("/spec/finalizers").cloned().unwrap_or(Value::Null);
    strategy::update_raw(store, spec, None, name, |v| {
        if let Some(spec) = v.as_object_mut().map(|o| o.entry("spec").or_insert_with(|| json!({}))) {
            match (&finalizers, spec.as_object_mut()) {
                (Value::Array(f), Some(s)) if !f.is_empty() => {
                    s.insert("finalizers".into(), finalizers.clone());
                }
                (_, Some(s)) => {
                    s.remove("finalizers");
                }
                _ => {}
            }
        }
    })
}

/// After a write of `spec`'s object in namespace `ns` (or of namespace `name`): goes on with the deletion of a
/// terminating namespace it concerns.
pub(crate) fn after_write(store: &Store, spec: &ResourceSpec, ns: Option<&str>, name: Option<&str>) {
    let target = if is_namespaces(spec) {
        name
    } else if spec.api.namespaced {
        ns
    } else {
        None
    };
    let Some(target) = target else {
        return;
    };
    let is_terminating = {
        let g = store.lock();
        namespaces(&g).is_some()
            && g.get(NAMESPACES, &object_key("", target))
                .is_some_and(|n| n.to_value().pointer("/metadata/deletionTimestamp").is_some())
    };
    if is_terminating {
        clean_up(store, target);
    }
}

/// The objects in namespace `ns` of every namespaced resource: (storage spec, object).
fn content(store: &Store, ns: &str) -> Vec<(Arc<ResourceSpec>, Arc<StoredObject>)> {
    let g = store.lock();
    let mut ids: Vec<String> = g.specs().iter().filter(|s| s.api.namespaced).map(|s| s.id()).collect();
    ids.dedup();
    let all = |_: &StoredObject| true;
    let mut out = Vec::new();
    for id in ids {
        let Some(spec) = g.spec(&id) else {
            continue;
        };
        let q = ListQuery {
            namespace: Some(ns),
            at: g.rev(),
            after: None,
            limit: 0,
            filter: &all,
            count_remaining: false,
        };
        out.extend(g.list(&id, &q).items.into_iter().map(|o| (spec.clone(), o)));
    }
    out
}

/// One pass of the namespace controller over terminating namespace `ns`: deletes its content; once none is left,
/// removes the `kubernetes` finalizer and lets the namespace go; else writes the conditions saying what remains.
fn clean_up(store: &Store, ns: &str) {
    for (spec, o) in content(store, ns) {
        if o.to_value().pointer("/metadata/deletionTimestamp").is_none() {
            // Gone meanwhile, or refused: the next write in the namespace tries again.
            let _ = strategy::delete(store, &spec, Some(ns), &o.name, &DeleteOptions::default(), &mut |_| {});
        }
    }
    let remaining = content(store, ns);
    let Some(namespaces) = namespaces(&store.lock()) else {
        return;
    };
    if remaining.is_empty() {
        // The controller's `finalize`: without its finalizer (and without metadata finalizers) the namespace goes.
        let _ = strategy::update_raw(store, &namespaces, None, ns, |v| {
            if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut)
                && let Some(Value::Array(f)) = spec.get_mut("finalizers")
            {
                f.retain(|f| f != FINALIZER);
                // `finalizers` is omitted when empty, as Go writes it.
                if f.is_empty() {
                    spec.remove("finalizers");
                }
            }
        });
        return;
    }
    let conditions = conditions(&remaining);
    let _ = strategy::update_raw(store, &namespaces, None, ns, |v| {
        let same = v
            .pointer("/status/conditions")
            .is_some_and(|c| same_conditions(c, &conditions));
        if !same && let Some(status) = v.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("conditions".into(), conditions.clone());
        }
    });
}

/// Conditions equal but for their transition times.
fn same_conditions(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(items) = v.as_array_mut() {
            for c in items.iter_mut().filter_map(Value::as_object_mut) {
                c.remove("lastTransitionTime");
            }
        }
        v
    };
    strip(a) == strip(b)
}

/// The namespace controller's conditions while content remains (`NamespaceContentRemaining`,
/// `NamespaceFinalizersRemaining`, and the failures it did not have).
fn conditions(remaining: &[(Arc<ResourceSpec>, Arc<StoredObject>)]) -> Value {
    let mut by_resource: Map<String, Value> = Map::new();
    let mut by_finalizer: Map<String, Value> = Map::new();
    for (spec, o) in remaining {
        // The controller's wording: `configmaps.` for the core group, `deployments.apps` otherwise.
        let key = format!("{}.{}", spec.api.plural, spec.api.group);
        let n = by_resource.get(&key).and_then(Value::as_u64).unwrap_or(0);
        by_resource.insert(key, json!(n + 1));
        if let Some(Value::Array(fs)) = o.to_value().pointer("/metadata/finalizers") {
            for f in fs.iter().filter_map(Value::as_str) {
                let n = by_finalizer.get(f).and_then(Value::as_u64).unwrap_or(0);
                by_finalizer.insert(f.to_owned(), json!(n + 1));
            }
        }
    }
    let describe = |m: &Map<String, Value>, how: &str| {
        m.iter()
            .map(|(k, n)| format!("{k} {how} {n} resource instances"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let now = format_rfc3339(SystemTime::now());
    let condition = |kind: &str, status: &str, reason: &str, message: String| json!({"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message});
    let mut out = vec![
        condition(
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered".into(),
        ),
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed".into(),
        ),
        condition(
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization".into(),
        ),
        condition(
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            format!("Some resources are remaining: {}", describe(&by_resource, "has")),
        ),
    ];
    out.push(if by_finalizer.is_empty() {
        condition(
            "NamespaceFinalizersRemaining",
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished".into(),
        )
    } else {
        condition(
            "NamespaceFinalizersRemaining",
            "True",
            "SomeFinalizersRemain",
            format!(
                "Some content in the namespace has finalizers remaining: {}",
                describe(&by_finalizer, "in")
            ),
        )
    });
    Value::Array(out)
}
