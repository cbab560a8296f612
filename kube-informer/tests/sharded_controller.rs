//! A sharded controller (`ControllerBuilder::sharded`): replicas in one process, each with its own client,
//! factory and identity, share the objects through slot Leases. Every object is reconciled, never by two replicas
//! at once (a recorder of the reconciles running per key fails on any overlap), through a replica stopped and one
//! added; with the `ShardedListAndWatch` gate on (the server filters) and off (each informer filters itself). The
//! same controller as separate processes, one killed with SIGKILL, is in `tests/examples.rs`.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::cache::Fifo;
use kube_informer::client::params::{Patch, PatchParams};
use kube_informer::client::{Api, Client};
use kube_informer::controller::{Action, Context, Controller, ControllerOptions, ShardingConfig};
use kube_informer::informer::{FactoryOptions, SharedInformerFactory};
use kube_informer::leaderelection::LeaderElectionConfig;
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{MetaAccessor, Object, ObjectMeta};
use kube_informer_apiserver::ApiServer;
use parking_lot::Mutex;

const OBJECTS: usize = 400;
const SLOTS: u32 = 16;

/// What every replica's reconciles write down.
#[derive(Default)]
struct Recorder {
    /// Key → the replica reconciling it now.
    running: Mutex<HashMap<String, String>>,
    /// Reconciles that began while another replica's reconcile of the same key ran.
    overlaps: Mutex<Vec<String>>,
    /// Key → the last `round` value reconciled, and by whom.
    reconciled: Mutex<HashMap<String, (String, String)>>,
    /// Key of a deleted object → the replicas that reconciled it gone.
    gone: Mutex<HashMap<String, Vec<String>>>,
}

struct Data {
    replica: String,
    recorder: Arc<Recorder>,
}

fn reconcile(key: &str, ctx: &Context<'_, ConfigMap, Data>) -> kube_informer::Result<Action> {
    let data = ctx.data();
    let Some(cm) = ctx.object() else {
        data.recorder
            .gone
            .lock()
            .entry(key.to_owned())
            .or_default()
            .push(data.replica.clone());
        return Ok(Action::await_change());
    };
    if let Some(other) = data
        .recorder
        .running
        .lock()
        .insert(key.to_owned(), data.replica.clone())
    {
        data.recorder
            .overlaps
            .lock()
            .push(format!("{key}: {} began while {other} ran", data.replica));
    }
    // The work: a millisecond with the key held, so that an overlap has room to show.
    std::thread::sleep(Duration::from_millis(1));
    let round = cm.data.get("round").map(str::to_owned).unwrap_or_default();
    data.recorder
        .reconciled
        .lock()
        .insert(key.to_owned(), (round, data.replica.clone()));
    data.recorder.running.lock().remove(key);
    Ok(Action::await_change())
}

/// Short terms, so that hand-overs take seconds: lease 2 s, renew deadline 1.5 s, retries every 200 ms.
fn fast_election() -> LeaderElectionConfig {
    LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_millis(1500))
        .retry_period(Duration::from_millis(200))
}

struct Replica {
    controller: Arc<Controller<ConfigMap, Data>>,
    factory: SharedInformerFactory,
}

impl Replica {
    fn start(server: &ApiServer, id: &str, recorder: &Arc<Recorder>, fifo: Fifo) -> Replica {
        let client = server.client().unwrap();
        let options = FactoryOptions::default().namespace("work").fifo(fifo);
        let factory = SharedInformerFactory::new(client.clone(), options);
        let controller = Controller::builder(
            factory.informer::<ConfigMap>(),
            Data {
                replica: id.to_owned(),
                recorder: recorder.clone(),
            },
        )
        .sharded(
            &client,
            // The Leases are named after the controller, made a valid object name (`configmaps/work` has a `/`).
            ShardingConfig::new("leases", id).slots(SLOTS).election(fast_election()),
        )
        .options(ControllerOptions::default().workers(3))
        .build(reconcile)
        .unwrap();
        controller.start().unwrap();
        Replica {
            controller: Arc::new(controller),
            factory,
        }
    }

    fn owned(&self) -> Vec<u32> {
        self.controller.sharding_metrics().unwrap().owned
    }

    fn stop(self) {
        self.controller.stop();
        self.factory.shutdown();
    }
}

/// Polls `check` until it says nothing is wrong; at the deadline, fails with what it last said.
fn converge(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<String>) {
    let deadline = Instant::now() + timeout;
    loop {
        let Some(problem) = check() else { return };
        assert!(Instant::now() < deadline, "{what} did not happen: {problem}");
        // A condition polled; the sleep keeps the poll off the CPU the replicas need.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every slot is owned by exactly one of `replicas`, and each owns its share (⌊S/n⌋ or ⌈S/n⌉).
fn balanced(replicas: &BTreeMap<String, Replica>) -> Option<String> {
    let mut owners: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for (id, r) in replicas {
        for slot in r.owned() {
            owners.entry(slot).or_default().push(id);
        }
    }
    let twice: Vec<_> = owners.iter().filter(|(_, o)| o.len() > 1).collect();
    assert!(twice.is_empty(), "slots owned twice: {twice:?}");
    let n = u32::try_from(replicas.len()).unwrap();
    let shares: Vec<(String, usize)> = replicas.iter().map(|(id, r)| (id.clone(), r.owned().len())).collect();
    let fair = |c: usize| {
        let c = u32::try_from(c).unwrap();
        c == SLOTS / n || c == SLOTS.div_ceil(n)
    };
    if owners.len() != SLOTS as usize || !shares.iter().all(|(_, c)| fair(*c)) {
        return Some(format!("{} of {SLOTS} slots owned; shares {shares:?}", owners.len()));
    }
    None
}

/// Sets `round` on every object, then waits until each was reconciled at that round.
fn touch_all_and_await(api: &Api<ConfigMap>, recorder: &Recorder, round: &str) -> BTreeSet<String> {
    for i in 0..OBJECTS {
        let patch = serde_json::json!({"data": {"round": round}});
        api.patch(&format!("cm-{i}"), &PatchParams::default(), &Patch::Merge(&patch))
            .unwrap();
    }
    converge(
        &format!("every object reconciled at round {round}"),
        Duration::from_secs(60),
        || {
            let reconciled = recorder.reconciled.lock();
            let behind = (0..OBJECTS)
                .filter(|i| reconciled.get(&format!("work/cm-{i}")).is_none_or(|(r, _)| r != round))
                .count();
            (behind > 0).then(|| format!("{behind} objects not reconciled at round {round}"))
        },
    );
    let reconciled = recorder.reconciled.lock();
    reconciled.values().map(|(_, by)| by.clone()).collect()
}

/// With the gate on, the replicas' informers use the default RealFIFO; with it off, DeltaFIFOs: both queues follow
/// a changing shard.
fn replicas_share_the_objects(gate: bool) {
    let fifo = if gate { Fifo::Real } else { Fifo::Delta };
    let server = common::sharded_server(gate, OBJECTS);
    let recorder = Arc::new(Recorder::default());
    // Changes all along, hand-overs included: keys are queued on every replica that caches them at that moment.
    let churning = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let churn = {
        let (api, churning) = (
            Api::<ConfigMap>::namespaced(server.client().unwrap(), "work"),
            churning.clone(),
        );
        std::thread::spawn(move || {
            let mut n = 0usize;
            while churning.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let patch = serde_json::json!({"data": {"churn": n.to_string()}});
                api.patch(
                    &format!("cm-{}", (n * 7919) % OBJECTS),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .unwrap();
            }
            n
        })
    };
    let mut replicas = BTreeMap::new();
    for id in ["r0", "r1", "r2"] {
        replicas.insert(id.to_owned(), Replica::start(&server, id, &recorder, fifo));
    }
    converge("three replicas share the slots", Duration::from_secs(60), || {
        balanced(&replicas)
    });
    let api = Api::<ConfigMap>::namespaced(server.client().unwrap(), "work");
    let workers = touch_all_and_await(&api, &recorder, "1");
    assert_eq!(workers.len(), 3, "every replica reconciled some objects: {workers:?}");

    // The registry's metrics say what each replica owns, and how many objects per slot.
    let registry = kube_informer::registry::Registry::new();
    registry.add_controller(&replicas["r0"].controller);
    let text = kube_informer::metrics::encode(&registry);
    let owned = replicas["r0"].owned().len();
    let name = replicas["r0"].controller.name().to_owned();
    for line in [
        format!("kube_informer_shard_slots_owned{{controller=\"{name}\"}} {owned}"),
        format!("kube_informer_shard_members{{controller=\"{name}\"}} 3"),
        format!("kube_informer_shard_objects{{controller=\"{name}\",slot="),
        format!("kube_informer_shard_cached_objects{{controller=\"{name}\"}} "),
    ] {
        assert!(text.contains(&line), "{line} in {text}");
    }
    assert!(replicas["r0"].controller.health().is_healthy());

    // Each cache holds its slots' objects, and no other, once balanced (the server filtered, or the reflector).
    for r in replicas.values() {
        let metrics = r.controller.sharding_metrics().unwrap();
        let cached: usize = metrics.objects_per_slot.values().sum();
        assert!(
            cached > 0 && cached < OBJECTS,
            "{}: {cached} objects cached",
            metrics.identity
        );
    }
    let total: usize = replicas
        .values()
        .map(|r| {
            r.controller
                .sharding_metrics()
                .unwrap()
                .objects_per_slot
                .values()
                .sum::<usize>()
        })
        .sum();
    assert_eq!(total, OBJECTS, "the replicas' caches partition the objects");
    // The cache's size beside the per-slot counts: once every narrowing is through, a cache holds its slots'
    // objects and nothing else, and says so.
    converge(
        "each cache holds only its slots' objects",
        Duration::from_secs(60),
        || {
            replicas.values().find_map(|r| {
                let m = r.controller.sharding_metrics().unwrap();
                let per_slot: usize = m.objects_per_slot.values().sum();
                (m.cached_objects != per_slot)
                    .then(|| format!("{}: {} cached, {per_slot} in its slots", m.identity, m.cached_objects))
            })
        },
    );
    let cached = replicas["r0"].controller.sharding_metrics().unwrap().cached_objects;
    assert!(cached > 0 && cached < OBJECTS, "r0 caches {cached} objects");
    let text = kube_informer::metrics::encode(&registry);
    let prefix = format!("kube_informer_shard_cached_objects{{controller=\"{name}\"}} ");
    let exposed = text
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str())?.parse::<f64>().ok());
    assert_eq!(exposed, Some(cached as f64), "r0's cache size in {text}");

    // A deleted object's key is reconciled once, by the replica whose slot held it.
    let gone: Vec<String> = (0..10).map(|i| format!("cm-{}", OBJECTS + i)).collect();
    for name in &gone {
        server
            .create(&ConfigMap::new(ObjectMeta::namespaced("work", name.as_str())).with("round", "0"))
            .unwrap();
    }
    converge("the new objects reconciled", Duration::from_secs(60), || {
        let reconciled = recorder.reconciled.lock();
        let missing = gone
            .iter()
            .filter(|n| !reconciled.contains_key(&format!("work/{n}")))
            .count();
        (missing > 0).then(|| format!("{missing} not reconciled"))
    });
    for name in &gone {
        api.delete(name, &Default::default()).unwrap();
    }
    converge("the deleted objects' keys reconciled", Duration::from_secs(60), || {
        let seen = recorder.gone.lock();
        let missing = gone.iter().filter(|n| !seen.contains_key(&format!("work/{n}"))).count();
        (missing > 0).then(|| format!("{missing} deletions not reconciled"))
    });

    // One stops gracefully: its slots are released at once and taken by the others.
    replicas.remove("r1").unwrap().stop();
    converge("two replicas share the slots", Duration::from_secs(60), || {
        balanced(&replicas)
    });
    touch_all_and_await(&api, &recorder, "2");

    // Two join: the others give up their surplus, after finishing its keys.
    for id in ["r3", "r4"] {
        replicas.insert(id.to_owned(), Replica::start(&server, id, &recorder, fifo));
    }
    converge("four replicas share the slots", Duration::from_secs(60), || {
        balanced(&replicas)
    });
    let workers = touch_all_and_await(&api, &recorder, "3");
    assert!(workers.contains("r3") && workers.contains("r4"), "{workers:?}");
    let rebalanced: u64 = replicas
        .values()
        .map(|r| r.controller.sharding_metrics().unwrap().rebalanced)
        .sum();
    assert!(rebalanced > 0, "slots were handed over to the new replicas");

    // Each deletion was reconciled by one replica, once (none of the others took the key for theirs).
    for (key, by) in recorder
        .gone
        .lock()
        .iter()
        .filter(|(k, _)| gone.iter().any(|n| **k == format!("work/{n}")))
    {
        assert_eq!(by.len(), 1, "{key} reconciled gone by {by:?}");
    }
    churning.store(false, std::sync::atomic::Ordering::Relaxed);
    let changes = churn.join().unwrap();
    assert!(changes > 0);
    let overlaps = recorder.overlaps.lock().clone();
    assert!(
        overlaps.is_empty(),
        "keys reconciled by two replicas at once: {overlaps:?}"
    );
    let mut unreleased = BTreeMap::new();
    for (id, r) in replicas {
        let controller = r.controller.clone();
        r.stop();
        unreleased.insert(id, controller.sharding_metrics().unwrap().unreleased);
    }
    // Every slot was released: none is held now, but those a replica reports it could not release within its stop
    // budget (on a machine too loaded to answer in time), which expire on their own.
    let mut held: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (holder, slot) in slot_holders(&server) {
        held.entry(holder).or_default().push(slot);
    }
    for (holder, slots) in &held {
        let reported = unreleased.get(holder).copied().unwrap_or(0);
        assert!(
            slots.len() as u64 <= reported,
            "slot Leases still held by {holder} after every replica stopped: {slots:?} ({reported} reported \
             unreleased)"
        );
    }
}

/// The slot Leases held now: (holder, slot Lease).
fn slot_holders(server: &ApiServer) -> Vec<(String, String)> {
    let leases = Api::<kube_informer::leaderelection::Lease>::namespaced(server.client().unwrap(), "leases")
        .list_all(&Default::default())
        .unwrap();
    leases
        .items
        .iter()
        .filter_map(|l| {
            let name = l.meta().name().filter(|n| n.contains("-slot-"))?;
            let holder = l.spec.holder_identity.as_deref().filter(|h| !h.is_empty())?;
            Some((holder.to_owned(), name.to_owned()))
        })
        .collect()
}

#[test]
fn replicas_share_the_objects_with_the_server_filtering() {
    replicas_share_the_objects(true);
}

#[test]
fn replicas_share_the_objects_filtering_themselves_on_a_server_without_the_gate() {
    replicas_share_the_objects(false);
}

#[test]
fn a_sharded_controllers_informer_must_not_be_started_before_it() {
    let server = ApiServer::builder().namespaces(["work"]).start().unwrap();
    let client: Client = server.client().unwrap();
    let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default());
    let informer = factory.informer::<ConfigMap>();
    informer.start().unwrap();
    let err = Controller::builder(informer, ())
        .sharded(&client, ShardingConfig::new("work", "r0"))
        .build(|_, _| Ok::<_, kube_informer::Error>(Action::await_change()))
        .unwrap_err();
    assert!(err.to_string().contains("must not be started"), "{err}");
    let err = Controller::builder(factory.informer::<ConfigMap>(), ())
        .sharded(&client, ShardingConfig::new("work", "r0").slots(0))
        .build(|_, _| Ok::<_, kube_informer::Error>(Action::await_change()))
        .unwrap_err();
    assert!(err.to_string().contains("slots"), "{err}");
    factory.shutdown();
}

#[test]
fn a_manager_with_leader_election_refuses_a_sharded_controller() {
    use kube_informer::manager::{Manager, ManagerOptions};
    let server = ApiServer::builder().namespaces(["work"]).start().unwrap();
    let client = server.client().unwrap();
    let manager = Manager::new(client.clone(), ManagerOptions::default().leader_election("work", "cms")).unwrap();
    let controller = Controller::builder(manager.factory().informer::<ConfigMap>(), ())
        .sharded(&client, ShardingConfig::new("work", "r0"))
        .build(|_, _| Ok::<_, kube_informer::Error>(Action::await_change()))
        .unwrap();
    let err = manager.add_controller(controller).unwrap_err();
    assert!(err.to_string().contains("sharded"), "{err}");
}

/// A server, and one replica on it that owns every slot.
fn one_replica_owning_every_slot() -> (ApiServer, Replica) {
    let server = ApiServer::builder().namespaces(["work", "leases"]).start().unwrap();
    let recorder = Arc::new(Recorder::default());
    let replica = Replica::start(&server, "r0", &recorder, Fifo::default());
    converge("the only replica owns every slot", Duration::from_secs(30), || {
        let owned = replica.owned().len();
        (owned != SLOTS as usize).then(|| format!("{owned} slots owned"))
    });
    (server, replica)
}

#[test]
fn a_replica_that_cannot_release_its_slots_at_stop_counts_them_unreleased() {
    use kube_informer_apiserver::{Fault, Verb};
    let (server, replica) = one_replica_owning_every_slot();
    assert_eq!(replica.controller.sharding_metrics().unwrap().unreleased, 0);
    // Reads of a Lease fail from now on: renewals (which write on the version they last wrote) go on, but each
    // release, which reads its Lease first, fails.
    server.inject(Fault::on(Some(Verb::Get), Some("leases")).error(500).times(u32::MAX));
    let controller = replica.controller.clone();
    replica.stop();
    let metrics = controller.sharding_metrics().unwrap();
    assert_eq!(metrics.unreleased, u64::from(SLOTS), "{metrics:?}");
    server.clear_faults();
    assert_eq!(
        slot_holders(&server).len(),
        SLOTS as usize,
        "the Leases expire on their own"
    );
    let registry = kube_informer::registry::Registry::new();
    registry.add_controller(&controller);
    let text = kube_informer::metrics::encode(&registry);
    let line = format!(
        "kube_informer_shard_unreleased_total{{controller=\"{}\"}} {SLOTS}",
        controller.name()
    );
    assert!(text.contains(&line), "{line} in {text}");
}

#[test]
fn a_replica_that_cannot_renew_its_slots_reports_it_loses_them_and_takes_them_again_once_it_can() {
    use kube_informer_apiserver::{Fault, Verb};
    let (server, replica) = one_replica_owning_every_slot();
    assert!(replica.controller.health().is_healthy());
    // Every Lease update fails from now on: renewals, and the membership's.
    server.inject(Fault::on(Some(Verb::Update), Some("leases")).error(500).times(u32::MAX));
    converge("degraded health", Duration::from_secs(30), || {
        let health = replica.controller.health();
        (!health.to_string().contains("sharding")).then(|| format!("health: {health}"))
    });
    converge("the slots lost at the renew deadline", Duration::from_secs(30), || {
        let m = replica.controller.sharding_metrics().unwrap();
        (!m.owned.is_empty()).then(|| format!("{} slots still owned", m.owned.len()))
    });
    assert!(replica.controller.sharding_metrics().unwrap().lost > 0);
    server.clear_faults();
    converge("the slots taken again", Duration::from_secs(30), || {
        let owned = replica.owned().len();
        (owned != SLOTS as usize).then(|| format!("{owned} slots owned"))
    });
    converge("healthy again", Duration::from_secs(30), || {
        let health = replica.controller.health();
        (!health.is_healthy()).then(|| format!("health: {health}"))
    });
    replica.stop();
}
