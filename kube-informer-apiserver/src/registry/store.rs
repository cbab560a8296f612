//! The registry's store (k8s.io/apiserver's `registry/generic/registry.Store`): the storage floor's MVCC store of the
//! registry's resources, each described by its [`ResourceSpec`], with the admission a write runs — handed in by the
//! server, which wires the [`admission`](crate::admission) floor above into it. The registry's write rules call
//! admission only through these function values, as kube-apiserver's generic store calls the `createValidation`,
//! `updateValidation` and `deleteValidation` its handlers hand it and imports no admission plugin.
//!
//! kube-apiserver's handlers hand those functions to each call; here the server hands them once, to the store every
//! write goes through, so that no write — the server's own (bootstrap, aggregation, the namespace controller's
//! deletes, a policy's status) included — can be made without them.

use std::ops::Deref;

use serde_json::Value;

use crate::api::errors::Failure;
use crate::registry::resource::ResourceSpec;

/// The storage floor's store, of the registry's resources.
pub(crate) type Storage = crate::storage::store::Store<ResourceSpec>;
/// What the registry's store holds behind its lock.
pub(crate) type StoreInner = crate::storage::store::StoreInner<ResourceSpec>;
/// The registry's store's lock, held.
pub(crate) type StoreGuard<'a> = crate::storage::store::StoreGuard<'a, ResourceSpec>;

/// One write, as validating admission sees it (k8s.io/apiserver's `admission.Attributes`).
pub(crate) struct Attributes<'a> {
    pub(crate) spec: &'a ResourceSpec,
    /// `CREATE`, `UPDATE`, `DELETE`.
    pub(crate) operation: &'static str,
    /// `""` or `status`.
    pub(crate) subresource: &'a str,
    pub(crate) object: Option<&'a Value>,
    pub(crate) old_object: Option<&'a Value>,
    /// Read by a policy's evaluation (`request.dryRun`), which needs the `cel` feature.
    #[cfg_attr(not(feature = "cel"), allow(dead_code))]
    pub(crate) dry_run: bool,
}

/// The admission the registry's writes run, as function values the server hands the [`Store`].
#[derive(Clone, Copy)]
pub(crate) struct AdmissionHooks {
    /// Admits a whole object written without a request body of its own — a subresource's write of its parent (a
    /// scale), a CRD installed through the Rust call — changing it as a request's admission would (dropping what
    /// its schema does not know, defaulting, checking a CRD), reporting nothing.
    pub(crate) admit: fn(&ResourceSpec, &mut Value) -> Result<(), Failure>,
    /// Validating admission of a create, update or delete, after the write rules validated it, under the store's
    /// lock: the warnings to answer with, or the refusal.
    pub(crate) validate: fn(&StoreInner, &Attributes<'_>) -> Result<Vec<String>, Failure>,
}

/// The store of the registry's resources, and the admission its writes run. Reads and the storage's own calls go
/// through [`Deref`] to the [`Storage`].
pub(crate) struct Store {
    storage: Storage,
    admission: AdmissionHooks,
}

impl Store {
    /// A store of `specs`' resources (see [`Storage::new`]), whose writes run `admission`.
    pub(crate) fn new(
        initial_rev: u64,
        history_capacity: usize,
        specs: Vec<ResourceSpec>,
        admission: AdmissionHooks,
    ) -> Self {
        Store {
            storage: Storage::new(initial_rev, history_capacity, specs),
            admission,
        }
    }

    /// The admission this store's writes run.
    pub(crate) fn admission(&self) -> &AdmissionHooks {
        &self.admission
    }
}

impl Deref for Store {
    type Target = Storage;

    fn deref(&self) -> &Storage {
        &self.storage
    }
}
