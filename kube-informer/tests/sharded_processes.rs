//! The sharded example (`examples/sharded.rs`) as separate processes against the embedded server: 2,000
//! ConfigMaps, three replicas, one killed with SIGKILL, one added, one stopped with SIGTERM — every object is
//! reconciled after each change, every slot is held by a live replica again, no key is ever reconciled by two
//! replicas at once, and the hand-over of each slot of the killed replica reports the outage it caused (its Lease's
//! duration, give or take a retry period). The replicas write every reconcile's `begin` and `end` to one journal,
//! and each hand-over measured (appends of whole lines, so the file orders them as they happened); the test writes
//! `killed <id>` once a killed replica is reaped, which ends what it had begun. Run with the `ShardedListAndWatch`
//! gate on and off. And ten replicas at steady state: each watches the Leases once and never lists them.

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
use kube_informer_apiserver::{ApiServer, Verb};

const OBJECTS: usize = 2000;
const SLOTS: u32 = 32;
/// The replicas' `--lease-seconds`: a lease of 2 s, renewed every 266 ms (2/15 of it).
const LEASE: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(266);

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
    /// Hand-overs journaled: `(journal line, slot, outage, replica)`.
    handovers: Vec<(usize, u32, Duration, String)>,
    /// The journal line of each `killed <id>`.
    killed: HashMap<String, usize>,
}

impl Cluster {
    fn start(gate: bool, dir: &Path) -> Cluster {
        Cluster::with_objects(gate, dir, OBJECTS)
    }

    fn with_objects(gate: bool, dir: &Path, objects: usize) -> Cluster {
        let server = common::sharded_server(gate, objects);
        Cluster {
            server,
            journal: dir.join("journal"),
            replicas: Vec::new(),
            read: 0,
            running: HashMap::new(),
            rounds: HashMap::new(),
            overlaps: Vec::new(),
            handovers: Vec::new(),
            killed: HashMap::new(),
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
        for (at, line) in lines.iter().enumerate().take(complete).skip(self.read) {
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
                ["killed", id] => {
                    self.running.retain(|_, r| r != id);
                    self.killed.insert((*id).to_owned(), at);
                }
                ["handover", slot, millis, id] => {
                    let (slot, millis) = (slot.parse().unwrap(), millis.parse().unwrap());
                    self.handovers
                        .push((at, slot, Duration::from_millis(millis), (*id).to_owned()));
                }
                _ => panic!("journal line {line:?}"),
            }
        }
        self.read = complete;
    }

    /// The holder of each Lease, by name.
    fn holders(&self) -> HashMap<String, String> {
        self.server
            .list::<Lease>(Some("leases"))
            .unwrap()
            .into_iter()
            .filter_map(|l| Some((l.metadata.name?, l.spec.holder_identity?)))
            .collect()
    }

    /// The slots `id` holds.
    fn slots_of(&self, id: &str) -> BTreeSet<u32> {
        self.holders()
            .into_iter()
            .filter(|(_, h)| h == id)
            .filter_map(|(name, _)| name.strip_prefix("sharded-slot-")?.parse().ok())
            .collect()
    }

    /// Waits until every slot's Lease is held by one of the live replicas; returns how long that took.
    fn settle(&mut self, what: &str) -> Duration {
        let started = Instant::now();
        let live: BTreeSet<String> = self.replicas.iter().map(|r| r.id.clone()).collect();
        converge(what, || {
            let held = self.holders();
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

    /// Waits until the live replicas hold their shares — ⌊slots/n⌋ or ⌈slots/n⌉ each, every slot held —, when none
    /// gives a slot up any more.
    fn balance(&mut self, what: &str) {
        let live: Vec<String> = self.replicas.iter().map(|r| r.id.clone()).collect();
        let n = u32::try_from(live.len()).unwrap();
        let (low, high) = (SLOTS / n, SLOTS.div_ceil(n));
        converge(what, || {
            let counts: Vec<(String, u32)> = live
                .iter()
                .map(|id| (id.clone(), u32::try_from(self.slots_of(id).len()).unwrap()))
                .collect();
            let held: u32 = counts.iter().map(|(_, c)| c).sum();
            (held != SLOTS || counts.iter().any(|(_, c)| *c < low || *c > high))
                .then(|| format!("slots held {counts:?}, share {low}..={high}"))
        });
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
    cluster.balance("three replicas hold their shares");
    cluster.kill("r1");
    // The Leases still naming r1 right after its death: what it held then (it released none), each to be taken over
    // only once expired — at least 1.7 s away (a held slot was renewed within a retry period).
    let orphaned = cluster.slots_of("r1");
    let after_kill = cluster.settle("the killed replica's slots taken over");
    cluster.round("2");
    // Each slot of r1's was handed over once its Lease expired: the outage counts that wait, and is never shorter
    // (the new owner takes a slot only once it has seen its Lease unchanged for the lease duration).
    let killed_at = cluster.killed["r1"];
    converge("the hand-over of each of r1's slots measured", || {
        cluster.read_journal();
        let measured: BTreeSet<u32> = cluster
            .handovers
            .iter()
            .filter(|(at, ..)| *at > killed_at)
            .map(|(_, slot, ..)| *slot)
            .collect();
        let missing: Vec<&u32> = orphaned.difference(&measured).collect();
        (!missing.is_empty()).then(|| format!("slots {missing:?} of r1's have no hand-over measured"))
    });
    let outages: Vec<Duration> = orphaned
        .iter()
        .map(|slot| {
            let (.., outage, _) = cluster
                .handovers
                .iter()
                .find(|(at, s, ..)| *at > killed_at && s == slot)
                .unwrap();
            *outage
        })
        .collect();
    assert!(
        outages.iter().all(|o| *o >= LEASE),
        "every hand-over counts the Lease's expiry: {outages:?} (slots {orphaned:?})"
    );
    let (shortest, longest) = (outages.iter().min().unwrap(), outages.iter().max().unwrap());
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
         a replica joined, {after_stop:?} after SIGTERM; the {} slots of the killed replica handed over after \
         {shortest:?} to {longest:?} without reconciles (lease {LEASE:?} ± retry period {RETRY:?})",
        orphaned.len()
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

/// Ten replicas, settled: none lists the Leases — over five renewals of every replica's membership, as many rounds
/// of its coordinator (each listed them before they were watched) — and each opened one watch of its group's Leases
/// since it started.
#[cfg(unix)]
#[test]
fn ten_replicas_at_steady_state_watch_the_leases_once_each_and_never_list_them() {
    let dir = TempDir::new("sharded-ten");
    let mut cluster = Cluster::with_objects(true, &dir.0, 200);
    let started = cluster.server.requests().mark();
    let ids: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
    for id in &ids {
        cluster.add(id);
    }
    cluster.settle("ten replicas own every slot");
    let mark = cluster.server.requests().mark();
    let renewed = |id: &str, records: &[kube_informer_apiserver::RequestRecord]| {
        let lease = format!("sharded-member-{id}");
        records
            .iter()
            .filter(|r| r.is(Verb::Update, "leases") && r.name.as_deref() == Some(lease.as_str()))
            .count()
    };
    assert!(
        cluster
            .server
            .requests()
            .wait_for(mark, Duration::from_secs(60), |records| ids
                .iter()
                .all(|id| renewed(id, records) >= 5)),
        "every replica renews its membership"
    );
    let window = cluster.server.requests().since(mark);
    let lists: Vec<_> = window.iter().filter(|r| r.is(Verb::List, "leases")).collect();
    assert!(lists.is_empty(), "Leases listed at steady state: {lists:?}");
    // The coordinators' watches select by the group's label (a candidate's watch of one Lease, by its name).
    let group_watches = cluster
        .server
        .requests()
        .since(started)
        .into_iter()
        .filter(|r| r.is(Verb::Watch, "leases") && r.query.contains("labelSelector="))
        .count();
    assert_eq!(group_watches, ids.len(), "one watch of the Leases per replica");
    println!(
        "ten replicas at steady state: {} requests in the window ({:.0} per replica), none a LIST of Leases; one \
         watch of the Leases per replica since the start",
        window.len(),
        window.len() as f64 / ids.len() as f64
    );
    for id in &ids {
        cluster.terminate(id);
    }
}
