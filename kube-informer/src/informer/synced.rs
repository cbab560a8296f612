//! `SyncNotify`: lets `wait_synced` sleep until something that may complete a sync happens.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

/// A generation counter with a condvar: notifiers bump it, waiters re-check their condition on each bump.
#[derive(Debug, Default)]
pub(crate) struct SyncNotify {
    generation: Mutex<u64>,
    cond: Condvar,
    /// Set (before the notify that reports it) once the informer's cache has synced.
    synced: AtomicBool,
}

impl SyncNotify {
    /// Records that the cache synced; call before the `notify` that reports it.
    pub(crate) fn mark_synced(&self) {
        self.synced.store(true, Ordering::SeqCst);
    }

    /// Wakes waiters only once the cache has synced. Handlers finishing their initial adds before that cannot
    /// satisfy anyone (every waiter also needs the sync, whose own notify comes later); during an initial list,
    /// where a handler keeping up drains its queue after every batch, this saves a wake-up of every waiter per
    /// batch.
    ///
    /// A handler that empties its queue reads the flag after its (SeqCst) count reaches zero; the sync sets the
    /// flag before notifying: either the handler sees the flag and notifies, or the sync's notify comes after the
    /// count reached zero, and the waiter sees it.
    pub(crate) fn notify_if_synced(&self) {
        if self.synced.load(Ordering::SeqCst) {
            self.notify();
        }
    }

    /// Wakes every waiter.
    pub(crate) fn notify(&self) {
        *self.generation.lock() += 1;
        self.cond.notify_all();
    }

    /// Waits until `done()` holds (true) or `deadline` passes (false). `done` is re-checked after every notify; it
    /// must not take locks that a notifier holds while notifying.
    pub(crate) fn wait_until(&self, deadline: Instant, mut done: impl FnMut() -> bool) -> bool {
        let mut generation = self.generation.lock();
        loop {
            let seen = *generation;
            // Check without the lock: `done` reads other structures.
            let finished = parking_lot::MutexGuard::unlocked(&mut generation, &mut done);
            if finished {
                return true;
            }
            if *generation != seen {
                continue;
            }
            if self.cond.wait_until(&mut generation, deadline).timed_out() {
                return parking_lot::MutexGuard::unlocked(&mut generation, &mut done);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn notify_if_synced_wakes_nobody_before_the_sync() {
        let n = SyncNotify::default();
        n.notify_if_synced();
        assert_eq!(*n.generation.lock(), 0, "no wake-up before the sync");
        n.mark_synced();
        n.notify_if_synced();
        assert_eq!(*n.generation.lock(), 1);
    }

    #[test]
    fn a_waiter_wakes_when_the_condition_becomes_true() {
        let n = Arc::new(SyncNotify::default());
        let flag = Arc::new(AtomicBool::new(false));
        let (n2, f2) = (n.clone(), flag.clone());
        let waiter = std::thread::spawn(move || {
            n2.wait_until(Instant::now() + Duration::from_secs(60), || f2.load(Ordering::SeqCst))
        });
        flag.store(true, Ordering::SeqCst);
        n.notify();
        assert!(waiter.join().unwrap());
        assert!(!n.wait_until(Instant::now(), || false), "deadline passed");
    }
}
