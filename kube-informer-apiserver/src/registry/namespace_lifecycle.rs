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
//! Deletion (the namespace storage's `Delete`; the namespace controller's part is
//! [`namespace_deletion`](crate::registry::namespace_deletion)'s): deleting a namespace whose
//! `spec.finalizers` is not empty (`kubernetes`, which every namespace gets) marks it — `deletionTimestamp`,
//! `status.phase: Terminating` — and answers it; then every object of every namespaced resource in it is deleted
//! (objects with finalizers get their `deletionTimestamp` and wait for their controllers, and the namespace's status
//! says so with the controller's conditions); once none is left the `kubernetes` finalizer is removed and the
//! namespace goes (unless `metadata.finalizers` still hold it, which then decide, as kube-apiserver's
//! `ShouldDeleteNamespaceDuringUpdate` does). The controller polls; here each step follows the write that allows it.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::errors::{self, Failure};
use crate::registry::StoreInner;
use crate::registry::resource::ResourceSpec;
use crate::storage::store::{StoredObject, object_key};
use kube_informer::object::{Status, StatusCause, StatusDetails};

/// The resource id of namespaces.
pub(crate) const NAMESPACES: &str = "namespaces";

/// The namespaces kube-apiserver never lets go (`--immortal-namespaces` is not a flag: these are fixed).
pub(crate) const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The finalizer every namespace gets on create.
pub(crate) const FINALIZER: &str = "kubernetes";

/// True for the built-in namespaces resource (its kube-apiserver rules attached), whose lifecycle this is.
pub(crate) fn is_namespaces(spec: &ResourceSpec) -> bool {
    spec.id() == NAMESPACES && spec.builtin.is_some()
}

/// The built-in namespaces resource, when served.
pub(crate) fn namespaces(g: &StoreInner) -> Option<Arc<ResourceSpec>> {
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
