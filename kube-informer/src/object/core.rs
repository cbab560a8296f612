//! A few core/v1 types used by the crate's examples, tests and benchmarks.
//!
//! These are deliberately minimal. For the full Kubernetes API, enable the `k8s-openapi` feature and use its types,
//! or define your own structs with [`object!`](crate::object!), or use [`DynamicObject`](super::DynamicObject).

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::meta::InPlace;
use super::{ObjectMeta, StringMap};

/// A core/v1 `ConfigMap`.
///
/// ```
/// use kube_informer::object::{core::ConfigMap, ObjectMeta};
///
/// let cm = ConfigMap::new(ObjectMeta::namespaced("default", "settings")).with("color", "blue");
/// assert_eq!(cm.data.get("color"), Some("blue"));
/// ```
///
/// It decodes in place (`Deserialize::deserialize_in_place`), reusing the strings and maps of the object decoded
/// over: the informer decodes watch events into the objects its cache let go of.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMap {
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// UTF-8 data.
    #[serde(default, skip_serializing_if = "StringMap::is_empty")]
    pub data: StringMap,
    /// Base64-encoded binary data, kept as the server sends it.
    #[serde(default, skip_serializing_if = "StringMap::is_empty")]
    pub binary_data: StringMap,
    /// When true, the data can no longer change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

impl ConfigMap {
    /// A ConfigMap with metadata and no data.
    pub fn new(metadata: ObjectMeta) -> Self {
        ConfigMap {
            metadata,
            ..Default::default()
        }
    }

    /// Adds one data entry (builder style).
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.data.insert(key.into(), value.into());
        self
    }
}

/// The keys of a ConfigMap; the others (`apiVersion`, `kind`, unknown ones) are skipped.
enum ConfigMapKey {
    Metadata,
    Data,
    BinaryData,
    Immutable,
    Other,
}

impl<'de> Deserialize<'de> for ConfigMapKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = ConfigMapKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ConfigMapKey, E> {
                Ok(match v {
                    "metadata" => ConfigMapKey::Metadata,
                    "data" => ConfigMapKey::Data,
                    "binaryData" => ConfigMapKey::BinaryData,
                    "immutable" => ConfigMapKey::Immutable,
                    _ => ConfigMapKey::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// Reads a ConfigMap over `self.0` (a default one for a fresh decode), reusing its allocations field by field.
struct ConfigMapVisitor<'a>(&'a mut ConfigMap);

impl<'de> Visitor<'de> for ConfigMapVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct ConfigMap")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let cm = self.0;
        let mut seen = [false; 4];
        let mut first = |i: usize, name: &'static str| {
            if std::mem::replace(&mut seen[i], true) {
                Err(de::Error::duplicate_field(name))
            } else {
                Ok(())
            }
        };
        while let Some(key) = map.next_key::<ConfigMapKey>()? {
            match key {
                ConfigMapKey::Metadata => {
                    first(0, "metadata")?;
                    map.next_value_seed(InPlace(&mut cm.metadata))?;
                }
                ConfigMapKey::Data => {
                    first(1, "data")?;
                    map.next_value_seed(InPlace(&mut cm.data))?;
                }
                ConfigMapKey::BinaryData => {
                    first(2, "binaryData")?;
                    map.next_value_seed(InPlace(&mut cm.binary_data))?;
                }
                ConfigMapKey::Immutable => {
                    first(3, "immutable")?;
                    cm.immutable = map.next_value()?;
                }
                ConfigMapKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // What the object did not mention takes its default, as in a fresh decode.
        if !seen[0] {
            cm.metadata = ObjectMeta::default();
        }
        if !seen[1] {
            cm.data = StringMap::new();
        }
        if !seen[2] {
            cm.binary_data = StringMap::new();
        }
        if !seen[3] {
            cm.immutable = None;
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for ConfigMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut cm = ConfigMap::default();
        d.deserialize_map(ConfigMapVisitor(&mut cm))?;
        Ok(cm)
    }

    /// Decodes into `place`, reusing its strings and maps; the result is the same as
    /// [`deserialize`](Self::deserialize)'s. On an error `place` holds a mix of old and new fields.
    fn deserialize_in_place<D: Deserializer<'de>>(d: D, place: &mut Self) -> Result<(), D::Error> {
        d.deserialize_map(ConfigMapVisitor(place))
    }
}

crate::object!(ConfigMap, group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true);

/// A core/v1 `Namespace` (spec and status kept as raw JSON).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Namespace {
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec` (finalizers), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<super::RawJson>,
    /// `status` (phase, conditions), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<super::RawJson>,
}

crate::object!(Namespace, group: "", version: "v1", kind: "Namespace", plural: "namespaces", namespaced: false);

/// A core/v1 `Pod` (spec and status kept as raw JSON): enough to list, watch and address pods —
/// [`Api::logs`](crate::client::Api::logs), [`Api::log_stream`](crate::client::Api::log_stream),
/// [`Api::evict`](crate::client::Api::evict) — without a typed model of every pod field. For that, use
/// k8s-openapi's `Pod` (feature `k8s-openapi`): logs and eviction work on any `Api` of pods.
///
/// ```
/// use kube_informer::object::{core::Pod, Resource};
///
/// let pod: Pod = serde_json::from_str(r#"{"metadata":{"name":"web-0","namespace":"prod"},
///     "spec":{"containers":[{"name":"app","image":"nginx"}]},"status":{"phase":"Running"}}"#).unwrap();
/// let status: serde_json::Value = pod.status.unwrap().parse().unwrap();
/// assert_eq!(status["phase"], "Running");
/// assert_eq!(Pod::api_resource().plural, "pods");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pod {
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec` (containers, volumes, node, …), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<super::RawJson>,
    /// `status` (phase, conditions, container statuses), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<super::RawJson>,
}

crate::object!(Pod, group: "", version: "v1", kind: "Pod", plural: "pods", namespaced: true);
