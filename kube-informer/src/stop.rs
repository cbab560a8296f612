//! `StopSignal`: a one-way "stop now" flag that sleeping threads can wait on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::clock::deadline::deadline_after;
use crate::clock::{Clock, ClockWatcher};

/// A flag set once; threads sleep on it with a deadline and wake at once when it is set.
#[derive(Debug, Default)]
pub(crate) struct StopSignal {
    /// Invariant: goes from false to true once, never back.
    stopped: Mutex<bool>,
    /// A copy of `stopped` that hot loops read without the lock (set after `stopped`).
    fast: AtomicBool,
    cond: Condvar,
}

impl StopSignal {
    pub(crate) fn new() -> Self {
        StopSignal::default()
    }

    /// Sets the flag and wakes every waiter.
    pub(crate) fn stop(&self) {
        *self.stopped.lock() = true;
        self.fast.store(true, Ordering::Release);
        self.cond.notify_all();
    }

    /// True once stopped (a single atomic load: cheap enough to check per event).
    pub(crate) fn is_stopped(&self) -> bool {
        self.fast.load(Ordering::Acquire)
    }

    /// Sleeps until `deadline` or until stopped; returns true when stopped.
    pub(crate) fn wait_until(&self, deadline: Instant) -> bool {
        let mut stopped = self.stopped.lock();
        while !*stopped {
            if self.cond.wait_until(&mut stopped, deadline).timed_out() {
                break;
            }
        }
        *stopped
    }

    /// Sleeps for `d` or until stopped; returns true when stopped.
    pub(crate) fn wait_for(&self, d: Duration) -> bool {
        self.wait_until(deadline_after(Instant::now(), d))
    }

    /// Sleeps until `clock` reaches `deadline` (false) or until stopped (true). With a fake clock, register this
    /// signal as the clock's watcher so that its steps wake the sleeper.
    pub(crate) fn wait_until_on(&self, clock: &dyn Clock, deadline: Instant) -> bool {
        let mut stopped = self.stopped.lock();
        loop {
            if *stopped {
                return true;
            }
            if clock.now() >= deadline {
                return false;
            }
            match clock.real_wait(deadline) {
                Some(d) => {
                    self.cond.wait_for(&mut stopped, d);
                }
                None => self.cond.wait(&mut stopped),
            }
        }
    }
}

impl ClockWatcher for StopSignal {
    fn clock_moved(&self) {
        let _guard = self.stopped.lock();
        self.cond.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn stop_wakes_a_long_sleeper() {
        let s = Arc::new(StopSignal::new());
        let s2 = s.clone();
        let sleeper = std::thread::spawn(move || s2.wait_for(Duration::from_secs(3600)));
        s.stop();
        assert!(sleeper.join().unwrap(), "woken by stop, not by the deadline");
        assert!(s.is_stopped());
        assert!(s.wait_for(Duration::from_secs(3600)), "returns at once once stopped");
    }

    #[test]
    fn deadline_passes_without_stop() {
        let s = StopSignal::new();
        assert!(!s.wait_for(Duration::ZERO));
        assert!(!s.is_stopped());
    }
}
