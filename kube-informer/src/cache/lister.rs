//! Listers: read-only, selector-aware views of an informer's cache (client-go's generated listers) — of one cache,
//! or of the caches of an informer over a set of namespaces, one per namespace (controller-runtime's
//! multi-namespace cache).

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{Key, NAMESPACE_INDEX, Store};
use crate::error::{Error, Result};
use crate::object::{MetaAccessor, Object, make_key, split_key};
use crate::selector::Selector;

/// Reads objects from a cache: by key, by namespace, by label selector, by index.
///
/// ```
/// use std::sync::Arc;
/// use kube_informer::cache::{Indexers, Lister, Store};
/// use kube_informer::object::{core::ConfigMap, ObjectMeta};
/// use kube_informer::selector::Selector;
///
/// let store = Arc::new(Store::new(Indexers::namespace()));
/// let mut meta = ObjectMeta::namespaced("prod", "web");
/// meta.labels.insert("app".into(), "web".into());
/// store.add(Arc::new(ConfigMap::new(meta)));
/// store.add(Arc::new(ConfigMap::new(ObjectMeta::namespaced("dev", "db"))));
///
/// let lister = Lister::new(store);
/// let app: Selector = "app=web".parse().unwrap();
/// assert_eq!(lister.list(&app).len(), 1);
/// assert!(lister.namespace("prod").get("web").is_some());
/// assert_eq!(lister.namespace("dev").list_all().len(), 1);
/// assert_eq!(lister.len(), 2);
/// ```
///
/// The lister of an informer over a set of namespaces reads the cache of each: a key or a namespace outside the set
/// is an error from [`try_get`](Lister::try_get) and [`try_namespace`](Lister::try_namespace), and a `warn!` (once
/// per namespace) from [`get`](Lister::get) and [`namespace`](Lister::namespace), which answer as for an empty
/// namespace — never silently: a program asking for a namespace its informer does not watch has a bug, and an
/// object it cannot see is not an object that was deleted.
pub struct Lister<K> {
    view: View<K>,
}

enum View<K> {
    /// One cache, whatever it holds (one namespace or all).
    One(Arc<Store<K>>),
    /// One cache per namespace of a set.
    PerNamespace(Arc<PerNamespace<K>>),
}

struct PerNamespace<K> {
    /// Sorted by namespace, distinct.
    stores: Vec<(String, Arc<Store<K>>)>,
    /// Namespaces outside the set that someone asked for, each warned about once.
    warned: Mutex<HashSet<String>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            view: match &self.view {
                View::One(s) => View::One(s.clone()),
                View::PerNamespace(p) => View::PerNamespace(p.clone()),
            },
        }
    }
}

impl<K: Object> Lister<K> {
    /// A lister over `store`.
    pub fn new(store: Arc<Store<K>>) -> Self {
        Lister { view: View::One(store) }
    }

    /// A lister over one cache per namespace (`stores` sorted by namespace, distinct).
    pub(crate) fn per_namespace(stores: Vec<(String, Arc<Store<K>>)>) -> Self {
        Lister {
            view: View::PerNamespace(Arc::new(PerNamespace {
                stores,
                warned: Mutex::new(HashSet::new()),
            })),
        }
    }

    fn stores(&self) -> impl Iterator<Item = &Arc<Store<K>>> {
        let (one, many) = match &self.view {
            View::One(s) => (Some(s), None),
            View::PerNamespace(p) => (None, Some(p.stores.iter().map(|(_, s)| s))),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// The namespaces of an informer over a set of them; `None` for one cache, whatever it holds.
    pub fn namespaces(&self) -> Option<Vec<&str>> {
        match &self.view {
            View::One(_) => None,
            View::PerNamespace(p) => Some(p.stores.iter().map(|(ns, _)| ns.as_str()).collect()),
        }
    }

    /// Whether objects of `namespace` (`None`: cluster-scoped) can be in this cache: always for one cache; for a
    /// set of namespaces, when `namespace` is one of them.
    pub fn covers(&self, namespace: Option<&str>) -> bool {
        match &self.view {
            View::One(_) => true,
            View::PerNamespace(p) => namespace.is_some_and(|ns| p.store(ns).is_some()),
        }
    }

    /// The cache of `namespace` in a set, or the error of a namespace outside it.
    fn store_of(&self, namespace: Option<&str>) -> Result<&Arc<Store<K>>> {
        match &self.view {
            View::One(s) => Ok(s),
            View::PerNamespace(p) => namespace.and_then(|ns| p.store(ns)).ok_or_else(|| p.outside(namespace)),
        }
    }

    /// Every cached object matching `selector`, in any namespace.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let mut out = Vec::new();
        for store in self.stores() {
            out.extend(store.filtered(|o| selector.is_empty() || selector.matches(o.meta().labels())));
        }
        out
    }

    /// The object with key `key` (`namespace/name`, or the name of a cluster-scoped object); `None` when not
    /// cached — or, for a set of namespaces, when its namespace is not one of them (with a `warn!`: see
    /// [`try_get`](Lister::try_get)).
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.try_get(key).unwrap_or_else(|e| {
            self.warn_once(split_key(key).0, &e);
            None
        })
    }

    /// The object with key `key`; `Ok(None)` when not cached.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the lister reads a set of namespaces and `key`'s namespace is not one of them
    /// (a cluster-scoped key included): the object may well exist, this cache cannot know.
    pub fn try_get(&self, key: &str) -> Result<Option<Arc<K>>> {
        Ok(self.store_of(split_key(key).0)?.get(key))
    }

    /// A view of one namespace (for a namespace outside a set: an empty one, with a `warn!`; see
    /// [`try_namespace`](Lister::try_namespace)).
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<K> {
        self.try_namespace(namespace).unwrap_or_else(|e| {
            self.warn_once(Some(namespace), &e);
            NamespaceLister {
                store: None,
                namespace: namespace.to_owned(),
            }
        })
    }

    /// Every cached object, in any namespace.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.stores().flat_map(|s| s.list()).collect()
    }

    /// The objects whose controller is `owner` (by uid, as [`is_controlled_by`] compares), through the owner index
    /// a controller's [`owns`](crate::controller::ControllerBuilder::owns) adds to this cache ([`CONTROLLER_INDEX`]),
    /// or by a scan of the cache without it. Empty for an owner without a uid (never stored).
    ///
    /// [`is_controlled_by`]: crate::object::is_controlled_by
    /// [`CONTROLLER_INDEX`]: super::CONTROLLER_INDEX
    pub fn controlled_by<O: Object>(&self, owner: &O) -> Vec<Arc<K>> {
        let Some(uid) = owner.meta().uid().filter(|u| !u.is_empty()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for store in self.stores() {
            out.extend(
                store
                    .by_index(super::CONTROLLER_INDEX, uid)
                    .unwrap_or_else(|_| store.filtered(|o| crate::object::is_controlled_by(o, owner))),
            );
        }
        out
    }

    /// A view of one namespace.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the lister reads a set of namespaces and `namespace` is not one of them.
    pub fn try_namespace(&self, namespace: &str) -> Result<NamespaceLister<K>> {
        Ok(NamespaceLister {
            store: Some(self.store_of(Some(namespace))?.clone()),
            namespace: namespace.to_owned(),
        })
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.stores().map(|s| s.len()).sum()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.stores().all(|s| s.is_empty())
    }

    /// The keys of every cached object, in any order.
    pub fn keys(&self) -> Vec<Key> {
        let mut out = Vec::new();
        for store in self.stores() {
            out.extend(store.list_keys());
        }
        out
    }

    /// The cached objects whose index `name` holds `value` ([`Store::by_index`]).
    ///
    /// # Errors
    /// When there is no index named `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>> {
        let mut out = Vec::new();
        for store in self.stores() {
            out.extend(store.by_index(name, value)?);
        }
        Ok(out)
    }

    fn warn_once(&self, namespace: Option<&str>, e: &Error) {
        if let View::PerNamespace(p) = &self.view
            && p.warned.lock().insert(namespace.unwrap_or("").to_owned())
        {
            log::warn!("{e}");
        }
    }
}

impl<K> PerNamespace<K> {
    fn store(&self, namespace: &str) -> Option<&Arc<Store<K>>> {
        self.stores
            .binary_search_by(|(ns, _)| ns.as_str().cmp(namespace))
            .ok()
            .map(|i| &self.stores[i].1)
    }

    fn outside(&self, namespace: Option<&str>) -> Error {
        let set: Vec<&str> = self.stores.iter().map(|(ns, _)| ns.as_str()).collect();
        let what = match namespace {
            Some(ns) => format!("namespace {ns:?} is not"),
            None => "a cluster-scoped object is not in any namespace, so not".to_owned(),
        };
        Error::InvalidInput(format!(
            "{what} among the informer's namespaces [{}]: its objects are not cached (watch it too, or read it \
             from the API)",
            set.join(", ")
        ))
    }
}

/// Reads the objects of one namespace from a cache.
pub struct NamespaceLister<K> {
    /// `None`: a namespace outside the informer's set (nothing is cached for it).
    store: Option<Arc<Store<K>>>,
    namespace: String,
}

impl<K: Object> NamespaceLister<K> {
    /// The object `name` in this namespace.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.store.as_ref()?.get(&make_key(Some(&self.namespace), name))
    }

    /// Every cached object of this namespace.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.list(&Selector::everything())
    }

    /// The objects of this namespace matching `selector` (through the namespace index when present).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let Some(store) = &self.store else {
            return Vec::new();
        };
        let matches = |o: &K| selector.is_empty() || selector.matches(o.meta().labels());
        store
            .by_index_filtered(NAMESPACE_INDEX, &self.namespace, matches)
            .unwrap_or_else(|_| {
                let ns = Some(self.namespace.as_str());
                store.filtered(|o| o.meta().namespace() == ns && matches(o))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Indexers;
    use crate::object::ObjectMeta;
    use crate::object::core::ConfigMap;

    fn store_of(ns: &str, names: &[&str]) -> (String, Arc<Store<ConfigMap>>) {
        let store = Arc::new(Store::new(Indexers::namespace()));
        for name in names {
            store.add(Arc::new(ConfigMap::new(ObjectMeta::namespaced(ns, *name))));
        }
        (ns.to_owned(), store)
    }

    #[test]
    fn a_set_of_namespaces_reads_each_cache_and_refuses_the_others() {
        let lister = Lister::per_namespace(vec![store_of("a", &["x", "y"]), store_of("b", &["x"])]);
        assert_eq!(lister.len(), 3);
        assert_eq!(lister.list(&Selector::everything()).len(), 3);
        assert_eq!(lister.keys().len(), 3);
        assert!(lister.get("b/x").is_some() && lister.get("a/z").is_none());
        assert_eq!(lister.namespace("a").list(&Selector::everything()).len(), 2);
        assert_eq!(lister.by_index(NAMESPACE_INDEX, "b").unwrap().len(), 1);
        assert!(lister.covers(Some("a")) && !lister.covers(Some("c")) && !lister.covers(None));
        assert_eq!(lister.namespaces(), Some(vec!["a", "b"]));

        let e = lister.try_get("c/x").unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
        assert_eq!(
            e.to_string(),
            "invalid input: namespace \"c\" is not among the informer's namespaces [a, b]: its objects are not \
             cached (watch it too, or read it from the API)"
        );
        assert!(lister.try_namespace("c").is_err());
        assert!(
            lister.try_get("node-1").is_err(),
            "a cluster-scoped key is outside every namespace"
        );
        // The infallible forms answer as for an empty namespace (and warn).
        assert!(lister.get("c/x").is_none());
        assert!(lister.namespace("c").list(&Selector::everything()).is_empty());
        assert!(lister.namespace("c").get("x").is_none());
    }

    #[test]
    fn one_cache_covers_every_namespace() {
        let (_, store) = store_of("a", &["x"]);
        let lister = Lister::new(store);
        assert!(lister.covers(Some("zzz")) && lister.covers(None));
        assert_eq!(lister.namespaces(), None);
        assert!(lister.try_get("zzz/x").unwrap().is_none());
        assert!(lister.try_namespace("zzz").unwrap().get("x").is_none());
    }
}
