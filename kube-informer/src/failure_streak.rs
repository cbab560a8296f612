//! `FailureStreak`: consecutive failures of one activity (an informer's list/watch loop, one controller key's
//! reconcile) and how loudly to log them.
//!
//! A failure that persists must stay visible without flooding the log: the first failure of a streak is logged at
//! `warn!`, later ones at `debug!` except for one `warn!` a minute (with the attempt count and how long the streak has
//! lasted), and the end of the streak once at `info!`. The record is pure — the caller passes the time — so the
//! cadence is tested without waiting.

use std::fmt;
use std::time::{Duration, Instant};

/// How often a persisting failure is logged again at `warn!`.
pub(crate) const WARN_EVERY: Duration = Duration::from_secs(60);

/// The failures since the last success, if any.
#[derive(Debug, Default)]
pub(crate) struct FailureStreak {
    /// `None` while healthy.
    current: Option<Streak>,
}

/// An ongoing streak of failures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Streak {
    /// When its first failure happened.
    pub(crate) since: Instant,
    /// Failed attempts so far. Invariant: at least 1.
    pub(crate) attempts: u64,
    /// The last failure's message.
    pub(crate) last_error: String,
    /// When it was last logged at `warn!`; `None` until a failure reached the warning threshold.
    warned_at: Option<Instant>,
}

impl Streak {
    /// How long the streak has lasted at `now` (zero for a clock that went backwards).
    pub(crate) fn lasted(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.since)
    }
}

impl FailureStreak {
    /// Records a failed attempt at `now` and says how to log it: `Warn` for the first attempt that reaches
    /// `warn_from` (1: the first of the streak) and then for one attempt per [`WARN_EVERY`], `Debug` otherwise.
    pub(crate) fn failed(&mut self, now: Instant, error: &dyn fmt::Display, warn_from: u64) -> log::Level {
        let streak = self.current.get_or_insert_with(|| Streak {
            since: now,
            attempts: 0,
            last_error: String::new(),
            warned_at: None,
        });
        streak.attempts = streak.attempts.saturating_add(1);
        streak.last_error.clear();
        fmt::write(&mut streak.last_error, format_args!("{error}")).ok();
        let due = match streak.warned_at {
            None => streak.attempts >= warn_from.max(1),
            Some(at) => now.saturating_duration_since(at) >= WARN_EVERY,
        };
        if due {
            streak.warned_at = Some(now);
            log::Level::Warn
        } else {
            log::Level::Debug
        }
    }

    /// Records a success: ends the streak, returning it when one was logged at `warn!` (so that its end is logged
    /// once at `info!`); a streak that never reached `warn!` ends silently.
    pub(crate) fn recovered(&mut self) -> Option<Streak> {
        self.current.take().filter(|s| s.warned_at.is_some())
    }

    /// True while failing.
    pub(crate) fn is_failing(&self) -> bool {
        self.current.is_some()
    }

    /// The ongoing streak.
    pub(crate) fn current(&self) -> Option<&Streak> {
        self.current.as_ref()
    }
}

/// A duration as a person reads it in a log line: `850ms`, `42s`, `3m05s`, `2h07m`.
pub(crate) fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0 => format!("{}ms", d.subsec_millis()),
        1..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs / 60 % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn warns_on_the_first_failure_then_once_a_minute_then_tells_the_recovery() {
        let t0 = Instant::now();
        let mut f = FailureStreak::default();
        assert!(f.recovered().is_none(), "healthy: nothing to tell");
        // A failure every 7 s (a back-off at its cap, say) for five minutes.
        let levels: Vec<(u64, log::Level)> = (0..43)
            .map(|i| (i * 7, f.failed(t0 + S * (i * 7) as u32, &"refused", 1)))
            .collect();
        let warned: Vec<u64> = levels
            .iter()
            .filter(|(_, l)| *l == log::Level::Warn)
            .map(|(t, _)| *t)
            .collect();
        assert_eq!(
            warned,
            [0, 63, 126, 189, 252],
            "first, then the first failure a minute or more after the last warning"
        );
        let streak = f.current().unwrap().clone();
        assert_eq!(streak.attempts, 43);
        assert_eq!(streak.lasted(t0 + S * 294), S * 294);
        assert_eq!(streak.last_error, "refused");
        let ended = f.recovered().expect("a warned streak ends with one info line");
        assert_eq!(ended.attempts, 43);
        assert!(f.recovered().is_none(), "told once");
        assert!(!f.is_failing());
        // The next failure starts a new streak, warned at once.
        assert_eq!(f.failed(t0 + S * 300, &"again", 1), log::Level::Warn);
        assert_eq!(f.current().unwrap().attempts, 1);
    }

    #[test]
    fn a_threshold_keeps_the_first_failures_quiet_and_a_quiet_streak_ends_silently() {
        let t0 = Instant::now();
        let mut f = FailureStreak::default();
        assert_eq!(f.failed(t0, &"e", 3), log::Level::Debug);
        assert_eq!(f.failed(t0 + S, &"e", 3), log::Level::Debug);
        assert!(f.recovered().is_none(), "never warned: no recovery line");
        assert_eq!(f.failed(t0 + S * 2, &"e", 3), log::Level::Debug);
        assert_eq!(f.failed(t0 + S * 3, &"e", 3), log::Level::Debug);
        assert_eq!(f.failed(t0 + S * 4, &"e", 3), log::Level::Warn, "third of the streak");
        assert_eq!(f.failed(t0 + S * 5, &"e", 3), log::Level::Debug);
        assert_eq!(f.failed(t0 + S * 64, &"e", 3), log::Level::Warn);
        assert!(f.recovered().is_some());
    }

    #[test]
    fn a_clock_going_backwards_neither_panics_nor_warns_early() {
        let t0 = Instant::now() + S * 100;
        let mut f = FailureStreak::default();
        assert_eq!(f.failed(t0, &"e", 1), log::Level::Warn);
        assert_eq!(f.failed(t0 - S * 50, &"e", 1), log::Level::Debug);
        assert_eq!(f.current().unwrap().lasted(t0 - S * 50), Duration::ZERO);
    }

    #[test]
    fn durations_read_as_a_person_writes_them() {
        assert_eq!(human_duration(Duration::from_millis(850)), "850ms");
        assert_eq!(human_duration(S * 42), "42s");
        assert_eq!(human_duration(S * 185), "3m05s");
        assert_eq!(human_duration(S * (2 * 3600 + 7 * 60 + 9)), "2h07m");
    }
}
