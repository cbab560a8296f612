//! Retrying a read-modify-write when another writer got there first (client-go's `util/retry`).
//!
//! Optimistic concurrency makes a write of a stale object fail with 409 Conflict instead of silently overwriting
//! someone else's change. The answer is to read the object again, re-apply the change and write again:
//! [`retry_on_conflict`] runs a closure doing exactly that until it succeeds, fails otherwise, or the back-off runs
//! out of steps.

use std::time::Duration;

use crate::clock::jitter::{jitter, mul_saturating};
use crate::{Error, Result};

/// How often and how far apart [`retry_on_conflict`] and [`on_error`] try (client-go's `wait.Backoff` as its
/// `ExponentialBackoff` uses it): at most `steps` attempts, the first at once, each later one after a pause that
/// starts at `duration` and is multiplied by `factor` each time (up to `cap`), each pause stretched by a random
/// fraction of up to `jitter`.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::client::RetryBackoff;
///
/// let b = RetryBackoff::DEFAULT_BACKOFF;
/// let pauses: Vec<Duration> = b.pauses().collect();
/// assert_eq!(pauses.len(), 3); // 4 attempts
/// assert!(pauses[2] >= Duration::from_millis(250) && pauses[2] <= Duration::from_millis(275));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryBackoff {
    /// Attempts at most (at least 1 is always made).
    pub steps: u32,
    /// The first pause.
    pub duration: Duration,
    /// Each pause is the previous one times this (1.0: constant pauses).
    pub factor: f64,
    /// Each pause is lengthened by a random fraction of itself in `[0, jitter)`.
    pub jitter: f64,
    /// Pauses grow no longer than this (`None`: no bound but the saturation of `Duration`).
    pub cap: Option<Duration>,
}

impl RetryBackoff {
    /// client-go's `retry.DefaultRetry`, for conflicts between writers working at human or controller speed: 5
    /// attempts, 10 ms apart (+10% jitter).
    pub const DEFAULT_RETRY: RetryBackoff = RetryBackoff {
        steps: 5,
        duration: Duration::from_millis(10),
        factor: 1.0,
        jitter: 0.1,
        cap: None,
    };

    /// client-go's `retry.DefaultBackoff`, for a contended object: 4 attempts, pauses of 10, 50 and 250 ms (+10%
    /// jitter).
    pub const DEFAULT_BACKOFF: RetryBackoff = RetryBackoff {
        steps: 4,
        duration: Duration::from_millis(10),
        factor: 5.0,
        jitter: 0.1,
        cap: None,
    };

    /// The pauses between attempts, in order: one fewer than the attempts.
    pub fn pauses(&self) -> impl Iterator<Item = Duration> + use<> {
        let b = *self;
        let mut next = b.cap.map_or(b.duration, |c| b.duration.min(c));
        (1..b.steps.max(1)).map(move |_| {
            let pause = next;
            // `max` also turns a NaN factor or jitter into 0.
            let grown = mul_saturating(next, b.factor.max(0.0));
            next = b.cap.map_or(grown, |c| grown.min(c));
            jitter(pause, b.jitter.max(0.0))
        })
    }
}

impl Default for RetryBackoff {
    /// [`RetryBackoff::DEFAULT_RETRY`].
    fn default() -> Self {
        RetryBackoff::DEFAULT_RETRY
    }
}

/// Runs `f` until it succeeds, fails with something other than a 409 Conflict, or `backoff` runs out of steps —
/// then returns the last result (client-go's `retry.RetryOnConflict`). `f` must do the whole read-modify-write:
/// read the object afresh, change it, write it with the resourceVersion it read.
///
/// A 409 `AlreadyExists` is not a conflict (it is not in client-go either): a get-or-create that may race with
/// another creator retries with [`on_error`] and `|e| e.is_conflict() || e.is_already_exists()`.
///
/// The pauses happen on the calling thread (60 ms in all with [`RetryBackoff::DEFAULT_RETRY`]).
///
/// ```
/// use kube_informer::client::{Api, RetryBackoff, params::PostParams, retry_on_conflict};
/// use kube_informer::object::{core::ConfigMap, ObjectMeta};
/// # let server = kube_informer_apiserver::ApiServer::start()?;
/// # server.create(&ConfigMap::new(ObjectMeta::namespaced("default", "counter")).with("n", "0"))?;
/// # let client = server.client()?;
/// let cms: Api<ConfigMap> = Api::namespaced(client, "default");
/// let updated = retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || {
///     let mut cm = cms.get("counter")?;
///     let n: u64 = cm.data.get("n").unwrap_or("0").parse().unwrap_or(0);
///     cm.data.insert("n".into(), (n + 1).to_string());
///     cms.replace("counter", &PostParams::default(), &cm) // 409 if someone wrote since the get: read again
/// })?;
/// assert_eq!(updated.data.get("n"), Some("1"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn retry_on_conflict<T>(backoff: RetryBackoff, f: impl FnMut() -> Result<T>) -> Result<T> {
    on_error(backoff, Error::is_conflict, f)
}

/// Runs `f` until it succeeds, fails with an error `retriable` refuses, or `backoff` runs out of steps; returns
/// the last result (client-go's `retry.OnError`).
pub fn on_error<T, E>(
    backoff: RetryBackoff,
    mut retriable: impl FnMut(&E) -> bool,
    mut f: impl FnMut() -> std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    let mut pauses = backoff.pauses();
    loop {
        match f() {
            Err(e) if retriable(&e) => match pauses.next() {
                Some(pause) => std::thread::sleep(pause),
                None => return Err(e),
            },
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Status;

    fn conflict() -> Error {
        Error::Api(Box::new(Status::failure(
            409,
            "Conflict",
            "the object has been modified",
        )))
    }

    #[test]
    fn the_defaults_are_client_gos() {
        let r = RetryBackoff::DEFAULT_RETRY;
        let pauses: Vec<Duration> = r.pauses().collect();
        assert_eq!(pauses.len(), 4);
        for p in pauses {
            assert!(
                p >= Duration::from_millis(10) && p <= Duration::from_millis(11),
                "{p:?}"
            );
        }
        let pauses: Vec<Duration> = RetryBackoff::DEFAULT_BACKOFF.pauses().collect();
        let floors = [10, 50, 250];
        assert_eq!(pauses.len(), floors.len());
        for (p, floor) in pauses.iter().zip(floors) {
            let floor = Duration::from_millis(floor);
            assert!(*p >= floor && *p <= floor + floor / 10, "{p:?} vs {floor:?}");
        }
    }

    #[test]
    fn pauses_saturate_and_respect_the_cap() {
        let huge = RetryBackoff {
            steps: 6,
            duration: Duration::from_secs(u64::MAX / 2),
            factor: 1e9,
            jitter: 0.0,
            cap: None,
        };
        assert!(huge.pauses().skip(1).all(|p| p == Duration::MAX));
        let capped = RetryBackoff {
            cap: Some(Duration::from_millis(30)),
            jitter: 0.0,
            ..RetryBackoff::DEFAULT_BACKOFF
        };
        let pauses: Vec<u128> = capped.pauses().map(|p| p.as_millis()).collect();
        assert_eq!(pauses, [10, 30, 30]);
        let zero = RetryBackoff { steps: 0, ..capped };
        assert_eq!(zero.pauses().count(), 0);
    }

    #[test]
    fn conflicts_are_retried_until_the_steps_run_out() {
        let fast = RetryBackoff {
            duration: Duration::ZERO,
            ..RetryBackoff::DEFAULT_RETRY
        };
        let mut calls = 0;
        let r: Result<()> = retry_on_conflict(fast, || {
            calls += 1;
            Err(conflict())
        });
        assert!(r.unwrap_err().is_conflict());
        assert_eq!(calls, 5, "every step is an attempt");

        let mut calls = 0;
        let r = retry_on_conflict(fast, || {
            calls += 1;
            if calls < 3 { Err(conflict()) } else { Ok(calls) }
        });
        assert_eq!(r.unwrap(), 3);

        // Anything else ends at once, AlreadyExists included.
        for e in [
            Error::Api(Box::new(Status::failure(409, "AlreadyExists", "exists"))),
            Error::Api(Box::new(Status::failure(500, "InternalError", "boom"))),
            Error::InvalidInput("bad".into()),
        ] {
            let mut calls = 0;
            let mut e = Some(e);
            let r: Result<()> = retry_on_conflict(fast, || {
                calls += 1;
                Err(e.take().unwrap_or_else(conflict))
            });
            assert!(r.is_err());
            assert_eq!(calls, 1);
        }

        // Zero steps still make one attempt.
        let mut calls = 0;
        let r: Result<()> = retry_on_conflict(RetryBackoff { steps: 0, ..fast }, || {
            calls += 1;
            Err(conflict())
        });
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}
