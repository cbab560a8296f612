//! The processor: fans each notification out to every listener's queue (client-go's `sharedProcessor`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::{Mutex, RwLock};

use super::handler::Notification;
use super::listener::{ListenerStats, Outbox};
use super::synced::SyncNotify;
use crate::clock::deadline::deadline_after;
use crate::object::Object;

/// One registered listener, as the processor sees it.
pub(crate) struct Entry<K> {
    pub(crate) id: u64,
    pub(crate) outbox: Outbox<K>,
    pub(crate) stats: Arc<ListenerStats>,
    /// `None`: this handler never receives resyncs.
    pub(crate) resync: Option<Duration>,
    /// When the next resync round includes this listener; only `should_resync` reads or writes it.
    pub(crate) next_resync: Mutex<Instant>,
    /// Due for resync in the current round (set by `should_resync`).
    pub(crate) syncing: AtomicBool,
    /// Notifications with a sequence number up to this one were already in the store when the listener joined, so
    /// its snapshot covers them: they are not sent to it.
    pub(crate) start_after_seq: u64,
}

impl<K> Entry<K> {
    pub(crate) fn new(
        id: u64,
        outbox: Outbox<K>,
        stats: Arc<ListenerStats>,
        resync: Option<Duration>,
        start_after_seq: u64,
    ) -> Self {
        Entry {
            id,
            outbox,
            stats,
            resync,
            next_resync: Mutex::new(deadline_after(Instant::now(), resync.unwrap_or_default())),
            syncing: AtomicBool::new(false),
            start_after_seq,
        }
    }
}

/// One notification for the listeners: the result of applying the deltas of pop number `seq`.
pub(crate) struct Sequenced<K> {
    pub(crate) event: Notification<K>,
    pub(crate) seq: u64,
    /// An update that kept the resource version: only for listeners due for resync.
    pub(crate) is_sync: bool,
}

/// The listeners of one informer.
pub(crate) struct Processor<K> {
    /// Replaced whole (copy on write) when a listener is added or removed, so that `distribute` works on its own
    /// `Arc` of the list without holding the lock: a send may block on a full `Block` queue until that handler takes
    /// an event, and the handler may meanwhile remove itself or ask for metrics.
    entries: RwLock<Arc<[Arc<Entry<K>>]>>,
}

impl<K: Object> Processor<K> {
    pub(crate) fn new() -> Self {
        Processor {
            entries: RwLock::new(Arc::new([])),
        }
    }

    pub(crate) fn add(&self, entry: Entry<K>) {
        let mut entries = self.entries.write();
        *entries = entries.iter().cloned().chain([Arc::new(entry)]).collect();
    }

    /// Removes a listener and closes its queue; returns whether it was there. A `distribute` under way may still
    /// hold the entry: the listener is marked removed, so that nothing more is sent to it or delivered by it.
    pub(crate) fn remove(&self, id: u64) -> bool {
        let mut entries = self.entries.write();
        let Some(gone) = entries.iter().find(|e| e.id == id).cloned() else {
            return false;
        };
        *entries = entries.iter().filter(|e| e.id != id).cloned().collect();
        drop(entries);
        gone.stats.removed.store(true, Ordering::SeqCst);
        gone.outbox.close();
        true
    }

    /// Closes every queue.
    pub(crate) fn close_all(&self) {
        let entries = std::mem::replace(&mut *self.entries.write(), Arc::new([]));
        for e in entries.iter() {
            e.stats.removed.store(true, Ordering::SeqCst);
            e.outbox.close();
        }
    }

    /// Sends each notification, in order, to every listener that should get it: resync updates only to listeners
    /// due for resync; nothing to listeners whose snapshot already covers its `seq`.
    pub(crate) fn distribute(&self, batch: &[Sequenced<K>], sync: &SyncNotify, stop: &Receiver<()>) {
        // The lock is held only to clone the list (an `Arc`), never across a send.
        let entries = self.entries.read().clone();
        for e in entries.iter() {
            let syncing = e.syncing.load(Ordering::Relaxed);
            for n in batch.iter() {
                if e.stats.removed.load(Ordering::SeqCst) {
                    break;
                }
                if n.seq <= e.start_after_seq || (n.is_sync && !syncing) {
                    continue;
                }
                e.outbox.send(n.event.clone(), &e.stats, sync, stop);
            }
        }
    }

    /// Marks the listeners whose resync period has elapsed as syncing; true if any is (client-go's `shouldResync`).
    pub(crate) fn should_resync(&self, now: Instant) -> bool {
        let mut any = false;
        for e in self.entries.read().iter() {
            let mut due = false;
            if let Some(period) = e.resync {
                let mut next = e.next_resync.lock();
                if now >= *next {
                    due = true;
                    *next = deadline_after(now, period);
                }
            }
            e.syncing.store(due, Ordering::Relaxed);
            any |= due;
        }
        any
    }

    /// Statistics of every listener.
    pub(crate) fn stats(&self) -> Vec<Arc<ListenerStats>> {
        self.entries.read().iter().map(|e| e.stats.clone()).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.read().len()
    }
}
