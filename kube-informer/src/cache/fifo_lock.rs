//! What both queues share: their lock, the wake-ups of blocked pops, and the protocol of a batch taken under the lock
//! and processed outside it — whatever must see the store as a batch leaves it (a replace's end, a resync, a late
//! handler's snapshot, the next pop) waits until the batch has been processed.

#[cfg(test)]
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::Closed;
use crate::stop::StopSignal;

/// How often a producer waiting for room ([`FifoLock::wait_for_room`]) checks its stop signal; closing the queue
/// wakes it at once.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// When a push wakes a blocked pop.
///
/// Waking a sleeping thread costs a system call and a context switch on each side, more than processing one delta.
/// A producer that knows more items follow at once (a watch stream with events already decoded) pushes them with
/// `Later` and calls `wake` before it may block, so the consumer wakes once per burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Wake a waiting pop now.
    Now,
    /// Leave it to the next `Now` push or `wake`; the caller must make sure one happens before it blocks or goes
    /// away.
    Later,
}

/// What the lock's protocol reads of a queue's state.
pub(crate) trait LockedState {
    /// One popped item.
    type Popped;
    /// The batch being processed outside the lock.
    fn in_flight(&mut self) -> &mut InFlight<Self::Popped>;
    /// Something is queued.
    fn has_items(&self) -> bool;
    /// Items queued (changes of a RealFIFO, objects of a DeltaFIFO), not counting a batch being processed.
    fn len(&self) -> usize;
    /// The queue's closed flag.
    fn closed(&mut self) -> &mut bool;
    /// The batch in flight has been processed (called under the lock, the batch's state already cleared).
    fn batch_ended(&mut self) {}
}

/// The batch a pop took under the lock and is processing outside it.
pub(crate) struct InFlight<P> {
    /// True from taking a batch until it has been processed. Invariant: `initial` is 0 unless `active`.
    pub(crate) active: bool,
    /// How many of the batch's items belong to the initial list: the queue has not synced until they are processed.
    pub(crate) initial: usize,
    /// The batch's buffer between batches, kept to save an allocation per batch.
    spare: Vec<P>,
}

impl<P> Default for InFlight<P> {
    fn default() -> Self {
        InFlight {
            active: false,
            initial: 0,
            spare: Vec::new(),
        }
    }
}

/// A queue's state behind its lock, with the wake-ups of its blocked pops and the end of its batches.
pub(crate) struct FifoLock<S> {
    state: Mutex<S>,
    /// Signalled when an item is queued (at once, or by [`wake`](FifoLock::wake) after pushes with [`Wake::Later`])
    /// or the queue is closed.
    cond: Condvar,
    /// Items were queued with [`Wake::Later`] and no waiter has been woken for them yet.
    unwoken: AtomicBool,
    /// Signalled when a batch taken by [`pop_batch`](FifoLock::pop_batch) has been processed, and when the queue
    /// is closed.
    batch_done: Condvar,
    /// Threads waiting in `settled` for a batch (tests watch it to know a waiter is blocked, without timing).
    #[cfg(test)]
    settling: AtomicUsize,
    /// Producers waiting in `wait_for_room` (tests watch it the same way).
    #[cfg(test)]
    waiting_for_room: AtomicUsize,
}

impl<S: LockedState> FifoLock<S> {
    pub(crate) fn new(state: S) -> Self {
        FifoLock {
            state: Mutex::new(state),
            cond: Condvar::new(),
            unwoken: AtomicBool::new(false),
            batch_done: Condvar::new(),
            #[cfg(test)]
            settling: AtomicUsize::new(0),
            #[cfg(test)]
            waiting_for_room: AtomicUsize::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, S> {
        self.state.lock()
    }

    /// The lock, once no popped batch is still being processed: the known objects are then exactly what the
    /// popped items left them.
    pub(crate) fn settled(&self) -> MutexGuard<'_, S> {
        let mut st = self.lock();
        while st.in_flight().active {
            #[cfg(test)]
            self.settling.fetch_add(1, Ordering::SeqCst);
            self.batch_done.wait(&mut st);
            #[cfg(test)]
            self.settling.fetch_sub(1, Ordering::SeqCst);
        }
        st
    }

    /// An item was queued (the lock is held).
    pub(crate) fn queued(&self, wake: Wake) {
        match wake {
            // Earlier unwoken items too: every waiter may have something to pop.
            Wake::Now if self.unwoken.swap(false, Ordering::AcqRel) => {
                self.cond.notify_all();
            }
            Wake::Now => {
                self.cond.notify_one();
            }
            Wake::Later => self.unwoken.store(true, Ordering::Release),
        }
    }

    /// Wakes the waiting pops for items queued with [`Wake::Later`], if any.
    pub(crate) fn wake(&self) {
        if self.unwoken.swap(false, Ordering::AcqRel) {
            self.cond.notify_all();
        }
    }

    /// Blocks while more than `room` items are queued: until the processing thread has popped and processed
    /// enough of them, the queue is closed, or `stop` is set (seen within [`STOP_CHECK`]). Whatever was queued with
    /// [`Wake::Later`] is woken for first, so the wait never waits on a pop nobody was told about. The queue's lock
    /// is released while waiting and no other lock is held.
    pub(crate) fn wait_for_room(&self, room: usize, stop: &StopSignal) {
        self.wake();
        let mut st = self.lock();
        while st.len() > room && !*st.closed() && !stop.is_stopped() {
            #[cfg(test)]
            self.waiting_for_room.fetch_add(1, Ordering::SeqCst);
            self.batch_done.wait_for(&mut st, STOP_CHECK);
            #[cfg(test)]
            self.waiting_for_room.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Closes the queue: blocked and future pops return [`Closed`]; a producer waiting for room stops waiting.
    pub(crate) fn close(&self) {
        *self.lock().closed() = true;
        self.cond.notify_all();
        self.batch_done.notify_all();
    }

    /// True once closed.
    #[cfg(test)]
    pub(crate) fn is_closed(&self) -> bool {
        *self.lock().closed()
    }

    /// Blocks until something is queued and no batch is in flight; the lock is held on return.
    pub(crate) fn wait_for_items(&self) -> Result<MutexGuard<'_, S>, Closed> {
        let mut st = self.lock();
        loop {
            if *st.closed() {
                return Err(Closed);
            }
            if st.in_flight().active {
                self.batch_done.wait(&mut st);
                continue;
            }
            if st.has_items() {
                return Ok(st);
            }
            self.cond.wait(&mut st);
        }
    }

    /// Blocks until something is queued, has `take` move a batch into the given (empty) vector under the lock —
    /// it returns how many of the batch's items belong to the initial list —, releases the lock and runs `process`
    /// on the batch. The batch ends when `process` returns or panics: its state is cleared and its waiters woken.
    pub(crate) fn pop_batch<R>(
        &self,
        take: impl FnOnce(&mut S, &mut Vec<S::Popped>) -> usize,
        process: impl FnOnce(std::vec::Drain<'_, S::Popped>) -> R,
    ) -> Result<R, Closed> {
        let mut batch = {
            let mut st = self.wait_for_items()?;
            let mut batch = std::mem::take(&mut st.in_flight().spare);
            let initial = take(&mut st, &mut batch);
            let in_flight = st.in_flight();
            in_flight.initial = initial;
            in_flight.active = true;
            BatchGuard { lock: self, batch }
        };
        Ok(process(batch.batch.drain(..)))
    }

    /// True while items queued with [`Wake::Later`] wait for a [`wake`](FifoLock::wake).
    #[cfg(test)]
    pub(crate) fn has_unwoken(&self) -> bool {
        self.unwoken.load(Ordering::Acquire)
    }

    /// Threads waiting for a batch to end.
    #[cfg(test)]
    pub(crate) fn settling(&self) -> usize {
        self.settling.load(Ordering::SeqCst)
    }

    /// Producers waiting for room.
    #[cfg(test)]
    pub(crate) fn waiting_for_room(&self) -> usize {
        self.waiting_for_room.load(Ordering::SeqCst)
    }
}

/// Ends a batch when dropped, even if `process` panicked.
struct BatchGuard<'a, S: LockedState> {
    lock: &'a FifoLock<S>,
    /// The popped items not yet processed.
    batch: Vec<S::Popped>,
}

impl<S: LockedState> Drop for BatchGuard<'_, S> {
    fn drop(&mut self) {
        // Items left by a panicking `process` are dropped: the queue no longer holds them either.
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let mut st = self.lock.lock();
        let in_flight = st.in_flight();
        in_flight.active = false;
        in_flight.initial = 0;
        in_flight.spare = batch;
        st.batch_ended();
        drop(st);
        self.lock.batch_done.notify_all();
    }
}

#[cfg(test)]
#[path = "fifo_lock_tests.rs"]
mod tests;
