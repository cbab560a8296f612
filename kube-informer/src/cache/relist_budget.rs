//! `RelistBudget`: a limit on concurrent lists shared by several reflectors (herd control).
//!
//! When an API server restarts or compacts, every informer of a process gets 410 or loses its watch at the same
//! moment; relisting all of them at once is the thundering herd that takes API servers down. Informers sharing a
//! budget (all informers of one factory do) list at most `limit` at a time; the rest wait their turn, on top of the
//! jitter the reflector adds before a relist.

use std::fmt;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::stop::StopSignal;

/// How often a waiter re-checks its stop signal.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// A counting semaphore for lists.
///
/// ```
/// use kube_informer::cache::RelistBudget;
///
/// let budget = RelistBudget::new(2);
/// assert_eq!((budget.limit(), budget.in_use()), (2, 0));
/// ```
pub struct RelistBudget {
    limit: usize,
    /// Lists running now. Invariant: `<= limit`.
    in_use: Mutex<usize>,
    cond: Condvar,
}

impl RelistBudget {
    /// A budget of `limit` concurrent lists (at least 1).
    pub fn new(limit: usize) -> std::sync::Arc<Self> {
        std::sync::Arc::new(RelistBudget {
            limit: limit.max(1),
            in_use: Mutex::new(0),
            cond: Condvar::new(),
        })
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Lists running now.
    pub fn in_use(&self) -> usize {
        *self.in_use.lock()
    }

    /// Waits for a slot; `None` when `stop` is set first.
    pub(crate) fn acquire(&self, stop: &StopSignal) -> Option<Permit<'_>> {
        let mut in_use = self.in_use.lock();
        while *in_use >= self.limit {
            if stop.is_stopped() {
                return None;
            }
            self.cond.wait_for(&mut in_use, STOP_CHECK);
        }
        *in_use += 1;
        Some(Permit { budget: self })
    }
}

impl fmt::Debug for RelistBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelistBudget")
            .field("limit", &self.limit)
            .field("in_use", &self.in_use())
            .finish()
    }
}

/// One slot of a [`RelistBudget`], given back on drop.
pub(crate) struct Permit<'a> {
    budget: &'a RelistBudget,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.budget.in_use.lock() -= 1;
        self.budget.cond.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn admits_up_to_the_limit_and_hands_slots_on() {
        let budget = RelistBudget::new(2);
        let stop = Arc::new(StopSignal::new());
        let a = budget.acquire(&stop).unwrap();
        let _b = budget.acquire(&stop).unwrap();
        assert_eq!(budget.in_use(), 2);
        let (b2, s2) = (budget.clone(), stop.clone());
        let waiter = std::thread::spawn(move || b2.acquire(&s2).map(|_| ()).is_some());
        drop(a);
        assert!(waiter.join().unwrap(), "the freed slot went to the waiter");
    }

    #[test]
    fn a_waiter_gives_up_on_stop() {
        let budget = RelistBudget::new(1);
        let stop = Arc::new(StopSignal::new());
        let _held = budget.acquire(&stop).unwrap();
        let (b2, s2) = (budget.clone(), stop.clone());
        let waiter = std::thread::spawn(move || b2.acquire(&s2).is_none());
        stop.stop();
        assert!(waiter.join().unwrap());
        assert_eq!(budget.in_use(), 1);
    }
}
