//! Bounded handler lag under load: 100,000 events flow through an informer while a handler is stuck.
//!
//! * `CoalesceByKey` keeps one pending entry per object: its backlog never exceeds the number of objects, and once
//!   released the handler sees a correct (shortened) history ending at the right state.
//! * `Block { capacity }` holds back the informer's processing thread (back-pressure: its queue absorbs the
//!   stream, the reflector keeps reading) and, once released, delivers every event, in order, none lost.
//! * The unbounded default `warn!`s, naming the handler, when its backlog passes its threshold, and again at each
//!   doubling.
//!
//! The events come from an in-memory `ListerWatcher` (this measures the informer, not the network).

#[path = "common/chaos_kit.rs"]
mod chaos_kit;
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chaos_kit::{Behaviour, Replay, ReplayHandler, State, converge, diff, state_of};
use crossbeam_channel::{Receiver, Sender};
use kube_informer::Result;
use kube_informer::cache::{EventStream, Fifo, ListerWatcher};
use kube_informer::client::params::{ListParams, WatchParams};
use kube_informer::informer::{
    HandlerOptions, InformerOptions, Notification, QueuePolicy, ResourceEventHandler, SharedIndexInformer,
};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ListMeta, ObjectMeta};
use kube_informer::watch::WatchEvent;
use parking_lot::Mutex;

const EVENTS: u64 = 100_000;
const OBJECTS: u64 = 100;

/// The `i`-th state (1-based) of the stream: object `o{i % 100}`, resourceVersion `i`.
fn state(i: u64) -> ConfigMap {
    let mut meta = ObjectMeta::namespaced("ns", format!("o{:02}", i % OBJECTS));
    meta.resource_version = Some(i.to_string());
    ConfigMap::new(meta).with("v", i.to_string())
}

/// The server's state after the whole stream.
fn final_state() -> State {
    let last: Vec<ConfigMap> = (EVENTS - OBJECTS + 1..=EVENTS).map(state).collect();
    state_of(&last)
}

/// Lists nothing, then watches: `EVENTS` events (an ADDED per object, then MODIFIEDs), then silence until the
/// informer stops.
struct Stream {
    /// Disconnected by `interrupt`: ends the silence.
    stop_tx: Mutex<Option<Sender<()>>>,
    stop_rx: Receiver<()>,
    sent: AtomicBool,
}

impl Stream {
    fn new() -> Self {
        let (tx, rx) = crossbeam_channel::bounded(0);
        Stream {
            stop_tx: Mutex::new(Some(tx)),
            stop_rx: rx,
            sent: AtomicBool::new(false),
        }
    }
}

impl ListerWatcher<ConfigMap> for Stream {
    fn list_page(&self, _: &ListParams, _: &mut dyn FnMut(ConfigMap)) -> Result<ListMeta> {
        Ok(ListMeta {
            resource_version: Some("0".into()),
            ..Default::default()
        })
    }

    fn watch(&self, _: &WatchParams) -> Result<EventStream<ConfigMap>> {
        let first = !self.sent.swap(true, Ordering::SeqCst);
        let events = (1..=if first { EVENTS } else { 0 }).map(|i| {
            Ok(if i <= OBJECTS {
                WatchEvent::Added(state(i))
            } else {
                WatchEvent::Modified(state(i))
            })
        });
        let stop = self.stop_rx.clone();
        // Then nothing until stopped (a quiet watch).
        let silence = std::iter::from_fn(move || {
            let _ = stop.recv();
            None
        });
        Ok(Box::new(events.chain(silence)))
    }

    fn interrupt(&self) {
        self.stop_tx.lock().take();
    }
}

/// Blocks before each event until its gate opens (or is dropped: then never again), then records.
struct Stuck {
    gate: Receiver<()>,
    inner: ReplayHandler,
}

impl ResourceEventHandler<ConfigMap> for Stuck {
    fn handle(&mut self, ev: &Notification<ConfigMap>) {
        let _ = self.gate.recv();
        self.inner.handle(ev);
    }
}

fn stuck(coalescing: bool) -> (Stuck, Sender<()>, Arc<Mutex<Replay>>) {
    let (open, gate) = crossbeam_channel::unbounded();
    let (inner, replay) = ReplayHandler::new(coalescing, Behaviour::Fast);
    (Stuck { gate, inner }, open, replay)
}

fn informer(fifo: Fifo) -> SharedIndexInformer<ConfigMap> {
    SharedIndexInformer::new(Stream::new(), InformerOptions::default().name("lag").fifo(fifo))
}

fn replayed(what: &str, replay: &Mutex<Replay>) {
    let want = final_state();
    converge(what, Duration::from_secs(60), || {
        let got = replay.lock().state();
        (got != want).then(|| diff(&want, &got))
    });
    assert!(
        replay.lock().violations().is_empty(),
        "{what}: {:#?}",
        replay.lock().violations()
    );
}

#[test]
fn coalesce_by_key_keeps_a_stuck_handlers_backlog_within_the_number_of_objects() {
    // The handler's queue is the same whatever the informer's.
    for fifo in Fifo::ALL {
        let inf = informer(fifo);
        let (h, open, replay) = stuck(true);
        let reg = inf
            .add_event_handler_with(
                h,
                HandlerOptions::default()
                    .name("stuck")
                    .queue(QueuePolicy::CoalesceByKey),
            )
            .unwrap();
        inf.start().unwrap();
        // Every event is accounted for: the first went to the handler (which is stuck on it); the rest merged into one
        // pending entry per object. (The FIFO can be empty while the processing thread still holds a popped batch, so
        // its depth alone does not say the stream was handed over.)
        converge("the whole stream handed over", Duration::from_secs(60), || {
            let m = inf.metrics();
            let h = &m.handlers[0];
            let done = m.reflector.watch_events == EVENTS && 1 + h.coalesced + h.pending as u64 == EVENTS;
            (!done).then(|| format!("{m:?}"))
        });
        let m = reg.metrics();
        // One entry per object; one fewer if the handler thread took its first event only after later events for that
        // object had merged into it.
        assert!((OBJECTS - 1..=OBJECTS).contains(&(m.pending as u64)), "{m:?}");
        assert!(
            m.max_pending as u64 <= OBJECTS,
            "memory O(objects), not O(events): {m:?}"
        );
        drop(open);
        replayed("the coalescing handler", &replay);
        let r = replay.lock();
        assert!(
            r.events() <= 1 + 2 * OBJECTS,
            "intermediate states skipped: {} events",
            r.events()
        );
    }
}

#[test]
fn block_applies_back_pressure_then_delivers_every_event() {
    // The handler's queue is the same whatever the informer's.
    for fifo in Fifo::ALL {
        let inf = informer(fifo);
        let capacity = 16;
        let (h, open, blocked) = stuck(false);
        let reg = inf
            .add_event_handler_with(
                h,
                HandlerOptions::default()
                    .name("blocked")
                    .queue(QueuePolicy::Block { capacity }),
            )
            .unwrap();
        let (fast, fast_replay) = ReplayHandler::new(false, Behaviour::Fast);
        inf.add_event_handler_with(fast, HandlerOptions::default().name("fast"))
            .unwrap();
        inf.start().unwrap();
        // The reflector reads the whole stream into the queue while the processing thread waits for the blocked
        // handler's queue.
        converge("the stream read, the FIFO holding it", Duration::from_secs(60), || {
            let m = inf.metrics();
            let done = m.reflector.watch_events == EVENTS && m.fifo_depth > 0;
            (!done).then(|| format!("{m:?}"))
        });
        let pending = reg.pending();
        assert!(
            pending <= capacity + 1,
            "a full queue and one event being handed over: {pending}"
        );
        let delivered_meanwhile = fast_replay.lock().events();
        // The processing thread hands a batch (at most 64 pops) to each handler in turn and waits at the blocked one:
        // the other handler got at most what came before that batch.
        assert!(
            delivered_meanwhile <= 64,
            "the other handler waits too (back-pressure): {delivered_meanwhile}"
        );
        drop(open);
        replayed("the blocked handler", &blocked);
        replayed("the fast handler", &fast_replay);
        assert_eq!(
            blocked.lock().events(),
            EVENTS,
            "every event delivered, none merged or lost"
        );
        assert_eq!(fast_replay.lock().events(), EVENTS);
        let m = reg.metrics();
        assert!(
            m.max_pending <= capacity + 1,
            "the queue never held more than its capacity (+ the event being handed over): {m:?}"
        );
        assert_eq!(m.delivered, EVENTS);
    }
}

// ---- the backlog warning -------------------------------------------------------------------------------------------

/// Keeps every log line (any level, any thread).
struct Capture(Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        self.0.lock().push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

#[test]
fn an_unbounded_queue_warns_naming_the_handler_when_it_falls_behind() {
    log::set_logger(&CAPTURE).expect("the only logger of this test binary");
    log::set_max_level(log::LevelFilter::Trace);
    let inf = informer(Fifo::default());
    let (h, open, replay) = stuck(false);
    let reg = inf
        .add_event_handler_with(
            h,
            HandlerOptions::default()
                .name("laggard")
                .queue(QueuePolicy::Unbounded { warn_at: 1_000 }),
        )
        .unwrap();
    inf.start().unwrap();
    converge("the backlog built up", Duration::from_secs(60), || {
        let p = reg.pending() as u64;
        (p != EVENTS - 1).then(|| format!("{p} pending"))
    });
    let warnings: Vec<String> = CAPTURE
        .0
        .lock()
        .iter()
        .filter(|(level, line)| *level == log::Level::Warn && line.contains("\"laggard\""))
        .map(|(_, line)| line.clone())
        .collect();
    // At 1,000 pending, then at each doubling: 2,000 … 64,000.
    assert_eq!(warnings.len(), 7, "{warnings:#?}");
    assert!(
        warnings[0].contains("falling behind") && warnings[0].contains("1000 events pending"),
        "{}",
        warnings[0]
    );
    drop(open);
    replayed("the laggard", &replay);
}
