//! The object model: metadata, statuses, resources and the traits an informer's object type implements.
//!
//! * [`Object`]: anything with Kubernetes metadata that serde can read and write. Implement it for your own structs
//!   with [`object!`](crate::object!), use [`DynamicObject`] for any resource known only at run time, or enable the
//!   `k8s-openapi` feature to use k8s-openapi's types. [`PartialObjectMetadata<K>`](PartialObjectMetadata) is an
//!   object of `K`'s resource as its metadata alone, which the API server is asked to send instead of the object.
//! * [`Resource`]: an [`Object`] that knows its [`ApiResource`] statically (group, version, kind, plural, scope).
//! * [`MetaAccessor`]: what generic code reads from metadata, whichever struct holds it.
//! * Key functions: [`key_of`] (`namespace/name`, or `name` when cluster-scoped) and [`split_key`].
//!
//! ```
//! use kube_informer::object::{key_of, ObjectMeta, Resource};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Widget {
//!     metadata: ObjectMeta,
//!     spec: WidgetSpec,
//! }
//! #[derive(Serialize, Deserialize)]
//! struct WidgetSpec {
//!     size: u32,
//! }
//! kube_informer::object!(Widget, group: "example.com", version: "v1", kind: "Widget", plural: "widgets",
//!                        namespaced: true);
//!
//! let w = Widget { metadata: ObjectMeta::namespaced("prod", "w1"), spec: WidgetSpec { size: 3 } };
//! assert_eq!(key_of(&w), "prod/w1");
//! assert_eq!(Widget::api_resource().collection_path(Some("prod")), "/apis/example.com/v1/namespaces/prod/widgets");
//! ```

use std::borrow::Cow;

use serde::Serialize;
use serde::de::DeserializeOwned;

mod api_resource;
pub mod core;
mod custom_resource;
mod dynamic;
#[cfg(test)]
mod in_place_tests;
pub(crate) mod interner;
#[cfg(feature = "k8s-openapi")]
mod k8s_openapi_impl;
pub(crate) mod lending;
mod list;
mod managed_fields;
mod meta;
mod object_ref;
pub(crate) mod owner;
mod partial;
mod raw;
mod scale;
mod status;
mod string_map;
pub mod time;

pub use api_resource::ApiResource;
pub use custom_resource::{
    CrdOptions, CustomResource, NoStatus, PrinterColumn, ScaleSubresource, ValidationRule, plural_of,
};
#[doc(hidden)]
pub use custom_resource::{deserialize_root as __deserialize_root, serialize_root as __serialize_root};
pub use dynamic::DynamicObject;
pub use list::ObjectList;
pub use managed_fields::{ManagedFields, ManagedFieldsEntry};
pub use meta::{ListMeta, ObjectMeta, OwnerReference, ShardInfo, TypeMeta};
pub use object_ref::ObjectRef;
pub use owner::{
    OwnerReferenceError, OwnerRefs, adopt, adopt_with, controller_of, is_controlled_by, remove_owner_reference,
    set_controller_reference, set_controller_reference_with, set_owner_reference, set_owner_reference_with,
};
pub use partial::PartialObjectMetadata;
pub use raw::RawJson;
pub use scale::{Scale, ScaleSpec, ScaleStatus};
pub use status::{Status, StatusCause, StatusDetails};
pub use string_map::{Iter as StringMapIter, StrMap, StringMap};

/// A Kubernetes object: serde-readable and -writable, with standard metadata.
///
/// Objects are immutable once in a cache: informers hand them out as `Arc<K>`, shared by every handler and lister.
pub trait Object: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The struct holding the metadata: [`ObjectMeta`] for this crate's types and your own.
    type Meta: MetaAccessor;

    /// What the API server is asked to send for objects of this type: whole objects (the default), or their
    /// metadata alone ([`PartialObjectMetadata`]). Set it to [`Representation::Metadata`] only for a type that reads
    /// nothing but `metadata`: such a type cannot be created or replaced through an [`Api`](crate::client::Api).
    const REPRESENTATION: Representation = Representation::Full;

    /// The object's metadata.
    fn meta(&self) -> &Self::Meta;

    /// The object's metadata, mutably.
    fn meta_mut(&mut self) -> &mut Self::Meta;
}

/// What the API server sends for the objects of a type ([`Object::REPRESENTATION`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Representation {
    /// The whole object, as stored.
    Full,
    /// The object's metadata alone, as `PartialObjectMetadata` (kube-apiserver's conversion
    /// `as=PartialObjectMetadata;g=meta.k8s.io;v=v1`, and `as=PartialObjectMetadataList` for lists).
    Metadata,
}

/// An [`Object`] whose resource is known at compile time.
pub trait Resource: Object {
    /// Group, version, kind, plural and scope of this type.
    fn api_resource() -> ApiResource;
}

/// A [`Resource`] whose objects live in namespaces: its objects always have one, so what is read of them needs no
/// `Option` ([`Context::namespace`](crate::controller::Context::namespace)). [`object!`](crate::object!) and
/// [`custom_resource!`](crate::custom_resource!) implement it for `namespaced: true`; k8s-openapi's namespaced types
/// have it with the `k8s-openapi` feature.
pub trait NamespacedResource: Resource {}

/// Read and write access to standard metadata, whichever struct holds it.
pub trait MetaAccessor {
    /// `metadata.name`.
    fn name(&self) -> Option<&str>;
    /// `metadata.namespace`.
    fn namespace(&self) -> Option<&str>;
    /// `metadata.uid`.
    fn uid(&self) -> Option<&str>;
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
    /// `metadata.generation`.
    fn generation(&self) -> Option<i64>;
    /// `metadata.labels` (empty when absent).
    fn labels(&self) -> &dyn StrMap;
    /// `metadata.annotations` (empty when absent).
    fn annotations(&self) -> &dyn StrMap;
    /// `metadata.ownerReferences`.
    fn owner_references(&self) -> Cow<'_, [OwnerReference]>;
    /// `metadata.finalizers`.
    fn finalizers(&self) -> &[String];
    /// True when `metadata.deletionTimestamp` is set.
    fn is_being_deleted(&self) -> bool;
    /// Sets `metadata.name`.
    fn set_name(&mut self, name: String);
    /// Sets `metadata.namespace`.
    fn set_namespace(&mut self, namespace: Option<String>);
    /// Sets `metadata.resourceVersion`.
    fn set_resource_version(&mut self, rv: Option<String>);
    /// `metadata.labels`, mutably (created when absent).
    fn labels_mut(&mut self) -> &mut dyn StrMap;
    /// `metadata.annotations`, mutably (created when absent).
    fn annotations_mut(&mut self) -> &mut dyn StrMap;
    /// Drops `metadata.managedFields` (server-side-apply bookkeeping, ~40% of a typical object's JSON; in a cache of
    /// this crate's types, where entries are shared between objects, far less of its memory).
    fn clear_managed_fields(&mut self);
    /// Replaces `metadata.ownerReferences`.
    fn set_owner_references(&mut self, refs: Vec<OwnerReference>);
    /// `metadata.finalizers`, mutably (created when absent).
    fn finalizers_mut(&mut self) -> &mut Vec<String>;
}

/// The empty map returned for absent labels and annotations (k8s-openapi metadata keeps them as `Option`).
#[cfg(feature = "k8s-openapi")]
static EMPTY_MAP: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();

impl MetaAccessor for ObjectMeta {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }
    fn generation(&self) -> Option<i64> {
        self.generation
    }
    fn labels(&self) -> &dyn StrMap {
        &self.labels
    }
    fn annotations(&self) -> &dyn StrMap {
        &self.annotations
    }
    fn owner_references(&self) -> Cow<'_, [OwnerReference]> {
        Cow::Borrowed(&self.owner_references)
    }
    fn finalizers(&self) -> &[String] {
        &self.finalizers
    }
    fn is_being_deleted(&self) -> bool {
        self.deletion_timestamp.is_some()
    }
    fn set_name(&mut self, name: String) {
        self.name = Some(name);
    }
    fn set_namespace(&mut self, namespace: Option<String>) {
        self.namespace = namespace.map(std::sync::Arc::from);
    }
    fn set_resource_version(&mut self, rv: Option<String>) {
        self.resource_version = rv;
    }
    fn labels_mut(&mut self) -> &mut dyn StrMap {
        &mut self.labels
    }
    fn annotations_mut(&mut self) -> &mut dyn StrMap {
        &mut self.annotations
    }
    fn clear_managed_fields(&mut self) {
        self.managed_fields = None;
    }
    fn set_owner_references(&mut self, refs: Vec<OwnerReference>) {
        self.owner_references = refs;
    }
    fn finalizers_mut(&mut self) -> &mut Vec<String> {
        &mut self.finalizers
    }
}

/// The cache key of an object: `namespace/name`, or `name` when it has no namespace (client-go's
/// `MetaNamespaceKeyFunc`).
///
/// ```
/// use kube_informer::object::{key_of, DynamicObject, ApiResource};
///
/// let ar = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
/// assert_eq!(key_of(&DynamicObject::new("cm", &ar).within("prod")), "prod/cm");
/// let ns = ApiResource::new("", "v1", "Namespace", "namespaces", false);
/// assert_eq!(key_of(&DynamicObject::new("prod", &ns)), "prod");
/// ```
pub fn key_of<K: Object>(obj: &K) -> String {
    let m = obj.meta();
    make_key(m.namespace(), m.name().unwrap_or(""))
}

/// Builds a cache key from a namespace and a name.
pub fn make_key(namespace: Option<&str>, name: &str) -> String {
    let mut k = String::with_capacity(namespace.map_or(0, |ns| ns.len() + 1) + name.len());
    push_key(&mut k, namespace, name);
    k
}

/// Appends the key of `namespace` and `name` to `buf`: `namespace/name`, or `name` without a namespace.
pub(crate) fn push_key(buf: &mut String, namespace: Option<&str>, name: &str) {
    if let Some(ns) = namespace.filter(|ns| !ns.is_empty()) {
        buf.push_str(ns);
        buf.push('/');
    }
    buf.push_str(name);
}

/// Splits a key made by [`key_of`] into `(namespace, name)` (client-go's `SplitMetaNamespaceKey`).
///
/// ```
/// use kube_informer::object::split_key;
///
/// assert_eq!(split_key("prod/web"), (Some("prod"), "web"));
/// assert_eq!(split_key("node-1"), (None, "node-1"));
/// ```
pub fn split_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, key),
    }
}

/// Implements [`Object`] (and optionally [`Resource`], and [`NamespacedResource`] for `namespaced: true`) for a
/// struct with a `metadata: ObjectMeta` field.
///
/// ```
/// use kube_informer::object::{ObjectMeta, Resource};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Backup {
///     metadata: ObjectMeta,
/// }
/// kube_informer::object!(Backup, group: "ops.example.com", version: "v1", kind: "Backup", plural: "backups",
///                        namespaced: true);
/// assert_eq!(Backup::api_resource().api_version(), "ops.example.com/v1");
/// ```
#[macro_export]
macro_rules! object {
    ($ty:ty) => {
        impl $crate::object::Object for $ty {
            type Meta = $crate::object::ObjectMeta;
            fn meta(&self) -> &$crate::object::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut $crate::object::ObjectMeta {
                &mut self.metadata
            }
        }
    };
    ($ty:ty, group: $group:expr, version: $version:expr, kind: $kind:expr, plural: $plural:expr,
     namespaced: $namespaced:tt $(,)?) => {
        $crate::object!($ty);
        impl $crate::object::Resource for $ty {
            fn api_resource() -> $crate::object::ApiResource {
                $crate::object::ApiResource::new($group, $version, $kind, $plural, $namespaced)
            }
        }
        $crate::__namespaced_marker!($ty, $namespaced);
    };
}

/// Enters a cache's interner on this thread, as an informer's reflector does on its own: until the guard drops,
/// objects decoded on this thread share what repeats between them. For the fuzz targets only (feature `fuzzing`);
/// not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn enter_interner() -> impl Drop {
    interner::Interner::enter()
}
