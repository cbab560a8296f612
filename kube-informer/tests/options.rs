//! Options that compose: each setter of a factory's or an informer's options adds to what the calls before it set
//! (transforms chain, selectors must all match, tweaks run in turn, error handlers are all called), and the settings
//! an informer brings are not replaced by its factory's. Each test fails where a later setter used to replace an
//! earlier one.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use kube_informer::cache::{ReflectorConfig, RelistBudget};
use kube_informer::client::Api;
use kube_informer::client::params::ListParams;
use kube_informer::informer::{FactoryOptions, InformerOptions, SharedIndexInformer, SharedInformerFactory};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, Resource};
use kube_informer_apiserver::{ApiServer, Fault, Verb};

fn labelled(ns: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut meta = ObjectMeta::namespaced(ns, name);
    for (k, v) in labels {
        meta.labels.insert((*k).into(), (*v).into());
    }
    ConfigMap::new(meta)
}

#[test]
fn strip_managed_fields_then_a_transform_does_both() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    server.create(&cm("ns", "a", "1")).unwrap();
    assert!(
        server
            .get::<ConfigMap>(Some("ns"), "a")
            .unwrap()
            .metadata
            .managed_fields
            .is_some(),
        "the server keeps managedFields"
    );
    let options = FactoryOptions::default().strip_managed_fields().transform(|meta| {
        meta.annotations_mut().insert("seen-by".into(), "transform".into());
    });
    let factory = SharedInformerFactory::new(server.client().unwrap(), options);
    let informer = factory.informer::<ConfigMap>();
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    let cached = informer.lister().get("ns/a").unwrap();
    assert_eq!(cached.metadata.managed_fields, None, "stripped");
    assert_eq!(cached.metadata.annotations.get("seen-by"), Some("transform"));
}

#[test]
fn labels_fields_and_tweaks_all_narrow_the_informers() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    server
        .create(&labelled("ns", "web", &[("app", "web"), ("tier", "front")]))
        .unwrap();
    server
        .create(&labelled("ns", "web-back", &[("app", "web"), ("tier", "back")]))
        .unwrap();
    server
        .create(&labelled("ns", "db", &[("app", "db"), ("tier", "front")]))
        .unwrap();
    server
        .create(&labelled("ns", "web-skipped", &[("app", "web"), ("tier", "front")]))
        .unwrap();
    let tweaks = Arc::new(AtomicUsize::new(0));
    let counted = tweaks.clone();
    let options = FactoryOptions::default()
        .labels("app=web")
        .tweak_list_params(move |_, lp: &mut ListParams| {
            counted.fetch_add(1, Ordering::SeqCst);
            *lp = std::mem::take(lp).labels("tier=front");
        })
        .fields("metadata.name!=web-skipped")
        .reflector(ReflectorConfig {
            streaming_list: false,
            ..quick_reflector()
        });
    let mark = server.requests().mark();
    let factory = SharedInformerFactory::new(server.client().unwrap(), options);
    let informer = factory.informer::<ConfigMap>();
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    let mut names: Vec<String> = informer.lister().keys().iter().map(|k| k.to_string()).collect();
    names.sort();
    assert_eq!(names, ["ns/web"]);
    assert_eq!(tweaks.load(Ordering::SeqCst), 1, "once per informer");
    let list = server
        .requests()
        .since(mark)
        .into_iter()
        .find(|r| r.is(Verb::List, "configmaps"))
        .expect("a list");
    assert!(
        list.query.contains("labelSelector=app%3Dweb%2Ctier%3Dfront")
            && list.query.contains("fieldSelector=metadata.name%21%3Dweb-skipped"),
        "{}",
        list.query
    );
}

#[test]
fn an_informers_own_reflector_settings_survive_its_factory() {
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .watch_cache(false)
        .start()
        .unwrap();
    for i in 0..5 {
        server.create(&cm("ns", &format!("cm-{i}"), "0")).unwrap();
    }
    // The factory's settings: a streaming list. The informer's own: paged lists of 2.
    let factory = SharedInformerFactory::new(server.client().unwrap(), FactoryOptions::default());
    let own = ReflectorConfig {
        page_size: 2,
        streaming_list: false,
        ..quick_reflector()
    };
    let mark = server.requests().mark();
    let informer =
        factory.informer_with::<ConfigMap>(&ConfigMap::api_resource(), InformerOptions::default().reflector(own));
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    assert_eq!(informer.lister().len(), 5);
    let lists: Vec<String> = server
        .requests()
        .since(mark)
        .into_iter()
        .filter(|r| r.is(Verb::List, "configmaps"))
        .map(|r| r.query)
        .collect();
    assert_eq!(lists.len(), 3, "pages of 2: {lists:?}");
    assert!(lists.iter().all(|q| q.contains("limit=2")), "{lists:?}");
}

#[test]
fn a_relist_budget_given_with_the_reflector_settings_is_the_factorys() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    let budget = RelistBudget::new(1);
    let shared = FactoryOptions::default().reflector(ReflectorConfig {
        relist_budget: Some(budget.clone()),
        ..Default::default()
    });
    let factory = SharedInformerFactory::new(server.client().unwrap(), shared.clone());
    assert!(Arc::ptr_eq(&factory.relist_budget(), &budget));
    // Setting the number of lists afterwards replaces it (last setter of the one budget wins, as for any value).
    let factory = SharedInformerFactory::new(server.client().unwrap(), shared.max_concurrent_lists(3));
    assert!(!Arc::ptr_eq(&factory.relist_budget(), &budget));
}

#[test]
fn transforms_and_watch_error_handlers_given_twice_all_run() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    server.create(&cm("ns", "a", "1")).unwrap();
    server.inject(Fault::list("configmaps").error(500).times(1));
    let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (f, s) = (first.clone(), second.clone());
    let api = Api::<ConfigMap>::all(server.client().unwrap());
    let informer = SharedIndexInformer::for_api(
        &api,
        InformerOptions::default()
            .reflector(ReflectorConfig {
                streaming_list: false,
                ..quick_reflector()
            })
            .transform(|cm: &mut ConfigMap| {
                cm.data.insert("first".into(), "yes".into());
            })
            .transform(|cm: &mut ConfigMap| {
                // Runs after the first: sees what it wrote.
                let seen = cm.data.get("first").unwrap_or("no").to_owned();
                cm.data.insert("second-saw-first".into(), seen);
            })
            .watch_error_handler(move |_| {
                f.fetch_add(1, Ordering::SeqCst);
            })
            .watch_error_handler(move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            }),
    );
    informer.start().unwrap();
    assert!(informer.wait_synced(WAIT));
    let cached = informer.lister().get("ns/a").unwrap();
    assert_eq!(cached.data.get("second-saw-first"), Some("yes"));
    assert_eq!((first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)), (1, 1));
    informer.stop();
}
