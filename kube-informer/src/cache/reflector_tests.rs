//! Reflector state-machine tests against a scripted `ListerWatcher` (no sockets): each test scripts the server's
//! answers, drives `step()` and checks the requests made, the queue's content and the state reached.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Sender, unbounded};
use parking_lot::Mutex;

use super::*;
use crate::cache::{Delta, DeltaFifo, DeltaType};
use crate::object::core::ConfigMap;
use crate::object::{ListMeta, ObjectMeta, Status, StatusDetails};
use crate::unstable::{SpareObjects, WatchHooks};
use crate::watch::{Bookmark, INITIAL_EVENTS_END_ANNOTATION};

type Page = Result<(Vec<ConfigMap>, ListMeta)>;
type Events = Result<EventStream<ConfigMap>>;

#[derive(Clone, Debug, PartialEq)]
enum Call {
    List(ListParams),
    Watch(WatchParams),
}

#[derive(Default)]
struct Script {
    pages: Mutex<VecDeque<Page>>,
    watches: Mutex<VecDeque<Events>>,
    calls: Mutex<Vec<Call>>,
    /// The spares the last watch opened with `watch_recycling` was given.
    spares: Mutex<Option<Arc<dyn SpareObjects<ConfigMap>>>>,
    /// Ends the last watch scripted with `open_watch_endable` ([`WatchHooks::end_watch`]).
    ender: Mutex<Option<Sender<Result<WatchEvent<ConfigMap>>>>>,
}

impl ListerWatcher<ConfigMap> for Script {
    fn list_page(&self, params: &ListParams, on_item: &mut dyn FnMut(ConfigMap)) -> Result<ListMeta> {
        self.calls.lock().push(Call::List(params.clone()));
        let (items, meta) = self.pages.lock().pop_front().expect("script has a list answer")?;
        items.into_iter().for_each(on_item);
        Ok(meta)
    }

    fn watch(&self, params: &WatchParams) -> Result<EventStream<ConfigMap>> {
        self.calls.lock().push(Call::Watch(params.clone()));
        self.watches.lock().pop_front().expect("script has a watch answer")
    }

    fn interrupt(&self) {}

    fn unstable_hooks(&self) -> Option<&dyn WatchHooks<ConfigMap>> {
        Some(self)
    }
}

impl WatchHooks<ConfigMap> for Script {
    fn watch_recycling(&self, params: &WatchParams, spares: Arc<dyn SpareObjects<ConfigMap>>) -> Events {
        *self.spares.lock() = Some(spares);
        self.watch(params)
    }

    fn end_watch(&self) {
        if let Some(tx) = self.ender.lock().take() {
            let _ = tx.send(Err(Error::Stopped));
        }
    }
}

impl Script {
    fn page(&self, items: Vec<ConfigMap>, rv: &str, cont: Option<&str>) {
        let meta = ListMeta {
            resource_version: Some(rv.into()),
            continue_token: cont.map(Into::into),
            ..Default::default()
        };
        self.pages.lock().push_back(Ok((items, meta)));
    }

    fn list_error(&self, e: Error) {
        self.pages.lock().push_back(Err(e));
    }

    /// Scripts a watch whose events the test sends through the returned sender (drop it to close the watch).
    fn open_watch(&self) -> Sender<Result<WatchEvent<ConfigMap>>> {
        let (tx, rx) = unbounded();
        self.watches.lock().push_back(Ok(Box::new(rx.into_iter())));
        tx
    }

    /// Scripts a watch with no event, which only `end_watch` ends.
    fn open_watch_endable(&self) {
        let tx = self.open_watch();
        *self.ender.lock() = Some(tx);
    }

    fn watch_error(&self, e: Error) {
        self.watches.lock().push_back(Err(e));
    }

    fn take_calls(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.lock())
    }
}

fn cm(name: &str, rv: &str) -> ConfigMap {
    let mut m = ObjectMeta::namespaced("ns", name);
    m.resource_version = Some(rv.into());
    ConfigMap::new(m)
}

fn api_error(code: u16, reason: &str) -> Error {
    Error::Api(Box::new(Status::failure(code, reason, "scripted")))
}

struct Rig {
    script: Arc<Script>,
    fifo: Arc<DeltaFifo<ConfigMap>>,
    stop: Arc<StopSignal>,
    r: Reflector<ConfigMap>,
}

fn rig(streaming: bool) -> Rig {
    let script = Arc::new(Script::default());
    let fifo = Arc::new(DeltaFifo::new(None));
    let stop = Arc::new(StopSignal::new());
    let config = ReflectorConfig {
        streaming_list: streaming,
        backoff: BackoffConfig {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(2),
            ..Default::default()
        },
        relist_jitter: Duration::ZERO,
        ..Default::default()
    };
    let lw: Arc<dyn ListerWatcher<ConfigMap>> = script.clone();
    let r = Reflector::new("test".into(), lw, fifo.clone(), config, stop.clone());
    Rig { script, fifo, stop, r }
}

/// Takes the rig's reflector, to be configured further (an unused one takes its place).
fn take_reflector(t: &mut Rig) -> Reflector<ConfigMap> {
    let unused = Reflector::new(
        "x".into(),
        t.script.clone(),
        t.fifo.clone(),
        Default::default(),
        t.stop.clone(),
    );
    std::mem::replace(&mut t.r, unused)
}

/// Pops everything queued: (key, delta types, newest rv).
fn drain(fifo: &DeltaFifo<ConfigMap>) -> Vec<(String, Vec<DeltaType>, String)> {
    let mut out = Vec::new();
    while !fifo.is_empty() {
        out.push(
            fifo.pop(|k, d, _| {
                let rv = d
                    .newest()
                    .object()
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap_or_default();
                (k.to_string(), d.iter().map(Delta::delta_type).collect(), rv)
            })
            .unwrap(),
        );
    }
    out
}

fn list_params(rv: Option<&str>, limit: Option<u32>, cont: Option<&str>) -> Call {
    Call::List(ListParams {
        resource_version: rv.map(Into::into),
        limit,
        continue_token: cont.map(Into::into),
        ..Default::default()
    })
}

fn watch_rv(call: &Call) -> Option<String> {
    match call {
        Call::Watch(w) => w.resource_version.clone(),
        other => panic!("expected a watch, got {other:?}"),
    }
}

#[test]
fn first_list_is_paged_at_rv_0_then_watches_from_its_rv() {
    let mut t = rig(false);
    t.script.page(vec![cm("a", "3"), cm("b", "4")], "", Some("t1"));
    t.script.page(vec![cm("c", "5")], "10", None);
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "Watch");
    assert_eq!(
        t.script.take_calls(),
        [
            list_params(Some("0"), Some(500), None),
            list_params(None, Some(500), Some("t1"))
        ]
    );
    assert_eq!(t.r.stats.last_sync_resource_version(), "10");
    let popped = drain(&t.fifo);
    assert_eq!(popped.len(), 3);
    assert!(popped.iter().all(|(_, kinds, _)| kinds == &[DeltaType::Replaced]));
    assert!(t.fifo.has_synced());

    let _events = t.script.open_watch();
    assert!(t.r.step());
    let calls = t.script.take_calls();
    let Call::Watch(w) = &calls[0] else { panic!("{calls:?}") };
    assert_eq!(w.resource_version.as_deref(), Some("10"));
    assert!(w.allow_bookmarks && !w.send_initial_events);
    let timeout = w.timeout_seconds.unwrap();
    assert!((300..600).contains(&timeout), "random 5-10 min timeout, got {timeout}");
}

#[test]
fn watch_events_feed_the_queue_and_a_clean_close_rewatches_without_relisting() {
    let mut t = rig(false);
    t.script.page(vec![cm("a", "3")], "10", None);
    assert!(t.r.step());
    drain(&t.fifo);
    let events = t.script.open_watch();
    assert!(t.r.step());
    events.send(Ok(WatchEvent::Added(cm("b", "11")))).unwrap();
    events.send(Ok(WatchEvent::Modified(cm("a", "12")))).unwrap();
    events.send(Ok(WatchEvent::Deleted(cm("b", "13")))).unwrap();
    events
        .send(Ok(WatchEvent::Bookmark(Bookmark {
            resource_version: "20".into(),
            ..Default::default()
        })))
        .unwrap();
    drop(events);
    for _ in 0..4 {
        assert!(t.r.step());
    }
    assert_eq!(
        t.r.stats.last_sync_resource_version(),
        "20",
        "the bookmark advanced the resource version"
    );
    assert!(t.r.step(), "clean close");
    assert_eq!(t.r.state_name(), "Watch", "re-watch, no relist");
    let _next = t.script.open_watch();
    assert!(t.r.step());
    let calls = t.script.take_calls();
    assert_eq!(calls.len(), 3, "list, watch, watch: {calls:?}");
    assert_eq!(watch_rv(&calls[1]).as_deref(), Some("10"));
    assert_eq!(watch_rv(&calls[2]).as_deref(), Some("20"));
    assert_eq!(
        drain(&t.fifo),
        [
            (
                "ns/b".to_string(),
                vec![DeltaType::Added, DeltaType::Deleted],
                "13".to_string()
            ),
            ("ns/a".to_string(), vec![DeltaType::Updated], "12".to_string()),
        ]
    );
    let m = t.r.stats.snapshot();
    assert_eq!((m.lists, m.watches, m.watch_events, m.watch_restarts), (1, 2, 4, 1));
}

#[test]
fn gone_watch_relists_at_the_last_rv_unpaged() {
    let mut t = rig(false);
    t.script.page(vec![cm("a", "3"), cm("b", "4")], "10", None);
    assert!(t.r.step());
    let events = t.script.open_watch();
    assert!(t.r.step());
    events.send(Ok(WatchEvent::Added(cm("c", "11")))).unwrap();
    let gone = Status::failure(410, "Expired", "too old resource version: 5 (9)");
    events.send(Ok(WatchEvent::Error(Box::new(gone)))).unwrap();
    assert!(t.r.step());
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "List");
    // b vanished while we were away.
    t.script.page(vec![cm("a", "3"), cm("c", "11")], "15", None);
    t.script.take_calls();
    assert!(t.r.step());
    assert_eq!(t.script.take_calls(), [list_params(Some("11"), None, None)]);
    let popped = drain(&t.fifo);
    let b = popped.iter().find(|(k, _, _)| k == "ns/b").expect("b deleted");
    assert_eq!(
        b.1,
        [DeltaType::Replaced, DeltaType::Deleted],
        "a tombstone for the missed delete"
    );
    assert_eq!(t.r.stats.snapshot().relists_gone, 1);
}

#[test]
fn one_410_relists_at_once_but_a_storm_of_them_backs_off_exponentially() {
    const H: Duration = Duration::from_secs(3600);
    let mut t = rig(false);
    t.r.backoff = Backoff::new(BackoffConfig {
        initial: H,
        max: 4 * H,
        factor: 2.0,
        reset_after: 24 * H,
    });
    let gone = || api_error(410, "Expired");
    t.script.page(vec![], "10", None);
    assert!(t.r.step());
    // The first 410 after a healthy period (here: ever) relists at once.
    t.script.watch_error(gone());
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "List");
    // Then each 410 in a row waits at least the next step: 1 h, 2 h, 4 h, 4 h (the back-off is skipped here).
    for step in [H, 2 * H, 4 * H, 4 * H] {
        t.script.page(vec![], "10", None);
        assert!(t.r.step(), "relisted");
        t.script.watch_error(gone());
        assert!(t.r.step());
        assert_eq!(t.r.state_name(), "BackingOff(then List)");
        let remaining = t.r.backoff_remaining().unwrap();
        assert!(
            remaining > step - Duration::from_secs(60) && remaining <= 2 * step,
            "{remaining:?}"
        );
        t.r.state = State::List;
    }
    assert_eq!(t.r.stats.snapshot().relists_gone, 5);

    // With no failure for `reset_after` (here: zero), every 410 is the first of its kind again.
    let mut t = rig(false);
    t.r.backoff = Backoff::new(BackoffConfig {
        initial: H,
        reset_after: Duration::ZERO,
        ..Default::default()
    });
    t.script.page(vec![], "10", None);
    assert!(t.r.step());
    for _ in 0..3 {
        t.script.watch_error(gone());
        assert!(t.r.step());
        assert_eq!(t.r.state_name(), "List");
        t.script.page(vec![], "10", None);
        assert!(t.r.step());
    }
}

#[test]
fn a_429_storm_backs_off_through_the_same_steps_on_a_watch_and_a_list() {
    const H: Duration = Duration::from_secs(3600);
    let mut t = rig(false);
    t.r.backoff = Backoff::new(BackoffConfig {
        initial: H,
        max: 4 * H,
        factor: 2.0,
        reset_after: 24 * H,
    });
    t.script.list_error(api_error(429, "TooManyRequests"));
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "BackingOff(then List)");
    assert!(t.r.backoff_remaining().unwrap() > H - Duration::from_secs(60));
    t.r.state = State::List;
    t.script.page(vec![], "10", None);
    assert!(t.r.step());
    // The watch's 429s continue the streak: 2 h, then 4 h.
    for step in [2 * H, 4 * H] {
        t.script.watch_error(api_error(429, "TooManyRequests"));
        assert!(t.r.step());
        assert_eq!(t.r.state_name(), "BackingOff(then Watch)");
        let remaining = t.r.backoff_remaining().unwrap();
        assert!(
            remaining > step - Duration::from_secs(60) && remaining <= 2 * step,
            "{remaining:?}"
        );
        t.r.state = State::Watch;
    }
}

#[test]
fn expired_continue_token_falls_back_to_one_full_list() {
    let mut t = rig(false);
    t.script.page(vec![cm("a", "3")], "", Some("t1"));
    t.script.list_error(api_error(410, "Expired"));
    t.script.page(vec![cm("b", "4")], "12", None);
    assert!(t.r.step());
    assert_eq!(
        t.script.take_calls(),
        [
            list_params(Some("0"), Some(500), None),
            list_params(None, Some(500), Some("t1")),
            list_params(Some("0"), None, None),
        ]
    );
    assert_eq!(t.r.stats.last_sync_resource_version(), "12");
    let popped = drain(&t.fifo);
    assert_eq!(
        popped[0],
        (
            "ns/a".to_string(),
            vec![DeltaType::Replaced, DeltaType::Deleted],
            "3".to_string()
        )
    );
    assert_eq!(popped[1].0, "ns/b");
    assert_eq!(t.r.stats.snapshot().relists_expired_continue, 1);
}

#[test]
fn an_expired_list_rv_retries_at_the_latest() {
    let mut t = rig(false);
    t.script.page(vec![cm("a", "3")], "10", None);
    assert!(t.r.step());
    t.script.watch_error(api_error(410, "Gone"));
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "List");
    t.script.list_error(api_error(410, "Expired"));
    t.script.page(vec![cm("a", "30")], "40", None);
    t.script.take_calls();
    assert!(t.r.step());
    assert_eq!(
        t.script.take_calls(),
        [list_params(Some("10"), None, None), list_params(None, Some(500), None)]
    );
    assert_eq!(t.r.state_name(), "Watch");
}

#[test]
fn throttled_watch_backs_off_for_retry_after_and_rewatches() {
    let mut t = rig(false);
    t.script.page(vec![], "10", None);
    assert!(t.r.step());
    let mut throttled = Status::failure(429, "TooManyRequests", "slow down");
    throttled.details = Some(StatusDetails {
        retry_after_seconds: Some(30),
        ..Default::default()
    });
    t.script.watch_error(Error::Api(Box::new(throttled)));
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "BackingOff(then Watch)");
    let remaining = t.r.backoff_remaining().unwrap();
    assert!(
        remaining > Duration::from_secs(29),
        "Retry-After honoured: {remaining:?}"
    );
    // Stop ends the back-off at once.
    t.stop.stop();
    assert!(!t.r.step());
    assert_eq!(t.r.state_name(), "Stopped");
}

#[test]
fn an_absurd_retry_after_is_capped_on_a_watch_and_on_a_list() {
    let throttled = |secs: i64| {
        let mut s = Status::failure(429, "TooManyRequests", "slow down");
        s.details = Some(StatusDetails {
            retry_after_seconds: Some(secs),
            ..Default::default()
        });
        Error::Api(Box::new(s))
    };
    for secs in [999_999, i64::MAX] {
        let mut t = rig(false);
        t.script.list_error(throttled(secs));
        assert!(t.r.step(), "no overflow computing the back-off");
        assert_eq!(t.r.state_name(), "BackingOff(then List)");
        assert!(t.r.backoff_remaining().unwrap() <= crate::MAX_RETRY_AFTER);
        // Once the back-off is over (the test skips it), the list succeeds; then the watch is throttled too.
        t.r.state = State::List;
        t.script.page(vec![], "10", None);
        assert!(t.r.step());
        t.script.watch_error(throttled(secs));
        assert!(t.r.step());
        assert_eq!(t.r.state_name(), "BackingOff(then Watch)");
        assert!(t.r.backoff_remaining().unwrap() <= crate::MAX_RETRY_AFTER);
    }
}

#[test]
fn retriable_watch_errors_rewatch_without_relisting() {
    for err in [
        api_error(500, "InternalError"),
        api_error(503, "ServiceUnavailable"),
        Error::from(TransportError::new(TransportErrorKind::ConnectionRefused, "refused")),
        Error::WatchIdle(Duration::from_secs(1)),
    ] {
        let mut t = rig(false);
        t.script.page(vec![], "10", None);
        assert!(t.r.step());
        let events = t.script.open_watch();
        assert!(t.r.step());
        events.send(Err(err)).unwrap();
        assert!(t.r.step());
        assert_eq!(t.r.state_name(), "BackingOff(then Watch)");
        let _again = t.script.open_watch();
        assert!(t.r.step(), "back-off elapses");
        assert!(t.r.step(), "watch re-opened");
        let calls = t.script.take_calls();
        assert!(matches!(calls.last(), Some(Call::Watch(_))));
        assert_eq!(
            calls.iter().filter(|c| matches!(c, Call::List(_))).count(),
            1,
            "no relist"
        );
    }
}

#[test]
fn forbidden_watch_relists_after_back_off() {
    let mut t = rig(false);
    t.script.page(vec![], "10", None);
    assert!(t.r.step());
    t.script.watch_error(api_error(403, "Forbidden"));
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "BackingOff(then List)");
    assert_eq!(t.r.stats.snapshot().relists_after_error, 1);
}

#[test]
fn immediately_closed_watch_backs_off_instead_of_spinning() {
    let mut t = rig(false);
    t.script.page(vec![], "10", None);
    assert!(t.r.step());
    drop(t.script.open_watch());
    assert!(t.r.step());
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "BackingOff(then Watch)");
}

fn initial_events_end(rv: &str) -> WatchEvent<ConfigMap> {
    WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        annotations: [(INITIAL_EVENTS_END_ANNOTATION.to_string(), "true".to_string())].into(),
    })
}

#[test]
fn streaming_list_syncs_then_keeps_watching_on_the_same_stream() {
    let mut t = rig(true);
    let events = t.script.open_watch();
    events.send(Ok(WatchEvent::Added(cm("a", "3")))).unwrap();
    events.send(Ok(WatchEvent::Added(cm("b", "4")))).unwrap();
    events.send(Ok(initial_events_end("20"))).unwrap();
    events.send(Ok(WatchEvent::Modified(cm("a", "21")))).unwrap();
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "Watching(0 events)");
    let calls = t.script.take_calls();
    let Call::Watch(w) = &calls[0] else { panic!() };
    assert!(w.send_initial_events && w.allow_bookmarks);
    assert_eq!(w.resource_version_match, Some(VersionMatch::NotOlderThan));
    assert_eq!(
        w.resource_version, None,
        "the first streaming list reads the latest state"
    );
    assert_eq!(t.r.stats.last_sync_resource_version(), "20");
    assert!(t.fifo.pop(|_, _, _| ()).is_ok() && t.fifo.pop(|_, _, _| ()).is_ok());
    assert!(t.fifo.has_synced());
    assert!(t.r.step());
    assert_eq!(
        drain(&t.fifo),
        [("ns/a".to_string(), vec![DeltaType::Updated], "21".to_string())]
    );
    assert!(t.script.take_calls().is_empty(), "no second request");
}

#[test]
fn refused_streaming_list_falls_back_to_list_and_is_remembered() {
    let mut t = rig(true);
    t.script.watch_error(api_error(422, "Invalid"));
    t.script.page(vec![cm("a", "3")], "10", None);
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "Watch");
    let calls = t.script.take_calls();
    assert!(matches!(&calls[0], Call::Watch(w) if w.send_initial_events));
    assert_eq!(calls[1], list_params(Some("0"), Some(500), None));
    assert!(t.r.stats.snapshot().streaming_list_refused);
    // Later relists list directly.
    t.script.watch_error(api_error(410, "Gone"));
    assert!(t.r.step());
    t.script.page(vec![], "11", None);
    assert!(t.r.step());
    let calls = t.script.take_calls();
    assert!(matches!(calls.last(), Some(Call::List(_))));
    assert!(
        !calls
            .iter()
            .any(|c| matches!(c, Call::Watch(w) if w.send_initial_events))
    );
}

#[test]
fn a_server_ignoring_send_initial_events_is_detected_by_its_plain_bookmark() {
    let mut t = rig(true);
    let events = t.script.open_watch();
    events.send(Ok(WatchEvent::Added(cm("a", "3")))).unwrap();
    events
        .send(Ok(WatchEvent::Bookmark(Bookmark {
            resource_version: "9".into(),
            ..Default::default()
        })))
        .unwrap();
    t.script.page(vec![cm("a", "3"), cm("b", "4")], "10", None);
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "Watch");
    assert!(t.r.stats.snapshot().streaming_list_refused);
    assert_eq!(t.r.stats.last_sync_resource_version(), "10");
}

#[test]
fn transform_runs_once_before_objects_enter_the_queue() {
    let mut t = rig(false);
    let mut r = take_reflector(&mut t).with_transform(Some(Arc::new(|cm: &mut ConfigMap| {
        cm.data.insert("seen".into(), format!("{}", cm.data.len()));
    })));
    t.script.page(vec![cm("a", "3")], "10", None);
    assert!(r.step());
    let d = t.fifo.get("ns/a").unwrap();
    assert_eq!(
        d.newest().object().data.get("seen"),
        Some("0"),
        "transformed exactly once"
    );
}

#[test]
fn objects_the_cache_retired_beyond_what_the_decoder_keeps_are_freed_on_the_reflector_thread() {
    let mut t = rig(false);
    let recycler = Arc::new(Recycler::new());
    let mut r = take_reflector(&mut t).with_recycler(recycler.clone());
    let retire = |name: &str| recycler.retire(Arc::new(cm(name, "1")));
    // Up to KEEP wait for the watch decoder to decode into (this scripted watch does not decode).
    (0..=KEEP).for_each(|i| retire(&format!("old-{i}")));
    t.script.page(vec![cm("a", "3")], "10", None);
    assert!(r.step());
    assert_eq!(recycler.len(), KEEP, "the oldest freed while listing, the rest kept");
    assert_eq!(recycler.take().and_then(|o| o.metadata.name), Some("old-1".into()));
    retire("old-1-again");
    let events = t.script.open_watch();
    assert!(r.step());
    retire("old-last");
    events.send(Ok(WatchEvent::Modified(cm("a", "11")))).unwrap();
    assert!(r.step());
    assert_eq!(recycler.len(), KEEP, "freed while queueing a watch event");
    assert_eq!(recycler.take().and_then(|o| o.metadata.name), Some("old-3".into()));
}

#[test]
fn watches_are_handed_the_recycler_the_cache_retires_into() {
    let mut t = rig(false);
    let recycler = Arc::new(Recycler::new());
    let mut r = take_reflector(&mut t).with_recycler(recycler.clone());
    t.script.page(vec![cm("a", "3")], "10", None);
    assert!(r.step());
    assert!(t.script.spares.lock().is_none(), "a list is given no spares");
    let _events = t.script.open_watch();
    assert!(r.step());
    let spares = t.script.spares.lock().take().expect("the watch was opened with spares");
    // What the cache retires is what the watch's spares hand out.
    recycler.retire(Arc::new(cm("old", "1")));
    assert_eq!(spares.take().and_then(|o| o.metadata.name), Some("old".into()));
    assert!(spares.take().is_none());
}

#[test]
fn stop_is_seen_between_steps() {
    let mut t = rig(false);
    t.stop.stop();
    assert!(!t.r.step());
    assert!(t.script.take_calls().is_empty());
}

#[test]
fn relists_after_410_are_jittered_and_wait_for_the_shared_budget() {
    let mut t = rig(false);
    let budget = RelistBudget::new(1);
    t.r.config.relist_jitter = Duration::from_secs(60);
    t.r.config.relist_budget = Some(budget.clone());
    t.script.page(vec![], "10", None);
    assert!(t.r.step());
    assert_eq!(budget.in_use(), 0, "the slot is given back after the list");
    t.script.watch_error(api_error(410, "Gone"));
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "BackingOff(then List)");
    assert!(t.r.backoff_remaining().unwrap() <= Duration::from_secs(60));
    // Another reflector holds the only slot: this one waits, and gives up when stopped.
    let held = budget.acquire(&StopSignal::new()).unwrap();
    t.r.state = State::List;
    let stop = t.stop.clone();
    let stopper = std::thread::spawn(move || stop.stop());
    assert!(!t.r.step(), "stopped while waiting for the budget");
    stopper.join().unwrap();
    drop(held);
    assert!(
        t.script
            .take_calls()
            .iter()
            .filter(|c| matches!(c, Call::List(_)))
            .count()
            == 1
    );
}

/// A watch stream in bursts: the events of a burst come without blocking (and `size_hint` counts those left, as
/// `WatchStream` does); the next burst blocks on the channel.
struct Bursts {
    current: VecDeque<Result<WatchEvent<ConfigMap>>>,
    rx: crossbeam_channel::Receiver<Vec<Result<WatchEvent<ConfigMap>>>>,
}

impl Iterator for Bursts {
    type Item = Result<WatchEvent<ConfigMap>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.current.is_empty() {
            self.current = self.rx.recv().ok()?.into();
        }
        self.current.pop_front()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.current.len(), None)
    }
}

fn bookmark(rv: &str) -> Result<WatchEvent<ConfigMap>> {
    Ok(WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        annotations: Default::default(),
    }))
}

/// Lists nothing at resourceVersion 1 and opens a watch that delivers the bursts sent on the returned channel.
fn watching_bursts(t: &mut Rig) -> Sender<Vec<Result<WatchEvent<ConfigMap>>>> {
    t.script.page(vec![], "1", None);
    let (tx, rx) = unbounded();
    t.script.watches.lock().push_back(Ok(Box::new(Bursts {
        current: VecDeque::new(),
        rx,
    })));
    assert!(t.r.step()); // list
    assert!(t.r.step()); // open the watch
    tx
}

#[test]
fn a_burst_of_events_is_queued_under_one_lock_and_wakes_the_processing_side_once() {
    let mut t = rig(false);
    let tx = watching_bursts(&mut t);
    tx.send(vec![
        Ok(WatchEvent::Added(cm("a", "2"))),
        Ok(WatchEvent::Modified(cm("b", "3"))),
        Ok(WatchEvent::Added(cm("c", "4"))),
        bookmark("5"),
    ])
    .unwrap();
    assert!(t.r.step());
    assert_eq!(t.fifo.batches_pushed(), 1, "the burst's three changes under one lock");
    let keys: Vec<_> = t.fifo.list_keys().iter().map(|k| k.to_string()).collect();
    assert_eq!(keys, ["ns/a", "ns/b", "ns/c"]);
    assert!(
        !t.fifo.has_unwoken(),
        "the burst ended (the next read may block): woken"
    );
    assert_eq!(t.r.stats.last_sync_resource_version(), "5");

    // A longer burst is queued `BATCH` events at a time, woken for after its last; the resource version follows each
    // batch.
    let long = BATCH + 6;
    tx.send(
        (0..long)
            .map(|i| Ok(WatchEvent::Added(cm(&format!("x{i}"), &format!("{}", 10 + i)))))
            .collect(),
    )
    .unwrap();
    assert!(t.r.step());
    assert_eq!((t.fifo.batches_pushed(), t.fifo.len()), (2, 3 + BATCH));
    assert!(t.fifo.has_unwoken(), "more events were already decoded: no wake yet");
    assert_eq!(t.r.stats.last_sync_resource_version(), (10 + BATCH - 1).to_string());
    assert!(t.r.step());
    assert_eq!((t.fifo.batches_pushed(), t.fifo.len()), (3, 3 + long));
    assert!(!t.fifo.has_unwoken());
    assert_eq!(t.r.stats.last_sync_resource_version(), (10 + long - 1).to_string());

    // A burst whose last batch holds only a bookmark (nothing to queue) still wakes for the batch before it.
    let mut burst: Vec<_> = (0..BATCH)
        .map(|i| Ok(WatchEvent::Modified(cm(&format!("x{i}"), &format!("{}", 200 + i)))))
        .collect();
    burst.push(bookmark("400"));
    tx.send(burst).unwrap();
    assert!(t.r.step());
    assert!(t.fifo.has_unwoken(), "the bookmark was already decoded: no wake yet");
    assert!(t.r.step());
    assert!(!t.fifo.has_unwoken(), "the burst ended with the bookmark: woken");
    assert_eq!(
        (t.fifo.batches_pushed(), t.r.stats.last_sync_resource_version()),
        (4, "400".to_owned())
    );

    // A burst ending in an error queues the changes before it, then leaves the watch, woken for.
    tx.send(vec![
        Ok(WatchEvent::Deleted(cm("a", "90"))),
        Ok(WatchEvent::Error(Box::new(Status::failure(410, "Expired", "too old")))),
    ])
    .unwrap();
    assert!(t.r.step());
    assert_eq!(t.fifo.batches_pushed(), 5);
    let kinds: Vec<_> = t.fifo.get("ns/a").unwrap().iter().map(|d| d.delta_type()).collect();
    assert_eq!(kinds, [DeltaType::Added, DeltaType::Deleted]);
    assert!(!t.fifo.has_unwoken());
    assert_eq!(t.r.stats.last_sync_resource_version(), "90");
    assert_eq!(t.r.state_name(), "List");
}

#[test]
fn a_streamed_initial_list_wakes_when_it_ends_or_fails() {
    let mut t = rig(true);
    let (tx, rx) = unbounded();
    t.script.watches.lock().push_back(Ok(Box::new(Bursts {
        current: VecDeque::new(),
        rx,
    })));
    let mut end = Bookmark {
        resource_version: "9".into(),
        annotations: Default::default(),
    };
    end.annotations
        .insert(INITIAL_EVENTS_END_ANNOTATION.into(), "true".into());
    tx.send(vec![
        Ok(WatchEvent::Added(cm("a", "2"))),
        Ok(WatchEvent::Added(cm("b", "3"))),
        Ok(WatchEvent::Bookmark(end)),
    ])
    .unwrap();
    assert!(t.r.step());
    assert!(!t.fifo.has_unwoken());
    assert_eq!(drain(&t.fifo).len(), 2);
    assert!(t.fifo.has_synced());
}

/// Lists one page of three items, hinting that the first two have another behind them, and records what the queue
/// looked like during the page.
struct HintedList {
    fifo: Mutex<Option<Arc<DeltaFifo<ConfigMap>>>>,
    unwoken_during: Mutex<Vec<bool>>,
}

impl ListerWatcher<ConfigMap> for HintedList {
    fn list_page(&self, _: &ListParams, _: &mut dyn FnMut(ConfigMap)) -> Result<ListMeta> {
        unreachable!("the reflector lists through list_page_hinted")
    }

    fn list_page_hinted(&self, _: &ListParams, on_item: &mut dyn FnMut(ConfigMap, bool)) -> Result<ListMeta> {
        let fifo = self.fifo.lock().clone().unwrap();
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            on_item(cm(name, "1"), i < 2);
            self.unwoken_during.lock().push(fifo.has_unwoken());
        }
        Ok(ListMeta {
            resource_version: Some("7".into()),
            ..Default::default()
        })
    }

    fn watch(&self, _: &WatchParams) -> Result<EventStream<ConfigMap>> {
        Err(api_error(500, "InternalError"))
    }

    fn interrupt(&self) {}
}

#[test]
fn a_hinted_list_wakes_after_each_burst_of_items() {
    let lw = Arc::new(HintedList {
        fifo: Mutex::new(None),
        unwoken_during: Mutex::new(Vec::new()),
    });
    let fifo = Arc::new(DeltaFifo::new(None));
    *lw.fifo.lock() = Some(fifo.clone());
    let lw_dyn: Arc<dyn ListerWatcher<ConfigMap>> = lw.clone();
    let mut r = Reflector::new(
        "test".into(),
        lw_dyn,
        fifo.clone(),
        ReflectorConfig {
            streaming_list: false,
            ..Default::default()
        },
        Arc::new(StopSignal::new()),
    );
    assert!(r.step());
    assert_eq!(r.state_name(), "Watch");
    assert_eq!(*lw.unwoken_during.lock(), [true, true, false]);
    assert!(!fifo.has_unwoken());
    assert_eq!(drain(&fifo).len(), 3);
}

/// Known objects that record the reflector's resourceVersion each time the queue asks for a key (once per new key,
/// while the change is being queued).
struct RvWhenQueued {
    stats: Arc<ReflectorStats>,
    seen: Mutex<Vec<String>>,
}

impl crate::cache::KnownObjects<ConfigMap> for RvWhenQueued {
    fn known_keys(&self) -> Vec<crate::cache::Key> {
        Vec::new()
    }

    fn known_object(&self, _: &str) -> Option<Arc<ConfigMap>> {
        None
    }

    fn known_key(&self, _: &str) -> Option<crate::cache::Key> {
        self.seen.lock().push(self.stats.last_sync_resource_version());
        None
    }
}

#[test]
fn the_resource_version_of_a_burst_is_set_before_its_changes_are_queued() {
    // A handler that has seen a change finds its version (or a later one) in `last_sync_resource_version`.
    let stats = Arc::new(ReflectorStats::default());
    let known = Arc::new(RvWhenQueued {
        stats: stats.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let mut t = rig(false);
    t.fifo = Arc::new(DeltaFifo::new(Some(
        known.clone() as Arc<dyn crate::cache::KnownObjects<ConfigMap>>
    )));
    let config = ReflectorConfig {
        streaming_list: false,
        ..Default::default()
    };
    t.r = Reflector::new("test".into(), t.script.clone(), t.fifo.clone(), config, t.stop.clone())
        .with_stats(stats.clone());
    let tx = watching_bursts(&mut t);
    tx.send(vec![
        Ok(WatchEvent::Added(cm("a", "2"))),
        Ok(WatchEvent::Added(cm("b", "3"))),
    ])
    .unwrap();
    assert!(t.r.step());
    assert_eq!(t.fifo.len(), 2);
    assert_eq!(*known.seen.lock(), ["3", "3"]);
}

fn forbidden(verb: &str) -> Error {
    Error::Api(Box::new(Status::failure(
        403,
        "Forbidden",
        format!(r#"configmaps is forbidden: User "alice" cannot {verb} resource "configmaps" in API group """#),
    )))
}

fn refused() -> Error {
    Error::from(TransportError::new(
        TransportErrorKind::ConnectionRefused,
        "127.0.0.1:1",
    ))
}

#[test]
fn a_forbidden_streaming_list_falls_back_to_list_then_watch_for_that_round_only() {
    let mut t = rig(true);
    t.script.watch_error(forbidden("watch"));
    t.script.page(vec![cm("a", "3")], "10", None);
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "Watch", "listed in the same round, no back-off");
    let calls = t.script.take_calls();
    assert!(matches!(&calls[0], Call::Watch(w) if w.send_initial_events));
    assert_eq!(calls[1], list_params(Some("0"), Some(500), None));
    assert_eq!(drain(&t.fifo).len(), 1);
    assert!(t.fifo.has_synced(), "credentials with `list` alone fill the cache");
    let m = t.r.stats.snapshot();
    assert_eq!((m.streaming_list_fallbacks, m.streaming_list_refused), (1, false));
    // The watch is forbidden too: back off, then the next round tries the streaming list again (as client-go does).
    t.script.watch_error(forbidden("watch"));
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "BackingOff(then List)");
    t.script.watch_error(forbidden("watch"));
    t.script.page(vec![cm("a", "3")], "11", None);
    assert!(t.r.step(), "back-off elapses");
    assert!(t.r.step());
    let calls = t.script.take_calls();
    assert!(
        matches!(&calls[1], Call::Watch(w) if w.send_initial_events),
        "{calls:?}"
    );
    assert!(matches!(&calls[2], Call::List(_)));
    assert_eq!(t.r.stats.snapshot().streaming_list_fallbacks, 2);
}

#[test]
fn a_streaming_list_broken_midway_falls_back_to_a_list() {
    let mut t = rig(true);
    let events = t.script.open_watch();
    events.send(Ok(WatchEvent::Added(cm("a", "3")))).unwrap();
    events
        .send(Err(Error::from(TransportError::new(
            TransportErrorKind::ConnectionLost,
            "reset",
        ))))
        .unwrap();
    t.script.page(vec![cm("a", "3"), cm("b", "4")], "10", None);
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "Watch");
    assert_eq!(t.r.stats.last_sync_resource_version(), "10");
    assert_eq!(
        drain(&t.fifo).len(),
        2,
        "the list replaced what the broken stream had queued"
    );
}

#[test]
fn a_refused_connection_or_429_on_the_streaming_list_backs_off_and_tries_it_again() {
    for err in [refused(), api_error(429, "TooManyRequests")] {
        let mut t = rig(true);
        t.script.watch_error(err);
        assert!(t.r.step());
        assert_eq!(t.r.state_name(), "BackingOff(then List)");
        assert_eq!(
            t.script.take_calls().len(),
            1,
            "no list while the server is down or throttling"
        );
        let events = t.script.open_watch();
        events.send(Ok(initial_events_end("5"))).unwrap();
        assert!(t.r.step(), "back-off elapses");
        assert!(t.r.step());
        assert!(matches!(&t.script.take_calls()[..], [Call::Watch(w)] if w.send_initial_events));
        assert!(t.fifo.has_synced());
        assert_eq!(t.r.stats.snapshot().streaming_list_fallbacks, 0);
    }
}

#[test]
fn a_persisting_failure_warns_first_then_quietly_and_tells_its_end() {
    let log = crate::test_log::capture();
    let mut t = rig(false);
    for _ in 0..3 {
        t.script.list_error(refused());
    }
    t.script.page(vec![], "10", None);
    let events = t.script.open_watch();
    events.send(Ok(WatchEvent::Added(cm("a", "11")))).unwrap();
    while t.script.pages.lock().len() + t.script.watches.lock().len() > 0 {
        assert!(t.r.step());
    }
    assert!(t.r.step(), "the first watch event");
    let lines = log.take_at(log::Level::Debug);
    let failures: Vec<_> = lines.iter().filter(|(_, l)| l.contains("list failed")).collect();
    assert_eq!(failures.len(), 3, "{lines:#?}");
    assert_eq!(failures[0].0, log::Level::Warn);
    assert!(
        failures[0]
            .1
            .starts_with("test: list failed: connection refused: 127.0.0.1:1; retrying"),
        "{}",
        failures[0].1
    );
    // Within the minute after that warning, repeats go to debug (the once-a-minute repeat is FailureStreak's test).
    assert_eq!(failures[1].0, log::Level::Debug);
    assert!(
        failures[2].1.starts_with("test: still failing after 3 attempts over "),
        "{}",
        failures[2].1
    );
    let info: Vec<_> = lines.iter().filter(|(l, _)| *l == log::Level::Info).collect();
    assert_eq!(info.len(), 1, "{lines:#?}");
    assert!(
        info[0]
            .1
            .starts_with("test: list and watch recovered after 3 failed attempts over ")
    );
    // Healthy again: a watch cut by a load balancer after it worked is a normal restart, at once.
    events
        .send(Err(Error::from(TransportError::new(
            TransportErrorKind::ConnectionLost,
            "reset",
        ))))
        .unwrap();
    assert!(t.r.step());
    assert_eq!(t.r.state_name(), "Watch");
    assert!(log.take_at(log::Level::Info).is_empty());
}

#[test]
fn a_forbidden_watch_names_the_missing_verb_and_a_broken_first_watch_counts_as_a_failure() {
    let log = crate::test_log::capture();
    let mut t = rig(false);
    t.script.page(vec![], "10", None);
    assert!(t.r.step());
    t.script.watch_error(forbidden("watch"));
    assert!(t.r.step());
    let warned = log.take_at(log::Level::Warn);
    assert_eq!(warned.len(), 1);
    assert!(
        warned[0]
            .1
            .contains(r#"User "alice" cannot watch resource "configmaps""#),
        "{}",
        warned[0].1
    );
    assert!(
        warned[0]
            .1
            .contains(r#"the credentials may list but not watch this resource: grant the RBAC verb "watch""#),
        "{}",
        warned[0].1
    );
    // A list refused for want of `list` says so too.
    let mut t = rig(false);
    t.script.list_error(forbidden("list"));
    assert!(t.r.step());
    let warned = log.take_at(log::Level::Warn);
    assert!(
        warned[0]
            .1
            .contains(r#"the credentials lack the RBAC verb "list" on this resource"#),
        "{}",
        warned[0].1
    );
    // A watch that opens and then fails before any event is a failed attempt, not a healthy restart.
    let mut t = rig(false);
    t.script.page(vec![], "10", None);
    assert!(t.r.step());
    let events = t.script.open_watch();
    assert!(t.r.step());
    events.send(Err(Error::WatchIdle(Duration::from_secs(1)))).unwrap();
    assert!(t.r.step());
    let warned = log.take_at(log::Level::Warn);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].1.starts_with("test: watch failed: watch received nothing"),
        "{}",
        warned[0].1
    );
}

// ---- shards: in a file of their own ----

#[path = "reflector_shard_tests.rs"]
mod shards;

// ---- re-watching after a cut: in a file of their own ----

#[path = "reflector_rewatch_tests.rs"]
mod rewatch;

// ---- over a RealFIFO: in a file of their own ----

#[path = "reflector_real_fifo_tests.rs"]
mod real_fifo;

// ---- a relist's distance ahead of the processing thread: in a file of their own ----

#[path = "reflector_relist_bound_tests.rs"]
mod relist_bound;
