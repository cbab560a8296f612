//! What each built-in resource's registry does that discovery and OpenAPI do not say: when the generation counts,
//! which names are valid, which fields a field selector accepts, whether a delete answers the deleted object, the
//! scale subresource's paths, the table columns. Typed from kube-apiserver 1.34's `pkg/registry/<group>/<kind>`
//! (each strategy's `PrepareForCreate`, `GetAttrs`/`SelectableFields`, the storage's `ReturnDeletedObject`, the
//! printers of `pkg/printers/internalversion`); the rest of each resource comes from the generated
//! [`builtin_catalog`](crate::registry::builtin_catalog).
//!
//! A resource not named here gets the generic registry's behaviour: generation untracked, DNS-subdomain names,
//! `metadata.name`/`metadata.namespace` selectors, a `Status` answering a delete, NAME and AGE columns.

use kube_informer::object::ApiResource;

use crate::api::meta::GenerationRule;
use crate::registry::builtin_catalog::Entry;
use crate::registry::printers;
use crate::registry::resource::{NameRule, ResourceSpec};
use crate::registry::scale::ScaleSubresource;

/// Resources whose storage sets `ReturnDeletedObject: true`: a DELETE answers the object as it was when deleted
/// (`pkg/registry/core/{pod,service,namespace,serviceaccount,persistentvolume,persistentvolumeclaim}/storage`,
/// `pkg/registry/storage/{storageclass,volumeattachment,csidriver,csinode}/storage`).
const RETURN_DELETED_OBJECT: [&str; 10] = [
    "pods",
    "services",
    "namespaces",
    "serviceaccounts",
    "persistentvolumes",
    "persistentvolumeclaims",
    "storageclasses.storage.k8s.io",
    "volumeattachments.storage.k8s.io",
    "csidrivers.storage.k8s.io",
    "csinodes.storage.k8s.io",
];

/// Resources whose strategy sets `metadata.generation` to 1 on create and bumps it when the spec changes
/// (`PrepareForUpdate` comparing specs); deployments, whose annotations count too, are apart.
const SPEC_GENERATION: [&str; 17] = [
    "pods",
    "replicationcontrollers",
    "daemonsets.apps",
    "replicasets.apps",
    "statefulsets.apps",
    "jobs.batch",
    "cronjobs.batch",
    "horizontalpodautoscalers.autoscaling",
    "poddisruptionbudgets.policy",
    "ingresses.networking.k8s.io",
    "networkpolicies.networking.k8s.io",
    "flowschemas.flowcontrol.apiserver.k8s.io",
    "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
    "mutatingwebhookconfigurations.admissionregistration.k8s.io",
    "validatingwebhookconfigurations.admissionregistration.k8s.io",
    "validatingadmissionpolicies.admissionregistration.k8s.io",
    "validatingadmissionpolicybindings.admissionregistration.k8s.io",
];

/// The fields each resource's `GetAttrs` offers to field selectors, besides `metadata.name` and
/// `metadata.namespace`.
fn selectable_fields(id: &str) -> &'static [&'static str] {
    match id {
        "pods" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        "events" | "events.events.k8s.io" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "namespaces" => &["status.phase"],
        "secrets" => &["type"],
        "nodes" => &["spec.unschedulable"],
        "replicationcontrollers" | "replicasets.apps" => &["status.replicas"],
        "jobs.batch" => &["status.successful"],
        "certificatesigningrequests.certificates.k8s.io" => &["spec.signerName"],
        _ => &[],
    }
}

/// The field labels whose value `GetAttrs` computes: (label, the JSON path read, the value when it is absent). A
/// Node's `spec.unschedulable` is `fmt.Sprint` of a bool (`false` when unset), a Job's `status.successful` counts
/// `status.succeeded`, a core Event's `source` is its source's component.
fn field_label_sources(id: &str) -> &'static [(&'static str, &'static str, &'static str)] {
    match id {
        "nodes" => &[("spec.unschedulable", "spec.unschedulable", "false")],
        "pods" => &[("spec.hostNetwork", "spec.hostNetwork", "false")],
        "replicationcontrollers" | "replicasets.apps" => &[("status.replicas", "status.replicas", "0")],
        "jobs.batch" => &[("status.successful", "status.succeeded", "0")],
        "events" => &[("source", "source.component", "")],
        _ => &[],
    }
}

/// The spec of a catalog resource, with its registry's rules.
pub(crate) fn spec(entry: &'static Entry) -> ResourceSpec {
    let api = ApiResource::new(
        &entry.group,
        &entry.version,
        &entry.kind,
        &entry.plural,
        entry.namespaced,
    );
    let mut spec = ResourceSpec::new(api).generation(GenerationRule::Untracked);
    spec.catalog = Some(entry);
    spec.singular = Some(entry.singular.clone());
    for name in &entry.short_names {
        spec = spec.short_name(name);
    }
    for category in &entry.categories {
        spec = spec.category(category);
    }
    if entry.subresource("status").is_some() {
        spec = spec.with_status_subresource();
    }
    if entry.subresource("scale").is_some() {
        // Every built-in scale subresource reads `.spec.replicas`, `.status.replicas` and the `.spec.selector`.
        spec = spec.with_scale_subresource(ScaleSubresource::deployment());
    }
    let id = spec.id();
    for field in selectable_fields(&id) {
        spec = spec.selectable_field(field);
    }
    spec.field_label_sources = field_label_sources(&id).to_vec();
    if RETURN_DELETED_OBJECT.contains(&id.as_str()) {
        spec = spec.delete_returns_object();
    }
    if SPEC_GENERATION.contains(&id.as_str()) {
        spec = spec.generation(GenerationRule::Spec);
    }
    spec = match id.as_str() {
        "configmaps" => spec.printer_columns(printers::config_maps()),
        "secrets" => spec.printer_columns(printers::secrets()),
        "namespaces" => spec.names(NameRule::Label).printer_columns(printers::namespaces()),
        "events" => spec.printer_columns(printers::events()),
        "pods" => spec.printer_columns(printers::pods()),
        "nodes" => spec.printer_columns(printers::nodes()),
        "services" => spec.names(NameRule::Label).printer_columns(printers::services()),
        "leases.coordination.k8s.io" => spec.printer_columns(printers::leases()),
        "componentstatuses" => spec.printer_columns(printers::component_statuses()),
        // RBAC's `ValidateRBACName`: any name that is a valid path segment.
        "roles.rbac.authorization.k8s.io"
        | "clusterroles.rbac.authorization.k8s.io"
        | "rolebindings.rbac.authorization.k8s.io"
        | "clusterrolebindings.rbac.authorization.k8s.io" => spec.names(NameRule::PathSegment),
        "deployments.apps" => spec
            .generation(GenerationRule::SpecAndAnnotations)
            .printer_columns(printers::deployments()),
        _ => spec,
    };
    spec.with_builtin_rules()
}
