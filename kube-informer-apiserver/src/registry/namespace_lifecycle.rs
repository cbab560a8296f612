//! Namespaces as a cluster keeps them: kube-apiserver's `NamespaceLifecycle` admission and, since no
//! controller-manager runs here, the namespace controller's deletion of a namespace's content.
//!
//! Admission (`plugin/pkg/admission/namespace/lifecycle`), while the built-in `namespaces` resource is served:
//! - creating an object in a namespace that does not exist is refused with the namespace's 404
//!   (`namespaces "x" not found`), in one that is terminating with 403 (`… is forbidden: unable to create new content
//!   in namespace x because it is being terminated`, cause `NamespaceTerminating`); updates and deletes are not
//!   checked, as kube-apiserver checks creates only;
//! - `default`, `kube-system` and `kube-public` may not be deleted (403 `this namespace may not be deleted`).
//!
//! Deletion (the namespace storage's `Delete` and the namespace controller): deleting a namespace whose
//! `spec.finalizers` is not empty (`kubernetes`, which every namespace gets) marks it — `deletionTimestamp`,
//! `status.phase: Terminating` — and answers it; then every object of every namespaced resource in it is deleted
//! (objects with finalizers get their `deletionTimestamp` and wait for their controllers, and the namespace's status
//! says so with the controller's conditions); once none is left the `kubernetes` finalizer is removed and the
//! namespace goes (unless `metadata.finalizers` still hold it, which then decide, as kube-apiserver's
//! `ShouldDeleteNamespaceDuringUpdate` does). The controller polls; here each step follows the write that allows it.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value, json};

use crate::api::errors::{self, Failure};
use crate::registry::resource::ResourceSpec;
use crate::registry::strategy::{self, DeleteOptions};
use crate::registry::{Store, StoreInner};
use crate::storage::store::{ListQuery, StoredObject, object_key};
use kube_informer::object::time::format_rfc3339;
use kube_informer::object::{Status, StatusCause, StatusDetails};

/// The resource id of namespaces.
const NAMESPACES: &str = "namespaces";

/// The namespaces kube-apiserver never lets go (`--immortal-namespaces` is not a flag: these are fixed).
pub(crate) const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The finalizer every namespace gets on create.
const FINALIZER: &str = "kubernetes";

/// True for the built-in namespaces resource (its kube-apiserver rules attached), whose lifecycle this is.
fn is_namespaces(spec: &ResourceSpec) -> bool {
    spec.id() == NAMESPACES && spec.builtin.is_some()
}

/// The built-in namespaces resource, when served.
fn namespaces(g: &StoreInner) -> Option<Arc<ResourceSpec>> {
    g.spec(NAMESPACES).filter(|s| s.builtin.is_some())
}

fn terminating(ns: &StoredObject) -> bool {
    let v = ns.to_value();
    v.pointer("/metadata/deletionTimestamp").is_some() || v.pointer("/status/phase") == Some(&json!("Terminating"))
}

/// The admission of a create of `spec`'s object `name` in namespace `ns`, under the store's lock.
pub(crate) fn admit_create(g: &StoreInner, spec: &ResourceSpec, ns: &str, name: &str) -> Result<(), Failure> {
    if !spec.api.namespaced || ns.is_empty() {
        return Ok(());
    }
    let Some(namespaces) = namespaces(g) else {
        return Ok(());
    };
    match g.get(NAMESPACES, &object_key("", ns)) {
        None => Err(errors::not_found(&namespaces.api, ns)),
        Some(n) if terminating(&n) => {
            let reason = format!("unable to create new content in namespace {ns} because it is being terminated");
            let mut st = forbidden(spec, name, &reason);
            if let Some(d) = st.details.as_mut() {
                d.causes.push(StatusCause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {ns} is being terminated"),
                    field: "metadata.namespace".into(),
                });
            }
            Err(st)
        }
        Some(_) => Ok(()),
    }
}

/// 403 `<resource> "<name>" is forbidden: <reason>` (admission's `NewForbidden`).
fn forbidden(spec: &ResourceSpec, name: &str, reason: &str) -> Failure {
    let resource = errors::qualified(&spec.api);
    let message = if name.is_empty() {
        format!("{resource} is forbidden: {reason}")
    } else {
        format!("{resource} {name:?} is forbidden: {reason}")
    };
    Box::new(Status::failure(403, "Forbidden", message).with_details(StatusDetails {
        name: name.to_owned(),
        group: spec.api.group.clone(),
        kind: spec.api.plural.clone(),
        ..Default::default()
    }))
}

/// The admission of a delete: an immortal namespace may not go.
pub(crate) fn admit_delete(spec: &ResourceSpec, name: &str) -> Result<(), Failure> {
    if is_namespaces(spec) && IMMORTAL.contains(&name) {
        return Err(forbidden(spec, name, "this namespace may not be deleted"));
    }
    Ok(())
}

fn spec_finalizers(v: &Value) -> bool {
    v.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

/// The namespace storage's delete of `value` (a namespace about to be deleted): with `spec.finalizers`, it is only
/// marked, its phase `Terminating`. True when it must be kept.
pub(crate) fn mark_for_deletion(spec: &ResourceSpec, value: &mut Value) -> bool {
    if !is_namespaces(spec) || !spec_finalizers(value) {
        return false;
    }
    if let Some(o) = value.as_object_mut() {
        let status = o.entry("status").or_insert_with(|| json!({}));
        if let Some(s) = status.as_object_mut() {
            s.insert("phase".into(), json!("Terminating"));
        }
    }
    true
}

/// False for a namespace being deleted whose `spec.finalizers` still hold it: an update emptying its
/// `metadata.finalizers` does not delete it yet.
pub(crate) fn may_go(spec: &ResourceSpec, value: &Value) -> bool {
    !is_namespaces(spec) || !spec_finalizers(value)
}

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
