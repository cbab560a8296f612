//! The core/v1 `Event` and `ObjectReference` types.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::object::{ApiResource, MetaAccessor, Object, ObjectMeta, Resource};

/// Whether an event reports normal operation or something that may need attention (core/v1 `Event.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `Normal`: the system did what it should (created, scaled, synced).
    Normal,
    /// `Warning`: something went wrong or is unexpected (a failed write, an invalid spec).
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`, as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reference to an object (core/v1 `ObjectReference`): what an event is about. Empty fields are omitted.
///
/// ```
/// use kube_informer::events::ObjectReference;
/// use kube_informer::object::{core::ConfigMap, ObjectMeta};
///
/// let mut meta = ObjectMeta::namespaced("prod", "settings");
/// meta.uid = Some("1f0e…".into());
/// let r = ObjectReference::from_resource(&ConfigMap::new(meta));
/// assert_eq!((r.kind.as_str(), r.api_version.as_str(), r.namespace.as_str()), ("ConfigMap", "v1", "prod"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// `apiVersion` of the object (`apps/v1`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of the object (`Deployment`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Namespace; empty for a cluster-scoped object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// UID: tells this object from an earlier one of the same name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The resourceVersion the event was about.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// A part of the object (`spec.containers{web}`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_path: String,
}

impl ObjectReference {
    /// A reference from an object's metadata and its resource (client-go's `ref.GetReference`).
    pub fn new<M: MetaAccessor + ?Sized>(meta: &M, resource: &ApiResource) -> ObjectReference {
        ObjectReference {
            api_version: resource.api_version(),
            kind: resource.kind.clone(),
            namespace: meta.namespace().unwrap_or_default().to_owned(),
            name: meta.name().unwrap_or_default().to_owned(),
            uid: meta.uid().unwrap_or_default().to_owned(),
            resource_version: meta.resource_version().unwrap_or_default().to_owned(),
            field_path: String::new(),
        }
    }

    /// A reference to an object whose resource is known statically.
    pub fn from_resource<K: Resource>(obj: &K) -> ObjectReference {
        ObjectReference::new(obj.meta(), &K::api_resource())
    }

    /// A reference to any object, given its resource ([`DynamicObject`](crate::object::DynamicObject)).
    pub fn from_object<K: Object>(obj: &K, resource: &ApiResource) -> ObjectReference {
        ObjectReference::new(obj.meta(), resource)
    }

    /// Sets [`field_path`](ObjectReference::field_path).
    #[must_use]
    pub fn field_path(mut self, path: impl Into<String>) -> Self {
        self.field_path = path.into();
        self
    }
}

/// Who reported an event (core/v1 `EventSource`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EventSource {
    /// The reporting component (`deployment-controller`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub component: String,
    /// The host or instance it runs on.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
}

/// A core/v1 `Event`: a note about an object, shown by `kubectl describe` and `kubectl events`.
///
/// Repeats of the same event are one object with a growing `count` and `lastTimestamp` (the
/// [`EventRecorder`](super::EventRecorder) does that). Fields this crate does not know are kept in `extra`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `apiVersion`: `v1`.
    #[serde(default)]
    pub api_version: String,
    /// `kind`: `Event`.
    #[serde(default)]
    pub kind: String,
    /// Standard metadata; events are named `<object name>.<hex nanoseconds>`.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The object the event is about.
    #[serde(default)]
    pub involved_object: ObjectReference,
    /// A short UpperCamelCase reason (`Created`, `FailedSync`) — what automation switches on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Who reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<EventSource>,
    /// First occurrence (RFC 3339, seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_timestamp: Option<String>,
    /// Latest occurrence (RFC 3339, seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_timestamp: Option<String>,
    /// Occurrences so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    /// `Normal` or `Warning`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The reporting controller (`reportingComponent` on the wire; events.k8s.io calls it `reportingController`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_component: Option<String>,
    /// The reporting instance (`reportingInstance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_instance: Option<String>,
    /// Other fields (`eventTime`, `series`, `action`, `related`...), verbatim.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

crate::object!(Event, group: "", version: "v1", kind: "Event", plural: "events", namespaced: true);
