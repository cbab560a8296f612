//! `create_or_update`: controller-runtime's `CreateOrUpdate`, reading the cache first.

use serde_json::{Map, Value};

use crate::cache::Lister;
use crate::client::params::{Patch, PatchParams, PostParams};
use crate::client::{Api, Committed};
use crate::error::Error;
use crate::object::{MetaAccessor, Object, OwnerReferenceError, make_key};

/// What [`Context::create_or_update`](super::Context::create_or_update) did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "a refused object is someone else's: report it (the primary is queued again when it changes)"]
pub enum OperationResult {
    /// The object was created, controlled by the primary.
    Created,
    /// The object was patched.
    Updated,
    /// The object already was as desired: nothing was sent.
    Unchanged,
    /// An object of that name exists and is not the primary's — made by someone else (no controller: taking it
    /// over would overwrite what they put there), or controlled by another object. Nothing was written. Not an
    /// error: retrying cannot fix it, so the reconcile reports it (a status condition, an event) and waits — the
    /// primary is queued again when that object changes or is deleted.
    Refused(OwnerReferenceError),
}

impl OperationResult {
    /// True for [`OperationResult::Refused`].
    pub fn is_refused(&self) -> bool {
        matches!(self, OperationResult::Refused(_))
    }
}

impl From<Committed> for OperationResult {
    fn from(c: Committed) -> Self {
        match c {
            Committed::Created => OperationResult::Created,
            Committed::Updated => OperationResult::Updated,
            Committed::Unchanged => OperationResult::Unchanged,
        }
    }
}

/// How many writes [`create_or_update`] tries before returning the conflict (each after reading the server).
const ATTEMPTS: u32 = 5;

/// Makes the object `name` of `api` what `mutate` says, reading it from `cache` (an informer's lister) rather than
/// the server — controller-runtime's `controllerutil.CreateOrUpdate`, whose client reads the cache:
///
/// 1. The object is in the cache: `mutate` runs on a copy; if that changed nothing, nothing is sent
///    ([`Committed::Unchanged`]: a steady-state reconcile makes no request). Otherwise the difference is sent as a
///    JSON merge patch carrying the resourceVersion read, so a concurrent change gets a 409 instead of being
///    overwritten, and fields the cached copy lacks (a transform dropped them, the Rust type does not know them)
///    are left as they are on the server ([`Committed::Updated`]).
/// 2. It is not in the cache: `mutate` runs on `K::default()` named `name` (in `api`'s namespace), which is created
///    ([`Committed::Created`]).
/// 3. The cache was behind — a 409 Conflict, a 404 on the patch, an AlreadyExists on the create (or an object the
///    informer's selectors leave out): the object is read from the server and the step runs again on what it
///    holds, up to five writes in all; then the last error is returned (the controller retries the key).
///
/// `mutate` may run several times, each time on a fresh copy, and must set the whole desired state. In a
/// reconcile, [`Context::create_or_update`](super::Context::create_or_update) also sets the primary as the
/// controller — and refuses someone else's object of that name ([`OperationResult::Refused`]). Here, set the
/// controller reference in `mutate` with [`set_controller_reference`](crate::object::set_controller_reference),
/// which refuses to take over an object that exists without a controller (the error comes back through `?`, and
/// nothing is written), or with [`adopt`](crate::object::adopt) when taking it over is intended.
///
/// ```
/// use std::collections::BTreeMap;
/// use kube_informer::client::{Api, Committed};
/// use kube_informer::controller::create_or_update;
/// use kube_informer::informer::SharedInformerFactory;
/// use kube_informer::object::core::ConfigMap;
/// # let server = kube_informer_apiserver::ApiServer::start()?;
/// # let client = server.client()?;
/// let factory = SharedInformerFactory::new(client.clone(), Default::default());
/// let lister = factory.informer::<ConfigMap>().lister();
/// factory.start()?;
/// factory.wait_for_cache_sync(std::time::Duration::from_secs(30))?;
///
/// let api: Api<ConfigMap> = Api::namespaced(client, "default");
/// let desired = |cm: &mut ConfigMap| -> kube_informer::Result<()> {
///     cm.data.insert("color".into(), "blue".into());
///     Ok(())
/// };
/// assert_eq!(create_or_update(&api, &lister, "settings", desired)?, Committed::Created);
/// assert_eq!(api.get("settings")?.data.get("color"), Some("blue"));
/// # factory.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// What `mutate` returns; the API's error (after the retries above for conflicts); [`Error::InvalidInput`] when
/// `mutate` renames the object or moves it to another namespace, or when a namespaced object is asked of an `Api`
/// of all namespaces.
pub fn create_or_update<K, E>(
    api: &Api<K>,
    cache: &Lister<K>,
    name: &str,
    mut mutate: impl FnMut(&mut K) -> Result<(), E>,
) -> Result<Committed, E>
where
    K: Object + Default + Clone,
    E: From<Error>,
{
    let written = write(api, cache, name, |obj| mutate(obj).map(|()| true))?;
    Ok(written.expect("the step never declines"))
}

/// [`create_or_update`] whose step may decline to write (`Ok(false)`): then `Ok(None)`, and nothing is sent.
pub(super) fn write<K, E>(
    api: &Api<K>,
    cache: &Lister<K>,
    name: &str,
    mut step: impl FnMut(&mut K) -> Result<bool, E>,
) -> Result<Option<Committed>, E>
where
    K: Object + Default + Clone,
    E: From<Error>,
{
    let namespace = api.namespace().map(str::to_owned);
    if namespace.is_none() && api.resource().namespaced {
        return Err(Error::InvalidInput(format!(
            "create_or_update of {name}: an Api of one namespace is needed for a namespaced resource"
        ))
        .into());
    }
    let mut current: Option<K> = cache.get(&make_key(namespace.as_deref(), name)).map(|o| (*o).clone());
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = match current.take() {
            Some(before) => {
                let mut desired = before.clone();
                if !step(&mut desired)? {
                    return Ok(None);
                }
                check_identity(&desired, namespace.as_deref(), name)?;
                let Some(patch) = conditional_patch(&before, &desired)? else {
                    return Ok(Some(Committed::Unchanged));
                };
                api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .map(|_| Committed::Updated)
            }
            None => {
                let mut new = K::default();
                new.meta_mut().set_name(name.to_owned());
                new.meta_mut().set_namespace(namespace.clone());
                if !step(&mut new)? {
                    return Ok(None);
                }
                check_identity(&new, namespace.as_deref(), name)?;
                api.create(&PostParams::default(), &new).map(|_| Committed::Created)
            }
        };
        match result {
            Ok(outcome) => return Ok(Some(outcome)),
            Err(e) if attempt < ATTEMPTS && (e.is_conflict() || e.is_not_found() || e.is_already_exists()) => {
                log::debug!("create_or_update of {name}: the cache was behind ({e}); reading the server");
                current = api.get_opt(name)?;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Refuses a `mutate` that renamed the object or moved it.
fn check_identity<K: Object>(obj: &K, namespace: Option<&str>, name: &str) -> Result<(), Error> {
    let meta = obj.meta();
    if meta.name() != Some(name) || meta.namespace().filter(|ns| !ns.is_empty()) != namespace {
        return Err(Error::InvalidInput(format!(
            "create_or_update of {name}: mutate changed the object's name or namespace"
        )));
    }
    Ok(())
}

/// The merge patch turning `before` into `after`, with `before`'s resourceVersion as a precondition; `None` when
/// nothing changed.
fn conditional_patch<K: Object>(before: &K, after: &K) -> Result<Option<Value>, Error> {
    let to_value = |o: &K| serde_json::to_value(o).map_err(|e| Error::Serialize(e.to_string()));
    let Some(mut patch) = merge_diff(&to_value(before)?, &to_value(after)?) else {
        return Ok(None);
    };
    let Some(rv) = before.meta().resource_version().filter(|rv| !rv.is_empty()) else {
        return Err(Error::InvalidInput(
            "create_or_update: the object read has no resourceVersion; a write without it would overwrite any \
             concurrent change"
                .into(),
        ));
    };
    if let Value::Object(p) = &mut patch {
        let meta = p.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert("resourceVersion".into(), Value::String(rv.to_owned()));
        }
    }
    Ok(Some(patch))
}

/// A JSON merge patch (RFC 7386) from `before` to `after`: changed members, removed ones as `null`, arrays and
/// scalars whole; `None` when they are equal.
pub(crate) fn merge_diff(before: &Value, after: &Value) -> Option<Value> {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut patch = Map::new();
            for (k, av) in a {
                match b.get(k) {
                    Some(bv) => {
                        if let Some(d) = merge_diff(bv, av) {
                            patch.insert(k.clone(), d);
                        }
                    }
                    // A null where nothing was changes nothing (merge patch's null removes).
                    None if av.is_null() => {}
                    None => {
                        patch.insert(k.clone(), av.clone());
                    }
                }
            }
            for k in b.keys() {
                if !a.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        _ if before == after => None,
        // An object replacing a non-object is written whole; merge patch then sets it as given.
        _ => Some(after.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::merge_diff;
    use serde_json::json;

    #[test]
    fn the_diff_is_a_merge_patch_of_what_changed() {
        let before = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "data": {"k": "v"},
                            "list": [1, 2], "gone": true});
        let after = json!({"metadata": {"name": "a", "labels": {"x": "1", "z": "3"}}, "data": {"k": "v"},
                           "list": [1, 2, 3], "new": {"a": null}, "absent": null});
        assert_eq!(
            merge_diff(&before, &after),
            Some(
                json!({"metadata": {"labels": {"y": null, "z": "3"}}, "list": [1, 2, 3], "new": {"a": null},
                        "gone": null})
            )
        );
        assert_eq!(merge_diff(&before, &before), None);
        assert_eq!(
            merge_diff(&json!({"a": 1}), &json!({"a": {"b": 2}})),
            Some(json!({"a": {"b": 2}}))
        );
    }
}
