//! The thread-safe indexed store (client-go's `threadSafeMap` + `Indexer`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::index::{Index, IndexFn, Indexers};
use super::{Key, KnownObjects};
use crate::error::Error;
use crate::object::{Object, key_of};

/// A thread-safe map of key → `Arc<K>` with secondary indexes, updated atomically with the items.
///
/// Objects are immutable once stored: readers get `Arc<K>` clones, never copies. Only the informer writes to its
/// store; everybody else reads (listers, handlers, controllers).
///
/// ```
/// use std::sync::Arc;
/// use kube_informer::cache::{Indexers, Store, NAMESPACE_INDEX};
/// use kube_informer::object::{core::ConfigMap, ObjectMeta};
///
/// let store = Store::new(Indexers::namespace());
/// store.add(Arc::new(ConfigMap::new(ObjectMeta::namespaced("prod", "a"))));
/// store.add(Arc::new(ConfigMap::new(ObjectMeta::namespaced("dev", "b"))));
/// assert_eq!(store.len(), 2);
/// assert!(store.get("prod/a").is_some());
/// assert_eq!(store.by_index(NAMESPACE_INDEX, "dev").unwrap().len(), 1);
/// ```
pub struct Store<K> {
    inner: RwLock<StoreInner<K>>,
    /// Calls of `known_key_waiting` begun (tests see one start while a writer holds the store, without timing).
    #[cfg(test)]
    waiting_lookups: std::sync::atomic::AtomicUsize,
}

/// The store's state; reachable only through the store's lock.
pub(crate) struct StoreInner<K> {
    /// Invariant: every key here is in exactly the index entries its object's index functions return, and nowhere
    /// else (`indices` mirrors `items` through `indexers` at every moment the lock is released).
    items: HashMap<Key, Arc<K>>,
    indexers: Indexers<K>,
    /// Invariant: one `Index` per indexer name.
    indices: HashMap<String, Index>,
}

impl<K> Store<K> {
    /// An empty store with the given indexers.
    pub fn new(indexers: Indexers<K>) -> Self {
        let indices = indexers.names().map(|n| (n.to_owned(), Index::default())).collect();
        Store {
            inner: RwLock::new(StoreInner {
                items: HashMap::new(),
                indexers,
                indices,
            }),
            #[cfg(test)]
            waiting_lookups: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, StoreInner<K>> {
        self.inner.read()
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, StoreInner<K>> {
        self.inner.write()
    }

    /// Inserts or replaces the object under `key`, returning the previous one.
    pub fn put(&self, key: Key, obj: Arc<K>) -> Option<Arc<K>> {
        self.write().put(key, obj)
    }

    /// Removes the object under `key`, returning it.
    pub fn delete(&self, key: &str) -> Option<Arc<K>> {
        self.write().delete(key)
    }

    /// The object under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.read().items.get(key).cloned()
    }

    /// Every object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.read().items.values().cloned().collect()
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<Key> {
        self.read().items.keys().cloned().collect()
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.read().items.len()
    }

    /// True when the store holds nothing.
    pub fn is_empty(&self) -> bool {
        self.read().items.is_empty()
    }

    /// Replaces the whole content atomically (indexes rebuilt under the same lock).
    pub fn replace(&self, items: impl IntoIterator<Item = (Key, Arc<K>)>) {
        let mut inner = self.write();
        inner.items.clear();
        for index in inner.indices.values_mut() {
            *index = Index::default();
        }
        for (k, v) in items {
            inner.put(k, v);
        }
    }

    /// Objects sharing an index value with `obj` for index `name` (client-go's `Index`).
    ///
    /// # Errors
    /// When no index is named `name`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, Error> {
        let inner = self.read();
        let f = inner.indexer(name)?;
        let mut keys: HashSet<&Key> = HashSet::new();
        let index = &inner.indices[name];
        for value in f.values(obj) {
            keys.extend(index.keys(&value));
        }
        Ok(keys.into_iter().map(|k| inner.items[k].clone()).collect())
    }

    /// Objects whose index `name` includes `value`.
    ///
    /// # Errors
    /// When no index is named `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, Error> {
        self.by_index_filtered(name, value, |_| true)
    }

    /// Like [`by_index`](Store::by_index), keeping only the objects `keep` accepts (tested under the lock, so only
    /// those are cloned out).
    pub(crate) fn by_index_filtered(
        &self,
        name: &str,
        value: &str,
        keep: impl Fn(&K) -> bool,
    ) -> Result<Vec<Arc<K>>, Error> {
        let inner = self.read();
        inner.indexer(name)?;
        Ok(inner.indices[name]
            .keys(value)
            .map(|k| &inner.items[k])
            .filter(|o| keep(o))
            .cloned()
            .collect())
    }

    /// The objects `keep` accepts, in any order.
    pub(crate) fn filtered(&self, keep: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.read().items.values().filter(|o| keep(o)).cloned().collect()
    }

    /// Keys of the objects whose index `name` includes `value`.
    ///
    /// # Errors
    /// When no index is named `name`.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<Key>, Error> {
        let inner = self.read();
        inner.indexer(name)?;
        Ok(inner.indices[name].keys(value).cloned().collect())
    }

    /// Every value index `name` currently has (empty for an unknown index, as client-go).
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        let inner = self.read();
        inner
            .indices
            .get(name)
            .map(|i| i.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Adds indexers; their indexes are built from the objects already stored.
    ///
    /// # Errors
    /// When a name conflicts with an existing indexer (nothing is added then).
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), Error> {
        let mut inner = self.write();
        if let Some(dup) = indexers.names().find(|n| inner.indexers.contains(n)) {
            return Err(Error::InvalidInput(format!("indexer conflict: {dup:?} already exists")));
        }
        for (name, f) in indexers.iter() {
            let mut index = Index::default();
            for (k, obj) in &inner.items {
                for value in f.values(obj) {
                    index.insert(&value, k);
                }
            }
            inner.indices.insert(name.clone(), index);
            inner.indexers.insert(name.clone(), f.clone());
        }
        Ok(())
    }

    /// The names of the indexes.
    pub fn index_names(&self) -> Vec<String> {
        self.read().indexers.names().map(str::to_owned).collect()
    }
}

impl<K: Object> Store<K> {
    /// Inserts or replaces `obj` under its own key ([`key_of`]).
    pub fn add(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let key: Key = key_of(&*obj).into();
        self.put(key, obj)
    }
}

impl<K> Default for Store<K> {
    fn default() -> Self {
        Store::new(Indexers::new())
    }
}

impl<K> StoreInner<K> {
    fn indexer(&self, name: &str) -> Result<&IndexFn<K>, Error> {
        self.indexers
            .get(name)
            .ok_or_else(|| Error::InvalidInput(format!("index with name {name:?} does not exist")))
    }

    /// Inserts or replaces, keeping every index in step.
    pub(crate) fn put(&mut self, key: Key, obj: Arc<K>) -> Option<Arc<K>> {
        let old = self.items.insert(key.clone(), obj.clone());
        self.update_indices(&key, old.as_deref(), Some(&obj));
        old
    }

    /// Removes, keeping every index in step.
    pub(crate) fn delete(&mut self, key: &str) -> Option<Arc<K>> {
        let (key, old) = self.items.remove_entry(key)?;
        self.update_indices(&key, Some(&old), None);
        Some(old)
    }

    fn update_indices(&mut self, key: &Key, old: Option<&K>, new: Option<&K>) {
        for (name, f) in self.indexers.iter() {
            let index = self.indices.get_mut(name).expect("one index per indexer");
            match f {
                IndexFn::Single(f) => {
                    let (old_value, new_value) = (old.map(f), new.map(f));
                    // The common update keeps its value: nothing to move.
                    if old_value == new_value {
                        continue;
                    }
                    if let Some(v) = old_value {
                        index.remove(v, key);
                    }
                    if let Some(v) = new_value {
                        index.insert(v, key);
                    }
                }
                IndexFn::Multi(f) => {
                    let old_values = old.map(|o| f(o)).unwrap_or_default();
                    let new_values = new.map(|n| f(n)).unwrap_or_default();
                    if old_values == new_values && old.is_some() && new.is_some() {
                        continue;
                    }
                    for v in old_values.iter().filter(|v| !new_values.contains(v)) {
                        index.remove(v, key);
                    }
                    for v in &new_values {
                        index.insert(v, key);
                    }
                }
            }
        }
    }
}

impl<K: Send + Sync> KnownObjects<K> for Store<K> {
    fn known_keys(&self) -> Vec<Key> {
        self.list_keys()
    }

    fn known_object(&self, key: &str) -> Option<Arc<K>> {
        self.get(key)
    }

    /// `None` also while a writer holds the store: the queue calls this under its own lock, for every event, and
    /// waiting there for the processing thread to finish writing a batch would hold up that thread's next pop (a
    /// key of its own only costs the queue an allocation).
    fn known_key(&self, key: &str) -> Option<Key> {
        let inner = self.inner.try_read()?;
        inner.items.get_key_value(key).map(|(k, _)| k.clone())
    }

    /// Waits for a writer: the processing thread holds the store for one batch at a time.
    fn known_key_waiting(&self, key: &str) -> Option<Key> {
        #[cfg(test)]
        self.waiting_lookups.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.read().items.get_key_value(key).map(|(k, _)| k.clone())
    }

    fn known_objects(&self) -> Vec<(Key, Arc<K>)> {
        self.read().items.iter().map(|(k, o)| (k.clone(), o.clone())).collect()
    }

    fn known_objects_except(&self, listed: &dyn Fn(&str) -> bool) -> Vec<(Key, Arc<K>)> {
        let inner = self.read();
        inner
            .items
            .iter()
            .filter(|(k, _)| !listed(k))
            .map(|(k, o)| (k.clone(), o.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::NAMESPACE_INDEX;
    use crate::object::core::ConfigMap;
    use crate::object::{MetaAccessor, ObjectMeta};
    use std::sync::atomic::Ordering;

    fn cm(ns: &str, name: &str, labels: &[(&str, &str)]) -> Arc<ConfigMap> {
        let mut m = ObjectMeta::namespaced(ns, name);
        m.labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Arc::new(ConfigMap::new(m))
    }

    fn by_label(key: &'static str) -> impl Fn(&ConfigMap) -> Vec<String> + Send + Sync {
        move |o: &ConfigMap| {
            o.meta()
                .labels()
                .get(key)
                .map(|v| v.split(',').map(str::to_owned).collect())
                .unwrap_or_default()
        }
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    fn names(objs: Vec<Arc<ConfigMap>>) -> Vec<String> {
        sorted(objs.iter().map(|o| o.metadata.name.clone().unwrap()).collect())
    }

    #[test]
    fn known_key_shares_the_stored_key_and_never_waits_for_a_writer() {
        let store = Arc::new(Store::new(Indexers::new()));
        store.add(cm("ns", "a", &[]));
        let stored = store.known_key("ns/a").unwrap();
        assert!(Arc::ptr_eq(&stored, &store.list_keys()[0]), "the store's own key");
        assert!(store.known_key("ns/b").is_none());
        // While a writer holds the store (the processing thread writing a batch), the queue gets `None` at once.
        let writing = store.write();
        let (tx, rx) = crossbeam_channel::bounded(1);
        let asker = Arc::clone(&store);
        std::thread::spawn(move || tx.send(asker.known_key("ns/a")));
        let answer = rx.recv_timeout(std::time::Duration::from_secs(10));
        drop(writing);
        assert_eq!(answer, Ok(None), "answered without waiting for the writer");
        assert!(store.known_key("ns/a").is_some());
    }

    #[test]
    fn a_relist_waits_for_a_writer_to_share_the_stored_key() {
        let store = Arc::new(Store::new(Indexers::new()));
        store.add(cm("ns", "a", &[]));
        let a = store.list_keys()[0].clone();
        assert!(store.known_key_waiting("ns/b").is_none());
        assert!(
            Arc::ptr_eq(&store.known_key_waiting("ns/a").unwrap(), &a),
            "the store's own key"
        );
        // The processing thread holds the store for a batch that adds ns/b. A lookup begun meanwhile waits for the
        // batch and answers with the key the batch stored: one that answered at once (as `known_key` does) would
        // find no ns/b, so the relist would hold a copy of the key beside the store's.
        let mut writing = store.write();
        let asker = Arc::clone(&store);
        let lookups = store.waiting_lookups.load(Ordering::SeqCst);
        let answer = std::thread::spawn(move || asker.known_key_waiting("ns/b"));
        let begun = || store.waiting_lookups.load(Ordering::SeqCst) > lookups;
        crate::cache::fifo_test_support::yield_until(begun, "the lookup begins");
        // The lookup has begun, and the batch is still being written.
        let b: Key = "ns/b".into();
        writing.put(b.clone(), cm("ns", "b", &[]));
        drop(writing);
        let answer = answer
            .join()
            .unwrap()
            .expect("the lookup waited for the batch that stored ns/b");
        assert!(Arc::ptr_eq(&answer, &b), "the key the batch stored, not a copy");
    }

    #[test]
    fn the_objects_a_relist_lacks_are_read_in_one_pass() {
        let store = Store::new(Indexers::new());
        for name in ["a", "b", "c"] {
            store.add(cm("ns", name, &[]));
        }
        let missing = store.known_objects_except(&|k| k != "ns/b");
        assert_eq!(missing.len(), 1);
        assert_eq!(
            (&*missing[0].0, missing[0].1.metadata.name.as_deref()),
            ("ns/b", Some("b"))
        );
        assert!(Arc::ptr_eq(&missing[0].1, &store.get("ns/b").unwrap()));
    }

    // Cases from client-go's thread_safe_store_test.go and index_test.go: updates move an object between index
    // values, deletes remove it, multi-value index functions, and indexers added later.
    #[test]
    fn updates_move_objects_between_index_values() {
        let store = Store::new(Indexers::namespace().with("users", by_label("users")));
        store.add(cm("ns", "one", &[("users", "ernie,bert")]));
        store.add(cm("ns", "two", &[("users", "bert,oscar")]));
        store.add(cm("ns", "tre", &[("users", "ernie,elmo")]));
        assert_eq!(names(store.by_index("users", "ernie").unwrap()), ["one", "tre"]);
        assert_eq!(names(store.by_index("users", "bert").unwrap()), ["one", "two"]);
        assert_eq!(
            sorted(store.list_index_func_values("users")),
            ["bert", "elmo", "ernie", "oscar"]
        );

        store.add(cm("ns", "one", &[("users", "elmo")]));
        assert_eq!(names(store.by_index("users", "ernie").unwrap()), ["tre"]);
        assert_eq!(names(store.by_index("users", "elmo").unwrap()), ["one", "tre"]);
        assert_eq!(names(store.by_index("users", "bert").unwrap()), ["two"]);

        store.delete("ns/tre");
        assert_eq!(names(store.by_index("users", "elmo").unwrap()), ["one"]);
        // Values whose last object left are gone from the index.
        assert_eq!(sorted(store.list_index_func_values("users")), ["bert", "elmo", "oscar"]);
        assert_eq!(
            names(
                store
                    .index("users", &cm("x", "probe", &[("users", "oscar,elmo")]))
                    .unwrap()
            ),
            ["one", "two"]
        );
        assert!(store.by_index("missing", "x").is_err());
        assert!(store.index_keys("missing", "x").is_err());
        assert!(store.list_index_func_values("missing").is_empty());
    }

    #[test]
    fn indexers_added_later_index_existing_objects() {
        let store = Store::new(Indexers::namespace());
        store.add(cm("a", "x", &[("app", "web")]));
        store.add(cm("b", "y", &[("app", "db")]));
        store
            .add_indexers(Indexers::new().with("app", by_label("app")))
            .unwrap();
        assert_eq!(names(store.by_index("app", "web").unwrap()), ["x"]);
        store.add(cm("c", "z", &[("app", "web")]));
        assert_eq!(names(store.by_index("app", "web").unwrap()), ["x", "z"]);
        let dup = store.add_indexers(Indexers::new().with(NAMESPACE_INDEX, by_label("app")));
        assert!(dup.is_err());
        assert_eq!(sorted(store.index_names()), ["app", "namespace"]);
    }

    #[test]
    fn replace_rebuilds_items_and_indexes_atomically() {
        let store = Store::new(Indexers::namespace());
        store.add(cm("a", "x", &[]));
        store.add(cm("b", "y", &[]));
        store.replace([("c/z".into(), cm("c", "z", &[]))]);
        assert_eq!(store.list_keys(), vec![Key::from("c/z")]);
        assert!(store.by_index(NAMESPACE_INDEX, "a").unwrap().is_empty());
        assert_eq!(store.index_keys(NAMESPACE_INDEX, "c").unwrap(), vec![Key::from("c/z")]);
        assert_eq!(sorted(store.list_index_func_values(NAMESPACE_INDEX)), ["c"]);
    }

    #[test]
    fn the_built_in_namespace_index_matches_namespace_index_func() {
        use crate::cache::namespace_index_func;
        let fast = Store::new(Indexers::namespace());
        let generic = Store::new(Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<ConfigMap>));
        let cluster = || Arc::new(ConfigMap::new(ObjectMeta::named("c")));
        for store in [&fast, &generic] {
            store.add(cm("a", "x", &[]));
            store.add(cm("a", "y", &[]));
            store.add(cm("b", "x", &[]));
            store.add(cluster());
            store.add(cm("a", "x", &[("v", "2")]));
            // The same key under another namespace (a custom key function could do this): the object moves.
            store.put("a/y".into(), cm("b", "y", &[]));
            store.delete("b/x");
        }
        for store in [&fast, &generic] {
            assert_eq!(names(store.by_index(NAMESPACE_INDEX, "a").unwrap()), ["x"]);
            assert_eq!(names(store.by_index(NAMESPACE_INDEX, "b").unwrap()), ["y"]);
            assert_eq!(names(store.by_index(NAMESPACE_INDEX, "").unwrap()), ["c"]);
            assert_eq!(sorted(store.list_index_func_values(NAMESPACE_INDEX)), ["", "a", "b"]);
            assert_eq!(
                names(store.index(NAMESPACE_INDEX, &cm("a", "probe", &[])).unwrap()),
                ["x"]
            );
        }
    }

    #[test]
    fn objects_are_shared_not_copied() {
        let store = Store::new(Indexers::namespace());
        let v1 = cm("a", "x", &[]);
        store.add(v1.clone());
        assert!(Arc::ptr_eq(&store.get("a/x").unwrap(), &v1));
        let v2 = cm("a", "x", &[("v", "2")]);
        assert!(Arc::ptr_eq(&store.add(v2.clone()).unwrap(), &v1));
        assert!(Arc::ptr_eq(&store.delete("a/x").unwrap(), &v2));
        assert!(store.get("a/x").is_none() && store.is_empty());
    }
}
