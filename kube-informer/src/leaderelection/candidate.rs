//! `Candidate`: client-go's `tryAcquireOrRenew` and `release` — one attempt at a time, no threads, no clock.

use std::time::{Instant, SystemTime};

use log::debug;

use super::record::micro_time;
use super::{LeaderElectionRecord, Lock};
use crate::clock::deadline::deadline_after;
use crate::error::Error;

/// client-go's `tryAcquireOrRenew` and `release`, with the observed record and the local time it was observed.
///
/// Expiry is judged **only by the local clock**: a candidate remembers when it last saw the record change
/// (`observed_time`) and considers the lease expired `lease_duration_seconds` (the holder's) after that. The
/// timestamps inside the record are never compared with this clock, so clock skew between candidates does not
/// matter (only their clock *rates* must roughly agree).
#[derive(Debug)]
pub(crate) struct Candidate {
    identity: String,
    lease_seconds: i32,
    /// The record as last read or written.
    observed: LeaderElectionRecord,
    /// Local time of the last change of `observed`; `None` before the first observation.
    observed_time: Option<Instant>,
    /// The holder last reported through `NewLeader` (empty: nobody yet).
    reported: String,
    /// Why the last attempt could not reach the lock (an error other than losing a race to another candidate);
    /// `None` when it reached it.
    failure: Option<String>,
    /// When the record that the last attempt's write replaced was first observed here (`observed_time` just before
    /// the write); `None` when the attempt created the lock or wrote nothing. At an acquisition: the previous
    /// holder's last change of the lock, as seen here — where the outage of a hand-over begins.
    replaced_since: Option<Instant>,
    /// A write claiming the lock for this candidate was sent and never answered (interrupted, timed out, the
    /// connection lost): the server may have applied it, or apply it yet, so the lock may be held here although
    /// `observed` does not say so. Cleared by a successful write, or by a read showing a lock that write can no
    /// longer land on (see [`settle_claim`](Self::settle_claim)); while set, [`release`](Self::release) makes sure
    /// the claim cannot leave the lock held. An unanswered renewal needs no mark: `observed` names this candidate
    /// until a read shows the record changed, and once it changed the renewal can no longer land.
    claim_unanswered: Option<Claim>,
}

/// How an unanswered claim was sent: the lock it can still land on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    /// Creating the lock: it lands while no lock exists.
    Create,
    /// Replacing the observed record: it lands while the lock is still at the version that record was read at.
    Update,
}

impl Candidate {
    pub(crate) fn new(identity: &str, lease_seconds: i32) -> Candidate {
        Candidate {
            identity: identity.to_owned(),
            lease_seconds,
            observed: LeaderElectionRecord::default(),
            observed_time: None,
            reported: String::new(),
            failure: None,
            replaced_since: None,
            claim_unanswered: None,
        }
    }

    /// True when the observed holder is this candidate.
    pub(crate) fn is_leader(&self) -> bool {
        !self.identity.is_empty() && self.observed.holder_identity == self.identity
    }

    /// True when the lock is, or may be, held here: this candidate is the observed holder, or a write claiming the
    /// lock went unanswered (see the field).
    pub(crate) fn may_hold(&self) -> bool {
        self.is_leader() || self.claim_unanswered.is_some()
    }

    /// Given what the lock reads now (before `observed` takes it), forgets an unanswered claim that can no longer
    /// land: a create once a lock exists, an update once the record changed from the one it replaced (the change
    /// gave the lock a new version). A record unchanged may still be at that version, and a claim sent on it may
    /// still land.
    fn settle_claim(&mut self, read: Option<&LeaderElectionRecord>) {
        self.claim_unanswered = match (self.claim_unanswered, read) {
            (Some(Claim::Create), None) => Some(Claim::Create),
            (Some(Claim::Update), Some(record)) if *record == self.observed => Some(Claim::Update),
            _ => None,
        };
    }

    /// When the record the last attempt replaced was first observed here (see the field).
    pub(crate) fn replaced_since(&self) -> Option<Instant> {
        self.replaced_since
    }

    /// Why the last attempt could not reach the lock, if it could not.
    pub(crate) fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    pub(crate) fn observed(&self) -> &LeaderElectionRecord {
        &self.observed
    }

    /// True while the observed lease has not expired by the local clock.
    pub(crate) fn is_lease_valid(&self, now: Instant) -> bool {
        self.observed_time
            .is_some_and(|t| deadline_after(t, self.observed.lease_duration()) > now)
    }

    /// When the lease another candidate holds expires by the local clock (`None`: held by nobody, by this
    /// candidate, or not observed yet).
    pub(crate) fn expires_at(&self) -> Option<Instant> {
        if self.observed.holder_identity.is_empty() || self.is_leader() {
            return None;
        }
        self.observed_time
            .map(|t| deadline_after(t, self.observed.lease_duration()))
    }

    pub(crate) fn set_observed(&mut self, record: LeaderElectionRecord, now: Instant) {
        self.observed = record;
        self.observed_time = Some(now);
    }

    /// One attempt to acquire the lock, or to renew it when held; true on success. Every call on the lock gets
    /// `deadline` (of the real clock).
    pub(crate) fn try_acquire_or_renew(
        &mut self,
        lock: &dyn Lock,
        now: Instant,
        wall: SystemTime,
        deadline: Instant,
    ) -> bool {
        self.failure = None;
        self.replaced_since = None;
        let wall = micro_time(wall);
        let mut desired = LeaderElectionRecord {
            holder_identity: self.identity.clone(),
            lease_duration_seconds: self.lease_seconds,
            acquire_time: Some(wall),
            renew_time: Some(wall),
            leader_transitions: 0,
        };

        // 1. Fast path: the leader renews assuming the record it wrote last is still current (the lock's
        //    resourceVersion check catches it if not).
        if self.is_leader() && self.is_lease_valid(now) {
            desired.acquire_time = self.observed.acquire_time;
            desired.leader_transitions = self.observed.leader_transitions;
            self.replaced_since = self.observed_time;
            match lock.update(&desired, deadline) {
                Ok(()) => {
                    self.set_observed(desired, now);
                    return true;
                }
                // Interrupted: the elector is stopping — nothing more to try.
                Err(Error::Stopped) => {
                    debug!("{}: renewal interrupted", lock.describe());
                    self.failure = Some("interrupted".into());
                    return false;
                }
                Err(e) => debug!("{}: optimistic renewal failed ({e}); reading the lock", lock.describe()),
            }
        }

        // 2. Read the record, or create the lock.
        let read = lock.get(deadline);
        if let Ok(record) = &read {
            self.settle_claim(record.as_ref());
        }
        let current = match read {
            Ok(Some(r)) => r,
            Ok(None) => {
                return match lock.create(&desired, deadline) {
                    Ok(()) => {
                        self.claim_unanswered = None;
                        self.set_observed(desired, now);
                        true
                    }
                    Err(e) => {
                        debug!("{}: cannot create the lock: {e}", lock.describe());
                        if !answered(&e) {
                            self.claim_unanswered = Some(Claim::Create);
                        }
                        if !e.is_already_exists() {
                            self.failure = Some(format!("cannot create the lock: {e}"));
                        }
                        false
                    }
                };
            }
            Err(e) => {
                debug!("{}: cannot read the lock: {e}", lock.describe());
                self.failure = Some(format!("cannot read the lock: {e}"));
                return false;
            }
        };

        // 3. A record that changed restarts the holder's lease on the local clock.
        if current != self.observed {
            self.set_observed(current.clone(), now);
        }
        if !current.holder_identity.is_empty() && self.is_lease_valid(now) && !self.is_leader() {
            return false; // held by another, not yet expired
        }

        // 4. Take it (or renew it through the slow path).
        if self.is_leader() {
            desired.acquire_time = current.acquire_time;
            desired.leader_transitions = current.leader_transitions;
        } else {
            desired.leader_transitions = current.leader_transitions.saturating_add(1);
        }
        self.replaced_since = self.observed_time;
        match lock.update(&desired, deadline) {
            Ok(()) => {
                self.claim_unanswered = None;
                self.set_observed(desired, now);
                true
            }
            Err(e) => {
                debug!("{}: cannot update the lock: {e}", lock.describe());
                if !answered(&e) {
                    self.claim_unanswered = Some(Claim::Update);
                }
                if !e.is_conflict() {
                    self.failure = Some(format!("cannot update the lock: {e}"));
                }
                false
            }
        }
    }

    /// Gives the lock up if held (client-go's `release`): holder emptied, lease duration 1 s, times set to now,
    /// transitions kept.
    ///
    /// The record is read first (as client-go does since 1.31), so that a renewal the server applied but whose
    /// answer was lost (an interrupted request) does not make the release fail on a stale resourceVersion; the lock
    /// is released only when that fresh record still names this candidate — a candidate that took over meanwhile
    /// is never overwritten.
    ///
    /// A write of this candidate's whose answer was lost may still be applied by the server after that read (the
    /// connection was closed, the request not withdrawn). Its version is the one it was sent on, so whichever of it
    /// and the release lands first makes the other conflict: a release that conflicts reads again and is tried
    /// again, up to [`RELEASE_ATTEMPTS`] times. An unanswered claim on a lock that read unchanged (or still absent)
    /// is fenced the same way: the released record is written (or created) on that version, so the claim cannot
    /// land after this returns.
    pub(crate) fn release(&mut self, lock: &dyn Lock, now: Instant, wall: SystemTime, deadline: Instant) -> Release {
        if !self.may_hold() {
            return Release::NotHeld;
        }
        let wall = micro_time(wall);
        for _ in 0..RELEASE_ATTEMPTS {
            let read = match lock.get(deadline) {
                Ok(read) => read,
                Err(e) => {
                    debug!("{}: cannot read the lock to release it: {e}", lock.describe());
                    return Release::Failed;
                }
            };
            self.settle_claim(read.as_ref());
            let fence = self.claim_unanswered.is_some();
            let held = read.as_ref().is_some_and(|r| r.holder_identity == self.identity);
            let released = LeaderElectionRecord {
                holder_identity: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(wall),
                renew_time: Some(wall),
                leader_transitions: read.as_ref().map_or(0, |r| r.leader_transitions),
            };
            let written = match read {
                Some(_) if held || fence => lock.update(&released, deadline),
                None if fence => lock.create(&released, deadline),
                Some(current) => {
                    self.set_observed(current, now);
                    return Release::NotHeld;
                }
                None => return Release::NotHeld,
            };
            match written {
                Ok(()) => {
                    self.claim_unanswered = None;
                    self.set_observed(released, now);
                    return if held { Release::Released } else { Release::NotHeld };
                }
                Err(e) if e.is_conflict() || e.is_already_exists() => {
                    debug!(
                        "{}: the lock changed while releasing it; reading it again",
                        lock.describe()
                    );
                }
                Err(e) => {
                    debug!("{}: cannot release the lock: {e}", lock.describe());
                    return Release::Failed;
                }
            }
        }
        debug!("{}: the lock kept changing while releasing it", lock.describe());
        Release::Failed
    }

    /// client-go's `maybeReportTransition`: the new holder (empty once released), when it changed since the last
    /// report.
    pub(crate) fn take_new_leader(&mut self) -> Option<String> {
        if self.observed.holder_identity == self.reported {
            return None;
        }
        self.reported = self.observed.holder_identity.clone();
        Some(self.reported.clone())
    }
}

/// How many times [`Candidate::release`] reads and writes the lock when its writes conflict.
pub(crate) const RELEASE_ATTEMPTS: usize = 3;

/// What [`Candidate::release`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// The lock was not held here: nothing written, or only the fence of an unanswered claim (see
    /// [`Candidate::release`]).
    NotHeld,
    /// The lock was held here and is released.
    Released,
    /// The lock was, or may have been, held here and could not be released: it expires on its own.
    Failed,
}

/// True when the server answered `e`'s request, so that a write it refused was not applied: an error status below
/// 500. A 5xx (a 504 whose write may still be under way), a transport error or an interrupted call leaves the
/// outcome unknown.
fn answered(e: &Error) -> bool {
    e.code().is_some_and(|code| code < 500)
}
