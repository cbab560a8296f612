//! Indexers: secondary indexes over a [`Store`](super::Store) (client-go's `Indexers` / `Indices`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use super::Key;
use crate::object::{MetaAccessor, Object};

/// The name of the namespace index every informer store has (client-go's `NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// The name of the index by controller: the uid of an object's controller reference (the owner reference with
/// `controller: true`). [`ControllerBuilder::owns`](crate::controller::ControllerBuilder::owns) adds it to the
/// caches of the objects a controller owns; [`Lister::controlled_by`](super::Lister::controlled_by) and
/// [`Context::owned`](crate::controller::Context::owned) read it.
pub const CONTROLLER_INDEX: &str = "kube-informer.io/controller-uid";

/// An index function: the index values of an object (none, one or several).
pub type IndexFunc<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Named index functions.
///
/// ```
/// use kube_informer::cache::Indexers;
/// use kube_informer::object::{core::ConfigMap, MetaAccessor, Object};
///
/// let indexers = Indexers::<ConfigMap>::new()
///     .with("by-app", |cm: &ConfigMap| cm.meta().labels().get("app").map(str::to_owned).into_iter().collect());
/// assert_eq!(indexers.names().collect::<Vec<_>>(), ["by-app"]);
/// ```
pub struct Indexers<K> {
    funcs: BTreeMap<String, IndexFn<K>>,
}

/// An index function as the store runs it.
pub(crate) enum IndexFn<K> {
    /// Exactly one value per object, borrowed from it (the namespace index): an update computes it without
    /// allocating.
    Single(for<'a> fn(&'a K) -> &'a str),
    /// A user's function (none, one or several values).
    Multi(IndexFunc<K>),
}

impl<K> IndexFn<K> {
    /// The index values of `obj`.
    pub(crate) fn values(&self, obj: &K) -> Vec<String> {
        match self {
            IndexFn::Single(f) => vec![f(obj).to_owned()],
            IndexFn::Multi(f) => f(obj),
        }
    }
}

impl<K> Clone for IndexFn<K> {
    fn clone(&self) -> Self {
        match self {
            IndexFn::Single(f) => IndexFn::Single(*f),
            IndexFn::Multi(f) => IndexFn::Multi(f.clone()),
        }
    }
}

impl<K> Indexers<K> {
    /// No indexers.
    pub fn new() -> Self {
        Indexers { funcs: BTreeMap::new() }
    }

    /// Adds an index function under `name` (builder style). A second function under a name already taken adds
    /// to it: the index then holds the values of both, so an object is found under either's — the first is never
    /// lost.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) -> Self
    where
        K: 'static,
    {
        let name = name.into();
        let f = match self.funcs.remove(&name) {
            None => IndexFn::Multi(Arc::new(f)),
            Some(before) => IndexFn::Multi(Arc::new(move |obj: &K| {
                let mut values = before.values(obj);
                values.extend(f(obj));
                values
            })),
        };
        self.funcs.insert(name, f);
        self
    }

    /// The index names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.funcs.keys().map(String::as_str)
    }

    /// True when there are no indexers.
    pub fn is_empty(&self) -> bool {
        self.funcs.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &IndexFn<K>)> {
        self.funcs.iter()
    }

    pub(crate) fn get(&self, name: &str) -> Option<&IndexFn<K>> {
        self.funcs.get(name)
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }

    pub(crate) fn insert(&mut self, name: String, f: IndexFn<K>) {
        self.funcs.insert(name, f);
    }
}

impl<K: Object> Indexers<K> {
    /// The namespace indexer alone (what informer stores start with).
    pub fn namespace() -> Self {
        Indexers::new().with_namespace()
    }

    /// Adds the namespace indexer under [`NAMESPACE_INDEX`] (the same values as [`namespace_index_func`], computed
    /// without allocating on each update).
    #[must_use]
    pub fn with_namespace(mut self) -> Self {
        self.funcs
            .insert(NAMESPACE_INDEX.to_owned(), IndexFn::Single(namespace_of::<K>));
        self
    }
}

impl<K: Object> Indexers<K> {
    /// Adds the index by controller under [`CONTROLLER_INDEX`] ([`controller_index_func`]).
    #[must_use]
    pub fn with_controller(self) -> Self {
        self.with(CONTROLLER_INDEX, controller_index_func::<K>)
    }
}

/// Indexes an object by the uid of its controller (none when it has no controller reference), as
/// [`is_controlled_by`](crate::object::is_controlled_by) compares: a re-created owner of the same name does not find
/// its predecessor's objects.
pub fn controller_index_func<K: Object>(obj: &K) -> Vec<String> {
    obj.meta()
        .owner_references()
        .iter()
        .find(|r| r.is_controller() && !r.uid.is_empty())
        .map(|r| r.uid.to_string())
        .into_iter()
        .collect()
}

/// The namespace index value of an object: its namespace, or "" for a cluster-scoped one.
fn namespace_of<K: Object>(obj: &K) -> &str {
    obj.meta().namespace().unwrap_or("")
}

impl<K> Default for Indexers<K> {
    fn default() -> Self {
        Indexers::new()
    }
}

impl<K> Clone for Indexers<K> {
    fn clone(&self) -> Self {
        Indexers {
            funcs: self.funcs.clone(),
        }
    }
}

impl<K> fmt::Debug for Indexers<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.funcs.keys()).finish()
    }
}

/// Indexes an object by its namespace (client-go's `MetaNamespaceIndexFunc`: cluster-scoped objects index as "").
pub fn namespace_index_func<K: Object>(obj: &K) -> Vec<String> {
    vec![obj.meta().namespace().unwrap_or("").to_owned()]
}

/// One index: index value → keys of the objects having it.
///
/// Invariant: no value maps to an empty set (empty sets are removed), so `values()` lists only live values.
#[derive(Debug, Default)]
pub(crate) struct Index {
    sets: HashMap<String, HashSet<Key>>,
}

impl Index {
    pub(crate) fn insert(&mut self, value: &str, key: &Key) {
        match self.sets.get_mut(value) {
            Some(set) => {
                set.insert(key.clone());
            }
            None => {
                self.sets.insert(value.to_owned(), HashSet::from([key.clone()]));
            }
        }
    }

    pub(crate) fn remove(&mut self, value: &str, key: &str) {
        if let Some(set) = self.sets.get_mut(value) {
            set.remove(key);
            if set.is_empty() {
                self.sets.remove(value);
            }
        }
    }

    pub(crate) fn keys(&self, value: &str) -> impl Iterator<Item = &Key> {
        self.sets.get(value).into_iter().flatten()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &String> {
        self.sets.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectMeta;
    use crate::object::core::ConfigMap;

    fn label(key: &'static str) -> impl Fn(&ConfigMap) -> Vec<String> + Send + Sync + 'static {
        move |cm: &ConfigMap| cm.meta().labels().get(key).map(str::to_owned).into_iter().collect()
    }

    #[test]
    fn a_second_function_under_a_name_adds_to_the_first() {
        let mut meta = ObjectMeta::namespaced("ns", "a");
        meta.labels.insert("app".into(), "web".into());
        meta.labels.insert("team".into(), "blue".into());
        let cm = ConfigMap::new(meta);
        let indexers = Indexers::new().with("by", label("app")).with("by", label("team"));
        assert_eq!(indexers.names().collect::<Vec<_>>(), ["by"]);
        assert_eq!(indexers.get("by").unwrap().values(&cm), ["web", "blue"]);
        // The namespace index, extended the same way, keeps its own value.
        let indexers = Indexers::namespace().with(NAMESPACE_INDEX, label("team"));
        assert_eq!(indexers.get(NAMESPACE_INDEX).unwrap().values(&cm), ["ns", "blue"]);
    }
}
