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
use crate::cache::{Fifo, ReflectorConfig, RelistBudget};
use crate::client::params::{ListParams, and_selector};
use crate::client::{Api, Client, WeakClient};
use crate::clock::deadline::deadline_after;
use crate::error::Result;
use crate::health::{FactoryHealth, Health, InformerHealth};
use crate::object::{ApiResource, MetaAccessor, Object, Representation, Resource};
use crate::selector::ShardSelector;

/// Lists a factory runs at once by default (herd control; client-go has no such limit).
pub const DEFAULT_CONCURRENT_LISTS: usize = 4;

/// A transform every informer of a factory applies to its objects' metadata.
pub type MetaTransform = Arc<dyn Fn(&mut dyn MetaAccessor) + Send + Sync>;

/// Adjusts an informer's list parameters (client-go's `TweakListOptionsFunc`).
pub type ListTweak = Arc<dyn Fn(&ApiResource, &mut ListParams) + Send + Sync>;

/// Settings shared by every informer of a factory.
///
/// Each setter adds to what the calls before it set, or sets a value of its own: namespaces accumulate (the
/// informers watch each), selectors must all match (`labels("a=b").labels("c")` lists `a=b,c`), list tweaks run
/// one after the other in the order given, each seeing the selectors set before it, and so do transforms
/// (`strip_managed_fields().transform(f)` strips managedFields *and* runs `f`). The resync period, the reflector
/// settings, the list budget and the queue are single values: a later call sets them anew.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::informer::FactoryOptions;
///
/// let opts = FactoryOptions::default()
///     .namespace("prod")
///     .namespace("staging")                 // both: one informer per namespace behind each handle
///     .resync(Duration::from_secs(600))
///     .labels("app=web")
///     .labels("tier!=cache")                // and
///     .strip_managed_fields()
///     .transform(|meta| {
///         meta.annotations_mut().remove("kubectl.kubernetes.io/last-applied-configuration");
///     });
/// assert_eq!(opts.namespaces, ["prod", "staging"]);
/// assert_eq!(opts.transforms.len(), 2);
/// ```
#[derive(Clone)]
pub struct FactoryOptions {
    /// Only these namespaces, sorted and distinct; empty: all namespaces. An informer of a namespaced resource
    /// then runs one informer per namespace behind its handle, and its lister refuses other namespaces (see
    /// [`SharedIndexInformer`]); cluster-scoped resources are watched whole.
    pub namespaces: Vec<String>,
    /// Default handler resync period.
    pub resync: Option<Duration>,
    /// Adjust each informer's list/watch parameters (client-go's `TweakListOptionsFunc`), in order, each seeing the
    /// parameters the ones before it left: the label, field and shard selectors are used (the reflector sets the rest
    /// itself — page size, resource versions, timeouts —, and a tweak that sets them gets a `warn!` saying so). A
    /// shard selector set here is every informer's [`InformerOptions::shard`] unless it brings its own.
    pub tweaks: Vec<ListTweak>,
    /// Applied to every object's metadata before caching, in order, after an informer's own transform.
    pub transforms: Vec<MetaTransform>,
    /// Reflector settings (page size, streaming list, watch timeouts, back-off) of the informers that bring none.
    pub reflector: ReflectorConfig,
    /// At most this many informers list at once (the budget the factory makes when [`reflector`](Self::reflector)
    /// carries none of its own).
    pub max_concurrent_lists: usize,
    /// The queue between each informer's reflector and its cache, for the informers that bring none
    /// ([`InformerOptions::fifo`]): by default [`Fifo::Real`], handlers seeing changes in the server's order (see
    /// [`Fifo`]).
    pub fifo: Fifo,
}

impl Default for FactoryOptions {
    fn default() -> Self {
        FactoryOptions {
            namespaces: Vec::new(),
            resync: None,
            tweaks: Vec::new(),
            transforms: Vec::new(),
            reflector: ReflectorConfig::default(),
            max_concurrent_lists: DEFAULT_CONCURRENT_LISTS,
            fifo: Fifo::default(),
        }
    }
}

impl FactoryOptions {
    /// Adds `namespace` to the namespaces watched (until the first call, all of them are). An empty name adds
    /// nothing (client-go's `NamespaceAll`).
    #[must_use]
    pub fn namespace(mut self, namespace: &str) -> Self {
        if !namespace.is_empty()
            && let Err(at) = self.namespaces.binary_search_by(|ns| ns.as_str().cmp(namespace))
        {
            self.namespaces.insert(at, namespace.to_owned());
        }
        self
    }

    /// Adds each of `namespaces` to the namespaces watched.
    #[must_use]
    pub fn namespaces<S: AsRef<str>>(self, namespaces: impl IntoIterator<Item = S>) -> Self {
        namespaces.into_iter().fold(self, |o, ns| o.namespace(ns.as_ref()))
    }

    /// Sets the default handler resync period.
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Only objects matching this label selector, for every informer (and any selector given before).
    #[must_use]
    pub fn labels(self, selector: &str) -> Self {
        let selector = selector.to_owned();
        self.tweak_list_params(move |_, lp| and_selector(&mut lp.label_selector, &selector))
    }

    /// Only objects matching this field selector, for every informer (and any selector given before).
    #[must_use]
    pub fn fields(self, selector: &str) -> Self {
        let selector = selector.to_owned();
        self.tweak_list_params(move |_, lp| and_selector(&mut lp.field_selector, &selector))
    }

    /// Only the objects of this shard (KEP-5866), for every informer that brings no shard of its own
    /// ([`InformerOptions::shard`]: asked of the server, enforced before the cache). A later call replaces it.
    #[must_use]
    pub fn shard(self, shard: ShardSelector) -> Self {
        self.tweak_list_params(move |_, lp| lp.shard_selector = Some(shard.clone()))
    }

    /// Adds a tweak of each informer's list parameters, run after the tweaks added before it (which `labels` and
    /// `fields` are too): add to a selector you find set (`ListParams::labels` does) rather than replace it.
    #[must_use]
    pub fn tweak_list_params(mut self, f: impl Fn(&ApiResource, &mut ListParams) + Send + Sync + 'static) -> Self {
        self.tweaks.push(Arc::new(f));
        self
    }

    /// Adds a transform of every object's metadata before caching, run after the transforms added before it.
    #[must_use]
    pub fn transform(mut self, f: impl Fn(&mut dyn MetaAccessor) + Send + Sync + 'static) -> Self {
        self.transforms.push(Arc::new(f));
        self
    }

    /// Drops `managedFields` from every cached object (about 40% of a typical object's size; nothing an
    /// informer's user normally reads): a transform like any other, kept whatever transforms are added.
    #[must_use]
    pub fn strip_managed_fields(self) -> Self {
        self.transform(|m| m.clear_managed_fields())
    }

    /// Sets the reflector settings. A relist budget in them (`relist_budget`) is the one the factory's informers
    /// share, in place of one of [`max_concurrent_lists`](Self::max_concurrent_lists).
    #[must_use]
    pub fn reflector(mut self, config: ReflectorConfig) -> Self {
        self.reflector = config;
        self
    }

    /// Sets the queue of the informers that bring none of their own (see [`fifo`](Self::fifo)).
    #[must_use]
    pub fn fifo(mut self, fifo: Fifo) -> Self {
        self.fifo = fifo;
        self
    }

    /// Sets how many informers may list at once (replacing a relist budget given with the reflector settings).
    #[must_use]
    pub fn max_concurrent_lists(mut self, n: usize) -> Self {
        self.max_concurrent_lists = n;
        self.reflector.relist_budget = None;
        self
    }

    /// The selectors of `resource`'s informers: the tweaks' label, field and shard selectors, with a `warn!` for
    /// any other parameter a tweak set (the reflector's own).
    fn selectors(&self, resource: &ApiResource) -> (Option<String>, Option<String>, Option<ShardSelector>) {
        let mut lp = ListParams::default();
        for tweak in &self.tweaks {
            tweak(resource, &mut lp);
        }
        let ignored: Vec<&str> = [
            ("limit", lp.limit.is_some()),
            ("continue", lp.continue_token.is_some()),
            ("resourceVersion", lp.resource_version.is_some()),
            ("resourceVersionMatch", lp.resource_version_match.is_some()),
            ("timeoutSeconds", lp.timeout_seconds.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        if !ignored.is_empty() {
            log::warn!(
                "{}: a list tweak of the factory set {}, which the reflector sets itself: ignored (the page size is \
                 ReflectorConfig::page_size)",
                resource.qualified_name(),
                ignored.join(", ")
            );
        }
        (lp.label_selector, lp.field_selector, lp.shard_selector)
    }
}

impl fmt::Debug for FactoryOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FactoryOptions")
            .field("namespaces", &self.namespaces)
            .field("resync", &self.resync)
            .field("tweaks", &self.tweaks.len())
            .field("transforms", &self.transforms.len())
            .field("reflector", &self.reflector)
            .field("max_concurrent_lists", &self.max_concurrent_lists)
            .field("fifo", &self.fifo)
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
    /// Of an informer's parts (one per namespace over a set of namespaces), those not synced — all of them if each
    /// has synced and only handlers lag.
    pub(crate) fn of(parts: Vec<InformerHealth>) -> NotSynced {
        let unsynced: Vec<InformerHealth> = parts.iter().filter(|h| !h.synced).cloned().collect();
        NotSynced {
            informers: if unsynced.is_empty() { parts } else { unsynced },
        }
    }

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
    fn part_healths(&self) -> Vec<InformerHealth>;
    fn snapshots(&self) -> Vec<InformerSnapshot>;
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
    fn part_healths(&self) -> Vec<InformerHealth> {
        SharedIndexInformer::part_healths(self)
    }
    fn snapshots(&self) -> Vec<InformerSnapshot> {
        SharedIndexInformer::snapshots(self)
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
            budget: options
                .reflector
                .relist_budget
                .clone()
                .unwrap_or_else(|| RelistBudget::new(options.max_concurrent_lists)),
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
        let (labels, fields, shard) = self.options.selectors(resource);
        if options.shard.is_none() {
            options.shard = shard;
        }
        let list_watch = |api: Api<K>| {
            let mut lw = ListWatch::new(&api);
            if let Some(l) = &labels {
                lw = lw.labels(l);
            }
            if let Some(f) = &fields {
                lw = lw.fields(f);
            }
            lw
        };
        if !self.options.transforms.is_empty() {
            let transforms = self.options.transforms.clone();
            options = options.transform(move |obj: &mut K| {
                for t in &transforms {
                    t(obj.meta_mut());
                }
            });
        }
        if options.resync.is_none() {
            options.resync = self.options.resync;
        }
        options.fifo.get_or_insert(self.options.fifo);
        let mut reflector = options
            .reflector
            .take()
            .unwrap_or_else(|| self.options.reflector.clone());
        if reflector.relist_budget.is_none() {
            reflector.relist_budget = Some(self.budget.clone());
        }
        options.reflector = Some(reflector);
        // A metadata-only informer of a resource is told apart from the resource's informer of whole objects.
        let name = options.name.take().unwrap_or_else(|| match K::REPRESENTATION {
            Representation::Full => resource.qualified_name(),
            _ => format!("{}-metadata", resource.qualified_name()),
        });
        let options = options.name(name);
        // Sorted, distinct and without "" however the field was written.
        let mut namespaces: Vec<String> = self
            .options
            .namespaces
            .iter()
            .filter(|ns| !ns.is_empty())
            .cloned()
            .collect();
        namespaces.sort();
        namespaces.dedup();
        if resource.namespaced && !namespaces.is_empty() {
            let client = &self.client;
            return SharedIndexInformer::over_namespaces(
                namespaces,
                |ns| list_watch(Api::<K>::namespaced_with(client.clone(), ns, resource)),
                options,
            );
        }
        SharedIndexInformer::new(list_watch(Api::<K>::all_with(self.client.clone(), resource)), options)
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
        // Of an informer over a set of namespaces, the namespaces not synced (all of them if each has synced and
        // only handlers lag).
        let not_synced: Vec<InformerHealth> = managed
            .iter()
            .filter(|m| !m.wait_synced(deadline.saturating_duration_since(Instant::now())))
            .flat_map(|m| NotSynced::of(m.part_healths()).informers)
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

    /// The health of every informer (of each namespace's, for an informer over a set of namespaces), and the worst
    /// of them as the factory's (`Healthy` with no informer).
    /// [`FactoryHealth::is_ready`] is what a readiness probe asks: every informer synced and healthy.
    pub fn health(&self) -> FactoryHealth {
        let managed: Vec<_> = self.informers.lock().iter().map(|e| e.managed.clone()).collect();
        let informers: Vec<InformerHealth> = managed.iter().flat_map(|m| m.part_healths()).collect();
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
        Some(managed.iter().flat_map(|m| m.snapshots()).collect())
    }

    /// The factory's client.
    pub(crate) fn client(&self) -> &WeakClient {
        &self.client
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::core::ConfigMap;

    #[test]
    fn tweaks_run_in_order_and_what_the_reflector_sets_is_refused_aloud() {
        let log = crate::test_log::capture();
        let options = FactoryOptions::default()
            .labels("app=web")
            .tweak_list_params(|_, lp| lp.limit = Some(10))
            .labels("tier=front")
            .fields("metadata.name!=x");
        let (labels, fields, _) = options.selectors(&ConfigMap::api_resource());
        assert_eq!(labels.as_deref(), Some("app=web,tier=front"));
        assert_eq!(fields.as_deref(), Some("metadata.name!=x"));
        let warned = log.take_at(log::Level::Warn);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0]
                .1
                .contains("configmaps: a list tweak of the factory set limit"),
            "{warned:?}"
        );
    }

    #[test]
    fn namespaces_accumulate_sorted_and_distinct() {
        let options = FactoryOptions::default()
            .namespace("b")
            .namespace("")
            .namespaces(["c", "a", "b"]);
        assert_eq!(options.namespaces, ["a", "b", "c"]);
    }
}
