//! The [`Registry`]: the components a program wants probed and measured, in one place (what controller-runtime's
//! manager knows of its caches, controllers and leader election).
//!
//! It sits at the top of the crate: it reads informers, factories, controllers, leader electors, event recorders
//! and clients through the weak handles each of them offers, and none of them knows of it. The health a component
//! writes is in [`health`](crate::health), low in the crate.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::client::{RequestMetrics, WeakClient};
use crate::controller::{ControllerMetrics, ShardingMetrics, WeakController};
use crate::events::{RecorderMetrics, WeakRecorder};
use crate::health::{Health, InformerHealth};
use crate::informer::{InformerMetrics, InformerSnapshot, WeakFactory, WeakInformer};
use crate::leaderelection::WeakElector;

/// The components whose health and metrics a program exposes: informers (alone or all of a factory's), controllers,
/// leader electors, event recorders, clients, and checks of your own. The probe endpoint (feature `probe`) and the
/// Prometheus exposition (feature `metrics`) read it; [`report`](Registry::report) gives the health checks to
/// anything else.
///
/// It holds no component alive: one that is dropped disappears from it. Clones share the same set. A component
/// added twice (an informer alone and through its factory) is reported once.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::registry::Registry;
/// use kube_informer::informer::{FactoryOptions, SharedInformerFactory};
/// use kube_informer::object::core::ConfigMap;
/// use kube_informer_apiserver::ApiServer;
///
/// let server = ApiServer::start()?;
/// let factory = SharedInformerFactory::new(server.client()?, FactoryOptions::default());
/// factory.informer::<ConfigMap>();
/// let registry = Registry::new();
/// registry.add_factory(&factory);
/// assert!(!registry.report().is_ready(), "not synced yet");
/// factory.start()?;
/// factory.wait_for_cache_sync(Duration::from_secs(30))?;
/// let report = registry.report();
/// assert!(report.is_live() && report.is_ready());
/// assert_eq!(report.checks[0].name, "informer:configmaps");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    components: Arc<Mutex<Vec<Arc<dyn Component>>>>,
}

/// A registered component: a weak handle of one (implemented below for each kind).
pub(crate) trait Component: Send + Sync {
    /// Appends what the component reports now; false once it is gone (dropped), to be forgotten.
    fn observe(&self, out: &mut Vec<Observation>) -> bool;
}

/// One component's state at one moment. `id` tells components apart (the address of their shared state), so that
/// one registered twice is reported once.
pub(crate) struct Observation {
    pub(crate) id: usize,
    pub(crate) what: Observed,
}

/// What a component reports (the metrics are read by the `metrics` feature only).
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum Observed {
    Informer {
        health: InformerHealth,
        metrics: InformerMetrics,
    },
    Client(RequestMetrics),
    Controller {
        health: Health,
        metrics: ControllerMetrics,
        /// A sharded controller's ownership (boxed: most controllers are not sharded).
        sharding: Option<Box<ShardingMetrics>>,
    },
    LeaderElector {
        name: String,
        health: Health,
        /// This candidate leads.
        leading: bool,
        /// The holder last observed.
        leader: Option<String>,
        /// The outage of the last hand-over to this candidate, and how many were measured.
        #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
        last_handover: Option<std::time::Duration>,
        #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
        handovers: u64,
    },
    EventRecorder {
        component: String,
        health: Health,
        metrics: RecorderMetrics,
    },
    Check {
        name: String,
        health: Health,
    },
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    pub(crate) fn add(&self, component: Arc<dyn Component>) -> &Self {
        self.components.lock().push(component);
        self
    }

    /// Adds an informer: its health (`informer:<name>`; ready when synced and healthy) and metrics — for an informer
    /// over a set of namespaces, those of the informer of each namespace (`informer:<name>/<namespace>`).
    pub fn add_informer<K: crate::object::Object>(&self, informer: &crate::informer::SharedIndexInformer<K>) -> &Self {
        self.add(Arc::new(informer.downgrade()))
    }

    /// Adds every informer of a factory, those created later included, and the factory's client.
    pub fn add_factory(&self, factory: &crate::informer::SharedInformerFactory) -> &Self {
        self.add(Arc::new(factory.downgrade()))
    }

    /// Adds a client's request metrics (shared by its clones and isolated copies).
    pub fn add_client(&self, client: &crate::client::Client) -> &Self {
        self.add(Arc::new(client.downgrade()))
    }

    /// Adds a controller (`controller:<name>`): halted once stopped or when an informer it reads halted, degraded
    /// while one of them is; its reconcile and work-queue metrics.
    pub fn add_controller<K: crate::object::Object, D: Send + Sync + 'static>(
        &self,
        controller: &crate::controller::Controller<K, D>,
    ) -> &Self {
        self.add(Arc::new(controller.downgrade()))
    }

    /// Adds a leader elector (`leader-election:<name>`, which reports whether this replica leads and never fails
    /// readiness: a replica waiting for its turn is ready), and `leader_election_master_status`.
    pub fn add_leader_elector(&self, elector: &crate::leaderelection::LeaderElector) -> &Self {
        self.add(Arc::new(elector.downgrade()))
    }

    /// Adds an event recorder (`events:<component>`; degraded while its writes fail, which never fails readiness:
    /// events are best effort).
    pub fn add_event_recorder(&self, recorder: &crate::events::EventRecorder) -> &Self {
        self.add(Arc::new(recorder.downgrade()))
    }

    /// Adds a check of your own, called on each report (keep it quick: probes wait for it): ready when it answers
    /// `Healthy`, live unless it answers `Halted`.
    ///
    /// ```
    /// use kube_informer::health::Health;
    /// use kube_informer::registry::Registry;
    ///
    /// let registry = Registry::new();
    /// registry.add_check("disk", || Health::Healthy);
    /// assert!(registry.report().is_ready());
    /// ```
    pub fn add_check(&self, name: impl Into<String>, check: impl Fn() -> Health + Send + Sync + 'static) -> &Self {
        self.add(Arc::new(CustomCheck {
            name: name.into(),
            check: Box::new(check),
        }))
    }

    /// What every component reports now, each component once, in the order added; forgets dropped components.
    pub(crate) fn observe(&self) -> Vec<Observation> {
        let components: Vec<Arc<dyn Component>> = self.components.lock().clone();
        let mut out = Vec::new();
        let mut gone = Vec::new();
        for c in &components {
            if !c.observe(&mut out) {
                gone.push(Arc::as_ptr(c) as *const () as usize);
            }
        }
        if !gone.is_empty() {
            self.components
                .lock()
                .retain(|c| !gone.contains(&(Arc::as_ptr(c) as *const () as usize)));
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|o| seen.insert(o.id));
        out
    }

    /// The health checks of every component, in the order added.
    pub fn report(&self) -> HealthReport {
        let checks = self.observe().iter().filter_map(|o| Check::of(&o.what)).collect();
        HealthReport { checks }
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("components", &self.components.lock().len())
            .finish()
    }
}

impl Observation {
    fn informer(s: InformerSnapshot) -> Observation {
        Observation {
            id: s.id,
            what: Observed::Informer {
                health: s.health,
                metrics: s.metrics,
            },
        }
    }
}

impl Component for WeakClient {
    fn observe(&self, out: &mut Vec<Observation>) -> bool {
        let Some((id, metrics)) = self.request_metrics() else {
            return false;
        };
        out.push(Observation {
            id,
            what: Observed::Client(metrics),
        });
        true
    }
}

impl<K: crate::object::Object> Component for WeakInformer<K> {
    fn observe(&self, out: &mut Vec<Observation>) -> bool {
        let Some(snapshots) = self.snapshots() else {
            return false;
        };
        out.extend(snapshots.into_iter().map(Observation::informer));
        true
    }
}

/// A factory: its informers (those created later too), then its client.
impl Component for WeakFactory {
    fn observe(&self, out: &mut Vec<Observation>) -> bool {
        let Some(informers) = self.snapshot() else {
            return false;
        };
        out.extend(informers.into_iter().map(Observation::informer));
        self.client().observe(out);
        true
    }
}

impl<K: crate::object::Object, D: Send + Sync + 'static> Component for WeakController<K, D> {
    fn observe(&self, out: &mut Vec<Observation>) -> bool {
        let Some((id, health, metrics, sharding)) = self.snapshot() else {
            return false;
        };
        out.push(Observation {
            id,
            what: Observed::Controller {
                health,
                metrics,
                sharding: sharding.map(Box::new),
            },
        });
        true
    }
}

impl Component for WeakElector {
    fn observe(&self, out: &mut Vec<Observation>) -> bool {
        let Some(s) = self.snapshot() else {
            return false;
        };
        out.push(Observation {
            id: s.id,
            what: Observed::LeaderElector {
                name: s.name,
                health: s.health,
                leading: s.leading,
                leader: s.leader,
                last_handover: s.last_handover,
                handovers: s.handovers,
            },
        });
        true
    }
}

impl Component for WeakRecorder {
    fn observe(&self, out: &mut Vec<Observation>) -> bool {
        let Some((id, component, health, metrics)) = self.snapshot() else {
            return false;
        };
        out.push(Observation {
            id,
            what: Observed::EventRecorder {
                component,
                health,
                metrics,
            },
        });
        true
    }
}

struct CustomCheck {
    name: String,
    check: Box<dyn Fn() -> Health + Send + Sync>,
}

impl Component for CustomCheck {
    fn observe(&self, out: &mut Vec<Observation>) -> bool {
        out.push(Observation {
            id: self as *const CustomCheck as usize,
            what: Observed::Check {
                name: self.name.clone(),
                health: (self.check)(),
            },
        });
        true
    }
}

/// One health check: a component's name, its health, and whether it counts as ready.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// `informer:<name>`, `controller:<name>`, `leader-election:<name>`, `events:<component>`, or your check's.
    pub name: String,
    /// The component's health.
    pub health: Health,
    /// Whether it lets the program be ready (informers: synced and healthy; checks: healthy; controllers: healthy;
    /// leader electors and event recorders: not halted).
    pub ready: bool,
    /// What else is worth saying: `leading` or `following <holder>`, `not synced`.
    pub detail: Option<String>,
}

impl Check {
    /// The check of a component's observation (`None` for a client: it has metrics, no health).
    pub(crate) fn of(what: &Observed) -> Option<Check> {
        Some(match what {
            Observed::Informer { health, .. } => Check {
                name: format!("informer:{}", health.name),
                ready: health.is_ready(),
                detail: (!health.synced).then(|| "not synced".to_owned()),
                health: health.state.clone(),
            },
            Observed::Client(_) => return None,
            Observed::Controller { health, metrics, .. } => Check {
                name: format!("controller:{}", metrics.name),
                ready: health.is_healthy(),
                detail: None,
                health: health.clone(),
            },
            Observed::LeaderElector {
                name,
                health,
                leading,
                leader,
                ..
            } => Check {
                name: format!("leader-election:{name}"),
                ready: !health.is_halted(),
                detail: Some(match (leading, leader) {
                    (true, _) => "leading".to_owned(),
                    (false, Some(l)) => format!("following {l}"),
                    (false, None) => "no leader observed".to_owned(),
                }),
                health: health.clone(),
            },
            Observed::EventRecorder { component, health, .. } => Check {
                name: format!("events:{component}"),
                ready: !health.is_halted(),
                detail: None,
                health: health.clone(),
            },
            Observed::Check { name, health } => Check {
                name: name.clone(),
                ready: health.is_healthy(),
                detail: None,
                health: health.clone(),
            },
        })
    }

    /// Whether it lets the program live (anything but halted).
    pub fn is_live(&self) -> bool {
        !self.health.is_halted()
    }
}

/// The health checks of a [`Registry`] at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthReport {
    /// Each component's check, in the order added.
    pub checks: Vec<Check>,
}

impl HealthReport {
    /// Nothing halted: what a liveness probe asks (a degraded component recovers on its own; a restart would not
    /// help it).
    pub fn is_live(&self) -> bool {
        self.checks.iter().all(Check::is_live)
    }

    /// Every check ready: what a readiness probe asks (informers synced and healthy, nothing halted).
    pub fn is_ready(&self) -> bool {
        self.checks.iter().all(|c| c.ready)
    }
}
