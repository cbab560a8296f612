//! Work queue behaviour through the public API: the cases of client-go's `queue_test.go`, `delaying_queue_test.go`,
//! `rate_limiting_queue_test.go` and `metrics_test.go` (on a fake clock, without sleeps), the one deliberate change
//! (no backoff inflation), shutdown from every state, and stress.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use kube_informer::clock::FakeClock;
use kube_informer::workqueue::{
    DelayingQueue, GetTimeoutError, ItemExponentialFailureRateLimiter, Queue, QueueConfig, RateLimiter,
    RateLimitingQueue, TryGetError,
};

mod common;
use common::eventually;

const MS: Duration = Duration::from_millis(1);
const US: Duration = Duration::from_micros(1);

/// Runs `f` on its own thread and fails with `what` unless it returns within `limit`.
fn within<T: Send + 'static>(limit: Duration, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let handle = thread::Builder::new()
        .name("test/within".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .unwrap();
    match rx.recv_timeout(limit) {
        Ok(value) => {
            handle.join().unwrap();
            value
        }
        Err(_) => panic!("{what} did not return within {limit:?}"),
    }
}

fn fake_queue<K: kube_informer::workqueue::Item>(clock: &FakeClock) -> DelayingQueue<K> {
    DelayingQueue::with_config(QueueConfig::default().clock(clock.clone()))
}

/// A tiny deterministic RNG (splitmix64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

// ---------------------------------------------------------------------------------------------------------------
// queue_test.go

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Item {
    Key(u32),
    AddedAfterShutdown,
}

/// TestBasic: 50 producers × 50 adds, 10 consumers; after shutdown nothing new is accepted and the queue ends empty.
#[test]
fn basic_producers_and_consumers_with_either_shutdown() {
    for drain in [false, true] {
        let queue: Arc<Queue<Item>> = Arc::new(Queue::new());
        let producers: Vec<_> = (0..50)
            .map(|i| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || {
                    for _ in 0..50 {
                        assert!(queue.add(Item::Key(i)));
                        thread::yield_now();
                    }
                })
            })
            .collect();
        let consumers: Vec<_> = (0..10)
            .map(|_| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || {
                    while let Some(item) = queue.get() {
                        assert_ne!(*item, Item::AddedAfterShutdown, "got an item added after shutdown");
                        thread::yield_now();
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        if drain {
            queue.shut_down_with_drain();
        } else {
            queue.shut_down();
        }
        assert!(!queue.add(Item::AddedAfterShutdown), "adds are refused after shutdown");
        for c in consumers {
            c.join().unwrap();
        }
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.metrics().processing, 0);
    }
}

/// TestAddWhileProcessing: every consumer re-adds each item it sees up to twice.
#[test]
fn add_while_processing() {
    for drain in [false, true] {
        let queue: Arc<Queue<u32>> = Arc::new(Queue::new());
        let producers: Vec<_> = (0..50)
            .map(|i| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || assert!(queue.add(i)))
            })
            .collect();
        let consumers: Vec<_> = (0..10)
            .map(|_| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || {
                    let mut counters = HashMap::new();
                    while let Some(item) = queue.get() {
                        let count = counters.entry(*item).or_insert(0);
                        *count += 1;
                        if *count < 2 {
                            queue.add(*item);
                        }
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        if drain {
            queue.shut_down_with_drain();
        } else {
            queue.shut_down();
        }
        for c in consumers {
            c.join().unwrap();
        }
        assert_eq!(queue.len(), 0);
    }
}

/// TestLen.
#[test]
fn len_counts_each_waiting_key_once() {
    let queue = Queue::new();
    queue.add("foo");
    assert_eq!(queue.len(), 1);
    queue.add("bar");
    assert_eq!(queue.len(), 2);
    queue.add("foo"); // should not increase the queue length
    assert_eq!(queue.len(), 2);
}

/// TestReinsert.
#[test]
fn reinsert_while_processing_requeues_after_done() {
    let queue = Queue::new();
    queue.add("foo");
    let item = queue.get().unwrap();
    assert_eq!(*item, "foo");
    queue.add(*item); // add it back while processing
    assert_eq!(queue.len(), 0, "not queued while processing");
    drop(item); // done
    let item = queue.get().unwrap();
    assert_eq!(*item, "foo");
    drop(item);
    assert_eq!(queue.len(), 0);
}

#[test]
fn fifo_order() {
    let queue = Queue::new();
    for key in [3, 1, 2, 1, 3] {
        queue.add(key);
    }
    let order: Vec<u32> = std::iter::from_fn(|| queue.try_get().ok().map(|k| k.into_key())).collect();
    assert_eq!(order, [3, 1, 2]);
}

/// TestQueueDrainageUsingShutDownWithDrain.
#[test]
fn shut_down_with_drain_waits_for_keys_in_flight() {
    let queue: Arc<Queue<&str>> = Arc::new(Queue::new());
    queue.add("foo");
    queue.add("bar");
    let first = queue.get().unwrap().into_key();
    let second = queue.get().unwrap().into_key();
    let (drained_tx, drained_rx) = crossbeam_channel::bounded(1);
    let drainer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || drained_tx.send(queue.shut_down_with_drain()).unwrap())
    };
    // The queue is empty: `get` returns once the drain has begun.
    assert!(queue.get().is_none());
    assert!(queue.is_shutting_down());
    assert!(drained_rx.try_recv().is_err(), "the drain waits for keys in flight");
    queue.done(&first);
    assert!(
        drained_rx.try_recv().is_err(),
        "the drain waits for every key in flight"
    );
    queue.done(&second);
    assert!(drained_rx.recv_timeout(Duration::from_secs(10)).unwrap(), "drained");
    drainer.join().unwrap();
}

/// TestNoQueueDrainageUsingShutDown.
#[test]
fn shut_down_does_not_wait_for_keys_in_flight() {
    let queue: Arc<Queue<&str>> = Arc::new(Queue::new());
    queue.add("foo");
    queue.add("bar");
    let _first = queue.get().unwrap().into_key();
    let _second = queue.get().unwrap().into_key();
    let q = Arc::clone(&queue);
    within(Duration::from_secs(1), "shut_down", move || q.shut_down());
}

/// TestForceQueueShutdownUsingShutDown.
#[test]
fn shut_down_cancels_a_drain() {
    let queue: Arc<Queue<&str>> = Arc::new(Queue::new());
    queue.add("foo");
    queue.add("bar");
    let _first = queue.get().unwrap().into_key();
    let _second = queue.get().unwrap().into_key();
    let (drained_tx, drained_rx) = crossbeam_channel::bounded(1);
    let drainer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || drained_tx.send(queue.shut_down_with_drain()).unwrap())
    };
    assert!(queue.get().is_none());
    queue.shut_down();
    assert!(
        !drained_rx.recv_timeout(Duration::from_secs(1)).unwrap(),
        "the drain was cut short"
    );
    drainer.join().unwrap();
}

/// TestQueueDrainageUsingShutDownWithDrainWithDirtyItem: a key re-added before the shutdown comes back after `done`.
#[test]
fn drain_hands_out_a_key_re_added_before_the_shutdown() {
    let queue: Arc<Queue<&str>> = Arc::new(Queue::new());
    queue.add("foo");
    let gotten = queue.get().unwrap().into_key();
    queue.add("foo");
    let drainer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.shut_down_with_drain())
    };
    assert!(queue.get().is_none(), "nothing queued: get reports the shutdown");
    queue.done(&gotten); // the dirty key goes back on the queue
    let again = queue.get().expect("the re-added key is handed out during the drain");
    assert_eq!(*again, "foo");
    drop(again);
    assert!(queue.get().is_none(), "now we are really done");
    assert!(drainer.join().unwrap());
}

#[test]
fn get_keeps_handing_out_queued_keys_after_either_shutdown() {
    for drain in [false, true] {
        let queue: Queue<u32> = Queue::new();
        queue.add(1);
        queue.add(2);
        if drain {
            assert!(queue.shut_down_with_drain(), "nothing in flight");
        } else {
            queue.shut_down();
        }
        assert!(!queue.add(3));
        assert_eq!(queue.get().map(|k| *k), Some(1));
        assert_eq!(queue.get().map(|k| *k), Some(2));
        assert!(queue.get().is_none());
        assert_eq!(queue.try_get().err(), Some(TryGetError::ShutDown));
    }
}

/// TestGarbageCollection: the queue keeps nothing of a key once it is done.
#[test]
fn a_done_key_is_not_retained() {
    let queue: Queue<Arc<String>> = Queue::new();
    let key = Arc::new("big object".to_string());
    let weak: Weak<String> = Arc::downgrade(&key);
    queue.add(key);
    let item = queue.get().unwrap();
    drop(item);
    assert!(weak.upgrade().is_none(), "the queue still holds the key");
}

// ---------------------------------------------------------------------------------------------------------------
// The Processing guard and the get variants

#[test]
fn a_panicking_worker_releases_its_key() {
    let queue: Queue<&str> = Queue::new();
    queue.add("web");
    let result = catch_unwind(AssertUnwindSafe(|| {
        let _key = queue.get().unwrap();
        panic!("reconcile bug");
    }));
    assert!(result.is_err());
    assert_eq!(queue.metrics().processing, 0, "the guard called done while unwinding");
    queue.add("web");
    assert_eq!(queue.len(), 1);
    assert!(
        queue.shut_down_with_drain(),
        "the drain does not wait for the crashed worker"
    );
}

#[test]
fn into_key_leaves_done_to_the_caller() {
    let queue: Queue<&str> = Queue::new();
    queue.add("web");
    let key = queue.get().unwrap().into_key();
    assert_eq!(queue.metrics().processing, 1);
    queue.add("web");
    assert_eq!(queue.len(), 0);
    queue.done(&key);
    assert_eq!(queue.len(), 1);
    let guard = queue.get().unwrap();
    assert_eq!(guard.key(), &"web");
    guard.done();
    assert_eq!(queue.metrics().processing, 0);
}

#[test]
fn done_for_a_key_not_processing_is_ignored() {
    let queue: Queue<&str> = Queue::new();
    queue.done(&"nothing");
    queue.add("foo");
    queue.done(&"foo"); // queued, not processing: client-go would queue it twice
    assert_eq!(queue.len(), 1);
    let _foo = queue.get().unwrap();
    assert_eq!(queue.try_get().err(), Some(TryGetError::Empty));
}

#[test]
fn try_get_and_get_timeout() {
    let clock = FakeClock::new();
    let queue: Queue<u32> = Queue::with_config(QueueConfig::default().clock(clock.clone()));
    assert_eq!(queue.try_get().err(), Some(TryGetError::Empty));
    assert_eq!(queue.get_timeout(Duration::ZERO).err(), Some(GetTimeoutError::Timeout));
    assert_eq!(queue.get_deadline(clock.now()).err(), Some(GetTimeoutError::Timeout));
    queue.add(1);
    assert_eq!(queue.get_timeout(Duration::from_secs(1)).map(|k| *k), Ok(1));
    queue.add(2);
    assert_eq!(
        queue.get_deadline(clock.now()).map(|k| *k),
        Ok(2),
        "a queued key wins over a passed deadline"
    );
    queue.shut_down();
    assert_eq!(
        queue.get_timeout(Duration::from_secs(1)).err(),
        Some(GetTimeoutError::ShutDown)
    );
    assert_eq!(TryGetError::Empty.to_string(), "work queue is empty");
    assert_eq!(
        GetTimeoutError::Timeout.to_string(),
        "timed out waiting for a work queue key"
    );
}

#[test]
fn get_deadline_waits_for_the_fake_clock() {
    let clock = FakeClock::new();
    let queue: Arc<Queue<u32>> = Arc::new(Queue::with_config(QueueConfig::default().clock(clock.clone())));
    let deadline = clock.now() + Duration::from_secs(30);
    let getter = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.get_deadline(deadline).map(|k| *k))
    };
    clock.step(Duration::from_secs(30));
    assert_eq!(getter.join().unwrap(), Err(GetTimeoutError::Timeout));

    let deadline = clock.now() + Duration::from_secs(30);
    let getter = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.get_deadline(deadline).map(|k| *k))
    };
    queue.add(9);
    assert_eq!(getter.join().unwrap(), Ok(9));
}

#[test]
fn get_timeout_on_the_real_clock_gives_up() {
    let queue: Queue<u32> = Queue::new();
    assert_eq!(queue.get_timeout(5 * MS).err(), Some(GetTimeoutError::Timeout));
}

#[test]
fn get_wakes_on_shutdown() {
    let queue: Arc<Queue<u32>> = Arc::new(Queue::new());
    let getters: Vec<_> = (0..4)
        .map(|_| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || queue.get().is_none())
        })
        .collect();
    queue.shut_down();
    within(Duration::from_secs(1), "blocked getters", move || {
        for getter in getters {
            assert!(getter.join().unwrap(), "get returned None");
        }
    });
}

// ---------------------------------------------------------------------------------------------------------------
// delaying_queue_test.go

/// TestSimpleQueue.
#[test]
fn delayed_add_fires_when_due() {
    let clock = FakeClock::new();
    let queue = fake_queue(&clock);
    queue.add_after("foo", 50 * MS);
    assert_eq!(queue.len(), 0, "should not have added");
    clock.step(60 * MS);
    assert_eq!(queue.len(), 1, "should have added");
    queue.get().unwrap().done();
    clock.step(Duration::from_secs(10)); // past client-go's heartbeat
    assert_eq!(queue.len(), 0, "should not have added");
}

#[test]
fn delayed_add_fires_exactly_at_its_deadline() {
    let clock = FakeClock::new();
    let queue = fake_queue(&clock);
    queue.add_after("foo", 50 * MS);
    clock.step(50 * MS - Duration::from_nanos(1));
    assert_eq!(queue.len(), 0);
    clock.step(Duration::from_nanos(1));
    assert_eq!(queue.len(), 1);
}

/// TestDeduping, with the earliest deadline winning.
#[test]
fn delayed_adds_of_one_key_dedupe_to_the_earliest() {
    let clock = FakeClock::new();
    let queue = fake_queue(&clock);
    queue.add_after("foo", 50 * MS);
    queue.add_after("foo", 70 * MS);
    assert_eq!(queue.len(), 0);
    clock.step(60 * MS); // past the first deadline: added once
    assert_eq!(queue.len(), 1);
    queue.get().unwrap().done();
    clock.step(20 * MS); // past the second: it was merged into the first
    assert_eq!(queue.len(), 0);

    // The earlier one overrides.
    queue.add_after("foo", 50 * MS);
    queue.add_after("foo", 30 * MS);
    assert_eq!(queue.len(), 0);
    clock.step(40 * MS);
    assert_eq!(queue.len(), 1);
    queue.get().unwrap().done();
    clock.step(20 * MS);
    assert_eq!(queue.len(), 0);

    // Due while the key is processing: it is queued again after done.
    queue.add("foo");
    let item = queue.get().unwrap();
    queue.add_after("foo", 5 * MS);
    clock.step(5 * MS);
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.metrics().depth, 1);
    drop(item);
    assert_eq!(queue.len(), 1);
}

/// TestAddTwoFireEarly.
#[test]
fn delayed_adds_fire_in_deadline_order() {
    let clock = FakeClock::new();
    let queue = fake_queue(&clock);
    queue.add_after("foo", Duration::from_secs(1));
    queue.add_after("bar", 50 * MS);
    assert_eq!(queue.len(), 0);
    clock.step(60 * MS);
    assert_eq!(queue.len(), 1);
    assert_eq!(*queue.get().unwrap(), "bar");
    queue.add_after("baz", Duration::from_secs(2));
    clock.step(Duration::from_secs(1));
    assert_eq!(queue.len(), 1);
    assert_eq!(*queue.get().unwrap(), "foo");
    clock.step(Duration::from_secs(2));
    assert_eq!(queue.len(), 1);
    assert_eq!(*queue.get().unwrap(), "baz");
}

/// TestCopyShifting.
#[test]
fn keys_due_together_come_out_earliest_first() {
    let clock = FakeClock::new();
    let queue = fake_queue(&clock);
    queue.add_after("foo", Duration::from_secs(1));
    queue.add_after("bar", 500 * MS);
    queue.add_after("baz", 250 * MS);
    assert_eq!(queue.len(), 0);
    clock.step(Duration::from_secs(2));
    assert_eq!(queue.len(), 3);
    let order: Vec<&str> = (0..3).map(|_| *queue.get().unwrap()).collect();
    assert_eq!(order, ["baz", "bar", "foo"]);
}

#[test]
fn a_zero_delay_adds_at_once() {
    let clock = FakeClock::new();
    let queue = fake_queue(&clock);
    assert!(queue.add_after("now", Duration::ZERO));
    assert_eq!(queue.len(), 1);
    assert!(
        queue.add_after("far", Duration::MAX),
        "an unrepresentable delay is clamped, not a panic"
    );
    assert_eq!(queue.metrics().waiting, 1);
}

#[test]
fn delayed_adds_are_refused_and_dropped_at_shutdown() {
    let clock = FakeClock::new();
    let queue = fake_queue(&clock);
    assert!(queue.add_after("pending", Duration::from_secs(1)));
    queue.shut_down();
    assert!(!queue.add_after("late", Duration::from_secs(1)));
    clock.step(Duration::from_secs(2));
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.metrics().waiting, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// rate_limiting_queue_test.go

fn rate_limited(clock: &FakeClock, base: Duration, max: Duration) -> RateLimitingQueue<&'static str> {
    RateLimitingQueue::with_config(
        QueueConfig::default()
            .clock(clock.clone())
            .rate_limiter(ItemExponentialFailureRateLimiter::new(base, max)),
    )
}

/// Asserts that `queue` gains one key exactly `delay` from now, and takes it off (get + done).
fn assert_fires_after<K: kube_informer::workqueue::Item>(queue: &Queue<K>, clock: &FakeClock, delay: Duration) {
    let before = queue.len();
    clock.step(delay - Duration::from_nanos(1));
    assert_eq!(queue.len(), before, "fired before {delay:?}");
    clock.step(Duration::from_nanos(1));
    assert_eq!(queue.len(), before + 1, "did not fire at {delay:?}");
    queue.get().unwrap().done();
}

/// TestRateLimitingQueue. client-go calls `AddRateLimited` twice in a row while the first retry is still pending
/// and expects 1 ms then 2 ms; here the second call would not count (the deliberate change), so each retry fires
/// and is processed before the next failure.
#[test]
fn rate_limiting_queue_backs_off_per_key() {
    let clock = FakeClock::new();
    let queue = rate_limited(&clock, MS, Duration::from_secs(1));

    queue.add_rate_limited("one");
    assert_fires_after(&queue, &clock, MS);
    queue.add_rate_limited("one");
    assert_fires_after(&queue, &clock, 2 * MS);
    assert_eq!(queue.num_requeues(&"one"), 2);

    queue.add_rate_limited("two");
    assert_fires_after(&queue, &clock, MS);
    queue.add_rate_limited("two");
    assert_fires_after(&queue, &clock, 2 * MS);

    queue.forget(&"one");
    assert_eq!(queue.num_requeues(&"one"), 0);
    queue.add_rate_limited("one");
    assert_fires_after(&queue, &clock, MS);
    assert_eq!(queue.metrics().retries, 5);
}

/// TestNewNamedRateLimitingWithCustomQueue, minus the priority queue: a default queue hands out its key.
#[test]
fn default_rate_limiting_queue_hands_out_a_rate_limited_key() {
    let queue: RateLimitingQueue<&str> = RateLimitingQueue::new();
    queue.add_rate_limited("one"); // 5 ms on the real clock
    assert_eq!(queue.get().map(|k| *k), Some("one"));
}

#[test]
fn the_default_limiter_reads_the_queue_clock() {
    let clock = FakeClock::new();
    let queue: RateLimitingQueue<u32> = RateLimitingQueue::with_config(QueueConfig::default().clock(clock.clone()));
    for key in 0..101 {
        queue.add_rate_limited(key);
    }
    // 100 keys fit the bucket's burst and wait their 5 ms; the 101st waits for the bucket's next token.
    clock.step(5 * MS);
    assert_eq!(queue.len(), 100);
    clock.step(95 * MS - Duration::from_nanos(1));
    assert_eq!(queue.len(), 100);
    clock.step(Duration::from_nanos(1));
    assert_eq!(queue.len(), 101);
}

// ---------------------------------------------------------------------------------------------------------------
// The deliberate change: a pending retry does not inflate the backoff

#[test]
fn add_rate_limited_does_not_inflate_the_backoff_of_a_pending_retry() {
    let clock = FakeClock::new();
    let queue = rate_limited(&clock, 5 * MS, Duration::from_secs(1000));

    // Processing fails; a retry is scheduled for 5 ms.
    queue.add("web");
    let key = queue.get().unwrap();
    assert!(queue.add_rate_limited(*key));
    assert_eq!(queue.num_requeues(&"web"), 1);
    // Two more failure reports while that retry waits in the delay heap change nothing.
    assert!(queue.add_rate_limited(*key));
    assert!(queue.add_rate_limited(*key));
    assert_eq!(queue.num_requeues(&"web"), 1);
    assert_eq!(queue.metrics().retries, 1);
    drop(key);
    assert_fires_after(&queue, &clock, 5 * MS);

    // The retry ran and failed again: the backoff doubles once.
    queue.add("web");
    let key = queue.get().unwrap();
    queue.add_rate_limited(*key);
    assert_eq!(queue.num_requeues(&"web"), 2);
    drop(key);
    assert_fires_after(&queue, &clock, 10 * MS);
}

#[test]
fn add_rate_limited_does_not_count_a_key_already_queued() {
    let clock = FakeClock::new();
    let queue = rate_limited(&clock, 5 * MS, Duration::from_secs(1000));

    // Queued: its coming processing is the retry.
    queue.add("web");
    assert!(queue.add_rate_limited("web"));
    assert_eq!(queue.num_requeues(&"web"), 0);
    assert_eq!(queue.metrics().waiting, 0);

    // Processing and re-added meanwhile (dirty): it will be processed again after done.
    let key = queue.get().unwrap();
    queue.add("web");
    assert!(queue.add_rate_limited("web"));
    assert_eq!(queue.num_requeues(&"web"), 0);
    drop(key);
    assert_eq!(queue.len(), 1);

    // Processing and not dirty: that is a real failure, and it counts.
    let key = queue.get().unwrap();
    assert!(queue.add_rate_limited("web"));
    assert_eq!(queue.num_requeues(&"web"), 1);
    drop(key);
}

/// A limiter whose `when` blocks until released, to hold one `add_rate_limited` in the middle of its call.
struct Gate {
    entered: Sender<()>,
    release: Receiver<()>,
    calls: AtomicU32,
}

impl RateLimiter<&'static str> for Gate {
    fn when(&self, _key: &&'static str) -> Duration {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.entered.send(()).unwrap();
        self.release.recv().unwrap();
        MS
    }
    fn forget(&self, _key: &&'static str) {}
    fn num_requeues(&self, _key: &&'static str) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

#[test]
fn concurrent_add_rate_limited_calls_for_one_key_count_once_and_never_hold_the_lock_in_the_limiter() {
    let clock = FakeClock::new();
    let (entered_tx, entered) = crossbeam_channel::unbounded();
    let (release, release_rx) = crossbeam_channel::unbounded();
    let queue = Arc::new(RateLimitingQueue::with_config(
        QueueConfig::default().clock(clock.clone()).rate_limiter(Gate {
            entered: entered_tx,
            release: release_rx,
            calls: AtomicU32::new(0),
        }),
    ));
    let first = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.add_rate_limited("web"))
    };
    entered.recv().unwrap(); // the first call is inside the limiter
    // The queue is usable meanwhile (no lock held), and a second call for the key returns without asking the
    // limiter (were it to ask, it would block in the gate: `within` reports that).
    assert!(queue.add("other"));
    let q = Arc::clone(&queue);
    let second = within(
        Duration::from_secs(5),
        "a second add_rate_limited for the key",
        move || q.add_rate_limited("web"),
    );
    assert!(second);
    assert_eq!(queue.num_requeues(&"web"), 1);
    release.send(()).unwrap();
    assert!(first.join().unwrap());
    clock.step(MS);
    assert_eq!(queue.len(), 2);
}

// ---------------------------------------------------------------------------------------------------------------
// metrics_test.go

/// TestMetrics.
#[test]
fn metrics_follow_client_go() {
    let clock = FakeClock::new();
    let queue: Queue<&str> = Queue::with_config(QueueConfig::default().name("test").clock(clock.clone()));
    queue.add("foo");
    let m = queue.metrics();
    assert_eq!((m.name.as_str(), m.adds, m.depth), ("test", 1, 1));

    clock.step(50 * US);
    let item = queue.get().unwrap();
    assert_eq!(*item, "foo");
    let m = queue.metrics();
    assert_eq!((m.queue_latency.count, m.queue_latency.sum), (1, 50 * US));

    // Added back while processing; multiple adds of the same item are de-duped.
    for _ in 0..5 {
        queue.add(*item);
    }
    let m = queue.metrics();
    assert_eq!((m.adds, m.depth), (2, 1), "one thing remains in the queue");

    clock.step(25 * US);
    drop(item);
    let m = queue.metrics();
    assert_eq!((m.work_duration.count, m.work_duration.sum), (1, 25 * US));
    assert_eq!(m.depth, 1);

    let item = queue.get().unwrap();
    let m = queue.metrics();
    assert_eq!(
        (m.queue_latency.count, m.queue_latency.sum),
        (2, 75 * US),
        "the second wait was 25 µs"
    );

    clock.step(MS);
    let m = queue.metrics();
    assert_eq!((m.unfinished_work, m.longest_running_processor), (MS, MS));
    assert_eq!(m.processing, 1);

    drop(item);
    let m = queue.metrics();
    assert_eq!(
        (m.work_duration.count, m.work_duration.sum, m.work_duration.max),
        (2, 25 * US + MS, MS)
    );
    assert_eq!(
        (m.unfinished_work, m.longest_running_processor, m.depth),
        (Duration::ZERO, Duration::ZERO, 0)
    );
}

#[test]
fn unfinished_work_sums_every_key_in_flight() {
    let clock = FakeClock::new();
    let queue: Queue<u32> = Queue::with_config(QueueConfig::default().clock(clock.clone()));
    queue.add(1);
    queue.add(2);
    let _one = queue.get().unwrap();
    clock.step(Duration::from_secs(2));
    let _two = queue.get().unwrap();
    clock.step(Duration::from_secs(1));
    let m = queue.metrics();
    assert_eq!(m.unfinished_work, Duration::from_secs(4));
    assert_eq!(m.longest_running_processor, Duration::from_secs(3));
}

#[test]
fn timing_metrics_can_be_turned_off() {
    let clock = FakeClock::new();
    let queue: Queue<&str> = Queue::with_config(QueueConfig::default().clock(clock.clone()).timing_metrics(false));
    queue.add("foo");
    clock.step(MS);
    let item = queue.get().unwrap();
    queue.add("foo");
    clock.step(MS);
    let m = queue.metrics();
    assert_eq!((m.adds, m.depth, m.processing), (2, 1, 1), "counters are kept");
    assert_eq!(
        (m.queue_latency.count, m.unfinished_work, m.longest_running_processor),
        (0, Duration::ZERO, Duration::ZERO)
    );
    drop(item);
    assert_eq!(queue.metrics().work_duration.count, 0);
    assert_eq!(queue.get().map(|k| *k), Some("foo"), "the queue works the same");
}

#[test]
fn retries_count_scheduled_delays() {
    let clock = FakeClock::new();
    let queue = rate_limited(&clock, MS, Duration::from_secs(1));
    queue.add_after("a", MS);
    queue.add_after("a", 2 * MS);
    queue.add_rate_limited("b");
    queue.add_rate_limited("b"); // pending: not a retry
    assert_eq!(queue.metrics().retries, 3);
    assert_eq!(queue.metrics().waiting, 2);
}

// ---------------------------------------------------------------------------------------------------------------
// Stopping

/// Builds a queue in a messy state: workers blocked in get, one holding a key, keys queued, keys in the delay heap,
/// a drain in progress and an `add_rate_limited` stuck in its limiter — then stops it.
#[test]
fn stop_returns_within_one_second_from_any_state() {
    let (entered_tx, entered) = crossbeam_channel::unbounded();
    let (release, release_rx) = crossbeam_channel::unbounded();
    let queue = Arc::new(RateLimitingQueue::with_rate_limiter(Gate {
        entered: entered_tx,
        release: release_rx,
        calls: AtomicU32::new(0),
    }));
    let held = {
        queue.add("held");
        queue.get().unwrap().into_key()
    };
    let getters: Vec<_> = (0..3)
        .map(|_| {
            let queue = Arc::clone(&queue);
            thread::spawn(move || while queue.get().is_some() {})
        })
        .collect();
    for i in 0..100 {
        queue.add_after(["a", "b", "c", "d"][i % 4], Duration::from_secs(3600));
    }
    let limiting = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.add_rate_limited("stuck"))
    };
    entered.recv().unwrap();
    let drainer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || queue.shut_down_with_drain())
    };
    eventually("the drain to begin", || queue.is_shutting_down());

    let q = Arc::clone(&queue);
    within(Duration::from_secs(1), "shut_down", move || q.shut_down());
    assert!(!within(Duration::from_secs(1), "the cancelled drain", move || drainer
        .join()
        .unwrap()));
    within(Duration::from_secs(1), "the getters", move || {
        for getter in getters {
            getter.join().unwrap();
        }
    });
    release.send(()).unwrap();
    assert!(!limiting.join().unwrap(), "refused: the queue shut down meanwhile");
    queue.done(&held);
    assert_eq!(queue.metrics().waiting, 0);
    // The last owner drops the queue: that joins the delay thread, within the bound too.
    within(Duration::from_secs(1), "drop", move || drop(queue));
}

#[test]
fn dropping_a_delaying_queue_joins_its_thread_within_one_second() {
    let queue: DelayingQueue<u32> = DelayingQueue::new();
    queue.add_after(1, Duration::from_secs(3600));
    within(Duration::from_secs(1), "drop", move || drop(queue));
}

#[test]
fn a_drain_with_a_stuck_worker_gives_up_at_its_timeout() {
    let queue: Queue<u32> = Queue::new();
    queue.add(1);
    let stuck = queue.get().unwrap();
    assert!(!queue.shut_down_with_drain_timeout(10 * MS));
    drop(stuck);
    assert!(queue.shut_down_with_drain_timeout(10 * MS));
}

// ---------------------------------------------------------------------------------------------------------------
// Stress

#[path = "workqueue/stress.rs"]
mod stress;
