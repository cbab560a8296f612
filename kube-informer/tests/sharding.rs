//! Sharded informers (KEP-5866): an informer given a shard caches that shard alone, whether the API server filters
//! (`ShardedListAndWatch` on: the list answers `shardInfo`, nothing crosses the network in vain) or not (gate off:
//! the reflector drops other shards' objects before the cache and says so in its metrics) — with a paged list or a
//! streaming list, through live creates, updates and deletes.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::*;
use kube_informer::cache::{DeletedObject, ReflectorConfig};
use kube_informer::informer::{
    FactoryOptions, InformerOptions, ResourceEventHandler, SharedIndexInformer, SharedInformerFactory,
};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{MetaAccessor, Object, Resource};
use kube_informer::selector::{ShardField, ShardSelector};
use kube_informer_apiserver::ApiServer;
use parking_lot::Mutex;

fn half(i: u32) -> ShardSelector {
    ShardSelector::split(ShardField::Uid, 2, i).unwrap()
}

/// Records the names of every object a handler was told about, and any outside the shard.
#[derive(Clone)]
struct Seen {
    shard: ShardSelector,
    names: Arc<Mutex<BTreeSet<String>>>,
    strays: Arc<Mutex<Vec<String>>>,
}

impl Seen {
    fn note(&self, cm: &ConfigMap) {
        let name = cm.meta().name().unwrap_or("").to_owned();
        if !self.shard.matches(cm.meta()) {
            self.strays.lock().push(name.clone());
        }
        self.names.lock().insert(name);
    }
}

impl ResourceEventHandler<ConfigMap> for Seen {
    fn on_add(&mut self, obj: &Arc<ConfigMap>, _: bool) {
        self.note(obj);
    }
    fn on_update(&mut self, _: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.note(new);
    }
    fn on_delete(&mut self, obj: &DeletedObject<ConfigMap>) {
        self.note(obj.object());
    }
}

/// Names in the server's namespace `s`, by shard.
fn server_names(server: &ApiServer, shard: &ShardSelector) -> BTreeSet<String> {
    server
        .list::<ConfigMap>(Some("s"))
        .unwrap()
        .into_iter()
        .filter(|cm| shard.matches(cm.meta()))
        .map(|cm| cm.meta().name().unwrap().to_owned())
        .collect()
}

fn cached(informer: &SharedIndexInformer<ConfigMap>) -> BTreeSet<String> {
    informer
        .lister()
        .list_all()
        .iter()
        .map(|cm| cm.meta().name().unwrap().to_owned())
        .collect()
}

/// Two replicas' informers (halves 0 and 1; the first through the factory's shard, the second through its own
/// options) over 300 ConfigMaps, then live changes; each cache is its shard, exactly.
fn two_halves(gate: bool, streaming_list: bool) -> [Arc<SharedIndexInformer<ConfigMap>>; 2] {
    let server = ApiServer::builder()
        .sharded_list_and_watch(gate)
        .namespace("s")
        .start()
        .unwrap();
    for i in 0..300 {
        server.create(&cm("s", &format!("cm-{i:03}"), "0")).unwrap();
    }
    let reflector = ReflectorConfig {
        streaming_list,
        ..quick_reflector()
    };
    let mut informers = Vec::new();
    let mut seen = Vec::new();
    let mut factories = Vec::new();
    for i in 0..2 {
        let base = FactoryOptions::default().namespace("s").reflector(reflector.clone());
        let (options, own) = if i == 0 {
            (base.shard(half(0)), InformerOptions::default())
        } else {
            // A factory shard is overridden by the informer's own.
            (base.shard(half(0)), InformerOptions::default().shard(half(1)))
        };
        let factory = SharedInformerFactory::new(server.client().unwrap(), options);
        let informer = factory.informer_with::<ConfigMap>(&ConfigMap::api_resource(), own);
        let s = Seen {
            shard: half(i),
            names: Arc::default(),
            strays: Arc::default(),
        };
        informer.add_event_handler(s.clone()).unwrap();
        factory.start().unwrap();
        factory.wait_for_cache_sync(WAIT).unwrap();
        informers.push(informer);
        seen.push(s);
        factories.push(factory);
    }
    for (i, informer) in informers.iter().enumerate() {
        assert_eq!(
            cached(informer),
            server_names(&server, &half(i as u32)),
            "half {i} after sync"
        );
    }
    // Live: 60 creates, 30 updates, 30 deletes.
    for i in 300..360 {
        server.create(&cm("s", &format!("cm-{i:03}"), "0")).unwrap();
    }
    for i in 0..30 {
        server.replace(&cm("s", &format!("cm-{i:03}"), "1")).unwrap();
    }
    for i in 30..60 {
        server.delete::<ConfigMap>(Some("s"), &format!("cm-{i:03}")).unwrap();
    }
    for (i, informer) in informers.iter().enumerate() {
        let want = server_names(&server, &half(i as u32));
        eventually(&format!("half {i} follows the changes"), || cached(informer) == want);
        let updated = informer
            .lister()
            .list_all()
            .iter()
            .filter(|cm| value(cm) == "1")
            .count();
        let want_updated = (0..30).filter(|n| want.contains(&format!("cm-{n:03}"))).count();
        assert_eq!(updated, want_updated, "half {i}'s updates");
        assert!(
            seen[i].strays.lock().is_empty(),
            "half {i}'s handler saw {:?}",
            seen[i].strays.lock()
        );
    }
    assert!(
        cached(&informers[0]).is_disjoint(&cached(&informers[1])),
        "no object in both halves"
    );
    assert_eq!(
        cached(&informers[0]).len() + cached(&informers[1]).len(),
        server.list::<ConfigMap>(Some("s")).unwrap().len()
    );
    drop(factories);
    [informers.remove(0), informers.remove(0)]
}

#[test]
fn the_server_filters_a_listed_shard_when_its_gate_is_on() {
    for informer in two_halves(true, false) {
        let m = informer.metrics().reflector;
        assert_eq!(m.shard_server_side, Some(true), "{m:?}");
        assert_eq!(m.shard_filtered_client_side, 0, "nothing of another shard came");
    }
}

#[test]
fn the_informer_filters_its_shard_itself_when_the_gate_is_off() {
    for informer in two_halves(false, false) {
        let m = informer.metrics().reflector;
        assert_eq!(m.shard_server_side, Some(false), "{m:?}");
        // The other half of 300 listed objects and of the live changes came, and was dropped.
        assert!(m.shard_filtered_client_side >= 100, "{m:?}");
    }
}

#[test]
fn a_streaming_list_keeps_the_shard_on_both_kinds_of_server() {
    // A streaming list has no shardInfo: what arrives tells whether the server filtered — about 150 objects, all of
    // the half asked for, or some of the other half.
    for informer in two_halves(true, true) {
        let m = informer.metrics().reflector;
        assert!(!m.streaming_list_refused && m.lists >= 1, "{m:?}");
        assert_eq!(
            (m.shard_filtered_client_side, m.shard_server_side),
            (0, Some(true)),
            "{m:?}"
        );
    }
    for informer in two_halves(false, true) {
        let m = informer.metrics().reflector;
        assert!(m.shard_filtered_client_side >= 100, "{m:?}");
        assert_eq!(m.shard_server_side, Some(false), "{m:?}");
    }
}

#[test]
fn prometheus_says_who_filters() {
    let server = ApiServer::builder().namespace("s").start().unwrap();
    for i in 0..20 {
        server.create(&cm("s", &format!("cm-{i}"), "0")).unwrap();
    }
    let factory = SharedInformerFactory::new(
        server.client().unwrap(),
        FactoryOptions::default()
            .namespace("s")
            .shard(half(0))
            .reflector(ReflectorConfig {
                streaming_list: false,
                ..quick_reflector()
            }),
    );
    let informer = factory.informer::<ConfigMap>();
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    let registry = kube_informer::registry::Registry::new();
    registry.add_informer(&informer);
    let text = kube_informer::metrics::encode(&registry);
    assert!(
        text.lines()
            .any(|l| l.starts_with("kube_informer_reflector_shard_server_filtered{") && l.ends_with(" 0.0")),
        "{text}"
    );
    let dropped = informer.metrics().reflector.shard_filtered_client_side;
    assert!(
        text.lines().any(
            |l| l.starts_with("kube_informer_reflector_shard_client_filtered_total{")
                && l.ends_with(&format!(" {dropped}"))
        ),
        "{text}"
    );
}
