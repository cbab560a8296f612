//! `kube-informer-apiserver`: the embedded API server (`kube_informer_apiserver::ApiServer`) on its own, for
//! kubectl sessions, tests in other languages and demos.
//!
//! Everything it serves is the library's; this program only parses arguments, writes the kubeconfig where asked,
//! turns the admin API on, and stops cleanly on SIGINT or SIGTERM. Once listening (and after `--load`), it prints
//! one JSON line on stdout, which a test can wait for:
//!
//! ```text
//! {"listening":"http://127.0.0.1:41234","kubeconfig":"/tmp/kubeconfig","admin":"http://127.0.0.1:41234/kube-informer/admin/","loaded":3,"pid":4242}
//! ```

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use kube_informer_apiserver::{ADMIN_PREFIX, AccessRule, ApiServer, ApiServerBuilder, parse_duration};
use lexopt::prelude::*;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

const NAME: &str = "kube-informer-apiserver";

const USAGE: &str = "\
kube-informer-apiserver: a Kubernetes API server in one process, state in memory, with fault injection.

Usage: kube-informer-apiserver [OPTIONS]

Listening:
      --address IP               Address to listen on [default: 127.0.0.1]; 0.0.0.0 or :: for every interface.
                                 Beyond loopback it needs authentication (--token, --client-cert or
                                 --authorization-mode RBAC), unless
      --insecure-allow-unauthenticated-remote-access
                                 serve a non-loopback address with no authentication: anyone who reaches it may
                                 do anything (the admin API then answers loopback clients only)
      --port N                   Port to listen on [default: 0, any free port]
      --https                    Serve HTTPS with a fresh CA (the kubeconfig carries it)

Clients:
      --kubeconfig-out PATH      Write a kubeconfig for the server there once it listens (kept after stop)
      --kubeconfig-user USER     Whose credentials the kubeconfig holds [default: the first admin with a token
                                 or certificate, else the first token's user]
      --token USER=TOKEN         Accept `Authorization: Bearer TOKEN` as USER; turns authentication on
      --client-cert USER         Issue a client certificate for USER (needs --https); turns authentication on
      --allow USER[:VERBS[:RESOURCES]]
                                 Let USER do VERBS (comma-separated: get,list,watch,create,update,patch,delete,
                                 deletecollection or *) on RESOURCES (plural, plural.group, plural/status or *).
                                 With no --allow at all, every authenticated user may do everything
      --groups USER=GROUP[,GROUP]
                                 Put a token or certificate user in these groups (RBAC bindings to groups)
      --admin USER               Let USER use the admin API (and, once any --allow is given, everything else;
                                 with RBAC, USER is in system:masters)

Authorization:
      --authorization-mode MODE  AlwaysAllow [default]: the --allow rules (with none, every authenticated user may
                                 do everything); RBAC: as kube-apiserver --authorization-mode=RBAC: Roles,
                                 ClusterRoles and their bindings decide (load them with --load), nothing is
                                 allowed by default, the bootstrap roles (cluster-admin, admin, edit, view,
                                 system:*) exist, --allow rules grant beside them, and a kubeconfig user
                                 system:admin (in system:masters) is made when no --admin has credentials
      --anonymous-auth BOOL      With RBAC, serve requests without credentials as system:anonymous [default: true]

Server behaviour:
      --load PATH                Create the objects of a YAML/JSON manifest file or folder at start (repeatable;
                                 multi-document YAML and List kinds; namespaces first)
      --bookmark-interval D      BOOKMARK interval of watches [default: 1m]
      --compaction-interval D    Compact every D to the previous tick's revision, or `off` [default: 5m]
      --history-size N           Watch events kept per resource [default: 10000]
      --initial-revision N       First resourceVersion [default: 1]
      --no-watch-list            Refuse streaming lists (sendInitialEvents) as servers without WatchList do
      --feature-gates GATES      key=value pairs, comma-separated, as kube-apiserver takes them:
                                 ShardedListAndWatch=true|false [default: false] (shardSelector honoured, else
                                 ignored); WatchList=true|false [default: true] (as --no-watch-list)
      --no-admin-api             Do not serve the admin API

Limits (every wait has a deadline; kube-apiserver's values by default):
      --read-header-timeout D    A request head must arrive within D of its first byte [default: 32s]
      --tls-handshake-timeout D  A TLS handshake must end within D of the connection's start [default: 32s]
      --request-body-timeout D   A request body must arrive within D of its head (then 504) [default: 1m]
      --idle-timeout D           A keep-alive connection waits D for its next request [default: 1m30s]
      --write-timeout D          A write making no progress for D drops the connection [default: 1m]
      --max-connections N        Connections served at once, one thread each; past it, 429 [default: 1024]
      --max-requests-inflight N  Non-mutating requests at once, watches aside; past it, 429; 0: no limit
                                 [default: 400]
      --max-mutating-requests-inflight N
                                 Mutating requests at once; past it, 429; 0: no limit [default: 200]

Other:
  -v, --verbose                  Log debug messages to stderr (-v once is enough)
  -h, --help                     Print this help
  -V, --version                  Print the version

Durations are written as Go writes them: 500ms, 30s, 5m, 1h30m.

Once listening it prints one JSON line on stdout: {\"listening\": URL, \"kubeconfig\": PATH, \"admin\": URL, ...}.
SIGINT or SIGTERM stops it cleanly.

The admin API (faults, compaction, restart, request log) is under /kube-informer/admin/; for example:
  curl -X POST URL/kube-informer/admin/faults -d '{\"verb\":\"list\",\"resource\":\"configmaps\",\"error\":429}'
  curl URL/kube-informer/admin/            # every endpoint, and the server's revision and watchers
";

/// What the command line asks for.
#[derive(Debug)]
enum Command {
    Run(Box<Options>),
    Help,
    Version,
}

/// The options of a run.
#[derive(Debug)]
struct Options {
    address: IpAddr,
    port: u16,
    https: bool,
    kubeconfig_out: Option<PathBuf>,
    kubeconfig_user: Option<String>,
    /// (user, token)
    tokens: Vec<(String, String)>,
    client_certs: Vec<String>,
    rules: Vec<AccessRule>,
    admins: Vec<String>,
    /// (user, groups)
    groups: Vec<(String, Vec<String>)>,
    rbac: bool,
    anonymous_auth: Option<bool>,
    insecure_remote: bool,
    loads: Vec<PathBuf>,
    bookmark_interval: Option<Duration>,
    /// `Some(None)`: `off`.
    compaction_interval: Option<Option<Duration>>,
    history_size: Option<usize>,
    initial_revision: Option<u64>,
    watch_list: bool,
    sharded_list_and_watch: bool,
    admin_api: bool,
    verbose: bool,
    /// (flag, value) of the limits given, applied in order.
    limits: Vec<(String, Limit)>,
}

/// A limit given on the command line.
#[derive(Debug, PartialEq)]
enum Limit {
    Wait(Duration),
    Count(usize),
}

impl Default for Options {
    fn default() -> Self {
        Options {
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            https: false,
            kubeconfig_out: None,
            kubeconfig_user: None,
            tokens: Vec::new(),
            client_certs: Vec::new(),
            rules: Vec::new(),
            admins: Vec::new(),
            groups: Vec::new(),
            rbac: false,
            anonymous_auth: None,
            insecure_remote: false,
            loads: Vec::new(),
            bookmark_interval: None,
            compaction_interval: None,
            history_size: None,
            initial_revision: None,
            watch_list: true,
            sharded_list_and_watch: false,
            admin_api: true,
            verbose: false,
            limits: Vec::new(),
        }
    }
}

fn string(v: OsString, flag: &str) -> Result<String, String> {
    v.into_string().map_err(|v| format!("{flag}: {v:?} is not UTF-8"))
}

fn number<T: std::str::FromStr>(v: OsString, flag: &str) -> Result<T, String> {
    let s = string(v, flag)?;
    s.parse().map_err(|_| format!("{flag}: {s:?} is not a valid number"))
}

fn duration(v: OsString, flag: &str) -> Result<Duration, String> {
    parse_duration(&string(v, flag)?).map_err(|e| format!("{flag}: {e}"))
}

/// `USER[:VERBS[:RESOURCES]]`.
fn rule(text: &str) -> Result<AccessRule, String> {
    let mut parts = text.splitn(3, ':');
    let user = parts.next().unwrap_or("");
    if user.is_empty() {
        return Err(format!("--allow: {text:?} names no user"));
    }
    let mut rule = AccessRule::user(user);
    let list = |s: &str| -> Result<Vec<String>, String> {
        let items: Vec<String> = s.split(',').map(|x| x.trim().to_owned()).collect();
        if items.iter().any(String::is_empty) {
            return Err(format!("--allow: {text:?} has an empty item"));
        }
        Ok(items)
    };
    if let Some(verbs) = parts.next() {
        const KNOWN: [&str; 9] = [
            "*",
            "get",
            "list",
            "watch",
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
        ];
        let verbs = list(verbs)?;
        if let Some(v) = verbs.iter().find(|v| !KNOWN.contains(&v.as_str())) {
            return Err(format!("--allow: unknown verb {v:?} (one of {})", KNOWN.join(", ")));
        }
        rule = rule.verbs(&verbs.iter().map(String::as_str).collect::<Vec<_>>());
    }
    if let Some(resources) = parts.next() {
        let resources = list(resources)?;
        rule = rule.resources(&resources.iter().map(String::as_str).collect::<Vec<_>>());
    }
    Ok(rule)
}

fn value(p: &mut lexopt::Parser) -> Result<OsString, String> {
    p.value().map_err(|e| e.to_string())
}

fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let mut o = Options::default();
    let mut p = lexopt::Parser::from_args(args);
    while let Some(arg) = p.next().map_err(|e| e.to_string())? {
        let flag = match &arg {
            Long(l) => format!("--{l}"),
            Short(s) => format!("-{s}"),
            Value(v) => return Err(format!("unexpected argument {v:?}")),
        };
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Short('V') | Long("version") => return Ok(Command::Version),
            Short('v') | Long("verbose") => o.verbose = true,
            Long("address") => {
                let s = string(value(&mut p)?, &flag)?;
                o.address = s.parse().map_err(|_| format!("{flag}: {s:?} is not an IP address"))?;
            }
            Long("port") => o.port = number(value(&mut p)?, &flag)?,
            Long("https") => o.https = true,
            Long("kubeconfig-out") => o.kubeconfig_out = Some(PathBuf::from(value(&mut p)?)),
            Long("kubeconfig-user") => o.kubeconfig_user = Some(string(value(&mut p)?, &flag)?),
            Long("token") => {
                let s = string(value(&mut p)?, &flag)?;
                match s.split_once('=') {
                    Some((user, token)) if !user.is_empty() && !token.is_empty() => {
                        o.tokens.push((user.to_owned(), token.to_owned()));
                    }
                    // The value may hold a secret: never repeat it.
                    _ => return Err(format!("{flag}: expected USER=TOKEN")),
                }
            }
            Long("client-cert") => o.client_certs.push(string(value(&mut p)?, &flag)?),
            Long("allow") => o.rules.push(rule(&string(value(&mut p)?, &flag)?)?),
            Long("admin") => o.admins.push(string(value(&mut p)?, &flag)?),
            Long("groups") => {
                let s = string(value(&mut p)?, &flag)?;
                match s.split_once('=') {
                    Some((user, groups)) if !user.is_empty() && !groups.is_empty() => {
                        o.groups
                            .push((user.to_owned(), groups.split(',').map(str::to_owned).collect()));
                    }
                    _ => return Err(format!("{flag}: expected USER=GROUP[,GROUP]")),
                }
            }
            Long("authorization-mode") => {
                o.rbac = match string(value(&mut p)?, &flag)?.as_str() {
                    "RBAC" => true,
                    "AlwaysAllow" => false,
                    other => return Err(format!("{flag}: {other:?} is not a mode (RBAC or AlwaysAllow)")),
                };
            }
            Long("anonymous-auth") => {
                o.anonymous_auth = Some(match string(value(&mut p)?, &flag)?.as_str() {
                    "true" => true,
                    "false" => false,
                    other => return Err(format!("{flag}: {other:?} is not true or false")),
                });
            }
            Long("insecure-allow-unauthenticated-remote-access") => o.insecure_remote = true,
            Long("load") => o.loads.push(PathBuf::from(value(&mut p)?)),
            Long("bookmark-interval") => {
                let d = duration(value(&mut p)?, &flag)?;
                if d.is_zero() {
                    return Err(format!("{flag}: must be more than 0"));
                }
                o.bookmark_interval = Some(d);
            }
            Long("compaction-interval") => {
                let v = value(&mut p)?;
                o.compaction_interval = Some(if v == "off" {
                    None
                } else {
                    Some(duration(v, &flag)?).filter(|d| !d.is_zero())
                });
            }
            Long("history-size") => o.history_size = Some(number(value(&mut p)?, &flag)?),
            Long("initial-revision") => o.initial_revision = Some(number(value(&mut p)?, &flag)?),
            Long("no-watch-list") => o.watch_list = false,
            Long("feature-gates") => {
                for (gate, enabled) in feature_gates(&string(value(&mut p)?, &flag)?)? {
                    match gate.as_str() {
                        "ShardedListAndWatch" => o.sharded_list_and_watch = enabled,
                        _ => o.watch_list = enabled,
                    }
                }
            }
            Long("no-admin-api") => o.admin_api = false,
            Long(
                "read-header-timeout"
                | "tls-handshake-timeout"
                | "request-body-timeout"
                | "idle-timeout"
                | "write-timeout",
            ) => {
                let d = duration(value(&mut p)?, &flag)?;
                if d.is_zero() {
                    return Err(format!("{flag}: must be more than 0 (every wait has a deadline)"));
                }
                o.limits.push((flag, Limit::Wait(d)));
            }
            Long("max-connections") => {
                let n: usize = number(value(&mut p)?, &flag)?;
                if n == 0 {
                    return Err(format!("{flag}: must be more than 0"));
                }
                o.limits.push((flag, Limit::Count(n)));
            }
            Long("max-requests-inflight" | "max-mutating-requests-inflight") => {
                let n = number(value(&mut p)?, &flag)?;
                o.limits.push((flag, Limit::Count(n)));
            }
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    if !o.https && !o.client_certs.is_empty() {
        return Err("--client-cert needs --https".into());
    }
    if !o.admin_api && !o.admins.is_empty() {
        return Err("--admin and --no-admin-api contradict each other".into());
    }
    Ok(Command::Run(Box::new(o)))
}

impl Options {
    fn authenticated(&self) -> bool {
        self.rbac || !self.tokens.is_empty() || !self.client_certs.is_empty()
    }

    fn has_credentials(&self, user: &str) -> bool {
        self.tokens.iter().any(|(u, _)| u == user) || self.client_certs.iter().any(|u| u == user)
    }

    fn builder(&self) -> ApiServerBuilder {
        let mut b = ApiServer::builder().address(self.address).port(self.port);
        if self.https {
            b = b.https();
        }
        for (user, token) in &self.tokens {
            b = b.token(token, user);
        }
        for user in &self.client_certs {
            b = b.client_cert(user);
        }
        for r in &self.rules {
            b = b.rule(r.clone());
        }
        if self.admin_api {
            b = b.admin_api();
        }
        if self.rbac {
            b = b.rbac();
            // The built-in admin of the kubeconfig may use the admin API too.
            b = b.admin_user(kube_informer_apiserver::ADMIN_USER);
        }
        if let Some(a) = self.anonymous_auth {
            b = b.anonymous_auth(a);
        }
        if self.insecure_remote {
            b = b.insecure_allow_unauthenticated_remote_access();
        }
        for (user, groups) in &self.groups {
            b = b.user_groups(user, &groups.iter().map(String::as_str).collect::<Vec<_>>());
        }
        for admin in &self.admins {
            b = b.admin_user(admin);
            if self.rbac {
                b = b.user_groups(admin, &["system:masters"]);
            } else if !self.rules.is_empty() {
                // An admin may do everything; with no rule at all everyone already may.
                b = b.rule(AccessRule::user(admin));
            }
        }
        let user = self
            .kubeconfig_user
            .clone()
            .or_else(|| self.admins.iter().find(|a| self.has_credentials(a)).cloned());
        if let Some(u) = user {
            b = b.kubeconfig_user(&u);
        }
        if let Some(p) = &self.kubeconfig_out {
            b = b.kubeconfig_out(p);
        }
        if let Some(d) = self.bookmark_interval {
            b = b.bookmark_interval(d);
        }
        if let Some(c) = self.compaction_interval {
            b = b.compaction_interval(c);
        }
        if let Some(n) = self.history_size {
            b = b.history_size(n);
        }
        if let Some(r) = self.initial_revision {
            b = b.initial_revision(r);
        }
        for (flag, limit) in &self.limits {
            b = match (flag.as_str(), limit) {
                ("--read-header-timeout", Limit::Wait(d)) => b.read_header_timeout(*d),
                ("--tls-handshake-timeout", Limit::Wait(d)) => b.tls_handshake_timeout(*d),
                ("--request-body-timeout", Limit::Wait(d)) => b.request_body_timeout(*d),
                ("--idle-timeout", Limit::Wait(d)) => b.idle_timeout(*d),
                ("--write-timeout", Limit::Wait(d)) => b.write_timeout(*d),
                ("--max-connections", Limit::Count(n)) => b.max_connections(*n),
                ("--max-requests-inflight", Limit::Count(n)) => b.max_requests_in_flight(*n),
                ("--max-mutating-requests-inflight", Limit::Count(n)) => b.max_mutating_requests_in_flight(*n),
                _ => b,
            };
        }
        b.watch_list(self.watch_list)
            .sharded_list_and_watch(self.sharded_list_and_watch)
    }
}

/// The gates this server knows.
const FEATURE_GATES: [&str; 2] = ["ShardedListAndWatch", "WatchList"];

/// `--feature-gates`: `Name=bool,Name=bool`, read as component-base's `featureGate.Set` reads it (Go's
/// `strconv.ParseBool` values; an unknown gate refused).
fn feature_gates(v: &str) -> Result<Vec<(String, bool)>, String> {
    let mut out = Vec::new();
    for pair in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, val)) = pair.split_once('=') else {
            return Err(format!("--feature-gates: missing bool value for {pair}"));
        };
        let (k, val) = (k.trim(), val.trim());
        if !FEATURE_GATES.contains(&k) {
            return Err(format!(
                "--feature-gates: unrecognized feature gate: {k} (this server knows {})",
                FEATURE_GATES.join(", ")
            ));
        }
        let b = match val {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
            "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
            _ => {
                return Err(format!(
                    "--feature-gates: invalid value of {k}={val}, err: invalid syntax"
                ));
            }
        };
        out.push((k.to_owned(), b));
    }
    Ok(out)
}

/// Log records to stderr, prefixed with the program's name.
struct StderrLogger;

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            eprintln!("{NAME}: {} {}", record.level(), record.args());
        }
    }

    fn flush(&self) {}
}

static LOGGER: StderrLogger = StderrLogger;

/// A JSON string.
fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn run(o: &Options) -> Result<(), String> {
    // Signals are caught from here on: one arriving during start-up stops the server once it is up.
    let mut signals = Signals::new([SIGINT, SIGTERM]).map_err(|e| format!("cannot handle signals: {e}"))?;
    if o.authenticated() && o.admin_api && o.admins.is_empty() {
        log::warn!("authentication is on and no --admin is named: every admin API request will be refused");
    }
    if !o.authenticated() && !o.admins.is_empty() {
        log::warn!("authentication is off (no --token or --client-cert): every local process may use the admin API");
    }
    if !o.authenticated() && o.insecure_remote {
        log::warn!(
            "serving {} without authentication: anyone who reaches it may do anything",
            o.address
        );
    }
    let server = o.builder().start().map_err(|e| e.to_string())?;
    let mut loaded = 0;
    for path in &o.loads {
        match server.load_manifests(path) {
            Ok(objects) => loaded += objects.len(),
            Err(e) => {
                server.shutdown();
                return Err(e.to_string());
            }
        }
    }
    let kubeconfig = server.kubeconfig_path().display().to_string();
    let admin = if o.admin_api {
        quote(&format!("{}{ADMIN_PREFIX}", server.url()))
    } else {
        "null".to_owned()
    };
    let line = format!(
        "{{\"listening\":{},\"kubeconfig\":{},\"admin\":{admin},\"loaded\":{loaded},\"pid\":{}}}",
        quote(server.url()),
        quote(&kubeconfig),
        std::process::id()
    );
    {
        let mut out = std::io::stdout().lock();
        // Nobody may be reading (stdout closed): the server serves all the same.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }
    eprintln!(
        "{NAME}: serving {} (kubectl --kubeconfig {kubeconfig} get namespaces); stop with Ctrl-C",
        server.url()
    );
    let signal = signals.forever().next();
    let name = match signal {
        Some(SIGINT) => "SIGINT",
        Some(SIGTERM) => "SIGTERM",
        _ => "a signal",
    };
    eprintln!("{NAME}: {name} received, stopping");
    server.shutdown();
    eprintln!("{NAME}: stopped");
    Ok(())
}

fn main() -> ExitCode {
    let command = match parse(std::env::args_os().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{NAME}: {e}\nTry '{NAME} --help'.");
            return ExitCode::from(2);
        }
    };
    let options = match command {
        Command::Help => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Command::Version => {
            println!("{NAME} {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Command::Run(o) => o,
    };
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(if options.verbose {
        log::LevelFilter::Debug
    } else {
        log::LevelFilter::Warn
    });
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_opts(args: &[&str]) -> Result<Options, String> {
        match parse(args.iter().map(OsString::from))? {
            Command::Run(o) => Ok(*o),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parses_every_flag() {
        let o = run_opts(&[
            "--address=0.0.0.0",
            "--port",
            "6443",
            "--https",
            "--kubeconfig-out",
            "/tmp/k",
            "--token",
            "alice=s3cret=x",
            "--client-cert",
            "bob",
            "--allow",
            "viewer:get,list:configmaps,pods/status",
            "--admin",
            "alice",
            "--load",
            "a.yaml",
            "--load",
            "dir",
            "--bookmark-interval",
            "2s",
            "--compaction-interval",
            "off",
            "--history-size",
            "50",
            "--initial-revision",
            "1000",
            "--no-watch-list",
            "-v",
        ])
        .unwrap();
        assert_eq!(o.address, "0.0.0.0".parse::<IpAddr>().unwrap());
        assert_eq!(o.port, 6443);
        assert!(o.https && o.verbose && !o.watch_list && o.admin_api);
        assert_eq!(o.tokens, [("alice".to_owned(), "s3cret=x".to_owned())]);
        assert_eq!(o.client_certs, ["bob"]);
        assert_eq!(o.admins, ["alice"]);
        assert_eq!(o.loads, [PathBuf::from("a.yaml"), PathBuf::from("dir")]);
        assert_eq!(o.bookmark_interval, Some(Duration::from_secs(2)));
        assert_eq!(o.compaction_interval, Some(None));
        assert_eq!((o.history_size, o.initial_revision), (Some(50), Some(1000)));
        assert_eq!(
            o.rules,
            [AccessRule::user("viewer")
                .verbs(&["get", "list"])
                .resources(&["configmaps", "pods/status"])]
        );
        assert_eq!(
            run_opts(&["--compaction-interval", "30s"]).unwrap().compaction_interval,
            Some(Some(Duration::from_secs(30)))
        );
        let r = run_opts(&[
            "--authorization-mode",
            "RBAC",
            "--anonymous-auth",
            "false",
            "--groups",
            "alice=dev,ops",
            "--insecure-allow-unauthenticated-remote-access",
        ])
        .unwrap();
        assert!(r.rbac && r.insecure_remote && r.authenticated());
        assert_eq!(r.anonymous_auth, Some(false));
        assert_eq!(
            r.groups,
            [("alice".to_owned(), vec!["dev".to_owned(), "ops".to_owned()])]
        );
        assert!(!run_opts(&[]).unwrap().sharded_list_and_watch);
        let g = run_opts(&["--feature-gates", "ShardedListAndWatch=true, WatchList=false"]).unwrap();
        assert!(g.sharded_list_and_watch && !g.watch_list);
        let g = run_opts(&[
            "--feature-gates=ShardedListAndWatch=true",
            "--feature-gates=ShardedListAndWatch=0",
        ])
        .unwrap();
        assert!(!g.sharded_list_and_watch);
        let l = run_opts(&[
            "--read-header-timeout",
            "2s",
            "--idle-timeout=500ms",
            "--max-connections",
            "10",
            "--max-requests-inflight",
            "0",
        ])
        .unwrap();
        assert_eq!(
            l.limits,
            [
                ("--read-header-timeout".to_owned(), Limit::Wait(Duration::from_secs(2))),
                ("--idle-timeout".to_owned(), Limit::Wait(Duration::from_millis(500))),
                ("--max-connections".to_owned(), Limit::Count(10)),
                ("--max-requests-inflight".to_owned(), Limit::Count(0)),
            ]
        );
        assert!(matches!(parse(["-h".into()]), Ok(Command::Help)));
        assert!(matches!(parse(["--version".into()]), Ok(Command::Version)));
    }

    #[test]
    fn refuses_bad_arguments_without_repeating_secrets() {
        let cases: &[(&[&str], &str)] = &[
            (&["--port", "x"], "--port: \"x\" is not a valid number"),
            (&["--port", "70000"], "not a valid number"),
            (&["--address", "localhost"], "not an IP address"),
            (&["--bookmark-interval", "10"], "missing unit"),
            (&["--bookmark-interval", "0s"], "more than 0"),
            (&["--allow", ":get"], "names no user"),
            (&["--allow", "u:fetch"], "unknown verb \"fetch\""),
            (&["--allow", "u:get,:pods"], "empty item"),
            (&["--client-cert", "bob"], "needs --https"),
            (&["--admin", "a", "--no-admin-api"], "contradict"),
            (&["--authorization-mode", "ABAC"], "not a mode"),
            (&["--anonymous-auth", "yes"], "not true or false"),
            (&["--groups", "alice"], "USER=GROUP"),
            (&["--idle-timeout", "0s"], "every wait has a deadline"),
            (&["--read-header-timeout", "5"], "missing unit"),
            (&["--max-connections", "0"], "must be more than 0"),
            (&["--frobnicate"], "--frobnicate"),
            (&["stray"], "unexpected argument"),
            (&["--port"], "missing argument"),
            (
                &["--feature-gates", "Sharded=true"],
                "unrecognized feature gate: Sharded",
            ),
            (
                &["--feature-gates", "ShardedListAndWatch"],
                "missing bool value for ShardedListAndWatch",
            ),
            (
                &["--feature-gates", "ShardedListAndWatch=yes"],
                "invalid value of ShardedListAndWatch=yes",
            ),
        ];
        for (args, want) in cases {
            let err = run_opts(args).unwrap_err();
            assert!(err.contains(want), "{args:?}: {err}");
        }
        let err = run_opts(&["--token", "hunter2"]).unwrap_err();
        assert!(err.contains("USER=TOKEN") && !err.contains("hunter2"), "{err}");
    }
}
