//! [`ApiServerBuilder`]: what an [`ApiServer`] serves and how, and its start — the wiring of every floor below
//! (the registry's store with the admission it runs, authentication and authorization, the bootstrap objects, the
//! CRDs asked for) before the acceptor starts.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::api_server::{ADMIN_USER, ApiServer};
use super::faults::Faults;
use super::kubeconfig::{self, TempDir};
use super::serving::{self, spawn_acceptor};
use super::shared::{Admin, Conns, Shared};
use crate::admission;
use crate::auth::rbac::{self, PolicyCache};
use crate::auth::serviceaccount::TokenIssuer;
use crate::auth::{AccessRule, Auth};
use crate::endpoints::openapi;
use crate::http::log::RequestLog;
use crate::http::serving_limits::{InFlight, SHORTEST_WAIT, ServingLimits};
use crate::http::tls::Pki;
use crate::registry::Store;
use crate::registry::bootstrap;
use crate::registry::flowcontrol_bootstrap;
use crate::registry::resource::ResourceSpec;
use crate::registry::{builtin_kinds, crd};
use kube_informer::Error;

/// File descriptors kept for everything but connections (the listener, kubeconfigs, a manifest being read, the
/// standard streams).
const RESERVED_FDS: u64 = 64;

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
    /// user [`ADMIN_USER`], in `system:masters`, unless [`kubeconfig_user`](Self::kubeconfig_user)
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
    /// [`ADMIN_PREFIX`](crate::ADMIN_PREFIX); see the [module documentation](crate#the-admin-api). With
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
            d.push(builtin_kinds::crd_resource());
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
            restart: serving::restart,
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

/// True for a loopback address (`127.0.0.0/8`, `::1`, and `::ffff:127.x.y.z`).
fn loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}
