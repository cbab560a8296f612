//! Caches: the Reflector (list and watch), the RealFIFO and the DeltaFIFO, the thread-safe indexed store, and
//! listers.
//!
//! Data flows Reflector → a RealFIFO or a DeltaFIFO (chosen with [`Fifo`]) → the informer's processing thread →
//! [`Store`] (+ indexes) → listers and event handlers. The queues themselves are internal: an informer owns its
//! queue, and [`Fifo`] is how a user picks one.

mod backoff;
mod delta;
mod delta_fifo;
mod fifo_lock;
// The queues' reference model: its own randomized tests, the unit tests', and the fuzz target's (feature
// `fuzzing`, which only the fuzz crate turns on). Not part of the API.
// Reached from outside only through `crate::unstable::fifo_model`.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod fifo_model;
#[cfg(test)]
mod fifo_test_support;
mod index;
pub(crate) mod list_watch;
mod lister;
mod queue;
mod real_fifo;
pub(crate) mod recycler;
pub(crate) mod reflector;
mod reflector_metrics;
mod relist_budget;
mod replace_session;
pub(crate) mod shard_cell;
mod store;

pub use backoff::BackoffConfig;
#[cfg(test)]
pub(crate) use delta::DeltaType;
pub use delta::{DeletedObject, Key};
pub(crate) use delta::{Delta, Deltas};
pub(crate) use delta_fifo::{Closed, DeltaFifo, KeyFunc, KnownObjects, SyncHook, object_key_into};
pub(crate) use fifo_lock::Wake;
pub use index::{CONTROLLER_INDEX, IndexFunc, Indexers, NAMESPACE_INDEX, controller_index_func, namespace_index_func};
pub use list_watch::{EventStream, ListWatch, ListerWatcher};
pub use lister::{Lister, NamespaceLister};
pub use queue::Fifo;
pub(crate) use queue::Queue;
pub(crate) use real_fifo::RealFifo;
pub(crate) use recycler::Recycler;
pub use reflector::{ReflectorConfig, ReflectorMetrics, Transform, WatchErrorHandler};
pub use relist_budget::RelistBudget;
pub(crate) use replace_session::ReplaceSession;
pub(crate) use shard_cell::{ShardCell, ShardScope};
pub use store::Store;
pub(crate) use store::StoreInner;
