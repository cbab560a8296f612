//! Health: whether a component is doing its job right now, and if not, why — for people and for probes.
//!
//! Every long-running part of the crate reports a [`Health`]: informers ([`SharedIndexInformer::health`]), the
//! factory ([`SharedInformerFactory::health`]), the controller runner ([`Controller::health`]), the leader elector
//! ([`LeaderElector::health`]) and the event recorder ([`EventRecorder::health`]).
//!
//! * [`Health::Healthy`] — working.
//! * [`Health::Degraded`] — retrying after failures (the API server unreachable, RBAC missing, a resource not
//!   served…); the cache may be stale, and the error says why. It recovers on its own once the cause goes.
//! * [`Health::Halted`] — stopped for good: it was stopped, or one of its threads died (a panic in a transform).
//!   Nothing will bring it back but a restart.
//!
//! Reading a health is cheap (a short lock, never held across I/O): poll it as often as a probe likes.
//!
//! **Probes**: use health, not `has_synced()`. `has_synced()` keeps client-go's meaning — the first full list
//! reached the cache — and stays true over a cache that has since stopped being updated. A liveness probe should
//! fail on `Halted` only (a restart helps; it does not when the API server is down), a readiness probe on anything
//! but synced and `Healthy`. A [`Registry`] gathers the components a program runs and reports their checks
//! ([`Registry::report`]); the `probe` feature serves them the way controller-runtime's manager does, and the
//! `metrics` feature exports every figure they keep to Prometheus.
//!
//! This module is the state a component writes, low in the crate (the cache and the client use it); the
//! [`Registry`], which reads every component, sits at the top of the crate in [`registry`](crate::registry).
//!
//! [`SharedIndexInformer::health`]: crate::informer::SharedIndexInformer::health
//! [`SharedInformerFactory::health`]: crate::informer::SharedInformerFactory::health
//! [`Controller::health`]: crate::controller::Controller::health
//! [`LeaderElector::health`]: crate::leaderelection::LeaderElector::health
//! [`EventRecorder::health`]: crate::events::EventRecorder::health
//! [`Registry`]: crate::registry::Registry
//! [`Registry::report`]: crate::registry::Registry::report

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use crate::failure_streak::human_duration;

mod cell;

pub(crate) use cell::{HealthCell, Stamp};

/// The health of one component.
///
/// ```
/// use kube_informer::health::Health;
///
/// let h = Health::Halted { reason: "stopped".into() };
/// assert!(h.is_halted() && !h.is_healthy());
/// assert_eq!(h.to_string(), "halted: stopped");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// Working.
    Healthy,
    /// Retrying after failures; recovers on its own when the cause goes away.
    Degraded {
        /// When the first failure of this streak happened.
        since: Instant,
        /// Failed attempts in this streak (at least 1).
        attempts: u64,
        /// What the last attempt failed with: the request, the server's answer and, where there is one, what to do.
        last_error: String,
    },
    /// Stopped for good: stopped on purpose, or a thread of it died.
    Halted {
        /// Why: `stopped`, or the panic that ended a thread.
        reason: String,
    },
}

impl Health {
    /// True when [`Healthy`](Health::Healthy).
    pub fn is_healthy(&self) -> bool {
        matches!(self, Health::Healthy)
    }

    /// True when [`Halted`](Health::Halted).
    pub fn is_halted(&self) -> bool {
        matches!(self, Health::Halted { .. })
    }

    /// `healthy`, `degraded` or `halted` (the `state` label of the `*_health_state` metrics).
    pub fn state(&self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::Degraded { .. } => "degraded",
            Health::Halted { .. } => "halted",
        }
    }

    /// How bad it is: 0 healthy, 1 degraded, 2 halted.
    fn rank(&self) -> u8 {
        match self {
            Health::Healthy => 0,
            Health::Degraded { .. } => 1,
            Health::Halted { .. } => 2,
        }
    }

    /// The worse of the two (the first one when equally bad): how a group of components is doing.
    #[must_use]
    pub fn worse(self, other: Health) -> Health {
        if other.rank() > self.rank() { other } else { self }
    }

    /// The worst of many, `Healthy` for none.
    pub fn worst(all: impl IntoIterator<Item = Health>) -> Health {
        all.into_iter().fold(Health::Healthy, Health::worse)
    }
}

/// `healthy`; `degraded for 2m05s (12 failed attempts): list failed: …`; `halted: stopped`.
impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Health::Healthy => f.write_str("healthy"),
            Health::Degraded {
                since,
                attempts,
                last_error,
            } => write!(
                f,
                "degraded for {} ({attempts} failed attempt{}): {last_error}",
                human_duration(since.elapsed()),
                if *attempts == 1 { "" } else { "s" }
            ),
            Health::Halted { reason } => write!(f, "halted: {reason}"),
        }
    }
}

/// The last error a component met, kept after it recovered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastError {
    /// The error's text (the request, the server's answer, and what to do when there is something to do).
    pub message: String,
    /// When it happened (wall clock).
    pub at: SystemTime,
    /// How long ago it happened, when this snapshot was taken.
    pub age: Duration,
}

/// Ages and the last error of a component, and its health: what an informer reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InformerHealth {
    /// The informer's name.
    pub name: String,
    /// Its health.
    pub state: Health,
    /// Whether its cache has synced ([`has_synced`](crate::informer::SharedIndexInformer::has_synced): true once
    /// the first full list reached the cache, and it stays true).
    pub synced: bool,
    /// Time since the last watch event or bookmark arrived (`None`: none yet). A healthy watch on kube-apiserver
    /// gets a bookmark about once a minute even when nothing changes.
    pub last_event_age: Option<Duration>,
    /// Time since the last successful list (`None`: none yet).
    pub last_list_age: Option<Duration>,
    /// The last error of the list/watch loop, kept after recovery (`None`: never failed).
    pub last_error: Option<LastError>,
}

impl InformerHealth {
    /// Synced and healthy: what a readiness probe asks of an informer.
    pub fn is_ready(&self) -> bool {
        self.synced && self.state.is_healthy()
    }
}

/// Why an informer is not (yet) synced, on one line: its error with the attempt count and age, or its halt, or
/// that it is still at its first list.
impl fmt::Display for InformerHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.name)?;
        match &self.state {
            Health::Degraded {
                since,
                attempts,
                last_error,
            } => {
                write!(
                    f,
                    "{last_error} ({attempts} attempt{}",
                    if *attempts == 1 { "" } else { "s" }
                )?;
                match &self.last_error {
                    Some(e) => write!(f, ", last {} ago", human_duration(e.age))?,
                    None => write!(f, " over {}", human_duration(since.elapsed()))?,
                }
                f.write_str(")")
            }
            Health::Halted { reason } => write!(f, "halted: {reason}"),
            Health::Healthy if self.synced => f.write_str("synced"),
            Health::Healthy => match &self.last_error {
                Some(e) => write!(
                    f,
                    "no failure now; still listing (last error {} ago: {})",
                    human_duration(e.age),
                    e.message
                ),
                None => f.write_str("no error so far; still listing"),
            },
        }
    }
}

/// The health of a factory's informers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactoryHealth {
    /// The worst of the informers' states (`Healthy` for none).
    pub state: Health,
    /// Each informer's.
    pub informers: Vec<InformerHealth>,
}

impl FactoryHealth {
    /// Every informer synced and healthy.
    pub fn is_ready(&self) -> bool {
        self.informers.iter().all(InformerHealth::is_ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_health_wins() {
        let degraded = Health::Degraded {
            since: Instant::now(),
            attempts: 2,
            last_error: "e".into(),
        };
        let halted = Health::Halted { reason: "r".into() };
        assert_eq!(Health::worst([]), Health::Healthy);
        assert_eq!(Health::worst([Health::Healthy, degraded.clone()]), degraded);
        assert_eq!(
            Health::worst([halted.clone(), degraded.clone(), Health::Healthy]),
            halted
        );
    }

    #[test]
    fn an_informer_says_why_it_is_not_synced() {
        let h = InformerHealth {
            name: "configmaps".into(),
            state: Health::Degraded {
                since: Instant::now(),
                attempts: 12,
                last_error: "list failed: 403 Forbidden: configmaps is forbidden".into(),
            },
            synced: false,
            last_event_age: None,
            last_list_age: None,
            last_error: Some(LastError {
                message: "list failed: 403 Forbidden: configmaps is forbidden".into(),
                at: SystemTime::now(),
                age: Duration::from_secs(2),
            }),
        };
        assert_eq!(
            h.to_string(),
            "configmaps: list failed: 403 Forbidden: configmaps is forbidden (12 attempts, last 2s ago)"
        );
        let listing = InformerHealth {
            state: Health::Healthy,
            last_error: None,
            ..h.clone()
        };
        assert_eq!(listing.to_string(), "configmaps: no error so far; still listing");
        let halted = InformerHealth {
            state: Health::Halted {
                reason: "stopped".into(),
            },
            ..h
        };
        assert_eq!(halted.to_string(), "configmaps: halted: stopped");
        assert!(!halted.is_ready());
    }
}
