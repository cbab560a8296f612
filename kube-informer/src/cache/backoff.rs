//! Jittered exponential back-off for the Reflector (client-go's `ExponentialBackoffManager` as the reflector
//! configures it, `NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)`: 800 ms initial, ×2, 30 s cap, jitter
//! factor 1, reset after 2 minutes without failure).

use std::time::{Duration, Instant};

use crate::clock::jitter::{jitter, mul_saturating};

/// Back-off parameters. The defaults are client-go's reflector defaults.
///
/// The `n`-th failure in a row waits `step(n) = min(initial × factorⁿ⁻¹, max)` plus a random part of up to one more
/// step (client-go's jitter factor 1.0): between 0.8 and 1.6 s after the first failure, then 1.6–3.2 s, …, and
/// 30–60 s from the seventh on, until no failure happened for `reset_after`.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::cache::BackoffConfig;
///
/// let b = BackoffConfig::default();
/// assert_eq!((b.initial, b.max, b.reset_after), (Duration::from_millis(800), Duration::from_secs(30),
///            Duration::from_secs(120)));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BackoffConfig {
    /// First step (client-go: 800 ms).
    pub initial: Duration,
    /// Largest step (client-go: 30 s); with its jitter, a delay is at most twice this.
    pub max: Duration,
    /// Growth factor per consecutive failure (client-go: 2).
    pub factor: f64,
    /// A failure this long after the previous one starts again from `initial` (client-go: 2 min).
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            factor: 2.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// Back-off state: the delay grows with consecutive failures and resets after a healthy period.
///
/// Delays are uniform in `(d, 2d]` where `d` is the exponential step (client-go's `wait.Jitter(d, 1.0)`): many
/// clients failing together (an API server restart) spread their retries instead of returning in lockstep, and each
/// delay is at least its step, which bounds how often a storm makes the loop retry.
#[derive(Debug)]
pub(crate) struct Backoff {
    config: BackoffConfig,
    /// The un-jittered step of the next failure.
    step: Duration,
    last_failure: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(config: BackoffConfig) -> Self {
        Backoff {
            step: config.initial,
            config,
            last_failure: None,
        }
    }

    /// True when no failure happened in the last `reset_after` (or ever): the next one starts a new streak.
    pub(crate) fn is_fresh(&self, now: Instant) -> bool {
        self.last_failure
            .is_none_or(|t| now.saturating_duration_since(t) >= self.config.reset_after)
    }

    /// Notes a failure at `now` that is retried without a delay: it starts (or continues) a streak, so that the next
    /// failure backs off, without taking a step.
    pub(crate) fn failed_at(&mut self, now: Instant) {
        if self.is_fresh(now) {
            self.step = self.config.initial;
        }
        self.last_failure = Some(now);
    }

    /// The delay before the next retry, `now` being the time of this failure; honours the server's `Retry-After`.
    pub(crate) fn next_delay(&mut self, now: Instant, retry_after: Option<Duration>) -> Duration {
        self.failed_at(now);
        let step = self.step.min(self.config.max);
        self.step = mul_saturating(step, self.config.factor).min(self.config.max);
        let jittered = jitter(step, 1.0).max(Duration::from_millis(1));
        retry_after.map_or(jittered, |r| r.max(jittered))
    }

    /// The step the next failure would use (before jitter).
    #[cfg(test)]
    pub(crate) fn current_step(&self) -> Duration {
        self.step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_to_the_cap_and_resets_after_a_healthy_period() {
        let mut b = Backoff::new(BackoffConfig::default());
        let t0 = Instant::now();
        let mut steps = Vec::new();
        for i in 0..8 {
            steps.push(b.current_step());
            let d = b.next_delay(t0 + Duration::from_secs(i), None);
            let step = steps[i as usize];
            assert!(d > step && d <= step * 2, "{d:?} within (step, 2 step]");
        }
        let ms: Vec<u128> = steps.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
        // Two minutes without a failure: back to the start.
        let _ = b.next_delay(t0 + Duration::from_secs(7 + 120), None);
        assert_eq!(
            b.current_step(),
            Duration::from_millis(1600),
            "reset, then one step taken"
        );
    }

    #[test]
    fn retry_after_is_a_floor() {
        let mut b = Backoff::new(BackoffConfig::default());
        let d = b.next_delay(Instant::now(), Some(Duration::from_secs(7)));
        assert_eq!(d, Duration::from_secs(7));
    }

    #[test]
    fn a_failure_retried_at_once_starts_a_streak_without_a_step() {
        let mut b = Backoff::new(BackoffConfig::default());
        let t0 = Instant::now();
        assert!(b.is_fresh(t0));
        b.failed_at(t0);
        assert!(!b.is_fresh(t0 + Duration::from_secs(119)));
        // The next failure in the streak takes the first step; one after a healthy period is fresh again.
        let d = b.next_delay(t0 + Duration::from_secs(1), None);
        assert!(
            d > Duration::from_millis(800) && d <= Duration::from_millis(1600),
            "{d:?}"
        );
        assert!(b.is_fresh(t0 + Duration::from_secs(121)));
        b.failed_at(t0 + Duration::from_secs(121));
        assert_eq!(b.current_step(), Duration::from_millis(800), "reset");
    }

    #[test]
    fn huge_settings_saturate() {
        let mut b = Backoff::new(BackoffConfig {
            initial: Duration::MAX,
            max: Duration::MAX,
            factor: f64::MAX,
            reset_after: Duration::MAX,
        });
        let t0 = Instant::now();
        assert_eq!(b.next_delay(t0, None), Duration::MAX);
        assert_eq!(b.next_delay(t0, Some(Duration::from_secs(1))), Duration::MAX);
    }
}
