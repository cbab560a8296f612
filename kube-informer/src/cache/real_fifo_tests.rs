//! RealFIFO tests: the cases of client-go's the_real_fifo_test.go (inputs and expected outputs, on this crate's API),
//! plus the streamed replace and the batch processed outside the lock.
//!
//! Where the expectations differ from client-go's, the case says so (`Differs:`): the deletions a replace reveals
//! come after the listed objects (a streamed replace knows them only at its end; client-go queues them first), and
//! a batch is not ended at a second change of one object or at the end of the initial list (the informer applies a
//! batch's changes one after the other, each knowing whether it belongs to the initial list). client-go's
//! transformer runs inside the queue; ours runs before objects enter it (once per decoded object: the informer's
//! tests check it), so of its transformer case only the queue's order is ported; keys cannot fail, so its `KeyOf`
//! and broken-key cases have no counterpart. Nor do the cases of its atomic-events option (`AtomicEvents`: one
//! `ReplacedAll`, `SyncAll` or `Bookmark` entry per replace, resync or bookmark), which is not the queue its
//! informers use by default: a bookmark never enters our queues (the reflector keeps its resource version).

use std::sync::Arc;

use super::*;
use crate::cache::fifo_model::apply;
use crate::cache::fifo_test_support::*;
use crate::cache::{Deltas, Store};

fn fifo_known(objs: Vec<Arc<Obj>>) -> RealFifo<Obj> {
    RealFifo::with_key_fn(name_key, Arc::new(Literal(objs)))
}

/// client-go's `emptyKnownObjects()`.
fn fifo() -> RealFifo<Obj> {
    fifo_known(Vec::new())
}

fn pop(f: &RealFifo<Obj>) -> Delta<Obj> {
    f.pop(|_, d, _| d).expect("queue open")
}

fn pop_val(f: &RealFifo<Obj>) -> i32 {
    pop(f).object().val
}

/// Pops everything queued (client-go's `popN` of all items).
fn drain(f: &RealFifo<Obj>) -> Vec<Delta<Obj>> {
    let mut out = Vec::new();
    while !f.is_empty() {
        out.push(pop(f));
    }
    out
}

#[test]
fn basic_concurrent_producers_keep_per_producer_order() {
    let f = Arc::new(fifo());
    const AMOUNT: i32 = 500;
    let names: Vec<&'static str> = (0..AMOUNT)
        .map(|i| &*Box::leak(format!("{i}").into_boxed_str()))
        .collect();
    let producers: Vec<_> = [0, 1]
        .into_iter()
        .map(|p| {
            let (f, names) = (f.clone(), names.clone());
            std::thread::spawn(move || {
                for (i, name) in names.iter().enumerate() {
                    // Producer 0 counts up from 1, producer 1 from 10_001.
                    f.add(o(name, p * 10_000 + i as i32 + 1));
                }
            })
        })
        .collect();
    let (mut last_a, mut last_b) = (0, 10_000);
    for _ in 0..2 * AMOUNT {
        let v = pop_val(&f);
        let last = if v > 10_000 { &mut last_b } else { &mut last_a };
        assert!(v > *last, "{v} out of order after {last}");
        *last = v;
    }
    producers.into_iter().for_each(|p| p.join().unwrap());
}

// client-go: TestRealFIFO_replaceWithDeleteDeltaIn (kubernetes#83810: the object's add must not be lost).
#[test]
fn replace_after_a_queued_delete_still_adds_the_object() {
    let f = fifo_known(vec![o("foo", 1)]);
    f.delete(o("foo", 1));
    f.replace(vec![o("foo", 2)]);
    assert_eq!(drain(&f), [deleted(o("foo", 1)), replaced(o("foo", 2))]);
}

// client-go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue.
#[test]
fn replace_makes_deletions_for_objects_only_in_queue() {
    let (obj, v2) = (o("foo", 2), o("foo", 3));
    type Case = (&'static str, Box<dyn Fn(&RealFifo<Obj>)>, Vec<Delta<Obj>>);
    let cases: Vec<Case> = vec![
        (
            "an added object is deleted by a replace",
            Box::new(|f: &RealFifo<Obj>| {
                f.add(o("foo", 2));
                f.replace(vec![]);
            }),
            vec![added(obj.clone()), tomb("foo", obj.clone())],
        ),
        (
            "a deleted object gets only its own deletion",
            Box::new(|f: &RealFifo<Obj>| {
                f.add(o("foo", 2));
                f.delete(o("foo", 2));
                f.replace(vec![]);
            }),
            vec![added(obj.clone()), deleted(obj.clone())],
        ),
        (
            "a replaced object gets a single deletion",
            Box::new(|f: &RealFifo<Obj>| {
                f.add(o("foo", 2));
                f.replace(vec![o("foo", 2)]);
                f.replace(vec![o("foo", 2)]);
                f.replace(vec![]);
            }),
            vec![
                added(obj.clone()),
                replaced(obj.clone()),
                replaced(obj.clone()),
                tomb("foo", obj.clone()),
            ],
        ),
        (
            "an added object gets a single deletion from several replaces",
            Box::new(|f: &RealFifo<Obj>| {
                f.add(o("foo", 2));
                f.replace(vec![]);
                f.replace(vec![]);
            }),
            vec![added(obj.clone()), tomb("foo", obj.clone())],
        ),
        (
            // client-go: "Bookmark object should not be added without atomic" (a bookmark never enters the queue).
            "empty replaces over nothing known queue nothing",
            Box::new(|f: &RealFifo<Obj>| {
                f.replace(vec![]);
                f.replace(vec![]);
            }),
            vec![],
        ),
        (
            "an object added, deleted and added again is deleted",
            Box::new(|f: &RealFifo<Obj>| {
                f.add(o("foo", 2));
                f.delete(o("foo", 2));
                f.add(o("foo", 3));
                f.replace(vec![]);
            }),
            vec![
                added(obj.clone()),
                deleted(obj.clone()),
                added(v2.clone()),
                tomb("foo", v2.clone()),
            ],
        ),
    ];
    for (name, ops, expected) in cases {
        let f = fifo();
        ops(&f);
        assert_eq!(drain(&f), expected, "{name}");
    }
}

// client-go: TestRealFIFO_addUpdate. Every change is its own entry (a DeltaFIFO pops them as one).
#[test]
fn add_update_delete_are_three_entries_popped_in_order() {
    let f = fifo();
    f.add(o("foo", 10));
    f.update(o("foo", 12));
    f.delete(o("foo", 15));
    assert_eq!(f.list_keys().iter().map(|k| &**k).collect::<Vec<_>>(), ["foo"; 3]);
    assert_eq!(
        drain(&f),
        [added(o("foo", 10)), updated(o("foo", 12)), deleted(o("foo", 15))]
    );
    assert!(f.is_empty());
}

// client-go: TestRealFIFO_transformer, the queue's part (the transform runs before our queues): no coalescing, a
// replace deletes what is queued but not listed unless its newest change is a deletion, and the second replace
// deletes bar again, carrying the state added after the first.
#[test]
fn replaces_delete_what_is_queued_but_not_listed_each_time() {
    let f = fifo();
    f.add(o("foo", 10));
    f.add(o("bar", 11));
    f.update(o("foo", 12));
    f.delete(o("foo", 15));
    f.replace(vec![]);
    f.add(o("bar", 16));
    f.replace(vec![]);
    assert_eq!(
        drain(&f),
        [
            added(o("foo", 10)),
            added(o("bar", 11)),
            updated(o("foo", 12)),
            deleted(o("foo", 15)),
            tomb("bar", o("bar", 11)),
            added(o("bar", 16)),
            tomb("bar", o("bar", 16)),
        ]
    );
}

// client-go: TestRealFIFO_enqueueingNoLister. Unlike a DeltaFIFO, a RealFIFO queues the deletion of an unknown key.
#[test]
fn enqueueing_queues_everything_even_deletes_of_unknown_keys() {
    let f = fifo();
    f.add(o("foo", 10));
    f.update(o("bar", 15));
    f.add(o("qux", 17));
    f.delete(o("qux", 18));
    f.delete(o("baz", 20));
    let vals: Vec<i32> = drain(&f).iter().map(|d| d.object().val).collect();
    assert_eq!(vals, [10, 15, 17, 18, 20]);
}

// client-go: TestRealFIFO_enqueueingWithLister.
#[test]
fn enqueueing_with_known_objects_queues_deletes_of_known_keys() {
    let f = fifo_known(vec![o("foo", 5), o("bar", 6), o("baz", 7)]);
    f.add(o("foo", 10));
    f.update(o("bar", 15));
    f.delete(o("baz", 20));
    let vals: Vec<i32> = drain(&f).iter().map(|d| d.object().val).collect();
    assert_eq!(vals, [10, 15, 20]);
}

// client-go: TestRealFIFO_addReplace. Both changes are popped, the add first.
#[test]
fn add_then_replace_pops_both_in_order() {
    let f = fifo();
    f.add(o("foo", 10));
    f.replace(vec![o("foo", 15)]);
    assert_eq!(drain(&f), [added(o("foo", 10)), replaced(o("foo", 15))]);
}

// client-go: TestRealFIFO_ResyncNonExisting.
#[test]
fn resync_skips_objects_with_a_queued_delete() {
    let f = fifo_known(vec![o("foo", 5)]);
    f.delete(o("foo", 10));
    f.resync();
    assert_eq!(drain(&f), [deleted(o("foo", 10))]);
}

// client-go: TestRealFIFO_Resync.
#[test]
fn resync_queues_sync_for_known_objects() {
    let f = fifo_known(vec![o("foo", 5)]);
    f.resync();
    assert_eq!(drain(&f), [Delta::Sync(o("foo", 5))]);
}

// client-go: TestRealFIFO_DeleteExistingNonPropagated.
#[test]
fn delete_of_an_object_only_in_the_queue_is_queued() {
    let f = fifo();
    f.add(o("foo", 5));
    f.delete(o("foo", 6));
    assert_eq!(drain(&f), [added(o("foo", 5)), deleted(o("foo", 6))]);
}

// client-go: TestRealFIFO_ReplaceMakesDeletions. Differs: the tombstones come after the listed objects (client-go
// queues them before), queued objects' first, then known objects' in their order.
#[test]
fn replace_makes_deletions() {
    let known = || vec![o("foo", 5), o("bar", 6), o("baz", 7)];

    // With a pre-existing delete.
    let f = fifo_known(known());
    f.delete(o("baz", 10));
    f.replace(vec![o("foo", 5)]);
    assert_eq!(
        drain(&f),
        [deleted(o("baz", 10)), replaced(o("foo", 5)), tomb("bar", o("bar", 6))]
    );

    // With an add instead: the queued state is the last known one.
    let f = fifo_known(known());
    f.add(o("baz", 10));
    f.replace(vec![o("foo", 5)]);
    assert_eq!(
        drain(&f),
        [
            added(o("baz", 10)),
            replaced(o("foo", 5)),
            tomb("baz", o("baz", 10)),
            tomb("bar", o("bar", 6))
        ]
    );

    // Deleted and recreated in the queue, then deleted by the replace: the tombstone carries the newest state.
    let f = fifo_known(known());
    f.delete(o("bar", 6));
    f.add(o("bar", 100));
    f.replace(vec![o("foo", 5)]);
    assert_eq!(
        drain(&f),
        [
            deleted(o("bar", 6)),
            added(o("bar", 100)),
            replaced(o("foo", 5)),
            tomb("bar", o("bar", 100)),
            tomb("baz", o("baz", 7))
        ]
    );

    // Replaced first, so that the deletion uses the newest version.
    let f = fifo_known(known());
    f.replace(vec![o("bar", 100), o("foo", 5)]);
    f.replace(vec![o("foo", 5)]);
    assert_eq!(
        drain(&f),
        [
            replaced(o("bar", 100)),
            replaced(o("foo", 5)),
            tomb("baz", o("baz", 7)),
            replaced(o("foo", 5)),
            tomb("bar", o("bar", 100))
        ]
    );

    // Without known objects.
    let f = fifo();
    f.add(o("baz", 10));
    f.replace(vec![o("foo", 5)]);
    assert_eq!(
        drain(&f),
        [added(o("baz", 10)), replaced(o("foo", 5)), tomb("baz", o("baz", 10))]
    );
}

// client-go: TestRealFIFO_ReplaceMakesDeletionsReplaced. Differs as above.
#[test]
fn replace_emits_replaced() {
    let f = fifo_known(vec![o("foo", 5), o("bar", 6), o("baz", 7)]);
    f.delete(o("baz", 10));
    f.replace(vec![o("foo", 6)]);
    assert_eq!(
        drain(&f),
        [deleted(o("baz", 10)), replaced(o("foo", 6)), tomb("bar", o("bar", 6))]
    );
}

// client-go: TestRealFIFO_UpdateResyncRace.
#[test]
fn update_then_resync_keeps_only_the_update() {
    let f = fifo_known(vec![o("foo", 5)]);
    f.update(o("foo", 6));
    f.resync();
    assert_eq!(drain(&f), [updated(o("foo", 6))]);
}

// client-go: TestRealFIFO_HasSyncedCorrectOnDeletion. Differs in order as above.
#[test]
fn has_synced_counts_deletions_of_the_first_replace() {
    let f = fifo_known(vec![o("foo", 5), o("bar", 6), o("baz", 7)]);
    f.replace(vec![o("foo", 5)]);
    for expected in [
        replaced(o("foo", 5)),
        tomb("bar", o("bar", 6)),
        tomb("baz", o("baz", 7)),
    ] {
        assert!(!f.has_synced());
        let (popped, initial) = f.pop(|_, d, initial| (d, initial)).unwrap();
        assert_eq!(popped, expected);
        assert!(initial, "part of the initial list");
    }
    assert!(f.has_synced());
}

// client-go: TestRealFIFO_detectLineJumpers. Every change keeps its own place: nothing jumps the line.
#[test]
fn changes_keep_their_place_in_line() {
    let f = fifo();
    f.add(o("foo", 10));
    f.add(o("bar", 1));
    f.add(o("foo", 11));
    f.add(o("foo", 13));
    f.add(o("zab", 30));
    assert_eq!(pop_val(&f), 10);
    f.add(o("foo", 14));
    let vals: Vec<i32> = drain(&f).iter().map(|d| d.object().val).collect();
    assert_eq!(vals, [1, 11, 13, 30, 14]);
}

// client-go: TestRealFIFO_HasSynced.
#[test]
fn has_synced_table() {
    type Action = fn(&RealFifo<Obj>);
    let cases: [(&[Action], bool); 7] = [
        (&[], false),
        (&[|f| f.add(o("a", 1))], true),
        (&[|f| f.replace(vec![])], true),
        (&[|f| f.replace(vec![o("a", 1), o("b", 2)])], false),
        (&[|f| f.replace(vec![o("a", 1), o("b", 2)]), |f| drop(pop(f))], false),
        (
            &[
                |f| f.replace(vec![o("a", 1), o("b", 2)]),
                |f| drop(pop(f)),
                |f| drop(pop(f)),
            ],
            true,
        ),
        // A list holding a key twice (a broken server): each is popped; synced once both are.
        (
            &[
                |f| f.replace(vec![o("a", 1), o("a", 2)]),
                |f| drop(pop(f)),
                |f| drop(pop(f)),
            ],
            true,
        ),
    ];
    for (i, (actions, synced)) in cases.into_iter().enumerate() {
        let f = fifo();
        for action in actions {
            action(&f);
        }
        assert_eq!(f.has_synced(), synced, "case {i}");
    }
}

// client-go: TestRealFIFO_PopShouldUnblockWhenClosed.
#[test]
fn close_unblocks_every_blocked_pop() {
    let f = Arc::new(fifo_known(vec![o("foo", 5)]));
    let (tx, rx) = crossbeam_channel::unbounded();
    let poppers: Vec<_> = (0..10)
        .map(|_| {
            let (f, tx) = (f.clone(), tx.clone());
            std::thread::spawn(move || tx.send(f.pop(|_, _, _| ()).is_err()).unwrap())
        })
        .collect();
    f.close();
    for _ in 0..10 {
        assert_eq!(rx.recv_timeout(WAIT), Ok(true), "pop returned Closed");
    }
    poppers.into_iter().for_each(|p| p.join().unwrap());
    assert!(f.is_closed());
}

/// One `pop_batch` of up to `max`: each change with whether it belongs to the initial list.
fn pop_batch(f: &RealFifo<Obj>, max: usize) -> Vec<(Delta<Obj>, bool)> {
    let mut batch = Vec::new();
    f.pop_batch(max, |_, d, initial| batch.push((d, initial))).unwrap();
    batch
}

// client-go: TestRealFIFO_PopMultipleDeltaInBatch. Differs: a batch is ended by its size only — not at a second
// change of an object, nor at the end of the initial list (each change says whether it belongs to it); the changes
// and their order are client-go's.
#[test]
fn pop_batch_takes_changes_in_order_up_to_its_size() {
    const UNLIMITED: usize = 999_999;
    let (o1, o2, o3, o4) = (o("foo1", 5), o("foo2", 5), o("foo3", 5), o("foo4", 5));
    let r = |x: &Arc<Obj>, initial| (replaced(x.clone()), initial);
    let u = |x: &Arc<Obj>| (updated(x.clone()), false);
    type Case = (
        &'static str,
        Vec<Arc<Obj>>,
        Vec<Arc<Obj>>,
        usize,
        Vec<Vec<(Delta<Obj>, bool)>>,
    );
    let cases: Vec<Case> = vec![
        (
            "unique items in one batch",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![],
            UNLIMITED,
            vec![vec![r(&o1, true), r(&o2, true), r(&o3, true)]],
        ),
        (
            "initial list then updates, batches of 2",
            vec![o1.clone(), o2.clone()],
            vec![o3.clone(), o4.clone()],
            2,
            vec![vec![r(&o1, true), r(&o2, true)], vec![u(&o3), u(&o4)]],
        ),
        (
            "updates of one object (client-go: three batches)",
            vec![o1.clone()],
            vec![o1.clone(), o1.clone()],
            UNLIMITED,
            vec![vec![r(&o1, true), u(&o1), u(&o1)]],
        ),
        (
            "a second change of an object at the end (client-go: two batches)",
            vec![o1.clone(), o2.clone()],
            vec![o2.clone(), o3.clone()],
            UNLIMITED,
            vec![vec![r(&o1, true), r(&o2, true), u(&o2), u(&o3)]],
        ),
        (
            "a second change of an object in the middle (client-go: two batches)",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![o2.clone()],
            UNLIMITED,
            vec![vec![r(&o1, true), r(&o2, true), r(&o3, true), u(&o2)]],
        ),
        (
            "the initial list in batches of 2",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![],
            2,
            vec![vec![r(&o1, true), r(&o2, true)], vec![r(&o3, true)]],
        ),
        (
            "updates in batches of 2",
            vec![],
            vec![o1.clone(), o2.clone(), o3.clone()],
            2,
            vec![vec![u(&o1), u(&o2)], vec![u(&o3)]],
        ),
        (
            "initial and later changes in batches of 2 (client-go: three batches)",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![o4.clone()],
            2,
            vec![vec![r(&o1, true), r(&o2, true)], vec![r(&o3, true), u(&o4)]],
        ),
    ];
    for (name, initial, updates, max, expected) in cases {
        let f = fifo_known(initial.clone());
        f.replace(initial);
        for x in updates {
            f.update(x);
        }
        let mut batches = Vec::new();
        while !f.is_empty() {
            batches.push(pop_batch(&f, max));
        }
        assert_eq!(batches, expected, "{name}");
        assert!(f.has_synced(), "{name}");
    }
}

// --- Streamed replace: what client-go cannot do because its Replace takes the whole list -----------------------

#[test]
fn restarted_replace_forgets_what_the_aborted_list_saw() {
    let f = fifo_known(vec![o("a", 1), o("b", 1)]);
    let mut s = f.begin_replace();
    s.add(o("a", 2));
    s.add(o("b", 2));
    // The continue token expired: the full list that follows lacks b.
    s.restart();
    s.add(o("a", 3));
    assert_eq!(s.len(), 1);
    s.finish();
    assert_eq!(
        drain(&f),
        [
            replaced(o("a", 2)),
            replaced(o("b", 2)),
            replaced(o("a", 3)),
            tomb("b", o("b", 2))
        ]
    );
}

#[test]
fn changes_popped_while_a_replace_streams_are_not_deleted_by_it() {
    let store: Arc<Store<Obj>> = Arc::new(Store::default());
    store.put("gone".into(), o("gone", 1));
    let f = RealFifo::with_key_fn(name_key, store.clone());
    let mut s = f.begin_replace();
    s.add(o("a", 1));
    // The processing thread pops a while the list goes on: a is in the store, not in the queue, when the list ends.
    f.pop_batch(64, |k, d, _| apply(&store, k, Deltas::new(d))).unwrap();
    s.add(o("b", 1));
    s.finish();
    assert_eq!(drain(&f), [replaced(o("b", 1)), tomb("gone", o("gone", 1))]);
}

#[test]
fn an_unfinished_replace_detects_no_deletions_and_does_not_populate() {
    let f = fifo_known(vec![o("gone", 1)]);
    let mut s = f.begin_replace();
    s.add(o("a", 1));
    drop(s);
    assert!(!f.has_synced(), "a failed first list does not sync");
    assert_eq!(drain(&f), [replaced(o("a", 1))]);
}

#[test]
fn an_empty_first_replace_syncs_at_once_and_says_so() {
    let (tx, rx) = crossbeam_channel::unbounded();
    let f = fifo().with_sync_hook(Arc::new(move || tx.send(()).unwrap()));
    f.replace(vec![]);
    assert!(f.has_synced());
    assert_eq!(rx.try_recv(), Ok(()), "the hook told whoever waits for the sync");
    f.replace(vec![]);
    assert!(rx.try_recv().is_err(), "once");
}

#[test]
fn later_pushes_stay_unwoken_until_a_wake_or_a_now_push() {
    let f = fifo();
    let mut batch = vec![added(o("a", 1)), updated(o("a", 2)), deleted(o("a", 3))];
    f.push_all(&mut batch, Wake::Later);
    assert!(batch.is_empty() && batch.capacity() >= 3, "emptied, its capacity kept");
    assert!(f.has_unwoken());
    assert_eq!(f.len(), 3);
    f.wake();
    assert!(!f.has_unwoken());
    // An empty `Now` batch (a burst of bookmarks) wakes for what earlier `Later` batches queued, taking no lock.
    batch.push(added(o("b", 1)));
    f.push_all(&mut batch, Wake::Later);
    f.push_all(&mut batch, Wake::Now);
    assert!(!f.has_unwoken());
    assert_eq!(f.batches_pushed(), 2);
    assert_eq!(
        drain(&f),
        [
            added(o("a", 1)),
            updated(o("a", 2)),
            deleted(o("a", 3)),
            added(o("b", 1))
        ]
    );
}

#[test]
fn a_blocked_pop_is_woken_by_a_push() {
    let f = Arc::new(fifo());
    let popper = {
        let f = f.clone();
        std::thread::spawn(move || pop(&f))
    };
    f.add(o("a", 1));
    assert_eq!(popper.join().unwrap(), added(o("a", 1)));
}

#[test]
fn queued_changes_share_the_stores_key_or_the_previous_changes() {
    let store: Arc<Store<Obj>> = Arc::new(Store::default());
    store.put("a".into(), o("a", 1));
    let f = RealFifo::with_key_fn(name_key, store.clone());
    f.update(o("a", 2));
    f.add(o("b", 1));
    f.update(o("b", 2));
    let keys = f.list_keys();
    assert!(Arc::ptr_eq(&keys[0], &store.list_keys()[0]), "the store's key");
    assert!(Arc::ptr_eq(&keys[1], &keys[2]), "the key of the change before");
}

#[test]
fn a_drained_queue_gives_back_what_a_burst_grew() {
    let f = fifo();
    for i in 0..5 * KEEP_CAPACITY as i32 {
        f.add(o("a", i));
    }
    while f.pop_batch(1000, |_, _, _| ()).unwrap() == 1000 {}
    assert!(f.is_empty());
    assert!(f.lock().items.capacity() <= KEEP_CAPACITY);
}

/// The example the queue's docs had while it was public: changes pop in the order they happened, across objects.
#[test]
fn changes_pop_in_arrival_order_across_objects() {
    use crate::cache::Store;
    use crate::object::{ObjectMeta, core::ConfigMap};

    let cm = |name: &str, v: &str| Arc::new(ConfigMap::new(ObjectMeta::namespaced("ns", name)).with("v", v));
    let store = Arc::new(Store::default());
    let fifo = RealFifo::<ConfigMap>::new(store);
    fifo.add(cm("a", "1"));
    fifo.add(cm("b", "1"));
    fifo.update(cm("a", "2"));
    let mut popped = Vec::new();
    while !fifo.is_empty() {
        popped.push(
            fifo.pop(|key, delta, _initial| format!("{key} {:?}", delta.delta_type()))
                .unwrap(),
        );
    }
    assert_eq!(popped, ["ns/a Added", "ns/b Added", "ns/a Updated"]); // A, B, A: as it happened
}

/// A relist keeps every listed key until its end: they are the store's own, also when the store was being written
/// at the time (the lookup waits rather than copying the key); the first list, before the store holds anything,
/// looks nothing up.
#[test]
fn a_relist_queues_the_keys_the_store_holds() {
    use std::sync::atomic::Ordering;
    let known = Arc::new(Busy::new(vec![o("foo", 1), o("bar", 2)]));
    let f = RealFifo::with_key_fn(name_key, known.clone());
    f.replace(vec![o("foo", 1), o("bar", 2)]);
    assert_eq!(
        known.waited.load(Ordering::Relaxed),
        0,
        "the first list looks nothing up"
    );
    let first = f.pop(|k, _, _| k.clone()).unwrap();
    assert!(!Arc::ptr_eq(&first, known.key("foo")));
    f.pop(|_, _, _| ()).unwrap();
    f.replace(vec![o("bar", 3), o("foo", 4), o("new", 5)]);
    assert_eq!(known.waited.load(Ordering::Relaxed), 3);
    let popped: Vec<(Key, Delta<Obj>)> = (0..3).map(|_| f.pop(|k, d, _| (k.clone(), d)).unwrap()).collect();
    assert!(Arc::ptr_eq(&popped[0].0, known.key("bar")));
    assert!(Arc::ptr_eq(&popped[1].0, known.key("foo")));
    assert_eq!(&*popped[2].0, "new", "a key the store lacks is the queue's own");
    assert_eq!(popped[1].1, replaced(o("foo", 4)));
    assert!(f.is_empty(), "nothing deleted: every known key was listed");
}
