//! A reference model of the informer's queues, for randomized tests and fuzzing.
//!
//! [`check`] drives a real [`DeltaFifo`], and [`check_real`] a real [`RealFifo`], backed by a real [`Store`] (the
//! processing step of an informer: pop, apply to the store) with a sequence of [`FifoOp`]s, and compares it with a
//! model of what the server said — a plain map updated by each operation. Whatever the sequence, for both queues:
//! * after the queue is drained (in batches, as the informer's processing thread does), the store equals the model
//!   (nothing lost, nothing resurrected);
//! * once the first replace has finished and everything is popped, the queue reports synced, and pops before that are
//!   flagged as part of the initial list.
//!
//! For the DeltaFIFO:
//! * every popped `Deltas` is non-empty and never holds two deletions in a row;
//! * the queue never lists a key twice, and its length is its number of keys;
//! * a `Sync` is never queued behind a pending deletion.
//!
//! For the RealFIFO:
//! * every change the server reported (added, updated, deleted, listed) is popped exactly once, in the order reported
//!   — across objects too;
//! * a deletion (reported, or found by a relist) and a `Sync` only ever pop onto a store holding exactly the state
//!   they carry: nothing is deleted twice, resurrected or rolled back.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;

use crate::cache::{Delta, DeltaFifo, Deltas, Key, KnownObjects, RealFifo, Store};

/// One operation on the queue. Keys and values are small integers so generated sequences collide often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FifoOp {
    /// Watch ADDED.
    Add(u8, u32),
    /// Watch MODIFIED.
    Update(u8, u32),
    /// Watch DELETED.
    Delete(u8),
    /// A relist returning exactly these objects; `pops` queue items are popped while it streams, after the
    /// first `pops_after` items.
    Replace {
        /// The listed objects.
        items: Vec<(u8, u32)>,
        /// Items listed before the concurrent pops happen.
        pops_after: usize,
        /// Pops interleaved with the list.
        pops: usize,
    },
    /// A list that fails half way: `items` are queued, no deletion is detected.
    AbortedReplace(Vec<(u8, u32)>),
    /// A periodic resync.
    Resync,
    /// The processing thread pops one item and applies it.
    Pop,
}

/// The model's object: key and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Obj {
    /// Key.
    pub key: u8,
    /// Value.
    pub value: u32,
}

fn key_of(o: &Obj, buf: &mut String) {
    use std::fmt::Write as _;
    let _ = write!(buf, "{}", o.key);
}

/// Runs `ops` against a real queue and store; `Err` describes the first broken property.
pub fn check(ops: &[FifoOp]) -> Result<(), String> {
    let store: Arc<Store<Obj>> = Arc::new(Store::default());
    let known: Arc<dyn KnownObjects<Obj>> = store.clone();
    let fifo = DeltaFifo::with_key_fn(key_of, Some(known));
    let mut truth: BTreeMap<u8, u32> = BTreeMap::new();
    let mut replaced_once = false;
    let obj = |k: u8, v: u32| Arc::new(Obj { key: k, value: v });
    for (step, op) in ops.iter().enumerate() {
        let at = |msg: String| format!("step {step} ({op:?}): {msg}");
        match op {
            FifoOp::Add(k, v) => {
                truth.insert(*k, *v);
                fifo.add(obj(*k, *v));
            }
            FifoOp::Update(k, v) => {
                truth.insert(*k, *v);
                fifo.update(obj(*k, *v));
            }
            FifoOp::Delete(k) => {
                // A real watch only deletes what exists; the value is the last one.
                if let Some(v) = truth.remove(k) {
                    fifo.delete(obj(*k, v));
                }
            }
            FifoOp::Replace {
                items,
                pops_after,
                pops,
            } => {
                let listed = dedup_last(items);
                let mut session = fifo.begin_replace();
                for (i, (k, v)) in listed.iter().enumerate() {
                    if i == *pops_after {
                        for _ in 0..*pops {
                            pop(&fifo, &store).map_err(at)?;
                        }
                    }
                    session.add(obj(*k, *v));
                }
                session.finish();
                replaced_once = true;
                truth = listed.into_iter().collect();
            }
            FifoOp::AbortedReplace(items) => {
                let mut session = fifo.begin_replace();
                for (k, v) in dedup_last(items) {
                    // Listed objects are real server states: the model takes them in.
                    truth.insert(k, v);
                    session.add(obj(k, v));
                }
            }
            FifoOp::Resync => fifo.resync(),
            FifoOp::Pop => pop(&fifo, &store).map_err(at)?,
        }
        let keys = fifo.list_keys();
        let distinct: HashSet<_> = keys.iter().collect();
        if distinct.len() != keys.len() {
            return Err(at(format!("a key is queued twice: {keys:?}")));
        }
    }
    // The informer's way: batches, written to the store outside the queue's lock.
    while !fifo.is_empty() {
        pop_batch(&fifo, &store, 3)?;
    }
    let cached: BTreeMap<u8, u32> = store.list().iter().map(|o| (o.key, o.value)).collect();
    if cached != truth {
        return Err(format!("store {cached:?} differs from the server's state {truth:?}"));
    }
    if replaced_once && !fifo.has_synced() {
        return Err("drained after a replace but not synced".into());
    }
    Ok(())
}

/// A list never holds a key twice: keep the last value of each key, in first-seen order.
fn dedup_last(items: &[(u8, u32)]) -> Vec<(u8, u32)> {
    let mut out: Vec<(u8, u32)> = Vec::new();
    for (k, v) in items {
        match out.iter_mut().find(|(kk, _)| kk == k) {
            Some(slot) => slot.1 = *v,
            None => out.push((*k, *v)),
        }
    }
    out
}

fn pop(fifo: &DeltaFifo<Obj>, store: &Store<Obj>) -> Result<(), String> {
    if fifo.is_empty() {
        return Ok(());
    }
    let synced_before = fifo.has_synced();
    fifo.pop(|key, deltas, initial| {
        if initial == synced_before {
            return Err(format!("is_in_initial_list={initial} while has_synced={synced_before}"));
        }
        check_deltas(key, &deltas)?;
        apply(store, key, deltas);
        Ok(())
    })
    .map_err(|_| "closed".to_string())?
}

/// Pops up to `max` items at once; the initial-list items of a batch come before the others, and none is initial
/// once the queue has synced.
fn pop_batch(fifo: &DeltaFifo<Obj>, store: &Store<Obj>, max: usize) -> Result<(), String> {
    let synced_before = fifo.has_synced();
    let mut result = Ok(());
    let mut seen_later = false;
    fifo.pop_batch(max, |key, deltas, initial| {
        if initial && (synced_before || seen_later) {
            result = Err(format!(
                "{key} is_in_initial_list after the queue synced or a later item"
            ));
        }
        seen_later |= !initial;
        if let Err(e) = check_deltas(key, &deltas) {
            result = Err(e);
        }
        apply(store, key, deltas);
    })
    .map_err(|_| "closed".to_string())?;
    result
}

/// Every popped `Deltas` holds no two deletions in a row and no sync after a deletion.
fn check_deltas(key: &str, deltas: &Deltas<Obj>) -> Result<(), String> {
    let mut prev_deleted = false;
    for d in deltas.iter() {
        let deleted = matches!(d, Delta::Deleted(_));
        if deleted && prev_deleted {
            return Err(format!("two deletions in a row for {key}: {deltas:?}"));
        }
        if matches!(d, Delta::Sync(_)) && prev_deleted {
            return Err(format!("a sync after a deletion for {key}: {deltas:?}"));
        }
        prev_deleted = deleted;
    }
    Ok(())
}

/// The informer's processing step: the store takes each delta in order.
pub(crate) fn apply<K>(store: &Store<K>, key: &Key, deltas: Deltas<K>) {
    for d in deltas {
        match d {
            Delta::Deleted(_) => {
                store.delete(key);
            }
            other => {
                store.put(key.clone(), other.object().clone());
            }
        }
    }
}

/// Runs `ops` against a real [`RealFifo`] and store; `Err` describes the first broken property.
pub fn check_real(ops: &[FifoOp]) -> Result<(), String> {
    let store: Arc<Store<Obj>> = Arc::new(Store::default());
    let fifo = RealFifo::with_key_fn(key_of, store.clone());
    let mut model = RealModel::default();
    let mut truth: BTreeMap<u8, u32> = BTreeMap::new();
    let mut replaced_once = false;
    let obj = |k: u8, v: u32| Arc::new(Obj { key: k, value: v });
    for (step, op) in ops.iter().enumerate() {
        let at = |msg: String| format!("step {step} ({op:?}): {msg}");
        match op {
            FifoOp::Add(k, v) => {
                truth.insert(*k, *v);
                model.reported.push_back(Delta::Added(obj(*k, *v)));
                fifo.add(obj(*k, *v));
            }
            FifoOp::Update(k, v) => {
                truth.insert(*k, *v);
                model.reported.push_back(Delta::Updated(obj(*k, *v)));
                fifo.update(obj(*k, *v));
            }
            FifoOp::Delete(k) => {
                if let Some(v) = truth.remove(k) {
                    let gone = crate::cache::DeletedObject::Object(obj(*k, v));
                    model.reported.push_back(Delta::Deleted(gone.clone()));
                    fifo.delete(obj(*k, v));
                }
            }
            FifoOp::Replace {
                items,
                pops_after,
                pops,
            } => {
                let listed = dedup_last(items);
                let mut session = fifo.begin_replace();
                for (i, (k, v)) in listed.iter().enumerate() {
                    if i == *pops_after {
                        for _ in 0..*pops {
                            model.pop(&fifo, &store).map_err(at)?;
                        }
                    }
                    model.reported.push_back(Delta::Replaced(obj(*k, *v)));
                    session.add(obj(*k, *v));
                }
                session.finish();
                replaced_once = true;
                truth = listed.into_iter().collect();
            }
            FifoOp::AbortedReplace(items) => {
                let mut session = fifo.begin_replace();
                for (k, v) in dedup_last(items) {
                    truth.insert(k, v);
                    model.reported.push_back(Delta::Replaced(obj(k, v)));
                    session.add(obj(k, v));
                }
            }
            FifoOp::Resync => fifo.resync(),
            FifoOp::Pop => model.pop(&fifo, &store).map_err(at)?,
        }
    }
    while !fifo.is_empty() {
        let synced_before = fifo.has_synced();
        let mut result = Ok(());
        let mut seen_later = false;
        fifo.pop_batch(3, |key, delta, initial| {
            if initial && (synced_before || seen_later) {
                result = Err(format!(
                    "{key} is_in_initial_list after the queue synced or a later change"
                ));
            }
            seen_later |= !initial;
            if let Err(e) = model.apply(&store, key, delta) {
                result = Err(e);
            }
        })
        .map_err(|_| "closed".to_string())?;
        result?;
    }
    if let Some(lost) = model.reported.front() {
        return Err(format!(
            "reported but never popped: {lost:?} ({} in all)",
            model.reported.len()
        ));
    }
    let cached: BTreeMap<u8, u32> = store.list().iter().map(|o| (o.key, o.value)).collect();
    if cached != truth {
        return Err(format!("store {cached:?} differs from the server's state {truth:?}"));
    }
    if replaced_once && !fifo.has_synced() {
        return Err("drained after a replace but not synced".into());
    }
    Ok(())
}

/// What the RealFIFO must pop: the changes the server reported, in order.
#[derive(Default)]
struct RealModel {
    reported: VecDeque<Delta<Obj>>,
}

impl RealModel {
    fn pop(&mut self, fifo: &RealFifo<Obj>, store: &Store<Obj>) -> Result<(), String> {
        if fifo.is_empty() {
            return Ok(());
        }
        let synced_before = fifo.has_synced();
        fifo.pop(|key, delta, initial| {
            if initial == synced_before {
                return Err(format!("is_in_initial_list={initial} while has_synced={synced_before}"));
            }
            self.apply(store, key, delta)
        })
        .map_err(|_| "closed".to_string())?
    }

    /// Checks one popped change against the model and the store, then applies it.
    fn apply(&mut self, store: &Store<Obj>, key: &Key, delta: Delta<Obj>) -> Result<(), String> {
        let held = store.get(key).map(|o| o.value);
        match &delta {
            Delta::Sync(o) if held != Some(o.value) => {
                return Err(format!("Sync of {key}={} onto a store holding {held:?}", o.value));
            }
            Delta::Deleted(d) if held != Some(d.object().value) => {
                return Err(format!("{delta:?} onto a store holding {key}={held:?}"));
            }
            Delta::Sync(_) => {}
            Delta::Deleted(d) if d.is_final_state_unknown() => {}
            _ => match self.reported.pop_front() {
                Some(expected) if expected == delta => {}
                expected => return Err(format!("popped {delta:?} where {expected:?} was reported next")),
            },
        }
        apply(store, key, Deltas::new(delta));
        Ok(())
    }
}

/// Randomized runs against the model, seeded and reproducible: a failure prints its seed; `FIFO_MODEL_SEED=<n>`
/// replays one, `FIFO_MODEL_RUNS=<n>` runs more.
#[cfg(test)]
mod random_runs {
    use super::{FifoOp, check, check_real};

    #[test]
    fn an_add_a_delete_and_a_relist_match_the_model() {
        let relist = FifoOp::Replace {
            items: vec![(2, 1)],
            pops_after: 0,
            pops: 0,
        };
        let ops = [FifoOp::Add(1, 1), FifoOp::Delete(1), relist];
        check(&ops).unwrap();
        check_real(&ops).unwrap();
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn ops(seed: u64) -> Vec<FifoOp> {
        let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let len = 1 + r.below(80) as usize;
        let mut value = 0u32;
        let mut item = |r: &mut Rng| {
            value += 1;
            (r.below(12) as u8, value)
        };
        (0..len)
            .map(|_| match r.below(10) {
                0 | 1 => {
                    let (k, v) = item(&mut r);
                    FifoOp::Add(k, v)
                }
                2 | 3 => {
                    let (k, v) = item(&mut r);
                    FifoOp::Update(k, v)
                }
                4 => FifoOp::Delete(r.below(12) as u8),
                5 => {
                    let n = r.below(10) as usize;
                    let items = (0..n).map(|_| item(&mut r)).collect::<Vec<_>>();
                    FifoOp::Replace {
                        pops_after: r.below(n as u64 + 1) as usize,
                        pops: r.below(4) as usize,
                        items,
                    }
                }
                6 => FifoOp::AbortedReplace((0..r.below(5)).map(|_| item(&mut r)).collect()),
                7 => FifoOp::Resync,
                _ => FifoOp::Pop,
            })
            .collect()
    }

    #[test]
    fn random_operation_sequences_match_the_model() {
        if let Ok(seed) = std::env::var("FIFO_MODEL_SEED") {
            let seed: u64 = seed.parse().expect("FIFO_MODEL_SEED is a number");
            check(&ops(seed)).unwrap_or_else(|e| panic!("seed {seed}: DeltaFIFO: {e}"));
            check_real(&ops(seed)).unwrap_or_else(|e| panic!("seed {seed}: RealFIFO: {e}"));
            return;
        }
        let runs: u64 = std::env::var("FIFO_MODEL_RUNS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20_000);
        for seed in 1..=runs {
            for (queue, check) in [("DeltaFIFO", check as fn(&[FifoOp]) -> _), ("RealFIFO", check_real)] {
                if let Err(e) = check(&ops(seed)) {
                    panic!(
                        "seed {seed} (replay with FIFO_MODEL_SEED={seed}): {queue}: {e}\nops: {:?}",
                        ops(seed)
                    );
                }
            }
        }
    }
}
