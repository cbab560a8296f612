//! The processor: fans each notification out to every listener's queue (client-go's `sharedProcessor`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use parking_lot::RwLock;

use super::handler::Event;
use super::listener::{ListenerStats, Outbox};
use super::synced::SyncNotify;
use crate::object::Object;

/// One registered listener, as the processor sees it.
pub(crate) struct Entry<K> {
    pub(crate) id: u64,
    pub(crate) outbox: Outbox<K>,
    pub(crate) stats: Arc<ListenerStats>,
    /// `None`: this handler never receives resyncs.
    pub(crate) resync: Option<Duration>,
    pub(crate) next_resync: Instant,
    /// Due for resync in the current round (set by `should_resync`).
    pub(crate) syncing: bool,
    /// Notifications with a sequence number up to this one were already in the store when the listener joined, so
    /// its snapshot covers them: they are not sent to it.
    pub(crate) start_after_seq: u64,
}

/// One notification for the listeners: the result of applying the deltas of pop number `seq`.
pub(crate) struct Notification<K> {
    pub(crate) event: Event<K>,
    pub(crate) seq: u64,
    /// An update that kept the resource version: only for listeners due for resync.
    pub(crate) is_sync: bool,
}

/// The listeners of one informer.
pub(crate) struct Processor<K> {
    entries: RwLock<Vec<Entry<K>>>,
}

impl<K: Object> Processor<K> {
    pub(crate) fn new() -> Self {
        Processor {
            entries: RwLock::new(Vec::new()),
        }
    }

    pub(crate) fn add(&self, entry: Entry<K>) {
        self.entries.write().push(entry);
    }

    /// Removes a listener and closes its queue; returns whether it was there.
    pub(crate) fn remove(&self, id: u64) -> bool {
        let mut entries = self.entries.write();
        match entries.iter().position(|e| e.id == id) {
            Some(i) => {
                entries.remove(i).outbox.close();
                true
            }
            None => false,
        }
    }

    /// Closes every queue.
    pub(crate) fn close_all(&self) {
        for e in self.entries.write().drain(..) {
            e.outbox.close();
        }
    }

    /// Sends each notification, in order, to every listener that should get it, and empties `batch`: resync
    /// updates only to listeners due for resync; nothing to listeners whose snapshot already covers its `seq`.
    pub(crate) fn distribute(&self, batch: &mut Vec<Notification<K>>, sync: &SyncNotify, stop: &Receiver<()>) {
        let entries = self.entries.read();
        for e in entries.iter() {
            for n in batch.iter() {
                if n.seq <= e.start_after_seq || (n.is_sync && !e.syncing) {
                    continue;
                }
                e.outbox.send(n.event.clone(), &e.stats, sync, stop);
            }
        }
        drop(entries);
        batch.clear();
    }

    /// Marks the listeners whose resync period has elapsed as syncing; true if any is (client-go's `shouldResync`).
    pub(crate) fn should_resync(&self, now: Instant) -> bool {
        let mut any = false;
        for e in self.entries.write().iter_mut() {
            e.syncing = false;
            if let Some(period) = e.resync {
                if now >= e.next_resync {
                    e.syncing = true;
                    e.next_resync = now + period;
                    any = true;
                }
            }
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
