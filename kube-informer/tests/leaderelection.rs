//! Leader election against the embedded API server: replicas of a controller, each with its own user, so that the
//! server's request log tells who wrote what.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use kube_informer::Result;
use kube_informer::cache::ListWatch;
use kube_informer::client::params::PostParams;
use kube_informer::client::{Api, Client, Config};
use kube_informer::controller::{Action, Context, Controller, ControllerOptions};
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, Lease, LeaseLock};
use kube_informer::object::ObjectMeta;
use kube_informer::object::core::ConfigMap;
use kube_informer_apiserver::{ApiServer, LogMark, RequestRecord, Verb};

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
        let client = Client::new(
            Config::new(server.url())
                .proxy(None)
                .token(format!("token-r{i}"))
                .request_timeout(Some(Duration::from_millis(500))),
        )
        .unwrap();
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
