//! Randomized convergence: thousands of creates, updates and deletes against the embedded API server, interleaved
//! with compactions, restarts, refused connections, cut and broken watches and error answers. At the end every
//! informer's store equals the server's state, and replaying each handler's events (checked on the way: see
//! `common/chaos_kit.rs`) gives the server's state too.
//!
//! The informers use both queues (`Fifo::Real` and `Fifo::Delta`), alternating; which informer gets which is
//! swapped from one seed to the next, so that runs cover both ways round at the cost of one.
//!
//! The run is seeded and prints its seed; `CONVERGENCE_SEED=<n>` replays the same schedule of writes and
//! disruptions (thread timing differs from run to run, so the interleaving does too). `CONVERGENCE_ROUNDS=<n>` runs
//! longer.

#[path = "common/chaos_kit.rs"]
mod chaos_kit;
mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use chaos_kit::{
    Behaviour, Expected, FILTERED, Replay, ReplayHandler, Rng, Writer, converge, converge_stores, diff, seed_from_env,
};
use common::WAIT;
use common::watchdog::{self, Watchdog};
use kube_informer::cache::{BackoffConfig, Fifo, ListWatch, ReflectorConfig};
use kube_informer::client::{Api, Client};
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::key_of;
use kube_informer_apiserver::{ApiServer, Fault, Verb};
use parking_lot::Mutex;
use std::sync::Arc;

const NAMESPACES: [&str; 3] = ["alpha", "beta", "gamma"];
const NAMES_PER_NAMESPACE: u64 = 40;

fn reflector(streaming_list: bool, page_size: u32) -> ReflectorConfig {
    ReflectorConfig {
        page_size,
        streaming_list,
        min_watch_timeout: Duration::from_secs(2),
        backoff: BackoffConfig {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(100),
            ..Default::default()
        },
        relist_jitter: Duration::from_millis(20),
        ..Default::default()
    }
}

/// A disruption between two batches of writes; returns its name for the tally.
fn disrupt(server: &ApiServer, rng: &mut Rng) -> &'static str {
    match rng.below(100) {
        0..=24 => "none",
        25..=39 => {
            server.inject(Fault::watch("configmaps").cut_after_events(rng.below(10) as usize));
            "cut watch after events"
        }
        40..=44 => {
            server.inject(Fault::watch("configmaps").cut_after_bytes(rng.below(3000) as usize));
            "cut watch after bytes"
        }
        45..=54 => {
            server.compact_to_latest();
            server.restart().unwrap();
            "compaction + restart (410 storm)"
        }
        55..=62 => {
            server.restart().unwrap();
            "restart"
        }
        63..=69 => {
            server
                .restart_refusing_for(Duration::from_millis(50 + rng.below(250)))
                .unwrap();
            "restart refusing connections"
        }
        70..=77 => {
            server.compact_to_latest();
            "compaction"
        }
        78..=82 => {
            server.inject(Fault::watch("configmaps").garbage_after_events(rng.below(5) as usize, b"\x00{]not json\n"));
            "garbage"
        }
        83..=87 => {
            server.inject(Fault::watch("configmaps").close_mid_object_after_events(rng.below(5) as usize));
            "object cut in half"
        }
        88..=93 => {
            let code = [410, 429, 500, 503][rng.below(4) as usize];
            server.inject(Fault::watch("configmaps").error(code).retry_after(0));
            "watch error answer"
        }
        _ => {
            let code = [410, 429, 500, 503][rng.below(4) as usize];
            server.inject(Fault::list("configmaps").error(code).retry_after(0));
            "list error answer"
        }
    }
}

#[test]
fn informers_and_handlers_converge_to_the_servers_state() {
    let seed = seed_from_env("CONVERGENCE_SEED");
    let rounds: u64 = std::env::var("CONVERGENCE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    // A round takes ~40 ms, and every wait is bounded: a run far past that is a hang.
    let _dog = Watchdog::start(
        "convergence",
        Duration::from_secs(600) + Duration::from_millis(200) * rounds as u32,
    );
    let mut rng = Rng::new(seed);
    let server = ApiServer::builder()
        .namespaces(NAMESPACES)
        .bookmark_interval(Duration::from_millis(100))
        .history_size(500)
        // Paged lists even at resourceVersion 0, so continue tokens meet compactions.
        .watch_cache(false)
        .compaction_interval(None)
        .start()
        .unwrap();
    let config = server
        .config()
        .unwrap()
        .watch_idle_limit(Duration::from_secs(1))
        .read_timeout(Some(Duration::from_secs(2)));
    let client = Client::new(config).unwrap();
    let api = Api::<ConfigMap>::all(client);

    // A streaming-list informer, a paged-list one (pages of 20, so continue tokens meet compactions), and one that
    // sees namespace `alpha` through the label selector `tier=a` (objects enter and leave it as they are relabelled);
    // their queues alternate, starting with the RealFIFO on even seeds and the DeltaFIFO on odd ones.
    let mut informers = Vec::new();
    let mut handlers: Vec<(String, usize, Arc<Mutex<Replay>>)> = Vec::new();
    let mut queues = Vec::new();
    for (i, (name, streaming, page)) in [("streaming", true, 500), ("paged", false, 20), (FILTERED, true, 500)]
        .into_iter()
        .enumerate()
    {
        let fifo = Fifo::ALL[(i + (seed % 2) as usize) % 2];
        queues.push(format!("{name}: {}", fifo.name()));
        let options = InformerOptions::default()
            .name(name)
            .fifo(fifo)
            .reflector(reflector(streaming, page));
        let inf = if name == FILTERED {
            let alpha = Api::<ConfigMap>::namespaced(api.client().clone(), "alpha");
            SharedIndexInformer::new(ListWatch::new(&alpha).labels("tier=a"), options)
        } else {
            SharedIndexInformer::for_api(&api, options)
        };
        let (h, r) = ReplayHandler::new(false, Behaviour::Fast);
        inf.add_event_handler(h).unwrap();
        handlers.push((format!("{name}/handler"), informers.len(), r));
        informers.push(inf);
    }
    // A handler joining late (after the first sync) on the streaming informer.
    let mut writer = Writer::new(&NAMESPACES, NAMES_PER_NAMESPACE);
    for _ in 0..200 {
        writer.step(&server, &mut rng);
    }
    watchdog::phase("starting the informers");
    for inf in &informers {
        inf.start().unwrap();
    }
    for inf in &informers {
        assert!(inf.wait_for_cache_sync(WAIT).is_ok(), "{} synced", inf.name());
    }
    let (late, late_replay) = ReplayHandler::new(false, Behaviour::Fast);
    informers[0].add_event_handler(late).unwrap();
    handlers.push(("streaming/late-handler".into(), 0, late_replay));

    let mut tally: BTreeMap<&str, u64> = BTreeMap::new();
    for round in 0..rounds {
        watchdog::phase(&format!("writes and disruptions, round {round}"));
        for _ in 0..(5 + rng.below(50)) {
            writer.step(&server, &mut rng);
        }
        *tally.entry(disrupt(&server, &mut rng)).or_default() += 1;
        if rng.chance(30) {
            // Let the informers catch up now and then, so disruptions also hit idle, up-to-date watches.
            let rev = server.revision();
            converge("catching up", WAIT, || {
                informers
                    .iter()
                    .find(|inf| inf.last_sync_resource_version().parse::<u64>().unwrap_or(0) < rev)
                    .map(|inf| format!("{} at {}", inf.name(), inf.last_sync_resource_version()))
            });
        }
    }
    // Quiesce: no more faults; the server listens.
    server.clear_faults();
    server.start_listening().unwrap();
    let everything = server.list::<ConfigMap>(None).unwrap();
    let expected = Expected::of(&everything);
    assert_eq!(
        expected.all.keys().cloned().collect::<Vec<_>>(),
        writer.objects.keys().cloned().collect::<Vec<_>>()
    );
    converge_stores(&informers, &expected);
    converge("the handlers' replayed states", Duration::from_secs(60), || {
        handlers.iter().find_map(|(name, i, r)| {
            let got = r.lock().state();
            let want = expected.for_informer(informers[*i].name());
            (got != *want).then(|| format!("{name}: {}", diff(want, &got)))
        })
    });
    for (name, _, r) in &handlers {
        let r = r.lock();
        assert!(r.violations().is_empty(), "{name}: {:#?}", r.violations());
    }
    let log = server.requests().records();
    let lists = log.iter().filter(|r| r.verb == Verb::List).count();
    let watches = log.iter().filter(|r| r.verb == Verb::Watch).count();
    let faults = log.iter().filter(|r| r.fault.is_some()).count();
    eprintln!(
        "convergence: seed {seed}, {} writes, {} objects at the end, {lists} lists, {watches} watches, {faults} \
         faults served; disruptions {tally:?}; queues {queues:?}",
        writer.ops,
        expected.all.len()
    );
    watchdog::phase("stopping the informers");
    for inf in &informers {
        eprintln!("  {}: {:?}", inf.name(), inf.metrics().reflector);
        inf.stop();
        assert_eq!(inf.running_threads(), 0);
    }
    // Keys are `namespace/name`, as the writer computed them.
    assert!(
        expected
            .all
            .keys()
            .all(|k| writer.objects.get(k).is_some_and(|o| key_of(o) == *k))
    );
}
