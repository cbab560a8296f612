//! `ControllerBuilder`: a controller's informers, how their objects map to primary keys, options, sharding, and
//! the reconcile function.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use parking_lot::Mutex;

use super::context::Context;
use super::options::{ControllerOptions, QueueKey};
use super::ownership::Ownership;
use super::predicate::{Predicate, admits};
use super::queue_slot::QueueSlot;
use super::runner::{Connect, Failed, Sharding, Shared, Source, State, Stats, Unregister, Watched};
use super::shard_coordinator::CoordinatorStats;
use super::sharding::ShardingConfig;
use super::{Action, Controller};
use crate::cache::{CONTROLLER_INDEX, Indexers};
use crate::client::{Client, LeaseTerm};
use crate::error::Result;
use crate::health::HealthCell;
use crate::informer::{HandlerOptions, Notification, SharedIndexInformer};
use crate::object::owner::controller_ref_of;
use crate::object::{ApiResource, Object, ObjectRef, Resource, key_of};
use crate::selector::ShardField;
use crate::workqueue::default_controller_rate_limiter;

/// Builds a [`Controller`]: the primary informer, secondary informers and how their objects map to primary keys,
/// options, and finally the reconcile function.
pub struct ControllerBuilder<K: Object, D> {
    primary: Arc<SharedIndexInformer<K>>,
    /// What primary events must pass to queue their key (`None`: every event).
    predicate: Option<Box<dyn Predicate<K>>>,
    data: Arc<D>,
    secondaries: Vec<Connect>,
    options: ControllerOptions,
    sharding: Option<(Client, ShardingConfig)>,
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
            sharding: None,
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
                    // Someone else's object a reconcile was refused (Context::create_or_update): its change may
                    // unblock the primary, and it names no controller of ours for the mapper to find. Past any
                    // predicate: a primary left blocked is worse than one reconcile too many.
                    for key in slot.refused.primaries_of(TypeId::of::<S>(), &key_of(&**ev.object())) {
                        slot.add_mapped(key);
                    }
                    if let Some(p) = &predicate
                        && !admits(&**p, ev)
                    {
                        slot.filtered();
                        return;
                    }
                    // An update's old and new states mostly map to the same primaries: each is queued once (a
                    // second add while the first is being reconciled would reconcile it again, on a cache that
                    // may not hold that reconcile's writes yet).
                    let mut queued: Vec<String> = Vec::new();
                    if let Notification::Update { old, .. } = ev {
                        for r in mapper(old) {
                            let key = r.key();
                            slot.add_mapped(key.as_str().into());
                            queued.push(key);
                        }
                    }
                    for r in mapper(ev.object()) {
                        let key = r.key();
                        if !queued.contains(&key) {
                            slot.add_mapped(key.into());
                        }
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

    /// Runs the controller as one of several replicas that **share the objects**: the hash space of the objects'
    /// uid (or namespace, [`ShardingConfig::field`]) is cut into [`slots`](ShardingConfig::slots), each owned by
    /// one replica through its own Lease (a leader election per slot), and each replica caches and reconciles
    /// only the objects of its slots — the informers ask the server for them with `shardSelector` (Kubernetes'
    /// `ShardedListAndWatch`) and filter themselves on servers without it. The replicas balance the slots between
    /// them: one that joins gets its share within a few retry periods; one that stops releases its slots at once;
    /// one that dies loses them after the lease duration.
    ///
    /// A key is reconciled by at most one replica at a time: a worker takes a key only while its slot is owned, a
    /// slot given up for balance is released only once its reconciles finished, and a lost slot (its renewal
    /// failed) stops being owned at the renew deadline, before any other replica may take it. A reconcile still
    /// running then cannot write on: its [`Context::client`] is fenced by the slot's Lease term, so what it would
    /// send is refused and what it has in flight aborted ([`Error::OwnershipLost`](crate::Error::OwnershipLost)),
    /// and the key goes to the slot's next owner. Unlike an unsharded controller, a key whose object is not in the
    /// cache is reconciled only when this replica saw the object deleted in one of its slots (another replica's key
    /// otherwise).
    ///
    /// Other handlers of a sharded informer see what the cache sees: the objects of a slot given up leave it as
    /// deletions of their last known state ([`DeletedObject::FinalStateUnknown`](crate::cache::DeletedObject)),
    /// those of a slot acquired arrive as adds.
    ///
    /// The controller must be the one to start its informers (it sets their shard before they start): build it
    /// before starting the factory. The primary informer is sharded; with [`ShardField::Namespace`] the secondary
    /// informers too. Ownership starts with [`start`](Controller::start) (or a manager's) and ends — slots
    /// released after the workers finished — with [`pause`](Controller::pause) and [`stop`](Controller::stop).
    /// The coordination needs `get`, `list`, `create`, `update`, `delete` and `watch` on `leases` in
    /// [`lease_namespace`](ShardingConfig::lease_namespace).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use kube_informer::client::Client;
    /// # use kube_informer::controller::{Action, Controller, ShardingConfig};
    /// # fn demo(client: Client, informer: Arc<kube_informer::informer::SharedIndexInformer<kube_informer::object::core::ConfigMap>>) -> kube_informer::Result<()> {
    /// let controller = Controller::builder(informer, client.clone())
    ///     .sharded(&client, ShardingConfig::with_default_identity("operators"))
    ///     .build(|_key, _ctx| Ok::<_, kube_informer::Error>(Action::await_change()))?;
    /// controller.start()?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn sharded(mut self, client: &Client, config: ShardingConfig) -> Self {
        self.sharding = Some((client.clone(), config));
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
            sharding,
        } = self;
        let name = options.name.clone().unwrap_or_else(|| primary.name().to_owned());
        // The reconciles' client: the primary informer's, else the sharding's; connections of its own.
        let client = primary
            .client()
            .or_else(|| sharding.as_ref().map(|(c, _)| c.clone()))
            .map(|c| c.isolated());
        let sharding = match sharding {
            Some((client, config)) => {
                config.validate()?;
                let ownership = Ownership::new(config.slots, config.field);
                primary.follow_shard(ownership.cell())?;
                Some(Sharding {
                    ownership,
                    client,
                    config,
                    stats: Arc::new(CoordinatorStats::default()),
                })
            }
            None => None,
        };
        let deletions = sharding.as_ref().map(|s| s.ownership.clone());
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
                let key = key_of(&**ev.object());
                if let (Some(ownership), Notification::Delete(_)) = (&deletions, ev) {
                    ownership.deleted(&key, ev.object().meta());
                }
                primary_slot.add(key.into());
            };
            registrations.push(Box::new(
                primary.add_event_handler_with(handler, handler_options(&name))?,
            ));
            for connect in secondaries {
                let watched = connect(&name, &slot)?;
                if let Some(s) = &sharding
                    && s.config.field == ShardField::Namespace
                {
                    watched.source.follow_shard(s.ownership.cell())?;
                }
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
                        // A failure once the term is over is the ownership's end, whatever the error says: no
                        // policy decides a retry here.
                        if ctx.term().is_some_and(LeaseTerm::is_over) {
                            return Failed {
                                action: None,
                                message: e.to_string(),
                            };
                        }
                        let obj = ctx.object();
                        Failed {
                            action: Some(error_policy(obj.as_deref(), &e, ctx)),
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
                sharding,
                client,
                handed_over: Mutex::new(Default::default()),
            }),
            state: Mutex::new(State::Idle),
            registrations: Mutex::new(registrations),
            coordinator: Mutex::new(None),
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

impl<K: Object, D> fmt::Debug for ControllerBuilder<K, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerBuilder")
            .field("primary", &self.primary.name())
            .field("secondaries", &self.secondaries.len())
            .field("options", &self.options)
            .finish()
    }
}
