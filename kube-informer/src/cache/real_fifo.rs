//! The RealFIFO: every change the Reflector reports, its own entry, in arrival order (client-go's `RealFIFO`, its
//! informers' queue since Kubernetes 1.33, feature gate `InOrderInformers`).
//!
//! Where the [`DeltaFifo`](super::DeltaFifo) gathers an object's changes at the place in the queue of its first one
//! — so that a change to B made after a change to A reaches handlers first if an older change to A was already
//! waiting —, the RealFIFO keeps one entry per change, and handlers see changes to different objects in the order
//! the server made them. Nothing is coalesced: an object changed ten times while the processing thread was busy is
//! popped ten times, as it is from a DeltaFIFO (whose one entry then holds ten deltas).
//!
//! As client-go's: a deletion is queued whether or not the object is known (the informer ignores one of an object
//! it does not hold); a replace queues `Replaced` for every listed object and `Deleted(FinalStateUnknown)` for every
//! object queued or known that the list lacks (none for one whose newest queued change is already a deletion); a
//! resync queues `Sync` for every known object with nothing queued; `has_synced` once the first replace's items (and
//! everything queued before them) are popped.
//!
//! Differences from client-go, deliberate:
//! * **Streamed replace**, as the DeltaFIFO's: a relist's objects are queued one by one as they are decoded, and the
//!   deletions the list reveals when it ends ([`ReplaceSession::finish`]) — so they come *after* the listed objects,
//!   where client-go queues them before (its `Replace` holds the whole list first). Holding the list to put them
//!   first would double a relist's memory; both orders end in the server's state and give each object its changes
//!   in order.
//! * **Processing outside the lock**, as the DeltaFIFO's [`pop_batch_with`](super::DeltaFifo::pop_batch_with)
//!   (client-go 1.36 does the same behind its `UnlockWhileProcessingFIFO` gate): the informer takes up to a batch of
//!   changes under the lock and applies them to the store after releasing it; a replace's end, a resync and a late
//!   handler's snapshot wait for the batch.
//! * **Batches of any changes.** client-go's `PopBatch` (gate `InOrderInformersBatchProcess`, 1.35) ends a batch
//!   before a second change to an object already in it, because its store transaction reads every object's old
//!   state before applying the batch; the informer here applies a batch's changes one after the other under one
//!   lock of the store, each reading the state the one before left, so a batch takes any changes, in order.
//! * **Known objects required** (client-go panics without them): the constructors take them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
#[cfg(test)]
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::MutexGuard;

use super::delta_fifo::KEEP_CAPACITY;
use super::fifo_lock::{FifoLock, InFlight, LockedState, Wake};
use super::{Closed, DeletedObject, Delta, Key, KeyFunc, KnownObjects, ReplaceSession, SyncHook, object_key_into};
use crate::object::Object;
use crate::stop::StopSignal;

/// The in-order change queue between the Reflector and the informer's processing thread.
pub(crate) struct RealFifo<K> {
    /// The state, the wake-ups of blocked pops, and the batch processed outside the lock.
    state: FifoLock<RealState<K>>,
    /// Batches queued by [`push_all`](RealFifo::push_all) (tests count lock acquisitions with it).
    #[cfg(test)]
    batches_pushed: AtomicUsize,
    known: Arc<dyn KnownObjects<K>>,
    key_fn: KeyFunc<K>,
    /// Called (outside the lock) when a finished replace leaves the queue synced without any pop.
    on_synced: Option<SyncHook>,
}

/// The queue's state; reachable only through the lock.
struct RealState<K> {
    /// Every change not yet popped, oldest first, each with its object's key.
    items: VecDeque<(Key, Delta<K>)>,
    /// True once the first replace has finished, or anything was added, updated or deleted.
    populated: bool,
    /// Changes queued when the first replace finished (its own and those before them) not popped yet. Invariant: 0
    /// unless `populated`.
    initial_population_count: usize,
    /// The batch [`RealFifo::pop_batch_with`] took and is processing outside the lock.
    in_flight: InFlight<Popped<K>>,
    closed: bool,
    /// Scratch buffer for key computation.
    key_buf: String,
}

/// One popped change: key, delta, and whether it belongs to the initial list.
type Popped<K> = (Key, Delta<K>, bool);

impl<K: Object> RealFifo<K> {
    /// A queue keyed by `namespace/name`, detecting deletions against `known` (normally the informer's store).
    pub(crate) fn new(known: Arc<dyn KnownObjects<K>>) -> Self {
        RealFifo::with_key_fn(object_key_into::<K>, known)
    }
}

impl<K> RealFifo<K> {
    /// A queue with a custom key function.
    pub(crate) fn with_key_fn(key_fn: KeyFunc<K>, known: Arc<dyn KnownObjects<K>>) -> Self {
        RealFifo {
            state: FifoLock::new(RealState {
                items: VecDeque::new(),
                populated: false,
                initial_population_count: 0,
                in_flight: InFlight::default(),
                closed: false,
                key_buf: String::new(),
            }),
            #[cfg(test)]
            batches_pushed: AtomicUsize::new(0),
            known,
            key_fn,
            on_synced: None,
        }
    }

    /// Sets a hook called when a finished replace leaves the queue synced with nothing to pop (an empty first list):
    /// no pop will report that sync, so whoever waits for it needs telling.
    #[must_use]
    pub(crate) fn with_sync_hook(mut self, hook: SyncHook) -> Self {
        self.on_synced = Some(hook);
        self
    }

    /// Runs `f` while holding the queue's lock, once no popped batch is being processed (see
    /// [`DeltaFifo::exclusive`](super::DeltaFifo)).
    pub(crate) fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        let _st = self.settled();
        f()
    }

    fn lock(&self) -> MutexGuard<'_, RealState<K>> {
        self.state.lock()
    }

    /// The lock, once no popped batch is still being processed: the known objects are then exactly what the
    /// popped changes left them.
    fn settled(&self) -> MutexGuard<'_, RealState<K>> {
        self.state.settled()
    }

    /// Queues an `Added` change.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn add(&self, obj: Arc<K>) {
        self.push_locked(&mut self.lock(), Delta::Added(obj), Wake::Now);
    }

    /// Queues an `Updated` change.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn update(&self, obj: Arc<K>) {
        self.push_locked(&mut self.lock(), Delta::Updated(obj), Wake::Now);
    }

    /// Queues a `Deleted` change carrying the object's final state, known or not (as client-go's RealFIFO).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn delete(&self, obj: Arc<K>) {
        self.push_locked(&mut self.lock(), Delta::Deleted(DeletedObject::Object(obj)), Wake::Now);
    }

    /// Queues `deltas` in order under one acquisition of the lock and leaves the vector empty (its capacity kept);
    /// see [`DeltaFifo::push_all`](super::DeltaFifo::push_all).
    pub(crate) fn push_all(&self, deltas: &mut Vec<Delta<K>>, wake: Wake) {
        if !deltas.is_empty() {
            #[cfg(test)]
            self.batches_pushed.fetch_add(1, Ordering::Relaxed);
            let mut st = self.lock();
            for delta in deltas.drain(..) {
                self.push_locked(&mut st, delta, Wake::Later);
            }
        }
        if wake == Wake::Now {
            self.wake();
        }
    }

    fn push_locked(&self, st: &mut RealState<K>, delta: Delta<K>, wake: Wake) {
        st.populated = true;
        let key = self.key_of(st, delta.object());
        st.items.push_back((key, delta));
        self.state.queued(wake);
    }

    /// Wakes the waiting pops for changes queued with [`Wake::Later`], if any.
    pub(crate) fn wake(&self) {
        self.state.wake();
    }

    /// How many batches [`push_all`](RealFifo::push_all) queued (each under one lock).
    #[cfg(test)]
    pub(crate) fn batches_pushed(&self) -> usize {
        self.batches_pushed.load(Ordering::Relaxed)
    }

    /// True while changes queued with [`Wake::Later`] wait for a [`wake`](RealFifo::wake).
    #[cfg(test)]
    pub(crate) fn has_unwoken(&self) -> bool {
        self.state.has_unwoken()
    }

    /// Threads waiting for a popped batch to be processed.
    #[cfg(test)]
    pub(crate) fn settling(&self) -> usize {
        self.state.settling()
    }

    /// Producers waiting for room.
    #[cfg(test)]
    pub(crate) fn waiting_for_room(&self) -> usize {
        self.state.waiting_for_room()
    }

    /// Replaces the queue's view of the world with `list` in one go: `Replaced` for each listed object, then a
    /// `Deleted(FinalStateUnknown)` for each object queued or known but absent from the list.
    #[cfg(test)]
    pub(crate) fn replace(&self, list: impl IntoIterator<Item = Arc<K>>) {
        let mut session = self.begin_replace();
        for obj in list {
            session.add(obj);
        }
        session.finish();
    }

    /// Starts a streamed replace: add listed objects one by one as they are decoded, then
    /// [`finish`](ReplaceSession::finish).
    pub(crate) fn begin_replace(&self) -> ReplaceSession<'_, K> {
        let relist = self.lock().populated;
        ReplaceSession::new(self.into(), relist)
    }

    /// `obj`'s key as the store holds it (see [`KnownObjects::known_key_waiting`]); `buf` is scratch.
    pub(super) fn stored_key(&self, obj: &K, buf: &mut String) -> Option<Key> {
        buf.clear();
        (self.key_fn)(obj, buf);
        self.known.known_key_waiting(buf)
    }

    /// Queues a `Replaced` change for one listed object; returns its key and how many changes are queued now.
    pub(super) fn add_replaced(&self, obj: Arc<K>, wake: Wake, stored: Option<Key>) -> (Key, usize) {
        let mut st = self.lock();
        let key = match stored {
            Some(key) => key,
            None => self.key_of(&mut st, &obj),
        };
        st.items.push_back((key.clone(), Delta::Replaced(obj)));
        self.state.queued(wake);
        (key, st.items.len())
    }

    /// Blocks while more than `room` changes are queued (see [`FifoLock::wait_for_room`]).
    pub(super) fn wait_for_room(&self, room: usize, stop: &StopSignal) {
        self.state.wait_for_room(room, stop);
    }

    /// Ends a replace that listed `seen`: a `Deleted(FinalStateUnknown)` for every object the list lacks — first
    /// those with queued changes, in the order first queued, carrying the newest queued state (none when that is
    /// already a deletion), then those only the known objects hold, carrying the known state.
    pub(super) fn finish_replace(&self, seen: &HashSet<Key>) {
        let mut st = self.settled();
        let tombstones: Vec<(Key, Arc<K>)> = {
            // The newest queued change of each object the list lacks, and the order they were first queued in.
            let mut newest: HashMap<&str, &(Key, Delta<K>)> = HashMap::new();
            let mut order = Vec::new();
            for item in &st.items {
                if !seen.contains(&item.0) && newest.insert(&*item.0, item).is_none() {
                    order.push(&*item.0);
                }
            }
            let mut tombstones: Vec<(Key, Arc<K>)> = order
                .iter()
                .map(|key| newest[key])
                .filter(|(_, delta)| !matches!(delta, Delta::Deleted(_)))
                .map(|(key, delta)| (key.clone(), delta.object().clone()))
                .collect();
            tombstones.extend(
                self.known
                    .known_objects_except(&|k| seen.contains(k) || newest.contains_key(k)),
            );
            tombstones
        };
        if !tombstones.is_empty() {
            for (key, last_known) in tombstones {
                let tomb = DeletedObject::FinalStateUnknown {
                    key: key.clone(),
                    last_known,
                };
                st.items.push_back((key, Delta::Deleted(tomb)));
            }
            self.state.queued(Wake::Now);
        }
        // Objects listed with `Wake::Later` (a streamed list) are all queued now.
        self.wake();
        if !st.populated {
            st.populated = true;
            st.initial_population_count = st.items.len();
            let synced_now = st.has_synced();
            drop(st);
            if let (true, Some(hook)) = (synced_now, &self.on_synced) {
                hook();
            }
        }
    }

    /// Queues a `Sync` for every known object that has no change queued (client-go's `Resync`): an object with a
    /// queued change is skipped, since the store still holds its previous state.
    pub(crate) fn resync(&self) {
        let mut st = self.settled();
        let syncs: Vec<(Key, Arc<K>)> = {
            let queued: HashSet<&str> = st.items.iter().map(|(key, _)| &**key).collect();
            self.known
                .known_objects()
                .into_iter()
                .filter(|(key, _)| !queued.contains(&**key))
                .collect()
        };
        if !syncs.is_empty() {
            st.items
                .extend(syncs.into_iter().map(|(key, obj)| (key, Delta::Sync(obj))));
            self.state.queued(Wake::Now);
        }
    }

    /// Blocks until a change is queued (or the queue is closed), removes the oldest, and runs `process` on it
    /// **while the queue is locked**; returns what `process` returns.
    ///
    /// `process` receives the key, the change, and whether it belongs to the initial list (popped before the queue
    /// had synced). Keep it short and non-blocking.
    ///
    /// # Errors
    /// [`Closed`] once [`close`](RealFifo::close) was called; changes still queued are not popped after that.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn pop<R>(&self, process: impl FnOnce(&Key, Delta<K>, bool) -> R) -> Result<R, Closed> {
        let mut st = self.state.wait_for_items()?;
        let (key, delta, is_in_initial_list) = st.pop_one().expect("wait_for_items: the queue is not empty");
        let r = process(&key, delta, is_in_initial_list);
        st.shrink_if_drained();
        Ok(r)
    }

    /// [`pop_batch_with`](RealFifo::pop_batch_with) running `process` on each change in turn; returns how many were
    /// popped.
    ///
    /// # Errors
    /// [`Closed`] when the queue is closed.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn pop_batch(&self, max: usize, mut process: impl FnMut(&Key, Delta<K>, bool)) -> Result<usize, Closed> {
        self.pop_batch_with(max, |items| {
            let n = items.len();
            for (key, delta, is_in_initial_list) in items {
                process(&key, delta, is_in_initial_list);
            }
            n
        })
    }

    /// Pops up to `max` changes at once, `process` running **outside** the lock (unlike the tests' `pop`): blocks
    /// until something is queued, removes up to `max` changes (at least one) in queue order under one hold of the
    /// lock, releases it, and hands `process` the whole batch (so that it can write the store under one lock);
    /// returns what `process` returns.
    ///
    /// Pushes go on meanwhile. Whatever must see the known objects as the batch leaves them — a replace's end, a
    /// resync, another pop — waits until `process` has run on the whole batch, and
    /// [`has_synced`](RealFifo::has_synced) stays false until the batch's initial-list changes are processed.
    /// `process` should therefore write the store (the known objects) and nothing slow.
    ///
    /// # Errors
    /// [`Closed`] when the queue is closed.
    pub(crate) fn pop_batch_with<R>(
        &self,
        max: usize,
        process: impl FnOnce(std::vec::Drain<'_, Popped<K>>) -> R,
    ) -> Result<R, Closed> {
        let take = |st: &mut RealState<K>, batch: &mut Vec<Popped<K>>| {
            let unsynced_before = st.initial_population_count;
            while batch.len() < max.max(1) {
                let Some(popped) = st.pop_one() else { break };
                batch.push(popped);
            }
            st.shrink_if_drained();
            unsynced_before - st.initial_population_count
        };
        self.state.pop_batch(take, process)
    }

    /// Closes the queue: blocked and future pops return [`Closed`].
    pub(crate) fn close(&self) {
        self.state.close();
    }

    /// True once closed.
    #[cfg(test)]
    pub(crate) fn is_closed(&self) -> bool {
        self.state.is_closed()
    }

    /// True once the first replace has finished and all its changes (and those queued before it) were popped and
    /// processed — or once anything was added, updated or deleted before any replace.
    pub(crate) fn has_synced(&self) -> bool {
        self.lock().has_synced()
    }

    /// Number of changes waiting.
    pub(crate) fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// True when nothing waits.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().items.is_empty()
    }

    /// The keys of the waiting changes, in pop order (a key once per change).
    #[cfg(test)]
    pub(crate) fn list_keys(&self) -> Vec<Key> {
        self.lock().items.iter().map(|(key, _)| key.clone()).collect()
    }

    /// The key of `obj`, sharing an existing `Arc` (the newest queued change's, else the store's) rather than
    /// allocating one.
    fn key_of(&self, st: &mut RealState<K>, obj: &K) -> Key {
        st.key_buf.clear();
        (self.key_fn)(obj, &mut st.key_buf);
        if let Some((key, _)) = st.items.back()
            && **key == *st.key_buf
        {
            return key.clone();
        }
        self.known
            .known_key(&st.key_buf)
            .unwrap_or_else(|| Key::from(st.key_buf.as_str()))
    }
}

impl<K> RealState<K> {
    /// Synced: populated, and every change of the first replace popped and processed.
    fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0 && self.in_flight.initial == 0
    }

    /// Takes the oldest change, and whether it belongs to the initial list.
    fn pop_one(&mut self) -> Option<Popped<K>> {
        // `in_flight.initial` is 0 here: pops wait for the previous batch, and a batch counts its own initial
        // changes only once all are taken.
        let is_in_initial_list = !self.has_synced();
        let (key, delta) = self.items.pop_front()?;
        if self.initial_population_count > 0 {
            self.initial_population_count -= 1;
        }
        Some((key, delta, is_in_initial_list))
    }

    fn shrink_if_drained(&mut self) {
        if self.items.is_empty() && self.items.capacity() > KEEP_CAPACITY {
            self.items.shrink_to(KEEP_CAPACITY);
        }
    }
}

impl<K> LockedState for RealState<K> {
    type Popped = Popped<K>;

    fn in_flight(&mut self) -> &mut InFlight<Popped<K>> {
        &mut self.in_flight
    }

    fn has_items(&self) -> bool {
        !self.items.is_empty()
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    fn closed(&mut self) -> &mut bool {
        &mut self.closed
    }
}

impl<K> std::fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("RealFifo")
            .field("queued", &st.items.len())
            .field("populated", &st.populated)
            .field("closed", &st.closed)
            .finish()
    }
}

#[cfg(test)]
#[path = "real_fifo_tests.rs"]
mod tests;
