//! `ObjectMeta`, `OwnerReference`, `ListMeta` and `TypeMeta`.
//!
//! `ObjectMeta` has a hand-written `Deserialize`: it matches known keys without allocating, keeps `managedFields` as
//! [`ManagedFields`] (entries shared between the objects of a cache), and preserves unknown keys in
//! [`ObjectMeta::extra`] so an object read, modified and written back loses nothing. `#[serde(flatten)]` would do the
//! last part too, but it buffers every field through serde's `Content` and halves decode speed. Labels and
//! annotations are [`StringMap`]s: two shared texts per map instead of a tree node plus two strings per entry.
//!
//! What repeats across objects — namespaces, `generateName`s, timestamps, label and annotation sets, managedFields
//! entries — is `Arc`-shared, and decoded in a cache, interned ([`interner`](super::interner)): held once per cache.
//! What is each object's own — name, uid, resourceVersion — is a `String` of exactly its length.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::thread::LocalKey;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::StringMap;
use super::managed_fields::{ManagedFields, OptionalManagedFields, SharedStr};

/// Standard object metadata (`metadata` of every Kubernetes object).
///
/// Fields Kubernetes may omit are `Option`s or empty collections; empty collections are omitted when serialised.
///
/// ```
/// use kube_informer::object::ObjectMeta;
///
/// let meta: ObjectMeta = serde_json::from_str(
///     r#"{"name":"web","namespace":"prod","labels":{"app":"web"},"futureField":{"x":1}}"#,
/// ).unwrap();
/// assert_eq!(meta.name.as_deref(), Some("web"));
/// assert_eq!(meta.namespace.as_deref(), Some("prod"));
/// assert_eq!(meta.labels.get("app"), Some("web"));
/// // Unknown fields survive a round trip.
/// assert!(serde_json::to_string(&meta).unwrap().contains(r#""futureField":{"x":1}"#));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectMeta {
    /// `name`: unique within a namespace (or the cluster for cluster-scoped objects).
    pub name: Option<String>,
    /// `generateName`: prefix the server uses to generate a unique name when `name` is empty (shared: the pods of
    /// one ReplicaSet have the same).
    pub generate_name: Option<Arc<str>>,
    /// `namespace`: empty for cluster-scoped objects (shared between the objects of a cache).
    pub namespace: Option<Arc<str>>,
    /// `uid`: unique in time and space; set by the server.
    pub uid: Option<String>,
    /// `resourceVersion`: opaque version string used for optimistic concurrency and watches.
    pub resource_version: Option<String>,
    /// `generation`: incremented by the server when the desired state (spec) changes.
    pub generation: Option<i64>,
    /// `creationTimestamp`, RFC 3339 (see [`crate::object::time`]; shared: objects created in the same second have
    /// the same).
    pub creation_timestamp: Option<Arc<str>>,
    /// `deletionTimestamp`, RFC 3339: set when deletion was requested and finalizers are pending (shared).
    pub deletion_timestamp: Option<Arc<str>>,
    /// `deletionGracePeriodSeconds`.
    pub deletion_grace_period_seconds: Option<i64>,
    /// `labels`.
    pub labels: StringMap,
    /// `annotations`.
    pub annotations: StringMap,
    /// `ownerReferences`.
    pub owner_references: Vec<OwnerReference>,
    /// `finalizers`.
    pub finalizers: Vec<String>,
    /// `managedFields` (`None` when absent, empty or stripped): each entry shared with the objects of the cache that
    /// have the same.
    pub managed_fields: Option<ManagedFields>,
    /// Keys this version of the crate does not know, preserved for round trips.
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// A reference from an object to its owner (`metadata.ownerReferences[]`).
///
/// Its four strings are `Arc<str>`s: the pods of one ReplicaSet carry the same reference, and decoded by an
/// informer each of its strings is held once for all of them in the cache. Read them as `&str` with the
/// accessors ([`kind()`](Self::kind), …) or `&*r.kind`; build a reference with [`OwnerReference::new`] or
/// [`OwnerReference::to`](Self::to).
///
/// ```
/// use kube_informer::object::OwnerReference;
///
/// let r: OwnerReference = serde_json::from_str(
///     r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9","uid":"5c1e","controller":true,"blockOwnerDeletion":true}"#,
/// ).unwrap();
/// assert_eq!((r.api_version(), r.kind(), r.name(), r.uid()), ("apps/v1", "ReplicaSet", "web-7d4b9", "5c1e"));
/// assert_eq!(r, OwnerReference::new("apps/v1", "ReplicaSet", "web-7d4b9", "5c1e").controlling());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// API version of the owner (`apps/v1`; shared between the objects of a cache).
    #[serde(
        serialize_with = "shared_str::serialize",
        deserialize_with = "shared_str::deserialize"
    )]
    pub api_version: Arc<str>,
    /// Kind of the owner (`ReplicaSet`; shared).
    #[serde(
        serialize_with = "shared_str::serialize",
        deserialize_with = "shared_str::deserialize"
    )]
    pub kind: Arc<str>,
    /// Name of the owner (shared: the dependents of one owner have the same).
    #[serde(
        serialize_with = "shared_str::serialize",
        deserialize_with = "shared_str::deserialize"
    )]
    pub name: Arc<str>,
    /// UID of the owner (shared).
    #[serde(
        serialize_with = "shared_str::serialize",
        deserialize_with = "shared_str::deserialize"
    )]
    pub uid: Arc<str>,
    /// True when the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// True when the owner cannot be deleted before this object is (foreground deletion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerReference {
    /// A plain (non-controller) reference to the object `kind` `name` (uid `uid`) of `api_version`.
    pub fn new(
        api_version: impl AsRef<str>,
        kind: impl AsRef<str>,
        name: impl AsRef<str>,
        uid: impl AsRef<str>,
    ) -> Self {
        OwnerReference {
            api_version: Arc::from(api_version.as_ref()),
            kind: Arc::from(kind.as_ref()),
            name: Arc::from(name.as_ref()),
            uid: Arc::from(uid.as_ref()),
            controller: None,
            block_owner_deletion: None,
        }
    }

    /// This reference marked as the controller's: `controller: true` and `blockOwnerDeletion: true`, as
    /// controller-runtime's `SetControllerReference` writes it.
    #[must_use]
    pub fn controlling(mut self) -> Self {
        self.controller = Some(true);
        self.block_owner_deletion = Some(true);
        self
    }

    /// API version of the owner (`apps/v1`).
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// Kind of the owner (`ReplicaSet`).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Name of the owner.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// UID of the owner.
    pub fn uid(&self) -> &str {
        &self.uid
    }
}

/// An `Arc<str>` field read through the interner (held once per cache) and written as a string.
mod shared_str {
    use std::fmt;
    use std::sync::Arc;

    use serde::de::{self, Deserializer, Visitor};
    use serde::ser::Serializer;

    use crate::object::interner;

    pub(super) fn serialize<S: Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
        struct Interned;
        impl Visitor<'_> for Interned {
            type Value = Arc<str>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Arc<str>, E> {
                Ok(interner::intern(v))
            }
        }
        d.deserialize_str(Interned)
    }
}

/// Metadata of a list response (`metadata` of a `*List`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// The resourceVersion the list was served at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Token for the next page; absent on the last page.
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
    /// Number of items after this page, when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
    /// The shard selector the server applied (KEP-5866): present only when it filtered by the request's
    /// `shardSelector`. A list asked for a shard and answered without it holds every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_info: Option<ShardInfo>,
}

/// `metadata.shardInfo` of a list: the shard selector the server applied, echoed in its canonical form.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// The selector, as the server prints it.
    #[serde(default)]
    pub selector: String,
}

/// `apiVersion` and `kind` of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeMeta {
    /// `apiVersion`: `v1`, `apps/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `kind`: `Pod`, `Deployment`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
}

impl ObjectMeta {
    /// Metadata with only a name.
    pub fn named(name: impl Into<String>) -> Self {
        ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        }
    }

    /// Metadata with a namespace and a name.
    pub fn namespaced(namespace: impl AsRef<str>, name: impl Into<String>) -> Self {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(Arc::from(namespace.as_ref())),
            ..Default::default()
        }
    }
}

/// The keys of `ObjectMeta`, matched from a borrowed `&str` so known keys never allocate.
enum Field {
    Name,
    GenerateName,
    Namespace,
    Uid,
    ResourceVersion,
    Generation,
    CreationTimestamp,
    DeletionTimestamp,
    DeletionGracePeriodSeconds,
    Labels,
    Annotations,
    OwnerReferences,
    Finalizers,
    ManagedFields,
    Other(String),
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an ObjectMeta key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
                Ok(match v {
                    "name" => Field::Name,
                    "generateName" => Field::GenerateName,
                    "namespace" => Field::Namespace,
                    "uid" => Field::Uid,
                    "resourceVersion" => Field::ResourceVersion,
                    "generation" => Field::Generation,
                    "creationTimestamp" => Field::CreationTimestamp,
                    "deletionTimestamp" => Field::DeletionTimestamp,
                    "deletionGracePeriodSeconds" => Field::DeletionGracePeriodSeconds,
                    "labels" => Field::Labels,
                    "annotations" => Field::Annotations,
                    "ownerReferences" => Field::OwnerReferences,
                    "finalizers" => Field::Finalizers,
                    "managedFields" => Field::ManagedFields,
                    other => Field::Other(other.to_owned()),
                })
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

/// Spare capacity a reused string may keep: less than one step of the allocator's size classes (16 bytes for
/// glibc's malloc), so that it costs no more memory than an exact one.
const REUSE_SLACK: usize = 16;

/// Reads an optional string into the allocation of `self.0` (the value of the field being decoded over) when one is
/// given: what `Option<String>` reads, with the same errors.
struct ReuseStr(Option<String>);

impl<'de> DeserializeSeed<'de> for ReuseStr {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ReuseStr {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_string(self)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<String>, E> {
        // The old allocation only when it fits with little to spare (a cached string carries no slack).
        match self.0 {
            Some(mut s) if s.capacity() >= v.len() && s.capacity() - v.len() < REUSE_SLACK => {
                s.clear();
                s.push_str(v);
                Ok(Some(s))
            }
            _ => Ok(Some(v.to_owned())),
        }
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Option<String>, E> {
        // A string with slack is copied at its length (as `visit_str` does), not shrunk: a `realloc` to a smaller
        // size splits a small free chunk off, which glibc's fast bins keep from joining its neighbours.
        if v.capacity() - v.len() < REUSE_SLACK {
            Ok(Some(v))
        } else {
            self.visit_str(&v)
        }
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Option<String>, E> {
        match std::str::from_utf8(v) {
            Ok(s) => self.visit_str(s),
            Err(_) => Err(de::Error::invalid_value(de::Unexpected::Bytes(v), &self)),
        }
    }
}

thread_local! {
    /// The owner references of the metadata being decoded (reused by every decode on this thread).
    static OWNER_SCRATCH: RefCell<Vec<OwnerReference>> = const { RefCell::new(Vec::new()) };
    /// The finalizers of the metadata being decoded (reused by every decode on this thread).
    static FINALIZER_SCRATCH: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Most elements a thread's scratch vector keeps room for between decodes.
const SCRATCH_MAX: usize = 64;

/// Reads a list (`null` is empty) into a vector of exactly its length, as `Option<Vec<T>>` reads it (same errors):
/// the elements are gathered in `scratch`, a vector the thread reuses, then moved into one allocation of their count
/// (`old`'s, the vector decoded over, when it has exactly that room). A vector grown element by element and then
/// shrunk to its length would `realloc` to a smaller size, which splits a small free chunk off for each object
/// decoded; glibc's fast bins keep those from joining their neighbours, and the heap comes out fragmented.
struct ExactVec<T: 'static> {
    scratch: &'static LocalKey<RefCell<Vec<T>>>,
    old: Vec<T>,
}

impl<'de, T: Deserialize<'de> + 'static> DeserializeSeed<'de> for ExactVec<T> {
    type Value = Vec<T>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<T>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, T: Deserialize<'de> + 'static> Visitor<'de> for ExactVec<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_none<E: de::Error>(self) -> Result<Vec<T>, E> {
        Ok(Vec::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<T>, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Vec<T>, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        // `try_with`: in a thread's destructors, where the scratch is gone, a fresh vector does the same job.
        let mut items = self
            .scratch
            .try_with(|s| std::mem::take(&mut *s.borrow_mut()))
            .unwrap_or_default();
        items.clear();
        let read = (|| {
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(())
        })();
        let out = read.map(|()| {
            let mut out = self.old;
            out.clear();
            if out.capacity() != items.len() {
                out = Vec::with_capacity(items.len());
            }
            out.append(&mut items);
            out
        });
        items.clear();
        if items.capacity() <= SCRATCH_MAX {
            let _ = self.scratch.try_with(|s| *s.borrow_mut() = items);
        }
        out
    }
}

/// Reads `ObjectMeta`; `old` is the metadata being decoded over, whose strings and maps are reused for the same
/// fields (empty for a fresh decode).
struct MetaVisitor {
    old: ObjectMeta,
}

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = ObjectMeta;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("object metadata")
    }
    fn visit_unit<E: de::Error>(self) -> Result<ObjectMeta, E> {
        Ok(ObjectMeta::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectMeta, A::Error> {
        let mut old = self.old;
        let mut m = ObjectMeta::default();
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Name => m.name = map.next_value_seed(ReuseStr(old.name.take()))?,
                Field::GenerateName => m.generate_name = map.next_value_seed(SharedStr)?,
                Field::Namespace => m.namespace = map.next_value_seed(SharedStr)?,
                Field::Uid => m.uid = map.next_value_seed(ReuseStr(old.uid.take()))?,
                Field::ResourceVersion => {
                    m.resource_version = map.next_value_seed(ReuseStr(old.resource_version.take()))?
                }
                Field::Generation => m.generation = map.next_value()?,
                Field::CreationTimestamp => m.creation_timestamp = map.next_value_seed(SharedStr)?,
                Field::DeletionTimestamp => m.deletion_timestamp = map.next_value_seed(SharedStr)?,
                Field::DeletionGracePeriodSeconds => m.deletion_grace_period_seconds = map.next_value()?,
                // `null` reads as an empty map.
                Field::Labels => m.labels = map.next_value()?,
                Field::Annotations => m.annotations = map.next_value()?,
                // `null` reads as empty.
                Field::OwnerReferences => {
                    let old = std::mem::take(&mut old.owner_references);
                    m.owner_references = map.next_value_seed(ExactVec {
                        scratch: &OWNER_SCRATCH,
                        old,
                    })?;
                }
                Field::Finalizers => {
                    let old = std::mem::take(&mut old.finalizers);
                    m.finalizers = map.next_value_seed(ExactVec {
                        scratch: &FINALIZER_SCRATCH,
                        old,
                    })?;
                }
                // `null` and `[]` both mean "none".
                Field::ManagedFields => m.managed_fields = map.next_value_seed(OptionalManagedFields)?,
                Field::Other(k) => {
                    let v: serde_json::Value = map.next_value()?;
                    m.extra.insert(k, v);
                }
            }
        }
        Ok(m)
    }
}

/// Decodes a value over `self.0` with `Deserialize::deserialize_in_place`.
pub(crate) struct InPlace<'a, T>(pub(crate) &'a mut T);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for InPlace<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        T::deserialize_in_place(d, self.0)
    }
}

impl<'de> Deserialize<'de> for ObjectMeta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MetaVisitor {
            old: ObjectMeta::default(),
        })
    }

    /// Decodes into `place`, reusing its strings and maps for the same fields; the result is the same as
    /// [`deserialize`](Self::deserialize)'s. On an error `place` is left empty.
    fn deserialize_in_place<D: Deserializer<'de>>(d: D, place: &mut Self) -> Result<(), D::Error> {
        let old = std::mem::take(place);
        *place = d.deserialize_map(MetaVisitor { old })?;
        Ok(())
    }
}

impl Serialize for ObjectMeta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        macro_rules! opt {
            ($key:literal, $field:expr) => {
                if let Some(v) = &$field {
                    map.serialize_entry($key, v)?;
                }
            };
        }
        macro_rules! shared {
            ($key:literal, $field:expr) => {
                if let Some(v) = &$field {
                    map.serialize_entry($key, &**v)?;
                }
            };
        }
        macro_rules! nonempty {
            ($key:literal, $field:expr) => {
                if !$field.is_empty() {
                    map.serialize_entry($key, &$field)?;
                }
            };
        }
        opt!("name", self.name);
        shared!("generateName", self.generate_name);
        shared!("namespace", self.namespace);
        opt!("uid", self.uid);
        opt!("resourceVersion", self.resource_version);
        opt!("generation", self.generation);
        shared!("creationTimestamp", self.creation_timestamp);
        shared!("deletionTimestamp", self.deletion_timestamp);
        opt!("deletionGracePeriodSeconds", self.deletion_grace_period_seconds);
        nonempty!("labels", self.labels);
        nonempty!("annotations", self.annotations);
        nonempty!("ownerReferences", self.owner_references);
        nonempty!("finalizers", self.finalizers);
        opt!("managedFields", self.managed_fields);
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"{"name":"web-1","generateName":"web-","namespace":"prod","uid":"6f1c","resourceVersion":"42","generation":3,"creationTimestamp":"2024-01-02T03:04:05Z","deletionTimestamp":"2024-01-03T00:00:00Z","deletionGracePeriodSeconds":30,"labels":{"app":"web","tier":"front"},"annotations":{"note":"x"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"aa","controller":true,"blockOwnerDeletion":true}],"finalizers":["example.com/f"],"managedFields":[{"manager":"kubectl","operation":"Apply","fieldsV1":{"f:data":{}}}],"selfLink":"/x","zzz":[1,2]}"#;

    #[test]
    fn round_trips_every_field_and_unknown_keys() {
        let m: ObjectMeta = serde_json::from_str(FULL).unwrap();
        assert_eq!(m.name.as_deref(), Some("web-1"));
        assert_eq!(m.generation, Some(3));
        assert_eq!(m.owner_references[0].controller, Some(true));
        assert_eq!(m.finalizers, ["example.com/f"]);
        assert_eq!(
            m.managed_fields
                .as_ref()
                .unwrap()
                .iter()
                .next()
                .unwrap()
                .manager()
                .as_deref(),
            Some("kubectl")
        );
        assert_eq!(m.extra.len(), 2);
        let back = serde_json::to_string(&m).unwrap();
        let a: serde_json::Value = serde_json::from_str(FULL).unwrap();
        let b: serde_json::Value = serde_json::from_str(&back).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn nulls_and_empty_collections_mean_absent() {
        let m: ObjectMeta = serde_json::from_str(
            r#"{"name":"a","creationTimestamp":null,"labels":null,"finalizers":null,"managedFields":[],"ownerReferences":null}"#,
        )
        .unwrap();
        assert_eq!(m, ObjectMeta::named("a"));
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"name":"a"}"#);
    }

    #[test]
    fn rejects_wrong_types() {
        assert!(serde_json::from_str::<ObjectMeta>(r#"{"name":5}"#).is_err());
        assert!(serde_json::from_str::<ObjectMeta>(r#"{"labels":{"a":1}}"#).is_err());
        assert!(serde_json::from_str::<ObjectMeta>(r#"[]"#).is_err());
    }

    #[test]
    fn owner_references_share_their_strings_in_a_cache() {
        let pod = |name: &str| {
            format!(
                r#"{{"name":"{name}","ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9","uid":"5c1e-77","controller":true,"blockOwnerDeletion":true}}]}}"#
            )
        };
        let read = |name: &str| serde_json::from_str::<ObjectMeta>(&pod(name)).unwrap().owner_references;
        let strings = |r: &OwnerReference| [r.api_version.clone(), r.kind.clone(), r.name.clone(), r.uid.clone()];
        let (a, b) = (read("web-7d4b9-a"), read("web-7d4b9-b"));
        assert_eq!(a, b);
        assert_eq!(
            a[0],
            OwnerReference::new("apps/v1", "ReplicaSet", "web-7d4b9", "5c1e-77").controlling()
        );
        for (x, y) in strings(&a[0]).iter().zip(&strings(&b[0])) {
            assert!(!Arc::ptr_eq(x, y), "outside a cache, strings of their own: {x}");
        }
        let _scope = crate::object::interner::Interner::enter();
        let (c, d) = (read("web-7d4b9-a"), read("web-7d4b9-b"));
        assert_eq!((&c, &d), (&a, &b));
        for (x, y) in strings(&c[0]).iter().zip(&strings(&d[0])) {
            assert!(Arc::ptr_eq(x, y), "in a cache, held once: {x}");
        }
        // Written back as read; a missing or mistyped string is refused as before.
        assert_eq!(
            serde_json::to_string(&c[0]).unwrap(),
            r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9","uid":"5c1e-77","controller":true,"blockOwnerDeletion":true}"#
        );
        let e = serde_json::from_str::<OwnerReference>(r#"{"apiVersion":"v1","kind":"ConfigMap","name":"a"}"#);
        assert!(e.unwrap_err().to_string().contains("missing field `uid`"));
        let e = serde_json::from_str::<OwnerReference>(r#"{"apiVersion":"v1","kind":1,"name":"a","uid":"u"}"#);
        assert!(e.unwrap_err().to_string().contains("expected a string"));
    }

    #[test]
    fn list_meta_uses_kubernetes_names() {
        let l: ListMeta =
            serde_json::from_str(r#"{"resourceVersion":"9","continue":"tok","remainingItemCount":3}"#).unwrap();
        assert_eq!(l.continue_token.as_deref(), Some("tok"));
        assert_eq!(l.remaining_item_count, Some(3));
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            r#"{"resourceVersion":"9","continue":"tok","remainingItemCount":3}"#
        );
    }
}
