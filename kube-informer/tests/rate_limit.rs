//! Client-side rate limiting against the embedded server: requests counted in the server's request log while a fake
//! clock decides when tokens refill — no timing assertions.

use std::time::Duration;

use kube_informer::client::params::{PostParams, WatchParams};
use kube_informer::client::{Api, Client, RateLimit};
use kube_informer::clock::FakeClock;
use kube_informer::object::core::ConfigMap;
use kube_informer::watch::WatchEvent;
use kube_informer::{Error, TransportErrorKind};
use kube_informer_apiserver::{ApiServer, Verb};

mod common;
use common::{cm, eventually};

/// A client of `server` limited to `qps`/`burst` on `clock`, with `request_timeout` as its requests' deadline.
fn limited(server: &ApiServer, qps: f64, burst: u32, clock: &FakeClock, request_timeout: Option<Duration>) -> Client {
    let config = server
        .config()
        .unwrap()
        .rate_limit(RateLimit::new(qps, burst).clock(clock.clone()))
        .request_timeout(request_timeout);
    Client::new(config).unwrap()
}

/// GETs of configmaps the server saw since `mark`.
fn gets(server: &ApiServer, mark: kube_informer_apiserver::LogMark) -> usize {
    server.requests().count_since(mark, Verb::Get, "configmaps")
}

fn is_rate_limit_timeout(e: &Error) -> bool {
    matches!(e, Error::Transport(t) if t.kind == TransportErrorKind::Timeout && t.message.contains("rate limit"))
}

#[test]
fn a_runaway_loop_is_held_to_the_limit() {
    let server = ApiServer::start().unwrap();
    Api::<ConfigMap>::namespaced(server.client().unwrap(), "default")
        .create(&PostParams::default(), &cm("default", "hot", "1"))
        .unwrap();
    let clock = FakeClock::new();
    // 2 requests per second, bursts of 5: a token every 500 ms of the fake clock.
    let client = limited(&server, 2.0, 5, &clock, None);
    let mark = server.requests().mark();
    // A reconcile loop that never settles: it GETs as fast as it is let.
    let runaway = {
        let api = Api::<ConfigMap>::namespaced(client.clone(), "default");
        std::thread::Builder::new()
            .name("test:runaway".into())
            .spawn(move || {
                let mut sent = 0usize;
                loop {
                    match api.get("hot") {
                        Ok(_) => sent += 1,
                        Err(e) => return (sent, e),
                    }
                }
            })
            .unwrap()
    };
    // A request waiting for a token watches the clock: `watchers() == 1` means the loop is held.
    let held_at = |n: usize| {
        eventually(&format!("{n} GETs, then the loop waits"), || {
            gets(&server, mark) >= n && clock.watchers() == 1
        });
        assert_eq!(gets(&server, mark), n, "no request passed the limit");
    };
    held_at(5); // the burst, and not one more before time moves
    clock.step(Duration::from_millis(500));
    held_at(6); // one token per 500 ms
    clock.step(Duration::from_millis(500));
    held_at(7);
    // Ten seconds later the bucket is full again, never fuller: the token owed, then a burst of 5.
    clock.step(Duration::from_secs(10));
    held_at(13);
    // Aborting the client wakes the waiting request at once: the fake clock never moves again.
    client.abort_handle().abort();
    let (sent, e) = runaway.join().unwrap();
    assert!(matches!(e, Error::Stopped), "{e}");
    assert_eq!((sent, gets(&server, mark)), (13, 13));
    // The waits, on the limit's clock: 500 ms, 500 ms, then 10 s for the one owed when the clock jumped.
    let metrics = client.request_metrics();
    let waits = metrics.rate_limiter_latency.iter().find(|m| m.verb == "GET").unwrap();
    assert_eq!(
        (waits.histogram.count, waits.histogram.sum),
        (13, Duration::from_secs(11))
    );
}

#[test]
fn a_watch_takes_a_token_to_open_and_none_to_read() {
    let server = ApiServer::start().unwrap();
    let clock = FakeClock::new();
    let client = limited(&server, 1.0, 1, &clock, Some(Duration::from_millis(500)));
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let mut watch = cms.watch(&WatchParams::default()).unwrap();
    // The bucket is empty now; another client writes, and the watch reads every event without a token.
    let writer = Api::<ConfigMap>::namespaced(server.client().unwrap(), "default");
    for i in 0..20 {
        writer
            .create(&PostParams::default(), &cm("default", &format!("cm-{i}"), "v"))
            .unwrap();
    }
    for i in 0..20 {
        match watch.next() {
            Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.unwrap(), format!("cm-{i}")),
            other => panic!("{other:?}"),
        }
    }
    // The watch request took the only token: the next request's token is a second of the fake clock away, past its
    // 500 ms deadline, so it fails at once and is never sent.
    let mark = server.requests().mark();
    let e = cms.get("cm-0").unwrap_err();
    assert!(is_rate_limit_timeout(&e), "{e:?}");
    assert_eq!(gets(&server, mark), 0);
    clock.step(Duration::from_secs(1));
    cms.get("cm-0").unwrap();
    assert_eq!(gets(&server, mark), 1);
}

#[test]
fn isolated_copies_share_the_bucket_and_with_rate_limit_has_its_own() {
    let server = ApiServer::start().unwrap();
    Api::<ConfigMap>::namespaced(server.client().unwrap(), "default")
        .create(&PostParams::default(), &cm("default", "x", "1"))
        .unwrap();
    let clock = FakeClock::new();
    // A token every 10 s of the fake clock; each request may wait 500 ms: whatever the bucket lacks fails at once.
    let client = limited(&server, 0.1, 2, &clock, Some(Duration::from_millis(500)));
    let get = |c: &Client| Api::<ConfigMap>::namespaced(c.clone(), "default").get("x").map(|_| ());
    let isolated = client.isolated();
    get(&client).unwrap();
    get(&isolated).unwrap();
    assert!(is_rate_limit_timeout(&get(&client).unwrap_err()));
    assert!(is_rate_limit_timeout(&get(&isolated).unwrap_err()), "the same bucket");

    let own = client
        .with_rate_limit(Some(RateLimit::new(0.1, 1).clock(clock.clone())))
        .unwrap();
    get(&own).unwrap();
    assert!(
        is_rate_limit_timeout(&get(&own).unwrap_err()),
        "a bucket of its own, of 1"
    );
    let unlimited = client.with_rate_limit(None).unwrap();
    for _ in 0..20 {
        get(&unlimited).unwrap();
    }
    // Clones of a client with its own bucket share that bucket, and the clone shares the abort handle.
    assert!(is_rate_limit_timeout(&get(&own.clone()).unwrap_err()));
    client.abort_handle().abort();
    assert!(matches!(get(&own), Err(Error::Stopped)));
    assert!(
        client.with_rate_limit(Some(RateLimit::new(0.0, 1))).is_err(),
        "an unusable limit is refused"
    );
}

#[test]
fn a_request_waiting_for_a_token_is_bounded_by_its_deadline_and_woken_by_an_abort() {
    let server = ApiServer::start().unwrap();
    Api::<ConfigMap>::namespaced(server.client().unwrap(), "default")
        .create(&PostParams::default(), &cm("default", "x", "1"))
        .unwrap();
    let clock = FakeClock::new();
    // The next token is 1 s of the fake clock away, within the 2 s deadline: the request waits for it — and the
    // fake clock never moves, so only the deadline (real time) ends the wait.
    let client = limited(&server, 1.0, 1, &clock, Some(Duration::from_secs(2)));
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    cms.get("x").unwrap();
    let mark = server.requests().mark();
    let e = cms.get("x").unwrap_err();
    assert!(is_rate_limit_timeout(&e), "{e:?}");
    assert_eq!(gets(&server, mark), 0, "never sent");
    // Without a deadline the wait lasts until an abort.
    let no_deadline = limited(&server, 1.0, 1, &clock, None);
    let cms = Api::<ConfigMap>::namespaced(no_deadline.clone(), "default");
    cms.get("x").unwrap();
    let waiting = std::thread::Builder::new()
        .name("test:throttled".into())
        .spawn(move || cms.get("x"))
        .unwrap();
    eventually("the request waits for a token", || clock.watchers() == 1);
    no_deadline.abort_handle().abort();
    assert!(matches!(waiting.join().unwrap(), Err(Error::Stopped)));
    assert_eq!(gets(&server, mark), 1, "only the first GET of the second client");
}

#[test]
fn clients_limit_by_default_and_the_servers_test_clients_do_not() {
    let server = ApiServer::start().unwrap();
    // What a configuration holds shows in its Debug output (credentials hidden); it has no getters of what its
    // setters set.
    let config = kube_informer::client::Config::new(server.url());
    let shown = format!("{config:?}");
    assert!(
        shown.contains("rate_limit: Some(RateLimit { qps: 5.0, burst: 10, .. })"),
        "client-go's QPS and burst: {shown}"
    );
    let shown = format!("{:?}", server.config().unwrap());
    assert!(shown.contains("rate_limit: None"), "{shown}");
}
