//! `ObjectRef<K>`: a typed reference to an object by namespace and name — what a controller's mappers return.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use super::{MetaAccessor, Object, Resource, make_key};

/// A reference to an object of type `K` by name (and namespace, for a namespaced resource): what
/// [`ControllerBuilder::watches`](crate::controller::ControllerBuilder::watches) mappers return, so that a mapper
/// cannot name an object of the wrong kind or build a malformed key.
///
/// ```
/// use kube_informer::object::core::ConfigMap;
/// use kube_informer::object::{ObjectMeta, ObjectRef};
///
/// let r = ObjectRef::<ConfigMap>::new("settings").within("prod");
/// assert_eq!(r.to_string(), "prod/settings");
/// let cm = ConfigMap::new(ObjectMeta::namespaced("prod", "settings"));
/// assert_eq!(ObjectRef::from_obj(&cm), r);
/// ```
pub struct ObjectRef<K> {
    /// The object's name.
    pub name: String,
    /// The object's namespace; `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    _kind: PhantomData<fn() -> K>,
}

impl<K> ObjectRef<K> {
    /// A reference to the object `name` (cluster-scoped, or in a namespace given by [`within`](Self::within)).
    pub fn new(name: impl Into<String>) -> Self {
        ObjectRef {
            name: name.into(),
            namespace: None,
            _kind: PhantomData,
        }
    }

    /// The same reference in `namespace`.
    #[must_use]
    pub fn within(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// The cache key: `namespace/name`, or `name`.
    pub fn key(&self) -> String {
        make_key(self.namespace.as_deref(), &self.name)
    }

    /// The same name and namespace, as a reference to another type (the same resource read as another type, such
    /// as a `DynamicObject`).
    pub fn cast<T>(self) -> ObjectRef<T> {
        ObjectRef {
            name: self.name,
            namespace: self.namespace,
            _kind: PhantomData,
        }
    }
}

impl<K: Object> ObjectRef<K> {
    /// The reference to `obj` (its name and namespace).
    pub fn from_obj(obj: &K) -> Self {
        let meta = obj.meta();
        ObjectRef {
            name: meta.name().unwrap_or_default().to_owned(),
            namespace: meta.namespace().filter(|ns| !ns.is_empty()).map(str::to_owned),
            _kind: PhantomData,
        }
    }
}

impl<K: Resource> ObjectRef<K> {
    /// The object of type `K` controlling `obj`: its owner reference with `controller: true` (there is at most one)
    /// when that reference's kind and API group are `K`'s (the version may differ). A namespaced owner is in its
    /// dependent's namespace.
    ///
    /// ```
    /// use kube_informer::object::core::{ConfigMap, Namespace};
    /// use kube_informer::object::{ObjectMeta, ObjectRef, OwnerReference};
    ///
    /// let mut meta = ObjectMeta::namespaced("team-a", "settings");
    /// meta.owner_references.push(OwnerReference {
    ///     api_version: "v1".into(),
    ///     kind: "Namespace".into(),
    ///     name: "team-a".into(),
    ///     uid: "6f1c".into(),
    ///     controller: Some(true),
    ///     block_owner_deletion: None,
    /// });
    /// let cm = ConfigMap::new(meta);
    /// assert_eq!(ObjectRef::<Namespace>::controller_of(&cm), Some(ObjectRef::new("team-a")));
    /// assert_eq!(ObjectRef::<ConfigMap>::controller_of(&cm), None);
    /// ```
    pub fn controller_of<S: Object>(obj: &S) -> Option<Self> {
        crate::object::owner::controller_ref_of(obj, &K::api_resource()).map(ObjectRef::cast)
    }
}

impl<K> Clone for ObjectRef<K> {
    fn clone(&self) -> Self {
        ObjectRef {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K> PartialEq for ObjectRef<K> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.namespace == other.namespace
    }
}

impl<K> Eq for ObjectRef<K> {}

impl<K> Hash for ObjectRef<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.namespace.hash(state);
    }
}

impl<K> fmt::Display for ObjectRef<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        f.write_str(&self.name)
    }
}

impl<K> fmt::Debug for ObjectRef<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectRef")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .finish()
    }
}
