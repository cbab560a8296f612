//! `PartialObjectMetadata<K>`: an object of `K`'s resource as its metadata alone (apimachinery's
//! `metav1.PartialObjectMetadata`, client-go's metadata client and metadata informers, kube-rs's
//! `PartialObjectMeta`).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::meta::InPlace;
use super::{ApiResource, Object, ObjectMeta, Representation, Resource};

/// An object of `K`'s resource, metadata only: what a controller that reads names, labels, annotations, owners or
/// finalizers needs, without the object's content — a Secret's data, a ConfigMap's files, a Pod's spec.
///
/// It is an [`Object`] whose [`REPRESENTATION`](Object::REPRESENTATION) is
/// [`Metadata`](Representation::Metadata): an `Api<PartialObjectMetadata<K>>` asks the API server to convert its
/// answers (`Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` for lists,
/// `…;as=PartialObjectMetadata;…` for objects and watch events, as client-go's metadata client does), so only
/// metadata crosses the network and sits in a cache; `factory.informer::<PartialObjectMetadata<K>>()` is client-go's
/// metadata informer. A server that cannot convert (client-go adds the same fallback) sends whole objects, of which
/// only the metadata is decoded and kept.
///
/// Reads, patches and deletes work as for `K`; a create or a replace is refused, since the object's content would
/// be erased (a merge patch or a server-side apply of metadata leaves the content alone). Use
/// `PartialObjectMetadata<DynamicObject>` with [`ApiResource`]s known at run time
/// ([`informer_for`](crate::informer::SharedInformerFactory::informer_for)).
///
/// ```
/// use std::time::Duration;
/// use kube_informer::informer::{FactoryOptions, SharedInformerFactory};
/// use kube_informer::object::{core::ConfigMap, ObjectMeta, PartialObjectMetadata};
/// use kube_informer_apiserver::ApiServer;
///
/// let server = ApiServer::start()?;
/// server.create(&ConfigMap::new(ObjectMeta::namespaced("default", "settings")).with("password", "s3cret"))?;
/// let factory = SharedInformerFactory::new(server.client()?, FactoryOptions::default());
/// let configmaps = factory.informer::<PartialObjectMetadata<ConfigMap>>();
/// factory.start()?;
/// factory.wait_for_cache_sync(Duration::from_secs(30))?;
/// let cached = configmaps.lister().get("default/settings").unwrap();
/// assert_eq!(cached.metadata.name.as_deref(), Some("settings")); // and no data: only metadata is cached
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PartialObjectMetadata<K> {
    /// The object's metadata, whole.
    pub metadata: ObjectMeta,
    _resource: PhantomData<fn() -> K>,
}

impl<K> PartialObjectMetadata<K> {
    /// The metadata of an object of `K`'s resource.
    pub fn new(metadata: ObjectMeta) -> Self {
        PartialObjectMetadata {
            metadata,
            _resource: PhantomData,
        }
    }
}

impl<K> Default for PartialObjectMetadata<K> {
    fn default() -> Self {
        PartialObjectMetadata::new(ObjectMeta::default())
    }
}

impl<K> Clone for PartialObjectMetadata<K> {
    fn clone(&self) -> Self {
        PartialObjectMetadata::new(self.metadata.clone())
    }
}

impl<K> PartialEq for PartialObjectMetadata<K> {
    fn eq(&self, other: &Self) -> bool {
        self.metadata == other.metadata
    }
}

impl<K> fmt::Debug for PartialObjectMetadata<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartialObjectMetadata")
            .field("metadata", &self.metadata)
            .finish()
    }
}

/// `{"metadata": …}`: the type fields are the resource's, which a write adds
/// ([`Api`](crate::client::Api) does for every body without them), not `meta.k8s.io/v1`'s.
impl<K> Serialize for PartialObjectMetadata<K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("metadata", &self.metadata)?;
        map.end()
    }
}

/// Reads `metadata` over `self.0`, reusing its allocations, and skips every other field (the type fields, or the
/// whole object's content when a server sent it).
struct PartialVisitor<'a>(&'a mut ObjectMeta);

impl<'de> Visitor<'de> for PartialVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object with metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "metadata" {
                if std::mem::replace(&mut seen, true) {
                    return Err(de::Error::duplicate_field("metadata"));
                }
                map.next_value_seed(InPlace(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !seen {
            *self.0 = ObjectMeta::default();
        }
        Ok(())
    }
}

impl<'de, K> Deserialize<'de> for PartialObjectMetadata<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut partial = PartialObjectMetadata::default();
        d.deserialize_map(PartialVisitor(&mut partial.metadata))?;
        Ok(partial)
    }

    /// Decodes into `place`, reusing its metadata's strings and maps (the informer decodes watch events into the
    /// objects its cache let go of).
    fn deserialize_in_place<D: Deserializer<'de>>(d: D, place: &mut Self) -> Result<(), D::Error> {
        d.deserialize_map(PartialVisitor(&mut place.metadata))
    }
}

impl<K: 'static> Object for PartialObjectMetadata<K> {
    type Meta = ObjectMeta;

    const REPRESENTATION: Representation = Representation::Metadata;

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl<K: Resource> Resource for PartialObjectMetadata<K> {
    fn api_resource() -> ApiResource {
        K::api_resource()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::core::ConfigMap;

    type Partial = PartialObjectMetadata<ConfigMap>;

    #[test]
    fn reads_the_metadata_of_a_conversion_or_of_a_whole_object() {
        let converted = r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
            "metadata":{"name":"a","namespace":"ns","labels":{"app":"web"},"resourceVersion":"7"}}"#;
        let p: Partial = serde_json::from_str(converted).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("a"));
        assert_eq!(p.metadata.labels.get("app"), Some("web"));
        // A server that cannot convert sends the object: its content is skipped, not kept.
        let whole = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns"},
            "data":{"password":"s3cret"}}"#;
        let p: Partial = serde_json::from_str(whole).unwrap();
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"metadata":{"name":"a","namespace":"ns"}}"#
        );
        assert!(serde_json::from_str::<Partial>(r#"{"metadata":{},"metadata":{}}"#).is_err());
        assert!(serde_json::from_str::<Partial>("[1]").is_err());
    }

    #[test]
    fn decodes_in_place_as_afresh() {
        let mut place: Partial = serde_json::from_str(r#"{"metadata":{"name":"old","labels":{"a":"b"}}}"#).unwrap();
        let text = r#"{"kind":"PartialObjectMetadata","metadata":{"name":"new"}}"#;
        Partial::deserialize_in_place(&mut serde_json::Deserializer::from_str(text), &mut place).unwrap();
        assert_eq!(place, serde_json::from_str::<Partial>(text).unwrap());
        Partial::deserialize_in_place(&mut serde_json::Deserializer::from_str(r#"{"kind":"x"}"#), &mut place).unwrap();
        assert_eq!(place, Partial::default());
        assert_eq!(Partial::api_resource(), ConfigMap::api_resource());
        assert_eq!(Partial::REPRESENTATION, Representation::Metadata);
        assert_eq!(ConfigMap::REPRESENTATION, Representation::Full);
    }
}
