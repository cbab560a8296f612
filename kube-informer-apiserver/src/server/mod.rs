//! The top floor (k8s.io/apiserver's `server`, `server/filters`): [`ApiServer`] and its builder — listening, the
//! acceptor, connection threads, restart, shutdown, the control API — the connection loop and its filters
//! ([`conn`]), the Rust calls without HTTP ([`direct`]), fault injection ([`faults`]) and the admin API over HTTP
//! ([`admin`]), manifests, the kubeconfig the server writes and a service account's client.

pub(crate) mod admin;
pub(crate) mod conn;
pub(crate) mod direct;
pub(crate) mod faults;
pub(crate) mod fd_limit;
pub(crate) mod kubeconfig;
pub(crate) mod manifests;
pub(crate) mod service_account_client;

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::admission;
use crate::auth::rbac::{self, PolicyCache};
use crate::auth::serviceaccount::TokenIssuer;
use crate::auth::{AccessRule, Auth};
use crate::endpoints::openapi;
use crate::http::log::RequestLog;
use crate::http::serving_limits::{InFlight, SHORTEST_WAIT, ServingLimits};
use crate::http::tls::{ClientIdentity, Pki};
use crate::registry::Store;
use crate::registry::bootstrap;
use crate::registry::crd;
use crate::registry::flowcontrol_bootstrap;
use crate::registry::resource::ResourceSpec;
use admin::Admin;
use faults::{Fault, Faults};
use kube_informer::Error;
use kubeconfig::{Credential, TempDir};

/// Connections being served. Invariant: every live connection's thread is in `threads`.
#[derive(Debug, Default)]
struct Conns {
    next_id: u64,
    /// Each live connection's socket (its one file descriptor, shared with its thread), to cut it.
    live: HashMap<u64, Arc<TcpStream>>,
    threads: Vec<JoinHandle<()>>,
}

/// The stack of a connection thread, set rather than left to `RUST_MIN_STACK`: the deepest walk a request makes is
/// over a JSON value at most 128 levels deep (serde_json's limit, which the server keeps for every object it stores),
/// which the hostile-client tests run on a quarter of this; deep CEL runs on a stack of its own.
const CONNECTION_STACK: usize = 2 * 1024 * 1024;

/// File descriptors kept for everything but connections (the listener, kubeconfigs, a manifest being read, the
/// standard streams).
const RESERVED_FDS: u64 = 64;

/// State shared by the server handle and every thread.
pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) faults: Faults,
    pub(crate) log: RequestLog,
    pub(crate) auth: Auth,
    /// Signs and checks service-account tokens.
    pub(crate) issuer: TokenIssuer,
    /// The RBAC objects as the authorizer reads them (the RBAC mode only).
    pub(crate) policy: PolicyCache,
    pub(crate) pki: Option<Pki>,
    /// The address listened on (an unspecified IP listens on every interface).
    pub(crate) listen_addr: SocketAddr,
    /// The address clients connect to: `addr`, or loopback when `addr` is unspecified.
    pub(crate) client_addr: SocketAddr,
    /// The admin API under [`admin::PREFIX`](crate::server::admin::PREFIX), when turned on.
    pub(crate) admin: Option<Admin>,
    /// The OpenAPI documents of the registered resources.
    pub(crate) openapi: openapi::Cache,
    /// How long a request for a resourceVersion ahead of the store waits before 504 (kube-apiserver: 3 s).
    pub(crate) too_large_wait: Duration,
    bookmark_interval: Mutex<Duration>,
    watch_list: AtomicBool,
    /// The `ShardedListAndWatch` feature gate: `shardSelector` honoured (else ignored, as kube-apiserver ignores a
    /// disabled alpha field).
    sharded_list_and_watch: AtomicBool,
    /// True: `resourceVersion=0` lists are served whole, ignoring `limit`, as the watch cache serves them.
    pub(crate) watch_cache: bool,
    /// Timeouts and caps of connections and requests.
    pub(crate) limits: ServingLimits,
    /// Requests being handled (the max-in-flight limits).
    pub(crate) in_flight: InFlight,
    shutdown: AtomicBool,
    /// Bumped by every restart: connections of an older epoch end.
    epoch: AtomicU64,
    conns: Mutex<Conns>,
    /// The acceptor thread, while listening.
    acceptor: Mutex<Option<JoinHandle<()>>>,
    /// Stop flag and wake-up of the timer threads (compactor, restart timers).
    timer: (Mutex<bool>, Condvar),
    /// Timers of restarts that refuse connections for a while; joined on shutdown.
    restarts: Mutex<Vec<JoinHandle<()>>>,
}

impl crate::endpoints::ServerState for Shared {
    fn store(&self) -> &Store {
        &self.store
    }
    fn auth(&self) -> &Auth {
        &self.auth
    }
    fn issuer(&self) -> &TokenIssuer {
        &self.issuer
    }
    fn too_large_wait(&self) -> Duration {
        self.too_large_wait
    }
    fn watch_cache(&self) -> bool {
        self.watch_cache
    }
    fn bookmark_interval(&self) -> Duration {
        Shared::bookmark_interval(self)
    }
    fn watch_list_enabled(&self) -> bool {
        Shared::watch_list_enabled(self)
    }
    fn sharded_list_and_watch_enabled(&self) -> bool {
        Shared::sharded_list_and_watch_enabled(self)
    }
    fn stall(&self, duration: Option<Duration>, ticket: u64, stop: &dyn Fn() -> bool) {
        self.faults.stall(duration, ticket, stop);
    }
}

impl Shared {
    /// True when a thread of `epoch` must stop.
    pub(crate) fn stopping(&self, epoch: u64) -> bool {
        self.shutdown.load(Ordering::Acquire) || self.epoch.load(Ordering::Acquire) != epoch
    }

    pub(crate) fn bookmark_interval(&self) -> Duration {
        *self.bookmark_interval.lock()
    }

    pub(crate) fn watch_list_enabled(&self) -> bool {
        self.watch_list.load(Ordering::Relaxed)
    }

    /// Changes the bookmark interval of every watch, running ones included.
    pub(crate) fn set_bookmark_interval(&self, interval: Duration) {
        *self.bookmark_interval.lock() = interval;
        self.store.notify();
    }

    pub(crate) fn set_watch_list(&self, enabled: bool) {
        self.watch_list.store(enabled, Ordering::Relaxed);
    }

    pub(crate) fn sharded_list_and_watch_enabled(&self) -> bool {
        self.sharded_list_and_watch.load(Ordering::Relaxed)
    }

    pub(crate) fn set_sharded_list_and_watch(&self, enabled: bool) {
        self.sharded_list_and_watch.store(enabled, Ordering::Relaxed);
    }
}

/// Configures and starts an [`ApiServer`].
///
/// ```
/// use std::time::Duration;
/// use kube_informer_apiserver::{AccessRule, ApiServer};
///
/// let server = ApiServer::builder()
///     .https()
///     .token("admin-token", "admin")
///     .token("viewer-token", "viewer")
///     .rule(AccessRule::user("admin"))
///     .rule(AccessRule::user("viewer").verbs(&["get", "list", "watch"]))
///     .bookmark_interval(Duration::from_millis(200))
///     .history_size(1000)
///     .start()
///     .unwrap();
/// assert!(server.url().starts_with("https://127.0.0.1:"));
/// assert!(server.ca_pem().is_some());
/// ```
#[must_use]
pub struct ApiServerBuilder {
    https: bool,
    tokens: Vec<(String, String)>,
    cert_users: Vec<String>,
    client_cas: Vec<String>,
    rules: Vec<AccessRule>,
    resources: Vec<ResourceSpec>,
    default_resources: bool,
    bookmark_interval: Duration,
    history_size: usize,
    too_large_wait: Duration,
    watch_list: bool,
    sharded_list_and_watch: bool,
    watch_cache: bool,
    initial_revision: u64,
    compaction_interval: Option<Duration>,
    kubeconfig_user: Option<String>,
    address: IpAddr,
    port: u16,
    kubeconfig_out: Option<PathBuf>,
    admin: Option<Vec<String>>,
    /// CRD manifests to install at start: their text, or a folder of them.
    crds: Vec<CrdSource>,
    /// Namespaces to create at start, beside those kube-apiserver creates.
    namespaces: Vec<String>,
    /// Authorization by RBAC.
    rbac: bool,
    /// `Some(false)`: no anonymous requests even in the RBAC mode.
    anonymous: Option<bool>,
    /// Groups of token and certificate users.
    groups: Vec<(String, Vec<String>)>,
    /// Serve beyond loopback without authentication.
    insecure_remote: bool,
    limits: ServingLimits,
}

/// Where [`ApiServerBuilder`] finds CRDs to install.
enum CrdSource {
    Manifest(String),
    Folder(PathBuf),
}

impl fmt::Debug for ApiServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Tokens are secrets: only the users appear.
        f.debug_struct("ApiServerBuilder")
            .field("https", &self.https)
            .field("token_users", &self.tokens.iter().map(|(_, u)| u).collect::<Vec<_>>())
            .field("cert_users", &self.cert_users)
            .field("rules", &self.rules)
            .field("resources", &self.resources.len())
            .field("bookmark_interval", &self.bookmark_interval)
            .field("history_size", &self.history_size)
            .field("address", &self.address)
            .field("port", &self.port)
            .field("kubeconfig_out", &self.kubeconfig_out)
            .field("admin", &self.admin)
            .field("rbac", &self.rbac)
            .field("groups", &self.groups)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            https: false,
            tokens: Vec::new(),
            cert_users: Vec::new(),
            client_cas: Vec::new(),
            rules: Vec::new(),
            resources: Vec::new(),
            default_resources: true,
            bookmark_interval: Duration::from_secs(60),
            history_size: 10_000,
            too_large_wait: Duration::from_millis(250),
            watch_list: true,
            sharded_list_and_watch: false,
            watch_cache: true,
            initial_revision: 1,
            compaction_interval: Some(Duration::from_secs(300)),
            kubeconfig_user: None,
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            kubeconfig_out: None,
            admin: None,
            crds: Vec::new(),
            namespaces: Vec::new(),
            rbac: false,
            anonymous: None,
            groups: Vec::new(),
            insecure_remote: false,
            limits: ServingLimits::default(),
        }
    }
}

impl ApiServerBuilder {
    /// Serve HTTPS with a fresh CA (default: plain HTTP).
    pub fn https(mut self) -> Self {
        self.https = true;
        self
    }

    /// Accept `Authorization: Bearer <token>` as `user`. Turns authentication on: requests without valid
    /// credentials get 401.
    pub fn token(mut self, token: &str, user: &str) -> Self {
        self.tokens.push((token.to_owned(), user.to_owned()));
        self
    }

    /// Issue a client certificate (`CN=user`, signed by the server's CA) and accept it as `user`. Needs
    /// [`https`](Self::https); turns authentication on.
    pub fn client_cert(mut self, user: &str) -> Self {
        self.cert_users.push(user.to_owned());
        self
    }

    /// Also accept client certificates signed by this CA (PEM), e.g. an RSA fixture; the user is the `CN`.
    pub fn client_ca_pem(mut self, pem: &str) -> Self {
        self.client_cas.push(pem.to_owned());
        self
    }

    /// Authorize as kube-apiserver with `--authorization-mode=RBAC` does: by the Roles, ClusterRoles, RoleBindings
    /// and ClusterRoleBindings written to the server, nothing allowed by default, members of `system:masters` allowed
    /// everything; the [`rule`](Self::rule)s still grant beside them. Turns authentication on and creates
    /// kube-apiserver's bootstrap policy at start (cluster-admin, admin, edit, view, the `system:*` roles and their
    /// bindings). Requests without credentials are then `system:anonymous` in `system:unauthenticated` (see
    /// [`anonymous_auth`](Self::anonymous_auth)), and the server's kubeconfig and [`ApiServer::client`] act as the
    /// user [`ADMIN_USER`](crate::ADMIN_USER), in `system:masters`, unless [`kubeconfig_user`](Self::kubeconfig_user)
    /// names another. [`ApiServer::service_account_client`] acts as a service account, with exactly what its
    /// bindings grant.
    ///
    /// ```
    /// use kube_informer::object::ApiResource;
    /// use kube_informer_apiserver::ApiServer;
    /// use serde_json::json;
    ///
    /// let server = ApiServer::builder().rbac().start().unwrap();
    /// let sa = ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true);
    /// server.create_json(&sa, Some("default"), json!({"metadata": {"name": "ctl"}})).unwrap();
    /// let client = server.service_account_client("default", "ctl").unwrap();
    /// let cm = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// let err = kube_informer::client::Api::<kube_informer::object::DynamicObject>::namespaced_with(client, "default", &cm)
    ///     .list(&Default::default())
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("cannot list resource \"configmaps\""), "{err}");
    /// ```
    pub fn rbac(mut self) -> Self {
        self.rbac = true;
        self
    }

    /// Serve requests without credentials as `system:anonymous` (`true`, the default in the RBAC mode, as
    /// kube-apiserver's `--anonymous-auth`) or refuse them with 401 (`false`). Outside the RBAC mode they are always
    /// refused once authentication is on (kube-apiserver turns anonymous requests off when it allows everything).
    pub fn anonymous_auth(mut self, enabled: bool) -> Self {
        self.anonymous = Some(enabled);
        self
    }

    /// Puts `user` (of a [`token`](Self::token) or [`client_cert`](Self::client_cert)) in these groups, as a static
    /// token file's groups column or a certificate's `O=` does: RBAC bindings to a group then apply to them.
    pub fn user_groups(mut self, user: &str, groups: &[&str]) -> Self {
        self.groups
            .push((user.to_owned(), groups.iter().map(|g| (*g).to_owned()).collect()));
        self
    }

    /// Serve a non-loopback [`address`](Self::address) without authentication. Without this,
    /// [`start`](Self::start) refuses: anyone who reaches the address could read and write everything and use the
    /// admin API — the insecure port kube-apiserver removed. With it, the admin API still answers only requests from
    /// loopback.
    pub fn insecure_allow_unauthenticated_remote_access(mut self) -> Self {
        self.insecure_remote = true;
        self
    }

    /// Add an authorization rule. With no rules, every authenticated user may do everything.
    pub fn rule(mut self, rule: AccessRule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Serve one more resource (replaces a default one with the same plural and group). Takes a
    /// [`ResourceSpec`] or a plain [`ApiResource`](kube_informer::object::ApiResource).
    pub fn resource(mut self, spec: impl Into<ResourceSpec>) -> Self {
        self.resources.push(spec.into());
        self
    }

    /// Do not register [`ResourceSpec::defaults`].
    pub fn no_default_resources(mut self) -> Self {
        self.default_resources = false;
        self
    }

    /// How often watches with `allowWatchBookmarks=true` get a BOOKMARK (default 1 min, as kube-apiserver).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// Events kept per resource for watches to resume from (default 10,000). A watch from an older
    /// resourceVersion, or a watcher that falls that far behind, gets a 410 ERROR event.
    pub fn history_size(mut self, events: usize) -> Self {
        self.history_size = events.max(1);
        self
    }

    /// How long a request for a resourceVersion ahead of the store waits for it before answering 504 "Too large
    /// resource version" (default 250 ms; kube-apiserver waits 3 s).
    pub fn too_large_wait(mut self, wait: Duration) -> Self {
        self.too_large_wait = wait;
        self
    }

    /// Emulate the watch cache (default on): `resourceVersion=0` lists are served whole, ignoring `limit`. Off, they
    /// are paged like any list, as by an API server running with `--watch-cache=false`.
    pub fn watch_cache(mut self, enabled: bool) -> Self {
        self.watch_cache = enabled;
        self
    }

    /// Serve streaming lists (`sendInitialEvents=true`), as servers with the WatchList feature do (default on).
    /// Off, such watches get kube-apiserver's 422.
    pub fn watch_list(mut self, enabled: bool) -> Self {
        self.watch_list = enabled;
        self
    }

    /// The `ShardedListAndWatch` feature gate (KEP-5866; off by default, as in kube-apiserver where it is alpha). On,
    /// `shardSelector` filters LIST, WATCH and streaming lists, and lists answer `metadata.shardInfo.selector`; off,
    /// the parameter is ignored and lists carry no `shardInfo`, as kube-apiserver ignores a disabled alpha field.
    pub fn sharded_list_and_watch(mut self, enabled: bool) -> Self {
        self.sharded_list_and_watch = enabled;
        self
    }

    /// The first resourceVersion (default 1), e.g. a large one to catch clients that assume small numbers
    /// (at most 2^53, the largest integer every JSON reader keeps exact).
    pub fn initial_revision(mut self, rev: u64) -> Self {
        self.initial_revision = rev.clamp(1, 1 << 53);
        self
    }

    /// Compact automatically: every `interval`, to the revision of the previous tick (kube-apiserver compacts
    /// etcd every 5 minutes, the default). `None` compacts only when asked.
    pub fn compaction_interval(mut self, interval: Option<Duration>) -> Self {
        self.compaction_interval = interval;
        self
    }

    /// Whose credentials go into [`ApiServer::kubeconfig_path`] (default: the first token's user, else the first
    /// client certificate's).
    pub fn kubeconfig_user(mut self, user: &str) -> Self {
        self.kubeconfig_user = Some(user.to_owned());
        self
    }

    /// The address to listen on (default 127.0.0.1). An unspecified address (`0.0.0.0`, `::`) listens on every
    /// interface, and the URL and kubeconfig then name loopback. With [`https`](Self::https), the server
    /// certificate also names this address.
    pub fn address(mut self, address: IpAddr) -> Self {
        self.address = address;
        self
    }

    /// The port to listen on (default 0: any free port; [`ApiServer::url`] tells which).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Also write the kubeconfig ([`ApiServer::kubeconfig_path`]) to `path`, once the server listens, and leave it
    /// there when the server stops (the default kubeconfig lives in a temporary directory removed at stop). The
    /// file is replaced atomically (written beside it, then renamed), readable by its owner only.
    pub fn kubeconfig_out(mut self, path: impl Into<PathBuf>) -> Self {
        self.kubeconfig_out = Some(path.into());
        self
    }

    /// Serve the admin API (faults, compaction, restart, request log over HTTP) under
    /// [`ADMIN_PREFIX`](super::ADMIN_PREFIX); see the [module documentation](super#the-admin-api). With
    /// authentication on, only the users named by [`admin_user`](Self::admin_user) may use it.
    pub fn admin_api(mut self) -> Self {
        self.admin.get_or_insert_with(Vec::new);
        self
    }

    /// Lets `user` use the admin API (and turns it on). Only matters when authentication is on; it grants nothing
    /// on the Kubernetes API itself (see [`rule`](Self::rule)).
    pub fn admin_user(mut self, user: &str) -> Self {
        self.admin.get_or_insert_with(Vec::new).push(user.to_owned());
        self
    }

    /// Creates namespace `name` at start, beside the `default`, `kube-system`, `kube-public` and `kube-node-lease`
    /// namespaces every server has: as on a cluster, objects can only be created in a namespace that exists
    /// (kube-apiserver's NamespaceLifecycle admission answers 404 otherwise).
    ///
    /// ```
    /// use kube_informer::object::{core::ConfigMap, ObjectMeta};
    /// use kube_informer_apiserver::ApiServer;
    ///
    /// let server = ApiServer::builder().namespace("team-a").start().unwrap();
    /// server.create(&ConfigMap::new(ObjectMeta::namespaced("team-a", "settings"))).unwrap();
    /// assert!(server.create(&ConfigMap::new(ObjectMeta::namespaced("team-b", "settings"))).is_err());
    /// ```
    pub fn namespace(mut self, name: &str) -> Self {
        self.namespaces.push(name.to_owned());
        self
    }

    /// [`namespace`](Self::namespace) for each name.
    pub fn namespaces<'a>(mut self, names: impl IntoIterator<Item = &'a str>) -> Self {
        self.namespaces.extend(names.into_iter().map(str::to_owned));
        self
    }

    /// Installs the CustomResourceDefinitions of a manifest (YAML or JSON) at start, as
    /// [`ApiServer::install_crd`] does.
    pub fn crd(mut self, manifest: &str) -> Self {
        self.crds.push(CrdSource::Manifest(manifest.to_owned()));
        self
    }

    /// Installs every CustomResourceDefinition found in the `.yaml`, `.yml` and `.json` files of `folder` at start
    /// (other documents are skipped), e.g. a kubebuilder project's `config/crd/bases`.
    pub fn crds_from_folder(mut self, folder: impl Into<PathBuf>) -> Self {
        self.crds.push(CrdSource::Folder(folder.into()));
        self
    }

    /// How long a request's head may take to arrive, from its first byte (or the connection's start): kube-apiserver's
    /// `ReadHeaderTimeout`, 32 s by default. A connection that sends less in that time is closed unanswered, as Go's
    /// server closes it. At least 1 ms.
    pub fn read_header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.read_header_timeout = timeout.max(SHORTEST_WAIT);
        self
    }

    /// How long a TLS handshake may take from the connection's start (default 32 s: Go takes the read-header
    /// timeout). At least 1 ms.
    pub fn tls_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.limits.tls_handshake_timeout = timeout.max(SHORTEST_WAIT);
        self
    }

    /// How long a request body may take to arrive after its head (default 60 s, kube-apiserver's
    /// `--request-timeout`); past it the answer is its 504. At least 1 ms.
    pub fn request_body_timeout(mut self, timeout: Duration) -> Self {
        self.limits.request_body_timeout = timeout.max(SHORTEST_WAIT);
        self
    }

    /// How long a keep-alive connection waits for its next request (default 90 s, kube-apiserver's `IdleTimeout`).
    /// At least 1 ms.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout.max(SHORTEST_WAIT);
        self
    }

    /// How long one write may go without progress before the connection is dropped: a client that stopped reading
    /// a watch or an answer (default 60 s; Go's server has no such timeout). At least 1 ms.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.limits.write_timeout = timeout.max(SHORTEST_WAIT);
        self
    }

    /// Connections served at once, each with a thread and one file descriptor (default 1,024, and never more than
    /// the open-files limit allows). Past it a new connection is answered kube-apiserver's 429 (plain HTTP) or
    /// closed (HTTPS: nothing can be answered before a handshake) at once. At least 1.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.limits.max_connections = n.max(1);
        self
    }

    /// Non-mutating requests handled at once, watches and other long-running requests aside (default 400,
    /// kube-apiserver's `--max-requests-inflight`; 0 for no limit). Past it: 429 `Too many requests, please try again
    /// later.` with `Retry-After: 1`, except for members of `system:masters`, as kube-apiserver answers.
    pub fn max_requests_in_flight(mut self, n: usize) -> Self {
        self.limits.max_requests_in_flight = n;
        self
    }

    /// Mutating requests handled at once (default 200, kube-apiserver's `--max-mutating-requests-inflight`; 0 for
    /// no limit); past it, as [`max_requests_in_flight`](Self::max_requests_in_flight).
    pub fn max_mutating_requests_in_flight(mut self, n: usize) -> Self {
        self.limits.max_mutating_requests_in_flight = n;
        self
    }

    /// Binds the address and port (default 127.0.0.1 on a free port) and starts serving.
    ///
    /// # Errors
    /// When the socket, the certificates or the kubeconfig cannot be made, or a client certificate is asked for
    /// without HTTPS.
    pub fn start(self) -> Result<ApiServer, Error> {
        if !self.https && !self.cert_users.is_empty() {
            return Err(Error::InvalidInput("client certificates need https()".into()));
        }
        let authenticated =
            self.rbac || !self.tokens.is_empty() || !self.cert_users.is_empty() || !self.client_cas.is_empty();
        if !authenticated && !loopback(self.address) && !self.insecure_remote {
            return Err(Error::InvalidInput(format!(
                "embedded API server: refusing to serve {} without authentication: anyone who can reach it could do \
                 anything; add a token, a client certificate or RBAC, or opt in with \
                 insecure_allow_unauthenticated_remote_access()",
                self.address
            )));
        }
        let mut tokens = self.tokens;
        if self.rbac && !tokens.iter().any(|(_, u)| u == ADMIN_USER) {
            tokens.push((
                format!(
                    "{:016x}{:016x}",
                    crate::api::util::random_u64(),
                    crate::api::util::random_u64()
                ),
                ADMIN_USER.to_owned(),
            ));
        }
        let io_err = |what: &str, e: io::Error| Error::InvalidInput(format!("embedded API server: {what}: {e}"));
        // As Go's runtime at start: every connection holds a descriptor.
        let mut limits = self.limits;
        if let Some(fds) = crate::server::fd_limit::raise() {
            let usable = usize::try_from(fds.saturating_sub(RESERVED_FDS).max(1)).unwrap_or(usize::MAX);
            limits.max_connections = limits.max_connections.min(usable);
        }
        let listener = TcpListener::bind(SocketAddr::new(self.address, self.port)).map_err(|e| io_err("bind", e))?;
        let addr = listener.local_addr().map_err(|e| io_err("local address", e))?;
        let client_addr = match addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port()),
            IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port()),
            _ => addr,
        };
        let pki = if self.https {
            let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
            for ip in [addr.ip(), client_addr.ip()] {
                if !names.contains(&ip.to_string()) {
                    names.push(ip.to_string());
                }
            }
            Some(Pki::with_names(&names, &self.client_cas)?)
        } else {
            None
        };
        let mut identities = HashMap::new();
        if let Some(pki) = &pki {
            for u in &self.cert_users {
                identities.insert(u.clone(), pki.issue_client(u, &[])?);
            }
        }
        let mut auth = Auth::default();
        for (t, u) in &tokens {
            auth.add_token(t, u);
        }
        if !self.cert_users.is_empty() || !self.client_cas.is_empty() {
            auth.required = true;
        }
        if self.rbac {
            auth.required = true;
            auth.rbac = true;
            auth.anonymous = self.anonymous.unwrap_or(true);
            auth.add_groups(ADMIN_USER, &[crate::api::user::SYSTEM_PRIVILEGED_GROUP.to_owned()]);
        }
        for (user, groups) in &self.groups {
            auth.add_groups(user, groups);
        }
        for r in self.rules {
            auth.add_rule(r);
        }
        let mut specs = if self.default_resources {
            // kube-apiserver always serves CRDs.
            let mut d = ResourceSpec::defaults();
            d.push(crd::resource());
            d
        } else {
            Vec::new()
        };
        specs.extend(self.resources);
        let issuer = TokenIssuer::new().map_err(Error::InvalidInput)?;
        let shared = Arc::new(Shared {
            store: Store::new(self.initial_revision, self.history_size, specs, admission::HOOKS),
            faults: Faults::default(),
            log: RequestLog::default(),
            auth,
            issuer,
            policy: PolicyCache::default(),
            pki,
            listen_addr: addr,
            client_addr,
            admin: self.admin.map(Admin::new),
            openapi: openapi::Cache::default(),
            too_large_wait: self.too_large_wait,
            bookmark_interval: Mutex::new(self.bookmark_interval),
            watch_list: AtomicBool::new(self.watch_list),
            sharded_list_and_watch: AtomicBool::new(self.sharded_list_and_watch),
            watch_cache: self.watch_cache,
            limits,
            in_flight: InFlight::default(),
            shutdown: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            conns: Mutex::new(Conns::default()),
            acceptor: Mutex::new(None),
            timer: (Mutex::new(false), Condvar::new()),
            restarts: Mutex::new(Vec::new()),
        });
        let dir = TempDir::new().map_err(|e| io_err("temporary directory", e))?;
        let scheme = if shared.pki.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{client_addr}");
        let mut server = ApiServer {
            shared,
            url,
            tokens,
            identities,
            dir,
            kubeconfig: PathBuf::new(),
            kubeconfig_user: String::new(),
            compactor: Mutex::new(None),
        };
        let user = self
            .kubeconfig_user
            .or_else(|| self.rbac.then(|| ADMIN_USER.to_owned()))
            .or_else(|| server.tokens.first().map(|(_, u)| u.clone()))
            .or_else(|| self.cert_users.first().cloned())
            .unwrap_or_else(|| "admin".to_owned());
        server.kubeconfig = server.kubeconfig_for(&user)?;
        server.kubeconfig_user = user;
        if self.default_resources {
            bootstrap::create_all(&server.shared.store, client_addr).map_err(Error::Api)?;
        }
        for name in &self.namespaces {
            bootstrap::namespace(&server.shared.store, name).map_err(Error::Api)?;
        }
        // kube-apiserver's post-start hooks: the bootstrap RBAC policy (whether or not RBAC authorizes) and the
        // priority-and-fairness configuration.
        if self.default_resources || self.rbac {
            rbac::bootstrap_policy::create(&server.shared.store).map_err(Error::Api)?;
        }
        if self.default_resources {
            flowcontrol_bootstrap::create(&server.shared.store).map_err(Error::Api)?;
        }
        for source in self.crds {
            let docs = match source {
                CrdSource::Manifest(text) => crd::documents(&text),
                CrdSource::Folder(dir) => crd::manifests_in(&dir),
            }
            .map_err(|m| Error::InvalidInput(format!("embedded API server: CRDs: {m}")))?;
            for d in docs {
                crd::install(&server.shared.store, d).map_err(Error::Api)?;
            }
        }
        spawn_acceptor(&server.shared, listener).map_err(|e| io_err("acceptor thread", e))?;
        if let Some(out) = &self.kubeconfig_out {
            let text = std::fs::read_to_string(&server.kubeconfig).map_err(|e| io_err("reading kubeconfig", e))?;
            kubeconfig::write_atomically(out, &text)
                .map_err(|e| io_err(&format!("writing kubeconfig to {}", out.display()), e))?;
            server.kubeconfig.clone_from(out);
        }
        if let Some(interval) = self.compaction_interval {
            server
                .spawn_compactor(interval)
                .map_err(|e| io_err("compactor thread", e))?;
        }
        Ok(server)
    }
}

/// The user of [`ApiServerBuilder::rbac`]'s kubeconfig and [`ApiServer::client`]: in `system:masters`, so allowed
/// everything, as a kubeadm cluster's `admin.conf`.
pub const ADMIN_USER: &str = "system:admin";

/// True for a loopback address (`127.0.0.0/8`, `::1`, and `::ffff:127.x.y.z`).
fn loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// An in-process Kubernetes API server on 127.0.0.1, for tests, examples and benchmarks. See the
/// [module documentation](super) for what it serves and how faithfully.
///
/// Stops on [`shutdown`](Self::shutdown) or drop; every thread it started is joined by then.
pub struct ApiServer {
    shared: Arc<Shared>,
    url: String,
    tokens: Vec<(String, String)>,
    identities: HashMap<String, ClientIdentity>,
    /// Owns the kubeconfig files; removed on drop.
    dir: TempDir,
    /// In `dir`, or where [`ApiServerBuilder::kubeconfig_out`] asked (then kept after stop).
    kubeconfig: PathBuf,
    kubeconfig_user: String,
    compactor: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url)
            .field("kubeconfig", &self.kubeconfig)
            .finish_non_exhaustive()
    }
}

impl ApiServer {
    /// A plain-HTTP server without authentication, serving the default resources.
    ///
    /// # Errors
    /// When no socket can be bound or the kubeconfig cannot be written.
    pub fn start() -> Result<ApiServer, Error> {
        ApiServer::builder().start()
    }

    /// A builder for anything else.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    /// `http://127.0.0.1:PORT` or `https://…` (loopback when listening on every interface).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address clients connect to (the listening address, or loopback when listening on every interface).
    pub fn addr(&self) -> SocketAddr {
        self.shared.client_addr
    }

    /// The address listened on (`0.0.0.0:PORT` when listening on every interface).
    pub fn listen_addr(&self) -> SocketAddr {
        self.shared.listen_addr
    }

    /// The CA certificate (PEM) clients must trust, for HTTPS servers.
    pub fn ca_pem(&self) -> Option<&str> {
        self.shared.pki.as_ref().map(|p| p.ca_pem.as_str())
    }

    /// A kubeconfig for this server (cluster, user, context, current-context), removed when the server drops —
    /// unless it was written where [`ApiServerBuilder::kubeconfig_out`] asked.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// Writes a kubeconfig whose user is `user` (its token or client certificate; a placeholder token when the
    /// user has neither) and returns its path.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn kubeconfig_for(&self, user: &str) -> Result<PathBuf, Error> {
        let placeholder = "kube-informer-unauthenticated";
        let credential = match (self.identities.get(user), self.tokens.iter().find(|(_, u)| u == user)) {
            (_, Some((t, _))) => Credential::Token(t),
            (Some(id), None) => Credential::Certificate(id),
            (None, None) => Credential::Token(placeholder),
        };
        let text = kubeconfig::render(&self.url, self.ca_pem(), user, &credential);
        let name = format!("kubeconfig-{}", user.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
        kubeconfig::write(self.dir.path(), &name, &text)
            .map_err(|e| Error::InvalidInput(format!("writing kubeconfig: {e}")))
    }

    /// Writes a kubeconfig for `user` authenticated by `token` (a service account's) and returns its path.
    pub(crate) fn kubeconfig_with_token(&self, user: &str, token: &str) -> Result<PathBuf, Error> {
        let text = kubeconfig::render(&self.url, self.ca_pem(), user, &Credential::Token(token));
        let name = format!("kubeconfig-{}", user.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
        kubeconfig::write(self.dir.path(), &name, &text)
            .map_err(|e| Error::InvalidInput(format!("writing kubeconfig: {e}")))
    }

    /// A client configuration for this server, with the credentials of its kubeconfig user and **no client-side
    /// rate limit** ([`Config::no_rate_limit`](kube_informer::client::Config::no_rate_limit)): the library's default
    /// (client-go's 5 requests per second, bursts of 10) would make a test that creates a thousand objects take
    /// minutes. A test of rate limiting sets one with
    /// [`Config::rate_limit`](kube_informer::client::Config::rate_limit).
    ///
    /// # Errors
    /// When the kubeconfig cannot be read back (its directory was removed from under the server).
    pub fn config(&self) -> Result<kube_informer::client::Config, Error> {
        Ok(kube_informer::client::Config::from_kubeconfig_file(&self.kubeconfig, None)?.no_rate_limit())
    }

    /// A client for this server ([`config`](Self::config): no client-side rate limit).
    ///
    /// # Errors
    /// As [`config`](Self::config), or when the client cannot be built.
    pub fn client(&self) -> Result<kube_informer::client::Client, Error> {
        kube_informer::client::Client::new(self.config()?)
    }

    /// The user whose credentials [`kubeconfig_path`](Self::kubeconfig_path) holds.
    pub fn kubeconfig_user(&self) -> &str {
        &self.kubeconfig_user
    }

    /// The bearer token configured for `user` ([`ApiServerBuilder::token`]).
    pub fn token_for(&self, user: &str) -> Option<&str> {
        self.tokens.iter().find(|(_, u)| u == user).map(|(t, _)| t.as_str())
    }

    /// The client certificate and key issued for `user` by [`ApiServerBuilder::client_cert`].
    pub fn client_identity(&self, user: &str) -> Option<&ClientIdentity> {
        self.identities.get(user)
    }

    /// Issues a new client certificate for `user` with `groups` (`O=`), signed by the server's CA. `None` for an
    /// HTTP server.
    pub fn issue_client_cert(&self, user: &str, groups: &[&str]) -> Option<ClientIdentity> {
        self.shared.pki.as_ref()?.issue_client(user, groups).ok()
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    // ----- store control -----

    /// The latest resourceVersion (etcd revision).
    pub fn revision(&self) -> u64 {
        self.shared.store.lock().rev()
    }

    /// Compacts to `revision` (at most the latest): lists at older revisions and continue tokens made before it
    /// get 410 Expired, watches from before it get the 410 ERROR event. Returns the compaction revision.
    pub fn compact(&self, revision: u64) -> u64 {
        let r = self.shared.store.lock().compact(revision);
        self.shared.store.notify();
        r
    }

    /// Compacts to the latest revision.
    pub fn compact_to_latest(&self) -> u64 {
        self.compact(u64::MAX)
    }

    /// Creates namespace `name` (nothing when it exists): objects can only be created in a namespace that exists,
    /// as on a cluster.
    ///
    /// # Errors
    /// [`Error::Api`] when the name is not a valid namespace name, or the namespace is being deleted.
    pub fn create_namespace(&self, name: &str) -> Result<(), Error> {
        bootstrap::namespace(&self.shared.store, name).map_err(Error::Api)
    }

    /// Serves one more resource from now on (or replaces a served one's spec, keeping its objects).
    pub fn register(&self, spec: impl Into<ResourceSpec>) {
        self.shared.store.lock().register(spec.into());
    }

    /// Changes the bookmark interval of every watch, running ones included.
    pub fn set_bookmark_interval(&self, interval: Duration) {
        self.shared.set_bookmark_interval(interval);
    }

    /// Turns streaming lists (`sendInitialEvents`) on or off.
    pub fn set_watch_list_enabled(&self, enabled: bool) {
        self.shared.set_watch_list(enabled);
    }

    /// Turns the `ShardedListAndWatch` feature gate on or off for the requests that follow (running watches keep the
    /// selector they started with).
    pub fn set_sharded_list_and_watch_enabled(&self, enabled: bool) {
        self.shared.set_sharded_list_and_watch(enabled);
    }

    // ----- faults and observation -----

    /// Queues a fault for the next request(s) it matches.
    pub fn inject(&self, fault: Fault) {
        self.shared.faults.push(fault);
    }

    /// Drops pending faults and ends every stall waiting to be cleared.
    pub fn clear_faults(&self) {
        self.shared.faults.clear();
    }

    /// Faults not yet used up.
    pub fn pending_faults(&self) -> usize {
        self.shared.faults.pending()
    }

    /// The request log.
    pub fn requests(&self) -> &RequestLog {
        &self.shared.log
    }

    fn resource_id(&self, resource: &str) -> Option<String> {
        let g = self.shared.store.lock();
        g.specs()
            .into_iter()
            .find(|s| s.api.plural == resource || s.id() == resource)
            .map(|s| s.id())
    }

    /// Watches currently streaming `resource` (plural or `plural.group`).
    pub fn watchers(&self, resource: &str) -> usize {
        self.resource_id(resource)
            .map_or(0, |id| self.shared.store.lock().watchers(&id))
    }

    /// Connections being served now (each holds a thread and one file descriptor until the client leaves, a
    /// timeout drops it, or the server stops).
    pub fn connections(&self) -> usize {
        self.shared.conns.lock().live.len()
    }

    /// Waits until at least `n` watches stream `resource`; returns whether they did within `timeout`. Once it
    /// returns true, every later write reaches those watchers.
    pub fn wait_for_watchers(&self, resource: &str, n: usize, timeout: Duration) -> bool {
        let Some(id) = self.resource_id(resource) else {
            return n == 0;
        };
        let deadline = crate::api::util::deadline_after(timeout);
        let mut g = self.shared.store.lock();
        loop {
            if g.watchers(&id) >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.shared.store.wait_until(&mut g, deadline);
        }
    }

    // ----- lifecycle -----

    fn spawn_compactor(&self, interval: Duration) -> io::Result<()> {
        let shared = self.shared.clone();
        let handle = thread::Builder::new().name("srv:compactor".to_owned()).spawn(move || {
            let (stop, wake) = &shared.timer;
            let mut previous = shared.store.lock().rev();
            let mut stopped = stop.lock();
            loop {
                let deadline = crate::api::util::deadline_after(interval);
                while !*stopped && Instant::now() < deadline {
                    wake.wait_until(&mut stopped, deadline);
                }
                if *stopped {
                    return;
                }
                let now = shared.store.lock().rev();
                shared.store.lock().compact(previous);
                shared.store.notify();
                previous = now;
            }
        })?;
        *self.compactor.lock() = Some(handle);
        Ok(())
    }

    /// Cuts every connection and stops listening: new connections are refused until
    /// [`start_listening`](Self::start_listening). The stored state is kept.
    pub fn stop_listening(&self) {
        stop_listening(&self.shared, None);
    }

    /// Listens again on the same port (after [`stop_listening`](Self::stop_listening)); does nothing when
    /// listening.
    ///
    /// # Errors
    /// When the port cannot be bound again.
    pub fn start_listening(&self) -> io::Result<()> {
        start_listening(&self.shared)
    }

    /// A restart: every connection cut, the state kept, listening again on the same port at once.
    ///
    /// # Errors
    /// When the port cannot be bound again.
    pub fn restart(&self) -> io::Result<()> {
        restart(&self.shared, None, None)
    }

    /// A restart during which the server is down: every connection cut, connections refused for `down`, then
    /// listening again on the same port. Returns at once; a timer thread (joined on shutdown) brings it back.
    ///
    /// # Errors
    /// When the timer thread cannot be started.
    pub fn restart_refusing_for(&self, down: Duration) -> io::Result<()> {
        restart(&self.shared, Some(down), None)
    }

    /// Stops the server and joins all its threads (also done on drop).
    pub fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::Release);
        {
            let (stop, wake) = &self.shared.timer;
            *stop.lock() = true;
            wake.notify_all();
        }
        if let Some(h) = self.compactor.lock().take() {
            let _ = h.join();
        }
        for h in std::mem::take(&mut *self.shared.restarts.lock()) {
            let _ = h.join();
        }
        stop_serving(&self.shared, None);
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Ends the current epoch (its connections stop) and stops serving, sparing connection `spare` (the admin API's
/// own, which answers once the restart is done).
fn stop_listening(shared: &Shared, spare: Option<u64>) {
    shared.epoch.fetch_add(1, Ordering::AcqRel);
    stop_serving(shared, spare);
}

/// A restart: every connection but `spare` cut, listening again at once or, with `down`, after that long (a timer
/// thread, joined on shutdown, brings it back).
pub(crate) fn restart(shared: &Arc<Shared>, down: Option<Duration>, spare: Option<u64>) -> io::Result<()> {
    stop_listening(shared, spare);
    let Some(down) = down else {
        return start_listening(shared);
    };
    let s = shared.clone();
    let handle = thread::Builder::new().name("srv:restart".to_owned()).spawn(move || {
        let (stop, wake) = &s.timer;
        let deadline = Instant::now().checked_add(down);
        let mut stopped = stop.lock();
        while !*stopped && deadline.is_none_or(|d| Instant::now() < d) {
            match deadline {
                Some(d) => {
                    wake.wait_until(&mut stopped, d);
                }
                None => wake.wait(&mut stopped),
            }
        }
        if !*stopped {
            drop(stopped);
            if let Err(e) = start_listening(&s) {
                log::warn!("embedded API server: cannot listen again on {}: {e}", s.listen_addr);
            }
        }
    })?;
    let mut restarts = shared.restarts.lock();
    restarts.retain(|h| !h.is_finished());
    restarts.push(handle);
    Ok(())
}

fn spawn_acceptor(shared: &Arc<Shared>, listener: TcpListener) -> io::Result<()> {
    let mut slot = shared.acceptor.lock();
    let s = shared.clone();
    let epoch = shared.epoch.load(Ordering::Acquire);
    let handle = thread::Builder::new()
        .name("srv:acceptor".to_owned())
        .spawn(move || accept_loop(&s, &listener, epoch))?;
    *slot = Some(handle);
    Ok(())
}

/// Binds the server's port again and starts accepting, unless already listening or shut down.
fn start_listening(shared: &Arc<Shared>) -> io::Result<()> {
    if shared.acceptor.lock().is_some() || shared.shutdown.load(Ordering::Acquire) {
        return Ok(());
    }
    let listener = TcpListener::bind(shared.listen_addr)?;
    spawn_acceptor(shared, listener)
}

/// Stops accepting, cuts every connection, and joins the acceptor and every connection thread — except connection
/// `spare`, which must be the calling thread's own (a thread cannot join itself): it ends by itself, its epoch
/// being over.
fn stop_serving(shared: &Shared, spare: Option<u64>) {
    let acceptor = shared.acceptor.lock().take();
    if let Some(h) = acceptor {
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect_timeout(&shared.client_addr, Duration::from_millis(500));
        let _ = h.join();
    }
    let (live, threads) = {
        let mut c = shared.conns.lock();
        let mut live = std::mem::take(&mut c.live);
        let mut threads = std::mem::take(&mut c.threads);
        if let Some(id) = spare {
            if let Some(own) = live.remove(&id) {
                c.live.insert(id, own);
            }
            let me = thread::current().id();
            if let Some(i) = threads.iter().position(|h| h.thread().id() == me) {
                c.threads.push(threads.swap_remove(i));
            }
        }
        (live, threads)
    };
    for s in live.values() {
        let _ = s.shutdown(Shutdown::Both);
    }
    shared.store.lock().interrupt();
    shared.store.notify();
    shared.faults.release();
    for t in threads {
        let _ = t.join();
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener, epoch: u64) {
    // Go's server backs off after an accept error (out of file descriptors, say) from 5 ms, doubling, to 1 s; here
    // to 250 ms, so that a stop is seen soon.
    let mut backoff = Duration::ZERO;
    for conn in listener.incoming() {
        if shared.stopping(epoch) {
            return;
        }
        let tcp = match conn {
            Ok(tcp) => {
                backoff = Duration::ZERO;
                tcp
            }
            Err(e) => {
                backoff = (backoff * 2).clamp(Duration::from_millis(5), Duration::from_millis(250));
                log::debug!("embedded API server: accept: {e}; retrying in {backoff:?}");
                thread::sleep(backoff);
                continue;
            }
        };
        let accepted = Instant::now();
        let tcp = Arc::new(tcp);
        let mut conns = shared.conns.lock();
        // Reap the threads of closed connections.
        let (done, running): (Vec<_>, Vec<_>) = std::mem::take(&mut conns.threads)
            .into_iter()
            .partition(|h| h.is_finished());
        conns.threads = running;
        for h in done {
            let _ = h.join();
        }
        if conns.live.len() >= shared.limits.max_connections {
            drop(conns);
            refuse_connection(shared, &tcp);
            continue;
        }
        let id = conns.next_id;
        conns.next_id += 1;
        conns.live.insert(id, tcp.clone());
        let s = shared.clone();
        let spawned = thread::Builder::new()
            .name(format!("srv:conn{id}"))
            .stack_size(CONNECTION_STACK)
            .spawn(move || {
                conn::serve(s.clone(), tcp, accepted, epoch, id);
                s.conns.lock().live.remove(&id);
            });
        match spawned {
            Ok(h) => conns.threads.push(h),
            Err(e) => {
                let tcp = conns.live.remove(&id);
                drop(conns);
                log::warn!("embedded API server: cannot start a connection thread: {e}");
                if let Some(tcp) = tcp {
                    refuse_connection(shared, &tcp);
                }
            }
        }
    }
}

/// A connection past [`ServingLimits::max_connections`] (or without a thread to serve it), refused without blocking
/// the acceptor: on plain HTTP, kube-apiserver's 429 text (what it answers past its in-flight limits), after reading
/// whatever request already arrived so that closing does not reset the answer away; on HTTPS, closed.
fn refuse_connection(shared: &Shared, tcp: &TcpStream) {
    if shared.pki.is_none() && tcp.set_nonblocking(true).is_ok() {
        let mut sink = [0u8; 8192];
        for _ in 0..8 {
            match (&*tcp).read(&mut sink) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
        let _ = (&*tcp).write_all(
            format!(
                "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nRetry-After: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                crate::http::serving_limits::TOO_MANY_REQUESTS.len(),
                crate::http::serving_limits::TOO_MANY_REQUESTS
            )
            .as_bytes(),
        );
    }
    let _ = tcp.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_can_be_shared_across_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<ApiServer>();
        shareable::<RequestLog>();
    }

    #[test]
    fn shutdown_joins_every_thread_even_with_a_stalled_watch_and_an_idle_connection() {
        let server = ApiServer::start().unwrap();
        server.inject(Fault::watch("configmaps").stall_after_events(0));
        let mut watch = TcpStream::connect(server.addr()).unwrap();
        watch
            .write_all(b"GET /api/v1/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        assert!(server.wait_for_watchers("configmaps", 1, Duration::from_secs(20)));
        let _idle = TcpStream::connect(server.addr()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.shared.conns.lock().live.len() < 2 {
            assert!(Instant::now() < deadline, "the idle connection was never accepted");
            thread::yield_now();
        }
        server.shutdown();
        assert!(server.shared.acceptor.lock().is_none() && server.compactor.lock().is_none());
        assert!(server.shared.restarts.lock().is_empty());
        let conns = server.shared.conns.lock();
        assert!(conns.threads.is_empty() && conns.live.is_empty());
        drop(conns);
        // Every thread held a handle on the shared state: they are all gone.
        assert_eq!(Arc::strong_count(&server.shared), 1);
        server.shutdown();
    }
}
