//! `LeaseTerm`: how long this replica's ownership of a Lease lasts, as the requests fenced by it see it
//! ([`Client::fenced`](super::Client::fenced)).
//!
//! The safety argument, step by step (the defaults' figures: lease 15 s, renew deadline 10 s, retry period 2 s):
//!
//! 1. A term ends at the **start** of the last renewal that succeeded plus the renew deadline, on this replica's
//!    clock; each renewal that succeeds moves the end to its own start plus the renew deadline.
//! 2. Another replica takes the Lease over only once it has seen the Lease unchanged for the lease duration on *its*
//!    clock; it saw that renewal's write after the write happened, so after the renewal started. Between this term's
//!    end and the earliest takeover lie at least `lease_duration − renew_deadline` (5 s), less the difference in
//!    the rate of the two clocks over that time (clock *offsets* never matter: nothing compares timestamps).
//! 3. A request fenced by the term is **not sent** once the term is over, nor when its client-side rate-limit token
//!    would come after the end. Once sent, a renewal extends it with the term; when the term ends — its elector
//!    ends it at its end, or on a release or a stop before the Lease is released — a request still on the wire is
//!    **aborted**, its connection closed. Should the elector be late (a callback of its holding its thread), a
//!    request is aborted anyway halfway through the margin of step 2 after the end the term had when it was sent.
//! 4. What remains: a request the server received before the abort may still be applied after it — by how long a
//!    server holds a request it has read, less the 5 s of step 2 (kube-apiserver drops a request whose client went
//!    away unless its write already reached etcd); and a process frozen between the last check and the write to
//!    its socket (a stopped VM) sends late.
//!
//! Reads from an informer's cache are not requests: they are never fenced.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::abort::Canceller;
use crate::clock::Clock;
use crate::clock::deadline::deadline_after;

/// One term of ownership of a Lease: from the moment this replica acquired it until the last renewal that succeeded
/// plus the renew deadline — later with each renewal — or until it stops leading, whichever comes first. Once over,
/// a term never resumes: the next acquisition is another term.
///
/// A [`LeaderElector`](crate::leaderelection::LeaderElector) hands its current term out
/// ([`LeaderElector::term`](crate::leaderelection::LeaderElector::term),
/// [`LeaderCallbacks::on_started_leading_with_term`](crate::leaderelection::LeaderCallbacks::on_started_leading_with_term));
/// a controller's reconciles write through a client fenced by it
/// ([`Context::client`](crate::controller::Context::client)). Cheap to clone: clones are the same term.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::client::{Api, Client, Config};
/// use kube_informer::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
/// use kube_informer::object::core::ConfigMap;
/// use kube_informer_apiserver::ApiServer;
///
/// let server = ApiServer::start()?;
/// let client = server.client()?;
/// let (tx, rx) = crossbeam_channel::unbounded();
/// let elector = LeaderElector::start(
///     LeaseLock::new(&client, "default", "my-job", "replica-1"),
///     LeaderElectionConfig::default(),
///     LeaderCallbacks::new().on_started_leading_with_term(move |term| tx.send(term.clone()).unwrap()),
/// )?;
/// let term = rx.recv_timeout(Duration::from_secs(30))?;
/// assert!(!term.is_over());
/// // Every request of `fenced` is refused, or aborted, once this term is over.
/// let fenced = client.fenced(&term);
/// let cms: Api<ConfigMap> = Api::namespaced(fenced, "default");
/// assert!(cms.list(&Default::default()).is_ok());
/// elector.stop(); // the term ends before the Lease is released
/// assert!(term.is_over());
/// assert!(cms.list(&Default::default()).unwrap_err().is_ownership_lost());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct LeaseTerm {
    inner: Arc<TermInner>,
}

struct TermInner {
    /// The Lease, `namespace/name`, for messages.
    lease: String,
    /// The elector's clock: `state.until` is one of its instants.
    clock: Arc<dyn Clock>,
    state: Mutex<TermState>,
    /// Requests refused or aborted because this term was over.
    refused: AtomicU64,
    /// The previous holder's last change of the Lease, as observed here (an instant of `clock`); `None` when there was
    /// none (this replica created the Lease).
    taken_over_from: Option<Instant>,
    /// How long after the end it had when sent a request is aborted should the elector not have ended the term by
    /// then: half of `lease_duration − renew_deadline`.
    backstop: Duration,
    /// Set by the first work done under this term.
    work_began: AtomicBool,
    /// The hand-over measured by the first work, for the elector's figures.
    handover: Mutex<Option<Duration>>,
    log: Option<Arc<HandoverLog>>,
}

struct TermState {
    /// Where the term ends unless a renewal moves it; an instant of the elector's clock. Only ever moves later.
    until: Instant,
    /// Invariant: once true, never false again, and `fenced` is empty.
    ended: bool,
    /// The connections of the clients fenced by this term: aborted when it ends.
    fenced: Vec<Weak<Canceller>>,
}

/// The hand-overs an elector's terms measured: the last one, and how many.
#[derive(Debug, Default)]
pub(crate) struct HandoverLog {
    pub(crate) last: Mutex<Option<Duration>>,
    pub(crate) count: AtomicU64,
}

impl LeaseTerm {
    /// A term of the Lease `lease` that ends at `until` (an instant of `clock`) unless extended. `margin`: the time
    /// between the end and the earliest takeover by another replica (`lease_duration − renew_deadline`).
    /// `taken_over_from`: when the previous holder's last change of the Lease was observed; `log` records the
    /// hand-over the first work measures.
    pub(crate) fn begin(
        lease: impl Into<String>,
        clock: Arc<dyn Clock>,
        (until, margin): (Instant, Duration),
        taken_over_from: Option<Instant>,
        log: Option<Arc<HandoverLog>>,
    ) -> LeaseTerm {
        LeaseTerm {
            inner: Arc::new(TermInner {
                lease: lease.into(),
                clock,
                state: Mutex::new(TermState {
                    until,
                    ended: false,
                    fenced: Vec::new(),
                }),
                refused: AtomicU64::new(0),
                backstop: margin / 2,
                taken_over_from,
                work_began: AtomicBool::new(false),
                handover: Mutex::new(None),
                log,
            }),
        }
    }

    /// A renewal succeeded: the term now ends at `until` (when later than before, and only while not ended). A
    /// renewal that started before the end and succeeded extends the term even when it returns just past the old
    /// end (the elector's check and this call are not one step): the Lease was renewed, so the new end is as safe as
    /// the old one, and requests refused in between stay refused.
    pub(crate) fn extend(&self, until: Instant) {
        let mut state = self.inner.state.lock();
        if !state.ended && until > state.until {
            state.until = until;
        }
    }

    /// Ends the term now (idempotent): every request fenced by it that is still on the wire is aborted, and none is
    /// sent any more.
    pub(crate) fn end(&self) {
        let fenced = {
            let mut state = self.inner.state.lock();
            state.ended = true;
            std::mem::take(&mut state.fenced)
        };
        for canceller in fenced.iter().filter_map(Weak::upgrade) {
            canceller.cancel();
        }
    }

    /// Aborts `canceller` when the term ends (at once when it is over).
    pub(crate) fn register(&self, canceller: &Arc<Canceller>) {
        let mut state = self.inner.state.lock();
        if !state.ended {
            state.fenced.retain(|c| c.strong_count() > 0);
            state.fenced.push(Arc::downgrade(canceller));
            return;
        }
        drop(state);
        canceller.cancel();
    }

    /// The Lease, `namespace/name`.
    pub fn lease(&self) -> &str {
        &self.inner.lease
    }

    /// True once the term is over: ended by its elector (a loss, a release, a stop), or past its end on the
    /// elector's clock though the elector has not noticed yet.
    pub fn is_over(&self) -> bool {
        let state = self.inner.state.lock();
        state.ended || self.inner.clock.now() >= state.until
    }

    /// Where the term ends unless a renewal extends it, as an instant of the real clock ([`Instant::now`]); `None`
    /// once over.
    pub fn ends_at(&self) -> Option<Instant> {
        let state = self.inner.state.lock();
        let left = state.until.checked_duration_since(self.inner.clock.now())?;
        (!state.ended && !left.is_zero()).then(|| deadline_after(Instant::now(), left))
    }

    /// When a request sent now is aborted at the latest, should the elector not end the term before (see the
    /// module); `None` once over.
    pub(crate) fn abort_at(&self) -> Option<Instant> {
        self.ends_at().map(|end| deadline_after(end, self.inner.backstop))
    }

    /// Requests refused, or aborted in flight, because this term was over (by every client fenced by it).
    pub fn refused_requests(&self) -> u64 {
        self.inner.refused.load(Ordering::Relaxed)
    }

    /// Where the term ends, on the elector's clock.
    #[cfg(test)]
    pub(crate) fn until(&self) -> Instant {
        self.inner.state.lock().until
    }

    pub(crate) fn count_refused(&self) {
        self.inner.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// How long the work was left undone at the hand-over that began this term: from the previous holder's last
    /// change of the Lease that this replica observed, to the first work done under this term (a controller's first
    /// reconcile) — the outage its users saw. `None` before that work, or when there was no previous holder.
    pub fn handover(&self) -> Option<Duration> {
        *self.inner.handover.lock()
    }

    /// Work begins under this term: the first call measures the hand-over ([`handover`](Self::handover)) and
    /// returns it; later calls return `None`.
    pub(crate) fn begin_work(&self) -> Option<Duration> {
        if self.inner.work_began.swap(true, Ordering::AcqRel) {
            return None;
        }
        let from = self.inner.taken_over_from?;
        let outage = self.inner.clock.now().saturating_duration_since(from);
        *self.inner.handover.lock() = Some(outage);
        if let Some(log) = &self.inner.log {
            *log.last.lock() = Some(outage);
            log.count.fetch_add(1, Ordering::Relaxed);
        }
        Some(outage)
    }
}

impl fmt::Debug for LeaseTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseTerm")
            .field("lease", &self.inner.lease)
            .field("over", &self.is_over())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    fn term(clock: &FakeClock, lasting: Duration) -> LeaseTerm {
        let clock = clock.clone();
        let until = clock.now() + lasting;
        LeaseTerm::begin("ns/lease", Arc::new(clock), (until, Duration::ZERO), None, None)
    }

    #[test]
    fn a_term_ends_at_its_deadline_unless_renewed_and_never_resumes() {
        let clock = FakeClock::new();
        let t = term(&clock, Duration::from_secs(10));
        let first = t.ends_at().unwrap();
        clock.step(Duration::from_secs(4));
        // A renewal that started now: ten seconds from here.
        t.extend(clock.now() + Duration::from_secs(10));
        assert!(t.ends_at().unwrap() > first, "a renewal moves the end later");
        t.extend(clock.now() + Duration::from_secs(1));
        assert!(t.ends_at().unwrap() > first, "never earlier");
        clock.step(Duration::from_secs(10));
        assert!(
            t.is_over() && t.ends_at().is_none(),
            "past its end on the elector's clock"
        );
        t.end();
        t.extend(clock.now() + Duration::from_secs(10));
        assert!(t.is_over(), "an ended term never resumes");
    }

    #[test]
    fn ending_aborts_the_fenced_connections_and_those_registered_later() {
        let clock = FakeClock::new();
        let t = term(&clock, Duration::from_secs(10));
        let (before, after) = (Canceller::new(), Canceller::new());
        t.register(&before);
        assert!(!before.is_cancelled());
        t.end();
        assert!(t.is_over() && before.is_cancelled());
        t.register(&after);
        assert!(
            after.is_cancelled(),
            "a client fenced by an ended term is aborted at once"
        );
    }

    #[test]
    fn the_first_work_measures_the_hand_over_from_the_previous_holders_last_renewal() {
        let clock = FakeClock::new();
        let seen = clock.now();
        clock.step(Duration::from_secs(15));
        let log = Arc::new(HandoverLog::default());
        let until = clock.now() + Duration::from_secs(10);
        let t = LeaseTerm::begin(
            "ns/lease",
            Arc::new(clock.clone()),
            (until, Duration::ZERO),
            Some(seen),
            Some(log.clone()),
        );
        assert_eq!(t.handover(), None);
        clock.step(Duration::from_millis(300));
        assert_eq!(t.begin_work(), Some(Duration::from_millis(15_300)));
        clock.step(Duration::from_secs(1));
        assert_eq!(t.begin_work(), None, "measured once");
        assert_eq!(t.handover(), Some(Duration::from_millis(15_300)));
        assert_eq!(*log.last.lock(), Some(Duration::from_millis(15_300)));
        assert_eq!(log.count.load(Ordering::Relaxed), 1);
        // A Lease this replica created: no one to take over from.
        assert_eq!(term(&clock, Duration::from_secs(1)).begin_work(), None);
    }
}
