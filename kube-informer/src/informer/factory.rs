//! `SharedInformerFactory`: one informer per resource type, shared by every part of a program (client-go's
//! `SharedInformerFactory`).

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::shared_informer::{
    InformerMetrics, InformerOptions, InformerSnapshot, STOP_BUDGET, SharedIndexInformer, StopJoin,
};
use crate::cache::ListWatch;
use crate::cache::{ReflectorConfig, RelistBudget};
use crate::client::params::ListParams;
use crate::client::{Api, Client, WeakClient};
use crate::clock::deadline::deadline_after;
use crate::error::Result;
use crate::health::{FactoryHealth, Health, InformerHealth};
use crate::object::{ApiResource, MetaAccessor, Object, Resource};

/// Lists a factory runs at once by default (herd control; client-go has no such limit).
pub const DEFAULT_CONCURRENT_LISTS: usize = 4;

/// A transform every informer of a factory applies to its objects' metadata.
pub type MetaTransform = Arc<dyn Fn(&mut dyn MetaAccessor) + Send + Sync>;

/// Adjusts an informer's list parameters (client-go's `TweakListOptionsFunc`).
pub type ListTweak = Arc<dyn Fn(&ApiResource, &mut ListParams) + Send + Sync>;

/// Settings shared by every informer of a factory.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::informer::FactoryOptions;
///
/// let opts = FactoryOptions::default()
///     .namespace("prod")
///     .resync(Duration::from_secs(600))
///     .labels("app=web")
///     .strip_managed_fields();
/// ```
#[derive(Clone)]
pub struct FactoryOptions {
    /// Only this namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// Default handler resync period.
    pub resync: Option<Duration>,
    /// Adjusts each informer's list/watch selectors (client-go's `TweakListOptionsFunc`): the label and field
    /// selectors it sets on the `ListParams` are used.
    pub tweak: Option<ListTweak>,
    /// Applied to every object's metadata before caching.
    pub transform: Option<MetaTransform>,
    /// Reflector settings (page size, streaming list, watch timeouts, back-off).
    pub reflector: ReflectorConfig,
    /// At most this many informers list at once.
    pub max_concurrent_lists: usize,
}

impl Default for FactoryOptions {
    fn default() -> Self {
        FactoryOptions {
            namespace: None,
            resync: None,
            tweak: None,
            transform: None,
            reflector: ReflectorConfig::default(),
            max_concurrent_lists: DEFAULT_CONCURRENT_LISTS,
        }
    }
}

impl FactoryOptions {
    /// Watch only `namespace`.
    #[must_use]
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// Sets the default handler resync period.
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Only objects matching this label selector, for every informer.
    #[must_use]
    pub fn labels(self, selector: &str) -> Self {
        let selector = selector.to_owned();
        self.tweak_list_params(move |_, lp| lp.label_selector = Some(selector.clone()))
    }

    /// Adjusts each informer's selectors.
    #[must_use]
    pub fn tweak_list_params(mut self, f: impl Fn(&ApiResource, &mut ListParams) + Send + Sync + 'static) -> Self {
        self.tweak = Some(Arc::new(f));
        self
    }

    /// Applies `f` to every object's metadata before caching.
    #[must_use]
    pub fn transform(mut self, f: impl Fn(&mut dyn MetaAccessor) + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }

    /// Drops `managedFields` from every cached object (about 40% of a typical object's size; nothing an
    /// informer's user normally reads).
    #[must_use]
    pub fn strip_managed_fields(self) -> Self {
        self.transform(|m| m.clear_managed_fields())
    }

    /// Sets the reflector settings.
    #[must_use]
    pub fn reflector(mut self, config: ReflectorConfig) -> Self {
        self.reflector = config;
        self
    }

    /// Sets how many informers may list at once.
    #[must_use]
    pub fn max_concurrent_lists(mut self, n: usize) -> Self {
        self.max_concurrent_lists = n;
        self
    }
}

impl fmt::Debug for FactoryOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FactoryOptions")
            .field("namespace", &self.namespace)
            .field("resync", &self.resync)
            .field("tweak", &self.tweak.is_some())
            .field("transform", &self.transform.is_some())
            .field("reflector", &self.reflector)
            .field("max_concurrent_lists", &self.max_concurrent_lists)
            .finish()
    }
}

/// Informers that failed to sync in time, each with why: the last error of its list/watch loop, how many attempts
/// failed and how long ago the last one did, or that it halted, or that it is still at its first list.
///
/// Its text, when RBAC lacks `list` on secrets:
///
/// ```text
/// informers not synced: secrets: list failed: API error 403 Forbidden: secrets is forbidden: User "alice" cannot
/// list resource "secrets" in API group "" at the cluster scope — the credentials lack the RBAC verb "list" on
/// this resource (4 attempts, last 1s ago)
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotSynced {
    /// The informers not synced, with their health when the wait ended.
    pub informers: Vec<InformerHealth>,
}

impl NotSynced {
    /// The names of the informers not synced.
    pub fn names(&self) -> Vec<&str> {
        self.informers.iter().map(|i| i.name.as_str()).collect()
    }
}

impl fmt::Display for NotSynced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("informers not synced: ")?;
        for (i, informer) in self.informers.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{informer}")?;
        }
        Ok(())
    }
}

impl std::error::Error for NotSynced {}

/// What the factory needs of an informer, whatever its object type.
trait Managed: Send + Sync {
    fn start(&self) -> Result<()>;
    fn wait_synced(&self, timeout: Duration) -> bool;
    fn begin_stop(&self) -> StopJoin;
    fn name(&self) -> &str;
    fn metrics(&self) -> InformerMetrics;
    fn health(&self) -> InformerHealth;
    fn snapshot(&self) -> InformerSnapshot;
}

impl<K: Object> Managed for SharedIndexInformer<K> {
    fn start(&self) -> Result<()> {
        SharedIndexInformer::start(self)
    }
    fn wait_synced(&self, timeout: Duration) -> bool {
        SharedIndexInformer::wait_synced(self, timeout)
    }
    fn begin_stop(&self) -> StopJoin {
        SharedIndexInformer::begin_stop(self)
    }
    fn name(&self) -> &str {
        SharedIndexInformer::name(self)
    }
    fn metrics(&self) -> InformerMetrics {
        SharedIndexInformer::metrics(self)
    }
    fn health(&self) -> InformerHealth {
        SharedIndexInformer::health(self)
    }
    fn snapshot(&self) -> InformerSnapshot {
        SharedIndexInformer::snapshot(self)
    }
}

struct Entry {
    type_id: TypeId,
    resource: ApiResource,
    typed: Arc<dyn Any + Send + Sync>,
    managed: Arc<dyn Managed>,
}

/// Hands out one shared informer per (object type, resource), all configured alike and sharing a relist budget.
///
/// ```no_run
/// use std::time::Duration;
/// use kube_informer::client::Client;
/// use kube_informer::informer::{Notification, FactoryOptions, SharedInformerFactory};
/// use kube_informer::object::core::ConfigMap;
///
/// let factory = SharedInformerFactory::new(Client::try_default()?, FactoryOptions::default().strip_managed_fields());
/// let configmaps = factory.informer::<ConfigMap>();
/// configmaps.add_event_handler(|ev: &Notification<ConfigMap>| println!("{:?}", ev.object().metadata.name))?;
/// factory.start()?;
/// factory.wait_for_cache_sync(Duration::from_secs(30))?;
/// // … later:
/// factory.shutdown();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SharedInformerFactory {
    client: Client,
    options: FactoryOptions,
    budget: Arc<RelistBudget>,
    /// Invariant: at most one entry per (type, resource). Shared with the factory's
    /// [`Registry`](crate::registry::Registry) entries, which hold it weakly.
    informers: Arc<Mutex<Vec<Entry>>>,
}

impl SharedInformerFactory {
    /// A factory creating informers on `client`.
    pub fn new(client: Client, options: FactoryOptions) -> Self {
        SharedInformerFactory {
            budget: RelistBudget::new(options.max_concurrent_lists),
            client,
            options,
            informers: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The informer of `K`'s resource, created on first use.
    pub fn informer<K: Resource>(&self) -> Arc<SharedIndexInformer<K>> {
        self.informer_for::<K>(&K::api_resource())
    }

    /// The informer of `resource` with objects decoded as `K` (use `DynamicObject` for any resource).
    pub fn informer_for<K: Object>(&self, resource: &ApiResource) -> Arc<SharedIndexInformer<K>> {
        self.informer_with(resource, InformerOptions::default())
    }

    /// Like [`informer_for`](SharedInformerFactory::informer_for), creating the informer with `options` (a
    /// type-specific transform or indexers) if it does not exist yet. The factory's own settings are added to
    /// them: namespace, selectors, reflector settings, relist budget, and its transform runs after yours.
    pub fn informer_with<K: Object>(
        &self,
        resource: &ApiResource,
        options: InformerOptions<K>,
    ) -> Arc<SharedIndexInformer<K>> {
        let mut informers = self.informers.lock();
        let type_id = TypeId::of::<K>();
        if let Some(e) = informers
            .iter()
            .find(|e| e.type_id == type_id && &e.resource == resource)
        {
            return e
                .typed
                .clone()
                .downcast::<SharedIndexInformer<K>>()
                .expect("entry type matches its TypeId");
        }
        let informer = Arc::new(self.build::<K>(resource, options));
        informers.push(Entry {
            type_id,
            resource: resource.clone(),
            typed: informer.clone(),
            managed: informer.clone(),
        });
        informer
    }

    fn build<K: Object>(&self, resource: &ApiResource, mut options: InformerOptions<K>) -> SharedIndexInformer<K> {
        let api = match &self.options.namespace {
            Some(ns) if resource.namespaced => Api::<K>::namespaced_with(self.client.clone(), ns, resource),
            _ => Api::<K>::all_with(self.client.clone(), resource),
        };
        let mut lw = ListWatch::new(&api);
        if let Some(tweak) = &self.options.tweak {
            let mut lp = ListParams::default();
            tweak(resource, &mut lp);
            if let Some(l) = &lp.label_selector {
                lw = lw.labels(l);
            }
            if let Some(f) = &lp.field_selector {
                lw = lw.fields(f);
            }
        }
        if let Some(meta_transform) = self.options.transform.clone() {
            let own = options.transform.take();
            options.transform = Some(Arc::new(move |obj: &mut K| {
                if let Some(t) = &own {
                    t(obj);
                }
                meta_transform(obj.meta_mut());
            }));
        }
        if options.resync.is_none() {
            options.resync = self.options.resync;
        }
        let mut reflector = self.options.reflector.clone();
        reflector.relist_budget = Some(self.budget.clone());
        options.reflector = reflector;
        let name = match (&self.options.namespace, resource.namespaced) {
            (Some(ns), true) => format!("{}/{ns}", resource.qualified_name()),
            _ => resource.qualified_name(),
        };
        let name = options.name.take().unwrap_or(name);
        SharedIndexInformer::new(lw, options.name(name))
    }

    /// Starts every informer created so far (informers created later need another call, as in client-go).
    ///
    /// # Errors
    /// The first informer that fails to start (a stopped factory, or no thread could be spawned).
    pub fn start(&self) -> Result<()> {
        let managed: Vec<_> = self.informers.lock().iter().map(|e| e.managed.clone()).collect();
        managed.iter().try_for_each(|m| m.start())
    }

    /// Waits until every informer has synced and its handlers have handled their initial adds.
    ///
    /// # Errors
    /// [`NotSynced`] naming the informers that had not synced by `timeout`, each with the reason (its last error,
    /// the attempt count and how long ago it failed last).
    pub fn wait_for_cache_sync(&self, timeout: Duration) -> Result<(), NotSynced> {
        let deadline = deadline_after(Instant::now(), timeout);
        let managed: Vec<_> = self.informers.lock().iter().map(|e| e.managed.clone()).collect();
        let not_synced: Vec<InformerHealth> = managed
            .iter()
            .filter(|m| !m.wait_synced(deadline.saturating_duration_since(Instant::now())))
            .map(|m| m.health())
            .collect();
        if not_synced.is_empty() {
            Ok(())
        } else {
            Err(NotSynced { informers: not_synced })
        }
    }

    /// Metrics of every informer.
    pub fn metrics(&self) -> Vec<InformerMetrics> {
        self.informers.lock().iter().map(|e| e.managed.metrics()).collect()
    }

    /// The health of every informer, and the worst of them as the factory's (`Healthy` with no informer).
    /// [`FactoryHealth::is_ready`] is what a readiness probe asks: every informer synced and healthy.
    pub fn health(&self) -> FactoryHealth {
        let managed: Vec<_> = self.informers.lock().iter().map(|e| e.managed.clone()).collect();
        let informers: Vec<InformerHealth> = managed.iter().map(|m| m.health()).collect();
        FactoryHealth {
            state: Health::worst(informers.iter().map(|i| i.state.clone())),
            informers,
        }
    }

    /// The factory held weakly (by a [`Registry`](crate::registry::Registry)): its informers (those created later
    /// too) and its client.
    pub(crate) fn downgrade(&self) -> WeakFactory {
        WeakFactory {
            informers: Arc::downgrade(&self.informers),
            client: self.client.downgrade(),
        }
    }

    /// The relist budget the factory's informers share.
    pub fn relist_budget(&self) -> Arc<RelistBudget> {
        self.budget.clone()
    }

    /// Stops every informer and joins their threads, all against one deadline (about a second). Informers
    /// handed out earlier stop too.
    pub fn shutdown(&self) {
        self.shutdown_by(Instant::now() + STOP_BUDGET);
    }

    /// [`shutdown`](Self::shutdown) against `deadline`; true when every thread was joined.
    pub(crate) fn shutdown_by(&self, deadline: Instant) -> bool {
        let managed: Vec<_> = self.informers.lock().iter().map(|e| e.managed.clone()).collect();
        let joins: Vec<StopJoin> = managed.iter().map(|m| m.begin_stop()).collect();
        let mut joined = true;
        for j in joins {
            joined &= j.finish(deadline);
        }
        joined
    }
}

impl Drop for SharedInformerFactory {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self
            .informers
            .lock()
            .iter()
            .map(|e| e.managed.name().to_owned())
            .collect();
        f.debug_struct("SharedInformerFactory")
            .field("informers", &names)
            .field("options", &self.options)
            .finish()
    }
}
/// A factory held weakly (by a [`Registry`](crate::registry::Registry)): its informers and its client.
pub(crate) struct WeakFactory {
    informers: Weak<Mutex<Vec<Entry>>>,
    client: WeakClient,
}

impl WeakFactory {
    /// What each of the factory's informers reports now; `None` once the factory is dropped.
    pub(crate) fn snapshot(&self) -> Option<Vec<InformerSnapshot>> {
        let informers = self.informers.upgrade()?;
        let managed: Vec<_> = informers.lock().iter().map(|e| e.managed.clone()).collect();
        Some(managed.iter().map(|m| m.snapshot()).collect())
    }

    /// The factory's client.
    pub(crate) fn client(&self) -> &WeakClient {
        &self.client
    }
}
