//! Listers: read-only, selector-aware views of an informer's cache (client-go's generated listers).

use std::sync::Arc;

use super::{NAMESPACE_INDEX, Store};
use crate::object::{MetaAccessor, Object, make_key};
use crate::selector::Selector;

/// Reads objects from a cache.
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
/// assert_eq!(lister.list_all().len(), 2);
/// ```
pub struct Lister<K> {
    store: Arc<Store<K>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            store: self.store.clone(),
        }
    }
}

impl<K: Object> Lister<K> {
    /// A lister over `store`.
    pub fn new(store: Arc<Store<K>>) -> Self {
        Lister { store }
    }

    /// Every cached object matching `selector`, in any namespace.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.store
            .filtered(|o| selector.is_empty() || selector.matches(o.meta().labels()))
    }

    /// Every cached object, in any namespace.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.store.list()
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
        self.store
            .by_index(super::CONTROLLER_INDEX, uid)
            .unwrap_or_else(|_| self.store.filtered(|o| crate::object::is_controlled_by(o, owner)))
    }

    /// The object named `name` of a cluster-scoped resource (or the object with that full key).
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.store.get(name)
    }

    /// A view of one namespace.
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            store: self.store.clone(),
            namespace: namespace.to_owned(),
        }
    }
}

/// Reads the objects of one namespace from a cache.
pub struct NamespaceLister<K> {
    store: Arc<Store<K>>,
    namespace: String,
}

impl<K: Object> NamespaceLister<K> {
    /// The object `name` in this namespace.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.store.get(&make_key(Some(&self.namespace), name))
    }

    /// Every cached object of this namespace.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.list(&Selector::everything())
    }

    /// The objects of this namespace matching `selector` (through the namespace index when present).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let matches = |o: &K| selector.is_empty() || selector.matches(o.meta().labels());
        self.store
            .by_index_filtered(NAMESPACE_INDEX, &self.namespace, matches)
            .unwrap_or_else(|_| {
                let ns = Some(self.namespace.as_str());
                self.store.filtered(|o| o.meta().namespace() == ns && matches(o))
            })
    }
}
