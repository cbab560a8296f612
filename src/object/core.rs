//! A few core/v1 types used by the crate's examples, tests and benchmarks.
//!
//! These are deliberately minimal. For the full Kubernetes API, enable the `k8s-openapi` feature and use its types,
//! or define your own structs with [`object!`](crate::object!), or use [`DynamicObject`](super::DynamicObject).

use serde::{Deserialize, Serialize};

use super::{ObjectMeta, StringMap};

/// A core/v1 `ConfigMap`.
///
/// ```
/// use kube_informer::object::{core::ConfigMap, ObjectMeta};
///
/// let cm = ConfigMap::new(ObjectMeta::namespaced("default", "settings")).with("color", "blue");
/// assert_eq!(cm.data.get("color"), Some("blue"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
