//! The rules a built-in kind brings to the registry's writes, as function values a [`ResourceSpec`] holds (the
//! scheme's defaulting, the strategy's `PrepareForCreate` / `PrepareForUpdate`), and what those functions may read of
//! the rest of the cluster. The rules themselves are written in [`defaults`](crate::registry::defaults), which fills
//! a spec with them; the spec knows only their shape, here.
//!
//! [`ResourceSpec`]: crate::registry::resource::ResourceSpec

use std::fmt;

use serde_json::{Map, Value};

use crate::api::errors::Failure;
use crate::storage::store::{ListQuery, Spec, StoreInner};

pub(crate) type Object = Map<String, Value>;

/// kube-apiserver's rules for one built-in kind, as function values ([`defaults`](crate::registry::defaults) holds
/// the table of them). Compared and printed by their `apiVersion/Kind`.
#[derive(Clone, Copy)]
pub(crate) struct KindRules {
    /// `v1/Pod`, `apps/v1/Deployment`.
    pub(crate) kind: &'static str,
    /// The scheme's defaulting of a decoded object (`SetObjectDefaults_<Kind>`), plus what Go always encodes.
    pub(crate) default: fn(&mut Object),
    /// A create keeps the `.status` of the body even though the resource has a status subresource (nodes: the
    /// kubelet registers a node with its status).
    pub(crate) create_keeps_status: bool,
    /// The strategy's `PrepareForCreate` (and a service's allocations), after the generic preparation.
    pub(crate) prepare_for_create: fn(&mut Object, &Cluster<'_>) -> Result<(), Failure>,
    /// The strategy's `PrepareForUpdate` (or the status strategy's, when `status_only`) given the stored object,
    /// after the generic preparation (status or spec kept from the stored object).
    pub(crate) prepare_for_update: fn(&mut Object, &Object, bool, &Cluster<'_>) -> Result<(), Failure>,
    /// A finalizer the kind's REST storage adds when an object is first deleted (a CRD's
    /// `customresourcecleanup.apiextensions.k8s.io`: its objects are removed before it goes).
    pub(crate) delete_finalizer: Option<&'static str>,
}

impl KindRules {
    /// The rules of a kind with nothing but its functions (the RBAC kinds').
    pub(crate) const fn new(
        kind: &'static str,
        default: fn(&mut Object),
        prepare_for_create: fn(&mut Object, &Cluster<'_>) -> Result<(), Failure>,
        prepare_for_update: fn(&mut Object, &Object, bool, &Cluster<'_>) -> Result<(), Failure>,
    ) -> KindRules {
        KindRules {
            kind,
            default,
            create_keeps_status: false,
            prepare_for_create,
            prepare_for_update,
            delete_finalizer: None,
        }
    }

    /// Applies the scheme's defaults to a decoded object.
    pub(crate) fn default(&self, obj: &mut Object) {
        (self.default)(obj);
    }

    /// The strategy's preparation of a new object.
    pub(crate) fn prepare_for_create(&self, obj: &mut Object, cluster: &Cluster<'_>) -> Result<(), Failure> {
        (self.prepare_for_create)(obj, cluster)
    }

    /// The strategy's preparation of an update from `old`.
    pub(crate) fn prepare_for_update(
        &self,
        new: &mut Object,
        old: &Object,
        status_only: bool,
        cluster: &Cluster<'_>,
    ) -> Result<(), Failure> {
        (self.prepare_for_update)(new, old, status_only, cluster)
    }
}

impl PartialEq for KindRules {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}

impl Eq for KindRules {}

impl fmt::Debug for KindRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KindRules({})", self.kind)
    }
}

/// What a preparation may read of the rest of the cluster: the other live objects of the same resource (a service's
/// allocated IPs and ports), under the store's lock.
pub(crate) struct Cluster<'a> {
    store: &'a dyn Objects,
    /// The resource's id in the store.
    id: &'a str,
    /// The written object's key, left out of [`Cluster::others`].
    key: &'a str,
}

impl<'a> Cluster<'a> {
    pub(crate) fn new(store: &'a dyn Objects, id: &'a str, key: &'a str) -> Self {
        Cluster { store, id, key }
    }

    /// The written object's key (`namespace/name`).
    pub(crate) fn key(&self) -> &str {
        self.key
    }

    /// Every other live object of the resource, in every namespace.
    pub(crate) fn others(&self) -> Vec<Value> {
        self.store.others(self.id, self.key)
    }
}

/// The live objects a preparation may read, under the store's lock: a trait, so that the rules name no store of
/// the registry's resources (which would name [`ResourceSpec`](crate::registry::resource::ResourceSpec)).
pub(crate) trait Objects {
    /// Every live object of the resource `id` but the one at `key`, in every namespace.
    fn others(&self, id: &str, key: &str) -> Vec<Value>;
}

impl<S: Spec> Objects for StoreInner<S> {
    fn others(&self, id: &str, key: &str) -> Vec<Value> {
        let q = ListQuery {
            namespace: None,
            at: self.rev(),
            after: None,
            limit: 0,
            filter: &|o| o.key() != key,
            count_remaining: false,
        };
        self.list(id, &q).items.iter().map(|o| o.to_value()).collect()
    }
}
