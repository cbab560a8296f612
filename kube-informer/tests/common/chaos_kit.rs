//! Shared by the convergence and chaos suites: a seeded random number generator (so a failing run can be replayed),
//! a random writer, and what they check of every handler — replaying the events it received must rebuild the
//! server's state, and each event must make sense given the ones before it.
//!
//! The checks, per object key, against what this handler saw last for that key:
//!
//! * **add**: the handler does not have the object;
//! * **update**: the handler has it, and `old` equals (`==`, resourceVersion included) the state it saw last;
//! * **delete**: the handler has it; a deletion whose final state is unknown (a relist found the object gone)
//!   carries the state the handler saw last — for a coalescing handler, which skips intermediate states, a state at
//!   least as new;
//! * **resourceVersion order**: resourceVersions are etcd revisions, global and increasing, so across an object's
//!   whole history — deletions and re-creations included — the versions a handler sees strictly increase: the new
//!   object of an add or update, and the final object of a delete, are newer than anything seen before for that key.
//!   Relist replacements are the one place an event may carry an unchanged version: an update whose old and new
//!   versions are equal is a resync, and the informer only sends those to handlers with a resync period (none here),
//!   so it counts as a violation; a tombstone delete repeats the last version seen (coalescing: at least it).

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube_informer::cache::{BackoffConfig, DeletedObject};
use kube_informer::informer::{Notification, ResourceEventHandler, SharedIndexInformer};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, key_of};
use kube_informer_apiserver::ApiServer;
use parking_lot::Mutex;

/// SplitMix64: small, fast, and good enough to drive a test from a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// An independent generator (for another thread), derived from this one.
    pub fn fork(&mut self) -> Rng {
        Rng(self.next_u64())
    }
}

/// The seed from `var` when set (to replay a run), else a fresh one; printed either way.
pub fn seed_from_env(var: &str) -> u64 {
    let seed = match std::env::var(var) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{var}={v:?} is not a number")),
        Err(_) => {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            t.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32)
        }
    };
    eprintln!("seed: {seed} (replay the same schedule with {var}={seed})");
    crate::common::watchdog::seed(seed);
    seed
}

/// The resourceVersion of an object as a number (the embedded server's are integers).
pub fn rv(cm: &ConfigMap) -> u64 {
    cm.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// What a comparison looks at: resourceVersion and data, per key.
pub type State = BTreeMap<String, (u64, BTreeMap<String, String>)>;

/// True for an object a `tier=a` selector in namespace `alpha` sees.
pub fn in_alpha_tier_a(cm: &ConfigMap) -> bool {
    cm.metadata.namespace.as_deref() == Some("alpha") && cm.metadata.labels.get("tier").is_some_and(|t| t == "a")
}

/// The comparable state of a set of objects.
pub fn state_of<'a>(objects: impl IntoIterator<Item = &'a ConfigMap>) -> State {
    objects
        .into_iter()
        .map(|cm| (key_of(cm), (rv(cm), cm.data.to_btree_map())))
        .collect()
}

/// Describes how two states differ (at most a few keys), for failure messages.
pub fn diff(want: &State, got: &State) -> String {
    let mut out = Vec::new();
    for (k, w) in want {
        match got.get(k) {
            None => out.push(format!("{k}: missing (want rv {})", w.0)),
            Some(g) if g != w => out.push(format!("{k}: rv {} want rv {}", g.0, w.0)),
            _ => {}
        }
    }
    for (k, g) in got {
        if !want.contains_key(k) {
            out.push(format!("{k}: extra (rv {})", g.0));
        }
    }
    let n = out.len();
    out.truncate(8);
    format!("{n} keys differ: {}", out.join("; "))
}

/// One handler's replayed view and the violations found on the way.
#[derive(Default)]
pub struct Replay {
    /// The state the handler saw last, per key (absent: deleted or never seen).
    objects: HashMap<String, Arc<ConfigMap>>,
    /// The highest resourceVersion seen per key, kept across deletions.
    last_rv: HashMap<String, u64>,
    violations: Vec<String>,
    events: u64,
    /// Skips intermediate states: tombstones may carry a state newer than the last seen.
    coalescing: bool,
}

impl Replay {
    pub fn new(coalescing: bool) -> Self {
        Replay {
            coalescing,
            ..Default::default()
        }
    }

    fn violation(&mut self, what: String) {
        if self.violations.len() < 20 {
            self.violations.push(what);
        }
    }

    fn newer(&mut self, key: &str, what: &str, v: u64) {
        let last = self.last_rv.get(key).copied().unwrap_or(0);
        if v <= last {
            self.violation(format!("{what} {key}: resourceVersion {v} after {last}"));
        }
        self.last_rv.insert(key.to_owned(), v.max(last));
    }

    /// Applies one event, recording what does not follow from the events before it.
    pub fn apply(&mut self, ev: &Notification<ConfigMap>) {
        self.events += 1;
        match ev {
            Notification::Add { obj, .. } => {
                let key = key_of(&**obj);
                if self.objects.contains_key(&key) {
                    self.violation(format!("add {key}: already had it"));
                }
                self.newer(&key, "add", rv(obj));
                self.objects.insert(key, obj.clone());
            }
            Notification::Update { old, new } => {
                let key = key_of(&**new);
                match self.objects.get(&key) {
                    None => self.violation(format!("update {key}: never had it")),
                    Some(seen) if **seen != **old => {
                        let what = format!("update {key}: old has rv {}, last seen rv {}", rv(old), rv(seen));
                        self.violation(what);
                    }
                    Some(_) => {}
                }
                self.newer(&key, "update", rv(new));
                self.objects.insert(key, new.clone());
            }
            Notification::Delete(d) => {
                let obj = d.object();
                let key = match d {
                    DeletedObject::FinalStateUnknown { key, .. } => key.to_string(),
                    DeletedObject::Object(o) => key_of(&**o),
                };
                match self.objects.remove(&key) {
                    None => self.violation(format!("delete {key}: never had it")),
                    Some(seen) => {
                        if d.is_final_state_unknown() {
                            let ok = if self.coalescing {
                                rv(obj) >= rv(&seen)
                            } else {
                                **obj == *seen
                            };
                            if !ok {
                                let what =
                                    format!("tombstone {key}: carries rv {}, last seen rv {}", rv(obj), rv(&seen));
                                self.violation(what);
                            }
                        } else {
                            self.newer(&key, "delete", rv(obj));
                        }
                    }
                }
            }
        }
    }

    pub fn state(&self) -> State {
        state_of(self.objects.values().map(|o| &**o))
    }

    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    pub fn events(&self) -> u64 {
        self.events
    }
}

/// How a [`ReplayHandler`] behaves besides recording.
#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    /// Records and returns.
    Fast,
    /// Takes this long per event (a handler doing real work).
    Slow(Duration),
    /// Panics after recording every n-th event (the informer must catch it and keep delivering).
    Panicky(u64),
}

/// The message of the deliberate panics (the suites' panic hook lets these through silently).
pub const DELIBERATE_PANIC: &str = "deliberate handler panic";

/// A handler that records into a shared [`Replay`].
pub struct ReplayHandler {
    pub replay: Arc<Mutex<Replay>>,
    pub behaviour: Behaviour,
    /// Deliberate panics so far.
    pub panics: Arc<AtomicU64>,
}

impl ReplayHandler {
    pub fn new(coalescing: bool, behaviour: Behaviour) -> (Self, Arc<Mutex<Replay>>) {
        let replay = Arc::new(Mutex::new(Replay::new(coalescing)));
        (
            ReplayHandler {
                replay: replay.clone(),
                behaviour,
                panics: Arc::new(AtomicU64::new(0)),
            },
            replay,
        )
    }
}

impl ResourceEventHandler<ConfigMap> for ReplayHandler {
    fn handle(&mut self, event: &Notification<ConfigMap>) {
        let n = {
            let mut r = self.replay.lock();
            r.apply(event);
            r.events()
        };
        match self.behaviour {
            Behaviour::Fast => {}
            // Simulated work, not synchronisation.
            Behaviour::Slow(d) => std::thread::sleep(d),
            Behaviour::Panicky(every) => {
                if n % every == 0 {
                    self.panics.fetch_add(1, Ordering::Relaxed);
                    std::panic::panic_any(DELIBERATE_PANIC);
                }
            }
        }
    }
}

/// Installs a panic hook that keeps deliberate handler panics quiet and counts every other panic (on any thread).
pub fn count_unexpected_panics() -> Arc<AtomicU64> {
    let unexpected = Arc::new(AtomicU64::new(0));
    let counter = unexpected.clone();
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let deliberate = info
            .payload()
            .downcast_ref::<&str>()
            .is_some_and(|m| *m == DELIBERATE_PANIC);
        if !deliberate {
            counter.fetch_add(1, Ordering::SeqCst);
            default(info);
        }
    }));
    unexpected
}

/// Random creates, updates and deletes of ConfigMaps named `cm-NN` in a few namespaces, each labelled `tier=a` or
/// `tier=b` (an update may switch it: the object leaves or enters a `tier=a` selector); remembers the latest version
/// of everything it wrote, so updates are conditional (a 409 would mean the server lost a write).
pub struct Writer {
    pub objects: BTreeMap<String, ConfigMap>,
    namespaces: Vec<String>,
    names_per_namespace: u64,
    counter: u64,
    pub ops: u64,
}

impl Writer {
    pub fn new(namespaces: &[&str], names_per_namespace: u64) -> Self {
        Writer {
            objects: BTreeMap::new(),
            namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
            names_per_namespace,
            counter: 0,
            ops: 0,
        }
    }

    /// One random write: a create when the object does not exist, else an update (70%) or a delete.
    pub fn step(&mut self, server: &ApiServer, rng: &mut Rng) {
        let ns = self.namespaces[rng.below(self.namespaces.len() as u64) as usize].clone();
        let name = format!("cm-{:02}", rng.below(self.names_per_namespace));
        let key = format!("{ns}/{name}");
        self.counter += 1;
        self.ops += 1;
        let value = self.counter.to_string();
        let tier = if rng.chance(50) { "a" } else { "b" };
        match self.objects.get(&key) {
            None => {
                let mut cm = ConfigMap::new(ObjectMeta::namespaced(&ns, &name)).with("v", value);
                cm.metadata.labels.insert("tier".into(), tier.into());
                let created = server.create(&cm).unwrap();
                self.objects.insert(key, created);
            }
            Some(current) if rng.chance(70) => {
                let mut next = current.clone();
                next.data.insert("v".into(), value);
                if rng.chance(20) {
                    next.metadata.labels.insert("tier".into(), tier.into());
                }
                let updated = server.replace(&next).unwrap();
                self.objects.insert(key, updated);
            }
            Some(_) => {
                assert!(server.delete::<ConfigMap>(Some(&ns), &name).unwrap());
                self.objects.remove(&key);
            }
        }
    }
}

/// The informer (in both suites) whose list is filtered to the objects [`in_alpha_tier_a`].
pub const FILTERED: &str = "alpha-tier-a";

/// What each informer must end up holding: the server's objects, or, for the [`FILTERED`] informer, those in alpha
/// tier a.
pub struct Expected {
    pub all: State,
    pub filtered: State,
}

impl Expected {
    pub fn of(everything: &[ConfigMap]) -> Expected {
        Expected {
            all: state_of(everything),
            filtered: state_of(everything.iter().filter(|o| in_alpha_tier_a(o))),
        }
    }

    /// The state the informer called `name` must hold.
    pub fn for_informer(&self, name: &str) -> &State {
        if name == FILTERED { &self.filtered } else { &self.all }
    }
}

/// Waits until every informer's store holds what `expected` says.
pub fn converge_stores(informers: &[SharedIndexInformer<ConfigMap>], expected: &Expected) {
    converge("the informers' stores", Duration::from_secs(60), || {
        informers.iter().find_map(|inf| {
            let got = state_of(inf.lister().list(&Default::default()).iter().map(|o| &**o));
            let want = expected.for_informer(inf.name());
            (got != *want).then(|| format!("{}: {}", inf.name(), diff(want, &got)))
        })
    });
}

/// Polls `check` until it returns `None` (converged) or `timeout` passes; fails with its last explanation.
pub fn converge(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<String>) {
    crate::common::watchdog::phase(&format!("converging: {what}"));
    let deadline = Instant::now() + timeout;
    loop {
        let Some(problem) = check() else { return };
        assert!(Instant::now() < deadline, "{what} did not converge: {problem}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The most attempts a reflector with `backoff` can make in `window` while every attempt fails: the first retry may
/// come at once (the first 410 after a healthy period relists without delay), and each later one waits at least its
/// back-off step — `initial`, then ×`factor` up to `max` (the jitter only adds to a step). An upper bound: the time
/// requests take, and the jitter, only lower the real count.
pub fn max_attempts(backoff: &BackoffConfig, window: Duration) -> u64 {
    let (mut attempts, mut elapsed, mut step) = (2, Duration::ZERO, backoff.initial);
    loop {
        elapsed += step.max(Duration::from_millis(1));
        if elapsed > window {
            return attempts;
        }
        attempts += 1;
        step = step.mul_f64(backoff.factor).min(backoff.max);
    }
}
