//! `Context`: what a reconcile gets besides its key.

use std::any::TypeId;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::runner::Shared;
use serde::Serialize;
use serde_json::Value;

use super::create_or_update::OperationResult;
use super::options::QueueKey;
use super::{Action, FinalizerError, FinalizerEvent};
use crate::cache::Lister;
use crate::client::params::{DeleteParams, Patch, PatchParams};
use crate::client::{Api, Client, Committed, LeaseTerm};
use crate::error::{Error, Result};
use crate::object::{
    CustomResource, MetaAccessor, NamespacedResource, Object, ObjectRef, OwnerReferenceError, Resource, make_key,
    set_controller_reference, split_key,
};
use crate::stop::StopSignal;

/// What a reconcile sees: the key it reconciles, the caches, the user data, the client to write with and the
/// controller's state.
///
/// **Write through [`client`](Context::client).** Under leader election (a [`Manager`](crate::manager::Manager)'s,
/// or [`Controller::leader_callbacks`](super::Controller::leader_callbacks)) and in a
/// [sharded](super::ControllerBuilder::sharded) controller, it is fenced by the term of the Lease the reconcile works
/// under — the leader's, or the key's slot's: once the term is over, its requests are refused, or aborted in
/// flight, with [`Error::OwnershipLost`], and the key is left to whoever owns it next. A client of your own (in the
/// user data, say) is not: its writes may land after another replica took over. Reads of the caches
/// ([`object`](Context::object), [`lister`](Context::lister)) are never fenced.
///
/// The primary object is read from the cache ([`object`](Context::object)): `None` means it was deleted — a
/// deleted primary still gets a reconcile for its key, so that the controller can clean up what it does not own
/// through owner references (external resources, finalizers).
///
/// ```
/// use kube_informer::controller::{Action, Context};
/// use kube_informer::object::core::ConfigMap;
///
/// struct Settings {
///     required_key: String,
/// }
///
/// fn reconcile(key: &str, ctx: &Context<'_, ConfigMap, Settings>) -> Result<Action, String> {
///     let _namespace: &str = ctx.namespace(); // ConfigMaps are namespaced: no Option
///     let Some(cm) = ctx.object() else {
///         return Ok(Action::await_change()); // deleted: nothing to clean up
///     };
///     if !cm.data.contains_key(&ctx.data().required_key) {
///         return Err(format!("{key} lacks {}", ctx.data().required_key));
///     }
///     Ok(Action::await_change())
/// }
/// # let _ = reconcile;
/// ```
pub struct Context<'a, K: Object, D> {
    pub(super) key: &'a str,
    pub(super) shared: &'a Shared<K, D>,
    /// The key's failures counted by the rate limiter before this attempt.
    pub(super) retries: u32,
    /// Set when the controller's current term is ending (pause, stop or lost leadership).
    pub(super) halt: &'a StopSignal,
    /// The client of this reconcile: fenced by `term` when there is one; `None` when the controller has none.
    pub(super) client: Option<&'a Client>,
    /// The Lease term this reconcile works under (the leader's, or its slot's); `None`: no ownership to lose.
    pub(super) term: Option<&'a LeaseTerm>,
}

/// A Lease term and the controller's client fenced by it: what the reconciles of a leader's term, or of an owned
/// slot, write through.
#[derive(Clone)]
pub(crate) struct Fenced {
    pub(crate) term: LeaseTerm,
    /// `None` when the controller has no client.
    pub(crate) client: Option<Client>,
}

impl Fenced {
    /// `base` fenced by `term`, counting the writes it refuses in `writes_refused`.
    pub(crate) fn new(term: &LeaseTerm, base: Option<&Client>, writes_refused: &Arc<AtomicU64>) -> Fenced {
        Fenced {
            term: term.clone(),
            client: base.map(|c| c.fenced_counting(term, Some(writes_refused.clone()))),
        }
    }
}

impl<K: Object, D> Context<'_, K, D> {
    /// The key being reconciled: `namespace/name`, or `name` for a cluster-scoped primary.
    pub fn key(&self) -> &str {
        self.key
    }

    /// The primary's namespace. Only for a namespaced primary type ([`NamespacedResource`]), whose keys always
    /// have one; otherwise read [`object_ref`](Self::object_ref)'s `namespace`.
    pub fn namespace(&self) -> &str
    where
        K: NamespacedResource,
    {
        split_key(self.key).0.unwrap_or_default()
    }

    /// A reference to the primary (its name, and its namespace if it has one).
    pub fn object_ref(&self) -> ObjectRef<K> {
        let (namespace, name) = split_key(self.key);
        let r = ObjectRef::new(name);
        match namespace {
            Some(ns) => r.within(ns),
            None => r,
        }
    }

    /// The primary's name.
    pub fn name(&self) -> &str {
        split_key(self.key).1
    }

    /// The primary object as the cache holds it now; `None` once deleted.
    pub fn object(&self) -> Option<Arc<K>> {
        self.shared.primary_lister.get(self.key)
    }

    /// A lister over the primary cache (every read of it: by key, namespace, selector, index).
    pub fn lister(&self) -> &Lister<K> {
        &self.shared.primary_lister
    }

    /// A lister over the cache of a secondary informer of type `S` (the first one given to the builder with that
    /// type); `None` if there is none.
    pub fn lister_of<S: Object>(&self) -> Option<Lister<S>> {
        self.shared
            .listers
            .iter()
            .find_map(|l| (**l).downcast_ref::<Lister<S>>())
            .cloned()
    }

    /// The objects of type `S` the primary controls, read from the cache of the informer given to
    /// [`owns`](super::ControllerBuilder::owns) through its index by controller (by the primary's uid: a
    /// re-created primary of the same name does not find its predecessor's objects). Works during a finalizer's
    /// [`Cleanup`](super::FinalizerEvent::Cleanup): the primary being deleted is still cached while its finalizer
    /// holds it. Empty once the primary is gone from the cache (the garbage collector deletes what it controlled).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the builder was given no informer of `S`.
    pub fn owned<S: Object>(&self) -> Result<Vec<Arc<S>>> {
        let lister = self.lister_of::<S>().ok_or_else(|| {
            Error::InvalidInput(format!(
                "controller {} has no informer of {}: give it to the builder with owns()",
                self.shared.name,
                std::any::type_name::<S>()
            ))
        })?;
        Ok(match self.object() {
            Some(primary) => lister.controlled_by(&*primary),
            None => Vec::new(),
        })
    }

    /// Makes the object `name` of `api` what `mutate` says, **controlled by the primary**: controller-runtime's
    /// `CreateOrUpdate` with `SetControllerReference`, reading the cache of the builder's informer of `S` (given to
    /// [`owns`](super::ControllerBuilder::owns)) as [`create_or_update`](super::create_or_update()) does — nothing
    /// sent when nothing changed, conflicts retried on the server's copy.
    ///
    /// The controller reference is set here, before `mutate` runs (and again after, should `mutate` drop it).
    /// An object of that name that is someone else's — it exists with no controller (taking it over would
    /// overwrite what its author put there), or another object controls it — is **refused**: nothing is written,
    /// `mutate` does not run, and the outcome is [`OperationResult::Refused`] (not an error: retrying cannot fix
    /// it). The name is remembered: when that object changes or is deleted, the primary is queued again, so that a
    /// reconcile blocked by a squatter resumes when the squatter goes. To take orphans over on purpose, use
    /// [`create_or_update`](super::create_or_update()) with [`adopt`](crate::object::adopt) in `mutate`.
    ///
    /// ```no_run
    /// # use kube_informer::controller::{Context, OperationResult};
    /// # use kube_informer::object::core::ConfigMap;
    /// # fn demo(ctx: &Context<'_, ConfigMap, ()>) -> kube_informer::Result<()> {
    /// let copy = format!("{}-copy", ctx.name());
    /// match ctx.create_or_update(&ctx.api::<ConfigMap>()?, &copy, |cm| cm.data = ctx.object().unwrap().data.clone())? {
    ///     OperationResult::Refused(why) => log::warn!("{copy}: {why}"), // queued again when it changes
    ///     _ => {}
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the builder was given no informer of `S`, or the primary is not in the cache
    /// (deleted: there is nothing to own it); [`Error::OwnerReference`] for a reference that cannot be made (a
    /// primary in another namespace than `api`'s); otherwise as [`create_or_update`](super::create_or_update()).
    pub fn create_or_update<S>(
        &self,
        api: &Api<S>,
        name: &str,
        mut mutate: impl FnMut(&mut S),
    ) -> Result<OperationResult>
    where
        S: Object + Default + Clone,
        K: Resource,
    {
        let lister = self.lister_of::<S>().ok_or_else(|| {
            Error::InvalidInput(format!(
                "controller {} has no informer of {}: give it to the builder with owns() or watches()",
                self.shared.name,
                std::any::type_name::<S>()
            ))
        })?;
        let owner = self.object().ok_or_else(|| {
            Error::InvalidInput(format!(
                "create_or_update of {name}: the primary {} is not in the cache (deleted)",
                self.key
            ))
        })?;
        // Watched before the cache is read, forgotten once written (then it is ours, mapped by its reference):
        // see Refusals for why this order loses no change.
        let (ty, key, primary) = (
            TypeId::of::<S>(),
            make_key(api.namespace(), name),
            QueueKey::from(self.key),
        );
        let refusals = &self.shared.slot.refused;
        refusals.watch(ty, key.clone(), &primary);
        let mut refused = None;
        let written = super::create_or_update::write(api, &lister, name, |obj: &mut S| {
            match set_controller_reference(&*owner, obj) {
                Ok(()) => {}
                Err(e @ (OwnerReferenceError::WouldAdopt { .. } | OwnerReferenceError::AlreadyOwned { .. })) => {
                    refused = Some(e);
                    return Ok(false);
                }
                Err(e) => return Err(Error::from(e)),
            }
            mutate(obj);
            set_controller_reference(&*owner, obj)?;
            Ok(true)
        });
        match written {
            Ok(Some(done)) => {
                refusals.forget(ty, key, &primary);
                Ok(done.into())
            }
            Ok(None) => Ok(OperationResult::Refused(refused.expect("declined only when refused"))),
            Err(e) => {
                refusals.forget(ty, key, &primary);
                Err(e)
            }
        }
    }

    /// An [`Api`] of `S` in the primary's namespace (all namespaces for a cluster-scoped primary or `S`), through
    /// the reconcile's [`client`](Self::client).
    ///
    /// # Errors
    /// As [`client`](Self::client).
    pub fn api<S: Resource>(&self) -> Result<Api<S>> {
        let client = self.client()?;
        Ok(match split_key(self.key).0 {
            Some(ns) if S::api_resource().namespaced => Api::namespaced(client, ns),
            _ => Api::all(client),
        })
    }

    /// Writes the primary's status when it differs from the cached one — a JSON merge patch of the difference to
    /// the status subresource ([`Committed::Updated`]) — and sends nothing when it is the same
    /// ([`Committed::Unchanged`]: a steady-state reconcile makes no request). Under a
    /// [`GenerationChanged`](super::predicate::GenerationChanged) predicate the write does not queue the primary
    /// again.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the primary is not in the cache (deleted); the API's error.
    pub fn update_status(&self, status: &K::Status) -> Result<Committed>
    where
        K: CustomResource,
        K::Status: Serialize,
    {
        let cached = self.object().ok_or_else(|| {
            Error::InvalidInput(format!(
                "update_status: the primary {} is not in the cache (deleted)",
                self.key
            ))
        })?;
        let serialize = |e: serde_json::Error| Error::Serialize(e.to_string());
        let mut cached = serde_json::to_value(&*cached).map_err(serialize)?;
        let before = cached.get_mut("status").map(Value::take).unwrap_or(Value::Null);
        let after = serde_json::to_value(status).map_err(serialize)?;
        let diff = match before {
            Value::Null => Some(after),
            before => super::create_or_update::merge_diff(&before, &after),
        };
        let Some(diff) = diff else {
            return Ok(Committed::Unchanged);
        };
        let patch = Patch::Merge(serde_json::json!({ "status": diff }));
        self.api::<K>()?
            .patch_status(self.name(), &PatchParams::default(), &patch)?;
        Ok(Committed::Updated)
    }

    /// Deletes `obj` — that very object: with its uid as a precondition, so that another object made since under
    /// its name is left alone. True when this call deleted it; false when it was already gone, or replaced (a
    /// 404, or the precondition's 409): both are success for a controller.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an object without a name or uid (never stored); the API's other errors.
    pub fn delete<S: Resource>(&self, obj: &S) -> Result<bool> {
        let meta = obj.meta();
        let (Some(name), Some(uid)) = (meta.name(), meta.uid().filter(|u| !u.is_empty())) else {
            return Err(Error::InvalidInput(
                "delete: the object has no name or uid (read it from the server or a cache)".into(),
            ));
        };
        let client = self.client()?;
        let api: Api<S> = match meta.namespace().filter(|ns| !ns.is_empty()) {
            Some(ns) if S::api_resource().namespaced => Api::namespaced(client, ns),
            _ => Api::all(client),
        };
        match api.delete(name, &DeleteParams::default().precondition_uid(uid)) {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes each object of `S` the primary controls ([`owned`](Self::owned)) that `keep` does not keep, as
    /// [`delete`](Self::delete) does (uid precondition, gone counts as done); returns how many this call deleted.
    /// With `|_| false`, everything the primary owns: a finalizer's cleanup.
    ///
    /// # Errors
    /// As [`owned`](Self::owned) and [`delete`](Self::delete); the objects before the failing one are deleted.
    pub fn prune<S: Resource>(&self, keep: impl Fn(&S) -> bool) -> Result<usize> {
        let mut deleted = 0;
        for obj in self.owned::<S>()? {
            if !keep(&obj) && self.delete(&*obj)? {
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    /// [`finalizer`](super::finalizer()) on the primary, through the reconcile's client: adds the finalizer `name`
    /// before the first [`Apply`](super::FinalizerEvent::Apply), runs [`Cleanup`](super::FinalizerEvent::Cleanup)
    /// when the primary is being deleted and removes the finalizer after it. A primary already gone from the cache
    /// (its finalizer removed, the object deleted) is nothing to do: `Ok(Action::await_change())` without calling
    /// `reconcile`.
    ///
    /// During the cleanup the primary is still in the cache (its finalizer holds it), so [`owned`](Self::owned),
    /// [`prune`](Self::prune) and [`create_or_update`](Self::create_or_update) work as in Apply.
    ///
    /// # Errors
    /// As [`finalizer`](super::finalizer()); [`FinalizerError::AddFinalizer`] when the controller has no client.
    pub fn finalizer<E>(
        &self,
        name: &str,
        reconcile: impl FnOnce(FinalizerEvent<K>) -> std::result::Result<Action, E>,
    ) -> std::result::Result<Action, FinalizerError<E>>
    where
        K: Resource,
    {
        let Some(obj) = self.object() else {
            return Ok(Action::await_change());
        };
        let api = self.api::<K>().map_err(FinalizerError::AddFinalizer)?;
        super::finalizer(&api, name, obj, reconcile)
    }

    /// The client to write with: a copy of the client the primary informer reads through (or, for a sharded
    /// controller over an informer without one, of the client given to
    /// [`sharded`](super::ControllerBuilder::sharded)), with its own connections and the same rate limit.
    ///
    /// Under leader election or sharding it is **fenced** by the Lease term this reconcile works under
    /// ([`Client::fenced`]): a request that cannot be sent before the term ends — the term over, or its client-side
    /// rate-limit token due after the end — is not sent, one in flight at the end is aborted, and either fails with
    /// [`Error::OwnershipLost`]. The reconcile then fails, the error policy is not asked, and the key goes to whoever
    /// owns it next. There is no setting to turn this off.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the controller has no client: its primary informer reads through a
    /// [`ListerWatcher`](crate::cache::ListerWatcher) of your own that names none
    /// ([`ListerWatcher::client`](crate::cache::ListerWatcher::client)).
    pub fn client(&self) -> Result<Client> {
        self.client.cloned().ok_or_else(|| {
            Error::InvalidInput(format!(
                "controller {} has no client: its primary informer's ListerWatcher names none \
                 (ListerWatcher::client); write through a client of your own, fenced by Context::term",
                self.shared.name
            ))
        })
    }

    /// The Lease term this reconcile works under — the leader's, or the key's slot's — or `None` when the
    /// controller runs without ownership (neither elected nor sharded). To fence a client of your own:
    /// [`Client::fenced`].
    pub fn term(&self) -> Option<&LeaseTerm> {
        self.term
    }

    /// The user data given to the builder (a client, settings, an event recorder...).
    pub fn data(&self) -> &D {
        &self.shared.data
    }

    /// The user data, shared (to hand to another thread).
    pub fn data_arc(&self) -> &Arc<D> {
        &self.shared.data
    }

    /// How many times in a row this key has failed before this attempt (0 on a first attempt, or after a
    /// success).
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// True once the controller is stopping, pausing, or lost its leadership — or the Lease term this reconcile
    /// works under is over: a long reconcile should wrap up and return (its key is not lost — it is reconciled
    /// again in the next term, or by the next owner).
    pub fn is_stopping(&self) -> bool {
        self.halt.is_stopped() || self.term.is_some_and(LeaseTerm::is_over)
    }

    /// The controller's name.
    pub fn controller_name(&self) -> &str {
        &self.shared.name
    }
}

impl<K: Object, D> std::fmt::Debug for Context<'_, K, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("controller", &self.shared.name)
            .field("key", &self.key)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}
