//! Queue metrics: the figures client-go's workqueue exports to Prometheus, as a plain snapshot struct.
//!
//! Every queue keeps its own counters and histograms (under its lock, no atomics, no global registry, no dependency)
//! and [`Queue::metrics`](super::Queue::metrics) copies them out. Exporting them — to Prometheus, logs, anything —
//! is the application's business.

use std::time::{Duration, Instant};

/// A snapshot of one queue's metrics, from [`Queue::metrics`](super::Queue::metrics).
///
/// The client-go metric each field mirrors is given in its doc (`workqueue_…`, labelled by queue name there).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueMetrics {
    /// The queue's name ([`QueueConfig::name`](super::QueueConfig::name)); empty for an unnamed queue.
    pub name: String,
    /// Keys waiting to be processed: queued keys plus keys re-added while being processed (`workqueue_depth`).
    pub depth: usize,
    /// Keys currently handed out to workers (between `get` and `done`).
    pub processing: usize,
    /// Keys waiting in the delay heap for their `add_after` / `add_rate_limited` time.
    pub waiting: usize,
    /// Adds that made a key dirty; an add deduplicated against a key already waiting is not counted
    /// (`workqueue_adds_total`).
    pub adds: u64,
    /// Time from a key's add to the `get` that handed it out (`workqueue_queue_duration_seconds`).
    pub queue_latency: Histogram,
    /// Time from `get` to `done` (`workqueue_work_duration_seconds`).
    pub work_duration: Histogram,
    /// Sum over the keys being processed of how long each has been processing: work done but not yet observed in
    /// `work_duration`. A large value with few keys in flight points at stuck workers
    /// (`workqueue_unfinished_work_seconds`).
    pub unfinished_work: Duration,
    /// How long the longest-running key in flight has been processing (`workqueue_longest_running_processor_seconds`).
    pub longest_running_processor: Duration,
    /// Delayed adds scheduled: each `add_after`, and each `add_rate_limited` that scheduled a retry
    /// (`workqueue_retries_total`).
    pub retries: u64,
}

/// A latency histogram with client-go's buckets: powers of ten from 10 ns to 1000 s
/// (`prometheus.ExponentialBuckets(10e-9, 10, 12)`), plus an overflow bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Histogram {
    /// Number of observations.
    pub count: u64,
    /// Sum of all observations.
    pub sum: Duration,
    /// The largest observation.
    pub max: Duration,
    /// `buckets[i]` counts the observations `d` with `BOUNDS[i-1] < d <= BOUNDS[i]` (not cumulative; Prometheus'
    /// `le` buckets are the running sums); the last entry counts those above the last bound.
    pub buckets: [u64; Histogram::BOUNDS.len() + 1],
}

impl Histogram {
    /// Upper bounds of the buckets: 10 ns, 100 ns, …, 1000 s.
    pub const BOUNDS: [Duration; 12] = [
        Duration::from_nanos(10),
        Duration::from_nanos(100),
        Duration::from_micros(1),
        Duration::from_micros(10),
        Duration::from_micros(100),
        Duration::from_millis(1),
        Duration::from_millis(10),
        Duration::from_millis(100),
        Duration::from_secs(1),
        Duration::from_secs(10),
        Duration::from_secs(100),
        Duration::from_secs(1000),
    ];

    /// Records one observation.
    pub fn observe(&mut self, d: Duration) {
        self.count += 1;
        self.sum = self.sum.saturating_add(d);
        self.max = self.max.max(d);
        // The bounds are 10 ns · 10^i: count the decades instead of comparing Durations.
        let nanos = d.as_nanos();
        let mut bound = 10u128;
        let mut bucket = 0;
        while bucket < Histogram::BOUNDS.len() && nanos > bound {
            bound *= 10;
            bucket += 1;
        }
        self.buckets[bucket] += 1;
    }

    /// The mean observation, if there was any.
    pub fn mean(&self) -> Option<Duration> {
        let count = u32::try_from(self.count).unwrap_or(u32::MAX);
        (count > 0).then(|| self.sum / count)
    }
}

/// The counters a queue updates under its lock; [`QueueMetrics`] is built from them.
#[derive(Debug, Default)]
pub(super) struct Stats {
    /// Adds that made a key dirty.
    pub(super) adds: u64,
    /// Delayed adds scheduled.
    pub(super) retries: u64,
    /// Add → get.
    pub(super) queue_latency: Histogram,
    /// Get → done.
    pub(super) work_duration: Histogram,
}

/// Start times of the keys being processed, by slot, so the unfinished-work figures are computed over the keys in
/// flight only (a handful: one per worker) and never over the whole key map.
#[derive(Debug, Default)]
pub(super) struct Starts {
    /// `Some(start)` exactly for the slots held by a key being processed.
    slots: Vec<Option<Instant>>,
    /// Indexes of the `None` slots, reused before `slots` grows.
    free: Vec<u32>,
}

impl Starts {
    /// Takes a slot for a key that starts processing at `at`.
    pub(super) fn take(&mut self, at: Instant) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(at);
                slot
            }
            None => {
                self.slots.push(Some(at));
                u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
            }
        }
    }

    /// Frees `slot`, returning when its key started.
    pub(super) fn release(&mut self, slot: u32) -> Option<Instant> {
        let start = self.slots.get_mut(slot as usize)?.take();
        if start.is_some() {
            self.free.push(slot);
        }
        start
    }

    /// (sum, max) of `now - start` over the keys in flight.
    pub(super) fn unfinished(&self, now: Instant) -> (Duration, Duration) {
        self.slots
            .iter()
            .flatten()
            .map(|start| now.saturating_duration_since(*start))
            .fold((Duration::ZERO, Duration::ZERO), |(sum, max), d| {
                (sum.saturating_add(d), max.max(d))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_falls_in_its_own_bucket() {
        for (i, bound) in Histogram::BOUNDS.iter().enumerate() {
            let mut h = Histogram::default();
            h.observe(*bound);
            h.observe(*bound + Duration::from_nanos(1));
            assert_eq!(h.buckets[i], 1, "bound {bound:?}");
            assert_eq!(h.buckets[i + 1], 1, "just above {bound:?}");
        }
    }

    #[test]
    fn histogram_buckets_follow_prometheus_le_semantics() {
        let mut h = Histogram::default();
        h.observe(Duration::from_nanos(10)); // exactly on a bound: that bucket
        h.observe(Duration::from_nanos(11));
        h.observe(Duration::from_micros(50));
        h.observe(Duration::from_secs(5000)); // overflow
        assert_eq!(h.count, 4);
        assert_eq!(h.buckets[0], 1);
        assert_eq!(h.buckets[1], 1);
        assert_eq!(h.buckets[4], 1);
        assert_eq!(h.buckets[12], 1);
        assert_eq!(h.max, Duration::from_secs(5000));
        assert_eq!(h.sum, Duration::from_secs(5000) + Duration::from_nanos(50_021));
        assert_eq!(Histogram::default().mean(), None);
    }

    #[test]
    fn starts_reuse_slots_and_sum_unfinished_work() {
        let t0 = Instant::now();
        let mut s = Starts::default();
        let a = s.take(t0);
        let b = s.take(t0 + Duration::from_secs(1));
        assert_eq!(
            s.unfinished(t0 + Duration::from_secs(3)),
            (Duration::from_secs(5), Duration::from_secs(3))
        );
        assert_eq!(s.release(a), Some(t0));
        assert_eq!(s.release(a), None, "a slot is released once");
        let c = s.take(t0 + Duration::from_secs(2));
        assert_eq!(c, a, "freed slots are reused");
        assert_eq!(
            s.unfinished(t0 + Duration::from_secs(3)),
            (Duration::from_secs(3), Duration::from_secs(2))
        );
        s.release(b);
        s.release(c);
        assert_eq!(s.unfinished(t0), (Duration::ZERO, Duration::ZERO));
    }
}
