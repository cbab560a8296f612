//! The DeltaFIFO: a queue of per-object change lists between the Reflector and the informer (client-go's
//! `DeltaFIFO`).
//!
//! The Reflector pushes what the server says (a watch's added, updated and deleted objects through
//! [`push_all`](DeltaFifo::push_all), a relist through [`begin_replace`](DeltaFifo::begin_replace)); the informer's
//! processing thread pops one object's accumulated [`Deltas`] at a time. An object changed many times while it waited
//! is popped once, with every change in order; objects come out in the order they were first queued.
//!
//! Two differences from client-go, both deliberate:
//! * **Streamed replace.** A relist does not hand over one big list: items enter the queue one by one as they are
//!   decoded ([`ReplaceSession::add_waking`]), while the processing thread keeps popping, and deletion detection runs
//!   at [`ReplaceSession::finish`]. The old and new full lists are never held at once, so a relist has no 2× memory
//!   peak. Items popped while a replace is still streaming are in the store by the time `finish` looks at it, so
//!   deletion detection sees them.
//! * **Processing outside the lock, and notification after it.** As in client-go, `DeltaFifo::pop` (kept for the
//!   tests and the fuzz target) runs its closure under the queue's lock, so a concurrent replace or resync never sees
//!   an object that was popped but not yet written to the store. The informer pops with
//!   [`DeltaFifo::pop_batch_with`] instead: it takes up to 64 objects under the lock and writes them to the store
//!   after releasing it, so the Reflector keeps queueing meanwhile instead of sleeping on the lock; a replace, resync
//!   or delete that must see the store as the popped objects leave it waits for the batch (or, for a delete, looks at
//!   what the batch holds). Handlers are called after the pop returns, so a slow handler never holds anything.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
#[cfg(test)]
use std::sync::atomic::Ordering;

use parking_lot::MutexGuard;

use super::fifo_lock::{FifoLock, InFlight, LockedState, Wake};
use super::{DeletedObject, Delta, Deltas, Key, ReplaceSession};
use crate::object::{MetaAccessor, Object};
use crate::stop::StopSignal;

/// What a [`DeltaFifo`] asks of the store behind it: which keys exist, and their objects. Used to detect deletions
/// missed while disconnected (on replace) and to produce resyncs.
pub(crate) trait KnownObjects<K>: Send + Sync {
    /// Every key currently known.
    fn known_keys(&self) -> Vec<Key>;
    /// The object known under `key`.
    fn known_object(&self, key: &str) -> Option<Arc<K>>;
    /// The key as the store holds it, so that a queue can share it instead of allocating its own (optional: `None`
    /// is always correct, and an implementation should answer `None` rather than wait for a lock).
    fn known_key(&self, key: &str) -> Option<Key> {
        let _ = key;
        None
    }
    /// [`known_key`](Self::known_key), waiting for a writer rather than answering `None`: for a relist, whose
    /// every key is known, so that the keys it keeps until its end are the store's, not a copy of each. Called
    /// without the queue's lock held, so the processing thread keeps popping while it waits.
    fn known_key_waiting(&self, key: &str) -> Option<Key> {
        self.known_key(key)
    }
    /// Every known key with its object. The default asks for each key's object in turn; a store can answer in one
    /// pass.
    fn known_objects(&self) -> Vec<(Key, Arc<K>)> {
        self.known_keys()
            .into_iter()
            .filter_map(|k| self.known_object(&k).map(|o| (k, o)))
            .collect()
    }
    /// The known keys `listed` says no to, with their objects: what a relist's end deletes, without a copy of every
    /// key and object at once beside the keys it listed. A store answers in one pass under its lock.
    fn known_objects_except(&self, listed: &dyn Fn(&str) -> bool) -> Vec<(Key, Arc<K>)> {
        let mut all = self.known_objects();
        all.retain(|(k, _)| !listed(k));
        all
    }
}

/// Computes an object's key into a reusable buffer (cleared by the caller).
pub(crate) type KeyFunc<K> = fn(&K, &mut String);

/// The default key function: `namespace/name`, or `name` when there is no namespace.
pub(crate) fn object_key_into<K: Object>(obj: &K, buf: &mut String) {
    let m = obj.meta();
    crate::object::push_key(buf, m.namespace(), m.name().unwrap_or(""));
}

/// The queue was closed: no more items will be popped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Closed;

/// The per-object change queue between the Reflector and the informer's processing thread.
pub(crate) struct DeltaFifo<K> {
    /// The state, the wake-ups of blocked pops, and the batch processed outside the lock.
    state: FifoLock<FifoState<K>>,
    /// Batches queued by [`push_all`](DeltaFifo::push_all) (tests count lock acquisitions with it).
    #[cfg(test)]
    batches_pushed: std::sync::atomic::AtomicUsize,
    known: Option<Arc<dyn KnownObjects<K>>>,
    key_fn: KeyFunc<K>,
    /// Called (outside the lock) when a finished replace leaves the queue synced without any pop.
    on_synced: Option<SyncHook>,
}

/// Called when a replace completes the initial sync with nothing left to pop.
pub(crate) type SyncHook = Arc<dyn Fn() + Send + Sync>;

/// The queue's state; reachable only through the lock.
struct FifoState<K> {
    /// Pending deltas per key.
    /// Invariant: a key is in `items` iff it is in `queue`, exactly once; and its `Deltas` are never empty (the type
    /// guarantees the latter).
    items: HashMap<Key, Deltas<K>>,
    /// Keys in the order they were first queued.
    queue: VecDeque<Key>,
    /// True once the first replace has finished, or anything was added, updated or deleted.
    populated: bool,
    /// Items of the first replace not popped yet. Invariant: 0 unless `populated`.
    initial_population_count: usize,
    /// The batch [`DeltaFifo::pop_batch_with`] took and is processing outside the lock.
    in_flight: InFlight<Popped<K>>,
    /// Each key of the batch in flight, and whether its object exists once processed (its newest delta is not a
    /// deletion). Invariant: empty unless `in_flight.active`.
    batch_keys: Vec<(Key, bool)>,
    closed: bool,
    /// Scratch buffer for key computation (avoids an allocation per event for keys already queued).
    key_buf: String,
}

impl<K: Object> DeltaFifo<K> {
    /// A queue keyed by `namespace/name`, detecting deletions against `known` (normally the informer's store).
    pub(crate) fn new(known: Option<Arc<dyn KnownObjects<K>>>) -> Self {
        DeltaFifo::with_key_fn(object_key_into::<K>, known)
    }
}

impl<K> DeltaFifo<K> {
    /// A queue with a custom key function.
    pub(crate) fn with_key_fn(key_fn: KeyFunc<K>, known: Option<Arc<dyn KnownObjects<K>>>) -> Self {
        DeltaFifo {
            state: FifoLock::new(FifoState {
                items: HashMap::new(),
                queue: VecDeque::new(),
                populated: false,
                initial_population_count: 0,
                in_flight: InFlight::default(),
                batch_keys: Vec::new(),
                closed: false,
                key_buf: String::new(),
            }),
            #[cfg(test)]
            batches_pushed: std::sync::atomic::AtomicUsize::new(0),
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

    /// Runs `f` while holding the queue's lock, once no popped batch is being processed: no replace, resync or
    /// pop-processing runs meanwhile. The informer uses this to take a consistent snapshot of its store when a
    /// handler joins late.
    pub(crate) fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        let _st = self.settled();
        f()
    }

    fn lock(&self) -> MutexGuard<'_, FifoState<K>> {
        self.state.lock()
    }

    /// The lock, once no popped batch is still being processed: the known objects are then exactly what the
    /// popped items left them.
    fn settled(&self) -> MutexGuard<'_, FifoState<K>> {
        self.state.settled()
    }

    /// Queues an `Added` delta.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn add(&self, obj: Arc<K>) {
        self.push_locked(&mut self.lock(), Delta::Added(obj), Wake::Now);
    }

    /// Queues an `Updated` delta.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn update(&self, obj: Arc<K>) {
        self.push_locked(&mut self.lock(), Delta::Updated(obj), Wake::Now);
    }

    /// Queues a `Deleted` delta carrying the object's final state — unless neither the queue nor the known objects
    /// have the key: then a relist already reported this deletion, and it is not reported twice.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn delete(&self, obj: Arc<K>) {
        self.push_locked(&mut self.lock(), Delta::Deleted(DeletedObject::Object(obj)), Wake::Now);
    }

    /// Queues `deltas` in order, as pushing them one by one would (the tests' `add`, `update` and `delete`), under
    /// one acquisition of the lock; leaves the vector empty (its capacity kept for the next batch). `wake` applies to
    /// the batch as a whole: [`Wake::Now`] wakes the waiting pops for everything queued with [`Wake::Later`] so far,
    /// also when this batch is empty.
    ///
    /// A watching reflector queues the events it has already decoded this way: one lock per burst instead of one per
    /// event, so the processing thread, popping meanwhile, rarely finds the queue locked and sleeps until it is
    /// released (which costs the releasing thread a system call to wake it).
    pub(crate) fn push_all(&self, deltas: &mut Vec<Delta<K>>, wake: Wake) {
        if !deltas.is_empty() {
            #[cfg(test)]
            self.batches_pushed.fetch_add(1, Ordering::Relaxed);
            let mut st = self.lock();
            for delta in deltas.drain(..) {
                self.push_locked(&mut st, delta, Wake::Later);
            }
        }
        // Not the last push's `wake`: that push may be a deletion already reported, which queues nothing.
        if wake == Wake::Now {
            self.wake();
        }
    }

    /// Queues one delta under the lock. A deletion is dropped when neither the queue nor the known objects have the
    /// key: a relist already reported it.
    fn push_locked(&self, st: &mut FifoState<K>, delta: Delta<K>, wake: Wake) {
        st.populated = true;
        let key = self.key_of(st, delta.object());
        if let Delta::Deleted(_) = delta {
            let present = st.items.contains_key(&key)
                || match st.batch_keys.iter().find(|(k, _)| *k == key) {
                    // Popped and being written to the store: present unless that batch deletes it.
                    Some(&(_, exists)) => exists,
                    None => self.known.as_ref().is_some_and(|k| k.known_object(&key).is_some()),
                };
            if !present {
                return;
            }
        }
        self.queue_action(st, key, delta, wake);
    }

    /// Wakes the waiting pops for items queued with [`Wake::Later`], if any.
    pub(crate) fn wake(&self) {
        self.state.wake();
    }

    /// How many batches [`push_all`](DeltaFifo::push_all) queued (each under one lock).
    #[cfg(test)]
    pub(crate) fn batches_pushed(&self) -> usize {
        self.batches_pushed.load(Ordering::Relaxed)
    }

    /// True while items queued with [`Wake::Later`] wait for a [`wake`](DeltaFifo::wake).
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

    /// Replaces the queue's view of the world with `list` in one go: `Replaced` for each listed object, and a
    /// `Deleted(FinalStateUnknown)` for each key queued or known but absent from the list.
    #[cfg(test)]
    pub(crate) fn replace(&self, list: impl IntoIterator<Item = Arc<K>>) {
        let mut session = self.begin_replace();
        for obj in list {
            session.add(obj);
        }
        session.finish();
    }

    /// Starts a streamed replace: add listed objects one by one as they are decoded, then
    /// [`finish`](ReplaceSession::finish). A session dropped without `finish` (a list that failed half way) leaves its items
    /// queued as `Replaced` — they are real server states — and detects no deletions.
    pub(crate) fn begin_replace(&self) -> ReplaceSession<'_, K> {
        let relist = self.lock().populated;
        ReplaceSession::new(self.into(), relist)
    }

    /// `obj`'s key as the store holds it (see [`KnownObjects::known_key_waiting`]); `buf` is scratch.
    pub(super) fn stored_key(&self, obj: &K, buf: &mut String) -> Option<Key> {
        let known = self.known.as_ref()?;
        buf.clear();
        (self.key_fn)(obj, buf);
        known.known_key_waiting(buf)
    }

    /// Queues a `Sync` delta for every known object that has nothing queued (client-go's `Resync`): objects with a
    /// pending change are skipped, since the store still holds their previous state.
    pub(crate) fn resync(&self) {
        let Some(known) = &self.known else { return };
        let mut st = self.settled();
        for (key, obj) in known.known_objects() {
            if !st.items.contains_key(&key) {
                self.queue_action(&mut st, key, Delta::Sync(obj), Wake::Now);
            }
        }
    }

    /// Blocks until an object's deltas are queued (or the queue is closed), removes them, and runs `process` on them
    /// **while the queue is locked**; returns what `process` returns.
    ///
    /// `process` receives the key, the deltas (oldest first), and whether they belong to the initial list (popped
    /// before the queue had synced). Keep it short and non-blocking — update a store, collect notifications — and
    /// act on the result after `pop` returns.
    ///
    /// # Errors
    /// [`Closed`] once [`close`](DeltaFifo::close) was called; items still queued are not popped after that, as in
    /// client-go.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn pop<R>(&self, process: impl FnOnce(&Key, Deltas<K>, bool) -> R) -> Result<R, Closed> {
        self.pop_or_requeue(|key, deltas, initial| Ok::<R, (Deltas<K>, R)>(process(key, deltas, initial)))
    }

    /// Like [`pop`](DeltaFifo::pop), but `process` may hand the deltas back with `Err((deltas, r))`: they are queued
    /// again at the back (client-go's `ErrRequeue`), and `r` is returned.
    ///
    /// # Errors
    /// [`Closed`] when the queue is closed.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn pop_or_requeue<R>(
        &self,
        process: impl FnOnce(&Key, Deltas<K>, bool) -> Result<R, (Deltas<K>, R)>,
    ) -> Result<R, Closed> {
        let mut st = self.state.wait_for_items()?;
        let (key, deltas, is_in_initial_list) = st.pop_one().expect("wait_for_items: the queue is not empty");
        match process(&key, deltas, is_in_initial_list) {
            Ok(r) => {
                st.shrink_if_drained();
                Ok(r)
            }
            Err((deltas, r)) => {
                // Nothing else could have queued this key: the lock was held throughout.
                st.items.insert(key.clone(), deltas);
                st.queue.push_back(key);
                Ok(r)
            }
        }
    }

    /// [`pop_batch_with`](DeltaFifo::pop_batch_with) running `process` on each object in turn; returns how many were
    /// popped.
    ///
    /// # Errors
    /// [`Closed`] when the queue is closed.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn pop_batch(
        &self,
        max: usize,
        mut process: impl FnMut(&Key, Deltas<K>, bool),
    ) -> Result<usize, Closed> {
        self.pop_batch_with(max, |items| {
            let n = items.len();
            for (key, deltas, is_in_initial_list) in items {
                process(&key, deltas, is_in_initial_list);
            }
            n
        })
    }

    /// Pops up to `max` objects at once, `process` running **outside** the lock (unlike the tests' `pop`): blocks
    /// until something is queued, removes the deltas of up to `max` objects (at least one) in queue order under one
    /// hold of the lock, releases it, and hands `process` the whole batch (so that it can write the store under one
    /// lock): the batch's items, in queue order, as (key, deltas, initial list); returns what `process` returns.
    ///
    /// Pushes go on meanwhile. Whatever must see the known objects as the batch leaves them — a replace's deletion
    /// detection, a resync, another pop — waits until `process` has run on the whole batch; a delete of an object in
    /// the batch is judged by the batch, and [`has_synced`](DeltaFifo::has_synced) stays false until the batch's
    /// initial-list items are processed. `process` should therefore write the store (the known objects) and nothing
    /// slow.
    ///
    /// # Errors
    /// [`Closed`] when the queue is closed.
    pub(crate) fn pop_batch_with<R>(
        &self,
        max: usize,
        process: impl FnOnce(std::vec::Drain<'_, Popped<K>>) -> R,
    ) -> Result<R, Closed> {
        let take = |st: &mut FifoState<K>, batch: &mut Vec<Popped<K>>| {
            let unsynced_before = st.initial_population_count;
            while batch.len() < max.max(1) {
                let Some((key, deltas, is_in_initial_list)) = st.pop_one() else {
                    break;
                };
                let exists = !matches!(deltas.newest(), Delta::Deleted(_));
                st.batch_keys.push((key.clone(), exists));
                batch.push((key, deltas, is_in_initial_list));
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

    /// True once the first replace has finished and all its items were popped (or anything was added, updated or
    /// deleted before any replace).
    pub(crate) fn has_synced(&self) -> bool {
        self.lock().has_synced()
    }

    /// Number of keys waiting.
    pub(crate) fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// True when nothing waits.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().queue.is_empty()
    }

    /// The waiting keys, in pop order.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn list_keys(&self) -> Vec<Key> {
        self.lock().queue.iter().cloned().collect()
    }

    /// The deltas waiting for `key`.
    #[cfg(test)]
    pub(crate) fn get(&self, key: &str) -> Option<Deltas<K>> {
        self.lock().items.get(key).cloned()
    }

    /// Appends `delta` to `key`'s deltas, queueing the key if new. A `Sync` for an object whose newest delta is a
    /// deletion is dropped: it would resurrect the object.
    fn queue_action(&self, st: &mut FifoState<K>, key: Key, delta: Delta<K>, wake: Wake) {
        if let Some(deltas) = st.items.get_mut(&key) {
            if matches!(delta, Delta::Sync(_)) && matches!(deltas.newest(), Delta::Deleted(_)) {
                return;
            }
            deltas.push(delta);
        } else {
            st.items.insert(key.clone(), Deltas::new(delta));
            st.queue.push_back(key);
        }
        self.state.queued(wake);
    }

    /// The key of `obj`, sharing an existing `Arc` (the queue's, else the store's) rather than allocating one.
    fn key_of(&self, st: &mut FifoState<K>, obj: &K) -> Key {
        st.key_buf.clear();
        (self.key_fn)(obj, &mut st.key_buf);
        if let Some((k, _)) = st.items.get_key_value(st.key_buf.as_str()) {
            return k.clone();
        }
        self.known
            .as_ref()
            .and_then(|known| known.known_key(&st.key_buf))
            .unwrap_or_else(|| Key::from(st.key_buf.as_str()))
    }
}

/// Capacity (in objects) a drained queue keeps; a queue that grew past it during a burst (a list outpacing the
/// processing thread) gives the rest back once empty, instead of holding its peak size for the informer's life.
pub(super) const KEEP_CAPACITY: usize = 1024;

impl<K> FifoState<K> {
    /// Synced: populated, and every item of the first replace popped and processed.
    fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0 && self.in_flight.initial == 0
    }

    /// Takes the first queued key and its deltas, and whether they belong to the initial list.
    fn pop_one(&mut self) -> Option<(Key, Deltas<K>, bool)> {
        // `in_flight.initial` is 0 here: pops wait for the previous batch, and a batch counts its own initial items
        // only once all are taken.
        let is_in_initial_list = !self.has_synced();
        let key = self.queue.pop_front()?;
        if self.initial_population_count > 0 {
            self.initial_population_count -= 1;
        }
        let deltas = self.items.remove(&key).expect("invariant: a queued key has deltas");
        Some((key, deltas, is_in_initial_list))
    }

    fn shrink_if_drained(&mut self) {
        if self.queue.is_empty() && self.items.capacity() > KEEP_CAPACITY {
            self.items.shrink_to(KEEP_CAPACITY);
            self.queue.shrink_to(KEEP_CAPACITY);
        }
    }
}

/// One popped item: key, deltas, and whether it belongs to the initial list.
type Popped<K> = (Key, Deltas<K>, bool);

impl<K> LockedState for FifoState<K> {
    type Popped = Popped<K>;

    fn in_flight(&mut self) -> &mut InFlight<Popped<K>> {
        &mut self.in_flight
    }

    fn has_items(&self) -> bool {
        !self.queue.is_empty()
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn closed(&mut self) -> &mut bool {
        &mut self.closed
    }

    fn batch_ended(&mut self) {
        self.batch_keys.clear();
    }
}

/// The two halves of a [`ReplaceSession`] on this queue.
impl<K> DeltaFifo<K> {
    /// Queues a `Replaced` delta for one listed object; returns its key and how many objects are queued now.
    pub(super) fn add_replaced(&self, obj: Arc<K>, wake: Wake, stored: Option<Key>) -> (Key, usize) {
        let mut st = self.lock();
        let key = match stored {
            Some(key) => key,
            None => self.key_of(&mut st, &obj),
        };
        self.queue_action(&mut st, key.clone(), Delta::Replaced(obj), wake);
        (key, st.queue.len())
    }

    /// Blocks while more than `room` objects are queued (see [`FifoLock::wait_for_room`]).
    pub(super) fn wait_for_room(&self, room: usize, stop: &StopSignal) {
        self.state.wait_for_room(room, stop);
    }

    /// Ends a replace that listed `seen`: every key queued or known but not listed gets a
    /// `Deleted(FinalStateUnknown)` carrying its last known state (the newest queued one, else the store's). The
    /// first finished replace marks the queue populated; it has synced once everything queued so far is popped.
    pub(super) fn finish_replace(&self, seen: &HashSet<Key>) {
        let mut st = self.settled();
        // Deletions of objects still in the queue.
        let queued_missing: Vec<Key> = st.items.keys().filter(|k| !seen.contains(*k)).cloned().collect();
        for key in queued_missing {
            let last_known = st.items[&key].newest().object().clone();
            let tomb = DeletedObject::FinalStateUnknown {
                key: key.clone(),
                last_known,
            };
            self.queue_action(&mut st, key, Delta::Deleted(tomb), Wake::Now);
        }
        // Deletions of objects only the store knows.
        if let Some(known) = &self.known {
            let missing = known.known_objects_except(&|k| seen.contains(k) || st.items.contains_key(k));
            for (key, last_known) in missing {
                let tomb = DeletedObject::FinalStateUnknown {
                    key: key.clone(),
                    last_known,
                };
                self.queue_action(&mut st, key, Delta::Deleted(tomb), Wake::Now);
            }
        }
        // Items listed with `Wake::Later` (a streamed list) are all queued now.
        self.wake();
        if !st.populated {
            st.populated = true;
            st.initial_population_count = st.queue.len();
            let synced_now = st.has_synced();
            drop(st);
            if let (true, Some(hook)) = (synced_now, &self.on_synced) {
                hook();
            }
        }
    }
}

impl<K> std::fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("DeltaFifo")
            .field("queued", &st.queue.len())
            .field("populated", &st.populated)
            .field("closed", &st.closed)
            .finish()
    }
}

#[cfg(test)]
#[path = "delta_fifo_tests.rs"]
mod tests;
