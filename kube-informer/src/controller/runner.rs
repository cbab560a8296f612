//! `Controller`: informers + a rate-limited work queue + worker threads calling a reconcile function.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use log::{debug, info, warn};
use parking_lot::Mutex;

use super::context::{Context, Fenced};
use super::options::{ControllerOptions, QueueKey};
use super::ownership::Ownership;
use super::queue_slot::QueueSlot;
use super::shard_coordinator::{CoordinatorStats, ShardCoordinator};
use super::sharding::{ShardingConfig, ShardingMetrics};
use super::stopping::{StoppingController, join_workers};
use super::{Action, ControllerMetrics};
use crate::cache::{Lister, ShardCell};
use crate::client::{Client, LeaseTerm};
use crate::clock::deadline::deadline_after;
use crate::error::{Error, Result};
use crate::failure_streak::{FailureStreak, human_duration};
use crate::health::{Health, HealthCell, InformerHealth};
use crate::informer::{Registration, SharedIndexInformer};
use crate::leaderelection::LeaderCallbacks;
use crate::object::{MetaAccessor, Object, key_of};
use crate::stop::StopSignal;
use crate::thread_name::ThreadName;
use crate::worker::Worker;
use crate::worker::panic_message;
use crate::workqueue::{QueueConfig, RateLimiter, RateLimitingQueue};

pub(super) type Queue = RateLimitingQueue<QueueKey>;
pub(super) type ReconcileFn<K, D> =
    Box<dyn Fn(&str, &Context<'_, K, D>) -> std::result::Result<Action, Failed> + Send + Sync>;

/// A failed reconcile: its error's text, and what the error policy chose to do about it — `None` when the Lease term
/// it worked under was over (the policy is not asked: the key goes to whoever owns it next).
pub(super) struct Failed {
    pub(super) message: String,
    pub(super) action: Option<Action>,
}

/// How long workers wait for the caches between checks of the stop flag.
const SYNC_POLL: Duration = Duration::from_millis(50);

/// An informer the controller waits for, whatever its object type.
pub(super) trait Source: Send + Sync {
    fn start(&self) -> Result<()>;
    fn wait_synced(&self, timeout: Duration) -> bool;
    fn is_stopped(&self) -> bool;
    fn name(&self) -> &str;
    fn health(&self) -> InformerHealth;
    fn follow_shard(&self, cell: &Arc<ShardCell>) -> Result<()>;
}

impl<S: Object> Source for SharedIndexInformer<S> {
    fn start(&self) -> Result<()> {
        SharedIndexInformer::start(self)
    }
    fn wait_synced(&self, timeout: Duration) -> bool {
        SharedIndexInformer::wait_synced(self, timeout)
    }
    fn is_stopped(&self) -> bool {
        SharedIndexInformer::is_stopped(self)
    }
    fn name(&self) -> &str {
        SharedIndexInformer::name(self)
    }
    fn health(&self) -> InformerHealth {
        SharedIndexInformer::health(self)
    }
    fn follow_shard(&self, cell: &Arc<ShardCell>) -> Result<()> {
        SharedIndexInformer::follow_shard(self, cell)
    }
}

/// A handler registration, whatever its object type.
pub(super) trait Unregister: Send + Sync {
    fn remove(&self);
}

impl<S: Object> Unregister for Registration<S> {
    fn remove(&self) {
        Registration::remove(self)
    }
}

/// Registers the controller's handler on a secondary informer, once the controller's name and queue slot exist.
pub(super) type Connect = Box<dyn FnOnce(&str, &Arc<QueueSlot>) -> Result<Watched> + Send>;

/// A secondary informer as the controller holds it.
pub(super) struct Watched {
    pub(super) source: Arc<dyn Source>,
    pub(super) registration: Box<dyn Unregister>,
    pub(super) lister: Box<dyn Any + Send + Sync>,
}

/// Counters, kept across terms.
#[derive(Default)]
pub(super) struct Stats {
    reconciles: AtomicU64,
    errors: AtomicU64,
    panics: AtomicU64,
    in_flight: AtomicUsize,
    terms: AtomicU64,
    /// Reconciles that failed after the Lease term they worked under was over (counted in `reconciles`, not in
    /// `errors`).
    ownership_lost: AtomicU64,
    /// Writes of the reconciles' fenced clients refused or aborted because their term was over.
    pub(super) fenced_writes: Arc<AtomicU64>,
}

/// What the worker threads share with the controller.
pub(crate) struct Shared<K: Object, D> {
    pub(super) name: String,
    pub(super) primary_lister: Lister<K>,
    /// Listers of the secondary informers (`Lister<S>` behind `Any`), in builder order.
    pub(super) listers: Vec<Box<dyn Any + Send + Sync>>,
    pub(super) data: Arc<D>,
    /// Every informer the controller reads: the primary first.
    pub(super) sources: Vec<Arc<dyn Source>>,
    pub(super) reconcile: ReconcileFn<K, D>,
    pub(super) options: ControllerOptions,
    pub(super) rate_limiter: Arc<dyn RateLimiter<QueueKey>>,
    pub(super) slot: Arc<QueueSlot>,
    pub(super) stats: Stats,
    /// Keys whose last reconcile failed, with their streak (what is logged, how loudly). A key leaves when a
    /// reconcile of it succeeds; a key that fails for good stays, one entry per such key.
    pub(super) failing: Mutex<HashMap<QueueKey, FailureStreak>>,
    /// Worker threads currently running.
    pub(super) live_workers: Arc<AtomicUsize>,
    /// `Halted` once the controller is stopped; its informers' health is added when read ([`Shared::health`]).
    pub(super) health: HealthCell,
    /// A sharded controller's slots (`None`: every key is this replica's).
    pub(super) sharding: Option<Sharding>,
    /// The reconciles' client (see [`Context::client`]), unfenced: fenced copies are made of it for each Lease
    /// term. `None` when neither the primary informer nor the sharding names one.
    pub(super) client: Option<Client>,
    /// Keys whose reconcile a term's end cut short, outside a sharded controller: queued again when the next term
    /// starts here (with every cached key; these may be deleted objects' keys, which the cache no longer lists).
    pub(super) handed_over: Mutex<HashSet<QueueKey>>,
}

/// What a sharded controller keeps ([`ControllerBuilder::sharded`](super::ControllerBuilder::sharded)).
pub(super) struct Sharding {
    pub(super) ownership: Arc<Ownership>,
    pub(super) client: Client,
    pub(super) config: ShardingConfig,
    pub(super) stats: Arc<CoordinatorStats>,
}

/// One run of the workers, from `start` to `pause` or `stop`, with its own queue.
pub(super) struct Term {
    queue: Arc<Queue>,
    workers: Vec<Worker>,
    /// Tells the workers to finish: set before the queue shuts down.
    halt: Arc<StopSignal>,
    /// Under leader election: the leader's term and the client fenced by it, which every reconcile of this run
    /// writes through.
    fence: Option<Fenced>,
}

pub(super) enum State {
    Idle,
    Running(Term),
    Stopped,
}

/// A controller: reconciles the objects of a primary informer — and the primaries that objects of secondary
/// informers map to — on worker threads, retrying failures with back-off.
///
/// * Every add, update and delete of a primary queues its key; a secondary object's change queues the keys its
///   mapper returns (for [`owns`](super::ControllerBuilder::owns): its controlling owner). A key queued many times is
///   reconciled once; a key is never reconciled by two workers at once; a change during a reconcile queues the key
///   again for after it.
/// * Workers start reconciling once every informer's cache **and every handler's initial adds** have synced
///   ([`SharedIndexInformer::wait_for_cache_sync`]), so a reconcile never acts on a half-filled cache.
/// * `Ok(Action::await_change())` forgets the key's failures; `Ok(Action::requeue_after(d))` also queues it again
///   after `d`; `Err` retries it after the rate limiter's delay; a panic is caught and retried like an error. A
///   failing key is logged at `warn!` on its first failure (see [`ControllerOptions::warn_after_failures`]), then
///   once a minute while it keeps failing, with the attempt count and for how long, and once at `info!` when it
///   succeeds again; the failures in between are `debug!`.
/// * A deleted primary still gets a reconcile for its key, with [`Context::object`] returning `None` (a
///   [sharded](super::ControllerBuilder::sharded) controller: on the replica that saw it deleted in its slots).
///
/// The workers run in *terms*: [`start`](Controller::start) begins one (a fresh queue holding every primary key),
/// [`pause`](Controller::pause) ends it — in-flight reconciles get [`ControllerOptions::shutdown_grace`] to finish,
/// then the threads are joined (a reconcile stuck in user code past that is left detached, with a warning) — and
/// [`stop`](Controller::stop) ends it for good and removes the controller's event handlers. A paused controller
/// writes nothing: that is what leader election uses ([`Controller::leader_callbacks`]).
///
/// Threads: one per worker (`w0:<name>`, `w1:<name>`… as the OS shows them,
/// `kube-informer/controller/<name>/worker-<i>` in logs), plus the work queue's delay thread (`delay:<name>`) while
/// running; the informers' threads belong to the informers (the controller starts them if needed, and never stops
/// them: they may be shared).
///
/// ```
/// use kube_informer::client::Api;
/// use kube_informer::client::params::{Patch, PatchParams};
/// use kube_informer::controller::{Action, Context, Controller, ControllerOptions};
/// use kube_informer::informer::{FactoryOptions, SharedInformerFactory};
/// use kube_informer::object::{core::ConfigMap, ObjectMeta};
/// use kube_informer_apiserver::ApiServer;
///
/// let server = ApiServer::start()?;
/// server.create(&ConfigMap::new(ObjectMeta::namespaced("default", "settings")))?;
///
/// // Stamp every ConfigMap with the annotation `example.com/seen: "yes"`.
/// fn reconcile(_key: &str, ctx: &Context<'_, ConfigMap, ()>) -> kube_informer::Result<Action> {
///     let Some(cm) = ctx.object() else { return Ok(Action::await_change()) }; // deleted
///     if cm.metadata.annotations.get("example.com/seen").is_none() {
///         let patch = serde_json::json!({"metadata": {"annotations": {"example.com/seen": "yes"}}});
///         // The informer's client, fenced by the Lease term under leader election or sharding.
///         Api::<ConfigMap>::namespaced(ctx.client()?, ctx.namespace())
///             .patch(ctx.name(), &PatchParams::default(), &Patch::Merge(&patch))?;
///     }
///     Ok(Action::await_change())
/// }
///
/// let client = server.client()?;
/// let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default());
/// let controller = Controller::builder(factory.informer::<ConfigMap>(), ())
///     .options(ControllerOptions::default().workers(2))
///     .build(reconcile)?;
/// controller.start()?;
/// # let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
/// while server.get::<ConfigMap>(Some("default"), "settings")?.metadata.annotations.is_empty() {
///     # assert!(std::time::Instant::now() < deadline);
///     std::thread::sleep(std::time::Duration::from_millis(10));
/// }
/// controller.stop();
/// factory.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Controller<K: Object, D> {
    pub(super) shared: Arc<Shared<K, D>>,
    pub(super) state: Mutex<State>,
    /// The controller's event handlers on its informers; removed by `stop`.
    pub(super) registrations: Mutex<Vec<Box<dyn Unregister>>>,
    /// A sharded controller's coordinator while a term runs; stopped — its slots released — after the workers.
    pub(super) coordinator: Mutex<Option<ShardCoordinator>>,
}

impl<K: Object, D: Send + Sync + 'static> Controller<K, D> {
    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The user data.
    pub fn data(&self) -> &Arc<D> {
        &self.shared.data
    }

    /// Starts the informers (those not yet running), then a term of the workers: a fresh queue holding every
    /// primary key, and the worker threads, which begin reconciling once every cache and handler has synced. Returns
    /// at once; does nothing when already running.
    ///
    /// Started this way, outside leader election, the reconciles own no Lease: their [`Context::client`] is not
    /// fenced (a [sharded](super::ControllerBuilder::sharded) controller's is, by each slot's term). Under leader
    /// election, let [`leader_callbacks`](Controller::leader_callbacks) or a [`Manager`](crate::manager::Manager)
    /// start it: they fence it by the leader's term.
    ///
    /// # Errors
    /// [`Error::Stopped`] after [`stop`](Controller::stop) or when an informer was stopped; an error when a thread
    /// cannot be spawned.
    pub fn start(&self) -> Result<()> {
        self.start_in(None)
    }

    /// [`start`](Controller::start), every reconcile of the run working under the Lease term `term` (a leader's):
    /// their [`Context::client`] is fenced by it.
    pub(crate) fn start_in(&self, term: Option<&LeaseTerm>) -> Result<()> {
        let mut state = self.state.lock();
        match *state {
            State::Running(_) => return Ok(()),
            State::Stopped => return Err(Error::Stopped),
            State::Idle => {}
        }
        self.start_informers()?;
        let s = &self.shared;
        let queue = Arc::new(Queue::with_config(
            QueueConfig::default()
                .name(format!("controller/{}", s.name))
                .rate_limiter(s.rate_limiter.clone()),
        ));
        // Handlers queue keys from now on; then every key the cache holds is queued. An event handled before the
        // slot was set is in the cache already, so nothing is missed.
        *s.slot.current.write() = Some(queue.clone());
        s.slot.add_all(s.primary_lister.keys());
        s.slot.add_all(std::mem::take(&mut *s.handed_over.lock()));
        let halt = Arc::new(StopSignal::new());
        let mut term = Term {
            queue,
            workers: Vec::with_capacity(s.options.workers),
            halt,
            fence: term.map(|t| Fenced::new(t, s.client.as_ref(), &s.stats.fenced_writes)),
        };
        for i in 0..s.options.workers {
            let (shared, queue, halt) = (s.clone(), term.queue.clone(), term.halt.clone());
            let fence = term.fence.clone();
            let spawned = Worker::spawn(
                ThreadName::new(
                    &format!("w{i}"),
                    &s.name,
                    format!("kube-informer/controller/{}/worker-{i}", s.name),
                ),
                &s.live_workers,
                move || shared.run_worker(&queue, &halt, fence.as_ref()),
            );
            match spawned {
                Ok(w) => term.workers.push(w),
                Err(e) => {
                    self.end_term(term);
                    return Err(e);
                }
            }
        }
        if let Some(sh) = &s.sharding {
            // A slot acquired: the keys of its objects already cached are queued (the relist brings the others as
            // adds; these would come as updates a predicate may stop).
            let weak = Arc::downgrade(s);
            let requeue = Arc::new(move |acquired: &[u32]| {
                let Some(s) = weak.upgrade() else { return };
                let Some(sh) = &s.sharding else { return };
                let keys = s
                    .primary_lister
                    .list_all()
                    .iter()
                    .filter(|o| acquired.contains(&sh.ownership.slot_of(o.meta())))
                    .map(|o| QueueKey::from(key_of(&**o)))
                    .collect::<Vec<_>>();
                s.slot.add_all(keys);
            });
            let coordinator = ShardCoordinator::start(
                &s.name,
                &sh.client,
                &sh.config,
                sh.ownership.clone(),
                sh.stats.clone(),
                requeue,
                (s.client.clone(), s.stats.fenced_writes.clone()),
            );
            match coordinator {
                Ok(c) => *self.coordinator.lock() = Some(c),
                Err(e) => {
                    self.end_term(term);
                    return Err(e);
                }
            }
        }
        s.stats.terms.fetch_add(1, Ordering::Relaxed);
        debug!("controller {}: started with {} workers", s.name, s.options.workers);
        *state = State::Running(term);
        Ok(())
    }

    /// Callbacks that run this controller only while leading: `on_started_leading` starts a term,
    /// `on_stopped_leading` pauses it — returning only once the workers have stopped (or the grace period passed),
    /// so the controller stops writing before the lock is released or expires. The reconciles' client
    /// ([`Context::client`]) is fenced by the leader's term: a reconcile still writing when the term ends — a renewal
    /// failing, a stuck reconcile past the grace period — has its requests refused or aborted. The callbacks hold
    /// the controller weakly: once it is dropped they do nothing.
    ///
    /// Start the informers beforehand ([`start_informers`](Controller::start_informers)) for a hot standby: a
    /// replica that takes over then starts from filled caches.
    pub fn leader_callbacks(self: &Arc<Self>) -> LeaderCallbacks {
        let (started, stopped) = (Arc::downgrade(self), Arc::downgrade(self));
        LeaderCallbacks::new()
            .on_started_leading_with_term(move |term| {
                if let Some(c) = started.upgrade()
                    && let Err(e) = c.start_in(Some(term))
                {
                    warn!("controller {}: cannot start after acquiring leadership: {e}", c.name());
                }
            })
            .on_stopped_leading(move || {
                if let Some(c) = stopped.upgrade() {
                    c.pause();
                }
            })
    }

    /// Starts every informer the controller reads that is not running yet (for a hot standby under leader
    /// election: caches filled before leadership comes). [`start`](Controller::start) does it too.
    ///
    /// # Errors
    /// [`Error::Stopped`] when an informer was stopped; an error when a thread cannot be spawned.
    pub fn start_informers(&self) -> Result<()> {
        for source in &self.shared.sources {
            source.start()?;
        }
        Ok(())
    }
}

impl<K: Object, D> Controller<K, D> {
    /// Ends the current term: no new reconcile starts, in-flight reconciles get
    /// [`shutdown_grace`](ControllerOptions::shutdown_grace) to finish, and the worker threads are joined (one stuck
    /// in user code past that is left detached, with a warning). Keys still queued are dropped: the next
    /// [`start`](Controller::start) queues every primary key again. Does nothing when not running.
    pub fn pause(&self) {
        let mut state = self.state.lock();
        if let State::Running(_) = *state {
            let State::Running(term) = std::mem::replace(&mut *state, State::Idle) else {
                unreachable!()
            };
            self.end_term(term);
        }
    }

    /// Ends the current term as [`pause`](Controller::pause) does and removes the controller's event handlers.
    /// Idempotent; the controller cannot be started again. The informers keep running: stop them (or drop them)
    /// when nothing else uses them.
    pub fn stop(&self) {
        self.shared.health.halt("stopped");
        let mut state = self.state.lock();
        if let State::Running(term) = std::mem::replace(&mut *state, State::Stopped) {
            self.end_term(term);
        }
        drop(state);
        let registrations = std::mem::take(&mut *self.registrations.lock());
        for r in registrations {
            r.remove();
        }
    }

    fn end_term(&self, term: Term) {
        let s = &self.shared;
        let deadline = deadline_after(Instant::now(), s.options.shutdown_grace);
        let workers = Self::halt_term(s, term);
        if join_workers(workers, deadline) {
            debug!("controller {}: workers stopped", s.name);
        } else {
            warn!(
                "controller {}: a reconcile did not finish within {:?}; its thread is left detached",
                s.name, s.options.shutdown_grace
            );
        }
        // The slots go once their reconciles are done.
        if let Some(c) = self.coordinator.lock().take() {
            c.stop();
        }
    }

    /// Ends a term without waiting: no key is queued or taken any more; the workers finish their reconcile in
    /// flight, if any, and exit. Returns them, to be joined.
    fn halt_term(s: &Shared<K, D>, term: Term) -> Vec<Worker> {
        *s.slot.current.write() = None;
        term.halt.stop();
        term.queue.shut_down();
        term.workers
    }

    /// True while a term is running (between `start` and `pause` / `stop`).
    pub fn is_running(&self) -> bool {
        matches!(*self.state.lock(), State::Running(_))
    }

    /// Worker threads still running: 0 once paused or stopped (unless one was left detached, stuck in a
    /// reconcile).
    pub fn running_workers(&self) -> usize {
        self.shared.live_workers.load(Ordering::SeqCst)
    }

    /// A snapshot of the controller's counters and of its current work queue.
    pub fn metrics(&self) -> ControllerMetrics {
        self.shared.metrics()
    }

    /// A sharded controller's ownership: the slots it owns, the replicas it sees, hand-overs, objects per slot
    /// (counted from the cache when called). `None` for a controller that is not sharded.
    pub fn sharding_metrics(&self) -> Option<ShardingMetrics> {
        self.shared.sharding_metrics()
    }

    /// True for a [sharded](super::ControllerBuilder::sharded) controller.
    pub fn is_sharded(&self) -> bool {
        self.shared.sharding.is_some()
    }

    /// The controller's health: `Halted` once stopped or when an informer it reads halted (its cache no longer
    /// follows the server: a restart is due); `Degraded` while one of them retries failures (reconciles act on a
    /// cache that may be stale), with that informer's error; `Healthy` otherwise — paused under leader election
    /// included. Failing reconciles do not count: they are the keys' business (see
    /// [`metrics`](Controller::metrics) and the log).
    pub fn health(&self) -> Health {
        self.shared.health()
    }
}

impl<K: Object, D: Send + Sync + 'static> Controller<K, D> {
    /// The controller held weakly (by a [`Registry`](crate::registry::Registry)).
    pub(crate) fn downgrade(&self) -> WeakController<K, D> {
        WeakController(Arc::downgrade(&self.shared))
    }

    /// The first half of a stop for good, for a caller stopping several controllers against one grace period:
    /// from now on no reconcile starts and none will (the controller is stopped, as [`stop`](Controller::stop)
    /// leaves it); the reconciles in flight go on. [`StoppingController::finish`] waits for them.
    pub(crate) fn begin_stop(&self) -> StoppingController {
        let s = &self.shared;
        s.health.halt("stopped");
        let workers = match std::mem::replace(&mut *self.state.lock(), State::Stopped) {
            State::Running(term) => Self::halt_term(s, term),
            State::Idle | State::Stopped => Vec::new(),
        };
        let shared = self.shared.clone();
        StoppingController {
            name: s.name.clone(),
            coordinator: self.coordinator.lock().take(),
            workers,
            in_flight: Box::new(move || shared.stats.in_flight.load(Ordering::Relaxed)),
            registrations: std::mem::take(&mut *self.registrations.lock()),
        }
    }
}

/// A controller held weakly (by a [`Registry`](crate::registry::Registry)).
pub(crate) struct WeakController<K: Object, D>(Weak<Shared<K, D>>);

impl<K: Object, D: Send + Sync + 'static> WeakController<K, D> {
    /// An id telling controllers apart, the controller's health and metrics; `None` once it is dropped.
    pub(crate) fn snapshot(&self) -> Option<(usize, Health, ControllerMetrics, Option<ShardingMetrics>)> {
        let shared = self.0.upgrade()?;
        let id = Arc::as_ptr(&shared).addr();
        Some((id, shared.health(), shared.metrics(), shared.sharding_metrics()))
    }
}

impl<K: Object, D> Drop for Controller<K, D> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<K: Object, D> Shared<K, D> {
    fn sharding_metrics(&self) -> Option<ShardingMetrics> {
        let s = self.sharding.as_ref()?;
        let objects = self.primary_lister.list_all();
        let owned = s.ownership.owned();
        let handovers = s.stats.handovers.lock().clone();
        Some(ShardingMetrics {
            identity: s.config.identity.clone(),
            slots: s.config.slots,
            handovers: owned
                .iter()
                .filter_map(|slot| Some((*slot, *handovers.get(slot)?)))
                .collect(),
            owned,
            members: s.stats.members.load(Ordering::Relaxed),
            acquired: s.stats.acquired.load(Ordering::Relaxed),
            rebalanced: s.stats.rebalanced.load(Ordering::Relaxed),
            lost: s.stats.lost.load(Ordering::Relaxed),
            unreleased: s.stats.unreleased.load(Ordering::Relaxed),
            last_handover: *s.stats.last_handover.lock(),
            skipped: s.ownership.skipped(),
            objects_per_slot: s.ownership.objects_per_slot(objects.iter().map(|o| o.meta())),
            cached_objects: objects.len(),
        })
    }

    fn metrics(&self) -> ControllerMetrics {
        let queue = self.slot.current.read().as_ref().map(|q| q.metrics());
        ControllerMetrics {
            name: self.name.clone(),
            running: queue.is_some(),
            queue,
            reconciles: self.stats.reconciles.load(Ordering::Relaxed),
            errors: self.stats.errors.load(Ordering::Relaxed),
            panics: self.stats.panics.load(Ordering::Relaxed),
            in_flight: self.stats.in_flight.load(Ordering::Relaxed),
            terms: self.stats.terms.load(Ordering::Relaxed),
            workers: self.live_workers.load(Ordering::SeqCst),
            filtered: self.slot.filtered.load(Ordering::Relaxed),
            ownership_lost: self.stats.ownership_lost.load(Ordering::Relaxed),
            fenced_writes: self.stats.fenced_writes.load(Ordering::Relaxed),
        }
    }

    /// Its own state (halted once stopped), else the worst of its informers', named.
    fn health(&self) -> Health {
        let own = self.health.get();
        if own.is_halted() {
            return own;
        }
        let informers = self.sources.iter().map(|source| match source.health().state {
            Health::Halted { reason } => Health::Halted {
                reason: format!("informer {} halted: {reason}", source.name()),
            },
            other => attributed(other, &format!("informer {}", source.name())),
        });
        let sharding = self.sharding.iter().map(|s| match s.stats.health.get() {
            // Halted between terms (the coordinator stopped): the controller's own state says more.
            Health::Halted { .. } => Health::Healthy,
            other => attributed(other, "sharding"),
        });
        Health::worst(informers.chain(sharding))
    }

    /// A worker: waits for the caches, then reconciles keys until its term ends. `fence`: the leader's term and
    /// client, under leader election.
    fn run_worker(&self, queue: &Queue, halt: &StopSignal, fence: Option<&Fenced>) {
        if !self.wait_for_caches(halt) {
            return;
        }
        while let Some(key) = queue.get() {
            if halt.is_stopped() {
                break; // the guard marks the key done; the next term queues every key again
            }
            self.reconcile_key(queue, &key, halt, fence);
        }
    }

    /// Waits until every informer's cache and handlers synced; false when the term ends first (or an informer
    /// was stopped, which ends this controller's usefulness: reported once per worker).
    fn wait_for_caches(&self, halt: &StopSignal) -> bool {
        for source in &self.sources {
            while !source.wait_synced(SYNC_POLL) {
                if halt.is_stopped() {
                    return false;
                }
                if source.is_stopped() {
                    warn!(
                        "controller {}: informer {} was stopped before it synced; no reconcile will run",
                        self.name,
                        source.name()
                    );
                    return false;
                }
            }
        }
        !halt.is_stopped()
    }

    fn reconcile_key(&self, queue: &Queue, key: &QueueKey, halt: &StopSignal, leader: Option<&Fenced>) {
        // A sharded controller's key is reconciled here only while its slot is owned here (its term not over),
        // counted in the slot.
        let slot = match &self.sharding {
            Some(s) => {
                let object = self.primary_lister.get(key);
                match s
                    .ownership
                    .admit(key, object.as_deref().map(|o| o.meta() as &dyn MetaAccessor))
                {
                    Some(guard) => Some(guard),
                    None => {
                        queue.forget(key);
                        return;
                    }
                }
            }
            None => None,
        };
        // The Lease term this reconcile works under: its slot's, or the leader's.
        let fence = match &slot {
            Some(guard) => guard.fenced(),
            None => leader,
        };
        if let Some(f) = fence {
            if f.term.is_over() {
                // Ended before the reconcile could begin: the next owner's.
                self.hand_over(queue, key, None);
                return;
            }
            if let Some(outage) = f.term.begin_work()
                && let (Some(s), Some(guard)) = (&self.sharding, &slot)
            {
                s.stats.handed_over(guard.slot(), outage);
            }
        }
        let retries = queue.num_requeues(key);
        // What this reconcile is refused, it watches again (Context::create_or_update).
        self.slot.refused.forget_primary(key);
        let ctx = Context {
            key,
            shared: self,
            retries,
            halt,
            // Under a term, only its fenced client: never the unfenced one.
            client: match fence {
                Some(f) => f.client.as_ref(),
                None => self.client.as_ref(),
            },
            term: fence.map(|f| &f.term),
        };
        self.stats.in_flight.fetch_add(1, Ordering::Relaxed);
        let outcome = catch_unwind(AssertUnwindSafe(|| (self.reconcile)(key, &ctx)));
        self.stats.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.stats.reconciles.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(Ok(action)) => {
                self.key_recovered(key);
                if let Some(s) = &self.sharding {
                    s.ownership.reconciled(key);
                }
                if action.is_rate_limited() {
                    queue.add_rate_limited(key.clone());
                } else {
                    queue.forget(key);
                    if let Some(delay) = action.requeue_after_duration() {
                        queue.add_after(key.clone(), delay);
                    }
                }
            }
            Ok(Err(Failed { message, action: None })) => self.hand_over(queue, key, Some(&message)),
            Ok(Err(Failed {
                message,
                action: Some(action),
            })) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                let next = if action.is_rate_limited() {
                    "retrying with back-off"
                } else if action.requeue_after_duration().is_some() {
                    "retrying after the error policy's delay"
                } else {
                    "dropped by the error policy until the object changes"
                };
                self.key_failed(key, &format!("failed: {message}"), next, false);
                if action.is_rate_limited() {
                    queue.add_rate_limited(key.clone());
                } else if let Some(delay) = action.requeue_after_duration() {
                    // The failure counts (Context::retries grows) though the policy chose the delay.
                    let _ = self.rate_limiter.when(key);
                    queue.add_after(key.clone(), delay);
                } else {
                    queue.forget(key);
                }
            }
            Err(panic) => {
                self.stats.panics.fetch_add(1, Ordering::Relaxed);
                let what = format!("panicked ({})", panic_message(&*panic));
                self.key_failed(key, &what, "retrying with back-off", true);
                queue.add_rate_limited(key.clone());
            }
        }
    }

    /// The Lease term a reconcile of `key` works under is over (`failure`: the reconcile's error, when it ran): the
    /// key is left to whoever owns it next — not retried here, not counted as a failure. A sharded controller's
    /// next owner of the slot queues its keys when it acquires it (this replica too); under leader election, the
    /// next term here queues it again (every cached key is queued then; this one may be a deleted object's).
    fn hand_over(&self, queue: &Queue, key: &QueueKey, failure: Option<&str>) {
        queue.forget(key);
        if failure.is_some() {
            self.stats.ownership_lost.fetch_add(1, Ordering::Relaxed);
        }
        if self.sharding.is_none() {
            self.handed_over.lock().insert(key.clone());
        }
        match failure {
            Some(e) => debug!(
                "controller {}: reconcile of {key} ended with its Lease term over ({e}); left to the next owner",
                self.name
            ),
            None => debug!(
                "controller {}: {key} not reconciled: its Lease term is over; left to the next owner",
                self.name
            ),
        }
    }

    /// Logs a failed reconcile of `key`: at `warn!` from the `warn_after_failures`-th failure in a row, then once a
    /// minute while the key keeps failing (every panic: it is a bug), at `debug!` otherwise; `next` says what becomes of
    /// the key (the error policy's choice).
    fn key_failed(&self, key: &QueueKey, what: &str, next: &str, panicked: bool) {
        let now = Instant::now();
        let (level, attempts, lasted) = {
            let mut failing = self.failing.lock();
            let streak = failing.entry(key.clone()).or_default();
            let warn_from = if panicked {
                1
            } else {
                u64::from(self.options.warn_after_failures)
            };
            let level = streak.failed(now, &what, warn_from);
            let (attempts, lasted) = streak
                .current()
                .map_or((1, Duration::ZERO), |s| (s.attempts, s.lasted(now)));
            (if panicked { log::Level::Warn } else { level }, attempts, lasted)
        };
        if attempts == 1 {
            log::log!(level, "controller {}: reconcile of {key} {what}; {next}", self.name);
        } else {
            log::log!(
                level,
                "controller {}: reconcile of {key} still failing after {attempts} attempts over {}: {what}",
                self.name,
                human_duration(lasted)
            );
        }
    }

    /// A reconcile of `key` succeeded: ends its streak of failures, telling it once when it was told at all.
    fn key_recovered(&self, key: &QueueKey) {
        let streak = {
            let mut failing = self.failing.lock();
            if failing.is_empty() {
                return;
            }
            failing.remove(key)
        };
        if let Some(ended) = streak.and_then(|mut s| s.recovered()) {
            info!(
                "controller {}: reconcile of {key} succeeded after {} failed attempts over {}",
                self.name,
                ended.attempts,
                human_duration(ended.lasted(Instant::now()))
            );
        }
    }
}

/// `health` with its error said to come from `what`.
fn attributed(health: Health, what: &str) -> Health {
    match health {
        Health::Degraded {
            since,
            attempts,
            last_error,
        } => Health::Degraded {
            since,
            attempts,
            last_error: format!("{what}: {last_error}"),
        },
        other => other,
    }
}

impl<K: Object, D> fmt::Debug for Controller<K, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.shared.name)
            .field("workers", &self.shared.options.workers)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
