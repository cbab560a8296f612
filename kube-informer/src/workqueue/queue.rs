//! The basic work queue: client-go's `workqueue.Typed` — deduplicating, FIFO, and never handing one key to two
//! workers at once.
//!
//! All state of a queue (and of the delaying and rate-limiting layers built on it) sits in one [`Inner`] behind one
//! `parking_lot::Mutex`; the methods that need the lock live on `Inner`, reachable only through the guard.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::error::Error as StdError;
use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use log::debug;
use parking_lot::{Condvar, Mutex, MutexGuard};

use super::delaying::Delayed;
use super::metrics::{QueueMetrics, Starts, Stats};
use super::rate_limiter::RateLimiter;
use crate::clock::{Clock, ClockWatcher, RealClock};

/// What a work-queue item must be (client-go's `comparable` item; a controller queues object keys): cheap to clone
/// (use `Arc<str>` or a small struct rather than a long `String` if the queue is hot), comparable, hashable and
/// shareable between threads. Blanket-implemented.
pub trait Item: Clone + Eq + Hash + Send + Sync + 'static {}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Item for T {}

/// Configuration shared by [`Queue`], [`DelayingQueue`](super::DelayingQueue) and
/// [`RateLimitingQueue`](super::RateLimitingQueue) (client-go's `TypedQueueConfig` and
/// `TypedRateLimitingQueueConfig`).
///
/// ```
/// use std::time::Duration;
/// use kube_informer::workqueue::{ItemExponentialFailureRateLimiter, QueueConfig, RateLimitingQueue};
///
/// let queue: RateLimitingQueue<String> = RateLimitingQueue::with_config(
///     QueueConfig::default()
///         .name("pods")
///         .rate_limiter(ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1))),
/// );
/// assert_eq!(queue.name(), "pods");
/// ```
pub struct QueueConfig<K> {
    /// The queue's name: reported in [`QueueMetrics::name`] and part of the delay thread's name
    /// (`delay:<name>`). Default: empty (unnamed), as client-go's `New()`.
    pub name: String,
    /// Where the queue and its default rate limiter read time. Default: [`RealClock`]; tests pass a
    /// [`FakeClock`](crate::clock::FakeClock).
    pub clock: Arc<dyn Clock>,
    /// The rate limiter of a [`RateLimitingQueue`](super::RateLimitingQueue) (ignored by the other queues).
    /// `None` (the default) means [`default_controller_rate_limiter`](super::default_controller_rate_limiter)
    /// reading `clock`, as client-go's `DefaultTypedControllerRateLimiter`.
    pub rate_limiter: Option<Box<dyn RateLimiter<K>>>,
    /// Collect the time-based metrics: queue latency, work duration, unfinished work, longest running processor.
    /// They cost three clock reads per add/get/done cycle (the largest part of the queue's own CPU time in its bench);
    /// the counters (depth, adds, retries…) are always kept. Default: `true`. (client-go records nothing unless
    /// the queue is named and a metrics provider is installed.)
    pub timing_metrics: bool,
}

impl<K> QueueConfig<K> {
    /// Sets [`name`](QueueConfig::name).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets [`clock`](QueueConfig::clock).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Sets [`rate_limiter`](QueueConfig::rate_limiter).
    #[must_use]
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<K> + 'static) -> Self {
        self.rate_limiter = Some(Box::new(limiter));
        self
    }

    /// Sets [`timing_metrics`](QueueConfig::timing_metrics).
    #[must_use]
    pub fn timing_metrics(mut self, on: bool) -> Self {
        self.timing_metrics = on;
        self
    }
}

impl<K> Default for QueueConfig<K> {
    fn default() -> Self {
        QueueConfig {
            name: String::new(),
            clock: Arc::new(RealClock),
            rate_limiter: None,
            timing_metrics: true,
        }
    }
}

impl<K> fmt::Debug for QueueConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("clock", &self.clock)
            .field("rate_limiter", &self.rate_limiter.as_ref().map(|_| "…"))
            .field("timing_metrics", &self.timing_metrics)
            .finish()
    }
}

/// A deduplicating FIFO work queue (client-go's `workqueue.Typed`).
///
/// * **Deduplication**: a key waiting to be processed is queued once, however often it is added (client-go's `dirty`
///   set).
/// * **One worker per key**: a key handed out by [`get`](Queue::get) is *processing* until [`done`](Queue::done).
///   Adding it meanwhile only marks it dirty; `done` then puts it back at the end of the queue (client-go's
///   `processing` set). So a key is never processed by two workers at once, and an add is never lost: the key is
///   processed again after every add.
/// * **FIFO** otherwise.
///
/// ## `get` hands out a guard
///
/// [`get`](Queue::get) returns a [`Processing`] guard that derefs to the key and calls [`done`](Queue::done) when
/// dropped — also when the worker panics, which would otherwise leave the key "processing" forever (never processed
/// again, and [`shut_down_with_drain`](Queue::shut_down_with_drain) waiting for it forever). client-go's explicit
/// style is still there: [`Processing::into_key`] takes the bare key, and the caller then owes a
/// [`done(&key)`](Queue::done).
///
/// ## Shutting down, exactly as client-go
///
/// [`shut_down`](Queue::shut_down) and [`shut_down_with_drain`](Queue::shut_down_with_drain) both refuse new adds
/// (`add` returns `false`) and wake every blocked getter. In both modes `get` **keeps handing out the keys already
/// queued** (and keys re-added before the shutdown come back after their `done`), and returns `None` only once the
/// queue is empty — that is what client-go's `Get` does, whatever its `ShutDown` comment says. Workers that must stop
/// at once check [`is_shutting_down`](Queue::is_shutting_down). `shut_down_with_drain` additionally blocks until no
/// key is processing (client-go waits for the processing set only, not for the queue to empty); `shut_down` from
/// another thread ends that wait early. Delayed adds still waiting are dropped.
///
/// ## Timeouts
///
/// Blocking calls come as `try_x` / `x_timeout` / `x_deadline` (crossbeam-channel style, the timeout implemented via
/// the deadline). Deadlines are instants of the queue's [`Clock`]: with a [`FakeClock`](crate::clock::FakeClock) they pass
/// when the test steps the clock.
pub struct Queue<K: Item> {
    core: Arc<Core<K>>,
}

/// The shared state of a queue: owned by the queue, and by its delay thread.
pub(super) struct Core<K> {
    /// The queue's name ([`QueueConfig::name`]).
    pub(super) name: String,
    /// The queue's clock: every timestamp and deadline is read from it.
    pub(super) clock: Arc<dyn Clock>,
    /// [`QueueConfig::timing_metrics`]: read the clock on add / get / done.
    pub(super) timing: bool,
    /// The clock's time at construction: the timestamp of every add / get / done when `timing` is off.
    pub(super) epoch: Instant,
    /// Everything mutable.
    pub(super) state: Mutex<Inner<K>>,
    /// Getters blocked for a key, the shutdown, or their deadline.
    pub(super) key_ready: Condvar,
    /// The delay thread, blocked until the earliest delayed key is due, an earlier one arrives, or shutdown.
    pub(super) timer: Condvar,
    /// Drainers blocked until no key is processing, `shut_down` cancels the drain, or their deadline.
    pub(super) drained: Condvar,
}

/// What the queue is doing about one key.
pub(super) struct KeyState {
    /// Where the key is in its get/done cycle.
    pub(super) work: Work,
    /// Its pending delayed add, if any. `Some` iff the delay heap holds a live entry for the key with the same
    /// `ready_at` and `seq`.
    pub(super) waiting: Option<Waiting>,
    /// A thread is computing a rate-limited delay for this key (`RateLimiter::when` runs outside the lock); other
    /// `add_rate_limited` calls for the key meanwhile do nothing.
    pub(super) limiting: bool,
}

impl KeyState {
    pub(super) fn new(work: Work) -> KeyState {
        KeyState {
            work,
            waiting: None,
            limiting: false,
        }
    }

    /// Nothing left to do about the key: it leaves the map.
    pub(super) fn is_idle(&self) -> bool {
        matches!(self.work, Work::Idle) && self.waiting.is_none() && !self.limiting
    }

    /// Waiting to be processed: queued, or re-added while processing (client-go's `dirty` set).
    pub(super) fn is_dirty(&self) -> bool {
        matches!(self.work, Work::Queued { .. } | Work::Processing { redo: Some(_), .. })
    }
}

/// A key's place in the get/done cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Work {
    /// Neither queued nor processing (the item exists only for its delayed add or rate-limit computation).
    Idle,
    /// In `Inner::queue`, exactly once; dirty since `since` (for the queue-latency metric).
    Queued {
        /// When the key became dirty.
        since: Instant,
    },
    /// Handed to a worker, not in `Inner::queue`.
    Processing {
        /// Its slot in `Inner::starts` (its start time); [`NO_SLOT`] without timing metrics.
        slot: u32,
        /// `Some(when)` if it was re-added while processing: `done` queues it again.
        redo: Option<Instant>,
    },
}

/// The `Work::Processing` slot of a key whose start time is not kept (timing metrics off).
const NO_SLOT: u32 = u32::MAX;

/// A pending delayed add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Waiting {
    /// When the key is to be added.
    pub(super) ready_at: Instant,
    /// The live heap entry's sequence number.
    pub(super) seq: u64,
    /// Some `add_rate_limited` asked for this (or an earlier-merged) delay: a retry is pending, and further
    /// `add_rate_limited` calls must not advance the key's failure count.
    pub(super) rate_limited: bool,
}

/// The mutable state of a queue. Methods that need the lock live here.
pub(super) struct Inner<K> {
    /// Every key the queue is doing something about: a key is here iff its item is not idle (queued, processing,
    /// waiting in the delay heap, or being rate-limited). Idle keys are removed, so memory follows the working set.
    pub(super) items: HashMap<K, KeyState>,
    /// Keys waiting for a worker, oldest first: exactly the keys whose `work` is `Queued`, each once.
    pub(super) queue: VecDeque<K>,
    /// Number of items whose `work` is `Processing`.
    pub(super) processing: usize,
    /// Number of items whose `work` is `Processing { redo: Some(_) }`.
    pub(super) redo: usize,
    /// Start times of the keys processing, in the slots their `Work::Processing` names.
    pub(super) starts: Starts,
    /// The delay heap, earliest first. Its live entries are one per key whose item is `waiting`, with the same
    /// `ready_at` and `seq`; every other entry is stale (superseded by an earlier deadline, or the key was dropped)
    /// and is discarded when it reaches the top, or by compaction.
    pub(super) heap: BinaryHeap<Reverse<Delayed<K>>>,
    /// Number of items that are `waiting` (live heap entries).
    pub(super) waiting: usize,
    /// Sequence number of the next heap entry (ties on `ready_at` fire in insertion order).
    pub(super) next_seq: u64,
    /// Set by either shutdown, never cleared: adds are refused.
    pub(super) shutting_down: bool,
    /// A `shut_down_with_drain` is waiting; `shut_down` clears it to end that wait.
    pub(super) draining: bool,
    /// Threads blocked in a `get` (waiting on `Core::key_ready`).
    pub(super) blocked_getters: usize,
    /// [`QueueConfig::timing_metrics`]: observe latencies and keep start times.
    pub(super) timing: bool,
    /// Counters and histograms.
    pub(super) stats: Stats,
}

impl<K: Item> Inner<K> {
    fn new(timing: bool) -> Inner<K> {
        Inner {
            items: HashMap::new(),
            queue: VecDeque::new(),
            processing: 0,
            redo: 0,
            starts: Starts::default(),
            heap: BinaryHeap::new(),
            waiting: 0,
            next_seq: 0,
            shutting_down: false,
            draining: false,
            blocked_getters: 0,
            timing,
            stats: Stats::default(),
        }
    }

    /// Marks `key` as needing processing (client-go's `Add`, minus the shutdown check). Returns `true` if the key
    /// went onto the queue (a getter should be woken).
    pub(super) fn enqueue(&mut self, key: K, now: Instant) -> bool {
        match self.items.entry(key) {
            Entry::Vacant(vacant) => {
                let key = vacant.key().clone();
                vacant.insert(KeyState::new(Work::Queued { since: now }));
                self.queue.push_back(key);
                self.stats.adds += 1;
                true
            }
            Entry::Occupied(mut occupied) => match occupied.get().work {
                Work::Idle => {
                    let key = occupied.key().clone();
                    occupied.get_mut().work = Work::Queued { since: now };
                    self.queue.push_back(key);
                    self.stats.adds += 1;
                    true
                }
                Work::Processing { slot, redo: None } => {
                    occupied.get_mut().work = Work::Processing { slot, redo: Some(now) };
                    self.redo += 1;
                    self.stats.adds += 1;
                    false
                }
                Work::Queued { .. } | Work::Processing { redo: Some(_), .. } => false,
            },
        }
    }

    /// Hands the first queued key to a worker (client-go's `Get`, minus the wait).
    fn pop(&mut self, now: Instant) -> Option<K> {
        while let Some(key) = self.queue.pop_front() {
            let Some(item) = self.items.get_mut(&key) else {
                debug_assert!(false, "a queued key has no item");
                continue;
            };
            let Work::Queued { since } = item.work else {
                debug_assert!(false, "a queued key is not in the Queued state");
                continue;
            };
            let slot = if self.timing {
                self.stats.queue_latency.observe(now.saturating_duration_since(since));
                self.starts.take(now)
            } else {
                NO_SLOT
            };
            item.work = Work::Processing { slot, redo: None };
            self.processing += 1;
            return Some(key);
        }
        None
    }

    /// Ends the processing of `key` (client-go's `Done`). Returns `None` if the key was not processing, otherwise
    /// whether it went back onto the queue.
    fn finish(&mut self, key: &K, now: Instant) -> Option<bool> {
        // Take the item out (one hash, and the owned key back); put it back only if something is left to do.
        let (key, mut item) = self.items.remove_entry(key)?;
        let Work::Processing { slot, redo } = item.work else {
            self.items.insert(key, item);
            return None;
        };
        if let Some(start) = self.starts.release(slot) {
            self.stats.work_duration.observe(now.saturating_duration_since(start));
        }
        self.processing -= 1;
        let requeued = match redo {
            Some(since) => {
                item.work = Work::Queued { since };
                self.redo -= 1;
                self.queue.push_back(key.clone());
                true
            }
            None => {
                item.work = Work::Idle;
                false
            }
        };
        if item.is_idle() {
            self.shrink_after_burst();
        } else {
            self.items.insert(key, item);
        }
        Some(requeued)
    }

    /// Gives memory back after a burst: the key map, the queue and the delay heap keep at most about four times
    /// the room they use (never less than a small floor). Each shrink is O(len) and needs the size to have fallen
    /// by half since the last, so the cost is amortised O(1) per key.
    pub(super) fn shrink_after_burst(&mut self) {
        const FLOOR: usize = 1024;
        if self.items.capacity() > FLOOR && self.items.len() * 4 < self.items.capacity() {
            self.items.shrink_to(self.items.len() * 2);
        }
        if self.queue.capacity() > FLOOR && self.queue.len() * 4 < self.queue.capacity() {
            self.queue.shrink_to(self.queue.len() * 2);
        }
        if self.heap.capacity() > FLOOR && self.heap.len() * 4 < self.heap.capacity() {
            self.heap.shrink_to(self.heap.len() * 2);
        }
    }

    /// Drops the item of `key` if nothing is left to do about it.
    pub(super) fn remove_if_idle(&mut self, key: &K) {
        if self.items.get(key).is_some_and(KeyState::is_idle) {
            self.items.remove(key);
        }
    }

    /// Refuses adds from now on; `drain` starts (or, false, cancels) a drain. Pending delayed adds are dropped.
    fn begin_shut_down(&mut self, drain: bool) {
        self.shutting_down = true;
        self.draining = drain;
        self.drop_waiting();
    }
}

/// How long a getter may block.
#[derive(Debug, Clone, Copy)]
enum Wait {
    /// Not at all.
    No,
    /// Until the clock reaches this instant.
    Until(Instant),
    /// Until a key or the shutdown comes.
    Forever,
}

impl<K: Item> Core<K> {
    /// The timestamp of an add / get / done: the clock's time, or a constant when timing metrics are off.
    pub(super) fn stamp(&self) -> Instant {
        if self.timing { self.clock.now() } else { self.epoch }
    }

    /// Wakes every waiter: getters, the delay thread, drainers.
    fn wake_all(&self) {
        self.key_ready.notify_all();
        self.timer.notify_all();
        self.drained.notify_all();
    }

    /// Blocks on `condvar` until notified or until the clock reaches `deadline` (`None`: until notified).
    pub(super) fn wait(&self, condvar: &Condvar, guard: &mut MutexGuard<'_, Inner<K>>, deadline: Option<Instant>) {
        match deadline.and_then(|d| self.clock.real_wait(d)) {
            Some(timeout) => {
                condvar.wait_for(guard, timeout);
            }
            None => condvar.wait(guard),
        }
    }

    /// Every flavour of `get`: the key, or why there is none (`Timeout` also means "empty" for `Wait::No`).
    fn get_until(&self, wait: Wait) -> Result<K, GetTimeoutError> {
        // Read the clock before taking the lock (a clock read is as long as the rest of the critical section); only
        // a getter that had to wait reads it again, under the lock.
        let mut now = self.stamp();
        let mut inner = self.state.lock();
        loop {
            if let Some(key) = inner.pop(now) {
                return Ok(key);
            }
            if inner.shutting_down {
                return Err(GetTimeoutError::ShutDown);
            }
            let deadline = match wait {
                Wait::No => return Err(GetTimeoutError::Timeout),
                Wait::Until(deadline) if self.clock.now() >= deadline => return Err(GetTimeoutError::Timeout),
                Wait::Until(deadline) => Some(deadline),
                Wait::Forever => None,
            };
            inner.blocked_getters += 1;
            self.wait(&self.key_ready, &mut inner, deadline);
            inner.blocked_getters -= 1;
            if !inner.queue.is_empty() {
                now = self.stamp();
            }
        }
    }

    pub(super) fn done(&self, key: &K) {
        let now = self.stamp();
        let mut inner = self.state.lock();
        match inner.finish(key, now) {
            Some(true) => {
                self.key_ready.notify_one();
            }
            Some(false) => {}
            None => debug!(
                "workqueue {:?}: done called for a key that is not being processed",
                self.name
            ),
        }
        if inner.processing == 0 && inner.draining {
            self.drained.notify_all();
        }
    }

    pub(super) fn begin_shut_down(&self, drain: bool) {
        self.state.lock().begin_shut_down(drain);
        self.wake_all();
    }

    /// Waits until no key is processing (true), a `shut_down` cancels the drain (false), or `deadline` passes
    /// (false).
    pub(super) fn wait_drained(&self, deadline: Option<Instant>) -> bool {
        let mut inner = self.state.lock();
        loop {
            if inner.processing == 0 {
                return true;
            }
            if !inner.draining {
                return false;
            }
            if let Some(deadline) = deadline
                && self.clock.now() >= deadline
            {
                return false;
            }
            self.wait(&self.drained, &mut inner, deadline);
        }
    }
}

impl<K: Item> ClockWatcher for Core<K> {
    fn clock_moved(&self) {
        {
            let mut inner = self.state.lock();
            if !inner.shutting_down && inner.waiting > 0 {
                let now = self.clock.now();
                inner.pump(now);
            }
        }
        self.wake_all();
    }
}

impl<K: Item> Queue<K> {
    /// An unnamed queue on the real clock (client-go's `NewTyped`).
    pub fn new() -> Queue<K> {
        Queue::with_config(QueueConfig::default())
    }

    /// A queue with a name and clock (client-go's `NewTypedWithConfig`). `config.rate_limiter` is not used.
    pub fn with_config(config: QueueConfig<K>) -> Queue<K> {
        let epoch = config.clock.now();
        let core = Arc::new(Core {
            name: config.name,
            clock: config.clock,
            timing: config.timing_metrics,
            epoch,
            state: Mutex::new(Inner::new(config.timing_metrics)),
            key_ready: Condvar::new(),
            timer: Condvar::new(),
            drained: Condvar::new(),
        });
        let watcher: Weak<dyn ClockWatcher> = Arc::downgrade(&core) as Weak<dyn ClockWatcher>;
        core.clock.watch(watcher);
        Queue { core }
    }

    pub(super) fn core(&self) -> &Arc<Core<K>> {
        &self.core
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// The queue's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.core.clock
    }

    /// Marks `key` as needing processing (client-go's `Add`). A key already waiting stays where it is; a key being
    /// processed is queued again when its worker calls `done`.
    ///
    /// Returns `false` if the queue is shutting down and refused the key, `true` otherwise (the key will be
    /// processed).
    pub fn add(&self, key: K) -> bool {
        let now = self.core.stamp();
        let mut inner = self.core.state.lock();
        if inner.shutting_down {
            return false;
        }
        if inner.enqueue(key, now) {
            drop(inner);
            self.core.key_ready.notify_one();
        }
        true
    }

    /// Number of keys queued for a worker — not those processing, nor those waiting in the delay heap. For
    /// information only: gating `add` or `get` on it is racy.
    pub fn len(&self) -> usize {
        self.core.state.lock().queue.len()
    }

    /// No key is queued for a worker (see [`len`](Queue::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Blocks until a key is queued and hands it out, or returns `None` once the queue is shutting down *and* empty
    /// (client-go's `Get`). The key is processing until the returned guard is dropped or
    /// [`done`](Processing::done).
    pub fn get(&self) -> Option<Processing<'_, K>> {
        self.core.get_until(Wait::Forever).ok().map(|key| self.processing(key))
    }

    /// Hands out a queued key without blocking.
    pub fn try_get(&self) -> Result<Processing<'_, K>, TryGetError> {
        match self.core.get_until(Wait::No) {
            Ok(key) => Ok(self.processing(key)),
            Err(GetTimeoutError::Timeout) => Err(TryGetError::Empty),
            Err(GetTimeoutError::ShutDown) => Err(TryGetError::ShutDown),
        }
    }

    /// Like [`get`](Queue::get), giving up after `timeout` on the queue's clock.
    pub fn get_timeout(&self, timeout: Duration) -> Result<Processing<'_, K>, GetTimeoutError> {
        let wait = self
            .core
            .clock
            .now()
            .checked_add(timeout)
            .map_or(Wait::Forever, Wait::Until);
        self.core.get_until(wait).map(|key| self.processing(key))
    }

    /// Like [`get`](Queue::get), giving up when the queue's clock reaches `deadline`.
    pub fn get_deadline(&self, deadline: Instant) -> Result<Processing<'_, K>, GetTimeoutError> {
        self.core
            .get_until(Wait::Until(deadline))
            .map(|key| self.processing(key))
    }

    fn processing(&self, key: K) -> Processing<'_, K> {
        Processing {
            queue: self,
            key: Some(key),
        }
    }

    /// Ends the processing of `key` (client-go's `Done`): if it was added again meanwhile, it goes back to the end
    /// of the queue. Only needed after [`Processing::into_key`]; dropping the guard does it. A key that is not
    /// processing is ignored (client-go would queue a duplicate of a queued key).
    pub fn done(&self, key: &K) {
        self.core.done(key);
    }

    /// Refuses new adds and wakes every blocked getter (client-go's `ShutDown`); cancels a
    /// [`shut_down_with_drain`](Queue::shut_down_with_drain) in progress. Keys already queued are still handed out
    /// (see the type's docs). Returns at once; may be called more than once.
    pub fn shut_down(&self) {
        self.core.begin_shut_down(false);
    }

    /// Refuses new adds, wakes blocked getters, and blocks until every key being processed is done (client-go's
    /// `ShutDownWithDrain`). Returns `true` once no key is processing, `false` if a [`shut_down`](Queue::shut_down)
    /// from another thread cancelled the wait. Blocks forever if a worker never finishes: prefer
    /// [`shut_down_with_drain_timeout`](Queue::shut_down_with_drain_timeout) where that can happen.
    pub fn shut_down_with_drain(&self) -> bool {
        self.core.begin_shut_down(true);
        self.core.wait_drained(None)
    }

    /// [`shut_down_with_drain`](Queue::shut_down_with_drain), giving up after `timeout` on the queue's clock
    /// (`false`).
    pub fn shut_down_with_drain_timeout(&self, timeout: Duration) -> bool {
        let deadline = self.core.clock.now().checked_add(timeout);
        self.core.begin_shut_down(true);
        self.core.wait_drained(deadline)
    }

    /// [`shut_down_with_drain`](Queue::shut_down_with_drain), giving up when the queue's clock reaches `deadline`
    /// (`false`).
    pub fn shut_down_with_drain_deadline(&self, deadline: Instant) -> bool {
        self.core.begin_shut_down(true);
        self.core.wait_drained(Some(deadline))
    }

    /// Whether either shutdown was called (client-go's `ShuttingDown`).
    pub fn is_shutting_down(&self) -> bool {
        self.core.state.lock().shutting_down
    }

    /// A snapshot of the queue's metrics.
    pub fn metrics(&self) -> QueueMetrics {
        let now = self.core.clock.now();
        let inner = self.core.state.lock();
        let (unfinished_work, longest_running_processor) = inner.starts.unfinished(now);
        QueueMetrics {
            name: self.core.name.clone(),
            depth: inner.queue.len() + inner.redo,
            processing: inner.processing,
            waiting: inner.waiting,
            adds: inner.stats.adds,
            queue_latency: inner.stats.queue_latency,
            work_duration: inner.stats.work_duration,
            unfinished_work,
            longest_running_processor,
            retries: inner.stats.retries,
        }
    }
}

impl<K: Item> Default for Queue<K> {
    fn default() -> Self {
        Queue::new()
    }
}

impl<K: Item> fmt::Debug for Queue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.core.state.lock();
        f.debug_struct("Queue")
            .field("name", &self.core.name)
            .field("len", &inner.queue.len())
            .field("processing", &inner.processing)
            .field("waiting", &inner.waiting)
            .field("shutting_down", &inner.shutting_down)
            .finish()
    }
}

/// A key handed to a worker by [`Queue::get`]: derefs to the key, and marks it [`done`](Queue::done) when dropped
/// (also when the worker panics, so a crashed worker never wedges its key or a drain).
///
/// ```
/// use kube_informer::workqueue::Queue;
///
/// let queue = Queue::new();
/// queue.add("default/web".to_string());
/// let key = queue.get().unwrap();
/// assert_eq!(*key, "default/web");
/// queue.add("default/web".to_string()); // re-added while processing: waits for `done`
/// assert_eq!(queue.len(), 0);
/// drop(key); // done: the key is queued again
/// assert_eq!(queue.len(), 1);
/// ```
pub struct Processing<'q, K: Item> {
    queue: &'q Queue<K>,
    /// `Some` until `into_key` or `done` consumes the guard.
    key: Option<K>,
}

impl<'q, K: Item> Processing<'q, K> {
    /// The key.
    pub fn key(&self) -> &K {
        self.key
            .as_ref()
            .expect("a Processing guard holds its key until consumed")
    }

    /// Marks the key done now (the same as dropping the guard).
    pub fn done(self) {}

    /// Takes the bare key without marking it done: the caller must call [`Queue::done`] with it later, or the key is
    /// never processed again and a drain never ends.
    pub fn into_key(mut self) -> K {
        self.key
            .take()
            .expect("a Processing guard holds its key until consumed")
    }

    /// The queue the key came from.
    pub fn queue(&self) -> &'q Queue<K> {
        self.queue
    }
}

impl<K: Item> Deref for Processing<'_, K> {
    type Target = K;

    fn deref(&self) -> &K {
        self.key()
    }
}

impl<K: Item> Drop for Processing<'_, K> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.queue.done(&key);
        }
    }
}

impl<K: Item + fmt::Debug> fmt::Debug for Processing<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => f.debug_tuple("Processing").field(key).finish(),
            None => f.write_str("Processing(<taken>)"),
        }
    }
}

/// Why [`Queue::try_get`] handed out nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryGetError {
    /// No key is queued right now.
    Empty,
    /// The queue is shutting down and empty: the worker should exit.
    ShutDown,
}

/// Why [`Queue::get_timeout`] / [`Queue::get_deadline`] handed out nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetTimeoutError {
    /// The deadline passed with no key queued.
    Timeout,
    /// The queue is shutting down and empty: the worker should exit.
    ShutDown,
}

impl fmt::Display for TryGetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryGetError::Empty => "work queue is empty",
            TryGetError::ShutDown => "work queue is shut down",
        })
    }
}

impl fmt::Display for GetTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GetTimeoutError::Timeout => "timed out waiting for a work queue key",
            GetTimeoutError::ShutDown => "work queue is shut down",
        })
    }
}

impl StdError for TryGetError {}

impl StdError for GetTimeoutError {}

#[cfg(test)]
#[path = "queue_tests.rs"]
pub(super) mod tests;
#[cfg(test)]
pub(crate) use tests::Rng;
