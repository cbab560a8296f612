//! Fenced writes, against the embedded API server: a reconcile stalled inside a write — the server holds the request
//! — while its replica's Lease renewals fail never has that write land after its term ended, for a sharded controller
//! and for a controller under a manager's leader election, with the default client ([`Context::client`]); the key is
//! then reconciled by the next owner. Each replica has its own user, so the server's request log says who wrote
//! what.
//!
//! Without fencing the stalled write would still be in flight when the next owner took over (the default client has
//! no overall timeout), and land once the server let it go.

mod common;

use std::sync::Arc;
use std::time::Duration;

use kube_informer::client::params::{Patch, PatchParams};
use kube_informer::client::{Api, Client, Config};
use kube_informer::controller::{Action, Context, Controller, ShardingConfig};
use kube_informer::informer::{FactoryOptions, SharedInformerFactory};
use kube_informer::leaderelection::LeaderElectionConfig;
use kube_informer::manager::{Manager, ManagerOptions};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, Resource};
use kube_informer_apiserver::{ApiServer, Fault, LogMark, Verb};

use common::eventually;

const WAIT: Duration = Duration::from_secs(30);

/// Lease 4 s, renew deadline 1 s, renewals every 200 ms: a term that stops renewing ends within a second, three
/// seconds before anyone may take over.
fn election() -> LeaderElectionConfig {
    LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(4))
        .renew_deadline(Duration::from_secs(1))
        .retry_period(Duration::from_millis(200))
}

/// Namespaces `work` (holding `work/target`, `round=1`) and `leases`; users `r0` and `r1`.
fn server() -> ApiServer {
    let server = ApiServer::builder()
        .namespaces(["work", "leases"])
        .token("token-r0", "r0")
        .token("token-r1", "r1")
        .start()
        .unwrap();
    server
        .create(&ConfigMap::new(ObjectMeta::namespaced("work", "target")).with("round", "1"))
        .unwrap();
    server
}

/// Replica `id`'s client: the default configuration (no overall request timeout).
fn client(server: &ApiServer, id: &str) -> Client {
    Client::new(Config::new(server.url()).proxy(None).token(format!("token-{id}"))).unwrap()
}

/// Writes `done=<round>` and `by=<replica>` once per round, through the context's client.
fn reconcile(_key: &str, ctx: &Context<'_, ConfigMap, String>) -> kube_informer::Result<Action> {
    let Some(cm) = ctx.object() else {
        return Ok(Action::await_change());
    };
    let round = cm.data.get("round").unwrap_or_default();
    if cm.data.get("done") == Some(round) {
        return Ok(Action::await_change());
    }
    let patch = serde_json::json!({"data": {"done": round, "by": ctx.data()}});
    Api::<ConfigMap>::namespaced(ctx.client()?, ctx.namespace()).patch(
        ctx.name(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )?;
    Ok(Action::await_change())
}

/// `(done, by)` of the target as stored.
fn written(server: &ApiServer) -> (String, String) {
    let cm = server.get::<ConfigMap>(Some("work"), "target").unwrap();
    let get = |k: &str| cm.data.get(k).unwrap_or_default().to_owned();
    (get("done"), get("by"))
}

/// Round 2 begins, and its write — r0's — is held by the server (until its client hangs up, or the faults are
/// cleared); then every Lease update fails — the renewals of slots, of memberships, of the leader's Lease — so that
/// the term the write was sent in, extended meanwhile by the renewals that still succeeded, runs out.
fn stall_the_next_write_then_fail_renewals(server: &ApiServer) -> LogMark {
    let mark = server.requests().mark();
    server.inject(Fault::on(Some(Verb::Patch), Some("configmaps")).stall());
    // The server's own API: no fault applies.
    server
        .patch_json(
            &ConfigMap::api_resource(),
            Some("work"),
            "target",
            &serde_json::json!({"data": {"round": "2"}}),
        )
        .unwrap();
    eventually("the server holds r0's write", || server.pending_faults() == 0);
    server.inject(
        Fault::on(Some(Verb::Update), Some("leases"))
            .error(500)
            .times(1_000_000),
    );
    mark
}

/// What became of the replicas' PATCHes of the target since `mark`: `(user, code)`, in order. Code 0: dropped —
/// then the user is unknown (a stall is a fault, taken before authentication).
fn patches(server: &ApiServer, mark: LogMark) -> Vec<(String, u16)> {
    server
        .requests()
        .since(mark)
        .into_iter()
        .filter(|r| r.is(Verb::Patch, "configmaps") && r.name.as_deref() == Some("target"))
        .map(|r| (r.user.unwrap_or_default(), r.code))
        .collect()
}

/// The stalled PATCH (r0's: nobody else writes then), dropped by the server when r0 hung up, never applied.
fn wait_for_the_stalled_write_dropped(server: &ApiServer, mark: LogMark) {
    assert!(
        server.requests().wait_for(mark, WAIT, |records| records
            .iter()
            .any(|r| r.is(Verb::Patch, "configmaps") && r.fault.is_some())),
        "the stalled write is logged once its client hung up: {:?}",
        patches(server, mark)
    );
    assert_eq!(patches(server, mark), [(String::new(), 0)]);
}

/// r0 is gone; the Leases can be written again: r1 takes over and reconciles round 2 — the only write that landed
/// since `mark`.
fn the_next_owner_writes(server: &ApiServer, mark: LogMark) {
    server.clear_faults();
    eventually("r1 reconciled round 2", || written(server) == ("2".into(), "r1".into()));
    assert_eq!(
        patches(server, mark),
        [(String::new(), 0), ("r1".to_owned(), 200)],
        "r0's write never landed"
    );
}

/// Each of `lines` starts a line of the registry's metrics.
fn assert_metrics(registry: &kube_informer::registry::Registry, lines: &[&str]) {
    let text = kube_informer::metrics::encode(registry);
    for line in lines {
        assert!(text.lines().any(|l| l.starts_with(line)), "{line} in {text}");
    }
}

/// A sharded replica over the target's namespace: one slot, so that the slot's owner owns the key.
fn sharded_replica(server: &ApiServer, id: &str) -> (Arc<Controller<ConfigMap, String>>, SharedInformerFactory) {
    let client = client(server, id);
    let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default().namespace("work"));
    let controller = Controller::builder(factory.informer::<ConfigMap>(), id.to_owned())
        .sharded(
            &client,
            ShardingConfig::new("leases", id)
                .name("fencing")
                .slots(1)
                .election(election()),
        )
        .build(reconcile)
        .unwrap();
    controller.start().unwrap();
    (Arc::new(controller), factory)
}

#[test]
fn a_sharded_reconcile_stalled_in_a_write_never_writes_after_its_slot_is_lost() {
    let server = server();
    let (r0, f0) = sharded_replica(&server, "r0");
    eventually("r0 owns the slot and reconciled round 1", || {
        written(&server) == ("1".into(), "r0".into())
    });
    let (r1, f1) = sharded_replica(&server, "r1");
    eventually("r1 sees r0", || r1.sharding_metrics().unwrap().members == 2);
    assert_eq!(
        r1.sharding_metrics().unwrap().owned,
        Vec::<u32>::new(),
        "r0 holds the slot"
    );

    // r0's reconcile of round 2 hangs inside its write; r0's renewals fail, so its slot's term runs out.
    let mark = stall_the_next_write_then_fail_renewals(&server);
    eventually("r0's write is refused by fencing", || {
        let m = r0.metrics();
        m.fenced_writes == 1 && m.ownership_lost == 1
    });
    wait_for_the_stalled_write_dropped(&server, mark);
    let m = r0.metrics();
    assert_eq!((m.errors, m.panics), (0, 0), "an ownership lost is no error: {m:?}");
    assert_eq!(r0.sharding_metrics().unwrap().owned, Vec::<u32>::new());
    let registry = kube_informer::registry::Registry::new();
    registry.add_controller(&r0);
    assert_metrics(
        &registry,
        &[
            &format!(
                "kube_informer_controller_fenced_writes_total{{controller=\"{}\"}} 1",
                r0.name()
            ),
            &format!(
                "kube_informer_controller_ownership_lost_total{{controller=\"{}\"}} 1",
                r0.name()
            ),
        ],
    );

    // r0 stays away (its renewals would fail on); the Leases can be written again: r1 takes the slot over.
    r0.stop();
    f0.shutdown();
    the_next_owner_writes(&server, mark);
    let sharding = r1.sharding_metrics().unwrap();
    assert_eq!(sharding.owned, [0]);
    let outage = sharding.handovers[&0];
    assert!(
        outage >= election().lease_duration && sharding.last_handover == Some(outage),
        "the hand-over counts the wait for r0's Lease to expire: {outage:?}"
    );
    let registry = kube_informer::registry::Registry::new();
    registry.add_controller(&r1);
    assert_metrics(
        &registry,
        &[
            &format!(
                "kube_informer_shard_last_handover_seconds{{controller=\"{}\"}} ",
                r1.name()
            ),
            &format!(
                "kube_informer_shard_handover_seconds{{controller=\"{}\",slot=\"0\"}} ",
                r1.name()
            ),
        ],
    );
    r1.stop();
    f1.shutdown();
}

/// A manager of one controller of the target's namespace, leading through the Lease `leases/fencing` as `id`.
fn elected_replica(server: &ApiServer, id: &str) -> (Arc<Manager>, Arc<Controller<ConfigMap, String>>) {
    let options = ManagerOptions::default()
        .handle_signals(false)
        .factory(FactoryOptions::default().namespace("work"))
        .leader_election("leases", "fencing")
        .identity(id)
        .leader_election_config(election());
    let manager = Arc::new(Manager::new(client(server, id), options).unwrap());
    let controller = Controller::builder(manager.factory().informer::<ConfigMap>(), id.to_owned())
        .build(reconcile)
        .unwrap();
    let controller = manager.add_controller(controller).unwrap();
    manager.start().unwrap();
    (manager, controller)
}

#[test]
fn a_leaders_reconcile_stalled_in_a_write_never_writes_after_its_leadership_is_lost() {
    let server = server();
    let (m0, c0) = elected_replica(&server, "r0");
    eventually("r0 leads and reconciled round 1", || {
        m0.is_leader() && written(&server) == ("1".into(), "r0".into())
    });
    let (m1, c1) = elected_replica(&server, "r1");
    eventually("r1 follows r0", || c1.metrics().terms == 0 && !m1.is_leader());

    let mark = stall_the_next_write_then_fail_renewals(&server);
    eventually("r0's write is refused by fencing", || {
        let m = c0.metrics();
        m.fenced_writes == 1 && m.ownership_lost == 1
    });
    wait_for_the_stalled_write_dropped(&server, mark);
    assert!(!m0.is_leader());
    assert_eq!(c0.metrics().errors, 0, "an ownership lost is no error");
    assert_metrics(
        m0.registry(),
        &[&format!(
            "kube_informer_controller_fenced_writes_total{{controller=\"{}\"}} 1",
            c0.name()
        )],
    );

    // r0 leaves the election; r1 takes the Lease over once it expired and reconciles the key.
    m0.shutdown();
    the_next_owner_writes(&server, mark);
    let outage = m1.last_handover().expect("measured by r1's first reconcile");
    assert!(
        outage >= election().lease_duration,
        "the hand-over counts the wait for r0's Lease to expire: {outage:?}"
    );
    assert_metrics(
        m1.registry(),
        &[&format!(
            "kube_informer_leader_election_last_handover_seconds{{name=\"leases/fencing\"}} {}",
            outage.as_secs_f64()
        )],
    );
    m1.shutdown();
}
