//! Helpers shared by the integration tests.

#![allow(dead_code)]

pub mod peer;
pub mod watchdog;
pub mod widget;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, unbounded};
use kube_informer::cache::DeletedObject;
use kube_informer::informer::ResourceEventHandler;
use kube_informer::object::ObjectMeta;
use kube_informer::object::core::ConfigMap;
// The helpers both crates' tests share; each test binary uses some of them.
#[allow(unused_imports)]
pub use kube_informer_test_support::{TempDir, WAIT, eventually, skip};

/// An embedded server whose kubeconfig user, `alice`, may do anything to configmaps and nothing else.
pub fn server_allowing_only_configmaps() -> kube_informer_apiserver::ApiServer {
    kube_informer_apiserver::ApiServer::builder()
        .namespace("ns")
        .token("t", "alice")
        .kubeconfig_user("alice")
        .rule(kube_informer_apiserver::AccessRule::user("alice").resources(&["configmaps"]))
        .start()
        .unwrap()
}

/// Reflector settings that retry within milliseconds (10 ms back-off up to 50 ms), so tests see failures and
/// recoveries quickly.
pub fn quick_reflector() -> kube_informer::cache::ReflectorConfig {
    kube_informer::cache::ReflectorConfig {
        backoff: kube_informer::cache::BackoffConfig {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(50),
            ..Default::default()
        },
        relist_jitter: Duration::from_millis(10),
        ..Default::default()
    }
}

/// What a handler saw, compactly: name and the `v` data value(s).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seen {
    Add(String, String, bool),
    Update(String, String, String),
    Delete(String, String, bool),
}

pub fn value(cm: &ConfigMap) -> String {
    cm.data.get("v").map(str::to_owned).unwrap_or_default()
}

pub fn name(cm: &ConfigMap) -> String {
    cm.metadata.name.clone().unwrap_or_default()
}

/// A handler forwarding what it sees to a channel.
pub struct Recorder(pub Sender<Seen>);

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&mut self, obj: &Arc<ConfigMap>, initial: bool) {
        let _ = self.0.send(Seen::Add(name(obj), value(obj), initial));
    }
    fn on_update(&mut self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let _ = self.0.send(Seen::Update(name(new), value(old), value(new)));
    }
    fn on_delete(&mut self, obj: &DeletedObject<ConfigMap>) {
        let o = obj.object();
        let _ = self
            .0
            .send(Seen::Delete(name(o), value(o), obj.is_final_state_unknown()));
    }
}

pub fn recorder() -> (Recorder, Receiver<Seen>) {
    let (tx, rx) = unbounded();
    (Recorder(tx), rx)
}

pub fn recv(rx: &Receiver<Seen>) -> Seen {
    rx.recv_timeout(WAIT).expect("an event within the deadline")
}

/// Receives events until one satisfies `pred`, returning it.
pub fn recv_until(rx: &Receiver<Seen>, pred: impl Fn(&Seen) -> bool) -> Seen {
    let deadline = Instant::now() + WAIT;
    loop {
        let ev = rx
            .recv_deadline(deadline)
            .expect("the awaited event within the deadline");
        if pred(&ev) {
            return ev;
        }
    }
}

/// A ConfigMap `ns/name` with data `v=value`.
pub fn cm(ns: &str, name: &str, value: &str) -> ConfigMap {
    ConfigMap::new(ObjectMeta::namespaced(ns, name)).with("v", value)
}

// `fixture(path)`: a file under this crate's `tests/fixtures/`.
kube_informer_test_support::define_fixture!();

/// Whether this machine can run the exec plugins of these tests (sh scripts, run as kubectl runs a plugin: by
/// name, through `PATH`); false (the test or its part skipped, saying why) without `sh`.
pub fn can_run_sh_plugins() -> bool {
    skip::on_path("sh", "runs exec credential plugins written as sh scripts")
}

/// [`can_run_sh_plugins`], and Linux, where a test checks through `/proc` that a plugin and the processes it
/// started were killed and reaped.
pub fn can_watch_plugin_processes() -> bool {
    can_run_sh_plugins() && skip::linux("checks through /proc that a plugin and its children were killed and reaped")
}

/// The fixture exec plugin (`tests/fixtures/exec/credential-plugin.sh`), counting its runs in `dir/count`: it hands
/// out `tokens` (space-separated, one per run, the last repeating) expiring at `expires` (RFC 3339, or "" for
/// never).
pub fn plugin(dir: &TempDir, tokens: &str, expires: &str) -> kube_informer::client::ExecConfig {
    kube_informer::client::ExecConfig::new("sh")
        .args([fixture("exec/credential-plugin.sh").display().to_string()])
        .env("COUNT_FILE", dir.path("count").display().to_string())
        .env("INFO_FILE", dir.path("info").display().to_string())
        .env("TOKENS", tokens)
        .env("EXPIRES", expires)
}

/// An exec plugin that hangs: it writes its pid to `dir/plugin`, starts a helper that would live an hour (holding
/// the plugin's standard output open, as a script's commands do), writes the helper's pid to `dir/helper`, and waits
/// for it.
pub fn hanging_plugin(dir: &TempDir) -> kube_informer::client::ExecConfig {
    let (plugin, helper) = (dir.path("plugin"), dir.path("helper"));
    // Each pid is written whole before the file appears (`mv`), so that a reader never sees half of it.
    let script = format!(
        "echo $$ > '{p}.new' && mv '{p}.new' '{p}'; sleep 3600 & echo $! > '{h}.new' && mv '{h}.new' '{h}'; wait",
        p = plugin.display(),
        h = helper.display()
    );
    kube_informer::client::ExecConfig::new("sh").args(["-c", script.as_str()])
}

/// The pid [`hanging_plugin`] wrote to `dir/<file>` (`plugin` or `helper`).
pub fn pid_in(dir: &TempDir, file: &str) -> u32 {
    let text = std::fs::read_to_string(dir.path(file)).unwrap_or_else(|e| panic!("{file}'s pid: {e}"));
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{file}'s pid {text:?}: {e}"))
}

/// Whether process `pid` exists at all (a zombie — dead, not reaped yet — does).
pub fn process_exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether process `pid` is alive: it exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().to_owned()))
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// The names the OS shows for this process's threads (`/proc/self/task/*/comm`).
pub fn thread_names() -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim_end().to_owned())
        .collect()
}

/// An example binary, `target/<profile>/examples/<name>`, next to this test binary's `deps` folder (cargo builds the
/// examples for `cargo test`).
pub fn example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    dir.join("examples").join(name)
}

/// A server for sharded controllers: namespaces `work` (holding `objects` ConfigMaps `cm-<i>` with `round=0`) and
/// `leases`, with the `ShardedListAndWatch` gate as given.
pub fn sharded_server(gate: bool, objects: usize) -> kube_informer_apiserver::ApiServer {
    let server = kube_informer_apiserver::ApiServer::builder()
        .sharded_list_and_watch(gate)
        .namespaces(["work", "leases"])
        .start()
        .unwrap();
    for i in 0..objects {
        server
            .create(&ConfigMap::new(ObjectMeta::namespaced("work", format!("cm-{i}"))).with("round", "0"))
            .unwrap();
    }
    server
}
