//! Tests of the election algorithm against in-memory locks, on a fake clock.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::unbounded;
use parking_lot::Mutex;

use super::*;
use crate::clock::FakeClock;
use crate::error::{TransportError, TransportErrorKind};
use crate::leaderelection::LeaderElectionRecord;
use crate::leaderelection::candidate::RELEASE_ATTEMPTS;
use crate::object::Status;

const S: Duration = Duration::from_secs(1);

fn conflict() -> Error {
    Error::Api(Box::new(Status::failure(
        409,
        "Conflict",
        "the object has been modified",
    )))
}

fn down() -> Error {
    Error::Transport(Box::new(TransportError::new(
        TransportErrorKind::ConnectionRefused,
        "connection refused",
    )))
}

// ---- client-go's TestTryAcquireOrRenew cases, on a scripted lock --------------------------------------------------

/// A lock that answers from a script and records the calls it got, with their deadlines.
struct Scripted {
    get: Mutex<VecDeque<Result<Option<LeaderElectionRecord>>>>,
    /// Answers of the updates, in order; `Ok(())` once exhausted.
    update: Mutex<VecDeque<Result<()>>>,
    /// Answers of the creates, in order; `Ok(())` once exhausted.
    create: Mutex<VecDeque<Result<()>>>,
    calls: Mutex<Vec<&'static str>>,
    deadlines: Mutex<Vec<Instant>>,
    written: Mutex<Option<LeaderElectionRecord>>,
}

impl Scripted {
    fn new(gets: Vec<Result<Option<LeaderElectionRecord>>>) -> Scripted {
        Scripted {
            get: Mutex::new(gets.into()),
            update: Mutex::new(VecDeque::new()),
            create: Mutex::new(VecDeque::new()),
            calls: Mutex::new(Vec::new()),
            deadlines: Mutex::new(Vec::new()),
            written: Mutex::new(None),
        }
    }

    fn with_updates(self, updates: Vec<Result<()>>) -> Scripted {
        *self.update.lock() = updates.into();
        self
    }

    fn with_creates(self, creates: Vec<Result<()>>) -> Scripted {
        *self.create.lock() = creates.into();
        self
    }

    fn called(&self, what: &'static str, deadline: Instant) {
        self.calls.lock().push(what);
        self.deadlines.lock().push(deadline);
    }
}

impl Lock for Scripted {
    fn get(&self, deadline: Instant) -> Result<Option<LeaderElectionRecord>> {
        self.called("get", deadline);
        self.get.lock().pop_front().expect("an unexpected get")
    }
    fn create(&self, r: &LeaderElectionRecord, deadline: Instant) -> Result<()> {
        self.called("create", deadline);
        self.create.lock().pop_front().unwrap_or(Ok(()))?;
        *self.written.lock() = Some(r.clone());
        Ok(())
    }
    fn update(&self, r: &LeaderElectionRecord, deadline: Instant) -> Result<()> {
        self.called("update", deadline);
        self.update.lock().pop_front().unwrap_or(Ok(()))?;
        *self.written.lock() = Some(r.clone());
        Ok(())
    }
    fn identity(&self) -> &str {
        "baz"
    }
    fn describe(&self) -> String {
        "foo/bar".into()
    }
}

fn held_by(holder: &str) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: holder.into(),
        ..Default::default()
    }
}

#[test]
fn try_acquire_or_renew_follows_client_go() {
    let now = Instant::now();
    let past = now.checked_sub(Duration::from_secs(3600)).unwrap_or(now);
    let wall = SystemTime::now();
    struct Case {
        name: &'static str,
        observed: Option<(LeaderElectionRecord, Instant)>,
        gets: Vec<Result<Option<LeaderElectionRecord>>>,
        calls: Vec<&'static str>,
        success: bool,
        transitions: i32,
        holder: &'static str,
    }
    let cases = vec![
        Case {
            name: "acquire from no object",
            observed: None,
            gets: vec![Ok(None)],
            calls: vec!["get", "create"],
            success: true,
            transitions: 0,
            holder: "baz",
        },
        Case {
            name: "acquire from a lease with an empty spec",
            observed: None,
            gets: vec![Ok(Some(LeaderElectionRecord::default()))],
            calls: vec!["get", "update"],
            success: true,
            transitions: 1,
            holder: "baz",
        },
        Case {
            name: "acquire from led, unacked object",
            observed: Some((held_by("bing"), past)),
            gets: vec![Ok(Some(held_by("bing")))],
            calls: vec!["get", "update"],
            success: true,
            transitions: 1,
            holder: "baz",
        },
        Case {
            name: "acquire from empty led, acked object",
            observed: Some((held_by(""), now)),
            gets: vec![Ok(Some(held_by("")))],
            calls: vec!["get", "update"],
            success: true,
            transitions: 1,
            holder: "baz",
        },
        Case {
            name: "don't acquire from led, acked object",
            observed: Some((
                LeaderElectionRecord {
                    lease_duration_seconds: 10,
                    ..held_by("bing")
                },
                now,
            )),
            gets: vec![Ok(Some(LeaderElectionRecord {
                lease_duration_seconds: 10,
                ..held_by("bing")
            }))],
            calls: vec!["get"],
            success: false,
            transitions: 0,
            holder: "bing",
        },
        Case {
            name: "renew already acquired object (slow path: its lease had expired)",
            observed: Some((held_by("baz"), now)),
            gets: vec![Ok(Some(held_by("baz")))],
            calls: vec!["get", "update"],
            success: true,
            transitions: 0,
            holder: "baz",
        },
        Case {
            name: "renew a valid lease: the fast path writes without reading",
            observed: Some((
                LeaderElectionRecord {
                    lease_duration_seconds: 10,
                    leader_transitions: 4,
                    ..held_by("baz")
                },
                now,
            )),
            gets: vec![],
            calls: vec!["update"],
            success: true,
            transitions: 4,
            holder: "baz",
        },
        Case {
            name: "a lock that cannot be read is not acquired",
            observed: None,
            gets: vec![Err(down())],
            calls: vec!["get"],
            success: false,
            transitions: 0,
            holder: "",
        },
    ];
    for case in cases {
        let lock = Scripted::new(case.gets);
        let mut c = Candidate::new("baz", 10);
        if let Some((record, at)) = case.observed {
            c.set_observed(record, at);
        }
        let deadline = now + 10 * S;
        assert_eq!(
            c.try_acquire_or_renew(&lock, now, wall, deadline),
            case.success,
            "{}",
            case.name
        );
        assert!(lock.deadlines.lock().iter().all(|d| *d == deadline), "{}", case.name);
        assert_eq!(*lock.calls.lock(), case.calls, "{}", case.name);
        assert_eq!(c.observed().holder_identity, case.holder, "{}", case.name);
        assert_eq!(c.observed().leader_transitions, case.transitions, "{}", case.name);
        let expected_leader = (!case.holder.is_empty()).then(|| case.holder.to_owned());
        assert_eq!(c.take_new_leader(), expected_leader, "{}: reported leader", case.name);
        if case.success {
            let written = lock.written.lock().clone().unwrap();
            assert_eq!(written.lease_duration_seconds, 10, "{}", case.name);
            assert!(written.renew_time.is_some(), "{}", case.name);
        }
    }
}

#[test]
fn a_lease_is_taken_over_only_after_its_duration_without_change() {
    // client-go's "acquire from led object with the lease duration seconds": held by bing for 3 s.
    let bing = LeaderElectionRecord {
        lease_duration_seconds: 3,
        ..held_by("bing")
    };
    let lock = Scripted::new(vec![Ok(Some(bing.clone())), Ok(Some(bing))]);
    let mut c = Candidate::new("baz", 10);
    let t0 = Instant::now();
    let far = t0 + 3600 * S;
    assert!(!c.try_acquire_or_renew(&lock, t0, SystemTime::now(), far));
    assert!(
        c.try_acquire_or_renew(&lock, t0 + 3 * S, SystemTime::now(), far),
        "unchanged for 3 s"
    );
    assert_eq!(c.observed().leader_transitions, 1);
}

#[test]
fn release_empties_the_holder_and_shortens_the_lease() {
    let held = LeaderElectionRecord {
        lease_duration_seconds: 15,
        leader_transitions: 2,
        ..held_by("baz")
    };
    let lock = Scripted::new(vec![Ok(None), Ok(Some(held))]);
    let mut c = Candidate::new("baz", 15);
    let (now, far) = (Instant::now(), Instant::now() + 3600 * S);
    assert_eq!(
        c.release(&lock, now, SystemTime::now(), far),
        Release::NotHeld,
        "nothing to release"
    );
    assert!(lock.calls.lock().is_empty());
    assert!(c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::Released);
    // client-go's TestReleaseMethodCallsGet: the release reads the lock first (its latest resourceVersion).
    assert_eq!(*lock.calls.lock(), ["get", "create", "get", "update"]);
    let written = lock.written.lock().clone().unwrap();
    assert_eq!(written.holder_identity, "");
    assert_eq!(written.lease_duration_seconds, 1);
    assert_eq!(written.leader_transitions, 2, "transitions as read");
    assert!(!c.is_leader());
}

#[test]
fn release_never_overwrites_a_candidate_that_took_over() {
    // This candidate believes it holds the lock, but another took it over meanwhile (this one's term had ended).
    let lock = Scripted::new(vec![Ok(Some(held_by("bing")))]);
    let mut c = Candidate::new("baz", 15);
    let now = Instant::now();
    c.set_observed(held_by("baz"), now);
    assert_eq!(
        c.release(&lock, now, SystemTime::now(), now + 3600 * S),
        Release::NotHeld
    );
    assert_eq!(*lock.calls.lock(), ["get"], "no write");
    assert_eq!(c.observed().holder_identity, "bing");
}

#[test]
fn a_release_that_conflicts_reads_again_and_never_overwrites_a_new_holder() {
    let (now, far) = (Instant::now(), Instant::now() + 3600 * S);
    // The stop's interrupted renewal landed after the release's read: the release conflicts, reads again (still
    // held here, renewed) and releases.
    let lock =
        Scripted::new(vec![Ok(Some(held_by("baz"))), Ok(Some(held_by("baz")))]).with_updates(vec![Err(conflict())]);
    let mut c = Candidate::new("baz", 15);
    c.set_observed(held_by("baz"), now);
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::Released);
    assert_eq!(*lock.calls.lock(), ["get", "update", "get", "update"]);
    assert_eq!(lock.written.lock().as_ref().unwrap().holder_identity, "");

    // The write that conflicted was another candidate's taking over: the second read shows it, nothing is written.
    let lock =
        Scripted::new(vec![Ok(Some(held_by("baz"))), Ok(Some(held_by("bing")))]).with_updates(vec![Err(conflict())]);
    let mut c = Candidate::new("baz", 15);
    c.set_observed(held_by("baz"), now);
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::NotHeld);
    assert_eq!(*lock.calls.lock(), ["get", "update", "get"]);
    assert!(lock.written.lock().is_none());

    // A lock that conflicts every time: given up after a bounded number of attempts.
    let gets = (0..RELEASE_ATTEMPTS).map(|_| Ok(Some(held_by("baz")))).collect();
    let updates = (0..RELEASE_ATTEMPTS).map(|_| Err(conflict())).collect();
    let lock = Scripted::new(gets).with_updates(updates);
    let mut c = Candidate::new("baz", 15);
    c.set_observed(held_by("baz"), now);
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::Failed);
    assert_eq!(lock.calls.lock().len(), 2 * RELEASE_ATTEMPTS);
}

#[test]
fn a_claim_left_unanswered_is_released_if_it_landed_and_an_answered_refusal_is_not() {
    let (now, far) = (Instant::now(), Instant::now() + 3600 * S);
    // The claim's answer was lost (a timeout): the release reads the lock, finds it held here, and releases it.
    let lock =
        Scripted::new(vec![Ok(Some(held_by(""))), Ok(Some(held_by("baz")))]).with_updates(vec![Err(timed_out())]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert!(!c.is_leader() && c.may_hold());
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::Released);
    assert_eq!(*lock.calls.lock(), ["get", "update", "get", "update"]);
    assert_eq!(lock.written.lock().as_ref().unwrap().holder_identity, "");
    assert!(!c.may_hold());

    // Lost, and the lock reads unchanged: the claim may land yet, so the released record is written on the version
    // it was sent on (the claim can then no longer land); nothing was held.
    let lock = Scripted::new(vec![Ok(Some(held_by(""))), Ok(Some(held_by("")))]).with_updates(vec![Err(down())]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::NotHeld);
    assert_eq!(*lock.calls.lock(), ["get", "update", "get", "update"]);
    assert!(!c.may_hold());
    // … and when the claim lands first, that write conflicts: read again, held here, released.
    let lock = Scripted::new(vec![
        Ok(Some(held_by(""))),
        Ok(Some(held_by(""))),
        Ok(Some(held_by("baz"))),
    ])
    .with_updates(vec![Err(down()), Err(conflict())]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::Released);
    assert_eq!(*lock.calls.lock(), ["get", "update", "get", "update", "get", "update"]);
    // A create whose answer was lost, the lock still absent: created released (the claim's create then fails), or
    // read again when the claim's create landed first.
    let lock = Scripted::new(vec![Ok(None), Ok(None)]).with_creates(vec![Err(timed_out())]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::NotHeld);
    assert_eq!(*lock.calls.lock(), ["get", "create", "get", "create"]);
    assert_eq!(lock.written.lock().as_ref().unwrap().holder_identity, "");
    let exists = Error::Api(Box::new(Status::failure(409, "AlreadyExists", "exists")));
    let lock = Scripted::new(vec![Ok(None), Ok(None), Ok(Some(held_by("baz")))])
        .with_creates(vec![Err(timed_out()), Err(exists)]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::Released);
    assert_eq!(*lock.calls.lock(), ["get", "create", "get", "create", "get", "update"]);

    // Lost, but it had not landed: the read shows another holder, nothing is written.
    let lock =
        Scripted::new(vec![Ok(Some(held_by(""))), Ok(Some(held_by("bing")))]).with_updates(vec![Err(Error::Stopped)]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::NotHeld);
    assert_eq!(*lock.calls.lock(), ["get", "update", "get"]);

    // A 504 may still be applied: as lost.
    let gateway = Error::Api(Box::new(Status::failure(504, "Timeout", "the server timed out")));
    let lock = Scripted::new(vec![Ok(Some(held_by("")))]).with_updates(vec![Err(gateway)]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert!(c.may_hold());

    // Refused with an answer (a conflict): not applied, so nothing to read or release at stop.
    let lock = Scripted::new(vec![Ok(Some(held_by("")))]).with_updates(vec![Err(conflict())]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert!(!c.may_hold());
    assert_eq!(c.release(&lock, now, SystemTime::now(), far), Release::NotHeld);
    assert_eq!(*lock.calls.lock(), ["get", "update"]);

    // A lost claim, then a read of the same record and a claim refused with an answer: the lost one may land yet.
    let lock = Scripted::new(vec![Ok(Some(held_by(""))), Ok(Some(held_by("")))])
        .with_updates(vec![Err(down()), Err(conflict())]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert!(c.may_hold());

    // A lost claim followed by a read of a changed record (held by another): it can no longer land.
    let bing = LeaderElectionRecord {
        lease_duration_seconds: 15,
        ..held_by("bing")
    };
    let lock = Scripted::new(vec![Ok(Some(held_by(""))), Ok(Some(bing))]).with_updates(vec![Err(down())]);
    let mut c = Candidate::new("baz", 15);
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert!(!c.try_acquire_or_renew(&lock, now, SystemTime::now(), far));
    assert!(!c.may_hold());
}

// ---- the state machine, several candidates on one shared lock, fake time ------------------------------------------

/// The lock object: a record and its resourceVersion.
#[derive(Default)]
struct Server {
    object: Option<(LeaderElectionRecord, u64)>,
    /// When set, every call fails as if the API server were unreachable.
    down: bool,
    writes: Vec<String>,
}

/// One candidate's view of the shared lock, with optimistic concurrency on the version it last saw.
struct MemLock {
    server: Arc<Mutex<Server>>,
    identity: String,
    seen: Mutex<Option<u64>>,
    /// When set, only this candidate's calls fail (its own connection is broken).
    broken: Arc<std::sync::atomic::AtomicBool>,
    /// How this candidate's calls behave on the fake clock.
    mode: Mutex<Mode>,
}

/// How a [`MemLock`]'s calls behave.
#[derive(Clone, Default)]
enum Mode {
    /// At once.
    #[default]
    Instant,
    /// Hanging — the fake clock moves on while they do — until their deadline, and failing there (as a
    /// `LeaseLock`'s request the server leaves hanging is aborted at its deadline). Remembers the last deadline and
    /// the fake time it fell on: the calls of one attempt share a deadline, and the second call must not count the
    /// real time left to it again.
    Hang(FakeClock, Arc<Mutex<Option<(Instant, Instant)>>>),
    /// Updates succeed, after taking this long on the fake clock (past any deadline: a lock ignoring them).
    SlowUpdates(FakeClock, Duration),
}

impl MemLock {
    fn new(server: &Arc<Mutex<Server>>, identity: &str) -> MemLock {
        MemLock {
            server: server.clone(),
            identity: identity.into(),
            seen: Mutex::new(None),
            broken: Default::default(),
            mode: Mutex::new(Mode::Instant),
        }
    }

    fn check(&self, s: &Server, deadline: Instant) -> Result<()> {
        if let Mode::Hang(clock, last) = &*self.mode.lock() {
            let mut last = last.lock();
            let fake_deadline = match *last {
                Some((real, fake)) if real == deadline => fake,
                _ => clock.now() + deadline.saturating_duration_since(Instant::now()),
            };
            *last = Some((deadline, fake_deadline));
            clock.set(fake_deadline);
            return Err(timed_out());
        }
        if s.down || self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            Err(down())
        } else {
            Ok(())
        }
    }
}

fn timed_out() -> Error {
    Error::Transport(Box::new(TransportError::new(
        TransportErrorKind::Timeout,
        "the request's deadline passed",
    )))
}

impl Lock for MemLock {
    fn get(&self, deadline: Instant) -> Result<Option<LeaderElectionRecord>> {
        let s = self.server.lock();
        self.check(&s, deadline)?;
        Ok(s.object.as_ref().map(|(r, v)| {
            *self.seen.lock() = Some(*v);
            r.clone()
        }))
    }
    fn create(&self, r: &LeaderElectionRecord, deadline: Instant) -> Result<()> {
        let mut s = self.server.lock();
        self.check(&s, deadline)?;
        if s.object.is_some() {
            return Err(Error::Api(Box::new(Status::failure(409, "AlreadyExists", "exists"))));
        }
        s.object = Some((r.clone(), 1));
        s.writes.push(self.identity.clone());
        *self.seen.lock() = Some(1);
        Ok(())
    }
    fn update(&self, r: &LeaderElectionRecord, deadline: Instant) -> Result<()> {
        let mut s = self.server.lock();
        self.check(&s, deadline)?;
        let Some((_, v)) = s.object else {
            return Err(Error::Api(Box::new(Status::failure(404, "NotFound", "gone"))));
        };
        if *self.seen.lock() != Some(v) {
            return Err(conflict());
        }
        s.object = Some((r.clone(), v + 1));
        s.writes.push(self.identity.clone());
        *self.seen.lock() = Some(v + 1);
        if let Mode::SlowUpdates(clock, took) = &*self.mode.lock() {
            clock.step(*took);
        }
        Ok(())
    }
    fn identity(&self) -> &str {
        &self.identity
    }
    fn describe(&self) -> String {
        "ns/lease".into()
    }
}

fn config() -> LeaderElectionConfig {
    LeaderElectionConfig::default()
}

struct Replica {
    lock: MemLock,
    machine: Machine,
    next: Instant,
    seen: Vec<Transition>,
}

impl Replica {
    fn new(server: &Arc<Mutex<Server>>, id: &str, clock: &FakeClock) -> Replica {
        Replica {
            lock: MemLock::new(server, id),
            machine: Machine::new(id, &config()),
            next: clock.now(),
            seen: Vec::new(),
        }
    }

    /// Steps when due.
    fn poll(&mut self, clock: &FakeClock) {
        if clock.now() >= self.next {
            self.next = self.machine.step(&self.lock, clock, &mut self.seen);
        }
    }
}

/// Advances fake time in 100 ms ticks for `d`, stepping every replica when due; checks that at most one leads.
fn run_for(replicas: &mut [Replica], clock: &FakeClock, d: Duration) {
    let end = clock.now() + d;
    while clock.now() < end {
        for r in replicas.iter_mut() {
            r.poll(clock);
        }
        let leaders = replicas.iter().filter(|r| r.machine.is_leading()).count();
        assert!(leaders <= 1, "two leaders at once");
        clock.step(Duration::from_millis(100));
    }
}

fn leader(replicas: &[Replica]) -> Option<usize> {
    replicas.iter().position(|r| r.machine.is_leading())
}

#[test]
fn one_of_three_candidates_leads_and_keeps_the_lease_while_renewing() {
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    let mut rs: Vec<Replica> = ["a", "b", "c"]
        .iter()
        .map(|id| Replica::new(&server, id, &clock))
        .collect();
    run_for(&mut rs, &clock, 60 * S);
    let l = leader(&rs).expect("a leader");
    for (i, r) in rs.iter().enumerate() {
        let started = r.seen.iter().filter(|t| **t == Transition::StartedLeading).count();
        assert_eq!(started, usize::from(i == l), "{i}: {:?}", r.seen);
        assert!(!r.seen.contains(&Transition::StoppedLeading));
        // Everyone reported the one leader, once.
        let leader_id = ["a", "b", "c"][l].to_owned();
        assert_eq!(
            r.seen
                .iter()
                .filter(|t| matches!(t, Transition::NewLeader(_)))
                .collect::<Vec<_>>(),
            [&Transition::NewLeader(leader_id)]
        );
    }
    let s = server.lock();
    assert!(
        s.writes.iter().all(|w| *w == ["a", "b", "c"][l]),
        "only the leader writes the lock"
    );
    // Renewals every retry period: about 30 in 60 s.
    assert!((25..=31).contains(&s.writes.len()), "{} writes", s.writes.len());
    assert_eq!(s.object.as_ref().unwrap().0.leader_transitions, 0);
}

#[test]
fn a_leader_that_cannot_renew_stops_at_the_renew_deadline_and_another_takes_over_after_the_lease() {
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    let mut rs = vec![Replica::new(&server, "a", &clock)];
    run_for(&mut rs, &clock, S);
    assert_eq!(leader(&rs), Some(0));
    rs.push(Replica::new(&server, "b", &clock));
    run_for(&mut rs, &clock, 20 * S);
    assert_eq!(leader(&rs), Some(0), "b waits while a renews");

    // a's connection breaks (a killed leader: no release).
    rs[0].lock.broken.store(true, std::sync::atomic::Ordering::SeqCst);
    let broke = clock.now();
    let mut lost_at = None;
    let mut taken_at = None;
    while taken_at.is_none() {
        run_for(&mut rs, &clock, Duration::from_millis(100));
        if lost_at.is_none() && !rs[0].machine.is_leading() {
            lost_at = Some(clock.now() - broke);
        }
        if rs[1].machine.is_leading() {
            taken_at = Some(clock.now() - broke);
        }
        assert!(clock.now() - broke < 60 * S, "b never took over");
    }
    let (lost, taken) = (lost_at.unwrap(), taken_at.unwrap());
    // a's last successful renewal started before the break; it gives up renew_deadline (10 s) after that start
    // (seen here at the next 100 ms tick).
    assert!(
        lost <= 10 * S + Duration::from_millis(100),
        "a stopped leading after {lost:?}"
    );
    // a last renewed in the 2 s before the break; b saw that change on its next poll, up to 4.4 s later (a retry
    // period with jitter), and takes over on its first poll after 15 s without change: between 13 s and
    // 15 + 2 × 4.4 s after the break — never before a stopped leading.
    assert!(taken >= 13 * S && taken >= lost, "b took over after {taken:?}");
    assert!(
        taken <= 15 * S + Duration::from_millis(8900),
        "b took over after {taken:?}"
    );
    assert!(rs[0].seen.contains(&Transition::StoppedLeading));
    assert_eq!(server.lock().object.as_ref().unwrap().0.leader_transitions, 1);
    assert_eq!(server.lock().object.as_ref().unwrap().0.holder_identity, "b");
}

#[test]
fn a_released_lock_is_taken_at_the_next_attempt() {
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    let mut rs = vec![Replica::new(&server, "a", &clock), Replica::new(&server, "b", &clock)];
    run_for(&mut rs, &clock, 10 * S);
    let l = leader(&rs).unwrap();
    let other = 1 - l;
    let mut out = Vec::new();
    rs[l].machine.stop_leading(&mut out);
    assert_eq!(out, [Transition::StoppedLeading]);
    let r = &mut rs[l];
    assert_eq!(
        r.machine.release(&r.lock, &clock, Instant::now() + 10 * S),
        Release::Released
    );
    let released = clock.now();
    let stopped = rs.remove(l);
    let mut rest = vec![rs.remove(0)];
    while !rest[0].machine.is_leading() {
        run_for(&mut rest, &clock, Duration::from_millis(100));
    }
    let waited = clock.now() - released;
    assert!(
        waited <= Duration::from_millis(4500),
        "one jittered retry period at most, not the lease: {waited:?}"
    );
    let record = server.lock().object.as_ref().unwrap().0.clone();
    assert_eq!(record.holder_identity, ["a", "b"][other]);
    assert_eq!(record.leader_transitions, 1);
    let reports: Vec<&Transition> = rest[0]
        .seen
        .iter()
        .filter(|t| matches!(t, Transition::NewLeader(_)))
        .collect();
    let (old_id, new_id) = (["a", "b"][l].to_owned(), ["a", "b"][other].to_owned());
    // The released record is taken in the same attempt that reads it: no "nobody leads" in between.
    assert_eq!(
        reports,
        [&Transition::NewLeader(old_id), &Transition::NewLeader(new_id)]
    );
    drop(stopped);
}

/// One event of a simulation: when (fake time, after the step), who, what.
type Timeline = Vec<(Instant, &'static str, Transition)>;

/// Steps each replica when it is due, moving the fake clock straight to the next due step, until `done` holds
/// (or 120 s of fake time pass); returns what happened, and for each replica the start of each of its attempts
/// that wrote the lock.
fn simulate(
    replicas: &mut [(&'static str, Machine, MemLock, Instant)],
    server: &Arc<Mutex<Server>>,
    clock: &FakeClock,
    timeline: &mut Timeline,
    writes: &mut Vec<(&'static str, Instant)>,
    done: impl Fn(&Timeline) -> bool,
) {
    let end = clock.now() + 120 * S;
    while !done(timeline) {
        let (i, next) = replicas
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.3))
            .min_by_key(|(_, next)| *next)
            .unwrap();
        assert!(next < end, "nothing happened for two minutes: {timeline:?}");
        clock.step(next.saturating_duration_since(clock.now()));
        let (id, machine, lock, due) = &mut replicas[i];
        let started = clock.now();
        let before = server.lock().writes.len();
        let mut out = Vec::new();
        *due = machine.step(lock, clock, &mut out);
        if server.lock().writes.len() > before {
            writes.push((*id, started));
        }
        timeline.extend(out.into_iter().map(|t| (clock.now(), *id, t)));
    }
}

#[test]
fn a_renewal_that_hangs_ends_leadership_at_the_renew_deadline_before_anyone_takes_over() {
    // The split brain the deadline prevents: a's renewal hangs on the server; b takes the lease once it has seen no
    // change for lease_duration. a must have stopped leading by then, at the end of its term.
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    let cfg = config();
    let now = clock.now();
    let mut rs = vec![
        ("a", Machine::new("a", &cfg), MemLock::new(&server, "a"), now),
        ("b", Machine::new("b", &cfg), MemLock::new(&server, "b"), now + S),
    ];
    let (mut timeline, mut writes) = (Timeline::new(), Vec::new());
    // a leads and renews a few times; b follows.
    simulate(&mut rs, &server, &clock, &mut timeline, &mut writes, |_| {
        clock.now() >= now + 20 * S
    });
    assert!(rs[0].1.is_leading() && !rs[1].1.is_leading());
    assert!(
        writes.iter().filter(|(id, _)| *id == "a").count() > 5,
        "a renewed: {writes:?}"
    );

    // From now on, every call of a hangs until the deadline it was given.
    *rs[0].2.mode.lock() = Mode::Hang(clock.clone(), Arc::default());
    simulate(&mut rs, &server, &clock, &mut timeline, &mut writes, |t| {
        t.iter()
            .any(|(_, id, e)| *id == "b" && *e == Transition::StartedLeading)
    });
    let at = |who: &str, what: Transition| {
        timeline
            .iter()
            .find(|(_, id, e)| *id == who && *e == what)
            .map(|(t, _, _)| *t)
            .unwrap_or_else(|| panic!("{who} {what:?} in {timeline:?}"))
    };
    let a_last_renewal = writes.iter().rev().find(|(id, _)| *id == "a").unwrap().1;
    let a_stopped = at("a", Transition::StoppedLeading);
    let b_started = at("b", Transition::StartedLeading);
    // a stopped leading exactly at the end of its term: renew_deadline after its last successful renewal began.
    assert_eq!(a_stopped, a_last_renewal + cfg.renew_deadline, "{timeline:?}");
    // b took over only after lease_duration without change: never while a led.
    assert!(b_started >= a_last_renewal + cfg.lease_duration, "{timeline:?}");
    assert!(
        b_started >= a_stopped + (cfg.lease_duration - cfg.renew_deadline),
        "{timeline:?}"
    );
}

#[test]
fn a_renewal_that_succeeds_after_the_term_ended_counts_as_lost() {
    // A lock that ignores its deadline: the renewal's answer comes 11 s later (past the 10 s renew deadline).
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    let lock = MemLock::new(&server, "a");
    let mut m = Machine::new("a", &config());
    let mut out = Vec::new();
    let next = m.step(&lock, &clock, &mut out);
    assert!(m.is_leading() && out.contains(&Transition::StartedLeading));
    let term_end = m.leading_until().unwrap();
    clock.step(next - clock.now());
    *lock.mode.lock() = Mode::SlowUpdates(clock.clone(), 11 * S);
    out.clear();
    m.step(&lock, &clock, &mut out);
    assert!(clock.now() > term_end);
    assert_eq!(
        out,
        [Transition::StoppedLeading],
        "the late success does not extend the term"
    );
    assert!(!m.is_leading());
}

#[test]
fn each_attempt_is_bounded_by_the_end_of_the_term() {
    // client-go's TestFastPathLeaderElection, "fallback to slow path after fast path fails": the lock operations
    // of acquiring and renewing, and every one bounded by the end of the current term.
    let clock = FakeClock::new();
    let lock = Scripted::new(vec![Ok(None), Ok(Some(held_by("baz")))]).with_updates(vec![Ok(()), Err(conflict())]);
    let cfg = config();
    let mut m = Machine::new("baz", &cfg);
    let mut out = Vec::new();
    let real0 = Instant::now();
    let mut next = m.step(&lock, &clock, &mut out); // get, create: acquired
    for _ in 0..3 {
        clock.step(next - clock.now());
        next = m.step(&lock, &clock, &mut out); // update (fast path); update (conflict), get, update; update
    }
    assert_eq!(
        *lock.calls.lock(),
        ["get", "create", "update", "update", "get", "update", "update"]
    );
    assert!(m.is_leading());
    // The deadlines, on the real clock (the fake one stands still while the lock works): what is left of the term
    // the attempt renews — 10 s for the acquisition, then 10 s from the last success's start minus the 2 s retry
    // period since.
    let deadlines = lock.deadlines.lock().clone();
    let slack = Instant::now() - real0;
    let left = [10, 10, 8, 8, 8, 8, 8].map(|secs| real0 + secs * S);
    assert_eq!(deadlines.len(), left.len());
    for (i, (d, e)) in deadlines.iter().zip(left).enumerate() {
        assert!(*d >= e && *d <= e + slack, "call {i}: {:?} after the start", *d - real0);
    }
}

#[test]
fn a_term_begins_with_leadership_is_extended_by_each_renewal_and_ends_when_leadership_is_lost() {
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    let lock = MemLock::new(&server, "a");
    let cfg = config().clock(clock.clone());
    let mut m = Machine::new("a", &cfg);
    let mut out = Vec::new();
    let acquired = clock.now();
    let mut next = m.step(&lock, &clock, &mut out);
    let term = m.term().expect("leading in a term").clone();
    assert_eq!(
        (term.lease(), term.until()),
        ("ns/lease", acquired + cfg.renew_deadline)
    );
    // A client fenced by the term: its connections are aborted when the term ends.
    let fenced = crate::client::Client::new(crate::client::Config::new("https://192.0.2.1:6443"))
        .unwrap()
        .fenced(&term);
    // Each renewal moves the end to its own start plus the renew deadline.
    for _ in 0..3 {
        clock.step(next.saturating_duration_since(clock.now()));
        let renewal = clock.now();
        next = m.step(&lock, &clock, &mut out);
        assert_eq!(term.until(), renewal + cfg.renew_deadline);
    }
    // The renewals fail: the term runs out at its end, and leadership with it.
    let end = term.until();
    server.lock().down = true;
    while m.is_leading() {
        assert!(!term.is_over() && !fenced.abort_handle().is_aborted());
        clock.step(next.saturating_duration_since(clock.now()));
        next = m.step(&lock, &clock, &mut out);
    }
    assert_eq!(clock.now(), end);
    assert!(term.is_over() && m.term().is_none());
    assert!(
        fenced.abort_handle().is_aborted(),
        "ended: its requests in flight aborted"
    );
    assert_eq!(out.last(), Some(&Transition::StoppedLeading));
    // Leading again is another term.
    server.lock().down = false;
    while !m.is_leading() {
        clock.step(next.saturating_duration_since(clock.now()));
        next = m.step(&lock, &clock, &mut out);
    }
    assert!(!m.term().unwrap().is_over() && term.is_over());
}

/// Candidate `a`'s lock on a Lease held by `b` for 15 s (`b` renews it no more).
fn held_by_b_for_15_s() -> MemLock {
    let server = Arc::new(Mutex::new(Server::default()));
    let held = LeaderElectionRecord {
        lease_duration_seconds: 15,
        ..held_by("b")
    };
    server.lock().object = Some((held, 1));
    MemLock::new(&server, "a")
}

#[test]
fn a_term_taken_over_measures_the_outage_from_the_previous_holders_last_renewal_seen() {
    let clock = FakeClock::new();
    let lock = held_by_b_for_15_s();
    let cfg = config().clock(clock.clone());
    let mut m = Machine::new("a", &cfg);
    // b's last renewal, seen by a's first attempt; b renews no more.
    let seen = clock.now();
    let mut next = m.step(&lock, &clock, &mut Vec::new());
    while !m.is_leading() {
        clock.step(next.saturating_duration_since(clock.now()));
        next = m.step(&lock, &clock, &mut Vec::new());
    }
    let term = m.term().unwrap().clone();
    assert!(clock.now() >= seen + 15 * S, "taken over once expired");
    assert_eq!(term.handover(), None, "no work yet");
    clock.step(Duration::from_millis(250)); // the first reconcile comes a little later
    let outage = term.begin_work().expect("measured by the first work");
    assert_eq!(outage, clock.now() - seen);
    assert_eq!((term.handover(), term.begin_work()), (Some(outage), None), "once");

    // A Lease this candidate creates has no previous holder: no hand-over to measure.
    let fresh = Arc::new(Mutex::new(Server::default()));
    let mut m = Machine::new("a", &cfg);
    m.step(&MemLock::new(&fresh, "a"), &clock, &mut Vec::new());
    assert_eq!(m.term().unwrap().begin_work(), None);
}

#[test]
fn a_candidate_takes_a_dead_holders_lease_at_its_expiry_not_a_retry_period_later() {
    let clock = FakeClock::new();
    let lock = held_by_b_for_15_s();
    let mut m = Machine::new("a", &config().clock(clock.clone()));
    let seen = clock.now(); // b renews no more
    let mut next = m.step(&lock, &clock, &mut Vec::new());
    while !m.is_leading() {
        assert!(next <= seen + 15 * S, "no attempt scheduled past the expiry");
        clock.step(next.saturating_duration_since(clock.now()));
        next = m.step(&lock, &clock, &mut Vec::new());
    }
    assert_eq!(clock.now(), seen + 15 * S);
}

#[test]
fn a_renewal_failure_shorter_than_the_deadline_keeps_leadership() {
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    let mut rs = vec![Replica::new(&server, "a", &clock)];
    run_for(&mut rs, &clock, S);
    server.lock().down = true;
    run_for(&mut rs, &clock, 6 * S);
    assert_eq!(leader(&rs), Some(0), "still within the renew deadline");
    server.lock().down = false;
    run_for(&mut rs, &clock, 30 * S);
    assert_eq!(leader(&rs), Some(0));
    assert!(!rs[0].seen.contains(&Transition::StoppedLeading));
}

#[test]
fn a_lost_leader_becomes_a_candidate_and_can_lead_again() {
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    let mut rs = vec![Replica::new(&server, "a", &clock)];
    run_for(&mut rs, &clock, S);
    server.lock().down = true;
    run_for(&mut rs, &clock, 13 * S);
    assert_eq!(leader(&rs), None, "lost after the renew deadline");
    server.lock().down = false;
    run_for(&mut rs, &clock, 10 * S);
    assert_eq!(leader(&rs), Some(0), "nobody else took it: a leads again");
    let starts = rs[0].seen.iter().filter(|t| **t == Transition::StartedLeading).count();
    assert_eq!(starts, 2);
    assert_eq!(
        server.lock().object.as_ref().unwrap().0.leader_transitions,
        0,
        "the same holder: no transition"
    );
}

#[test]
fn candidates_retry_after_a_jittered_period() {
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    server.lock().object = Some((
        LeaderElectionRecord {
            lease_duration_seconds: 3600,
            ..held_by("someone")
        },
        1,
    ));
    let mut m = Machine::new("me", &config());
    let lock = MemLock::new(&server, "me");
    for _ in 0..200 {
        let now = clock.now();
        let next = m.step(&lock, &clock, &mut Vec::new());
        let wait = next - now;
        assert!(wait >= 2 * S && wait <= Duration::from_millis(4400), "{wait:?}");
    }
}

#[test]
fn periods_too_long_for_an_instant_mean_never() {
    // Valid, if odd: a lease of a century, retried every few decades.
    let cfg = config()
        .lease_duration(Duration::MAX)
        .renew_deadline(Duration::MAX / 2)
        .retry_period(Duration::MAX / 4);
    assert!(cfg.validate().is_ok());
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    let lock = MemLock::new(&server, "me");
    let mut m = Machine::new("me", &cfg);
    let mut out = Vec::new();
    let next = m.step(&lock, &clock, &mut out);
    assert_eq!(out, [Transition::NewLeader("me".into()), Transition::StartedLeading]);
    assert!(
        next > clock.now() + Duration::from_secs(3600 * 24 * 365),
        "next renewal: never, in practice"
    );
}

#[test]
fn config_constraints_are_client_go_s() {
    assert!(config().validate().is_ok());
    let bad = [
        config().lease_duration(10 * S),
        config().renew_deadline(Duration::from_millis(2400)),
        config().retry_period(Duration::ZERO),
        config()
            .lease_duration(Duration::from_millis(900))
            .renew_deadline(Duration::from_millis(500))
            .retry_period(Duration::from_millis(100)),
        // Refused, not a panic multiplying it by the jitter factor.
        config().retry_period(Duration::MAX),
    ];
    for c in bad {
        assert!(matches!(c.validate(), Err(Error::InvalidInput(_))), "{c:?}");
    }
}

// ---- the thread ---------------------------------------------------------------------------------------------------

fn fast() -> LeaderElectionConfig {
    LeaderElectionConfig::default()
        .lease_duration(S)
        .renew_deadline(Duration::from_millis(500))
        .retry_period(Duration::from_millis(20))
}

#[test]
fn the_elector_calls_back_in_order_and_releases_after_stopped_leading() {
    let server = Arc::new(Mutex::new(Server::default()));
    let (tx, rx) = unbounded::<String>();
    let (t1, t2, t3) = (tx.clone(), tx.clone(), tx);
    let observer = server.clone();
    let elector = LeaderElector::start(
        MemLock::new(&server, "me"),
        fast(),
        LeaderCallbacks::new()
            .on_new_leader(move |id| t1.send(format!("new leader {id}")).unwrap())
            .on_started_leading(move || t2.send("started".into()).unwrap())
            .on_stopped_leading(move || {
                // The lock is still held while the guarded work stops.
                let holder = observer.lock().object.as_ref().unwrap().0.holder_identity.clone();
                t3.send(format!("stopped while {holder} holds")).unwrap()
            }),
    )
    .unwrap();
    let wait = Duration::from_secs(10);
    assert_eq!(rx.recv_timeout(wait).unwrap(), "new leader me");
    assert_eq!(rx.recv_timeout(wait).unwrap(), "started");
    assert!(elector.is_leader());
    assert_eq!(elector.leader().as_deref(), Some("me"));
    assert_eq!(elector.running_threads(), 1);
    elector.stop();
    assert_eq!(rx.recv_timeout(wait).unwrap(), "stopped while me holds");
    assert!(!elector.is_leader());
    assert_eq!(elector.running_threads(), 0);
    let record = server.lock().object.as_ref().unwrap().0.clone();
    assert_eq!(
        (record.holder_identity.as_str(), record.lease_duration_seconds),
        ("", 1)
    );
    assert_eq!(elector.terms(), 1);
}

#[test]
fn the_elector_follows_a_fake_clock() {
    let clock = FakeClock::new();
    let server = Arc::new(Mutex::new(Server::default()));
    server.lock().object = Some((
        LeaderElectionRecord {
            lease_duration_seconds: 15,
            ..held_by("other")
        },
        1,
    ));
    let (tx, rx) = unbounded::<()>();
    let elector = LeaderElector::start(
        MemLock::new(&server, "me"),
        config().clock(clock.clone()),
        LeaderCallbacks::new().on_started_leading(move || tx.send(()).unwrap()),
    )
    .unwrap();
    // Held by another and never renewed: taken over once 15 s of fake time pass without change.
    let deadline = Instant::now() + Duration::from_secs(20);
    while rx.try_recv().is_err() {
        assert!(Instant::now() < deadline, "never took over");
        clock.step(Duration::from_millis(500));
        std::thread::yield_now();
    }
    assert_eq!(elector.leader().as_deref(), Some("me"));
    elector.stop();
    assert_eq!(elector.running_threads(), 0);
}

#[test]
fn a_panicking_callback_does_not_stop_the_election() {
    let server = Arc::new(Mutex::new(Server::default()));
    let (tx, rx) = unbounded::<()>();
    let elector = LeaderElector::start(
        MemLock::new(&server, "me"),
        fast(),
        LeaderCallbacks::new()
            .on_new_leader(|_| panic!("callback bug"))
            .on_started_leading(move || tx.send(()).unwrap()),
    )
    .unwrap();
    rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(elector.is_leader());
    elector.stop();
}

#[test]
fn an_empty_identity_is_refused() {
    let server = Arc::new(Mutex::new(Server::default()));
    let r = LeaderElector::start(MemLock::new(&server, ""), fast(), LeaderCallbacks::new());
    assert!(matches!(r, Err(Error::InvalidInput(_))));
}

// ---- client-go's TestReleaseOnCancellation: stopping while a call on the lock is in flight -------------------------

/// A [`MemLock`] whose chosen call blocks — until the elector interrupts it, or its deadline — as a request the
/// server leaves hanging.
struct Interruptible {
    inner: MemLock,
    /// The call that blocks: its kind and number (1-based).
    block: (&'static str, usize),
    /// Updates answered with a conflict before any other behaviour (to send a renewal down the slow path).
    conflicts: std::sync::atomic::AtomicUsize,
    /// The blocked update is written to the server before blocking: only its answer is lost.
    applied_then_lost: bool,
    /// The blocked update, once interrupted, is written to the server just after the next read is answered (the
    /// server applies a request whose connection was closed after serving the release's read).
    lands_late: bool,
    /// The interrupted update waiting to land (with `lands_late`).
    late: Mutex<Option<LeaderElectionRecord>>,
    counts: Mutex<(usize, usize)>,
    events: crossbeam_channel::Sender<String>,
    interrupt: Mutex<Option<crossbeam_channel::Sender<()>>>,
    interrupted: crossbeam_channel::Receiver<()>,
}

impl Interruptible {
    fn new(inner: MemLock, block: (&'static str, usize), events: crossbeam_channel::Sender<String>) -> Self {
        let (tx, rx) = crossbeam_channel::bounded(0);
        Interruptible {
            inner,
            block,
            conflicts: Default::default(),
            applied_then_lost: false,
            lands_late: false,
            late: Mutex::new(None),
            counts: Mutex::new((0, 0)),
            events,
            interrupt: Mutex::new(Some(tx)),
            interrupted: rx,
        }
    }

    /// Blocks when this is the chosen call.
    fn maybe_block(&self, kind: &'static str, deadline: Instant) -> Result<()> {
        let n = {
            let mut c = self.counts.lock();
            let n = if kind == "get" { &mut c.0 } else { &mut c.1 };
            *n += 1;
            *n
        };
        if (kind, n) != self.block {
            return Ok(());
        }
        self.events.send(format!("{kind} blocked")).unwrap();
        crossbeam_channel::select! {
            recv(self.interrupted) -> _ => Err(Error::Stopped),
            recv(crossbeam_channel::at(deadline)) -> _ => Err(timed_out()),
        }
    }
}

impl Lock for Interruptible {
    fn get(&self, deadline: Instant) -> Result<Option<LeaderElectionRecord>> {
        self.maybe_block("get", deadline)?;
        let read = self.inner.get(deadline);
        if let Some(record) = self.late.lock().take() {
            let mut s = self.inner.server.lock();
            let version = s.object.as_ref().map_or(1, |(_, v)| v + 1);
            s.object = Some((record, version));
            s.writes.push(format!("{} (late)", self.inner.identity));
        }
        read
    }
    fn create(&self, r: &LeaderElectionRecord, deadline: Instant) -> Result<()> {
        self.inner.create(r, deadline)
    }
    fn update(&self, r: &LeaderElectionRecord, deadline: Instant) -> Result<()> {
        let conflict_first = self
            .conflicts
            .fetch_update(
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
                |n| n.checked_sub(1),
            )
            .is_ok();
        if conflict_first {
            self.counts.lock().1 += 1;
            return Err(conflict());
        }
        if self.applied_then_lost && self.counts.lock().1 + 1 == self.block.1 && self.block.0 == "update" {
            self.inner.update(r, deadline)?;
            return self.maybe_block("update", deadline);
        }
        if let Err(e) = self.maybe_block("update", deadline) {
            if self.lands_late {
                *self.late.lock() = Some(r.clone());
            }
            return Err(e);
        }
        self.inner.update(r, deadline)
    }
    fn identity(&self) -> &str {
        self.inner.identity()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn interrupt(&self) {
        self.events.send("interrupted".into()).unwrap();
        self.interrupt.lock().take();
    }
}

/// Starts an elector on `lock`, waits for it to lead and for its blocked call, stops it; returns what happened in
/// order and the lock's record afterwards.
fn stop_while_blocked(
    server: &Arc<Mutex<Server>>,
    lock: Interruptible,
    events: crossbeam_channel::Receiver<String>,
) -> Vec<String> {
    let tx = lock.events.clone();
    let (t1, t2) = (tx.clone(), tx);
    let observer = server.clone();
    // A long renew deadline: only the interrupt can end the blocked call in time.
    let cfg = LeaderElectionConfig::default()
        .lease_duration(60 * S)
        .renew_deadline(30 * S)
        .retry_period(Duration::from_millis(20));
    let elector = LeaderElector::start(
        lock,
        cfg,
        LeaderCallbacks::new()
            .on_started_leading(move || t1.send("started".into()).unwrap())
            .on_stopped_leading(move || {
                let holder = observer.lock().object.as_ref().unwrap().0.holder_identity.clone();
                t2.send(format!("stopped while {holder} holds")).unwrap()
            }),
    )
    .unwrap();
    let wait = Duration::from_secs(10);
    let mut seen = vec![events.recv_timeout(wait).unwrap(), events.recv_timeout(wait).unwrap()];
    let stopped = elector.stop_by(Instant::now() + STOP_BUDGET);
    seen.extend(events.try_iter());
    assert_eq!(
        stopped,
        ElectorStopped {
            joined: true,
            released: Some(true)
        },
        "{seen:?}"
    );
    assert_eq!(elector.running_threads(), 0);
    seen
}

#[test]
fn stopping_during_a_blocked_renewal_interrupts_it_and_still_releases() {
    // client-go's "release acquired lock on cancellation of update".
    let server = Arc::new(Mutex::new(Server::default()));
    let (tx, rx) = unbounded();
    let lock = Interruptible::new(MemLock::new(&server, "me"), ("update", 1), tx);
    let seen = stop_while_blocked(&server, lock, rx);
    assert_eq!(
        seen,
        ["started", "update blocked", "interrupted", "stopped while me holds"]
    );
    let record = server.lock().object.as_ref().unwrap().0.clone();
    assert_eq!(
        (record.holder_identity.as_str(), record.lease_duration_seconds),
        ("", 1)
    );
}

#[test]
fn stopping_during_a_blocked_read_interrupts_it_and_still_releases() {
    // client-go's "release acquired lock on cancellation of get": the renewal's fast path conflicts, the read of
    // the slow path blocks.
    let server = Arc::new(Mutex::new(Server::default()));
    let (tx, rx) = unbounded();
    let lock = Interruptible::new(MemLock::new(&server, "me"), ("get", 2), tx);
    lock.conflicts.store(1, std::sync::atomic::Ordering::SeqCst);
    let seen = stop_while_blocked(&server, lock, rx);
    assert_eq!(
        seen,
        ["started", "get blocked", "interrupted", "stopped while me holds"]
    );
    assert_eq!(server.lock().object.as_ref().unwrap().0.holder_identity, "");
}

#[test]
fn a_renewal_applied_but_unanswered_does_not_prevent_the_release() {
    // The interrupted renewal reached the server; its answer was lost, so the lock's resourceVersion is stale. The
    // release reads the record first and succeeds.
    let server = Arc::new(Mutex::new(Server::default()));
    let (tx, rx) = unbounded();
    let mut lock = Interruptible::new(MemLock::new(&server, "me"), ("update", 1), tx);
    lock.applied_then_lost = true;
    let seen = stop_while_blocked(&server, lock, rx);
    assert_eq!(
        seen,
        ["started", "update blocked", "interrupted", "stopped while me holds"]
    );
    let s = server.lock();
    assert_eq!(s.object.as_ref().unwrap().0.holder_identity, "");
    assert_eq!(s.writes, ["me", "me", "me"], "created, renewed (answer lost), released");
}

#[test]
fn stopping_during_a_renewal_that_lands_after_the_releases_read_still_releases() {
    // The interrupted renewal reached the server, which applied it only after answering the release's read: the
    // release's write conflicts; it reads again and releases.
    let server = Arc::new(Mutex::new(Server::default()));
    let (tx, rx) = unbounded();
    let mut lock = Interruptible::new(MemLock::new(&server, "me"), ("update", 1), tx);
    lock.lands_late = true;
    let seen = stop_while_blocked(&server, lock, rx);
    assert_eq!(
        seen,
        ["started", "update blocked", "interrupted", "stopped while me holds"]
    );
    let s = server.lock();
    assert_eq!(s.object.as_ref().unwrap().0.holder_identity, "");
    assert_eq!(
        s.writes,
        ["me", "me (late)", "me"],
        "created, renewed after the release's read, released"
    );
}

/// Starts an elector on a released lock, whose first attempt to take it blocks until interrupted, with `lock`'s
/// behaviour for that write (`set`); stops it there. Returns the lock's holder before the stop, and its holder and
/// the server's writes afterwards.
fn stop_during_an_acquisition(set: impl FnOnce(&mut Interruptible)) -> (String, String, Vec<String>) {
    let server = Arc::new(Mutex::new(Server {
        object: Some((held_by(""), 1)),
        ..Server::default()
    }));
    let (tx, rx) = unbounded();
    let mut lock = Interruptible::new(MemLock::new(&server, "me"), ("update", 1), tx);
    set(&mut lock);
    let cfg = LeaderElectionConfig::default()
        .lease_duration(60 * S)
        .renew_deadline(30 * S)
        .retry_period(Duration::from_millis(20));
    let elector = LeaderElector::start(lock, cfg, LeaderCallbacks::new()).unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), "update blocked");
    let before = server.lock().object.as_ref().unwrap().0.holder_identity.clone();
    let stopped = elector.stop_by(Instant::now() + STOP_BUDGET);
    // Released: the candidate never learnt it led, yet the lock was held here.
    assert_eq!(
        stopped,
        ElectorStopped {
            joined: true,
            released: Some(true)
        }
    );
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), ["interrupted"]);
    assert!(!elector.is_leader());
    let s = server.lock();
    (
        before,
        s.object.as_ref().unwrap().0.holder_identity.clone(),
        s.writes.clone(),
    )
}

#[test]
fn stopping_during_an_acquisition_applied_but_unanswered_releases_the_lock() {
    // The interrupted attempt took the released lock on the server, but its answer was lost: stopping still
    // releases the lock, instead of leaving it held by a candidate gone until it expires.
    let (before, holder, writes) = stop_during_an_acquisition(|lock| lock.applied_then_lost = true);
    assert_eq!(before, "me", "the claim landed");
    assert_eq!(holder, "");
    assert_eq!(writes, ["me", "me"], "claimed (answer lost), released");
}

#[test]
fn stopping_during_an_acquisition_that_lands_after_the_releases_read_still_releases() {
    // The interrupted claim is applied by the server only after answering the release's read: the release's write
    // (on the version it read, as the claim's) conflicts; it reads again, finds the lock held here and releases it.
    let (before, holder, writes) = stop_during_an_acquisition(|lock| lock.lands_late = true);
    assert_eq!(before, "", "the claim not landed yet");
    assert_eq!(holder, "");
    assert_eq!(writes, ["me (late)", "me"], "claimed after the read, released");
}

#[test]
fn stopping_a_leader_whose_lock_another_took_over_reports_nothing_released() {
    let server = Arc::new(Mutex::new(Server::default()));
    let (tx, rx) = unbounded();
    // A retry period far longer than the test: the elector renews once it leads only when stopped.
    let cfg = LeaderElectionConfig::default()
        .lease_duration(60 * S)
        .renew_deadline(30 * S)
        .retry_period(20 * S);
    let elector = LeaderElector::start(
        MemLock::new(&server, "me"),
        cfg,
        LeaderCallbacks::new().on_started_leading(move || tx.send(()).unwrap()),
    )
    .unwrap();
    rx.recv_timeout(Duration::from_secs(10)).unwrap();
    // Another candidate took the lock over (this one's term had ended, as far as the server knows).
    {
        let mut s = server.lock();
        let version = s.object.as_ref().unwrap().1 + 1;
        s.object = Some((held_by("other"), version));
    }
    let stopped = elector.stop_by(Instant::now() + STOP_BUDGET);
    assert_eq!(
        stopped,
        ElectorStopped {
            joined: true,
            released: None
        }
    );
    let s = server.lock();
    assert_eq!(
        s.object.as_ref().unwrap().0.holder_identity,
        "other",
        "never overwritten"
    );
    assert_eq!(s.writes, ["me"], "created, then nothing written");
}
