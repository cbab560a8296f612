//! The event recorder writing to the embedded API server.

use std::time::Duration;

use kube_informer::client::{Client, Config};
use kube_informer::events::{ApiEventSink, Event, EventRecorder, EventType, ObjectReference, RecorderOptions};
use kube_informer::object::core::{ConfigMap, Namespace};
use kube_informer::object::{ObjectMeta, Resource};
use kube_informer_apiserver::{ApiServer, Fault, Verb};

const WAIT: Duration = Duration::from_secs(30);

fn recorder(server: &ApiServer, options: RecorderOptions) -> EventRecorder {
    let client = Client::new(Config::new(server.url()).proxy(None)).unwrap();
    EventRecorder::new(ApiEventSink::new(client), options).unwrap()
}

fn options() -> RecorderOptions {
    RecorderOptions::new("test-controller")
        .instance("replica-1")
        .retry_interval(Duration::from_millis(10))
}

fn cm(server: &ApiServer, name: &str) -> ConfigMap {
    server
        .create(&ConfigMap::new(ObjectMeta::namespaced("prod", name)))
        .unwrap()
}

fn events(server: &ApiServer, namespace: &str) -> Vec<Event> {
    server.list::<Event>(Some(namespace)).unwrap()
}

#[test]
fn repeated_events_aggregate_into_one_event_with_a_count() {
    let server = ApiServer::builder().namespaces(["prod"]).start().unwrap();
    let obj = cm(&server, "settings");
    let r = recorder(&server, options());
    let mark = server.requests().mark();
    for _ in 0..3 {
        assert!(r.normal(&obj, "Synced", "settings are in sync"));
    }
    assert!(r.flush(WAIT));
    let evs = events(&server, "prod");
    assert_eq!(evs.len(), 1, "{evs:?}");
    let e = &evs[0];
    assert_eq!(e.count, Some(3));
    assert_eq!(e.reason.as_deref(), Some("Synced"));
    assert_eq!(e.type_.as_deref(), Some("Normal"));
    assert_eq!(e.involved_object, ObjectReference::from_resource(&obj));
    assert_eq!(e.involved_object.uid, obj.metadata.uid.clone().unwrap());
    assert_eq!(e.source.as_ref().map(|s| s.component.as_str()), Some("test-controller"));
    assert_eq!(e.reporting_component.as_deref(), Some("test-controller"));
    assert_eq!(e.reporting_instance.as_deref(), Some("replica-1"));
    let name = e.metadata.name.clone().unwrap();
    assert!(name.starts_with("settings."), "{name}");
    assert!(
        name["settings.".len()..].chars().all(|c| c.is_ascii_hexdigit()),
        "<object>.<hex>: {name}"
    );
    assert!(e.first_timestamp.is_some() && e.last_timestamp >= e.first_timestamp);
    assert_eq!(server.requests().count_since(mark, Verb::Create, "events"), 1);
    assert_eq!(server.requests().count_since(mark, Verb::Patch, "events"), 2);

    // Another message or type is another event.
    r.warning(&obj, "Synced", "settings are in sync");
    r.normal(&obj, "Synced", "something else");
    assert!(r.flush(WAIT));
    assert_eq!(events(&server, "prod").len(), 3);
    let m = r.metrics();
    assert_eq!((m.created, m.patched, m.failed, m.dropped), (3, 2, 0, 0));
    r.stop();
    assert_eq!(r.running_threads(), 0);
}

#[test]
fn events_about_cluster_scoped_objects_go_to_default() {
    let server = ApiServer::builder().namespaces(["prod"]).start().unwrap();
    let ns: Namespace = server
        .create(&Namespace {
            metadata: ObjectMeta::named("team-a"),
            ..Default::default()
        })
        .unwrap();
    let r = recorder(&server, options());
    r.event(&ns, EventType::Normal, "Labelled", "team-a is managed");
    assert!(r.flush(WAIT));
    let evs = events(&server, "default");
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].involved_object.kind, Namespace::api_resource().kind);
    assert_eq!(evs[0].involved_object.namespace, "");
    r.stop();
}

#[test]
fn writes_are_retried_while_the_server_fails_and_an_expired_event_is_recreated() {
    let server = ApiServer::builder().namespaces(["prod"]).start().unwrap();
    let obj = cm(&server, "flaky");
    let r = recorder(&server, options());
    server.inject(Fault::on(Some(Verb::Create), Some("events")).error(503).times(2));
    r.normal(&obj, "Synced", "ok");
    assert!(r.flush(WAIT));
    assert_eq!(events(&server, "prod").len(), 1);
    assert_eq!(r.metrics().retries, 2);

    // The event expired on the server: the next repeat creates it again, count included.
    let name = events(&server, "prod")[0].metadata.name.clone().unwrap();
    server.delete::<Event>(Some("prod"), &name).unwrap();
    r.normal(&obj, "Synced", "ok");
    assert!(r.flush(WAIT));
    let evs = events(&server, "prod");
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].count, Some(2));
    r.stop();
}

#[test]
fn a_stalled_server_never_blocks_the_caller() {
    let server = ApiServer::builder().namespaces(["prod"]).start().unwrap();
    let obj = cm(&server, "busy");
    let r = recorder(&server, options().queue_capacity(4));
    server.inject(Fault::on(Some(Verb::Create), Some("events")).stall());
    // Distinct events (distinct messages): the writer blocks on the first; four wait; the rest are dropped.
    let accepted = (0..50).filter(|i| r.normal(&obj, "Tick", format!("tick {i}"))).count();
    assert!(accepted <= 5, "{accepted} accepted");
    assert!(r.metrics().dropped >= 45);
    server.clear_faults();
    assert!(r.flush(WAIT));
    let m = r.metrics();
    assert_eq!(m.created + m.failed, accepted as u64, "{m:?}");
    r.stop();
}
