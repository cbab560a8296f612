//! The REST client against real sockets: raw HTTP servers for transport-level behaviour (redirects, stalls,
//! aborts, limits), and the embedded API server over HTTPS for authentication, TLS, paging, watches and errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kube_informer::client::{Api, Client, Config};
use kube_informer::object::core::ConfigMap;
use kube_informer::{Error, TransportErrorKind};

mod common;
use common::{TempDir, eventually, fixture, plugin};

// ---- a raw HTTP/1.1 server ------------------------------------------------------------------------------------------

/// Accepts connections one at a time and hands each request (head, connection) to `handler`.
struct RawServer {
    url: String,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    join: Option<JoinHandle<()>>,
}

impl RawServer {
    fn start(handler: impl Fn(&str, &mut TcpStream) + Send + 'static) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (Arc::clone(&hits), Arc::clone(&stop));
        let join = std::thread::Builder::new()
            .name("test/raw-server".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(mut conn) = conn else { continue };
                    while let Some(head) = read_head(&mut conn) {
                        h.fetch_add(1, Ordering::SeqCst);
                        handler(&head, &mut conn);
                        if s.load(Ordering::SeqCst) {
                            break;
                        }
                    }
                }
            })
            .unwrap();
        RawServer {
            url: format!("http://{addr}"),
            hits,
            stop,
            join: Some(join),
        }
    }

    fn client(&self) -> Client {
        Client::new(Config::new(self.url.as_str()).proxy(None)).unwrap()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

/// Reads a request head (and discards a Content-Length body); `None` when the peer closed.
fn read_head(conn: &mut TcpStream) -> Option<String> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let len = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>())
        })
        .and_then(Result::ok)
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(head)
}

fn respond(conn: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &str) {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    let _ = conn.write_all(out.as_bytes());
}

/// Blocks until the client closes the connection.
fn wait_for_close(conn: &mut TcpStream) {
    let mut buf = [0u8; 64];
    while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
}

fn transport_kind(e: &Error) -> Option<TransportErrorKind> {
    match e {
        Error::Transport(t) => Some(t.kind),
        _ => None,
    }
}

// ---- transport-level behaviour --------------------------------------------------------------------------------------

#[test]
fn redirects_are_refused_and_never_followed() {
    let target = RawServer::start(|_, conn| respond(conn, "200 OK", &[], "{}"));
    let location = format!("{}/api/v1/namespaces/default/configmaps/x", target.url);
    let server = RawServer::start(move |_, conn| {
        respond(conn, "302 Found", &[("Location", &location)], "");
    });
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let err = api.get("x").unwrap_err();
    assert_eq!(transport_kind(&err), Some(TransportErrorKind::Redirect), "{err}");
    assert!(err.to_string().contains(&target.url), "{err}");
    assert_eq!(
        target.hits.load(Ordering::SeqCst),
        0,
        "the redirect target was contacted"
    );
}

#[test]
fn foreign_error_bodies_become_a_status_with_retry_after() {
    let server = RawServer::start(|_, conn| {
        respond(
            conn,
            "503 Service Unavailable",
            &[("Retry-After", "5")],
            "upstream connect error",
        );
    });
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let err = api.get("x").unwrap_err();
    let status = err.status().expect("an Api error");
    assert_eq!(
        (status.code, status.reason.as_str(), status.message.as_str()),
        (503, "ServiceUnavailable", "upstream connect error")
    );
    assert_eq!(err.retry_after(), Some(Duration::from_secs(5)));
    assert!(err.is_retriable());
}

#[test]
fn a_silent_response_hits_the_read_timeout() {
    let server = RawServer::start(|_, conn| {
        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"metadata\"");
        wait_for_close(conn);
    });
    let client = Client::new(
        Config::new(server.url.as_str())
            .proxy(None)
            .read_timeout(Some(Duration::from_millis(200))),
    )
    .unwrap();
    let err = Api::<ConfigMap>::default_namespaced(client).get("x").unwrap_err();
    assert_eq!(transport_kind(&err), Some(TransportErrorKind::Timeout), "{err}");
}

#[test]
fn bodies_over_the_limit_are_refused() {
    let server = RawServer::start(|_, conn| {
        let big = format!(
            "{{\"metadata\":{{\"name\":\"x\"}},\"data\":{{\"k\":\"{}\"}}}}",
            "v".repeat(5000)
        );
        respond(conn, "200 OK", &[], &big);
    });
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).max_response_size(1000)).unwrap();
    let err = Api::<ConfigMap>::default_namespaced(client).get("x").unwrap_err();
    assert_eq!(transport_kind(&err), Some(TransportErrorKind::TooLarge), "{err}");
}

#[test]
fn streamed_objects_over_the_limit_are_a_typed_error() {
    // A list whose second item, and a watch whose second event, are larger than the limit.
    let big = "v".repeat(5000);
    let item = |name: &str, v: &str| format!(r#"{{"metadata":{{"name":"{name}"}},"data":{{"k":"{v}"}}}}"#);
    let list = format!(
        r#"{{"kind":"ConfigMapList","metadata":{{"resourceVersion":"1"}},"items":[{},{}]}}"#,
        item("small", "v"),
        item("big", &big)
    );
    let events = format!(
        "{{\"type\":\"ADDED\",\"object\":{}}}\n{{\"type\":\"ADDED\",\"object\":{}}}\n",
        item("small", "v"),
        item("big", &big)
    );
    let server = RawServer::start(move |head, conn| {
        let body = if head.contains("watch=") { &events } else { &list };
        respond(conn, "200 OK", &[], body);
    });
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).max_response_size(1000)).unwrap();
    let api = Api::<ConfigMap>::default_namespaced(client);
    let too_large =
        |e: &Error| matches!(e, Error::Decode(d) if d.kind == kube_informer::DecodeErrorKind::TooLarge { limit: 1000 });
    let mut seen = Vec::new();
    let err = api
        .list_each(&ListParams::default(), |cm| {
            seen.push(cm.metadata.name.unwrap_or_default());
            Ok(())
        })
        .unwrap_err();
    assert!(too_large(&err), "{err:?}");
    assert_eq!(seen, ["small"], "items before the big one are delivered");
    let mut watch = api.watch(&WatchParams::default()).unwrap();
    assert!(matches!(watch.next(), Some(Ok(WatchEvent::Added(_)))));
    let err = watch.next().unwrap().unwrap_err();
    assert!(too_large(&err), "{err:?}");
    assert!(watch.next().is_none());
}

#[test]
fn connection_refused_is_typed() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let client = Client::new(Config::new(format!("http://127.0.0.1:{port}")).proxy(None)).unwrap();
    let err = Api::<ConfigMap>::default_namespaced(client).get("x").unwrap_err();
    assert_eq!(
        transport_kind(&err),
        Some(TransportErrorKind::ConnectionRefused),
        "{err}"
    );
    assert!(err.is_retriable());
}

#[test]
fn abort_interrupts_a_blocked_request_and_spares_isolated_copies() {
    let (got_request, request_seen) = crossbeam_channel::unbounded::<()>();
    let server = RawServer::start(move |head, conn| {
        if head.contains("/configmaps/stall") {
            let _ = got_request.send(());
            wait_for_close(conn);
        } else {
            respond(conn, "200 OK", &[], r#"{"metadata":{"name":"ok"}}"#);
        }
    });
    let client = server.client();
    let isolated = client.isolated();
    let blocked = {
        let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
        std::thread::spawn(move || api.get("stall"))
    };
    request_seen
        .recv_timeout(Duration::from_secs(10))
        .expect("the request reached the server");
    client.abort_handle().abort();
    let result = blocked.join().unwrap();
    assert!(matches!(result, Err(Error::Stopped)), "{result:?}");
    // Future requests of the aborted client (and its clones) fail fast; the isolated copy still works.
    assert!(matches!(
        Api::<ConfigMap>::default_namespaced(client.clone()).get("ok"),
        Err(Error::Stopped)
    ));
    let ok = Api::<ConfigMap>::default_namespaced(isolated).get("ok").unwrap();
    assert_eq!(ok.metadata.name.as_deref(), Some("ok"));
}

#[test]
fn a_deadline_aborts_a_stalled_request_and_closes_its_connection() {
    // The server takes the request, then says nothing; it reports when the client hangs up.
    let (got_request, request_seen) = crossbeam_channel::unbounded::<()>();
    let (closed, close_seen) = crossbeam_channel::unbounded::<()>();
    let server = RawServer::start(move |head, conn| {
        if head.contains("/configmaps/stall") {
            let _ = got_request.send(());
            wait_for_close(conn);
            let _ = closed.send(());
        } else {
            respond(conn, "200 OK", &[], r#"{"metadata":{"name":"ok"}}"#);
        }
    });
    // The default client: no overall request timeout, 90 s between reads.
    let client = server.client();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let err = api
        .with_deadline(Instant::now() + Duration::from_millis(300))
        .get("stall")
        .unwrap_err();
    assert_eq!(transport_kind(&err), Some(TransportErrorKind::Timeout), "{err}");
    assert!(err.to_string().contains("deadline passed"), "{err}");
    request_seen
        .try_recv()
        .expect("the request reached the server before the deadline");
    // Aborted, not abandoned: the server sees the connection closed (it would wait 90 s for a read timeout).
    close_seen
        .recv_timeout(Duration::from_secs(30))
        .expect("the client closed the stalled connection");
    // The client itself is unharmed: its next request (no deadline) works.
    assert_eq!(api.get("ok").unwrap().metadata.name.as_deref(), Some("ok"));
}

#[test]
fn a_deadline_cuts_a_body_that_stops_midway() {
    let (closed, close_seen) = crossbeam_channel::unbounded::<()>();
    let server = RawServer::start(move |_, conn| {
        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"metadata\"");
        wait_for_close(conn);
        let _ = closed.send(());
    });
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let err = api
        .with_deadline(Instant::now() + Duration::from_millis(300))
        .get("x")
        .unwrap_err();
    assert_eq!(transport_kind(&err), Some(TransportErrorKind::Timeout), "{err}");
    assert!(err.to_string().contains("deadline passed"), "{err}");
    close_seen
        .recv_timeout(Duration::from_secs(30))
        .expect("connection closed");
}

#[test]
fn a_request_past_its_deadline_fails_without_touching_the_network() {
    let server = RawServer::start(|_, conn| respond(conn, "200 OK", &[], r#"{"metadata":{"name":"ok"}}"#));
    let client = server.client();
    let late = client.with_deadline(Instant::now());
    let err = Api::<ConfigMap>::default_namespaced(late.clone()).get("x").unwrap_err();
    assert_eq!(transport_kind(&err), Some(TransportErrorKind::Timeout), "{err}");
    assert_eq!(server.hits.load(Ordering::SeqCst), 0, "nothing was sent");
    // An earlier deadline wins over a later one; the handle without a deadline has none.
    let later = late.with_deadline(Instant::now() + Duration::from_secs(3600));
    assert_eq!(later.deadline(), late.deadline());
    assert_eq!(client.deadline(), None);
    assert!(Api::<ConfigMap>::default_namespaced(client).get("ok").is_ok());
}

#[test]
fn a_deadline_stops_waiting_for_an_exec_plugin_but_lets_it_finish() {
    let server = token_checking_server();
    let dir = TempDir::new("exec-deadline");
    // The real plugin runs once `release` exists; meanwhile the request's deadline passes.
    let (started, release) = (dir.path("started"), dir.path("release"));
    let script = format!(
        "touch '{s}'; while [ ! -f '{r}' ] && [ -f '{s}' ]; do sleep 0.02; done; exec sh '{p}'",
        s = started.display(),
        r = release.display(),
        p = fixture("exec/credential-plugin.sh").display()
    );
    let slow = plugin(&dir, "good", "").args(["-c", script.as_str()]);
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).exec(slow)).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let err = api
        .with_deadline(Instant::now() + Duration::from_millis(200))
        .get("x")
        .unwrap_err();
    assert_eq!(transport_kind(&err), Some(TransportErrorKind::Timeout), "{err}");
    assert!(started.exists(), "the plugin was running");
    // The run was not killed: its credential serves the next request, with no second run.
    std::fs::write(&release, "").unwrap();
    api.get("x").unwrap();
    assert_eq!(runs(&dir), 1);
}

// ---- credentials that rotate ----------------------------------------------------------------------------------------

fn runs(dir: &TempDir) -> usize {
    std::fs::read_to_string(dir.path("count")).map_or(0, |s| s.trim().parse().unwrap())
}

/// A server accepting only `Bearer good`.
fn token_checking_server() -> RawServer {
    RawServer::start(|head, conn| {
        if head
            .lines()
            .any(|l| l.eq_ignore_ascii_case("authorization: Bearer good"))
        {
            respond(
                conn,
                "200 OK",
                &[],
                r#"{"metadata":{"name":"x","namespace":"default"}}"#,
            );
        } else {
            respond(
                conn,
                "401 Unauthorized",
                &[],
                r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#,
            );
        }
    })
}

#[test]
fn expired_exec_credentials_are_refetched_for_every_request() {
    let server = token_checking_server();
    let dir = TempDir::new("exec-expired");
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).exec(plugin(
        &dir,
        "good",
        "2000-01-01T00:00:00Z",
    )))
    .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for _ in 0..3 {
        api.get("x").unwrap();
    }
    assert_eq!(runs(&dir), 3);
}

#[test]
fn exec_failures_are_readable_auth_errors() {
    if !common::can_run_sh_plugins() {
        return;
    }
    let server = token_checking_server();
    let dir = TempDir::new("exec-fail");
    let failing = plugin(&dir, "good", "").env("FAIL", "token expired: run `cloud auth login`");
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).exec(failing)).unwrap();
    let err = Api::<ConfigMap>::default_namespaced(client).get("x").unwrap_err();
    assert!(matches!(err, Error::Auth(_)), "{err}");
    // What the plugin printed on stderr went to this process's stderr (client-go's way), not into the error.
    let text = err.to_string();
    assert!(
        text.contains("exec plugin \"sh\" failed (exit status: 1)") && text.contains("standard error"),
        "{err}"
    );
    assert!(!text.contains("cloud auth login"), "{err}");

    let mut missing = kube_informer::client::ExecConfig::new("kube-informer-no-such-plugin");
    missing.install_hint = Some("Install it with `brew install no-such-plugin`.".into());
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).exec(missing)).unwrap();
    let err = Api::<ConfigMap>::default_namespaced(client)
        .get("x")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("kube-informer-no-such-plugin") && err.contains("brew install no-such-plugin"),
        "{err}"
    );
}

#[test]
fn abort_does_not_wait_for_a_slow_exec_plugin() {
    if !common::can_run_sh_plugins() {
        return;
    }
    let server = token_checking_server();
    let dir = TempDir::new("exec-slow");
    // The plugin waits for `release` to exist, so it is still running when the request is aborted (and ends when
    // the folder goes, should the test fail first).
    let (started, release) = (dir.path("started"), dir.path("release"));
    let script = format!(
        "touch '{s}'; while [ ! -f '{r}' ] && [ -f '{s}' ]; do sleep 0.02; done",
        s = started.display(),
        r = release.display()
    );
    let slow = kube_informer::client::ExecConfig::new("sh").args(["-c", script.as_str()]);
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).exec(slow)).unwrap();
    let request = {
        let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
        std::thread::spawn(move || api.get("x"))
    };
    eventually("the plugin started", || started.exists());
    client.abort_handle().abort();
    let result = request.join().unwrap();
    assert!(matches!(result, Err(Error::Stopped)), "{result:?}");
    std::fs::write(&release, "").unwrap();
}

#[test]
fn token_file_rotation_is_picked_up() {
    let accepted = Arc::new(parking_lot::Mutex::new("first-token".to_string()));
    let server = {
        let accepted = Arc::clone(&accepted);
        RawServer::start(move |head, conn| {
            let want = format!("authorization: bearer {}", accepted.lock());
            if head.lines().any(|l| l.eq_ignore_ascii_case(&want)) {
                respond(conn, "200 OK", &[], r#"{"metadata":{"name":"x"}}"#);
            } else {
                respond(
                    conn,
                    "401 Unauthorized",
                    &[],
                    r#"{"kind":"Status","code":401,"reason":"Unauthorized","message":"Unauthorized"}"#,
                );
            }
        })
    };
    let dir = TempDir::new("token-file");
    let token = dir.path("token");
    std::fs::write(&token, "first-token\n").unwrap();
    let api: Api<ConfigMap> =
        Api::default_namespaced(Client::new(Config::new(server.url.as_str()).proxy(None).token_file(&token)).unwrap());
    api.get("x").unwrap();
    // kubelet rotates the token: the server stops accepting the old one, the file holds the new one.
    *accepted.lock() = "second-token".into();
    let tmp = dir.path("token.tmp");
    std::fs::write(&tmp, "second-token\n").unwrap();
    std::fs::rename(&tmp, &token).unwrap();
    api.get("x")
        .expect("the new token is read (at the latest after the 401)");
}

// ---- against the embedded API server over HTTPS ---------------------------------------------------------------------

use kube_informer::client::Deleted;
use kube_informer::client::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube_informer::object::{DynamicObject, ObjectMeta};
use kube_informer::watch::WatchEvent;
use kube_informer_apiserver::{AccessRule, ApiServer, Fault, Verb};

const TOKEN: &str = "s3cr3t-test-token";

fn https_server() -> ApiServer {
    ApiServer::builder().https().token(TOKEN, "alice").start().unwrap()
}

/// A client for `server` trusting its CA, with no credential yet.
fn config_for(server: &ApiServer) -> Config {
    Config::new(server.url())
        .proxy(None)
        .ca_pem(server.ca_pem().unwrap().as_bytes().to_vec())
}

fn cm(name: &str) -> ConfigMap {
    ConfigMap::new(ObjectMeta::namespaced("default", name)).with("k", "v")
}

fn users_seen(server: &ApiServer) -> Vec<Option<String>> {
    server.requests().records().into_iter().map(|r| r.user).collect()
}

#[test]
fn a_deadline_aborts_a_request_the_embedded_server_stalls() {
    let server = https_server();
    let client = Client::new(config_for(&server).token(TOKEN)).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &cm("a")).unwrap();
    server.inject(Fault::on(Some(Verb::Get), Some("configmaps")).stall());
    let err = api
        .with_deadline(Instant::now() + Duration::from_millis(300))
        .get("a")
        .unwrap_err();
    assert!(
        matches!(&err, Error::Transport(t) if t.kind == TransportErrorKind::Timeout)
            && err.to_string().contains("deadline"),
        "{err}"
    );
    assert_eq!(server.pending_faults(), 0, "the stalled request was the GET");
    server.clear_faults();
    assert_eq!(&api.get("a").unwrap().data["k"], "v");
}

#[test]
fn bearer_token_from_the_servers_kubeconfig() {
    let server = https_server();
    let client = Client::new(
        Config::from_kubeconfig_file(server.kubeconfig_path(), None)
            .unwrap()
            .proxy(None),
    )
    .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &cm("a")).unwrap();
    assert_eq!(&api.get("a").unwrap().data["k"], "v");
    assert!(users_seen(&server).iter().all(|u| u.as_deref() == Some("alice")));
}

#[test]
fn rotated_in_cluster_token_is_picked_up() {
    let server = https_server();
    let dir = TempDir::new("incluster");
    std::fs::write(dir.path("token"), "stale-token").unwrap();
    std::fs::write(dir.path("ca.crt"), server.ca_pem().unwrap()).unwrap();
    std::fs::write(dir.path("namespace"), "default\n").unwrap();
    let addr = server.addr();
    let config = Config::incluster_from(&addr.ip().to_string(), &addr.port().to_string(), &dir.0)
        .unwrap()
        .proxy(None);
    assert_eq!(config.namespace(), "default");
    let api: Api<ConfigMap> = Api::default_namespaced(Client::new(config).unwrap());
    let err = api.list(&ListParams::default()).unwrap_err();
    assert!(err.is_unauthorized(), "{err}");
    // kubelet writes the rotated token (atomically, as it swaps the projected volume).
    std::fs::write(dir.path("token.new"), format!("{TOKEN}\n")).unwrap();
    std::fs::rename(dir.path("token.new"), dir.path("token")).unwrap();
    api.list(&ListParams::default()).expect("the rotated token is used");
}

/// A server accepting client certificates from the fixture CA (and a token, which turns authentication on).
fn cert_server() -> ApiServer {
    let ca = std::fs::read_to_string(fixture("tls/client-ca.pem")).unwrap();
    ApiServer::builder()
        .https()
        .token(TOKEN, "alice")
        .client_ca_pem(&ca)
        .start()
        .unwrap()
}

#[test]
fn client_certificates_with_rsa_and_ec_keys() {
    let server = cert_server();
    for (cert, key, user) in [
        ("tls/rsa-client.crt", "tls/rsa-client.key", "rsa-user"),
        ("tls/rsa-client.crt", "tls/rsa-client.pk8.key", "rsa-user"),
        ("tls/ec-client.crt", "tls/ec-client.key", "ec-user"),
    ] {
        let config = config_for(&server).client_cert_pem(
            std::fs::read(fixture(cert)).unwrap(),
            std::fs::read(fixture(key)).unwrap(),
        );
        let mark = server.requests().mark();
        Api::<ConfigMap>::default_namespaced(Client::new(config).unwrap())
            .list(&ListParams::default())
            .unwrap_or_else(|e| panic!("{key}: {e}"));
        let seen: Vec<_> = server.requests().since(mark).into_iter().map(|r| r.user).collect();
        assert_eq!(seen, vec![Some(user.to_string())], "{key}");
    }
    // Without a certificate the same server answers 401, body intact.
    let err = Api::<ConfigMap>::default_namespaced(Client::new(config_for(&server)).unwrap())
        .list(&ListParams::default())
        .unwrap_err();
    assert_eq!(
        err.status().map(|s| (s.code, s.reason.as_str())),
        Some((401, "Unauthorized")),
        "{err}"
    );
}

#[test]
fn exec_plugin_token_is_cached_until_expiry_and_refetched_after_a_401() {
    if !common::can_run_sh_plugins() {
        return;
    }
    let server = https_server();
    let dir = TempDir::new("exec-https");
    let bad_then_good = format!("not-the-token {TOKEN}");
    let config =
        config_for(&server).exec(plugin(&dir, &bad_then_good, "2999-01-01T00:00:00Z").provide_cluster_info(true));
    let api: Api<ConfigMap> = Api::default_namespaced(Client::new(config).unwrap());
    api.list(&ListParams::default()).unwrap();
    assert_eq!(runs(&dir), 2, "the 401 made the client run the plugin again");
    for _ in 0..5 {
        api.list(&ListParams::default()).unwrap();
    }
    assert_eq!(runs(&dir), 2, "the credential is cached until it expires");
    let info: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path("info")).unwrap()).unwrap();
    assert_eq!(info["spec"]["interactive"], false);
    assert_eq!(info["spec"]["cluster"]["server"], server.url());
    assert!(info["spec"]["cluster"]["certificate-authority-data"].is_string());
}

#[test]
fn exec_plugin_can_issue_a_client_certificate() {
    if !common::can_run_sh_plugins() {
        return;
    }
    let server = cert_server();
    let dir = TempDir::new("exec-cert");
    let exec = plugin(&dir, "", "")
        .env("CERT", fixture("tls/rsa-client.crt").display().to_string())
        .env("KEY", fixture("tls/rsa-client.key").display().to_string());
    let api: Api<ConfigMap> = Api::default_namespaced(Client::new(config_for(&server).exec(exec)).unwrap());
    api.list(&ListParams::default()).unwrap();
    assert_eq!(
        users_seen(&server).last().cloned().flatten().as_deref(),
        Some("rsa-user")
    );
}

#[test]
fn a_wrong_ca_is_a_clear_tls_error() {
    let server = https_server();
    let config = Config::new(server.url())
        .proxy(None)
        .token(TOKEN)
        .ca_pem(std::fs::read(fixture("tls/client-ca.pem")).unwrap());
    let err = Api::<ConfigMap>::default_namespaced(Client::new(config).unwrap())
        .list(&ListParams::default())
        .unwrap_err();
    assert_eq!(transport_kind(&err), Some(TransportErrorKind::Tls), "{err}");
    assert!(
        err.to_string()
            .contains("not signed by a trusted certificate authority"),
        "{err}"
    );
}

#[test]
fn certificate_verification_is_skipped_only_when_asked() {
    let server = https_server();
    let plain = Config::new(server.url()).proxy(None).token(TOKEN);
    let err = Api::<ConfigMap>::default_namespaced(Client::new(plain.clone()).unwrap())
        .list(&ListParams::default())
        .unwrap_err();
    assert_eq!(
        transport_kind(&err),
        Some(TransportErrorKind::Tls),
        "Mozilla roots do not know the test CA: {err}"
    );
    let insecure = Client::new(plain.insecure_skip_tls_verify(true)).unwrap();
    Api::<ConfigMap>::default_namespaced(insecure)
        .list(&ListParams::default())
        .unwrap();
}

fn seeded(n: usize) -> (ApiServer, Api<ConfigMap>) {
    let server = https_server();
    for i in 0..n {
        server.create(&cm(&format!("cm-{i:05}"))).unwrap();
    }
    let api = Api::default_namespaced(Client::new(config_for(&server).token(TOKEN)).unwrap());
    (server, api)
}

#[test]
fn paging_ten_thousand_objects_yields_each_once() {
    let (server, api) = seeded(10_000);
    let mark = server.requests().mark();
    let mut names = std::collections::HashSet::new();
    let mut pages = 0;
    for page in api.list_pages(&ListParams::default().limit(500)) {
        let page = page.unwrap();
        pages += 1;
        for o in page.items {
            assert!(names.insert(o.metadata.name.unwrap()), "an object came twice");
        }
    }
    assert_eq!((names.len(), pages), (10_000, 20));
    assert_eq!(server.requests().lists_since(mark, "configmaps"), 20);
    assert_eq!(
        api.list_all(&ListParams::default().limit(500)).unwrap().items.len(),
        10_000
    );
}

#[test]
fn an_expired_continue_token_falls_back_to_one_full_list() {
    let (server, api) = seeded(1_200);
    let mut pages = api.list_pages(&ListParams::default().limit(500));
    let first = pages.next().unwrap().unwrap();
    assert_eq!(first.items.len(), 500);
    // A write and a compaction make the continue token of page 2 expire.
    server.create(&cm("late")).unwrap();
    server.compact_to_latest();
    let full = pages.next().unwrap().unwrap();
    assert!(pages.restarted());
    assert_eq!(full.items.len(), 1_201, "the fallback is one complete list");
    assert!(pages.next().is_none());
    // list_all hides it: every object exactly once.
    let all = api.list_all(&ListParams::default().limit(500)).unwrap();
    let unique: std::collections::HashSet<_> = all.items.iter().map(|o| o.metadata.name.clone()).collect();
    assert_eq!((all.items.len(), unique.len()), (1_201, 1_201));
}

#[test]
fn error_answers_keep_the_servers_status() {
    let server = ApiServer::builder()
        .https()
        .token(TOKEN, "alice")
        .token("reader-token", "reader")
        .rule(AccessRule::user("alice"))
        .rule(AccessRule::user("reader").verbs(&["get", "list", "watch"]))
        .start()
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(Client::new(config_for(&server).token(TOKEN)).unwrap());
    let check = |e: Error, code: u16, reason: &str| {
        let s = e.status().unwrap_or_else(|| panic!("{e}"));
        assert_eq!((s.code, s.reason.as_str()), (code, reason), "{e}");
        assert!(!s.message.is_empty(), "the message is kept: {e}");
        e
    };
    // 404
    check(api.get("missing").unwrap_err(), 404, "NotFound");
    assert!(api.get_opt("missing").unwrap().is_none());
    // 409 AlreadyExists and Conflict
    let created = api.create(&PostParams::default(), &cm("dup")).unwrap();
    assert!(
        check(
            api.create(&PostParams::default(), &cm("dup")).unwrap_err(),
            409,
            "AlreadyExists"
        )
        .is_already_exists()
    );
    let changed = created.clone().with("k2", "changed");
    api.replace("dup", &PostParams::default(), &changed).unwrap();
    assert!(
        check(
            api.replace("dup", &PostParams::default(), &created).unwrap_err(),
            409,
            "Conflict"
        )
        .is_conflict()
    );
    // 422
    check(
        api.create(&PostParams::default(), &cm("Not_A_Valid_Name")).unwrap_err(),
        422,
        "Invalid",
    );
    // 410
    let rv = api
        .list(&ListParams::default())
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    api.create(&PostParams::default(), &cm("newer")).unwrap();
    server.compact_to_latest();
    let exact = ListParams::default()
        .at(&rv)
        .matching(kube_informer::client::params::VersionMatch::Exact);
    assert!(check(api.list(&exact).unwrap_err(), 410, "Expired").is_expired());
    // 403
    let reader: Api<ConfigMap> =
        Api::default_namespaced(Client::new(config_for(&server).token("reader-token")).unwrap());
    assert!(
        check(
            reader.delete("dup", &DeleteParams::default()).unwrap_err(),
            403,
            "Forbidden"
        )
        .is_forbidden()
    );
    // 401
    let stranger: Api<ConfigMap> = Api::default_namespaced(Client::new(config_for(&server).token("nope")).unwrap());
    assert!(check(stranger.get("dup").unwrap_err(), 401, "Unauthorized").is_unauthorized());
    // 429 with Retry-After
    server.inject(Fault::list("configmaps").error(429).retry_after(3));
    let e = check(api.list(&ListParams::default()).unwrap_err(), 429, "TooManyRequests");
    assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
}

#[test]
fn writes_patches_deletes_and_status() {
    let server = https_server();
    let client = Client::new(config_for(&server).token(TOKEN)).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &cm("p")).unwrap();
    let merged = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"m": "1"}})),
        )
        .unwrap();
    assert_eq!(&merged.data["m"], "1");
    let json = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json(serde_json::json!([{"op": "add", "path": "/data/j", "value": "2"}])),
        )
        .unwrap();
    assert_eq!(&json.data["j"], "2");
    let strategic = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(serde_json::json!({"data": {"s": "3"}})),
        )
        .unwrap();
    assert_eq!(&strategic.data["s"], "3");
    let applied = api
        .patch(
            "p",
            &PatchParams::apply("tests").force(),
            &Patch::Apply(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "4"}})),
        )
        .unwrap();
    assert_eq!(&applied.data["a"], "4");
    let mark = server.requests().mark();
    assert!(matches!(
        api.delete("p", &DeleteParams::default()).unwrap(),
        Deleted::Status(_) | Deleted::Object(_)
    ));
    assert_eq!(server.requests().count_since(mark, Verb::Delete, "configmaps"), 1);

    // A resource with a status subresource, through DynamicObject and discovery.
    let pods = client.resolve("po").unwrap();
    assert_eq!((pods.plural.as_str(), pods.namespaced), ("pods", true));
    let dynapi: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &pods);
    let pod = DynamicObject::new("pod-1", &pods).within("default").with_field(
        "spec",
        &serde_json::json!({"containers": [{"name": "c", "image": "nginx"}]}),
    );
    dynapi.create(&PostParams::default(), &pod).unwrap();
    let patched = dynapi
        .patch_status(
            "pod-1",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"phase": "Running"}})),
        )
        .unwrap();
    assert_eq!(
        patched.field::<serde_json::Value>("status").unwrap().unwrap()["phase"],
        "Running"
    );
    let mut current = dynapi.get_status("pod-1").unwrap();
    current
        .set_field("status", &serde_json::json!({"phase": "Succeeded"}))
        .unwrap();
    let replaced = dynapi
        .replace_status("pod-1", &PostParams::default(), &current)
        .unwrap();
    assert_eq!(
        replaced.field::<serde_json::Value>("status").unwrap().unwrap()["phase"],
        "Succeeded"
    );
    for name in [
        "deployments.apps",
        "apps/v1/deployments",
        "Deployment",
        "cm",
        "ConfigMap",
        "v1/configmaps",
    ] {
        client.resolve(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn list_each_streams_every_item() {
    let (_server, api) = seeded(3_000);
    let mut n = 0;
    let meta = api
        .list_each(&ListParams::default(), |o| {
            assert!(o.metadata.name.is_some());
            n += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 3_000);
    assert!(meta.resource_version.is_some());
    // The callback can end the listing.
    let err = api
        .list_each(&ListParams::default(), |_| Err(Error::Stopped))
        .unwrap_err();
    assert!(matches!(err, Error::Stopped));
}

#[test]
fn watch_delivers_events_and_ends_cleanly_at_its_timeout() {
    let server = https_server();
    let api: Api<ConfigMap> = Api::default_namespaced(Client::new(config_for(&server).token(TOKEN)).unwrap());
    let rv = api
        .list(&ListParams::default())
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api.watch(&WatchParams::default().at(&rv).timeout(1)).unwrap();
    assert!(server.wait_for_watchers("configmaps", 1, Duration::from_secs(10)));
    api.create(&PostParams::default(), &cm("w")).unwrap();
    api.delete("w", &DeleteParams::default()).unwrap();
    let mut seen = Vec::new();
    for ev in stream.by_ref() {
        match ev.unwrap() {
            WatchEvent::Added(o) | WatchEvent::Deleted(o) => seen.push(o.metadata.name.unwrap()),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ["w", "w"]);
    assert!(stream.next().is_none());
}

#[test]
fn stopping_a_watch_from_another_thread_returns() {
    let server = https_server();
    let api: Api<ConfigMap> = Api::default_namespaced(Client::new(config_for(&server).token(TOKEN)).unwrap());
    let mut stream = api.watch(&WatchParams::default().at("0")).unwrap();
    let stopper = stream.stopper();
    let reader = std::thread::spawn(move || {
        let first = stream.next();
        let after = stream.next();
        (first.map(|r| r.map(|_| ())), after.is_none())
    });
    assert!(server.wait_for_watchers("configmaps", 1, Duration::from_secs(10)));
    stopper.stop();
    let (first, ended) = reader.join().unwrap();
    assert!(matches!(first, Some(Err(Error::Stopped))), "{first:?}");
    assert!(ended);
    // The client itself is unaffected.
    api.list(&ListParams::default()).unwrap();
}

#[test]
fn a_silent_watch_ends_with_watch_idle() {
    let server = https_server();
    let config = config_for(&server)
        .token(TOKEN)
        .watch_idle_limit(Duration::from_millis(300));
    let api: Api<ConfigMap> = Api::default_namespaced(Client::new(config).unwrap());
    server.inject(Fault::watch("configmaps").stall_after_events(0));
    let mut stream = api.watch(&WatchParams::default().at("0")).unwrap();
    let ev = stream.next();
    assert!(
        matches!(ev, Some(Err(Error::WatchIdle(d))) if d == Duration::from_millis(300)),
        "{ev:?}"
    );
    assert!(stream.next().is_none());
    server.clear_faults();
}

#[test]
fn client_abort_stops_watches_and_lists() {
    let server = https_server();
    let client = Client::new(config_for(&server).token(TOKEN)).unwrap().isolated();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mut stream = api.watch(&WatchParams::default().at("0")).unwrap();
    server.inject(Fault::list("configmaps").stall());
    let list = {
        let api = api.clone();
        std::thread::spawn(move || api.list(&ListParams::default()).map(|_| ()))
    };
    let watch = std::thread::spawn(move || stream.next().map(|r| r.map(|_| ())));
    assert!(server.wait_for_watchers("configmaps", 1, Duration::from_secs(10)));
    // The stalled LIST took its fault: it is blocked in the server.
    eventually("the stalled list reached the server", || server.pending_faults() == 0);
    client.abort_handle().abort();
    assert!(matches!(list.join().unwrap(), Err(Error::Stopped)));
    assert!(matches!(watch.join().unwrap(), Some(Err(Error::Stopped))));
    server.clear_faults();
}

#[test]
fn an_informer_syncs_through_list_watch_and_stops() {
    use kube_informer::cache::ListWatch;
    use kube_informer::informer::{InformerOptions, SharedIndexInformer};

    let (server, api) = seeded(1_000);
    server.create(&cm("other").with("x", "y")).unwrap();
    let mut labelled = cm("labelled");
    labelled.metadata.labels.insert("app".into(), "web".into());
    server.create(&labelled).unwrap();

    let informer = SharedIndexInformer::new(ListWatch::new(&api), InformerOptions::default());
    let web = SharedIndexInformer::new(ListWatch::new(&api).labels("app=web"), InformerOptions::default());
    informer.start().unwrap();
    web.start().unwrap();
    informer.wait_for_cache_sync(Duration::from_secs(20)).unwrap();
    web.wait_for_cache_sync(Duration::from_secs(20)).unwrap();
    assert_eq!((informer.lister().len(), web.lister().len()), (1_002, 1));
    api.create(&PostParams::default(), &cm("late")).unwrap();
    eventually("the watch delivered the new object", || {
        informer.lister().len() == 1_003
    });
    informer.stop();
    web.stop();
    assert!(informer.is_stopped() && web.is_stopped());
    // Stopping the informers aborted their own isolated clients only.
    api.get("late").unwrap();
}
