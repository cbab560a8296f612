//! Reflector and informer against the embedded API server, over HTTP: each scenario is asserted on what the handlers
//! saw and on the server's request log.

mod common;

use std::time::Duration;

use common::*;
use kube_informer::cache::{BackoffConfig, ReflectorConfig};
use kube_informer::client::{Api, Client};
use kube_informer::informer::{FactoryOptions, InformerOptions, SharedIndexInformer, SharedInformerFactory};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer_apiserver::{AccessRule, ApiServer, Fault, Verb};

fn quick_reflector() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(50),
            ..Default::default()
        },
        relist_jitter: Duration::from_millis(10),
        ..Default::default()
    }
}

fn informer_on(client: &Client, reflector: ReflectorConfig) -> SharedIndexInformer<ConfigMap> {
    let api = Api::<ConfigMap>::all(client.clone());
    SharedIndexInformer::for_api(&api, InformerOptions::default().reflector(reflector))
}

fn seed(server: &ApiServer, n: usize) {
    for i in 0..n {
        server.create(&cm("ns", &format!("cm-{i:05}"), "0")).unwrap();
    }
}

fn query_has(record: &kube_informer_apiserver::RequestRecord, needle: &str) -> bool {
    record.query.split('&').any(|kv| kv == needle)
}

#[test]
fn first_list_is_paged_at_rv0_without_a_watch_cache_then_watches() {
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .watch_cache(false)
        .watch_list(false)
        .start()
        .unwrap();
    seed(&server, 1200);
    let mark = server.requests().mark();
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    let (h, rx) = recorder();
    inf.add_event_handler(h).unwrap();
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    let lists: Vec<_> = server
        .requests()
        .since(mark)
        .into_iter()
        .filter(|r| r.is(Verb::List, "configmaps"))
        .collect();
    assert_eq!(lists.len(), 3, "1200 objects in pages of 500");
    assert!(query_has(&lists[0], "resourceVersion=0") && query_has(&lists[0], "limit=500"));
    assert!(
        lists[1..]
            .iter()
            .all(|r| r.query.contains("continue=") && !r.query.contains("resourceVersion"))
    );
    let initial: Vec<Seen> = (0..1200).map(|_| recv(&rx)).collect();
    assert!(initial.iter().all(|s| matches!(s, Seen::Add(_, _, true))));
    assert_eq!(inf.lister().len(), 1200);
    server.create(&cm("ns", "late", "1")).unwrap();
    assert_eq!(recv(&rx), Seen::Add("late".into(), "1".into(), false));
    assert_eq!(server.requests().lists_since(mark, "configmaps"), 3, "no relist");
}

#[test]
fn an_expired_continue_token_falls_back_to_one_full_list() {
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .watch_cache(false)
        .watch_list(false)
        .start()
        .unwrap();
    seed(&server, 700);
    let mark = server.requests().mark();
    // Let the first page through, hold the second until its snapshot is compacted away.
    server.inject(Fault::list("configmaps").stall().lasting(Duration::ZERO));
    server.inject(Fault::list("configmaps").stall());
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    inf.start().unwrap();
    // The first page is answered; the second (snapshot at the first page's revision) is held by the fault.
    assert!(
        server
            .requests()
            .wait_for_count(mark, Verb::List, "configmaps", 1, WAIT)
    );
    server.delete::<ConfigMap>(Some("ns"), "cm-00000").unwrap();
    server.delete::<ConfigMap>(Some("ns"), "cm-00699").unwrap();
    server.compact_to_latest();
    server.clear_faults();
    inf.wait_for_cache_sync(WAIT).unwrap();
    let lists: Vec<_> = server
        .requests()
        .since(mark)
        .into_iter()
        .filter(|r| r.is(Verb::List, "configmaps"))
        .collect();
    assert_eq!(lists.len(), 3);
    assert_eq!(lists[1].code, 410, "the continue token expired");
    assert!(
        !lists[2].query.contains("limit") && !lists[2].query.contains("continue"),
        "{:?}",
        lists[2].query
    );
    assert_eq!(inf.lister().len(), 698);
    assert!(
        inf.lister().get("ns/cm-00000").is_none(),
        "objects only the first page saw are deleted"
    );
    assert_eq!(inf.metrics().reflector.relists_expired_continue, 1);
}

#[test]
fn streaming_list_is_used_when_offered_and_a_refusal_falls_back_to_list() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 50);
    let mark = server.requests().mark();
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    let reqs = server.requests().since(mark);
    assert_eq!(server.requests().lists_since(mark, "configmaps"), 0, "no LIST at all");
    let first = reqs.iter().find(|r| r.is(Verb::Watch, "configmaps")).unwrap();
    assert!(query_has(first, "sendInitialEvents=true") && query_has(first, "resourceVersionMatch=NotOlderThan"));
    assert_eq!(inf.lister().len(), 50);
    inf.stop();

    let server = ApiServer::builder()
        .namespaces(["ns"])
        .watch_list(false)
        .start()
        .unwrap();
    seed(&server, 50);
    let mark = server.requests().mark();
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    let reqs = server.requests().since(mark);
    assert_eq!(reqs[0].code, 422, "refused streaming list: {reqs:?}");
    assert!(reqs[1].is(Verb::List, "configmaps"));
    assert!(inf.metrics().reflector.streaming_list_refused);
    assert_eq!(inf.lister().len(), 50);
}

#[test]
fn a_clean_watch_close_rewatches_from_the_last_rv_without_relisting() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 3);
    let mark = server.requests().mark();
    let mut reflector = quick_reflector();
    // Watches time out after 1-2 s: the server closes them cleanly.
    reflector.min_watch_timeout = Duration::from_secs(1);
    let inf = informer_on(&server.client().unwrap(), reflector);
    let (h, rx) = recorder();
    inf.add_event_handler(h).unwrap();
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    assert!(
        server
            .requests()
            .wait_for_count(mark, Verb::Watch, "configmaps", 3, WAIT)
    );
    server.create(&cm("ns", "after", "1")).unwrap();
    recv_until(&rx, |s| matches!(s, Seen::Add(n, _, false) if n == "after"));
    let watches: Vec<_> = server
        .requests()
        .since(mark)
        .into_iter()
        .filter(|r| r.is(Verb::Watch, "configmaps"))
        .collect();
    assert!(
        watches[1..].iter().all(|w| !w.query.contains("sendInitialEvents")),
        "re-watches, not relists"
    );
    assert!(watches[1..].iter().all(|w| w.query.contains("resourceVersion=")));
    assert_eq!(server.requests().lists_since(mark, "configmaps"), 0);
    assert_eq!(
        inf.metrics().reflector.relists_gone + inf.metrics().reflector.relists_after_error,
        0
    );
}

#[test]
fn a_410_relists_and_deletes_missed_while_away_arrive_as_unknown_final_state() {
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .watch_list(false)
        .start()
        .unwrap();
    seed(&server, 3);
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    let (h, rx) = recorder();
    inf.add_event_handler(h).unwrap();
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    assert!(server.wait_for_watchers("configmaps", 1, WAIT));
    let mark = server.requests().mark();
    // The connection drops and the next watch is held while an object goes and history is compacted: whenever
    // the re-watch is served, it asks for a revision that is gone.
    server.inject(Fault::watch("configmaps").stall());
    server.restart().unwrap();
    server.delete::<ConfigMap>(Some("ns"), "cm-00001").unwrap();
    server.create(&cm("ns", "newcomer", "1")).unwrap();
    server.compact_to_latest();
    server.clear_faults();
    let deleted = recv_until(&rx, |s| matches!(s, Seen::Delete(..)));
    assert_eq!(deleted, Seen::Delete("cm-00001".into(), "0".into(), true));
    eventually("relisted state", || {
        inf.lister().len() == 3 && inf.lister().get("ns/newcomer").is_some()
    });
    assert!(inf.metrics().reflector.relists_gone >= 1);
    assert!(server.requests().lists_since(mark, "configmaps") >= 1);
}

#[test]
fn a_bookmark_rv_is_used_on_reconnect() {
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .bookmark_interval(Duration::from_millis(50))
        .start()
        .unwrap();
    seed(&server, 2);
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    // Writes to another resource move the global revision; only a bookmark can tell the informer.
    for i in 0..5 {
        server
            .create_json(
                &ApiResource::new("", "v1", "Secret", "secrets", true),
                Some("ns"),
                serde_json::json!({"metadata": {"name": format!("s{i}")}}),
            )
            .unwrap();
    }
    let rev = server.revision().to_string();
    eventually("a bookmark advanced the resource version", || {
        inf.last_sync_resource_version() == rev
    });
    let mark = server.requests().mark();
    server.restart().unwrap();
    assert!(
        server
            .requests()
            .wait_for_count(mark, Verb::Watch, "configmaps", 1, WAIT)
    );
    let rewatch = server
        .requests()
        .since(mark)
        .into_iter()
        .find(|r| r.is(Verb::Watch, "configmaps"))
        .unwrap();
    assert!(
        query_has(&rewatch, &format!("resourceVersion={rev}")),
        "{}",
        rewatch.query
    );
}

#[test]
fn throttling_is_honoured_and_does_not_relist() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 2);
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    let (h, rx) = recorder();
    inf.add_event_handler(h).unwrap();
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    assert!(server.wait_for_watchers("configmaps", 1, WAIT));
    let mark = server.requests().mark();
    server.inject(Fault::watch("configmaps").error(429).retry_after(1));
    server.restart().unwrap();
    assert!(
        server
            .requests()
            .wait_for_count(mark, Verb::Watch, "configmaps", 2, WAIT)
    );
    let watches: Vec<_> = server
        .requests()
        .since(mark)
        .into_iter()
        .filter(|r| r.is(Verb::Watch, "configmaps"))
        .collect();
    assert_eq!(watches[0].code, 429);
    // How long the reflector waits for a Retry-After is checked on a fake clock in the reflector's unit tests; here:
    // the 429 over HTTP leads to a re-watch, not a relist.
    assert_eq!(server.requests().lists_since(mark, "configmaps"), 0);
    server.create(&cm("ns", "after", "1")).unwrap();
    recv_until(&rx, |s| matches!(s, Seen::Add(n, _, false) if n == "after"));
}

#[test]
fn a_silent_half_open_watch_is_detected_and_replaced() {
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .bookmark_interval(Duration::from_secs(3600))
        .start()
        .unwrap();
    seed(&server, 2);
    let config = server.config().unwrap().watch_idle_limit(Duration::from_millis(300));
    let inf = informer_on(&Client::new(config).unwrap(), quick_reflector());
    let (h, rx) = recorder();
    inf.add_event_handler(h).unwrap();
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    assert!(server.wait_for_watchers("configmaps", 1, WAIT));
    let mark = server.requests().mark();
    // The next watch sends headers, then nothing, forever; the current one is cut to make the informer take it.
    server.inject(Fault::watch("configmaps").stall_after_events(0));
    server.restart().unwrap();
    assert!(
        server
            .requests()
            .wait_for_count(mark, Verb::Watch, "configmaps", 2, WAIT),
        "the dead watch was replaced"
    );
    server.create(&cm("ns", "after", "1")).unwrap();
    recv_until(&rx, |s| matches!(s, Seen::Add(n, _, false) if n == "after"));
    assert!(inf.metrics().reflector.watch_restarts >= 2);
    assert_eq!(server.requests().lists_since(mark, "configmaps"), 0);
}

#[test]
fn stop_returns_from_every_reflector_state() {
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .watch_list(false)
        .start()
        .unwrap();
    seed(&server, 2);
    let client = server.client().unwrap();
    let scenarios: Vec<(&str, Fault)> = vec![
        ("listing (a LIST that never answers)", Fault::list("configmaps").stall()),
        (
            "backing off (429, retry after an hour)",
            Fault::list("configmaps").error(429).retry_after(3600),
        ),
        (
            "watching (a watch that sends nothing)",
            Fault::watch("configmaps").stall_after_events(0),
        ),
    ];
    // Paged lists, so that the first request is the LIST (a refused streaming WATCH would take the fault).
    let reflector = ReflectorConfig {
        streaming_list: false,
        ..Default::default()
    };
    for (state, fault) in scenarios {
        server.clear_faults();
        server.inject(fault);
        let inf = informer_on(&client, reflector.clone());
        inf.start().unwrap();
        // A fault is taken when its request arrives: the reflector is now in that state.
        eventually(state, || server.pending_faults() == 0);
        inf.stop();
        assert_eq!(inf.running_threads(), 0, "{state}: every thread joined");
    }
    server.clear_faults();
}

#[test]
fn factory_shares_informers_and_reports_the_unsynced() {
    let server = server_allowing_only_configmaps();
    seed(&server, 5);
    let factory = SharedInformerFactory::new(
        server.client().unwrap(),
        FactoryOptions::default().strip_managed_fields(),
    );
    let a = factory.informer::<ConfigMap>();
    let b = factory.informer::<ConfigMap>();
    assert!(std::sync::Arc::ptr_eq(&a, &b), "one informer per type");
    let secrets = ApiResource::new("", "v1", "Secret", "secrets", true);
    let forbidden = factory.informer_for::<DynamicObject>(&secrets);
    factory.start().unwrap();
    // The configmaps informer syncs; the secrets one is refused (403) and never will.
    a.wait_for_cache_sync(WAIT).unwrap();
    let err = factory.wait_for_cache_sync(Duration::from_millis(200)).unwrap_err();
    assert_eq!(err.names(), ["secrets"]);
    assert!(a.has_synced() && !forbidden.has_synced());
    assert_eq!(a.lister().len(), 5);
    assert_eq!(factory.metrics().len(), 2);
    factory.shutdown();
    assert_eq!(a.running_threads() + forbidden.running_threads(), 0);
}

#[test]
fn a_late_handler_over_http_gets_the_cache_then_changes() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 20);
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    server.create(&cm("ns", "before-join", "1")).unwrap();
    eventually("cached", || inf.lister().len() == 21);
    let (h, rx) = recorder();
    let reg = inf.add_event_handler(h).unwrap();
    assert!(inf.wait_for_cache_sync(WAIT).is_ok() && reg.has_synced());
    let initial: Vec<Seen> = (0..21).map(|_| recv(&rx)).collect();
    assert!(
        initial.iter().all(|s| matches!(s, Seen::Add(_, _, true))),
        "synthetic initial adds: {initial:?}"
    );
    server.create(&cm("ns", "after-join", "1")).unwrap();
    assert_eq!(recv(&rx), Seen::Add("after-join".into(), "1".into(), false));
    assert!(rx.try_recv().is_err(), "nothing doubled");
}

#[test]
fn a_panicking_handler_over_http_keeps_receiving_and_others_are_unaffected() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    let (tx, panicky_rx) = crossbeam_channel::unbounded();
    let panicky = inf
        .add_event_handler(move |ev: &kube_informer::informer::Notification<ConfigMap>| {
            let n = name(ev.object());
            if n.starts_with("boom") {
                panic!("handler bug on {n}");
            }
            tx.send(n).unwrap();
        })
        .unwrap();
    let (h, rx) = recorder();
    inf.add_event_handler(h).unwrap();
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    server.create(&cm("ns", "boom-1", "1")).unwrap();
    server.create(&cm("ns", "fine", "1")).unwrap();
    assert_eq!(panicky_rx.recv_timeout(WAIT).unwrap(), "fine");
    assert_eq!(recv(&rx), Seen::Add("boom-1".into(), "1".into(), false));
    assert_eq!(recv(&rx), Seen::Add("fine".into(), "1".into(), false));
    assert_eq!(panicky.metrics().panics, 1);
}

#[test]
fn resyncs_over_http_go_only_to_handlers_that_asked() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 1);
    let inf = informer_on(&server.client().unwrap(), quick_reflector());
    let (resyncing, rx_resync) = recorder();
    let (plain, rx_plain) = recorder();
    inf.add_event_handler_with(
        resyncing,
        kube_informer::informer::HandlerOptions::default().resync(Duration::from_secs(1)),
    )
    .unwrap();
    inf.add_event_handler(plain).unwrap();
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    assert_eq!(recv(&rx_resync), Seen::Add("cm-00000".into(), "0".into(), true));
    assert_eq!(
        recv(&rx_resync),
        Seen::Update("cm-00000".into(), "0".into(), "0".into()),
        "a resync"
    );
    let mark = server.requests().mark();
    server.replace(&cm("ns", "cm-00000", "1")).unwrap();
    // Per handler, events are in order: a resync to the plain handler would come before this update.
    assert_eq!(recv(&rx_plain), Seen::Add("cm-00000".into(), "0".into(), true));
    assert_eq!(recv(&rx_plain), Seen::Update("cm-00000".into(), "0".into(), "1".into()));
    assert_eq!(
        server.requests().lists_since(mark, "configmaps"),
        0,
        "resync is local: no request"
    );
}

/// RBAC that grants `list` (and `get`) but not `watch`: the streaming list (a WATCH) is refused with 403, so each round
/// falls back to a paged LIST, which fills the cache; the watch after it is refused too and reported as such.
#[test]
fn credentials_that_may_list_but_not_watch_still_sync_the_cache() {
    for verbs in [&["get", "list"][..], &["list"][..]] {
        let server = ApiServer::builder()
            .namespaces(["ns"])
            .token("t", "alice")
            .kubeconfig_user("alice")
            .rule(AccessRule::user("alice").verbs(verbs).resources(&["configmaps"]))
            .start()
            .unwrap();
        seed(&server, 3);
        let mark = server.requests().mark();
        let (tx, errors) = crossbeam_channel::unbounded();
        let api = Api::<ConfigMap>::all(server.client().unwrap());
        let inf = SharedIndexInformer::for_api(
            &api,
            InformerOptions::default()
                .reflector(quick_reflector())
                .watch_error_handler(move |e| {
                    let _ = tx.send(e.to_string());
                }),
        );
        inf.start().unwrap();
        assert!(
            inf.wait_for_cache_sync(WAIT).is_ok(),
            "{verbs:?}: synced from the fallback LIST"
        );
        assert_eq!(inf.lister().len(), 3);
        let err = errors.recv_timeout(WAIT).unwrap();
        assert!(
            err.contains("403") && err.contains(r#"User "alice" cannot watch resource "configmaps""#),
            "{verbs:?}: the refused watch is what is reported: {err}"
        );
        let m = inf.metrics().reflector;
        assert!(m.streaming_list_fallbacks >= 1 && !m.streaming_list_refused, "{m:?}");
        let requests = server.requests().since(mark);
        let first = &requests[0];
        assert!(
            first.is(Verb::Watch, "configmaps") && first.code == 403 && query_has(first, "sendInitialEvents=true"),
            "{first:?}"
        );
        assert!(
            requests[1].is(Verb::List, "configmaps") && requests[1].code == 200,
            "{:?}",
            requests[1]
        );
        inf.stop();
    }
}

/// Linux shows 15 bytes of a thread's name: `ps -L` must show every thread of an informer with two handlers whole and
/// apart from the others.
#[test]
fn ps_shows_each_informer_thread_by_a_distinct_whole_name() {
    let purpose = "lists the threads as an operator sees them (procps' `ps -L`, Linux's 15-byte names)";
    if !skip::linux(purpose) {
        return;
    }
    let Some(ps) = skip::program("ps", "PS", purpose) else {
        return;
    };
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    let api = Api::<ConfigMap>::all(server.client().unwrap());
    let options = InformerOptions::default()
        .name("ps-names.example.com")
        .resync(Duration::from_secs(3600))
        .reflector(quick_reflector());
    let inf = SharedIndexInformer::for_api(&api, options);
    let (first, _rx1) = recorder();
    let (second, _rx2) = recorder();
    inf.add_event_handler(first).unwrap();
    inf.add_event_handler(second).unwrap();
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    let ps = std::process::Command::new(ps)
        .args(["-L", "-o", "comm=", "-p", &std::process::id().to_string()])
        .output()
        .expect("ps (procps) runs");
    assert!(ps.status.success(), "{ps:?}");
    let listed = String::from_utf8(ps.stdout).unwrap();
    // Other tests of this binary run informers of their own at the same time: keep this one's threads.
    let mut ours: Vec<&str> = listed
        .lines()
        .map(str::trim)
        .filter(|n| n.ends_with(":ps-names"))
        .collect();
    ours.sort_unstable();
    assert_eq!(
        ours,
        [
            "h1:ps-names",
            "h2:ps-names",
            "proc:ps-names",
            "refl:ps-names",
            "sync:ps-names"
        ],
        "{listed}"
    );
    // Nor are the embedded server's threads (acceptor, one per connection) cut to a common prefix.
    assert!(listed.lines().any(|n| n.trim() == "srv:acceptor"), "{listed}");
    assert!(
        !listed.lines().any(|n| n.trim().starts_with("kube-informer/")),
        "a thread name the OS cut: {listed}"
    );
    inf.stop();
}

#[test]
fn a_cache_holds_once_what_its_objects_repeat() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    let labelled = |name: &str, value: &str| {
        let mut c = cm("ns", name, value);
        c.metadata.labels = [("app", "web"), ("tier", "front")].into();
        c
    };
    for i in 0..3 {
        server
            .create(&labelled(&format!("cm-{i}"), &format!("value {i}")))
            .unwrap();
    }
    let client = server.client().unwrap();
    let inf = informer_on(&client, quick_reflector());
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    // One created after the list: decoded from the watch.
    server.create(&labelled("cm-3", "value 3")).unwrap();
    eventually("the watched object cached", || inf.lister().get("ns/cm-3").is_some());
    let cached: Vec<_> = (0..4)
        .map(|i| inf.lister().get(&format!("ns/cm-{i}")).unwrap())
        .collect();
    let namespace = |c: &ConfigMap| c.metadata.namespace.as_deref().unwrap().as_ptr();
    let label_key = |c: &ConfigMap| c.metadata.labels.keys().next().unwrap().as_ptr();
    let label_value = |c: &ConfigMap| c.metadata.labels.values().next().unwrap().as_ptr();
    let data_key = |c: &ConfigMap| c.data.keys().next().unwrap().as_ptr();
    let data_value = |c: &ConfigMap| c.data.values().next().unwrap().as_ptr();
    for c in &cached[1..] {
        assert_eq!(namespace(c), namespace(&cached[0]), "{:?}", c.metadata.name);
        assert_eq!(label_key(c), label_key(&cached[0]));
        assert_eq!(label_value(c), label_value(&cached[0]), "the same label set, held once");
        assert_eq!(data_key(c), data_key(&cached[0]));
        assert_ne!(data_value(c), data_value(&cached[0]), "values of their own");
    }
    // Decoded outside a cache, an object holds its own.
    let got = Api::<ConfigMap>::namespaced(client, "ns").get("cm-0").unwrap();
    assert_eq!(got, *cached[0]);
    assert_ne!(namespace(&got), namespace(&cached[0]));
    inf.stop();
    drop(inf);
    assert_eq!(
        cached[3].metadata.labels.get("tier"),
        Some("front"),
        "values outlive the cache's interner"
    );
}
