//! A hang detector for the long randomized suites (chaos, convergence).
//!
//! Each of their waits is bounded, so a run that outlives its limit is stuck somewhere no wait covers — which the
//! library promises never happens (no hung thread, stop within a second). Rather than leave CI to kill a silent
//! process, the watchdog then prints the seed, the phase the run had reached, and every thread of the process with
//! its state, CPU time and kernel wait channel (from `/proc/self/task`), and aborts.
//!
//! ```ignore
//! let _dog = Watchdog::start("chaos", Duration::from_secs(600));
//! watchdog::phase("fault phase");
//! ```
//!
//! `chaos_kit::seed_from_env` records the run's seed for the report.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

/// What the run is doing now, for the report.
static PHASE: Mutex<String> = Mutex::new(String::new());

/// The run's seed, for the report (0: none recorded).
static SEED: AtomicU64 = AtomicU64::new(0);

/// Records the run's seed.
pub fn seed(seed: u64) {
    SEED.store(seed, Ordering::Relaxed);
}

/// Records the phase the run has reached.
pub fn phase(what: &str) {
    let mut p = PHASE.lock();
    p.clear();
    p.push_str(what);
}

/// Aborts the process with a report when not dropped within its limit.
pub struct Watchdog {
    done: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching; `WATCHDOG_SECS=<n>` in the environment replaces `limit` (a slower machine, or to see the
    /// report).
    pub fn start(what: &str, limit: Duration) -> Watchdog {
        let limit = std::env::var("WATCHDOG_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(limit, Duration::from_secs);
        let (done, rx) = channel::<()>();
        let what = what.to_owned();
        let thread = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                if rx.recv_timeout(limit) == Err(RecvTimeoutError::Timeout) {
                    eprintln!(
                        "{what}: still running after {limit:?} (seed {}, phase: {}): a hang; threads:\n{}",
                        SEED.load(Ordering::Relaxed),
                        PHASE.lock(),
                        threads_report()
                    );
                    std::process::abort();
                }
            })
            .expect("spawn the watchdog");
        Watchdog {
            done: Some(done),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One line per thread of this process, busiest first: id, name, state, CPU seconds, wait channel.
pub fn threads_report() -> String {
    let ticks = 100.0; // USER_HZ on Linux
    let mut rows = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let dir = entry.path();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let stat = read("stat");
        // The fields after the parenthesised name: state is the first, utime and stime the 12th and 13th.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let cpu = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        let secs = (cpu(11) + cpu(12)) / ticks;
        let state = fields.first().copied().unwrap_or("?").to_owned();
        rows.push((
            secs,
            entry.file_name().to_string_lossy().into_owned(),
            read("comm").trim().to_owned(),
            state,
            read("wchan"),
        ));
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = String::new();
    for (secs, tid, name, state, wchan) in rows {
        let _ = writeln!(out, "  {tid:>7} {name:<16} {state} {secs:>8.2}s cpu  {wchan}");
    }
    out
}
