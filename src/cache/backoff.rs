//! Jittered exponential back-off for the Reflector (client-go's `ExponentialBackoffManager` as the reflector
//! configures it: 800 ms initial, ×2, 30 s cap, reset after 2 minutes without failure).

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

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
        self.step = step.mul_f64(self.config.factor).min(self.config.max);
        let jittered = step.mul_f64(random_unit_interval()).max(Duration::from_millis(1));
        retry_after.map_or(jittered, |r| r.max(jittered))
    }

    /// The step the next failure would use (before jitter).
    #[cfg(test)]
    pub(crate) fn current_step(&self) -> Duration {
        self.step
    }
}

thread_local! {
    static RNG: Cell<u64> = Cell::new({
        let mut h = RandomState::new().build_hasher();
        h.write_u64(Instant::now().elapsed().as_nanos() as u64);
        h.finish() | 1
    });
}

/// A uniform random number in `(0, 1]` (xorshift64*, seeded per thread from the std hasher's random keys).
pub(crate) fn random_unit_interval() -> f64 {
    RNG.with(|c| {
        let mut x = c.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        c.set(x);
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        (r as f64 + 1.0) / (1u64 << 53) as f64
    })
}

/// A random duration in `[min, 2·min)`: the reflector's watch timeout (client-go: 5 min × (1 + rand)).
pub(crate) fn random_between(min: Duration, max: Duration) -> Duration {
    min + (max.saturating_sub(min)).mul_f64(random_unit_interval().min(0.999_999))
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

    #[test]
    fn jitter_spreads_over_the_interval() {
        let samples: Vec<f64> = (0..10_000).map(|_| random_unit_interval()).collect();
        assert!(samples.iter().all(|x| *x > 0.0 && *x <= 1.0));
        let low = samples.iter().filter(|x| **x < 0.5).count();
        assert!((4_000..6_000).contains(&low), "roughly uniform: {low} below 0.5");
        let d = random_between(Duration::from_secs(300), Duration::from_secs(600));
        assert!(d >= Duration::from_secs(300) && d < Duration::from_secs(600));
    }
}
