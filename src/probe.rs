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
//! Served by [`tiny_http`](https://docs.rs/tiny_http) (blocking, no async runtime) and one thread of ours,
//! `probe:<port>`, joined by [`stop`](ProbeServer::stop). tiny_http accepts connections on a thread of its own and
//! reads each connection on a pooled thread; they end on their own once the server is dropped and the client is
//! gone (an idle pooled thread after 5 s).
//!
//! ```
//! # #[cfg(feature = "testing")] {
//! use kube_informer::health::Registry;
//! use kube_informer::informer::{FactoryOptions, SharedInformerFactory};
//! use kube_informer::object::core::ConfigMap;
//! use kube_informer::probe::ProbeServer;
//! use kube_informer::testing::ApiServer;
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
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt::Write as _;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::health::{Check, Registry};
use crate::thread_name::ThreadName;
use crate::worker::{STOP_BUDGET, Worker};

/// An HTTP listener serving `/metrics`, `/healthz` and `/readyz` from a [`Registry`] on its own thread; stopped by
/// [`stop`](ProbeServer::stop) or by being dropped.
pub struct ProbeServer {
    addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    /// Set before the serving thread is woken, so that it ends instead of reporting an error.
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
        let server = tiny_http::Server::http(addr)
            .map_err(|e| Error::InvalidInput(format!("probe endpoint: cannot listen: {e}")))?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| Error::InvalidInput("probe endpoint: not an IP address".into()))?;
        let server = Arc::new(server);
        let stopping = Arc::new(AtomicBool::new(false));
        let live = Arc::new(AtomicUsize::new(0));
        let (thread_server, thread_stopping) = (server.clone(), stopping.clone());
        let name = ThreadName::new("probe", &addr.port().to_string(), format!("kube-informer/probe/{addr}"));
        let worker = Worker::spawn(name, &live, move || serve(&thread_server, &registry, &thread_stopping))?;
        log::info!("probe endpoint listening on http://{addr} (/metrics, /healthz, /readyz)");
        Ok(ProbeServer {
            addr,
            server,
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

    /// Stops serving: the serving thread ends after the request it is answering, if any, and is joined (within
    /// about a second: one stuck writing to a client that does not read is left detached, with a warning); the
    /// listening socket closes once the last handle to the server is gone. Idempotent.
    pub fn stop(&self) {
        let Some(worker) = self.worker.lock().take() else {
            return;
        };
        self.stopping.store(true, Ordering::SeqCst);
        self.server.unblock();
        worker.join_until(Instant::now() + STOP_BUDGET);
        log::debug!("probe endpoint on {} stopped", self.addr);
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

/// The serving thread: answers requests one at a time until stopped.
fn serve(server: &tiny_http::Server, registry: &Registry, stopping: &AtomicBool) {
    loop {
        match server.recv() {
            Ok(request) => {
                let answer = answer(request.method(), request.url(), registry);
                let response = tiny_http::Response::from_string(answer.body)
                    .with_status_code(answer.status)
                    .with_header(header("Content-Type", answer.content_type));
                if let Err(e) = request.respond(response) {
                    log::debug!("probe endpoint: cannot answer: {e}");
                }
            }
            Err(_) if stopping.load(Ordering::SeqCst) => return,
            Err(e) => {
                log::error!("probe endpoint: cannot accept connections any more: {e}");
                return;
            }
        }
    }
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
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
fn answer(method: &tiny_http::Method, url: &str, registry: &Registry) -> Answer {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let verbose = query.split('&').any(|p| p == "verbose" || p.starts_with("verbose="));
    if !matches!(method, tiny_http::Method::Get | tiny_http::Method::Head) {
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
    answer(&tiny_http::Method::Get, url, registry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::Health;

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
        assert_eq!(answer(&tiny_http::Method::Post, "/healthz", &registry).status, 405);
    }
}
