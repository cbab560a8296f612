//! Leader election against the embedded API server: replicas of a controller, each with its own user, so that the
//! server's request log tells who wrote what.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use kube_informer::Result;
use kube_informer::cache::ListWatch;
use kube_informer::client::params::PostParams;
use kube_informer::client::{Api, Client, Config, RateLimit};
use kube_informer::controller::{Action, Context, Controller, ControllerOptions};
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, Lease, LeaseLock};
use kube_informer::object::ObjectMeta;
use kube_informer::object::core::ConfigMap;
use kube_informer_apiserver::{ApiServer, Fault, LogMark, RequestRecord, Verb};

mod common;
use common::eventually;

const LEASE: &str = "copier";

fn server(replicas: usize) -> ApiServer {
    (0..replicas)
        .fold(ApiServer::builder(), |b, i| {
            b.token(&format!("token-r{i}"), &format!("r{i}"))
        })
        .start()
        .unwrap()
}

/// Replica `i`'s client: the default configuration (no overall request timeout, 90 s between reads) — the elector
/// alone bounds its requests.
fn default_client(server: &ApiServer, i: usize) -> Client {
    Client::new(Config::new(server.url()).proxy(None).token(format!("token-r{i}"))).unwrap()
}

/// Marks a source ConfigMap as copied: the only write the replicas' controller makes.
fn reconcile(_key: &str, ctx: &Context<'_, ConfigMap, Client>) -> Result<Action> {
    let Some(src) = ctx.object() else {
        return Ok(Action::await_change());
    };
    if src.data.contains_key("copied") {
        return Ok(Action::await_change());
    }
    let api: Api<ConfigMap> = Api::namespaced(ctx.data().clone(), ctx.namespace());
    let mut cm = (*src).clone();
    cm.data.insert("copied".into(), "yes".into());
    api.replace(ctx.name(), &PostParams::default(), &cm)?;
    Ok(Action::await_change())
}

/// Who leads, as the callbacks saw it; `max` is the most leaders seen at once.
#[derive(Default)]
struct Leaders {
    now: Vec<String>,
    max: usize,
}

struct Replica {
    id: String,
    client: Client,
    informer: Arc<SharedIndexInformer<ConfigMap>>,
    controller: Arc<Controller<ConfigMap, Client>>,
    elector: LeaderElector,
}

impl Replica {
    fn start(server: &ApiServer, i: usize, config: &LeaderElectionConfig, leaders: &Arc<Mutex<Leaders>>) -> Replica {
        let id = format!("r{i}");
        let client = default_client(server, i);
        let api: Api<ConfigMap> = Api::all(client.clone());
        let informer = Arc::new(SharedIndexInformer::new(
            ListWatch::new(&api),
            InformerOptions::default().name(format!("cms-{id}")),
        ));
        let controller = Arc::new(
            Controller::builder(informer.clone(), client.clone())
                .options(ControllerOptions::default().name(format!("copier-{id}")))
                .build(reconcile)
                .unwrap(),
        );
        controller.start_informers().unwrap(); // hot standby
        let (started, stopped) = (leaders.clone(), leaders.clone());
        let (me, me2) = (id.clone(), id.clone());
        let tracking = LeaderCallbacks::new()
            .on_started_leading(move || {
                let mut l = started.lock();
                l.now.push(me.clone());
                l.max = l.max.max(l.now.len());
            })
            .on_stopped_leading(move || stopped.lock().now.retain(|x| *x != me2));
        let elector = LeaderElector::start(
            LeaseLock::new(&client, "default", LEASE, id.clone()),
            config.clone().name(format!("{LEASE}-{id}")),
            // The controller starts before the tracker counts it, and pauses before the tracker forgets it.
            controller.leader_callbacks().then(tracking),
        )
        .unwrap();
        Replica {
            id,
            client,
            informer,
            controller,
            elector,
        }
    }

    fn stop(&self) {
        self.elector.stop();
        self.controller.stop();
        self.informer.stop();
        assert_eq!(self.elector.running_threads(), 0);
        assert_eq!(self.controller.running_workers(), 0);
        assert_eq!(self.informer.running_threads(), 0);
    }
}

fn leading(replicas: &[Replica]) -> Vec<&str> {
    replicas
        .iter()
        .filter(|r| r.elector.is_leader())
        .map(|r| r.id.as_str())
        .collect()
}

fn source(name: &str) -> ConfigMap {
    ConfigMap::new(ObjectMeta::namespaced("default", name)).with("v", "1")
}

/// The copy of `name` is stored (and so its write is in the server's request log).
fn copied(server: &ApiServer, name: &str) -> bool {
    server
        .get::<ConfigMap>(Some("default"), name)
        .is_ok_and(|cm| cm.data.contains_key("copied"))
}

/// Users who attempted writes of `resource` since `mark` (with `accepted_only`: writes the server accepted).
fn writers_of(server: &ApiServer, mark: LogMark, resource: &str, accepted_only: bool) -> Vec<String> {
    let is_write = |r: &RequestRecord| {
        [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete]
            .iter()
            .any(|v| r.is(*v, resource))
            && (!accepted_only || (200..300).contains(&r.code))
    };
    let mut users: Vec<String> = server
        .requests()
        .since(mark)
        .into_iter()
        .filter(is_write)
        .filter_map(|r| r.user)
        .collect();
    users.dedup();
    users
}

/// Users who attempted any ConfigMap write since `mark`: only a leader may even try.
fn writers(server: &ApiServer, mark: LogMark, resource: &str) -> Vec<String> {
    writers_of(server, mark, resource, false)
}

fn lease(server: &ApiServer) -> Lease {
    server.get::<Lease>(Some("default"), LEASE).unwrap()
}

#[test]
fn one_of_three_replicas_leads_only_it_writes_and_a_clean_stop_hands_over_at_once() {
    let server = server(3);
    // A long lease: a new leader within WAIT (< lease_duration) proves the old one released it.
    let config = LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(60))
        .renew_deadline(Duration::from_secs(40))
        .retry_period(Duration::from_millis(100));
    let leaders = Arc::new(Mutex::new(Leaders::default()));
    let start = server.requests().mark();
    let mut replicas: Vec<Replica> = (0..3).map(|i| Replica::start(&server, i, &config, &leaders)).collect();
    eventually("a leader", || leading(&replicas).len() == 1);
    let first = leading(&replicas)[0].to_owned();
    for r in &replicas {
        eventually("every replica to see the leader", || {
            r.elector.leader().as_deref() == Some(first.as_str())
        });
    }

    server.create(&source("one")).unwrap();
    server.create(&source("two")).unwrap();
    eventually("both sources copied", || {
        copied(&server, "one") && copied(&server, "two")
    });
    assert_eq!(
        writers(&server, start, "configmaps"),
        [first.as_str()],
        "only the leader writes"
    );
    // Every candidate may try to create the missing lease at first; only the leader's writes are accepted.
    assert_eq!(
        writers_of(&server, start, "leases", true),
        [first.as_str()],
        "only the leader writes the lease"
    );
    assert_eq!(lease(&server).spec.holder_identity.as_deref(), Some(first.as_str()));

    // A clean stop: the leader's controller pauses, then the lease is released and another takes it at once.
    let i = replicas.iter().position(|r| r.id == first).unwrap();
    let old = replicas.remove(i);
    old.stop();
    assert!(!old.controller.is_running());
    let mark = server.requests().mark();
    eventually("a new leader before the old lease could expire", || {
        leading(&replicas).len() == 1
    });
    let second = leading(&replicas)[0].to_owned();
    assert_ne!(second, first);
    let l = lease(&server);
    assert_eq!(l.spec.holder_identity.as_deref(), Some(second.as_str()));
    assert_eq!(l.spec.lease_transitions, Some(1));

    server.create(&source("three")).unwrap();
    eventually("the new source copied", || copied(&server, "three"));
    assert_eq!(writers(&server, mark, "configmaps"), [second.as_str()]);
    assert!(!writers(&server, mark, "configmaps").contains(&old.id));
    for r in &replicas {
        r.stop();
    }
    assert_eq!(leaders.lock().max, 1, "never two leaders at once");
}

#[test]
fn a_killed_leader_is_replaced_once_its_lease_expires() {
    let server = server(2);
    let config = LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_secs(1))
        .retry_period(Duration::from_millis(100));
    let leaders = Arc::new(Mutex::new(Leaders::default()));
    let replicas: Vec<Replica> = (0..2).map(|i| Replica::start(&server, i, &config, &leaders)).collect();
    eventually("a leader", || leading(&replicas).len() == 1);
    let first = leading(&replicas)[0].to_owned();
    let (dead, alive) = if replicas[0].id == first {
        (&replicas[0], &replicas[1])
    } else {
        (&replicas[1], &replicas[0])
    };

    // Kill the leader's connection to the server: no renewal, no write, no release.
    dead.client.abort_handle().abort();
    eventually("the killed leader to stop leading", || !dead.elector.is_leader());
    // `is_leader` turns false just before `on_stopped_leading` stops the workers.
    eventually("a leader that lost the lease stops its workers", || {
        !dead.controller.is_running()
    });
    eventually("the other replica to take over", || alive.elector.is_leader());
    let mark = server.requests().mark();
    let l = lease(&server);
    assert_eq!(l.spec.holder_identity.as_deref(), Some(alive.id.as_str()));
    assert_eq!(l.spec.lease_transitions, Some(1), "taken over, not released");

    server.create(&source("after")).unwrap();
    eventually("the source copied by the new leader", || copied(&server, "after"));
    assert_eq!(writers(&server, mark, "configmaps"), [alive.id.as_str()]);
    dead.stop();
    alive.stop();
    assert_eq!(leaders.lock().max, 1, "never two leaders at once");
}

/// What each replica's callbacks saw, in the order they ran (one timeline for both: a mutex orders them).
#[derive(Clone, Default)]
struct Timeline(Arc<Mutex<Vec<String>>>);

impl Timeline {
    fn push(&self, event: String) {
        self.0.lock().push(event);
    }

    fn events(&self) -> Vec<String> {
        self.0.lock().clone()
    }

    fn position(&self, event: &str) -> Option<usize> {
        self.0.lock().iter().position(|e| e == event)
    }
}

#[test]
fn a_leader_whose_renewal_hangs_stops_by_the_renew_deadline_and_never_overlaps_the_next() {
    // The split brain of the issue: r0 leads; the API server leaves its Lease renewal hanging; r1 takes the lease
    // once it has seen no change for lease_duration. With the default client (a request may hang for 90 s), r0 must
    // still have stopped leading by then — at its renew deadline, its renewal aborted.
    let server = server(2);
    let config = LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(4))
        .renew_deadline(Duration::from_secs(1))
        .retry_period(Duration::from_millis(200));
    let timeline = Timeline::default();
    let (tx, events) = crossbeam_channel::unbounded::<String>();
    let start = |i: usize| {
        let id = format!("r{i}");
        let client = default_client(&server, i);
        let (t1, t2, t3) = (timeline.clone(), timeline.clone(), tx.clone());
        let (s1, s2, s3) = (tx.clone(), tx.clone(), tx.clone());
        let (me1, me2, me3) = (id.clone(), id.clone(), id.clone());
        let cut_off = client.abort_handle();
        let callbacks = LeaderCallbacks::new()
            .on_started_leading(move || {
                t1.push(format!("{me1} started"));
                s1.send(format!("{me1} started")).unwrap();
            })
            .on_stopped_leading(move || {
                t2.push(format!("{me2} stopped"));
                // Having lost the lease, the replica leaves the election, as a client-go program exits in
                // OnStoppedLeading (otherwise it would win its own unexpired lease back).
                cut_off.abort();
                s2.send(format!("{me2} stopped")).unwrap();
            })
            .on_new_leader(move |leader| {
                let _ = t3;
                s3.send(format!("{me3} sees {leader}")).unwrap();
            });
        LeaderElector::start(
            LeaseLock::new(&client, "default", LEASE, id.clone()),
            config.clone().name(format!("{LEASE}-{id}")),
            callbacks,
        )
        .unwrap()
    };
    let wait = Duration::from_secs(30);
    let wait_for = |what: &str| loop {
        let e = events
            .recv_timeout(wait)
            .unwrap_or_else(|_| panic!("waiting for {what}: {:?}", timeline.events()));
        if e == what {
            break;
        }
    };
    let r0 = start(0);
    wait_for("r0 started");
    let r1 = start(1);
    wait_for("r1 sees r0");

    // The next Lease update — r0's renewal, r1 only reads while r0 holds it — hangs until the fault is cleared.
    let mark = server.requests().mark();
    server.inject(Fault::on(Some(Verb::Update), Some("leases")).stall());
    wait_for("r1 started");
    server.clear_faults();

    let (r0_stopped, r1_started) = (timeline.position("r0 stopped"), timeline.position("r1 started"));
    assert!(
        r0_stopped.is_some_and(|stopped| Some(stopped) < r1_started),
        "r0 stopped leading before r1 started: {:?}",
        timeline.events()
    );
    assert_eq!(timeline.events(), ["r0 started", "r0 stopped", "r1 started"]);
    assert!(!r0.is_leader() && r1.is_leader());

    // The server's side: r0's renewal was the stalled request; r0 aborted it at the end of its term, closing the
    // connection, and the server dropped it (as kube-apiserver drops a request whose client went away) — nothing of
    // the old leader's was written after the takeover.
    assert!(
        server.requests().wait_for(mark, wait, |records| records
            .iter()
            .any(|r| r.is(Verb::Update, "leases") && r.fault.is_some())),
        "the stalled renewal is logged once dropped"
    );
    let stalled: Vec<RequestRecord> = server
        .requests()
        .since(mark)
        .into_iter()
        .filter(|r| r.is(Verb::Update, "leases") && r.fault.is_some())
        .collect();
    assert_eq!(stalled.len(), 1, "{stalled:?}");
    // Dropped before authentication (a stall is a fault, taken first): the log names no user.
    assert_eq!((stalled[0].user.as_deref(), stalled[0].code), (None, 0), "dropped");
    assert_eq!(
        writers_of(&server, mark, "leases", true),
        ["r1"],
        "after the stall, only r1's writes were accepted"
    );
    let l = lease(&server);
    assert_eq!(l.spec.holder_identity.as_deref(), Some("r1"));
    assert_eq!(l.spec.lease_transitions, Some(1), "taken over, not released");
    // r0's failure says why: the renewal was cut at its deadline.
    r0.stop();
    r1.stop();
    assert_eq!((r0.running_threads(), r1.running_threads()), (0, 0));
}

#[test]
fn stopping_a_leader_whose_renewal_hangs_interrupts_it_and_releases_the_lease() {
    // client-go's TestReleaseOnCancellation against the embedded server: stop arrives while the renewal hangs. The
    // renew deadline is long, so only the interrupt can end the renewal within stop's second.
    let server = server(1);
    let config = LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(60))
        .renew_deadline(Duration::from_secs(40))
        .retry_period(Duration::from_millis(100));
    let client = default_client(&server, 0);
    let (tx, rx) = crossbeam_channel::unbounded::<&str>();
    let (t1, t2) = (tx.clone(), tx);
    let elector = LeaderElector::start(
        LeaseLock::new(&client, "default", LEASE, "r0"),
        config,
        LeaderCallbacks::new()
            .on_started_leading(move || t1.send("started").unwrap())
            .on_stopped_leading(move || t2.send("stopped").unwrap()),
    )
    .unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "started");
    server.inject(Fault::on(Some(Verb::Update), Some("leases")).stall());
    eventually("the renewal to hang", || server.pending_faults() == 0);

    elector.stop();
    assert_eq!(
        elector.running_threads(),
        0,
        "joined: the hanging renewal was interrupted"
    );
    assert_eq!(rx.try_recv(), Ok("stopped"));
    let l = lease(&server);
    assert_eq!(l.spec.holder_identity.as_deref(), Some(""), "released");
    assert_eq!(l.spec.lease_duration_seconds, Some(1));
    server.clear_faults();
    // The caller's client is untouched by the interrupt.
    assert!(Api::<ConfigMap>::all(client).list(&Default::default()).is_ok());
}

#[test]
fn a_candidate_takes_a_released_lease_at_once_not_at_its_next_attempt() {
    // Attempts an hour apart: the candidate's next attempt is far beyond the test's bounded waits, so only its watch
    // of the Lease can make it lead after the release.
    let server = server(2);
    let config = LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(3 * 3600))
        .renew_deadline(Duration::from_secs(2 * 3600))
        .retry_period(Duration::from_secs(3600));
    let (tx, rx) = crossbeam_channel::unbounded::<String>();
    let start = |i: usize| {
        let (t1, id) = (tx.clone(), format!("r{i}"));
        let me = id.clone();
        LeaderElector::start(
            LeaseLock::new(&default_client(&server, i), "default", LEASE, id.clone()),
            config.clone().name(format!("{LEASE}-{id}")),
            LeaderCallbacks::new().on_started_leading(move || t1.send(format!("{me} started")).unwrap()),
        )
        .unwrap()
    };
    let r0 = start(0);
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "r0 started");
    let r1 = start(1);
    // r1 tried once, found the Lease held, and now watches it until its next attempt an hour or more away.
    assert!(server.wait_for_watchers("leases", 1, Duration::from_secs(30)));
    assert!(!r1.is_leader());

    r0.stop(); // releases the Lease
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(30)).unwrap(),
        "r1 started",
        "taken on the release, not a retry period later"
    );
    let l = lease(&server);
    assert_eq!(l.spec.holder_identity.as_deref(), Some("r1"));
    r1.stop();
    assert_eq!(r1.running_threads(), 0, "the watch ends with the elector");
}

#[test]
fn a_client_whose_rate_limit_is_spent_still_renews_its_lease() {
    // Two tokens a day, spent by the caller: the Lease's requests (a GET finding none, the CREATE) take theirs from a
    // bucket of their own with the same limit, so a controller flooding its client never keeps its leader from
    // renewing.
    let server = server(1);
    let config = Config::new(server.url())
        .proxy(None)
        .token("token-r0")
        .rate_limit(RateLimit::new(1.0 / 86_400.0, 2));
    let client = Client::new(config).unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for _ in 0..2 {
        configmaps.list(&Default::default()).unwrap(); // the day's tokens
    }
    let (tx, rx) = crossbeam_channel::unbounded::<()>();
    let elector = LeaderElector::start(
        LeaseLock::new(&client, "default", LEASE, "r0"),
        LeaderElectionConfig::default().name("spent"),
        LeaderCallbacks::new().on_started_leading(move || tx.send(()).unwrap()),
    )
    .unwrap();
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the elector leads although its client's bucket is empty");
    assert_eq!(lease(&server).spec.holder_identity.as_deref(), Some("r0"));
    elector.stop();
}
