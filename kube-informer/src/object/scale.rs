//! `Scale` (autoscaling/v1): the `scale` subresource's view of a scalable object.

use serde::{Deserialize, Serialize};

use super::ObjectMeta;

/// What the `…/{name}/scale` subresource of a Deployment, ReplicaSet, StatefulSet or scalable custom resource reads
/// and writes: the desired replicas, and the observed replicas with the label selector of the pods counted (what a
/// HorizontalPodAutoscaler uses). See [`Api::get_scale`](crate::client::Api::get_scale).
///
/// Sent with `apiVersion: autoscaling/v1` and `kind: Scale` (the client adds them).
///
/// ```
/// use kube_informer::object::{Scale, ScaleSpec};
///
/// let s: Scale = serde_json::from_str(r#"{"apiVersion":"autoscaling/v1","kind":"Scale",
///     "metadata":{"name":"web","namespace":"prod","resourceVersion":"7"},
///     "spec":{"replicas":3},"status":{"replicas":2,"selector":"app=web"}}"#).unwrap();
/// assert_eq!(s.spec, ScaleSpec { replicas: Some(3) });
/// assert_eq!(s.status.unwrap().selector.as_deref(), Some("app=web"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    /// The scaled object's metadata (name, namespace, uid, resourceVersion).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default)]
    pub spec: ScaleSpec,
    /// The observed state (ignored on writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ScaleStatus>,
}

/// `Scale.spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleSpec {
    /// Desired number of replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// `Scale.status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleStatus {
    /// Observed number of replicas.
    #[serde(default)]
    pub replicas: i32,
    /// The label selector of the pods counted, in its string form (`app=web`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

crate::object!(Scale);

impl Scale {
    /// `apiVersion` of a Scale.
    pub const API_VERSION: &'static str = "autoscaling/v1";
    /// `kind` of a Scale.
    pub const KIND: &'static str = "Scale";

    /// A scale request: `replicas` for the object `metadata` names (set its resourceVersion for a conditional
    /// write).
    pub fn new(metadata: ObjectMeta, replicas: i32) -> Self {
        Scale {
            metadata,
            spec: ScaleSpec {
                replicas: Some(replicas),
            },
            status: None,
        }
    }
}
