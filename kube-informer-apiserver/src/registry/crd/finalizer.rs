//! A deleted CRD's cleanup, as apiextensions-apiserver's finalizer controller does it: the first DELETE gives the
//! CRD the `customresourcecleanup.apiextensions.k8s.io` finalizer (and a `deletionTimestamp`); its objects are then
//! deleted — those with finalizers of their own get a `deletionTimestamp` and wait for their controllers — and once
//! none is left the finalizer is removed, which lets the CRD go. Meanwhile the resource stays served, except that
//! creates are refused.

use serde_json::Value;

use super::text;
use crate::registry::Store;
use crate::registry::resource::ResourceSpec;
use crate::registry::strategy::{self, DeleteOptions};
use crate::storage::store::StoredObject;

/// The finalizer a CRD gets when deleted.
pub(crate) const FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// True when `crd` was deleted and waits for its cleanup.
pub(crate) fn pending(crd: &Value) -> bool {
    crd.pointer("/metadata/deletionTimestamp").is_some()
        && crd
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

/// The live objects of resource `id`.
fn objects(store: &Store, id: &str) -> Vec<std::sync::Arc<StoredObject>> {
    let g = store.lock();
    g.list_current(id, None)
}

/// One step of a deleted CRD's cleanup: deletes each of its objects not being deleted yet; when none is left,
/// removes the finalizer (the CRD goes). Returns how many objects remain (waiting for their own finalizers).
pub(crate) fn cleanup(store: &Store, crd_spec: &ResourceSpec, crd: &Value) -> usize {
    let id = format!("{}.{}", text(crd, "/spec/names/plural"), text(crd, "/spec/group"));
    let spec = store.lock().spec(&id);
    if let Some(spec) = &spec {
        for o in objects(store, &id) {
            if o.to_value().pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            let ns = (!o.namespace.is_empty()).then_some(o.namespace.as_str());
            // Gone meanwhile, or refused: the next sync tries again.
            let _ = strategy::delete(store, spec, ns, &o.name, &DeleteOptions::default(), &mut |_| {});
        }
    }
    let remaining = if spec.is_some() { objects(store, &id).len() } else { 0 };
    if remaining == 0 {
        let name = text(crd, "/metadata/name");
        // A concurrent write wins; the sync that follows it finishes the job.
        let _ = strategy::update_current(store, crd_spec, None, name, false, &mut |_| {}, |current| {
            let mut v = current.to_value();
            if let Some(Value::Array(f)) = v.pointer_mut("/metadata/finalizers") {
                f.retain(|f| f != FINALIZER);
            }
            Ok(v)
        });
    }
    remaining
}
