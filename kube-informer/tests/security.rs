//! Secrets stay secret: with every log line captured at trace level — ours and our dependencies' — an authenticated
//! session of each kind (bearer token, token file, basic auth, client certificate, exec plugin issuing a token or a
//! certificate, a failing plugin; informer sync, a watch, writes, 401 and 403 answers) leaves no token, password
//! or private key material in any log line or error; and `{:?}` of every type that holds a credential is redacted.
//!
//! Secrets here are long (≥ 32 bytes) and the search looks for any 12-byte piece of them, so a secret split across
//! lines — a hex dump prints 16 bytes a row — is still found.

mod common;

use std::sync::Arc;

use common::{TempDir, WAIT, cm, fixture, plugin};
use kube_informer::client::params::{ListParams, PostParams, WatchParams};
use kube_informer::client::{Api, Client, Config, ExecConfig, Kubeconfig, Secret};
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::object::core::ConfigMap;
use kube_informer_apiserver::{AccessRule, ApiServer, Verb};
use parking_lot::Mutex;

// ---- capturing every log line ---------------------------------------------------------------------------------------

struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        let line = format!("{} {}: {}", record.level(), record.target(), record.args());
        self.0.lock().push(line);
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

fn capture_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        log::set_logger(&CAPTURE).expect("the only logger of this binary");
        log::set_max_level(log::LevelFilter::Trace);
    });
}

/// Every 12-byte piece of each secret that appears in `text`, with the secret's label.
fn leaks(text: &str, secrets: &[(&str, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (label, secret) in secrets {
        let bytes = secret.as_bytes();
        assert!(bytes.len() >= 32, "{label}: test secrets are at least 32 bytes");
        if bytes
            .windows(12)
            .any(|w| text.contains(std::str::from_utf8(w).unwrap_or("\u{0}")))
        {
            found.push(format!("{label} in {text:?}"));
        }
    }
    found
}

// ---- the secrets ---------------------------------------------------------------------------------------------------

const ALICE_TOKEN: &str = "alice-token-3f9a7c1e5b2d8064a1c9e7f3b5d2";
const BOB_TOKEN: &str = "bob-token-8e4c2a6f0d1b3957c8e2a4f6d0b1";
const EXEC_TOKEN: &str = "exec-token-5d7f9b1c3e2a4068d5f7b9c1e3a2";
const FILE_TOKEN: &str = "file-token-2b4d6f8a0c1e3579b2d4f6a8c0e1";
const WRONG_TOKEN: &str = "wrong-token-7a9c1e3b5d0f2468a7c9e1b3d5f0";
const PASSWORD: &str = "basic-password-6c8e0a2d4f1b3579c6e8a0d2f4b1";

/// The PEM body lines of a private key (what would leak).
fn key_lines(pem: &str) -> Vec<String> {
    pem.lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 32)
        .map(str::to_owned)
        .collect()
}

fn base64(input: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in input.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            out.push(if i <= c.len() {
                A[((n >> (18 - 6 * i)) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

// ---- the session ---------------------------------------------------------------------------------------------------

#[test]
fn no_credential_reaches_a_log_line_or_an_error() {
    capture_logs();
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .https()
        .token(ALICE_TOKEN, "alice")
        .token(BOB_TOKEN, "bob")
        .token(EXEC_TOKEN, "erin")
        .token(FILE_TOKEN, "frank")
        .client_cert("carol")
        .kubeconfig_user("alice")
        .rule(AccessRule::user("alice"))
        .rule(
            AccessRule::user("bob")
                .verbs(&["get", "list", "watch"])
                .resources(&["configmaps"]),
        )
        .rule(AccessRule::user("carol"))
        .rule(AccessRule::user("erin"))
        .rule(AccessRule::user("frank"))
        .start()
        .unwrap();
    let carol = server.client_identity("carol").unwrap().clone();
    let dir = TempDir::new("session");
    let base = || {
        Config::new(server.url())
            .proxy(None)
            .ca_pem(server.ca_pem().unwrap().as_bytes().to_vec())
    };
    let mut errors: Vec<String> = Vec::new();
    let mut note = |e: kube_informer::Error| errors.push(format!("{e} / {e:?}"));

    // Bearer token (from the server's kubeconfig): an informer syncs and sees writes; a plain watch.
    let alice = Client::new(
        Config::from_kubeconfig_file(server.kubeconfig_path(), None)
            .unwrap()
            .proxy(None),
    )
    .unwrap();
    let api = Api::<ConfigMap>::namespaced(alice.clone(), "ns");
    api.create(&PostParams::default(), &cm("ns", "one", "1")).unwrap();
    let inf = SharedIndexInformer::for_api(&api, InformerOptions::default());
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    let mut watch = api.watch(&WatchParams::default().timeout(5)).unwrap();
    api.create(&PostParams::default(), &cm("ns", "two", "2")).unwrap();
    assert!(watch.next().is_some());
    common::eventually("the informer saw the write", || inf.lister().len() == 2);
    inf.stop();

    // 403: bob may only read configmaps; his informer on secrets is refused (and warns).
    let bob = Client::new(base().token(BOB_TOKEN)).unwrap();
    note(
        Api::<ConfigMap>::namespaced(bob.clone(), "ns")
            .create(&PostParams::default(), &cm("ns", "x", "1"))
            .unwrap_err(),
    );
    let secrets = kube_informer::object::ApiResource::new("", "v1", "Secret", "secrets", true);
    let refused = SharedIndexInformer::<kube_informer::object::DynamicObject>::for_api(
        &Api::all_with(bob, &secrets),
        InformerOptions::default(),
    );
    let mark = server.requests().mark();
    refused.start().unwrap();
    assert!(
        server.requests().wait_for(mark, WAIT, |r| r
            .iter()
            .any(|x| (x.is(Verb::List, "secrets") || x.is(Verb::Watch, "secrets")) && x.code == 403)),
        "the informer's first request was refused"
    );
    assert!(!refused.has_synced());
    refused.stop();

    // 401: a wrong token; basic auth (the server knows none).
    note(
        Api::<ConfigMap>::all(Client::new(base().token(WRONG_TOKEN)).unwrap())
            .list(&ListParams::default())
            .unwrap_err(),
    );
    note(
        Api::<ConfigMap>::all(Client::new(base().basic_auth("dave", PASSWORD)).unwrap())
            .list(&ListParams::default())
            .unwrap_err(),
    );

    // A token file.
    let token_file = dir.path("token");
    std::fs::write(&token_file, FILE_TOKEN).unwrap();
    Api::<ConfigMap>::all(Client::new(base().token_file(&token_file)).unwrap())
        .list(&ListParams::default())
        .unwrap();

    // A client certificate: informer sync and a watch.
    let cert_client = Client::new(base().client_cert_pem(carol.cert_pem.clone(), carol.key_pem.clone())).unwrap();
    let cert_api = Api::<ConfigMap>::namespaced(cert_client, "ns");
    let inf = SharedIndexInformer::for_api(&cert_api, InformerOptions::default());
    inf.start().unwrap();
    inf.wait_for_cache_sync(WAIT).unwrap();
    inf.stop();

    // Exec plugins: a token, a certificate, a failure (this part is skipped, saying so, without `sh`).
    if common::can_run_sh_plugins() {
        let exec_api = Api::<ConfigMap>::all(Client::new(base().exec(plugin(&dir, EXEC_TOKEN, ""))).unwrap());
        exec_api.list(&ListParams::default()).unwrap();
        let (cert_file, key_file) = (dir.path("carol.crt"), dir.path("carol.key"));
        std::fs::write(&cert_file, &carol.cert_pem).unwrap();
        std::fs::write(&key_file, &carol.key_pem).unwrap();
        let cert_plugin = plugin(&dir, EXEC_TOKEN, "")
            .env("CERT", cert_file.display().to_string())
            .env("KEY", key_file.display().to_string());
        Api::<ConfigMap>::all(Client::new(base().exec(cert_plugin)).unwrap())
            .list(&ListParams::default())
            .unwrap();
        let failing = plugin(&dir, EXEC_TOKEN, "").env("FAIL", "the plugin could not log in");
        note(
            Api::<ConfigMap>::all(Client::new(base().exec(failing)).unwrap())
                .list(&ListParams::default())
                .unwrap_err(),
        );
    }

    let mut secrets: Vec<(&str, String)> = vec![
        ("alice's token", ALICE_TOKEN.into()),
        ("bob's token", BOB_TOKEN.into()),
        ("the exec token", EXEC_TOKEN.into()),
        ("the file token", FILE_TOKEN.into()),
        ("the wrong token", WRONG_TOKEN.into()),
        ("the password", PASSWORD.into()),
        ("the basic auth header", base64(format!("dave:{PASSWORD}").as_bytes())),
    ];
    for line in key_lines(&carol.key_pem) {
        secrets.push(("carol's private key", line));
    }
    let lines = CAPTURE.0.lock().clone();
    assert!(
        lines.iter().any(|l| l.starts_with("TRACE ureq")),
        "trace lines of the HTTP stack were captured ({} lines)",
        lines.len()
    );
    let mut found: Vec<String> = lines.iter().flat_map(|l| leaks(l, &secrets)).collect();
    found.extend(errors.iter().flat_map(|e| leaks(e, &secrets)));
    found.truncate(10);
    assert!(found.is_empty(), "secrets leaked:\n{}", found.join("\n"));
}

// ---- Debug output --------------------------------------------------------------------------------------------------

#[test]
fn debug_of_every_credential_bearing_type_is_redacted() {
    let key_pem = std::fs::read_to_string(fixture("tls/rsa-client.key")).unwrap();
    let cert_pem = std::fs::read_to_string(fixture("tls/rsa-client.crt")).unwrap();
    let key_b64 = base64(key_pem.as_bytes());
    let mut secrets: Vec<(&str, String)> = vec![
        ("token", ALICE_TOKEN.into()),
        ("password", PASSWORD.into()),
        ("exec argument", EXEC_TOKEN.into()),
        ("exec environment value", FILE_TOKEN.into()),
        ("auth-provider secret", BOB_TOKEN.into()),
        ("proxy password", WRONG_TOKEN.into()),
    ];
    for line in key_lines(&key_pem) {
        secrets.push(("private key", line));
    }
    secrets.push(("base64 private key", key_b64[..64].to_owned()));
    let exec = ExecConfig::new("get-token")
        .args(["--secret", EXEC_TOKEN])
        .env("SECRET", FILE_TOKEN);
    let mut texts: Vec<String> = Vec::new();
    let configs = [
        Config::new("https://h:6443").token(ALICE_TOKEN),
        Config::new("https://h:6443").basic_auth("dave", PASSWORD),
        Config::new("https://h:6443").client_cert_pem(cert_pem.clone(), key_pem.clone()),
        Config::new("https://h:6443").exec(exec.clone()),
        Config::new("https://h:6443")
            .token(ALICE_TOKEN)
            .proxy(Some(&format!("http://u:{WRONG_TOKEN}@proxy:3128"))),
    ];
    for c in &configs {
        texts.push(format!("{c:?}"));
        texts.push(format!("{:?}", Client::new(c.clone()).unwrap()));
    }
    texts.push(format!("{:?}", Secret::new(ALICE_TOKEN)));
    texts.push(format!("{exec:?}"));

    // A kubeconfig with every kind of credential, its resolved configs and clients.
    let kubeconfig = format!(
        r#"
apiVersion: v1
kind: Config
current-context: token
clusters:
- name: c
  cluster: {{server: "https://h:6443", proxy-url: "http://u:{WRONG_TOKEN}@proxy:3128"}}
users:
- name: token
  user: {{token: {ALICE_TOKEN}}}
- name: basic
  user: {{username: dave, password: {PASSWORD}}}
- name: cert
  user: {{client-certificate-data: {cert}, client-key-data: {key_b64}}}
- name: exec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: get-token
      args: ["--secret", "{EXEC_TOKEN}"]
      env: [{{name: SECRET, value: "{FILE_TOKEN}"}}]
- name: provider
  user:
    auth-provider: {{name: oidc, config: {{id-token: {BOB_TOKEN}}}}}
contexts:
- {{name: token, context: {{cluster: c, user: token}}}}
- {{name: basic, context: {{cluster: c, user: basic}}}}
- {{name: cert, context: {{cluster: c, user: cert}}}}
- {{name: exec, context: {{cluster: c, user: exec}}}}
- {{name: provider, context: {{cluster: c, user: provider}}}}
"#,
        cert = base64(cert_pem.as_bytes()),
    );
    let kc = Kubeconfig::parse(&kubeconfig, None).unwrap();
    texts.push(format!("{kc:?}"));
    for context in kc.context_names() {
        match kc.to_config(Some(context)) {
            Ok(c) => {
                texts.push(format!("{c:?}"));
                if let Ok(client) = Client::new(c) {
                    texts.push(format!("{client:?}"));
                }
            }
            Err(e) => texts.push(format!("{e} / {e:?}")),
        }
    }
    // Errors about credentials: a key that is not base64, a key that does not match its certificate, a token of
    // the wrong type.
    let broken = [
        format!("users: [{{name: u, user: {{client-key-data: '{ALICE_TOKEN}!!', client-certificate-data: x}}}}]"),
        format!("users: [{{name: u, user: {{token: [{PASSWORD}]}}}}]"),
        format!("users: [{{name: u, user: {{password: {{nested: {PASSWORD}}}}}}}]"),
    ];
    for text in broken {
        let full = format!(
            "{text}\nclusters: [{{name: c, cluster: {{server: 'https://h'}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n"
        );
        match Kubeconfig::parse(&full, None)
            .and_then(|k| k.to_config(None))
            .and_then(Client::new)
        {
            Ok(c) => texts.push(format!("{c:?}")),
            Err(e) => texts.push(format!("{e} / {e:?}")),
        }
    }
    let other_key = std::fs::read_to_string(fixture("tls/ec-client.key")).unwrap();
    for line in key_lines(&other_key) {
        secrets.push(("the mismatched key", line));
    }
    match Client::new(Config::new("https://h:6443").client_cert_pem(cert_pem.clone(), other_key.clone())) {
        Ok(c) => panic!("a key that does not match its certificate was accepted: {c:?}"),
        Err(e) => texts.push(format!("{e} / {e:?}")),
    }
    // The embedded server's own credentials.
    let server = ApiServer::builder()
        .namespaces(["ns"])
        .https()
        .token(ALICE_TOKEN, "alice")
        .client_cert("carol")
        .start()
        .unwrap();
    let carol = server.client_identity("carol").unwrap();
    for line in key_lines(&carol.key_pem) {
        secrets.push(("the server-issued key", line));
    }
    texts.push(format!("{server:?}"));
    texts.push(format!("{carol:?}"));
    texts.push(format!(
        "{:?}",
        ApiServer::builder().namespaces(["ns"]).token(ALICE_TOKEN, "alice")
    ));

    let found: Vec<String> = texts.iter().flat_map(|t| leaks(t, &secrets)).collect();
    assert!(found.is_empty(), "secrets in Debug output:\n{}", found.join("\n"));
    assert!(
        texts.iter().any(|t| t.contains("basic auth as \"dave\"")),
        "Debug still says what it is: {texts:#?}"
    );
    let _ = Arc::new(());
}

// ---- exec plugin failures ------------------------------------------------------------------------------------------

/// The error of a request made with a client running `script` as its exec plugin.
fn exec_error(script: &str, hint: Option<&str>) -> String {
    let mut exec = ExecConfig::new("sh").args(["-c", script]);
    exec.install_hint = hint.map(str::to_owned);
    // Nothing listens on port 1: the plugin fails before any connection is needed.
    let client = Client::new(Config::new("https://127.0.0.1:1").proxy(None).exec(exec)).unwrap();
    let err = Api::<ConfigMap>::all(client).list(&ListParams::default()).unwrap_err();
    assert!(matches!(err, kube_informer::Error::Auth(_)), "{err:?}");
    format!("{err} / {err:?}")
}

/// Set in the copy of this binary that `a_failing_plugins_stderr_reaches_the_process_stderr_and_nothing_else` runs.
const STDERR_PROBE: &str = "KUBE_INFORMER_TEST_EXEC_STDERR_PROBE";

#[test]
fn a_failing_plugins_stderr_reaches_the_process_stderr_and_nothing_else() {
    if !common::can_run_sh_plugins() {
        return;
    }
    const NAME: &str = "a_failing_plugins_stderr_reaches_the_process_stderr_and_nothing_else";
    // A plugin that prints a credential, then a secret on stderr (plugins print tokens and keys there when a login
    // half works), and fails.
    let credential = format!(
        r#"{{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{{"token":"{EXEC_TOKEN}"}}}}"#
    );
    let script = format!("printf '%s' '{credential}'; printf 'login half done, key={EXEC_TOKEN}\\n' >&2; exit 3");
    if std::env::var_os(STDERR_PROBE).is_some() {
        // The copy: every log line captured; the error and the log lines go to stdout for the original to read.
        capture_logs();
        let err = exec_error(&script, None);
        println!("ERROR: {err}");
        for line in CAPTURE.0.lock().iter() {
            println!("LOG: {line}");
        }
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(STDERR_PROBE, "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "the copy ran: {stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("login half done, key={EXEC_TOKEN}")),
        "the plugin's stderr reached the process's stderr: {stderr}"
    );
    let error = stdout.lines().find(|l| l.contains("ERROR: ")).unwrap_or_default();
    assert!(
        error.contains("exit status: 3") && error.contains("standard error"),
        "the error says how the plugin ended and where its complaint went: {stdout}"
    );
    assert!(
        stdout.contains("LOG: DEBUG kube_informer::client::exec: exec plugin \"sh\" failed"),
        "the failure was logged: {stdout}"
    );
    assert!(
        leaks(&stdout, &[("the exec token", EXEC_TOKEN.to_owned())]).is_empty(),
        "neither the error nor a log line holds what the plugin printed: {stdout}"
    );
}

#[test]
fn exec_plugin_errors_never_show_the_credential() {
    if !common::can_run_sh_plugins() {
        return;
    }
    // Output that is not a valid credential: the message says where it broke, never what it held.
    for bad in [
        format!(
            r#"{{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{{"token":"{EXEC_TOKEN}""#
        ),
        format!(
            r#"{{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{{"token":["{EXEC_TOKEN}"]}}}}"#
        ),
        format!(r#"{{"kind":"ExecCredential","apiVersion":"v0","status":{{"token":"{EXEC_TOKEN}"}}}}"#),
        format!(
            r#"{{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{{"token":"{EXEC_TOKEN}","expirationTimestamp":"{EXEC_TOKEN}"}}}}"#
        ),
        format!("{EXEC_TOKEN}\n"),
    ] {
        let err = exec_error(&format!("printf '%s' '{bad}'"), None);
        assert!(
            leaks(&err, &[("the exec token", EXEC_TOKEN.to_owned())]).is_empty(),
            "{err}"
        );
    }

    // A plugin that is not installed: the install hint.
    let mut missing = ExecConfig::new("kube-informer-no-such-plugin");
    missing.install_hint = Some("Install it with `brew install no-such-plugin`.".into());
    let client = Client::new(Config::new("https://127.0.0.1:1").proxy(None).exec(missing)).unwrap();
    let err = Api::<ConfigMap>::all(client)
        .list(&ListParams::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("brew install no-such-plugin"), "{err}");
}
