//! Options that compose: each setter of a factory's or an informer's options adds to what the calls before it set
//! (transforms chain, selectors must all match, tweaks run in turn, error handlers are all called), and the settings
//! an informer brings are not replaced by its factory's. Each test fails where a later setter used to replace an
//! earlier one.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use kube_informer::cache::{Fifo, ReflectorConfig, RelistBudget};
use kube_informer::client::Api;
use kube_informer::client::params::ListParams;
use kube_informer::informer::{
    FactoryOptions, HandlerOptions, InformerOptions, Notification, QueuePolicy, ResourceEventHandler,
    SharedIndexInformer, SharedInformerFactory,
};
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
    informer.wait_for_cache_sync(WAIT).unwrap();
    let cached = informer.lister().get("ns/a").unwrap();
    assert_eq!(cached.data.get("second-saw-first"), Some("yes"));
    assert_eq!((first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)), (1, 1));
    informer.stop();
}

/// Records what it is handed (`"add a"`, `"update a"`), each event once its gate lets it through: it says when it
/// holds an event, and lets every event through once the gate is dropped.
struct Held {
    entered: crossbeam_channel::Sender<()>,
    gate: crossbeam_channel::Receiver<()>,
    seen: crossbeam_channel::Sender<String>,
}

impl ResourceEventHandler<ConfigMap> for Held {
    fn handle(&mut self, ev: &Notification<ConfigMap>) {
        let _ = self.entered.send(());
        let _ = self.gate.recv();
        let (what, obj) = match ev {
            Notification::Add { obj, .. } => ("add", obj),
            Notification::Update { new, .. } => ("update", new),
            Notification::Delete(d) => ("delete", d.object()),
        };
        let _ = self
            .seen
            .send(format!("{what} {}", obj.metadata.name.as_deref().unwrap_or_default()));
    }
}

/// The order `informer`'s handlers see a, b, a again: with its processing thread held (its handler holds one event,
/// the handler's queue of one holds another, the processing thread waits to hand over a third) while the server
/// makes them, so that they wait together in the informer's queue.
fn order_seen_while_held(
    server: &ApiServer,
    factory: &SharedInformerFactory,
    informer: &SharedIndexInformer<ConfigMap>,
    queued: usize,
) -> Vec<String> {
    let (entered_tx, entered) = crossbeam_channel::unbounded();
    let (open, gate) = crossbeam_channel::unbounded::<()>();
    let (seen_tx, seen) = crossbeam_channel::unbounded();
    let held = Held {
        entered: entered_tx,
        gate,
        seen: seen_tx,
    };
    let reg = informer
        .add_event_handler_with(
            held,
            HandlerOptions::default().queue(QueuePolicy::Block { capacity: 1 }),
        )
        .unwrap();
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    server.create(&cm("ns", "x", "0")).unwrap();
    entered.recv_timeout(WAIT).expect("the handler holds x");
    server.create(&cm("ns", "y", "0")).unwrap();
    eventually("y queued for the handler", || reg.pending() == 1);
    server.create(&cm("ns", "z", "0")).unwrap();
    eventually("the processing thread waits to hand over z", || reg.pending() == 2);
    server.create(&cm("ns", "a", "1")).unwrap();
    server.create(&cm("ns", "b", "1")).unwrap();
    server.replace(&cm("ns", "a", "2")).unwrap();
    // Queued after the others: the queue holds `queued` items (4 changes in a RealFIFO, 3 objects in a DeltaFIFO)
    // only once every change is in.
    server.create(&cm("ns", "end", "1")).unwrap();
    eventually("every change queued", || informer.metrics().fifo_depth == queued);
    drop(open);
    let order: Vec<String> = (0..7).map(|_| seen.recv_timeout(WAIT).unwrap()).collect();
    factory.shutdown();
    order[3..].to_vec()
}

#[test]
fn a_factorys_queue_is_its_informers_unless_they_bring_their_own() {
    let in_order = ["add a", "add b", "update a", "add end"];
    // A DeltaFIFO's documented order: a's second change waits at the place of its first.
    let by_object = ["add a", "update a", "add b", "add end"];
    // The factory's options, the informer's own queue, the order seen, the items queued while held.
    let cases: [(FactoryOptions, Option<Fifo>, [&str; 4], usize); 3] = [
        (FactoryOptions::default(), None, in_order, 4),
        (FactoryOptions::default().fifo(Fifo::Delta), None, by_object, 3),
        (
            FactoryOptions::default().fifo(Fifo::Delta),
            Some(Fifo::Real),
            in_order,
            4,
        ),
    ];
    for (i, (options, own, expected, queued)) in cases.into_iter().enumerate() {
        let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
        let factory = SharedInformerFactory::new(server.client().unwrap(), options.reflector(quick_reflector()));
        let informer_options = match own {
            Some(fifo) => InformerOptions::default().fifo(fifo),
            None => InformerOptions::default(),
        };
        let informer = factory.informer_with::<ConfigMap>(&ConfigMap::api_resource(), informer_options);
        assert_eq!(
            order_seen_while_held(&server, &factory, &informer, queued),
            expected,
            "case {i}"
        );
    }
}
