//! Informers over a set of namespaces (controller-runtime's multi-namespace cache): one informer per namespace behind
//! one handle, made by a factory given several namespaces — its lister, its handlers, the registry, a controller.

mod common;

use std::collections::BTreeSet;

use common::*;
use kube_informer::cache::{Fifo, ListWatch};
use kube_informer::client::Api;
use kube_informer::client::params::{DeleteParams, PostParams};
use kube_informer::controller::{Action, Context, Controller, ControllerOptions};
use kube_informer::informer::{FactoryOptions, InformerOptions, SharedIndexInformer, SharedInformerFactory};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ApiResource, DynamicObject, ObjectRef};
use kube_informer::registry::Registry;
use kube_informer::selector::Selector;
use kube_informer_apiserver::{ApiServer, Verb};
use serde_json::json;

fn server_with(namespaces: &[&str]) -> ApiServer {
    let server = ApiServer::builder()
        .namespaces(namespaces.iter().copied())
        .start()
        .unwrap();
    for ns in namespaces {
        server.create(&cm(ns, "seed", "0")).unwrap();
    }
    server
}

fn factory(server: &ApiServer, namespaces: &[&str]) -> SharedInformerFactory {
    factory_with(server, namespaces, Fifo::default())
}

fn factory_with(server: &ApiServer, namespaces: &[&str], fifo: Fifo) -> SharedInformerFactory {
    let options = FactoryOptions::default()
        .namespaces(namespaces)
        .reflector(quick_reflector())
        .fifo(fifo);
    SharedInformerFactory::new(server.client().unwrap(), options)
}

#[test]
fn a_factory_over_two_namespaces_caches_and_tells_those_and_no_other() {
    let server = server_with(&["a", "b", "c"]);
    let factory = factory(&server, &["b", "a"]);
    let informer = factory.informer::<ConfigMap>();
    assert_eq!(informer.namespaces(), Some(&["a".to_owned(), "b".to_owned()][..]));
    assert_eq!(informer.name(), "configmaps/a+1");
    let (h, rx) = recorder();
    informer.add_event_handler(h).unwrap();
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    // `seed` of a and of b (the recorder shows names only).
    assert_eq!(
        [recv(&rx), recv(&rx)],
        [
            Seen::Add("seed".into(), "0".into(), true),
            Seen::Add("seed".into(), "0".into(), true)
        ]
    );
    let lister = informer.lister();
    assert_eq!(lister.len(), 2);
    assert!(lister.get("a/seed").is_some() && lister.get("b/seed").is_some());

    // Each namespace's changes reach the one handler; the third namespace's never do. The object created in `c`
    // first is followed by one in `a`: when that arrives, the one of `c` would have too (had it been listed).
    let api = |ns: &str| Api::<ConfigMap>::namespaced(server.client().unwrap(), ns);
    api("c").create(&PostParams::default(), &cm("c", "other", "1")).unwrap();
    api("a").create(&PostParams::default(), &cm("a", "new-a", "1")).unwrap();
    api("b").create(&PostParams::default(), &cm("b", "new-b", "1")).unwrap();
    api("b").delete("seed", &DeleteParams::default()).unwrap();
    let mut seen = BTreeSet::new();
    while seen.len() < 3 {
        seen.insert(recv(&rx));
    }
    assert_eq!(
        seen,
        BTreeSet::from([
            Seen::Add("new-a".into(), "1".into(), false),
            Seen::Add("new-b".into(), "1".into(), false),
            Seen::Delete("seed".into(), "0".into(), false),
        ])
    );
    assert!(rx.try_recv().is_err(), "nothing of namespace c");
    assert_eq!(lister.len(), 3);
    assert_eq!(lister.namespace("b").list(&Selector::everything()).len(), 1);

    // Namespace `c` exists on the server, but the cache cannot know what it holds: an error, not "nothing there".
    let e = lister.try_namespace("c").err().expect("c is not watched");
    assert!(
        e.to_string()
            .contains("namespace \"c\" is not among the informer's namespaces [a, b]"),
        "{e}"
    );
    assert!(lister.try_get("c/other").is_err());
    assert!(lister.get("c/other").is_none());
    assert!(lister.namespace("c").list(&Selector::everything()).is_empty());
}

#[test]
fn one_registration_covers_the_handler_of_every_namespace() {
    let server = server_with(&["a", "b"]);
    // Over DeltaFIFOs (the other tests here use the default RealFIFO).
    let factory = factory_with(&server, &["a", "b"], Fifo::Delta);
    let informer = factory.informer::<ConfigMap>();
    let (removed, removed_rx) = recorder();
    let registration = informer.add_event_handler(removed).unwrap();
    let (kept, kept_rx) = recorder();
    informer.add_event_handler(kept).unwrap();
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    assert!(registration.has_synced());
    assert_eq!(
        registration.metrics().delivered,
        2,
        "one initial add from each namespace"
    );
    assert_eq!(informer.metrics().handlers.len(), 2);

    registration.remove();
    for ns in ["a", "b"] {
        server.create(&cm(ns, "after", "1")).unwrap();
    }
    // Both namespaces delivered to the handler still registered: the removed one would have had them too.
    let mut kept_seen = 0;
    while kept_seen < 4 {
        if matches!(recv(&kept_rx), Seen::Add(..)) {
            kept_seen += 1;
        }
    }
    let removed_seen: Vec<Seen> = removed_rx.try_iter().collect();
    assert_eq!(removed_seen.len(), 2, "the initial adds only: {removed_seen:?}");
}

#[test]
fn the_registry_reports_the_informer_of_each_namespace() {
    let server = server_with(&["a", "b"]);
    let factory = factory(&server, &["a", "b"]);
    let informer = factory.informer::<ConfigMap>();
    let registry = Registry::new();
    registry.add_factory(&factory);
    registry.add_informer(&informer); // the same informers: reported once
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    let report = registry.report();
    let names: Vec<&str> = report.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["informer:configmaps/a", "informer:configmaps/b"]);
    assert!(report.is_ready());
    let health = factory.health();
    assert_eq!(health.informers.len(), 2);
    assert!(informer.health().is_ready());
    assert_eq!(informer.metrics().store_size, 2);
    let versions = informer.last_sync_resource_version();
    assert!(versions.starts_with("a=") && versions.contains(",b="), "{versions}");

    informer.stop();
    assert!(informer.is_stopped() && informer.health().state.is_halted());
    assert_eq!(informer.running_threads(), 0);
    assert!(!registry.report().is_live());
}

#[test]
fn for_namespaces_builds_the_same_without_a_factory_and_refuses_an_empty_set() {
    let server = server_with(&["a", "b"]);
    let client = server.client().unwrap();
    let empty: [&str; 0] = [];
    let err = SharedIndexInformer::for_namespaces(
        empty,
        |ns| ListWatch::new(&Api::<ConfigMap>::namespaced(client.clone(), ns)),
        InformerOptions::default(),
    )
    .expect_err("no namespace");
    assert!(err.to_string().contains("at least one namespace"), "{err}");
    let informer = SharedIndexInformer::for_namespaces(
        ["b", "a", "b"],
        |ns| ListWatch::new(&Api::<ConfigMap>::namespaced(client.clone(), ns)),
        InformerOptions::default().name("cms"),
    )
    .unwrap();
    informer.start().unwrap();
    informer.wait_for_cache_sync(WAIT).unwrap();
    assert_eq!(informer.lister().namespaces(), Some(vec!["a", "b"]));
    assert_eq!(informer.lister().len(), 2);
    if skip::linux("reads the threads' names from /proc") {
        let threads = thread_names();
        for name in ["refl:cms/a", "refl:cms/b", "proc:cms/a", "proc:cms/b"] {
            assert!(threads.iter().any(|t| t == name), "{name} among {threads:?}");
        }
    }
}

/// A controller of ConfigMaps in namespaces a and b, re-triggered by Secrets (of the same namespaces) naming
/// ConfigMaps in their `target` annotation, one of them outside the set.
#[test]
fn a_controller_over_namespaces_reconciles_them_and_drops_keys_outside() {
    let server = server_with(&["a", "b", "c"]);
    let factory = factory(&server, &["a", "b"]);
    let configmaps = factory.informer::<ConfigMap>();
    let secrets_resource = ApiResource::new("", "v1", "Secret", "secrets", true);
    let secrets = factory.informer_for::<DynamicObject>(&secrets_resource);
    let (tx, reconciled) = crossbeam_channel::unbounded::<(String, bool)>();
    let controller = Controller::builder(configmaps, tx)
        .watches(secrets, |s: &DynamicObject| {
            let annotations = &s.metadata.annotations;
            annotations
                .get("target")
                .map(|t| {
                    t.split(' ')
                        .filter_map(|key| key.split_once('/'))
                        .map(|(ns, name)| ObjectRef::<ConfigMap>::new(name).within(ns))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .options(ControllerOptions::default().name("multi"))
        .build(
            |key, ctx: &Context<'_, ConfigMap, crossbeam_channel::Sender<(String, bool)>>| {
                let _ = ctx.data().send((key.to_owned(), ctx.object().is_some()));
                Ok::<_, kube_informer::Error>(Action::await_change())
            },
        )
        .unwrap();
    factory.start().unwrap();
    controller.start().unwrap();
    let mut first: Vec<(String, bool)> = vec![
        reconciled.recv_timeout(WAIT).unwrap(),
        reconciled.recv_timeout(WAIT).unwrap(),
    ];
    first.sort();
    assert_eq!(first, [("a/seed".to_owned(), true), ("b/seed".to_owned(), true)]);

    // The secret maps to a key outside the set first, then to one inside: when the second is reconciled, the first
    // was dropped already.
    let secret = json!({"metadata": {"name": "s", "annotations": {"target": "c/seed b/seed"}}, "type": "Opaque"});
    server.create_json(&secrets_resource, Some("a"), secret).unwrap();
    assert_eq!(reconciled.recv_timeout(WAIT).unwrap(), ("b/seed".to_owned(), true));
    assert!(reconciled.try_recv().is_err(), "c/seed is not reconciled");
    assert!(controller.metrics().filtered >= 1);
    assert!(
        !server
            .requests()
            .records()
            .iter()
            .any(|r| r.is(Verb::List, "configmaps") && r.namespace.as_deref() == Some("c")),
        "namespace c is never listed"
    );
    controller.stop();
}
