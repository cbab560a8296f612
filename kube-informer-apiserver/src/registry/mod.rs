//! The registry floor (k8s.io/apiserver's `registry/generic` and `registry/rest`, kube-apiserver's `pkg/registry`,
//! apiextensions-apiserver's `registry/customresource`): the kinds as data ([`resource::ResourceSpec`]) and the
//! catalog of the default ones, the write rules ([`strategy`]) with each kind's defaults, subresources (scale,
//! eviction, a pod's, approval), CRDs and conversion, the namespace lifecycle, the objects a fresh cluster has, the
//! printers' columns, an answer as a value ([`reply`]), which registry code returns and the endpoints write, and the
//! registry's [`Store`], whose writes run the admission the server hands it as function values (the admission floor
//! sits above this one: nothing here imports it).

pub(crate) mod bootstrap;
pub(crate) mod builtin_catalog;
pub(crate) mod builtin_kinds;
pub(crate) mod certificate_approval;
pub(crate) mod codec;
pub(crate) mod component_status;
pub(crate) mod conversion;
pub(crate) mod crd;
pub(crate) mod customresource_strategy;
pub(crate) mod defaults;
pub(crate) mod eviction;
pub(crate) mod flowcontrol_bootstrap;
pub(crate) mod kind_rules;
pub(crate) mod namespace_deletion;
pub(crate) mod namespace_lifecycle;
pub(crate) mod pod_subresources;
pub(crate) mod printer_column;
pub(crate) mod printers;
pub(crate) mod reply;
pub(crate) mod resource;
pub(crate) mod scale;
pub(crate) mod scale_subresource;
pub(crate) mod store;
pub(crate) mod strategy;

pub(crate) use store::{Store, StoreGuard, StoreInner};
