//! Caches: the Reflector (list and watch), the DeltaFIFO, the thread-safe indexed store, and listers.
//!
//! Data flows Reflector → [`DeltaFifo`] → the informer's processing thread → [`Store`] (+ indexes) → listers and
//! event handlers.

mod backoff;
mod delta;
mod delta_fifo;
// The DeltaFIFO's reference model: its own randomized tests, the unit tests', and the fuzz target's (feature
// `fuzzing`, which only the fuzz crate turns on). Not part of the API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fifo_model;
mod index;
mod list_watch;
mod lister;
pub(crate) mod recycler;
pub(crate) mod reflector;
mod reflector_metrics;
mod relist_budget;
pub(crate) mod shard_cell;
mod store;

pub use backoff::BackoffConfig;
pub use delta::{DeletedObject, Delta, DeltaType, Deltas, Key};
pub(crate) use delta_fifo::Wake;
pub use delta_fifo::{Closed, DeltaFifo, KeyFunc, KnownObjects, ReplaceSession, SyncHook, object_key_into};
pub use index::{CONTROLLER_INDEX, IndexFunc, Indexers, NAMESPACE_INDEX, controller_index_func, namespace_index_func};
pub use list_watch::{EventStream, ListWatch, ListerWatcher};
pub use lister::{Lister, NamespaceLister};
pub(crate) use recycler::Recycler;
pub use reflector::{ReflectorConfig, ReflectorMetrics, Transform, WatchErrorHandler};
pub use relist_budget::RelistBudget;
pub(crate) use shard_cell::{ShardCell, ShardScope};
pub use store::Store;
