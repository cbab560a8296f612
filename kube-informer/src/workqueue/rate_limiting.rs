//! The rate-limiting queue: client-go's `TypedRateLimitingInterface` — retries paced by a [`RateLimiter`].

use std::fmt;
use std::ops::Deref;

use super::delaying::DelayingQueue;
use super::queue::{Core, Item, KeyState, QueueConfig, Work};
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter_with_clock};

/// A delaying queue whose retries are paced by a [`RateLimiter`] (client-go's `TypedRateLimitingInterface`). Derefs
/// to [`DelayingQueue`] (and on to [`Queue`](super::Queue)) for everything else.
///
/// The usual worker: on failure [`add_rate_limited`](Self::add_rate_limited) (retry after the limiter's delay), on
/// success [`forget`](Self::forget) (reset the key's backoff); either way the key is done when its guard drops.
///
/// ## One change from client-go: a retry already pending does not inflate the backoff
///
/// client-go's `AddRateLimited` always asks the limiter — which counts a failure and lengthens the key's next
/// backoff — even when the key already has a retry scheduled, or is already queued, so that the call changes nothing
/// else (a known complaint: handlers that re-enqueue a failing key from several places double its backoff each time).
/// Here **the failure count only advances when a retry is actually scheduled**: `add_rate_limited` returns without
/// asking the limiter when the key
///
/// * is already waiting to be processed (queued, or re-added while being processed) — that processing is the
///   retry;
/// * already has a rate-limited retry waiting in the delay heap (a plain [`add_after`](DelayingQueue::add_after)
///   pending does not count: the limiter is asked, and the earlier deadline wins);
/// * is having its delay computed by another thread's `add_rate_limited` right now;
/// * or the queue is shutting down.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::clock::FakeClock;
/// use kube_informer::workqueue::{ItemExponentialFailureRateLimiter, QueueConfig, RateLimitingQueue};
///
/// let clock = FakeClock::new();
/// let queue = RateLimitingQueue::with_config(
///     QueueConfig::default()
///         .clock(clock.clone())
///         .rate_limiter(ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1000))),
/// );
/// queue.add("web");
/// let key = queue.get().unwrap();
/// // The reconcile failed: retry in 5 ms. Asking again while that retry is pending changes nothing.
/// queue.add_rate_limited(*key);
/// queue.add_rate_limited(*key);
/// assert_eq!(queue.num_requeues(&key), 1);
/// drop(key);
/// clock.step(Duration::from_millis(5));
/// let key = queue.get().unwrap();
/// queue.forget(&key); // succeeded: back to a 5 ms backoff next time
/// ```
pub struct RateLimitingQueue<K: Item> {
    queue: DelayingQueue<K>,
    limiter: Box<dyn RateLimiter<K>>,
}

/// Clears a key's `limiting` mark if `RateLimiter::when` panics.
struct LimitingMark<'a, K: Item> {
    core: &'a Core<K>,
    key: &'a K,
}

impl<K: Item> Drop for LimitingMark<'_, K> {
    fn drop(&mut self) {
        let mut inner = self.core.state.lock();
        if let Some(item) = inner.items.get_mut(self.key) {
            item.limiting = false;
        }
        inner.remove_if_idle(self.key);
    }
}

impl<K: Item> RateLimitingQueue<K> {
    /// An unnamed queue on the real clock with [`default_controller_rate_limiter`](super::default_controller_rate_limiter)
    /// (client-go's `NewTypedRateLimitingQueue(DefaultTypedControllerRateLimiter())`).
    ///
    /// # Panics
    ///
    /// If the delay thread cannot be spawned, as [`std::thread::spawn`].
    pub fn new() -> RateLimitingQueue<K> {
        RateLimitingQueue::with_config(QueueConfig::default())
    }

    /// An unnamed queue on the real clock with `limiter`.
    ///
    /// # Panics
    ///
    /// If the delay thread cannot be spawned, as [`std::thread::spawn`].
    pub fn with_rate_limiter(limiter: impl RateLimiter<K> + 'static) -> RateLimitingQueue<K> {
        RateLimitingQueue::with_config(QueueConfig::default().rate_limiter(limiter))
    }

    /// A queue with a name, clock and rate limiter (client-go's `NewTypedRateLimitingQueueWithConfig`); without a
    /// limiter, [`default_controller_rate_limiter`](super::default_controller_rate_limiter) on the config's clock.
    ///
    /// # Panics
    ///
    /// If the delay thread cannot be spawned, as [`std::thread::spawn`].
    pub fn with_config(mut config: QueueConfig<K>) -> RateLimitingQueue<K> {
        let limiter = config
            .rate_limiter
            .take()
            .unwrap_or_else(|| Box::new(default_controller_rate_limiter_with_clock(config.clock.clone())));
        RateLimitingQueue {
            queue: DelayingQueue::with_config(config),
            limiter,
        }
    }

    /// Adds `key` after the delay the rate limiter gives it (client-go's `AddRateLimited`) — unless a retry is
    /// already pending, in which case nothing changes and the limiter is not asked (see the type's docs). Returns
    /// `false` if the queue is shutting down and refused the key.
    pub fn add_rate_limited(&self, key: K) -> bool {
        let core = self.queue.core();
        {
            let mut inner = core.state.lock();
            if inner.shutting_down {
                return false;
            }
            match inner.items.get_mut(&key) {
                Some(item) if item.is_dirty() || item.limiting || item.waiting.is_some_and(|w| w.rate_limited) => {
                    return true;
                }
                Some(item) => item.limiting = true,
                None => {
                    let mut item = KeyState::new(Work::Idle);
                    item.limiting = true;
                    inner.items.insert(key.clone(), item);
                }
            }
        }
        // The limiter is user code: never called under the queue's lock. The mark keeps concurrent calls for the
        // key out meanwhile, and is cleared even if `when` panics.
        let mark = LimitingMark { core, key: &key };
        let delay = self.limiter.when(&key);
        std::mem::forget(mark);

        let now = core.clock.now();
        let mut inner = core.state.lock();
        if let Some(item) = inner.items.get_mut(&key) {
            item.limiting = false;
        }
        if inner.shutting_down {
            inner.remove_if_idle(&key);
            return false;
        }
        let wake = inner.add_after(key, delay, now, true);
        drop(inner);
        core.wake(wake);
        true
    }

    /// The key is finished with — it succeeded, or was given up on: its rate limiter history is cleared (client-go's
    /// `Forget`). The key must still be `done`.
    pub fn forget(&self, key: &K) {
        self.limiter.forget(key);
    }

    /// How many retries the rate limiter counted for `key` since it was last forgotten (client-go's `NumRequeues`).
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.limiter.num_requeues(key)
    }

    /// The queue's rate limiter.
    pub fn rate_limiter(&self) -> &dyn RateLimiter<K> {
        &*self.limiter
    }

    /// Test hook: the key's pending delayed add, as (deadline, scheduled by the rate limiter).
    #[cfg(test)]
    fn pending_deadline(&self, key: &K) -> Option<(std::time::Instant, bool)> {
        let inner = self.queue.core().state.lock();
        inner
            .items
            .get(key)
            .and_then(|i| i.waiting)
            .map(|w| (w.ready_at, w.rate_limited))
    }
}

impl<K: Item> Deref for RateLimitingQueue<K> {
    type Target = DelayingQueue<K>;

    fn deref(&self) -> &DelayingQueue<K> {
        &self.queue
    }
}

impl<K: Item> Default for RateLimitingQueue<K> {
    fn default() -> Self {
        RateLimitingQueue::new()
    }
}

impl<K: Item> fmt::Debug for RateLimitingQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RateLimitingQueue").field(&*self.queue).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::workqueue::ItemExponentialFailureRateLimiter;
    use crate::workqueue::queue::tests::check_invariants;
    use std::time::Duration;

    const MS: Duration = Duration::from_millis(1);

    fn queue(clock: &FakeClock) -> RateLimitingQueue<&'static str> {
        RateLimitingQueue::with_config(QueueConfig::default().clock(clock.clone()).rate_limiter(
            ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000)),
        ))
    }

    #[test]
    fn a_plain_add_after_pending_does_not_block_a_rate_limited_retry() {
        let clock = FakeClock::new();
        let t0 = clock.now();
        let q = queue(&clock);
        q.add_after("a", Duration::from_secs(3600));
        assert_eq!(q.pending_deadline(&"a"), Some((t0 + Duration::from_secs(3600), false)));
        q.add_rate_limited("a");
        assert_eq!(q.num_requeues(&"a"), 1);
        assert_eq!(
            q.pending_deadline(&"a"),
            Some((t0 + 5 * MS, true)),
            "the earlier retry wins"
        );
        q.add_rate_limited("a");
        assert_eq!(q.num_requeues(&"a"), 1, "a retry is pending");
        check_invariants(&q.core().state.lock());
    }

    #[test]
    fn an_earlier_plain_add_after_keeps_its_deadline_but_counts_as_a_pending_retry() {
        let clock = FakeClock::new();
        let t0 = clock.now();
        let q = queue(&clock);
        q.add_after("a", MS);
        q.add_rate_limited("a");
        assert_eq!(q.num_requeues(&"a"), 1);
        assert_eq!(q.pending_deadline(&"a"), Some((t0 + MS, true)));
        q.add_rate_limited("a");
        assert_eq!(q.num_requeues(&"a"), 1);
        clock.step(MS);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pending_deadline(&"a"), None);
        check_invariants(&q.core().state.lock());
    }

    #[test]
    fn a_panicking_limiter_does_not_wedge_the_key() {
        struct PanicsOnce(std::sync::atomic::AtomicBool);
        impl RateLimiter<&'static str> for PanicsOnce {
            fn when(&self, _key: &&'static str) -> Duration {
                if !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    panic!("limiter bug");
                }
                MS
            }
            fn forget(&self, _key: &&'static str) {}
            fn num_requeues(&self, _key: &&'static str) -> u32 {
                0
            }
        }
        let clock = FakeClock::new();
        let q = RateLimitingQueue::with_config(
            QueueConfig::default()
                .clock(clock.clone())
                .rate_limiter(PanicsOnce(Default::default())),
        );
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.add_rate_limited("a")));
        assert!(panicked.is_err());
        assert!(q.core().state.lock().items.is_empty(), "the limiting mark was cleared");
        assert!(q.add_rate_limited("a"));
        clock.step(MS);
        assert_eq!(q.get().map(|k| *k), Some("a"));
    }
}
