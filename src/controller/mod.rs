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
//! [`Controller::leader_callbacks`] starts them on `on_started_leading` and pauses them on `on_stopped_leading`.

mod action;
mod context;
mod mapper;
mod options;
mod runner;

use crate::workqueue::QueueMetrics;

pub use action::Action;
pub use context::Context;
pub use mapper::controller_owner_key;
pub use options::ControllerOptions;
pub use runner::{Controller, ControllerBuilder};

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
}
