//! Controller tests against informers fed by an in-memory `ListerWatcher`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::*;
use crate::cache::{EventStream, ListerWatcher};
use crate::client::params::{ListParams, WatchParams};
use crate::informer::test_support::MemoryLw;
use crate::informer::{InformerOptions, SharedIndexInformer};
use crate::object::core::ConfigMap;
use crate::object::{ListMeta, ObjectRef, OwnerReference};
use crate::watch::WatchEvent;
use crate::workqueue::ItemExponentialFailureRateLimiter;

const WAIT: Duration = Duration::from_secs(20);

/// One reconcile as the reconcile function saw it.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    key: String,
    /// The object's `v` value, or None when deleted.
    value: Option<String>,
    retries: u32,
}

fn recv(rx: &Receiver<Seen>) -> Seen {
    rx.recv_timeout(WAIT).expect("a reconcile within the deadline")
}

/// Receives reconciles until one matches.
fn recv_until(rx: &Receiver<Seen>, what: &str, pred: impl Fn(&Seen) -> bool) -> Seen {
    let deadline = Instant::now() + WAIT;
    loop {
        let s = rx
            .recv_deadline(deadline)
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
        if pred(&s) {
            return s;
        }
    }
}

fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::yield_now();
    }
}

fn informer(lw: &Arc<MemoryLw>, name: &str) -> Arc<SharedIndexInformer<ConfigMap>> {
    let lw: Arc<dyn ListerWatcher<ConfigMap>> = lw.clone();
    Arc::new(SharedIndexInformer::from_arc(lw, InformerOptions::default().name(name)))
}

/// Fast retries: 1 ms, 2 ms, 4 ms...
fn fast() -> ControllerOptions {
    ControllerOptions::default()
        .name("test")
        .rate_limiter(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(1),
            Duration::from_millis(50),
        ))
}

/// A controller whose reconcile reports each call on a channel and returns what `decide` says.
fn recording<F>(
    primary: Arc<SharedIndexInformer<ConfigMap>>,
    options: ControllerOptions,
    decide: F,
) -> (Controller<ConfigMap, ()>, Receiver<Seen>)
where
    F: Fn(&Seen) -> std::result::Result<Action, String> + Send + Sync + 'static,
{
    let (tx, rx) = unbounded();
    let c = Controller::builder(primary, ())
        .options(options)
        .build(move |key: &str, ctx: &Context<'_, ConfigMap, ()>| {
            let seen = Seen {
                key: key.to_owned(),
                value: ctx.object().map(|o| o.data["v"].to_owned()),
                retries: ctx.retries(),
            };
            let r = decide(&seen);
            let _ = tx.send(seen);
            r
        })
        .unwrap();
    (c, rx)
}

#[test]
fn reconciles_every_object_then_each_change_and_deletion() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("a", "1");
    lw.put("b", "1");
    let inf = informer(&lw, "cms");
    let (c, rx) = recording(inf.clone(), fast(), |_| Ok(Action::await_change()));
    c.start().unwrap();
    let mut first = [recv(&rx), recv(&rx)];
    first.sort_by(|x, y| x.key.cmp(&y.key));
    assert_eq!(first[0].key, "ns/a");
    assert_eq!(first[1].key, "ns/b");

    lw.put("a", "2");
    let s = recv_until(&rx, "the update of a", |s| s.value.as_deref() == Some("2"));
    assert_eq!(s.key, "ns/a");

    lw.delete("b");
    let s = recv_until(&rx, "the deletion of b", |s| s.key == "ns/b" && s.value.is_none());
    assert_eq!(s.retries, 0);

    c.stop();
    assert_eq!(c.running_workers(), 0);
    let m = c.metrics();
    assert!(m.reconciles >= 4, "{m:?}");
    assert_eq!((m.errors, m.panics, m.running), (0, 0, false));
}

#[test]
fn a_failing_key_is_retried_with_back_off_until_it_succeeds() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("flaky", "1");
    let inf = informer(&lw, "cms");
    let attempts = Arc::new(AtomicU32::new(0));
    let a = attempts.clone();
    let (c, rx) = recording(inf, fast(), move |_| {
        if a.fetch_add(1, Ordering::SeqCst) < 2 {
            Err("the API said no".to_owned())
        } else {
            Ok(Action::await_change())
        }
    });
    c.start().unwrap();
    let retries: Vec<u32> = (0..3).map(|_| recv(&rx).retries).collect();
    assert_eq!(retries, [0, 1, 2], "each retry sees the failures before it");
    eventually("the third attempt's bookkeeping", || c.metrics().reconciles == 3);
    let m = c.metrics();
    assert_eq!((m.errors, m.panics), (2, 0));
    assert_eq!(
        m.queue.as_ref().unwrap().retries,
        2,
        "two rate-limited retries were scheduled"
    );
    c.stop();
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
}

/// A controller named `name` whose reconcile fails `failures` times, then succeeds; returns the levels of its log
/// lines about the key, once the success is logged.
fn failure_log(name: &str, options: ControllerOptions, failures: u32) -> Vec<(log::Level, String)> {
    let log = crate::test_log::capture_marked(&format!("controller {name}: reconcile of ns/flaky"));
    let lw = Arc::new(MemoryLw::default());
    lw.put("flaky", "1");
    let inf = informer(&lw, "cms");
    let attempts = Arc::new(AtomicU32::new(0));
    let a = attempts.clone();
    let (c, _rx) = recording(inf, options.name(name), move |_| {
        if a.fetch_add(1, Ordering::SeqCst) < failures {
            Err("the API said no".to_owned())
        } else {
            Ok(Action::await_change())
        }
    });
    c.start().unwrap();
    eventually("the key succeeded", || {
        c.metrics().reconciles == u64::from(failures) + 1 && c.shared.failing.lock().is_empty()
    });
    let mut lines = log.take();
    if lines.iter().any(|(l, _)| *l == log::Level::Warn) {
        // Its success is logged just after the key left the failing ones.
        eventually("the success is logged", || {
            lines.extend(log.take());
            lines.iter().any(|(_, l)| l.contains("succeeded"))
        });
    }
    c.stop();
    lines
}

#[test]
fn a_failing_key_warns_at_once_then_quietly_and_tells_its_recovery() {
    let lines = failure_log("log-cadence", fast(), 3);
    let levels: Vec<log::Level> = lines.iter().map(|(l, _)| *l).collect();
    use log::Level::{Debug, Info, Warn};
    // Within the minute after the first warning the repeats are debug (the minute itself: FailureStreak's test).
    assert_eq!(levels, [Warn, Debug, Debug, Info], "{lines:#?}");
    assert_eq!(
        lines[0].1,
        "controller log-cadence: reconcile of ns/flaky failed: the API said no; retrying with back-off"
    );
    assert!(
        lines[2]
            .1
            .starts_with("controller log-cadence: reconcile of ns/flaky still failing after 3 attempts over "),
        "{}",
        lines[2].1
    );
    assert!(lines[2].1.ends_with(": failed: the API said no"), "{}", lines[2].1);
    assert!(
        lines[3]
            .1
            .starts_with("controller log-cadence: reconcile of ns/flaky succeeded after 3 failed attempts over "),
        "{}",
        lines[3].1
    );
    // With a threshold, the first failures stay at debug; a streak that never warned ends silently.
    let levels: Vec<_> = failure_log("log-threshold", fast().warn_after_failures(3), 4)
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    assert_eq!(levels, [Debug, Debug, Warn, Debug, Info]);
    let quiet: Vec<_> = failure_log("log-quiet", fast().warn_after_failures(3), 2)
        .into_iter()
        .filter(|(l, _)| *l <= Info)
        .collect();
    assert!(quiet.is_empty(), "{quiet:?}");
}

#[test]
fn a_panicking_reconcile_is_caught_and_retried() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("boom", "1");
    let inf = informer(&lw, "cms");
    let panicked = Arc::new(AtomicBool::new(false));
    let p = panicked.clone();
    let (c, rx) = recording(inf, fast(), move |_| {
        if !p.swap(true, Ordering::SeqCst) {
            panic!("reconcile bug");
        }
        Ok(Action::await_change())
    });
    c.start().unwrap();
    // The first call panics after reporting nothing (the send comes after `decide`): only the retry reports.
    let s = recv(&rx);
    assert_eq!((s.key.as_str(), s.retries), ("ns/boom", 1));
    eventually("the retry's bookkeeping", || c.metrics().reconciles == 2);
    assert_eq!(c.metrics().panics, 1);
    assert_eq!(c.running_workers(), 1, "the worker survived the panic");
    c.stop();
}

#[test]
fn requeue_after_reconciles_again_without_a_change() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("poll", "1");
    let inf = informer(&lw, "cms");
    let (c, rx) = recording(inf, fast(), |_| Ok(Action::requeue_after(Duration::from_millis(1))));
    c.start().unwrap();
    for _ in 0..3 {
        assert_eq!(recv(&rx).key, "ns/poll");
    }
    c.stop();
}

#[test]
fn owned_objects_map_to_their_controller() {
    let primaries = Arc::new(MemoryLw::default());
    primaries.put("owner", "1");
    let owned = Arc::new(OwnedLw::default());
    let p = informer(&primaries, "primaries");
    let s: Arc<SharedIndexInformer<ConfigMap>> = Arc::new(SharedIndexInformer::from_arc(
        owned.clone(),
        InformerOptions::default().name("owned"),
    ));
    let (tx, rx) = unbounded();
    let c = Controller::builder(p, tx)
        .options(fast())
        .owns(s.clone())
        .build(|key: &str, ctx: &Context<'_, ConfigMap, Sender<(String, usize)>>| {
            let owned = ctx.lister_of::<ConfigMap>().expect("the secondary lister");
            let _ = ctx.data().send((key.to_owned(), owned.list(&Default::default()).len()));
            Ok::<_, String>(Action::await_change())
        })
        .unwrap();
    c.start().unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), ("ns/owner".to_owned(), 0));
    owned.add_owned("child", "owner");
    let deadline = Instant::now() + WAIT;
    loop {
        let (key, n) = rx.recv_deadline(deadline).expect("a reconcile of the owner");
        assert_eq!(key, "ns/owner", "only the controlling owner is reconciled");
        if n == 1 {
            break;
        }
    }
    c.stop();
    s.stop();
}

#[test]
fn workers_wait_for_every_cache_before_reconciling() {
    let primaries = Arc::new(MemoryLw::default());
    primaries.put("a", "1");
    let (release, gate) = unbounded::<()>();
    let slow = Arc::new(OwnedLw {
        gate: Some(gate),
        ..Default::default()
    });
    let p = informer(&primaries, "primaries");
    let s: Arc<SharedIndexInformer<ConfigMap>> = Arc::new(SharedIndexInformer::from_arc(
        slow.clone(),
        InformerOptions::default().name("slow"),
    ));
    let (tx, rx) = unbounded();
    let secondary = s.clone();
    let c = Controller::builder(p.clone(), ())
        .options(fast())
        .watches(s.clone(), |_: &ConfigMap| Vec::new())
        .build(move |_: &str, _: &Context<'_, ConfigMap, ()>| {
            let _ = tx.send(secondary.has_synced());
            Ok::<_, String>(Action::await_change())
        })
        .unwrap();
    c.start().unwrap();
    assert!(p.wait_synced(WAIT), "the primary syncs on its own");
    eventually("the key queued", || c.metrics().queue.is_some_and(|q| q.depth == 1));
    drop(release); // the secondary's list may now complete
    assert!(
        rx.recv_timeout(WAIT).unwrap(),
        "the reconcile saw a synced secondary cache"
    );
    c.stop();
    s.stop();
}

#[test]
fn pause_joins_the_workers_and_start_requeues_every_key() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("a", "1");
    let inf = informer(&lw, "cms");
    let (c, rx) = recording(inf, fast().workers(3), |_| Ok(Action::await_change()));
    c.start().unwrap();
    assert_eq!(recv(&rx).key, "ns/a");
    assert_eq!(c.running_workers(), 3);
    c.pause();
    assert!(!c.is_running());
    assert_eq!(c.running_workers(), 0);
    assert!(c.metrics().queue.is_none());
    c.start().unwrap();
    assert_eq!(recv(&rx).key, "ns/a", "a new term reconciles every key again");
    assert_eq!(c.metrics().terms, 2);
    c.stop();
    assert!(matches!(c.start(), Err(Error::Stopped)));
}

#[test]
fn stop_leaves_a_stuck_reconcile_detached_and_returns() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("stuck", "1");
    let inf = informer(&lw, "cms");
    let (unstick, stuck) = unbounded::<()>();
    let (entered_tx, entered) = unbounded::<()>();
    let c = Controller::builder(inf, ())
        .options(fast().shutdown_grace(Duration::from_millis(10)))
        .build(move |_: &str, _: &Context<'_, ConfigMap, ()>| {
            let _ = entered_tx.send(());
            let _ = stuck.recv();
            Ok::<_, String>(Action::await_change())
        })
        .unwrap();
    c.start().unwrap();
    entered.recv_timeout(WAIT).unwrap();
    c.stop();
    assert_eq!(c.running_workers(), 1, "the stuck worker is left detached");
    drop(unstick);
    eventually("the detached worker to end once unstuck", || c.running_workers() == 0);
}

#[test]
fn the_context_splits_the_key_and_sees_stopping() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("x", "1");
    let inf = informer(&lw, "cms");
    let (tx, rx) = unbounded();
    let (entered_tx, entered) = unbounded::<()>();
    let c = Controller::builder(inf, ())
        .options(fast())
        .build(move |_: &str, ctx: &Context<'_, ConfigMap, ()>| {
            let _ = entered_tx.send(());
            // Busy until the controller stops: a long reconcile that checks `is_stopping`.
            while !ctx.is_stopping() {
                std::thread::yield_now();
            }
            let _ = tx.send((
                Some(ctx.namespace().to_owned()),
                ctx.name().to_owned(),
                ctx.controller_name().to_owned(),
            ));
            Ok::<_, String>(Action::await_change())
        })
        .unwrap();
    c.start().unwrap();
    entered.recv_timeout(WAIT).unwrap();
    c.stop();
    assert_eq!(
        rx.recv_timeout(WAIT).unwrap(),
        (Some("ns".to_owned()), "x".to_owned(), "test".to_owned())
    );
    assert_eq!(c.running_workers(), 0);
}

/// A ListerWatcher of ConfigMaps owned by ConfigMaps in namespace `ns`; its first list can be held on a gate.
#[derive(Default)]
struct OwnedLw {
    inner: MemoryLw,
    /// (owned, owner) names.
    owners: Arc<parking_lot::Mutex<Vec<(String, String)>>>,
    gate: Option<Receiver<()>>,
}

impl OwnedLw {
    fn add_owned(&self, name: &str, owner: &str) {
        self.owners.lock().push((name.to_owned(), owner.to_owned()));
        self.inner.put(name, "owned");
    }
}

fn with_owner(owners: &parking_lot::Mutex<Vec<(String, String)>>, mut cm: ConfigMap) -> ConfigMap {
    let name = cm.metadata.name.clone().unwrap_or_default();
    if let Some((_, owner)) = owners.lock().iter().find(|(n, _)| *n == name) {
        cm.metadata.owner_references.push(OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: owner.as_str().into(),
            uid: "uid".into(),
            controller: Some(true),
            block_owner_deletion: None,
        });
    }
    cm
}

impl ListerWatcher<ConfigMap> for OwnedLw {
    fn list_page(&self, params: &ListParams, on_item: &mut dyn FnMut(ConfigMap)) -> Result<ListMeta> {
        if let Some(gate) = &self.gate {
            let _ = gate.recv(); // released (disconnected) by the test
        }
        self.inner
            .list_page(params, &mut |cm| on_item(with_owner(&self.owners, cm)))
    }

    fn watch(&self, params: &WatchParams) -> Result<EventStream<ConfigMap>> {
        let owners = self.owners.clone();
        let stream = self.inner.watch(params)?.map(move |ev| {
            ev.map(|ev| match ev {
                WatchEvent::Added(o) => WatchEvent::Added(with_owner(&owners, o)),
                WatchEvent::Modified(o) => WatchEvent::Modified(with_owner(&owners, o)),
                WatchEvent::Deleted(o) => WatchEvent::Deleted(with_owner(&owners, o)),
                other => other,
            })
        });
        Ok(Box::new(stream))
    }

    fn interrupt(&self) {
        self.inner.interrupt();
    }
}

/// A rate limiter that counts the retries it schedules and the keys it forgets.
#[derive(Default)]
struct CountingLimiter {
    inner: Option<ItemExponentialFailureRateLimiter<QueueKey>>,
    when: Mutex<Vec<String>>,
    forgotten: Mutex<Vec<String>>,
}

impl CountingLimiter {
    fn new() -> Arc<Self> {
        Arc::new(CountingLimiter {
            inner: Some(ItemExponentialFailureRateLimiter::new(
                Duration::from_millis(1),
                Duration::from_millis(50),
            )),
            ..Default::default()
        })
    }
    fn scheduled(&self, key: &str) -> usize {
        self.when.lock().iter().filter(|k| *k == key).count()
    }
}

impl RateLimiter<QueueKey> for CountingLimiter {
    fn when(&self, key: &QueueKey) -> Duration {
        self.when.lock().push(key.to_string());
        self.inner.as_ref().unwrap().when(key)
    }
    fn forget(&self, key: &QueueKey) {
        self.forgotten.lock().push(key.to_string());
        self.inner.as_ref().unwrap().forget(key)
    }
    fn num_requeues(&self, key: &QueueKey) -> u32 {
        self.inner.as_ref().unwrap().num_requeues(key)
    }
}

fn counting(limiter: &Arc<CountingLimiter>) -> ControllerOptions {
    let mut o = ControllerOptions::default().name("test");
    o.rate_limiter = Some(limiter.clone());
    o
}

#[test]
fn the_error_policy_decides_what_a_failure_does() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("invalid", "1");
    lw.put("later", "1");
    let inf = informer(&lw, "cms");
    let limiter = CountingLimiter::new();
    let (tx, rx) = unbounded();
    let failed_once = Arc::new(AtomicBool::new(false));
    let policy_saw = Arc::new(Mutex::new(Vec::new()));
    let saw = policy_saw.clone();
    let c = Controller::builder(inf, ())
        .options(counting(&limiter))
        .build_with_error_policy(
            move |key: &str, ctx: &Context<'_, ConfigMap, ()>| {
                let value = ctx.object().map(|o| o.data["v"].to_owned());
                let _ = tx.send(Seen {
                    key: key.to_owned(),
                    value: value.clone(),
                    retries: ctx.retries(),
                });
                match key {
                    // Fails until someone fixes the object.
                    "ns/invalid" if value.as_deref() == Some("1") => Err("spec.v must not be 1".to_owned()),
                    "ns/later" if !failed_once.swap(true, Ordering::SeqCst) => Err("busy".to_owned()),
                    _ => Ok(Action::await_change()),
                }
            },
            move |obj: Option<&ConfigMap>, err: &String, ctx: &Context<'_, ConfigMap, ()>| {
                saw.lock()
                    .push((ctx.key().to_owned(), obj.map(|o| o.data["v"].to_owned()), err.clone()));
                if err.starts_with("spec") {
                    Action::await_change()
                } else {
                    Action::requeue_after(Duration::from_millis(1))
                }
            },
        )
        .unwrap();
    c.start().unwrap();

    // "later": retried after the policy's delay, its failure counted.
    let s = recv_until(&rx, "the retry of later", |s| s.key == "ns/later" && s.retries == 1);
    assert_eq!(s.value.as_deref(), Some("1"));
    // "invalid": dropped, then reconciled again when the object changes — with its history forgotten.
    lw.put("invalid", "2");
    let s = recv_until(&rx, "the fixed object", |s| {
        s.key == "ns/invalid" && s.value.as_deref() == Some("2")
    });
    assert_eq!(s.retries, 0);
    c.stop();
    assert_eq!(limiter.scheduled("ns/invalid"), 0, "a dropped error schedules no retry");
    assert_eq!(
        limiter.scheduled("ns/later"),
        1,
        "requeue_after still counts the failure"
    );
    assert!(limiter.forgotten.lock().iter().any(|k| k == "ns/invalid"));
    let saw = policy_saw.lock();
    assert!(saw.contains(&(
        "ns/invalid".to_owned(),
        Some("1".to_owned()),
        "spec.v must not be 1".to_owned()
    )));
    assert!(saw.contains(&("ns/later".to_owned(), Some("1".to_owned()), "busy".to_owned())));
    let m = c.metrics();
    assert_eq!(m.errors, 2);
}

#[test]
fn the_default_policy_and_requeue_rate_limited_back_off() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("a", "1");
    let inf = informer(&lw, "cms");
    let limiter = CountingLimiter::new();
    let calls = Arc::new(AtomicU32::new(0));
    let n = calls.clone();
    let (c, rx) = recording(inf, counting(&limiter), move |_| {
        match n.fetch_add(1, Ordering::SeqCst) {
            0 => Err("failed".to_owned()),
            // Not ready yet: back off as after a failure, without it being one.
            1 => Ok(Action::requeue_rate_limited()),
            _ => Ok(Action::await_change()),
        }
    });
    c.start().unwrap();
    let retries: Vec<u32> = (0..3).map(|_| recv(&rx).retries).collect();
    assert_eq!(retries, [0, 1, 2]);
    eventually("the third reconcile's bookkeeping", || c.metrics().reconciles == 3);
    assert_eq!(limiter.scheduled("ns/a"), 2);
    assert_eq!(c.metrics().errors, 1, "a rate-limited requeue is not an error");
    c.stop();
}

#[test]
fn predicates_stop_events_before_they_queue_a_key() {
    use crate::controller::predicate::{on_delete, on_update};
    let lw = Arc::new(MemoryLw::default());
    lw.put("a", "1");
    let secondary = Arc::new(MemoryLw::default());
    let inf = informer(&lw, "cms");
    let sec = informer(&secondary, "secondary");
    let (tx, rx) = unbounded();
    let c = Controller::builder(inf, ())
        .options(fast())
        .predicate(on_update(|_: &ConfigMap, new: &ConfigMap| &new.data["v"] != "skip"))
        // Secondary objects map to a; their deletions are ignored.
        .watches_filtered(sec.clone(), on_delete(|_: &ConfigMap| false), |_: &ConfigMap| {
            Some(ObjectRef::new("a").within("ns"))
        })
        .build(move |key: &str, ctx: &Context<'_, ConfigMap, ()>| {
            let _ = tx.send((key.to_owned(), ctx.object().map(|o| o.data["v"].to_owned())));
            Ok::<_, String>(Action::await_change())
        })
        .unwrap();
    c.start().unwrap();
    let next = || rx.recv_timeout(WAIT).expect("a reconcile");
    assert_eq!(next(), ("ns/a".to_owned(), Some("1".to_owned())));
    lw.put("a", "skip");
    lw.put("a", "3");
    // Events reach the handler in order: once 3 is reconciled, "skip" was judged — and queued nothing.
    let (_, v) = next();
    assert_eq!(
        v.as_deref(),
        Some("3"),
        "the filtered update queued no reconcile of its own"
    );
    eventually("the filter counted", || c.metrics().filtered == 1);
    let adds = c.metrics().queue.unwrap().adds;

    secondary.put("s", "1");
    assert_eq!(next().0, "ns/a", "a secondary add maps to a");
    secondary.delete("s");
    lw.put("a", "4");
    assert_eq!(next().1.as_deref(), Some("4"));
    // The secondary's events reach its own handler: wait until the delete was judged.
    eventually("the secondary delete filtered", || c.metrics().filtered == 2);
    assert_eq!(
        c.metrics().queue.unwrap().adds,
        adds + 2,
        "the secondary add and the update to 4"
    );
    c.stop();
    sec.stop();
}

#[test]
fn a_reconcile_failing_once_its_term_is_over_goes_to_the_next_term_without_the_error_policy() {
    use crate::client::LeaseTerm;
    use crate::clock::FakeClock;

    let lw = Arc::new(MemoryLw::default());
    lw.put("a", "1");
    let inf = informer(&lw, "cms");
    let clock = FakeClock::new();
    let term = |lease: &str| {
        let until = clock.now() + Duration::from_secs(10);
        LeaseTerm::begin(lease, Arc::new(clock.clone()), (until, Duration::ZERO), None, None)
    };
    let first = term("ns/first");
    let (tx, rx) = unbounded();
    let policy = Arc::new(AtomicU32::new(0));
    let (ending, asked) = (first.clone(), policy.clone());
    let c = Controller::builder(inf.clone(), ())
        .options(fast())
        .build_with_error_policy(
            move |key: &str, ctx: &Context<'_, ConfigMap, ()>| {
                let lease = ctx.term().map(|t| t.lease().to_owned()).unwrap_or_default();
                let _ = tx.send((key.to_owned(), lease.clone(), ctx.object().is_some()));
                if lease != "ns/first" {
                    return Ok(Action::await_change());
                }
                // The renewals failed while this reconcile ran: the term ended, and its write with it.
                ending.end();
                assert!(ctx.is_stopping());
                Err("PATCH refused: ownership lost".to_owned())
            },
            move |_, _: &String, _: &Context<'_, ConfigMap, ()>| {
                asked.fetch_add(1, Ordering::SeqCst);
                Action::requeue_rate_limited()
            },
        )
        .unwrap();
    c.start_in(Some(&first)).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), ("ns/a".into(), "ns/first".into(), true));
    eventually("the key handed over", || c.metrics().ownership_lost == 1);
    // Leadership lost: the workers pause. The key was neither retried in the ended term nor counted as an error.
    c.pause();
    let m = c.metrics();
    assert_eq!((m.errors, policy.load(Ordering::SeqCst)), (0, 0), "{m:?}");
    assert!(rx.try_recv().is_err(), "not reconciled again in the ended term");

    // The object goes while nobody leads; the next term here reconciles its key all the same.
    lw.delete("a");
    eventually("the cache without a", || inf.lister().is_empty());
    c.start_in(Some(&term("ns/second"))).unwrap();
    assert_eq!(
        rx.recv_timeout(WAIT).unwrap(),
        ("ns/a".into(), "ns/second".into(), false)
    );
    c.stop();
}
