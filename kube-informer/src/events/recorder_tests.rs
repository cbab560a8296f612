//! Recorder tests against an in-memory sink.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, unbounded};
use parking_lot::Mutex;

use super::*;
use crate::error::{TransportError, TransportErrorKind};
use crate::object::core::ConfigMap;
use crate::object::{ObjectMeta, Status};

const WAIT: Duration = Duration::from_secs(20);

#[derive(Default)]
struct SinkState {
    /// namespace/name → stored event.
    events: BTreeMap<String, Event>,
    /// Errors for the next calls, in order.
    failures: VecDeque<Error>,
    /// "create ns/name" or "patch ns/name", in order.
    calls: Vec<String>,
    rv: u64,
}

#[derive(Clone, Default)]
struct FakeSink {
    state: Arc<Mutex<SinkState>>,
    /// When set, every call first waits for this channel to disconnect.
    gate: Option<Receiver<()>>,
}

impl FakeSink {
    fn wait(&self) {
        if let Some(g) = &self.gate {
            let _ = g.recv();
        }
    }
}

impl EventSink for FakeSink {
    fn create(&self, event: &Event) -> Result<Event> {
        self.wait();
        let mut s = self.state.lock();
        let key = format!(
            "{}/{}",
            event.metadata.namespace.as_deref().unwrap_or(""),
            event.metadata.name.as_deref().unwrap_or("")
        );
        s.calls.push(format!("create {key}"));
        if let Some(e) = s.failures.pop_front() {
            return Err(e);
        }
        if s.events.contains_key(&key) {
            return Err(Error::Api(Box::new(Status::failure(409, "AlreadyExists", "exists"))));
        }
        s.rv += 1;
        let mut stored = event.clone();
        stored.metadata.resource_version = Some(s.rv.to_string());
        s.events.insert(key, stored.clone());
        Ok(stored)
    }

    fn patch(&self, namespace: &str, name: &str, patch: &serde_json::Value) -> Result<Event> {
        self.wait();
        let mut s = self.state.lock();
        let key = format!("{namespace}/{name}");
        s.calls.push(format!("patch {key}"));
        if let Some(e) = s.failures.pop_front() {
            return Err(e);
        }
        s.rv += 1;
        let rv = s.rv;
        let Some(stored) = s.events.get_mut(&key) else {
            return Err(Error::Api(Box::new(Status::failure(404, "NotFound", "gone"))));
        };
        stored.count = patch["count"].as_i64().map(|c| c as i32);
        stored.last_timestamp = patch["lastTimestamp"].as_str().map(str::to_owned);
        stored.message = patch["message"].as_str().map(str::to_owned);
        stored.metadata.resource_version = Some(rv.to_string());
        Ok(stored.clone())
    }
}

fn down() -> Error {
    Error::Transport(Box::new(TransportError::new(
        TransportErrorKind::ConnectionRefused,
        "connection refused",
    )))
}

fn cm(name: &str) -> ConfigMap {
    let mut meta = ObjectMeta::namespaced("prod", name);
    meta.uid = Some(format!("uid-{name}"));
    ConfigMap::new(meta)
}

fn options() -> RecorderOptions {
    RecorderOptions::new("test-controller")
        .instance("host-1")
        .retry_interval(Duration::from_millis(1))
}

#[test]
fn repeats_become_one_event_with_a_count() {
    let sink = FakeSink::default();
    let r = EventRecorder::new(sink.clone(), options()).unwrap();
    for _ in 0..3 {
        assert!(r.normal(&cm("a"), "Synced", "in sync"));
    }
    assert!(r.warning(&cm("a"), "Failed", "no"));
    assert!(r.flush(WAIT));
    let s = sink.state.lock();
    assert_eq!(s.events.len(), 2, "{:?}", s.events.keys());
    let synced = s
        .events
        .values()
        .find(|e| e.reason.as_deref() == Some("Synced"))
        .unwrap();
    assert_eq!(synced.count, Some(3));
    assert_eq!(synced.involved_object.name, "a");
    assert_eq!(synced.source.as_ref().unwrap().component, "test-controller");
    assert_eq!(s.calls.iter().filter(|c| c.starts_with("patch")).count(), 2);
    drop(s);
    let m = r.metrics();
    assert_eq!((m.created, m.patched, m.dropped, m.failed), (2, 2, 0, 0));
    r.stop();
}

#[test]
fn recording_never_blocks_and_drops_when_the_queue_is_full() {
    let (release, gate) = unbounded::<()>();
    let sink = FakeSink {
        gate: Some(gate),
        ..Default::default()
    };
    let r = EventRecorder::new(sink.clone(), options().queue_capacity(2)).unwrap();
    // The writer takes at most one event and blocks in the sink; two more fit in the queue; the rest are dropped.
    let accepted = (0..10).filter(|i| r.normal(&cm(&format!("o{i}")), "R", "m")).count();
    assert!((2..=3).contains(&accepted), "{accepted} accepted");
    assert_eq!(r.metrics().dropped, 10 - accepted as u64);
    drop(release);
    assert!(r.flush(WAIT));
    assert_eq!(r.metrics().created, accepted as u64);
    r.stop();
}

#[test]
fn unreachable_server_writes_are_retried_until_they_succeed() {
    let sink = FakeSink::default();
    sink.state.lock().failures.extend([down(), down()]);
    let r = EventRecorder::new(sink.clone(), options()).unwrap();
    r.normal(&cm("a"), "R", "m");
    assert!(r.flush(WAIT));
    let m = r.metrics();
    assert_eq!((m.created, m.retries, m.failed), (1, 2, 0));
    assert_eq!(sink.state.lock().calls.len(), 3);
    r.stop();
}

#[test]
fn a_refused_event_is_not_retried_and_retries_are_bounded() {
    let sink = FakeSink::default();
    sink.state
        .lock()
        .failures
        .push_back(Error::Api(Box::new(Status::failure(422, "Invalid", "bad event"))));
    let r = EventRecorder::new(sink.clone(), options().max_tries(3)).unwrap();
    r.normal(&cm("a"), "R", "m");
    assert!(r.flush(WAIT));
    assert_eq!((r.metrics().failed, sink.state.lock().calls.len()), (1, 1));
    sink.state.lock().failures.extend((0..5).map(|_| down()));
    r.normal(&cm("b"), "R", "m");
    assert!(r.flush(WAIT));
    assert_eq!(r.metrics().failed, 2);
    assert_eq!(sink.state.lock().calls.len(), 1 + 3, "three attempts, then given up");
    r.stop();
}

#[test]
fn an_expired_event_is_created_again_with_its_count() {
    let sink = FakeSink::default();
    let r = EventRecorder::new(sink.clone(), options()).unwrap();
    r.normal(&cm("a"), "R", "m");
    assert!(r.flush(WAIT));
    sink.state.lock().events.clear(); // the server's event TTL passed
    r.normal(&cm("a"), "R", "m");
    assert!(r.flush(WAIT));
    let s = sink.state.lock();
    assert_eq!(s.events.len(), 1);
    assert_eq!(s.events.values().next().unwrap().count, Some(2));
    let kinds: Vec<&str> = s.calls.iter().map(|c| c.split(' ').next().unwrap()).collect();
    assert_eq!(kinds, ["create", "patch", "create"]);
    drop(s);
    r.stop();
}

#[test]
fn stop_writes_what_is_queued_joins_and_refuses_later_events() {
    let (release, gate) = unbounded::<()>();
    let sink = FakeSink {
        gate: Some(gate),
        ..Default::default()
    };
    let r = EventRecorder::new(sink.clone(), options()).unwrap();
    for i in 0..3 {
        r.normal(&cm(&format!("o{i}")), "R", "m");
    }
    assert_eq!(r.running_threads(), 1);
    drop(release);
    r.stop();
    assert_eq!(r.running_threads(), 0);
    let m = r.metrics();
    assert_eq!(m.created + m.dropped, 3, "{m:?}");
    assert!(!r.normal(&cm("late"), "R", "m"));
    assert!(r.flush(Duration::ZERO), "nothing left in flight");
}

#[test]
fn dropping_the_last_clone_stops_the_thread() {
    let sink = FakeSink::default();
    let r = EventRecorder::new(sink, options()).unwrap();
    let clone = r.clone();
    let live = r.inner.live.clone();
    drop(r);
    assert_eq!(
        live.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "a clone keeps it running"
    );
    drop(clone);
    assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn an_empty_component_is_refused() {
    assert!(matches!(
        EventRecorder::new(FakeSink::default(), RecorderOptions::new("")),
        Err(Error::InvalidInput(_))
    ));
}
