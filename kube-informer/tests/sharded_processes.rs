//! The sharded example (`examples/sharded.rs`) as separate processes against the embedded server: 2,000
//! ConfigMaps, three replicas, one killed with SIGKILL, one added, one stopped with SIGTERM — every object is
//! reconciled after each change, every slot is held by a live replica again, and no key is ever reconciled by two
//! replicas at once. The replicas write every reconcile's `begin` and `end` to one journal (appends of whole lines,
//! so the file orders them as they happened); the test writes `killed <id>` once a killed replica is reaped, which
//! ends what it had begun. Run with the `ShardedListAndWatch` gate on and off.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{TempDir, example};
use kube_informer::client::Api;
use kube_informer::client::params::{Patch, PatchParams};
use kube_informer::leaderelection::Lease;
use kube_informer::object::core::ConfigMap;
use kube_informer_apiserver::ApiServer;

const OBJECTS: usize = 2000;
const SLOTS: u32 = 32;

/// A replica process, killed when dropped.
struct Replica {
    id: String,
    child: Child,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Cluster {
    server: ApiServer,
    journal: PathBuf,
    replicas: Vec<Replica>,
    /// Journal lines read so far.
    read: usize,
    /// Key → the replica reconciling it, by the journal.
    running: HashMap<String, String>,
    /// Key → the last round reconciled.
    rounds: HashMap<String, String>,
    overlaps: Vec<String>,
}

impl Cluster {
    fn start(gate: bool, dir: &Path) -> Cluster {
        let server = common::sharded_server(gate, OBJECTS);
        Cluster {
            server,
            journal: dir.join("journal"),
            replicas: Vec::new(),
            read: 0,
            running: HashMap::new(),
            rounds: HashMap::new(),
            overlaps: Vec::new(),
        }
    }

    fn add(&mut self, id: &str) {
        let child = Command::new(example("sharded"))
            .args(["--kubeconfig"])
            .arg(self.server.kubeconfig_path())
            .args(["--namespace", "work", "--lease-namespace", "leases", "--identity", id])
            .args(["--lease-seconds", "2", "--journal"])
            .arg(&self.journal)
            .stdout(Stdio::null())
            .spawn()
            .expect("the sharded example is built by cargo test");
        self.replicas.push(Replica { id: id.into(), child });
    }

    fn take(&mut self, id: &str) -> Replica {
        let i = self.replicas.iter().position(|r| r.id == id).unwrap();
        self.replicas.remove(i)
    }

    /// SIGKILL: no release, no goodbye.
    fn kill(&mut self, id: &str) {
        let mut r = self.take(id);
        r.child.kill().unwrap();
        r.child.wait().unwrap();
        let mut journal = std::fs::OpenOptions::new().append(true).open(&self.journal).unwrap();
        journal.write_all(format!("killed {id}\n").as_bytes()).unwrap();
    }

    /// SIGTERM, as a kubelet stops a pod: the replica finishes its reconciles, releases its slots, exits 0.
    fn terminate(&mut self, id: &str) {
        use rustix::process::{Pid, Signal, kill_process};
        let mut r = self.take(id);
        let pid = Pid::from_raw(i32::try_from(r.child.id()).unwrap()).unwrap();
        kill_process(pid, Signal::TERM).unwrap();
        let status = r.child.wait().unwrap();
        assert!(status.success(), "{id} stopped with {status}");
    }

    /// Reads the journal's new lines: rounds reconciled, and any reconcile begun while another replica's ran.
    fn read_journal(&mut self) {
        let text = std::fs::read_to_string(&self.journal).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        // A line being written has no newline yet: leave it for the next read.
        let complete = if text.ends_with('\n') {
            lines.len()
        } else {
            lines.len().saturating_sub(1)
        };
        for line in &lines[self.read..complete] {
            let words: Vec<&str> = line.split(' ').collect();
            match words.as_slice() {
                ["begin", key, id] => {
                    if let Some(other) = self.running.insert((*key).into(), (*id).into()) {
                        self.overlaps.push(format!("{key}: {id} began while {other} ran"));
                    }
                }
                ["end", key, id, round] => {
                    if self.running.get(*key).is_some_and(|r| r == id) {
                        self.running.remove(*key);
                    }
                    self.rounds.insert((*key).into(), (*round).into());
                }
                ["killed", id] => self.running.retain(|_, r| r != id),
                _ => panic!("journal line {line:?}"),
            }
        }
        self.read = complete;
    }

    /// Waits until every slot's Lease is held by one of the live replicas; returns how long that took.
    fn settle(&mut self, what: &str) -> Duration {
        let started = Instant::now();
        let live: BTreeSet<String> = self.replicas.iter().map(|r| r.id.clone()).collect();
        let leases: Api<Lease> = Api::namespaced(self.server.client().unwrap(), "leases");
        converge(what, || {
            let held: HashMap<String, String> = leases
                .list_all(&Default::default())
                .unwrap()
                .items
                .into_iter()
                .filter_map(|l| Some((l.metadata.name?, l.spec.holder_identity?)))
                .collect();
            let unowned: Vec<u32> = (0..SLOTS)
                .filter(|i| held.get(&format!("sharded-slot-{i}")).is_none_or(|h| !live.contains(h)))
                .collect();
            let idle: Vec<&String> = live
                .iter()
                .filter(|id| !held.iter().any(|(n, h)| n.starts_with("sharded-slot-") && h == *id))
                .collect();
            (!unowned.is_empty() || !idle.is_empty())
                .then(|| format!("slots without a live owner {unowned:?}; replicas without a slot {idle:?}"))
        });
        started.elapsed()
    }

    /// Sets `round` on every object; waits until the journal shows each reconciled at that round.
    fn round(&mut self, round: &str) {
        let api: Api<ConfigMap> = Api::namespaced(self.server.client().unwrap(), "work");
        for i in 0..OBJECTS {
            let patch = serde_json::json!({"data": {"round": round}});
            api.patch(&format!("cm-{i}"), &PatchParams::default(), &Patch::Merge(&patch))
                .unwrap();
        }
        converge(&format!("every object reconciled at round {round}"), || {
            self.read_journal();
            let behind = (0..OBJECTS)
                .filter(|i| self.rounds.get(&format!("work/cm-{i}")).is_none_or(|r| r != round))
                .count();
            (behind > 0).then(|| format!("{behind} objects not reconciled at round {round}"))
        });
    }
}

/// Polls `check` until it finds nothing wrong (bounded: a minute); fails with what it last found.
fn converge(what: &str, mut check: impl FnMut() -> Option<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let Some(problem) = check() else { return };
        assert!(Instant::now() < deadline, "{what} did not happen: {problem}");
        // A condition polled; the sleep keeps the poll off the CPU the replicas need.
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn replicas_share_the_objects_through_kill_add_and_stop(gate: bool) {
    let dir = TempDir::new("sharded");
    let mut cluster = Cluster::start(gate, &dir.0);
    for id in ["r0", "r1", "r2"] {
        cluster.add(id);
    }
    let start = cluster.settle("three replicas own every slot");
    cluster.round("1");
    cluster.kill("r1");
    let after_kill = cluster.settle("the killed replica's slots taken over");
    cluster.round("2");
    cluster.add("r3");
    let after_add = cluster.settle("the added replica owns slots");
    cluster.round("3");
    cluster.terminate("r0");
    let after_stop = cluster.settle("the stopped replica's slots taken over");
    cluster.round("4");
    for id in ["r2", "r3"] {
        cluster.terminate(id);
    }
    cluster.read_journal();
    assert!(
        cluster.overlaps.is_empty(),
        "keys reconciled by two replicas at once: {:?}",
        cluster.overlaps
    );
    // Figures (lease 2 s, retry period 266 ms), not assertions.
    println!(
        "gate {gate}: every slot owned {start:?} after the start, {after_kill:?} after SIGKILL, {after_add:?} after \
         a replica joined, {after_stop:?} after SIGTERM"
    );
}

#[cfg(unix)]
#[test]
fn replicas_share_the_objects_through_kill_add_and_stop_with_the_server_filtering() {
    replicas_share_the_objects_through_kill_add_and_stop(true);
}

#[cfg(unix)]
#[test]
fn replicas_share_the_objects_through_kill_add_and_stop_filtering_themselves() {
    replicas_share_the_objects_through_kill_add_and_stop(false);
}
