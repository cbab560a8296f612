//! Client-side rate limiting: client-go's token bucket (`flowcontrol.NewTokenBucketRateLimiter`) in front of every
//! request a client sends.
//!
//! client-go limits every REST client to [`DEFAULT_QPS`] requests per second with bursts of [`DEFAULT_BURST`]
//! (`rest.DefaultQPS`, `rest.DefaultBurst`), so that a controller bug — a reconcile loop that never settles — cannot
//! flood the API server. This crate does the same by default ([`Config::rate_limit`](super::Config::rate_limit),
//! [`Config::no_rate_limit`](super::Config::no_rate_limit)).
//!
//! What counts: every request — each attempt of it (a retry after a 401 takes a token too, as client-go's retries
//! do), a LIST page, the request that opens a watch or a streamed log. What does not: the long read of a watch or a
//! log stream once it is open. client-go does not throttle the first attempt of a watch either; this crate does, so
//! that a re-watch loop against a server that closes every watch at once is held to the limit too.
//!
//! A request waiting for a token is never stuck: the client's [`AbortHandle`](super::AbortHandle) wakes it at once
//! (it fails with [`Error::Stopped`]), and a request with a deadline ([`Timeouts::request`](super::Timeouts::request))
//! fails at once with a timeout when its token would come after the deadline, as client-go's `rate.Limiter.Wait` does
//! against a context's deadline — the token is not taken then. A request fenced by a Lease term
//! ([`Client::fenced`](super::Client::fenced)) fails so too, with [`Error::OwnershipLost`], when its token would come
//! after the term's end: work that cannot be sent while this replica owns it is never sent.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, select};

use super::abort::CancelSignal;
use crate::clock::{Clock, ClockWatcher, RealClock};
use crate::workqueue::BucketRateLimiter;
use crate::{Error, Result, TransportError, TransportErrorKind};

/// Requests per second a client sends at most by default: 5, client-go's `rest.DefaultQPS`.
pub const DEFAULT_QPS: f64 = 5.0;

/// Requests a client may send at once, above [`DEFAULT_QPS`], by default: 10, client-go's `rest.DefaultBurst`.
pub const DEFAULT_BURST: u32 = 10;

/// The client-side rate limit of a [`Client`](super::Client): a token bucket refilling at `qps` tokens per second up
/// to `burst`, full at the start, one token per request (client-go's `flowcontrol.NewTokenBucketRateLimiter`, fed
/// by `rest.Config`'s `QPS` and `Burst`).
///
/// ```
/// use kube_informer::client::{Config, RateLimit, DEFAULT_BURST, DEFAULT_QPS};
///
/// assert_eq!((RateLimit::default().qps(), RateLimit::default().burst()), (DEFAULT_QPS, DEFAULT_BURST));
/// // controller-runtime's defaults, for a busy controller:
/// let busy = Config::new("https://10.0.0.1:6443").rate_limit(RateLimit::new(20.0, 30));
/// assert!(format!("{busy:?}").contains("rate_limit: Some(RateLimit { qps: 20.0, burst: 30, .. })"));
/// // No client-side limit at all (rely on the server's priority and fairness):
/// let unlimited = Config::new("https://10.0.0.1:6443").no_rate_limit();
/// assert!(format!("{unlimited:?}").contains("rate_limit: None"));
/// ```
#[derive(Clone)]
pub struct RateLimit {
    /// Tokens per second; finite and above 0 (checked by `Client::new`).
    qps: f64,
    /// The bucket's size; at least 1 (checked by `Client::new`).
    burst: u32,
    clock: Arc<dyn Clock>,
}

impl RateLimit {
    /// `qps` requests per second, bursts of `burst`. `qps` must be finite and above 0 and `burst` at least 1
    /// ([`Client::new`](super::Client::new) refuses anything else); to turn the limit off, use
    /// [`Config::no_rate_limit`](super::Config::no_rate_limit).
    pub fn new(qps: f64, burst: u32) -> RateLimit {
        RateLimit {
            qps,
            burst,
            clock: Arc::new(RealClock),
        }
    }

    /// Reads time from `clock` instead of the real clock (a [`FakeClock`](crate::clock::FakeClock) in tests: tokens
    /// then refill only when the test steps it).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Tokens per second.
    pub fn qps(&self) -> f64 {
        self.qps
    }

    /// The bucket's size.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// Why this limit is unusable, if it is.
    pub(crate) fn problem(&self) -> Option<String> {
        if !(self.qps.is_finite() && self.qps > 0.0) {
            return Some(format!(
                "a rate limit needs a finite QPS above 0, not {}; to send without a client-side limit use \
                 Config::no_rate_limit",
                self.qps
            ));
        }
        if Duration::try_from_secs_f64(1.0 / self.qps).is_err() {
            return Some(format!("a QPS of {} is too small to wait for", self.qps));
        }
        if self.burst == 0 {
            return Some("a rate limit needs a burst of at least 1".to_owned());
        }
        None
    }
}

impl Default for RateLimit {
    /// [`DEFAULT_QPS`] and [`DEFAULT_BURST`]: client-go's.
    fn default() -> Self {
        RateLimit::new(DEFAULT_QPS, DEFAULT_BURST)
    }
}

impl fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

/// The token bucket of one client (shared by its clones and isolated copies), and the waiting for its tokens.
pub(crate) struct Throttle {
    bucket: BucketRateLimiter,
    qps: f64,
    burst: u32,
}

/// Wakes a request waiting for a token when a clock that jumps (a fake clock) moves.
struct Wake(Sender<()>);

impl ClockWatcher for Wake {
    fn clock_moved(&self) {
        let _ = self.0.try_send(());
    }
}

impl Throttle {
    pub(crate) fn new(limit: &RateLimit) -> Throttle {
        Throttle {
            bucket: BucketRateLimiter::with_clock(limit.qps, limit.burst, Arc::clone(&limit.clock)),
            qps: limit.qps,
            burst: limit.burst,
        }
    }

    /// A throttle with the same limit and clock and a bucket of its own (full).
    pub(crate) fn fresh(&self) -> Throttle {
        Throttle {
            bucket: BucketRateLimiter::with_clock(self.qps, self.burst, Arc::clone(self.bucket.clock())),
            qps: self.qps,
            burst: self.burst,
        }
    }

    /// Takes a token for the request `what`, waiting until it exists; returns how long it waited (on the limit's
    /// clock). Fails at once, taking nothing, when the token would come after `deadline`
    /// ([`TransportErrorKind::Timeout`]); fails with [`Error::Stopped`] as soon as `cancel` fires, giving the token
    /// back.
    pub(crate) fn wait(&self, what: &str, cancel: &CancelSignal, deadline: Option<Instant>) -> Result<Duration> {
        if cancel.is_cancelled() {
            return Err(Error::Stopped);
        }
        let clock = self.bucket.clock();
        let started = clock.now();
        let max_wait = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(Instant::now()));
        let Some(reservation) = self.bucket.reserve_within(max_wait) else {
            return Err(self.too_late(what));
        };
        if reservation.ready_at <= started {
            return Ok(Duration::ZERO);
        }
        // Watch the clock before looking at it: a jump after the look still wakes the wait below.
        let (tx, wake) = crossbeam_channel::bounded(1);
        let watcher: Arc<dyn ClockWatcher> = Arc::new(Wake(tx));
        clock.watch(Arc::downgrade(&watcher) as Weak<dyn ClockWatcher>);
        let past_deadline = match deadline {
            Some(d) => crossbeam_channel::at(d),
            None => crossbeam_channel::never(),
        };
        loop {
            let now = clock.now();
            if now >= reservation.ready_at {
                return Ok(now.saturating_duration_since(started));
            }
            let look_again = match clock.real_wait(reservation.ready_at) {
                Some(d) => crossbeam_channel::after(d),
                None => crossbeam_channel::never(),
            };
            select! {
                recv(wake) -> _ => {}
                recv(look_again) -> _ => {}
                recv(cancel.receiver()) -> _ => {
                    self.bucket.cancel(&reservation);
                    return Err(Error::Stopped);
                }
                recv(past_deadline) -> _ => {
                    // Only a clock that does not follow real time gets here: on the real clock the token was due
                    // before the deadline.
                    self.bucket.cancel(&reservation);
                    return Err(self.too_late(what));
                }
            }
        }
    }

    fn too_late(&self, what: &str) -> Error {
        Error::from(TransportError::new(
            TransportErrorKind::Timeout,
            format!(
                "{what}: not sent — the client-side rate limit ({} qps, burst {}) has no token for it before its \
                 deadline (Timeouts::request)",
                self.qps, self.burst
            ),
        ))
    }

    /// `5 qps, burst 10`, for messages.
    pub(crate) fn describe(&self) -> String {
        format!("{} qps, burst {}", self.qps, self.burst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::abort::Canceller;
    use crate::clock::FakeClock;

    fn throttle(qps: f64, burst: u32, clock: &FakeClock) -> Throttle {
        Throttle::new(&RateLimit::new(qps, burst).clock(clock.clone()))
    }

    /// Returns once a request waits on `clock` (it watches the clock while it waits).
    fn until_one_waits(clock: &FakeClock) {
        let give_up = Instant::now() + Duration::from_secs(30);
        while clock.watchers() == 0 {
            assert!(Instant::now() < give_up, "nothing waits for a token");
            std::thread::yield_now();
        }
    }

    #[test]
    fn refuses_unusable_limits() {
        for (qps, burst, needle) in [
            (0.0, 1, "above 0"),
            (-1.0, 1, "above 0"),
            (f64::NAN, 1, "above 0"),
            (f64::INFINITY, 1, "above 0"),
            (1e-300, 1, "too small"),
            (5.0, 0, "burst of at least 1"),
        ] {
            let problem = RateLimit::new(qps, burst).problem().unwrap();
            assert!(problem.contains(needle), "{qps}/{burst}: {problem}");
        }
        assert_eq!(RateLimit::default().problem(), None);
    }

    #[test]
    fn the_burst_passes_at_once_then_each_token_waits_for_the_clock() {
        let clock = FakeClock::new();
        let t = Arc::new(throttle(2.0, 3, &clock));
        let canceller = Canceller::new();
        let cancel = canceller.signal();
        for _ in 0..3 {
            assert_eq!(t.wait("GET /x", &cancel, None).unwrap(), Duration::ZERO);
        }
        // The fourth waits on another thread until the clock moves half a second (one token at 2 qps).
        let waiting = {
            let (t, cancel) = (t.clone(), cancel.clone());
            std::thread::Builder::new()
                .name("test:throttled".into())
                .spawn(move || t.wait("GET /x", &cancel, None))
                .unwrap()
        };
        until_one_waits(&clock);
        clock.step(Duration::from_millis(500));
        assert_eq!(waiting.join().unwrap().unwrap(), Duration::from_millis(500));
        assert_eq!(clock.watchers(), 0, "the waiter stopped watching the clock");
    }

    #[test]
    fn a_token_after_the_deadline_fails_at_once_and_takes_nothing() {
        let clock = FakeClock::new();
        let t = throttle(0.1, 1, &clock); // one token every 10 s
        let cancel = Canceller::new().signal();
        t.wait("GET /x", &cancel, None).unwrap();
        let soon = Instant::now() + Duration::from_secs(1);
        let e = t.wait("GET /api/v1/pods", &cancel, Some(soon)).unwrap_err();
        let message = e.to_string();
        assert!(
            matches!(&e, Error::Transport(te) if te.kind == TransportErrorKind::Timeout),
            "{e:?}"
        );
        assert!(
            message.contains("GET /api/v1/pods: not sent") && message.contains("0.1 qps, burst 1"),
            "{message}"
        );
        // Nothing was taken: once the token exists, a request gets it without waiting.
        clock.step(Duration::from_secs(10));
        assert_eq!(t.wait("GET /x", &cancel, Some(soon)).unwrap(), Duration::ZERO);
    }

    #[test]
    fn a_cancelled_wait_returns_at_once_and_gives_its_token_back() {
        let clock = FakeClock::new();
        let t = Arc::new(throttle(1.0, 1, &clock));
        let canceller = Canceller::new();
        t.wait("GET /x", &canceller.signal(), None).unwrap();
        let waiting = {
            let (t, cancel) = (t.clone(), canceller.signal());
            std::thread::Builder::new()
                .name("test:throttled".into())
                .spawn(move || t.wait("GET /x", &cancel, None))
                .unwrap()
        };
        until_one_waits(&clock);
        // The clock never moves: only the cancellation can end this wait.
        canceller.cancel();
        assert!(matches!(waiting.join().unwrap(), Err(Error::Stopped)));
        let other = Canceller::new().signal();
        clock.step(Duration::from_secs(1));
        assert_eq!(
            t.wait("GET /x", &other, None).unwrap(),
            Duration::ZERO,
            "the token is there one interval later, not two"
        );
    }
}
