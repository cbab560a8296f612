//! Informer tests over the in-memory `MemoryLw` (the HTTP path is covered by the integration tests).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, unbounded};
use parking_lot::Mutex;

use super::super::test_support::MemoryLw;
use super::*;
use crate::cache::recycler::KEEP;
use crate::cache::{DeletedObject, EventStream, Fifo};
use crate::client::params::{ListParams, WatchParams};
use crate::informer::{HandlerFuncs, Notification, QueuePolicy};
use crate::object::core::ConfigMap;
use crate::object::{ListMeta, ObjectMeta};
use crate::selector::Selector;
use crate::unstable::{SpareObjects, WatchHooks};
use crate::watch::{WatchDecoder, WatchEvent};

const WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Add(String, String, bool),
    Update(String, String, String),
    Delete(String, String, bool),
}

fn v(cm: &ConfigMap) -> String {
    cm.data.get("v").map(str::to_owned).unwrap_or_default()
}

fn n(cm: &ConfigMap) -> String {
    cm.metadata.name.clone().unwrap_or_default()
}

struct Recorder(Sender<Seen>);

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&mut self, obj: &Arc<ConfigMap>, initial: bool) {
        let _ = self.0.send(Seen::Add(n(obj), v(obj), initial));
    }
    fn on_update(&mut self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let _ = self.0.send(Seen::Update(n(new), v(old), v(new)));
    }
    fn on_delete(&mut self, obj: &DeletedObject<ConfigMap>) {
        let _ = self.0.send(Seen::Delete(
            n(obj.object()),
            v(obj.object()),
            obj.is_final_state_unknown(),
        ));
    }
}

fn recorder() -> (Recorder, Receiver<Seen>) {
    let (tx, rx) = unbounded();
    (Recorder(tx), rx)
}

fn recv(rx: &Receiver<Seen>) -> Seen {
    rx.recv_timeout(WAIT).expect("an event within the deadline")
}

fn recv_n(rx: &Receiver<Seen>, n: usize) -> Vec<Seen> {
    let mut out: Vec<Seen> = (0..n).map(|_| recv(rx)).collect();
    out.sort_by_key(|s| format!("{s:?}"));
    out
}

/// Polls `cond` until it holds; fails with `what` at the deadline.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::yield_now();
    }
}

fn informer(lw: &Arc<MemoryLw>, opts: InformerOptions<ConfigMap>) -> SharedIndexInformer<ConfigMap> {
    let lw: Arc<dyn ListerWatcher<ConfigMap>> = lw.clone();
    SharedIndexInformer::from_arc(lw, opts.name("cms"))
}

/// A handler that blocks on a gate before each event, then forwards to a recorder.
struct Gated {
    gate: Receiver<()>,
    inner: Recorder,
}

impl ResourceEventHandler<ConfigMap> for Gated {
    fn handle(&mut self, ev: &Notification<ConfigMap>) {
        let _ = self.gate.recv();
        self.inner.handle(ev);
    }
}

fn gated() -> (Gated, Sender<()>, Receiver<Seen>) {
    let (open, gate) = unbounded();
    let (inner, rx) = recorder();
    (Gated { gate, inner }, open, rx)
}

#[test]
fn syncs_then_delivers_live_events_in_order() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        lw.put("a", "1");
        lw.put("b", "1");
        let inf = informer(&lw, InformerOptions::default().fifo(fifo));
        let (h, rx) = recorder();
        let reg = inf.add_event_handler(h).unwrap();
        assert!(!reg.has_synced());
        inf.start().unwrap();
        assert!(inf.wait_synced(WAIT));
        assert!(reg.has_synced());
        assert_eq!(
            recv_n(&rx, 2),
            [
                Seen::Add("a".into(), "1".into(), true),
                Seen::Add("b".into(), "1".into(), true)
            ]
        );
        lw.put("a", "2");
        lw.delete("b");
        lw.put("c", "1");
        assert_eq!(recv(&rx), Seen::Update("a".into(), "1".into(), "2".into()));
        assert_eq!(recv(&rx), Seen::Delete("b".into(), "1".into(), false));
        assert_eq!(recv(&rx), Seen::Add("c".into(), "1".into(), false));
        assert_eq!(inf.lister().len(), 2);
        assert_eq!(inf.last_sync_resource_version(), "5");
        inf.stop();
        assert_eq!(inf.running_threads(), 0);
        assert!(rx.try_recv().is_err(), "nothing after stop");
    }
}

#[test]
fn wait_synced_waits_for_handlers_unlike_client_go() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        lw.put("a", "1");
        let inf = informer(&lw, InformerOptions::default().fifo(fifo));
        let (h, open, rx) = gated();
        let reg = inf.add_event_handler(h).unwrap();
        inf.start().unwrap();
        eventually("cache synced", || inf.has_synced());
        // The cache is ready, but the handler has not handled its initial add yet.
        assert!(!reg.has_synced());
        assert!(!inf.wait_synced(Duration::from_millis(50)));
        open.send(()).unwrap();
        assert!(inf.wait_synced(WAIT));
        assert!(reg.has_synced());
        assert_eq!(recv(&rx), Seen::Add("a".into(), "1".into(), true));
    }
}

#[test]
fn an_empty_first_list_syncs() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        let inf = informer(&lw, InformerOptions::default().fifo(fifo));
        inf.start().unwrap();
        assert!(inf.wait_synced(WAIT));
    }
}

/// Replays one handler's events into a model, recording protocol violations.
#[derive(Default)]
struct Replay {
    model: BTreeMap<String, String>,
    violations: Vec<String>,
}

impl ResourceEventHandler<ConfigMap> for Arc<Mutex<Replay>> {
    fn on_add(&mut self, obj: &Arc<ConfigMap>, _initial: bool) {
        let mut r = self.lock();
        if let Some(prev) = r.model.insert(format!("ns/{}", n(obj)), v(obj)) {
            r.violations.push(format!("add of {} already seen at {prev}", n(obj)));
        }
    }
    fn on_update(&mut self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let mut r = self.lock();
        let key = format!("ns/{}", n(new));
        match r.model.insert(key, v(new)) {
            Some(prev) if prev == v(old) => {}
            other => r.violations.push(format!(
                "update of {} from {} but handler had {other:?}",
                n(new),
                v(old)
            )),
        }
    }
    fn on_delete(&mut self, obj: &DeletedObject<ConfigMap>) {
        let mut r = self.lock();
        if r.model.remove(&format!("ns/{}", n(obj.object()))).is_none() {
            r.violations.push(format!("delete of unseen {}", n(obj.object())));
        }
    }
}

#[test]
fn a_late_handler_gets_the_cache_then_every_change_exactly_once() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        for i in 0..20 {
            lw.put(&format!("o{i}"), "0");
        }
        let inf = Arc::new(informer(&lw, InformerOptions::default().fifo(fifo)));
        inf.start().unwrap();
        assert!(inf.wait_synced(WAIT));
        let writer = {
            let lw = lw.clone();
            std::thread::spawn(move || {
                for step in 1..=3000u32 {
                    let name = format!("o{}", step % 37);
                    if step % 11 == 0 {
                        lw.delete(&name);
                    } else {
                        lw.put(&name, &step.to_string());
                    }
                }
            })
        };
        // Join while the writer runs: some changes land before the snapshot, some after.
        let mut replays = Vec::new();
        for _ in 0..5 {
            let replay = Arc::new(Mutex::new(Replay::default()));
            replays.push((replay.clone(), inf.add_event_handler(replay).unwrap()));
            std::thread::yield_now();
        }
        writer.join().unwrap();
        let want = lw.snapshot();
        eventually("every handler caught up", || {
            replays.iter().all(|(r, _)| r.lock().model == want)
        });
        for (r, reg) in &replays {
            assert!(r.lock().violations.is_empty(), "{:?}", r.lock().violations);
            assert!(reg.has_synced());
        }
        let cached: BTreeMap<String, String> = inf
            .lister()
            .list(&Default::default())
            .iter()
            .map(|o| (format!("ns/{}", n(o)), v(o)))
            .collect();
        assert_eq!(cached, want);
    }
}

#[test]
fn a_panicking_handler_is_logged_and_keeps_receiving() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        let inf = informer(&lw, InformerOptions::default().fifo(fifo));
        let (tx, rx) = unbounded();
        let reg = inf
            .add_event_handler(HandlerFuncs::new().on_add(move |o: &Arc<ConfigMap>, _| {
                if n(o) == "boom" {
                    panic!("handler bug");
                }
                tx.send(n(o)).unwrap();
            }))
            .unwrap();
        inf.start().unwrap();
        assert!(inf.wait_synced(WAIT));
        lw.put("boom", "1");
        lw.put("fine", "1");
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), "fine");
        eventually("both deliveries counted", || reg.metrics().delivered == 2);
        assert_eq!(reg.metrics().panics, 1);
    }
}

#[test]
fn resync_goes_only_to_handlers_that_asked_for_it() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        lw.put("a", "1");
        let inf = informer(&lw, InformerOptions::default().fifo(fifo));
        let (resyncing, rx_resync) = recorder();
        let (plain, rx_plain) = recorder();
        inf.add_event_handler_with(resyncing, HandlerOptions::default().resync(Duration::from_secs(1)))
            .unwrap();
        inf.add_event_handler(plain).unwrap();
        inf.start().unwrap();
        assert!(inf.wait_synced(WAIT));
        assert_eq!(recv(&rx_resync), Seen::Add("a".into(), "1".into(), true));
        assert_eq!(
            recv(&rx_resync),
            Seen::Update("a".into(), "1".into(), "1".into()),
            "a resync"
        );
        lw.put("a", "2");
        // Per handler, events arrive in order: had the plain handler received a resync, it would come first.
        assert_eq!(recv(&rx_plain), Seen::Add("a".into(), "1".into(), true));
        assert_eq!(recv(&rx_plain), Seen::Update("a".into(), "1".into(), "2".into()));
    }
}

/// Keeps a weak reference to the old version of each update, after a gate opens for each event.
struct OldVersions {
    gate: Receiver<()>,
    olds: Sender<()>,
}

impl ResourceEventHandler<ConfigMap> for OldVersions {
    fn handle(&mut self, ev: &Notification<ConfigMap>) {
        let _ = self.gate.recv();
        if let Notification::Update { .. } = ev {
            let _ = self.olds.send(());
        }
    }
}

#[test]
fn old_versions_handlers_let_go_of_go_back_to_the_reflector_thread() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("a", "1");
    let inf = informer(&lw, InformerOptions::default());
    let (open, gate) = unbounded();
    let (olds_tx, olds) = unbounded();
    inf.add_event_handler(OldVersions { gate, olds: olds_tx }).unwrap();
    inf.start().unwrap();
    open.send(()).unwrap();
    assert!(inf.wait_synced(WAIT));
    let s = &inf.parts[0];
    let popped = s.seq.load(Ordering::SeqCst);
    lw.put("a", "2");
    // The processing thread has queued the update and dropped its own references; the handler holds the rest.
    eventually("update distributed", || s.distributed.load(Ordering::SeqCst) > popped);
    open.send(()).unwrap();
    olds.recv_timeout(WAIT).expect("the update");
    eventually("old version retired by the handler thread", || s.recycler.len() == 1);
    // Old versions wait there for the watch decoder to decode into (this in-memory watch does not decode, so they
    // pile up) until more than KEEP wait: then the reflector thread frees the oldest as it queues the next event.
    for i in 0..KEEP {
        open.send(()).unwrap();
        lw.put("a", &(3 + i).to_string());
    }
    eventually("every old version retired", || s.recycler.len() == KEEP + 1);
    open.send(()).unwrap();
    lw.put("b", "1");
    eventually("the oldest freed", || s.recycler.len() == KEEP);
    let value = |cm: ConfigMap| cm.data.get("v").map(str::to_owned);
    assert_eq!(
        s.recycler.take().and_then(value).as_deref(),
        Some("2"),
        "the first old version (v=1) was the one freed"
    );
    drop(open);
    inf.stop();
    assert_eq!(inf.running_threads(), 0);
}

/// A `ListerWatcher` of one's own: lists one object, then decodes the watch bytes the test sends with a
/// `WatchDecoder` of its own, opting into recycling.
struct BytesLw {
    listed: ConfigMap,
    /// The bytes of the first watch; later watches fail.
    chunks: Mutex<Option<Receiver<Vec<u8>>>>,
}

struct BytesStream {
    chunks: Receiver<Vec<u8>>,
    decoder: WatchDecoder<ConfigMap>,
    spares: Option<Arc<dyn SpareObjects<ConfigMap>>>,
}

impl Iterator for BytesStream {
    type Item = crate::Result<WatchEvent<ConfigMap>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(spares) = &self.spares {
                self.decoder.recycle_from(&**spares);
            }
            if let Some(ev) = self.decoder.next_event() {
                return Some(ev.map_err(Into::into));
            }
            self.decoder.push(&self.chunks.recv().ok()?);
        }
    }
}

impl BytesLw {
    fn open(&self, spares: Option<Arc<dyn SpareObjects<ConfigMap>>>) -> crate::Result<EventStream<ConfigMap>> {
        let chunks = self.chunks.lock().take().ok_or(crate::Error::Stopped)?;
        let decoder = WatchDecoder::new();
        Ok(Box::new(BytesStream {
            chunks,
            decoder,
            spares,
        }))
    }
}

impl ListerWatcher<ConfigMap> for BytesLw {
    fn list_page(&self, _: &ListParams, on_item: &mut dyn FnMut(ConfigMap)) -> crate::Result<ListMeta> {
        on_item(self.listed.clone());
        Ok(ListMeta {
            resource_version: Some("1".into()),
            ..Default::default()
        })
    }

    fn watch(&self, _: &WatchParams) -> crate::Result<EventStream<ConfigMap>> {
        self.open(None)
    }

    fn interrupt(&self) {}

    fn unstable_hooks(&self) -> Option<&dyn WatchHooks<ConfigMap>> {
        Some(self)
    }
}

impl WatchHooks<ConfigMap> for BytesLw {
    fn watch_recycling(
        &self,
        _: &WatchParams,
        spares: Arc<dyn SpareObjects<ConfigMap>>,
    ) -> crate::Result<EventStream<ConfigMap>> {
        self.open(Some(spares))
    }
}

#[test]
fn a_custom_lister_watcher_can_decode_into_the_versions_the_cache_let_go_of() {
    let name = "a-name-long-enough-to-sit-on-the-heap";
    let mut listed = ConfigMap::new(ObjectMeta::namespaced("ns", name));
    listed.metadata.resource_version = Some("1".into());
    let (bytes, chunks) = unbounded();
    let lw = Arc::new(BytesLw {
        listed,
        chunks: Mutex::new(Some(chunks)),
    });
    let listing = ReflectorConfig {
        streaming_list: false,
        ..Default::default()
    };
    let inf = SharedIndexInformer::from_arc(lw, InformerOptions::default().name("cms").reflector(listing));
    // Each update's (old, new) name buffers: an object decoded into a retired one keeps its buffer.
    let (tx, updates) = unbounded();
    inf.add_event_handler(move |ev: &Notification<ConfigMap>| {
        if let Notification::Update { old, new } = ev {
            let at = |cm: &ConfigMap| cm.metadata.name.as_ref().unwrap().as_ptr() as usize;
            let _ = tx.send((at(old), at(new)));
        }
    })
    .unwrap();
    inf.start().unwrap();
    assert!(inf.wait_synced(WAIT));
    let modified = |rv: u32| {
        let meta = format!(r#"{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}"#);
        format!("{{\"type\":\"MODIFIED\",\"object\":{{\"metadata\":{meta}}}}}\n").into_bytes()
    };
    let s = &inf.parts[0];
    bytes.send(modified(2)).unwrap();
    let (listed_at, _) = updates.recv_timeout(WAIT).unwrap();
    eventually("the listed version retired", || s.recycler.len() == 1);
    bytes.send(modified(3)).unwrap();
    let (_, decoded_at) = updates.recv_timeout(WAIT).unwrap();
    assert_eq!(
        decoded_at, listed_at,
        "version 3 was decoded into the listed version's memory"
    );
    assert_eq!(inf.last_sync_resource_version(), "3");
    drop(bytes);
    inf.stop();
    assert_eq!(inf.running_threads(), 0);
}

#[test]
fn a_slow_handler_delays_only_itself() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        let inf = informer(&lw, InformerOptions::default().fifo(fifo));
        let (slow, open, rx_slow) = gated();
        let (fast, rx_fast) = recorder();
        let slow_reg = inf.add_event_handler(slow).unwrap();
        inf.add_event_handler(fast).unwrap();
        inf.start().unwrap();
        eventually("cache synced", || inf.has_synced());
        for i in 0..100 {
            lw.put("x", &i.to_string());
        }
        for _ in 0..100 {
            recv(&rx_fast);
        }
        assert!(
            slow_reg.pending() >= 99,
            "the slow handler's backlog: {}",
            slow_reg.pending()
        );
        assert_eq!(inf.lister().get("ns/x").map(|o| v(&o)), Some("99".to_string()));
        for _ in 0..100 {
            open.send(()).unwrap();
        }
        let all: Vec<Seen> = (0..100).map(|_| recv(&rx_slow)).collect();
        assert_eq!(all[99], Seen::Update("x".into(), "98".into(), "99".into()));
        assert!(slow_reg.metrics().max_pending >= 99);
    }
}

#[test]
fn block_policy_applies_back_pressure_and_stop_still_returns() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        let inf = informer(&lw, InformerOptions::default().fifo(fifo));
        let (h, open, _rx) = gated();
        inf.add_event_handler_with(h, HandlerOptions::default().queue(QueuePolicy::Block { capacity: 2 }))
            .unwrap();
        inf.start().unwrap();
        eventually("cache synced", || inf.has_synced());
        for i in 0..200 {
            lw.put(&format!("o{i}"), "1");
        }
        // The handler holds one event and its queue two; the processing thread waits (with at most one batch of pops
        // applied to the store beyond what the handler has), the FIFO holds the rest.
        eventually("back-pressure reaches the FIFO", || inf.metrics().fifo_depth > 0);
        assert!(inf.lister().len() < 200);
        inf.stop();
        // Only the handler thread, stuck in its own code, may still run; it exits once released.
        drop(open);
        eventually("every thread exited", || inf.running_threads() == 0);
    }
}

#[test]
fn coalescing_queue_keeps_the_latest_state_per_object() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        let inf = informer(&lw, InformerOptions::default().fifo(fifo));
        let (h, open, rx) = gated();
        let reg = inf
            .add_event_handler_with(h, HandlerOptions::default().queue(QueuePolicy::CoalesceByKey))
            .unwrap();
        inf.start().unwrap();
        eventually("cache synced", || inf.has_synced());
        lw.put("x", "0");
        eventually("first event taken by the handler", || {
            reg.pending() == 0 && reg.metrics().max_pending == 1
        });
        for i in 1..=1000 {
            lw.put("x", &i.to_string());
        }
        lw.put("y", "1");
        lw.delete("y");
        // 999 updates of x merge into the first one; y's delete cancels its add.
        eventually("all merged", || reg.metrics().coalesced == 1000);
        assert_eq!(reg.pending(), 1);
        assert!(reg.metrics().max_pending <= 2, "memory O(objects): {:?}", reg.metrics());
        open.send(()).unwrap();
        open.send(()).unwrap();
        assert_eq!(recv(&rx), Seen::Add("x".into(), "0".into(), false));
        assert_eq!(recv(&rx), Seen::Update("x".into(), "0".into(), "1000".into()));
    }
}

#[test]
fn a_relist_after_410_reports_missed_deletes_as_unknown_final_state() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        lw.put("a", "1");
        lw.put("b", "1");
        let inf = informer(&lw, InformerOptions::default().fifo(fifo));
        let (h, rx) = recorder();
        inf.add_event_handler(h).unwrap();
        inf.start().unwrap();
        assert!(inf.wait_synced(WAIT));
        recv_n(&rx, 2);
        eventually("watching", || lw.watcher_count() == 1);
        lw.delete_silently("b");
        lw.expire_watches();
        assert_eq!(recv(&rx), Seen::Delete("b".into(), "1".into(), true));
        assert_eq!(inf.metrics().reflector.relists_gone, 1);
        assert_eq!(lw.lists.load(Ordering::SeqCst), 2);
    }
}

#[test]
fn bookmarks_advance_the_resource_version_without_events() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("a", "1");
    let inf = informer(&lw, InformerOptions::default());
    inf.start().unwrap();
    assert!(inf.wait_synced(WAIT));
    eventually("watching", || lw.watcher_count() == 1);
    lw.delete_silently("zzz");
    lw.bookmark();
    eventually("bookmark seen", || inf.last_sync_resource_version() == "2");
}

#[test]
fn a_dropped_registration_leaves_its_handler_registered() {
    let lw = Arc::new(MemoryLw::default());
    let inf = informer(&lw, InformerOptions::default());
    let (h, rx) = recorder();
    drop(inf.add_event_handler(h).unwrap());
    inf.start().unwrap();
    lw.put("a", "1");
    assert!(matches!(recv(&rx), Seen::Add(n, v, _) if n == "a" && v == "1"));
    lw.put("a", "2");
    assert_eq!(recv(&rx), Seen::Update("a".into(), "1".into(), "2".into()));
    assert_eq!(inf.metrics().handlers.len(), 1);
}

#[test]
fn removed_handlers_get_nothing_more_and_their_thread_exits() {
    let lw = Arc::new(MemoryLw::default());
    let inf = informer(&lw, InformerOptions::default());
    let (h, rx) = recorder();
    let reg = inf.add_event_handler(h).unwrap();
    inf.start().unwrap();
    lw.put("a", "1");
    recv(&rx);
    let threads = inf.running_threads();
    reg.remove();
    assert_eq!(inf.running_threads(), threads - 1);
    lw.put("a", "2");
    // The handler was dropped with its thread: its channel is disconnected (not merely quiet).
    assert_eq!(rx.recv_timeout(WAIT), Err(RecvTimeoutError::Disconnected));
    reg.remove();
}

#[test]
fn a_blocked_handler_can_remove_itself_while_the_processing_thread_waits_for_it() {
    let lw = Arc::new(MemoryLw::default());
    let inf = informer(&lw, InformerOptions::default());
    let (entered_tx, entered) = unbounded();
    let (go_tx, go) = unbounded::<()>();
    let own: Arc<Mutex<Option<Registration<ConfigMap>>>> = Arc::default();
    let slot = own.clone();
    let reg = inf
        .add_event_handler_with(
            move |_: &Notification<ConfigMap>| {
                let _ = entered_tx.send(());
                let _ = go.recv();
                if let Some(me) = slot.lock().take() {
                    me.remove();
                }
            },
            HandlerOptions::default()
                .name("leaving")
                .queue(QueuePolicy::Block { capacity: 1 }),
        )
        .unwrap();
    *own.lock() = Some(reg);
    let (h, rx) = recorder();
    inf.add_event_handler(h).unwrap();
    inf.start().unwrap();
    for i in 0..5 {
        lw.put(&format!("o{i}"), "1");
    }
    // The leaving handler holds its first event, its queue holds the second, and the processing thread waits to
    // hand over the third (pending = capacity + 1).
    entered.recv_timeout(WAIT).expect("the handler was called");
    eventually("the processing thread waits for the leaving handler", || {
        inf.metrics()
            .handlers
            .iter()
            .any(|h| h.name == "leaving" && h.pending == 2)
    });
    // Now it removes itself: that must not wait for the processing thread, which waits for it.
    go_tx.send(()).unwrap();
    assert_eq!(recv_n(&rx, 5).len(), 5, "the other handler got every event");
    lw.put("after", "1");
    assert_eq!(recv(&rx), Seen::Add("after".into(), "1".into(), false));
    assert_eq!(inf.metrics().handlers.len(), 1);
    // Nothing more reached the removed handler: it was dropped after its first event.
    assert_eq!(entered.recv_timeout(WAIT), Err(RecvTimeoutError::Disconnected));
}

#[test]
fn stop_works_from_every_state() {
    // Never started.
    let lw = Arc::new(MemoryLw::default());
    let inf = informer(&lw, InformerOptions::default());
    inf.add_event_handler(|_: &Notification<ConfigMap>| {}).unwrap();
    inf.stop();
    assert_eq!(inf.running_threads(), 0);
    assert!(matches!(inf.start(), Err(Error::Stopped)));
    assert!(inf.add_event_handler(|_: &Notification<ConfigMap>| {}).is_err());

    // Idle on a watch that sends nothing, with resync on.
    let lw = Arc::new(MemoryLw::default());
    let inf = informer(&lw, InformerOptions::default().resync(Duration::from_secs(3600)));
    inf.add_event_handler(|_: &Notification<ConfigMap>| {}).unwrap();
    inf.start().unwrap();
    assert!(inf.wait_synced(WAIT));
    eventually("watching", || lw.watcher_count() >= 1);
    inf.stop();
    inf.stop();
    assert_eq!(inf.running_threads(), 0);
    assert!(!inf.wait_synced(WAIT), "stopped informers are never synced");

    // Dropped without stop: the handler thread ends and drops the handler.
    let lw = Arc::new(MemoryLw::default());
    let (tx, rx) = unbounded::<()>();
    let inf = informer(&lw, InformerOptions::default());
    inf.add_event_handler(move |_: &Notification<ConfigMap>| {
        let _keep = &tx;
    })
    .unwrap();
    inf.start().unwrap();
    drop(inf);
    assert_eq!(
        rx.recv_timeout(WAIT),
        Err(RecvTimeoutError::Disconnected),
        "handler dropped with its thread"
    );
}

#[test]
fn transform_and_indexers_shape_the_cache() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("a", "red");
    lw.put("b", "blue");
    let opts = InformerOptions::default()
        .transform(|cm: &mut ConfigMap| {
            let colour = cm.data["v"].to_owned();
            cm.metadata.labels.insert("colour".into(), colour);
        })
        .indexer("by-colour", |cm: &ConfigMap| vec![cm.data["v"].to_owned()]);
    let inf = informer(&lw, opts);
    inf.start().unwrap();
    assert!(inf.wait_synced(WAIT));
    assert_eq!(inf.lister().by_index("by-colour", "red").unwrap().len(), 1);
    let lister = inf.lister();
    let blue: Selector = "colour=blue".parse().unwrap();
    assert_eq!(lister.list(&blue).iter().map(|o| n(o)).collect::<Vec<_>>(), ["b"]);
    assert_eq!(lister.namespace("ns").list(&Selector::everything()).len(), 2);
    assert!(lister.namespace("other").get("a").is_none());
    let m = inf.metrics();
    assert!(m.synced && m.store_size == 2 && m.reflector.lists == 1 && m.reflector.streaming_list_refused);
}

#[test]
fn a_panicking_transform_halts_the_informer_instead_of_hanging_it() {
    let lw = Arc::new(MemoryLw::default());
    lw.put("a", "1");
    let opts = InformerOptions::default().transform(|_: &mut ConfigMap| panic!("transform bug"));
    let inf = informer(&lw, opts);
    inf.start().unwrap();
    assert!(!inf.wait_synced(WAIT), "halted, so never synced");
    assert!(inf.is_stopped());
    inf.stop();
    assert_eq!(inf.running_threads(), 0);
}

#[test]
fn a_handler_may_remove_itself_or_stop_its_informer() {
    let lw = Arc::new(MemoryLw::default());
    let inf = Arc::new(informer(&lw, InformerOptions::default()));
    let slot: Arc<Mutex<Option<Registration<ConfigMap>>>> = Arc::new(Mutex::new(None));
    let (tx, rx) = unbounded();
    let (slot2, weak) = (slot.clone(), Arc::downgrade(&inf));
    let reg = inf
        .add_event_handler(move |ev: &Notification<ConfigMap>| {
            match n(ev.object()).as_str() {
                "remove-me" => {
                    if let Some(r) = slot2.lock().take() {
                        r.remove();
                    }
                }
                "stop-all" => {
                    if let Some(i) = weak.upgrade() {
                        i.stop();
                    }
                }
                _ => {}
            }
            let _ = tx.send(());
        })
        .unwrap();
    *slot.lock() = Some(reg);
    inf.start().unwrap();
    lw.put("remove-me", "1");
    rx.recv_timeout(WAIT).expect("remove returned inside the handler");
    eventually(
        "the removed handler's thread ended (reflector and processing remain)",
        || inf.running_threads() == 2,
    );

    let (tx, rx) = unbounded();
    let weak = Arc::downgrade(&inf);
    inf.add_event_handler(move |ev: &Notification<ConfigMap>| {
        if n(ev.object()) == "stop-all" {
            if let Some(i) = weak.upgrade() {
                i.stop();
            }
            let _ = tx.send(());
        }
    })
    .unwrap();
    lw.put("stop-all", "1");
    rx.recv_timeout(WAIT).expect("stop returned inside the handler");
    eventually("every thread ended", || inf.running_threads() == 0);
}

// ---- the queue between the reflector and the cache: in a file of their own ----

#[path = "shared_informer_fifo_tests.rs"]
mod fifo;
