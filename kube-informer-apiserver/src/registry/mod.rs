//! The registry floor (k8s.io/apiserver's `registry/generic` and `registry/rest`, kube-apiserver's `pkg/registry`,
//! apiextensions-apiserver's `registry/customresource`): the kinds as data ([`resource::ResourceSpec`]) and the
//! catalog of the default ones, the write rules ([`strategy`]) with each kind's defaults, subresources (scale,
//! eviction, a pod's, approval), CRDs and conversion, the namespace lifecycle, the objects a fresh cluster has, the
//! printers' columns, and an answer as a value ([`reply`]), which registry code returns and the endpoints write.

pub(crate) mod bootstrap;
pub(crate) mod builtin_catalog;
pub(crate) mod builtin_kinds;
pub(crate) mod certificate_approval;
pub(crate) mod component_status;
pub(crate) mod conversion;
pub(crate) mod crd;
pub(crate) mod customresource_strategy;
pub(crate) mod defaults;
pub(crate) mod eviction;
pub(crate) mod flowcontrol_bootstrap;
pub(crate) mod namespace_lifecycle;
pub(crate) mod pod_subresources;
pub(crate) mod printer_column;
pub(crate) mod printers;
pub(crate) mod reply;
pub(crate) mod resource;
pub(crate) mod scale;
pub(crate) mod strategy;

/// The store of the registry's resources: the storage floor's MVCC store, each resource described by its
/// [`ResourceSpec`](resource::ResourceSpec).
pub(crate) type Store = crate::storage::store::Store<resource::ResourceSpec>;
/// What the registry's store holds behind its lock.
pub(crate) type StoreInner = crate::storage::store::StoreInner<resource::ResourceSpec>;
/// The registry's store's lock, held.
pub(crate) type StoreGuard<'a> = crate::storage::store::StoreGuard<'a, resource::ResourceSpec>;
