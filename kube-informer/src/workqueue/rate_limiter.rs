//! Rate limiters: how long a failing key waits before its next retry (client-go's `default_rate_limiters.go`).
//!
//! The [`RateLimiter`] trait can be implemented by users; the client-go limiters are here with client-go's
//! defaults: per-item exponential backoff, fast-then-slow, a token bucket shared by all keys, the max of several,
//! and a cap. [`default_controller_rate_limiter`] combines them as client-go's `DefaultTypedControllerRateLimiter`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::queue::Item;
use crate::clock::{Clock, RealClock};

/// Decides how long a key waits before it is retried (client-go's `TypedRateLimiter`).
///
/// [`RateLimitingQueue::add_rate_limited`](super::RateLimitingQueue::add_rate_limited) calls [`when`](Self::when)
/// once per retry it schedules — so a limiter may count failures there — and never while holding the queue's lock.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::workqueue::RateLimiter;
///
/// /// Always waits one second, remembers nothing.
/// struct OneSecond;
///
/// impl<K> RateLimiter<K> for OneSecond {
///     fn when(&self, _key: &K) -> Duration { Duration::from_secs(1) }
///     fn forget(&self, _key: &K) {}
///     fn num_requeues(&self, _key: &K) -> u32 { 0 }
/// }
/// ```
pub trait RateLimiter<K>: Send + Sync {
    /// How long `key` should wait before its next retry. Called once per scheduled retry.
    fn when(&self, key: &K) -> Duration;
    /// The key is finished with (it succeeded, or was given up on): stop tracking it.
    fn forget(&self, key: &K);
    /// How many retries the key has had since it was last forgotten.
    fn num_requeues(&self, key: &K) -> u32;
}

impl<K, R: RateLimiter<K> + ?Sized> RateLimiter<K> for Box<R> {
    fn when(&self, key: &K) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &K) {
        (**self).forget(key)
    }
    fn num_requeues(&self, key: &K) -> u32 {
        (**self).num_requeues(key)
    }
}

/// A shared limiter: one token bucket can pace several queues.
impl<K, R: RateLimiter<K> + ?Sized> RateLimiter<K> for Arc<R> {
    fn when(&self, key: &K) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &K) {
        (**self).forget(key)
    }
    fn num_requeues(&self, key: &K) -> u32 {
        (**self).num_requeues(key)
    }
}

/// client-go's default controller rate limiter (`DefaultTypedControllerRateLimiter`): the max of a per-item
/// exponential backoff of 5 ms · 2ⁿ capped at 1000 s, and a token bucket of 10 qps with a burst of 100 shared by
/// all keys, on the real clock.
pub fn default_controller_rate_limiter<K: Item>() -> MaxOfRateLimiter<K> {
    default_controller_rate_limiter_with_clock(Arc::new(RealClock))
}

/// [`default_controller_rate_limiter`] with its token bucket reading `clock`.
pub fn default_controller_rate_limiter_with_clock<K: Item>(clock: Arc<dyn Clock>) -> MaxOfRateLimiter<K> {
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::with_clock(10.0, 100, clock)),
    ])
}

/// Per-key exponential backoff: `base_delay · 2ⁿ` for a key's n-th failure since it was forgotten, capped at
/// `max_delay` (client-go's `ItemExponentialFailureRateLimiter`; the controller default is 5 ms and 1000 s,
/// client-go's `DefaultItemBasedRateLimiter` 1 ms and 1000 s). Never overflows, however many failures.
pub struct ItemExponentialFailureRateLimiter<K> {
    /// Failures per key since its last `forget`; keys with none are absent.
    failures: Mutex<HashMap<K, u32>>,
    base_delay: Duration,
    max_delay: Duration,
}

impl<K: Item> ItemExponentialFailureRateLimiter<K> {
    /// A limiter waiting `base_delay · 2ⁿ`, at most `max_delay`.
    pub fn new(base_delay: Duration, max_delay: Duration) -> Self {
        ItemExponentialFailureRateLimiter {
            failures: Mutex::new(HashMap::new()),
            base_delay,
            max_delay,
        }
    }
}

/// `base · 2^exp`, or `max` if that is larger (or does not fit).
fn exponential(base: Duration, max: Duration, exp: u32) -> Duration {
    if base.is_zero() {
        return base.min(max);
    }
    let nanos = 1u128
        .checked_shl(exp)
        .and_then(|factor| base.as_nanos().checked_mul(factor));
    match nanos {
        Some(nanos) if nanos <= max.as_nanos() => {
            // nanos <= max, so the seconds fit in a u64.
            Duration::new((nanos / 1_000_000_000) as u64, (nanos % 1_000_000_000) as u32)
        }
        _ => max,
    }
}

/// Adds one failure for `key`, returning the count before it.
fn count_failure<K: Item>(failures: &Mutex<HashMap<K, u32>>, key: &K) -> u32 {
    let mut failures = failures.lock();
    match failures.get_mut(key) {
        Some(count) => {
            let before = *count;
            *count = count.saturating_add(1);
            before
        }
        None => {
            failures.insert(key.clone(), 1);
            0
        }
    }
}

impl<K: Item> RateLimiter<K> for ItemExponentialFailureRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let exp = count_failure(&self.failures, key);
        exponential(self.base_delay, self.max_delay, exp)
    }

    fn forget(&self, key: &K) {
        self.failures.lock().remove(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.failures.lock().get(key).copied().unwrap_or(0)
    }
}

impl<K> fmt::Debug for ItemExponentialFailureRateLimiter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base_delay", &self.base_delay)
            .field("max_delay", &self.max_delay)
            .field("tracked_keys", &self.failures.lock().len())
            .finish()
    }
}

/// Per-key fast-then-slow: the first `max_fast_attempts` failures of a key wait `fast_delay`, later ones
/// `slow_delay` (client-go's `ItemFastSlowRateLimiter`).
pub struct ItemFastSlowRateLimiter<K> {
    /// Failures per key since its last `forget`; keys with none are absent.
    failures: Mutex<HashMap<K, u32>>,
    fast_delay: Duration,
    slow_delay: Duration,
    max_fast_attempts: u32,
}

impl<K: Item> ItemFastSlowRateLimiter<K> {
    /// A limiter waiting `fast_delay` for the first `max_fast_attempts` failures, then `slow_delay`.
    pub fn new(fast_delay: Duration, slow_delay: Duration, max_fast_attempts: u32) -> Self {
        ItemFastSlowRateLimiter {
            failures: Mutex::new(HashMap::new()),
            fast_delay,
            slow_delay,
            max_fast_attempts,
        }
    }
}

impl<K: Item> RateLimiter<K> for ItemFastSlowRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let attempt = count_failure(&self.failures, key).saturating_add(1);
        if attempt <= self.max_fast_attempts {
            self.fast_delay
        } else {
            self.slow_delay
        }
    }

    fn forget(&self, key: &K) {
        self.failures.lock().remove(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.failures.lock().get(key).copied().unwrap_or(0)
    }
}

impl<K> fmt::Debug for ItemFastSlowRateLimiter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast_delay", &self.fast_delay)
            .field("slow_delay", &self.slow_delay)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish_non_exhaustive()
    }
}

/// A token bucket shared by all keys (client-go's `BucketRateLimiter` over `golang.org/x/time/rate`): it refills at
/// `qps` tokens per second up to `burst`, starts full, and every [`when`](RateLimiter::when) takes a token — in
/// advance if the bucket is empty, returning how long until that token exists (`rate.Limiter.Reserve().Delay()`).
/// client-go's default is 10 qps with a burst of 100 ([`Default`]).
///
/// ```
/// use std::time::Duration;
/// use kube_informer::clock::FakeClock;
/// use kube_informer::workqueue::BucketRateLimiter;
///
/// let clock = FakeClock::new();
/// let bucket = BucketRateLimiter::with_clock(10.0, 2, std::sync::Arc::new(clock.clone()));
/// assert_eq!(bucket.reserve(), Duration::ZERO);
/// assert_eq!(bucket.reserve(), Duration::ZERO);
/// assert_eq!(bucket.reserve(), Duration::from_millis(100)); // taken in advance
/// assert_eq!(bucket.reserve(), Duration::from_millis(200));
/// clock.step(Duration::from_secs(1)); // refilled (to `burst` at most)
/// assert_eq!(bucket.reserve(), Duration::ZERO);
/// ```
pub struct BucketRateLimiter {
    rate: Rate,
    burst: u32,
    clock: Arc<dyn Clock>,
    /// The bucket's level, as the instant it will be (or was) full again.
    state: Mutex<BucketState>,
}

/// How fast the bucket refills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rate {
    /// Unlimited: never wait.
    Infinite,
    /// One token per this interval.
    Every(Duration),
    /// Never refills (qps ≤ 0, or too small to represent).
    Never,
}

#[derive(Debug)]
struct BucketState {
    /// With `Rate::Every(t)`: the instant the bucket will be full again. At `now` it holds
    /// `burst - (full_at - now) / t` tokens (negative: tokens reserved in advance), `burst` if `full_at <= now`.
    full_at: Instant,
    /// With `Rate::Never`: tokens left.
    left: u32,
}

impl BucketRateLimiter {
    /// A bucket refilling at `qps` tokens per second up to `burst`, on the real clock. `qps` infinite: never waits;
    /// `qps ≤ 0` (or NaN): only the initial `burst` tokens, then a wait of [`Duration::MAX`] ("never"), as
    /// `rate.Limiter` does.
    pub fn new(qps: f64, burst: u32) -> Self {
        BucketRateLimiter::with_clock(qps, burst, Arc::new(RealClock))
    }

    /// [`new`](BucketRateLimiter::new) reading `clock`.
    pub fn with_clock(qps: f64, burst: u32, clock: Arc<dyn Clock>) -> Self {
        let rate = if qps == f64::INFINITY {
            Rate::Infinite
        } else if qps > 0.0 {
            Duration::try_from_secs_f64(1.0 / qps).map_or(Rate::Never, Rate::Every)
        } else {
            Rate::Never
        };
        let now = clock.now();
        BucketRateLimiter {
            rate,
            burst,
            clock,
            state: Mutex::new(BucketState {
                full_at: now,
                left: burst,
            }),
        }
    }

    /// Takes one token — in advance if none is left — and returns how long until it is available.
    pub fn reserve(&self) -> Duration {
        self.take_at(self.clock.now(), Duration::MAX)
            .map_or(Duration::MAX, |(wait, _)| wait)
    }

    /// Takes one token if it exists within `max_wait` (`rate.Limiter.ReserveN` with a maximum future reservation,
    /// what `rate.Limiter.Wait` does against a context's deadline): `None` takes nothing when it would come later.
    pub(crate) fn reserve_within(&self, max_wait: Duration) -> Option<Reservation> {
        let now = self.clock.now();
        let (wait, undo) = self.take_at(now, max_wait).ok()?;
        Some(Reservation {
            ready_at: now.checked_add(wait)?,
            undo,
        })
    }

    /// Gives back the token of a reservation that will not be used (`rate.Limiter`'s `Reservation.Cancel`), unless
    /// a later reservation was made on top of it: that one was scheduled after this token, and giving this one back
    /// then would hand out more tokens than the rate allows.
    pub(crate) fn cancel(&self, reservation: &Reservation) {
        let mut state = self.state.lock();
        match reservation.undo {
            Undo::Nothing => {}
            Undo::Left => state.left = state.left.saturating_add(1),
            Undo::FullAt { after, interval } => {
                if state.full_at == after {
                    state.full_at = after.checked_sub(interval).unwrap_or(after);
                }
            }
        }
    }

    /// The clock the bucket reads.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Takes one token at `now` if it exists within `max_wait`: the wait for it, and how to give it back.
    fn take_at(&self, now: Instant, max_wait: Duration) -> Result<(Duration, Undo), ()> {
        let interval = match self.rate {
            Rate::Infinite => return Ok((Duration::ZERO, Undo::Nothing)),
            Rate::Never => {
                let mut state = self.state.lock();
                if state.left == 0 {
                    return Err(());
                }
                state.left -= 1;
                return Ok((Duration::ZERO, Undo::Left));
            }
            Rate::Every(interval) => interval,
        };
        if self.burst == 0 {
            return Err(()); // rate.Limiter refuses a reservation larger than the burst
        }
        let mut state = self.state.lock();
        let from = state.full_at.max(now);
        let full_at = from.checked_add(interval).unwrap_or(from);
        let debt = full_at.saturating_duration_since(now);
        let capacity = interval.checked_mul(self.burst).unwrap_or(Duration::MAX);
        let wait = debt.saturating_sub(capacity);
        if wait > max_wait {
            return Err(());
        }
        state.full_at = full_at;
        Ok((
            wait,
            Undo::FullAt {
                after: full_at,
                interval,
            },
        ))
    }
}

/// A token taken from a [`BucketRateLimiter`] by `reserve_within`: when it exists, and how to give it back.
#[derive(Debug)]
pub(crate) struct Reservation {
    /// When the token exists, on the bucket's clock.
    pub(crate) ready_at: Instant,
    undo: Undo,
}

/// What giving a token back undoes.
#[derive(Debug, Clone, Copy)]
enum Undo {
    /// Nothing (an unlimited bucket).
    Nothing,
    /// One more token left (a bucket that never refills).
    Left,
    /// `full_at` back by one `interval`, if it is still `after` (no reservation since).
    FullAt { after: Instant, interval: Duration },
}

impl Default for BucketRateLimiter {
    /// 10 qps, burst 100: client-go's controller default.
    fn default() -> Self {
        BucketRateLimiter::new(10.0, 100)
    }
}

impl<K> RateLimiter<K> for BucketRateLimiter {
    fn when(&self, _key: &K) -> Duration {
        self.reserve()
    }

    fn forget(&self, _key: &K) {}

    fn num_requeues(&self, _key: &K) -> u32 {
        0
    }
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("rate", &self.rate)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

/// The worst case of several limiters (client-go's `MaxOfRateLimiter`): every limiter is asked (so each counts the
/// failure) and the longest wait wins; `num_requeues` is the largest count; `forget` forgets everywhere.
pub struct MaxOfRateLimiter<K> {
    limiters: Vec<Box<dyn RateLimiter<K>>>,
}

impl<K> MaxOfRateLimiter<K> {
    /// The max of `limiters`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<K>>>) -> Self {
        MaxOfRateLimiter { limiters }
    }
}

impl<K> RateLimiter<K> for MaxOfRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(key))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&self, key: &K) {
        for limiter in &self.limiters {
            limiter.forget(key);
        }
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.limiters.iter().map(|l| l.num_requeues(key)).max().unwrap_or(0)
    }
}

impl<K> fmt::Debug for MaxOfRateLimiter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

/// Caps another limiter's wait at `max_delay` (client-go's `WithMaxWaitRateLimiter`).
#[derive(Debug)]
pub struct WithMaxWaitRateLimiter<R> {
    limiter: R,
    max_delay: Duration,
}

impl<R> WithMaxWaitRateLimiter<R> {
    /// `limiter`, waiting at most `max_delay`.
    pub fn new(limiter: R, max_delay: Duration) -> Self {
        WithMaxWaitRateLimiter { limiter, max_delay }
    }
}

impl<K, R: RateLimiter<K>> RateLimiter<K> for WithMaxWaitRateLimiter<R> {
    fn when(&self, key: &K) -> Duration {
        self.limiter.when(key).min(self.max_delay)
    }

    fn forget(&self, key: &K) {
        self.limiter.forget(key)
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.limiter.num_requeues(key)
    }
}

#[cfg(test)]
mod tests {
    //! The cases of client-go's `default_rate_limiters_test.go`, plus the token bucket.

    use super::*;
    use crate::clock::FakeClock;
    use std::sync::atomic::{AtomicU32, Ordering};

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn item_exponential_failure_rate_limiter() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
        for expected in [1, 2, 4, 8, 16] {
            assert_eq!(limiter.when(&"one"), expected * MS);
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two"), MS);
        assert_eq!(limiter.when(&"two"), 2 * MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), MS);
    }

    #[test]
    fn item_exponential_failure_rate_limiter_overflow() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1000));
        for _ in 0..5 {
            limiter.when(&"one");
        }
        assert_eq!(limiter.when(&"one"), 32 * MS);
        for _ in 0..1000 {
            limiter.when(&"overflow1");
        }
        assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

        let minute = Duration::from_secs(60);
        let limiter = ItemExponentialFailureRateLimiter::new(minute, 1000 * 60 * minute);
        for _ in 0..2 {
            limiter.when(&"two");
        }
        assert_eq!(limiter.when(&"two"), 4 * minute);
        for _ in 0..1000 {
            limiter.when(&"overflow2");
        }
        assert_eq!(limiter.when(&"overflow2"), 1000 * 60 * minute);
    }

    #[test]
    fn exponential_never_overflows() {
        assert_eq!(exponential(Duration::MAX, Duration::MAX, 0), Duration::MAX);
        assert_eq!(exponential(Duration::MAX, Duration::MAX, 1), Duration::MAX);
        assert_eq!(exponential(MS, Duration::MAX, u32::MAX), Duration::MAX);
        assert_eq!(
            exponential(Duration::from_secs(u64::MAX / 4), Duration::MAX, 1),
            Duration::from_secs(u64::MAX / 2 - 1)
        );
        assert_eq!(exponential(Duration::ZERO, Duration::from_secs(1), 200), Duration::ZERO);
    }

    #[test]
    fn item_fast_slow_rate_limiter() {
        let limiter = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
        for expected in [5 * MS, 5 * MS, 5 * MS, Duration::from_secs(10), Duration::from_secs(10)] {
            assert_eq!(limiter.when(&"one"), expected);
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two"), 5 * MS);
        assert_eq!(limiter.when(&"two"), 5 * MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), 5 * MS);
    }

    #[test]
    fn max_of_rate_limiter() {
        let limiter: MaxOfRateLimiter<&str> = MaxOfRateLimiter::new(vec![
            Box::new(ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(3), 3)),
            Box::new(ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1))),
        ]);
        for expected in [5 * MS, 5 * MS, 5 * MS, Duration::from_secs(3), Duration::from_secs(3)] {
            assert_eq!(limiter.when(&"one"), expected);
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two"), 5 * MS);
        assert_eq!(limiter.when(&"two"), 5 * MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), 5 * MS);
    }

    /// client-go's test helper: `base_delay` for the first `threshold` calls (any key), then `max_delay`.
    struct StepRateLimiter {
        count: AtomicU32,
        threshold: u32,
        base_delay: Duration,
        max_delay: Duration,
    }

    impl RateLimiter<u32> for StepRateLimiter {
        fn when(&self, _key: &u32) -> Duration {
            if self.count.fetch_add(1, Ordering::SeqCst) < self.threshold {
                self.base_delay
            } else {
                self.max_delay
            }
        }
        fn forget(&self, _key: &u32) {}
        fn num_requeues(&self, _key: &u32) -> u32 {
            0
        }
    }

    #[test]
    fn with_max_wait_rate_limiter() {
        let step = StepRateLimiter {
            count: AtomicU32::new(0),
            threshold: 100,
            base_delay: 5 * MS,
            max_delay: Duration::from_secs(1000),
        };
        let limiter = WithMaxWaitRateLimiter::new(step, Duration::from_secs(500));
        for i in 0..100 {
            assert_eq!(limiter.when(&i), 5 * MS);
        }
        for i in 100..200 {
            assert_eq!(limiter.when(&i), Duration::from_secs(500));
        }
    }

    #[test]
    fn bucket_starts_full_then_reserves_in_advance_at_the_refill_rate() {
        let clock = FakeClock::new();
        let bucket = BucketRateLimiter::with_clock(10.0, 100, Arc::new(clock.clone()));
        for _ in 0..100 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
        assert_eq!(bucket.reserve(), 100 * MS);
        assert_eq!(bucket.reserve(), 200 * MS);
        clock.step(150 * MS); // 1.5 tokens refilled, 2 were borrowed
        assert_eq!(bucket.reserve(), 150 * MS);
        clock.step(Duration::from_secs(60)); // full again, never more than the burst
        for _ in 0..100 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
        assert_eq!(bucket.reserve(), 100 * MS);
    }

    #[test]
    fn bucket_partial_refill() {
        let clock = FakeClock::new();
        let bucket = BucketRateLimiter::with_clock(2.0, 1, Arc::new(clock.clone()));
        assert_eq!(bucket.reserve(), Duration::ZERO);
        clock.step(200 * MS);
        assert_eq!(bucket.reserve(), 300 * MS);
        assert_eq!(RateLimiter::<&str>::num_requeues(&bucket, &"a"), 0);
    }

    #[test]
    fn a_reservation_beyond_the_max_wait_takes_nothing_and_a_cancelled_one_gives_its_token_back() {
        // rate.Limiter's ReserveN with a maximum future reservation, and Reservation.Cancel.
        let clock = FakeClock::new();
        let start = clock.now();
        let bucket = BucketRateLimiter::with_clock(10.0, 1, Arc::new(clock.clone()));
        let first = bucket.reserve_within(Duration::ZERO).unwrap();
        assert_eq!(first.ready_at, start);
        assert!(
            bucket.reserve_within(99 * MS).is_none(),
            "the next token is 100 ms away"
        );
        let second = bucket.reserve_within(100 * MS).unwrap();
        assert_eq!(second.ready_at, start + 100 * MS, "the refused one took nothing");
        bucket.cancel(&second);
        let again = bucket.reserve_within(100 * MS).unwrap();
        assert_eq!(again.ready_at, start + 100 * MS, "the cancelled token came back");
        // A token with a later reservation on top of it is not given back: that one was scheduled after it.
        let third = bucket.reserve_within(Duration::MAX).unwrap();
        assert_eq!(third.ready_at, start + 200 * MS);
        bucket.cancel(&again);
        assert_eq!(bucket.reserve(), 300 * MS);
        // A bucket that never refills gets its token back too.
        let never = BucketRateLimiter::with_clock(0.0, 1, Arc::new(clock.clone()));
        let only = never.reserve_within(Duration::ZERO).unwrap();
        assert!(never.reserve_within(Duration::MAX).is_none());
        never.cancel(&only);
        assert!(never.reserve_within(Duration::ZERO).is_some());
    }

    #[test]
    fn bucket_edge_rates() {
        let clock: Arc<dyn Clock> = Arc::new(FakeClock::new());
        let unlimited = BucketRateLimiter::with_clock(f64::INFINITY, 0, clock.clone());
        assert_eq!(unlimited.reserve(), Duration::ZERO);
        let never = BucketRateLimiter::with_clock(0.0, 1, clock.clone());
        assert_eq!(never.reserve(), Duration::ZERO);
        assert_eq!(never.reserve(), Duration::MAX);
        let nan = BucketRateLimiter::with_clock(f64::NAN, 0, clock.clone());
        assert_eq!(nan.reserve(), Duration::MAX);
        let tiny = BucketRateLimiter::with_clock(1e-300, 0, clock.clone());
        assert_eq!(tiny.reserve(), Duration::MAX);
        let no_burst = BucketRateLimiter::with_clock(10.0, 0, clock);
        assert_eq!(no_burst.reserve(), Duration::MAX);
    }

    #[test]
    fn default_controller_rate_limiter_is_max_of_exponential_and_bucket() {
        let clock = FakeClock::new();
        let limiter = default_controller_rate_limiter_with_clock::<u32>(Arc::new(clock.clone()));
        // Exponential per key: 5 ms, 10 ms, 20 ms...
        assert_eq!(limiter.when(&0), 5 * MS);
        assert_eq!(limiter.when(&0), 10 * MS);
        assert_eq!(limiter.when(&0), 20 * MS);
        assert_eq!(limiter.num_requeues(&0), 3);
        // ...until the shared bucket (100 tokens, 3 taken) runs dry: then 10 qps across all keys.
        for key in 1..=97 {
            assert_eq!(limiter.when(&key), 5 * MS);
        }
        assert_eq!(limiter.when(&1000), 100 * MS);
        assert_eq!(limiter.when(&1001), 200 * MS);
        limiter.forget(&0);
        assert_eq!(limiter.num_requeues(&0), 0);
        // 1000 s cap.
        for _ in 0..40 {
            limiter.when(&7);
        }
        clock.step(Duration::from_secs(3600));
        assert_eq!(limiter.when(&7), Duration::from_secs(1000));
    }
}
