//! The controller author's toolkit against the embedded API server: the generation predicate and the status-write
//! loop it prevents, and the finalizer protocol with the races that make it necessary (two replicas removing or
//! adding it, a crash between cleanup and removal).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};

use crossbeam_channel::unbounded;
use kube_informer::cache::ListWatch;
use kube_informer::client::params::{DeleteParams, Patch, PatchParams, PostParams};
use kube_informer::client::{Api, Client};
use kube_informer::controller::predicate::GenerationChanged;
use kube_informer::controller::{
    Action, Context, Controller, ControllerOptions, FinalizerError, FinalizerEvent, finalizer,
};
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, is_controlled_by, set_controller_reference};
use kube_informer_apiserver::{ApiServer, Fault, Verb};
use serde_json::json;

mod common;
use common::widget::{Widget, widget, widget_spec};
use common::{WAIT, eventually};

const FINALIZER: &str = "widgets.example.com/cleanup";

fn server() -> (ApiServer, Client) {
    let server = ApiServer::builder().resource(widget_spec()).start().unwrap();
    let client = server.client().unwrap();
    (server, client)
}

fn widgets(client: &Client) -> Arc<SharedIndexInformer<Widget>> {
    Arc::new(SharedIndexInformer::new(
        ListWatch::new(&Api::<Widget>::all(client.clone())),
        InformerOptions::default().name("widgets"),
    ))
}

#[test]
fn a_status_write_does_not_requeue_under_the_generation_predicate() {
    let (server, client) = server();
    let informer = widgets(&client);
    let (tx, rx) = unbounded();
    let api: Api<Widget> = Api::namespaced(client.clone(), "default");
    let controller = Controller::builder(informer.clone(), api.clone())
        .options(ControllerOptions::default().name("status-writer"))
        .predicate(GenerationChanged)
        .build(move |_: &str, ctx: &Context<'_, Widget, Api<Widget>>| {
            let Some(w) = ctx.object() else {
                return Ok(Action::await_change());
            };
            let generation = w.metadata.generation;
            let _ = tx.send(generation);
            let observed = w.status.as_ref().and_then(|s| s.observed_generation);
            if observed != generation {
                // The write that, without the predicate, comes back as an update and queues the key again.
                let patch = json!({"status": {"observedGeneration": generation}});
                ctx.data()
                    .patch_status(ctx.name(), &PatchParams::default(), &Patch::Merge(&patch))?;
            }
            Ok::<_, kube_informer::Error>(Action::await_change())
        })
        .unwrap();
    controller.start().unwrap();
    informer.wait_for_cache_sync(WAIT).unwrap();

    api.create(&PostParams::default(), &widget("default", "w", "red"))
        .unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), Some(1));
    eventually("the status write judged", || controller.metrics().filtered == 1);

    // A spec change bumps the generation: reconciled.
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 2}})),
    )
    .unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), Some(2));
    eventually("the second status write judged", || controller.metrics().filtered == 2);
    let m = controller.metrics();
    assert_eq!(
        m.queue.unwrap().adds,
        2,
        "the create and the spec change queued the key; the status writes did not"
    );
    assert_eq!(rx.try_iter().count(), 0);
    let stored = server.get::<Widget>(Some("default"), "w").unwrap();
    assert_eq!(stored.status.unwrap().observed_generation, Some(2));
    controller.stop();
    informer.stop();
}

/// What the widget controller shares with its reconciles.
struct App {
    widgets: Api<Widget>,
    client: Client,
    cleanups: AtomicU32,
    /// Cleanups to fail before one succeeds.
    failing_cleanups: AtomicU32,
    /// Whether each failed cleanup found the widget still there, finalizer and all.
    held_while_failing: crossbeam_channel::Sender<bool>,
}

fn settings_name(w: &Widget) -> String {
    format!("{}-settings", w.metadata.name.as_deref().unwrap_or_default())
}

fn reconcile(_key: &str, ctx: &Context<'_, Widget, App>) -> Result<Action, FinalizerError<kube_informer::Error>> {
    let Some(w) = ctx.object() else {
        return Ok(Action::await_change());
    };
    let app = ctx.data();
    finalizer(&app.widgets, FINALIZER, w, |event| match event {
        FinalizerEvent::Apply(w) => {
            let ns = w.metadata.namespace.clone().unwrap_or_default();
            let cms: Api<ConfigMap> = Api::namespaced(app.client.clone(), &ns);
            let mut cm = ConfigMap::new(ObjectMeta::namespaced(&ns, settings_name(&w))).with("color", &w.spec.color);
            set_controller_reference(&*w, &mut cm).map_err(|e| kube_informer::Error::InvalidInput(e.to_string()))?;
            match cms.create(&PostParams::default(), &cm) {
                Err(e) if !e.is_already_exists() => Err(e),
                _ => Ok(Action::await_change()),
            }
        }
        FinalizerEvent::Cleanup(w) => {
            let ns = w.metadata.namespace.clone().unwrap_or_default();
            app.cleanups.fetch_add(1, Ordering::SeqCst);
            if app
                .failing_cleanups
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                let now = Api::<Widget>::namespaced(app.client.clone(), &ns)
                    .get_opt(w.metadata.name.as_deref().unwrap_or_default())?;
                let held = now.is_some_and(|w| {
                    w.metadata.deletion_timestamp.is_some() && w.metadata.finalizers.iter().any(|f| f == FINALIZER)
                });
                let _ = app.held_while_failing.send(held);
                return Err(kube_informer::Error::InvalidInput("the external system is down".into()));
            }
            // Idempotent: a 404 is success.
            let cms: Api<ConfigMap> = Api::namespaced(app.client.clone(), &ns);
            match cms.delete(&settings_name(&w), &DeleteParams::default()) {
                Err(e) if !e.is_not_found() => Err(e),
                _ => Ok(Action::await_change()),
            }
        }
    })
}

#[test]
fn the_finalizer_holds_the_object_until_its_cleanup_succeeds() {
    let (server, client) = server();
    let informer = widgets(&client);
    let configmaps = Arc::new(SharedIndexInformer::new(
        ListWatch::new(&Api::<ConfigMap>::all(client.clone())),
        InformerOptions::default().name("configmaps"),
    ));
    let (held_tx, held_rx) = unbounded();
    let app = App {
        widgets: Api::all(client.clone()),
        client: client.clone(),
        cleanups: AtomicU32::new(0),
        failing_cleanups: AtomicU32::new(1),
        held_while_failing: held_tx,
    };
    let fast = ControllerOptions::default().name("widgets").rate_limiter(
        kube_informer::workqueue::ItemExponentialFailureRateLimiter::new(
            std::time::Duration::from_millis(1),
            std::time::Duration::from_millis(50),
        ),
    );
    let controller = Controller::builder(informer.clone(), app)
        .options(fast)
        .predicate(GenerationChanged)
        .owns(configmaps.clone())
        .build(reconcile)
        .unwrap();
    controller.start().unwrap();

    let api: Api<Widget> = Api::namespaced(client.clone(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &widget("default", "w", "red"))
        .unwrap();
    // The finalizer is added before the first Apply, which then runs at once (the predicate would stop the
    // finalizer's own update: it leaves the generation alone).
    eventually("the owned ConfigMap", || cms.get_opt("w-settings").unwrap().is_some());
    let w = api.get("w").unwrap();
    assert_eq!(w.metadata.finalizers, [FINALIZER]);
    let cm = cms.get("w-settings").unwrap();
    assert!(is_controlled_by(&cm, &w));
    assert_eq!(cm.data.get("color"), Some("red"));

    let mark = server.requests().mark();
    api.delete("w", &DeleteParams::default()).unwrap();
    assert!(
        held_rx.recv_timeout(WAIT).unwrap(),
        "while the cleanup fails the widget stays, finalizer and all"
    );
    eventually("the widget gone", || api.get_opt("w").unwrap().is_none());
    assert!(cms.get_opt("w-settings").unwrap().is_none(), "cleaned up");
    // Once failed, once succeeded; maybe once more when a queued event finds the widget still cached (idempotent).
    assert!(controller.data().cleanups.load(Ordering::SeqCst) >= 2);
    // The ConfigMap went before the finalizer did.
    let log = server.requests().since(mark);
    let cm_deleted = log
        .iter()
        .position(|r| r.verb == Verb::Delete && r.is_for("configmaps") && r.code == 200)
        .expect("the ConfigMap deleted");
    let finalizer_removed = log
        .iter()
        .position(|r| r.verb == Verb::Patch && r.is_for("widgets") && r.code == 200)
        .expect("the finalizer removed");
    assert!(cm_deleted < finalizer_removed, "{log:#?}");
    controller.stop();
    informer.stop();
    configmaps.stop();
}

/// A widget carrying `finalizers` whose deletion has started.
fn deleting(server: &ApiServer, client: &Client, finalizers: &[&str]) -> Widget {
    let api: Api<Widget> = Api::namespaced(client.clone(), "default");
    let mut w = widget("default", "w", "red");
    w.metadata.finalizers = finalizers.iter().map(|f| f.to_string()).collect();
    api.create(&PostParams::default(), &w).unwrap();
    api.delete("w", &DeleteParams::default()).unwrap();
    let w = server.get::<Widget>(Some("default"), "w").unwrap();
    assert!(w.metadata.deletion_timestamp.is_some());
    w
}

#[test]
fn a_crash_between_cleanup_and_removal_reruns_the_cleanup() {
    let (server, client) = server();
    let api: Api<Widget> = Api::all(client.clone());
    let w = deleting(&server, &client, &[FINALIZER]);
    let cleanups = AtomicU32::new(0);
    let cleanup = |event: FinalizerEvent<Widget>| match event {
        FinalizerEvent::Cleanup(_) => {
            cleanups.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(Action::await_change())
        }
        FinalizerEvent::Apply(_) => panic!("a deleting object is never applied"),
    };
    // The cleanup succeeds, then the process "dies": the removal never lands.
    server.inject(Fault::on(Some(Verb::Patch), Some("widgets")).error(500));
    let e = finalizer(&api, FINALIZER, Arc::new(w), cleanup).unwrap_err();
    assert!(
        matches!(&e, FinalizerError::RemoveFinalizer(e) if e.code() == Some(500)),
        "{e}"
    );
    assert_eq!(cleanups.load(Ordering::SeqCst), 1);
    let w = server.get::<Widget>(Some("default"), "w").unwrap();
    assert_eq!(w.metadata.finalizers, [FINALIZER], "the object waits");

    // The next reconcile (after a restart) runs the cleanup again, then removes the finalizer.
    let cleanup = |event: FinalizerEvent<Widget>| match event {
        FinalizerEvent::Cleanup(_) => {
            cleanups.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(Action::await_change())
        }
        FinalizerEvent::Apply(_) => panic!("a deleting object is never applied"),
    };
    let action = finalizer(&api, FINALIZER, Arc::new(w), cleanup).unwrap();
    assert_eq!(action, Action::await_change());
    assert_eq!(cleanups.load(Ordering::SeqCst), 2);
    assert!(
        server.get::<Widget>(Some("default"), "w").is_err(),
        "gone with its last finalizer"
    );
}

#[test]
fn two_replicas_removing_the_finalizer_remove_only_theirs() {
    const OTHER: &str = "other.example.com/keep";
    let (server, client) = server();
    // Our finalizer first: a removal by index that did not test the value would take the other one second.
    let stale = Arc::new(deleting(&server, &client, &[FINALIZER, OTHER]));
    let both_cleaned = Arc::new(Barrier::new(2));
    let mark = server.requests().mark();
    let replicas: Vec<_> = (0..2)
        .map(|i| {
            let (stale, both_cleaned) = (stale.clone(), both_cleaned.clone());
            let api: Api<Widget> = Api::all(server.client().unwrap());
            std::thread::Builder::new()
                .name(format!("test/replica-{i}"))
                .spawn(move || {
                    finalizer(&api, FINALIZER, stale, |event| match event {
                        FinalizerEvent::Cleanup(_) => {
                            // Both replicas cleaned up before either removes the finalizer.
                            both_cleaned.wait();
                            Ok::<_, String>(Action::await_change())
                        }
                        FinalizerEvent::Apply(_) => panic!("a deleting object is never applied"),
                    })
                })
                .unwrap()
        })
        .collect();
    for r in replicas {
        let action = r
            .join()
            .unwrap()
            .expect("both replicas succeed: the loser finds nothing left to do");
        assert_eq!(action, Action::await_change());
    }
    let w = server.get::<Widget>(Some("default"), "w").unwrap();
    assert_eq!(w.metadata.finalizers, [OTHER], "only our finalizer went");
    let patches: Vec<u16> = server
        .requests()
        .since(mark)
        .iter()
        .filter(|r| r.verb == Verb::Patch)
        .map(|r| r.code)
        .collect();
    let mut sorted = patches.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [200, 422],
        "one removal won, the other's test failed: {patches:?}"
    );
}

#[test]
fn two_replicas_adding_the_finalizer_add_it_once() {
    let (server, client) = server();
    let api: Api<Widget> = Api::all(client.clone());
    let created = Api::<Widget>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &widget("default", "w", "red"))
        .unwrap();
    let stale = Arc::new(created);
    let applies = AtomicU32::new(0);
    let apply = |event: FinalizerEvent<Widget>| match event {
        FinalizerEvent::Apply(w) => {
            assert_eq!(w.metadata.finalizers, [FINALIZER], "Apply sees the finalizer in place");
            applies.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(Action::await_change())
        }
        FinalizerEvent::Cleanup(_) => panic!("a live object is never cleaned up"),
    };
    // Both replicas read the object without our finalizer; the second writes against a stale resourceVersion.
    assert_eq!(
        finalizer(&api, FINALIZER, stale.clone(), apply).unwrap(),
        Action::await_change()
    );
    let apply = |event: FinalizerEvent<Widget>| match event {
        FinalizerEvent::Apply(w) => {
            assert_eq!(w.metadata.finalizers, [FINALIZER]);
            applies.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(Action::await_change())
        }
        FinalizerEvent::Cleanup(_) => panic!("a live object is never cleaned up"),
    };
    let mark = server.requests().mark();
    assert_eq!(
        finalizer(&api, FINALIZER, stale, apply).unwrap(),
        Action::await_change()
    );
    assert_eq!(applies.load(Ordering::SeqCst), 2);
    let w = server.get::<Widget>(Some("default"), "w").unwrap();
    assert_eq!(w.metadata.finalizers, [FINALIZER], "added once");
    let codes: Vec<(Verb, u16)> = server.requests().since(mark).iter().map(|r| (r.verb, r.code)).collect();
    assert_eq!(
        codes,
        [(Verb::Patch, 409), (Verb::Get, 200)],
        "the stale add conflicted and was re-read"
    );

    // An invalid finalizer name is refused before anything is sent.
    let e = finalizer(&api, "Not A Name", Arc::new(w), |_| {
        Ok::<_, String>(Action::await_change())
    })
    .unwrap_err();
    assert!(matches!(e, FinalizerError::InvalidFinalizerName(_)), "{e}");
}
