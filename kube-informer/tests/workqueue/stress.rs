//! Stress: many workers, many keys, re-adds while processing, drains under load. Every run checks that no key is
//! processed by two workers at once and that every accepted add is followed by a processing that started after it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use kube_informer::workqueue::{ItemExponentialFailureRateLimiter, Queue, QueueConfig, RateLimitingQueue};

use super::{MS, Rng, eventually};

/// Shared bookkeeping of a stress run: a global tick, per-key last accepted add and last processing start, and a
/// concurrent "being processed" set.
struct Ledger {
    tick: AtomicU64,
    last_add: Vec<AtomicU64>,
    last_start: Vec<AtomicU64>,
    busy: Vec<AtomicBool>,
    overlaps: AtomicUsize,
    processed: AtomicUsize,
}

impl Ledger {
    fn new(keys: usize) -> Ledger {
        Ledger {
            tick: AtomicU64::new(1),
            last_add: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            last_start: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            busy: (0..keys).map(|_| AtomicBool::new(false)).collect(),
            overlaps: AtomicUsize::new(0),
            processed: AtomicUsize::new(0),
        }
    }

    fn tick(&self) -> u64 {
        self.tick.fetch_add(1, Ordering::SeqCst)
    }

    /// Records an add that `add` accepted; the tick is taken before the add.
    fn add(&self, key: u32, add: impl FnOnce(u32) -> bool) -> bool {
        let t = self.tick();
        let accepted = add(key);
        if accepted {
            self.last_add[key as usize].fetch_max(t, Ordering::SeqCst);
        }
        accepted
    }

    fn begin(&self, key: u32) {
        let t = self.tick();
        self.last_start[key as usize].fetch_max(t, Ordering::SeqCst);
        if self.busy[key as usize].swap(true, Ordering::SeqCst) {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        self.processed.fetch_add(1, Ordering::SeqCst);
    }

    fn end(&self, key: u32) {
        self.busy[key as usize].store(false, Ordering::SeqCst);
    }

    /// No key processed by two workers at once; every key added was processed after its last accepted add.
    fn check(&self, every_key_added: bool) {
        assert_eq!(
            self.overlaps.load(Ordering::SeqCst),
            0,
            "a key was processed by two workers at once"
        );
        let mut lost = Vec::new();
        for (key, (added, started)) in self.last_add.iter().zip(&self.last_start).enumerate() {
            let (added, started) = (added.load(Ordering::SeqCst), started.load(Ordering::SeqCst));
            if every_key_added {
                assert!(added > 0, "key {key} was never added");
            }
            if added > 0 && started <= added {
                lost.push(key);
            }
        }
        assert!(
            lost.is_empty(),
            "{} keys were not processed after their last add, e.g. {:?}",
            lost.len(),
            &lost[..lost.len().min(10)]
        );
    }
}

/// 8 workers, 100,000 keys added by two producers and re-added at random by the workers while processing — a third
/// of the re-adds to the key in hand, a third to 32 hot keys — until a drain, which thus runs under load. The queue
/// is held short (≤ 256 keys), so a re-added key comes up again while its
/// first processing may still run: that is when a broken processing set would hand it to a second worker.
#[test]
fn stress_no_key_processed_twice_at_once_none_lost_and_drain_under_load() {
    const KEYS: u32 = 100_000;
    const WORKERS: u64 = 8;
    let queue: Arc<Queue<u32>> = Arc::new(Queue::with_config(QueueConfig::default().name("stress")));
    let ledger = Arc::new(Ledger::new(KEYS as usize));
    let readds = Arc::new(AtomicUsize::new(0));

    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (queue, ledger, readds) = (Arc::clone(&queue), Arc::clone(&ledger), Arc::clone(&readds));
            thread::Builder::new()
                .name(format!("test/stress/worker-{w}"))
                .spawn(move || {
                    let mut rng = Rng(w);
                    while let Some(item) = queue.get() {
                        let key = *item;
                        ledger.begin(key);
                        for _ in 0..rng.below(3) {
                            if queue.len() < 256 {
                                let target = match rng.below(3) {
                                    0 => key,
                                    1 => rng.below(32) as u32,
                                    _ => rng.below(KEYS as u64) as u32,
                                };
                                if ledger.add(target, |k| queue.add(k)) {
                                    readds.fetch_add(1, Ordering::SeqCst);
                                }
                            }
                        }
                        // Some work, so that another worker can come for the key meanwhile.
                        for _ in 0..rng.below(200) {
                            std::hint::spin_loop();
                        }
                        if rng.below(4) == 0 {
                            thread::yield_now();
                        }
                        ledger.end(key);
                        drop(item); // done only after the key left the busy set
                    }
                })
                .unwrap()
        })
        .collect();
    let producers: Vec<_> = (0..2u64)
        .map(|p| {
            let (queue, ledger) = (Arc::clone(&queue), Arc::clone(&ledger));
            thread::spawn(move || {
                let mut rng = Rng(100 + p);
                let mut keys: Vec<u32> = (0..KEYS).collect();
                for i in (1..keys.len()).rev() {
                    keys.swap(i, rng.below(i as u64 + 1) as usize);
                }
                for key in keys {
                    while queue.len() > 256 {
                        thread::yield_now();
                    }
                    assert!(ledger.add(key, |k| queue.add(k)));
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    // Shut down with drain while the workers are still busy re-adding.
    assert!(queue.shut_down_with_drain());
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.metrics().processing, 0);
    ledger.check(true);
    assert!(ledger.processed.load(Ordering::SeqCst) >= KEYS as usize);
    assert!(
        readds.load(Ordering::SeqCst) > KEYS as usize / 2,
        "the workers re-added keys"
    );
}

/// Producers keep adding until the drain refuses them; every accepted add is still processed.
#[test]
fn stress_drain_while_producers_add() {
    const KEYS: u32 = 20_000;
    let queue: Arc<Queue<u32>> = Arc::new(Queue::new());
    let ledger = Arc::new(Ledger::new(KEYS as usize));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (queue, ledger) = (Arc::clone(&queue), Arc::clone(&ledger));
            thread::spawn(move || {
                while let Some(item) = queue.get() {
                    ledger.begin(*item);
                    ledger.end(*item);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..2u64)
        .map(|p| {
            let (queue, ledger) = (Arc::clone(&queue), Arc::clone(&ledger));
            thread::spawn(move || {
                let mut rng = Rng(p);
                let mut accepted = 0u64;
                while ledger.add(rng.below(KEYS as u64) as u32, |k| queue.add(k)) {
                    accepted += 1;
                }
                accepted
            })
        })
        .collect();
    eventually("some work", || ledger.processed.load(Ordering::SeqCst) > 10_000);
    assert!(queue.shut_down_with_drain());
    let accepted: u64 = producers.into_iter().map(|p| p.join().unwrap()).sum();
    for w in workers {
        w.join().unwrap();
    }
    assert!(accepted > 0);
    assert_eq!(queue.len(), 0);
    ledger.check(false);
}

/// Workers re-add through `add_after` and `add_rate_limited` on the real clock: delayed adds are never lost either.
#[test]
fn stress_delayed_and_rate_limited_re_adds() {
    const KEYS: u32 = 10_000;
    let queue: Arc<RateLimitingQueue<u32>> = Arc::new(RateLimitingQueue::with_rate_limiter(
        ItemExponentialFailureRateLimiter::new(Duration::from_micros(50), MS),
    ));
    let ledger = Arc::new(Ledger::new(KEYS as usize));
    let budget = Arc::new(AtomicI64::new(20_000));
    let workers: Vec<_> = (0..4u64)
        .map(|w| {
            let (queue, ledger, budget) = (Arc::clone(&queue), Arc::clone(&ledger), Arc::clone(&budget));
            thread::spawn(move || {
                let mut rng = Rng(w);
                while let Some(item) = queue.get() {
                    let key = *item;
                    ledger.begin(key);
                    if budget.fetch_sub(1, Ordering::SeqCst) > 0 {
                        match rng.below(3) {
                            0 => {
                                ledger.add(key, |k| queue.add_rate_limited(k));
                            }
                            1 => {
                                let delay = Duration::from_micros(rng.below(2000));
                                ledger.add(rng.below(KEYS as u64) as u32, |k| queue.add_after(k, delay));
                            }
                            _ => queue.forget(&key),
                        }
                    }
                    ledger.end(key);
                }
            })
        })
        .collect();
    for key in 0..KEYS {
        ledger.add(key, |k| queue.add(k));
    }
    eventually("the re-adds to run out and every delayed key to be processed", || {
        let m = queue.metrics();
        budget.load(Ordering::SeqCst) <= 0 && m.waiting == 0 && m.depth == 0 && m.processing == 0
    });
    assert!(queue.shut_down_with_drain());
    for w in workers {
        w.join().unwrap();
    }
    ledger.check(true);
}
