//! What each built-in resource's registry does that discovery and OpenAPI do not say: when the generation counts,
//! which names are valid, which fields a field selector accepts, whether a delete answers the deleted object, the
//! scale subresource's paths, the table columns. Typed from kube-apiserver 1.34's `pkg/registry/<group>/<kind>`
//! (each strategy's `PrepareForCreate`, `GetAttrs`/`SelectableFields`, the storage's `ReturnDeletedObject`, the
//! printers of `pkg/printers/internalversion`); the rest of each resource comes from the generated
//! [`builtin_catalog`].
//!
//! The catalog builds the specs ([`ResourceSpec::defaults`], the CRD resource's [`crd_resource`]) and attaches each
//! kind's rules ([`defaults`]' function values): a spec knows neither the catalog nor the
//! rules' code.
//!
//! A resource not named here gets the generic registry's behaviour: generation untracked, DNS-subdomain names,
//! `metadata.name`/`metadata.namespace` selectors, a `Status` answering a delete, NAME and AGE columns.

use kube_informer::object::ApiResource;

use crate::api::meta::GenerationRule;
use crate::registry::builtin_catalog::{self, Entry};
use crate::registry::resource::{NameRule, ResourceSpec, SchemaSlot};
use crate::registry::scale_subresource::ScaleSubresource;
use crate::registry::{conversion, crd, defaults, printers};

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
    with_builtin_rules(spec)
}

/// Attaches kube-apiserver's rules for this kind, and the schema Kubernetes publishes for it when the resource
/// is one of the catalog's (read from the generated data the first time it is needed).
fn with_builtin_rules(mut spec: ResourceSpec) -> ResourceSpec {
    spec.builtin = defaults::rules(&spec.api.api_version(), &spec.api.kind);
    if let Some(entry) = spec.catalog {
        spec.schema = SchemaSlot::Builtin(entry);
    }
    spec
}

/// The CRD resource, served by every server as kube-apiserver does.
pub(crate) fn crd_resource() -> ResourceSpec {
    let spec = ResourceSpec::new(ApiResource::new(
        crd::GROUP,
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ))
    .with_status_subresource()
    .short_name("crd")
    .short_name("crds")
    .category("api-extensions");
    let mut spec = with_builtin_rules(spec).printer_columns(printers::default_convertor());
    spec.catalog = builtin_catalog::entry(crd::GROUP, "v1", "customresourcedefinitions");
    spec
}

impl ResourceSpec {
    /// The resources registered unless
    /// [`ApiServerBuilder::no_default_resources`](crate::ApiServerBuilder::no_default_resources): every resource
    /// kube-apiserver 1.34 serves by default — each resource of each stable group-version, from core/v1 `pods` to
    /// resource.k8s.io/v1 `resourceslices` — with the scope, verbs, subresources, singular and short names and
    /// categories its discovery gives, generated from Kubernetes' published OpenAPI and discovery documents
    /// (`tools/k8s-schemas/`). CustomResourceDefinitions are registered beside them by the server itself; the access
    /// reviews, token reviews and bindings, which store nothing, are answered by the server without a resource of their
    /// own.
    ///
    /// Each carries the OpenAPI schema Kubernetes 1.34 publishes for its kind (see
    /// [`object_schema`](Self::object_schema)), which makes it accept strategic merge patches, and its registry's
    /// rules: when generations count (pods, the workload controllers, …; deployments also on annotation changes),
    /// the field selectors it accepts, whether a delete answers the deleted object (pods, services, namespaces, …),
    /// the `scale` subresource where kube has it (`.spec.replicas`, `.status.replicas`, `.spec.selector`), the table
    /// columns of kube-apiserver's printers (config maps DATA; pods READY, STATUS, RESTARTS, and IP, NODE, … in
    /// wide output; NAME and AGE for kinds without one here).
    ///
    /// Their objects are defaulted as kube-apiserver defaults them where the fidelity table says so (a secret's
    /// `type: Opaque`, a deployment's strategy and pod template, a service's cluster IP, …).
    ///
    /// ```
    /// use kube_informer::object::ApiResource;
    /// use kube_informer_apiserver::ApiServer;
    /// use serde_json::json;
    ///
    /// let server = ApiServer::start().unwrap();
    /// let secrets = ApiResource::new("", "v1", "Secret", "secrets", true);
    /// let created = server.create_json(&secrets, Some("default"), json!({"metadata": {"name": "pw"}})).unwrap();
    /// assert_eq!(created["type"], "Opaque");
    /// ```
    pub fn defaults() -> Vec<ResourceSpec> {
        let entries = builtin_catalog::entries();
        entries
            .iter()
            .filter(|e| e.stored() && e.group != crd::GROUP)
            // A resource served in several versions (autoscaling v2 and v1) is served in its preferred one.
            .filter(|e| {
                !entries.iter().any(|o| {
                    o.group == e.group
                        && o.plural == e.plural
                        && conversion::priority(&o.version, &e.version) == std::cmp::Ordering::Less
                })
            })
            .map(spec)
            .collect()
    }
}
