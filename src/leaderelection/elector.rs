//! The election algorithm (client-go's `LeaderElector`) as a pure state machine, and the thread that runs it.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use log::{debug, info, warn};
use parking_lot::{Condvar, Mutex};

use super::record::micro_time;
use super::{LeaderElectionRecord, Lock};
use crate::cache::random_unit_interval;
use crate::error::{Error, Result};
use crate::worker::Worker;
use crate::workqueue::{Clock, ClockWatcher, RealClock};

/// client-go's `JitterFactor`: a candidate waits `retry_period · (1 + 1.2 · rand)` between attempts, so that
/// candidates started together spread out.
pub const JITTER_FACTOR: f64 = 1.2;

/// How long `stop` waits for the elector's thread (which may be releasing the lock) before leaving it detached.
const STOP_BUDGET: Duration = Duration::from_millis(900);

/// Timing and behaviour of an election. The defaults are client-go's "core clients" values.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::leaderelection::LeaderElectionConfig;
///
/// let c = LeaderElectionConfig::default();
/// assert_eq!(
///     (c.lease_duration, c.renew_deadline, c.retry_period),
///     (Duration::from_secs(15), Duration::from_secs(10), Duration::from_secs(2))
/// );
/// assert!(c.release_on_cancel);
/// // Tests use short terms; the constraints are client-go's (lease > renew deadline > 1.2 · retry period).
/// let fast = LeaderElectionConfig::default()
///     .lease_duration(Duration::from_secs(2))
///     .renew_deadline(Duration::from_secs(1))
///     .retry_period(Duration::from_millis(100));
/// assert!(fast.validate().is_ok());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct LeaderElectionConfig {
    /// How long candidates wait, after they last saw the record change, before taking the lock over. Written to the
    /// lock in whole seconds (so at least 1 s). Default: 15 s.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a failing renewal before it stops leading. Must be shorter than
    /// `lease_duration`: the gap is the time the old leader has to stop writing before another may start.
    /// Default: 10 s.
    pub renew_deadline: Duration,
    /// The pause between attempts (jittered by [`JITTER_FACTOR`] while acquiring). Default: 2 s.
    pub retry_period: Duration,
    /// On a graceful [`stop`](LeaderElector::stop) while leading, release the lock — holder emptied and the
    /// lease duration set to 1 s — so that another candidate takes over at once instead of after `lease_duration`.
    /// Default: **true** (client-go's `ReleaseOnCancel` defaults to false; here the release happens only after
    /// `on_stopped_leading` has returned, so the work it guards has stopped, which is what makes it safe).
    pub release_on_cancel: bool,
    /// Name for logs and the thread (`kube-informer/leaderelection/<name>`). Default: the lock's description.
    pub name: Option<String>,
    /// Where time is read: [`RealClock`] by default; tests use a [`FakeClock`](crate::workqueue::FakeClock).
    pub clock: Arc<dyn Clock>,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: true,
            name: None,
            clock: Arc::new(RealClock),
        }
    }
}

impl LeaderElectionConfig {
    /// Sets [`lease_duration`](LeaderElectionConfig::lease_duration).
    #[must_use]
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// Sets [`renew_deadline`](LeaderElectionConfig::renew_deadline).
    #[must_use]
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// Sets [`retry_period`](LeaderElectionConfig::retry_period).
    #[must_use]
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Sets [`release_on_cancel`](LeaderElectionConfig::release_on_cancel).
    #[must_use]
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Sets [`name`](LeaderElectionConfig::name).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets [`clock`](LeaderElectionConfig::clock).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Checks client-go's constraints: `lease_duration > renew_deadline > JITTER_FACTOR · retry_period > 0`, and a
    /// lease of at least one second (it is written in whole seconds).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the broken constraint.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidInput(format!("leader election: {m}")));
        if self.retry_period.is_zero() {
            return bad("retry_period must be greater than zero");
        }
        if self.lease_duration < Duration::from_secs(1) {
            return bad("lease_duration must be at least one second (leases count whole seconds)");
        }
        if self.lease_duration <= self.renew_deadline {
            return bad("lease_duration must be greater than renew_deadline");
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return bad("renew_deadline must be greater than retry_period × 1.2 (JITTER_FACTOR)");
        }
        Ok(())
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

impl fmt::Debug for LeaderElectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionConfig")
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

type Callback = Box<dyn FnMut() + Send>;
type LeaderCallback = Box<dyn FnMut(&str) + Send>;

/// What the elector calls as leadership changes — on its own thread, one at a time, in order. A panicking callback
/// is caught and logged.
///
/// * `on_started_leading`: this candidate acquired the lock. Start the guarded work and **return promptly**: the
///   lease is renewed by the same thread once the callback returns (client-go runs it on its own goroutine).
/// * `on_stopped_leading`: this candidate lost the lock (a renewal failed for `renew_deadline`) or is stopping while
///   leading. Stop the guarded work **before returning**: on a graceful stop the lock is released only after
///   this returns, and after a loss another candidate may take over `lease_duration − renew_deadline` later. Called
///   only after an `on_started_leading` (client-go also calls it when it never led).
/// * `on_new_leader`: the observed holder changed (this candidate included); not called when the lock is released
///   (an empty holder).
///
/// After a loss, the elector becomes a candidate again (client-go's `Run` returns, and most programs exit): a new
/// term begins with another `on_started_leading`.
#[derive(Default)]
pub struct LeaderCallbacks {
    started: Option<Callback>,
    stopped: Option<Callback>,
    new_leader: Option<LeaderCallback>,
}

impl LeaderCallbacks {
    /// No callbacks.
    pub fn new() -> Self {
        LeaderCallbacks::default()
    }

    /// Sets `on_started_leading`.
    #[must_use]
    pub fn on_started_leading(mut self, f: impl FnMut() + Send + 'static) -> Self {
        self.started = Some(Box::new(f));
        self
    }

    /// Sets `on_stopped_leading`.
    #[must_use]
    pub fn on_stopped_leading(mut self, f: impl FnMut() + Send + 'static) -> Self {
        self.stopped = Some(Box::new(f));
        self
    }

    /// Sets `on_new_leader`.
    #[must_use]
    pub fn on_new_leader(mut self, f: impl FnMut(&str) + Send + 'static) -> Self {
        self.new_leader = Some(Box::new(f));
        self
    }
}

impl LeaderCallbacks {
    /// Callbacks that run `self`'s, then `next`'s, for each change (to add logging or metrics to
    /// [`Controller::leader_callbacks`](crate::controller::Controller::leader_callbacks)).
    #[must_use]
    pub fn then(self, next: LeaderCallbacks) -> LeaderCallbacks {
        fn chain(a: Option<Callback>, b: Option<Callback>) -> Option<Callback> {
            match (a, b) {
                (Some(mut a), Some(mut b)) => Some(Box::new(move || {
                    a();
                    b();
                })),
                (a, None) => a,
                (None, b) => b,
            }
        }
        let new_leader: Option<LeaderCallback> = match (self.new_leader, next.new_leader) {
            (Some(mut a), Some(mut b)) => Some(Box::new(move |id: &str| {
                a(id);
                b(id);
            })),
            (a, None) => a,
            (None, b) => b,
        };
        LeaderCallbacks {
            started: chain(self.started, next.started),
            stopped: chain(self.stopped, next.stopped),
            new_leader,
        }
    }
}

impl fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderCallbacks")
            .field("on_started_leading", &self.started.is_some())
            .field("on_stopped_leading", &self.stopped.is_some())
            .field("on_new_leader", &self.new_leader.is_some())
            .finish()
    }
}

/// What a step of the machine reports, for the thread to act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Transition {
    NewLeader(String),
    StartedLeading,
    StoppedLeading,
}

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
}

impl Candidate {
    pub(crate) fn new(identity: &str, lease_seconds: i32) -> Candidate {
        Candidate {
            identity: identity.to_owned(),
            lease_seconds,
            observed: LeaderElectionRecord::default(),
            observed_time: None,
            reported: String::new(),
        }
    }

    /// True when the observed holder is this candidate.
    pub(crate) fn is_leader(&self) -> bool {
        !self.identity.is_empty() && self.observed.holder_identity == self.identity
    }

    pub(crate) fn observed(&self) -> &LeaderElectionRecord {
        &self.observed
    }

    /// True while the observed lease has not expired by the local clock.
    fn is_lease_valid(&self, now: Instant) -> bool {
        self.observed_time
            .is_some_and(|t| t + self.observed.lease_duration() > now)
    }

    fn set_observed(&mut self, record: LeaderElectionRecord, now: Instant) {
        self.observed = record;
        self.observed_time = Some(now);
    }

    /// One attempt to acquire the lock, or to renew it when held; true on success.
    pub(crate) fn try_acquire_or_renew(&mut self, lock: &dyn Lock, now: Instant, wall: SystemTime) -> bool {
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
            match lock.update(&desired) {
                Ok(()) => {
                    self.set_observed(desired, now);
                    return true;
                }
                Err(e) => debug!("{}: optimistic renewal failed ({e}); reading the lock", lock.describe()),
            }
        }

        // 2. Read the record, or create the lock.
        let current = match lock.get() {
            Ok(Some(r)) => r,
            Ok(None) => {
                return match lock.create(&desired) {
                    Ok(()) => {
                        self.set_observed(desired, now);
                        true
                    }
                    Err(e) => {
                        debug!("{}: cannot create the lock: {e}", lock.describe());
                        false
                    }
                };
            }
            Err(e) => {
                debug!("{}: cannot read the lock: {e}", lock.describe());
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
        match lock.update(&desired) {
            Ok(()) => {
                self.set_observed(desired, now);
                true
            }
            Err(e) => {
                debug!("{}: cannot update the lock: {e}", lock.describe());
                false
            }
        }
    }

    /// Gives the lock up if held (client-go's `release`): holder emptied, lease duration 1 s, times set to now,
    /// transitions kept. True when released or not held.
    pub(crate) fn release(&mut self, lock: &dyn Lock, now: Instant, wall: SystemTime) -> bool {
        if !self.is_leader() {
            return true;
        }
        let wall = micro_time(wall);
        let record = LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(wall),
            renew_time: Some(wall),
            leader_transitions: self.observed.leader_transitions,
        };
        match lock.update(&record) {
            Ok(()) => {
                self.set_observed(record, now);
                true
            }
            Err(e) => {
                debug!("{}: cannot release the lock: {e}", lock.describe());
                false
            }
        }
    }

    /// client-go's `maybeReportTransition`: the new holder, when it changed since the last report.
    fn take_new_leader(&mut self) -> Option<String> {
        if self.observed.holder_identity == self.reported {
            return None;
        }
        self.reported = self.observed.holder_identity.clone();
        Some(self.reported.clone()).filter(|h| !h.is_empty())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Trying to acquire, every `retry_period · (1 + 1.2 · rand)`.
    Candidate,
    /// Leading: renewing every `retry_period`. `failing_since` is when the current run of failed renewals began;
    /// leadership is lost when it is `renew_deadline` old.
    Leading { failing_since: Option<Instant> },
}

/// The elector's loop as a pure state machine: `step` makes one attempt and says when to make the next.
#[derive(Debug)]
pub(crate) struct Machine {
    candidate: Candidate,
    phase: Phase,
    renew_deadline: Duration,
    retry_period: Duration,
}

impl Machine {
    pub(crate) fn new(identity: &str, config: &LeaderElectionConfig) -> Machine {
        Machine {
            candidate: Candidate::new(identity, config.lease_seconds()),
            phase: Phase::Candidate,
            renew_deadline: config.renew_deadline,
            retry_period: config.retry_period,
        }
    }

    pub(crate) fn is_leading(&self) -> bool {
        matches!(self.phase, Phase::Leading { .. })
    }

    pub(crate) fn candidate(&self) -> &Candidate {
        &self.candidate
    }

    fn jittered_retry(&self) -> Duration {
        self.retry_period + self.retry_period.mul_f64(JITTER_FACTOR * random_unit_interval())
    }

    /// One attempt at `clock`'s current time; pushes what changed onto `out` and returns when to step next.
    pub(crate) fn step(&mut self, lock: &dyn Lock, clock: &dyn Clock, out: &mut Vec<Transition>) -> Instant {
        let start = clock.now();
        match self.phase {
            Phase::Candidate => {
                let ok = self.candidate.try_acquire_or_renew(lock, start, wall_time(start));
                self.report(out);
                let now = clock.now();
                if ok {
                    info!("{}: acquired the lock as {}", lock.describe(), lock.identity());
                    self.phase = Phase::Leading { failing_since: None };
                    out.push(Transition::StartedLeading);
                    now + self.retry_period
                } else {
                    now + self.jittered_retry()
                }
            }
            Phase::Leading { failing_since } => {
                if failing_since.is_some_and(|since| start >= since + self.renew_deadline) {
                    return self.lose(lock, start, out);
                }
                let ok = self.candidate.try_acquire_or_renew(lock, start, wall_time(start));
                self.report(out);
                let now = clock.now();
                if ok {
                    self.phase = Phase::Leading { failing_since: None };
                    return now + self.retry_period;
                }
                let since = failing_since.unwrap_or(start);
                let deadline = since + self.renew_deadline;
                if now >= deadline {
                    return self.lose(lock, now, out);
                }
                self.phase = Phase::Leading {
                    failing_since: Some(since),
                };
                (now + self.retry_period).min(deadline)
            }
        }
    }

    fn lose(&mut self, lock: &dyn Lock, now: Instant, out: &mut Vec<Transition>) -> Instant {
        info!(
            "{}: failed to renew the lock for {:?}; stopped leading",
            lock.describe(),
            self.renew_deadline
        );
        self.phase = Phase::Candidate;
        out.push(Transition::StoppedLeading);
        now + self.jittered_retry()
    }

    /// Stopping: reports the end of leadership, if leading. The lock is released afterwards by
    /// [`release`](Machine::release), once the guarded work has stopped.
    pub(crate) fn stop_leading(&mut self, out: &mut Vec<Transition>) {
        if self.is_leading() {
            self.phase = Phase::Candidate;
            out.push(Transition::StoppedLeading);
        }
    }

    /// Releases the lock if this candidate holds it.
    pub(crate) fn release(&mut self, lock: &dyn Lock, clock: &dyn Clock) -> bool {
        let now = clock.now();
        self.candidate.release(lock, now, wall_time(now))
    }

    fn report(&mut self, out: &mut Vec<Transition>) {
        if let Some(leader) = self.candidate.take_new_leader() {
            out.push(Transition::NewLeader(leader));
        }
    }
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

/// Sleeps on a clock until a deadline or a stop; a fake clock's steps wake it.
#[derive(Default)]
struct Sleeper {
    /// Goes from false to true once.
    stopped: Mutex<bool>,
    cond: Condvar,
}

impl ClockWatcher for Sleeper {
    fn clock_moved(&self) {
        let _guard = self.stopped.lock();
        self.cond.notify_all();
    }
}

impl Sleeper {
    fn stop(&self) {
        *self.stopped.lock() = true;
        self.cond.notify_all();
    }

    fn is_stopped(&self) -> bool {
        *self.stopped.lock()
    }

    /// Sleeps until `clock` reaches `deadline` (false) or until stopped (true).
    fn sleep_until(&self, clock: &dyn Clock, deadline: Instant) -> bool {
        let mut stopped = self.stopped.lock();
        loop {
            if *stopped {
                return true;
            }
            if clock.now() >= deadline {
                return false;
            }
            match clock.real_wait(deadline) {
                Some(d) => {
                    self.cond.wait_for(&mut stopped, d);
                }
                None => self.cond.wait(&mut stopped),
            }
        }
    }
}

/// What the elector's thread shares with its handle.
struct ElectorShared {
    name: String,
    identity: String,
    sleeper: Arc<Sleeper>,
    /// Set just before `on_started_leading`, cleared just before `on_stopped_leading`.
    leading: AtomicBool,
    /// The holder last observed (`None`: nobody, or not observed yet).
    leader: Mutex<Option<String>>,
    /// Times this candidate started leading.
    terms: AtomicU64,
}

/// A running leader election: one named thread (`kube-informer/leaderelection/<name>`) trying to acquire, then
/// renewing, a [`Lock`], and calling [`LeaderCallbacks`] as leadership comes and goes.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::leaderelection::{
///     LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, Lock,
/// };
/// # use parking_lot::Mutex;
///
/// /// A lock in memory (the real one is `LeaseLock`).
/// struct MemoryLock(Mutex<Option<LeaderElectionRecord>>);
/// impl Lock for MemoryLock {
///     fn get(&self) -> kube_informer::Result<Option<LeaderElectionRecord>> { Ok(self.0.lock().clone()) }
///     fn create(&self, r: &LeaderElectionRecord) -> kube_informer::Result<()> { *self.0.lock() = Some(r.clone()); Ok(()) }
///     fn update(&self, r: &LeaderElectionRecord) -> kube_informer::Result<()> { *self.0.lock() = Some(r.clone()); Ok(()) }
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
        config.validate()?;
        if lock.identity().is_empty() {
            return Err(Error::InvalidInput(
                "leader election: the lock's identity is empty".into(),
            ));
        }
        let name = config.name.clone().unwrap_or_else(|| lock.describe());
        let sleeper = Arc::new(Sleeper::default());
        let watcher: Weak<dyn ClockWatcher> = Arc::downgrade(&sleeper) as Weak<dyn ClockWatcher>;
        config.clock.watch(watcher);
        let shared = Arc::new(ElectorShared {
            name: name.clone(),
            identity: lock.identity().to_owned(),
            sleeper,
            leading: AtomicBool::new(false),
            leader: Mutex::new(None),
            terms: AtomicU64::new(0),
        });
        let live = Arc::new(AtomicUsize::new(0));
        let machine = Machine::new(lock.identity(), &config);
        let thread_shared = shared.clone();
        let worker = Worker::spawn(format!("kube-informer/leaderelection/{name}"), &live, move || {
            run(&thread_shared, &lock, machine, callbacks, &config)
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

    /// How many times this candidate started leading.
    pub fn terms(&self) -> u64 {
        self.shared.terms.load(Ordering::SeqCst)
    }

    /// The elector's thread is running (1) or has ended (0).
    pub fn running_threads(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Stops electing: if leading, `on_stopped_leading` is called, then the lock released (when
    /// [`release_on_cancel`](LeaderElectionConfig::release_on_cancel)); the thread is joined. Returns within about a
    /// second: a thread still blocked past that (a slow API server, a slow callback) is left detached with a
    /// warning, and finishes on its own. Idempotent.
    pub fn stop(&self) {
        let Some(worker) = self.worker.lock().take() else {
            return;
        };
        self.shared.sleeper.stop();
        worker.join_until(Instant::now() + STOP_BUDGET);
    }
}

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
    while !shared.sleeper.is_stopped() {
        let next = machine.step(lock, clock, &mut out);
        deliver(shared, &mut callbacks, &mut out);
        if shared.sleeper.sleep_until(clock, next) {
            break;
        }
    }
    machine.stop_leading(&mut out);
    deliver(shared, &mut callbacks, &mut out);
    if config.release_on_cancel && machine.candidate().is_leader() {
        if machine.release(lock, clock) {
            info!("{}: released the lock", shared.name);
        } else {
            debug!("{}: could not release the lock; it expires on its own", shared.name);
        }
    }
    *shared.leader.lock() = Some(machine.candidate().observed().holder_identity.clone()).filter(|h| !h.is_empty());
}

/// Updates the shared state and calls the callbacks for each transition, in order.
fn deliver(shared: &ElectorShared, callbacks: &mut LeaderCallbacks, out: &mut Vec<Transition>) {
    for t in out.drain(..) {
        match t {
            Transition::NewLeader(leader) => {
                *shared.leader.lock() = Some(leader.clone());
                call(
                    &shared.name,
                    "on_new_leader",
                    callbacks.new_leader.as_mut().map(|f| move || f(&leader)),
                );
            }
            Transition::StartedLeading => {
                shared.leading.store(true, Ordering::SeqCst);
                shared.terms.fetch_add(1, Ordering::SeqCst);
                call(&shared.name, "on_started_leading", callbacks.started.as_mut());
            }
            Transition::StoppedLeading => {
                shared.leading.store(false, Ordering::SeqCst);
                call(&shared.name, "on_stopped_leading", callbacks.stopped.as_mut());
            }
        }
    }
}

/// Calls a callback, catching a panic.
fn call(name: &str, which: &str, f: Option<impl FnOnce()>) {
    if let Some(f) = f
        && std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err()
    {
        warn!("{name}: the {which} callback panicked");
    }
}

#[cfg(test)]
#[path = "elector_tests.rs"]
mod tests;
