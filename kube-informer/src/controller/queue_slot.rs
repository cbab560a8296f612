//! `QueueSlot`: where a controller's event handlers put keys — the work queue of the current term, if any.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use log::warn;
use parking_lot::{Mutex, RwLock};

use super::options::QueueKey;
use super::runner::Queue;

/// The queue of the current term, where event handlers put keys. Empty between terms: events then are dropped,
/// and the next term starts by queueing every primary key, which covers them.
#[derive(Default)]
pub(super) struct QueueSlot {
    pub(super) current: RwLock<Option<Arc<Queue>>>,
    /// Events the predicates stopped, over every term.
    pub(super) filtered: AtomicU64,
    /// The controller's name, for messages.
    pub(super) controller: String,
    /// The namespaces of a primary informer over a set of them (sorted); `None`: any key.
    pub(super) scope: Option<Vec<String>>,
    /// Namespaces outside `scope` that mappers returned keys in, each warned about once.
    pub(super) warned: Mutex<std::collections::HashSet<String>>,
    /// Secondary objects a reconcile was refused, whose changes queue their primaries.
    pub(super) refused: super::refusals::Refusals,
}

impl QueueSlot {
    /// Queues a key a secondary object was mapped to, unless its namespace is outside the primary's set: that
    /// primary is not cached, and a reconcile would take it for deleted.
    pub(super) fn add_mapped(&self, key: QueueKey) {
        if let Some(scope) = &self.scope {
            let ns = crate::object::split_key(&key).0.unwrap_or("");
            if scope.binary_search_by(|s| s.as_str().cmp(ns)).is_err() {
                if self.warned.lock().insert(ns.to_owned()) {
                    warn!(
                        "controller {}: an object was mapped to {key:?}, outside the namespaces of the primary \
                         informer [{}]: not reconciled (its primary is not cached; watch that namespace too)",
                        self.controller,
                        scope.join(", ")
                    );
                }
                self.filtered();
                return;
            }
        }
        self.add(key);
    }

    pub(super) fn filtered(&self) {
        self.filtered.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn add(&self, key: QueueKey) {
        if let Some(q) = &*self.current.read() {
            q.add(key);
        }
    }

    pub(super) fn add_all(&self, keys: impl IntoIterator<Item = QueueKey>) {
        if let Some(q) = &*self.current.read() {
            for key in keys {
                q.add(key);
            }
        }
    }
}
