//! Nothing a server sends, and no duration a caller passes, can freeze or kill the library: absurd `Retry-After`s
//! (header and `Status` body) from a scripted peer, `Duration::MAX` timeouts meaning "forever", 410 and 429 storms,
//! exec plugins that hang or print without end (the plugin's stderr: `tests/security.rs`; a stop while a plugin
//! runs: `tests/shutdown.rs`).

mod common;

use std::time::Duration;

use common::peer::{Peer, response, too_many_requests};
use common::{TempDir, WAIT, hanging_plugin, pid_in, process_alive, process_exists};
use kube_informer::cache::ReflectorConfig;
use kube_informer::client::params::ListParams;
use kube_informer::client::{Api, Client, Config, ExecConfig};
use kube_informer::events::{ApiEventSink, EventRecorder, RecorderOptions};
use kube_informer::informer::{
    FactoryOptions, HandlerOptions, InformerOptions, SharedIndexInformer, SharedInformerFactory,
};
use kube_informer::object::ObjectMeta;
use kube_informer::object::core::ConfigMap;
use kube_informer::{Error, MAX_RETRY_AFTER};
use kube_informer_apiserver::ApiServer;

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
            |_: &kube_informer::informer::Notification<ConfigMap>| {},
            HandlerOptions::default().resync(forever),
        )
        .unwrap();
    informer.start().unwrap();
    informer.wait_for_cache_sync(forever).unwrap();
    assert_eq!(informer.lister().len(), 1);
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

/// The result of a LIST by a client whose exec plugin is `exec`, or `None` if it did not return within [`WAIT`].
fn list_with_plugin(exec: ExecConfig) -> Option<kube_informer::Result<()>> {
    // Nothing listens on port 1: the plugin runs before any connection is made.
    let client = Client::new(Config::new("https://127.0.0.1:1").proxy(None).exec(exec)).unwrap();
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(Api::<ConfigMap>::all(client).list(&ListParams::default()).map(drop));
    });
    rx.recv_timeout(WAIT).ok()
}

#[test]
fn a_hanging_exec_plugin_is_killed_with_its_children_and_reaped_when_its_time_is_up() {
    if !common::can_watch_plugin_processes() {
        return;
    }
    let dir = TempDir::new("survive-exec-hang");
    let result = list_with_plugin(hanging_plugin(&dir).timeout(Duration::from_secs(2)))
        .expect("the request returned: a plugin's run is bounded");
    let err = result.unwrap_err();
    assert!(matches!(err, Error::Auth(_)), "{err:?}");
    assert!(err.to_string().contains("did not finish within 2s"), "{err}");
    // By the time the request fails, the plugin has been reaped, and the helper it started (which held its
    // output open) has been sent SIGKILL with it: it dies as the kernel gets to it (not the library's child, it is
    // reaped by init), which a loaded machine can take a moment to do.
    let (plugin, helper) = (pid_in(&dir, "plugin"), pid_in(&dir, "helper"));
    assert!(!process_exists(plugin), "the plugin ({plugin}) was killed and reaped");
    common::eventually("the plugin's helper is killed with it", || !process_alive(helper));
}

#[test]
fn an_exec_plugin_printing_without_end_is_killed() {
    // `yes` prints "y" lines forever: the credential's reader stops at a megabyte instead of filling memory.
    let result = list_with_plugin(ExecConfig::new("yes")).expect("the request returned");
    let err = result.unwrap_err();
    assert!(matches!(err, Error::Auth(_)), "{err:?}");
    assert!(
        err.to_string()
            .contains("printed more than 1048576 bytes on standard output"),
        "{err}"
    );
}

#[test]
fn the_exec_timeout_has_a_default_and_no_limit_is_possible() {
    if !common::can_run_sh_plugins() {
        return;
    }
    use kube_informer::client::DEFAULT_EXEC_TIMEOUT;
    assert_eq!(DEFAULT_EXEC_TIMEOUT, Duration::from_secs(60));
    assert_eq!(ExecConfig::new("aws").timeout, DEFAULT_EXEC_TIMEOUT);
    // `Duration::MAX`: no limit, and no overflow either; a plugin that answers is served as usual.
    let ok = r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t"}}"#;
    let exec = ExecConfig::new("sh")
        .args(["-c", &format!("printf '%s' '{ok}'")])
        .timeout(Duration::MAX);
    let err = list_with_plugin(exec).expect("the request returned").unwrap_err();
    assert!(
        !matches!(err, Error::Auth(_)),
        "the credential was issued, the connection refused: {err:?}"
    );
}

/// A ConfigMap list at resourceVersion 10, as kube-apiserver sends it.
fn list_at_10() -> Vec<u8> {
    let list = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[]}"#;
    response("200 OK", &[("Content-Type", "application/json")], list)
}

/// What kube-apiserver says of a compacted resourceVersion, as a `Status`.
const GONE: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 10 (20)","reason":"Expired","code":410}"#;

/// Runs an informer against a peer answering `answer(request)` until it was asked `n` LISTs, and returns how far
/// apart the first and the last of them came.
fn lists_window(n: usize, answer: fn(&common::peer::Request) -> Vec<u8>) -> Duration {
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    let times = Arc::new(Mutex::new(Vec::new()));
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    let seen = times.clone();
    let peer = Peer::start(move |request, _| {
        if !request.is_watch() {
            let mut t = seen.lock().unwrap();
            t.push(Instant::now());
            if t.len() == n {
                let _ = done_tx.try_send(());
            }
        }
        answer(request)
    });
    let reflector = ReflectorConfig {
        streaming_list: false,
        // client-go's shape with shorter steps: 200 ms, 400 ms, then 800 ms.
        backoff: kube_informer::cache::BackoffConfig {
            initial: Duration::from_millis(200),
            max: Duration::from_millis(800),
            factor: 2.0,
            reset_after: Duration::from_secs(3600),
        },
        relist_jitter: Duration::ZERO,
        ..Default::default()
    };
    let api = Api::<ConfigMap>::all(client_of(&peer));
    let informer = SharedIndexInformer::for_api(&api, InformerOptions::default().reflector(reflector));
    informer.start().unwrap();
    assert!(done_rx.recv_timeout(WAIT).is_ok(), "the peer was asked {n} lists");
    informer.stop();
    let t = times.lock().unwrap();
    t[n - 1].duration_since(t[0])
}

/// The least time `n` attempts of a storm take when each waits at least its back-off step (200 ms, 400 ms, then
/// 800 ms; the jitter only adds) after the first retry, which may come at once.
fn shortest_storm(n: usize) -> Duration {
    [0, 200, 400]
        .into_iter()
        .chain(std::iter::repeat(800))
        .take(n - 1)
        .map(Duration::from_millis)
        .sum()
}

#[test]
fn a_storm_of_410s_on_the_watch_backs_off_exponentially_after_one_immediate_relist() {
    // Every watch gets a 410 ERROR event, as kube-apiserver sends it for a compacted resourceVersion; every list
    // works. The first 410 relists at once, the next ones after 200 ms, 400 ms, 800 ms… — where the reflector used to
    // relist at once (within `relist_jitter`) every time, forever.
    let window = lists_window(6, |request| {
        if request.is_watch() {
            let event = format!("{{\"type\":\"ERROR\",\"object\":{GONE}}}\n");
            response("200 OK", &[("Content-Type", "application/json")], event.as_bytes())
        } else {
            list_at_10()
        }
    });
    let least = shortest_storm(6);
    assert!(
        window >= least,
        "6 lists in {window:?}, where the back-off takes at least {least:?}"
    );
}

#[test]
fn a_storm_of_410s_on_the_list_backs_off_exponentially() {
    // Every list, and so every relist, is answered 410 Gone.
    let window = lists_window(6, |_| {
        response("410 Gone", &[("Content-Type", "application/json")], GONE.as_bytes())
    });
    let least = shortest_storm(6);
    assert!(
        window >= least,
        "6 lists in {window:?}, where the back-off takes at least {least:?}"
    );
}
