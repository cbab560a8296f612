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
/// assert_eq!(lister.namespace("dev").list(&Selector::everything()).len(), 1);
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
