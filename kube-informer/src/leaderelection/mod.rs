//! Leader election over a `coordination.k8s.io/v1` Lease, with client-go's algorithm and defaults.
//!
//! Several replicas of a controller run; one leads and does the work, the others wait, ready to take over. The
//! leader holds a [`Lease`]: it writes its identity and renews the lease every `retry_period` (2 s); the others read
//! it every `retry_period · (1 + 1.2 · rand)` — and at the moment its lease would expire, if sooner — and take it
//! over only when they have seen **no change** to it for the holder's `lease_duration` (15 s), measured on their own
//! clock. Every write is conditional on the Lease's
//! resourceVersion, so of two candidates racing for an expired lease exactly one wins. A leader that cannot renew
//! within `renew_deadline` (10 s) of the start of its last successful renewal stops leading — five seconds before
//! anyone else may start — and a leader that stops gracefully releases the lease so that another takes over at once.
//!
//! That holds whatever the client: each call on the lock is bounded by the end of the leader's term, and a request
//! still running there is aborted ([`Client::with_deadline`](crate::client::Client::with_deadline)), so a renewal
//! the API server leaves hanging ends leadership on time rather than when (or if) the server answers.
//!
//! The work a leader does can be held to the same end: each term of leadership is a
//! [`LeaseTerm`](crate::client::LeaseTerm) — the last renewal that succeeded plus the renew deadline, extended by
//! each renewal ([`LeaderElector::term`], [`LeaderCallbacks::on_started_leading_with_term`]) —, and a client fenced
//! by it ([`Client::fenced`](crate::client::Client::fenced)) refuses what it would send once the term is over and
//! aborts what is in flight when it ends, before anyone else may take over. A controller under leader election writes
//! through such a client ([`Context::client`](crate::controller::Context::client)). What remains: clock *rates* that
//! differ by more than `lease_duration − renew_deadline` over a lease duration, a request the server read before the
//! abort reached it, and a process frozen between the last check and its socket write.
//!
//! * [`LeaderElector`]: runs the election on a thread and calls [`LeaderCallbacks`].
//! * [`Lock`]: where the record lives; [`LeaseLock`] is the real one (over [`Api<Lease>`](crate::client::Api)).
//! * A [`Controller`](crate::controller::Controller) runs only while leading through
//!   [`Controller::leader_callbacks`](crate::controller::Controller::leader_callbacks).

mod candidate;
mod config;
mod elector;
mod lease_lock;
mod lock;
mod record;

pub(crate) use config::default_identity;
pub use config::{JITTER_FACTOR, LeaderCallbacks, LeaderElectionConfig};
pub use elector::LeaderElector;
pub(crate) use elector::WeakElector;
pub use lease_lock::LeaseLock;
pub use lock::Lock;
pub use record::{LeaderElectionRecord, Lease, LeaseSpec};
