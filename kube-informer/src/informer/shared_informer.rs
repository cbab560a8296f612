//! `SharedIndexInformer`: one reflector, one indexed cache, many handlers (client-go's `sharedIndexInformer`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::handler::ResourceEventHandler;
use super::listener::{self, HandlerMetrics, HandlerOptions, ListenerStats};
use super::process_deltas::process_deltas;
use super::processor::{Entry, Processor, Sequenced};
use super::registration::{RegisteredPart, Registration};
use super::synced::SyncNotify;
use crate::cache::reflector::{Reflector, ReflectorStats};
use crate::cache::{
    Fifo, Indexers, KnownObjects, Lister, ListerWatcher, NAMESPACE_INDEX, Queue, Recycler, ReflectorConfig,
    ReflectorMetrics, Store, Transform, WatchErrorHandler,
};
use crate::cache::{ShardCell, ShardScope};
use crate::clock::deadline::deadline_after;
use crate::error::{Error, Result};
use crate::health::{InformerHealth, LastError};
use crate::object::{MetaAccessor, Object};
use crate::selector::ShardSelector;
use crate::stop::StopSignal;
use crate::thread_name::ThreadName;
use crate::worker::Worker;

/// client-go's `minimumResyncPeriod`: shorter handler resync periods are raised to this.
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// Most items (changes of a RealFIFO, objects of a DeltaFIFO) the processing thread pops under one hold of the
/// queue's lock, applies to the store under one hold of its lock, and then notifies at once.
const POP_BATCH: usize = 64;

pub(crate) use crate::worker::STOP_BUDGET;

/// Informer settings.
///
/// Setters of things that combine add to what earlier calls set: transforms run one after the other in the order
/// given, every watch error handler is called, indexers accumulate (two functions under one name feed one index).
/// Setters of one value (name, resync period, reflector settings, queue) replace it.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::informer::{InformerOptions, strip_managed_fields};
/// use kube_informer::object::{core::ConfigMap, MetaAccessor};
///
/// let opts = InformerOptions::<ConfigMap>::default()
///     .name("configmaps")
///     .resync(Duration::from_secs(600))
///     .transform(strip_managed_fields)
///     .transform(|cm: &mut ConfigMap| {
///         cm.data.remove("password");
///     }); // runs after the first
/// ```
pub struct InformerOptions<K> {
    /// Name used in logs (`kube-informer/<name>/…`) and, shortened, in thread names (`refl:<name>`, …; see
    /// [`SharedIndexInformer`]).
    pub name: Option<String>,
    /// Resync period of handlers added with [`SharedIndexInformer::add_event_handler`] (client-go's
    /// `defaultEventHandlerResyncPeriod`); `None` disables resync.
    pub resync: Option<Duration>,
    /// Applied to every object before it is cached (once per object, before any handler sees it): the
    /// transforms given to [`transform`](InformerOptions::transform), in call order.
    pub transform: Option<Transform<K>>,
    /// Extra indexers (the namespace index is always present).
    pub indexers: Indexers<K>,
    /// Reflector settings (page size, streaming list, watch timeout, back-off). `None`: the defaults, or for an
    /// informer of a [factory](super::SharedInformerFactory) the factory's.
    pub reflector: Option<ReflectorConfig>,
    /// Called with each list/watch error: the handlers given to
    /// [`watch_error_handler`](InformerOptions::watch_error_handler), in call order.
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// Only the objects of this shard (KEP-5866): asked of the server as `shardSelector` and enforced by the
    /// reflector before the cache, so the cache holds the shard alone on any server — one without the
    /// `ShardedListAndWatch` gate still sends everything (see [`ReflectorMetrics::shard_server_side`]). `None`:
    /// every object, or for an informer of a [factory](super::SharedInformerFactory) the factory's shard.
    pub shard: Option<ShardSelector>,
    /// The queue between the reflector and the cache (see [`Fifo`]). `None`: [`Fifo::Real`] (handlers see changes
    /// in the server's order, as client-go's informers since 1.33), or for an informer of a
    /// [factory](super::SharedInformerFactory) the factory's.
    pub fifo: Option<Fifo>,
}

impl<K> Default for InformerOptions<K> {
    fn default() -> Self {
        InformerOptions {
            name: None,
            resync: None,
            transform: None,
            indexers: Indexers::new(),
            reflector: None,
            watch_error_handler: None,
            shard: None,
            fifo: None,
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

    /// Adds a transform applied to every object before it is cached, after the transforms added before it.
    #[must_use]
    pub fn transform(mut self, f: impl Fn(&mut K) + Send + Sync + 'static) -> Self
    where
        K: 'static,
    {
        self.transform = Some(match self.transform.take() {
            None => Arc::new(f),
            Some(before) => Arc::new(move |obj: &mut K| {
                before(obj);
                f(obj);
            }),
        });
        self
    }

    /// Adds an indexer (a second one under the same name adds its values to that index:
    /// [`Indexers::with`]).
    #[must_use]
    pub fn indexer(mut self, name: impl Into<String>, f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) -> Self
    where
        K: 'static,
    {
        self.indexers = self.indexers.with(name, f);
        self
    }

    /// Sets the reflector settings.
    #[must_use]
    pub fn reflector(mut self, config: ReflectorConfig) -> Self {
        self.reflector = Some(config);
        self
    }

    /// Sets the queue between the reflector and the cache (see [`fifo`](InformerOptions::fifo)).
    #[must_use]
    pub fn fifo(mut self, fifo: Fifo) -> Self {
        self.fifo = Some(fifo);
        self
    }

    /// Holds only the objects of `shard` (see [`shard`](InformerOptions::shard)).
    #[must_use]
    pub fn shard(mut self, shard: ShardSelector) -> Self {
        self.shard = Some(shard);
        self
    }

    /// Adds a handler called with each list/watch error, after the handlers added before it.
    #[must_use]
    pub fn watch_error_handler(mut self, f: impl Fn(&Error) + Send + Sync + 'static) -> Self {
        self.watch_error_handler = Some(match self.watch_error_handler.take() {
            None => Arc::new(f),
            Some(before) => Arc::new(move |e: &Error| {
                before(e);
                f(e);
            }),
        });
        self
    }
}

impl<K> Clone for InformerOptions<K> {
    fn clone(&self) -> Self {
        InformerOptions {
            name: self.name.clone(),
            resync: self.resync,
            transform: self.transform.clone(),
            indexers: self.indexers.clone(),
            reflector: self.reflector.clone(),
            watch_error_handler: self.watch_error_handler.clone(),
            shard: self.shard.clone(),
            fifo: self.fifo,
        }
    }
}

impl<K> std::fmt::Debug for InformerOptions<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InformerOptions")
            .field("name", &self.name)
            .field("resync", &self.resync)
            .field("transform", &self.transform.is_some())
            .field("indexers", &self.indexers)
            .field("reflector", &self.reflector)
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .field("shard", &self.shard)
            .field("fifo", &self.fifo)
            .finish()
    }
}

/// Drops `metadata.managedFields` — use as an informer transform: `InformerOptions::default().transform
/// (strip_managed_fields)`. Server-side-apply bookkeeping is about 40% of a typical object's JSON and rarely read from
/// a cache (this crate's types share its entries between the objects of a cache: stripping saves them less).
pub fn strip_managed_fields<K: Object>(obj: &mut K) {
    obj.meta_mut().clear_managed_fields();
}

/// A snapshot of an informer's state and counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InformerMetrics {
    /// List/watch counters (relists by cause, watch restarts, last resource version).
    pub reflector: ReflectorMetrics,
    /// Items waiting in the informer's queue: changes in a RealFIFO, objects (each with its changes) in a DeltaFIFO.
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
    fifo: Queue<K>,
    processor: Processor<K>,
    /// Number of pops applied to the store. Written only by the processing thread while it applies a popped batch,
    /// so it is stable under [`Queue::exclusive`], which excludes batches.
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
    /// The shard the reflector holds: fixed by the options, or set by a sharded controller before the start
    /// ([`SharedIndexInformer::follow_shard`]). `None`: every object.
    shard: Mutex<Option<Arc<ShardCell>>>,
    reflector_stats: Arc<ReflectorStats>,
    /// Old versions and deleted objects that handlers let go of, freed on the reflector thread.
    recycler: Arc<Recycler<K>>,
    /// Threads of this informer currently running.
    live_threads: Arc<AtomicUsize>,
}

/// An informer: a cache of one resource kept in step with the server, and the handlers told about its changes.
///
/// Build informers with a [`SharedInformerFactory`](super::SharedInformerFactory) (`factory.informer::<K>()`):
/// it shares one informer per resource across a program, applies its options to all of them and gives them one
/// relist budget. The constructors here ([`for_api`](Self::for_api), [`new`](Self::new) over any
/// [`ListerWatcher`], [`for_namespaces`](Self::for_namespaces)) are for what a factory does not cover: an informer
/// fed by your own `ListerWatcher`, or options no other informer of the resource shares.
///
/// An informer watches one namespace, all of them, or a **set of namespaces**
/// ([`for_namespaces`](Self::for_namespaces), or a factory given several with
/// [`FactoryOptions::namespace`](super::FactoryOptions::namespace)): then it runs one informer per namespace
/// (controller-runtime's multi-namespace cache) behind this one handle — one [`lister`](Self::lister) over them all,
/// one handler registration feeding the same handler from each, health and metrics per namespace in a
/// [`Registry`](crate::registry::Registry) — and asking its lister for a namespace outside the set is an error,
/// not an empty answer.
///
/// Threads (joined by [`stop`](SharedIndexInformer::stop), which dropping the informer also calls): one reflector
/// (list and watch), one processing thread (pops the queue — a RealFIFO or a DeltaFIFO, see [`Fifo`] —, updates the store), one per handler, and one for
/// resync when a resync period is set — each of them once per namespace of a set. The operating system shows 15
/// bytes of a thread's name, so each is named `<role>:<informer name>` within 15 bytes — `refl:configmaps`,
/// `proc:configmaps`, `sync:configmaps`, and `h1:configmaps`, `h2:configmaps`… for the handlers in the order they
/// were added (the informer's name loses its API group, then its end, when it does not fit) — so that `ps -L`,
/// `top -H` and debuggers tell them apart; logs use the full names (`kube-informer/configmaps/reflector`,
/// `kube-informer/configmaps/<handler name>`), and a `debug!` line says which thread runs which handler.
pub struct SharedIndexInformer<K: Object> {
    name: String,
    /// The namespaces of a set, in the order of `parts` (sorted, distinct); `None`: one informer, whatever it
    /// watches.
    scope: Option<Arc<[String]>>,
    /// One informer, or one per namespace of `scope`. Never empty.
    parts: Vec<Arc<Shared<K>>>,
}

impl<K: Object> SharedIndexInformer<K> {
    /// An informer over `lw`. Nothing runs until [`start`](SharedIndexInformer::start).
    pub fn new(lw: impl ListerWatcher<K>, options: InformerOptions<K>) -> Self {
        SharedIndexInformer::from_arc(Arc::new(lw), options)
    }

    /// An informer over a shared `ListerWatcher`.
    pub fn from_arc(lw: Arc<dyn ListerWatcher<K>>, options: InformerOptions<K>) -> Self {
        let shared = Shared::new(lw, options);
        SharedIndexInformer {
            name: shared.name.clone(),
            scope: None,
            parts: vec![shared],
        }
    }

    /// An informer over a set of namespaces: one informer per namespace, each listing and watching through the
    /// `ListerWatcher` that `lw` makes for it, all with `options`, named `<name>/<namespace>`, behind this one
    /// handle (see [`SharedIndexInformer`]). Duplicates are dropped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::cache::ListWatch;
    /// use kube_informer::client::Api;
    /// use kube_informer::informer::{InformerOptions, SharedIndexInformer};
    /// use kube_informer::object::{core::ConfigMap, ObjectMeta};
    /// use kube_informer_apiserver::ApiServer;
    ///
    /// let server = ApiServer::builder().namespaces(["a", "b", "c"]).start()?;
    /// for ns in ["a", "b", "c"] {
    ///     server.create(&ConfigMap::new(ObjectMeta::namespaced(ns, "settings")))?;
    /// }
    /// let client = server.client()?;
    /// let informer = SharedIndexInformer::for_namespaces(
    ///     ["a", "b"],
    ///     |ns| ListWatch::new(&Api::<ConfigMap>::namespaced(client.clone(), ns)),
    ///     InformerOptions::default().name("configmaps"),
    /// )?;
    /// informer.start()?;
    /// informer.wait_for_cache_sync(Duration::from_secs(30))?;
    /// let lister = informer.lister();
    /// assert_eq!(lister.len(), 2);
    /// assert!(lister.namespace("b").get("settings").is_some());
    /// assert!(lister.try_namespace("c").is_err()); // not watched: an error, not an empty namespace
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `namespaces` is empty or holds an empty name.
    pub fn for_namespaces<L: ListerWatcher<K>>(
        namespaces: impl IntoIterator<Item = impl Into<String>>,
        lw: impl FnMut(&str) -> L,
        options: InformerOptions<K>,
    ) -> Result<Self> {
        let mut namespaces: Vec<String> = namespaces.into_iter().map(Into::into).collect();
        namespaces.sort();
        namespaces.dedup();
        if namespaces.is_empty() || namespaces.iter().any(String::is_empty) {
            return Err(Error::InvalidInput(format!(
                "an informer over a set of namespaces needs at least one namespace, none empty (got {namespaces:?})"
            )));
        }
        Ok(SharedIndexInformer::over_namespaces(namespaces, lw, options))
    }

    /// [`for_namespaces`](Self::for_namespaces) of `namespaces` already sorted, distinct, not empty, none empty.
    pub(crate) fn over_namespaces<L: ListerWatcher<K>>(
        namespaces: Vec<String>,
        mut lw: impl FnMut(&str) -> L,
        options: InformerOptions<K>,
    ) -> Self {
        debug_assert!(!namespaces.is_empty() && namespaces.is_sorted());
        let name = options.name.clone().unwrap_or_else(default_name::<K>);
        let parts = namespaces
            .iter()
            .map(|ns| {
                let part = options.clone().name(format!("{name}/{ns}"));
                Shared::new(Arc::new(lw(ns)), part)
            })
            .collect();
        SharedIndexInformer {
            name: super::multi_namespace::set_name(&name, &namespaces),
            scope: Some(namespaces.into()),
            parts,
        }
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The client its (first) lister-watcher reads through, if it has one ([`ListerWatcher::client`]).
    pub(crate) fn client(&self) -> Option<crate::client::Client> {
        self.parts.first().and_then(|p| p.lw.client().cloned())
    }

    /// The namespaces of an informer over a set of them (sorted); `None` for an informer over one namespace or
    /// all.
    pub fn namespaces(&self) -> Option<&[String]> {
        self.scope.as_deref()
    }

    /// Makes every part of the informer hold the shard in `cell`, following its changes: what a sharded
    /// controller does to its informers before starting them.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the informer has started (its reflector reads the shard when it starts) or
    /// has a shard of its own ([`InformerOptions::shard`]: two owners of one informer's shard would fight).
    pub(crate) fn follow_shard(&self, cell: &Arc<ShardCell>) -> Result<()> {
        for part in &self.parts {
            let run = part.run.lock();
            if !matches!(*run, RunState::NotStarted) {
                return Err(Error::InvalidInput(format!(
                    "informer {}: a sharded controller's informer must not be started before the controller \
                     (its shard is set at the start)",
                    self.name
                )));
            }
            let mut shard = part.shard.lock();
            if shard.as_ref().is_some_and(|current| !Arc::ptr_eq(current, cell)) {
                return Err(Error::InvalidInput(format!(
                    "informer {}: it has a shard already (InformerOptions::shard or FactoryOptions::shard); a \
                     sharded controller sets its informers' shards itself",
                    self.name
                )));
            }
            *shard = Some(cell.clone());
        }
        Ok(())
    }

    /// Starts the reflector, processing and resync threads. Calling it again does nothing.
    ///
    /// # Errors
    /// When the informer was stopped, or a thread cannot be spawned (then every thread started is stopped).
    pub fn start(&self) -> Result<()> {
        for part in &self.parts {
            if let Err(e) = part.start() {
                self.stop();
                return Err(e);
            }
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
            resync: self.parts[0].default_resync,
            ..Default::default()
        };
        self.add_event_handler_with(handler, opts)
    }

    /// Adds a handler with explicit options (name, resync period, queue policy).
    ///
    /// A handler added after the informer started first receives an add (`is_in_initial_list = true`) for every
    /// object already cached, then every later change — none lost, none doubled.
    ///
    /// Over a set of namespaces, the handler is registered with the informer of each namespace (each feeding it
    /// from its own thread and queue) and called by one thread at a time; the [`Registration`] covers them all.
    ///
    /// # Errors
    /// When the informer was stopped, or the handler's thread cannot be spawned.
    pub fn add_event_handler_with(
        &self,
        handler: impl ResourceEventHandler<K>,
        options: HandlerOptions,
    ) -> Result<Registration<K>> {
        if let [only] = &self.parts[..] {
            return Ok(Registration {
                parts: vec![only.register(handler, options)?],
            });
        }
        let shared = super::multi_namespace::SharedHandler::new(handler);
        let mut parts = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            match part.register(shared.clone(), options.clone()) {
                Ok(p) => parts.push(p),
                Err(e) => {
                    Registration { parts }.remove();
                    return Err(e);
                }
            }
        }
        Ok(Registration { parts })
    }

    /// True once the cache holds the server's state (initial list popped and applied) and its notifications are
    /// queued to every handler — in every namespace of a set.
    pub fn has_synced(&self) -> bool {
        self.parts.iter().all(|p| p.has_synced())
    }

    /// Waits until the cache has synced **and every handler has handled its initial adds** (client-go's
    /// `WaitForCacheSync` only waits for the cache — a known trap for controllers), as
    /// [`SharedInformerFactory::wait_for_cache_sync`](super::SharedInformerFactory::wait_for_cache_sync) does for
    /// every informer of a factory.
    ///
    /// # Errors
    /// [`NotSynced`](super::NotSynced) on timeout or stop, with this informer's health (of each namespace's part not
    /// synced, over a set of namespaces): its last error, the attempt count and how long ago it failed last.
    pub fn wait_for_cache_sync(&self, timeout: Duration) -> std::result::Result<(), super::NotSynced> {
        if self.wait_synced(timeout) {
            return Ok(());
        }
        Err(super::NotSynced::of(self.part_healths()))
    }

    /// True once the cache has synced and every handler has handled its initial adds; false on timeout or stop.
    pub(crate) fn wait_synced(&self, timeout: Duration) -> bool {
        let deadline = deadline_after(Instant::now(), timeout);
        self.parts.iter().all(|p| p.wait_synced(deadline))
    }

    /// A lister over the cache: every read of it (objects by key, by namespace, by label selector, by index).
    pub fn lister(&self) -> Lister<K> {
        let stores = self.parts.iter().map(|p| p.store.clone());
        match &self.scope {
            None => Lister::new(self.parts[0].store.clone()),
            Some(namespaces) => Lister::per_namespace(namespaces.iter().cloned().zip(stores).collect()),
        }
    }

    /// The cache has the index `name` (in every namespace's cache, over a set of namespaces).
    pub(crate) fn has_index(&self, name: &str) -> bool {
        self.parts
            .iter()
            .all(|p| p.store.index_names().iter().any(|n| n == name))
    }

    /// Adds indexers to the cache; they index the objects already cached.
    ///
    /// # Errors
    /// When a name is already taken.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<()> {
        self.parts
            .iter()
            .try_for_each(|p| p.store.add_indexers(indexers.clone()))
    }

    /// The resource version of the last list or event seen ("" before the first list). Over a set of several
    /// namespaces, each namespace's as `namespace=version`, joined by `,` (resource versions are opaque: they are not
    /// compared).
    pub fn last_sync_resource_version(&self) -> String {
        match &self.parts[..] {
            [only] => only.reflector_stats.last_sync_resource_version(),
            parts => super::multi_namespace::per_namespace_versions(
                parts
                    .iter()
                    .zip(self.scope.iter().flat_map(|s| s.iter()))
                    .map(|(p, ns)| (ns.as_str(), p.reflector_stats.last_sync_resource_version())),
            ),
        }
    }

    /// Counters and gauges. Over a set of namespaces, the sums over its namespaces (the
    /// [`Registry`](crate::registry::Registry) reports each namespace's own).
    pub fn metrics(&self) -> InformerMetrics {
        match &self.parts[..] {
            [only] => only.metrics(),
            parts => super::multi_namespace::sum_metrics(parts.iter().map(|p| p.metrics()).collect()),
        }
    }

    /// The informer's health: `Healthy`; `Degraded` while its list/watch loop retries after failures (with the
    /// last error, which says what to do when there is something to do: a missing RBAC verb, a resource the server
    /// does not serve); `Halted` once stopped or when one of its threads died (a panic in a transform or an index
    /// function). With the time since the last watch event or bookmark and since the last successful list. Over a
    /// set of namespaces, the worst of them (the [`Registry`](crate::registry::Registry) reports each).
    ///
    /// Cheap (a few atomic loads and a short lock): fit for probes. Readiness is [`InformerHealth::is_ready`]:
    /// synced *and* healthy — [`has_synced`](Self::has_synced) alone stays true over a cache that stopped being
    /// updated.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::informer::{FactoryOptions, SharedInformerFactory};
    /// use kube_informer::object::core::ConfigMap;
    /// use kube_informer_apiserver::ApiServer;
    ///
    /// let server = ApiServer::start()?;
    /// let factory = SharedInformerFactory::new(server.client()?, FactoryOptions::default());
    /// let informer = factory.informer::<ConfigMap>();
    /// factory.start()?;
    /// informer.wait_for_cache_sync(Duration::from_secs(30))?;
    /// let health = informer.health();
    /// assert!(health.is_ready() && health.last_list_age.is_some());
    /// informer.stop();
    /// assert!(informer.health().state.is_halted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn health(&self) -> InformerHealth {
        match &self.parts[..] {
            [only] if self.scope.is_none() => only.health(),
            parts => super::multi_namespace::worst_health(&self.name, parts.iter().map(|p| p.health()).collect()),
        }
    }

    /// The health of each informer behind this one (one, or one per namespace of a set).
    pub(crate) fn part_healths(&self) -> Vec<InformerHealth> {
        self.parts.iter().map(|p| p.health()).collect()
    }

    /// The informer held weakly (by a [`Registry`](crate::registry::Registry)).
    pub(crate) fn downgrade(&self) -> WeakInformer<K> {
        WeakInformer(self.parts.iter().map(Arc::downgrade).collect())
    }

    /// What each informer behind this one reports now (to a [`Registry`](crate::registry::Registry)).
    pub(crate) fn snapshots(&self) -> Vec<InformerSnapshot> {
        self.parts.iter().map(|p| p.snapshot()).collect()
    }

    /// Threads of this informer still running (reflector, processing, resync, one per handler): 0 after `stop`.
    pub fn running_threads(&self) -> usize {
        self.parts.iter().map(|p| p.live_threads.load(Ordering::SeqCst)).sum()
    }

    /// True once stopped (over a set of namespaces: once any of its informers stopped, which it cannot sync
    /// without).
    pub fn is_stopped(&self) -> bool {
        self.parts.iter().any(|p| p.stop.is_stopped())
    }

    /// Stops every thread and joins them (within about a second; a handler stuck in its own code past that is left
    /// detached, with a warning). Idempotent; the informer cannot be restarted.
    pub fn stop(&self) {
        self.begin_stop().finish(Instant::now() + STOP_BUDGET);
    }

    /// First half of `stop`: tells every thread to stop, without waiting. Lets a factory stop many informers
    /// against one deadline.
    pub(crate) fn begin_stop(&self) -> StopJoin {
        StopJoin(self.parts.iter().flat_map(|p| p.begin_stop().0).collect())
    }

    /// An informer reading `api` (its resource and namespace) through [`ListWatch`](crate::cache::ListWatch), named
    /// after its resource.
    pub fn for_api(api: &crate::client::Api<K>, options: InformerOptions<K>) -> Self {
        let name = options.name.clone().unwrap_or_else(|| api.resource().qualified_name());
        SharedIndexInformer::new(crate::cache::ListWatch::new(api), options.name(name))
    }
}

/// The name of an informer given none: its object type's, without the module path.
fn default_name<K>() -> String {
    let full = std::any::type_name::<K>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or("informer").to_owned()
}

impl<K: Object> Shared<K> {
    fn new(lw: Arc<dyn ListerWatcher<K>>, options: InformerOptions<K>) -> Arc<Self> {
        let mut indexers = options.indexers;
        if !indexers.names().any(|n| n == NAMESPACE_INDEX) {
            indexers = indexers.with_namespace();
        }
        let store = Arc::new(Store::new(indexers));
        let sync = Arc::new(SyncNotify::default());
        let known: Arc<dyn KnownObjects<K>> = store.clone();
        let hook_sync = sync.clone();
        let on_synced = Arc::new(move || {
            hook_sync.mark_synced();
            hook_sync.notify();
        });
        let fifo = Queue::new(options.fifo.unwrap_or_default(), known, on_synced);
        let (stop_tx, stop_rx) = crossbeam_channel::bounded(0);
        let resync = options.resync.map(|r| r.max(MINIMUM_RESYNC_PERIOD));
        Arc::new(Shared {
            name: options.name.unwrap_or_else(default_name::<K>),
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
            reflector_config: options.reflector.unwrap_or_default(),
            transform: options.transform,
            watch_error_handler: options.watch_error_handler,
            shard: Mutex::new(
                options
                    .shard
                    .map(|selector| ShardCell::new(ShardScope::Shard(selector))),
            ),
            reflector_stats: Arc::new(ReflectorStats::default()),
            recycler: Arc::new(Recycler::new()),
            live_threads: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Starts the reflector, processing and resync threads (nothing when running).
    fn start(self: &Arc<Self>) -> Result<()> {
        let s = self;
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
        .with_shard(s.shard.lock().clone())
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
            self.begin_stop().finish(Instant::now() + STOP_BUDGET);
            return Err(e);
        }
        Ok(())
    }

    /// Registers a handler (see [`SharedIndexInformer::add_event_handler_with`]).
    fn register(
        self: &Arc<Self>,
        handler: impl ResourceEventHandler<K>,
        options: HandlerOptions,
    ) -> Result<RegisteredPart<K>> {
        let s = self;
        if s.stop.is_stopped() {
            return Err(Error::Stopped);
        }
        let id = s.next_handler.fetch_add(1, Ordering::Relaxed);
        let name = options.name.unwrap_or_else(|| format!("handler-{id}"));
        let stats = Arc::new(ListenerStats::new(name));
        let (outbox, inbox) = listener::queue(options.queue, &stats);
        let resync = s.handler_resync(options.resync);
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
        Ok(RegisteredPart {
            id,
            stats,
            informer: Arc::downgrade(self),
        })
    }

    /// client-go's `AddEventHandlerWithResyncPeriod` rules: at least one second; before start a shorter period
    /// lowers the check period; after start it is raised to the check period.
    fn handler_resync(&self, requested: Option<Duration>) -> Option<Duration> {
        let requested = requested.filter(|d| !d.is_zero())?.max(MINIMUM_RESYNC_PERIOD);
        let started = !matches!(*self.run.lock(), RunState::NotStarted);
        let mut check = self.resync_check.lock();
        match *check {
            Some(c) if requested < c && started => {
                log::warn!(
                    "{}: resync period {requested:?} is shorter than the informer's check period {c:?}; using {c:?}",
                    self.name
                );
                Some(c)
            }
            Some(c) if requested >= c => Some(requested),
            _ if started => {
                log::warn!(
                    "{}: the informer started without resync; handler resync ignored",
                    self.name
                );
                None
            }
            _ => {
                *check = Some(requested);
                Some(requested)
            }
        }
    }

    /// Waits until synced and every handler has handled its initial adds; false at `deadline` or on stop.
    fn wait_synced(&self, deadline: Instant) -> bool {
        self.sync.wait_until(deadline, || {
            self.stop.is_stopped()
                || (self.has_synced()
                    && self
                        .processor
                        .stats()
                        .iter()
                        .all(|l| l.pending_initial.load(Ordering::SeqCst) == 0))
        }) && !self.stop.is_stopped()
    }

    /// Tells every thread to stop and hands them over to be joined.
    fn begin_stop(&self) -> StopJoin {
        let workers = {
            let mut run = self.run.lock();
            match std::mem::replace(&mut *run, RunState::Stopped) {
                RunState::Stopped => return StopJoin(Vec::new()),
                RunState::NotStarted => Vec::new(),
                RunState::Running(w) => w,
            }
        };
        self.reflector_stats.health.halt("stopped");
        self.halt();
        let handlers: Vec<Worker> = self.handler_workers.lock().drain().map(|(_, w)| w).collect();
        log::debug!("{}: informer stopping", self.name);
        StopJoin(workers.into_iter().chain(handlers).collect())
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

    pub(super) fn has_synced(&self) -> bool {
        // Order matters: once the FIFO reports synced, every initial pop has a `seq` no larger than the one read
        // next, so `distributed == seq` proves their notifications were queued.
        self.fifo.has_synced() && {
            let seq = self.seq.load(Ordering::SeqCst);
            self.distributed.load(Ordering::SeqCst) == seq
        }
    }

    /// The processing thread: pop up to `POP_BATCH` items at a time, apply them to the store under one hold of its
    /// lock (outside the queue's lock, while pushes go on; see [`Queue::pop_batch`]), then notify.
    fn process_loop(&self) {
        // Each event with the sequence number of its pop and whether it is a resync.
        let mut batch: Vec<Sequenced<K>> = Vec::new();
        let mut synced_reported = false;
        loop {
            let popped = self.fifo.pop_batch(POP_BATCH, |items| {
                let mut store = self.store.write();
                for (key, deltas, is_in_initial_list) in items {
                    let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
                    process_deltas(&mut store, &key, deltas, is_in_initial_list, seq, &mut batch);
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

    pub(super) fn remove_handler(&self, id: u64) {
        if self.processor.remove(id)
            && let Some(w) = self.handler_workers.lock().remove(&id)
        {
            w.join_until(Instant::now() + STOP_BUDGET);
        }
    }
}

impl<K: Object> std::fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.name)
            .field("namespaces", &self.scope)
            .field("handlers", &self.parts[0].processor.len())
            .field("fifo", &self.parts[0].fifo.kind())
            .finish()
    }
}

/// What an informer reports at one moment; `id` tells informers apart (the address of their shared state).
pub(crate) struct InformerSnapshot {
    pub(crate) id: usize,
    pub(crate) health: InformerHealth,
    pub(crate) metrics: InformerMetrics,
}

/// An informer held weakly (by a [`Registry`](crate::registry::Registry)): its snapshots while it lives.
pub(crate) struct WeakInformer<K: Object>(Vec<Weak<Shared<K>>>);

impl<K: Object> WeakInformer<K> {
    /// What each informer behind it (one, or one per namespace of a set) reports now; `None` once it is dropped.
    pub(crate) fn snapshots(&self) -> Option<Vec<InformerSnapshot>> {
        self.0.iter().map(|w| Some(w.upgrade()?.snapshot())).collect()
    }
}

#[cfg(test)]
#[path = "shared_informer_tests.rs"]
mod tests;
