//! Jittered exponential back-off for the Reflector (client-go's `ExponentialBackoffManager` as the reflector
//! configures it: 800 ms initial, ×2, 30 s cap, reset after 2 minutes without failure).

use std::time::{Duration, Instant};

use crate::clock::jitter::{full_jitter, mul_saturating};

/// Back-off parameters. The defaults are client-go's reflector defaults.
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
    /// First delay (client-go: 800 ms).
    pub initial: Duration,
    /// Largest delay (client-go: 30 s).
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
/// Delays use "full jitter" — uniform in `(0, d]` where `d` is the exponential step — so that many clients failing
/// together (an API server restart) spread their retries instead of returning in lockstep.
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

    /// The delay before the next retry, `now` being the time of this failure; honours the server's `Retry-After`.
    pub(crate) fn next_delay(&mut self, now: Instant, retry_after: Option<Duration>) -> Duration {
        if self
            .last_failure
            .is_some_and(|t| now.saturating_duration_since(t) >= self.config.reset_after)
        {
            self.step = self.config.initial;
        }
        self.last_failure = Some(now);
        let step = self.step.min(self.config.max);
        self.step = mul_saturating(step, self.config.factor).min(self.config.max);
        let jittered = full_jitter(step).max(Duration::from_millis(1));
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
            assert!(d > Duration::ZERO && d <= steps[i as usize], "{d:?} within (0, step]");
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
}
