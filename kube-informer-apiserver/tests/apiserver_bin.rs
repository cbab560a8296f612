//! The `kube-informer-apiserver` binary as a user runs it: flags, the line it prints once listening, the
//! kubeconfig it leaves, manifests loaded at start, the admin API's access rules, and a clean stop on SIGINT and
//! SIGTERM.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Instant;

use common::{TempDir, WAIT};
use kube_informer::client::{Api, Client, Config};
use kube_informer::object::core::ConfigMap;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_kube-informer-apiserver");

/// A running server, killed if the test fails before stopping it.
struct Running {
    child: Child,
    /// The JSON line printed once listening.
    line: Value,
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        // Read the line on a thread, so a server that never prints fails the test instead of hanging it.
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(WAIT).expect("the listening line");
        let mut running = Running {
            child,
            line: Value::Null,
        };
        running.line = serde_json::from_str(&line).unwrap_or_else(|e| {
            let err = running.stop_and_stderr(None).1;
            panic!("not a JSON line ({e}): {line:?}; stderr: {err}")
        });
        running
    }

    fn url(&self) -> &str {
        self.line["listening"].as_str().unwrap()
    }

    /// Sends `signal` (`None`: none, the process is ending by itself), waits for the exit; (status, stderr).
    fn stop_and_stderr(&mut self, signal: Option<&str>) -> (ExitStatus, String) {
        if let Some(sig) = signal {
            let sent = Command::new("kill")
                .args([&format!("-{sig}"), &self.child.id().to_string()])
                .status()
                .unwrap();
            assert!(sent.success());
        }
        let status = wait(&mut self.child);
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        (status, err)
    }
}

/// Whether this machine can stop the server as a user does, with SIGTERM or SIGINT sent by `kill` (false, the test
/// skipped saying why, elsewhere).
fn can_signal() -> bool {
    common::skip::on_path("kill", "stops the server with SIGTERM or SIGINT, sent by `kill`")
}

/// Waits for a process to exit, at most WAIT.
fn wait(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the process did not exit");
        // Polling a child's exit; std has no wait with a timeout.
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Runs the binary to its end: (status, stdout, stderr).
fn run(args: &[&str]) -> (ExitStatus, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status,
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn client(kubeconfig: &Path) -> Client {
    Client::new(Config::from_kubeconfig_file(kubeconfig, None).unwrap()).unwrap()
}

fn admin_status(url: &str, token: &str) -> u16 {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .tls_config(ureq::tls::TlsConfig::builder().disable_verification(true).build())
            .build(),
    );
    agent
        .get(&format!("{url}/kube-informer/admin/status"))
        .header("Authorization", &format!("Bearer {token}"))
        .call()
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn help_and_bad_flags() {
    let (status, out, _) = run(&["--help"]);
    assert!(status.success());
    assert!(out.contains("Usage: kube-informer-apiserver [OPTIONS]") && out.contains("--kubeconfig-out PATH"));
    let (status, out, _) = run(&["--version"]);
    assert!(status.success() && out.starts_with("kube-informer-apiserver "));
    let (status, out, err) = run(&["--port", "many"]);
    assert_eq!(status.code(), Some(2));
    assert!(out.is_empty());
    assert!(
        err.contains("--port: \"many\" is not a valid number") && err.contains("--help"),
        "{err}"
    );
}

#[test]
fn serves_https_with_tokens_loads_manifests_and_stops_on_sigterm_leaving_its_kubeconfig() {
    if !can_signal() {
        return;
    }
    let dir = TempDir::new("apiserver-bin");
    let kubeconfig = dir.0.join("kubeconfig");
    let manifests = dir.0.join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(
        manifests.join("app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {color: blue}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n",
    )
    .unwrap();
    let mut server = Running::start(&[
        "--https",
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
        "--token",
        "root=root-token",
        "--token",
        "viewer=viewer-token",
        "--admin",
        "root",
        "--allow",
        "viewer:get,list,watch",
        "--load",
        manifests.to_str().unwrap(),
        "--bookmark-interval",
        "5s",
    ]);
    let url = server.url().to_owned();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    assert_eq!(server.line["kubeconfig"], kubeconfig.to_str().unwrap());
    assert_eq!(server.line["admin"], format!("{url}/kube-informer/admin/"));
    assert_eq!(server.line["loaded"], 2);
    assert_eq!(server.line["pid"], server.child.id());

    // The kubeconfig holds the admin's token and the CA: our client trusts the server through it alone.
    let api = Api::<ConfigMap>::namespaced(client(&kubeconfig), "shop");
    let cm = api.get("settings").unwrap();
    assert_eq!(cm.data.get("color"), Some("blue"));
    api.create(
        &Default::default(),
        &ConfigMap::new(kube_informer::object::ObjectMeta::namespaced("shop", "made")),
    )
    .unwrap();
    assert_eq!(admin_status(&url, "root-token"), 200);
    assert_eq!(admin_status(&url, "viewer-token"), 403);
    assert_eq!(admin_status(&url, "wrong"), 401);

    let (status, err) = server.stop_and_stderr(Some("TERM"));
    assert!(status.success(), "{status}: {err}");
    assert!(
        err.contains("SIGTERM received, stopping") && err.contains("stopped"),
        "{err}"
    );
    assert!(
        !err.contains("root-token") && !err.contains("viewer-token"),
        "no secret in its output"
    );
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(text.contains("root-token"), "the kubeconfig stays after stop");
}

#[test]
fn plain_http_without_auth_stops_on_sigint() {
    if !can_signal() {
        return;
    }
    let mut server = Running::start(&["--compaction-interval", "off"]);
    assert!(server.url().starts_with("http://127.0.0.1:"));
    let kubeconfig = server.line["kubeconfig"].as_str().unwrap().to_owned();
    let api = Api::<ConfigMap>::all(client(Path::new(&kubeconfig)));
    assert!(api.list(&Default::default()).unwrap().items.is_empty());
    let (status, err) = server.stop_and_stderr(Some("INT"));
    assert!(status.success(), "{err}");
    assert!(err.contains("SIGINT received"), "{err}");
    assert!(
        !Path::new(&kubeconfig).exists(),
        "without --kubeconfig-out the kubeconfig is temporary"
    );
}

#[test]
fn start_up_failures_exit_non_zero_with_the_reason_and_print_no_line() {
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let (status, out, err) = run(&["--port", &port]);
    assert_eq!(status.code(), Some(1));
    assert!(out.is_empty());
    assert!(err.contains("bind"), "{err}");

    let dir = TempDir::new("apiserver-bin-bad");
    let bad = dir.0.join("bad.yaml");
    std::fs::write(&bad, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n").unwrap();
    let (status, out, err) = run(&["--load", bad.to_str().unwrap()]);
    assert_eq!(status.code(), Some(1));
    assert!(out.is_empty());
    assert!(err.contains("bad.yaml: the server serves no kind \"Widget\""), "{err}");
}

#[test]
fn every_interface_without_authentication_is_refused_unless_the_risk_is_named() {
    if !can_signal() {
        return;
    }
    let (status, out, err) = run(&["--address", "0.0.0.0"]);
    assert_eq!(status.code(), Some(1));
    assert!(out.is_empty());
    assert!(
        err.contains("refusing to serve 0.0.0.0 without authentication"),
        "{err}"
    );
    let mut open = Running::start(&[
        "--address",
        "0.0.0.0",
        "--insecure-allow-unauthenticated-remote-access",
        "--compaction-interval",
        "off",
    ]);
    let (status, err) = open.stop_and_stderr(Some("TERM"));
    assert!(status.success(), "{err}");
    assert!(
        err.contains("without authentication: anyone who reaches it may do anything"),
        "{err}"
    );
}

#[test]
fn rbac_mode_serves_the_bootstrap_roles_and_its_admin_kubeconfig() {
    if !can_signal() {
        return;
    }
    let dir = TempDir::new("apiserver-bin-rbac");
    let manifest = dir.0.join("rbac.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: viewers, namespace: default}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: User, name: viewer}]\n",
    )
    .unwrap();
    let mut server = Running::start(&[
        "--authorization-mode",
        "RBAC",
        "--token",
        "viewer=v-token",
        "--load",
        manifest.to_str().unwrap(),
        "--compaction-interval",
        "off",
    ]);
    let kubeconfig = server.line["kubeconfig"].as_str().unwrap().to_owned();
    let roles = kube_informer::object::ApiResource::new(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
    );
    let admin = Api::<kube_informer::object::DynamicObject>::all_with(client(Path::new(&kubeconfig)), &roles);
    assert!(
        admin.get("cluster-admin").is_ok(),
        "the kubeconfig's system:admin may read everything"
    );
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().http_status_as_error(false).build());
    let get = |path: &str, token: &str| {
        agent
            .get(format!("{}{path}", server.url()))
            .header("Authorization", format!("Bearer {token}"))
            .call()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(get("/api/v1/namespaces/default/configmaps", "v-token"), 200);
    assert_eq!(
        get("/api/v1/namespaces/default/secrets", "v-token"),
        403,
        "view reads no secrets"
    );
    assert_eq!(get("/api/v1/namespaces/other/configmaps", "v-token"), 403);
    let (status, err) = server.stop_and_stderr(Some("TERM"));
    assert!(status.success(), "{err}");
}
