//! The REST client against real sockets: raw HTTP servers for transport-level behaviour (redirects, stalls,
//! aborts, limits), and the embedded API server over HTTPS for authentication, TLS, paging, watches and errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use kube_informer::client::{Api, Client, Config};
use kube_informer::object::core::ConfigMap;
use kube_informer::{Error, TransportErrorKind};

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
                    loop {
                        let Some(head) = read_head(&mut conn) else { break };
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

/// Polls `condition` until it holds; fails the test after 10 s.
fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
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

// ---- credentials that rotate ----------------------------------------------------------------------------------------

/// A scratch folder removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kube-informer-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, file: &str) -> std::path::PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fixture(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// The fixture plugin, counting its runs in `dir/count`.
fn plugin(dir: &TempDir, tokens: &str, expires: &str) -> kube_informer::client::ExecConfig {
    kube_informer::client::ExecConfig::new("sh")
        .args([fixture("exec/credential-plugin.sh").display().to_string()])
        .env("COUNT_FILE", dir.path("count").display().to_string())
        .env("INFO_FILE", dir.path("info").display().to_string())
        .env("TOKENS", tokens)
        .env("EXPIRES", expires)
}

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
fn exec_credential_is_cached_until_expiry_and_refetched_after_a_401_raw() {
    let server = token_checking_server();
    let dir = TempDir::new("exec");
    // Run 1 prints a token the server refuses; run 2 a good one; both valid for centuries.
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).exec(plugin(
        &dir,
        "bad good",
        "2999-01-01T00:00:00Z",
    )))
    .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.get("x").unwrap();
    assert_eq!(runs(&dir), 2, "the 401 made the client run the plugin again and retry");
    for _ in 0..3 {
        api.get("x").unwrap();
    }
    assert_eq!(runs(&dir), 2, "an unexpired credential is reused");
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
    let server = token_checking_server();
    let dir = TempDir::new("exec-fail");
    let failing = plugin(&dir, "good", "").env("FAIL", "token expired: run `cloud auth login`");
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).exec(failing)).unwrap();
    let err = Api::<ConfigMap>::default_namespaced(client).get("x").unwrap_err();
    assert!(matches!(err, Error::Auth(_)), "{err}");
    assert!(
        err.to_string().contains("run `cloud auth login`"),
        "stderr is shown: {err}"
    );

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
    let server = token_checking_server();
    let dir = TempDir::new("exec-slow");
    // The plugin waits for `release` to exist, so it is still running when the request is aborted.
    let (started, release) = (dir.path("started"), dir.path("release"));
    let script = format!(
        "touch '{}'; while [ ! -f '{}' ]; do sleep 0.02; done",
        started.display(),
        release.display()
    );
    let slow = kube_informer::client::ExecConfig::new("sh").args(["-c", script.as_str()]);
    let client = Client::new(Config::new(server.url.as_str()).proxy(None).exec(slow)).unwrap();
    let request = {
        let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
        std::thread::spawn(move || api.get("x"))
    };
    wait_until("the plugin started", || started.exists());
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
