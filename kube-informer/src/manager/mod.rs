//! The [`Manager`]: what a controller binary's `main` hands its controllers to, to run them until SIGTERM and stop
//! them gracefully — controller-runtime's manager, on threads.
//!
//! It owns the client, an informer factory, the controllers, the leader election (optional), event recorders, the
//! probe endpoint (feature `probe`) and the [`Registry`] that the endpoint serves. [`Manager::run`] starts
//! everything and blocks until SIGTERM or SIGINT (feature `signals`, on by default) or a [`StopHandle`], then shuts
//! down in this order:
//!
//! 1. every controller stops taking work: no reconcile starts any more, queued keys are dropped;
//! 2. the reconciles in flight get the grace period ([`ManagerOptions::grace_period`], 30 s) to finish — with the
//!    caches still filled and the Lease still held; one that overruns it is reported and left detached;
//! 3. the Lease is released (holder emptied, as client-go's `ReleaseOnCancel`), so another replica leads at once;
//! 4. event recorders write what they queued; informers stop; the probe endpoint and the signal thread stop;
//! 5. every thread is joined — within a second after the grace period, from any state — and the
//!    [`ShutdownReport`] says whether everything stopped cleanly.
//!
//! Under leader election, the informers run on every replica (a hot standby), the controllers only while this
//! replica leads: they start on `on_started_leading` and pause on `on_stopped_leading`; a replica that loses the
//! Lease keeps running as a candidate. Every reconcile writes through a client fenced by the leader's term
//! ([`Context::client`](crate::controller::Context::client)): when the term ends — renewals failing past the renew
//! deadline — requests still to be sent are refused and those in flight aborted, before any other replica may take
//! over. [`Manager::last_handover`] says how long the work stood still at the last hand-over.
//!
//! ```no_run
//! use kube_informer::client::Client;
//! use kube_informer::controller::{Action, Context};
//! use kube_informer::manager::{Manager, ManagerOptions, ShutdownReport};
//! use kube_informer::object::core::ConfigMap;
//!
//! fn reconcile(_key: &str, ctx: &Context<'_, ConfigMap, ()>) -> kube_informer::Result<Action> {
//!     println!("reconciling {}", ctx.name());
//!     Ok(Action::await_change())
//! }
//!
//! fn main() -> Result<ShutdownReport, Box<dyn std::error::Error>> {
//!     let options = ManagerOptions::default().leader_election("kube-system", "configmap-printer");
//!     let manager = Manager::new(Client::try_default()?, options)?; // or Manager::try_default()?
//!     // Over the manager's own informer of ConfigMaps; reconciles write through its client (ctx.client()).
//!     manager.add_controller(manager.controller::<ConfigMap, _>(()).build(reconcile)?)?;
//!     Ok(manager.run()?) // until SIGTERM or SIGINT; exits 0 when everything stopped cleanly
//! }
//! ```

mod options;
mod report;
#[cfg(feature = "signals")]
mod signals;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use log::{info, warn};
use parking_lot::{Condvar, Mutex};

pub use options::{DEFAULT_GRACE_PERIOD, ElectionOptions, ManagerOptions};
pub use report::{ShutdownReport, StopCause};

use crate::client::{Client, LeaseTerm};
use crate::clock::deadline::deadline_after;
use crate::controller::{Controller, ControllerBuilder, StoppingController};
use crate::error::{Error, Result};
use crate::events::EventRecorder;
use crate::informer::{SharedIndexInformer, SharedInformerFactory, StopJoin};
use crate::leaderelection::{LeaderCallbacks, LeaderElector, LeaseLock};
use crate::object::{Object, Resource};
use crate::registry::Registry;
use crate::worker::STOP_BUDGET;

/// A controller as the manager drives it, whatever its object and data types.
trait ManagedController: Send + Sync {
    fn name(&self) -> &str;
    fn start(&self) -> Result<()>;
    fn start_in(&self, term: &LeaseTerm) -> Result<()>;
    fn start_informers(&self) -> Result<()>;
    fn pause(&self);
    fn begin_stop(&self) -> StoppingController;
}

impl<K: Object, D: Send + Sync + 'static> ManagedController for Controller<K, D> {
    fn name(&self) -> &str {
        Controller::name(self)
    }
    fn start(&self) -> Result<()> {
        Controller::start(self)
    }
    fn start_in(&self, term: &LeaseTerm) -> Result<()> {
        Controller::start_in(self, Some(term))
    }
    fn start_informers(&self) -> Result<()> {
        Controller::start_informers(self)
    }
    fn pause(&self) {
        Controller::pause(self)
    }
    fn begin_stop(&self) -> StoppingController {
        Controller::begin_stop(self)
    }
}

/// An informer added on its own, whatever its object type.
trait ManagedInformer: Send + Sync {
    fn start(&self) -> Result<()>;
    fn begin_stop(&self) -> StopJoin;
}

impl<K: Object> ManagedInformer for SharedIndexInformer<K> {
    fn start(&self) -> Result<()> {
        SharedIndexInformer::start(self)
    }
    fn begin_stop(&self) -> StopJoin {
        SharedIndexInformer::begin_stop(self)
    }
}

/// Where the manager is in its life.
enum Phase {
    /// Collecting components.
    Idle,
    /// Started: what runs only while started.
    Running(Box<Running>),
    /// Shutting down (by the thread that took `Running` out).
    Stopping,
    /// Done: the report, for every later caller.
    Stopped(ShutdownReport),
}

/// What a started manager runs besides the components it was given.
struct Running {
    /// The election the controllers run under (`None`: they run from the start).
    elector: Option<LeaderElector>,
    #[cfg(feature = "probe")]
    probe: Option<crate::probe::ProbeServer>,
    #[cfg(feature = "signals")]
    signals: Option<signals::SignalWatch>,
}

/// A handle that makes [`Manager::run`] return (after its shutdown), from any thread or a callback. Cheap to clone.
#[derive(Clone)]
pub struct StopHandle {
    tx: Sender<StopCause>,
}

impl StopHandle {
    /// Asks the manager to stop: [`run`](Manager::run) shuts down and returns. Idempotent; returns at once.
    pub fn stop(&self) {
        let _ = self.tx.send(StopCause::Requested);
    }
}

impl fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopHandle").finish_non_exhaustive()
    }
}

/// Runs a program's controllers — and their informers, leader election, event recorders and probe endpoint — until
/// SIGTERM, SIGINT or a [`StopHandle`], then stops them gracefully (see the [module docs](self) for the order).
///
/// Threads: those of its components, plus `sig:manager` (signals) while running. Dropping a started manager shuts
/// it down.
pub struct Manager {
    client: Client,
    factory: SharedInformerFactory,
    registry: Registry,
    options: ManagerOptions,
    /// This replica's identity in the election (`None` without one).
    identity: Option<String>,
    controllers: Mutex<Vec<Arc<dyn ManagedController>>>,
    informers: Mutex<Vec<Arc<dyn ManagedInformer>>>,
    recorders: Mutex<Vec<EventRecorder>>,
    electors: Mutex<Vec<LeaderElector>>,
    /// Set once the shutdown began: leadership callbacks then start nothing.
    stopping: Arc<AtomicBool>,
    phase: Mutex<Phase>,
    /// Notified when the phase becomes `Stopped`.
    stopped: Condvar,
    stop_tx: Sender<StopCause>,
    stop_rx: Receiver<StopCause>,
}

impl Manager {
    /// A manager for `client`, with a [`SharedInformerFactory`] on it ([`ManagerOptions::factory`]) and a
    /// [`Registry`] holding both. Starts nothing.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a leader election whose timing breaks client-go's constraints.
    pub fn new(client: Client, options: ManagerOptions) -> Result<Manager> {
        let identity = match &options.leader_election {
            Some(e) => {
                e.config.validate()?;
                Some(
                    e.identity
                        .clone()
                        .unwrap_or_else(crate::leaderelection::default_identity),
                )
            }
            None => None,
        };
        let factory = SharedInformerFactory::new(client.clone(), options.factory.clone());
        let registry = Registry::new();
        registry.add_client(&client).add_factory(&factory);
        let (stop_tx, stop_rx) = crossbeam_channel::unbounded();
        Ok(Manager {
            client,
            factory,
            registry,
            options,
            identity,
            controllers: Mutex::new(Vec::new()),
            informers: Mutex::new(Vec::new()),
            recorders: Mutex::new(Vec::new()),
            electors: Mutex::new(Vec::new()),
            stopping: Arc::new(AtomicBool::new(false)),
            phase: Mutex::new(Phase::Idle),
            stopped: Condvar::new(),
            stop_tx,
            stop_rx,
        })
    }

    /// A manager of the cluster [`Client::try_default`] finds (`KUBECONFIG`, `~/.kube/config`, or the pod's
    /// service account), with [`ManagerOptions::default`]: a controller binary's first line.
    ///
    /// # Errors
    /// As [`Client::try_default`].
    pub fn try_default() -> Result<Manager> {
        Manager::new(Client::try_default()?, ManagerOptions::default())
    }

    /// Starts building a controller of `K` over the manager's own informer of `K` (from its
    /// [`factory`](Self::factory)), handing `data` to every reconcile; hand the result to
    /// [`add_controller`](Self::add_controller). Its reconciles write through the manager's client
    /// ([`Context::client`](crate::controller::Context::client), fenced under leader election).
    pub fn controller<K: Resource, D: Send + Sync + 'static>(&self, data: D) -> ControllerBuilder<K, D> {
        Controller::builder(self.factory.informer::<K>(), data)
    }

    /// The manager's informer of `S` (from its [`factory`](Self::factory)), for a controller builder's
    /// [`owns`](ControllerBuilder::owns) or [`watches`](ControllerBuilder::watches).
    pub fn informer<S: Resource>(&self) -> Arc<SharedIndexInformer<S>> {
        self.factory.informer::<S>()
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The informer factory: informers made here are started with the manager and stopped at its shutdown.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// The registry of every component added (what the probe endpoint serves); add checks of your own to it.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// This replica's identity in the leader election (`None` without one).
    pub fn identity(&self) -> Option<&str> {
        self.identity.as_deref()
    }

    /// A handle that makes [`run`](Manager::run) return.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            tx: self.stop_tx.clone(),
        }
    }

    /// Adds a controller: run from [`start`](Manager::start) on (its informers started), or under leader election
    /// only while this replica leads; stopped at the shutdown. Returns it shared, for its metrics and state.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] once the manager has started: controllers are added before; and for a
    /// [sharded](crate::controller::ControllerBuilder::sharded) controller under leader election (sharded replicas
    /// all work, each on its slots).
    pub fn add_controller<K: Object, D: Send + Sync + 'static>(
        &self,
        controller: impl Into<Arc<Controller<K, D>>>,
    ) -> Result<Arc<Controller<K, D>>> {
        let phase = self.phase.lock();
        if !matches!(*phase, Phase::Idle) {
            return Err(Error::InvalidInput(
                "manager: controllers are added before it starts".into(),
            ));
        }
        let controller = controller.into();
        if controller.is_sharded() && self.options.leader_election.is_some() {
            return Err(Error::InvalidInput(format!(
                "manager: controller {} is sharded — its replicas share the work through their own Leases — and \
                 cannot also run only on the elected leader; use a manager without leader election",
                controller.name()
            )));
        }
        self.registry.add_controller(&controller);
        self.controllers.lock().push(controller.clone());
        Ok(controller)
    }

    /// Adds an informer made outside the factory: started with the manager (at once if it runs), stopped at the
    /// shutdown, and in the registry.
    ///
    /// # Errors
    /// When the manager runs and the informer cannot start (it was stopped).
    pub fn add_informer<K: Object>(&self, informer: &Arc<SharedIndexInformer<K>>) -> Result<()> {
        self.registry.add_informer(informer);
        self.informers.lock().push(informer.clone());
        if matches!(*self.phase.lock(), Phase::Running(_)) {
            informer.start()?;
        }
        Ok(())
    }

    /// Adds an event recorder: in the registry, and stopped — what it queued written — at the shutdown, after the
    /// reconciles finished.
    pub fn add_event_recorder(&self, recorder: &EventRecorder) {
        self.registry.add_event_recorder(recorder);
        self.recorders.lock().push(recorder.clone());
    }

    /// Adds a leader election of your own (another Lease than the manager's): in the registry, stopped — its Lease
    /// released — at the shutdown, after the reconciles finished.
    pub fn add_leader_elector(&self, elector: LeaderElector) {
        self.registry.add_leader_elector(&elector);
        self.electors.lock().push(elector);
    }

    /// The outage of the last hand-over of the manager's leadership to this replica: from the previous leader's last
    /// renewal of the Lease observed here to the first reconcile of any controller under this replica's term.
    /// `None` without leader election, or before it was measured.
    pub fn last_handover(&self) -> Option<std::time::Duration> {
        match &*self.phase.lock() {
            Phase::Running(r) => r.elector.as_ref().and_then(LeaderElector::last_handover),
            _ => None,
        }
    }

    /// True while this replica leads the manager's election (always, without one, once started).
    pub fn is_leader(&self) -> bool {
        match &*self.phase.lock() {
            Phase::Running(r) => r.elector.as_ref().is_none_or(LeaderElector::is_leader),
            _ => false,
        }
    }

    /// The address the probe endpoint listens on, once started (with the port chosen when asked for port 0).
    #[cfg(feature = "probe")]
    pub fn probe_addr(&self) -> Option<std::net::SocketAddr> {
        match &*self.phase.lock() {
            Phase::Running(r) => r.probe.as_ref().map(crate::probe::ProbeServer::local_addr),
            _ => None,
        }
    }

    /// Starts everything and returns: the signal handling, the informers (of the factory, of the controllers,
    /// added), the probe endpoint, then the leader election — or the controllers at once, without one. Does nothing
    /// when started already. [`run`](Manager::run) calls it.
    ///
    /// # Errors
    /// An informer that cannot start, a probe address that cannot be bound, signals that cannot be handled, a
    /// thread that cannot be spawned; what was started is stopped again. [`Error::Stopped`] after a shutdown.
    pub fn start(&self) -> Result<()> {
        let mut phase = self.phase.lock();
        match &*phase {
            Phase::Idle => {}
            Phase::Running(_) => return Ok(()),
            Phase::Stopping | Phase::Stopped(_) => return Err(Error::Stopped),
        }
        let mut running = Box::new(Running {
            elector: None,
            #[cfg(feature = "probe")]
            probe: None,
            #[cfg(feature = "signals")]
            signals: None,
        });
        match self.start_parts(&mut running) {
            Ok(()) => {
                *phase = Phase::Running(running);
                Ok(())
            }
            Err(e) => {
                *phase = Phase::Running(running);
                drop(phase);
                warn!("manager: cannot start: {e}");
                self.shutdown();
                Err(e)
            }
        }
    }

    fn start_parts(&self, running: &mut Running) -> Result<()> {
        #[cfg(feature = "signals")]
        if self.options.handle_signals {
            running.signals = Some(signals::SignalWatch::start(self.stop_tx.clone())?);
        }
        self.factory.start()?;
        let controllers = self.controllers.lock().clone();
        for c in &controllers {
            c.start_informers()?;
        }
        for i in self.informers.lock().iter() {
            i.start()?;
        }
        #[cfg(feature = "probe")]
        if let Some(addr) = &self.options.probe_addr {
            running.probe = Some(crate::probe::ProbeServer::start(addr.as_str(), self.registry.clone())?);
        }
        match (&self.options.leader_election, &self.identity) {
            (Some(election), Some(identity)) => {
                let lock = LeaseLock::new(&self.client, &election.namespace, &election.name, identity.clone());
                info!(
                    "manager: leader election on lease {}/{} as {identity}",
                    election.namespace, election.name
                );
                let elector = LeaderElector::start(lock, election.config.clone(), self.gate(controllers))?;
                self.registry.add_leader_elector(&elector);
                running.elector = Some(elector);
            }
            _ => {
                for c in &controllers {
                    c.start()?;
                }
            }
        }
        Ok(())
    }

    /// The election's callbacks: the controllers run while leading.
    fn gate(&self, controllers: Vec<Arc<dyn ManagedController>>) -> LeaderCallbacks {
        let (on, off) = (controllers.clone(), controllers);
        let stopping = self.stopping.clone();
        LeaderCallbacks::new()
            .on_started_leading_with_term(move |term| {
                info!("manager: leading; starting the controllers");
                for c in &on {
                    if stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    // Their reconciles write through clients fenced by this term.
                    if let Err(e) = c.start_in(term) {
                        warn!("manager: controller {} cannot start: {e}", c.name());
                    }
                }
            })
            .on_stopped_leading(move || {
                info!("manager: not leading; pausing the controllers");
                for c in &off {
                    c.pause();
                }
            })
            .on_new_leader(|leader| info!("manager: the leader is {leader}"))
    }

    /// Starts (if needed), then blocks until SIGTERM or SIGINT (with [`ManagerOptions::handle_signals`] and the
    /// feature `signals`) or a [`StopHandle`], then shuts down and returns the report.
    ///
    /// After it returns, SIGTERM and SIGINT no longer end the process by themselves (the signal handler stays
    /// installed, idle): a program exits after `run`.
    ///
    /// # Errors
    /// What [`start`](Manager::start) returns.
    pub fn run(&self) -> Result<ShutdownReport> {
        self.start()?;
        let cause = self.stop_rx.recv().unwrap_or(StopCause::Requested);
        Ok(self.shutdown_because(cause))
    }

    /// Shuts down now (see the [module docs](self)) and returns the report; a [`run`](Manager::run) in progress
    /// returns too. A second call (or one while another shuts down) waits for the first and returns its report.
    pub fn shutdown(&self) -> ShutdownReport {
        let _ = self.stop_tx.send(StopCause::Requested);
        self.shutdown_because(StopCause::Requested)
    }

    fn shutdown_because(&self, cause: StopCause) -> ShutdownReport {
        let running = {
            let mut phase = self.phase.lock();
            loop {
                match std::mem::replace(&mut *phase, Phase::Stopping) {
                    Phase::Running(r) => break Some(r),
                    Phase::Idle => break None,
                    Phase::Stopped(report) => {
                        *phase = Phase::Stopped(report.clone());
                        return report;
                    }
                    Phase::Stopping => {
                        *phase = Phase::Stopping;
                        self.stopped.wait(&mut phase);
                    }
                }
            }
        };
        let report = self.stop_everything(cause, running);
        info!("manager: {report}");
        *self.phase.lock() = Phase::Stopped(report.clone());
        self.stopped.notify_all();
        report
    }

    /// The shutdown proper, in the order of the module docs.
    fn stop_everything(&self, cause: StopCause, running: Option<Box<Running>>) -> ShutdownReport {
        self.stopping.store(true, Ordering::SeqCst);
        let grace = self.options.grace_period;
        info!("manager: shutting down ({cause}); reconciles in flight get {grace:?}");
        // 1. No more work taken, anywhere; 2. the reconciles in flight finish, against one grace period.
        let stopping: Vec<StoppingController> = self.controllers.lock().iter().map(|c| c.begin_stop()).collect();
        let grace_end = deadline_after(Instant::now(), grace);
        let unfinished_reconciles: Vec<(String, usize)> = stopping
            .into_iter()
            .filter_map(|s| {
                let name = s.name().to_owned();
                let n = s.finish(grace_end);
                (n > 0).then_some((name, n))
            })
            .collect();

        // 3.–5. Everything else, against one second.
        let deadline = Instant::now() + STOP_BUDGET;
        let mut leases = Vec::new();
        let mut stragglers = Vec::new();
        let (elector, probe, signals) = match running {
            Some(r) => {
                let Running {
                    elector,
                    #[cfg(feature = "probe")]
                    probe,
                    #[cfg(feature = "signals")]
                    signals,
                } = *r;
                #[cfg(not(feature = "probe"))]
                let probe: Option<()> = None;
                #[cfg(not(feature = "signals"))]
                let signals: Option<()> = None;
                (elector, probe, signals)
            }
            None => (None, None, None),
        };
        let electors: Vec<LeaderElector> = elector.into_iter().chain(self.electors.lock().drain(..)).collect();
        for e in &electors {
            let stopped = e.stop_by(deadline);
            if let Some(released) = stopped.released {
                leases.push((e.name().to_owned(), released));
            }
            if !stopped.joined {
                stragglers.push(format!("leader election {}", e.name()));
            }
        }
        for r in self.recorders.lock().drain(..) {
            if !r.stop_by(deadline) {
                stragglers.push("event recorder".to_owned());
            }
        }
        let joins: Vec<StopJoin> = self.informers.lock().iter().map(|i| i.begin_stop()).collect();
        if !self.factory.shutdown_by(deadline) {
            stragglers.push("informers of the factory".to_owned());
        }
        // Every one joined (no short cut: each must be waited for).
        let joined: Vec<bool> = joins.into_iter().map(|j| j.finish(deadline)).collect();
        if joined.contains(&false) {
            stragglers.push("informers".to_owned());
        }
        #[cfg(feature = "probe")]
        if let Some(p) = probe
            && !p.stop_by(deadline)
        {
            stragglers.push("probe endpoint".to_owned());
        }
        #[cfg(not(feature = "probe"))]
        let _ = probe;
        #[cfg(feature = "signals")]
        if let Some(s) = signals
            && !s.stop_by(deadline)
        {
            stragglers.push("signal handling".to_owned());
        }
        #[cfg(not(feature = "signals"))]
        let _ = signals;
        ShutdownReport {
            cause,
            grace_period: grace,
            unfinished_reconciles,
            leases,
            stragglers,
        }
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        if matches!(*self.phase.lock(), Phase::Running(_) | Phase::Stopping) {
            self.shutdown();
        }
    }
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match &*self.phase.lock() {
            Phase::Idle => "idle",
            Phase::Running(_) => "running",
            Phase::Stopping => "stopping",
            Phase::Stopped(_) => "stopped",
        };
        f.debug_struct("Manager")
            .field("phase", &phase)
            .field("identity", &self.identity)
            .field("controllers", &self.controllers.lock().len())
            .field("options", &self.options)
            .finish()
    }
}
