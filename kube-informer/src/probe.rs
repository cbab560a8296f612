//! `ProbeServer` (feature `probe`): the HTTP endpoint a kubelet and Prometheus ask — `/metrics`, `/healthz` and
//! `/readyz` — in the shape controller-runtime's manager serves them.
//!
//! * `GET /metrics`: [`metrics::encode`](crate::metrics::encode) of the registry (Prometheus text format).
//! * `GET /healthz` (liveness): `200 ok` unless a component halted (`500`): a halted informer's cache no longer
//!   follows the server and only a restart brings it back; a degraded one recovers on its own, so it does not fail
//!   liveness.
//! * `GET /readyz` (readiness): `200 ok` once every informer has synced and every check is ready, `503` otherwise.
//! * `/healthz/<check>` and `/readyz/<check>` ask one check (`/readyz/informer:configmaps`); `?verbose` lists every
//!   check (`[+]informer:configmaps ok`, `[-]informer:secrets not ready: degraded for 12s (3 failed attempts): …`);
//!   a failing answer always lists them.
//!
//! Served on one thread, `probe:<port>`, that accepts a connection, answers its one request (HTTP/1.1, read with
//! `httparse`, `Connection: close`) and goes back to accepting; [`stop`](ProbeServer::stop) joins it. No other
//! thread is started. A client gets [`CONNECTION_BUDGET`] to send its request and read the answer, so one that
//! stalls delays the next probe by at most that, and never a stop.
//!
//! ```
//! use kube_informer::registry::Registry;
//! use kube_informer::informer::{FactoryOptions, SharedInformerFactory};
//! use kube_informer::object::core::ConfigMap;
//! use kube_informer::probe::ProbeServer;
//! use kube_informer_apiserver::ApiServer;
//!
//! let server = ApiServer::start()?;
//! let factory = SharedInformerFactory::new(server.client()?, FactoryOptions::default());
//! factory.informer::<ConfigMap>();
//! let registry = Registry::new();
//! registry.add_factory(&factory);
//! let probe = ProbeServer::start("127.0.0.1:0", registry)?;
//! println!("probes on http://{}/readyz", probe.local_addr());
//! factory.start()?;
//! // … run; then:
//! probe.stop();
//! factory.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::registry::{Check, Registry};
use crate::thread_name::ThreadName;
use crate::worker::{STOP_BUDGET, Worker};

/// An HTTP listener serving `/metrics`, `/healthz` and `/readyz` from a [`Registry`] on its own thread; stopped by
/// [`stop`](ProbeServer::stop) or by being dropped.
pub struct ProbeServer {
    addr: SocketAddr,
    /// Set before the serving thread is woken (by a connection of our own), so that it ends.
    stopping: Arc<AtomicBool>,
    worker: Mutex<Option<Worker>>,
    live: Arc<AtomicUsize>,
}

impl ProbeServer {
    /// Listens on `addr` (`0.0.0.0:8081`, or port 0 for any free port) and serves `registry` on a thread named
    /// `probe:<port>`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the address cannot be bound or the thread cannot be spawned.
    pub fn start(addr: impl ToSocketAddrs, registry: Registry) -> Result<ProbeServer> {
        let cannot = |e: std::io::Error| Error::InvalidInput(format!("probe endpoint: cannot listen: {e}"));
        let listener = TcpListener::bind(addr).map_err(cannot)?;
        let addr = listener.local_addr().map_err(cannot)?;
        let stopping = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicUsize::new(0));
        let thread_stopping = stopping.clone();
        let name = ThreadName::new("probe", &addr.port().to_string(), format!("kube-informer/probe/{addr}"));
        let worker = Worker::spawn(name, &live, move || serve(&listener, &registry, &thread_stopping))?;
        log::info!("probe endpoint listening on http://{addr} (/metrics, /healthz, /readyz)");
        Ok(ProbeServer {
            addr,
            stopping,
            worker: Mutex::new(Some(worker)),
            live,
        })
    }

    /// The address it listens on (with the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its serving thread is running (1) or has ended (0).
    pub fn running_threads(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Stops serving: the serving thread drops the connection it is reading or answering, if any, closes the
    /// listening socket and is joined (within about a second). Idempotent.
    pub fn stop(&self) {
        self.stop_by(Instant::now() + STOP_BUDGET);
    }

    /// [`stop`](Self::stop), joining the thread until `deadline`; true when joined (or stopped before).
    pub(crate) fn stop_by(&self, deadline: Instant) -> bool {
        let Some(worker) = self.worker.lock().take() else {
            return true;
        };
        self.stopping.store(true, Ordering::SeqCst);
        // Wakes a thread blocked in accept; it sees `stopping` and ends. A wildcard address is reached on loopback.
        let wake = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), self.addr.port()),
            IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), self.addr.port()),
            _ => self.addr,
        };
        if let Err(e) = TcpStream::connect_timeout(&wake, STEP) {
            log::debug!("probe endpoint: cannot wake the serving thread on {wake}: {e}");
        }
        let joined = worker.join_until(deadline);
        log::debug!("probe endpoint on {} stopped", self.addr);
        joined
    }
}

impl Drop for ProbeServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for ProbeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeServer").field("addr", &self.addr).finish()
    }
}

/// What a client gets to send its request and read the answer, at most; a connection past it is dropped.
pub const CONNECTION_BUDGET: Duration = Duration::from_secs(2);

/// How long a read or write blocks before the serving thread looks at `stopping` and the connection's budget.
const STEP: Duration = Duration::from_millis(100);

/// The longest request head read (request line and headers); a longer one gets `431`.
const MAX_HEAD: usize = 8 * 1024;

/// The serving thread: answers connections one at a time until stopped.
fn serve(listener: &TcpListener, registry: &Registry, stopping: &AtomicBool) {
    loop {
        let accepted = listener.accept();
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((stream, peer)) => {
                if let Err(e) = converse(stream, registry, stopping) {
                    log::debug!("probe endpoint: connection from {peer}: {e}");
                }
            }
            // A connection reset before it was accepted, or a process out of descriptors for a moment.
            Err(e) => {
                log::debug!("probe endpoint: cannot accept a connection: {e}");
                std::thread::sleep(STEP);
            }
        }
    }
}

/// Reads one request from `stream` within [`CONNECTION_BUDGET`] and answers it.
fn converse(mut stream: TcpStream, registry: &Registry, stopping: &AtomicBool) -> std::io::Result<()> {
    let deadline = Instant::now() + CONNECTION_BUDGET;
    stream.set_read_timeout(Some(STEP))?;
    stream.set_write_timeout(Some(STEP))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let answer = loop {
        if stopping.load(Ordering::SeqCst) || Instant::now() >= deadline {
            return Ok(());
        }
        match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => return Err(e),
        }
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&head) {
            Ok(httparse::Status::Complete(_)) => {
                let method = request.method.unwrap_or_default();
                let answer = answer(method, request.path.unwrap_or("/"), registry);
                break (answer, method == "HEAD");
            }
            Ok(httparse::Status::Partial) if head.len() <= MAX_HEAD => {}
            Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
                break (text(431, "request header fields too large\n"), false);
            }
            Err(e) => break (text(400, format!("bad request: {e}\n")), false),
        }
    };
    let (answer, head_only) = answer;
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        answer.status,
        reason(answer.status),
        answer.content_type,
        answer.body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(answer.body.as_bytes());
    }
    let mut written = 0;
    while written < out.len() {
        if stopping.load(Ordering::SeqCst) || Instant::now() >= deadline {
            return Err(std::io::Error::new(
                ErrorKind::TimedOut,
                "the client does not read its answer",
            ));
        }
        match stream.write(&out[written..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// An HTTP answer.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
}

const TEXT: &str = "text/plain; charset=utf-8";

fn text(status: u16, body: impl Into<String>) -> Answer {
    Answer {
        status,
        content_type: TEXT,
        body: body.into(),
    }
}

/// What to answer `method url`.
fn answer(method: &str, url: &str, registry: &Registry) -> Answer {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let verbose = query.split('&').any(|p| p == "verbose" || p.starts_with("verbose="));
    if !matches!(method, "GET" | "HEAD") {
        return text(405, "method not allowed\n");
    }
    let (probe, one) = match path
        .split_once('/')
        .map(|(_, rest)| rest.split_once('/').unwrap_or((rest, "")))
    {
        Some(("metrics", "")) => {
            return Answer {
                status: 200,
                content_type: crate::metrics::CONTENT_TYPE,
                body: crate::metrics::encode(registry),
            };
        }
        Some((probe @ ("healthz" | "livez" | "readyz"), one)) => (probe, one),
        _ => return text(404, "404 page not found\n"),
    };
    let live = probe != "readyz";
    let report = registry.report();
    let checks: Vec<&Check> = report
        .checks
        .iter()
        .filter(|c| one.is_empty() || c.name == one)
        .collect();
    if !one.is_empty() && checks.is_empty() {
        return text(404, format!("no check named {one:?}\n"));
    }
    let passed = |c: &Check| if live { c.is_live() } else { c.ready };
    let ok = checks.iter().all(|c| passed(c));
    if ok && !verbose {
        return text(200, "ok");
    }
    let status = match (ok, live) {
        (true, _) => 200,
        (false, true) => 500,
        (false, false) => 503,
    };
    text(status, listing(probe, &checks, &passed, ok))
}

/// `[+]name ok` / `[-]name failed: why` for each check, then the verdict (controller-runtime's verbose form).
fn listing(probe: &str, checks: &[&Check], passed: &dyn Fn(&Check) -> bool, ok: bool) -> String {
    let mut out = String::new();
    for c in checks {
        let detail = c.detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default();
        if passed(c) {
            let _ = writeln!(out, "[+]{} ok{detail}", c.name);
        } else {
            let _ = writeln!(out, "[-]{} failed: {}{detail}", c.name, c.health);
        }
    }
    let _ = writeln!(out, "{probe} check {}", if ok { "passed" } else { "failed" });
    out
}

/// Used by tests of the answers without HTTP.
#[cfg(test)]
fn answer_get(url: &str, registry: &Registry) -> Answer {
    answer("GET", url, registry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::Health;
    use std::io::{Read, Write};

    #[test]
    fn liveness_fails_on_halted_only_and_readiness_on_anything_not_ready() {
        let registry = Registry::new();
        let degraded = Arc::new(Mutex::new(Health::Healthy));
        let d = degraded.clone();
        registry.add_check("store", move || d.lock().clone());
        registry.add_check("disk", || Health::Healthy);
        assert_eq!(answer_get("/healthz", &registry), text(200, "ok"));
        assert_eq!(answer_get("/readyz", &registry), text(200, "ok"));
        assert_eq!(
            answer_get("/readyz?verbose", &registry).body,
            "[+]store ok\n[+]disk ok\nreadyz check passed\n"
        );

        *degraded.lock() = Health::Degraded {
            since: Instant::now(),
            attempts: 3,
            last_error: "list failed: 403 Forbidden".into(),
        };
        assert_eq!(answer_get("/healthz", &registry), text(200, "ok"), "degraded is alive");
        let ready = answer_get("/readyz", &registry);
        assert_eq!(ready.status, 503);
        assert!(
            ready.body.starts_with("[-]store failed: degraded for "),
            "{}",
            ready.body
        );
        assert!(
            ready
                .body
                .contains("(3 failed attempts): list failed: 403 Forbidden\n[+]disk ok\nreadyz check failed\n")
        );
        assert_eq!(answer_get("/readyz/disk", &registry), text(200, "ok"), "one check");
        assert_eq!(answer_get("/readyz/nope", &registry).status, 404);

        *degraded.lock() = Health::Halted {
            reason: "stopped".into(),
        };
        let live = answer_get("/healthz", &registry);
        assert_eq!(live.status, 500);
        assert_eq!(
            live.body,
            "[-]store failed: halted: stopped\n[+]disk ok\nhealthz check failed\n"
        );
        assert_eq!(answer_get("/nothing", &registry).status, 404);
        assert_eq!(answer("POST", "/healthz", &registry).status, 405);
    }

    /// Sends `request` raw and reads the whole answer (the server closes the connection after it).
    fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(request).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    #[test]
    fn raw_http_answers_bad_heads_and_head_requests_and_a_silent_client_does_not_hold_up_stop() {
        let registry = Registry::new();
        registry.add_check("disk", || Health::Healthy);
        let probe = ProbeServer::start("127.0.0.1:0", registry).unwrap();
        let addr = probe.local_addr();
        let ok = exchange(addr, b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains("Content-Length: 2\r\n") && ok.ends_with("\r\n\r\nok"),
            "{ok}"
        );
        let head = exchange(addr, b"HEAD /healthz HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"),
            "no body: {head}"
        );
        let bad = exchange(addr, b"GET /readyz HTTP/1.1\r\nno colon here\r\n\r\n");
        assert!(bad.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{bad}");
        let mut huge = b"GET /readyz HTTP/1.1\r\nX-Big: ".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_HEAD + 1));
        let big = exchange(addr, &huge);
        assert!(big.starts_with("HTTP/1.1 431 "), "{big}");
        // A client that connects and says nothing: the thread is busy with it when stop comes.
        let _silent = TcpStream::connect(addr).unwrap();
        let _half = {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /rea").unwrap();
            s
        };
        probe.stop();
        assert_eq!(probe.running_threads(), 0, "the serving thread was joined");
        assert!(TcpStream::connect(addr).is_err(), "the listening socket is closed");
    }
}
