//! Caches: the Reflector (list and watch), the RealFIFO and the DeltaFIFO, the thread-safe indexed store, and
//! listers.
//!
//! Data flows Reflector → [`RealFifo`] or [`DeltaFifo`] (see [`Fifo`]) → the informer's processing thread →
//! [`Store`] (+ indexes) → listers and event handlers.

mod backoff;
mod delta;
mod delta_fifo;
mod fifo_lock;
// The queues' reference model: its own randomized tests, the unit tests', and the fuzz target's (feature
// `fuzzing`, which only the fuzz crate turns on). Not part of the API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fifo_model;
#[cfg(test)]
mod fifo_test_support;
mod index;
mod list_watch;
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
pub use delta::{DeletedObject, Delta, DeltaType, Deltas, Key};
pub use delta_fifo::{Closed, DeltaFifo, KeyFunc, KnownObjects, SyncHook, object_key_into};
pub(crate) use fifo_lock::Wake;
pub use index::{CONTROLLER_INDEX, IndexFunc, Indexers, NAMESPACE_INDEX, controller_index_func, namespace_index_func};
pub use list_watch::{EventStream, ListWatch, ListerWatcher};
pub use lister::{Lister, NamespaceLister};
pub use queue::Fifo;
pub(crate) use queue::Queue;
pub use real_fifo::RealFifo;
pub(crate) use recycler::Recycler;
pub use reflector::{ReflectorConfig, ReflectorMetrics, Transform, WatchErrorHandler};
pub use relist_budget::RelistBudget;
pub use replace_session::ReplaceSession;
pub(crate) use shard_cell::{ShardCell, ShardScope};
pub use store::Store;
pub(crate) use store::StoreInner;
