//! `Context`: what a reconcile gets besides its key.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::runner::Shared;
use crate::cache::Lister;
use crate::client::{Api, Client, Committed, LeaseTerm};
use crate::error::{Error, Result};
use crate::object::{NamespacedResource, Object, ObjectRef, split_key};
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
    /// re-created primary of the same name does not find its predecessor's objects). Empty once the primary is
    /// deleted (its uid is gone with it: the garbage collector deletes what it controlled; clean up before with a
    /// [`finalizer`](super::finalizer)).
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

    /// [`create_or_update`](super::create_or_update) reading the cache of the builder's informer of `S` (given to
    /// [`owns`](super::ControllerBuilder::owns) or [`watches`](super::ControllerBuilder::watches)).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the builder was given no informer of `S`; otherwise as
    /// [`create_or_update`](super::create_or_update).
    pub fn create_or_update<S, E>(
        &self,
        api: &Api<S>,
        name: &str,
        mutate: impl FnMut(&mut S) -> std::result::Result<(), E>,
    ) -> std::result::Result<Committed, E>
    where
        S: Object + Default + Clone,
        E: From<Error>,
    {
        let lister = self.lister_of::<S>().ok_or_else(|| {
            Error::InvalidInput(format!(
                "controller {} has no informer of {}: give it to the builder with owns() or watches()",
                self.shared.name,
                std::any::type_name::<S>()
            ))
        })?;
        super::create_or_update(api, &lister, name, mutate)
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
