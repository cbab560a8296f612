//! Random delays: the jitter that keeps many clients failing together from retrying in lockstep (client-go's
//! `wait.Jitter` and the full jitter of its back-off managers), for the reflector, the leader elector and the event
//! recorder alike.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

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

/// `d × f` for `f ≥ 0`, saturating at [`Duration::MAX`] where `Duration::mul_f64` would panic.
pub(crate) fn mul_saturating(d: Duration, f: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * f).unwrap_or(if f > 0.0 { Duration::MAX } else { Duration::ZERO })
}

/// "Full jitter": uniform in `(0, d]`.
pub(crate) fn full_jitter(d: Duration) -> Duration {
    mul_saturating(d, random_unit_interval())
}

/// client-go's `wait.Jitter`: `d` plus up to `max_factor × d`, uniform (saturating).
pub(crate) fn jitter(d: Duration, max_factor: f64) -> Duration {
    d.saturating_add(mul_saturating(d, max_factor * random_unit_interval()))
}

/// A random duration in `[min, max)`: the reflector's watch timeout (client-go: 5 min × (1 + rand)).
pub(crate) fn random_between(min: Duration, max: Duration) -> Duration {
    min.saturating_add(mul_saturating(
        max.saturating_sub(min),
        random_unit_interval().min(0.999_999),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_spreads_over_the_interval() {
        let samples: Vec<f64> = (0..10_000).map(|_| random_unit_interval()).collect();
        assert!(samples.iter().all(|x| *x > 0.0 && *x <= 1.0));
        let low = samples.iter().filter(|x| **x < 0.5).count();
        assert!((4_000..6_000).contains(&low), "roughly uniform: {low} below 0.5");
        let d = random_between(Duration::from_secs(300), Duration::from_secs(600));
        assert!(d >= Duration::from_secs(300) && d < Duration::from_secs(600));
    }

    #[test]
    fn jittered_delays_stay_in_their_ranges_and_saturate() {
        let s = Duration::from_secs(2);
        for _ in 0..1000 {
            let full = full_jitter(s);
            assert!(full > Duration::ZERO && full <= s, "{full:?}");
            let j = jitter(s, 1.2);
            assert!(j > s && j <= Duration::from_millis(4400), "{j:?}");
        }
        assert_eq!(jitter(Duration::MAX, 1.2), Duration::MAX);
        assert!(full_jitter(Duration::MAX) > Duration::ZERO);
        assert_eq!(mul_saturating(Duration::MAX, 2.0), Duration::MAX);
        assert_eq!(mul_saturating(s, 0.5), Duration::from_secs(1));
        assert_eq!(mul_saturating(s, 0.0), Duration::ZERO);
    }
}
