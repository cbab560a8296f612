//! A relist streamed into a queue, object by object (the streamed form of client-go's `Queue.Replace`).

use std::collections::HashSet;
use std::sync::Arc;

use super::{DeltaFifo, Key, RealFifo, Wake};
use crate::stop::StopSignal;

/// A replace in progress; see [`DeltaFifo::begin_replace`] and [`RealFifo::begin_replace`].
///
/// Listed objects are queued as `Replaced` one by one, as they are decoded, while the processing thread keeps
/// popping; [`finish`](ReplaceSession::finish) then queues a `Deleted(FinalStateUnknown)` for every object the list
/// lacks. The old and the new full lists are never held at once.
///
/// In a relist every object queued is a second version beside the one the store still holds, alive until the
/// processing thread has applied it. A session [`bounded`](ReplaceSession::bounded) to `ahead` items waits, once the
/// queue holds more than that, until the processing thread has brought it down to half — so a relist holds at most
/// `ahead` + 1 queued items and one popped batch beside the cache, however far behind the processing thread is.
pub(crate) struct ReplaceSession<'a, K> {
    queue: Target<'a, K>,
    /// Keys listed so far in this list attempt. In a relist, the store's own keys wherever it has the object: held
    /// here until the end, a copy of each would cost a relist ~50 bytes an object more than the cache holds.
    seen: HashSet<Key>,
    /// True when the queue was populated before (a relist, its objects in the store): each listed object's key is
    /// looked up in the store before the queue's lock is taken, waiting for the processing thread's write if need
    /// be. The first list finds nothing there and skips the lookup.
    relist: bool,
    /// Scratch for computing keys.
    key_buf: String,
    /// In a relist, the most items the queue may hold before an add waits for room, and the signal that ends the
    /// wait; `None`: never waits (the first list, whose objects are no second copy of anything; tests and fuzz
    /// targets that pop nothing while they list).
    bound: Option<(usize, Arc<StopSignal>)>,
}

/// The queue a session lists into.
pub(super) enum Target<'a, K> {
    Delta(&'a DeltaFifo<K>),
    Real(&'a RealFifo<K>),
}

impl<'a, K> From<&'a DeltaFifo<K>> for Target<'a, K> {
    fn from(f: &'a DeltaFifo<K>) -> Self {
        Target::Delta(f)
    }
}

impl<'a, K> From<&'a RealFifo<K>> for Target<'a, K> {
    fn from(f: &'a RealFifo<K>) -> Self {
        Target::Real(f)
    }
}

impl<'a, K> ReplaceSession<'a, K> {
    pub(super) fn new(queue: Target<'a, K>, relist: bool) -> Self {
        ReplaceSession {
            queue,
            seen: HashSet::new(),
            relist,
            key_buf: String::new(),
            bound: None,
        }
    }

    /// Makes a relist's adds wait while the queue holds more than `ahead` items (at least 2), until it holds half
    /// of that or fewer, the queue is closed or `stop` is set. The wait holds no lock: the processing thread,
    /// handlers and listers go on. A first list never waits.
    pub(crate) fn bounded(mut self, ahead: usize, stop: Arc<StopSignal>) -> Self {
        self.bound = Some((ahead.max(2), stop));
        self
    }

    /// Queues a `Replaced` delta for one listed object.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn add(&mut self, obj: Arc<K>) {
        self.add_waking(obj, Wake::Now);
    }

    pub(crate) fn add_waking(&mut self, obj: Arc<K>, wake: Wake) {
        let (key, queued) = match self.queue {
            Target::Delta(f) => {
                let stored = self.relist.then(|| f.stored_key(&obj, &mut self.key_buf)).flatten();
                f.add_replaced(obj, wake, stored)
            }
            Target::Real(f) => {
                let stored = self.relist.then(|| f.stored_key(&obj, &mut self.key_buf)).flatten();
                f.add_replaced(obj, wake, stored)
            }
        };
        self.seen.insert(key);
        if let (true, Some((ahead, stop))) = (self.relist, &self.bound)
            && queued > *ahead
            && !stop.is_stopped()
        {
            match self.queue {
                Target::Delta(f) => f.wait_for_room(ahead / 2, stop),
                Target::Real(f) => f.wait_for_room(ahead / 2, stop),
            }
        }
    }

    /// Forgets the keys listed so far: the list starts over (an expired continue token forces a full list). Items
    /// already queued stay; any the new list lacks get a deletion at `finish`.
    pub(crate) fn restart(&mut self) {
        self.seen.clear();
    }

    /// Number of objects listed in this attempt.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.seen.len()
    }

    /// Ends the replace: every object queued or known but not listed gets a `Deleted(FinalStateUnknown)` carrying
    /// its last known state (the newest queued one, else the store's). The first finished replace marks the queue
    /// populated; it has synced once everything queued so far is popped.
    ///
    /// A session dropped without `finish` (a list that failed half way) leaves its items queued as `Replaced` —
    /// they are real server states — and detects no deletions.
    pub(crate) fn finish(self) {
        match self.queue {
            Target::Delta(f) => f.finish_replace(&self.seen),
            Target::Real(f) => f.finish_replace(&self.seen),
        }
    }
}
