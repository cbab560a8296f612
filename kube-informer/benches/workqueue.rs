//! Work queue throughput beside a plain `Mutex<VecDeque>` + `Condvar` queue (no deduplication, no processing set,
//! no metrics) as the baseline, with 1, 2 and 8 workers:
//!
//! * **cycle**: 1024 keys queued; each worker loops get → done → add. The queue is never empty, nobody parks: the
//!   cost of the bookkeeping (dedup map, processing state, metrics) under contention.
//! * **pipeline**: one producer adds N distinct keys while the workers get and done them; workers that find the
//!   queue empty park and are woken per add, as in a controller.
//!
//! Run: `cargo bench --bench workqueue` (prints a table; `WORKQUEUE_BENCH_OPS` sets N, default 1,000,000;
//! `WORKQUEUE_BENCH_ONLY=cycle` runs the first scenario only).

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use kube_informer::workqueue::{Item, Queue, QueueConfig};
use parking_lot::{Condvar, Mutex};

/// The baseline: a FIFO behind one mutex, a condvar for blocked getters, a closed flag.
struct PlainQueue<K> {
    state: Mutex<(VecDeque<K>, bool)>,
    ready: Condvar,
}

impl<K> PlainQueue<K> {
    fn new() -> Self {
        PlainQueue {
            state: Mutex::new((VecDeque::new(), false)),
            ready: Condvar::new(),
        }
    }

    fn add(&self, key: K) {
        self.state.lock().0.push_back(key);
        self.ready.notify_one();
    }

    fn get(&self) -> Option<K> {
        let mut state = self.state.lock();
        loop {
            if let Some(key) = state.0.pop_front() {
                return Some(key);
            }
            if state.1 {
                return None;
            }
            self.ready.wait(&mut state);
        }
    }

    fn close(&self) {
        self.state.lock().1 = true;
        self.ready.notify_all();
    }
}

/// One pipeline run: the wall time for `keys` to be added by one producer and processed by `workers`.
fn run_workqueue<K: Item>(keys: Vec<K>, workers: usize, timing: bool) -> Duration {
    let queue: Arc<Queue<K>> = Arc::new(Queue::with_config(QueueConfig::default().timing_metrics(timing)));
    let start = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|i| {
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("bench/workqueue/worker-{i}"))
                .spawn(move || {
                    while let Some(key) = queue.get() {
                        black_box(&*key);
                    } // done on drop
                })
                .unwrap()
        })
        .collect();
    for key in keys {
        queue.add(key);
    }
    queue.shut_down(); // workers still take every queued key, then see None
    for h in handles {
        h.join().unwrap();
    }
    start.elapsed()
}

fn run_plain<K: Send + 'static>(keys: Vec<K>, workers: usize) -> Duration {
    let queue: Arc<PlainQueue<K>> = Arc::new(PlainQueue::new());
    let start = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|i| {
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("bench/plain/worker-{i}"))
                .spawn(move || {
                    while let Some(key) = queue.get() {
                        black_box(&key);
                    }
                })
                .unwrap()
        })
        .collect();
    for key in keys {
        queue.add(key);
    }
    queue.close();
    for h in handles {
        h.join().unwrap();
    }
    start.elapsed()
}

/// Steady state, the queue never empty: `keys` distinct keys are queued, then each of `workers` threads loops
/// `get` → `done` → `add` (the same key) `ops / workers` times. No worker ever parks; this is the bookkeeping cost
/// under contention.
fn cycle_workqueue(keys: u64, ops: u64, workers: u64, timing: bool) -> Duration {
    let queue: Arc<Queue<u64>> = Arc::new(Queue::with_config(QueueConfig::default().timing_metrics(timing)));
    for key in 0..keys {
        queue.add(key);
    }
    let start = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|i| {
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("bench/workqueue/cycle-{i}"))
                .spawn(move || {
                    for _ in 0..ops / workers {
                        let key = queue.get().unwrap().into_key();
                        queue.done(&key);
                        queue.add(black_box(key));
                    }
                })
                .unwrap()
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    start.elapsed()
}

fn cycle_plain(keys: u64, ops: u64, workers: u64) -> Duration {
    let queue: Arc<PlainQueue<u64>> = Arc::new(PlainQueue::new());
    for key in 0..keys {
        queue.add(key);
    }
    let start = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|i| {
            let queue = Arc::clone(&queue);
            thread::Builder::new()
                .name(format!("bench/plain/cycle-{i}"))
                .spawn(move || {
                    for _ in 0..ops / workers {
                        let key = queue.get().unwrap();
                        queue.add(black_box(key));
                    }
                })
                .unwrap()
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    start.elapsed()
}

/// Best of `rounds` runs of `ops` operations, as operations per second.
fn best(rounds: usize, ops: u64, run: impl Fn() -> Duration) -> f64 {
    (0..rounds)
        .map(|_| ops as f64 / run().as_secs_f64())
        .fold(0.0, f64::max)
}

fn row(scenario: &str, workers: u64, ours: f64, untimed: f64, plain: f64) {
    println!(
        "{scenario:<26} {workers:>7} {ours:>13.0} {untimed:>13.0} {plain:>13.0} {:>6.2} {:>6.2}",
        ours / plain,
        untimed / plain
    );
}

fn main() {
    let n: u64 = std::env::var("WORKQUEUE_BENCH_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let only = std::env::var("WORKQUEUE_BENCH_ONLY").unwrap_or_default();
    let rounds = 5;
    let cores = thread::available_parallelism().map_or(1, |p| p.get());
    println!("workqueue throughput, {n} ops per run, best of {rounds} runs, {cores} cores");
    println!("one op = add + get + done, in ops/s. wq = workqueue, wq-nt = workqueue with timing_metrics(false),");
    println!("baseline = Mutex<VecDeque> + Condvar (no dedup, no processing set, no metrics)");
    println!();
    println!(
        "{:<26} {:>7} {:>13} {:>13} {:>13} {:>6} {:>6}",
        "scenario", "workers", "wq", "wq-nt", "baseline", "wq/b", "nt/b"
    );
    for workers in [1, 2, 8] {
        let ours = best(rounds, n, || cycle_workqueue(1024, n, workers, true));
        let untimed = best(rounds, n, || cycle_workqueue(1024, n, workers, false));
        let plain = best(rounds, n, || cycle_plain(1024, n, workers));
        row("cycle, 1024 u64 keys", workers, ours, untimed, plain);
    }
    if only == "cycle" {
        return;
    }
    let numbers = || (0..n).collect::<Vec<u64>>();
    for workers in [1, 2, 8] {
        let ours = best(rounds, n, || run_workqueue(numbers(), workers as usize, true));
        let untimed = best(rounds, n, || run_workqueue(numbers(), workers as usize, false));
        let plain = best(rounds, n, || run_plain(numbers(), workers as usize));
        row("pipeline, distinct u64", workers, ours, untimed, plain);
    }
    let strings = || (0..n).map(|i| format!("default/pod-{i}")).collect::<Vec<String>>();
    for workers in [1, 2, 8] {
        let ours = best(rounds, n, || run_workqueue(strings(), workers as usize, true));
        let untimed = best(rounds, n, || run_workqueue(strings(), workers as usize, false));
        let plain = best(rounds, n, || run_plain(strings(), workers as usize));
        row("pipeline, distinct String", workers, ours, untimed, plain);
    }
}
