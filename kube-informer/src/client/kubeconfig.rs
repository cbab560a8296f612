//! kubeconfig files: reading (YAML or JSON), merging several as kubectl does, and resolving a context into a
//! [`Config`].
//!
//! kubectl's rules (client-go `clientcmd/loader.go`), which this module keeps:
//!
//! * `KUBECONFIG` is a list of paths (`:`-separated, `;` on Windows); files that do not exist are skipped, and
//!   `~/.kube/config` is not read when `KUBECONFIG` is set;
//! * the first file to define a cluster, user or context name wins (later definitions of the same name are ignored
//!   as a whole); the first file with a non-empty `current-context` sets it;
//! * relative paths (`certificate-authority`, `client-certificate`, `client-key`, `tokenFile`, and an exec `command`
//!   containing a path separator) are relative to the folder of the file that holds them;
//! * `*-data` fields win over their file counterparts; a token wins over an exec plugin.
//!
//! Every error names the file, the context and the field at fault; values of secret fields never appear in errors.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};

use super::config::{ClientIdentity, Config, Credential, Impersonation, Material, Origin, ProxySetting};
use super::exec::{DEFAULT_EXEC_TIMEOUT, EXEC_API_VERSIONS, ExecConfig, InteractiveMode};
use super::secret::{Secret, base64_decode};
use crate::{ConfigError, Error, Result};

/// The extension name under which a cluster passes configuration to exec plugins.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// One or more kubeconfig files, merged.
///
/// ```
/// use kube_informer::client::Kubeconfig;
///
/// let kc = Kubeconfig::parse(r#"
/// apiVersion: v1
/// kind: Config
/// current-context: kind-kind
/// clusters:
/// - name: kind-kind
///   cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
/// users:
/// - name: kind-kind
///   user: {token: abc}
/// contexts:
/// - name: kind-kind
///   context: {cluster: kind-kind, user: kind-kind, namespace: dev}
/// "#, None).unwrap();
/// assert_eq!(kc.current_context(), Some("kind-kind"));
/// let config = kc.to_config(None).unwrap();
/// assert_eq!((config.cluster_url(), config.namespace()), ("https://127.0.0.1:6443", "dev"));
/// ```
#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Kubeconfig {
    #[serde(default)]
    current_context: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    clusters: Vec<NamedCluster>,
    #[serde(default, deserialize_with = "nullable")]
    users: Vec<NamedUser>,
    #[serde(default, deserialize_with = "nullable")]
    contexts: Vec<NamedContext>,
    /// The files read, in order.
    #[serde(skip)]
    files: Vec<PathBuf>,
}

/// `null` reads as the default (kubectl writes `clusters: null`).
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Clone, Default, Deserialize)]
struct NamedCluster {
    #[serde(default)]
    name: String,
    #[serde(default)]
    cluster: Option<ClusterEntry>,
    #[serde(skip)]
    file: Option<PathBuf>,
}

#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ClusterEntry {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    tls_server_name: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: Option<bool>,
    #[serde(default)]
    certificate_authority: Option<String>,
    #[serde(default)]
    certificate_authority_data: Option<String>,
    #[serde(default)]
    proxy_url: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    extensions: Vec<NamedExtension>,
}

#[derive(Clone, Default, Deserialize)]
struct NamedExtension {
    #[serde(default)]
    name: String,
    #[serde(default)]
    extension: Option<serde_json::Value>,
}

#[derive(Clone, Default, Deserialize)]
struct NamedUser {
    #[serde(default)]
    name: String,
    #[serde(default)]
    user: Option<UserEntry>,
    #[serde(skip)]
    file: Option<PathBuf>,
}

#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct UserEntry {
    #[serde(default)]
    client_certificate: Option<String>,
    #[serde(default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    client_key: Option<String>,
    #[serde(default)]
    client_key_data: Option<Secret>,
    #[serde(default)]
    token: Option<Secret>,
    #[serde(default, rename = "tokenFile")]
    token_file: Option<String>,
    #[serde(default, rename = "as")]
    impersonate: Option<String>,
    #[serde(default, rename = "as-uid")]
    impersonate_uid: Option<String>,
    #[serde(default, rename = "as-groups", deserialize_with = "nullable")]
    impersonate_groups: Vec<String>,
    #[serde(default, rename = "as-user-extra", deserialize_with = "nullable")]
    impersonate_extra: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<Secret>,
    #[serde(default)]
    auth_provider: Option<AuthProviderEntry>,
    #[serde(default)]
    exec: Option<ExecEntry>,
}

#[derive(Clone, Default, Deserialize)]
struct AuthProviderEntry {
    #[serde(default)]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    config: BTreeMap<String, Secret>,
}

#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecEntry {
    #[serde(default)]
    command: String,
    #[serde(default, deserialize_with = "nullable")]
    args: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    env: Vec<ExecEnv>,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    install_hint: Option<String>,
    #[serde(default)]
    provide_cluster_info: bool,
    #[serde(default)]
    interactive_mode: Option<String>,
}

#[derive(Clone, Default, Deserialize)]
struct ExecEnv {
    #[serde(default)]
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Clone, Default, Deserialize)]
struct NamedContext {
    #[serde(default)]
    name: String,
    #[serde(default)]
    context: Option<ContextEntry>,
    #[serde(skip)]
    file: Option<PathBuf>,
}

#[derive(Clone, Default, Deserialize)]
struct ContextEntry {
    #[serde(default)]
    cluster: String,
    #[serde(default)]
    user: String,
    #[serde(default)]
    namespace: Option<String>,
}

/// Lists context and entry names only.
impl fmt::Debug for Kubeconfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kubeconfig")
            .field("files", &self.files)
            .field("current_context", &self.current_context)
            .field("contexts", &self.context_names())
            .field("clusters", &self.clusters.iter().map(|c| &c.name).collect::<Vec<_>>())
            .field("users", &self.users.iter().map(|u| &u.name).collect::<Vec<_>>())
            .finish()
    }
}

/// Replaces every double-quoted part of a parser message with `"…"`: serde quotes offending values, and a value
/// can be a secret.
fn redact_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_quote = false;
    for c in message.chars() {
        if c == '"' {
            if !in_quote {
                out.push_str("\"…\"");
            }
            in_quote = !in_quote;
        } else if !in_quote {
            out.push(c);
        }
    }
    out
}

/// [`Kubeconfig::describe_default_sources`] for a given value of `KUBECONFIG` and a given `~/.kube/config`.
fn describe_sources(kubeconfig_var: Option<&std::ffi::OsStr>, home_config: Option<&Path>) -> String {
    let Some(list) = kubeconfig_var.filter(|v| !v.is_empty()) else {
        return match home_config.filter(|p| p.exists()) {
            Some(p) => format!(
                "KUBECONFIG is unset and {} defines no cluster, user or context",
                p.display()
            ),
            None => "KUBECONFIG is unset and ~/.kube/config does not exist".to_owned(),
        };
    };
    let paths: Vec<PathBuf> = std::env::split_paths(list)
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    let missing: Vec<&PathBuf> = paths.iter().filter(|p| !p.exists()).collect();
    let shown = |ps: &[&PathBuf]| {
        ps.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let all: Vec<&PathBuf> = paths.iter().collect();
    match (paths.len(), missing.len()) {
        (0, _) => "KUBECONFIG names no file".to_owned(),
        (1, 1) => format!("KUBECONFIG names {}, which does not exist", paths[0].display()),
        (n, m) if n == m => format!("KUBECONFIG names {}, none of which exists", shown(&all)),
        (_, 0) => format!(
            "the files KUBECONFIG names ({}) define no cluster, user or context",
            shown(&all)
        ),
        _ => format!(
            "the files KUBECONFIG names ({}) define no cluster, user or context (missing: {})",
            shown(&all),
            shown(&missing)
        ),
    }
}

/// The home directory.
fn home_dir() -> Option<PathBuf> {
    let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    std::env::var_os(var).filter(|h| !h.is_empty()).map(PathBuf::from)
}

impl Kubeconfig {
    /// Parses kubeconfig text (YAML, or JSON when it starts with `{`). `file` is where it came from: relative paths
    /// inside are resolved against its folder, and errors name it.
    pub fn parse(text: &str, file: Option<&Path>) -> Result<Kubeconfig> {
        let err = |m: String| {
            let mut e = ConfigError::new(m);
            e.file = file.map(Path::to_path_buf);
            Error::config(e)
        };
        let mut kc: Kubeconfig = if text.trim().is_empty() {
            Kubeconfig::default()
        } else if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| {
                // serde_json appends the position to its message itself.
                err(format!(
                    "not a valid kubeconfig (JSON): {}",
                    redact_quoted(&e.to_string())
                ))
            })?
        } else {
            serde_saphyr::from_str(text).map_err(|e| {
                // The first line holds the position and the problem; the lines after it quote the file, secrets
                // included.
                let full = e.to_string();
                let first = full.lines().next().unwrap_or_default();
                let first = first.strip_prefix("error: ").unwrap_or(first);
                err(format!("not a valid kubeconfig (YAML): {}", redact_quoted(first)))
            })?
        };
        let base = file.and_then(Path::parent).map(Path::to_path_buf);
        kc.check_unique(file)?;
        for c in &mut kc.clusters {
            c.file = file.map(Path::to_path_buf);
            if let (Some(cluster), Some(base)) = (c.cluster.as_mut(), &base) {
                resolve(&mut cluster.certificate_authority, base);
            }
        }
        for u in &mut kc.users {
            u.file = file.map(Path::to_path_buf);
            if let (Some(user), Some(base)) = (u.user.as_mut(), &base) {
                resolve(&mut user.client_certificate, base);
                resolve(&mut user.client_key, base);
                resolve(&mut user.token_file, base);
                if let Some(exec) = user.exec.as_mut()
                    && (exec.command.contains(std::path::MAIN_SEPARATOR) || exec.command.contains('/'))
                {
                    let mut cmd = Some(std::mem::take(&mut exec.command));
                    resolve(&mut cmd, base);
                    exec.command = cmd.unwrap_or_default();
                }
            }
        }
        for c in &mut kc.contexts {
            c.file = file.map(Path::to_path_buf);
        }
        kc.files = file.map(Path::to_path_buf).into_iter().collect();
        Ok(kc)
    }

    /// Names must be unique within one file (client-go refuses duplicates when converting a file).
    fn check_unique(&self, file: Option<&Path>) -> Result<()> {
        fn dup<'a>(names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
            let mut seen = std::collections::HashSet::new();
            names.into_iter().find(|n| !seen.insert(*n))
        }
        for (list, name) in [
            ("clusters", dup(self.clusters.iter().map(|c| c.name.as_str()))),
            ("users", dup(self.users.iter().map(|c| c.name.as_str()))),
            ("contexts", dup(self.contexts.iter().map(|c| c.name.as_str()))),
        ] {
            if let Some(name) = name {
                let mut e = ConfigError::new(format!("the name {name:?} appears twice")).field(list);
                e.file = file.map(Path::to_path_buf);
                return Err(Error::config(e));
            }
        }
        Ok(())
    }

    /// Reads one kubeconfig file.
    pub fn read(path: &Path) -> Result<Kubeconfig> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            let message = if e.kind() == std::io::ErrorKind::NotFound {
                "the kubeconfig file does not exist".to_owned()
            } else {
                format!("cannot read kubeconfig: {e}")
            };
            Error::config(ConfigError::new(message).file(path))
        })?;
        Kubeconfig::parse(&text, Some(path))
    }

    /// Reads and merges kubeconfig files as kubectl merges `KUBECONFIG`: missing files are skipped, an unreadable
    /// or invalid one is an error, the first definition of each name wins.
    pub fn read_all(paths: &[PathBuf]) -> Result<Kubeconfig> {
        let mut merged = Kubeconfig::default();
        let mut seen = Vec::new();
        for p in paths.iter().filter(|p| !p.as_os_str().is_empty()) {
            if seen.contains(p) {
                continue;
            }
            seen.push(p.clone());
            if !p.exists() {
                log::debug!("kubeconfig {} does not exist; skipped", p.display());
                continue;
            }
            merged = merged.merge(Kubeconfig::read(p)?);
        }
        Ok(merged)
    }

    /// The default kubeconfig: the files of `KUBECONFIG` (merged) when it is set, else `~/.kube/config` when it
    /// exists, else `None`.
    pub fn load_default() -> Result<Option<Kubeconfig>> {
        if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            let paths: Vec<PathBuf> = std::env::split_paths(&list).collect();
            return Kubeconfig::read_all(&paths).map(Some);
        }
        match home_dir().map(|h| h.join(".kube").join("config")) {
            Some(p) if p.exists() => Kubeconfig::read(&p).map(Some),
            _ => Ok(None),
        }
    }

    /// Why the default kubeconfig ([`Kubeconfig::load_default`]) gives nothing usable, for an error: which files
    /// `KUBECONFIG` names and which of them do not exist, or that neither it nor `~/.kube/config` is there.
    pub(crate) fn describe_default_sources() -> String {
        let home_config = home_dir().map(|h| h.join(".kube").join("config"));
        describe_sources(std::env::var_os("KUBECONFIG").as_deref(), home_config.as_deref())
    }

    /// Merges `later` into `self` with kubectl's precedence: what `self` defines wins.
    #[must_use]
    pub fn merge(mut self, later: Kubeconfig) -> Kubeconfig {
        if self.current_context.as_deref().is_none_or(str::is_empty) {
            self.current_context = later.current_context;
        }
        for c in later.clusters {
            if !self.clusters.iter().any(|x| x.name == c.name) {
                self.clusters.push(c);
            }
        }
        for u in later.users {
            if !self.users.iter().any(|x| x.name == u.name) {
                self.users.push(u);
            }
        }
        for c in later.contexts {
            if !self.contexts.iter().any(|x| x.name == c.name) {
                self.contexts.push(c);
            }
        }
        self.files.extend(later.files);
        self
    }

    /// True when no cluster, user or context is defined.
    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty() && self.users.is_empty() && self.contexts.is_empty()
    }

    /// `current-context`, when set.
    pub fn current_context(&self) -> Option<&str> {
        self.current_context.as_deref().filter(|c| !c.is_empty())
    }

    /// The names of the contexts, in file order.
    pub fn context_names(&self) -> Vec<&str> {
        self.contexts.iter().map(|c| c.name.as_str()).collect()
    }

    /// The files this configuration was read from.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The [`Config`] of `context`, or of the current context when `None`.
    pub fn to_config(&self, context: Option<&str>) -> Result<Config> {
        let single_file = if self.files.len() == 1 {
            self.files.first().cloned()
        } else {
            None
        };
        let (name, field) = match context {
            Some(c) => (c, "context"),
            None => match self.current_context() {
                Some(c) => (c, "current-context"),
                None => {
                    let mut e = ConfigError::new(format!(
                        "no current-context is set and no context was given (contexts: {})",
                        list_or_none(&self.context_names())
                    ));
                    e.file = single_file;
                    return Err(Error::config(e));
                }
            },
        };
        let Some(ctx) = self.contexts.iter().find(|c| c.name == name) else {
            let mut e = ConfigError::new(format!(
                "context {name:?} not found (contexts: {})",
                list_or_none(&self.context_names())
            ))
            .field(field);
            e.file = single_file;
            return Err(Error::config(e));
        };
        let resolver = Resolver { context: name };
        let entry = ctx.context.clone().unwrap_or_default();
        let ctx_origin = |f: &str| Origin::new(ctx.file.as_deref(), format!("contexts[{name}].{f}"));
        if entry.cluster.is_empty() {
            return Err(resolver.error(&ctx_origin("cluster"), "the context names no cluster"));
        }
        let Some(cluster) = self.clusters.iter().find(|c| c.name == entry.cluster) else {
            return Err(resolver.error(
                &ctx_origin("cluster"),
                format!(
                    "cluster {:?} not found (clusters: {})",
                    entry.cluster,
                    list_or_none(&self.clusters.iter().map(|c| c.name.as_str()).collect::<Vec<_>>())
                ),
            ));
        };
        let user = if entry.user.is_empty() {
            None
        } else {
            match self.users.iter().find(|u| u.name == entry.user) {
                Some(u) => Some(u),
                None => {
                    return Err(resolver.error(
                        &ctx_origin("user"),
                        format!(
                            "user {:?} not found (users: {})",
                            entry.user,
                            list_or_none(&self.users.iter().map(|u| u.name.as_str()).collect::<Vec<_>>())
                        ),
                    ));
                }
            }
        };
        let mut config = resolver.cluster(cluster)?;
        config.context = Some(name.to_owned());
        if let Some(ns) = entry.namespace.filter(|n| !n.is_empty()) {
            config.namespace = ns;
        }
        if let Some(user) = user {
            resolver.user(user, cluster, &mut config)?;
        }
        config.validate()?;
        Ok(config)
    }
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Makes a relative path absolute against `base`.
fn resolve(path: &mut Option<String>, base: &Path) {
    if let Some(p) = path.as_mut().filter(|p| !p.is_empty())
        && Path::new(p.as_str()).is_relative()
    {
        let rel = p.strip_prefix("./").unwrap_or(p);
        *p = base.join(rel).to_string_lossy().into_owned();
    }
}

/// Turns the entries of one context into a [`Config`], with errors located in the context.
struct Resolver<'a> {
    context: &'a str,
}

impl Resolver<'_> {
    fn error(&self, origin: &Origin, message: impl Into<String>) -> Error {
        let mut e = ConfigError::new(message)
            .context(self.context)
            .field(origin.field.clone());
        e.file = origin.file.clone();
        Error::config(e)
    }

    /// `*-data` (base64) wins over the file; `None` when neither is set.
    fn data_or_file(
        &self,
        data: Option<&[u8]>,
        data_origin: Origin,
        file: Option<&str>,
        file_origin: Origin,
    ) -> Result<Option<Material<Vec<u8>>>> {
        if let Some(data) = data.filter(|d| !d.is_empty()) {
            let text = std::str::from_utf8(data).map_err(|_| self.error(&data_origin, "not valid base64"))?;
            let value = base64_decode(text).map_err(|m| self.error(&data_origin, m))?;
            return Ok(Some(Material {
                value,
                origin: data_origin,
            }));
        }
        match file.filter(|f| !f.is_empty()) {
            Some(f) => {
                let value = std::fs::read(f).map_err(|e| self.error(&file_origin, format!("cannot read {f}: {e}")))?;
                let origin = Origin {
                    field: format!("{} ({f})", file_origin.field),
                    ..file_origin
                };
                Ok(Some(Material { value, origin }))
            }
            None => Ok(None),
        }
    }

    fn cluster(&self, named: &NamedCluster) -> Result<Config> {
        let c = named.cluster.clone().unwrap_or_default();
        let at = |f: &str| Origin::new(named.file.as_deref(), format!("clusters[{}].{f}", named.name));
        let server = c.server.clone().unwrap_or_default();
        if server.trim().is_empty() {
            return Err(self.error(&at("server"), "no server URL"));
        }
        let mut config = Config::new(server);
        config.cluster_url.origin = at("server");
        config.ca_pem = self.data_or_file(
            c.certificate_authority_data.as_deref().map(str::as_bytes),
            at("certificate-authority-data"),
            c.certificate_authority.as_deref(),
            at("certificate-authority"),
        )?;
        if c.insecure_skip_tls_verify == Some(true) {
            config.insecure = Some(at("insecure-skip-tls-verify"));
        }
        if let Some(name) = c.tls_server_name.filter(|n| !n.is_empty()) {
            config.tls_server_name = Some(Material {
                value: name,
                origin: at("tls-server-name"),
            });
        }
        if let Some(proxy) = c.proxy_url.filter(|p| !p.is_empty()) {
            config.proxy = ProxySetting::Url(Material {
                value: proxy,
                origin: at("proxy-url"),
            });
        }
        Ok(config)
    }

    fn user(&self, named: &NamedUser, cluster: &NamedCluster, config: &mut Config) -> Result<()> {
        let u = named.user.clone().unwrap_or_default();
        let at = |f: &str| Origin::new(named.file.as_deref(), format!("users[{}].{f}", named.name));

        let cert = self.data_or_file(
            u.client_certificate_data.as_deref().map(str::as_bytes),
            at("client-certificate-data"),
            u.client_certificate.as_deref(),
            at("client-certificate"),
        )?;
        let key = self.data_or_file(
            u.client_key_data.as_ref().map(Secret::expose),
            at("client-key-data"),
            u.client_key.as_deref(),
            at("client-key"),
        )?;
        match (cert, key) {
            (Some(cert), Some(key)) => {
                config.client_identity = Some(ClientIdentity {
                    cert_pem: cert,
                    key_pem: Material {
                        value: Secret::new(key.value),
                        origin: key.origin,
                    },
                });
            }
            (Some(_), None) => {
                return Err(self.error(
                    &at("client-key-data"),
                    "a client certificate is set but no client key (client-key or client-key-data)",
                ));
            }
            (None, Some(_)) => {
                return Err(self.error(
                    &at("client-certificate-data"),
                    "a client key is set but no client certificate (client-certificate or client-certificate-data)",
                ));
            }
            (None, None) => {}
        }

        let token = u.token.clone().filter(|t| !t.is_empty());
        let token_file = u.token_file.clone().filter(|t| !t.is_empty());
        let basic =
            u.username.as_deref().is_some_and(|s| !s.is_empty()) || u.password.as_ref().is_some_and(|p| !p.is_empty());
        if (token.is_some() || token_file.is_some()) && basic {
            return Err(self.error(
                &at("username"),
                "more than one authentication method is set (token and basic auth); only one is allowed",
            ));
        }
        if u.exec.is_some() && u.auth_provider.is_some() {
            return Err(self.error(&at("exec"), "both exec and auth-provider are set; only one is allowed"));
        }
        config.credential = if let Some(path) = token_file {
            Credential::TokenFile {
                path: Material {
                    value: PathBuf::from(path),
                    origin: at("tokenFile"),
                },
                fallback: token,
            }
        } else if let Some(token) = token {
            Credential::Token(Material {
                value: token,
                origin: at("token"),
            })
        } else if basic {
            Credential::Basic {
                username: u.username.clone().unwrap_or_default(),
                password: u.password.clone().unwrap_or_default(),
            }
        } else if config.client_identity.is_some() {
            // client-go skips an exec plugin when another credential (a client certificate too) is present.
            Credential::None
        } else if let Some(exec) = &u.exec {
            Credential::Exec(Box::new(Material {
                value: self.exec(exec, cluster, &at)?,
                origin: at("exec"),
            }))
        } else if let Some(provider) = &u.auth_provider {
            self.auth_provider(provider, &at)?
        } else {
            Credential::None
        };

        if let Some(user) = u.impersonate.filter(|s| !s.is_empty()) {
            config.impersonation = Some(Impersonation {
                user,
                uid: u.impersonate_uid.filter(|s| !s.is_empty()),
                groups: u.impersonate_groups,
                extra: u.impersonate_extra.into_iter().collect(),
            });
        } else if !u.impersonate_groups.is_empty() || u.impersonate_uid.is_some() {
            return Err(self.error(
                &at("as"),
                "as-groups or as-uid is set without as (the user to impersonate)",
            ));
        }
        Ok(())
    }

    fn exec(&self, e: &ExecEntry, cluster: &NamedCluster, at: &dyn Fn(&str) -> Origin) -> Result<ExecConfig> {
        if e.command.trim().is_empty() {
            return Err(self.error(&at("exec.command"), "the exec plugin has no command"));
        }
        if !EXEC_API_VERSIONS.contains(&e.api_version.as_str()) {
            return Err(self.error(
                &at("exec.apiVersion"),
                format!(
                    "exec plugin apiVersion {:?} is not supported (use {} or {})",
                    e.api_version, EXEC_API_VERSIONS[0], EXEC_API_VERSIONS[1]
                ),
            ));
        }
        let interactive_mode = match e.interactive_mode.as_deref().filter(|m| !m.is_empty()) {
            Some(m) => InteractiveMode::parse(m).ok_or_else(|| {
                self.error(
                    &at("exec.interactiveMode"),
                    format!("unknown interactiveMode {m:?} (expected Never, IfAvailable or Always)"),
                )
            })?,
            // client-go: required in v1, IfAvailable by default in v1beta1.
            None if e.api_version == EXEC_API_VERSIONS[0] => {
                return Err(self.error(
                    &at("exec.interactiveMode"),
                    format!(
                        "interactiveMode must be specified to use an exec plugin with {}",
                        e.api_version
                    ),
                ));
            }
            None => InteractiveMode::IfAvailable,
        };
        if let Some(i) = e.env.iter().position(|v| v.name.is_empty()) {
            return Err(self.error(
                &at(&format!("exec.env[{i}].name")),
                "environment variable without a name",
            ));
        }
        let cluster_config = cluster
            .cluster
            .as_ref()
            .and_then(|c| c.extensions.iter().find(|x| x.name == EXEC_EXTENSION))
            .and_then(|x| x.extension.clone());
        Ok(ExecConfig {
            command: e.command.clone(),
            args: e.args.clone(),
            env: e.env.iter().map(|v| (v.name.clone(), v.value.clone())).collect(),
            api_version: e.api_version.clone(),
            install_hint: e.install_hint.clone(),
            interactive_mode,
            provide_cluster_info: e.provide_cluster_info,
            cluster_config,
            timeout: DEFAULT_EXEC_TIMEOUT,
        })
    }

    /// Legacy `auth-provider`: only `oidc` with an `id-token` is usable without its (removed) Go plugin; it is sent
    /// as a bearer token and never refreshed.
    fn auth_provider(&self, p: &AuthProviderEntry, at: &dyn Fn(&str) -> Origin) -> Result<Credential> {
        match p.name.as_str() {
            "oidc" => match p.config.get("id-token").filter(|t| !t.is_empty()) {
                Some(token) => Ok(Credential::Token(Material {
                    value: token.clone(),
                    origin: at("auth-provider.config.id-token"),
                })),
                None => Err(self.error(
                    &at("auth-provider.config.id-token"),
                    "the oidc auth-provider has no id-token; log in with your OIDC helper (e.g. kubelogin) first",
                )),
            },
            other => Err(self.error(
                &at("auth-provider.name"),
                format!(
                    "auth-provider {other:?} is not supported (client-go removed it too); use its exec plugin \
                     instead (gke-gcloud-auth-plugin for gcp, kubelogin for azure)"
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_quoted_values() {
        assert_eq!(
            redact_quoted(r#"invalid type: string "s3cret", expected a boolean at line 3"#),
            r#"invalid type: string "…", expected a boolean at line 3"#
        );
    }

    #[test]
    fn says_which_kubeconfig_files_are_missing() {
        use std::ffi::OsStr;
        assert_eq!(
            describe_sources(None, None),
            "KUBECONFIG is unset and ~/.kube/config does not exist"
        );
        assert_eq!(
            describe_sources(None, Some(Path::new("/nope/home/.kube/config"))),
            "KUBECONFIG is unset and ~/.kube/config does not exist"
        );
        let dir = std::env::temp_dir();
        assert_eq!(
            describe_sources(Some(OsStr::new("")), Some(&dir)),
            format!(
                "KUBECONFIG is unset and {} defines no cluster, user or context",
                dir.display()
            )
        );
        assert_eq!(
            describe_sources(Some(OsStr::new("/nope/config")), Some(&dir)),
            "KUBECONFIG names /nope/config, which does not exist"
        );
        let two = std::env::join_paths(["/nope/a", "/nope/b"]).unwrap();
        assert_eq!(
            describe_sources(Some(&two), None),
            "KUBECONFIG names /nope/a, /nope/b, none of which exists"
        );
        let mixed = std::env::join_paths([dir.as_path(), Path::new("/nope/b")]).unwrap();
        assert_eq!(
            describe_sources(Some(&mixed), None),
            format!(
                "the files KUBECONFIG names ({}, /nope/b) define no cluster, user or context (missing: /nope/b)",
                dir.display()
            )
        );
    }

    #[test]
    fn merge_keeps_first_definitions() {
        let a = Kubeconfig::parse(
            "clusters: [{name: c, cluster: {server: 'https://a'}}]\ncontexts: [{name: x, context: {cluster: c}}]\n",
            Some(Path::new("/a/config")),
        )
        .unwrap();
        let b = Kubeconfig::parse(
            "current-context: x\nclusters: [{name: c, cluster: {server: 'https://b'}}, {name: d, cluster: {server: 'https://d'}}]\n",
            Some(Path::new("/b/config")),
        )
        .unwrap();
        let m = a.merge(b);
        assert_eq!(m.current_context(), Some("x"));
        assert_eq!(m.to_config(None).unwrap().cluster_url(), "https://a");
        assert_eq!(m.clusters.len(), 2);
        assert_eq!(m.files().len(), 2);
    }

    #[test]
    fn resolves_relative_paths_against_the_file() {
        let kc = Kubeconfig::parse(
            "users: [{name: u, user: {client-key: k.pem, tokenFile: /abs/t, exec: {command: ./bin/plugin, apiVersion: x}}}]\n\
             clusters: [{name: c, cluster: {certificate-authority: ca.crt}}]\n",
            Some(Path::new("/home/me/.kube/config")),
        )
        .unwrap();
        let user = kc.users[0].user.as_ref().unwrap();
        assert_eq!(user.client_key.as_deref(), Some("/home/me/.kube/k.pem"));
        assert_eq!(user.token_file.as_deref(), Some("/abs/t"));
        assert_eq!(user.exec.as_ref().unwrap().command, "/home/me/.kube/bin/plugin");
        assert_eq!(
            kc.clusters[0]
                .cluster
                .as_ref()
                .unwrap()
                .certificate_authority
                .as_deref(),
            Some("/home/me/.kube/ca.crt")
        );
    }

    #[test]
    fn debug_lists_names_only() {
        let kc = Kubeconfig::parse("users: [{name: u, user: {token: very-secret}}]\n", None).unwrap();
        assert!(!format!("{kc:?}").contains("very-secret"));
    }
}
