//! The elector's loop (client-go's `LeaderElector.Run`: acquire, renew, release) as a pure state machine, and the
//! thread that runs it.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use log::{debug, info, warn};
use parking_lot::Mutex;

use super::candidate::{Candidate, Release};
use super::config::{JITTER_FACTOR, LeaderCallbacks, LeaderElectionConfig};
use super::{LeaderElectionRecord, Lock};
use crate::client::{HandoverLog, LeaseTerm};
use crate::clock::deadline::deadline_after;
use crate::clock::jitter::jitter;
use crate::clock::{Clock, ClockWatcher};
use crate::error::{Error, Result};
use crate::failure_streak::{FailureStreak, human_duration};
use crate::health::{Health, HealthCell};
use crate::stop::StopSignal;
use crate::thread_name::ThreadName;
use crate::worker::{STOP_BUDGET, Worker};

/// What a step of the machine reports, for the thread to act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Transition {
    NewLeader(String),
    StartedLeading,
    StoppedLeading,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Trying to acquire, every `retry_period · (1 + 1.2 · rand)`.
    Candidate,
    /// Leading, renewing every `retry_period`, until `until`: the start of the last successful acquisition or
    /// renewal plus `renew_deadline`. A renewal that does not complete before `until` ends leadership there.
    Leading { until: Instant },
}

/// The elector's loop as a pure state machine: `step` makes one attempt and says when to make the next.
///
/// Leadership lasts `renew_deadline` from the **start** of the last attempt that succeeded, and every call of an
/// attempt is bounded by that end (the lock aborts its request there): a renewal hanging on the server cannot keep
/// this candidate leading. Another candidate may take over only `lease_duration` after it saw that attempt's write,
/// which happened after the attempt started, so leadership always ends `lease_duration − renew_deadline` before
/// anyone else can begin. (client-go counts its renew deadline from the start of each renewal cycle, a retry period
/// after the previous renewal returned, which lets a slow successful renewal eat into that margin.)
#[derive(Debug)]
pub(crate) struct Machine {
    candidate: Candidate,
    phase: Phase,
    renew_deadline: Duration,
    retry_period: Duration,
    /// The elector's clock, which its terms read: `step` is given this clock.
    clock: Arc<dyn Clock>,
    /// The current term: set when leadership starts, extended by each renewal (its end is `Phase::Leading`'s
    /// `until`), ended — its fenced requests aborted — when leadership is lost, or by [`end_term`](Self::end_term)
    /// once a stopping elector's callbacks returned.
    term: Option<LeaseTerm>,
    /// The hand-overs the terms measured.
    handovers: Arc<HandoverLog>,
    /// `lease_duration − renew_deadline`: between a term's end and anyone else's takeover.
    margin: Duration,
}

impl Machine {
    pub(crate) fn new(identity: &str, config: &LeaderElectionConfig) -> Machine {
        Machine {
            candidate: Candidate::new(identity, config.lease_seconds()),
            phase: Phase::Candidate,
            renew_deadline: config.renew_deadline,
            retry_period: config.retry_period,
            clock: config.clock.clone(),
            term: None,
            handovers: Arc::default(),
            margin: config.lease_duration.saturating_sub(config.renew_deadline),
        }
    }

    /// The current term, while leading (and, once leadership stopped gracefully, until [`end_term`](Self::end_term)).
    pub(crate) fn term(&self) -> Option<&LeaseTerm> {
        self.term.as_ref()
    }

    /// Where this machine's terms record their hand-overs.
    pub(crate) fn handovers(&self) -> &Arc<HandoverLog> {
        &self.handovers
    }

    /// Ends the current term, if any: its fenced requests in flight are aborted (before the lock is released).
    pub(crate) fn end_term(&mut self) {
        if let Some(term) = self.term.take() {
            term.end();
        }
    }

    /// Starts from an observation made elsewhere on this machine: `record` unchanged since `at` (a sharded
    /// controller's coordinator watched the slot's Lease before starting its election). The lease then expires
    /// `lease_duration` after `at`, not after this candidate's own first read — and only if the record it reads is
    /// still that one.
    pub(crate) fn observed_since(&mut self, record: LeaderElectionRecord, at: Instant) {
        self.candidate.set_observed(record, at);
    }

    pub(crate) fn is_leading(&self) -> bool {
        matches!(self.phase, Phase::Leading { .. })
    }

    /// When the current term ends unless renewed (`None` while not leading).
    #[cfg(test)]
    pub(crate) fn leading_until(&self) -> Option<Instant> {
        match self.phase {
            Phase::Leading { until } => Some(until),
            Phase::Candidate => None,
        }
    }

    pub(crate) fn candidate(&self) -> &Candidate {
        &self.candidate
    }

    fn jittered_retry(&self) -> Duration {
        jitter(self.retry_period, JITTER_FACTOR)
    }

    /// One attempt at `clock`'s current time; pushes what changed onto `out` and returns when to step next.
    pub(crate) fn step(&mut self, lock: &dyn Lock, clock: &dyn Clock, out: &mut Vec<Transition>) -> Instant {
        let start = clock.now();
        // The term this attempt would start or extend ends here; the attempt must complete before the end of the
        // current term (a candidate's attempt: before the term it would start ends).
        let term_end = deadline_after(start, self.renew_deadline);
        match self.phase {
            Phase::Candidate => {
                let ok =
                    self.candidate
                        .try_acquire_or_renew(lock, start, wall_time(start), real_deadline(clock, term_end));
                self.report(out);
                let now = clock.now();
                if ok && now < term_end {
                    info!("{}: acquired the lock as {}", lock.describe(), lock.identity());
                    self.phase = Phase::Leading { until: term_end };
                    self.end_term();
                    self.term = Some(LeaseTerm::begin(
                        lock.describe(),
                        self.clock.clone(),
                        (term_end, self.margin),
                        self.candidate.replaced_since(),
                        Some(self.handovers.clone()),
                    ));
                    out.push(Transition::StartedLeading);
                    deadline_after(now, self.retry_period).min(term_end)
                } else {
                    if ok {
                        debug!("{}: acquired the lock too late to lead; trying again", lock.describe());
                    }
                    // Held by another: the next attempt comes when its lease expires, if that is sooner — a dead
                    // holder's lease is taken at its expiry, not up to a retry period later.
                    let retry = deadline_after(now, self.jittered_retry());
                    match self.candidate.expires_at() {
                        Some(expiry) if expiry > now => retry.min(expiry),
                        _ => retry,
                    }
                }
            }
            Phase::Leading { until } => {
                if start >= until {
                    return self.lose(lock, start, out);
                }
                let ok =
                    self.candidate
                        .try_acquire_or_renew(lock, start, wall_time(start), real_deadline(clock, until));
                self.report(out);
                let now = clock.now();
                if now >= until {
                    // Too late, even if the lock answered: the term ended while waiting.
                    return self.lose(lock, now, out);
                }
                if ok {
                    self.phase = Phase::Leading { until: term_end };
                    if let Some(term) = &self.term {
                        term.extend(term_end);
                    }
                    deadline_after(now, self.retry_period).min(term_end)
                } else {
                    deadline_after(now, self.retry_period).min(until)
                }
            }
        }
    }

    fn lose(&mut self, lock: &dyn Lock, now: Instant, out: &mut Vec<Transition>) -> Instant {
        info!(
            "{}: could not renew the lock within {:?} of the last renewal; stopped leading",
            lock.describe(),
            self.renew_deadline
        );
        self.phase = Phase::Candidate;
        // Past its end already: what the term fenced and is still in flight is aborted before anyone is told.
        self.end_term();
        out.push(Transition::StoppedLeading);
        deadline_after(now, self.jittered_retry())
    }

    /// Stopping: reports the end of leadership, if leading. The term goes on until [`end_term`](Self::end_term) —
    /// the work it guards finishes what it can within it — and the lock is released afterwards by
    /// [`release`](Machine::release).
    pub(crate) fn stop_leading(&mut self, out: &mut Vec<Transition>) {
        if self.is_leading() {
            self.phase = Phase::Candidate;
            out.push(Transition::StoppedLeading);
        }
    }

    /// Releases the lock if this candidate holds it or may ([`Candidate::release`]), the calls on the lock ending by
    /// `deadline` (real clock).
    pub(crate) fn release(&mut self, lock: &dyn Lock, clock: &dyn Clock, deadline: Instant) -> Release {
        let now = clock.now();
        self.candidate.release(lock, now, wall_time(now), deadline)
    }

    fn report(&mut self, out: &mut Vec<Transition>) {
        if let Some(leader) = self.candidate.take_new_leader() {
            out.push(Transition::NewLeader(leader));
        }
    }
}

/// The instant of the real clock matching `at`, an instant of `clock`: what the lock's I/O is bounded by (a fake
/// clock does not move while the lock works, so the time left is counted on the real one).
fn real_deadline(clock: &dyn Clock, at: Instant) -> Instant {
    deadline_after(Instant::now(), at.saturating_duration_since(clock.now()))
}

/// The wall time matching `at`, an instant of the elector's clock: the system time shifted by how far `at` is from
/// the real clock's now (no shift for the real clock; a fake clock's steps move it).
fn wall_time(at: Instant) -> SystemTime {
    let real = Instant::now();
    let sys = SystemTime::now();
    if at >= real {
        sys + (at - real)
    } else {
        sys.checked_sub(real - at).unwrap_or(SystemTime::UNIX_EPOCH)
    }
}

/// What the elector's thread shares with its handle.
struct ElectorShared {
    name: String,
    identity: String,
    sleeper: Arc<StopSignal>,
    /// Set just before `on_started_leading`, cleared just before `on_stopped_leading`.
    leading: AtomicBool,
    /// The holder last observed (`None`: nobody, or not observed yet).
    leader: Mutex<Option<String>>,
    /// `Degraded` while the lock cannot be read or written, `Halted` once stopped.
    health: HealthCell,
    /// Times this candidate started leading.
    terms: AtomicU64,
    /// The current term: set just before `on_started_leading`, cleared just before `on_stopped_leading`.
    term: Mutex<Option<LeaseTerm>>,
    /// The hand-overs this candidate's terms measured.
    handovers: Arc<HandoverLog>,
    /// The lock, also held by the thread: `stop` interrupts its call in flight.
    lock: Arc<dyn Lock>,
    /// When a stopping elector must be done: set by `stop` before it signals the thread, which bounds the release
    /// of the lock by it.
    stop_deadline: Mutex<Option<Instant>>,
    /// How the release at the end went: `None` until the thread has finished (or when the lock was not held).
    released: Mutex<Option<bool>>,
    /// Held by `stop` while it wakes the thread and interrupts the lock's call in flight; the thread takes it
    /// before releasing the lock, so that the interrupt never reaches the release.
    stopping: Mutex<()>,
}

/// What stopping an elector achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ElectorStopped {
    /// The thread ended and was joined before the deadline.
    pub(crate) joined: bool,
    /// The lock was held at the end (as this candidate knew, or by a claim whose answer was lost): whether
    /// releasing it succeeded (`None`: not held, or the thread did not end).
    pub(crate) released: Option<bool>,
}

/// A running leader election: one named thread (`le:<name>`; `kube-informer/leaderelection/<name>` in logs) trying
/// to acquire, then renewing, a [`Lock`], and calling [`LeaderCallbacks`] as leadership comes and goes.
///
/// ```
/// use std::time::{Duration, Instant};
/// use kube_informer::leaderelection::{
///     LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, Lock,
/// };
/// # use parking_lot::Mutex;
///
/// /// A lock in memory (the real one is `LeaseLock`): it never blocks, so it meets every deadline.
/// struct MemoryLock(Mutex<Option<LeaderElectionRecord>>);
/// impl Lock for MemoryLock {
///     fn get(&self, _: Instant) -> kube_informer::Result<Option<LeaderElectionRecord>> { Ok(self.0.lock().clone()) }
///     fn create(&self, r: &LeaderElectionRecord, _: Instant) -> kube_informer::Result<()> {
///         *self.0.lock() = Some(r.clone());
///         Ok(())
///     }
///     fn update(&self, r: &LeaderElectionRecord, _: Instant) -> kube_informer::Result<()> {
///         *self.0.lock() = Some(r.clone());
///         Ok(())
///     }
///     fn identity(&self) -> &str { "replica-1" }
///     fn describe(&self) -> String { "memory".into() }
/// }
///
/// let (tx, rx) = crossbeam_channel::unbounded();
/// let elector = LeaderElector::start(
///     MemoryLock(Mutex::new(None)),
///     LeaderElectionConfig::default(),
///     LeaderCallbacks::new().on_started_leading(move || tx.send("leading").unwrap()),
/// )?;
/// assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), "leading");
/// assert!(elector.is_leader());
/// elector.stop(); // on_stopped_leading, then the lock is released
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct LeaderElector {
    shared: Arc<ElectorShared>,
    worker: Mutex<Option<Worker>>,
    live: Arc<AtomicUsize>,
}

impl LeaderElector {
    /// Validates `config` and starts electing on a new thread.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad config or an empty identity; an error when the thread cannot be spawned.
    pub fn start(lock: impl Lock, config: LeaderElectionConfig, callbacks: LeaderCallbacks) -> Result<LeaderElector> {
        LeaderElector::start_observed(lock, config, callbacks, None)
    }

    /// [`start`](Self::start), the lock's record known unchanged since an instant (see [`Machine::observed_since`]).
    pub(crate) fn start_observed(
        lock: impl Lock,
        config: LeaderElectionConfig,
        callbacks: LeaderCallbacks,
        observed: Option<(LeaderElectionRecord, Instant)>,
    ) -> Result<LeaderElector> {
        config.validate()?;
        if lock.identity().is_empty() {
            return Err(Error::InvalidInput(
                "leader election: the lock's identity is empty".into(),
            ));
        }
        let name = config.name.clone().unwrap_or_else(|| lock.describe());
        let lock: Arc<dyn Lock> = Arc::new(lock);
        let sleeper = Arc::new(StopSignal::new());
        let watcher: Weak<dyn ClockWatcher> = Arc::downgrade(&sleeper) as Weak<dyn ClockWatcher>;
        config.clock.watch(watcher);
        let mut machine = Machine::new(lock.identity(), &config);
        if let Some((record, at)) = observed {
            machine.observed_since(record, at);
        }
        let shared = Arc::new(ElectorShared {
            name: name.clone(),
            identity: lock.identity().to_owned(),
            sleeper,
            leading: AtomicBool::new(false),
            leader: Mutex::new(None),
            terms: AtomicU64::new(0),
            term: Mutex::new(None),
            handovers: machine.handovers().clone(),
            health: HealthCell::default(),
            lock: lock.clone(),
            stop_deadline: Mutex::new(None),
            released: Mutex::new(None),
            stopping: Mutex::new(()),
        });
        let live = Arc::new(AtomicUsize::new(0));
        let thread_shared = shared.clone();
        let thread = ThreadName::new("le", &name, format!("kube-informer/leaderelection/{name}"));
        let worker = Worker::spawn(thread, &live, move || {
            run(&thread_shared, &*lock, machine, callbacks, &config)
        })?;
        Ok(LeaderElector {
            shared,
            worker: Mutex::new(Some(worker)),
            live,
        })
    }

    /// True while this candidate leads: set just before `on_started_leading`, cleared just before
    /// `on_stopped_leading`.
    pub fn is_leader(&self) -> bool {
        self.shared.leading.load(Ordering::SeqCst)
    }

    /// The leader last observed (this candidate or another); `None` before the first observation or while the
    /// lock is released.
    pub fn leader(&self) -> Option<String> {
        self.shared.leader.lock().clone()
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.shared.identity
    }

    /// The election's name (for logs and the thread): the config's, else the lock's description.
    pub(crate) fn name(&self) -> &str {
        &self.shared.name
    }

    /// How many times this candidate started leading.
    pub fn terms(&self) -> u64 {
        self.shared.terms.load(Ordering::SeqCst)
    }

    /// The current term while leading (`None` otherwise): a client fenced by it
    /// ([`Client::fenced`](crate::client::Client::fenced)) stops writing when this candidate stops leading.
    pub fn term(&self) -> Option<LeaseTerm> {
        self.shared.term.lock().clone()
    }

    /// The outage of the last hand-over to this candidate: from the previous holder's last change of the Lease it
    /// observed to the first work done under its term (a controller's first reconcile,
    /// [`LeaseTerm::handover`]). `None` before any.
    pub fn last_handover(&self) -> Option<Duration> {
        *self.shared.handovers.last.lock()
    }

    /// The elector's health: `Degraded` while the lock cannot be read or written (the API server unreachable, RBAC
    /// missing on leases…), with the error — a leader that stays so past the renew deadline stops leading; `Halted`
    /// once stopped. Following another leader is healthy.
    pub fn health(&self) -> Health {
        self.shared.health.get()
    }

    /// The elector held weakly (by a [`Registry`](crate::registry::Registry)).
    pub(crate) fn downgrade(&self) -> WeakElector {
        WeakElector(Arc::downgrade(&self.shared))
    }

    /// The elector's thread is running (1) or has ended (0).
    pub fn running_threads(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Stops electing: a call on the lock in flight is interrupted ([`Lock::interrupt`]); if leading,
    /// `on_stopped_leading` is called, then the lock released (when
    /// [`release_on_cancel`](LeaderElectionConfig::release_on_cancel)); the thread is joined. Returns within about a
    /// second: a thread still blocked past that (a slow callback, a lock that ignores interrupts) is left detached
    /// with a warning, and finishes on its own. Idempotent.
    pub fn stop(&self) {
        self.stop_by(Instant::now() + STOP_BUDGET);
    }

    /// [`stop`](Self::stop) against `deadline`: the release of the lock is bounded by it (less a margin for the
    /// thread to end), the join waits until it.
    pub(crate) fn stop_by(&self, deadline: Instant) -> ElectorStopped {
        let Some(worker) = self.worker.lock().take() else {
            return ElectorStopped {
                joined: self.running_threads() == 0,
                released: *self.shared.released.lock(),
            };
        };
        *self.shared.stop_deadline.lock() = Some(deadline.checked_sub(JOIN_MARGIN).unwrap_or(deadline));
        self.shared.health.halt("stopped");
        {
            let _stopping = self.shared.stopping.lock();
            self.shared.sleeper.stop();
            self.shared.lock.interrupt();
        }
        let joined = worker.join_until(deadline);
        ElectorStopped {
            joined,
            released: if joined { *self.shared.released.lock() } else { None },
        }
    }
}

/// What a stopping elector keeps, of its stop budget, for its thread to end after releasing the lock.
const JOIN_MARGIN: Duration = Duration::from_millis(100);

impl Drop for LeaderElector {
    fn drop(&mut self) {
        self.stop();
    }
}

impl fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("name", &self.shared.name)
            .field("identity", &self.shared.identity)
            .field("leading", &self.is_leader())
            .finish()
    }
}

/// An elector held weakly (by a [`Registry`](crate::registry::Registry)).
pub(crate) struct WeakElector(Weak<ElectorShared>);

/// What an elector reports at one moment; `id` tells electors apart.
pub(crate) struct ElectorSnapshot {
    pub(crate) id: usize,
    pub(crate) name: String,
    pub(crate) health: Health,
    /// This candidate leads.
    pub(crate) leading: bool,
    /// The holder last observed.
    pub(crate) leader: Option<String>,
    /// The outage of the last hand-over to this candidate, and how many were measured.
    pub(crate) last_handover: Option<Duration>,
    pub(crate) handovers: u64,
}

impl WeakElector {
    /// What the elector reports now; `None` once it is dropped.
    pub(crate) fn snapshot(&self) -> Option<ElectorSnapshot> {
        let shared = self.0.upgrade()?;
        Some(ElectorSnapshot {
            id: Arc::as_ptr(&shared).addr(),
            name: shared.name.clone(),
            health: shared.health.get(),
            leading: shared.leading.load(Ordering::SeqCst),
            leader: shared.leader.lock().clone(),
            last_handover: *shared.handovers.last.lock(),
            handovers: shared.handovers.count.load(Ordering::Relaxed),
        })
    }
}

/// Records whether the last attempt reached the lock: a failure degrades the elector and is logged at `warn!` on
/// the first attempt of a streak and then once a minute; the recovery once at `info!`.
fn track(shared: &ElectorShared, streak: &mut FailureStreak, failure: Option<&str>) {
    let now = Instant::now();
    match failure {
        Some(failure) => {
            let level = streak.failed(now, &failure, 1);
            let Some(s) = streak.current() else { return };
            shared.health.failed(s.since, s.attempts, &s.last_error);
            if s.attempts == 1 {
                log::log!(level, "{}: {failure}; retrying", shared.name);
            } else {
                log::log!(
                    level,
                    "{}: {failure} ({} attempts over {}); retrying",
                    shared.name,
                    s.attempts,
                    human_duration(s.lasted(now))
                );
            }
        }
        None if streak.is_failing() => {
            shared.health.recovered();
            if let Some(s) = streak.recovered() {
                info!(
                    "{}: the lock is reachable again after {} attempts over {}",
                    shared.name,
                    s.attempts,
                    human_duration(s.lasted(now))
                );
            }
        }
        None => {}
    }
}

/// The elector's thread.
fn run(
    shared: &ElectorShared,
    lock: &dyn Lock,
    mut machine: Machine,
    mut callbacks: LeaderCallbacks,
    config: &LeaderElectionConfig,
) {
    let clock = &*config.clock;
    let mut out = Vec::new();
    debug!("{}: candidate {} electing", shared.name, shared.identity);
    let mut streak = FailureStreak::default();
    while !shared.sleeper.is_stopped() {
        let next = machine.step(lock, clock, &mut out);
        if !shared.sleeper.is_stopped() {
            // A call interrupted by `stop` is no failure to report.
            track(shared, &mut streak, machine.candidate().failure());
        }
        deliver(shared, &mut callbacks, &mut out, machine.term());
        // A candidate on the real clock watches the lock while it waits: a released lock is taken at once, not a
        // retry period later (a fake clock's tests step through the attempts instead). Only after an attempt that
        // reached the lock: the watch starts from the version it read, so an old release is never seen again.
        if !machine.is_leading()
            && machine.candidate().failure().is_none()
            && clock.real_wait(next).is_some()
            && !shared.sleeper.is_stopped()
            && lock.wait_for_release(real_deadline(clock, next))
        {
            debug!("{}: the lock was released; trying to acquire it", shared.name);
            continue;
        }
        if shared.sleeper.wait_until_on(clock, next) {
            break;
        }
    }
    // The stopping thread is done interrupting the call in flight before anything else is asked of the lock.
    drop(shared.stopping.lock());
    machine.stop_leading(&mut out);
    deliver(shared, &mut callbacks, &mut out, machine.term());
    // The guarded work has stopped (or was given up on): what it still has in flight is aborted before the lock is
    // released, so that nothing it sent can land once another candidate leads.
    machine.end_term();
    // Held, or claimed by a write whose answer was lost (an attempt interrupted by this stop, say): a claim that
    // landed unseen is released too, or the lock would stay held by a candidate gone until it expires.
    if config.release_on_cancel && machine.candidate().may_hold() {
        let deadline = shared
            .stop_deadline
            .lock()
            .unwrap_or_else(|| deadline_after(Instant::now(), STOP_BUDGET));
        let released = match machine.release(lock, clock, deadline) {
            Release::NotHeld => None,
            Release::Released => {
                info!("{}: released the lock", shared.name);
                Some(true)
            }
            Release::Failed => {
                info!(
                    "{}: could not release the lock; another candidate takes over once it expires",
                    shared.name
                );
                Some(false)
            }
        };
        *shared.released.lock() = released;
    }
    *shared.leader.lock() = Some(machine.candidate().observed().holder_identity.clone()).filter(|h| !h.is_empty());
}

/// Updates the shared state and calls the callbacks for each transition, in order; `term` is the machine's current
/// term (the one a `StartedLeading` began).
fn deliver(
    shared: &ElectorShared,
    callbacks: &mut LeaderCallbacks,
    out: &mut Vec<Transition>,
    term: Option<&LeaseTerm>,
) {
    for t in out.drain(..) {
        match t {
            Transition::NewLeader(leader) if leader.is_empty() => *shared.leader.lock() = None,
            Transition::NewLeader(leader) => {
                *shared.leader.lock() = Some(leader.clone());
                call(
                    &shared.name,
                    "on_new_leader",
                    callbacks.new_leader.as_mut().map(|f| move || f(&leader)),
                );
            }
            Transition::StartedLeading => {
                let Some(term) = term else {
                    debug_assert!(false, "leadership without a term");
                    continue;
                };
                *shared.term.lock() = Some(term.clone());
                shared.leading.store(true, Ordering::SeqCst);
                shared.terms.fetch_add(1, Ordering::SeqCst);
                call(
                    &shared.name,
                    "on_started_leading",
                    callbacks.started.as_mut().map(|f| move || f(term)),
                );
            }
            Transition::StoppedLeading => {
                shared.leading.store(false, Ordering::SeqCst);
                *shared.term.lock() = None;
                call(&shared.name, "on_stopped_leading", callbacks.stopped.as_mut());
            }
        }
    }
}

/// Calls a callback, catching a panic.
fn call(name: &str, which: &str, f: Option<impl FnOnce()>) {
    if let Some(f) = f
        && let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
    {
        warn!(
            "{name}: the {which} callback panicked: {}",
            crate::worker::panic_message(&*payload)
        );
    }
}

#[cfg(test)]
#[path = "elector_tests.rs"]
mod tests;
