//! Health and errors as a user meets them, against the embedded API server: a missing RBAC verb, a resource the
//! server does not serve, a server that refuses connections, a transform that panics. Each one names its cause in
//! the informer's health, in `NotSynced` and in the metrics, and the health moves as it should.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use kube_informer::client::Api;
use kube_informer::health::Health;
use kube_informer::informer::{FactoryOptions, InformerOptions, SharedIndexInformer, SharedInformerFactory};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer_apiserver::{AccessRule, ApiServer, ResourceSpec};
use parking_lot::Mutex;

/// Every line logged by this test binary's threads (tests tell theirs apart by the informer's name).
static LINES: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());

struct Collect;

impl log::Log for Collect {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.target().starts_with("kube_informer")
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            LINES.lock().push((r.level(), r.args().to_string()));
        }
    }
    fn flush(&self) {}
}

fn install_logger() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        log::set_boxed_logger(Box::new(Collect)).unwrap();
        log::set_max_level(log::LevelFilter::Debug);
    });
}

fn logged(level: log::Level, containing: &str) -> Vec<String> {
    LINES
        .lock()
        .iter()
        .filter(|(l, m)| *l == level && m.contains(containing))
        .map(|(_, m)| m.clone())
        .collect()
}

fn degraded_error(h: &Health) -> Option<(u64, String)> {
    match h {
        Health::Degraded {
            attempts, last_error, ..
        } => Some((*attempts, last_error.clone())),
        _ => None,
    }
}

#[test]
fn a_missing_rbac_verb_is_named_by_not_synced_health_and_metrics() {
    let server = server_allowing_only_configmaps();
    server.create(&cm("ns", "a", "1")).unwrap();
    let factory = SharedInformerFactory::new(
        server.client().unwrap(),
        FactoryOptions::default().reflector(quick_reflector()),
    );
    let configmaps = factory.informer::<ConfigMap>();
    let secrets = factory.informer_for::<DynamicObject>(&ApiResource::new("", "v1", "Secret", "secrets", true));
    assert!(secrets.health().state.is_healthy(), "not started: nothing wrong yet");
    factory.start().unwrap();
    configmaps.wait_for_cache_sync(WAIT).unwrap();
    eventually("two failed rounds", || {
        degraded_error(&secrets.health().state).is_some_and(|(attempts, _)| attempts >= 2)
    });

    let err = factory.wait_for_cache_sync(Duration::ZERO).unwrap_err();
    assert_eq!(err.names(), ["secrets"]);
    let text = err.to_string();
    // The message README.md's "Health, errors and metrics" shows, word for word up to the attempt count and age.
    let (shown, counts) = text.rsplit_once(" (").unwrap();
    assert_eq!(
        shown,
        r#"informers not synced: secrets: list failed: API error 403 Forbidden: secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" at the cluster scope — the credentials lack the RBAC verb "list" on this resource"#
    );
    assert!(
        counts.contains(" attempts, last ") && counts.ends_with(" ago)"),
        "{counts}"
    );
    assert!(
        text.starts_with("informers not synced: secrets: list failed: API error 403 Forbidden: secrets is forbidden: ")
            && text.contains(r#"User "alice" cannot list resource "secrets""#)
            && text.contains(r#"the credentials lack the RBAC verb "list" on this resource"#)
            && text.contains(" attempts, last ")
            && text.ends_with(" ago)"),
        "{text}"
    );

    let health = factory.health();
    assert!(
        matches!(health.state, Health::Degraded { .. }) && !health.is_ready(),
        "{health:?}"
    );
    let ok = health.informers.iter().find(|i| i.name == "configmaps").unwrap();
    assert!(
        ok.is_ready() && ok.last_error.is_none() && ok.last_list_age.is_some(),
        "{ok:?}"
    );
    let last = secrets.metrics().last_error.expect("the metrics carry the last error");
    assert!(last.message.contains("403 Forbidden"), "{last:?}");

    factory.shutdown();
    assert!(factory.health().state.is_halted());
}

#[test]
fn an_unserved_resource_degrades_with_its_404_then_heals_once_served() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    let widgets = ApiResource::new("example.com", "v1", "Widget", "widgets", true);
    let api = Api::<DynamicObject>::all_with(server.client().unwrap(), &widgets);
    let informer = SharedIndexInformer::for_api(&api, InformerOptions::default().reflector(quick_reflector()));
    informer.start().unwrap();
    eventually("degraded by the 404", || {
        degraded_error(&informer.health().state).is_some()
    });
    let (_, error) = degraded_error(&informer.health().state).unwrap();
    assert!(
        error.contains("404") && error.contains("the server does not serve this resource"),
        "{error}"
    );
    assert!(!informer.has_synced());

    server.register(ResourceSpec::new(widgets));
    assert!(
        informer.wait_for_cache_sync(WAIT).is_ok(),
        "synced once the resource is served"
    );
    eventually("healthy again", || informer.health().state.is_healthy());
    let health = informer.health();
    assert!(health.is_ready(), "{health:?}");
    assert!(
        health.last_error.is_some_and(|e| e.message.contains("404")),
        "the last error is kept after recovery"
    );
    informer.stop();
}

#[test]
fn refused_connections_degrade_and_a_listening_server_heals() {
    install_logger();
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    server.create(&cm("ns", "a", "1")).unwrap();
    let api = Api::<ConfigMap>::all(server.client().unwrap());
    let informer = SharedIndexInformer::for_api(
        &api,
        InformerOptions::default()
            .name("refused-configmaps")
            .reflector(quick_reflector()),
    );
    informer.start().unwrap();
    informer.wait_for_cache_sync(WAIT).unwrap();
    assert!(informer.health().is_ready());

    server.stop_listening();
    eventually("degraded while refused", || {
        degraded_error(&informer.health().state).is_some_and(|(_, e)| e.contains("refused"))
    });
    assert!(informer.has_synced(), "has_synced keeps client-go's meaning");
    assert!(!informer.health().is_ready());

    server.start_listening().unwrap();
    server.create(&cm("ns", "b", "2")).unwrap();
    eventually("healthy once events flow again", || {
        informer.health().state.is_healthy()
    });
    eventually("the new object cached", || informer.lister().len() == 2);
    assert!(informer.health().last_event_age.is_some());
    let recovered = logged(log::Level::Info, "refused-configmaps: list and watch recovered after ");
    assert_eq!(recovered.len(), 1, "{recovered:?}");

    server.shutdown();
    eventually("degraded once the server is gone", || {
        degraded_error(&informer.health().state).is_some()
    });
    informer.stop();
    assert_eq!(
        informer.health().state,
        Health::Halted {
            reason: "stopped".into()
        }
    );
}

#[test]
fn a_panic_in_a_transform_halts_the_informer_and_says_so_at_error() {
    install_logger();
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    server.create(&cm("ns", "fine", "1")).unwrap();
    let api = Api::<ConfigMap>::all(server.client().unwrap());
    let informer = Arc::new(SharedIndexInformer::for_api(
        &api,
        InformerOptions::default()
            .name("panicky-configmaps")
            .reflector(quick_reflector())
            .transform(|cm: &mut ConfigMap| {
                assert!(cm.metadata.name.as_deref() != Some("boom"), "cannot transform boom");
            }),
    ));
    informer.start().unwrap();
    informer.wait_for_cache_sync(WAIT).unwrap();
    assert!(informer.health().state.is_healthy());

    server.create(&cm("ns", "boom", "1")).unwrap();
    eventually("halted", || informer.health().state.is_halted());
    let Health::Halted { reason } = informer.health().state else {
        unreachable!()
    };
    assert!(
        reason.starts_with("the reflector thread panicked: ") && reason.contains("cannot transform boom"),
        "{reason}"
    );
    eventually("every thread ended", || informer.running_threads() == 0);
    assert!(
        informer.has_synced(),
        "has_synced keeps client-go's meaning over the frozen cache"
    );
    assert!(!informer.health().is_ready());
    let errors = logged(log::Level::Error, "panicky-configmaps: the reflector thread panicked");
    assert_eq!(errors.len(), 1, "{errors:?}");
    informer.stop();
    assert!(
        informer.health().state == Health::Halted { reason },
        "stopping keeps the first reason"
    );
}

#[test]
fn a_controller_an_elector_and_a_recorder_degrade_with_the_error_that_stops_them() {
    use kube_informer::controller::{Action, Context, Controller};
    use kube_informer::events::{ApiEventSink, EventRecorder, RecorderOptions};
    use kube_informer::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};

    fn noop(_key: &str, _ctx: &Context<'_, DynamicObject, ()>) -> kube_informer::Result<Action> {
        Ok(Action::await_change())
    }

    install_logger();
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .token("t", "bob")
        .kubeconfig_user("bob")
        .rule(AccessRule::user("bob").resources(&["configmaps"]))
        .start()
        .unwrap();
    let client = server.client().unwrap();
    let secrets = Arc::new(SharedIndexInformer::for_api(
        &Api::<DynamicObject>::all_with(client.clone(), &ApiResource::new("", "v1", "Secret", "secrets", true)),
        InformerOptions::default().reflector(quick_reflector()),
    ));
    let controller = Controller::builder(secrets.clone(), ()).build(noop).unwrap();
    controller.start().unwrap();
    eventually("the controller degraded by its informer", || {
        degraded_error(&controller.health()).is_some()
    });
    let (_, error) = degraded_error(&controller.health()).unwrap();
    assert!(
        error.starts_with("informer secrets: list failed: API error 403 Forbidden: "),
        "{error}"
    );

    let elector = LeaderElector::start(
        LeaseLock::new(&client, "default", "health-test", "bob-1"),
        LeaderElectionConfig::default().name("health-test"),
        LeaderCallbacks::new(),
    )
    .unwrap();
    eventually("the elector degraded", || degraded_error(&elector.health()).is_some());
    let (_, error) = degraded_error(&elector.health()).unwrap();
    assert!(
        error.starts_with("cannot read the lock: ") && error.contains("403 Forbidden"),
        "{error}"
    );
    let warned = logged(log::Level::Warn, "health-test: cannot read the lock: ");
    assert_eq!(warned.len(), 1, "warned once, not at every retry: {warned:?}");

    let recorder = EventRecorder::new(ApiEventSink::new(client.clone()), RecorderOptions::new("health-test")).unwrap();
    recorder.normal(&cm("ns", "a", "1"), "Tested", "refused");
    assert!(recorder.flush(WAIT));
    let (_, error) = degraded_error(&recorder.health()).expect("degraded by the refused write");
    assert!(
        error.starts_with("cannot write events: ") && error.contains("403"),
        "{error}"
    );

    controller.stop();
    elector.stop();
    recorder.stop();
    for health in [controller.health(), elector.health(), recorder.health()] {
        assert_eq!(
            health,
            Health::Halted {
                reason: "stopped".into()
            }
        );
    }
    secrets.stop();
}
