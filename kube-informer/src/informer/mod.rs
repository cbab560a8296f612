//! Shared index informers: one reflector and one cache per resource, shared by many event handlers.
//!
//! A [`SharedIndexInformer`] lists and watches one resource, keeps an indexed cache of it, and tells each registered
//! [`ResourceEventHandler`] about every change — each handler on its own OS thread, fed by its own queue, so a slow
//! handler never delays another handler or the cache.
//!
//! Informers are built by a [`SharedInformerFactory`]: `factory.informer::<K>()` (or `informer_for` with a resource
//! known at run time) hands out one informer per resource, shared by every caller, configured by the factory's
//! [`FactoryOptions`] — the namespaces watched (one, several, or all), selectors, transforms, reflector settings —
//! and started, synced and stopped together. The informer's own constructors are for what a factory does not cover
//! (see [`SharedIndexInformer`]).

mod coalesce;
mod factory;
mod handler;
mod listener;
mod multi_namespace;
mod process_deltas;
mod processor;
mod registration;
mod shared_informer;
mod synced;
#[cfg(test)]
pub(crate) mod test_support;

pub(crate) use factory::WeakFactory;
pub use factory::{
    DEFAULT_CONCURRENT_LISTS, FactoryOptions, ListTweak, MetaTransform, NotSynced, SharedInformerFactory,
};
pub use handler::{FilteringHandler, HandlerFuncs, Notification, ResourceEventHandler};
pub use listener::{DEFAULT_BACKLOG_WARNING, HandlerMetrics, HandlerOptions, QueuePolicy};
pub use registration::Registration;
pub use shared_informer::{
    InformerMetrics, InformerOptions, MINIMUM_RESYNC_PERIOD, SharedIndexInformer, strip_managed_fields,
};
pub(crate) use shared_informer::{InformerSnapshot, StopJoin, WeakInformer};
