//! Stopping from any state: every long-lived component stops and joins its threads, whatever it is doing — each
//! state of the reflector's state machine (tests/informer.rs covers a stalled LIST, a back-off after 429 and a silent
//! watch), a reflector waiting for the relist budget, a factory whose handler is stuck, a Block queue holding the
//! processing thread. Each test asserts that stop returned and that the threads are gone (no timing assertions:
//! the test would hang, or its thread counts be wrong, if stop did not work).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{TempDir, WAIT, cm, eventually, hanging_plugin, pid_in, process_alive, process_exists, thread_names};
use crossbeam_channel::Receiver;
use kube_informer::cache::{BackoffConfig, ReflectorConfig};
use kube_informer::client::{Api, Client, Config};
use kube_informer::informer::{
    FactoryOptions, HandlerOptions, InformerOptions, Notification, QueuePolicy, SharedIndexInformer,
    SharedInformerFactory,
};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer_apiserver::{ApiServer, Fault, Verb};

fn seed(server: &ApiServer, n: usize) {
    for i in 0..n {
        server.create(&cm("ns", &format!("cm-{i:03}"), "0")).unwrap();
    }
}

fn informer(client: &Client, reflector: ReflectorConfig) -> SharedIndexInformer<ConfigMap> {
    SharedIndexInformer::for_api(
        &Api::<ConfigMap>::all(client.clone()),
        InformerOptions::default().reflector(reflector),
    )
}

fn stops(what: &str, inf: &SharedIndexInformer<ConfigMap>) {
    inf.stop();
    assert_eq!(inf.running_threads(), 0, "{what}: every thread joined");
}

/// The reflector with the default (client-go) settings, but lists instead of streaming lists.
fn listing() -> ReflectorConfig {
    ReflectorConfig {
        streaming_list: false,
        ..Default::default()
    }
}

#[test]
fn stop_returns_while_a_watch_waits_for_its_headers() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 2);
    server.inject(Fault::watch("configmaps").stall());
    let inf = informer(&server.client().unwrap(), listing());
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    // A stalled request is logged once answered; the fault is taken when it arrives.
    eventually("the watch arrived and stalled", || server.pending_faults() == 0);
    stops("opening a watch", &inf);
    server.clear_faults();
}

#[test]
fn stop_returns_during_the_initial_phase_of_a_streaming_list() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 50);
    let mark = server.requests().mark();
    // The streaming list sends 5 of its 50 initial events, then nothing.
    server.inject(Fault::watch("configmaps").stall_after_events(5));
    let inf = informer(&server.client().unwrap(), ReflectorConfig::default());
    inf.start().unwrap();
    assert!(
        server
            .requests()
            .wait_for_count(mark, Verb::Watch, "configmaps", 1, WAIT)
    );
    eventually("the first initial events arrived", || {
        inf.metrics().reflector.watch_events == 5
    });
    assert!(!inf.has_synced(), "still in the initial phase");
    stops("streaming list", &inf);
    server.clear_faults();
}

#[test]
fn stop_returns_between_two_pages_of_a_list() {
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .watch_cache(false)
        .start()
        .unwrap();
    seed(&server, 30);
    let mark = server.requests().mark();
    // The first page is answered, the second never.
    server.inject(Fault::list("configmaps").stall().lasting(Duration::ZERO));
    server.inject(Fault::list("configmaps").stall());
    let reflector = ReflectorConfig {
        page_size: 10,
        ..listing()
    };
    let inf = informer(&server.client().unwrap(), reflector);
    inf.start().unwrap();
    assert!(
        server
            .requests()
            .wait_for_count(mark, Verb::List, "configmaps", 1, WAIT)
    );
    eventually("the first page queued", || {
        inf.metrics().fifo_depth + inf.lister().len() >= 10
    });
    stops("paging", &inf);
    server.clear_faults();
}

#[test]
fn stop_returns_while_backing_off_from_a_server_that_refuses_connections() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 2);
    let reflector = ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_secs(3600),
            max: Duration::from_secs(3600),
            ..Default::default()
        },
        ..listing()
    };
    let inf = informer(&server.client().unwrap(), reflector);
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    assert!(server.wait_for_watchers("configmaps", 1, WAIT));
    server.stop_listening();
    // The cut watch fails to reconnect and backs off for up to an hour.
    eventually("the watch was lost", || inf.metrics().reflector.watch_restarts >= 1);
    stops("backing off", &inf);
}

#[test]
fn stop_returns_while_waiting_out_the_relist_jitter() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 2);
    let reflector = ReflectorConfig {
        relist_jitter: Duration::from_secs(3600),
        ..listing()
    };
    let inf = informer(&server.client().unwrap(), reflector);
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    assert!(server.wait_for_watchers("configmaps", 1, WAIT));
    let mark = server.requests().mark();
    server.inject(Fault::watch("configmaps").error(410));
    server.restart().unwrap();
    assert!(
        server
            .requests()
            .wait_for_count(mark, Verb::Watch, "configmaps", 1, WAIT)
    );
    eventually("the 410 was taken", || inf.metrics().reflector.relists_gone == 1);
    stops("relist jitter", &inf);
}

#[test]
fn stop_returns_and_kills_the_exec_plugin_it_waited_for() {
    if !common::can_watch_plugin_processes() {
        return;
    }
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    let dir = TempDir::new("shutdown-exec");
    let config = Config::new(server.url()).proxy(None).exec(hanging_plugin(&dir));
    let inf = informer(&Client::new(config).unwrap(), listing());
    inf.start().unwrap();
    eventually("the plugin started its helper", || dir.path("helper").exists());
    let (plugin, helper) = (pid_in(&dir, "plugin"), pid_in(&dir, "helper"));
    stops("waiting for a credential", &inf);
    // Nobody waits for the plugin any more: it was killed and reaped before stop() returned, and the helper it
    // started dies with it, as does the thread that ran it.
    assert!(!process_exists(plugin), "the plugin ({plugin}) was killed and reaped");
    eventually("the plugin's helper was killed", || !process_alive(helper));
    eventually("the exec thread ended", || {
        !thread_names().iter().any(|n| n.starts_with("exec:"))
    });
}

#[test]
fn stop_returns_while_waiting_for_the_relist_budget() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    seed(&server, 2);
    let mark = server.requests().mark();
    // Whichever informer lists first holds the only slot forever; the other waits for it.
    server.inject(Fault::on(Some(Verb::List), None).stall());
    let factory = SharedInformerFactory::new(
        server.client().unwrap(),
        FactoryOptions::default().reflector(listing()).max_concurrent_lists(1),
    );
    let configmaps = factory.informer::<ConfigMap>();
    let secrets = factory.informer_for::<DynamicObject>(&ApiResource::new("", "v1", "Secret", "secrets", true));
    factory.start().unwrap();
    eventually("a LIST arrived and stalled", || server.pending_faults() == 0);
    assert_eq!(factory.relist_budget().in_use(), 1);
    factory.shutdown();
    assert_eq!(configmaps.running_threads() + secrets.running_threads(), 0);
    assert_eq!(factory.relist_budget().in_use(), 0, "the slot was given back");
    server.clear_faults();
    // The stalled LIST is logged once released; the other informer never listed.
    assert!(server.requests().wait_for(mark, WAIT, |r| !r.is_empty()));
    assert_eq!(
        server.requests().lists_since(mark, "configmaps") + server.requests().lists_since(mark, "secrets"),
        1,
        "{:?}",
        server.requests().since(mark)
    );
}

#[test]
fn a_factory_stops_with_a_stuck_handler_holding_the_processing_thread() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    // More objects than the processing thread applies to the store in one batch (64) before notifying.
    seed(&server, 100);
    let factory = SharedInformerFactory::new(server.client().unwrap(), FactoryOptions::default());
    let inf = factory.informer::<ConfigMap>();
    // A handler stuck on its first event, behind a queue of one: the processing thread waits to hand over the third.
    let (release, gate): (_, Receiver<()>) = crossbeam_channel::bounded(0);
    let (entered_tx, entered) = crossbeam_channel::unbounded();
    let reg = inf
        .add_event_handler_with(
            move |_: &Notification<ConfigMap>| {
                let _ = entered_tx.send(());
                let _ = gate.recv();
            },
            HandlerOptions::default()
                .name("stuck")
                .queue(QueuePolicy::Block { capacity: 1 }),
        )
        .unwrap();
    factory.start().unwrap();
    // The handler thread is inside the handler (not merely about to take its first event)...
    entered.recv_timeout(WAIT).expect("the handler was called");
    // ...and the processing thread waits to hand over the third event.
    eventually("the processing thread is held", || reg.pending() == 2);
    assert!(inf.lister().len() < 100, "the store waits too");
    factory.shutdown();
    // Everything but the handler's thread, which is in user code, has been joined; it exits once released.
    assert_eq!(inf.running_threads(), 1);
    drop(release);
    eventually("the handler's thread exited", || inf.running_threads() == 0);
    let shared: Arc<SharedIndexInformer<ConfigMap>> = inf;
    assert!(shared.is_stopped());
}
