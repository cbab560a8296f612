//! The protocol both queues share (`FifoLock`), tested over each: a batch popped under the lock is processed outside
//! it while pushes go on, and whatever must see the store as the batch leaves it waits for the batch.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use crate::cache::fifo_model::apply;
use crate::cache::fifo_test_support::*;
use crate::cache::{DeltaFifo, Deltas, Fifo, KnownObjects, Queue, RealFifo, Store};

/// What the tests do to a queue, whichever it is.
struct Under {
    queue: Queue<Obj>,
    store: Arc<Store<Obj>>,
}

impl Under {
    /// A queue of kind `fifo` whose known objects are a real store, as in the informer.
    fn new(fifo: Fifo) -> Under {
        let store: Arc<Store<Obj>> = Arc::new(Store::default());
        let known = store.clone() as Arc<dyn KnownObjects<Obj>>;
        let queue = match fifo {
            Fifo::Real => Queue::Real(Arc::new(RealFifo::with_key_fn(name_key, known))),
            Fifo::Delta => Queue::Delta(Arc::new(DeltaFifo::with_key_fn(name_key, Some(known)))),
        };
        Under { queue, store }
    }

    fn add(&self, x: Arc<Obj>) {
        match &self.queue {
            Queue::Real(f) => f.add(x),
            Queue::Delta(f) => f.add(x),
        }
    }

    fn update(&self, x: Arc<Obj>) {
        match &self.queue {
            Queue::Real(f) => f.update(x),
            Queue::Delta(f) => f.update(x),
        }
    }

    fn list_keys(&self) -> Vec<String> {
        let keys = match &self.queue {
            Queue::Real(f) => f.list_keys(),
            Queue::Delta(f) => f.list_keys(),
        };
        keys.iter().map(|k| k.to_string()).collect()
    }

    /// Pops everything queued, one item at a time, writing the store.
    fn drain(&self) -> Vec<Deltas<Obj>> {
        let mut out = Vec::new();
        while self.queue.len() > 0 {
            out.extend(self.drain_one());
        }
        out
    }

    /// Pops one item (blocking until there is one), writing the store.
    fn drain_one(&self) -> Option<Deltas<Obj>> {
        self.queue
            .pop_batch(1, |items| {
                let mut out = None;
                for (key, deltas, _) in items {
                    out = Some(deltas.clone());
                    apply(&self.store, &key, deltas);
                }
                out
            })
            .unwrap()
    }
}

fn one(delta: crate::cache::Delta<Obj>) -> Deltas<Obj> {
    Deltas::new(delta)
}

/// Pops one batch through `queue` on another thread (as the informer's processing thread does) and holds it
/// half-processed: the first item is written to `store`, then the thread waits for the returned sender before
/// writing the rest. The receiver yields once the batch has started.
fn hold_batch(queue: Queue<Obj>, store: &Arc<Store<Obj>>) -> (Sender<()>, Receiver<()>, JoinHandle<()>) {
    let (go_tx, go_rx) = crossbeam_channel::bounded::<()>(1);
    let (started_tx, started_rx) = crossbeam_channel::bounded::<()>(1);
    let store = store.clone();
    let popper = std::thread::spawn(move || {
        queue
            .pop_batch(64, |items| {
                for (i, (key, deltas, _)) in items.enumerate() {
                    apply(&store, &key, deltas);
                    if i == 0 {
                        started_tx.send(()).unwrap();
                        go_rx.recv_timeout(WAIT).expect("the test lets the batch finish");
                    }
                }
            })
            .unwrap();
    });
    (go_tx, started_rx, popper)
}

/// Runs `op` on another thread while a batch of `queue` is held, checks that it waits for the batch, then lets the
/// batch finish.
fn waits_for_the_batch(queue: Queue<Obj>, store: &Arc<Store<Obj>>, op: impl FnOnce() + Send + 'static) {
    let (go, started, popper) = hold_batch(queue.clone(), store);
    started.recv_timeout(WAIT).unwrap();
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
    let waiter = std::thread::spawn(move || {
        op();
        done_tx.send(()).unwrap();
    });
    // Either the operation blocks in `settled` (as it must), or it finished without waiting for the batch.
    let deadline = Instant::now() + WAIT;
    while queue.settling() == 0 {
        assert!(
            done_rx.try_recv().is_err(),
            "ran while a popped batch was not yet in the store"
        );
        assert!(Instant::now() < deadline, "neither waited nor finished");
        std::thread::yield_now();
    }
    go.send(()).unwrap();
    done_rx.recv_timeout(WAIT).unwrap();
    waiter.join().unwrap();
    popper.join().unwrap();
}

#[test]
fn pushes_go_on_while_a_popped_batch_is_being_processed() {
    for fifo in Fifo::ALL {
        let q = Under::new(fifo);
        q.add(o("a", 1));
        q.add(o("b", 1));
        let (go, started, popper) = hold_batch(q.queue.clone(), &q.store);
        started.recv_timeout(WAIT).unwrap();
        // The batch holds a and b; the queue takes more meanwhile, including a newer a.
        q.update(o("a", 2));
        q.add(o("c", 1));
        assert_eq!(q.list_keys(), ["a", "c"], "{fifo:?}");
        go.send(()).unwrap();
        popper.join().unwrap();
        assert_eq!(q.store.get("a").unwrap().val, 1);
        assert_eq!(q.drain(), [one(updated(o("a", 2))), one(added(o("c", 1)))], "{fifo:?}");
    }
}

#[test]
fn a_resync_waits_for_the_batch_so_it_never_queues_a_version_the_batch_replaces() {
    for fifo in Fifo::ALL {
        let q = Under::new(fifo);
        q.store.put("a".into(), o("a", 1));
        q.store.put("z".into(), o("z", 1));
        q.update(o("z", 2));
        q.update(o("a", 2));
        let queue = q.queue.clone();
        waits_for_the_batch(q.queue.clone(), &q.store, move || queue.resync());
        // Without the wait the resync would queue Sync(a=1), which, popped later, would put a back to 1.
        let mut synced = q.drain();
        synced.sort_by_key(|d| d.newest().object().name);
        let sync = |x| one(crate::cache::Delta::Sync(x));
        assert_eq!(synced, [sync(o("a", 2)), sync(o("z", 2))], "{fifo:?}");
    }
}

#[test]
fn a_replace_waits_for_the_batch_so_it_detects_deletions_of_objects_in_it() {
    for fifo in Fifo::ALL {
        let q = Under::new(fifo);
        q.add(o("a", 1));
        q.add(o("b", 1));
        // The relist has only "a": "b", popped but not yet in the store, must get a tombstone.
        let queue = q.queue.clone();
        waits_for_the_batch(q.queue.clone(), &q.store, move || {
            let mut session = queue.begin_replace();
            session.add(o("a", 1));
            session.finish();
        });
        assert_eq!(
            q.drain(),
            [one(replaced(o("a", 1))), one(tomb("b", o("b", 1)))],
            "{fifo:?}"
        );
    }
}

#[test]
fn exclusive_sees_the_store_after_the_popped_batch() {
    for fifo in Fifo::ALL {
        let q = Under::new(fifo);
        q.add(o("a", 1));
        q.add(o("b", 1));
        let seen = Arc::new(parking_lot::Mutex::new(0));
        let (queue, store, s) = (q.queue.clone(), q.store.clone(), seen.clone());
        waits_for_the_batch(q.queue.clone(), &q.store, move || {
            queue.exclusive(|| *s.lock() = store.len())
        });
        assert_eq!(*seen.lock(), 2, "{fifo:?}");
    }
}

#[test]
fn the_queue_is_not_synced_until_the_batch_with_the_last_initial_item_is_processed() {
    for fifo in Fifo::ALL {
        let q = Under::new(fifo);
        let mut session = q.queue.begin_replace();
        session.add(o("a", 1));
        session.add(o("b", 1));
        session.finish();
        q.add(o("c", 1));
        let mut seen = Vec::new();
        q.queue
            .pop_batch(64, |items| {
                for (key, deltas, initial) in items {
                    seen.push((key.to_string(), initial, q.queue.has_synced()));
                    apply(&q.store, &key, deltas);
                }
            })
            .unwrap();
        // "c" came after the initial list, in the same batch: not initial, but the queue has not synced while the
        // batch is still being written.
        assert_eq!(
            seen,
            [
                ("a".into(), true, false),
                ("b".into(), true, false),
                ("c".into(), false, false)
            ],
            "{fifo:?}"
        );
        assert!(q.queue.has_synced());
    }
}

#[test]
fn a_panic_while_processing_a_batch_ends_the_batch() {
    for fifo in Fifo::ALL {
        let q = Arc::new(Under::new(fifo));
        q.add(o("a", 1));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            q.queue.pop_batch(64, |_| panic!("handler bug")).unwrap();
        }));
        assert!(caught.is_err());
        // Nothing waits for the abandoned batch: a resync and further pops go on.
        let (tx, rx) = crossbeam_channel::bounded(1);
        let after = {
            let q = q.clone();
            std::thread::spawn(move || {
                q.queue.resync();
                q.add(o("b", 1));
                let popped = q.queue.pop_batch(64, |items| {
                    let mut n = 0;
                    for (key, deltas, _) in items {
                        apply(&q.store, &key, deltas);
                        n += 1;
                    }
                    n
                });
                tx.send(popped).unwrap();
            })
        };
        assert_eq!(rx.recv_timeout(WAIT).expect("the batch ended"), Ok(1), "{fifo:?}");
        after.join().unwrap();
        assert_eq!(q.store.list_keys().iter().map(|k| &**k).collect::<Vec<_>>(), ["b"]);
    }
}

/// Names for the bound tests' objects (the test object's name is `&'static str`).
const NAMES: [&str; 12] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];

/// Yields until `queue`'s producer waits for room or `producer` has ended.
fn until_waiting_or_done<T>(queue: &Queue<Obj>, producer: &JoinHandle<T>) {
    let waiting = || match queue {
        Queue::Real(f) => f.waiting_for_room(),
        Queue::Delta(f) => f.waiting_for_room(),
    };
    yield_until(|| waiting() > 0 || producer.is_finished(), "the relist waits or ends");
}

#[test]
fn a_bounded_relist_waits_for_the_processing_thread_and_loses_nothing() {
    const AHEAD: usize = 4;
    for fifo in Fifo::ALL {
        let q = Arc::new(Under::new(fifo));
        for name in NAMES {
            q.add(o(name, 1));
        }
        q.drain();
        let stop = Arc::new(crate::stop::StopSignal::new());
        let queue = q.queue.clone();
        let producer = std::thread::spawn(move || {
            let mut session = queue.begin_replace().bounded(AHEAD, stop);
            for name in NAMES {
                session.add(o(name, 2));
            }
            session.finish();
        });
        let mut applied = Vec::new();
        loop {
            until_waiting_or_done(&q.queue, &producer);
            // Read before the length: a producer that ended queues nothing after.
            let ended = producer.is_finished();
            let queued = q.queue.len();
            assert!(queued <= AHEAD + 1, "{fifo:?}: {queued} queued");
            if queued > 0 {
                applied.extend(q.drain_one());
            } else if ended {
                break;
            }
        }
        producer.join().unwrap();
        assert_eq!(
            applied,
            NAMES.map(|n| one(replaced(o(n, 2)))),
            "{fifo:?}: in order, none lost"
        );
    }
}

#[test]
fn closing_the_queue_or_stopping_ends_the_wait_for_room() {
    for (fifo, close) in [
        (Fifo::Real, true),
        (Fifo::Delta, true),
        (Fifo::Real, false),
        (Fifo::Delta, false),
    ] {
        let q = Under::new(fifo);
        q.add(o("a", 1));
        q.drain();
        let stop = Arc::new(crate::stop::StopSignal::new());
        let (queue, stop2) = (q.queue.clone(), stop.clone());
        let producer = std::thread::spawn(move || {
            let mut session = queue.begin_replace().bounded(2, stop2);
            for name in NAMES {
                session.add(o(name, 2));
            }
        });
        until_waiting_or_done(&q.queue, &producer);
        assert!(!producer.is_finished(), "{fifo:?}: nothing pops, the relist waits");
        if close {
            q.queue.close();
        } else {
            stop.stop();
        }
        producer.join().unwrap();
    }
}
