//! The REST client: configuration, authentication, TLS, and typed access to resources.
//!
//! * [`Config`]: where the API server is and how to reach it — from a kubeconfig (kind, EKS and GKE exec plugins,
//!   client certificates, tokens), from inside a pod, or built by hand.
//! * [`Client`]: a cheap-to-clone handle on one API server; blocking calls, safe to share between threads.
//! * [`Api`]: typed calls on one resource — paged and streaming LIST, WATCH, get/create/replace/patch/delete,
//!   deletecollection, the `status` and `scale` subresources, and [`Api::entry`] for get-or-create-or-modify.
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
mod exec;
mod exec_process;
mod incluster;
mod kubeconfig;
mod metrics;
pub mod params;
mod request;
mod retry;
mod sealed;
mod secret;
#[cfg(test)]
mod test_peer;
mod tls;
mod transport;
mod watch_stream;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use log::debug;
use parking_lot::Mutex;
use ureq::http;

pub use abort::{AbortHandle, WatchStopper};
pub use api::{Api, Deleted, ListPages};
pub use config::{
    Config, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RESPONSE_SIZE, DEFAULT_READ_TIMEOUT, DEFAULT_WATCH_IDLE_LIMIT,
    Timeouts,
};
pub use entry::{Committed, Entry, OccupiedEntry, VacantEntry};
pub use exec::{DEFAULT_EXEC_TIMEOUT, EXEC_API_VERSIONS, ExecConfig, InteractiveMode};
pub use incluster::SERVICE_ACCOUNT_DIR;
pub use kubeconfig::Kubeconfig;
pub use metrics::{LatencyHistogram, MethodLatency, RequestCount, RequestMetrics};
pub use retry::{RetryBackoff, on_error, retry_on_conflict};
pub use secret::Secret;
pub use watch_stream::WatchStream;

use abort::{CancelSignal, Canceller};
use auth::Authenticator;
use config::{Credential, ProxySetting};
use request::Request;
use sealed::Seals;
use tls::TlsSetup;
use transport::FailureContext;

use crate::clock::deadline::FAR_FUTURE;
use crate::object::ApiResource;
use crate::{ConfigError, Error, Result};

/// The `User-Agent` of every request.
const USER_AGENT: &str = concat!("kube-informer/", env!("CARGO_PKG_VERSION"));

/// Idle connections kept per host: client-go's `MaxIdleConnsPerHost` for REST clients (25).
const MAX_IDLE_CONNECTIONS_PER_HOST: usize = 25;

/// A handle on one API server: cheap to clone (clones share connections, credentials and the discovery cache),
/// `Send + Sync`, blocking.
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

    /// A copy with the same configuration, credentials (and their caches) and TLS setup, but its own connection
    /// pool and its own [`AbortHandle`]: aborting one never disturbs the other. Informers use one each.
    pub fn isolated(&self) -> Client {
        Client {
            transport: Arc::new(Transport::new(&self.shared)),
            shared: Arc::clone(&self.shared),
        }
    }

    /// Requests made so far by this client, its clones and its isolated copies: counts by HTTP method and answer,
    /// latency to the response headers by method — client-go's `rest_client_requests_total` and
    /// `rest_client_request_duration_seconds`.
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
        let response = self.execute(req, None, &cancel, None)?;
        let what = req.describe();
        let mut reader = response.into_body().into_reader();
        transport::read_limited(&mut reader, self.shared.max_response_size).map_err(|e| {
            if e.kind() == std::io::ErrorKind::FileTooLarge {
                Error::from(crate::TransportError::new(
                    crate::TransportErrorKind::TooLarge,
                    format!("{what}: {e} (Config::max_response_size)"),
                ))
            } else {
                self.map_io(e, &cancel, &what, None)
            }
        })
    }

    /// Runs a request on this client's pool and returns the response with its body unread (streaming LIST).
    pub(crate) fn request_stream(&self, req: &Request) -> Result<(http::Response<ureq::Body>, CancelSignal)> {
        let cancel = self.transport.canceller.signal();
        Ok((self.execute(req, None, &cancel, None)?, cancel))
    }

    /// Runs a watch request on a dedicated agent (its own connection, stoppable on its own), with the idle limit
    /// as per-read timeout and no overall timeout.
    pub(crate) fn request_watch(&self, req: &Request) -> Result<(http::Response<ureq::Body>, Arc<Canceller>)> {
        let canceller = self.transport.canceller.child();
        let agent = transport::build_agent(&self.shared, &canceller.signal());
        canceller.set_agent(agent.clone());
        let idle = self.shared.timeouts.watch_idle;
        let response = self.execute(req, Some(&agent), &canceller.signal(), Some(idle))?;
        Ok((response, canceller))
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

    /// Sends `req` with authentication, on `dedicated` or else on this client's pool; returns a 2xx response with
    /// its body unread. Any other answer becomes an error with its body read; a 401 after a rotating credential
    /// refreshes it and retries once.
    fn execute(
        &self,
        req: &Request,
        dedicated: Option<&ureq::Agent>,
        cancel: &CancelSignal,
        watch_idle: Option<Duration>,
    ) -> Result<http::Response<ureq::Body>> {
        let what = req.describe();
        let ctx = FailureContext {
            what: &what,
            server_name: &self.shared.server_name,
            endpoint: &self.shared.endpoint,
            plain_http: self.shared.plain_http,
            idle_limit: watch_idle,
        };
        let url = format!("{}{}", self.shared.base_url, req.path_and_query());
        for attempt in 0..2 {
            if cancel.is_cancelled() {
                return Err(Error::Stopped);
            }
            let authz = self.shared.auth.authorize(cancel)?;
            // Chosen after authorizing: an exec plugin may just have issued a new client certificate, which retires
            // the pooled connections opened with the old one.
            let agent = match dedicated {
                Some(a) => a.clone(),
                None => self.transport.agent(&self.shared),
            };
            let mut builder = http::Request::builder()
                .method(req.method.as_str())
                .uri(url.as_str())
                .header(http::header::ACCEPT, req.accept.unwrap_or("application/json"));
            for (k, v) in &self.shared.extra_headers {
                builder = builder.header(k, v);
            }
            if let Some(ct) = req.content_type {
                builder = builder.header(http::header::CONTENT_TYPE, ct);
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
                    run(&agent, r, watch_idle)
                }
                None => {
                    let r = builder
                        .body(())
                        .map_err(|e| Error::InvalidInput(format!("{what}: {e}")))?;
                    run(&agent, r, watch_idle)
                }
            };
            if !cancel.is_cancelled() {
                let code = result.as_ref().ok().map(|r| r.status().as_u16());
                self.shared
                    .requests
                    .observe(req.method.as_str(), code, started.elapsed());
            }
            let response = result.map_err(|e| transport::map_error(e, cancel, &ctx))?;
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

/// A timeout as ureq takes it: `None` (no limit) for one that would reach past [`FAR_FUTURE`] (`Duration::MAX`
/// means "never time out"; ureq would overflow adding it to an instant).
fn finite(timeout: Duration) -> Option<Duration> {
    (timeout < FAR_FUTURE).then_some(timeout)
}

/// Runs one request; a watch gets its idle limit as per-read timeout and no overall limit.
fn run<S: ureq::AsSendBody>(
    agent: &ureq::Agent,
    req: http::Request<S>,
    watch_idle: Option<Duration>,
) -> Result<http::Response<ureq::Body>, ureq::Error> {
    match watch_idle {
        None => agent.run(req),
        Some(idle) => {
            let req = agent
                .configure_request(req)
                .timeout_per_read(finite(idle))
                .timeout_global(None)
                .build();
            agent.run(req)
        }
    }
}

impl Transport {
    fn new(shared: &Shared) -> Transport {
        let canceller = Canceller::new();
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
    fn aborted_clients_fail_fast_without_touching_the_network() {
        // 192.0.2.0/24 is TEST-NET-1: never routed, so a connect would hang until its timeout.
        let c = Client::new(Config::new("https://192.0.2.1:6443").proxy(None)).unwrap();
        c.abort_handle().abort();
        assert!(matches!(c.get_bytes("/version"), Err(Error::Stopped)));
    }
}
