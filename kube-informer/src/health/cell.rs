//! `HealthCell` and `Stamp`: where a component's threads write its health and the moments probes read ages from.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;

use super::{Health, LastError};

/// A component's health as its threads update it and its handles read it.
///
/// Written on transitions only (a failure, a recovery, a halt); `Halted` is final.
#[derive(Debug)]
pub(crate) struct HealthCell {
    inner: Mutex<CellInner>,
}

#[derive(Debug)]
struct CellInner {
    health: Health,
    /// The last failure: message, when (monotonic, wall).
    last_error: Option<(String, Instant, SystemTime)>,
}

impl Default for HealthCell {
    fn default() -> Self {
        HealthCell {
            inner: Mutex::new(CellInner {
                health: Health::Healthy,
                last_error: None,
            }),
        }
    }
}

impl HealthCell {
    /// The current health.
    pub(crate) fn get(&self) -> Health {
        self.inner.lock().health.clone()
    }

    /// The last error, with its age at `now`.
    pub(crate) fn last_error(&self, now: Instant) -> Option<LastError> {
        let inner = self.inner.lock();
        inner.last_error.as_ref().map(|(message, at, wall)| LastError {
            message: message.clone(),
            at: *wall,
            age: now.saturating_duration_since(*at),
        })
    }

    /// A failed attempt: `Degraded` since `since` with `attempts` failures so far (ignored once halted).
    pub(crate) fn failed(&self, since: Instant, attempts: u64, error: &str) {
        let now = Instant::now();
        let mut inner = self.inner.lock();
        inner.last_error = Some((error.to_owned(), now, SystemTime::now()));
        if !inner.health.is_halted() {
            inner.health = Health::Degraded {
                since,
                attempts,
                last_error: error.to_owned(),
            };
        }
    }

    /// Working again (ignored once halted).
    pub(crate) fn recovered(&self) {
        let mut inner = self.inner.lock();
        if !inner.health.is_halted() {
            inner.health = Health::Healthy;
        }
    }

    /// Stopped for good; the first reason given stays. True when this call halted it.
    pub(crate) fn halt(&self, reason: impl Into<String>) -> bool {
        let mut inner = self.inner.lock();
        if inner.health.is_halted() {
            return false;
        }
        inner.health = Health::Halted { reason: reason.into() };
        true
    }
}

/// A moment kept in an atomic (nanoseconds since a process-wide origin; 0 = never), set by a hot path for the price
/// of reading the clock and one store.
#[derive(Debug, Default)]
pub(crate) struct Stamp(AtomicU64);

/// The origin of every [`Stamp`].
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Stamp {
    /// Records `at`.
    pub(crate) fn set(&self, at: Instant) {
        let nanos = at.saturating_duration_since(origin()).as_nanos();
        // +1 so that a stamp at the origin itself is not "never".
        self.0
            .store(u64::try_from(nanos).unwrap_or(u64::MAX - 1) + 1, Ordering::Relaxed);
    }

    /// Records now.
    pub(crate) fn set_now(&self) {
        self.set(Instant::now());
    }

    /// Time since the recorded moment at `now` (`None`: never set).
    pub(crate) fn age(&self, now: Instant) -> Option<Duration> {
        let nanos = self.0.load(Ordering::Relaxed).checked_sub(1)?;
        let at = origin().checked_add(Duration::from_nanos(nanos))?;
        Some(now.saturating_duration_since(at))
    }

    /// Forgets the moment.
    pub(crate) fn clear(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halted_is_final_and_the_last_error_stays() {
        let cell = HealthCell::default();
        assert_eq!(cell.get(), Health::Healthy);
        let since = Instant::now();
        cell.failed(since, 1, "list failed: boom");
        assert!(
            matches!(cell.get(), Health::Degraded { attempts: 1, ref last_error, .. } if last_error == "list failed: boom")
        );
        cell.recovered();
        assert_eq!(cell.get(), Health::Healthy);
        assert_eq!(
            cell.last_error(Instant::now()).unwrap().message,
            "list failed: boom",
            "kept after recovery"
        );
        assert!(cell.halt("the reflector thread panicked"));
        assert!(!cell.halt("stopped"), "the first reason stays");
        cell.recovered();
        cell.failed(since, 2, "again");
        assert_eq!(
            cell.get(),
            Health::Halted {
                reason: "the reflector thread panicked".into()
            }
        );
        assert_eq!(cell.last_error(Instant::now()).unwrap().message, "again");
    }

    #[test]
    fn stamps_tell_ages_and_never() {
        let s = Stamp::default();
        let now = Instant::now();
        assert_eq!(s.age(now), None);
        s.set(now);
        assert_eq!(s.age(now + Duration::from_secs(3)), Some(Duration::from_secs(3)));
        assert_eq!(
            s.age(now - Duration::from_secs(1)).unwrap(),
            Duration::ZERO,
            "a clock read earlier"
        );
        s.clear();
        assert_eq!(s.age(now), None);
    }
}
