//! The core/v1 kinds without pods and services: Secret, Namespace, Node, Event, and coordination/v1 Lease.

use serde_json::{Value, json};

use super::{Cluster, Object, absent, child, child_or_empty, default_str};
use crate::api::errors::Failure;
use crate::api::quantity;

/// The label every namespace carries with its own name (`v1.LabelMetadataName`).
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// `SetDefaults_Secret`: a secret without type is `Opaque`.
pub(super) fn default_secret(obj: &mut Object) {
    default_str(obj, "type", "Opaque");
}

/// `SetDefaults_Namespace` (the name label, once the name is known) and `SetDefaults_NamespaceStatus` (phase
/// `Active`); `spec` and `status` are structs Go always encodes.
pub(super) fn default_namespace(obj: &mut Object) {
    label_with_name(obj);
    child_or_empty(obj, "spec");
    if let Some(status) = child_or_empty(obj, "status") {
        default_str(status, "phase", "Active");
    }
}

/// `kubernetes.io/metadata.name: <name>` when the name is known (the defaulting and the strategy's `Canonicalize`,
/// which runs once `generateName` made the name).
fn label_with_name(obj: &mut Object) {
    let name = obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        return;
    }
    let name = Value::String(name.to_owned());
    if let Some(labels) = child(obj, "metadata").and_then(|m| child_or_empty(m, "labels")) {
        labels.insert(NAMESPACE_NAME_LABEL.to_owned(), name);
    }
}

/// The namespace strategy's `PrepareForCreate` (status `Active`, the `kubernetes` finalizer in `spec.finalizers`)
/// and `Canonicalize` (the name label with a generated name).
pub(super) fn create_namespace(obj: &mut Object, _: &Cluster<'_>) -> Result<(), Failure> {
    obj.insert("status".into(), json!({"phase": "Active"}));
    if let Some(spec) = child_or_empty(obj, "spec") {
        let finalizers = spec.entry("finalizers").or_insert(Value::Null);
        match finalizers {
            Value::Array(list) if !list.iter().any(|f| f == "kubernetes") => list.push(Value::from("kubernetes")),
            Value::Null => *finalizers = json!(["kubernetes"]),
            _ => {}
        }
    }
    label_with_name(obj);
    Ok(())
}

/// The namespace strategy's `PrepareForUpdate`: `spec.finalizers` only change through the `finalize` subresource
/// (the status is kept by the generic rules); then `Canonicalize`.
pub(super) fn update_namespace(
    new: &mut Object,
    old: &Object,
    status_only: bool,
    _: &Cluster<'_>,
) -> Result<(), Failure> {
    if status_only {
        return Ok(());
    }
    let kept = old.get("spec").and_then(|s| s.get("finalizers")).cloned();
    if let Some(spec) = child_or_empty(new, "spec") {
        match kept {
            Some(f) => spec.insert("finalizers".into(), f),
            None => spec.remove("finalizers"),
        };
    }
    label_with_name(new);
    Ok(())
}

/// `SetObjectDefaults_Node`: `status.allocatable` from `status.capacity`, both resource lists canonical; and the
/// structs Go always encodes (`spec`, `status.daemonEndpoints`, `status.nodeInfo` with its ten strings).
pub(super) fn default_node(obj: &mut Object) {
    child_or_empty(obj, "spec");
    let Some(status) = child_or_empty(obj, "status") else {
        return;
    };
    if absent(status, "allocatable") && !absent(status, "capacity") {
        let capacity = status["capacity"].clone();
        status.insert("allocatable".into(), capacity);
    }
    for list in ["capacity", "allocatable"] {
        quantity::default_resource_list(status, list);
    }
    if let Some(endpoints) = child_or_empty(status, "daemonEndpoints")
        && let Some(kubelet) = child_or_empty(endpoints, "kubeletEndpoint")
    {
        kubelet.entry("Port").or_insert(Value::from(0));
    }
    if let Some(info) = child_or_empty(status, "nodeInfo") {
        for key in [
            "machineID",
            "systemUUID",
            "bootID",
            "kernelVersion",
            "osImage",
            "containerRuntimeVersion",
            "kubeletVersion",
            "kubeProxyVersion",
            "operatingSystem",
            "architecture",
        ] {
            if absent(info, key) {
                info.insert(key.into(), Value::from(""));
            }
        }
    }
}

/// Events have no defaulting; Go always encodes `involvedObject` and `source` (structs), `reportingComponent` and
/// `reportingInstance` (no omitempty) and the zero times `firstTimestamp`, `lastTimestamp` and `eventTime` as null.
pub(super) fn default_event(obj: &mut Object) {
    child_or_empty(obj, "involvedObject");
    child_or_empty(obj, "source");
    for key in ["reportingComponent", "reportingInstance"] {
        if absent(obj, key) {
            obj.insert(key.into(), Value::from(""));
        }
    }
    for key in ["firstTimestamp", "lastTimestamp", "eventTime"] {
        obj.entry(key).or_insert(Value::Null);
    }
}

/// Leases have no defaulting; `spec` is a struct Go always encodes.
pub(super) fn default_lease(obj: &mut Object) {
    child_or_empty(obj, "spec");
}
