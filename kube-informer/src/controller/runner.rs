//! `Controller`: informers + a rate-limited work queue + worker threads calling a reconcile function.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use log::{debug, info, warn};
use parking_lot::{Mutex, RwLock};

use super::context::Context;
use super::options::{ControllerOptions, QueueKey};
use super::predicate::{Predicate, admits};
use super::{Action, ControllerMetrics};
use crate::cache::{CONTROLLER_INDEX, Indexers, Lister};
use crate::clock::deadline::deadline_after;
use crate::error::{Error, Result};
use crate::failure_streak::{FailureStreak, human_duration};
use crate::health::{Health, HealthCell, InformerHealth};
use crate::informer::{HandlerOptions, Notification, Registration, SharedIndexInformer};
use crate::leaderelection::LeaderCallbacks;
use crate::object::owner::controller_ref_of;
use crate::object::{ApiResource, Object, ObjectRef, Resource, key_of};
use crate::stop::StopSignal;
use crate::thread_name::ThreadName;
use crate::worker::Worker;
use crate::worker::panic_message;
use crate::workqueue::{QueueConfig, RateLimiter, RateLimitingQueue, default_controller_rate_limiter};

type Queue = RateLimitingQueue<QueueKey>;
type ReconcileFn<K, D> = Box<dyn Fn(&str, &Context<'_, K, D>) -> std::result::Result<Action, Failed> + Send + Sync>;

/// A failed reconcile: its error's text, and what the error policy chose to do about it.
struct Failed {
    message: String,
    action: Action,
}

/// How long workers wait for the caches between checks of the stop flag.
const SYNC_POLL: Duration = Duration::from_millis(50);

/// The queue of the current term, where event handlers put keys. Empty between terms: events then are dropped,
/// and the next term starts by queueing every primary key, which covers them.
#[derive(Default)]
struct QueueSlot {
    current: RwLock<Option<Arc<Queue>>>,
    /// Events the predicates stopped, over every term.
    filtered: AtomicU64,
    /// The controller's name, for messages.
    controller: String,
    /// The namespaces of a primary informer over a set of them (sorted); `None`: any key.
    scope: Option<Vec<String>>,
    /// Namespaces outside `scope` that mappers returned keys in, each warned about once.
    warned: Mutex<std::collections::HashSet<String>>,
}

impl QueueSlot {
    /// Queues a key a secondary object was mapped to, unless its namespace is outside the primary's set: that
    /// primary is not cached, and a reconcile would take it for deleted.
    fn add_mapped(&self, key: QueueKey) {
        if let Some(scope) = &self.scope {
            let ns = crate::object::split_key(&key).0.unwrap_or("");
            if scope.binary_search_by(|s| s.as_str().cmp(ns)).is_err() {
                if self.warned.lock().insert(ns.to_owned()) {
                    warn!(
                        "controller {}: an object was mapped to {key:?}, outside the namespaces of the primary \
                         informer [{}]: not reconciled (its primary is not cached; watch that namespace too)",
                        self.controller,
                        scope.join(", ")
                    );
                }
                self.filtered();
                return;
            }
        }
        self.add(key);
    }

    fn filtered(&self) {
        self.filtered.fetch_add(1, Ordering::Relaxed);
    }

    fn add(&self, key: QueueKey) {
        if let Some(q) = &*self.current.read() {
            q.add(key);
        }
    }

    fn add_all(&self, keys: impl IntoIterator<Item = QueueKey>) {
        if let Some(q) = &*self.current.read() {
            for key in keys {
                q.add(key);
            }
        }
    }
}

/// An informer the controller waits for, whatever its object type.
trait Source: Send + Sync {
    fn start(&self) -> Result<()>;
    fn wait_synced(&self, timeout: Duration) -> bool;
    fn is_stopped(&self) -> bool;
    fn name(&self) -> &str;
    fn health(&self) -> InformerHealth;
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
}

/// A handler registration, whatever its object type.
trait Unregister: Send + Sync {
    fn remove(&self);
}

impl<S: Object> Unregister for Registration<S> {
    fn remove(&self) {
        Registration::remove(self)
    }
}

/// Registers the controller's handler on a secondary informer, once the controller's name and queue slot exist.
type Connect = Box<dyn FnOnce(&str, &Arc<QueueSlot>) -> Result<Watched> + Send>;

/// A secondary informer as the controller holds it.
struct Watched {
    source: Arc<dyn Source>,
    registration: Box<dyn Unregister>,
    lister: Box<dyn Any + Send + Sync>,
}

/// Counters, kept across terms.
#[derive(Default)]
struct Stats {
    reconciles: AtomicU64,
    errors: AtomicU64,
    panics: AtomicU64,
    in_flight: AtomicUsize,
    terms: AtomicU64,
}

/// What the worker threads share with the controller.
pub(crate) struct Shared<K: Object, D> {
    pub(super) name: String,
    pub(super) primary_lister: Lister<K>,
    /// Listers of the secondary informers (`Lister<S>` behind `Any`), in builder order.
    pub(super) listers: Vec<Box<dyn Any + Send + Sync>>,
    pub(super) data: Arc<D>,
    /// Every informer the controller reads: the primary first.
    sources: Vec<Arc<dyn Source>>,
    reconcile: ReconcileFn<K, D>,
    options: ControllerOptions,
    rate_limiter: Arc<dyn RateLimiter<QueueKey>>,
    slot: Arc<QueueSlot>,
    stats: Stats,
    /// Keys whose last reconcile failed, with their streak (what is logged, how loudly). A key leaves when a
    /// reconcile of it succeeds; a key that fails for good stays, one entry per such key.
    failing: Mutex<HashMap<QueueKey, FailureStreak>>,
    /// Worker threads currently running.
    live_workers: Arc<AtomicUsize>,
    /// `Halted` once the controller is stopped; its informers' health is added when read ([`Shared::health`]).
    health: HealthCell,
}

/// One run of the workers, from `start` to `pause` or `stop`, with its own queue.
struct Term {
    queue: Arc<Queue>,
    workers: Vec<Worker>,
    /// Tells the workers to finish: set before the queue shuts down.
    halt: Arc<StopSignal>,
}

enum State {
    Idle,
    Running(Term),
    Stopped,
}

/// A controller: reconciles the objects of a primary informer — and the primaries that objects of secondary
/// informers map to — on worker threads, retrying failures with back-off.
///
/// * Every add, update and delete of a primary queues its key; a secondary object's change queues the keys its
///   mapper returns (for [`owns`](ControllerBuilder::owns): its controlling owner). A key queued many times is
///   reconciled once; a key is never reconciled by two workers at once; a change during a reconcile queues the key
///   again for after it.
/// * Workers start reconciling once every informer's cache **and every handler's initial adds** have synced
///   ([`SharedIndexInformer::wait_synced`]), so a reconcile never acts on a half-filled cache.
/// * `Ok(Action::await_change())` forgets the key's failures; `Ok(Action::requeue_after(d))` also queues it again
///   after `d`; `Err` retries it after the rate limiter's delay; a panic is caught and retried like an error. A
///   failing key is logged at `warn!` on its first failure (see [`ControllerOptions::warn_after_failures`]), then
///   once a minute while it keeps failing, with the attempt count and for how long, and once at `info!` when it
///   succeeds again; the failures in between are `debug!`.
/// * A deleted primary still gets a reconcile for its key, with [`Context::object`] returning `None`.
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
/// use kube_informer::client::{Api, Client};
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
/// fn reconcile(_key: &str, ctx: &Context<'_, ConfigMap, Client>) -> kube_informer::Result<Action> {
///     let Some(cm) = ctx.object() else { return Ok(Action::await_change()) }; // deleted
///     if cm.metadata.annotations.get("example.com/seen").is_none() {
///         let patch = serde_json::json!({"metadata": {"annotations": {"example.com/seen": "yes"}}});
///         Api::<ConfigMap>::namespaced(ctx.data().clone(), ctx.namespace())
///             .patch(ctx.name(), &PatchParams::default(), &Patch::Merge(&patch))?;
///     }
///     Ok(Action::await_change())
/// }
///
/// let client = server.client()?;
/// let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default());
/// let controller = Controller::builder(factory.informer::<ConfigMap>(), client)
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
    shared: Arc<Shared<K, D>>,
    state: Mutex<State>,
    /// The controller's event handlers on its informers; removed by `stop`.
    registrations: Mutex<Vec<Box<dyn Unregister>>>,
}

/// Builds a [`Controller`]: the primary informer, secondary informers and how their objects map to primary keys,
/// options, and finally the reconcile function.
pub struct ControllerBuilder<K: Object, D> {
    primary: Arc<SharedIndexInformer<K>>,
    /// What primary events must pass to queue their key (`None`: every event).
    predicate: Option<Box<dyn Predicate<K>>>,
    data: Arc<D>,
    secondaries: Vec<Connect>,
    options: ControllerOptions,
}

impl<K: Object, D: Send + Sync + 'static> Controller<K, D> {
    /// Starts building a controller of the objects of `primary`, with `data` handed to every reconcile
    /// ([`Context::data`]).
    pub fn builder(primary: Arc<SharedIndexInformer<K>>, data: D) -> ControllerBuilder<K, D> {
        ControllerBuilder {
            primary,
            predicate: None,
            data: Arc::new(data),
            secondaries: Vec::new(),
            options: ControllerOptions::default(),
        }
    }
}

impl<K: Object, D: Send + Sync + 'static> ControllerBuilder<K, D> {
    /// Reconciles the controlling owner of each object of `informer`: the owner reference with `controller: true`
    /// whose kind and group are the primary's ([`ObjectRef::controller_of`]) — what client-go controllers do for the
    /// objects they create (ReplicaSets for a Deployment). The informer's cache gets the index by controller
    /// ([`CONTROLLER_INDEX`]), so that a reconcile finds what its primary owns by index, not by a scan
    /// ([`Context::owned`]).
    ///
    /// [`CONTROLLER_INDEX`]: crate::cache::CONTROLLER_INDEX
    #[must_use]
    pub fn owns<S: Object>(self, informer: Arc<SharedIndexInformer<S>>) -> Self
    where
        K: Resource,
    {
        self.owns_with(informer, K::api_resource())
    }

    /// [`owns`](Self::owns) for a primary whose resource is known only at run time ([`DynamicObject`]).
    ///
    /// [`DynamicObject`]: crate::object::DynamicObject
    #[must_use]
    pub fn owns_with<S: Object>(self, informer: Arc<SharedIndexInformer<S>>, primary: ApiResource) -> Self {
        index_by_controller(&informer);
        self.watch(informer, None, move |obj: &S| {
            controller_ref_of(obj, &primary).map(ObjectRef::cast)
        })
    }

    /// [`owns`](Self::owns), queueing only for the events `predicate` lets through.
    #[must_use]
    pub fn owns_filtered<S: Object>(self, informer: Arc<SharedIndexInformer<S>>, predicate: impl Predicate<S>) -> Self
    where
        K: Resource,
    {
        index_by_controller(&informer);
        self.watches_filtered(informer, predicate, ObjectRef::<K>::controller_of)
    }

    /// Reconciles the primaries `mapper` names for each changed object of `informer` (for an update, those of the
    /// old and the new state; for a delete, of the last state known). The mapper returns any iterable of
    /// [`ObjectRef<K>`]: an `Option` for one, a `Vec` for several.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kube_informer::controller::{Action, Context, Controller};
    /// use kube_informer::informer::SharedInformerFactory;
    /// use kube_informer::object::core::{ConfigMap, Namespace};
    /// use kube_informer::object::{MetaAccessor, Object, ObjectRef};
    /// # let server = kube_informer_apiserver::ApiServer::start()?;
    /// # let factory = SharedInformerFactory::new(server.client()?, Default::default());
    ///
    /// // A Namespace's controller, woken by every ConfigMap labelled with the namespace it concerns.
    /// let controller = Controller::builder(factory.informer::<Namespace>(), ())
    ///     .watches(factory.informer::<ConfigMap>(), |cm: &ConfigMap| {
    ///         cm.meta().labels().get("example.com/namespace").map(ObjectRef::<Namespace>::new)
    ///     })
    ///     .build(|_key, _ctx: &Context<'_, Namespace, ()>| Ok::<_, kube_informer::Error>(Action::await_change()))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn watches<S, I>(
        self,
        informer: Arc<SharedIndexInformer<S>>,
        mapper: impl Fn(&S) -> I + Send + Sync + 'static,
    ) -> Self
    where
        S: Object,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        self.watch(informer, None, mapper)
    }

    /// [`watches`](Self::watches), mapping only the events `predicate` lets through.
    #[must_use]
    pub fn watches_filtered<S, I>(
        self,
        informer: Arc<SharedIndexInformer<S>>,
        predicate: impl Predicate<S>,
        mapper: impl Fn(&S) -> I + Send + Sync + 'static,
    ) -> Self
    where
        S: Object,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        self.watch(informer, Some(Box::new(predicate)), mapper)
    }

    /// Queues only the primary events `predicate` lets through ([`GenerationChanged`] keeps the controller's own
    /// status writes from queueing its key again). Called again, both predicates must let an event through.
    /// The first term of a controller (and every term after a pause) still reconciles every key once.
    ///
    /// [`GenerationChanged`]: super::predicate::GenerationChanged
    #[must_use]
    pub fn predicate(mut self, predicate: impl Predicate<K>) -> Self {
        self.predicate = Some(match self.predicate.take() {
            None => Box::new(predicate),
            Some(before) => Box::new(before.and(predicate)),
        });
        self
    }

    fn watch<S: Object, I: IntoIterator<Item = ObjectRef<K>>>(
        mut self,
        informer: Arc<SharedIndexInformer<S>>,
        predicate: Option<Box<dyn Predicate<S>>>,
        mapper: impl Fn(&S) -> I + Send + Sync + 'static,
    ) -> Self {
        self.secondaries
            .push(Box::new(move |name: &str, slot: &Arc<QueueSlot>| {
                let slot = slot.clone();
                let handler = move |ev: &Notification<S>| {
                    if let Some(p) = &predicate
                        && !admits(&**p, ev)
                    {
                        slot.filtered();
                        return;
                    }
                    if let Notification::Update { old, .. } = ev {
                        for r in mapper(old) {
                            slot.add_mapped(r.key().into());
                        }
                    }
                    for r in mapper(ev.object()) {
                        slot.add_mapped(r.key().into());
                    }
                };
                let registration = informer.add_event_handler_with(handler, handler_options(name))?;
                let lister = informer.lister();
                Ok(Watched {
                    source: informer,
                    registration: Box::new(registration),
                    lister: Box::new(lister),
                })
            }));
        self
    }

    /// Sets the controller's options: name, workers, retry rate limiter, shutdown grace, failure logging
    /// ([`ControllerOptions`]). They are set here only, all at once, so that no other call of the builder can undo
    /// one of them:
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use kube_informer::controller::{Controller, ControllerOptions};
    /// # fn demo(informer: Arc<kube_informer::informer::SharedIndexInformer<kube_informer::object::core::ConfigMap>>) {
    /// let builder = Controller::builder(informer, ()).options(ControllerOptions::default().name("sync").workers(4));
    /// # let _ = builder;
    /// # }
    /// ```
    ///
    /// ```compile_fail
    /// # use std::sync::Arc;
    /// # use kube_informer::controller::{Controller, ControllerOptions};
    /// # fn demo(informer: Arc<kube_informer::informer::SharedIndexInformer<kube_informer::object::core::ConfigMap>>) {
    /// // No builder setter of one option, to be undone by a later `options(..)`:
    /// let builder = Controller::builder(informer, ()).name("sync").options(ControllerOptions::default().workers(4));
    /// # let _ = builder;
    /// # }
    /// ```
    #[must_use]
    pub fn options(mut self, options: ControllerOptions) -> Self {
        self.options = options;
        self
    }

    /// Builds the controller around `reconcile`, registering its event handlers on the informers. Nothing is
    /// reconciled until [`Controller::start`].
    ///
    /// `reconcile(key, ctx)` is called on a worker thread; the error type only needs `Display` (it is logged). A
    /// failed key is retried after the rate limiter's delay: use
    /// [`build_with_error_policy`](Self::build_with_error_policy) to decide per error.
    ///
    /// # Errors
    /// When an informer was stopped, or a handler thread cannot be spawned.
    pub fn build<E, F>(self, reconcile: F) -> Result<Controller<K, D>>
    where
        E: fmt::Display,
        F: Fn(&str, &Context<'_, K, D>) -> std::result::Result<Action, E> + Send + Sync + 'static,
    {
        self.build_with_error_policy(reconcile, |_: Option<&K>, _: &E, _: &Context<'_, K, D>| {
            Action::requeue_rate_limited()
        })
    }

    /// [`build`](Self::build) with an error policy (kube-rs's `error_policy`): after a failed reconcile,
    /// `error_policy(obj, err, ctx)` decides what happens to the key — retry after the rate limiter's delay
    /// ([`Action::requeue_rate_limited`], what `build` does), after a delay of its choosing
    /// ([`Action::requeue_after`], the failure count still grows: [`Context::retries`]), or not until the object
    /// changes ([`Action::await_change`]: an error retrying cannot fix, such as an invalid spec). `obj` is the
    /// primary as the cache holds it when the reconcile failed (`None` once deleted).
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::controller::{Action, Context};
    /// use kube_informer::object::core::ConfigMap;
    ///
    /// enum Error {
    ///     InvalidSpec(String),
    ///     Api(kube_informer::Error),
    /// }
    /// # impl std::fmt::Display for Error {
    /// #     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str("error") }
    /// # }
    ///
    /// fn error_policy(_obj: Option<&ConfigMap>, err: &Error, ctx: &Context<'_, ConfigMap, ()>) -> Action {
    ///     match err {
    ///         // Retrying will not help: wait for someone to fix the object.
    ///         Error::InvalidSpec(_) => Action::await_change(),
    ///         // The server asked us to slow down.
    ///         Error::Api(e) if e.retry_after().is_some() => Action::requeue_after(e.retry_after().unwrap()),
    ///         Error::Api(_) if ctx.retries() > 10 => Action::requeue_after(Duration::from_secs(300)),
    ///         Error::Api(_) => Action::requeue_rate_limited(),
    ///     }
    /// }
    /// # let _ = error_policy;
    /// ```
    ///
    /// # Errors
    /// When an informer was stopped, or a handler thread cannot be spawned.
    pub fn build_with_error_policy<E, F, P>(self, reconcile: F, error_policy: P) -> Result<Controller<K, D>>
    where
        E: fmt::Display,
        F: Fn(&str, &Context<'_, K, D>) -> std::result::Result<Action, E> + Send + Sync + 'static,
        P: Fn(Option<&K>, &E, &Context<'_, K, D>) -> Action + Send + Sync + 'static,
    {
        let ControllerBuilder {
            primary,
            predicate,
            data,
            secondaries,
            options,
        } = self;
        let name = options.name.clone().unwrap_or_else(|| primary.name().to_owned());
        let slot = Arc::new(QueueSlot {
            controller: name.clone(),
            scope: primary.namespaces().map(<[String]>::to_vec),
            ..QueueSlot::default()
        });
        let mut registrations: Vec<Box<dyn Unregister>> = Vec::new();
        let mut sources: Vec<Arc<dyn Source>> = vec![primary.clone()];
        let mut listers = Vec::new();

        let registered = (|| -> Result<()> {
            let primary_slot = slot.clone();
            let handler = move |ev: &Notification<K>| {
                if let Some(p) = &predicate
                    && !admits(&**p, ev)
                {
                    primary_slot.filtered();
                    return;
                }
                primary_slot.add(key_of(&**ev.object()).into());
            };
            registrations.push(Box::new(
                primary.add_event_handler_with(handler, handler_options(&name))?,
            ));
            for connect in secondaries {
                let watched = connect(&name, &slot)?;
                registrations.push(watched.registration);
                sources.push(watched.source);
                listers.push(watched.lister);
            }
            Ok(())
        })();
        if let Err(e) = registered {
            for r in &registrations {
                r.remove();
            }
            return Err(e);
        }

        let rate_limiter = options
            .rate_limiter
            .clone()
            .unwrap_or_else(|| Arc::new(default_controller_rate_limiter::<QueueKey>()));
        Ok(Controller {
            shared: Arc::new(Shared {
                name,
                primary_lister: primary.lister(),
                listers,
                data,
                sources,
                reconcile: Box::new(move |key, ctx| {
                    reconcile(key, ctx).map_err(|e| {
                        let obj = ctx.object();
                        Failed {
                            action: error_policy(obj.as_deref(), &e, ctx),
                            message: e.to_string(),
                        }
                    })
                }),
                options,
                rate_limiter,
                slot,
                stats: Stats::default(),
                failing: Mutex::new(HashMap::new()),
                live_workers: Arc::new(AtomicUsize::new(0)),
                health: HealthCell::default(),
            }),
            state: Mutex::new(State::Idle),
            registrations: Mutex::new(registrations),
        })
    }
}

/// Adds the index by controller to `informer`'s cache unless it has it (another controller owning the same objects
/// added it already).
fn index_by_controller<S: Object>(informer: &SharedIndexInformer<S>) {
    if informer.has_index(CONTROLLER_INDEX) {
        return;
    }
    // Two builders at once: the loser's conflict means the index is there.
    let _ = informer.add_indexers(Indexers::new().with_controller());
}

fn handler_options(controller: &str) -> HandlerOptions {
    HandlerOptions::default().name(format!("controller-{controller}"))
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
    /// # Errors
    /// [`Error::Stopped`] after [`stop`](Controller::stop) or when an informer was stopped; an error when a thread
    /// cannot be spawned.
    pub fn start(&self) -> Result<()> {
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
        let halt = Arc::new(StopSignal::new());
        let mut term = Term {
            queue,
            workers: Vec::with_capacity(s.options.workers),
            halt,
        };
        for i in 0..s.options.workers {
            let (shared, queue, halt) = (s.clone(), term.queue.clone(), term.halt.clone());
            let spawned = Worker::spawn(
                ThreadName::new(
                    &format!("w{i}"),
                    &s.name,
                    format!("kube-informer/controller/{}/worker-{i}", s.name),
                ),
                &s.live_workers,
                move || shared.run_worker(&queue, &halt),
            );
            match spawned {
                Ok(w) => term.workers.push(w),
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
    /// so the controller stops writing before the lock is released or expires. The callbacks hold the controller
    /// weakly: once it is dropped they do nothing.
    ///
    /// Start the informers beforehand ([`start_informers`](Controller::start_informers)) for a hot standby: a
    /// replica that takes over then starts from filled caches.
    pub fn leader_callbacks(self: &Arc<Self>) -> LeaderCallbacks {
        let (started, stopped) = (Arc::downgrade(self), Arc::downgrade(self));
        LeaderCallbacks::new()
            .on_started_leading(move || {
                if let Some(c) = started.upgrade()
                    && let Err(e) = c.start()
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
            workers,
            in_flight: Box::new(move || shared.stats.in_flight.load(Ordering::Relaxed)),
            registrations: std::mem::take(&mut *self.registrations.lock()),
        }
    }
}

/// A controller that takes no more work, its reconciles in flight still running ([`Controller::begin_stop`]).
pub(crate) struct StoppingController {
    name: String,
    workers: Vec<Worker>,
    /// Reads the controller's count of reconciles running.
    in_flight: Box<dyn Fn() -> usize + Send + Sync>,
    /// The controller's event handlers, removed once its workers are done.
    registrations: Vec<Box<dyn Unregister>>,
}

impl StoppingController {
    /// The controller's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Waits until `deadline` for the reconciles in flight, then removes the controller's event handlers. Returns
    /// how many reconciles were still running at the deadline (their threads are left detached, with a warning): 0
    /// when every worker was joined.
    pub(crate) fn finish(self, deadline: Instant) -> usize {
        let joined = join_workers(self.workers, deadline);
        let running = if joined { 0 } else { (self.in_flight)().max(1) };
        if running > 0 {
            warn!(
                "controller {}: {running} reconcile(s) did not finish within the grace period; left detached",
                self.name
            );
        }
        for r in self.registrations {
            r.remove();
        }
        running
    }
}

/// Joins `workers` until `deadline`; true when every one was joined.
fn join_workers(workers: Vec<Worker>, deadline: Instant) -> bool {
    let mut joined = true;
    for w in workers {
        joined &= w.join_until(deadline);
    }
    joined
}

/// A controller held weakly (by a [`Registry`](crate::registry::Registry)).
pub(crate) struct WeakController<K: Object, D>(Weak<Shared<K, D>>);

impl<K: Object, D: Send + Sync + 'static> WeakController<K, D> {
    /// An id telling controllers apart, the controller's health and metrics; `None` once it is dropped.
    pub(crate) fn snapshot(&self) -> Option<(usize, Health, ControllerMetrics)> {
        let shared = self.0.upgrade()?;
        Some((Arc::as_ptr(&shared).addr(), shared.health(), shared.metrics()))
    }
}

impl<K: Object, D> Drop for Controller<K, D> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<K: Object, D> Shared<K, D> {
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
            Health::Degraded {
                since,
                attempts,
                last_error,
            } => Health::Degraded {
                since,
                attempts,
                last_error: format!("informer {}: {last_error}", source.name()),
            },
            Health::Healthy => Health::Healthy,
        });
        Health::worst(informers)
    }

    /// A worker: waits for the caches, then reconciles keys until its term ends.
    fn run_worker(&self, queue: &Queue, halt: &StopSignal) {
        if !self.wait_for_caches(halt) {
            return;
        }
        while let Some(key) = queue.get() {
            if halt.is_stopped() {
                break; // the guard marks the key done; the next term queues every key again
            }
            self.reconcile_key(queue, &key, halt);
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

    fn reconcile_key(&self, queue: &Queue, key: &QueueKey, halt: &StopSignal) {
        let retries = queue.num_requeues(key);
        let ctx = Context {
            key,
            shared: self,
            retries,
            halt,
        };
        self.stats.in_flight.fetch_add(1, Ordering::Relaxed);
        let outcome = catch_unwind(AssertUnwindSafe(|| (self.reconcile)(key, &ctx)));
        self.stats.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.stats.reconciles.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(Ok(action)) => {
                self.key_recovered(key);
                if action.is_rate_limited() {
                    queue.add_rate_limited(key.clone());
                } else {
                    queue.forget(key);
                    if let Some(delay) = action.requeue_after_duration() {
                        queue.add_after(key.clone(), delay);
                    }
                }
            }
            Ok(Err(Failed { message, action })) => {
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

impl<K: Object, D> fmt::Debug for Controller<K, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.shared.name)
            .field("workers", &self.shared.options.workers)
            .finish_non_exhaustive()
    }
}

impl<K: Object, D> fmt::Debug for ControllerBuilder<K, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerBuilder")
            .field("primary", &self.primary.name())
            .field("secondaries", &self.secondaries.len())
            .field("options", &self.options)
            .finish()
    }
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
