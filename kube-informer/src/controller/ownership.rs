//! `Ownership`: which slots of a sharded controller this replica owns, which keys its workers may take, and the
//! shard its informers follow.
//!
//! The rules that keep a key from being reconciled by two replicas at once:
//! * a worker reconciles a key only when its object's slot is `Owned` here and the slot's Lease term is not over,
//!   and counts itself in that slot while it runs ([`SlotGuard`]); it writes through a client fenced by that term;
//! * a slot given up for balance is first `Draining` — no new key of it is taken — and its Lease is released only
//!   once its count is back to 0 ([`Ownership::is_drained`]);
//! * the informers' shard widens only after a slot became `Owned`, and narrows only after it stopped being: so a
//!   change of the cache never hands a worker a key of a slot that is not owned.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use super::context::Fenced;
use super::options::QueueKey;
use crate::cache::{ShardCell, ShardScope};
use crate::object::{MetaAccessor, split_key};
use crate::selector::{ShardField, ShardSelector};

/// One slot as this replica holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    /// Not held here.
    Unowned,
    /// Held: its keys are reconciled here.
    Owned,
    /// Held, being given up: no new key is taken; released once no reconcile of it runs.
    Draining,
}

/// The slots of a sharded controller and who may work on them here (see the module).
pub(crate) struct Ownership {
    slots: u32,
    field: ShardField,
    /// The shard the controller's informers follow: the union of the slots `Owned` or `Draining`.
    cell: Arc<ShardCell>,
    state: Mutex<State>,
    /// The version (`State::version`) of the scope `cell` was last set to: a scope computed before it is not set
    /// over it (see [`Ownership::set`]). Invariant: at most `State::version`.
    published: Mutex<u64>,
    /// Test hook: run once, between a change of a slot's state and the setting of the scope it made.
    #[cfg(test)]
    before_publish: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

struct State {
    /// Indexed by slot. Invariant: `slots.len() == Ownership::slots`.
    slots: Vec<SlotState>,
    /// Reconciles running, per slot. Invariant: non-zero only for a slot `Owned` or `Draining` (or one lost while
    /// they ran: a lost slot cannot wait).
    running: Vec<u32>,
    /// Per slot: the Lease term it is held in and the client fenced by it (`None` for a slot not held, or held
    /// without a term — in tests). Invariant: `None` for a slot `Unowned`.
    fenced: Vec<Option<Fenced>>,
    /// Deleted objects of owned slots whose keys still need a reconcile (the cache no longer tells their slot).
    /// Invariant: every slot here is owned; a slot's entries go when it is given up.
    tombstones: HashMap<QueueKey, u32>,
    /// Keys skipped because their slot was not owned.
    skipped: u64,
    /// Bumped by every change of a slot's state that [`Ownership::set`] makes: the version of the scope it computes.
    version: u64,
}

impl Ownership {
    pub(crate) fn new(slots: u32, field: ShardField) -> Arc<Ownership> {
        let n = usize::try_from(slots).unwrap_or(usize::MAX);
        Arc::new(Ownership {
            slots,
            field,
            cell: ShardCell::new(ShardScope::Nothing),
            state: Mutex::new(State {
                slots: vec![SlotState::Unowned; n],
                running: vec![0; n],
                fenced: vec![None; n],
                tombstones: HashMap::new(),
                skipped: 0,
                version: 0,
            }),
            published: Mutex::new(0),
            #[cfg(test)]
            before_publish: Mutex::new(None),
        })
    }

    /// The shard the informers follow.
    pub(crate) fn cell(&self) -> &Arc<ShardCell> {
        &self.cell
    }

    /// The slot of an object with this metadata.
    pub(crate) fn slot_of(&self, meta: &(impl MetaAccessor + ?Sized)) -> u32 {
        self.slot_of_value(self.field.value(meta))
    }

    fn slot_of_value(&self, value: &str) -> u32 {
        ShardSelector::slot_of(ShardSelector::hash(value), self.slots).unwrap_or(0)
    }

    /// The slot a key belongs to when the key alone tells (sharding by namespace).
    fn slot_of_key(&self, key: &str) -> Option<u32> {
        (self.field == ShardField::Namespace).then(|| self.slot_of_value(split_key(key).0.unwrap_or("")))
    }

    /// The slot became this replica's (its Lease is held, in the term `fenced` names): its keys are taken from now
    /// on, written through `fenced`'s client, then the informers widen to its objects.
    pub(crate) fn acquired(&self, slot: u32, fenced: Option<Fenced>) {
        if let Some(f) = self.state.lock().fenced.get_mut(index(slot)) {
            *f = fenced;
        }
        self.set(slot, SlotState::Owned);
    }

    /// The slot stopped being this replica's (released, or its Lease lost): its keys are no longer taken, then the
    /// informers narrow.
    pub(crate) fn lost(&self, slot: u32) {
        self.set(slot, SlotState::Unowned);
    }

    /// Starts giving the slot up: no new key of it is taken. Returns false when it is not `Owned`.
    pub(crate) fn drain(&self, slot: u32) -> bool {
        let mut state = self.state.lock();
        match state.slots.get_mut(index(slot)) {
            Some(s @ SlotState::Owned) => {
                *s = SlotState::Draining;
                true
            }
            _ => false,
        }
    }

    /// True when no reconcile of the slot runs (a draining slot may then be released).
    pub(crate) fn is_drained(&self, slot: u32) -> bool {
        self.state.lock().running.get(index(slot)).is_none_or(|n| *n == 0)
    }

    /// The slots `Owned` (not draining), sorted.
    pub(crate) fn owned(&self) -> Vec<u32> {
        self.with_state(SlotState::Owned)
    }

    /// The slots `Draining`, sorted.
    pub(crate) fn draining(&self) -> Vec<u32> {
        self.with_state(SlotState::Draining)
    }

    fn with_state(&self, wanted: SlotState) -> Vec<u32> {
        let state = self.state.lock();
        (0..self.slots).filter(|s| state.slots[index(*s)] == wanted).collect()
    }

    /// Keys skipped because their slot was not owned.
    pub(crate) fn skipped(&self) -> u64 {
        self.state.lock().skipped
    }

    /// Counts `objects` per owned (or draining) slot.
    pub(crate) fn objects_per_slot<'a, M: MetaAccessor + ?Sized + 'a>(
        &self,
        objects: impl IntoIterator<Item = &'a M>,
    ) -> BTreeMap<u32, usize> {
        let mut counts: BTreeMap<u32, usize> = self
            .owned()
            .into_iter()
            .chain(self.draining())
            .map(|s| (s, 0))
            .collect();
        for meta in objects {
            if let Some(n) = counts.get_mut(&self.slot_of(meta)) {
                *n += 1;
            }
        }
        counts
    }

    /// A worker may reconcile `key` — whose object the cache holds as `meta`, or not at all — when its slot is
    /// owned: the guard counts the reconcile in that slot until dropped. `None`: not this replica's key (counted).
    /// A key whose object is gone is reconciled only when its deletion was seen in an owned slot
    /// ([`deleted`](Self::deleted)), or when the key tells its slot.
    pub(crate) fn admit(self: &Arc<Self>, key: &str, meta: Option<&dyn MetaAccessor>) -> Option<SlotGuard> {
        let by_key = self.slot_of_key(key);
        let mut state = self.state.lock();
        let slot = match meta {
            Some(meta) => Some(self.slot_of(meta)),
            None => by_key.or_else(|| state.tombstones.get(key).copied()),
        };
        match slot {
            Some(slot)
                if state.slots[index(slot)] == SlotState::Owned
                    && state.fenced[index(slot)].as_ref().is_none_or(|f| !f.term.is_over()) =>
            {
                state.running[index(slot)] += 1;
                Some(SlotGuard {
                    ownership: self.clone(),
                    slot,
                    fenced: state.fenced[index(slot)].clone(),
                })
            }
            _ => {
                state.skipped += 1;
                None
            }
        }
    }

    /// An object of the primary informer was deleted: when its slot is owned, its key will be reconciled here
    /// though the cache no longer holds it.
    pub(crate) fn deleted(&self, key: &str, meta: &dyn MetaAccessor) {
        if self.field == ShardField::Namespace {
            return; // the key tells its slot
        }
        let slot = self.slot_of(meta);
        let mut state = self.state.lock();
        if state.slots[index(slot)] == SlotState::Owned {
            state.tombstones.insert(key.into(), slot);
        }
    }

    /// A reconcile of `key` succeeded: a deleted object's key is done.
    pub(crate) fn reconciled(&self, key: &str) {
        let mut state = self.state.lock();
        if !state.tombstones.is_empty() {
            state.tombstones.remove(key);
        }
    }

    fn set(&self, slot: u32, to: SlotState) {
        let (version, scope) = {
            let mut state = self.state.lock();
            let Some(s) = state.slots.get_mut(index(slot)) else {
                return;
            };
            if *s == to {
                return;
            }
            *s = to;
            if to == SlotState::Unowned {
                state.tombstones.retain(|_, s| *s != slot);
                state.fenced[index(slot)] = None;
            }
            state.version += 1;
            let held = (0..self.slots).filter(|s| state.slots[index(*s)] != SlotState::Unowned);
            let scope = match ShardSelector::slots(self.field, self.slots, held) {
                Ok(selector) => ShardScope::Shard(selector),
                Err(_) => ShardScope::Nothing, // no slot held
            };
            (state.version, scope)
        };
        #[cfg(test)]
        {
            let hook = self.before_publish.lock().take();
            if let Some(hook) = hook {
                hook();
            }
        }
        // After the slot's state: keys of a new slot are admitted before its objects arrive, and keys of a lost
        // one refused before its objects leave. Slots change on their elections' threads, several at once: the
        // scope of an earlier change, set after a later one's, would leave the informers without a slot owned (its
        // objects never cached, its keys never queued) — or holding one given up — until the next change.
        let mut published = self.published.lock();
        if version > *published {
            *published = version;
            self.cell.set(scope);
        }
    }
}

fn index(slot: u32) -> usize {
    usize::try_from(slot).unwrap_or(usize::MAX)
}

/// A reconcile counted in its slot (see [`Ownership::admit`]), with the slot's term and fenced client.
pub(crate) struct SlotGuard {
    ownership: Arc<Ownership>,
    slot: u32,
    fenced: Option<Fenced>,
}

impl SlotGuard {
    /// The slot.
    pub(crate) fn slot(&self) -> u32 {
        self.slot
    }

    /// The term the slot was held in when the reconcile was admitted, and the client fenced by it.
    pub(crate) fn fenced(&self) -> Option<&Fenced> {
        self.fenced.as_ref()
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let mut state = self.ownership.state.lock();
        let n = &mut state.running[index(self.slot)];
        *n = n.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectMeta;

    fn object_in(ownership: &Ownership, slot: u32) -> ObjectMeta {
        (0..)
            .map(|i| {
                let mut meta = ObjectMeta::namespaced("default", format!("o{i}"));
                meta.uid = Some(format!("uid-{i}"));
                meta
            })
            .find(|m| ownership.slot_of(m) == slot)
            .unwrap()
    }

    #[test]
    fn keys_are_taken_only_in_owned_slots_and_a_draining_slot_waits_for_its_reconciles() {
        let o = Ownership::new(4, ShardField::Uid);
        let (a, b) = (object_in(&o, 1), object_in(&o, 2));
        assert!(o.admit("default/a", Some(&a)).is_none(), "nothing owned yet");
        assert_eq!(o.cell().get().1, ShardScope::Nothing);
        o.acquired(1, None);
        assert_eq!(
            o.cell().get().1,
            ShardScope::Shard(ShardSelector::split(ShardField::Uid, 4, 1).unwrap())
        );
        let guard = o.admit("default/a", Some(&a)).expect("slot 1 is owned");
        assert!(o.admit("default/b", Some(&b)).is_none(), "slot 2 is not");
        assert!(o.drain(1));
        assert!(
            o.admit("default/a", Some(&a)).is_none(),
            "a draining slot takes no new key"
        );
        assert!(!o.is_drained(1), "its reconcile still runs");
        assert_eq!(o.owned(), Vec::<u32>::new());
        assert_eq!(o.draining(), vec![1]);
        // The informers still hold a draining slot's objects.
        assert_ne!(o.cell().get().1, ShardScope::Nothing);
        drop(guard);
        assert!(o.is_drained(1));
        o.lost(1);
        assert_eq!(o.cell().get().1, ShardScope::Nothing);
        assert_eq!(o.skipped(), 3);
    }

    /// `hook` runs on the next change of `o`'s slots, between the change and the setting of the scope it made.
    fn between_change_and_scope(o: &Arc<Ownership>, hook: impl FnOnce(&Ownership) + Send + 'static) {
        let weak = Arc::downgrade(o);
        *o.before_publish.lock() = Some(Box::new(move || hook(&weak.upgrade().unwrap())));
    }

    #[test]
    fn the_informers_follow_the_last_change_of_slots_changed_at_once() {
        let o = Ownership::new(4, ShardField::Uid);
        let shard =
            |slots: &[u32]| ShardScope::Shard(ShardSelector::slots(ShardField::Uid, 4, slots.iter().copied()).unwrap());
        // Two slots acquired at once (on their elections' threads): slot 2's change and scope come between slot 1's
        // change and the setting of its scope, which holds slot 1 only.
        between_change_and_scope(&o, |o| o.acquired(2, None));
        o.acquired(1, None);
        assert_eq!(o.owned(), vec![1, 2]);
        assert_eq!(
            o.cell().get().1,
            shard(&[1, 2]),
            "the informers hold both slots' objects"
        );
        // Two lost at once: the informers hold neither.
        between_change_and_scope(&o, |o| o.lost(2));
        o.lost(1);
        assert_eq!(o.owned(), Vec::<u32>::new());
        assert_eq!(
            o.cell().get().1,
            ShardScope::Nothing,
            "the informers hold no slot's objects"
        );
    }

    #[test]
    fn a_deleted_objects_key_is_reconciled_only_where_its_slot_was_owned() {
        let o = Ownership::new(4, ShardField::Uid);
        let (a, b) = (object_in(&o, 0), object_in(&o, 3));
        o.acquired(0, None);
        o.deleted("default/a", &a);
        o.deleted("default/b", &b);
        assert!(o.admit("default/a", None).is_some(), "deleted in an owned slot");
        assert!(o.admit("default/b", None).is_none(), "another replica's");
        assert!(o.admit("default/c", None).is_none(), "never seen: another replica's");
        o.reconciled("default/a");
        assert!(o.admit("default/a", None).is_none(), "done once reconciled");
        // A slot given up forgets its deleted keys.
        o.deleted("default/a", &a);
        o.lost(0);
        o.acquired(0, None);
        assert!(o.admit("default/a", None).is_none());
    }

    #[test]
    fn a_slot_whose_term_is_over_takes_no_key_though_not_yet_marked_lost() {
        use crate::client::LeaseTerm;
        use crate::clock::FakeClock;
        use std::time::Duration;

        let o = Ownership::new(2, ShardField::Uid);
        let a = object_in(&o, 1);
        let clock = FakeClock::new();
        let until = clock.now() + Duration::from_secs(10);
        let term = LeaseTerm::begin(
            "ns/x-slot-1",
            Arc::new(clock.clone()),
            (until, Duration::ZERO),
            None,
            None,
        );
        o.acquired(1, Some(Fenced { term, client: None }));
        let guard = o.admit("default/a", Some(&a)).expect("owned, within its term");
        assert!(guard.fenced().is_some_and(|f| f.term.lease() == "ns/x-slot-1"));
        drop(guard);
        // The renewals failed: the term ran out before the elector noticed.
        clock.step(Duration::from_secs(10));
        assert!(o.admit("default/a", Some(&a)).is_none(), "another replica's soon");
        o.lost(1);
        o.acquired(1, None);
        assert!(o.admit("default/a", Some(&a)).is_some_and(|g| g.fenced().is_none()));
    }

    #[test]
    fn by_namespace_the_key_tells_the_slot() {
        let o = Ownership::new(8, ShardField::Namespace);
        let meta = ObjectMeta::namespaced("team-a", "x");
        let slot = o.slot_of(&meta);
        o.acquired(slot, None);
        assert!(o.admit("team-a/gone", None).is_some());
        assert_eq!(
            o.objects_per_slot([&meta, &ObjectMeta::namespaced("team-a", "y")]),
            BTreeMap::from([(slot, 2)])
        );
    }
}
