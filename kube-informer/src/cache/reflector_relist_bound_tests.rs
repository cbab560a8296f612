//! A relist reads no further than [`RELIST_AHEAD`] objects ahead of what the processing thread has applied, however
//! slow that thread is (a handler holding it back), and a stop ends the wait.

use std::thread::JoinHandle;

use super::*;
use crate::cache::fifo_test_support::yield_until;
use crate::cache::{RealFifo, Store};

/// More objects than a relist may queue ahead, several times over.
const OBJECTS: usize = 3 * RELIST_AHEAD;

fn objects(rv: &str) -> Vec<ConfigMap> {
    (0..OBJECTS).map(|i| cm(&format!("o{i}"), rv)).collect()
}

/// A reflector over the informer's queue and store: its first list applied, its watch answered 410, its relist of
/// the same objects at resourceVersion 2 running on a thread of its own; the thread's result is `step`'s.
struct Relisting {
    fifo: Arc<RealFifo<ConfigMap>>,
    store: Arc<Store<ConfigMap>>,
    stop: Arc<StopSignal>,
    relist: JoinHandle<bool>,
}

fn relisting() -> Relisting {
    let script = Arc::new(Script::default());
    let store: Arc<Store<ConfigMap>> = Arc::new(Store::default());
    let fifo = Arc::new(RealFifo::new(store.clone()));
    let stop = Arc::new(StopSignal::new());
    let config = ReflectorConfig {
        streaming_list: false,
        relist_jitter: Duration::ZERO,
        ..Default::default()
    };
    let lw: Arc<dyn ListerWatcher<ConfigMap>> = script.clone();
    let mut r = Reflector::new("test".into(), lw, fifo.clone(), config, stop.clone());
    script.page(objects("1"), "1", None);
    assert!(r.step(), "listed");
    while !fifo.is_empty() {
        apply_one_batch(&fifo, &store);
    }
    assert_eq!(store.len(), OBJECTS);
    script.watch_error(api_error(410, "Gone"));
    script.page(objects("2"), "2", None);
    while r.state_name() != "List" {
        assert!(r.step(), "the watch answered 410");
    }
    let relist = std::thread::spawn(move || r.step());
    Relisting {
        fifo,
        store,
        stop,
        relist,
    }
}

/// The processing thread's work for one batch: the popped changes written to the store.
fn apply_one_batch(fifo: &RealFifo<ConfigMap>, store: &Store<ConfigMap>) {
    fifo.pop_batch(64, |key, delta, _| {
        store.put(key.clone(), delta.object().clone());
    })
    .unwrap();
}

/// Yields until the relist waits for room or has ended.
fn until_waiting_or_done(t: &Relisting) {
    let done = || t.fifo.waiting_for_room() > 0 || t.relist.is_finished();
    yield_until(done, "the relist waits or ends");
}

#[test]
fn a_relist_behind_a_slow_processing_thread_queues_at_most_its_bound() {
    let t = relisting();
    // A processing thread that applies one batch only when the relist can go no further.
    let mut most = 0;
    loop {
        until_waiting_or_done(&t);
        // Read before the length: a relist that ended queues nothing after.
        let ended = t.relist.is_finished();
        let queued = t.fifo.len();
        assert!(
            queued <= RELIST_AHEAD + 1,
            "{queued} changes queued: the relist read more than {RELIST_AHEAD} ahead"
        );
        most = most.max(queued);
        if queued > 0 {
            apply_one_batch(&t.fifo, &t.store);
        } else if ended {
            break;
        }
    }
    assert!(t.relist.join().unwrap(), "relisted");
    assert!(most > RELIST_AHEAD, "the relist was held back at its bound");
    // Nothing lost: every object at the relisted version, nothing else queued.
    assert_eq!(t.store.len(), OBJECTS);
    assert!(
        t.store
            .list()
            .iter()
            .all(|o| o.metadata.resource_version.as_deref() == Some("2"))
    );
    assert!(t.fifo.is_empty());
}

#[test]
fn stop_ends_a_relist_waiting_for_room() {
    let t = relisting();
    until_waiting_or_done(&t);
    assert!(!t.relist.is_finished(), "the relist waits for the processing thread");
    t.stop.stop();
    assert!(!t.relist.join().unwrap(), "stopped while waiting");
}
