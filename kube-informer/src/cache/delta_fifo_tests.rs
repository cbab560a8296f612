//! DeltaFIFO tests: the cases of client-go's delta_fifo_test.go (inputs and expected outputs), plus the streamed
//! replace. client-go's informers emit `Replaced` from a relist (EmitDeltaTypeReplaced); ours always do, so cases
//! written for `Sync`-from-Replace expect `Replaced` here. client-go's transformer runs inside the queue; ours runs
//! before objects enter it (once per decoded object), so its transformer case has no counterpart here.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::cache::fifo_model::apply;
use crate::cache::fifo_test_support::*;
use crate::cache::{DeltaType, Store};

fn fifo() -> DeltaFifo<Obj> {
    DeltaFifo::with_key_fn(name_key, None)
}

fn fifo_known(objs: Vec<Arc<Obj>>) -> DeltaFifo<Obj> {
    DeltaFifo::with_key_fn(name_key, Some(Arc::new(Literal(objs))))
}

fn pop(f: &DeltaFifo<Obj>) -> Deltas<Obj> {
    f.pop(|_, d, _| d).expect("queue open")
}

fn pop_val(f: &DeltaFifo<Obj>) -> i32 {
    pop(f).newest().object().val
}

fn deltas(list: Vec<Delta<Obj>>) -> Deltas<Obj> {
    Deltas::from_vec_verbatim(list)
}

#[test]
fn basic_concurrent_producers_keep_per_producer_order() {
    let f = Arc::new(fifo());
    const N: i32 = 500;
    let names_a: Vec<&'static str> = (0..N).map(|i| &*Box::leak(format!("a{i}").into_boxed_str())).collect();
    let names_b: Vec<&'static str> = (0..N).map(|i| &*Box::leak(format!("b{i}").into_boxed_str())).collect();
    let producers: Vec<_> = [names_a, names_b]
        .into_iter()
        .map(|names| {
            let f = f.clone();
            std::thread::spawn(move || {
                for (i, n) in names.into_iter().enumerate() {
                    f.add(o(n, i as i32 + 1));
                }
            })
        })
        .collect();
    let (mut last_a, mut last_b) = (0, 0);
    for _ in 0..2 * N {
        let d = pop(&f);
        let obj = d.newest().object();
        let last = if obj.name.starts_with('a') {
            &mut last_a
        } else {
            &mut last_b
        };
        assert!(obj.val > *last, "{obj:?} out of order after {last}");
        *last = obj.val;
    }
    for p in producers {
        p.join().unwrap();
    }
}

#[test]
fn replace_after_a_queued_delete_still_adds_the_object() {
    // kubernetes#83810: the Replaced delta must not be dropped after a Deleted.
    let f = fifo_known(vec![o("foo", 1)]);
    f.delete(o("foo", 1));
    f.replace([o("foo", 2)]);
    assert_eq!(pop(&f), deltas(vec![deleted(o("foo", 1)), replaced(o("foo", 2))]));
}

#[test]
fn replace_makes_deletions_for_objects_only_in_queue() {
    type Ops = fn(&DeltaFifo<Obj>);
    let obj = o("foo", 2);
    let obj_v2 = o("foo", 3);
    let cases: Vec<(&str, Ops, Deltas<Obj>)> = vec![
        (
            "added object is deleted on replace",
            |f| {
                f.add(o("foo", 2));
                f.replace([]);
            },
            deltas(vec![added(obj.clone()), tomb("foo", obj.clone())]),
        ),
        (
            "replaced object gets a single delete",
            |f| {
                f.add(o("foo", 2));
                f.replace([o("foo", 2)]);
                f.replace([]);
            },
            deltas(vec![
                added(obj.clone()),
                replaced(obj.clone()),
                tomb("foo", obj.clone()),
            ]),
        ),
        (
            "deleted object gets a single delete",
            |f| {
                f.add(o("foo", 2));
                f.delete(o("foo", 2));
                f.replace([]);
            },
            deltas(vec![added(obj.clone()), deleted(obj.clone())]),
        ),
        (
            "twice replaced object gets a single delete",
            |f| {
                f.add(o("foo", 2));
                f.replace([o("foo", 2)]);
                f.replace([o("foo", 2)]);
                f.replace([]);
            },
            deltas(vec![
                added(obj.clone()),
                replaced(obj.clone()),
                replaced(obj.clone()),
                tomb("foo", obj.clone()),
            ]),
        ),
        (
            "added object gets a single delete over several replaces",
            |f| {
                f.add(o("foo", 2));
                f.replace([]);
                f.replace([]);
            },
            deltas(vec![added(obj.clone()), tomb("foo", obj.clone())]),
        ),
        (
            "added, deleted and re-added object is deleted with its newest state",
            |f| {
                f.add(o("foo", 2));
                f.delete(o("foo", 2));
                f.add(o("foo", 3));
                f.replace([]);
            },
            deltas(vec![
                added(obj.clone()),
                deleted(obj.clone()),
                added(obj_v2.clone()),
                tomb("foo", obj_v2.clone()),
            ]),
        ),
    ];
    for (name, ops, want) in cases {
        for f in [fifo_known(vec![]), fifo()] {
            ops(&f);
            assert_eq!(pop(&f), want, "{name}");
            assert!(f.is_empty(), "{name}: extra deltas left");
        }
    }
}

#[test]
fn add_update_delete_collapse_into_one_pop() {
    let f = fifo();
    f.add(o("foo", 10));
    f.update(o("foo", 12));
    f.delete(o("foo", 15));
    assert_eq!(f.list_keys(), vec![Key::from("foo")]);
    assert_eq!(pop_val(&f), 15);
    assert!(f.is_empty());
    assert!(f.get("foo").is_none());
}

#[test]
fn enqueueing_without_known_objects_drops_deletes_of_unknown_keys() {
    let f = fifo();
    f.add(o("foo", 10));
    f.update(o("bar", 15));
    f.add(o("qux", 17));
    f.delete(o("qux", 18));
    // Not queued: baz was never seen.
    f.delete(o("baz", 20));
    for want in [10, 15, 18] {
        assert_eq!(pop_val(&f), want);
    }
    assert!(f.is_empty());
}

#[test]
fn enqueueing_with_known_objects_queues_deletes_of_known_keys() {
    let f = fifo_known(vec![o("foo", 5), o("bar", 6), o("baz", 7)]);
    f.add(o("foo", 10));
    f.update(o("bar", 15));
    // Queued: baz is known.
    f.delete(o("baz", 20));
    for want in [10, 15, 20] {
        assert_eq!(pop_val(&f), want);
    }
    assert!(f.is_empty());
}

#[test]
fn add_then_replace_pops_the_replaced_state_once() {
    let f = fifo();
    f.add(o("foo", 10));
    f.replace([o("foo", 15)]);
    assert_eq!(pop_val(&f), 15);
    assert!(f.is_empty());
}

#[test]
fn resync_skips_objects_with_a_pending_delete() {
    let f = fifo_known(vec![o("foo", 5)]);
    f.delete(o("foo", 10));
    f.resync();
    let d = f.get("foo").unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d.oldest().delta_type(), DeltaType::Deleted);
}

#[test]
fn resync_queues_sync_for_known_objects() {
    let f = fifo_known(vec![o("foo", 5)]);
    f.resync();
    assert_eq!(f.get("foo").unwrap(), deltas(vec![Delta::Sync(o("foo", 5))]));
    // Without known objects there is nothing to resync.
    let bare = fifo();
    bare.resync();
    assert!(bare.is_empty());
}

#[test]
fn delete_of_an_object_only_in_the_queue_is_propagated() {
    let f = fifo_known(vec![]);
    f.add(o("foo", 5));
    f.delete(o("foo", 6));
    let d = f.get("foo").unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(d.newest().delta_type(), DeltaType::Deleted);
}

#[test]
fn replace_makes_deletions() {
    let known = || vec![o("foo", 5), o("bar", 6), o("baz", 7)];

    // A pre-existing delete.
    let f = fifo_known(known());
    f.delete(o("baz", 10));
    f.replace([o("foo", 5)]);
    assert_eq!(pop(&f), deltas(vec![deleted(o("baz", 10))]));
    assert_eq!(pop(&f), deltas(vec![replaced(o("foo", 5))]));
    assert_eq!(pop(&f), deltas(vec![tomb("bar", o("bar", 6))]));

    // A pre-existing add.
    let f = fifo_known(known());
    f.add(o("baz", 10));
    f.replace([o("foo", 5)]);
    assert_eq!(pop(&f), deltas(vec![added(o("baz", 10)), tomb("baz", o("baz", 10))]));
    assert_eq!(pop(&f), deltas(vec![replaced(o("foo", 5))]));
    assert_eq!(pop(&f), deltas(vec![tomb("bar", o("bar", 6))]));

    // Deleted and re-created in the queue, then deleted by a replace: the tombstone carries the queued state.
    let f = fifo_known(known());
    f.delete(o("bar", 6));
    f.add(o("bar", 100));
    f.replace([o("foo", 5)]);
    assert_eq!(
        pop(&f),
        deltas(vec![
            deleted(o("bar", 6)),
            added(o("bar", 100)),
            tomb("bar", o("bar", 100))
        ])
    );
    assert_eq!(pop(&f), deltas(vec![replaced(o("foo", 5))]));
    assert_eq!(pop(&f), deltas(vec![tomb("baz", o("baz", 7))]));

    // Replaced first: the deletion uses the newest state.
    let f = fifo_known(known());
    f.replace([o("bar", 100), o("foo", 5)]);
    f.replace([o("foo", 5)]);
    assert_eq!(
        pop(&f),
        deltas(vec![replaced(o("bar", 100)), tomb("bar", o("bar", 100))])
    );
    assert_eq!(pop(&f), deltas(vec![replaced(o("foo", 5)), replaced(o("foo", 5))]));
    assert_eq!(pop(&f), deltas(vec![tomb("baz", o("baz", 7))]));

    // No known objects.
    let f = fifo();
    f.add(o("baz", 10));
    f.replace([o("foo", 5)]);
    assert_eq!(pop(&f), deltas(vec![added(o("baz", 10)), tomb("baz", o("baz", 10))]));
    assert_eq!(pop(&f), deltas(vec![replaced(o("foo", 5))]));
    assert!(f.is_empty());
}

#[test]
fn replace_emits_replaced() {
    let f = fifo_known(vec![o("foo", 5)]);
    f.replace([o("foo", 5)]);
    assert_eq!(pop(&f), deltas(vec![replaced(o("foo", 5))]));
}

#[test]
fn update_then_resync_keeps_only_the_update() {
    let f = fifo_known(vec![o("foo", 5)]);
    f.update(o("foo", 6));
    f.resync();
    assert_eq!(pop(&f), deltas(vec![updated(o("foo", 6))]));
    assert!(f.is_empty());
}

#[test]
fn has_synced_counts_deletions_of_the_first_replace() {
    let f = fifo_known(vec![o("foo", 5), o("bar", 6), o("baz", 7)]);
    f.replace([o("foo", 5)]);
    let want = [
        deltas(vec![replaced(o("foo", 5))]),
        deltas(vec![tomb("bar", o("bar", 6))]),
        deltas(vec![tomb("baz", o("baz", 7))]),
    ];
    for w in want {
        assert!(!f.has_synced());
        let (d, initial) = f.pop(|_, d, initial| (d, initial)).unwrap();
        assert_eq!(d, w);
        assert!(initial, "popped before sync: part of the initial list");
    }
    assert!(f.has_synced());
}

#[test]
fn objects_do_not_jump_the_line() {
    let f = fifo();
    f.add(o("foo", 10));
    f.add(o("bar", 1));
    f.add(o("foo", 11));
    f.add(o("foo", 13));
    f.add(o("zab", 30));
    assert_eq!(pop_val(&f), 13);
    f.add(o("foo", 14));
    assert_eq!(pop_val(&f), 1);
    assert_eq!(pop_val(&f), 30);
    assert_eq!(pop_val(&f), 14);
}

#[test]
fn has_synced_table() {
    type Action = fn(&DeltaFifo<Obj>);
    let cases: Vec<(Vec<Action>, bool)> = vec![
        (vec![], false),
        (vec![|f| f.add(o("a", 1))], true),
        (vec![|f| f.replace([])], true),
        (vec![|f| f.replace([o("a", 1), o("b", 2)])], false),
        (vec![|f| f.replace([o("a", 1), o("b", 2)]), |f| drop(pop(f))], false),
        (
            vec![|f| f.replace([o("a", 1), o("b", 2)]), |f| drop(pop(f)), |f| {
                drop(pop(f))
            }],
            true,
        ),
        // Duplicate keys in one list (a broken server): one queue entry, synced after one pop.
        (vec![|f| f.replace([o("a", 1), o("a", 2)]), |f| drop(pop(f))], true),
    ];
    for (i, (actions, want)) in cases.into_iter().enumerate() {
        let f = fifo();
        for a in actions {
            a(&f);
        }
        assert_eq!(f.has_synced(), want, "case {i}");
    }
}

#[test]
fn close_unblocks_every_blocked_pop() {
    let f = Arc::new(fifo_known(vec![o("foo", 5)]));
    let (tx, rx) = crossbeam_channel::unbounded();
    let poppers: Vec<_> = (0..10)
        .map(|_| {
            let (f, tx) = (f.clone(), tx.clone());
            std::thread::spawn(move || tx.send(f.pop(|_, _, _| ())).unwrap())
        })
        .collect();
    f.close();
    for _ in 0..10 {
        let res = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("pop returned after close");
        assert_eq!(res, Err(Closed));
    }
    for p in poppers {
        p.join().unwrap();
    }
    assert!(f.is_closed());
}

#[test]
fn requeued_deltas_go_to_the_back() {
    let f = fifo();
    f.add(o("a", 1));
    f.add(o("b", 2));
    let r = f.pop_or_requeue(|_, d, _| Err((d, "retry"))).unwrap();
    assert_eq!(r, "retry");
    assert_eq!(f.list_keys(), vec![Key::from("b"), Key::from("a")]);
    assert_eq!(pop_val(&f), 2);
    assert_eq!(pop_val(&f), 1);
}

// Streamed replace: what client-go cannot do because its Replace takes the whole list.

#[test]
fn restarted_replace_forgets_what_the_aborted_list_saw() {
    let f = fifo_known(vec![]);
    let mut s = f.begin_replace();
    s.add(o("a", 1));
    s.add(o("b", 1));
    // The continue token expired: a full list starts over and no longer contains "a".
    s.restart();
    s.add(o("b", 2));
    assert_eq!(s.len(), 1);
    s.finish();
    assert_eq!(pop(&f), deltas(vec![replaced(o("a", 1)), tomb("a", o("a", 1))]));
    assert_eq!(pop(&f), deltas(vec![replaced(o("b", 1)), replaced(o("b", 2))]));
}

#[test]
fn items_popped_while_a_replace_streams_are_not_deleted_by_it() {
    let store: Arc<Store<Obj>> = Arc::new(Store::default());
    let known: Arc<dyn KnownObjects<Obj>> = store.clone();
    let f = DeltaFifo::with_key_fn(name_key, Some(known));
    store.put("gone".into(), o("gone", 0));
    let apply = |f: &DeltaFifo<Obj>| {
        f.pop(|key, d, initial| {
            match d.newest() {
                Delta::Deleted(_) => {
                    store.delete(key);
                }
                other => {
                    store.put(key.clone(), other.object().clone());
                }
            }
            initial
        })
        .unwrap()
    };
    let mut s = f.begin_replace();
    s.add(o("a", 1));
    // The processing thread pops "a" and stores it before the list ends.
    assert!(apply(&f), "popped during the first list: initial");
    s.add(o("b", 1));
    s.finish();
    assert!(!f.has_synced(), "b and the tombstone for `gone` are still queued");
    assert_eq!(f.list_keys(), vec![Key::from("b"), Key::from("gone")]);
    assert!(apply(&f));
    assert!(apply(&f));
    assert!(f.has_synced());
    let mut keys: Vec<_> = store.list_keys().iter().map(|k| k.to_string()).collect();
    keys.sort();
    assert_eq!(keys, ["a", "b"]);
}

#[test]
fn an_unfinished_replace_detects_no_deletions_and_does_not_populate() {
    let f = fifo_known(vec![o("old", 1)]);
    {
        let mut s = f.begin_replace();
        s.add(o("a", 1));
        // Dropped: the list failed half way.
    }
    assert!(!f.has_synced());
    assert_eq!(f.list_keys(), vec![Key::from("a")]);
    assert_eq!(pop(&f), deltas(vec![replaced(o("a", 1))]));
    assert!(f.is_empty());
}

#[test]
fn sync_after_a_queued_delete_is_dropped() {
    let f = fifo_known(vec![o("foo", 1)]);
    f.delete(o("foo", 1));
    // A resync racing the delete (client-go's willObjectBeDeletedLocked).
    let mut st = f.lock();
    f.queue_action(&mut st, "foo".into(), Delta::Sync(o("foo", 1)), super::Wake::Now);
    drop(st);
    assert_eq!(pop(&f), deltas(vec![deleted(o("foo", 1))]));
}

#[test]
fn pop_batch_takes_up_to_max_objects_in_queue_order() {
    let f = fifo();
    for (i, name) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
        f.add(o(name, i as i32));
    }
    f.update(o("a", 10));
    let mut seen = Vec::new();
    let n = f
        .pop_batch(3, |k, d, initial| seen.push((k.to_string(), d.len(), initial)))
        .unwrap();
    assert_eq!(n, 3);
    // Adds before any replace count as synced (client-go's populated rule): nothing is "initial".
    assert_eq!(
        seen,
        [("a".into(), 2, false), ("b".into(), 1, false), ("c".into(), 1, false)]
    );
    assert_eq!(f.pop_batch(10, |_, _, _| {}).unwrap(), 2);
    f.close();
    assert_eq!(f.pop_batch(10, |_, _, _| {}), Err(Closed));
}

#[test]
fn pop_batch_marks_the_first_replace_as_initial_until_it_is_popped() {
    let f = fifo();
    f.replace(vec![o("a", 1), o("b", 2)]);
    f.add(o("c", 3));
    let mut flags = Vec::new();
    while !f.is_empty() {
        f.pop_batch(2, |k, _, initial| flags.push((k.to_string(), initial)))
            .unwrap();
    }
    assert_eq!(flags, [("a".into(), true), ("b".into(), true), ("c".into(), false)]);
    assert!(f.has_synced());
}

#[test]
fn later_pushes_stay_unwoken_until_a_wake_or_a_now_push_and_then_reach_a_blocked_pop() {
    let f = Arc::new(fifo());
    let (tx, rx) = crossbeam_channel::unbounded();
    let popper = {
        let f = f.clone();
        std::thread::spawn(move || {
            while let Ok(n) = f.pop_batch(100, |k, _, _| tx.send(k.to_string()).unwrap()) {
                assert!(n >= 1);
            }
        })
    };
    f.push_all(
        &mut vec![Delta::Added(o("a", 1)), Delta::Updated(o("b", 1))],
        Wake::Later,
    );
    assert!(f.has_unwoken());
    f.wake();
    assert!(!f.has_unwoken());
    let got: Vec<String> = (0..2)
        .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    assert_eq!(got, ["a", "b"]);
    // A `Now` push after `Later` ones wakes for all of them.
    f.push_all(&mut vec![Delta::Added(o("c", 1))], Wake::Later);
    f.add(o("d", 1));
    assert!(!f.has_unwoken());
    let got: Vec<String> = (0..2)
        .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    assert_eq!(got, ["c", "d"]);
    // A streamed replace whose items were all `Later` wakes at `finish`.
    let mut session = f.begin_replace();
    session.add_waking(o("e", 1), Wake::Later);
    session.finish();
    assert!(!f.has_unwoken());
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), "e");
    f.close();
    popper.join().unwrap();
}

#[test]
fn queued_keys_share_the_stores_key_instead_of_allocating() {
    use crate::cache::Indexers;
    let store: Arc<Store<Obj>> = Arc::new(Store::new(Indexers::new()));
    let stored: Key = "a".into();
    store.put(stored.clone(), o("a", 1));
    let f = DeltaFifo::with_key_fn(name_key, Some(store.clone() as Arc<dyn KnownObjects<Obj>>));
    f.update(o("a", 2));
    f.add(o("b", 1));
    let keys = f.list_keys();
    assert!(Arc::ptr_eq(&keys[0], &stored), "the store's Arc<str>, not a copy");
    assert_eq!(&*keys[1], "b");
}

#[test]
fn a_drained_queue_gives_back_what_a_burst_grew() {
    let f = fifo();
    let names: Vec<&'static str> = (0..5000)
        .map(|i| &*Box::leak(format!("o{i}").into_boxed_str()))
        .collect();
    for name in &names {
        f.add(o(name, 1));
    }
    let grown = f.lock().items.capacity();
    assert!(grown >= 5000);
    while !f.is_empty() {
        f.pop_batch(64, |_, _, _| {}).unwrap();
    }
    let st = f.lock();
    assert!(st.items.capacity() < grown && st.items.capacity() <= 2 * KEEP_CAPACITY);
    assert!(st.queue.capacity() <= 2 * KEEP_CAPACITY);
}

// --- pop_batch processes outside the lock (the protocol both queues share: fifo_lock_tests.rs) -------------------------------------------------------------------------

/// A queue whose known objects are a real store, as in the informer.
fn fifo_with_store() -> (Arc<DeltaFifo<Obj>>, Arc<Store<Obj>>) {
    let store: Arc<Store<Obj>> = Arc::new(Store::new(crate::cache::Indexers::new()));
    let f = DeltaFifo::with_key_fn(name_key, Some(store.clone() as Arc<dyn KnownObjects<Obj>>));
    (Arc::new(f), store)
}

#[test]
fn a_delete_during_a_batch_is_judged_by_the_batch_not_the_stale_store() {
    let (f, store) = fifo_with_store();
    store.put("gone".into(), o("gone", 1));
    f.add(o("new", 1));
    f.delete(o("gone", 1));
    let (tx, rx) = crossbeam_channel::unbounded();
    let popper = {
        let (f, store) = (f.clone(), store.clone());
        std::thread::spawn(move || {
            f.pop_batch(64, |key, deltas, _| {
                if &**key == "new" {
                    // "new" is being added (not in the store yet) and "gone" being deleted (still in the store).
                    f.delete(o("new", 1));
                    f.delete(o("gone", 1));
                    tx.send(f.list_keys()).unwrap();
                }
                apply(&store, key, deltas);
            })
            .unwrap();
        })
    };
    let queued = rx.recv_timeout(WAIT).expect("deletes do not wait for the batch");
    popper.join().unwrap();
    // The add in flight makes the delete real; the delete in flight already reports "gone".
    assert_eq!(queued.iter().map(|k| &**k).collect::<Vec<_>>(), ["new"]);
    let last = f.pop(|k, d, _| {
        let popped = d.clone();
        apply(&store, k, d);
        popped
    });
    assert_eq!(last.unwrap(), deltas(vec![deleted(o("new", 1))]));
    assert!(store.is_empty());
}

#[test]
fn a_pushed_batch_is_queued_as_its_changes_one_by_one() {
    let f = fifo_known(vec![o("k", 1)]);
    let mut batch = vec![
        Delta::Added(o("a", 1)),
        Delta::Updated(o("a", 2)),
        // Neither queued nor known: a relist already reported this deletion.
        deleted(o("gone", 1)),
        deleted(o("k", 2)),
        deleted(o("a", 3)),
    ];
    f.push_all(&mut batch, Wake::Later);
    assert!(batch.is_empty() && batch.capacity() >= 5, "emptied, its capacity kept");
    assert!(f.has_unwoken(), "`Later` applies to the whole batch");
    let keys: Vec<_> = f.list_keys().iter().map(|k| k.to_string()).collect();
    assert_eq!(keys, ["a", "k"]);
    let kinds: Vec<_> = f.get("a").unwrap().iter().map(|d| d.delta_type()).collect();
    assert_eq!(kinds, [DeltaType::Added, DeltaType::Updated, DeltaType::Deleted]);
    assert_eq!(f.get("k").unwrap().newest(), &deleted(o("k", 2)));

    batch.push(Delta::Added(o("b", 1)));
    f.push_all(&mut batch, Wake::Now);
    assert!(
        !f.has_unwoken(),
        "a `Now` batch wakes for what was queued before it too"
    );

    // A batch whose last change queues nothing (a deletion already reported) still wakes for the others.
    batch.push(Delta::Added(o("c", 1)));
    batch.push(deleted(o("gone", 2)));
    f.push_all(&mut batch, Wake::Now);
    assert!(!f.has_unwoken());
    assert_eq!(f.len(), 4);
    assert_eq!(f.batches_pushed(), 3);

    // An empty `Now` batch (a burst of bookmarks) wakes for what earlier `Later` batches queued, taking no lock.
    batch.push(Delta::Added(o("d", 1)));
    f.push_all(&mut batch, Wake::Later);
    assert!(f.has_unwoken());
    f.push_all(&mut batch, Wake::Now);
    assert!(!f.has_unwoken());
    assert_eq!(f.batches_pushed(), 4);
}

/// The example the queue's docs had while it was public: an object's changes popped together, in order.
#[test]
fn an_objects_changes_pop_together() {
    use crate::object::{ObjectMeta, core::ConfigMap};

    let fifo = DeltaFifo::<ConfigMap>::new(None);
    fifo.add(Arc::new(ConfigMap::new(ObjectMeta::namespaced("ns", "a"))));
    fifo.update(Arc::new(
        ConfigMap::new(ObjectMeta::namespaced("ns", "a")).with("k", "v"),
    ));
    let kinds = fifo.pop(|key, deltas, _initial| {
        assert_eq!(&**key, "ns/a");
        deltas.iter().map(|d| d.delta_type()).collect::<Vec<_>>()
    });
    assert_eq!(kinds.unwrap(), [DeltaType::Added, DeltaType::Updated]);
}

/// A relist keeps every listed key until its end: they are the store's own, also when the store was being written
/// at the time (the lookup waits rather than copying the key); the first list looks nothing up.
#[test]
fn a_relist_queues_the_keys_the_store_holds() {
    use std::sync::atomic::Ordering;
    let known = Arc::new(Busy::new(vec![o("foo", 1), o("bar", 2)]));
    let f = DeltaFifo::with_key_fn(name_key, Some(known.clone() as Arc<dyn KnownObjects<Obj>>));
    f.replace(vec![o("foo", 1), o("bar", 2)]);
    assert_eq!(
        known.waited.load(Ordering::Relaxed),
        0,
        "the first list looks nothing up"
    );
    let first = f.pop(|k, _, _| k.clone()).unwrap();
    assert!(!Arc::ptr_eq(&first, known.key("foo")));
    pop(&f);
    f.replace(vec![o("bar", 3), o("foo", 4), o("new", 5)]);
    assert_eq!(known.waited.load(Ordering::Relaxed), 3);
    let popped: Vec<(Key, Deltas<Obj>)> = (0..3).map(|_| f.pop(|k, d, _| (k.clone(), d)).unwrap()).collect();
    assert!(Arc::ptr_eq(&popped[0].0, known.key("bar")));
    assert!(Arc::ptr_eq(&popped[1].0, known.key("foo")));
    assert_eq!(&*popped[2].0, "new", "a key the store lacks is the queue's own");
    assert_eq!(popped[1].1, deltas(vec![replaced(o("foo", 4))]));
    assert!(f.is_empty(), "nothing deleted: every known key was listed");
}
