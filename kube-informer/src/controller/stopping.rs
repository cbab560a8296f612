//! `StoppingController`: a controller stopping for good, its reconciles in flight given the grace period.

use std::time::Instant;

use log::warn;

use super::runner::Unregister;
use super::shard_coordinator::ShardCoordinator;
use crate::worker::Worker;

/// A controller that takes no more work, its reconciles in flight still running
/// ([`Controller::begin_stop`](super::Controller::begin_stop)).
pub(crate) struct StoppingController {
    pub(super) name: String,
    /// A sharded controller's coordinator: stopped, releasing the slots, once the workers are done.
    pub(super) coordinator: Option<ShardCoordinator>,
    pub(super) workers: Vec<Worker>,
    /// Reads the controller's count of reconciles running.
    pub(super) in_flight: Box<dyn Fn() -> usize + Send + Sync>,
    /// The controller's event handlers, removed once its workers are done.
    pub(super) registrations: Vec<Box<dyn Unregister>>,
}

impl StoppingController {
    /// The controller's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Waits until `deadline` for the reconciles in flight, then removes the controller's event handlers. Returns
    /// how many reconciles were still running at the deadline (their threads are left detached, with a warning): 0
    /// when every worker was joined.
    pub(crate) fn finish(self, deadline: Instant) -> usize {
        let joined = join_workers(self.workers, deadline);
        let running = if joined { 0 } else { (self.in_flight)().max(1) };
        if let Some(c) = self.coordinator {
            c.stop();
        }
        if running > 0 {
            warn!(
                "controller {}: {running} reconcile(s) did not finish within the grace period; left detached",
                self.name
            );
        }
        for r in self.registrations {
            r.remove();
        }
        running
    }
}

/// Joins `workers` until `deadline`; true when every one was joined.
pub(super) fn join_workers(workers: Vec<Worker>, deadline: Instant) -> bool {
    let mut joined = true;
    for w in workers {
        joined &= w.join_until(deadline);
    }
    joined
}
