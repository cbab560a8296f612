//! Unit tests of the basic queue: its invariants under random operations, checked against client-go's algorithm,
//! and the waiters it wakes. Helpers here are shared with the other workqueue unit tests.

use super::*;
use crate::clock::FakeClock;
use std::collections::HashSet;
use std::thread;

/// Checks every invariant written on `Inner`'s fields.
pub(crate) fn check_invariants<K: Item + fmt::Debug>(inner: &Inner<K>) {
    let mut queued = HashSet::new();
    for key in &inner.queue {
        assert!(queued.insert(key.clone()), "{key:?} is queued twice");
        assert!(
            matches!(inner.items.get(key).map(|i| i.work), Some(Work::Queued { .. })),
            "queued {key:?} is not in the Queued state"
        );
    }
    let (mut processing, mut redo, mut waiting) = (0, 0, 0);
    for (key, item) in &inner.items {
        assert!(!item.is_idle(), "idle {key:?} left in the map");
        match item.work {
            Work::Queued { .. } => assert!(queued.contains(key), "{key:?} is Queued but not in the queue"),
            Work::Processing { redo: r, .. } => {
                processing += 1;
                redo += usize::from(r.is_some());
            }
            Work::Idle => {}
        }
        if let Some(w) = item.waiting {
            waiting += 1;
            assert!(
                inner
                    .heap
                    .iter()
                    .any(|e| e.0.seq == w.seq && e.0.ready_at == w.ready_at && e.0.key == *key),
                "{key:?} is waiting without its heap entry"
            );
        }
    }
    assert_eq!(processing, inner.processing, "processing count");
    assert_eq!(redo, inner.redo, "redo count");
    assert_eq!(waiting, inner.waiting, "waiting count");
}

/// A tiny deterministic RNG (splitmix64).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// client-go's algorithm, literally: a queue slice, a dirty set, a processing set.
#[derive(Default)]
struct Model {
    queue: VecDeque<u8>,
    dirty: HashSet<u8>,
    processing: HashSet<u8>,
}

impl Model {
    fn add(&mut self, key: u8) {
        if !self.dirty.insert(key) || self.processing.contains(&key) {
            return;
        }
        self.queue.push_back(key);
    }

    fn get(&mut self) -> Option<u8> {
        let key = self.queue.pop_front()?;
        self.processing.insert(key);
        self.dirty.remove(&key);
        Some(key)
    }

    fn done(&mut self, key: u8) {
        self.processing.remove(&key);
        if self.dirty.contains(&key) {
            self.queue.push_back(key);
        }
    }
}

#[test]
fn random_operations_match_client_go_and_keep_the_invariants() {
    for seed in 0..20 {
        let mut rng = Rng(seed);
        let queue: Queue<u8> = Queue::with_config(
            QueueConfig::default()
                .clock(FakeClock::new())
                .timing_metrics(seed % 2 == 0),
        );
        let mut model = Model::default();
        let mut held: Vec<Processing<'_, u8>> = Vec::new();
        for _ in 0..2000 {
            match rng.below(3) {
                0 => {
                    let key = rng.below(16) as u8;
                    assert!(queue.add(key));
                    model.add(key);
                }
                1 => {
                    let got = queue.try_get().ok();
                    assert_eq!(got.as_deref().copied(), model.get(), "seed {seed}");
                    held.extend(got);
                }
                _ if !held.is_empty() => {
                    let guard = held.swap_remove(rng.below(held.len() as u64) as usize);
                    model.done(*guard);
                    drop(guard);
                }
                _ => {}
            }
            assert_eq!(queue.len(), model.queue.len());
            let depth = model.queue.len() + model.dirty.iter().filter(|k| model.processing.contains(k)).count();
            assert_eq!(queue.metrics().depth, depth);
            check_invariants(&queue.core.state.lock());
        }
        drop(held);
        while let Ok(guard) = queue.try_get() {
            model.get();
            model.done(*guard);
        }
        assert!(queue.core.state.lock().items.is_empty(), "no key is kept once idle");
    }
}

#[test]
fn memory_is_given_back_after_a_burst() {
    let queue: Queue<u32> = Queue::new();
    for key in 0..100_000 {
        queue.add(key);
    }
    while let Ok(key) = queue.try_get() {
        drop(key);
    }
    let inner = queue.core.state.lock();
    assert!(inner.items.is_empty() && inner.queue.is_empty());
    assert!(
        inner.items.capacity() <= 4096,
        "key map kept room for {}",
        inner.items.capacity()
    );
    assert!(
        inner.queue.capacity() <= 4096,
        "queue kept room for {}",
        inner.queue.capacity()
    );
}

/// Polls until `cond` holds, failing with `what` after 10 s.
pub(crate) fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn shut_down_wakes_every_blocked_getter() {
    let queue: Arc<Queue<u32>> = Arc::new(Queue::new());
    let getters: Vec<_> = (0..4)
        .map(|_| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.get().map(|k| *k))
        })
        .collect();
    wait_for("4 blocked getters", || queue.core.state.lock().blocked_getters == 4);
    queue.shut_down();
    for getter in getters {
        assert_eq!(getter.join().unwrap(), None);
    }
    assert_eq!(queue.core.state.lock().blocked_getters, 0);
}

#[test]
fn a_blocked_get_deadline_wakes_when_the_fake_clock_passes_it() {
    let clock = FakeClock::new();
    let queue: Arc<Queue<u32>> = Arc::new(Queue::with_config(QueueConfig::default().clock(clock.clone())));
    let deadline = clock.now() + Duration::from_secs(1);
    let getter = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.get_deadline(deadline).map(|k| *k))
    };
    wait_for("a blocked getter", || queue.core.state.lock().blocked_getters == 1);
    clock.step(Duration::from_millis(999));
    clock.step(Duration::from_millis(1));
    assert_eq!(getter.join().unwrap(), Err(GetTimeoutError::Timeout));
}

#[test]
fn a_blocked_drain_deadline_wakes_when_the_fake_clock_passes_it() {
    let clock = FakeClock::new();
    let queue: Arc<Queue<u32>> = Arc::new(Queue::with_config(QueueConfig::default().clock(clock.clone())));
    queue.add(1);
    let held = queue.get().unwrap().into_key();
    let deadline = clock.now() + Duration::from_secs(1);
    let drainer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.shut_down_with_drain_deadline(deadline))
    };
    wait_for("the drain to start", || queue.core.state.lock().draining);
    clock.step(Duration::from_secs(1));
    assert!(!drainer.join().unwrap(), "the drain gave up at its deadline");
    queue.done(&held);
    assert_eq!(queue.metrics().processing, 0);
}
