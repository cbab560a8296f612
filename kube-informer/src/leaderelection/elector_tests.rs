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

/// A lock that answers from a script and records the calls it got.
struct Scripted {
    get: Mutex<VecDeque<Result<Option<LeaderElectionRecord>>>>,
    calls: Mutex<Vec<&'static str>>,
    written: Mutex<Option<LeaderElectionRecord>>,
}

impl Scripted {
    fn new(gets: Vec<Result<Option<LeaderElectionRecord>>>) -> Scripted {
        Scripted {
            get: Mutex::new(gets.into()),
            calls: Mutex::new(Vec::new()),
            written: Mutex::new(None),
        }
    }
}

impl Lock for Scripted {
    fn get(&self) -> Result<Option<LeaderElectionRecord>> {
        self.calls.lock().push("get");
        self.get.lock().pop_front().expect("an unexpected get")
    }
    fn create(&self, r: &LeaderElectionRecord) -> Result<()> {
        self.calls.lock().push("create");
        *self.written.lock() = Some(r.clone());
        Ok(())
    }
    fn update(&self, r: &LeaderElectionRecord) -> Result<()> {
        self.calls.lock().push("update");
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
        assert_eq!(c.try_acquire_or_renew(&lock, now, wall), case.success, "{}", case.name);
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
    assert!(!c.try_acquire_or_renew(&lock, t0, SystemTime::now()));
    assert!(
        c.try_acquire_or_renew(&lock, t0 + 3 * S, SystemTime::now()),
        "unchanged for 3 s"
    );
    assert_eq!(c.observed().leader_transitions, 1);
}

#[test]
fn release_empties_the_holder_and_shortens_the_lease() {
    let lock = Scripted::new(vec![Ok(None)]);
    let mut c = Candidate::new("baz", 15);
    let now = Instant::now();
    assert!(c.release(&lock, now, SystemTime::now()), "nothing to release");
    assert!(lock.calls.lock().is_empty());
    assert!(c.try_acquire_or_renew(&lock, now, SystemTime::now()));
    assert!(c.release(&lock, now, SystemTime::now()));
    let written = lock.written.lock().clone().unwrap();
    assert_eq!(written.holder_identity, "");
    assert_eq!(written.lease_duration_seconds, 1);
    assert!(!c.is_leader());
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
}

impl MemLock {
    fn new(server: &Arc<Mutex<Server>>, identity: &str) -> MemLock {
        MemLock {
            server: server.clone(),
            identity: identity.into(),
            seen: Mutex::new(None),
            broken: Default::default(),
        }
    }

    fn check(&self, s: &Server) -> Result<()> {
        if s.down || self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            Err(down())
        } else {
            Ok(())
        }
    }
}

impl Lock for MemLock {
    fn get(&self) -> Result<Option<LeaderElectionRecord>> {
        let s = self.server.lock();
        self.check(&s)?;
        Ok(s.object.as_ref().map(|(r, v)| {
            *self.seen.lock() = Some(*v);
            r.clone()
        }))
    }
    fn create(&self, r: &LeaderElectionRecord) -> Result<()> {
        let mut s = self.server.lock();
        self.check(&s)?;
        if s.object.is_some() {
            return Err(Error::Api(Box::new(Status::failure(409, "AlreadyExists", "exists"))));
        }
        s.object = Some((r.clone(), 1));
        s.writes.push(self.identity.clone());
        *self.seen.lock() = Some(1);
        Ok(())
    }
    fn update(&self, r: &LeaderElectionRecord) -> Result<()> {
        let mut s = self.server.lock();
        self.check(&s)?;
        let Some((_, v)) = s.object else {
            return Err(Error::Api(Box::new(Status::failure(404, "NotFound", "gone"))));
        };
        if *self.seen.lock() != Some(v) {
            return Err(conflict());
        }
        s.object = Some((r.clone(), v + 1));
        s.writes.push(self.identity.clone());
        *self.seen.lock() = Some(v + 1);
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
    // a renewed at most 2 s before breaking; it gives up renew_deadline (10 s) after its first failure.
    assert!(lost <= 10 * S + 2 * S, "a stopped leading after {lost:?}");
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
    assert!(r.machine.release(&r.lock, &clock));
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
