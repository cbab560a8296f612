//! Time, shared by every part that waits: the [`Clock`] trait, the [`RealClock`], a [`FakeClock`] that tests move by
//! hand, and (inside the crate) the jitter that spreads retries.
//!
//! The work queues (the delay heap, `get_deadline`, drain deadlines, the token bucket, the latency metrics) and
//! leader election read time from a [`Clock`], never from [`Instant::now`] directly. With a [`FakeClock`] a test
//! steps time forward and sees the effect at once, without sleeping: when the fake clock moves it tells everything
//! that watches it (each queue moves its due delayed keys onto the queue, a sleeping elector wakes) *before*
//! [`FakeClock::step`] returns.
//!
//! The reflector's back-off, the leader elector's retries and the event recorder's retries draw their random delays
//! from the same source here (client-go's `wait.Jitter` and full jitter), and every deadline made of a duration that
//! a caller or a server chose saturates here (`Duration::MAX` means forever).

pub(crate) mod deadline;
mod fake;
pub(crate) mod jitter;

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

pub use fake::FakeClock;

/// A source of time for work queues, rate limiters and leader election (client-go's `clock.WithTicker`).
///
/// Implementations must be cheap to call and must never call back into a work queue: queues read the clock while
/// holding their lock.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time on this clock.
    fn now(&self) -> Instant;

    /// How long, in real time, a thread waiting for this clock to reach `deadline` may block before it must look at
    /// the clock again. `None` means "until woken": the clock promises to call [`ClockWatcher::clock_moved`] on its
    /// watchers whenever its time changes (what a fake clock does).
    fn real_wait(&self, deadline: Instant) -> Option<Duration>;

    /// Registers a watcher to be told each time this clock's time jumps. Clocks that follow real time (and so never
    /// jump) may ignore it. The clock holds only a weak reference: a dropped watcher is forgotten.
    fn watch(&self, watcher: Weak<dyn ClockWatcher>);
}

/// Something that must react when a [`Clock`] jumps (a queue re-checking its delay heap and its deadlines).
pub trait ClockWatcher: Send + Sync {
    /// Called after the clock's time changed, on the thread that changed it, with no clock lock held.
    fn clock_moved(&self);
}

/// The wall clock: [`Instant::now`]. The default clock of every queue and limiter.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn real_wait(&self, deadline: Instant) -> Option<Duration> {
        Some(deadline.saturating_duration_since(Instant::now()))
    }

    fn watch(&self, _watcher: Weak<dyn ClockWatcher>) {}
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Instant {
        (**self).now()
    }

    fn real_wait(&self, deadline: Instant) -> Option<Duration> {
        (**self).real_wait(deadline)
    }

    fn watch(&self, watcher: Weak<dyn ClockWatcher>) {
        (**self).watch(watcher)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_clock_waits_until_the_deadline() {
        let clock = RealClock;
        let past = clock.now();
        assert_eq!(clock.real_wait(past), Some(Duration::ZERO));
        let wait = clock.real_wait(Instant::now() + Duration::from_secs(10)).unwrap();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(10));
    }
}
