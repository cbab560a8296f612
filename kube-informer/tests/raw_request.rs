//! `Client::request`: any path, against the embedded server — the client's credentials, rate limit and error mapping
//! included.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use kube_informer::client::params::PostParams;
use kube_informer::client::{Api, Client, Method, RateLimit};
use kube_informer::clock::FakeClock;
use kube_informer::object::core::ConfigMap;
use kube_informer::{Error, TransportErrorKind};
use kube_informer_apiserver::{ApiServer, Verb};

mod common;
use common::cm;

fn https_server() -> ApiServer {
    ApiServer::builder()
        .https()
        .token("t0k3n", "alice")
        .kubeconfig_user("alice")
        .start()
        .unwrap()
}

#[test]
fn any_verb_on_any_path_with_query_headers_and_body() {
    let server = https_server();
    let client = server.client().unwrap();
    let version: serde_json::Value = client.request(Method::Get, "/version").send().unwrap().json().unwrap();
    assert!(version["gitVersion"].is_string(), "{version}");

    let created = client
        .request(Method::Post, "/api/v1/namespaces/default/configmaps")
        .query("fieldManager", "raw tool")
        .json(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "raw"}, "data": {"a": "1"}}))
        .send()
        .unwrap();
    assert_eq!(created.status(), 201);
    assert_eq!(created.header("content-type"), Some("application/json"));
    let cm: ConfigMap = created.json().unwrap();
    assert_eq!(cm.data.get("a"), Some("1"));
    assert_eq!(
        cm.metadata
            .managed_fields
            .as_ref()
            .map(|m| m.iter().any(|e| e.manager().as_deref() == Some("raw tool"))),
        Some(true),
        "the query reached the server"
    );

    client
        .request(Method::Patch, "/api/v1/namespaces/default/configmaps/raw?dryRun=All")
        .body("application/merge-patch+json", br#"{"data":{"a":"dry"}}"#.to_vec())
        .send()
        .unwrap();
    let patched = client
        .request(Method::Patch, "/api/v1/namespaces/default/configmaps/raw")
        .body("application/merge-patch+json", br#"{"data":{"a":"2"}}"#.to_vec())
        .send()
        .unwrap()
        .json::<ConfigMap>()
        .unwrap();
    assert_eq!(
        patched.data.get("a"),
        Some("2"),
        "the dry run changed nothing, the patch did"
    );

    // An Accept of the caller's choosing replaces the client's: kubectl's table.
    let table: serde_json::Value = client
        .request(Method::Get, "/api/v1/namespaces/default/configmaps")
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(table["kind"], "Table", "{table}");

    let users: Vec<_> = server.requests().records().iter().map(|r| r.user.clone()).collect();
    assert!(
        users.iter().all(|u| u.as_deref() == Some("alice")),
        "authenticated: {users:?}"
    );

    client
        .request(Method::Delete, "/api/v1/namespaces/default/configmaps/raw")
        .send()
        .unwrap();
    let e = client
        .request(Method::Get, "/api/v1/namespaces/default/configmaps/raw")
        .send()
        .unwrap_err();
    assert!(e.is_not_found(), "a non-2xx answer is the server's Status: {e}");
    assert_eq!(e.status().unwrap().details.as_ref().unwrap().name, "raw");
}

#[test]
fn unusable_requests_are_refused_before_the_network() {
    let server = ApiServer::start().unwrap();
    let client = server.client().unwrap();
    let mark = server.requests().mark();
    for (request, needle) in [
        (client.request(Method::Get, "api/v1/pods"), "absolute path"),
        (client.request(Method::Get, "//evil.example/x"), "absolute path"),
        (client.request(Method::Get, "/api/v1/pods#frag"), "fragment"),
        (
            client
                .request(Method::Get, "/api/v1/pods")
                .header("Authorization", "Bearer other"),
            "the client's own",
        ),
        (
            client.request(Method::Get, "/api/v1/pods").header("Host", "elsewhere"),
            "the client's own",
        ),
        (
            client
                .request(Method::Get, "/api/v1/pods")
                .header("Content-Type", "text/plain"),
            "RawRequest::body",
        ),
        (
            client.request(Method::Get, "/api/v1/pods").header("X-Bad", "a\r\nb"),
            "not a valid HTTP header",
        ),
        (
            client
                .request(Method::Post, "/api/v1/pods")
                .body("bad\ntype", Vec::new()),
            "Content-Type",
        ),
    ] {
        let e = request.send().unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput(m) if m.contains(needle)),
            "{needle}: {e}"
        );
    }
    assert!(server.requests().since(mark).is_empty());
}

#[test]
fn a_streamed_answer_is_read_as_it_comes_and_stopped_from_another_thread() {
    let server = ApiServer::start().unwrap();
    let client = server.client().unwrap();
    let stream = client
        .request(Method::Get, "/api/v1/namespaces/default/configmaps")
        .query("watch", "1")
        .stream_read_timeout(None)
        .stream()
        .unwrap();
    assert_eq!(stream.status(), 200);
    let stopper = stream.stopper();
    let (lines_tx, lines) = crossbeam_channel::unbounded();
    let reader = std::thread::Builder::new()
        .name("test:raw-stream".into())
        .spawn(move || {
            let mut stream = BufReader::new(stream);
            loop {
                let mut line = String::new();
                match stream.read_line(&mut line) {
                    Ok(0) => return Ok(()),
                    Ok(_) => lines_tx.send(line).unwrap(),
                    Err(e) => return Err(e),
                }
            }
        })
        .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm("default", "seen", "1"))
        .unwrap();
    let event = lines.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(
        event.starts_with(r#"{"type":"ADDED""#) && event.contains(r#""name":"seen""#),
        "{event}"
    );
    stopper.stop();
    let e = reader.join().unwrap().unwrap_err();
    let inner = e.into_inner().unwrap().downcast::<Error>().unwrap();
    assert!(matches!(*inner, Error::Stopped), "{inner}");
    // The stream's own connection closed, nothing else.
    client.request(Method::Get, "/version").send().unwrap();
}

#[test]
fn raw_requests_take_rate_limit_tokens() {
    let server = ApiServer::start().unwrap();
    let clock = FakeClock::new();
    let config = server
        .config()
        .unwrap()
        .rate_limit(RateLimit::new(1.0, 2).clock(clock.clone()))
        .request_timeout(Some(Duration::from_millis(200)));
    let client = Client::new(config).unwrap();
    let mark = server.requests().mark();
    client
        .request(Method::Get, "/api/v1/namespaces/default/configmaps")
        .send()
        .unwrap();
    let _stream = client
        .request(Method::Get, "/api/v1/namespaces/default/configmaps?watch=1")
        .stream()
        .unwrap();
    let e = client
        .request(Method::Get, "/api/v1/namespaces/default/configmaps")
        .send()
        .unwrap_err();
    assert!(
        matches!(&e, Error::Transport(t) if t.kind == TransportErrorKind::Timeout && t.message.contains("rate limit")),
        "{e:?}"
    );
    assert_eq!(
        (
            server.requests().count_since(mark, Verb::List, "configmaps"),
            server.requests().count_since(mark, Verb::Watch, "configmaps")
        ),
        (1, 1)
    );
    clock.step(Duration::from_secs(1));
    client
        .request(Method::Get, "/api/v1/namespaces/default/configmaps")
        .send()
        .unwrap();
}
