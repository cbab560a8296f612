//! `Config`: everything needed to talk to one API server — where it is, how to trust it, who we are.
//!
//! A `Config` comes from a kubeconfig ([`Config::from_kubeconfig`]), from inside a pod ([`Config::incluster`]),
//! from whichever of those is available ([`Config::infer`]), or is built by hand ([`Config::new`] and its setters).
//! It holds no open files or sockets; [`Client::new`](super::Client::new) turns it into a working client.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::exec::{ExecConfig, InteractiveMode};
use super::kubeconfig::Kubeconfig;
use super::rate_limit::RateLimit;
use super::secret::Secret;
use crate::{ConfigError, Error, Result};

/// Default connect timeout (DNS, TCP, proxy handshake and TLS handshake together): 30 s, client-go's dialer timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Default limit on one silent read of a non-watch response: 90 s.
///
/// kube-apiserver ends every non-watch request after its `--request-timeout` (60 s by default), so a connection
/// that stays silent for longer is dead (half-open), not slow. client-go relies on TCP keep-alive for the same job,
/// which the standard library cannot switch on.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(90);

/// Default idle limit of a watch: 180 s without a single byte ends the watch with
/// [`Error::WatchIdle`].
///
/// kube-apiserver sends a BOOKMARK about every minute to watches that allow bookmarks (since Kubernetes 1.19), so
/// three silent minutes mean a dead connection. A watch without bookmarks on a quiet resource can legitimately be
/// silent for its whole `timeoutSeconds`; the reflector always asks for bookmarks, and re-watching after a false
/// alarm costs one request, not a relist.
pub const DEFAULT_WATCH_IDLE_LIMIT: Duration = Duration::from_secs(180);

/// Default limit on a response body read into memory (not streamed): 512 MiB.
///
/// Streaming calls ([`Api::list_each`](super::Api::list_each), [`Api::watch`](super::Api::watch)) have no total
/// limit; only single objects are bounded there: by this limit when it is smaller than the decoder's
/// [`DEFAULT_MAX_OBJECT_SIZE`](crate::watch::DEFAULT_MAX_OBJECT_SIZE) (64 MiB).
pub const DEFAULT_MAX_RESPONSE_SIZE: usize = 512 << 20;

/// Where a piece of configuration came from: the file (when there is one) and the field, as written in the
/// kubeconfig (`users[alice].client-key-data`) or as the setter that set it (`Config::token`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Origin {
    pub(crate) file: Option<PathBuf>,
    pub(crate) field: String,
}

impl Origin {
    /// A value set through a setter of [`Config`].
    pub(crate) fn setter(name: &str) -> Self {
        Origin {
            file: None,
            field: format!("Config::{name}"),
        }
    }

    pub(crate) fn new(file: Option<&Path>, field: impl Into<String>) -> Self {
        Origin {
            file: file.map(Path::to_path_buf),
            field: field.into(),
        }
    }
}

/// PEM (or other) bytes and where they came from.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Material<T> {
    pub(crate) value: T,
    pub(crate) origin: Origin,
}

/// How requests authenticate at the HTTP level (a client certificate is TLS-level and kept apart).
#[derive(Clone, PartialEq)]
pub(crate) enum Credential {
    /// Anonymous (or client certificate only).
    None,
    /// A fixed bearer token.
    Token(Material<Secret>),
    /// A bearer token read from a file that may be rewritten (bound service-account tokens rotate). `fallback` is a
    /// token written beside the file in the kubeconfig, used when the file cannot be read (client-go does the same).
    TokenFile {
        path: Material<PathBuf>,
        fallback: Option<Secret>,
    },
    /// HTTP basic authentication.
    Basic { username: String, password: Secret },
    /// An exec credential plugin.
    Exec(Box<Material<ExecConfig>>),
}

/// A client certificate and its private key, both PEM.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ClientIdentity {
    pub(crate) cert_pem: Material<Vec<u8>>,
    pub(crate) key_pem: Material<Secret>,
}

/// Impersonation headers (`as`, `as-groups`, `as-uid`, `as-user-extra` in a kubeconfig).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Impersonation {
    pub(crate) user: String,
    pub(crate) uid: Option<String>,
    pub(crate) groups: Vec<String>,
    pub(crate) extra: Vec<(String, Vec<String>)>,
}

/// Which proxy requests go through.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum ProxySetting {
    /// `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY`, as Go's `http.ProxyFromEnvironment` reads them (client-go's
    /// default). Loopback hosts never go through a proxy.
    FromEnvironment,
    /// No proxy at all.
    Disabled,
    /// This proxy (`http://`, `https://`, `socks5://`).
    Url(Material<String>),
}

/// Timeouts of a client. The defaults copy client-go where it has an equivalent (see each constant).
///
/// ```
/// use std::time::Duration;
/// use kube_informer::client::Timeouts;
///
/// let t = Timeouts::default();
/// assert_eq!(t.connect, Duration::from_secs(30));
/// assert_eq!(t.request, None); // client-go's rest.Config.Timeout is 0: no overall limit
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing a connection: DNS, TCP, proxy and TLS handshakes together
    /// ([`DEFAULT_CONNECT_TIMEOUT`], 30 s).
    pub connect: Duration,
    /// The longest a non-watch response may stay silent between two reads ([`DEFAULT_READ_TIMEOUT`], 90 s);
    /// `None` waits forever.
    pub read: Option<Duration>,
    /// Overall limit on one non-watch request, body included; `None` (the default, as in client-go) means none.
    pub request: Option<Duration>,
    /// The longest a watch may stay silent before it ends with [`Error::WatchIdle`]
    /// ([`DEFAULT_WATCH_IDLE_LIMIT`], 180 s).
    pub watch_idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: DEFAULT_CONNECT_TIMEOUT,
            read: Some(DEFAULT_READ_TIMEOUT),
            request: None,
            watch_idle: DEFAULT_WATCH_IDLE_LIMIT,
        }
    }
}

/// Connection settings for one API server.
///
/// Build one by hand:
///
/// ```
/// use std::time::Duration;
/// use kube_informer::client::Config;
///
/// let config = Config::new("https://10.0.0.1:6443")
///     .token("my-token")
///     .default_namespace("prod")
///     .connect_timeout(Duration::from_secs(5));
/// assert_eq!(config.cluster_url(), "https://10.0.0.1:6443");
/// assert_eq!(config.namespace(), "prod");
/// // Debug output never shows credentials.
/// assert!(!format!("{config:?}").contains("my-token"));
/// ```
///
/// or load it: [`Config::infer`] (kubeconfig, else in-cluster), [`Config::from_kubeconfig`],
/// [`Config::from_kubeconfig_file`], [`Config::incluster`].
#[derive(Clone)]
pub struct Config {
    /// `scheme://host[:port][/path-prefix]`, without a trailing slash.
    pub(crate) cluster_url: Material<String>,
    /// Namespace used by `Api::default_namespaced` (the context's namespace, else `default`).
    pub(crate) namespace: String,
    /// The kubeconfig context this came from, for error messages.
    pub(crate) context: Option<String>,
    /// PEM bundle of trusted CAs; `None` = the Mozilla roots (webpki-roots).
    pub(crate) ca_pem: Option<Material<Vec<u8>>>,
    /// Skip server certificate verification (explicit opt-in only).
    pub(crate) insecure: Option<Origin>,
    /// Name to verify the server certificate against instead of the URL's host (`tls-server-name`).
    pub(crate) tls_server_name: Option<Material<String>>,
    pub(crate) client_identity: Option<ClientIdentity>,
    pub(crate) credential: Credential,
    pub(crate) impersonation: Option<Impersonation>,
    pub(crate) proxy: ProxySetting,
    pub(crate) timeouts: Timeouts,
    pub(crate) max_response_size: usize,
    /// `None`: no client-side rate limit.
    pub(crate) rate_limit: Option<RateLimit>,
}

impl Config {
    /// A configuration for the API server at `cluster_url` (`https://host:port`, optionally with a path prefix),
    /// anonymous, trusting the Mozilla root certificates, namespace `default`, default timeouts, client-go's default
    /// rate limit ([`RateLimit::default`]: 5 requests per second, bursts of 10).
    ///
    /// The URL is checked by [`Client::new`](super::Client::new); a URL without a scheme gets `https://`, as
    /// client-go does.
    pub fn new(cluster_url: impl Into<String>) -> Config {
        Config {
            cluster_url: Material {
                value: cluster_url.into(),
                origin: Origin::setter("new"),
            },
            namespace: "default".into(),
            context: None,
            ca_pem: None,
            insecure: None,
            tls_server_name: None,
            client_identity: None,
            credential: Credential::None,
            impersonation: None,
            proxy: ProxySetting::FromEnvironment,
            timeouts: Timeouts::default(),
            max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
            rate_limit: Some(RateLimit::default()),
        }
    }

    /// The best configuration available, as kubectl and client-go find it:
    ///
    /// 1. `KUBECONFIG` when set (a `:`-separated list — `;` on Windows — merged as kubectl merges it), else
    ///    `~/.kube/config` when it exists, using its current context;
    /// 2. otherwise, or when those files hold no configuration at all, the in-cluster service account
    ///    ([`Config::incluster`]).
    pub fn infer() -> Result<Config> {
        match Kubeconfig::load_default()? {
            Some(kc) if !kc.is_empty() => kc.to_config(None),
            _ => {
                if super::incluster::is_available() {
                    return Config::incluster();
                }
                Err(Error::config(ConfigError::new(format!(
                    "no configuration found: {}, and this is not a pod (KUBERNETES_SERVICE_HOST is unset)",
                    Kubeconfig::describe_default_sources()
                ))))
            }
        }
    }

    /// The configuration of `context` (or the current context when `None`) from the default kubeconfig:
    /// `KUBECONFIG` (merged) or `~/.kube/config`.
    pub fn from_kubeconfig(context: Option<&str>) -> Result<Config> {
        match Kubeconfig::load_default()? {
            Some(kc) if !kc.is_empty() => kc.to_config(context),
            _ => Err(Error::config(ConfigError::new(format!(
                "no kubeconfig: {}",
                Kubeconfig::describe_default_sources()
            )))),
        }
    }

    /// The configuration of `context` (or the file's current context when `None`) from one kubeconfig file.
    pub fn from_kubeconfig_file(path: impl AsRef<Path>, context: Option<&str>) -> Result<Config> {
        Kubeconfig::read(path.as_ref())?.to_config(context)
    }

    /// The configuration of a pod's service account: `KUBERNETES_SERVICE_HOST` / `KUBERNETES_SERVICE_PORT`, the
    /// (rotating) token, CA and namespace under `/var/run/secrets/kubernetes.io/serviceaccount/`.
    pub fn incluster() -> Result<Config> {
        super::incluster::InCluster::default().load()
    }

    /// The in-cluster configuration with explicit parts: the service host and port (`KUBERNETES_SERVICE_HOST` /
    /// `_PORT` in a pod) and the folder holding `token`, `ca.crt` and `namespace` — for tests, or for a service
    /// account mounted elsewhere.
    pub fn incluster_from(host: &str, port: &str, service_account_dir: impl Into<PathBuf>) -> Result<Config> {
        super::incluster::InCluster {
            host: Some(host.to_owned()),
            port: Some(port.to_owned()),
            dir: service_account_dir.into(),
        }
        .load()
    }

    // ---- setters -------------------------------------------------------------------------------------------------

    /// Authenticates with a fixed bearer token.
    #[must_use]
    pub fn token(mut self, token: impl Into<Secret>) -> Self {
        self.credential = Credential::Token(Material {
            value: token.into(),
            origin: Origin::setter("token"),
        });
        self
    }

    /// Authenticates with the bearer token in `path`, re-read when the file changes (checked at most once a
    /// second) and after a 401 — bound service-account tokens rotate.
    #[must_use]
    pub fn token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.credential = Credential::TokenFile {
            path: Material {
                value: path.into(),
                origin: Origin::setter("token_file"),
            },
            fallback: None,
        };
        self
    }

    /// Authenticates with HTTP basic authentication.
    #[must_use]
    pub fn basic_auth(mut self, username: impl Into<String>, password: impl Into<Secret>) -> Self {
        self.credential = Credential::Basic {
            username: username.into(),
            password: password.into(),
        };
        self
    }

    /// Authenticates through an exec credential plugin (as EKS's `aws eks get-token` or GKE's
    /// `gke-gcloud-auth-plugin`).
    #[must_use]
    pub fn exec(mut self, exec: ExecConfig) -> Self {
        self.credential = Credential::Exec(Box::new(Material {
            value: exec,
            origin: Origin::setter("exec"),
        }));
        self
    }

    /// Trusts the certificate authorities in this PEM bundle (instead of the Mozilla roots).
    #[must_use]
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(Material {
            value: pem.into(),
            origin: Origin::setter("ca_pem"),
        });
        self
    }

    /// Presents this client certificate (PEM, optionally followed by intermediates) and private key (PEM: PKCS#1,
    /// SEC1 or PKCS#8; RSA, ECDSA or Ed25519). [`Client::new`](super::Client::new) checks that they match.
    #[must_use]
    pub fn client_cert_pem(mut self, cert_pem: impl Into<Vec<u8>>, key_pem: impl Into<Secret>) -> Self {
        self.client_identity = Some(ClientIdentity {
            cert_pem: Material {
                value: cert_pem.into(),
                origin: Origin::setter("client_cert_pem"),
            },
            key_pem: Material {
                value: key_pem.into(),
                origin: Origin::setter("client_cert_pem"),
            },
        });
        self
    }

    /// Skips verification of the server's certificate. Anyone on the network path can then impersonate the API
    /// server and read every credential sent to it; the client logs a warning when built.
    #[must_use]
    pub fn insecure_skip_tls_verify(mut self, insecure: bool) -> Self {
        self.insecure = insecure.then(|| Origin::setter("insecure_skip_tls_verify"));
        self
    }

    /// Verifies the server certificate against `name` instead of the URL's host (`tls-server-name`).
    #[must_use]
    pub fn tls_server_name(mut self, name: impl Into<String>) -> Self {
        self.tls_server_name = Some(Material {
            value: name.into(),
            origin: Origin::setter("tls_server_name"),
        });
        self
    }

    /// Sets the namespace used by [`Api::default_namespaced`](super::Api::default_namespaced).
    #[must_use]
    pub fn default_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Sends requests through this proxy (`http://`, `https://` or `socks5://` URL), or through none with `None`.
    /// By default the `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` environment variables decide, as in client-go.
    #[must_use]
    pub fn proxy(mut self, proxy_url: Option<&str>) -> Self {
        self.proxy = match proxy_url {
            Some(url) => ProxySetting::Url(Material {
                value: url.to_owned(),
                origin: Origin::setter("proxy"),
            }),
            None => ProxySetting::Disabled,
        };
        self
    }

    /// Sets all timeouts at once.
    #[must_use]
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// Sets the connect timeout ([`Timeouts::connect`]).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.connect = timeout;
        self
    }

    /// Sets the per-read timeout of non-watch requests ([`Timeouts::read`]).
    #[must_use]
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeouts.read = timeout;
        self
    }

    /// Sets the overall timeout of non-watch requests ([`Timeouts::request`]).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeouts.request = timeout;
        self
    }

    /// Sets the watch idle limit ([`Timeouts::watch_idle`]).
    #[must_use]
    pub fn watch_idle_limit(mut self, limit: Duration) -> Self {
        self.timeouts.watch_idle = limit;
        self
    }

    /// Sets the largest response body read into memory ([`DEFAULT_MAX_RESPONSE_SIZE`]); in a streamed list or
    /// watch, the largest single object (at most 64 MiB whatever this says).
    #[must_use]
    pub fn max_response_size(mut self, bytes: usize) -> Self {
        self.max_response_size = bytes;
        self
    }

    /// Limits the requests of the client (its clones and isolated copies together) with this token bucket —
    /// client-go's `rest.Config` `QPS` and `Burst`. The default is client-go's: [`RateLimit::default`], 5 requests
    /// per second with bursts of 10 (controller-runtime raises it to 20 and 30). See [`RateLimit`] for what counts.
    #[must_use]
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = Some(limit);
        self
    }

    /// Sends requests without a client-side rate limit (client-go's negative `QPS`): for a client whose server
    /// protects itself with priority and fairness, or for tests. A loop that never settles then sends as fast as
    /// the network allows.
    #[must_use]
    pub fn no_rate_limit(mut self) -> Self {
        self.rate_limit = None;
        self
    }

    /// Acts as another user (`Impersonate-User`, `Impersonate-Group` headers); needs the `impersonate` verb.
    #[must_use]
    pub fn impersonate(mut self, user: impl Into<String>, groups: Vec<String>) -> Self {
        self.impersonation = Some(Impersonation {
            user: user.into(),
            groups,
            ..Default::default()
        });
        self
    }

    // ---- getters -------------------------------------------------------------------------------------------------
    // Only where the configuration points; what the setters above set shows in `{:?}` (credentials hidden).

    /// The API server URL.
    pub fn cluster_url(&self) -> &str {
        &self.cluster_url.value
    }

    /// The default namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The kubeconfig context this configuration came from.
    pub fn context(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// True when server certificate verification is off.
    pub fn is_insecure(&self) -> bool {
        self.insecure.is_some()
    }

    // ---- checks --------------------------------------------------------------------------------------------------

    /// A configuration error located at `origin`, within this config's context.
    pub(crate) fn error_at(&self, origin: &Origin, message: impl Into<String>) -> Error {
        let mut e = ConfigError::new(message).field(origin.field.clone());
        e.file = origin.file.clone();
        e.context = self.context.clone();
        Error::config(e)
    }

    /// Checks everything that can be checked without the network: the URL, the TLS material (certificates parse,
    /// the key matches the certificate), the exec plugin's settings, the token file is readable.
    pub(crate) fn validate(&self) -> Result<()> {
        self.parsed_url()?;
        if let (Some(ca), Some(insecure)) = (&self.ca_pem, &self.insecure) {
            return Err(self.error_at(
                insecure,
                format!(
                    "insecure-skip-tls-verify is set together with a certificate authority ({}); a certificate \
                     authority makes no sense without verification — remove one of them",
                    ca.origin.field
                ),
            ));
        }
        super::tls::check_material(self)?;
        if let Credential::Exec(exec) = &self.credential {
            exec.value.check().map_err(|m| self.error_at(&exec.origin, m))?;
            if exec.value.interactive_mode == InteractiveMode::Always {
                return Err(self.error_at(
                    &exec.origin,
                    format!(
                        "exec plugin {:?} has interactiveMode: Always, but kube-informer never has a terminal to \
                         offer it; use IfAvailable or Never, or log in beforehand",
                        exec.value.command
                    ),
                ));
            }
        }
        if let Credential::TokenFile { path, fallback: None } = &self.credential {
            std::fs::metadata(&path.value).map_err(|e| {
                self.error_at(
                    &path.origin,
                    format!("cannot read token file {}: {e}", path.value.display()),
                )
            })?;
        }
        if let Some(problem) = self.rate_limit.as_ref().and_then(RateLimit::problem) {
            return Err(Error::config(ConfigError::new(problem).field("Config::rate_limit")));
        }
        if let ProxySetting::Url(url) = &self.proxy {
            ureq::Proxy::new(&url.value).map_err(|_| {
                self.error_at(
                    &url.origin,
                    "not a usable proxy URL (expected http://, https:// or socks5://host:port)",
                )
            })?;
        }
        Ok(())
    }

    /// The server URL, checked: scheme `http` or `https` (added when missing), a host, no query.
    pub(crate) fn parsed_url(&self) -> Result<ureq::http::Uri> {
        let raw = self.cluster_url.value.trim();
        let bad = |m: &str| self.error_at(&self.cluster_url.origin, m);
        if raw.is_empty() {
            return Err(bad("no server URL"));
        }
        let with_scheme = if raw.contains("://") {
            raw.to_owned()
        } else {
            format!("https://{raw}")
        };
        let uri: ureq::http::Uri = with_scheme
            .parse()
            .map_err(|e| bad(&format!("{raw:?} is not a valid URL: {e}")))?;
        match uri.scheme_str() {
            Some("https") | Some("http") => {}
            other => {
                return Err(bad(&format!(
                    "{raw:?} has scheme {:?}; the API server URL must start with https:// (or http://)",
                    other.unwrap_or("")
                )));
            }
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(bad(&format!("{raw:?} has no host")));
        }
        if uri.query().is_some() {
            return Err(bad(&format!(
                "{raw:?} has a query string; the server URL cannot have one"
            )));
        }
        Ok(uri)
    }
}

/// Debug shows where the configuration points and which kind of credential it uses — never the credential.
impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let credential = match &self.credential {
            Credential::None => "none".to_owned(),
            Credential::Token(_) => "bearer token".to_owned(),
            Credential::TokenFile { path, .. } => format!("token file {}", path.value.display()),
            Credential::Basic { username, .. } => format!("basic auth as {username:?}"),
            Credential::Exec(e) => format!("exec plugin {:?}", e.value.command),
        };
        let proxy = match &self.proxy {
            ProxySetting::FromEnvironment => "from environment".to_owned(),
            ProxySetting::Disabled => "none".to_owned(),
            ProxySetting::Url(u) => format!("{} (credentials hidden)", redact_url_userinfo(&u.value)),
        };
        f.debug_struct("Config")
            .field("cluster_url", &redact_url_userinfo(&self.cluster_url.value))
            .field("namespace", &self.namespace)
            .field("context", &self.context)
            .field("ca", &self.ca_pem.as_ref().map(|c| c.origin.field.as_str()))
            .field("insecure_skip_tls_verify", &self.insecure.is_some())
            .field("tls_server_name", &self.tls_server_name.as_ref().map(|n| &n.value))
            .field(
                "client_certificate",
                &self.client_identity.as_ref().map(|_| "<key redacted>"),
            )
            .field("credential", &format_args!("{credential}"))
            .field("impersonate", &self.impersonation.as_ref().map(|i| &i.user))
            .field("proxy", &format_args!("{proxy}"))
            .field("timeouts", &self.timeouts)
            .field("max_response_size", &self.max_response_size)
            .field("rate_limit", &self.rate_limit)
            .finish()
    }
}

/// Replaces `user:password@` in a URL by `***@`.
pub(crate) fn redact_url_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_secrets() {
        let c = Config::new("https://u:pw-in-url@example.com")
            .basic_auth("alice", "s3cret-password")
            .client_cert_pem(b"CERT".to_vec(), "-----BEGIN PRIVATE KEY-----key-material")
            .proxy(Some("http://proxyuser:proxy-pass@proxy:3128"));
        let dbg = format!("{c:?}");
        for secret in ["s3cret-password", "key-material", "proxy-pass", "pw-in-url"] {
            assert!(!dbg.contains(secret), "{secret} leaked in {dbg}");
        }
        assert!(dbg.contains("alice") && dbg.contains("example.com"), "{dbg}");
    }

    #[test]
    fn checks_the_server_url() {
        let ok = Config::new("10.0.0.1:6443").parsed_url().unwrap();
        assert_eq!(ok.to_string(), "https://10.0.0.1:6443/");
        for (url, needle) in [
            ("", "no server URL"),
            ("ftp://x", "scheme \"ftp\""),
            ("https://", "not a valid URL"),
            ("https://h/?a=b", "query string"),
        ] {
            let err = Config::new(url).parsed_url().unwrap_err().to_string();
            assert!(err.contains(needle), "{url}: {err}");
            assert!(err.contains("Config::new"), "{err}");
        }
    }

    #[test]
    fn redacts_userinfo() {
        assert_eq!(redact_url_userinfo("http://a:b@h:1/p@q"), "http://***@h:1/p@q");
        assert_eq!(redact_url_userinfo("http://h:1"), "http://h:1");
        assert_eq!(redact_url_userinfo("nourl"), "nourl");
    }

    #[test]
    fn refuses_insecure_with_a_ca() {
        let err = Config::new("https://h")
            .ca_pem(b"x".to_vec())
            .insecure_skip_tls_verify(true)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("insecure-skip-tls-verify is set together"), "{err}");
    }
}
