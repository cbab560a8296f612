//! The examples run as their users run them: the compiled binaries (cargo builds examples for `cargo test`), against
//! an embedded API server.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Instant;

use common::*;
use kube_informer::client::Api;
use kube_informer::client::params::WatchParams;
use kube_informer::client::params::{DeleteParams, PostParams};
use kube_informer::leaderelection::Lease;
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer::watch::WatchEvent;
use kube_informer_apiserver::{AccessRule, ApiServer};
use serde_json::json;

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
    let server = ApiServer::builder()
        .namespaces(["a", "b", "prod", "ns0", "ns1", "ns2"])
        .start()
        .unwrap();
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
    let server = ApiServer::builder()
        .namespaces(["a", "b", "prod", "ns0", "ns1", "ns2"])
        .start()
        .unwrap();
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
    let server = ApiServer::builder()
        .namespaces(["a", "b", "prod", "ns0", "ns1", "ns2"])
        .start()
        .unwrap();
    let mut child = KillOnDrop(
        Command::new(example("controller"))
            .args(["--probe-addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(server.kubeconfig_path())
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
    // Ready is synced caches; the controller may still hold the first keys (a CI run saw a depth of 8), so the
    // queue's depth is awaited, not assumed.
    let drained = r#"workqueue_depth{name="configmap-sync"} 0"#;
    eventually("the queue drained, as /metrics shows", || {
        get("/metrics").1.contains(drained)
    });
    let (status, metrics) = get("/metrics");
    assert_eq!(status, 200);
    assert!(
        metrics.contains(r#"kube_informer_health{check="informer:namespaces",state="healthy"} 1"#),
        "{metrics}"
    );
    terminate(&child.0); // SIGTERM: the manager shuts down
    assert!(child.0.wait().unwrap().success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l == "stopped cleanly (SIGTERM)"), "{rest:?}");
}

/// Sends SIGTERM to `child`, as the kubelet does to a pod's containers.
fn terminate(child: &std::process::Child) {
    use rustix::process::{Pid, Signal, kill_process};
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    kill_process(pid, Signal::TERM).unwrap();
}

#[test]
fn a_terminated_leader_releases_its_lease_exits_0_and_the_other_replica_leads() {
    let server = ApiServer::start().unwrap();
    // The Lease's versions, in order, from before any replica runs: they tell how leadership moved.
    let holders = {
        let leases: Api<Lease> = Api::namespaced(server.client().unwrap(), "default");
        let mut watch = leases.watch(&WatchParams::default()).unwrap();
        let (tx, rx) = crossbeam_channel::unbounded::<String>();
        std::thread::Builder::new()
            .name("lease-watch".into())
            .spawn(move || {
                while let Some(Ok(event)) = watch.next() {
                    if let WatchEvent::Added(l) | WatchEvent::Modified(l) = event
                        && tx.send(l.spec.holder_identity.clone().unwrap_or_default()).is_err()
                    {
                        break;
                    }
                }
            })
            .unwrap();
        rx
    };
    assert!(server.wait_for_watchers("leases", 1, WAIT));
    let replica = || {
        let mut child = KillOnDrop(
            Command::new(example("controller"))
                .args(["--leader-elect", "--kubeconfig"])
                .arg(server.kubeconfig_path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let (out, log) = (child.0.stdout.take().unwrap(), child.0.stderr.take().unwrap());
        let mut log = Lines::of(log);
        log.wait_for("manager: leader election on lease default/configmap-sync as ");
        let identity = log.seen.last().unwrap().rsplit(" as ").next().unwrap().to_owned();
        (child, identity, Lines::of(out), log)
    };

    let (mut first, first_id, first_out, mut first_log) = replica();
    first_log.wait_for("manager: leading; starting the controllers");
    let (mut second, second_id, second_out, mut second_log) = replica();
    second_log.wait_for(&format!("manager: the leader is {first_id}"));
    assert_ne!(first_id, second_id);

    // SIGTERM to the leader: it stops its work, releases the Lease and exits 0; the other leads.
    terminate(&first.0);
    let status = first.0.wait().unwrap();
    let (stdout, log) = (first_out.rest(), first_log.rest());
    assert!(status.success(), "{stdout}\n{log}");
    assert!(
        stdout.contains("stopped cleanly (SIGTERM); lease default/configmap-sync released"),
        "{stdout}\n{log}"
    );
    second_log.wait_for("manager: leading; starting the controllers");
    // The Lease went from the first replica to nobody (released, as client-go's ReleaseOnCancel) to the second —
    // a takeover at once, not after the lease expired.
    let mut seen: Vec<String> = Vec::new();
    while seen.last() != Some(&second_id) {
        let holder = holders
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("Lease holders: {seen:?}"));
        if seen.last() != Some(&holder) {
            seen.push(holder);
        }
    }
    assert_eq!(seen, [first_id.as_str(), "", second_id.as_str()]);
    let lease: Lease = server.get(Some("default"), "configmap-sync").unwrap();
    assert_eq!(lease.spec.lease_transitions, Some(1));

    terminate(&second.0);
    assert!(second.0.wait().unwrap().success());
    assert!(
        second_out
            .rest()
            .contains("stopped cleanly (SIGTERM); lease default/configmap-sync released")
    );
    let lease: Lease = server.get(Some("default"), "configmap-sync").unwrap();
    assert_eq!(
        lease.spec.holder_identity.as_deref(),
        Some(""),
        "the last leader released it too"
    );
}

#[test]
fn sharded_demo_runs_three_replica_processes_kills_one_and_exits_0() {
    let out = Command::new(example("sharded"))
        .output()
        .expect("the sharded example is built by cargo test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "sharded failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "--- three replicas share the slots: every slot owned after",
        "--- replica-1 killed (SIGKILL): the others took its slots once its Leases expired: every slot owned after",
        "--- replica-1 started again: the others handed it slots: every slot owned after",
        "replica-1 holds 0 slots: []",
    ] {
        assert!(stdout.contains(line), "{line:?} in\n{stdout}");
    }
    assert_eq!(stdout.matches("stopped cleanly").count(), 3, "{stdout}");
}

#[test]
fn configset_demo_runs_without_a_cluster_and_exits_0() {
    let out = Command::new(example("configset"))
        .output()
        .expect("the configset example is built by cargo test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "configset failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "installed CustomResourceDefinition configsets.demo.kube-informer.io",
        "[demo/web] created ConfigMap web",
        "[demo/web] status: Ready (generation 1)",
        "[demo/web] ConfigMap write conflicted; read again and retried (2 attempts)",
        "[demo/web] updated ConfigMap web",
        "[demo/web] status: Ready (generation 2)",
        "[demo/bad] status: Invalid (generation 1)",
        "[demo/bad] invalid spec: not retried until it changes",
        "[demo/web] cleanup: deleted ConfigMap web",
        "configset demo/bad     phase=Invalid",
        "configmap demo/api     data={\"replicas\": \"3\"} controller=ConfigSet api",
    ] {
        assert!(stdout.contains(line), "{line:?} in\n{stdout}");
    }
    assert_eq!(
        stdout.matches("[demo/api] created ConfigMap api").count(),
        2,
        "re-created after its deletion:\n{stdout}"
    );
    assert!(!stdout.contains("configset demo/web"), "web is gone:\n{stdout}");
}

/// The lines a child prints, read on a thread of their own so that every wait has a deadline.
struct Lines {
    rx: crossbeam_channel::Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    fn of(out: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("example-stdout".into())
            .spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .unwrap();
        Lines { rx, seen: Vec::new() }
    }

    /// Reads lines until one contains `text`.
    fn wait_for(&mut self, text: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.seen.last().is_some_and(|l| l.contains(text)) {
            match self.rx.recv_deadline(deadline) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no line with {text:?}; the example printed:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Everything up to the end of the output.
    fn rest(mut self) -> String {
        let deadline = Instant::now() + WAIT;
        while let Ok(line) = self.rx.recv_deadline(deadline) {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }
}

fn configsets() -> ApiResource {
    ApiResource::new("demo.kube-informer.io", "v1", "ConfigSet", "configsets", true)
}

/// `--kubeconfig` mode against a server it did not start, as against a cluster: HTTPS, a token, and only the
/// permissions the example's documentation asks for. The example installs its CRD through the API, reconciles
/// what someone else creates and deletes, and stops when its stdin closes; a second run finds the CRD in place.
#[test]
fn configset_runs_against_a_cluster_by_kubeconfig_with_the_documented_rbac() {
    const CONTROLLER: &str = "configset-controller";
    let server = ApiServer::builder()
        .namespaces(["a", "b", "prod", "ns0", "ns1", "ns2"])
        .https()
        .token("admin-token", "admin")
        .token("controller-token", CONTROLLER)
        .kubeconfig_user("admin")
        .rule(AccessRule::user("admin"))
        // The RBAC of the example's module documentation, verb for verb.
        .rule(
            AccessRule::user(CONTROLLER)
                .verbs(&["create"])
                .resources(&["customresourcedefinitions.apiextensions.k8s.io"]),
        )
        .rule(
            AccessRule::user(CONTROLLER)
                .verbs(&["get", "list", "watch", "patch"])
                .resources(&["configsets.demo.kube-informer.io"]),
        )
        .rule(
            AccessRule::user(CONTROLLER)
                .verbs(&["patch"])
                .resources(&["configsets.demo.kube-informer.io/status"]),
        )
        .rule(
            AccessRule::user(CONTROLLER)
                .verbs(&["get", "list", "watch", "create", "update", "delete"])
                .resources(&["configmaps"]),
        )
        .start()
        .unwrap();
    let kubeconfig = server.kubeconfig_for(CONTROLLER).unwrap();
    let run = |stdin: Stdio| {
        Command::new(example("configset"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut child = KillOnDrop(run(Stdio::piped()));
    let mut lines = Lines::of(child.0.stdout.take().unwrap());
    lines.wait_for("installed CustomResourceDefinition configsets.demo.kube-informer.io");
    lines.wait_for("running; press Enter to stop");

    let admin = server.client().unwrap();
    let sets = Api::<DynamicObject>::namespaced_with(admin.clone(), "prod", &configsets());
    let cms = Api::<ConfigMap>::namespaced(admin, "prod");
    let cs = DynamicObject::new("app", &configsets())
        .within("prod")
        .with_field("spec", &json!({"data": {"mode": "fast"}}));
    let uid = sets.create(&PostParams::default(), &cs).unwrap().metadata.uid;
    lines.wait_for("[prod/app] status: Ready (generation 1)");
    let cm = cms.get("app").unwrap();
    assert_eq!(cm.data.get("mode"), Some("fast"));
    let owner = &cm.metadata.owner_references[0];
    assert_eq!((owner.kind(), owner.name()), ("ConfigSet", "app"));
    assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
    assert_eq!(Some(owner.uid()), uid.as_deref());
    let live = sets.get("app").unwrap();
    assert_eq!(live.metadata.finalizers, ["configsets.demo.kube-informer.io/cleanup"]);
    assert_eq!(live.to_value()["status"]["observedGeneration"], 1);

    sets.delete("app", &DeleteParams::default()).unwrap();
    lines.wait_for("[prod/app] cleanup: deleted ConfigMap app");
    eventually("the ConfigSet gone once its finalizer is removed", || {
        sets.get_opt("app").unwrap().is_none()
    });
    assert!(cms.get_opt("app").unwrap().is_none());

    drop(child.0.stdin.take()); // stdin closes: the example stops
    let status = child.0.wait().unwrap();
    let mut stderr = String::new();
    child.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let stdout = lines.rest();
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("controller: "), "{stdout}");
    assert!(
        !stdout.contains("embedded"),
        "no embedded server in this mode:\n{stdout}"
    );
    assert!(!stdout.contains("failed"), "no reconcile failed:\n{stdout}");

    // Again, with the CRD in place: nothing to install.
    let mut again = KillOnDrop(run(Stdio::null()));
    let stdout = Lines::of(again.0.stdout.take().unwrap()).rest();
    assert!(again.0.wait().unwrap().success(), "{stdout}");
    assert!(stdout.contains("running; press Enter to stop"), "{stdout}");
    assert!(!stdout.contains("installed"), "{stdout}");
}

#[test]
fn the_readme_shows_the_controller_examples_main_as_it_is() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = std::fs::read_to_string(root.join("examples/controller.rs")).unwrap();
    let start = example.find("\nfn main()").expect("the example's main") + 1;
    let end = start + example[start..].find("\n}\n").expect("the end of main") + 3;
    let main = &example[start..end];
    assert!(main.lines().count() <= 50, "main fits on one screen:\n{main}");
    let readme = std::fs::read_to_string(root.join("../README.md")).unwrap();
    assert!(
        readme.contains(main),
        "README.md shows another main than examples/controller.rs has: copy it again"
    );
}
