//! The REST client: configuration, authentication, TLS, and typed access to resources.
//!
//! * [`Config`]: where the API server is and how to reach it — from a kubeconfig (kind, EKS and GKE exec plugins,
//!   client certificates, tokens), from inside a pod, or built by hand.
//! * [`Client`]: a cheap-to-clone handle on one API server; blocking calls, safe to share between threads.
//! * [`Api`]: typed calls on one resource — paged and streaming LIST, WATCH, get/create/replace/patch/delete,
//!   deletecollection, the `status` and `scale` subresources, and [`Api::entry`] for get-or-create-or-modify; for
//!   pods, [`Api::logs`] / [`Api::log_stream`] and [`Api::evict`].
//! * [`Client::request`]: any other path, with the same credentials, TLS, rate limit and errors.
//! * [`RateLimit`]: client-go's client-side token bucket (5 requests per second, bursts of 10), on by default.
//! * [`Client::fenced`]: a client whose requests end with a Lease's [`LeaseTerm`] — what a controller's reconciles
//!   write through under leader election or sharding.
//! * [`retry_on_conflict`]: a read-modify-write retried when another writer got there first.
//!
//! ```no_run
//! use kube_informer::client::{Api, Client, params::ListParams};
//! use kube_informer::object::core::ConfigMap;
//!
//! let client = Client::try_default()?;
//! let cms: Api<ConfigMap> = Api::default_namespaced(client);
//! for cm in cms.list(&ListParams::default().limit(50))?.items {
//!     println!("{}", cm.metadata.name.unwrap_or_default());
//! }
//! # Ok::<(), kube_informer::Error>(())
//! ```
//!
//! Failure handling: a request that got an HTTP answer always returns it — a non-2xx answer is
//! [`Error::Api`] with the server's `Status`; one that did not is [`Error::Transport`] with a
//! [`TransportErrorKind`](crate::TransportErrorKind). Redirects
//! are refused. A 401 answered to a request that used a rotating credential (token file, exec plugin) refreshes the
//! credential and retries the request once.

mod abort;
mod api;
mod auth;
mod config;
mod discovery;
mod entry;
mod eviction;
mod exec;
mod exec_process;
mod incluster;
mod kubeconfig;
mod logs;
mod metrics;
pub mod params;
mod rate_limit;
mod raw_request;
mod request;
mod retry;
mod sealed;
mod secret;
mod term;
#[cfg(test)]
mod test_peer;
mod tls;
mod transport;
mod watch_stream;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use log::debug;
use parking_lot::Mutex;
use ureq::http;

pub use abort::{AbortHandle, StreamStopper};
pub use api::{Api, Deleted, ListPages};
pub use config::{
    Config, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RESPONSE_SIZE, DEFAULT_READ_TIMEOUT, DEFAULT_WATCH_IDLE_LIMIT,
    Timeouts,
};
pub use entry::{Committed, Entry, OccupiedEntry, VacantEntry};
pub use eviction::{BlockedEviction, EvictionOutcome};
pub use exec::{DEFAULT_EXEC_TIMEOUT, EXEC_API_VERSIONS, ExecConfig, InteractiveMode};
pub use incluster::SERVICE_ACCOUNT_DIR;
pub use kubeconfig::Kubeconfig;
pub use metrics::{LatencyHistogram, MethodLatency, RequestCount, RequestMetrics};
pub use rate_limit::{DEFAULT_BURST, DEFAULT_QPS, RateLimit};
pub use raw_request::{RawRequest, RawResponse, ResponseStream};
pub use request::Method;
pub use retry::{RetryBackoff, on_error, retry_on_conflict};
pub use secret::Secret;
pub(crate) use term::HandoverLog;
pub use term::LeaseTerm;
pub use watch_stream::WatchStream;

use abort::{CancelSignal, Canceller};
use auth::Authenticator;
use config::{Credential, ProxySetting};
use rate_limit::Throttle;
use request::Request;
use sealed::Seals;
use tls::TlsSetup;
use transport::FailureContext;

use crate::clock::deadline::{FAR_FUTURE, deadline_after};
use crate::object::ApiResource;
use crate::{ConfigError, Error, OwnershipLost, Result};

/// The `User-Agent` of every request.
const USER_AGENT: &str = concat!("kube-informer/", env!("CARGO_PKG_VERSION"));

/// Idle connections kept per host: client-go's `MaxIdleConnsPerHost` for REST clients (25).
const MAX_IDLE_CONNECTIONS_PER_HOST: usize = 25;

/// A wait for a rate-limit token longer than this is logged (client-go's `longThrottleLatency`, 50 ms).
const LONG_THROTTLE: Duration = Duration::from_millis(50);

/// A handle on one API server: cheap to clone (clones share connections, credentials, the discovery cache and the
/// client-side rate limit), `Send + Sync`, blocking.
///
/// Every request waits for a token of the client's rate limit first ([`Config::rate_limit`]; client-go's 5 requests
/// per second with bursts of 10 unless configured otherwise): clones and [`isolated`](Self::isolated) copies draw from
/// the same bucket, as the informers and controllers built on one client-go clientset do.
///
/// ```
/// use kube_informer::client::{Client, Config};
///
/// let client = Client::new(Config::new("https://127.0.0.1:6443").token("t").default_namespace("dev"))?;
/// assert_eq!(client.default_namespace(), "dev");
/// // An isolated copy has its own connections: aborting it leaves `client` working.
/// let informer_client = client.isolated();
/// informer_client.abort_handle().abort();
/// assert!(!client.abort_handle().is_aborted());
/// # Ok::<(), kube_informer::Error>(())
/// ```
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    transport: Arc<Transport>,
    /// Every request made through this handle ends by then ([`Client::with_deadline`]); `None`: no deadline.
    deadline: Option<Instant>,
    /// The client-side rate limit; `None`: requests go out unthrottled.
    throttle: Option<Arc<Throttle>>,
    /// The Lease terms every request of this handle is fenced by ([`Client::fenced`]); `None`: none.
    fence: Option<Arc<Fence>>,
}

/// A Lease term a client's requests are fenced by, and those of the client it was fenced from.
struct Fence {
    term: LeaseTerm,
    /// Counts the writes this fence refused or aborted, for a controller's figures (the term counts every request).
    writes_refused: Option<Arc<AtomicU64>>,
    /// The fence of the client this one was made from: its term bounds these requests too.
    outer: Option<Arc<Fence>>,
}

/// What every clone and isolated copy of a client shares.
struct Shared {
    /// `scheme://authority[/prefix]` without a trailing slash.
    base_url: String,
    /// The TLS server name, for messages.
    server_name: String,
    /// `host:port` of the server URL (the port explicit), for messages.
    endpoint: String,
    /// The server URL is `http://`: for the hint when the server turns out to speak TLS.
    plain_http: bool,
    namespace: String,
    auth: Authenticator,
    tls: Arc<TlsSetup>,
    /// The agent configuration (timeouts, proxy, no redirects, no status-as-error).
    agent_config: ureq::config::Config,
    timeouts: config::Timeouts,
    max_response_size: usize,
    /// Impersonation headers, added to every request.
    extra_headers: Vec<(http::HeaderName, http::HeaderValue)>,
    discovery: discovery::Cache,
    config_summary: String,
    /// Credentials of requests in flight, put on the wire below ureq's logging (see [`sealed`]).
    seals: Arc<Seals>,
    /// `host:port` of the server (the `host` label of the request metrics).
    host: String,
    /// Requests by method and answer, with their latency.
    requests: metrics::RequestStats,
}

/// One connection pool and the canceller that aborts it.
struct Transport {
    canceller: Arc<Canceller>,
    /// The agent, and the client-certificate version it was built for. Invariant: when an exec plugin issues a new
    /// certificate, the agent is replaced (and the old one shut down), as client-go closes its connections on
    /// rotation — a pooled connection keeps the identity it was opened with.
    agent: Mutex<(ureq::Agent, u64)>,
}

impl Client {
    /// A client for `config`. Checks the configuration (URL, certificates, key matching its certificate, exec
    /// settings) without touching the network.
    pub fn new(config: Config) -> Result<Client> {
        config.validate()?;
        let uri = config.parsed_url()?;
        let host = uri.host().unwrap_or_default().to_owned();
        let tls = Arc::new(tls::build(&config, &host)?);

        let exec = match &config.credential {
            Credential::Exec(e) => {
                let cluster = exec::ClusterInfo {
                    server: config.cluster_url().to_owned(),
                    tls_server_name: config.tls_server_name.as_ref().map(|n| n.value.clone()),
                    insecure_skip_tls_verify: config.insecure.is_some(),
                    certificate_authority_data: config.ca_pem.as_ref().map(|c| c.value.clone()),
                    proxy_url: match &config.proxy {
                        ProxySetting::Url(u) => Some(u.value.clone()),
                        _ => None,
                    },
                };
                Some(exec::ExecAuth::new(e.value.clone(), &cluster, tls::provider()))
            }
            _ => None,
        };
        let auth = Authenticator::new(&config.credential, exec, &tls.identity);

        let proxy = match &config.proxy {
            ProxySetting::Disabled => None,
            ProxySetting::Url(u) => {
                Some(ureq::Proxy::new(&u.value).map_err(|_| config.error_at(&u.origin, "not a usable proxy URL"))?)
            }
            ProxySetting::FromEnvironment => match transport::proxy_from_env(&uri, |k| std::env::var(k).ok()) {
                None => None,
                Some(p) => Some(ureq::Proxy::new(&p).map_err(|_| {
                    Error::config(ConfigError::new(format!(
                        "the proxy in HTTPS_PROXY/HTTP_PROXY ({}) is not a usable URL",
                        config::redact_url_userinfo(&p)
                    )))
                })?),
            },
        };
        let t = config.timeouts;
        let agent_config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(proxy)
            .user_agent(USER_AGENT)
            .timeout_resolve(finite(t.connect))
            .timeout_connect(finite(t.connect))
            .timeout_per_read(t.read.and_then(finite))
            .timeout_global(t.request.and_then(finite))
            .max_idle_connections_per_host(MAX_IDLE_CONNECTIONS_PER_HOST)
            .max_idle_connections(4 * MAX_IDLE_CONNECTIONS_PER_HOST)
            .build();

        let mut extra_headers = Vec::new();
        if let Some(imp) = &config.impersonation {
            let mut add = |name: String, value: &str| -> Result<()> {
                let bad = || Error::InvalidInput(format!("impersonation header {name} cannot carry {value:?}"));
                extra_headers.push((
                    http::HeaderName::try_from(name.as_str()).map_err(|_| bad())?,
                    http::HeaderValue::from_str(value).map_err(|_| bad())?,
                ));
                Ok(())
            };
            add("Impersonate-User".into(), &imp.user)?;
            if let Some(uid) = &imp.uid {
                add("Impersonate-Uid".into(), uid)?;
            }
            for g in &imp.groups {
                add("Impersonate-Group".into(), g)?;
            }
            for (k, values) in &imp.extra {
                let mut name = String::from("Impersonate-Extra-");
                params::percent_encode_into(&mut name, k);
                for v in values {
                    add(name.clone(), v)?;
                }
            }
        }

        let base_url = {
            let s = uri.scheme_str().unwrap_or("https");
            let a = uri.authority().map(|a| a.as_str()).unwrap_or_default();
            format!("{s}://{a}{}", uri.path().trim_end_matches('/'))
        };
        let plain_http = uri.scheme_str() == Some("http");
        let endpoint = format!("{host}:{}", uri.port_u16().unwrap_or(if plain_http { 80 } else { 443 }));
        let server_name = match &config.tls_server_name {
            Some(n) => n.value.clone(),
            None => host,
        };
        let host_label = uri.authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
        let config_summary = format!("{:?}", config);
        let shared = Arc::new(Shared {
            base_url,
            server_name,
            endpoint,
            plain_http,
            namespace: config.namespace.clone(),
            auth,
            tls,
            agent_config,
            timeouts: t,
            max_response_size: config.max_response_size,
            extra_headers,
            discovery: discovery::Cache::default(),
            config_summary,
            seals: Arc::new(Seals::default()),
            host: host_label,
            requests: metrics::RequestStats::default(),
        });
        Ok(Client {
            transport: Arc::new(Transport::new(&shared)),
            shared,
            deadline: None,
            throttle: config.rate_limit.as_ref().map(|l| Arc::new(Throttle::new(l))),
            fence: None,
        })
    }

    /// A client from [`Config::infer`]: `KUBECONFIG` / `~/.kube/config`, else the pod's service account.
    pub fn try_default() -> Result<Client> {
        Client::new(Config::infer()?)
    }

    /// The default namespace (the kubeconfig context's, the pod's, or `default`).
    pub fn default_namespace(&self) -> &str {
        &self.shared.namespace
    }

    /// A copy with the same configuration, credentials (and their caches), TLS setup and rate limit (the same
    /// bucket), but its own connection pool and its own [`AbortHandle`]: aborting one never disturbs the other.
    /// Informers use one each.
    pub fn isolated(&self) -> Client {
        let client = Client {
            transport: Arc::new(Transport::new(&self.shared)),
            shared: Arc::clone(&self.shared),
            deadline: self.deadline,
            throttle: self.throttle.clone(),
            fence: self.fence.clone(),
        };
        client.register_with_fences();
        client
    }

    /// A copy whose every request is **fenced** by `term`: it is not sent once the term is over, nor when its
    /// client-side rate-limit token would come after the term's end; one still on the wire when the term ends — at
    /// its end, or earlier on a release or a stop — is aborted, its connection closed (and, should the term's elector
    /// be late, halfway through `lease_duration − renew_deadline` after the end the term had when it was sent). Each
    /// such request fails with [`Error::OwnershipLost`], without being retried. A renewal extends the term, for the
    /// requests in flight too.
    ///
    /// What a controller's reconciles write through ([`Context::client`](crate::controller::Context::client)) under
    /// leader election or sharding. The copy has connections of its own (aborted with this client's
    /// [`AbortHandle`] too) and the same rate limit, in the same bucket. Fencing again by another term keeps the
    /// first: a request needs both.
    ///
    /// What fencing cannot cover: a request the server received before the abort may still be applied after the
    /// term ended — a window bounded by how long a server holds a request it has read, within the
    /// `lease_duration − renew_deadline` that separate this term's end from anyone else's takeover (see
    /// [`LeaseTerm`]).
    #[must_use]
    pub fn fenced(&self, term: &LeaseTerm) -> Client {
        self.fenced_counting(term, None)
    }

    /// [`fenced`](Self::fenced), counting the writes refused or aborted in `writes_refused` too.
    pub(crate) fn fenced_counting(&self, term: &LeaseTerm, writes_refused: Option<Arc<AtomicU64>>) -> Client {
        let canceller = self.transport.canceller.child();
        let client = Client {
            transport: Arc::new(Transport::with_canceller(&self.shared, canceller)),
            shared: Arc::clone(&self.shared),
            deadline: self.deadline,
            throttle: self.throttle.clone(),
            fence: Some(Arc::new(Fence {
                term: term.clone(),
                writes_refused,
                outer: self.fence.clone(),
            })),
        };
        client.register_with_fences();
        client
    }

    /// The terms this handle's requests are fenced by, innermost first.
    fn fences(&self) -> impl Iterator<Item = &Fence> {
        std::iter::successors(self.fence.as_deref(), |f| f.outer.as_deref())
    }

    /// The terms of this handle's fences abort its connections when they end.
    fn register_with_fences(&self) {
        for fence in self.fences() {
            fence.term.register(&self.transport.canceller);
        }
    }

    /// Where the nearest of this handle's terms ends (an instant of the real clock), with its fence; `Err` with
    /// the fence of a term that is over.
    fn fence_end(&self) -> std::result::Result<Option<(Instant, &Fence)>, &Fence> {
        let mut nearest: Option<(Instant, &Fence)> = None;
        for fence in self.fences() {
            let end = fence.term.ends_at().ok_or(fence)?;
            if nearest.is_none_or(|(n, _)| end < n) {
                nearest = Some((end, fence));
            }
        }
        Ok(nearest)
    }

    /// When a request sent now is aborted at the latest, should the terms' electors not end them first
    /// ([`LeaseTerm`]'s backstop); `Err` with the fence of a term that is over.
    fn fence_abort_at(&self) -> std::result::Result<Option<Instant>, &Fence> {
        let mut earliest_abort = None;
        for fence in self.fences() {
            let at = fence.term.abort_at().ok_or(fence)?;
            earliest_abort = earliest(earliest_abort, Some(at));
        }
        Ok(earliest_abort)
    }

    /// The error of the request `what` that a term over (or `fence`'s) did not let through, counted; `None` while
    /// every term lasts.
    fn ownership_lost(&self, what: &str, in_flight: bool) -> Option<Error> {
        let fence = self.fence_end().err()?;
        Some(refused_by(fence, what, in_flight, None))
    }

    /// The error of the request (or stream) `what` whose connection was aborted: [`Error::OwnershipLost`] when a
    /// term it was fenced by is over (the term's end aborted it), else [`Error::Stopped`].
    pub(crate) fn stopped(&self, what: &str) -> Error {
        self.ownership_lost(what, true).unwrap_or(Error::Stopped)
    }

    /// A copy of this handle (same connections, same [`AbortHandle`]) whose every request ends by `deadline`: each
    /// gets what remains until then as its overall time limit (or the configured
    /// [`request timeout`](Config::request_timeout), when shorter) — name resolution, connect, credential plugin,
    /// sending and the whole body included, watches too. A request still running at the deadline is **aborted**:
    /// its connection is closed and the calling thread returns with an [`Error::Transport`] of kind
    /// [`Timeout`](crate::TransportErrorKind::Timeout); a request made at or after the deadline fails so without
    /// touching the network. A deadline already set is kept when earlier.
    ///
    /// For work that must end at a known time whatever the server does: leader election bounds each renewal of its
    /// lease this way, by the time left before its renew deadline.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use kube_informer::client::{Api, Client, Config};
    /// use kube_informer::object::core::ConfigMap;
    ///
    /// let client = Client::new(Config::new("https://127.0.0.1:6443"))?;
    /// let bounded = client.with_deadline(Instant::now() + Duration::from_secs(2));
    /// let cms: Api<ConfigMap> = Api::namespaced(bounded, "default");
    /// // cms.get("settings") returns within two seconds, whatever the server does.
    /// // A deadline in the past: the request fails at once.
    /// let late = Api::<ConfigMap>::namespaced(client.with_deadline(Instant::now()), "default");
    /// let err = late.get("settings").unwrap_err();
    /// assert!(matches!(err, kube_informer::Error::Transport(t) if t.kind == kube_informer::TransportErrorKind::Timeout));
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    #[must_use]
    pub fn with_deadline(&self, deadline: Instant) -> Client {
        Client {
            deadline: Some(self.deadline.map_or(deadline, |d| d.min(deadline))),
            ..self.clone()
        }
    }

    /// The Lease terms this handle's requests are fenced by ([`fenced`](Self::fenced)), innermost first.
    pub fn terms(&self) -> Vec<LeaseTerm> {
        self.fences().map(|f| f.term.clone()).collect()
    }

    /// The deadline of this handle's requests ([`with_deadline`](Self::with_deadline)), if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The deadline is set and has passed.
    fn deadline_passed(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The error of a request cut by the deadline.
    fn deadline_error(&self, what: &str) -> Error {
        Error::from(crate::TransportError::new(
            crate::TransportErrorKind::Timeout,
            format!(
                "{what} on {}: the request's deadline passed (Client::with_deadline); aborted",
                self.shared.endpoint
            ),
        ))
    }

    /// A copy with its own connection pool whose [`AbortHandle`] is a child of this handle's: aborting this
    /// handle (or its clones) aborts the copy too, aborting the copy leaves this handle alone. Its rate limit is this
    /// handle's in a bucket of its own.
    pub(crate) fn isolated_child(&self) -> Client {
        let canceller = self.transport.canceller.child();
        Client {
            transport: Arc::new(Transport::with_canceller(&self.shared, canceller)),
            shared: Arc::clone(&self.shared),
            deadline: self.deadline,
            // The same limit in a bucket of its own: a lease renewal never waits behind a controller's requests.
            throttle: self.throttle.as_ref().map(|t| Arc::new(t.fresh())),
            // A child's connections are aborted with this handle's, by its terms too.
            fence: self.fence.clone(),
        }
    }

    /// A clone (same connections, [`AbortHandle`] and metrics) whose requests draw from a bucket of their own —
    /// `Some(limit)` — or from none. For a component that must not queue behind the rest of the process, as
    /// controller-runtime gives leader election a client of its own: a Lease renewal that waits for tokens a busy
    /// reconcile loop took can miss its deadline.
    ///
    /// ```
    /// use kube_informer::client::{Client, Config, RateLimit};
    ///
    /// let client = Client::new(Config::new("https://127.0.0.1:6443"))?;
    /// let for_leader_election = client.with_rate_limit(Some(RateLimit::new(5.0, 10)))?;
    /// # let _ = for_leader_election;
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Config`] for an unusable limit (see [`RateLimit::new`]).
    pub fn with_rate_limit(&self, limit: Option<RateLimit>) -> Result<Client> {
        if let Some(problem) = limit.as_ref().and_then(RateLimit::problem) {
            return Err(Error::config(
                ConfigError::new(problem).field("Client::with_rate_limit"),
            ));
        }
        Ok(Client {
            transport: Arc::clone(&self.transport),
            shared: Arc::clone(&self.shared),
            deadline: self.deadline,
            throttle: limit.as_ref().map(|l| Arc::new(Throttle::new(l))),
            fence: self.fence.clone(),
        })
    }

    /// Requests made so far by this client, its clones and its isolated copies: counts by HTTP method and answer,
    /// latency to the response headers by method, time waited for the client-side rate limit by method —
    /// client-go's `rest_client_requests_total`, `rest_client_request_duration_seconds` and
    /// `rest_client_rate_limiter_duration_seconds`.
    pub fn request_metrics(&self) -> RequestMetrics {
        self.shared.requests.snapshot(&self.shared.host)
    }

    /// The client held weakly (by a [`Registry`](crate::registry::Registry)).
    pub(crate) fn downgrade(&self) -> WeakClient {
        WeakClient(Arc::downgrade(&self.shared))
    }

    /// The handle that aborts every in-flight and future request of this client and its clones (not of
    /// [`isolated`](Self::isolated) copies).
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            inner: Arc::clone(&self.transport.canceller),
        }
    }

    /// Finds the resource a user-facing name designates, using discovery (cached): a plural (`configmaps`), a
    /// qualified plural (`deployments.apps`), `group/version/plural` (`apps/v1/deployments`, `v1/pods`), a kind
    /// (`ConfigMap`, `Deployment.apps`), a singular or a short name (`cm`, `deploy`).
    ///
    /// Core resources win over groups, and each group's preferred version is used, as kubectl resolves names.
    pub fn resolve(&self, name: &str) -> Result<ApiResource> {
        self.shared.discovery.resolve(name, &mut |path| self.get_bytes(path))
    }

    // ---- request execution ---------------------------------------------------------------------------------------

    /// GETs an absolute path and returns the body (discovery).
    pub(crate) fn get_bytes(&self, path: &str) -> Result<Vec<u8>> {
        self.request_bytes(&Request::get_path(path))
    }

    /// Runs a request on this client's pool and reads the whole body (bounded by the response size limit).
    pub(crate) fn request_bytes(&self, req: &Request) -> Result<Vec<u8>> {
        let cancel = self.transport.canceller.signal();
        let response = self.execute(req, None, &cancel, Reading::Whole)?;
        self.read_whole(response.into_body(), &cancel, &req.describe())
    }

    /// Reads a whole response body, bounded by the response size limit.
    fn read_whole(&self, body: ureq::Body, cancel: &CancelSignal, what: &str) -> Result<Vec<u8>> {
        let mut reader = body.into_reader();
        transport::read_limited(&mut reader, self.shared.max_response_size).map_err(|e| {
            if e.kind() == std::io::ErrorKind::FileTooLarge {
                Error::from(crate::TransportError::new(
                    crate::TransportErrorKind::TooLarge,
                    format!("{what}: {e} (Config::max_response_size)"),
                ))
            } else {
                self.map_io(e, cancel, what, None)
            }
        })
    }

    /// Runs a request on this client's pool and returns the response with its body unread (streaming LIST).
    pub(crate) fn request_stream(&self, req: &Request) -> Result<(http::Response<ureq::Body>, CancelSignal)> {
        let cancel = self.transport.canceller.signal();
        Ok((self.execute(req, None, &cancel, Reading::Whole)?, cancel))
    }

    /// Runs a watch request on a dedicated agent (its own connection, stoppable on its own), with the idle limit
    /// as per-read timeout and no overall timeout.
    pub(crate) fn request_watch(&self, req: &Request) -> Result<(http::Response<ureq::Body>, Arc<Canceller>)> {
        self.request_dedicated(req, Reading::Watch(self.shared.timeouts.watch_idle))
    }

    /// Runs a streaming request (`reading` is not [`Reading::Whole`]) on a dedicated agent: its own connection,
    /// closed by the returned canceller (and by the client's abort) and nothing else.
    fn request_dedicated(
        &self,
        req: &Request,
        reading: Reading,
    ) -> Result<(http::Response<ureq::Body>, Arc<Canceller>)> {
        let canceller = self.transport.canceller.child();
        let agent = transport::build_agent(&self.shared, &canceller.signal());
        canceller.set_agent(agent.clone());
        let response = self.execute(req, Some(&agent), &canceller.signal(), reading)?;
        Ok((response, canceller))
    }

    /// The per-read limit of a non-watch response ([`Timeouts::read`]).
    fn read_timeout(&self) -> Option<Duration> {
        self.shared.timeouts.read
    }

    /// The watch idle limit.
    pub(crate) fn watch_idle_limit(&self) -> Duration {
        self.shared.timeouts.watch_idle
    }

    /// The largest object a streamed list or watch may hold in memory: the response size limit, at most the
    /// decoders' default.
    pub(crate) fn max_object_size(&self) -> usize {
        self.shared.max_response_size.min(crate::watch::DEFAULT_MAX_OBJECT_SIZE)
    }

    /// Maps an I/O error from reading a response body.
    pub(crate) fn map_io(&self, e: std::io::Error, cancel: &CancelSignal, what: &str, idle: Option<Duration>) -> Error {
        if let Some(lost) = self.ownership_lost(what, true) {
            return lost;
        }
        if !cancel.is_cancelled() && self.deadline_passed() && is_timeout_io(&e) {
            return self.deadline_error(what);
        }
        let ctx = FailureContext {
            what,
            server_name: &self.shared.server_name,
            endpoint: &self.shared.endpoint,
            // A body is read after an HTTP answer: the server does speak HTTP.
            plain_http: false,
            idle_limit: idle,
        };
        transport::map_error(ureq::Error::from(e), cancel, &ctx)
    }

    /// [`throttle`](Self::throttle) for a request that must also be sent before its terms end: a token that would
    /// come after the nearest term's end fails the request at once ([`Error::OwnershipLost`], not sent), as one
    /// after its deadline does.
    fn throttle_fenced(
        &self,
        req: &Request,
        what: &str,
        cancel: &CancelSignal,
        deadline: Option<Instant>,
    ) -> Result<()> {
        let nearest = match self.fence_end() {
            Ok(nearest) => nearest,
            Err(fence) => return Err(refused_by(fence, what, false, None)),
        };
        let limit = earliest(deadline, nearest.map(|(end, _)| end));
        let Err(e) = self.throttle(req, what, cancel, limit) else {
            return Ok(());
        };
        if let Some(lost) = self.ownership_lost(what, false) {
            return Err(lost);
        }
        // Too late for the nearest term, not for the request's own deadline: the term is why it is not sent.
        let too_late = matches!(&e, Error::Transport(t) if t.kind == crate::TransportErrorKind::Timeout);
        match nearest {
            Some((end, fence)) if too_late && deadline.is_none_or(|d| end <= d) => Err(refused_by(
                fence,
                what,
                false,
                Some("its client-side rate-limit token would come after the term's end"),
            )),
            _ => Err(e),
        }
    }

    /// Waits for a token of the client-side rate limit for `req` (see [`RateLimit`]), and counts the wait.
    fn throttle(&self, req: &Request, what: &str, cancel: &CancelSignal, deadline: Option<Instant>) -> Result<()> {
        let Some(throttle) = &self.throttle else {
            return Ok(());
        };
        let waited = throttle.wait(what, cancel, deadline)?;
        self.shared.requests.observe_rate_limiter(req.method.as_str(), waited);
        if waited > LONG_THROTTLE {
            debug!(
                "{what}: waited {waited:?} for the client-side rate limit ({}), not for the server's priority and \
                 fairness",
                throttle.describe()
            );
        }
        Ok(())
    }

    /// Sends `req` with authentication, on `dedicated` or else on this client's pool; returns a 2xx response with
    /// its body unread. Each attempt waits for a rate-limit token first. Any other answer becomes an error with its
    /// body read; a 401 after a rotating credential refreshes it and retries once.
    fn execute(
        &self,
        req: &Request,
        dedicated: Option<&ureq::Agent>,
        cancel: &CancelSignal,
        reading: Reading,
    ) -> Result<http::Response<ureq::Body>> {
        let what = req.describe();
        let watch_idle = match reading {
            Reading::Watch(idle) => Some(idle),
            _ => None,
        };
        // A whole-body request ends by its overall timeout, the wait for a rate-limit token included; any request
        // ends by the handle's deadline (`with_deadline`), streams too.
        let timeout = match reading {
            Reading::Whole => self.shared.timeouts.request.map(|t| deadline_after(Instant::now(), t)),
            _ => None,
        };
        let deadline = earliest(timeout, self.deadline);
        let ctx = FailureContext {
            what: &what,
            server_name: &self.shared.server_name,
            endpoint: &self.shared.endpoint,
            plain_http: self.shared.plain_http,
            idle_limit: watch_idle,
        };
        let url = format!("{}{}", self.shared.base_url, req.path_and_query());
        for attempt in 0..2 {
            // A fenced request goes no further once its term is over (its connections are aborted then, so the
            // cancellation below would say `Stopped`).
            if let Some(lost) = self.ownership_lost(&what, false) {
                return Err(lost);
            }
            if cancel.is_cancelled() {
                return Err(Error::Stopped);
            }
            self.throttle_fenced(req, &what, cancel, deadline)?;
            if self.deadline_passed() {
                return Err(self.deadline_error(&what));
            }
            let fence_end = match self.fence_end() {
                Ok(end) => end.map(|(end, _)| end),
                Err(fence) => return Err(refused_by(fence, &what, false, None)),
            };
            let authz = match self.shared.auth.authorize(cancel, earliest(self.deadline, fence_end)) {
                Ok(authz) => authz,
                Err(e) => {
                    return Err(match self.ownership_lost(&what, false) {
                        Some(lost) => lost,
                        None if !cancel.is_cancelled() && self.deadline_passed() => self.deadline_error(&what),
                        None => e,
                    });
                }
            };
            // What remains of the deadline bounds the whole exchange; none left after the credential: give up. A
            // fenced request is aborted when its term ends (by the term's elector), and at the latest at the
            // term's backstop.
            if self.deadline_passed() {
                return Err(self.deadline_error(&what));
            }
            let abort_at = match self.fence_abort_at() {
                Ok(at) => at,
                Err(fence) => return Err(refused_by(fence, &what, false, None)),
            };
            let deadline = earliest(deadline, abort_at);
            // Chosen after authorizing: an exec plugin may just have issued a new client certificate, which retires
            // the pooled connections opened with the old one.
            let agent = match dedicated {
                Some(a) => a.clone(),
                None => self.transport.agent(&self.shared),
            };
            let mut builder = http::Request::builder().method(req.method.as_str()).uri(url.as_str());
            if !req.headers.iter().any(|(k, _)| k == http::header::ACCEPT) {
                builder = builder.header(http::header::ACCEPT, req.accept.unwrap_or("application/json"));
            }
            for (k, v) in &self.shared.extra_headers {
                builder = builder.header(k, v);
            }
            if let Some(ct) = req.content_type {
                builder = builder.header(http::header::CONTENT_TYPE, ct);
            }
            for (k, v) in &req.headers {
                builder = builder.header(k, v);
            }
            // The credential itself is put on the wire by the transport, below ureq's logging (see `sealed`); the
            // request carries a placeholder, withdrawn when `_seal` drops at the end of this attempt.
            let mut _seal = None;
            if let Some(secret) = &authz.header {
                if http::HeaderValue::from_bytes(secret.expose()).is_err() {
                    return Err(Error::Auth(
                        "the credential contains characters not allowed in a header".into(),
                    ));
                }
                let seal = self.shared.seals.seal(secret.clone());
                let mut value = http::HeaderValue::from_str(&seal.placeholder())
                    .map_err(|_| Error::InvalidInput("placeholder header".into()))?;
                value.set_sensitive(true);
                builder = builder.header(http::header::AUTHORIZATION, value);
                _seal = Some(seal);
            }
            let started = std::time::Instant::now();
            let result = match &req.body {
                Some(body) => {
                    let r = builder
                        .body(body.as_slice())
                        .map_err(|e| Error::InvalidInput(format!("{what}: {e}")))?;
                    run(&agent, r, reading, deadline)
                }
                None => {
                    let r = builder
                        .body(())
                        .map_err(|e| Error::InvalidInput(format!("{what}: {e}")))?;
                    run(&agent, r, reading, deadline)
                }
            };
            if !cancel.is_cancelled() {
                let code = result.as_ref().ok().map(|r| r.status().as_u16());
                self.shared
                    .requests
                    .observe(req.method.as_str(), code, started.elapsed());
            }
            let response = result.map_err(|e| {
                if let Some(lost) = self.ownership_lost(&what, true) {
                    lost
                } else if abort_at.is_some_and(|at| Instant::now() >= at) && is_timeout(&e) {
                    // The term was extended since: the request outlived the end it had when sent by half the
                    // takeover margin, by which its elector should have ended (or extended) the term.
                    Error::from(crate::TransportError::new(
                        crate::TransportErrorKind::Timeout,
                        format!(
                            "{what} on {}: still running well past the end its Lease term had when it was sent; \
                             aborted",
                            self.shared.endpoint
                        ),
                    ))
                } else if !cancel.is_cancelled() && self.deadline_passed() && is_timeout(&e) {
                    self.deadline_error(&what)
                } else {
                    transport::map_error(e, cancel, &ctx)
                }
            })?;
            let code = response.status().as_u16();
            if (200..300).contains(&code) {
                return Ok(response);
            }
            if (300..400).contains(&code) {
                let location = response
                    .headers()
                    .get(http::header::LOCATION)
                    .and_then(|v| v.to_str().ok());
                return Err(transport::redirect_error(code, location, &what));
            }
            if code == 401 && attempt == 0 && self.shared.auth.unauthorized(&authz.used) {
                debug!("{what}: 401 Unauthorized; retrying once with a refreshed credential");
                continue;
            }
            let retry_after = response
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut reader = response.into_body().into_reader();
            // An error body is small; a limit keeps a misbehaving server from filling memory. Read errors leave
            // whatever arrived.
            let mut body = Vec::new();
            let _ = std::io::Read::read_to_end(
                &mut std::io::Read::take(&mut reader, self.shared.max_response_size.min(16 << 20) as u64),
                &mut body,
            );
            return Err(transport::status_error(code, retry_after.as_deref(), &body));
        }
        Err(Error::Auth(format!(
            "{what}: still unauthorized after refreshing the credential"
        )))
    }
}

/// The earlier of two optional deadlines (`None`: no deadline).
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The error of the request `what` that `fence`'s term did not let through, counted by the term (and, for a write,
/// by the fence's counter).
fn refused_by(fence: &Fence, what: &str, in_flight: bool, detail: Option<&'static str>) -> Error {
    fence.term.count_refused();
    if !what.starts_with("GET ")
        && let Some(counter) = &fence.writes_refused
    {
        counter.fetch_add(1, Ordering::Relaxed);
    }
    let mut lost = OwnershipLost::new(fence.term.lease(), what, in_flight);
    lost.detail = detail;
    Error::from(lost)
}

/// A timeout as ureq takes it: `None` (no limit) for one that would reach past [`FAR_FUTURE`] (`Duration::MAX`
/// means "never time out"; ureq would overflow adding it to an instant).
fn finite(timeout: Duration) -> Option<Duration> {
    (timeout < FAR_FUTURE).then_some(timeout)
}

/// How a response is read; decides the timeouts of its request.
#[derive(Clone, Copy, Debug)]
enum Reading {
    /// Read whole: the client's timeouts, the overall one ([`Timeouts::request`]) as a deadline that also bounds
    /// the wait for a rate-limit token.
    Whole,
    /// A watch: its idle limit per read (an expired one is [`Error::WatchIdle`]), no overall limit.
    Watch(Duration),
    /// Another stream (a log, a raw stream): this per-read limit (`None`: none), no overall limit.
    Stream(Option<Duration>),
}

/// Runs one request with the timeouts its reading calls for: a whole-body request gets the time left before its
/// deadline as its overall limit; a stream gets its per-read limit and, only with a deadline, the time left before
/// it (ureq then ends the exchange at the deadline and closes its connection).
fn run<S: ureq::AsSendBody>(
    agent: &ureq::Agent,
    req: http::Request<S>,
    reading: Reading,
    deadline: Option<Instant>,
) -> Result<http::Response<ureq::Body>, ureq::Error> {
    let per_read = match reading {
        Reading::Whole => {
            let Some(deadline) = deadline else {
                return agent.run(req);
            };
            let left = deadline.saturating_duration_since(Instant::now());
            return agent.run(agent.configure_request(req).timeout_global(Some(left)).build());
        }
        Reading::Watch(idle) => finite(idle),
        Reading::Stream(limit) => limit.and_then(finite),
    };
    // A stream has no overall limit but a handle's deadline (`Client::with_deadline`).
    let global = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    agent.run(
        agent
            .configure_request(req)
            .timeout_per_read(per_read)
            .timeout_global(global)
            .build(),
    )
}

/// A ureq error that is a timeout.
fn is_timeout(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => is_timeout_io(io),
        _ => false,
    }
}

/// An I/O error that is a timeout (as ureq's body reader reports one).
fn is_timeout_io(e: &std::io::Error) -> bool {
    if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) {
        return true;
    }
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)))
}

impl Transport {
    fn new(shared: &Shared) -> Transport {
        Transport::with_canceller(shared, Canceller::new())
    }

    /// A pool whose connections `canceller` aborts.
    fn with_canceller(shared: &Shared, canceller: Arc<Canceller>) -> Transport {
        let agent = transport::build_agent(shared, &canceller.signal());
        canceller.set_agent(agent.clone());
        Transport {
            canceller,
            agent: Mutex::new((agent, shared.tls.identity.version())),
        }
    }

    /// The agent to use now, rebuilt first when the client certificate changed since it was built.
    fn agent(&self, shared: &Shared) -> ureq::Agent {
        let mut slot = self.agent.lock();
        let version = shared.tls.identity.version();
        if slot.1 != version {
            debug!("client certificate rotated: closing the connections that used the old one");
            let fresh = transport::build_agent(shared, &self.canceller.signal());
            if let Some(old) = self.canceller.replace_agent(fresh.clone()) {
                old.shutdown();
            }
            *slot = (fresh, version);
        }
        slot.0.clone()
    }
}

/// Shows the configuration summary (no credentials).
impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("config", &format_args!("{}", self.shared.config_summary))
            .field("aborted", &self.transport.canceller.is_cancelled())
            .finish()
    }
}

/// A client held weakly (by a [`Registry`](crate::registry::Registry)): its request metrics while any clone lives.
pub(crate) struct WeakClient(std::sync::Weak<Shared>);

impl WeakClient {
    /// The request metrics and an id telling this client's shared state apart; `None` once every clone is gone.
    pub(crate) fn request_metrics(&self) -> Option<(usize, RequestMetrics)> {
        let shared = self.0.upgrade()?;
        Some((Arc::as_ptr(&shared).addr(), shared.requests.snapshot(&shared.host)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_is_send_sync_and_debug_is_clean() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Client>();
        assert_send_sync::<AbortHandle>();
        let c = Client::new(Config::new("https://h:6443").token("sekrit-token-value")).unwrap();
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("sekrit-token-value") && dbg.contains("h:6443"), "{dbg}");
    }

    #[test]
    fn a_long_wait_for_a_rate_limit_token_is_logged_and_counted() {
        let peer = test_peer::answering(2, r#"{"major":"1"}"#.to_owned());
        let clock = crate::clock::FakeClock::new();
        let client = peer
            .client
            .with_rate_limit(Some(RateLimit::new(1.0, 1).clock(clock.clone())))
            .unwrap();
        let log = crate::test_log::capture();
        client.get_bytes("/version").unwrap();
        // The second GET waits for the clock; another thread moves it once the GET waits.
        let stepper = std::thread::Builder::new()
            .name("test:stepper".into())
            .spawn(move || {
                let give_up = Instant::now() + Duration::from_secs(30);
                while clock.watchers() == 0 && Instant::now() < give_up {
                    std::thread::yield_now();
                }
                clock.step(Duration::from_secs(1));
            })
            .unwrap();
        client.get_bytes("/version").unwrap();
        stepper.join().unwrap();
        peer.thread.join().unwrap();
        let lines = log.take_at(log::Level::Debug);
        assert!(
            lines.iter().any(|(_, l)| l
                == "GET /version: waited 1s for the client-side rate limit (1 qps, burst 1), not for the server's \
                    priority and fairness"),
            "{lines:?}"
        );
        let waits = &client.request_metrics().rate_limiter_latency;
        assert_eq!(
            (waits[0].verb, waits[0].histogram.count, waits[0].histogram.sum),
            ("GET", 2, Duration::from_secs(1))
        );
    }

    /// A term of `lasting` on `clock`.
    fn term_on(clock: &crate::clock::FakeClock, lasting: Duration) -> LeaseTerm {
        let until = clock.now() + lasting;
        LeaseTerm::begin(
            "leases/owner",
            Arc::new(clock.clone()),
            (until, Duration::ZERO),
            None,
            None,
        )
    }

    fn lost(e: &Error) -> &OwnershipLost {
        match e {
            Error::OwnershipLost(lost) => lost,
            other => panic!("not an ownership loss: {other:?}"),
        }
    }

    #[test]
    fn a_fenced_request_is_not_sent_once_its_term_is_over() {
        // 192.0.2.0/24 is TEST-NET-1: never routed, so a request sent would hang in its connect.
        let c = Client::new(Config::new("https://192.0.2.1:6443").proxy(None)).unwrap();
        let clock = crate::clock::FakeClock::new();
        let (past, ended) = (
            term_on(&clock, Duration::from_secs(10)),
            term_on(&clock, Duration::from_secs(3600)),
        );
        let counter = Arc::new(AtomicU64::new(0));
        let (late, early) = (c.fenced_counting(&past, Some(counter.clone())), c.fenced(&ended));
        // Past its end on the elector's clock, though nobody ended it; and one ended early (a release).
        clock.step(Duration::from_secs(10));
        ended.end();
        for (client, term) in [(&late, &past), (&early, &ended)] {
            let e = client.request_bytes(&Request::get_path("/version")).unwrap_err();
            assert_eq!(
                (lost(&e).lease.as_str(), lost(&e).request.as_str(), lost(&e).in_flight),
                ("leases/owner", "GET /version", false)
            );
            assert!(!e.is_retriable() && e.to_string().contains("not sent"), "{e}");
            assert_eq!(term.refused_requests(), 1);
        }
        assert_eq!(counter.load(Ordering::Relaxed), 0, "a GET is no write");
        let write = Request {
            method: Method::Post,
            ..Request::get_path("/api/v1/namespaces/a/configmaps")
        };
        assert!(late.request_bytes(&write).unwrap_err().is_ownership_lost());
        assert_eq!(counter.load(Ordering::Relaxed), 1, "the write is counted");
        // The client it was fenced from, and its other copies, are not fenced.
        assert!(late.isolated().terms().len() == 1 && c.terms().is_empty());
    }

    #[test]
    fn a_request_whose_rate_limit_token_comes_after_its_term_fails_at_once() {
        let peer = test_peer::answering(1, r#"{"major":"1"}"#.to_owned());
        let tokens = crate::clock::FakeClock::new();
        // One token every 100 s; the term has an hour left on a clock that stands still, so only the token decides.
        let client = peer
            .client
            .with_rate_limit(Some(RateLimit::new(0.01, 1).clock(tokens.clone())))
            .unwrap();
        let elector_clock = crate::clock::FakeClock::new();
        let term = term_on(&elector_clock, Duration::from_secs(3600));
        let fenced = client.fenced(&term);
        fenced.get_bytes("/version").unwrap();
        peer.thread.join().unwrap();
        let term_short = term_on(&elector_clock, Duration::from_secs(60));
        let e = client.fenced(&term_short).get_bytes("/version").unwrap_err();
        assert!(!lost(&e).in_flight, "{e}");
        assert!(
            e.to_string()
                .contains("rate-limit token would come after the term's end"),
            "{e}"
        );
        assert_eq!(tokens.watchers(), 0, "it never waited for the token");
    }

    #[test]
    fn a_fenced_request_in_flight_is_aborted_when_its_term_ends() {
        // Ended by its elector (a release, a stop) while the server holds the request.
        let (client, peer, thread) = test_peer::stalling();
        let clock = crate::clock::FakeClock::new();
        let term = term_on(&clock, Duration::from_secs(3600));
        let fenced = client.fenced(&term);
        let request = std::thread::Builder::new()
            .name("test:request".into())
            .spawn(move || fenced.get_bytes("/version"))
            .unwrap();
        assert_eq!(peer.recv_timeout(Duration::from_secs(30)), Ok("received"));
        term.end();
        let e = request.join().unwrap().unwrap_err();
        assert!(lost(&e).in_flight, "{e}");
        assert_eq!(
            peer.recv_timeout(Duration::from_secs(30)),
            Ok("closed"),
            "the connection was closed"
        );
        thread.join().unwrap();
        // The client it was fenced from keeps its connections.
        assert!(!client.abort_handle().is_aborted());
    }

    #[test]
    fn a_fenced_request_still_in_flight_at_the_end_of_its_term_is_aborted_there() {
        // Nobody ends the term (an elector late, say): it runs out while the server holds the request, which is
        // aborted at the backstop, halfway through the takeover margin after its end.
        let (client, peer, thread) = test_peer::stalling();
        let until = Instant::now() + Duration::from_millis(300);
        let margin = Duration::from_millis(400);
        let term = LeaseTerm::begin(
            "leases/owner",
            Arc::new(crate::clock::RealClock),
            (until, margin),
            None,
            None,
        );
        let e = client.fenced(&term).get_bytes("/version").unwrap_err();
        assert!(lost(&e).in_flight, "{e}");
        assert!(term.is_over());
        assert_eq!(peer.recv_timeout(Duration::from_secs(30)), Ok("received"));
        assert_eq!(peer.recv_timeout(Duration::from_secs(30)), Ok("closed"));
        thread.join().unwrap();
    }

    #[test]
    fn aborted_clients_fail_fast_without_touching_the_network() {
        // 192.0.2.0/24 is TEST-NET-1: never routed, so a connect would hang until its timeout.
        let c = Client::new(Config::new("https://192.0.2.1:6443").proxy(None)).unwrap();
        c.abort_handle().abort();
        assert!(matches!(c.get_bytes("/version"), Err(Error::Stopped)));
    }
}
