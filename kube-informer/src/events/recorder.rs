//! `EventRecorder`: records events without ever blocking its caller; a background thread aggregates and writes them.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded, select};
use log::{debug, warn};
use parking_lot::{Condvar, Mutex};

use super::cache::{EventCache, Pending, Write};
use super::{Event, EventSource, EventType, ObjectReference};
use crate::clock::deadline::deadline_after;
use crate::clock::jitter::full_jitter;
use crate::error::{Error, Result};
use crate::failure_streak::FailureStreak;
use crate::health::{Health, HealthCell};
use crate::object::Resource;
use crate::stop::StopSignal;
use crate::thread_name::ThreadName;
use crate::worker::{STOP_BUDGET, Worker};

/// Of [`STOP_BUDGET`], how long the writer spends writing the events still queued at stop (one attempt each).
const DRAIN_BUDGET: Duration = Duration::from_millis(500);

/// Where events are written: the API server ([`ApiEventSink`](super::ApiEventSink)), or a fake in tests. Called
/// from the recorder's thread only.
pub trait EventSink: Send + 'static {
    /// Creates `event` (in `event.metadata.namespace`); returns it as stored.
    fn create(&self, event: &Event) -> Result<Event>;

    /// Applies a JSON merge patch to the event `namespace/name`; returns it as stored.
    fn patch(&self, namespace: &str, name: &str, patch: &serde_json::Value) -> Result<Event>;
}

/// Recorder settings; the defaults are client-go's (`tools/record`).
///
/// ```
/// use kube_informer::events::RecorderOptions;
///
/// let opts = RecorderOptions::new("configmap-sync").instance("pod-7f9c");
/// assert_eq!((opts.queue_capacity, opts.cache_size, opts.max_tries), (1000, 4096, 12));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RecorderOptions {
    /// The reporting component: `source.component` and `reportingComponent` of every event (your controller's
    /// name).
    pub component: String,
    /// The reporting instance: `source.host` and `reportingInstance` (a pod or host name). Default: empty.
    pub instance: String,
    /// Events waiting to be written; when full, new events are dropped (and counted) rather than blocking the
    /// caller. Default: 1000 (client-go's `maxQueuedEvents`).
    pub queue_capacity: usize,
    /// Recently written events remembered for aggregation. Default: 4096 (client-go's `maxLruCacheEntries`).
    pub cache_size: usize,
    /// A repeat this long after the previous occurrence starts a new Event object instead of bumping the count.
    /// Default: 10 minutes (client-go's `defaultAggregateIntervalInSeconds`).
    pub aggregation_window: Duration,
    /// Attempts per event while the API server is unreachable (or answers 429 / 5xx). Default: 12 (client-go's
    /// `maxTriesPerEvent`).
    pub max_tries: u32,
    /// The pause between attempts; the first one is randomised in `(0, interval]` so that recorders do not retry in
    /// step after an API server outage. Default: 10 s (client-go's `defaultSleepDuration`).
    pub retry_interval: Duration,
}

impl RecorderOptions {
    /// Options for `component`, with client-go's defaults.
    pub fn new(component: impl Into<String>) -> RecorderOptions {
        RecorderOptions {
            component: component.into(),
            instance: String::new(),
            queue_capacity: 1000,
            cache_size: 4096,
            aggregation_window: Duration::from_secs(600),
            max_tries: 12,
            retry_interval: Duration::from_secs(10),
        }
    }

    /// Sets [`instance`](RecorderOptions::instance).
    #[must_use]
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = instance.into();
        self
    }

    /// Sets [`queue_capacity`](RecorderOptions::queue_capacity) (at least 1).
    #[must_use]
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.queue_capacity = capacity.max(1);
        self
    }

    /// Sets [`cache_size`](RecorderOptions::cache_size).
    #[must_use]
    pub fn cache_size(mut self, size: usize) -> Self {
        self.cache_size = size;
        self
    }

    /// Sets [`aggregation_window`](RecorderOptions::aggregation_window).
    #[must_use]
    pub fn aggregation_window(mut self, window: Duration) -> Self {
        self.aggregation_window = window;
        self
    }

    /// Sets [`max_tries`](RecorderOptions::max_tries) (at least 1).
    #[must_use]
    pub fn max_tries(mut self, tries: u32) -> Self {
        self.max_tries = tries.max(1);
        self
    }

    /// Sets [`retry_interval`](RecorderOptions::retry_interval).
    #[must_use]
    pub fn retry_interval(mut self, interval: Duration) -> Self {
        self.retry_interval = interval;
        self
    }
}

/// A snapshot of a recorder's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecorderMetrics {
    /// Events waiting to be written.
    pub queued: usize,
    /// Event objects created.
    pub created: u64,
    /// Repeats written by patching an existing Event.
    pub patched: u64,
    /// Events dropped because the queue was full (or still queued when the recorder stopped).
    pub dropped: u64,
    /// Events abandoned: refused by the server, or still failing after `max_tries`.
    pub failed: u64,
    /// Write attempts retried.
    pub retries: u64,
}

#[derive(Default)]
struct Stats {
    /// Events put on the queue.
    accepted: AtomicU64,
    /// Events taken off the queue and finished with (written, abandoned or dropped). Invariant: never above
    /// `accepted` once the sending call returned; guarded for `flush`'s waits.
    processed: Mutex<u64>,
    processed_cond: Condvar,
    created: AtomicU64,
    patched: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
    retries: AtomicU64,
    /// `Degraded` while writes fail (from the first failed attempt to the next write that succeeds), `Halted` once
    /// stopped.
    health: HealthCell,
}

impl Stats {
    fn finished(&self, n: u64) {
        *self.processed.lock() += n;
        self.processed_cond.notify_all();
    }
}

struct Inner {
    name: String,
    source: EventSource,
    tx: Sender<Pending>,
    stats: Arc<Stats>,
    stop: Arc<StopSignal>,
    /// Dropped on stop: wakes the writer's `select!`.
    stop_tx: Mutex<Option<Sender<()>>>,
    worker: Mutex<Option<Worker>>,
    live: Arc<AtomicUsize>,
}

/// Records core/v1 Events about objects, as client-go's `EventRecorder` with its `EventBroadcaster` and
/// `EventCorrelator` (repeat aggregation; the similar-event aggregation and the spam filter are not ported).
///
/// * Recording never blocks: events go on a bounded queue ([`RecorderOptions::queue_capacity`]); when it is full
///   the event is dropped and counted in [`RecorderMetrics::dropped`].
/// * One thread (`ev:<component>` as the OS shows it, `kube-informer/events/<component>` in logs) writes them. An
///   event identical to one written within [`RecorderOptions::aggregation_window`] — same object, type, reason and
///   message — bumps that Event's `count` and `lastTimestamp` by PATCH (re-creating it if it expired) instead of
///   creating another. Events are named `<object name>.<hex unix nanoseconds>`, in the object's namespace (`default`
///   for cluster-scoped objects).
/// * Writes that fail for want of a server (unreachable, 429, 5xx) are retried every
///   [`RecorderOptions::retry_interval`] up to [`RecorderOptions::max_tries`] times; a refusal (403, 422...) is
///   abandoned, with a `warn!` the first time each status code is seen.
/// * [`stop`](EventRecorder::stop) (or dropping the last clone) writes what is still queued — one attempt each,
///   for half a second at most — and joins the thread within a second.
///
/// Clones share the queue and the thread.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::events::{ApiEventSink, Event, EventRecorder, RecorderOptions};
/// use kube_informer::object::{core::ConfigMap, ObjectMeta};
/// use kube_informer_apiserver::ApiServer;
///
/// let server = ApiServer::builder().namespaces(["prod"]).start()?;
/// let cm = server.create(&ConfigMap::new(ObjectMeta::namespaced("prod", "settings")))?;
/// let recorder = EventRecorder::new(ApiEventSink::new(server.client()?), RecorderOptions::new("my-controller"))?;
/// for _ in 0..3 {
///     recorder.normal(&cm, "Synced", "settings are in sync"); // never blocks
/// }
/// assert!(recorder.flush(Duration::from_secs(30)));
/// let events = server.list::<Event>(Some("prod"))?;
/// assert_eq!((events.len(), events[0].count), (1, Some(3)));
/// recorder.stop();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct EventRecorder {
    inner: Arc<Inner>,
}

impl EventRecorder {
    /// A recorder writing to `sink`, with its thread started.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty component name; an error when the thread cannot be spawned.
    pub fn new(sink: impl EventSink, options: RecorderOptions) -> Result<EventRecorder> {
        if options.component.is_empty() {
            return Err(Error::InvalidInput(
                "event recorder: the component name is empty".into(),
            ));
        }
        let (tx, rx) = bounded(options.queue_capacity.max(1));
        let (stop_tx, stop_rx) = bounded::<()>(0);
        let source = EventSource {
            component: options.component.clone(),
            host: options.instance.clone(),
        };
        let stats = Arc::new(Stats::default());
        let stop = Arc::new(StopSignal::new());
        let live = Arc::new(AtomicUsize::new(0));
        let name = format!("kube-informer/events/{}", options.component);
        let writer = Writer {
            sink: Box::new(sink),
            cache: EventCache::new(options.cache_size, options.aggregation_window),
            source: source.clone(),
            stats: stats.clone(),
            stop: stop.clone(),
            rejected: HashSet::new(),
            streak: FailureStreak::default(),
            options,
        };
        let thread = ThreadName::new("ev", &source.component, name.clone());
        let worker = Worker::spawn(thread, &live, move || writer.run(&rx, &stop_rx))?;
        Ok(EventRecorder {
            inner: Arc::new(Inner {
                name,
                source,
                tx,
                stats,
                stop,
                stop_tx: Mutex::new(Some(stop_tx)),
                worker: Mutex::new(Some(worker)),
                live,
            }),
        })
    }

    /// Records an event about the object `reference` points to. Returns at once: `false` when the event was dropped
    /// (the queue is full, or the recorder stopped).
    pub fn publish(
        &self,
        reference: ObjectReference,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) -> bool {
        let pending = Pending {
            reference,
            type_,
            reason: reason.to_owned(),
            message: message.into(),
            time: SystemTime::now(),
        };
        let stats = &self.inner.stats;
        if self.inner.stop.is_stopped() {
            stats.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        match self.inner.tx.try_send(pending) {
            Ok(()) => {
                stats.accepted.fetch_add(1, Ordering::SeqCst);
                true
            }
            Err(TrySendError::Full(p) | TrySendError::Disconnected(p)) => {
                stats.dropped.fetch_add(1, Ordering::Relaxed);
                debug!(
                    "{}: event queue full; dropped {} {} about {}/{}",
                    self.inner.name, p.type_, p.reason, p.reference.namespace, p.reference.name
                );
                false
            }
        }
    }

    /// Records an event about `obj`.
    pub fn event<K: Resource>(&self, obj: &K, type_: EventType, reason: &str, message: impl Into<String>) -> bool {
        self.publish(ObjectReference::from_resource(obj), type_, reason, message)
    }

    /// Records a `Normal` event about `obj`.
    pub fn normal<K: Resource>(&self, obj: &K, reason: &str, message: impl Into<String>) -> bool {
        self.event(obj, EventType::Normal, reason, message)
    }

    /// Records a `Warning` event about `obj`.
    pub fn warning<K: Resource>(&self, obj: &K, reason: &str, message: impl Into<String>) -> bool {
        self.event(obj, EventType::Warning, reason, message)
    }

    /// The source stamped on every event.
    pub fn source(&self) -> &EventSource {
        &self.inner.source
    }

    /// Waits until every event recorded before this call has been written, abandoned or dropped; false on timeout.
    pub fn flush(&self, timeout: Duration) -> bool {
        let stats = &self.inner.stats;
        let target = stats.accepted.load(Ordering::SeqCst);
        let deadline = deadline_after(Instant::now(), timeout);
        let mut processed = stats.processed.lock();
        while *processed < target {
            if stats.processed_cond.wait_until(&mut processed, deadline).timed_out() {
                return *processed >= target;
            }
        }
        true
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> RecorderMetrics {
        self.inner.metrics()
    }

    /// The recorder's health: `Degraded` while writes fail (the last error says why: an API server out of reach,
    /// RBAC lacking `create` on events…), `Healthy` again once one succeeds; `Halted` once stopped.
    pub fn health(&self) -> Health {
        self.inner.stats.health.get()
    }

    /// The recorder held weakly (by a [`Registry`](crate::registry::Registry)).
    pub(crate) fn downgrade(&self) -> WeakRecorder {
        WeakRecorder(Arc::downgrade(&self.inner))
    }

    /// The writer thread is running (1) or has ended (0).
    pub fn running_threads(&self) -> usize {
        self.inner.live.load(Ordering::SeqCst)
    }

    /// Stops recording (later events are dropped), writes what is queued (one attempt each, half a second at most)
    /// and joins the thread within about a second (a write blocked past that is left detached, with a warning).
    /// Idempotent; stops every clone.
    pub fn stop(&self) {
        self.inner.stop();
    }

    /// [`stop`](Self::stop), joining the thread until `deadline`; true when joined.
    pub(crate) fn stop_by(&self, deadline: Instant) -> bool {
        self.inner.stop_by(deadline)
    }
}

impl Inner {
    fn metrics(&self) -> RecorderMetrics {
        let s = &self.stats;
        RecorderMetrics {
            queued: self.tx.len(),
            created: s.created.load(Ordering::Relaxed),
            patched: s.patched.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            retries: s.retries.load(Ordering::Relaxed),
        }
    }

    fn stop(&self) {
        self.stop_by(Instant::now() + STOP_BUDGET);
    }

    /// Stops, joining the thread until `deadline`; true when joined (or stopped before).
    fn stop_by(&self, deadline: Instant) -> bool {
        let Some(worker) = self.worker.lock().take() else {
            return true;
        };
        self.stats.health.halt("stopped");
        self.stop.stop();
        self.stop_tx.lock().take();
        worker.join_until(deadline)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop();
    }
}

impl fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventRecorder")
            .field("source", &self.inner.source)
            .field("metrics", &self.metrics())
            .finish()
    }
}

/// A recorder held weakly (by a [`Registry`](crate::registry::Registry)): alive while any clone is.
pub(crate) struct WeakRecorder(Weak<Inner>);

impl WeakRecorder {
    /// An id telling recorders apart, the reporting component, the recorder's health and metrics; `None` once every
    /// clone is dropped.
    pub(crate) fn snapshot(&self) -> Option<(usize, String, Health, RecorderMetrics)> {
        let inner = self.0.upgrade()?;
        Some((
            Arc::as_ptr(&inner).addr(),
            inner.source.component.clone(),
            inner.stats.health.get(),
            inner.metrics(),
        ))
    }
}

/// The writer thread's state.
struct Writer {
    sink: Box<dyn EventSink>,
    cache: EventCache,
    source: EventSource,
    stats: Arc<Stats>,
    stop: Arc<StopSignal>,
    /// Status codes already reported with `warn!`.
    rejected: HashSet<u16>,
    /// Failed write attempts since the last write that succeeded (what the health reports; the log lines are
    /// the writer's own).
    streak: FailureStreak,
    options: RecorderOptions,
}

impl Writer {
    fn run(mut self, rx: &Receiver<Pending>, stop_rx: &Receiver<()>) {
        loop {
            select! {
                recv(rx) -> msg => match msg {
                    Ok(p) => {
                        self.write(&p, true);
                        self.stats.finished(1);
                    }
                    Err(_) => return,
                },
                recv(stop_rx) -> _ => break,
            }
        }
        // Stopping: write what is queued, one attempt each, within the drain budget; drop the rest.
        let deadline = Instant::now() + DRAIN_BUDGET;
        while let Ok(p) = rx.try_recv() {
            if Instant::now() >= deadline {
                let rest = 1 + rx.try_iter().count() as u64;
                self.stats.dropped.fetch_add(rest, Ordering::Relaxed);
                self.stats.finished(rest);
                debug!("{}: stopped with {rest} events unwritten", self.source.component);
                return;
            }
            self.write(&p, false);
            self.stats.finished(1);
        }
    }

    /// Writes one event, retrying while the server is unreachable (when `retry`).
    fn write(&mut self, p: &Pending, mut retry: bool) {
        let (key, write) = self.cache.prepare(p, &self.source, Instant::now());
        let mut tries = 0;
        loop {
            tries += 1;
            let result = match &write {
                Write::Create(event) => self.sink.create(event).map(|e| (e, false)),
                Write::Patch { patch, event } => {
                    let ns = event.metadata.namespace.as_deref().unwrap_or("default");
                    let name = event.metadata.name.as_deref().unwrap_or_default();
                    match self.sink.patch(ns, name, patch) {
                        Ok(e) => Ok((e, true)),
                        // The event expired or was deleted: create it again, count included (client-go does).
                        Err(e) if e.is_not_found() => {
                            let mut event = event.clone();
                            event.metadata.resource_version = None;
                            self.sink.create(&event).map(|e| (e, false))
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            let err = match result {
                Ok((stored, patched)) => {
                    if self.streak.is_failing() {
                        self.streak.recovered();
                        self.stats.health.recovered();
                    }
                    self.cache.written(key, &stored, Instant::now());
                    let counter = if patched {
                        &self.stats.patched
                    } else {
                        &self.stats.created
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(e) => e,
            };
            self.streak.failed(Instant::now(), &err, 1);
            if let Some(s) = self.streak.current() {
                self.stats
                    .health
                    .failed(s.since, s.attempts, &format!("cannot write events: {}", s.last_error));
            }
            if !err.is_retriable() {
                self.stats.failed.fetch_add(1, Ordering::Relaxed);
                self.report_rejection(p, &err);
                return;
            }
            if !retry || tries >= self.options.max_tries {
                self.stats.failed.fetch_add(1, Ordering::Relaxed);
                debug!(
                    "{}: giving up on event {} about {}/{} after {tries} attempts: {err}",
                    self.source.component, p.reason, p.reference.namespace, p.reference.name
                );
                return;
            }
            let interval = self.options.retry_interval;
            let mut delay = if tries == 1 { full_jitter(interval) } else { interval };
            if let Some(after) = err.retry_after() {
                delay = delay.max(after);
            }
            self.stats.retries.fetch_add(1, Ordering::Relaxed);
            debug!(
                "{}: cannot write event {} about {}/{} ({err}); retrying in {delay:?}",
                self.source.component, p.reason, p.reference.namespace, p.reference.name
            );
            if self.stop.wait_for(delay) {
                retry = false; // stopping: one last attempt
            }
        }
    }

    fn report_rejection(&mut self, p: &Pending, err: &Error) {
        let code = err.code().unwrap_or(0);
        // A namespace being deleted refuses new events: expected, never worth a warning.
        let terminating = err.status().is_some_and(|s| {
            s.details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
        });
        if err.is_already_exists() || terminating || !self.rejected.insert(code) {
            debug!(
                "{}: the server refused event {} about {}/{}: {err}",
                self.source.component, p.reason, p.reference.namespace, p.reference.name
            );
        } else {
            warn!(
                "{}: the server refused event {} about {}/{}: {err} (further refusals with this code are logged at debug level)",
                self.source.component, p.reason, p.reference.namespace, p.reference.name
            );
        }
    }
}

#[cfg(test)]
#[path = "recorder_tests.rs"]
mod tests;
