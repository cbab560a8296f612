//! A processor listener: one handler, its queue, and the OS thread that calls it (client-go's `processorListener`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, select};

use super::coalesce::CoalesceQueue;
use super::handler::{Notification, ResourceEventHandler};
use super::synced::SyncNotify;
use crate::cache::{DeletedObject, Recycler};
use crate::object::Object;
use crate::stop::StopSignal;
use crate::worker::panic_message;

/// Warn when an unbounded handler queue passes this many pending events (and again at each doubling).
pub const DEFAULT_BACKLOG_WARNING: usize = 10_000;

/// How a handler's queue behaves when the handler falls behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueuePolicy {
    /// Grow without limit, like client-go; a `warn!` names the handler when its backlog passes `warn_at` events (and
    /// again at each doubling). A stuck handler eventually exhausts memory: choose a bound if that matters.
    Unbounded {
        /// Backlog size that triggers the first warning.
        warn_at: usize,
    },
    /// At most `capacity` pending events; when full, the informer's processing thread waits for this handler
    /// (back-pressure: the store and every other handler wait too, and the informer's queue grows instead — except
    /// in a relist, which stops reading once it is 1,024 objects ahead of the store). The handler's `pending` then
    /// counts `capacity + 1`: the full queue and the event waiting to enter it. The processing thread applies pops
    /// to the store in batches of up to 64 before notifying, so the store may be that many objects ahead of what a
    /// blocked handler was given.
    Block {
        /// Maximum pending events.
        capacity: usize,
    },
    /// Keep only the latest state per object: memory is O(objects) however slow the handler. Per object, the
    /// handler still sees a correct sequence — `old` of an update is the state it saw last, a deletion is always
    /// delivered, an object deleted and re-created gets a delete then an add — but intermediate states are skipped
    /// and objects may be delivered in a different order than they changed.
    CoalesceByKey,
}

impl Default for QueuePolicy {
    fn default() -> Self {
        QueuePolicy::Unbounded {
            warn_at: DEFAULT_BACKLOG_WARNING,
        }
    }
}

/// Options of one event handler.
#[derive(Clone, Debug, Default)]
pub struct HandlerOptions {
    /// Name used in logs, thread names and metrics (default `handler-<n>`).
    pub name: Option<String>,
    /// Resync period: this handler receives the whole cache as updates this often (`None`: never).
    pub resync: Option<Duration>,
    /// Queue behaviour.
    pub queue: QueuePolicy,
}

impl HandlerOptions {
    /// Sets the name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the resync period.
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Sets the queue policy.
    #[must_use]
    pub fn queue(mut self, policy: QueuePolicy) -> Self {
        self.queue = policy;
        self
    }
}

/// Counters of one listener, shared by the processor, the listener thread and the registration.
#[derive(Debug, Default)]
pub(crate) struct ListenerStats {
    pub(crate) name: String,
    /// Events queued (or, for a coalescing queue, objects with a pending event) not yet taken by the handler thread.
    pub(crate) queued: AtomicUsize,
    /// Highest `queued` seen.
    pub(crate) max_queued: AtomicUsize,
    /// Initial-list adds (synthetic snapshot adds included) not yet handled. Invariant: counted before the event is
    /// queued, uncounted after the handler returned (or panicked), or when coalescing drops the event.
    pub(crate) pending_initial: AtomicUsize,
    pub(crate) delivered: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) coalesced: AtomicU64,
    /// Set when the handler is removed (or the informer stops): nothing more is queued for it or delivered to it.
    pub(crate) removed: AtomicBool,
}

impl ListenerStats {
    pub(crate) fn new(name: String) -> Self {
        ListenerStats {
            name,
            ..Default::default()
        }
    }

    pub(crate) fn note_queued(&self, n: usize) {
        self.max_queued.fetch_max(n, Ordering::Relaxed);
    }

    /// Marks `n` initial adds as done (handled or dropped); wakes sync waiters when none are left (and the cache
    /// has synced: see [`SyncNotify::notify_if_synced`]).
    pub(crate) fn initial_done(&self, n: usize, sync: &SyncNotify) {
        if n > 0 && self.pending_initial.fetch_sub(n, Ordering::SeqCst) == n {
            sync.notify_if_synced();
        }
    }
}

/// A snapshot of one handler's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HandlerMetrics {
    /// The handler's name.
    pub name: String,
    /// Events waiting for the handler now (its lag).
    pub pending: usize,
    /// Most events ever waiting at once.
    pub max_pending: usize,
    /// Events handled.
    pub delivered: u64,
    /// Handler calls that panicked (caught and logged).
    pub panics: u64,
    /// Events merged away by a `CoalesceByKey` queue.
    pub coalesced: u64,
}

impl ListenerStats {
    pub(crate) fn snapshot(&self) -> HandlerMetrics {
        HandlerMetrics {
            name: self.name.clone(),
            pending: self.queued.load(Ordering::Relaxed),
            max_pending: self.max_queued.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
            panics: self.panics.load(Ordering::Relaxed),
            coalesced: self.coalesced.load(Ordering::Acquire),
        }
    }
}

/// The processor's end of a listener's queue.
pub(crate) enum Outbox<K> {
    Channel {
        tx: Sender<Notification<K>>,
        /// Next backlog size to warn at (unbounded queues); `usize::MAX` for bounded ones.
        next_warn: AtomicUsize,
    },
    Coalesce(Arc<CoalesceQueue<K>>),
}

/// The listener thread's end.
pub(crate) enum Inbox<K> {
    Channel(Receiver<Notification<K>>),
    Coalesce(Arc<CoalesceQueue<K>>),
}

/// Creates both ends of a queue with `policy`.
pub(crate) fn queue<K: Object>(policy: QueuePolicy, stats: &Arc<ListenerStats>) -> (Outbox<K>, Inbox<K>) {
    match policy {
        QueuePolicy::Unbounded { warn_at } => {
            let (tx, rx) = crossbeam_channel::unbounded();
            let next_warn = AtomicUsize::new(warn_at.max(1));
            (Outbox::Channel { tx, next_warn }, Inbox::Channel(rx))
        }
        QueuePolicy::Block { capacity } => {
            let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
            let next_warn = AtomicUsize::new(usize::MAX);
            (Outbox::Channel { tx, next_warn }, Inbox::Channel(rx))
        }
        QueuePolicy::CoalesceByKey => {
            let q = Arc::new(CoalesceQueue::new(stats.clone()));
            (Outbox::Coalesce(q.clone()), Inbox::Coalesce(q))
        }
    }
}

impl<K: Object> Outbox<K> {
    /// Queues `ev`; blocks while a bounded queue is full, unless `stop` disconnects. False when the listener is gone
    /// or stopping.
    pub(crate) fn send(
        &self,
        ev: Notification<K>,
        stats: &ListenerStats,
        sync: &SyncNotify,
        stop: &Receiver<()>,
    ) -> bool {
        let initial = ev.is_initial_add();
        if initial {
            stats.pending_initial.fetch_add(1, Ordering::SeqCst);
        }
        let sent = match self {
            Outbox::Channel { tx, next_warn } => {
                // Count before sending: the listener thread may take the event (and uncount it) at once.
                let n = stats.queued.fetch_add(1, Ordering::Relaxed) + 1;
                let ok = match tx.try_send(ev) {
                    Ok(()) => true,
                    Err(crossbeam_channel::TrySendError::Full(ev)) => select! {
                        send(tx, ev) -> r => r.is_ok(),
                        recv(stop) -> _ => false,
                    },
                    Err(crossbeam_channel::TrySendError::Disconnected(_)) => false,
                };
                if ok {
                    // The counter also counts, for an instant, an event the handler thread has just taken (it
                    // uncounts it right after taking it): a bounded queue never holds more than its capacity, plus
                    // the one event the processing thread waits to hand over.
                    stats.note_queued(tx.capacity().map_or(n, |cap| n.min(cap + 1)));
                    let warn = next_warn.load(Ordering::Relaxed);
                    if n >= warn {
                        next_warn.store(warn.saturating_mul(2), Ordering::Relaxed);
                        log::warn!(
                            "event handler {:?} is falling behind: {n} events pending (queue unbounded; consider \
                             QueuePolicy::Block or CoalesceByKey)",
                            stats.name
                        );
                    }
                } else {
                    stats.queued.fetch_sub(1, Ordering::Relaxed);
                }
                ok
            }
            Outbox::Coalesce(q) => q.push(ev, sync),
        };
        if !sent && initial {
            stats.initial_done(1, sync);
        }
        sent
    }

    /// Closes the queue: the listener thread exits once it notices.
    pub(crate) fn close(&self) {
        if let Outbox::Coalesce(q) = self {
            q.close();
        }
    }
}

/// The listener thread: delivers the late-join snapshot (already counted in `queued` and `pending_initial` by the
/// registration), then queued events, until the queue closes (the processor drops or closes its end when the
/// handler is removed or the informer stops) or `stop` is set. Handler panics are caught and logged; delivery
/// continues.
pub(crate) fn run<K, H>(
    mut handler: H,
    snapshot: Vec<Arc<K>>,
    inbox: Inbox<K>,
    stats: Arc<ListenerStats>,
    stop: Arc<StopSignal>,
    sync: Arc<SyncNotify>,
    recycler: Arc<Recycler<K>>,
) where
    K: Object,
    H: ResourceEventHandler<K>,
{
    let stopped = || stop.is_stopped() || stats.removed.load(Ordering::SeqCst);
    for obj in snapshot {
        if stopped() {
            return;
        }
        deliver(
            &mut handler,
            &Notification::Add {
                obj,
                is_in_initial_list: true,
            },
            &stats,
            &sync,
        );
        // Counted by the registration along with `pending_initial`.
        stats.queued.fetch_sub(1, Ordering::Relaxed);
    }
    loop {
        let ev = match &inbox {
            // Disconnected once the processor dropped the sender (handler removed, informer stopped).
            Inbox::Channel(rx) => match rx.recv() {
                Ok(ev) => ev,
                Err(_) => return,
            },
            Inbox::Coalesce(q) => match q.pop() {
                Some(ev) => ev,
                None => return,
            },
        };
        if let Inbox::Channel(_) = inbox {
            stats.queued.fetch_sub(1, Ordering::Relaxed);
        }
        if stopped() {
            return;
        }
        deliver(&mut handler, &ev, &stats, &sync);
        retire(&recycler, ev);
    }
}

/// Lets go of a delivered event, handing the object the cache no longer holds (an update's old version, a deleted
/// object) to `recycler`.
pub(crate) fn retire<K>(recycler: &Recycler<K>, ev: Notification<K>) {
    match ev {
        Notification::Update { old, .. } => recycler.retire(old),
        Notification::Delete(DeletedObject::Object(obj)) => recycler.retire(obj),
        Notification::Delete(DeletedObject::FinalStateUnknown { last_known, .. }) => recycler.retire(last_known),
        Notification::Add { .. } => {}
    }
}

fn deliver<K, H: ResourceEventHandler<K>>(
    handler: &mut H,
    ev: &Notification<K>,
    stats: &ListenerStats,
    sync: &SyncNotify,
) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| handler.handle(ev))) {
        stats.panics.fetch_add(1, Ordering::Relaxed);
        log::warn!(
            "event handler {:?} panicked ({}); it keeps receiving events",
            stats.name,
            panic_message(&*payload)
        );
    }
    stats.delivered.fetch_add(1, Ordering::Relaxed);
    if ev.is_initial_add() {
        stats.initial_done(1, sync);
    }
}
