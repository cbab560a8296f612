//! Pod logs against a scripted peer sending kube-apiserver's bytes (pkg/registry/core/pod/rest/log.go: a text/plain
//! body, chunked and flushed as the kubelet writes when following; pkg/registry/core/pod/strategy.go: 404 for a
//! missing pod, 400 for a container the pod does not have; an empty log for a pod on no node yet).

use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use kube_informer::client::params::LogParams;
use kube_informer::client::{Api, Client, Config, RateLimit};
use kube_informer::clock::FakeClock;
use kube_informer::object::core::{ConfigMap, Pod};
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer::{Error, TransportErrorKind};

mod common;
use common::peer::{Peer, chunk, response, wait_for_hang_up};

/// The head of kube-apiserver's answer to a pod log request.
const LOG_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nAudit-Id: 5b0c0b6e-1f0c-4a0e-9b8e-6f7f2d1c9a10\r\n\
    Cache-Control: no-cache, private\r\nContent-Type: text/plain\r\nDate: Fri, 27 Nov 2026 10:00:00 GMT\r\n\
    Transfer-Encoding: chunked\r\n\r\n";

const NOT_FOUND: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"web-9\" not found","reason":"NotFound","details":{"name":"web-9","kind":"pods"},"code":404}
"#;

const BAD_CONTAINER: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"container nope is not valid for pod web-0","reason":"BadRequest","code":400}
"#;

fn json_head(status: &str, body: &str) -> Vec<u8> {
    response(
        status,
        &[
            ("Audit-Id", "0f4e3c1a-2b7d-4f55-8a8e-93c1d0a7e2b4"),
            ("Cache-Control", "no-cache, private"),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
    )
}

fn client(peer: &Peer) -> Client {
    Client::new(Config::new(peer.url()).proxy(None)).unwrap()
}

#[test]
fn a_log_is_read_whole_with_its_parameters_on_the_wire() {
    let peer = Peer::serve(|_, _, conn| {
        use std::io::Write;
        let _ = conn.write_all(LOG_HEAD);
        let _ = conn.write_all(&chunk(b"2026-11-27T10:00:01.000000000Z started\n"));
        let _ = conn.write_all(&chunk(b"2026-11-27T10:00:02.000000000Z ready\n"));
        let _ = conn.write_all(b"0\r\n\r\n");
    });
    let pods: Api<Pod> = Api::namespaced(client(&peer), "prod");
    let text = pods
        .logs(
            "web-0",
            &LogParams::default()
                .container("app")
                .tail_lines(2)
                .timestamps()
                .since_seconds(3600)
                .limit_bytes(1 << 20)
                .previous(),
        )
        .unwrap();
    assert_eq!(
        text,
        "2026-11-27T10:00:01.000000000Z started\n2026-11-27T10:00:02.000000000Z ready\n"
    );
    let request = &peer.requests()[0];
    assert_eq!(request.method, "GET");
    assert_eq!(
        request.target,
        "/api/v1/namespaces/prod/pods/web-0/log?container=app&previous=true&sinceSeconds=3600&tailLines=2&\
         timestamps=true&limitBytes=1048576"
    );
    assert_eq!(request.header("accept"), Some("application/json, */*"));
}

#[test]
fn a_followed_log_streams_as_written_and_ends_when_the_stream_does() {
    let (more_tx, more_rx) = crossbeam_channel::bounded::<()>(1);
    let peer = Peer::serve(move |_, _, conn| {
        use std::io::Write;
        let _ = conn.write_all(LOG_HEAD);
        let _ = conn.write_all(&chunk(b"line 1\n"));
        let _ = conn.flush();
        // The container writes its second line only once the test has read the first.
        let _ = more_rx.recv_timeout(Duration::from_secs(20));
        let _ = conn.write_all(&chunk(b"line 2\nline "));
        let _ = conn.write_all(&chunk(b"3\n"));
        // The container exits: the kubelet ends the body.
        let _ = conn.write_all(b"0\r\n\r\n");
    });
    // A client with a single token on a clock that never moves: opening the stream takes it, reading takes none.
    let clock = FakeClock::new();
    let limited = Client::new(
        Config::new(peer.url())
            .proxy(None)
            .rate_limit(RateLimit::new(1.0, 1).clock(clock))
            .request_timeout(Some(Duration::from_millis(200))),
    )
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(limited, "prod");
    let stream = pods.log_stream("web-0", &LogParams::default().follow()).unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.header("content-type"), Some("text/plain"));
    let mut lines = BufReader::new(stream);
    let mut line = String::new();
    lines.read_line(&mut line).unwrap();
    assert_eq!(line, "line 1\n", "the first line, before the stream ends");
    more_tx.send(()).unwrap();
    let rest: Vec<String> = lines.lines().map(Result::unwrap).collect();
    assert_eq!(rest, ["line 2", "line 3"]);
    assert!(peer.requests()[0].target.ends_with("/pods/web-0/log?follow=true"));
    let e = pods.logs("web-0", &LogParams::default()).unwrap_err();
    assert!(
        matches!(&e, Error::Transport(t) if t.kind == TransportErrorKind::Timeout && t.message.contains("rate limit")),
        "the stream's token was the only one: {e:?}"
    );
}

#[test]
fn a_followed_log_is_stopped_from_another_thread() {
    let peer = Peer::serve(|_, n, conn| {
        use std::io::Write;
        let _ = conn.write_all(LOG_HEAD);
        let _ = conn.write_all(&chunk(format!("first line of stream {n}\n").as_bytes()));
        let _ = conn.flush();
        // A quiet container: nothing more until the client hangs up.
        wait_for_hang_up(conn);
    });
    let client = client(&peer);
    let pods: Api<Pod> = Api::namespaced(client.clone(), "prod");
    let mut stream = pods.log_stream("web-0", &LogParams::default().follow()).unwrap();
    let mut first = [0u8; 23];
    stream.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"first line of stream 0\n");
    let stopper = stream.stopper();
    let reader = std::thread::Builder::new()
        .name("test:log-reader".into())
        .spawn(move || {
            let mut rest = Vec::new();
            stream.read_to_end(&mut rest).map(|_| rest)
        })
        .unwrap();
    stopper.stop();
    let e = reader.join().unwrap().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionAborted, "{e}");
    let inner = e.into_inner().unwrap().downcast::<Error>().unwrap();
    assert!(matches!(*inner, Error::Stopped), "{inner}");
    assert!(stopper.is_stopped());
    // Stopping one stream closed its connection and nothing else: the client goes on.
    let mut second = pods.log_stream("web-0", &LogParams::default().follow()).unwrap();
    let mut line = String::new();
    BufReader::new(&mut second).read_line(&mut line).unwrap();
    assert_eq!(line, "first line of stream 1\n");
    // The client's abort ends its streams too.
    client.abort_handle().abort();
    let e = second.read(&mut [0u8; 16]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionAborted, "{e}");
}

#[test]
fn a_missing_pod_and_a_wrong_container_are_the_servers_errors() {
    let peer = Peer::start(|request, _| {
        if request.target.contains("/pods/web-9/") {
            json_head("404 Not Found", NOT_FOUND)
        } else {
            json_head("400 Bad Request", BAD_CONTAINER)
        }
    });
    let pods: Api<Pod> = Api::namespaced(client(&peer), "prod");
    let e = pods.logs("web-9", &LogParams::default()).unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(e.status().unwrap().details.as_ref().unwrap().name, "web-9");
    let e = pods
        .log_stream("web-0", &LogParams::default().container("nope").follow())
        .unwrap_err();
    let status = e.status().unwrap();
    assert_eq!(
        (status.code, status.reason.as_str(), status.message.as_str()),
        (400, "BadRequest", "container nope is not valid for pod web-0")
    );
}

#[test]
fn a_pod_on_no_node_has_an_empty_log() {
    let peer = Peer::start(|_, _| {
        let mut bytes = LOG_HEAD.to_vec();
        bytes.extend_from_slice(b"0\r\n\r\n");
        bytes
    });
    let pods: Api<Pod> = Api::namespaced(client(&peer), "prod");
    assert_eq!(pods.logs("pending", &LogParams::default()).unwrap(), "");
    let mut stream = pods.log_stream("pending", &LogParams::default().follow()).unwrap();
    assert_eq!(stream.read(&mut [0u8; 64]).unwrap(), 0);
    assert_eq!(stream.read(&mut [0u8; 64]).unwrap(), 0, "and stays ended");
}

#[test]
fn logs_are_for_pods_of_any_type_and_nothing_else() {
    let peer = Peer::start(|_, _| {
        let mut bytes = LOG_HEAD.to_vec();
        bytes.extend_from_slice(&chunk(b"hello\n"));
        bytes.extend_from_slice(b"0\r\n\r\n");
        bytes
    });
    let client = client(&peer);
    let pods = ApiResource::new("", "v1", "Pod", "pods", true);
    let dynamic: Api<DynamicObject> = Api::namespaced_with(client.clone(), "prod", &pods);
    assert_eq!(dynamic.logs("web-0", &LogParams::default()).unwrap(), "hello\n");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "prod");
    let e = cms.logs("web-0", &LogParams::default()).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("pods only") && m.contains("configmaps")),
        "{e}"
    );
    let everywhere: Api<Pod> = Api::all(client);
    assert!(matches!(
        everywhere.logs("web-0", &LogParams::default()),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(peer.requests().len(), 1, "refused without a request");
}
