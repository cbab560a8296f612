//! Nothing a server sends, and no duration a caller passes, can freeze or kill the library: absurd `Retry-After`s
//! (header and `Status` body) from a scripted peer, `Duration::MAX` timeouts meaning "forever", 410 and 429 storms,
//! exec plugins that hang or print secrets on stderr.

mod common;

use std::time::Duration;

use common::WAIT;
use common::peer::{Peer, response, too_many_requests};
use kube_informer::MAX_RETRY_AFTER;
use kube_informer::cache::ReflectorConfig;
use kube_informer::client::params::ListParams;
use kube_informer::client::{Api, Client, Config};
use kube_informer::events::{ApiEventSink, EventRecorder, RecorderOptions};
use kube_informer::informer::{
    FactoryOptions, HandlerOptions, InformerOptions, SharedIndexInformer, SharedInformerFactory,
};
use kube_informer::object::ObjectMeta;
use kube_informer::object::core::ConfigMap;
use kube_informer::testing::ApiServer;

fn client_of(peer: &Peer) -> Client {
    Client::new(Config::new(peer.url()).proxy(None)).unwrap()
}

/// The `Retry-After` of the error a LIST gets from a peer answering `status` with these headers and body.
fn list_retry_after(headers: &[(&str, &str)], body: &[u8]) -> Option<Duration> {
    let (headers, body): (Vec<(String, String)>, Vec<u8>) = (
        headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
        body.to_vec(),
    );
    let peer = Peer::start(move |_, _| {
        let h: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        response("429 Too Many Requests", &h, &body)
    });
    let api = Api::<ConfigMap>::namespaced(client_of(&peer), "default");
    let err = api.list(&ListParams::default()).unwrap_err();
    assert!(err.is_too_many_requests(), "{err}");
    err.retry_after()
}

#[test]
fn a_servers_retry_after_is_capped_in_the_header_and_in_the_status_body() {
    let json = [("Content-Type", "application/json")];
    let header = |v: &'static str| [("Content-Type", "application/json"), ("Retry-After", v)];
    // What kube-apiserver sends: honoured as it is.
    assert_eq!(
        list_retry_after(&header("1"), &too_many_requests(Some(r#"{"retryAfterSeconds":1}"#))),
        Some(Duration::from_secs(1))
    );
    // 11.6 days, i64::MAX seconds, a number past any integer: five minutes at most.
    for absurd in ["999999", "9223372036854775807", "99999999999999999999999999"] {
        assert_eq!(
            list_retry_after(&header(absurd), &too_many_requests(None)),
            Some(MAX_RETRY_AFTER),
            "Retry-After: {absurd}"
        );
    }
    for absurd in ["999999", "9223372036854775807"] {
        let details = format!("{{\"retryAfterSeconds\":{absurd}}}");
        assert_eq!(
            list_retry_after(&json, &too_many_requests(Some(&details))),
            Some(MAX_RETRY_AFTER),
            "details.retryAfterSeconds: {absurd}"
        );
    }
    assert_eq!(MAX_RETRY_AFTER, Duration::from_secs(300));
}

#[test]
fn an_absurd_retry_after_does_not_kill_the_event_recorder() {
    // Every write is throttled with a Retry-After an `Instant` cannot hold.
    let peer = Peer::start(|_, _| {
        response(
            "429 Too Many Requests",
            &[
                ("Content-Type", "application/json"),
                ("Retry-After", "9223372036854775807"),
            ],
            &too_many_requests(Some(r#"{"retryAfterSeconds":9223372036854775807}"#)),
        )
    });
    let options = RecorderOptions::new("survivor").retry_interval(Duration::from_millis(1));
    let recorder = EventRecorder::new(ApiEventSink::new(client_of(&peer)), options).unwrap();
    let cm = ConfigMap::new(ObjectMeta::namespaced("default", "settings"));
    assert!(recorder.normal(&cm, "Synced", "in sync"));
    // The first write is refused; the recorder then waits (five minutes at most) to retry...
    assert!(peer.wait_for_requests(1, WAIT));
    // ... until stopped: a stop wakes it for one last attempt, which fails, and the event is abandoned. A writer
    // thread that died computing its deadline would make no second attempt.
    recorder.stop();
    assert_eq!(peer.requests().len(), 2, "the last attempt on stop");
    let m = recorder.metrics();
    assert_eq!((m.retries, m.failed), (1, 1), "{m:?}");
}

#[test]
fn duration_max_means_forever_wherever_a_caller_gives_a_duration() {
    let server = ApiServer::start().unwrap();
    server
        .create(&ConfigMap::new(ObjectMeta::namespaced("default", "a")))
        .unwrap();
    let forever = Duration::MAX;
    // Client timeouts.
    let config = server
        .config()
        .unwrap()
        .read_timeout(Some(forever))
        .connect_timeout(forever)
        .watch_idle_limit(forever);
    let client = Client::new(config).unwrap();
    assert_eq!(
        Api::<ConfigMap>::all(client.clone())
            .list(&ListParams::default())
            .unwrap()
            .items
            .len(),
        1
    );

    // An informer: resync periods, waits, the reflector's timeouts, back-off and jitter.
    let reflector = ReflectorConfig {
        min_watch_timeout: forever,
        relist_jitter: forever,
        ..Default::default()
    };
    let options = InformerOptions::default().resync(forever).reflector(reflector);
    let informer = SharedIndexInformer::for_api(&Api::<ConfigMap>::all(client.clone()), options);
    informer
        .add_event_handler_with(
            |_: &kube_informer::informer::Event<ConfigMap>| {},
            HandlerOptions::default().resync(forever),
        )
        .unwrap();
    informer.start().unwrap();
    assert!(informer.wait_synced(forever));
    assert_eq!(informer.store().len(), 1);
    informer.stop();

    let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default().resync(forever));
    let _ = factory.informer::<ConfigMap>();
    factory.start().unwrap();
    factory.wait_for_cache_sync(forever).unwrap();
    factory.shutdown();

    let recorder = EventRecorder::new(ApiEventSink::new(client), RecorderOptions::new("survivor")).unwrap();
    assert!(recorder.normal(
        &ConfigMap::new(ObjectMeta::namespaced("default", "a")),
        "Synced",
        "in sync"
    ));
    assert!(recorder.flush(forever));
    recorder.stop();
}
