//! Deadlines from durations a caller or a server chose, saturating: `Duration::MAX` (or any duration too long for an
//! `Instant`) means "forever" rather than a panic ("overflow when adding duration to instant").

use std::time::{Duration, Instant};

/// The farthest a deadline is put: about 100 years, "never" for any process, and far from an `Instant`'s limit.
pub(crate) const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `now + d`, or a time [`FAR_FUTURE`] away when `d` is longer than that (or than an `Instant` can hold).
pub(crate) fn deadline_after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d.min(FAR_FUTURE)).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_saturate_at_the_far_future() {
        let now = Instant::now();
        assert_eq!(
            deadline_after(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert_eq!(deadline_after(now, Duration::MAX), now + FAR_FUTURE);
        assert_eq!(deadline_after(now, FAR_FUTURE * 2), now + FAR_FUTURE);
    }
}
