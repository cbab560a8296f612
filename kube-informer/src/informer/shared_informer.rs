//! `SharedIndexInformer`: one reflector, one indexed cache, many handlers (client-go's `sharedIndexInformer`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::handler::{Notification, ResourceEventHandler};
use super::listener::{self, HandlerMetrics, HandlerOptions, ListenerStats};
use super::processor::{Entry, Processor, Sequenced};
use super::synced::SyncNotify;
use crate::cache::reflector::{Reflector, ReflectorStats};
use crate::cache::{
    Delta, DeltaFifo, Indexers, KnownObjects, Lister, ListerWatcher, NAMESPACE_INDEX, Recycler, ReflectorConfig,
    ReflectorMetrics, Store, Transform, WatchErrorHandler,
};
use crate::clock::deadline::deadline_after;
use crate::error::{Error, Result};
use crate::health::{InformerHealth, LastError};
use crate::object::{MetaAccessor, Object};
use crate::stop::StopSignal;
use crate::thread_name::ThreadName;
use crate::worker::Worker;

/// client-go's `minimumResyncPeriod`: shorter handler resync periods are raised to this.
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// Most objects the processing thread pops under one hold of the DeltaFIFO's lock (and then notifies at once).
const POP_BATCH: usize = 64;

pub(crate) use crate::worker::STOP_BUDGET;

/// Informer settings.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::informer::InformerOptions;
/// use kube_informer::object::{core::ConfigMap, MetaAccessor};
///
/// let opts = InformerOptions::<ConfigMap>::default()
///     .name("configmaps")
///     .resync(Duration::from_secs(600))
///     .transform(|cm: &mut ConfigMap| cm.metadata.clear_managed_fields());
/// ```
pub struct InformerOptions<K> {
    /// Name used in logs (`kube-informer/<name>/…`) and, shortened, in thread names (`refl:<name>`, …; see
    /// [`SharedIndexInformer`]).
    pub name: Option<String>,
    /// Resync period of handlers added with [`SharedIndexInformer::add_event_handler`] (client-go's
    /// `defaultEventHandlerResyncPeriod`); `None` disables resync.
    pub resync: Option<Duration>,
    /// Applied to every object before it is cached (once per object, before any handler sees it).
    pub transform: Option<Transform<K>>,
    /// Extra indexers (the namespace index is always present).
    pub indexers: Indexers<K>,
    /// Reflector settings (page size, streaming list, watch timeout, back-off).
    pub reflector: ReflectorConfig,
    /// Called with each list/watch error.
    pub watch_error_handler: Option<WatchErrorHandler>,
}

impl<K> Default for InformerOptions<K> {
    fn default() -> Self {
        InformerOptions {
            name: None,
            resync: None,
            transform: None,
            indexers: Indexers::new(),
            reflector: ReflectorConfig::default(),
            watch_error_handler: None,
        }
    }
}

impl<K> InformerOptions<K> {
    /// Sets the name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the default handler resync period.
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Sets the transform applied to every object before it is cached.
    #[must_use]
    pub fn transform(mut self, f: impl Fn(&mut K) + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }

    /// Adds an indexer.
    #[must_use]
    pub fn indexer(mut self, name: impl Into<String>, f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) -> Self {
        self.indexers = self.indexers.with(name, f);
        self
    }

    /// Sets the reflector settings.
    #[must_use]
    pub fn reflector(mut self, config: ReflectorConfig) -> Self {
        self.reflector = config;
        self
    }

    /// Sets the watch error handler.
    #[must_use]
    pub fn watch_error_handler(mut self, f: impl Fn(&Error) + Send + Sync + 'static) -> Self {
        self.watch_error_handler = Some(Arc::new(f));
        self
    }
}

/// Drops `metadata.managedFields` — use as an informer transform: `InformerOptions::default().transform
/// (strip_managed_fields)`. Server-side-apply bookkeeping is about 40% of a typical object and rarely read from a
/// cache.
pub fn strip_managed_fields<K: Object>(obj: &mut K) {
    obj.meta_mut().clear_managed_fields();
}

/// A snapshot of an informer's state and counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InformerMetrics {
    /// List/watch counters (relists by cause, watch restarts, last resource version).
    pub reflector: ReflectorMetrics,
    /// Objects waiting in the DeltaFIFO.
    pub fifo_depth: usize,
    /// Objects in the cache.
    pub store_size: usize,
    /// Per-handler lag and counters.
    pub handlers: Vec<HandlerMetrics>,
    /// True once the cache has synced.
    pub synced: bool,
    /// The last error of the list/watch loop and when it happened, kept after recovery (`None`: never failed).
    pub last_error: Option<LastError>,
}

enum RunState {
    NotStarted,
    Running(Vec<Worker>),
    Stopped,
}

/// What the informer's threads share.
pub(crate) struct Shared<K: Object> {
    name: String,
    lw: Arc<dyn ListerWatcher<K>>,
    store: Arc<Store<K>>,
    fifo: Arc<DeltaFifo<K>>,
    processor: Processor<K>,
    /// Number of pops applied to the store. Written only by the processing thread while it applies a popped batch,
    /// so it is stable under [`DeltaFifo::exclusive`], which excludes batches.
    seq: AtomicU64,
    /// The highest `seq` whose notifications are all queued to listeners. Invariant: `distributed <= seq`.
    distributed: AtomicU64,
    sync: Arc<SyncNotify>,
    stop: Arc<StopSignal>,
    /// Dropped on stop: every blocked send and listener `select!` wakes on the disconnect.
    stop_tx: Mutex<Option<Sender<()>>>,
    stop_rx: Receiver<()>,
    run: Mutex<RunState>,
    handler_workers: Mutex<HashMap<u64, Worker>>,
    next_handler: AtomicU64,
    /// Resync check period and the default handler resync (client-go's `resyncCheckPeriod`).
    resync_check: Mutex<Option<Duration>>,
    default_resync: Option<Duration>,
    reflector_config: ReflectorConfig,
    transform: Option<Transform<K>>,
    watch_error_handler: Option<WatchErrorHandler>,
    reflector_stats: Arc<ReflectorStats>,
    /// Old versions and deleted objects that handlers let go of, freed on the reflector thread.
    recycler: Arc<Recycler<K>>,
    /// Threads of this informer currently running.
    live_threads: Arc<AtomicUsize>,
}

/// An informer: a cache of one resource kept in step with the server, and the handlers told about its changes.
///
/// Threads (joined by [`stop`](SharedIndexInformer::stop), which dropping the informer also calls): one reflector
/// (list and watch), one processing thread (pops the DeltaFIFO, updates the store), one per handler, and one for
/// resync when a resync period is set. The operating system shows 15 bytes of a thread's name, so each is named
/// `<role>:<informer name>` within 15 bytes — `refl:configmaps`, `proc:configmaps`, `sync:configmaps`, and
/// `h1:configmaps`, `h2:configmaps`… for the handlers in the order they were added (the informer's name loses its API
/// group, then its end, when it does not fit) — so that `ps -L`, `top -H` and debuggers tell them apart; logs use
/// the full names (`kube-informer/configmaps/reflector`, `kube-informer/configmaps/<handler name>`), and a
/// `debug!` line says which thread runs which handler.
pub struct SharedIndexInformer<K: Object> {
    shared: Arc<Shared<K>>,
}

impl<K: Object> SharedIndexInformer<K> {
    /// An informer over `lw`. Nothing runs until [`start`](SharedIndexInformer::start).
    pub fn new(lw: impl ListerWatcher<K>, options: InformerOptions<K>) -> Self {
        SharedIndexInformer::from_arc(Arc::new(lw), options)
    }

    /// An informer over a shared `ListerWatcher`.
    pub fn from_arc(lw: Arc<dyn ListerWatcher<K>>, options: InformerOptions<K>) -> Self {
        let mut indexers = options.indexers;
        if !indexers.names().any(|n| n == NAMESPACE_INDEX) {
            indexers = indexers.with_namespace();
        }
        let store = Arc::new(Store::new(indexers));
        let sync = Arc::new(SyncNotify::default());
        let known: Arc<dyn KnownObjects<K>> = store.clone();
        let hook_sync = sync.clone();
        let fifo = Arc::new(DeltaFifo::new(Some(known)).with_sync_hook(Arc::new(move || {
            hook_sync.mark_synced();
            hook_sync.notify();
        })));
        let (stop_tx, stop_rx) = crossbeam_channel::bounded(0);
        let resync = options.resync.map(|r| r.max(MINIMUM_RESYNC_PERIOD));
        SharedIndexInformer {
            shared: Arc::new(Shared {
                name: options.name.unwrap_or_else(|| {
                    std::any::type_name::<K>()
                        .rsplit("::")
                        .next()
                        .unwrap_or("informer")
                        .to_owned()
                }),
                lw,
                store,
                fifo,
                processor: Processor::new(),
                seq: AtomicU64::new(0),
                distributed: AtomicU64::new(0),
                sync,
                stop: Arc::new(StopSignal::new()),
                stop_tx: Mutex::new(Some(stop_tx)),
                stop_rx,
                run: Mutex::new(RunState::NotStarted),
                handler_workers: Mutex::new(HashMap::new()),
                next_handler: AtomicU64::new(1),
                resync_check: Mutex::new(resync),
                default_resync: resync,
                reflector_config: options.reflector,
                transform: options.transform,
                watch_error_handler: options.watch_error_handler,
                reflector_stats: Arc::new(ReflectorStats::default()),
                recycler: Arc::new(Recycler::new()),
                live_threads: Arc::new(AtomicUsize::new(0)),
            }),
        }
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Starts the reflector, processing and resync threads. Calling it again does nothing.
    ///
    /// # Errors
    /// When the informer was stopped, or a thread cannot be spawned.
    pub fn start(&self) -> Result<()> {
        let s = &self.shared;
        let mut run = s.run.lock();
        match *run {
            RunState::Running(_) => return Ok(()),
            RunState::Stopped => return Err(Error::Stopped),
            RunState::NotStarted => {}
        }
        let mut workers = Vec::new();
        let reflector = Reflector::new(
            s.name.clone(),
            s.lw.clone(),
            s.fifo.clone(),
            s.reflector_config.clone(),
            s.stop.clone(),
        )
        .with_stats(s.reflector_stats.clone())
        .with_transform(s.transform.clone())
        .with_error_handler(s.watch_error_handler.clone())
        .with_recycler(s.recycler.clone());
        let spawned = (|| -> Result<()> {
            let live = &s.live_threads;
            let shared = s.clone();
            workers.push(Worker::spawn(
                ThreadName::new("refl", &s.name, format!("kube-informer/{}/reflector", s.name)),
                live,
                move || shared.guarded("reflector", || reflector.run()),
            )?);
            let shared = s.clone();
            workers.push(Worker::spawn(
                ThreadName::new("proc", &s.name, format!("kube-informer/{}/process", s.name)),
                live,
                move || shared.guarded("processing", || shared.process_loop()),
            )?);
            if let Some(period) = *s.resync_check.lock() {
                let shared = s.clone();
                workers.push(Worker::spawn(
                    ThreadName::new("sync", &s.name, format!("kube-informer/{}/resync", s.name)),
                    live,
                    move || shared.resync_loop(period),
                )?);
            }
            Ok(())
        })();
        *run = RunState::Running(workers);
        drop(run);
        if let Err(e) = spawned {
            self.stop();
            return Err(e);
        }
        Ok(())
    }

    /// Adds a handler with the informer's default resync period and an unbounded queue.
    ///
    /// The handler stays registered until [`Registration::remove`] or [`stop`](SharedIndexInformer::stop), whether
    /// the returned [`Registration`] is kept or dropped.
    ///
    /// # Errors
    /// When the informer was stopped, or the handler's thread cannot be spawned.
    pub fn add_event_handler(&self, handler: impl ResourceEventHandler<K>) -> Result<Registration<K>> {
        let opts = HandlerOptions {
            resync: self.shared.default_resync,
            ..Default::default()
        };
        self.add_event_handler_with(handler, opts)
    }

    /// Adds a handler with explicit options (name, resync period, queue policy).
    ///
    /// A handler added after the informer started first receives an add (`is_in_initial_list = true`) for every
    /// object already cached, then every later change — none lost, none doubled.
    ///
    /// # Errors
    /// When the informer was stopped, or the handler's thread cannot be spawned.
    pub fn add_event_handler_with(
        &self,
        handler: impl ResourceEventHandler<K>,
        options: HandlerOptions,
    ) -> Result<Registration<K>> {
        let s = &self.shared;
        if s.stop.is_stopped() {
            return Err(Error::Stopped);
        }
        let id = s.next_handler.fetch_add(1, Ordering::Relaxed);
        let name = options.name.unwrap_or_else(|| format!("handler-{id}"));
        let stats = Arc::new(ListenerStats::new(name));
        let (outbox, inbox) = listener::queue(options.queue, &stats);
        let resync = self.handler_resync(options.resync);

        // The late-join protocol (client-go blocks all deltas instead; we need no global pause):
        //  1. Take the FIFO lock with no popped batch in flight (`exclusive`). The store is written only by the
        //     processing thread while it applies a popped batch, and each pop it applies gets the next sequence
        //     number `seq`; no batch can start while we hold the lock, so the store is exactly the result of pops
        //     1..=seq.
        //  2. Snapshot the store and read `seq`.
        //  3. Register the listener, still under the lock, with `start_after_seq = seq`. The processing thread
        //     distributes the events of pop n after its batch ends, to the listeners registered at that time,
        //     skipping listeners with n <= start_after_seq: pops already in the snapshot are not sent again, and
        //     every later pop is sent, since its distribution starts after we registered.
        //  4. Release the lock and start the listener thread: it delivers the snapshot as adds first, then its
        //     queue, which holds only pops after `seq`, in order.
        let snapshot = s.fifo.exclusive(|| {
            let snapshot = s.store.list();
            let seq = s.seq.load(Ordering::SeqCst);
            stats.pending_initial.store(snapshot.len(), Ordering::SeqCst);
            stats.queued.store(snapshot.len(), Ordering::Relaxed);
            stats.note_queued(snapshot.len());
            s.processor.add(Entry::new(id, outbox, stats.clone(), resync, seq));
            snapshot
        });
        let (thread_stats, stop, sync, recycler) = (stats.clone(), s.stop.clone(), s.sync.clone(), s.recycler.clone());
        let thread = ThreadName::new(
            &format!("h{id}"),
            &s.name,
            format!("kube-informer/{}/{}", s.name, stats.name),
        );
        log::debug!(
            "{}: handler {:?} runs on thread {} ({})",
            s.name,
            stats.name,
            thread.short,
            thread.full
        );
        let worker = Worker::spawn(thread, &s.live_threads, move || {
            listener::run(handler, snapshot, inbox, thread_stats, stop, sync, recycler)
        });
        match worker {
            Ok(w) => {
                s.handler_workers.lock().insert(id, w);
            }
            Err(e) => {
                s.processor.remove(id);
                return Err(e);
            }
        }
        Ok(Registration {
            id,
            stats,
            informer: Arc::downgrade(&self.shared),
        })
    }

    /// client-go's `AddEventHandlerWithResyncPeriod` rules: at least one second; before start a shorter period
    /// lowers the check period; after start it is raised to the check period.
    fn handler_resync(&self, requested: Option<Duration>) -> Option<Duration> {
        let requested = requested.filter(|d| !d.is_zero())?.max(MINIMUM_RESYNC_PERIOD);
        let started = !matches!(*self.shared.run.lock(), RunState::NotStarted);
        let mut check = self.shared.resync_check.lock();
        match *check {
            Some(c) if requested < c && started => {
                log::warn!(
                    "{}: resync period {requested:?} is shorter than the informer's check period {c:?}; using {c:?}",
                    self.shared.name
                );
                Some(c)
            }
            Some(c) if requested >= c => Some(requested),
            _ if started => {
                log::warn!(
                    "{}: the informer started without resync; handler resync ignored",
                    self.shared.name
                );
                None
            }
            _ => {
                *check = Some(requested);
                Some(requested)
            }
        }
    }

    /// True once the cache holds the server's state (initial list popped and applied) and its notifications are
    /// queued to every handler.
    pub fn has_synced(&self) -> bool {
        self.shared.has_synced()
    }

    /// Waits until the cache has synced **and every handler has handled its initial adds** (client-go's
    /// `WaitForCacheSync` only waits for the cache — a known trap for controllers). False on timeout or stop.
    pub fn wait_synced(&self, timeout: Duration) -> bool {
        let s = &self.shared;
        let deadline = deadline_after(Instant::now(), timeout);
        s.sync.wait_until(deadline, || {
            s.stop.is_stopped()
                || (s.has_synced()
                    && s.processor
                        .stats()
                        .iter()
                        .all(|l| l.pending_initial.load(Ordering::SeqCst) == 0))
        }) && !s.stop.is_stopped()
    }

    /// The cache.
    pub fn store(&self) -> Arc<Store<K>> {
        self.shared.store.clone()
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.shared.store.clone())
    }

    /// Adds indexers to the cache; they index the objects already cached.
    ///
    /// # Errors
    /// When a name is already taken.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<()> {
        self.shared.store.add_indexers(indexers)
    }

    /// The resource version of the last list or event seen ("" before the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.shared.reflector_stats.last_sync_resource_version()
    }

    /// Counters and gauges.
    pub fn metrics(&self) -> InformerMetrics {
        self.shared.metrics()
    }

    /// The informer's health: `Healthy`; `Degraded` while its list/watch loop retries after failures (with the
    /// last error, which says what to do when there is something to do: a missing RBAC verb, a resource the server
    /// does not serve); `Halted` once stopped or when one of its threads died (a panic in a transform or an index
    /// function). With the time since the last watch event or bookmark and since the last successful list.
    ///
    /// Cheap (a few atomic loads and a short lock): fit for probes. Readiness is [`InformerHealth::is_ready`]:
    /// synced *and* healthy — [`has_synced`](Self::has_synced) alone stays true over a cache that stopped being
    /// updated.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::client::Api;
    /// use kube_informer::informer::{InformerOptions, SharedIndexInformer};
    /// use kube_informer::object::core::ConfigMap;
    /// use kube_informer_apiserver::ApiServer;
    ///
    /// let server = ApiServer::start()?;
    /// let informer = SharedIndexInformer::for_api(&Api::<ConfigMap>::all(server.client()?), InformerOptions::default());
    /// informer.start()?;
    /// assert!(informer.wait_synced(Duration::from_secs(30)));
    /// let health = informer.health();
    /// assert!(health.is_ready() && health.last_list_age.is_some());
    /// informer.stop();
    /// assert!(informer.health().state.is_halted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn health(&self) -> InformerHealth {
        self.shared.health()
    }

    /// The informer held weakly (by a [`Registry`](crate::registry::Registry)).
    pub(crate) fn downgrade(&self) -> WeakInformer<K> {
        WeakInformer(Arc::downgrade(&self.shared))
    }

    /// What the informer reports now (to a [`Registry`](crate::registry::Registry)).
    pub(crate) fn snapshot(&self) -> InformerSnapshot {
        self.shared.snapshot()
    }

    /// Threads of this informer still running (reflector, processing, resync, one per handler): 0 after `stop`.
    pub fn running_threads(&self) -> usize {
        self.shared.live_threads.load(Ordering::SeqCst)
    }

    /// True once stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stop.is_stopped()
    }

    /// Stops every thread and joins them (within about a second; a handler stuck in its own code past that is left
    /// detached, with a warning). Idempotent; the informer cannot be restarted.
    pub fn stop(&self) {
        self.begin_stop().finish(Instant::now() + STOP_BUDGET);
    }

    /// First half of `stop`: tells every thread to stop, without waiting. Lets a factory stop many informers
    /// against one deadline.
    pub(crate) fn begin_stop(&self) -> StopJoin {
        let s = &self.shared;
        let workers = {
            let mut run = s.run.lock();
            match std::mem::replace(&mut *run, RunState::Stopped) {
                RunState::Stopped => return StopJoin(Vec::new()),
                RunState::NotStarted => Vec::new(),
                RunState::Running(w) => w,
            }
        };
        s.reflector_stats.health.halt("stopped");
        s.halt();
        let handlers: Vec<Worker> = s.handler_workers.lock().drain().map(|(_, w)| w).collect();
        log::debug!("{}: informer stopping", s.name);
        StopJoin(workers.into_iter().chain(handlers).collect())
    }

    /// An informer reading `api` (its resource and namespace) through [`ListWatch`](crate::cache::ListWatch).
    pub fn for_api(api: &crate::client::Api<K>, options: InformerOptions<K>) -> Self {
        let name = options.name.clone().unwrap_or_else(|| api.resource().qualified_name());
        SharedIndexInformer::new(crate::cache::ListWatch::new(api), options.name(name))
    }
}

/// The threads of a stopping informer, to be joined.
pub(crate) struct StopJoin(Vec<Worker>);

impl StopJoin {
    /// Joins the threads that exit before `deadline`; the rest are left detached (with a warning each). True when
    /// every thread was joined.
    pub(crate) fn finish(self, deadline: Instant) -> bool {
        let mut joined = true;
        for w in self.0 {
            joined &= w.join_until(deadline);
        }
        joined
    }
}

impl<K: Object> Drop for SharedIndexInformer<K> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<K: Object> Shared<K> {
    /// Tells every thread to stop (without joining them).
    fn halt(&self) {
        self.stop.stop();
        self.stop_tx.lock().take();
        self.lw.interrupt();
        self.fifo.close();
        self.processor.close_all();
        self.sync.notify();
    }

    fn metrics(&self) -> InformerMetrics {
        InformerMetrics {
            reflector: self.reflector_stats.snapshot(),
            fifo_depth: self.fifo.len(),
            store_size: self.store.len(),
            handlers: self.processor.stats().iter().map(|l| l.snapshot()).collect(),
            synced: self.has_synced(),
            last_error: self.reflector_stats.health.last_error(Instant::now()),
        }
    }

    fn health(&self) -> InformerHealth {
        let stats = &self.reflector_stats;
        let now = Instant::now();
        InformerHealth {
            name: self.name.clone(),
            state: stats.health.get(),
            synced: self.has_synced(),
            last_event_age: stats.last_event.age(now),
            last_list_age: stats.last_list.age(now),
            last_error: stats.health.last_error(now),
        }
    }

    fn snapshot(&self) -> InformerSnapshot {
        InformerSnapshot {
            id: std::ptr::from_ref(self).addr(),
            health: self.health(),
            metrics: self.metrics(),
        }
    }

    /// Runs one of the informer's own threads; a panic there is a bug in this crate or in a transform or index
    /// function: it is reported and halts the informer, rather than leaving it silently stalled.
    fn guarded(&self, what: &str, f: impl FnOnce()) {
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            let reason = format!("the {what} thread panicked: {}", crate::worker::panic_message(&*p));
            if self.reflector_stats.health.halt(reason.clone()) {
                log::error!(
                    "{}: {reason}; the informer has halted (its cache is no longer updated)",
                    self.name
                );
            }
            self.halt();
        }
    }

    fn has_synced(&self) -> bool {
        // Order matters: once the FIFO reports synced, every initial pop has a `seq` no larger than the one read
        // next, so `distributed == seq` proves their notifications were queued.
        self.fifo.has_synced() && {
            let seq = self.seq.load(Ordering::SeqCst);
            self.distributed.load(Ordering::SeqCst) == seq
        }
    }

    /// The processing thread: pop (up to `POP_BATCH` objects at a time), apply them to the store (outside the FIFO
    /// lock, while pushes go on; see [`DeltaFifo::pop_batch`]), then notify.
    fn process_loop(&self) {
        // Each event with the sequence number of its pop and whether it is a resync.
        let mut batch: Vec<Sequenced<K>> = Vec::new();
        let mut synced_reported = false;
        loop {
            let popped = self.fifo.pop_batch(POP_BATCH, |key, deltas, is_in_initial_list| {
                let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
                let mut store = self.store.write();
                for delta in deltas {
                    match delta {
                        Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                            match store.put(key.clone(), obj.clone()) {
                                Some(old) => {
                                    // client-go: an update that keeps the resource version is a resync.
                                    let is_sync = old.meta().resource_version() == obj.meta().resource_version();
                                    batch.push(Sequenced {
                                        event: Notification::Update { old, new: obj },
                                        seq,
                                        is_sync,
                                    });
                                }
                                None => batch.push(Sequenced {
                                    event: Notification::Add {
                                        obj,
                                        is_in_initial_list,
                                    },
                                    seq,
                                    is_sync: false,
                                }),
                            }
                        }
                        Delta::Deleted(d) => {
                            store.delete(key);
                            batch.push(Sequenced {
                                event: Notification::Delete(d),
                                seq,
                                is_sync: false,
                            });
                        }
                    }
                }
            });
            if popped.is_err() {
                break;
            }
            // Read after the pops: every pop so far has its notifications in `batch`.
            let seq = self.seq.load(Ordering::SeqCst);
            self.processor.distribute(&batch, &self.sync, &self.stop_rx);
            for n in batch.drain(..) {
                listener::retire(&self.recycler, n.event);
            }
            self.distributed.store(seq, Ordering::SeqCst);
            if !synced_reported && self.has_synced() {
                synced_reported = true;
                self.sync.mark_synced();
                self.sync.notify();
            }
        }
    }

    fn resync_loop(&self, period: Duration) {
        while !self.stop.wait_for(period) {
            if self.processor.should_resync(Instant::now()) {
                self.fifo.resync();
            }
        }
    }

    fn remove_handler(&self, id: u64) {
        if self.processor.remove(id)
            && let Some(w) = self.handler_workers.lock().remove(&id)
        {
            w.join_until(Instant::now() + STOP_BUDGET);
        }
    }
}

/// A handler's registration: its sync state, lag, and removal.
///
/// Dropping a `Registration` does **not** remove its handler, which keeps receiving events until
/// [`remove`](Registration::remove) is called or the informer stops — as in client-go, where the handle that
/// `AddEventHandler` returns is usually ignored, and as a dropped [`JoinHandle`](std::thread::JoinHandle) leaves its
/// thread running. Keep it to remove the handler later (a controller that stops watching something) or to read
/// whether the handler has caught up ([`has_synced`](Registration::has_synced)) and how far behind it is.
///
/// ```
/// # use std::sync::Arc;
/// # use kube_informer::informer::{HandlerFuncs, InformerOptions, SharedIndexInformer};
/// # use kube_informer::object::core::ConfigMap;
/// # fn demo(informer: &SharedIndexInformer<ConfigMap>) -> kube_informer::Result<()> {
/// // Stays registered although the registration is dropped at once:
/// informer.add_event_handler(HandlerFuncs::new().on_add(|cm: &Arc<ConfigMap>, _| println!("{:?}", cm.metadata.name)))?;
/// // Kept, to be removed later:
/// let audit = informer.add_event_handler(|_: &kube_informer::informer::Notification<ConfigMap>| {})?;
/// audit.remove();
/// # Ok(())
/// # }
/// ```
pub struct Registration<K: Object> {
    id: u64,
    stats: Arc<ListenerStats>,
    informer: Weak<Shared<K>>,
}

impl<K: Object> Registration<K> {
    /// True once the informer has synced and this handler has handled every initial add.
    pub fn has_synced(&self) -> bool {
        self.informer.upgrade().is_some_and(|s| s.has_synced())
            && self.stats.pending_initial.load(Ordering::SeqCst) == 0
    }

    /// Events waiting for this handler (its lag).
    pub fn pending(&self) -> usize {
        self.stats.queued.load(Ordering::Relaxed)
    }

    /// This handler's counters.
    pub fn metrics(&self) -> HandlerMetrics {
        self.stats.snapshot()
    }

    /// Removes the handler: no more events; its thread is joined. Idempotent.
    pub fn remove(&self) {
        if let Some(s) = self.informer.upgrade() {
            s.remove_handler(self.id);
        }
    }
}

impl<K: Object> std::fmt::Debug for Registration<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("handler", &self.stats.name)
            .finish()
    }
}

impl<K: Object> std::fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.shared.name)
            .field("handlers", &self.shared.processor.len())
            .finish()
    }
}

/// What an informer reports at one moment; `id` tells informers apart (the address of their shared state).
pub(crate) struct InformerSnapshot {
    pub(crate) id: usize,
    pub(crate) health: InformerHealth,
    pub(crate) metrics: InformerMetrics,
}

/// An informer held weakly (by a [`Registry`](crate::registry::Registry)): its snapshot while it lives.
pub(crate) struct WeakInformer<K: Object>(Weak<Shared<K>>);

impl<K: Object> WeakInformer<K> {
    /// What the informer reports now; `None` once it is dropped.
    pub(crate) fn snapshot(&self) -> Option<InformerSnapshot> {
        Some(self.0.upgrade()?.snapshot())
    }
}

#[cfg(test)]
#[path = "shared_informer_tests.rs"]
mod tests;
