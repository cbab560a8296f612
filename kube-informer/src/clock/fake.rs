//! `FakeClock`: a clock that tests move by hand (client-go's `testingclock.FakeClock`).

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{Clock, ClockWatcher};

/// A clock that only moves when told to (client-go's `testingclock.FakeClock`).
///
/// Clones share the same time: keep one clone in the test and give another to the queue.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use kube_informer::clock::FakeClock;
/// use kube_informer::workqueue::{DelayingQueue, QueueConfig};
///
/// let clock = FakeClock::new();
/// let queue = DelayingQueue::with_config(QueueConfig::default().clock(clock.clone()));
/// queue.add_after("foo", Duration::from_millis(50));
/// assert_eq!(queue.len(), 0);
/// clock.step(Duration::from_millis(50)); // due keys are queued before `step` returns
/// assert_eq!(queue.len(), 1);
/// ```
#[derive(Clone)]
pub struct FakeClock {
    shared: Arc<FakeShared>,
}

struct FakeShared {
    /// The clock's current time; it only moves forward.
    now: Mutex<Instant>,
    /// Everyone to tell when `now` moves. Dead entries are pruned on each step.
    watchers: Mutex<Vec<Weak<dyn ClockWatcher>>>,
}

impl FakeClock {
    /// A fake clock reading the current real time, frozen.
    pub fn new() -> FakeClock {
        FakeClock::starting_at(Instant::now())
    }

    /// A fake clock frozen at `now`.
    pub fn starting_at(now: Instant) -> FakeClock {
        FakeClock {
            shared: Arc::new(FakeShared {
                now: Mutex::new(now),
                watchers: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The clock's current time (also [`Clock::now`]).
    pub fn now(&self) -> Instant {
        *self.shared.now.lock()
    }

    /// Moves the clock forward by `d`, then tells every watcher (each queue queues the keys that became due and wakes
    /// its waiters) before returning.
    pub fn step(&self, d: Duration) {
        {
            let mut now = self.shared.now.lock();
            *now = now.checked_add(d).unwrap_or(*now);
        }
        self.notify();
    }

    /// Moves the clock to `t` if `t` is later than its current time (the clock never goes back), then tells every
    /// watcher as [`step`](FakeClock::step) does.
    pub fn set(&self, t: Instant) {
        {
            let mut now = self.shared.now.lock();
            if t > *now {
                *now = t;
            }
        }
        self.notify();
    }

    /// How many live watchers (queues, mostly) follow this clock.
    pub fn watchers(&self) -> usize {
        let mut watchers = self.shared.watchers.lock();
        watchers.retain(|w| w.strong_count() > 0);
        watchers.len()
    }

    fn notify(&self) {
        // Collect first: a watcher takes its own lock and reads this clock, so no clock lock may be held here.
        let live: Vec<Arc<dyn ClockWatcher>> = {
            let mut watchers = self.shared.watchers.lock();
            watchers.retain(|w| w.strong_count() > 0);
            watchers.iter().filter_map(Weak::upgrade).collect()
        };
        for watcher in live {
            watcher.clock_moved();
        }
    }
}

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock::new()
    }
}

impl fmt::Debug for FakeClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeClock")
            .field("now", &*self.shared.now.lock())
            .finish_non_exhaustive()
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        FakeClock::now(self)
    }

    fn real_wait(&self, _deadline: Instant) -> Option<Duration> {
        None
    }

    fn watch(&self, watcher: Weak<dyn ClockWatcher>) {
        self.shared.watchers.lock().push(watcher);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counter(AtomicUsize);

    impl ClockWatcher for Counter {
        fn clock_moved(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn fake_clock_moves_only_when_stepped_and_tells_live_watchers() {
        let start = Instant::now();
        let clock = FakeClock::starting_at(start);
        let shared = clock.clone();
        assert_eq!(clock.now(), start);
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let weak: Weak<dyn ClockWatcher> = Arc::downgrade(&counter) as Weak<dyn ClockWatcher>;
        clock.watch(weak);
        assert_eq!(clock.watchers(), 1);

        shared.step(Duration::from_millis(5));
        assert_eq!(clock.now(), start + Duration::from_millis(5));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);

        clock.set(start); // never backwards
        assert_eq!(clock.now(), start + Duration::from_millis(5));
        clock.set(start + Duration::from_secs(1));
        assert_eq!(clock.now(), start + Duration::from_secs(1));
        assert_eq!(counter.0.load(Ordering::SeqCst), 3);

        drop(counter);
        assert_eq!(clock.watchers(), 0);
        clock.step(Duration::from_secs(1)); // a dropped watcher is simply forgotten
        assert_eq!(clock.real_wait(start), None);
    }
}
