//! Exec credential plugins (`client.authentication.k8s.io/v1` and `v1beta1` `ExecCredential`), as client-go's
//! `plugin/pkg/client/auth/exec` runs them.
//!
//! Protocol: the plugin is started with the configured arguments and environment plus `KUBERNETES_EXEC_INFO` (an
//! `ExecCredential` whose `spec` says whether the plugin may interact — never, here — and, with
//! `provideClusterInfo`, describes the cluster); it prints an `ExecCredential` whose `status` holds a bearer token
//! and/or a PEM client certificate and key, optionally with an `expirationTimestamp`.
//!
//! The credential is cached until that timestamp (forever when there is none) and dropped after a 401 answered to a
//! request that used it. One plugin run at a time serves every waiting request (single flight), and each waiting
//! request gives up at once when its client is aborted (an informer's stop aborts its client).
//!
//! A run is bounded: a plugin still running after [`ExecConfig::timeout`] ([`DEFAULT_EXEC_TIMEOUT`], one minute, by
//! default), or once every request waiting for it gave up, is killed with every process it started, and reaped. What
//! the plugin prints on standard error goes to this process's standard error, as client-go does — never into an
//! error's text or a log line, since plugins print tokens and keys there when they fail.

use std::fmt;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{Receiver, Sender, select};
use log::debug;
use parking_lot::Mutex;
use rustls::sign::CertifiedKey;
use serde::Deserialize;

use super::abort::{CancelSignal, Never};
use super::exec_process::{self, MAX_STDOUT, RunEnd};
use super::secret::Secret;
use crate::thread_name::os_thread_name;
use crate::{Error, Result};

/// How long an exec plugin may run before it is killed, unless [`ExecConfig::timeout`] says otherwise: one minute.
///
/// client-go sets no limit, so a plugin that hangs (waiting on a network that is down, on a lock, on a login
/// prompt nobody sees) stalls every request that needs a credential, for good. Cloud plugins (`aws eks get-token`,
/// `gke-gcloud-auth-plugin`, `kubelogin` with a cached login) take a few seconds at most; raise the limit for a
/// plugin that waits for a person, such as a browser login.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// The `apiVersion`s of `ExecCredential` this crate speaks.
pub const EXEC_API_VERSIONS: [&str; 2] = [
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
];

/// Whether an exec plugin may interact with a person (`interactiveMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InteractiveMode {
    /// Never: the plugin must not read standard input.
    #[default]
    Never,
    /// Only when a terminal is available. A library never has one, so this behaves like `Never`.
    IfAvailable,
    /// The plugin needs a terminal. Refused: kube-informer never has one to offer.
    Always,
}

impl InteractiveMode {
    /// Parses the kubeconfig value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Never" => Some(InteractiveMode::Never),
            "IfAvailable" => Some(InteractiveMode::IfAvailable),
            "Always" => Some(InteractiveMode::Always),
            _ => None,
        }
    }
}

/// How to run an exec credential plugin (a kubeconfig `users[].user.exec`).
///
/// ```
/// use kube_informer::client::{Config, ExecConfig};
///
/// let exec = ExecConfig::new("aws")
///     .args(["eks", "get-token", "--cluster-name", "prod"])
///     .env("AWS_PROFILE", "ops");
/// let config = Config::new("https://ABC.gr7.eu-west-1.eks.amazonaws.com").exec(exec);
/// assert!(format!("{config:?}").contains("exec plugin \"aws\""));
/// ```
#[derive(Clone, PartialEq)]
pub struct ExecConfig {
    /// The program; looked up in `PATH` unless it contains a path separator.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// `client.authentication.k8s.io/v1` (the default) or `client.authentication.k8s.io/v1beta1`.
    pub api_version: String,
    /// Printed when the program is not found (how to install it).
    pub install_hint: Option<String>,
    /// Whether the plugin may interact; we never offer a terminal.
    pub interactive_mode: InteractiveMode,
    /// Pass the cluster's server, CA and `config` extension in `KUBERNETES_EXEC_INFO`.
    pub provide_cluster_info: bool,
    /// The cluster's `client.authentication.k8s.io/exec` extension, passed as `spec.cluster.config`.
    pub cluster_config: Option<serde_json::Value>,
    /// How long one run may take before the plugin is killed ([`DEFAULT_EXEC_TIMEOUT`]; `Duration::MAX`: no limit).
    /// Not a kubeconfig field: set it on the [`Config`](super::Config)'s exec plugin.
    pub timeout: Duration,
}

impl ExecConfig {
    /// A plugin run as `command`, API version v1, never interactive.
    pub fn new(command: impl Into<String>) -> Self {
        ExecConfig {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            api_version: EXEC_API_VERSIONS[0].to_owned(),
            install_hint: None,
            interactive_mode: InteractiveMode::Never,
            provide_cluster_info: false,
            cluster_config: None,
            timeout: DEFAULT_EXEC_TIMEOUT,
        }
    }

    /// Sets how long one run may take before the plugin (and every process it started) is killed; the requests
    /// waiting for it then fail with [`Error::Auth`]. `Duration::MAX` means no limit.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::client::{DEFAULT_EXEC_TIMEOUT, ExecConfig};
    ///
    /// assert_eq!(ExecConfig::new("kubelogin").timeout, DEFAULT_EXEC_TIMEOUT);
    /// // A login in a browser may take a person a while.
    /// let exec = ExecConfig::new("kubelogin").timeout(Duration::from_secs(300));
    /// assert_eq!(exec.timeout, Duration::from_secs(300));
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the arguments.
    #[must_use]
    pub fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Adds an environment variable.
    #[must_use]
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Sets the `ExecCredential` API version.
    #[must_use]
    pub fn api_version(mut self, api_version: impl Into<String>) -> Self {
        self.api_version = api_version.into();
        self
    }

    /// Asks for cluster information in `KUBERNETES_EXEC_INFO`.
    #[must_use]
    pub fn provide_cluster_info(mut self, provide: bool) -> Self {
        self.provide_cluster_info = provide;
        self
    }

    /// What is wrong with this configuration, if anything.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.command.trim().is_empty() {
            return Err("exec plugin has no command".into());
        }
        if !EXEC_API_VERSIONS.contains(&self.api_version.as_str()) {
            return Err(format!(
                "exec plugin apiVersion {:?} is not supported (use {} or {})",
                self.api_version, EXEC_API_VERSIONS[0], EXEC_API_VERSIONS[1]
            ));
        }
        Ok(())
    }
}

/// Arguments and environment values may carry secrets (some plugins take a key as an argument): Debug shows the
/// command and the names only.
impl fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecConfig")
            .field("command", &self.command)
            .field("args", &format_args!("[{} redacted]", self.args.len()))
            .field("env", &self.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>())
            .field("api_version", &self.api_version)
            .field("interactive_mode", &self.interactive_mode)
            .field("provide_cluster_info", &self.provide_cluster_info)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A credential issued by a plugin.
pub(crate) struct ExecCredential {
    pub(crate) token: Option<Secret>,
    pub(crate) identity: Option<Arc<CertifiedKey>>,
    pub(crate) expires: Option<SystemTime>,
    /// Which run issued it (to drop it after a 401 only if no newer one replaced it).
    pub(crate) generation: u64,
}

impl ExecCredential {
    fn is_expired(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|t| now >= t)
    }
}

impl fmt::Debug for ExecCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecCredential")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("client_certificate", &self.identity.as_ref().map(|_| "<redacted>"))
            .field("expires", &self.expires)
            .field("generation", &self.generation)
            .finish()
    }
}

type Waiter = Sender<Result<Arc<ExecCredential>, String>>;

#[derive(Default)]
struct ExecState {
    /// The last credential issued; replaced by each successful run, cleared after a 401 that used it.
    current: Option<Arc<ExecCredential>>,
    /// `Some` while a run is in progress and someone waits for it. Invariant: its `waiters` are empty only after
    /// requests whose deadline passed stopped waiting (the run goes on, its credential is cached for the next ones);
    /// otherwise the last one to give up (aborted) removes the run, which tells its runner to kill the plugin.
    running: Option<Run>,
    /// Number of successful runs so far.
    generation: u64,
    /// Number of runs started so far (each run's id).
    runs: u64,
}

/// A plugin run in progress, as the requests waiting for it see it.
struct Run {
    /// Tells a finishing runner whether the run it publishes to is still its own.
    id: u64,
    /// The requests waiting for its result.
    waiters: Vec<Waiter>,
    /// Dropped with the run when its last waiter gives up: the runner then kills the plugin.
    _abandon: Sender<Never>,
    /// Disconnected once the plugin's process has been reaped.
    reaped: Receiver<Never>,
}

/// Runs one exec plugin and caches its credential; shared by every clone and isolated copy of a client.
pub(crate) struct ExecAuth {
    config: ExecConfig,
    /// `KUBERNETES_EXEC_INFO`, computed once.
    exec_info: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
    state: Mutex<ExecState>,
}

impl fmt::Debug for ExecAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecAuth").field("config", &self.config).finish()
    }
}

/// What the plugin is told about the cluster (`spec.cluster`), when it asked.
#[derive(Default)]
pub(crate) struct ClusterInfo {
    pub(crate) server: String,
    pub(crate) tls_server_name: Option<String>,
    pub(crate) insecure_skip_tls_verify: bool,
    pub(crate) certificate_authority_data: Option<Vec<u8>>,
    pub(crate) proxy_url: Option<String>,
}

impl ExecAuth {
    pub(crate) fn new(
        config: ExecConfig,
        cluster: &ClusterInfo,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Arc<ExecAuth> {
        let exec_info = exec_info_json(&config, cluster);
        Arc::new(ExecAuth {
            config,
            exec_info,
            provider,
            state: Mutex::new(ExecState::default()),
        })
    }

    /// The current credential: cached when still valid, else from a plugin run (shared with concurrent callers).
    /// Returns `Error::Stopped` as soon as `cancel` fires; at `deadline`, stops waiting with an error and leaves the
    /// run going (its credential is cached for the requests that follow).
    pub(crate) fn credential(
        self: &Arc<Self>,
        cancel: &CancelSignal,
        deadline: Option<Instant>,
    ) -> Result<Arc<ExecCredential>> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let run = {
            let mut st = self.state.lock();
            if let Some(c) = st.current.as_ref().filter(|c| !c.is_expired(SystemTime::now())) {
                return Ok(Arc::clone(c));
            }
            match &mut st.running {
                Some(run) => {
                    run.waiters.push(tx.clone());
                    run.id
                }
                None if cancel.is_cancelled() => return Err(Error::Stopped),
                None => {
                    st.runs += 1;
                    let id = st.runs;
                    let (abandon, abandoned) = crossbeam_channel::bounded::<Never>(0);
                    let (reaped_tx, reaped) = crossbeam_channel::bounded::<Never>(0);
                    let me = Arc::clone(self);
                    let spawned = std::thread::Builder::new()
                        .name(os_thread_name("exec", &self.config.command))
                        .spawn(move || me.run_and_publish(id, &abandoned, reaped_tx));
                    if let Err(e) = spawned {
                        return Err(Error::Auth(format!("cannot start a thread for the exec plugin: {e}")));
                    }
                    st.running = Some(Run {
                        id,
                        waiters: vec![tx.clone()],
                        _abandon: abandon,
                        reaped,
                    });
                    id
                }
            }
        };
        if cancel.is_cancelled() {
            return Err(self.give_up(run, &tx));
        }
        select! {
            recv(rx) -> r => match r {
                Ok(Ok(cred)) => Ok(cred),
                Ok(Err(message)) => Err(Error::Auth(message)),
                Err(_) => Err(Error::Auth("exec plugin run ended without a result".into())),
            },
            recv(cancel.receiver()) -> _ => Err(self.give_up(run, &tx)),
            recv(deadline.map_or_else(crossbeam_channel::never, crossbeam_channel::at)) -> _ => {
                self.stop_waiting(run, &tx);
                Err(Error::Auth("the exec plugin gave no credential before the request's deadline".into()))
            }
        }
    }

    /// A request waiting for run `id` stops waiting (its deadline passed); the run goes on.
    fn stop_waiting(&self, id: u64, waiter: &Waiter) {
        let mut st = self.state.lock();
        if let Some(run) = st.running.as_mut().filter(|run| run.id == id) {
            run.waiters.retain(|w| !w.same_channel(waiter));
        }
    }

    /// A request waiting for run `id` gives up (its client was aborted). The last one to go ends the run: the plugin
    /// is killed, and this returns once it has been reaped (at most a second: a killed process exits at once).
    fn give_up(&self, id: u64, waiter: &Waiter) -> Error {
        let mut st = self.state.lock();
        let Some(run) = st.running.as_mut().filter(|run| run.id == id) else {
            return Error::Stopped;
        };
        run.waiters.retain(|w| !w.same_channel(waiter));
        if !run.waiters.is_empty() {
            return Error::Stopped;
        }
        let reaped = run.reaped.clone();
        // Dropping the run drops its `_abandon`: the runner kills the plugin. A request coming next starts a new run.
        st.running = None;
        drop(st);
        let _ = reaped.recv_timeout(Duration::from_secs(1));
        Error::Stopped
    }

    /// Forgets the credential of run `generation` (a request using it got a 401), so the next request runs the
    /// plugin again. A newer credential is kept.
    pub(crate) fn invalidate(&self, generation: u64) {
        let mut st = self.state.lock();
        if st.current.as_ref().is_some_and(|c| c.generation == generation) {
            debug!(
                "exec plugin {:?}: credential refused (401); will run the plugin again",
                self.config.command
            );
            st.current = None;
        }
    }

    /// Body of the runner thread of run `id`: run the plugin once, publish the result to every waiter.
    fn run_and_publish(&self, id: u64, abandoned: &Receiver<Never>, reaped: Sender<Never>) {
        // A panic must still release the waiters (and let the next request start a new run).
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_plugin(abandoned, reaped)))
            .unwrap_or_else(|_| Err(format!("running exec plugin {:?} panicked", self.config.command)));
        let mut st = self.state.lock();
        // Nobody waits any more when the run was abandoned (and another may have started since).
        let waiters = match st.running.take_if(|run| run.id == id) {
            Some(run) => run.waiters,
            None => Vec::new(),
        };
        let outcome = match result {
            Ok(mut cred) => {
                st.generation += 1;
                cred.generation = st.generation;
                let cred = Arc::new(cred);
                st.current = Some(Arc::clone(&cred));
                Ok(cred)
            }
            Err(message) => {
                debug!("{message}");
                Err(message)
            }
        };
        drop(st);
        for w in waiters {
            let _ = w.send(outcome.clone());
        }
    }

    /// Runs the plugin (bounded, see [`exec_process`]) and parses its answer. Messages name the plugin and never
    /// include what it printed: the credential is on its standard output, and its standard error goes to ours.
    fn run_plugin(&self, abandoned: &Receiver<Never>, reaped: Sender<Never>) -> Result<ExecCredential, String> {
        let cfg = &self.config;
        let mut cmd = Command::new(&cfg.command);
        cmd.args(&cfg.args)
            .envs(cfg.env.iter().map(|(k, v)| (k, v)))
            .env("KUBERNETES_EXEC_INFO", &self.exec_info);
        debug!("running exec plugin {:?}", cfg.command);
        let end = exec_process::run(cmd, &cfg.command, cfg.timeout, abandoned, reaped).map_err(|e| {
            let mut m = format!("cannot run exec plugin {:?}: {e}", cfg.command);
            if e.kind() == std::io::ErrorKind::NotFound {
                match &cfg.install_hint {
                    Some(hint) => {
                        m.push_str(". ");
                        m.push_str(hint.trim());
                    }
                    None => m.push_str(
                        " (it must be installed and on PATH; see \
                         https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins)",
                    ),
                }
            }
            m
        })?;
        let command = &cfg.command;
        match end {
            RunEnd::Exited(status, stdout) if status.success() => {
                parse_exec_output(command, &cfg.api_version, &stdout, &self.provider)
            }
            RunEnd::Exited(status, _) => Err(format!(
                "exec plugin {command:?} failed ({status}); what it printed on standard error is on this process's \
                 standard error"
            )),
            RunEnd::TimedOut => Err(format!(
                "exec plugin {command:?} did not finish within {:?} (ExecConfig::timeout) and was killed",
                cfg.timeout
            )),
            RunEnd::Abandoned => Err(format!(
                "exec plugin {command:?} was killed: every request waiting for it gave up"
            )),
            RunEnd::TooMuchOutput => Err(format!(
                "exec plugin {command:?} printed more than {MAX_STDOUT} bytes on standard output and was killed"
            )),
        }
    }
}

/// The `KUBERNETES_EXEC_INFO` value: an `ExecCredential` with `spec.interactive` (always false) and, when the
/// plugin asked for it, `spec.cluster`.
fn exec_info_json(config: &ExecConfig, cluster: &ClusterInfo) -> String {
    let mut spec = serde_json::Map::new();
    if config.provide_cluster_info {
        let mut c = serde_json::Map::new();
        c.insert("server".into(), cluster.server.clone().into());
        if let Some(n) = &cluster.tls_server_name {
            c.insert("tls-server-name".into(), n.clone().into());
        }
        if cluster.insecure_skip_tls_verify {
            c.insert("insecure-skip-tls-verify".into(), true.into());
        }
        if let Some(ca) = &cluster.certificate_authority_data {
            c.insert(
                "certificate-authority-data".into(),
                super::secret::base64_encode(ca).into(),
            );
        }
        if let Some(p) = &cluster.proxy_url {
            c.insert("proxy-url".into(), p.clone().into());
        }
        if let Some(extension) = &config.cluster_config {
            c.insert("config".into(), extension.clone());
        }
        spec.insert("cluster".into(), c.into());
    }
    spec.insert("interactive".into(), false.into());
    serde_json::json!({
        "kind": "ExecCredential",
        "apiVersion": config.api_version,
        "spec": spec,
    })
    .to_string()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecOutput {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    status: Option<ExecStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecStatus {
    #[serde(default)]
    token: String,
    #[serde(default)]
    client_certificate_data: String,
    #[serde(default)]
    client_key_data: String,
    expiration_timestamp: Option<String>,
}

/// Parses and checks a plugin's standard output (client-go's checks, in its order).
pub(crate) fn parse_exec_output(
    command: &str,
    api_version: &str,
    stdout: &[u8],
    provider: &rustls::crypto::CryptoProvider,
) -> Result<ExecCredential, String> {
    // serde_json's messages can quote the offending value, which may be the token: report the position only.
    let out: ExecOutput = serde_json::from_slice(stdout).map_err(|e| {
        format!(
            "exec plugin {command:?} printed something that is not an ExecCredential ({:?} error at line {} column {})",
            e.classify(),
            e.line(),
            e.column()
        )
    })?;
    if out.kind != "ExecCredential" {
        return Err(format!(
            "exec plugin {command:?} printed kind {:?}, expected ExecCredential",
            out.kind
        ));
    }
    if out.api_version != api_version {
        return Err(format!(
            "exec plugin {command:?} is configured to use API version {api_version}, plugin returned version {}",
            if out.api_version.is_empty() {
                "(none)"
            } else {
                &out.api_version
            }
        ));
    }
    let status = out
        .status
        .ok_or_else(|| format!("exec plugin {command:?} didn't return a status field"))?;
    if status.token.is_empty() && status.client_certificate_data.is_empty() && status.client_key_data.is_empty() {
        return Err(format!(
            "exec plugin {command:?} didn't return a token or cert/key pair"
        ));
    }
    if status.client_certificate_data.is_empty() != status.client_key_data.is_empty() {
        return Err(format!(
            "exec plugin {command:?} returned only certificate or key, not both"
        ));
    }
    let expires = match status.expiration_timestamp.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(ts) => Some(
            crate::object::time::parse_rfc3339(ts)
                // Not quoted: whatever the plugin printed stays out of messages.
                .ok_or_else(|| {
                    format!("exec plugin {command:?} returned an unreadable expirationTimestamp (not an RFC 3339 time)")
                })?,
        ),
    };
    let identity = if status.client_certificate_data.is_empty() {
        None
    } else {
        let key = Secret::new(status.client_key_data.into_bytes());
        Some(
            super::tls::certified_key(status.client_certificate_data.as_bytes(), &key, provider)
                .map_err(|m| format!("exec plugin {command:?} returned an unusable client certificate: {m}"))?,
        )
    };
    Ok(ExecCredential {
        token: (!status.token.is_empty()).then(|| Secret::from(status.token)),
        identity,
        expires,
        generation: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> rustls::crypto::CryptoProvider {
        rustls::crypto::ring::default_provider()
    }

    const V1: &str = "client.authentication.k8s.io/v1";

    #[test]
    fn parses_a_token_credential() {
        let out = br#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
            "status":{"token":"tok-123","expirationTimestamp":"2030-01-02T03:04:05Z"}}"#;
        let c = parse_exec_output("aws", V1, out, &provider()).unwrap();
        assert_eq!(c.token.unwrap().expose(), b"tok-123");
        assert!(c.expires.is_some() && c.identity.is_none());
    }

    #[test]
    fn follows_client_go_checks() {
        // Cases from client-go's exec_test.go, with our wording.
        for (out, needle) in [
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"t"}}"#,
                "plugin returned version client.authentication.k8s.io/v1beta1",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1"}"#,
                "didn't return a status field",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{}}"#,
                "didn't return a token or cert/key pair",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"clientKeyData":"k"}}"#,
                "only certificate or key",
            ),
            (
                r#"{"kind":"Pod","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t"}}"#,
                "expected ExecCredential",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"soon"}}"#,
                "unreadable expirationTimestamp",
            ),
        ] {
            let err = parse_exec_output("p", V1, out.as_bytes(), &provider()).unwrap_err();
            assert!(err.contains(needle), "{out}: {err}");
        }
    }

    #[test]
    fn malformed_output_never_echoes_the_token() {
        let out = br#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":"super-secret-token"}"#;
        let err = parse_exec_output("p", V1, out, &provider()).unwrap_err();
        assert!(!err.contains("super-secret-token") && err.contains("line 1"), "{err}");
        let err = parse_exec_output("p", V1, b"super-secret-token", &provider()).unwrap_err();
        assert!(!err.contains("super-secret-token"), "{err}");
        // Nor a field the plugin got wrong.
        let out = br#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"super-secret-token"}}"#;
        let err = parse_exec_output("p", V1, out, &provider()).unwrap_err();
        assert!(
            !err.contains("super-secret-token") && err.contains("expirationTimestamp"),
            "{err}"
        );
    }

    #[test]
    fn exec_info_carries_cluster_only_when_asked() {
        let cluster = ClusterInfo {
            server: "https://k".into(),
            certificate_authority_data: Some(b"PEM".to_vec()),
            ..Default::default()
        };
        let plain: serde_json::Value = serde_json::from_str(&exec_info_json(&ExecConfig::new("x"), &cluster)).unwrap();
        assert_eq!(
            plain,
            serde_json::json!({"kind":"ExecCredential","apiVersion":V1,"spec":{"interactive":false}})
        );
        let mut cfg = ExecConfig::new("x").provide_cluster_info(true);
        cfg.cluster_config = Some(serde_json::json!({"audience": "a"}));
        let full: serde_json::Value = serde_json::from_str(&exec_info_json(&cfg, &cluster)).unwrap();
        assert_eq!(
            full["spec"]["cluster"],
            serde_json::json!({"server":"https://k","certificate-authority-data":"UEVN","config":{"audience":"a"}})
        );
    }

    #[test]
    fn debug_hides_args_and_env_values() {
        let cfg = ExecConfig::new("plugin")
            .args(["--key", "arg-secret"])
            .env("TOKEN", "env-secret");
        let dbg = format!("{cfg:?}");
        assert!(
            !dbg.contains("arg-secret") && !dbg.contains("env-secret") && dbg.contains("TOKEN"),
            "{dbg}"
        );
    }
}
