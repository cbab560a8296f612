//! Controllers: what turns informers into something that acts — a work queue of keys fed by the informers' events,
//! and worker threads reconciling each key towards its desired state.
//!
//! A [`Controller`] watches a *primary* informer (the objects it is responsible for) and any number of secondary
//! informers whose objects map to primary keys ([`ControllerBuilder::owns`] through owner references, or any
//! function with [`ControllerBuilder::watches`]). Each change queues the key of the primary it concerns; a worker
//! calls the reconcile function with that key and a [`Context`] (the caches, the user data), and acts on the
//! returned [`Action`] or error: client-go's controller pattern (`processNextWorkItem`), with the failure modes
//! handled — caches synced before the first reconcile, panics caught, retries backed off, bounded shutdown.
//!
//! Under [leader election](crate::leaderelection) the workers run only while this replica leads:
//! [`Controller::leader_callbacks`] starts them on `on_started_leading` and pauses them on `on_stopped_leading`; the
//! client every reconcile writes through ([`Context::client`]) is fenced by the leader's Lease term, so a reconcile
//! that outlives the leadership writes nothing more.
//!
//! To scale out instead, [`ControllerBuilder::sharded`] makes every replica work, each on its share of the objects:
//! slots owned through a Lease each, balanced between the replicas, the informers caching only the owned slots.
//!
//! What a controller beyond a toy needs besides:
//!
//! * [`predicate`]s on its informers' events ([`ControllerBuilder::predicate`]): with
//!   [`GenerationChanged`](predicate::GenerationChanged) its own status writes no longer queue it again;
//! * an error policy ([`ControllerBuilder::build_with_error_policy`]) deciding per error whether to back off, retry
//!   after a delay, or wait for a change;
//! * [`finalizer`](finalizer()): cleanup that must happen before an object goes, safe against crashes and concurrent
//!   replicas;
//! * owner references ([`set_controller_reference`](crate::object::set_controller_reference),
//!   [`OwnerRefs`](crate::object::OwnerRefs)) for what it creates, mapped back by [`ControllerBuilder::owns`], which
//!   also indexes the owned objects by controller ([`Context::owned`]); adoption of existing objects only when
//!   asked for ([`adopt`](crate::object::adopt));
//! * [`Context::create_or_update`]: controller-runtime's `CreateOrUpdate` reading the cache (the server when the
//!   cache is behind), the primary set as controller; someone else's object of that name is
//!   [`OperationResult::Refused`] — an outcome, not an error — and its change or deletion queues the primary again;
//! * [`Context::update_status`] (sent only when it differs), [`Context::delete`] (uid precondition, gone counts as
//!   done), [`Context::prune`] (what the primary owns and no longer wants), [`Context::finalizer`] (nothing to do
//!   once the primary is gone), [`Context::api`] (an `Api` in the primary's namespace);
//! * safe writes on the client: [`retry_on_conflict`](crate::client::retry_on_conflict),
//!   [`Api::entry`](crate::client::Api::entry) (get or create, modify, write only when changed), server-side apply
//!   of `object!` types.

mod action;
mod builder;
mod context;
mod create_or_update;
mod finalizer;
mod mapper;
mod options;
mod ownership;
pub mod predicate;
mod queue_slot;
mod refusals;
mod runner;
mod shard_coordinator;
mod sharding;
mod stopping;

use crate::workqueue::QueueMetrics;

pub use action::Action;
pub use builder::ControllerBuilder;
pub use context::Context;
pub use create_or_update::{OperationResult, create_or_update};
pub use finalizer::{FinalizerError, FinalizerEvent, add_finalizer, finalizer, has_finalizer, remove_finalizer};
pub use options::ControllerOptions;
pub use predicate::Predicate;
pub use runner::Controller;
pub(crate) use runner::WeakController;
pub use sharding::{DEFAULT_SLOTS, MAX_SLOTS, ShardingConfig, ShardingMetrics};
pub(crate) use stopping::StoppingController;

/// A snapshot of a controller's counters, from [`Controller::metrics`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControllerMetrics {
    /// The controller's name.
    pub name: String,
    /// True while a term is running.
    pub running: bool,
    /// The current work queue's metrics (depth, adds, retries, latencies); `None` while not running.
    pub queue: Option<QueueMetrics>,
    /// Reconciles finished (successfully, with an error, or by panicking), over every term.
    pub reconciles: u64,
    /// Reconciles that returned an error.
    pub errors: u64,
    /// Reconciles that panicked.
    pub panics: u64,
    /// Reconciles running now.
    pub in_flight: usize,
    /// Terms started (1 for a controller started once; more under leader election).
    pub terms: u64,
    /// Worker threads running now.
    pub workers: usize,
    /// Events that queued nothing because a [`Predicate`] stopped them (or, for a primary informer over a set of
    /// namespaces, because they were mapped to a key outside it), over every term.
    pub filtered: u64,
    /// Reconciles that failed because the Lease term they worked under was over (the leader's, or their slot's):
    /// their keys went to the next owner; counted in `reconciles`, not in `errors`.
    pub ownership_lost: u64,
    /// Writes through the reconciles' [`Context::client`] that fencing refused, or aborted in flight, because their
    /// Lease term was over.
    pub fenced_writes: u64,
}
