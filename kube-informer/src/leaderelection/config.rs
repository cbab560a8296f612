//! Election settings (client-go's `LeaderElectionConfig`) and the callbacks (`LeaderCallbacks`).

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use crate::client::LeaseTerm;
use crate::clock::jitter::mul_saturating;
use crate::clock::{Clock, RealClock};
use crate::error::{Error, Result};

/// client-go's `JitterFactor`: a candidate waits `retry_period · (1 + 1.2 · rand)` between attempts, so that
/// candidates started together spread out.
pub const JITTER_FACTOR: f64 = 1.2;

/// Timing and behaviour of an election. The defaults are client-go's "core clients" values.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::leaderelection::LeaderElectionConfig;
///
/// let c = LeaderElectionConfig::default();
/// assert_eq!(
///     (c.lease_duration, c.renew_deadline, c.retry_period),
///     (Duration::from_secs(15), Duration::from_secs(10), Duration::from_secs(2))
/// );
/// assert!(c.release_on_cancel);
/// // Tests use short terms; the constraints are client-go's (lease > renew deadline > 1.2 · retry period).
/// let fast = LeaderElectionConfig::default()
///     .lease_duration(Duration::from_secs(2))
///     .renew_deadline(Duration::from_secs(1))
///     .retry_period(Duration::from_millis(100));
/// assert!(fast.validate().is_ok());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct LeaderElectionConfig {
    /// How long candidates wait, after they last saw the record change, before taking the lock over. Written to the
    /// lock in whole seconds (so at least 1 s). Default: 15 s.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a failing renewal before it stops leading. Must be shorter than
    /// `lease_duration`: the gap is the time the old leader has to stop writing before another may start.
    /// Default: 10 s.
    pub renew_deadline: Duration,
    /// The pause between attempts (jittered by [`JITTER_FACTOR`] while acquiring). Default: 2 s.
    pub retry_period: Duration,
    /// On a graceful [`stop`](super::LeaderElector::stop) while leading, release the lock — holder emptied and the
    /// lease duration set to 1 s — so that another candidate takes over at once instead of after `lease_duration`.
    /// Default: **true** (client-go's `ReleaseOnCancel` defaults to false; here the release happens only after
    /// `on_stopped_leading` has returned, so the work it guards has stopped, which is what makes it safe).
    pub release_on_cancel: bool,
    /// Name for logs and the thread (`le:<name>`, shortened to the 15 bytes the OS keeps). Default: the lock's
    /// description.
    pub name: Option<String>,
    /// Where time is read: [`RealClock`] by default; tests use a [`FakeClock`](crate::clock::FakeClock).
    pub clock: Arc<dyn Clock>,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: true,
            name: None,
            clock: Arc::new(RealClock),
        }
    }
}

impl LeaderElectionConfig {
    /// Sets [`lease_duration`](LeaderElectionConfig::lease_duration).
    #[must_use]
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// Sets [`renew_deadline`](LeaderElectionConfig::renew_deadline).
    #[must_use]
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// Sets [`retry_period`](LeaderElectionConfig::retry_period).
    #[must_use]
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Sets [`release_on_cancel`](LeaderElectionConfig::release_on_cancel).
    #[must_use]
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Sets [`name`](LeaderElectionConfig::name).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets [`clock`](LeaderElectionConfig::clock).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Checks client-go's constraints: `lease_duration > renew_deadline > JITTER_FACTOR · retry_period > 0`, and a
    /// lease of at least one second (it is written in whole seconds).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the broken constraint.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidInput(format!("leader election: {m}")));
        if self.retry_period.is_zero() {
            return bad("retry_period must be greater than zero");
        }
        if self.lease_duration < Duration::from_secs(1) {
            return bad("lease_duration must be at least one second (leases count whole seconds)");
        }
        if self.lease_duration <= self.renew_deadline {
            return bad("lease_duration must be greater than renew_deadline");
        }
        if self.renew_deadline <= mul_saturating(self.retry_period, JITTER_FACTOR) {
            return bad("renew_deadline must be greater than retry_period × 1.2 (JITTER_FACTOR)");
        }
        Ok(())
    }

    pub(crate) fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

impl fmt::Debug for LeaderElectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionConfig")
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

pub(crate) type Callback = Box<dyn FnMut() + Send>;
/// A callback given what changed.
pub(crate) type CallbackWith<T> = Box<dyn FnMut(&T) + Send>;
pub(crate) type StartedCallback = CallbackWith<LeaseTerm>;
pub(crate) type LeaderCallback = CallbackWith<str>;

/// What the elector calls as leadership changes — on its own thread, one at a time, in order. A panicking callback
/// is caught and logged.
///
/// * `on_started_leading`: this candidate acquired the lock. Start the guarded work and **return promptly**: the
///   lease is renewed by the same thread once the callback returns (client-go runs it on its own goroutine).
///   [`on_started_leading_with_term`](Self::on_started_leading_with_term) is given the term that began: fence the
///   work's client with it ([`Client::fenced`](crate::client::Client::fenced)), so that its writes end with the
///   term.
/// * `on_stopped_leading`: this candidate lost the lock (a renewal failed for `renew_deadline`) or is stopping while
///   leading. Stop the guarded work **before returning**: on a graceful stop the lock is released only after
///   this returns, and after a loss another candidate may take over `lease_duration − renew_deadline` later. Called
///   only after an `on_started_leading` (client-go also calls it when it never led).
/// * `on_new_leader`: the observed holder changed (this candidate included); not called when the lock is released
///   (an empty holder).
///
/// After a loss, the elector becomes a candidate again (client-go's `Run` returns, and most programs exit): a new
/// term begins with another `on_started_leading`.
#[derive(Default)]
pub struct LeaderCallbacks {
    pub(crate) started: Option<StartedCallback>,
    pub(crate) stopped: Option<Callback>,
    pub(crate) new_leader: Option<LeaderCallback>,
}

impl LeaderCallbacks {
    /// No callbacks.
    pub fn new() -> Self {
        LeaderCallbacks::default()
    }

    /// Adds an `on_started_leading` callback, run after those set before (a controller's
    /// [`leader_callbacks`](crate::controller::Controller::leader_callbacks) keep starting it).
    #[must_use]
    pub fn on_started_leading(self, mut f: impl FnMut() + Send + 'static) -> Self {
        self.on_started_leading_with_term(move |_| f())
    }

    /// Adds an `on_started_leading` callback given the [`LeaseTerm`] that began, run after those set before. Work
    /// that writes through [`client.fenced(term)`](crate::client::Client::fenced) stops writing when the term ends,
    /// whatever it is doing then: its requests are refused, or aborted in flight, with
    /// [`Error::OwnershipLost`].
    #[must_use]
    pub fn on_started_leading_with_term(self, f: impl FnMut(&LeaseTerm) + Send + 'static) -> Self {
        self.then(LeaderCallbacks {
            started: Some(Box::new(f)),
            ..LeaderCallbacks::default()
        })
    }

    /// Adds an `on_stopped_leading` callback, run after those set before.
    #[must_use]
    pub fn on_stopped_leading(self, f: impl FnMut() + Send + 'static) -> Self {
        self.then(LeaderCallbacks {
            stopped: Some(Box::new(f)),
            ..LeaderCallbacks::default()
        })
    }

    /// Adds an `on_new_leader` callback, run after those set before.
    #[must_use]
    pub fn on_new_leader(self, f: impl FnMut(&str) + Send + 'static) -> Self {
        self.then(LeaderCallbacks {
            new_leader: Some(Box::new(f)),
            ..LeaderCallbacks::default()
        })
    }
}

impl LeaderCallbacks {
    /// Callbacks that run `self`'s, then `next`'s, for each change (to add logging or metrics to
    /// [`Controller::leader_callbacks`](crate::controller::Controller::leader_callbacks)).
    #[must_use]
    pub fn then(self, next: LeaderCallbacks) -> LeaderCallbacks {
        fn chain(a: Option<Callback>, b: Option<Callback>) -> Option<Callback> {
            match (a, b) {
                (Some(mut a), Some(mut b)) => Some(Box::new(move || {
                    a();
                    b();
                })),
                (a, None) => a,
                (None, b) => b,
            }
        }
        /// `chain` for callbacks given what changed (the term that began, the new leader).
        fn chain_with<T: ?Sized + 'static>(
            a: Option<CallbackWith<T>>,
            b: Option<CallbackWith<T>>,
        ) -> Option<CallbackWith<T>> {
            match (a, b) {
                (Some(mut a), Some(mut b)) => Some(Box::new(move |what: &T| {
                    a(what);
                    b(what);
                })),
                (a, None) => a,
                (None, b) => b,
            }
        }
        LeaderCallbacks {
            started: chain_with(self.started, next.started),
            stopped: chain(self.stopped, next.stopped),
            new_leader: chain_with(self.new_leader, next.new_leader),
        }
    }
}

impl fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderCallbacks")
            .field("on_started_leading", &self.started.is_some())
            .field("on_stopped_leading", &self.stopped.is_some())
            .field("on_new_leader", &self.new_leader.is_some())
            .finish()
    }
}

/// This replica's default identity: the host name (in a pod, the pod's name) and 16 random hex digits.
pub(crate) fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    // The standard hasher's keys are random per process: a fresh random number without a dependency.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("{host}_{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn callbacks_set_twice_both_run_in_order() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let say = |what: &'static str| {
            let log = log.clone();
            move || log.lock().unwrap().push(what.to_owned())
        };
        let leader = |what: &'static str| {
            let log = log.clone();
            move |id: &str| log.lock().unwrap().push(format!("{what} {id}"))
        };
        // As a program adds logging to a controller's callbacks.
        let mut callbacks = LeaderCallbacks::new()
            .on_started_leading(say("start workers"))
            .on_stopped_leading(say("stop workers"))
            .on_new_leader(leader("observe"))
            .on_started_leading(say("log start"))
            .on_stopped_leading(say("log stop"))
            .on_new_leader(leader("log leader"));
        let term = LeaseTerm::begin(
            "ns/lease",
            Arc::new(crate::clock::RealClock),
            (std::time::Instant::now(), std::time::Duration::ZERO),
            None,
            None,
        );
        callbacks.started.as_mut().unwrap()(&term);
        callbacks.new_leader.as_mut().unwrap()("me");
        callbacks.stopped.as_mut().unwrap()();
        assert_eq!(
            *log.lock().unwrap(),
            [
                "start workers",
                "log start",
                "observe me",
                "log leader me",
                "stop workers",
                "log stop"
            ]
        );
    }
}
