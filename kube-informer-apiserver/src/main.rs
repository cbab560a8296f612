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

/// The usage's first lines, before the flags.
const USAGE_HEAD: &str = "\
kube-informer-apiserver: a Kubernetes API server in one process, state in memory, with fault injection.

Usage: kube-informer-apiserver [OPTIONS]
";

/// The usage's last lines, after the flags.
const USAGE_TAIL: &str = "\
Durations are written as Go writes them: 500ms, 30s, 5m, 1h30m.

Once listening it prints one JSON line on stdout: {\"listening\": URL, \"kubeconfig\": PATH, \"admin\": URL, ...}.
SIGINT or SIGTERM stops it cleanly.

The admin API (faults, compaction, restart, request log) is under /kube-informer/admin/; for example:
  curl -X POST URL/kube-informer/admin/faults -d '{\"verb\":\"list\",\"resource\":\"configmaps\",\"error\":429}'
  curl URL/kube-informer/admin/            # every endpoint, and the server's revision and watchers
";

/// One flag, declared once: both the usage's line for it and what parsing it does come from here.
struct Flag {
    /// Its name, without the leading `--`.
    long: &'static str,
    /// Its one-letter name, if any.
    short: Option<char>,
    /// The name of its value in the usage; `None` for a switch.
    value: Option<&'static str>,
    /// What the usage says of it (wrapped when printed).
    help: &'static str,
    /// What giving it does.
    action: Action,
}

/// What giving a flag does.
#[derive(Clone, Copy)]
enum Action {
    /// Prints the usage.
    Help,
    /// Prints the version.
    Version,
    /// A switch: sets what it says.
    Switch(fn(&mut Options)),
    /// A flag with a value: sets what it says from the value, or words what is wrong with it (given the flag's
    /// `--name`, for the message).
    Value(fn(&mut Options, OsString, &str) -> Result<(), String>),
}

/// The flags under one heading of the usage.
struct Section {
    title: &'static str,
    flags: &'static [Flag],
}

/// A flag without a one-letter name.
const fn flag(long: &'static str, value: Option<&'static str>, help: &'static str, action: Action) -> Flag {
    Flag {
        long,
        short: None,
        value,
        help,
        action,
    }
}

/// A switch.
const fn switch(long: &'static str, help: &'static str, set: fn(&mut Options)) -> Flag {
    flag(long, None, help, Action::Switch(set))
}

/// A flag taking a value named `value` in the usage.
const fn valued(
    long: &'static str,
    value: &'static str,
    help: &'static str,
    set: fn(&mut Options, OsString, &str) -> Result<(), String>,
) -> Flag {
    flag(long, Some(value), help, Action::Value(set))
}

/// Every flag, in the usage's order: the one declaration of each.
const SECTIONS: &[Section] = &[
    Section {
        title: "Listening:",
        flags: &[
            valued(
                "address",
                "IP",
                "Address to listen on [default: 127.0.0.1]; 0.0.0.0 or :: for every interface. Beyond loopback it \
                 needs authentication (--token, --client-cert or --authorization-mode RBAC), unless \
                 --insecure-allow-unauthenticated-remote-access",
                |o, v, flag| {
                    let s = string(v, flag)?;
                    o.address = s.parse().map_err(|_| format!("{flag}: {s:?} is not an IP address"))?;
                    Ok(())
                },
            ),
            switch(
                "insecure-allow-unauthenticated-remote-access",
                "Serve a non-loopback address with no authentication: anyone who reaches it may do anything (the \
                 admin API then answers loopback clients only)",
                |o| o.insecure_remote = true,
            ),
            valued(
                "port",
                "N",
                "Port to listen on [default: 0, any free port]",
                |o, v, flag| {
                    o.port = number(v, flag)?;
                    Ok(())
                },
            ),
            switch(
                "https",
                "Serve HTTPS with a fresh CA (the kubeconfig carries it)",
                |o| o.https = true,
            ),
        ],
    },
    Section {
        title: "Clients:",
        flags: &[
            valued(
                "kubeconfig-out",
                "PATH",
                "Write a kubeconfig for the server there once it listens (kept after stop)",
                |o, v, _| {
                    o.kubeconfig_out = Some(PathBuf::from(v));
                    Ok(())
                },
            ),
            valued(
                "kubeconfig-user",
                "USER",
                "Whose credentials the kubeconfig holds [default: the first admin with a token or certificate, \
                 else the first token's user]",
                |o, v, flag| {
                    o.kubeconfig_user = Some(string(v, flag)?);
                    Ok(())
                },
            ),
            valued(
                "token",
                "USER=TOKEN",
                "Accept `Authorization: Bearer TOKEN` as USER; turns authentication on",
                |o, v, flag| {
                    let s = string(v, flag)?;
                    match s.split_once('=') {
                        Some((user, token)) if !user.is_empty() && !token.is_empty() => {
                            o.tokens.push((user.to_owned(), token.to_owned()));
                            Ok(())
                        }
                        // The value may hold a secret: never repeat it.
                        _ => Err(format!("{flag}: expected USER=TOKEN")),
                    }
                },
            ),
            valued(
                "client-cert",
                "USER",
                "Issue a client certificate for USER (needs --https); turns authentication on",
                |o, v, flag| {
                    o.client_certs.push(string(v, flag)?);
                    Ok(())
                },
            ),
            valued(
                "allow",
                "USER[:VERBS[:RESOURCES]]",
                "Let USER do VERBS (comma-separated: get,list,watch,create,update,patch,delete,deletecollection \
                 or *) on RESOURCES (plural, plural.group, plural/status or *). With no --allow at all, every \
                 authenticated user may do everything",
                |o, v, flag| {
                    o.rules.push(rule(&string(v, flag)?)?);
                    Ok(())
                },
            ),
            valued(
                "groups",
                "USER=GROUP[,GROUP]",
                "Put a token or certificate user in these groups (RBAC bindings to groups)",
                |o, v, flag| {
                    let s = string(v, flag)?;
                    match s.split_once('=') {
                        Some((user, groups)) if !user.is_empty() && !groups.is_empty() => {
                            o.groups
                                .push((user.to_owned(), groups.split(',').map(str::to_owned).collect()));
                            Ok(())
                        }
                        _ => Err(format!("{flag}: expected USER=GROUP[,GROUP]")),
                    }
                },
            ),
            valued(
                "admin",
                "USER",
                "Let USER use the admin API (and, once any --allow is given, everything else; with RBAC, USER is \
                 in system:masters)",
                |o, v, flag| {
                    o.admins.push(string(v, flag)?);
                    Ok(())
                },
            ),
        ],
    },
    Section {
        title: "Authorization:",
        flags: &[
            valued(
                "authorization-mode",
                "MODE",
                "AlwaysAllow [default]: the --allow rules (with none, every authenticated user may do everything); \
                 RBAC: as kube-apiserver --authorization-mode=RBAC: Roles, ClusterRoles and their bindings decide \
                 (load them with --load), nothing is allowed by default, the bootstrap roles (cluster-admin, admin, \
                 edit, view, system:*) exist, --allow rules grant beside them, and a kubeconfig user system:admin \
                 (in system:masters) is made when no --admin has credentials",
                |o, v, flag| {
                    o.rbac = match string(v, flag)?.as_str() {
                        "RBAC" => true,
                        "AlwaysAllow" => false,
                        other => return Err(format!("{flag}: {other:?} is not a mode (RBAC or AlwaysAllow)")),
                    };
                    Ok(())
                },
            ),
            valued(
                "anonymous-auth",
                "BOOL",
                "With RBAC, serve requests without credentials as system:anonymous [default: true]",
                |o, v, flag| {
                    o.anonymous_auth = Some(match string(v, flag)?.as_str() {
                        "true" => true,
                        "false" => false,
                        other => return Err(format!("{flag}: {other:?} is not true or false")),
                    });
                    Ok(())
                },
            ),
        ],
    },
    Section {
        title: "Server behaviour:",
        flags: &[
            valued(
                "load",
                "PATH",
                "Create the objects of a YAML/JSON manifest file or folder at start (repeatable; multi-document \
                 YAML and List kinds; namespaces first)",
                |o, v, _| {
                    o.loads.push(PathBuf::from(v));
                    Ok(())
                },
            ),
            valued(
                "bookmark-interval",
                "D",
                "BOOKMARK interval of watches [default: 1m]",
                |o, v, flag| {
                    let d = duration(v, flag)?;
                    if d.is_zero() {
                        return Err(format!("{flag}: must be more than 0"));
                    }
                    o.bookmark_interval = Some(d);
                    Ok(())
                },
            ),
            valued(
                "compaction-interval",
                "D",
                "Compact every D to the previous tick's revision, or `off` [default: 5m]",
                |o, v, flag| {
                    o.compaction_interval = Some(if v == "off" {
                        None
                    } else {
                        Some(duration(v, flag)?).filter(|d| !d.is_zero())
                    });
                    Ok(())
                },
            ),
            valued(
                "history-size",
                "N",
                "Watch events kept per resource [default: 10000]",
                |o, v, flag| {
                    o.history_size = Some(number(v, flag)?);
                    Ok(())
                },
            ),
            valued(
                "initial-revision",
                "N",
                "First resourceVersion [default: 1]",
                |o, v, flag| {
                    o.initial_revision = Some(number(v, flag)?);
                    Ok(())
                },
            ),
            switch(
                "no-watch-list",
                "Refuse streaming lists (sendInitialEvents) as servers without WatchList do",
                |o| o.watch_list = false,
            ),
            valued(
                "feature-gates",
                "GATES",
                "key=value pairs, comma-separated, as kube-apiserver takes them: ShardedListAndWatch=true|false \
                 [default: false] (shardSelector honoured, else ignored); WatchList=true|false [default: true] (as \
                 --no-watch-list)",
                |o, v, flag| {
                    for (gate, enabled) in feature_gates(&string(v, flag)?)? {
                        match gate.as_str() {
                            "ShardedListAndWatch" => o.sharded_list_and_watch = enabled,
                            _ => o.watch_list = enabled,
                        }
                    }
                    Ok(())
                },
            ),
            switch("no-admin-api", "Do not serve the admin API", |o| o.admin_api = false),
        ],
    },
    Section {
        title: "Limits (every wait has a deadline; kube-apiserver's values by default):",
        flags: &[
            valued(
                "read-header-timeout",
                "D",
                "A request head must arrive within D of its first byte [default: 32s]",
                wait,
            ),
            valued(
                "tls-handshake-timeout",
                "D",
                "A TLS handshake must end within D of the connection's start [default: 32s]",
                wait,
            ),
            valued(
                "request-body-timeout",
                "D",
                "A request body must arrive within D of its head (then 504) [default: 1m]",
                wait,
            ),
            valued(
                "idle-timeout",
                "D",
                "A keep-alive connection waits D for its next request [default: 1m30s]",
                wait,
            ),
            valued(
                "write-timeout",
                "D",
                "A write making no progress for D drops the connection [default: 1m]",
                wait,
            ),
            valued(
                "max-connections",
                "N",
                "Connections served at once, one thread each; past it, 429 [default: 1024]",
                |o, v, flag| {
                    let n: usize = number(v, flag)?;
                    if n == 0 {
                        return Err(format!("{flag}: must be more than 0"));
                    }
                    o.limits.push((flag.to_owned(), Limit::Count(n)));
                    Ok(())
                },
            ),
            valued(
                "max-requests-inflight",
                "N",
                "Non-mutating requests at once, watches aside; past it, 429; 0: no limit [default: 400]",
                count,
            ),
            valued(
                "max-mutating-requests-inflight",
                "N",
                "Mutating requests at once; past it, 429; 0: no limit [default: 200]",
                count,
            ),
        ],
    },
    Section {
        title: "Other:",
        flags: &[
            Flag {
                short: Some('v'),
                ..switch("verbose", "Log debug messages to stderr (-v once is enough)", |o| {
                    o.verbose = true
                })
            },
            Flag {
                short: Some('h'),
                ..flag("help", None, "Print this help", Action::Help)
            },
            Flag {
                short: Some('V'),
                ..flag("version", None, "Print the version", Action::Version)
            },
        ],
    },
];

/// A limit that is a wait: more than 0 (every wait has a deadline).
fn wait(o: &mut Options, v: OsString, flag: &str) -> Result<(), String> {
    let d = duration(v, flag)?;
    if d.is_zero() {
        return Err(format!("{flag}: must be more than 0 (every wait has a deadline)"));
    }
    o.limits.push((flag.to_owned(), Limit::Wait(d)));
    Ok(())
}

/// A limit that is a count, 0 for none.
fn count(o: &mut Options, v: OsString, flag: &str) -> Result<(), String> {
    let n = number(v, flag)?;
    o.limits.push((flag.to_owned(), Limit::Count(n)));
    Ok(())
}

/// Every declared flag.
fn flags() -> impl Iterator<Item = &'static Flag> {
    SECTIONS.iter().flat_map(|s| s.flags)
}

/// The column where the usage's descriptions start, and the width it is wrapped to.
const HELP_COLUMN: usize = 33;
const USAGE_WIDTH: usize = 117;

/// The usage (`--help`), made from the declared flags.
fn usage() -> String {
    let mut out = String::from(USAGE_HEAD);
    for section in SECTIONS {
        out.push('\n');
        out.push_str(section.title);
        out.push('\n');
        for f in section.flags {
            let mut name = match f.short {
                Some(c) => format!("  -{c}, --{}", f.long),
                None => format!("      --{}", f.long),
            };
            if let Some(v) = f.value {
                name.push(' ');
                name.push_str(v);
            }
            let mut lines = wrap(f.help, USAGE_WIDTH - HELP_COLUMN).into_iter();
            if name.len() + 2 <= HELP_COLUMN {
                let first = lines.next().unwrap_or_default();
                out.push_str(&format!("{name:HELP_COLUMN$}{first}\n"));
            } else {
                out.push_str(&name);
                out.push('\n');
            }
            for line in lines {
                out.push_str(&format!("{:HELP_COLUMN$}{line}\n", ""));
            }
        }
    }
    out.push('\n');
    out.push_str(USAGE_TAIL);
    out
}

/// `text`'s words in lines of at most `width` characters (a longer word on a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

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
        let (declared, given) = match &arg {
            Long(l) => (flags().find(|f| f.long == *l), format!("--{l}")),
            Short(c) => (flags().find(|f| f.short == Some(*c)), format!("-{c}")),
            Value(v) => return Err(format!("unexpected argument {v:?}")),
        };
        let Some(declared) = declared else {
            return Err(format!("unknown option {given}"));
        };
        match declared.action {
            Action::Help => return Ok(Command::Help),
            Action::Version => return Ok(Command::Version),
            Action::Switch(set) => set(&mut o),
            Action::Value(set) => set(&mut o, value(&mut p)?, &format!("--{}", declared.long))?,
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
            print!("{}", usage());
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
#[path = "main_tests.rs"]
mod tests;
