//! The examples run as their users run them: the compiled binaries (cargo builds examples for `cargo test`), against
//! an embedded API server.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::*;
use kube_informer::testing::ApiServer;

#[test]
fn demo_runs_without_a_cluster_and_exits_0() {
    let out = Command::new(example("demo"))
        .output()
        .expect("the demo example is built by cargo test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("-- synced: 3 objects cached --"), "{stdout}");
    assert!(stdout.contains("DELETED  demo/gamma"), "{stdout}");
    assert!(
        stdout.contains("-- cutting every connection to the API server"),
        "{stdout}"
    );
    assert!(stdout.contains("-- final cache (6 objects) --"), "{stdout}");
    assert!(stdout.contains("demo/beta colour=shade-5"), "{stdout}");
}

#[test]
fn watch_sync_only_prints_one_json_line() {
    let server = ApiServer::start().unwrap();
    for i in 0..25 {
        server
            .create(&cm(&format!("ns{}", i % 3), &format!("c{i}"), "1"))
            .unwrap();
    }
    let out = Command::new(example("watch"))
        .args([
            "configmaps",
            "-A",
            "--strip-managed-fields",
            "--sync-only",
            "--kubeconfig",
        ])
        .arg(server.kubeconfig_path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("one JSON line");
    assert_eq!(v["objects"], 25);
    for key in ["seconds_to_synced", "cpu_seconds", "peak_rss_kb"] {
        assert!(v[key].as_f64().is_some(), "{key} in {line}");
    }
}

#[test]
fn watch_prints_events_of_one_namespace() {
    let server = ApiServer::start().unwrap();
    server.create(&cm("a", "one", "1")).unwrap();
    server.create(&cm("b", "other", "1")).unwrap();
    let mut child = KillOnDrop(
        Command::new(example("watch"))
            .args(["cm", "-n", "a", "--kubeconfig"])
            .arg(server.kubeconfig_path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut next = || lines.next().expect("a line").unwrap();
    assert!(next().starts_with("ADDED a/one rv="));
    assert!(next().starts_with("SYNCED objects=1 "));
    server.create(&cm("a", "two", "1")).unwrap();
    assert!(next().starts_with("ADDED a/two rv="));
    server
        .delete::<kube_informer::object::core::ConfigMap>(Some("a"), "one")
        .unwrap();
    assert!(next().starts_with("DELETED a/one rv="));
}

/// Kills and reaps the child when dropped, so a failing assertion leaves no process behind.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn watch_rejects_bad_arguments_with_usage() {
    let out = Command::new(example("watch"))
        .args(["-n", "x", "-A", "pods"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("exclude each other"));
    let out = Command::new(example("watch")).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("usage: watch RESOURCE"));
}

#[test]
fn the_controller_example_serves_probes_and_metrics_with_a_flag() {
    let server = ApiServer::start().unwrap();
    let mut child = KillOnDrop(
        Command::new(example("controller"))
            .args(["--probe-addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(server.kubeconfig_path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let probe = loop {
        let line = lines.next().expect("the probe line").unwrap();
        if let Some(rest) = line.strip_prefix("probes: http://") {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().http_status_as_error(false).build());
    let get = |path: &str| {
        let mut r = agent.get(&format!("http://{probe}{path}")).call().unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    };
    eventually("ready", || get("/readyz").0 == 200);
    assert_eq!(get("/healthz"), (200, "ok".to_owned()));
    let (status, metrics) = get("/metrics");
    assert_eq!(status, 200);
    assert!(
        metrics.contains(r#"workqueue_depth{name="configmap-sync"} 0"#)
            && metrics.contains(r#"kube_informer_health{check="informer:namespaces",state="healthy"} 1"#),
        "{metrics}"
    );
    drop(child.0.stdin.take()); // stdin closes: the example stops
    assert!(child.0.wait().unwrap().success());
}
