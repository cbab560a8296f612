//! Finalizers: cleanup that runs before an object may go (kube-rs's `finalizer`, controller-runtime's
//! `AddFinalizer` / `RemoveFinalizer`).
//!
//! (The protocol and its guarantees are documented on [`finalizer`].)

use std::fmt;
use std::sync::Arc;

use serde_json::json;

use super::Action;
use crate::client::params::{Patch, PatchParams};
use crate::client::{Api, RetryBackoff};
use crate::object::{MetaAccessor, Object};

/// What [`finalizer`] asks the reconcile to do.
#[derive(Debug)]
pub enum FinalizerEvent<K> {
    /// The object is live and carries our finalizer: bring the world in line with it. May run any number of times.
    Apply(Arc<K>),
    /// The object is being deleted and still carries our finalizer: undo what Apply did. May run again after it
    /// succeeded (if the finalizer could not be removed), and without Apply ever having run.
    Cleanup(Arc<K>),
}

/// Why [`finalizer`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum FinalizerError<E> {
    /// The reconcile failed on [`FinalizerEvent::Apply`].
    Apply(E),
    /// The reconcile failed on [`FinalizerEvent::Cleanup`]; the finalizer stays, the object with it.
    Cleanup(E),
    /// Adding the finalizer failed (after retrying conflicts).
    AddFinalizer(crate::Error),
    /// Removing the finalizer failed (after retrying conflicts); the cleanup will run again.
    RemoveFinalizer(crate::Error),
    /// The object has no name.
    UnnamedObject,
    /// The finalizer's name is not a qualified name (`example.com/cleanup`), which the API server would refuse.
    InvalidFinalizerName(String),
}

impl<E: fmt::Display> fmt::Display for FinalizerError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FinalizerError::Apply(e) => write!(f, "reconcile failed: {e}"),
            FinalizerError::Cleanup(e) => write!(f, "cleanup failed: {e}"),
            FinalizerError::AddFinalizer(e) => write!(f, "cannot add the finalizer: {e}"),
            FinalizerError::RemoveFinalizer(e) => write!(f, "cannot remove the finalizer: {e}"),
            FinalizerError::UnnamedObject => f.write_str("the object has no name"),
            FinalizerError::InvalidFinalizerName(why) => write!(f, "invalid finalizer name: {why}"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for FinalizerError<E> {}

/// Reconciles `obj` behind the finalizer `name`: adds the finalizer to a live object before the first
/// [`FinalizerEvent::Apply`], runs [`FinalizerEvent::Cleanup`] once the object is being deleted, and removes the
/// finalizer only after the cleanup succeeded. Returns the action `reconcile` returned (or [`Action::await_change`]
/// when there was nothing to do).
///
/// A finalizer is a name in `metadata.finalizers`. While any is there, a delete only sets `deletionTimestamp`; the
/// object stays until the list is empty. A controller that must clean up something the garbage collector does not
/// know of (an external resource, an object in another namespace, a record elsewhere) adds its finalizer to every
/// object it manages, and removes it only once that cleanup succeeded. [`finalizer`] does the bookkeeping:
///
/// 1. A live object without our finalizer gets it (a merge patch with a resourceVersion precondition), then
///    [`FinalizerEvent::Apply`] runs on the object as patched — in the same call, so the reconcile does not wait for
///    the patch to come back through the watch (it would not, under a [`GenerationChanged`] predicate: adding a
///    finalizer leaves the generation alone).
/// 2. A live object with our finalizer: [`FinalizerEvent::Apply`].
/// 3. An object being deleted with our finalizer: [`FinalizerEvent::Cleanup`]; only if it succeeds is the finalizer
///    removed, by a JSON patch that first `test`s that our name is still at the index it read. Two replicas
///    removing at once (or another controller removing its own finalizer meanwhile) cannot remove a wrong entry:
///    the loser's test fails, it reads the object again and finds nothing left to do.
/// 4. An object being deleted without our finalizer: nothing (it goes without us).
///
/// Writes that lose a race (409 Conflict, or a failed `test`) read the object again and start over, up to
/// [`RetryBackoff::DEFAULT_RETRY`]'s five attempts; past that the conflict is returned and the controller retries
/// the key later.
///
/// `api` addresses the object's resource; it is narrowed to the object's namespace here. `name` must be unique
/// among the controllers handling the object, and is conventionally `domain/purpose`.
///
/// ```
/// use kube_informer::client::{Api, Client};
/// use kube_informer::controller::{Action, Context, FinalizerEvent, finalizer};
/// use kube_informer::object::core::ConfigMap;
///
/// fn reconcile(_key: &str, ctx: &Context<'_, ConfigMap, Client>) -> Result<Action, String> {
///     let Some(cm) = ctx.object() else {
///         return Ok(Action::await_change()); // gone: the finalizer saw to the cleanup
///     };
///     let api: Api<ConfigMap> = Api::all(ctx.data().clone());
///     finalizer(&api, "example.com/mirror", cm, |event| match event {
///         FinalizerEvent::Apply(_cm) => Ok(Action::await_change()), // create or update what this object needs
///         FinalizerEvent::Cleanup(_cm) => Ok(Action::await_change()), // delete it; a 404 counts as done
///     })
///     .map_err(|e: kube_informer::controller::FinalizerError<String>| e.to_string())
/// }
/// # let _ = reconcile;
/// ```
///
/// # Cleanup must be idempotent
///
/// A crash (or a failed patch) between a successful cleanup and the finalizer's removal leaves the finalizer in
/// place: the next reconcile runs the cleanup again. Cleanup must therefore succeed when there is nothing left to
/// clean (a 404 on delete is success), and it must tolerate `Apply` never having run. Apply is re-run on every change
/// and resync, so it must be idempotent too.
///
/// # Errors
/// The reconcile's error (wrapped), or the API error of a finalizer patch.
///
/// [`GenerationChanged`]: super::predicate::GenerationChanged
pub fn finalizer<K, E>(
    api: &Api<K>,
    name: &str,
    obj: Arc<K>,
    reconcile: impl FnOnce(FinalizerEvent<K>) -> Result<Action, E>,
) -> Result<Action, FinalizerError<E>>
where
    K: Object,
{
    validate_finalizer_name(name).map_err(FinalizerError::InvalidFinalizerName)?;
    let object_name = obj
        .meta()
        .name()
        .filter(|n| !n.is_empty())
        .ok_or(FinalizerError::UnnamedObject)?
        .to_owned();
    let api = match obj.meta().namespace().filter(|ns| !ns.is_empty()) {
        Some(ns) if api.resource().namespaced => Api::namespaced_with(api.client().clone(), ns, api.resource()),
        _ => api.clone(),
    };
    let mut reconcile = Some(reconcile);
    let mut obj = obj;
    // The cleanup's action once it succeeded: a failed removal retried in this call does not clean up again.
    let mut cleaned: Option<Action> = None;
    let mut pauses = RetryBackoff::DEFAULT_RETRY.pauses();
    loop {
        let meta = obj.meta();
        let index = meta.finalizers().iter().position(|f| f == name);
        let outcome = match (index, meta.is_being_deleted()) {
            (Some(_), false) => {
                let run = reconcile.take().expect("the reconcile runs once: Apply ends the call");
                return run(FinalizerEvent::Apply(obj)).map_err(FinalizerError::Apply);
            }
            (None, true) => return Ok(cleaned.unwrap_or_else(Action::await_change)),
            (Some(i), true) => {
                let action = match cleaned {
                    Some(a) => a,
                    None => {
                        let run = reconcile.take().expect("the reconcile runs once before cleaned is set");
                        let a = run(FinalizerEvent::Cleanup(obj.clone())).map_err(FinalizerError::Cleanup)?;
                        cleaned = Some(a);
                        a
                    }
                };
                let path = format!("/metadata/finalizers/{i}");
                let patch = json!([
                    {"op": "test", "path": path, "value": name},
                    {"op": "remove", "path": path},
                ]);
                match api.patch(&object_name, &PatchParams::default(), &Patch::Json(&patch)) {
                    Ok(_) => return Ok(action),
                    // The last finalizer went (another replica removed ours): the object is gone.
                    Err(e) if e.is_not_found() => return Ok(action),
                    // 409, or the `test` failed (422): the finalizers changed since we read them.
                    Err(e) if matches!(e.code(), Some(409 | 422)) => Lost::Remove(e),
                    Err(e) => return Err(FinalizerError::RemoveFinalizer(e)),
                }
            }
            (None, false) => match meta.resource_version().filter(|rv| !rv.is_empty()) {
                // Built locally or stripped: read it before writing with a precondition.
                None => Lost::Stale,
                Some(rv) => {
                    let mut finalizers = meta.finalizers().to_vec();
                    finalizers.push(name.to_owned());
                    let patch = json!({"metadata": {"resourceVersion": rv, "finalizers": finalizers}});
                    match api.patch(&object_name, &PatchParams::default(), &Patch::Merge(&patch)) {
                        Ok(updated) => {
                            obj = Arc::new(updated);
                            continue; // Apply on the object as patched
                        }
                        Err(e) if e.is_conflict() => Lost::Add(e),
                        // Deleted meanwhile: there is nothing to guard.
                        Err(e) if e.is_not_found() => return Ok(Action::await_change()),
                        Err(e) => return Err(FinalizerError::AddFinalizer(e)),
                    }
                }
            },
        };
        // A write lost a race: read the object again and decide afresh.
        let fresh = match api.get_opt(&object_name) {
            Ok(Some(fresh)) => fresh,
            Ok(None) => return Ok(cleaned.unwrap_or_else(Action::await_change)),
            Err(e) => return Err(outcome.into_error(e)),
        };
        if let Lost::Remove(e) = &outcome
            && fresh.meta().finalizers() == obj.meta().finalizers()
        {
            // Nothing changed: the 422 was not our test failing.
            return Err(FinalizerError::RemoveFinalizer(clone_error(e)));
        }
        match pauses.next() {
            Some(pause) => std::thread::sleep(pause),
            None if matches!(outcome, Lost::Stale) => {}
            None => return Err(outcome.into_error(crate::Error::Stopped)),
        }
        obj = Arc::new(fresh);
    }
}

/// A finalizer write that lost a race, with its error.
enum Lost {
    Add(crate::Error),
    Remove(crate::Error),
    /// The object had no resourceVersion to write against.
    Stale,
}

impl Lost {
    /// The error to report when the retries are exhausted (the race's own error) or the re-read failed (`other`).
    fn into_error<E>(self, other: crate::Error) -> FinalizerError<E> {
        match self {
            Lost::Add(e) if matches!(other, crate::Error::Stopped) => FinalizerError::AddFinalizer(e),
            Lost::Remove(e) if matches!(other, crate::Error::Stopped) => FinalizerError::RemoveFinalizer(e),
            Lost::Remove(_) => FinalizerError::RemoveFinalizer(other),
            Lost::Add(_) | Lost::Stale => FinalizerError::AddFinalizer(other),
        }
    }
}

/// An API error again, for returning it after it was borrowed (only `Api` errors reach here).
fn clone_error(e: &crate::Error) -> crate::Error {
    match e.status() {
        Some(s) => crate::Error::Api(Box::new(s.clone())),
        None => crate::Error::InvalidInput(e.to_string()),
    }
}

/// True when `obj` carries the finalizer `name`.
pub fn has_finalizer<K: Object>(obj: &K, name: &str) -> bool {
    obj.meta().finalizers().iter().any(|f| f == name)
}

/// Adds the finalizer `name` to `obj` unless it is there; true if added (controller-runtime's `AddFinalizer`). The
/// caller writes the object; [`finalizer`] does the whole protocol.
pub fn add_finalizer<K: Object>(obj: &mut K, name: &str) -> bool {
    if has_finalizer(obj, name) {
        return false;
    }
    obj.meta_mut().finalizers_mut().push(name.to_owned());
    true
}

/// Removes every occurrence of the finalizer `name` from `obj`; true if one was there (controller-runtime's
/// `RemoveFinalizer`).
pub fn remove_finalizer<K: Object>(obj: &mut K, name: &str) -> bool {
    if !has_finalizer(obj, name) {
        return false;
    }
    obj.meta_mut().finalizers_mut().retain(|f| f != name);
    true
}

/// apimachinery's `IsQualifiedName`, which finalizer names must satisfy: `[prefix/]name`, the prefix a DNS
/// subdomain, the name up to 63 alphanumerics, `-`, `_` and `.`, starting and ending with an alphanumeric.
fn validate_finalizer_name(name: &str) -> Result<(), String> {
    let (prefix, local) = match name.split_once('/') {
        Some((p, l)) => (Some(p), l),
        None => (None, name),
    };
    if let Some(p) = prefix {
        let label_ok = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        };
        if p.len() > 253 || !p.split('.').all(label_ok) {
            return Err(format!("{name:?}: the prefix must be a DNS subdomain (example.com)"));
        }
    }
    let b = local.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?}: a qualified name is up to 63 alphanumerics, '-', '_' or '.', starting and ending with an \
             alphanumeric, after an optional DNS subdomain prefix and '/'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectMeta;
    use crate::object::core::ConfigMap;

    #[test]
    fn finalizer_names_are_qualified_names() {
        for ok in [
            "example.com/cleanup",
            "cleanup",
            "a.b-c/x_y.z",
            "kubernetes.io/pv-protection",
        ] {
            assert_eq!(validate_finalizer_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "/x",
            "Example.com/x",
            "example.com/",
            "a/b/c",
            "-x",
            "x-",
            "bad name",
            &"x".repeat(64),
        ] {
            assert!(validate_finalizer_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pure_helpers_add_once_and_remove_all() {
        let mut cm = ConfigMap::new(ObjectMeta::namespaced("ns", "a"));
        assert!(add_finalizer(&mut cm, "example.com/x"));
        assert!(!add_finalizer(&mut cm, "example.com/x"));
        assert!(add_finalizer(&mut cm, "example.com/y"));
        assert!(has_finalizer(&cm, "example.com/x"));
        cm.metadata.finalizers.push("example.com/x".into());
        assert!(remove_finalizer(&mut cm, "example.com/x"));
        assert_eq!(cm.metadata.finalizers, ["example.com/y"]);
        assert!(!remove_finalizer(&mut cm, "example.com/x"));
    }
}
