//! Herd control: eight informers of one factory (eight resources) hit at once by a 410 storm (compaction, every watch
//! cut) and by a restart that refuses connections for a while. Their relists must not come in lockstep: never more
//! than the factory's relist budget at once.
//!
//! How the server's log shows it: every LIST is held by the server for `HOLD` before it is answered (a stall fault),
//! and a reflector keeps its budget permit from before it sends a LIST until it has read the answer. So if the
//! budget is respected, no `limit + 1` LISTs can *arrive* within any window shorter than `HOLD`: at the arrival of
//! the last of them, all would still hold a permit. The log records each request's arrival time. A control run with
//! a budget as large as the herd shows that the same check does see lockstep when there is no budget.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::WAIT;
use kube_informer::cache::{BackoffConfig, ReflectorConfig};
use kube_informer::informer::{FactoryOptions, SharedIndexInformer, SharedInformerFactory};
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer_apiserver::{ApiServer, Fault, LogMark, ResourceSpec, Verb};

/// How long the server holds every LIST of the storm.
const HOLD: Duration = Duration::from_millis(600);
const BUDGET: usize = 2;

/// Eight kinds, each informed by its own informer (the embedded server serves every built-in kind).
const KINDS: [&str; 8] = [
    "configmaps",
    "secrets",
    "events",
    "pods",
    "nodes",
    "services",
    "leases",
    "deployments",
];

fn resources() -> Vec<ApiResource> {
    let all: Vec<ApiResource> = ResourceSpec::defaults()
        .iter()
        .map(|s| s.api_resource().clone())
        .filter(|r| KINDS.contains(&r.plural.as_str()) && r.group != "events.k8s.io")
        .collect();
    assert_eq!(all.len(), KINDS.len(), "{all:?}");
    all
}

fn write_one_of_each(server: &ApiServer, round: usize) {
    for r in resources() {
        let ns = r.namespaced.then_some("herd");
        server
            .create_json(
                &r,
                ns,
                serde_json::json!({"metadata": {"name": format!("obj-{round}")}}),
            )
            .unwrap();
    }
}

struct Herd {
    server: ApiServer,
    factory: SharedInformerFactory,
    informers: Vec<Arc<SharedIndexInformer<DynamicObject>>>,
}

fn herd(max_concurrent_lists: usize) -> Herd {
    let server = ApiServer::builder()
        .namespaces(["herd"])
        .compaction_interval(None)
        .start()
        .unwrap();
    write_one_of_each(&server, 0);
    let reflector = ReflectorConfig {
        streaming_list: false,
        relist_jitter: Duration::from_millis(200),
        backoff: BackoffConfig {
            initial: Duration::from_millis(200),
            max: Duration::from_secs(1),
            ..Default::default()
        },
        ..Default::default()
    };
    let client =
        kube_informer::client::Client::new(server.config().unwrap().connect_timeout(Duration::from_secs(1))).unwrap();
    let factory = SharedInformerFactory::new(
        client,
        FactoryOptions::default()
            .reflector(reflector)
            .max_concurrent_lists(max_concurrent_lists),
    );
    let informers: Vec<_> = resources()
        .iter()
        .map(|r| factory.informer_for::<DynamicObject>(r))
        .collect();
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    for r in resources() {
        assert!(server.wait_for_watchers(&r.plural, 1, WAIT), "{} watched", r.plural);
    }
    Herd {
        server,
        factory,
        informers,
    }
}

impl Herd {
    /// Waits until every informer has relisted (`relists_gone` above `before`) and holds the server's state.
    fn wait_relisted(&self, before: &[u64]) {
        for (inf, b) in self.informers.iter().zip(before) {
            common::eventually(&format!("{} relisted", inf.name()), || {
                inf.metrics().reflector.relists_gone > *b
            });
        }
        for (inf, r) in self.informers.iter().zip(resources()) {
            let want = self.server.list_json(&r, None).unwrap().len();
            common::eventually(&format!("{} caught up", inf.name()), || inf.lister().len() == want);
        }
    }

    fn relists_gone(&self) -> Vec<u64> {
        self.informers
            .iter()
            .map(|i| i.metrics().reflector.relists_gone)
            .collect()
    }

    /// The arrival times of the LISTs since `mark`.
    fn list_arrivals(&self, mark: LogMark) -> Vec<SystemTime> {
        let mut t: Vec<SystemTime> = self
            .server
            .requests()
            .since(mark)
            .into_iter()
            .filter(|r| r.verb == Verb::List)
            .map(|r| r.time)
            .collect();
        t.sort();
        t
    }
}

/// The most LISTs that arrived within any window shorter than `HOLD` (printed with the spread).
fn most_within_hold(arrivals: &[SystemTime]) -> usize {
    let spread = match (arrivals.first(), arrivals.last()) {
        (Some(a), Some(b)) => b.duration_since(*a).unwrap_or_default(),
        _ => Duration::ZERO,
    };
    let mut most = 0;
    for (i, start) in arrivals.iter().enumerate() {
        let n = arrivals[i..]
            .iter()
            .take_while(|t| t.duration_since(*start).unwrap_or_default() < HOLD)
            .count();
        most = most.max(n);
    }
    eprintln!(
        "{} LISTs over {spread:.2?}; at most {most} within {HOLD:?}",
        arrivals.len()
    );
    most
}

/// Cuts every watch, moves history on and compacts it, and listens again at once: each informer re-watches from a
/// compacted resourceVersion, gets 410, and relists — all at the same moment. Returns the LIST arrival times.
fn storm(h: &Herd) -> Vec<SystemTime> {
    let before = h.relists_gone();
    let mark = h.server.requests().mark();
    h.server
        .inject(Fault::on(Some(Verb::List), None).stall().lasting(HOLD).times(1000));
    h.server.stop_listening();
    write_one_of_each(&h.server, 1);
    h.server.compact_to_latest();
    h.server.start_listening().unwrap();
    h.wait_relisted(&before);
    h.server.clear_faults();
    h.list_arrivals(mark)
}

#[test]
fn a_410_storm_relists_within_the_budget() {
    let h = herd(BUDGET);
    let arrivals = storm(&h);
    assert!(arrivals.len() >= 8, "every informer relisted: {arrivals:?}");
    let most = most_within_hold(&arrivals);
    assert!(
        most <= BUDGET,
        "{most} LISTs arrived within {HOLD:?} (budget {BUDGET}): {arrivals:?}"
    );
    // A reflector gives its permit back just after the list it held it for has reached the store, which is what
    // `storm` waited for: the permit may still be on its way back.
    common::eventually("every relist permit returned", || {
        h.factory.relist_budget().in_use() == 0
    });
    h.factory.shutdown();
}

#[test]
fn a_restart_refusing_connections_relists_within_the_budget() {
    let h = herd(BUDGET);
    let before = h.relists_gone();
    let mark = h.server.requests().mark();
    h.server
        .inject(Fault::on(Some(Verb::List), None).stall().lasting(HOLD).times(1000));
    // Down for a second; meanwhile history moves on and is compacted, so every informer that comes back finds its
    // resourceVersion gone.
    h.server.restart_refusing_for(Duration::from_secs(1)).unwrap();
    write_one_of_each(&h.server, 1);
    h.server.compact_to_latest();
    h.wait_relisted(&before);
    h.server.clear_faults();
    let arrivals = h.list_arrivals(mark);
    let most = most_within_hold(&arrivals);
    assert!(
        most <= BUDGET,
        "{most} LISTs arrived within {HOLD:?} (budget {BUDGET}): {arrivals:?}"
    );
    h.factory.shutdown();
}

#[test]
fn without_a_budget_the_same_storm_relists_in_lockstep() {
    // The control: the check above does see a herd. Relists are jittered over 200 ms and re-watches over the first
    // back-off step (200 ms), well within the 600 ms every LIST is held: all eight overlap.
    let h = herd(8);
    let arrivals = storm(&h);
    let most = most_within_hold(&arrivals);
    assert!(
        most > BUDGET,
        "expected overlapping relists without a budget: {arrivals:?}"
    );
    h.factory.shutdown();
}
