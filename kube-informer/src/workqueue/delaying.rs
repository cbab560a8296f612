//! The delaying queue: client-go's `DelayingInterface` — [`add_after`](DelayingQueue::add_after) over a min-heap of
//! deadlines, served by one named delay thread.
//!
//! The heap lives in the queue's one locked state ([`Inner`]), beside the keys it will add, so scheduling, firing
//! and the rate limiter's "is a retry already pending?" question are each one atomic step. client-go instead sends
//! every `AddAfter` through a channel to its waiting goroutine.

use std::cmp::{Ordering, Reverse};
use std::collections::binary_heap::PeekMut;
use std::collections::hash_map::Entry;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use log::{debug, warn};
use parking_lot::Mutex;

use super::queue::{Core, Inner, Item, KeyState, Queue, QueueConfig, Waiting, Work};
use crate::clock::deadline::FAR_FUTURE;

/// One entry of the delay heap, ordered by deadline then insertion.
pub(super) struct Delayed<K> {
    /// When the key is to be added.
    pub(super) ready_at: Instant,
    /// Insertion number: the entry is live iff the key's `KeyState::waiting` has this `seq`.
    pub(super) seq: u64,
    /// The key to add.
    pub(super) key: K,
}

impl<K> PartialEq for Delayed<K> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}

impl<K> Eq for Delayed<K> {}

impl<K> PartialOrd for Delayed<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Delayed<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.ready_at, self.seq).cmp(&(other.ready_at, other.seq))
    }
}

/// Who must be woken after a delayed add was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wake {
    /// Nobody.
    Nobody,
    /// A getter: the key was queued at once.
    Getter,
    /// The delay thread: the key is now the earliest deadline.
    Timer,
}

impl<K: Item> Inner<K> {
    /// Records "add `key` after `delay`" (client-go's `AddAfter` minus the shutdown check): a non-positive delay adds
    /// at once; otherwise the earliest deadline for a key wins. `rate_limited` marks the delay as a pending retry.
    pub(super) fn add_after(&mut self, key: K, delay: Duration, now: Instant, rate_limited: bool) -> Wake {
        self.stats.retries += 1;
        if delay.is_zero() {
            return if self.enqueue(key, now) {
                Wake::Getter
            } else {
                Wake::Nobody
            };
        }
        let Some(ready_at) = now.checked_add(delay).or_else(|| now.checked_add(FAR_FUTURE)) else {
            debug!("workqueue: delay {delay:?} is beyond the clock's range; the key is never added");
            self.remove_if_idle(&key);
            return Wake::Nobody;
        };
        let seq = self.next_seq;
        let waiting = Waiting {
            ready_at,
            seq,
            rate_limited,
        };
        let key = match self.items.entry(key) {
            Entry::Vacant(vacant) => {
                let key = vacant.key().clone();
                vacant.insert(KeyState {
                    work: Work::Idle,
                    waiting: Some(waiting),
                    limiting: false,
                });
                self.waiting += 1;
                key
            }
            Entry::Occupied(mut occupied) => {
                let item = occupied.get_mut();
                match &mut item.waiting {
                    Some(pending) if pending.ready_at <= ready_at => {
                        // A deadline as early or earlier is already pending: it stands.
                        pending.rate_limited |= rate_limited;
                        return Wake::Nobody;
                    }
                    Some(pending) => {
                        // Earlier: move the key up. The old heap entry goes stale.
                        *pending = Waiting {
                            rate_limited: rate_limited || pending.rate_limited,
                            ..waiting
                        };
                    }
                    None => {
                        item.waiting = Some(waiting);
                        self.waiting += 1;
                    }
                }
                occupied.key().clone()
            }
        };
        self.next_seq += 1;
        self.heap.push(Reverse(Delayed { ready_at, seq, key }));
        let earliest = self.heap.peek().is_some_and(|top| top.0.seq == seq);
        if self.heap.len() > 2 * self.waiting + 64 {
            self.compact_heap();
        }
        if earliest { Wake::Timer } else { Wake::Nobody }
    }

    /// Queues every key whose deadline has passed. Returns how many went onto the queue.
    pub(super) fn pump(&mut self, now: Instant) -> usize {
        let mut queued = 0;
        loop {
            let entry = match self.heap.peek_mut() {
                Some(top) if top.0.ready_at <= now => PeekMut::pop(top).0,
                _ => break,
            };
            let Some(item) = self.items.get_mut(&entry.key) else {
                continue;
            };
            if item.waiting.is_none_or(|w| w.seq != entry.seq) {
                continue; // stale
            }
            item.waiting = None;
            self.waiting -= 1;
            if self.enqueue(entry.key, now) {
                queued += 1;
            }
        }
        if queued > 0 {
            self.shrink_after_burst();
        }
        queued
    }

    /// The earliest pending deadline (stale entries on top are discarded on the way).
    pub(super) fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(top) = self.heap.peek_mut() {
            let live = self
                .items
                .get(&top.0.key)
                .and_then(|item| item.waiting)
                .is_some_and(|w| w.seq == top.0.seq);
            if live {
                return Some(top.0.ready_at);
            }
            PeekMut::pop(top);
        }
        None
    }

    /// Drops every pending delayed add (at shutdown).
    pub(super) fn drop_waiting(&mut self) {
        if self.waiting == 0 && self.heap.is_empty() {
            return;
        }
        self.heap.clear();
        self.waiting = 0;
        self.items.retain(|_, item| {
            item.waiting = None;
            !item.is_idle()
        });
    }

    /// Removes stale heap entries, so the heap stays within twice the number of pending keys (plus a little).
    fn compact_heap(&mut self) {
        let items = &self.items;
        self.heap.retain(|entry| {
            items
                .get(&entry.0.key)
                .and_then(|item| item.waiting)
                .is_some_and(|w| w.seq == entry.0.seq)
        });
    }
}

/// A work queue that can also add a key after a delay (client-go's `DelayingInterface`). Derefs to [`Queue`] for
/// everything else.
///
/// Delayed keys wait in a min-heap served by one thread, `delay:<name>` (shortened to the 15 bytes the OS keeps),
/// started here and joined by [`shut_down`](DelayingQueue::shut_down) /
/// [`shut_down_with_drain`](DelayingQueue::shut_down_with_drain) or on drop. For each key the **earliest** deadline
/// wins: adding a later deadline for a key already waiting does nothing, an earlier one moves it up. A key may be
/// waiting in the heap and queued or processing at the same time, as in client-go: when its time comes it is added
/// like any other add (deduplicated if still queued, re-queued after `done` if processing). Delayed adds still
/// pending at shutdown are dropped.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::clock::FakeClock;
/// use kube_informer::workqueue::{DelayingQueue, QueueConfig};
///
/// let clock = FakeClock::new();
/// let queue = DelayingQueue::with_config(QueueConfig::default().name("demo").clock(clock.clone()));
/// queue.add_after("later", Duration::from_secs(2));
/// queue.add_after("sooner", Duration::from_secs(1));
/// clock.step(Duration::from_secs(2));
/// assert_eq!(*queue.get().unwrap(), "sooner");
/// assert_eq!(*queue.get().unwrap(), "later");
/// queue.shut_down(); // joins the delay thread
/// ```
pub struct DelayingQueue<K: Item> {
    queue: Queue<K>,
    /// The delay thread; `None` once joined.
    timer: Mutex<Option<JoinHandle<()>>>,
}

impl<K: Item> DelayingQueue<K> {
    /// An unnamed delaying queue on the real clock (client-go's `NewTypedDelayingQueue`).
    ///
    /// # Panics
    ///
    /// If the delay thread cannot be spawned, as [`std::thread::spawn`].
    pub fn new() -> DelayingQueue<K> {
        DelayingQueue::with_config(QueueConfig::default())
    }

    /// A delaying queue with a name and clock (client-go's `NewTypedDelayingQueueWithConfig`). `config.rate_limiter`
    /// is not used.
    ///
    /// # Panics
    ///
    /// If the delay thread cannot be spawned, as [`std::thread::spawn`].
    pub fn with_config(config: QueueConfig<K>) -> DelayingQueue<K> {
        let queue = Queue::with_config(config);
        let core = Arc::clone(queue.core());
        let subject = if core.name.is_empty() { "workqueue" } else { &core.name };
        let name = crate::thread_name::os_thread_name("delay", subject);
        let timer = thread::Builder::new()
            .name(name)
            .spawn(move || run_delay_thread(&core))
            .expect("failed to spawn the workqueue delay thread");
        DelayingQueue {
            queue,
            timer: Mutex::new(Some(timer)),
        }
    }

    /// Adds `key` once `delay` has passed on the queue's clock (client-go's `AddAfter`); a zero delay adds at once.
    /// If the key is already waiting, the earlier deadline wins. Returns `false` if the queue is shutting down and
    /// refused the key.
    pub fn add_after(&self, key: K, delay: Duration) -> bool {
        let core = self.queue.core();
        let now = core.clock.now();
        let mut inner = core.state.lock();
        if inner.shutting_down {
            return false;
        }
        let wake = inner.add_after(key, delay, now, false);
        drop(inner);
        core.wake(wake);
        true
    }

    /// [`Queue::shut_down`], then joins the delay thread. Returns within a few milliseconds from any state.
    pub fn shut_down(&self) {
        self.queue.shut_down();
        self.join_delay_thread();
    }

    /// [`Queue::shut_down_with_drain`], joining the delay thread before waiting for the workers.
    pub fn shut_down_with_drain(&self) -> bool {
        self.drain(None)
    }

    /// [`Queue::shut_down_with_drain_timeout`], joining the delay thread before waiting for the workers.
    pub fn shut_down_with_drain_timeout(&self, timeout: Duration) -> bool {
        let deadline = self.queue.clock().now().checked_add(timeout);
        self.drain(deadline)
    }

    /// [`Queue::shut_down_with_drain_deadline`], joining the delay thread before waiting for the workers.
    pub fn shut_down_with_drain_deadline(&self, deadline: Instant) -> bool {
        self.drain(Some(deadline))
    }

    fn drain(&self, deadline: Option<Instant>) -> bool {
        let core = self.queue.core();
        core.begin_shut_down(true);
        self.join_delay_thread();
        core.wait_drained(deadline)
    }

    fn join_delay_thread(&self) {
        let handle = self.timer.lock().take();
        if let Some(handle) = handle
            && handle.thread().id() != thread::current().id()
            && handle.join().is_err()
        {
            warn!("workqueue {:?}: the delay thread panicked", self.queue.name());
        }
    }

    #[cfg(test)]
    pub(super) fn delay_thread_joined(&self) -> bool {
        self.timer.lock().is_none()
    }
}

impl<K: Item> Core<K> {
    /// Wakes whoever a delayed add concerns.
    pub(super) fn wake(&self, wake: Wake) {
        match wake {
            Wake::Nobody => {}
            Wake::Getter => {
                self.key_ready.notify_one();
            }
            Wake::Timer => {
                self.timer.notify_one();
            }
        }
    }
}

/// The delay thread: queues keys as their deadlines pass, sleeping until the earliest one (or until woken by an
/// earlier add, a clock jump or shutdown). Exits at shutdown.
fn run_delay_thread<K: Item>(core: &Core<K>) {
    let mut inner = core.state.lock();
    while !inner.shutting_down {
        if inner.waiting > 0 {
            let now = core.clock.now();
            match inner.pump(now) {
                0 => {}
                1 => {
                    core.key_ready.notify_one();
                }
                _ => {
                    core.key_ready.notify_all();
                }
            }
        }
        let deadline = inner.next_deadline();
        core.wait(&core.timer, &mut inner, deadline);
    }
}

impl<K: Item> Deref for DelayingQueue<K> {
    type Target = Queue<K>;

    fn deref(&self) -> &Queue<K> {
        &self.queue
    }
}

impl<K: Item> Default for DelayingQueue<K> {
    fn default() -> Self {
        DelayingQueue::new()
    }
}

impl<K: Item> Drop for DelayingQueue<K> {
    fn drop(&mut self) {
        self.shut_down();
    }
}

impl<K: Item> fmt::Debug for DelayingQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DelayingQueue").field(&self.queue).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::workqueue::queue::tests::{Rng, check_invariants};
    use std::collections::{HashMap, HashSet, VecDeque};

    #[test]
    fn the_delay_thread_is_named_and_joined_at_shutdown() {
        let queue: DelayingQueue<u32> = DelayingQueue::with_config(QueueConfig::default().name("pods"));
        let name = queue
            .timer
            .lock()
            .as_ref()
            .and_then(|h| h.thread().name().map(str::to_owned));
        assert_eq!(name.as_deref(), Some("delay:pods"));
        let unnamed: DelayingQueue<u32> = DelayingQueue::new();
        let name = unnamed
            .timer
            .lock()
            .as_ref()
            .and_then(|h| h.thread().name().map(str::to_owned));
        assert_eq!(name.as_deref(), Some("delay:workqueue"));

        queue.add_after(1, Duration::from_secs(3600));
        queue.shut_down();
        assert!(queue.delay_thread_joined());
        assert_eq!(
            Arc::strong_count(queue.core()),
            1,
            "the delay thread let go of the queue"
        );
        assert_eq!(
            queue.metrics().waiting,
            0,
            "pending delayed adds are dropped at shutdown"
        );
        queue.shut_down(); // again: a no-op

        let drained: DelayingQueue<u32> = DelayingQueue::new();
        assert!(drained.shut_down_with_drain());
        assert!(drained.delay_thread_joined());
        assert_eq!(Arc::strong_count(drained.core()), 1);
    }

    #[test]
    fn the_delay_thread_fires_on_the_real_clock() {
        let queue: DelayingQueue<u32> = DelayingQueue::new();
        queue.add_after(7, Duration::from_millis(2));
        // `get` blocks until the delay thread queues the key.
        assert_eq!(queue.get().map(|k| *k), Some(7));
    }

    #[test]
    fn moving_a_key_earlier_again_and_again_keeps_the_heap_small() {
        let clock = FakeClock::new();
        let queue: DelayingQueue<u32> = DelayingQueue::with_config(QueueConfig::default().clock(clock.clone()));
        for i in 0..10_000u64 {
            queue.add_after(1, Duration::from_secs(100_000 - i));
            queue.add_after(2, Duration::from_secs(200_000));
            let inner = queue.core().state.lock();
            assert!(
                inner.heap.len() <= 2 * inner.waiting + 65,
                "heap grew to {}",
                inner.heap.len()
            );
            check_invariants(&inner);
        }
        clock.step(Duration::from_secs(90_001));
        assert_eq!(queue.len(), 1);
    }

    /// The delay semantics, literally: per key the earliest deadline; due keys are added in (deadline, order of
    /// scheduling) order.
    #[derive(Default)]
    struct Model {
        queue: VecDeque<u8>,
        dirty: HashSet<u8>,
        processing: HashSet<u8>,
        waiting: HashMap<u8, (Duration, u64)>,
        seq: u64,
    }

    impl Model {
        fn add(&mut self, key: u8) {
            if !self.dirty.insert(key) || self.processing.contains(&key) {
                return;
            }
            self.queue.push_back(key);
        }

        fn add_after(&mut self, key: u8, at: Duration) {
            match self.waiting.get(&key) {
                Some((pending, _)) if *pending <= at => {}
                _ => {
                    self.waiting.insert(key, (at, self.seq));
                    self.seq += 1;
                }
            }
        }

        fn fire(&mut self, now: Duration) {
            let mut due: Vec<_> = self
                .waiting
                .iter()
                .filter(|(_, (at, _))| *at <= now)
                .map(|(k, v)| (*v, *k))
                .collect();
            due.sort();
            for (_, key) in due {
                self.waiting.remove(&key);
                self.add(key);
            }
        }
    }

    #[test]
    fn random_delayed_operations_match_the_model() {
        for seed in 0..20 {
            let mut rng = Rng(seed);
            let clock = FakeClock::new();
            let start = clock.now();
            let queue: DelayingQueue<u8> = DelayingQueue::with_config(QueueConfig::default().clock(clock.clone()));
            let mut model = Model::default();
            let mut held = Vec::new();
            for _ in 0..2000 {
                let now = clock.now() - start;
                match rng.below(5) {
                    0 => {
                        let key = rng.below(16) as u8;
                        queue.add(key);
                        model.add(key);
                    }
                    1 => {
                        let key = rng.below(16) as u8;
                        let delay = Duration::from_millis(rng.below(50));
                        queue.add_after(key, delay);
                        if delay.is_zero() {
                            model.add(key);
                        } else {
                            model.add_after(key, now + delay);
                        }
                    }
                    2 => {
                        let step = Duration::from_millis(rng.below(20));
                        clock.step(step);
                        model.fire(now + step);
                    }
                    3 => {
                        let got = queue.try_get().ok().map(|g| g.into_key());
                        let expected = model.queue.pop_front();
                        if let Some(key) = expected {
                            model.dirty.remove(&key);
                            model.processing.insert(key);
                        }
                        assert_eq!(got, expected, "seed {seed}");
                        held.extend(got);
                    }
                    _ if !held.is_empty() => {
                        let key = held.swap_remove(rng.below(held.len() as u64) as usize);
                        queue.done(&key);
                        model.processing.remove(&key);
                        if model.dirty.contains(&key) {
                            model.queue.push_back(key);
                        }
                    }
                    _ => {}
                }
                assert_eq!(queue.len(), model.queue.len(), "seed {seed}");
                let inner = queue.core().state.lock();
                assert_eq!(inner.waiting, model.waiting.len(), "seed {seed}");
                check_invariants(&inner);
            }
        }
    }
}
