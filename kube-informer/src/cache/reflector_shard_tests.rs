//! Reflector tests of sharded informers: a fixed shard, and a shard that changes while the reflector runs (a
//! sharded controller's informers follow the slots their replica owns).

use super::*;
use crate::cache::{ShardCell, ShardScope};
use crate::selector::{ShardField, ShardSelector};

/// A cell holding `shard` for good.
fn fixed(shard: &ShardSelector) -> Arc<ShardCell> {
    ShardCell::new(ShardScope::Shard(shard.clone()))
}

/// A ConfigMap whose uid hashes into half `half` of the hash space (found by trying uids).
fn cm_in_half(name: &str, rv: &str, half: u64) -> ConfigMap {
    let mut c = cm(name, rv);
    c.metadata.uid = (0..)
        .map(|i| format!("{name}-uid-{i}"))
        .find(|u| crate::selector::ShardSelector::hash(u) >> 63 == half);
    c
}

#[test]
fn a_sharded_reflector_asks_for_its_shard_and_keeps_it_alone_when_the_server_did_not_filter() {
    let log = crate::test_log::capture();
    let shard = ShardSelector::split(ShardField::Uid, 2, 0).unwrap();
    let mut t = rig(false);
    t.r = std::mem::replace(&mut t.r, rig(false).r).with_shard(Some(fixed(&shard)));
    // A server without the gate: everything, no shardInfo.
    t.script
        .page(vec![cm_in_half("in", "5", 0), cm_in_half("out", "6", 1)], "10", None);
    let events = t.script.open_watch();
    assert!(t.r.step(), "list");
    assert!(t.r.step(), "watch opened");
    let calls = t.script.take_calls();
    match &calls[..] {
        [Call::List(lp), Call::Watch(wp)] => {
            assert_eq!(lp.shard_selector.as_ref(), Some(&shard));
            assert_eq!(wp.shard_selector.as_ref(), Some(&shard));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        drain(&t.fifo).iter().map(|d| d.0.as_str()).collect::<Vec<_>>(),
        ["ns/in"]
    );
    for (obj, half) in [("a", 1), ("b", 0), ("c", 1)] {
        events.send(Ok(WatchEvent::Added(cm_in_half(obj, "20", half)))).unwrap();
        assert!(t.r.step());
    }
    // An event of another shard still moves the resource version on.
    events.send(Ok(WatchEvent::Modified(cm_in_half("c", "21", 1)))).unwrap();
    assert!(t.r.step());
    assert_eq!(
        drain(&t.fifo).iter().map(|d| d.0.as_str()).collect::<Vec<_>>(),
        ["ns/b"]
    );
    assert_eq!(t.r.stats.last_sync_resource_version(), "21");
    let m = t.r.stats.snapshot();
    assert_eq!((m.shard_server_side, m.shard_filtered_client_side), (Some(false), 4));
    let said: Vec<_> = log
        .take_at(log::Level::Info)
        .into_iter()
        .filter(|(_, l)| l.contains("does not filter by shardSelector"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {said:?}");
}

#[test]
fn a_list_answered_with_shard_info_is_the_servers_filtering() {
    use crate::object::ShardInfo;
    let shard = ShardSelector::split(ShardField::Uid, 2, 1).unwrap();
    let mut t = rig(false);
    t.r = std::mem::replace(&mut t.r, rig(false).r).with_shard(Some(fixed(&shard)));
    let meta = ListMeta {
        resource_version: Some("10".into()),
        shard_info: Some(ShardInfo {
            selector: shard.to_string(),
        }),
        ..Default::default()
    };
    t.script
        .pages
        .lock()
        .push_back(Ok((vec![cm_in_half("x", "5", 1)], meta)));
    t.script.open_watch();
    assert!(t.r.step());
    let m = t.r.stats.snapshot();
    assert_eq!((m.shard_server_side, m.shard_filtered_client_side), (Some(true), 0));
    assert_eq!(drain(&t.fifo).len(), 1);
}

/// What a list answered: the names of the objects queued by its replace.
fn replaced(fifo: &DeltaFifo<ConfigMap>) -> Vec<String> {
    drain(fifo).into_iter().map(|d| d.0).collect()
}

#[test]
fn a_new_shard_ends_the_quiet_watch_and_relists_with_it_and_nothing_empties_the_cache_without_a_request() {
    let half = |i| ShardSelector::split(ShardField::Uid, 2, i).unwrap();
    let cell = fixed(&half(0));
    let mut t = rig(false);
    t.r = std::mem::replace(&mut t.r, rig(false).r).with_shard(Some(cell.clone()));
    let everything = || vec![cm_in_half("a", "5", 0), cm_in_half("b", "6", 1)];
    // A server without the gate: every object, every time.
    t.script.page(everything(), "10", None);
    t.script.open_watch_endable();
    assert!(t.r.step(), "list");
    assert!(t.r.step(), "watch opened");
    assert_eq!(replaced(&t.fifo), ["ns/a"]);

    // The shard changes while the watch is quiet: the change ends it (the reflector would block on it otherwise),
    // and the reflector lists the new shard.
    t.script.page(everything(), "11", None);
    t.script.open_watch_endable();
    assert!(cell.set(ShardScope::Shard(half(1))));
    assert!(t.r.step(), "the ended watch: a relist is due");
    assert_eq!(t.r.state_name(), "List");
    assert!(t.r.step(), "list");
    assert!(t.r.step(), "watch opened");
    let calls = t.script.take_calls();
    let shards: Vec<_> = calls
        .iter()
        .map(|c| match c {
            Call::List(p) => ("list", p.shard_selector.clone()),
            Call::Watch(p) => ("watch", p.shard_selector.clone()),
        })
        .collect();
    assert_eq!(
        shards,
        [
            ("list", Some(half(0))),
            ("watch", Some(half(0))),
            ("list", Some(half(1))),
            ("watch", Some(half(1)))
        ]
    );
    assert_eq!(replaced(&t.fifo), ["ns/b"]);
    assert_eq!(t.r.stats.snapshot().shard_changes, 1);

    // Nothing: the cache is emptied by a replace with no object, and nothing is asked of the server.
    assert!(cell.set(ShardScope::Nothing));
    assert!(t.r.step(), "the ended watch");
    assert!(t.r.step(), "an empty replace");
    assert_eq!(t.r.state_name(), "Idle");
    assert!(t.script.take_calls().is_empty());
    assert!(t.r.step(), "idle, no change");
    assert_eq!(t.r.state_name(), "Idle");
    // A shard again: listed.
    t.script.page(everything(), "12", None);
    assert!(cell.set(ShardScope::Shard(half(0))));
    assert!(t.r.step(), "the change seen");
    assert!(t.r.step(), "list");
    assert_eq!(replaced(&t.fifo), ["ns/a"]);
    assert!(matches!(&t.script.take_calls()[..], [Call::List(p)] if p.shard_selector == Some(half(0))));
}

#[test]
fn a_streaming_list_tells_whether_the_server_filtered_by_what_arrives() {
    let half = ShardSelector::split(ShardField::Uid, 2, 0).unwrap();
    // What a streaming list of `objects` in the half (and `foreign` of the other half) leaves the metric at.
    let judged = |objects: usize, foreign: usize| {
        let mut t = rig(true);
        t.r = std::mem::replace(&mut t.r, rig(true).r).with_shard(Some(fixed(&half)));
        let events = t.script.open_watch();
        for i in 0..objects {
            events
                .send(Ok(WatchEvent::Added(cm_in_half(&format!("in-{i}"), "3", 0))))
                .unwrap();
        }
        for i in 0..foreign {
            events
                .send(Ok(WatchEvent::Added(cm_in_half(&format!("out-{i}"), "3", 1))))
                .unwrap();
        }
        events.send(Ok(initial_events_end("20"))).unwrap();
        assert!(t.r.step());
        assert_eq!(t.r.stats.last_sync_resource_version(), "20");
        t.r.stats.snapshot().shard_server_side
    };
    // One of the other half: the server did not filter.
    assert_eq!(judged(30, 1), Some(false));
    // Thirty of the half alone: a chance of 2⁻³⁰ were the server not filtering — it did.
    assert_eq!(judged(30, 0), Some(true));
    // Three: as likely a coincidence (1 in 8) — nothing to tell.
    assert_eq!(judged(3, 0), None);
}
