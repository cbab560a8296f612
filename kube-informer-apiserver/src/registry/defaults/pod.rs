//! Pods, and the pod template inside workloads: `SetDefaults_PodSpec` and the defaulters the generated
//! `SetObjectDefaults_Pod` runs for containers, probes, volumes and resource lists; `SetDefaults_Pod` (pods only);
//! the pod strategy's `PrepareForCreate` (status `Pending` with the QoS class, the scheduling-gated condition, label
//! keys merged into affinity and spread selectors, AppArmor annotations copied to fields) and the status strategy's
//! `PrepareForUpdate`.

use serde_json::{Value, json};

use super::image::default_pull_policy;
use super::{
    Cluster, Object, absent, child, child_or_empty, default_num, default_ptr, default_str, items, qos, text, zero_num,
};
use crate::api::errors::Failure;
use crate::api::meta;
use crate::api::quantity::{canonical_field, default_resource_list};
use kube_informer::object::time::format_rfc3339;

/// The three lists of containers a pod spec has.
const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// `SetObjectDefaults_Pod`.
pub(super) fn default_pod(obj: &mut Object) {
    if let Some(spec) = child_or_empty(obj, "spec") {
        pod_only_defaults(spec);
        default_pod_spec(spec);
    }
    if let Some(status) = child_or_empty(obj, "status") {
        for list in [
            "initContainerStatuses",
            "containerStatuses",
            "ephemeralContainerStatuses",
        ] {
            for s in items(status, list) {
                default_resource_list(s, "allocatedResources");
                if let Some(r) = child(s, "resources") {
                    default_resource_list(r, "limits");
                    default_resource_list(r, "requests");
                }
            }
        }
    }
}

/// `SetDefaults_Pod`: what a pod gets and a template does not — requests copied from limits where a container has
/// none, `enableServiceLinks: true`, host ports equal to container ports on the host network.
fn pod_only_defaults(spec: &mut Object) {
    for list in ["containers", "initContainers"] {
        for c in items(spec, list) {
            let Some(resources) = child(c, "resources") else {
                continue;
            };
            let Some(limits) = resources
                .get("limits")
                .and_then(Value::as_object)
                .filter(|l| !l.is_empty())
                .cloned()
            else {
                continue;
            };
            if let Some(requests) = child_or_empty(resources, "requests") {
                for (k, v) in limits {
                    requests.entry(k).or_insert(v);
                }
            }
        }
    }
    default_ptr(spec, "enableServiceLinks", true);
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        for list in ["containers", "initContainers"] {
            for c in items(spec, list) {
                for p in items(c, "ports") {
                    if zero_num(p, "hostPort")
                        && let Some(port) = p.get("containerPort").cloned()
                    {
                        p.insert("hostPort".into(), port);
                    }
                }
            }
        }
    }
}

/// A `PodTemplateSpec` (a deployment's `spec.template`): its metadata as a Go round-trip of `ObjectMeta` leaves it
/// (no `creationTimestamp: null` since Kubernetes 1.33, no empty maps) and `SetDefaults_PodSpec` with the nested
/// defaulters.
pub(super) fn default_pod_template(template: &mut Object) {
    if let Some(m) = child_or_empty(template, "metadata") {
        meta::normalize(m);
    }
    if let Some(spec) = child_or_empty(template, "spec") {
        default_pod_spec(spec);
    }
}

/// `SetDefaults_PodSpec` and the defaulters of everything nested in a pod spec.
fn default_pod_spec(spec: &mut Object) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    child_or_empty(spec, "securityContext");
    default_ptr(spec, "terminationGracePeriodSeconds", 30);
    default_str(spec, "schedulerName", "default-scheduler");
    for v in items(spec, "volumes") {
        default_volume(v);
    }
    for list in CONTAINER_LISTS {
        for c in items(spec, list) {
            default_container(c);
        }
    }
    default_resource_list(spec, "overhead");
    if let Some(r) = child(spec, "resources") {
        default_resource_list(r, "limits");
        default_resource_list(r, "requests");
    }
}

/// `SetDefaults_Container` and the defaulters of a container's ports, environment, resources, probes and lifecycle
/// hooks; `resources` is a struct Go always encodes.
fn default_container(c: &mut Object) {
    if empty_pull_policy(c) {
        let policy = default_pull_policy(text(c, "image"));
        c.insert("imagePullPolicy".into(), Value::from(policy));
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    for p in items(c, "ports") {
        default_str(p, "protocol", "TCP");
    }
    for e in items(c, "env") {
        if let Some(from) = child(e, "valueFrom") {
            if let Some(field_ref) = child(from, "fieldRef") {
                default_str(field_ref, "apiVersion", "v1");
            }
            if let Some(resource_ref) = child(from, "resourceFieldRef") {
                divisor(resource_ref);
            }
        }
    }
    if let Some(r) = child_or_empty(c, "resources") {
        default_resource_list(r, "limits");
        default_resource_list(r, "requests");
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = child(c, probe) {
            default_probe(p);
        }
    }
    if let Some(lifecycle) = child(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(get) = child(lifecycle, hook).and_then(|h| child(h, "httpGet")) {
                default_http_get(get);
            }
        }
    }
}

fn empty_pull_policy(c: &Object) -> bool {
    super::empty_str(c, "imagePullPolicy")
}

/// `SetDefaults_Probe`, its `httpGet` and `grpc` handlers.
fn default_probe(p: &mut Object) {
    default_num(p, "timeoutSeconds", 1);
    default_num(p, "periodSeconds", 10);
    default_num(p, "successThreshold", 1);
    default_num(p, "failureThreshold", 3);
    if let Some(get) = child(p, "httpGet") {
        default_http_get(get);
    }
    if let Some(grpc) = child(p, "grpc") {
        default_ptr(grpc, "service", "");
    }
}

/// `SetDefaults_HTTPGetAction`.
fn default_http_get(get: &mut Object) {
    default_str(get, "path", "/");
    default_str(get, "scheme", "HTTP");
}

/// The keys of a volume that are not a volume source.
const NOT_SOURCES: [&str; 1] = ["name"];

/// `SetDefaults_Volume` (an `emptyDir` when no source is set) and the defaulters of the sources.
fn default_volume(v: &mut Object) {
    let has_source = v
        .iter()
        .any(|(k, val)| !NOT_SOURCES.contains(&k.as_str()) && !val.is_null());
    if !has_source {
        v.insert("emptyDir".into(), json!({}));
    }
    if let Some(empty_dir) = child(v, "emptyDir") {
        canonical_field(empty_dir, "sizeLimit");
    }
    if let Some(host_path) = child(v, "hostPath") {
        default_ptr(host_path, "type", "");
    }
    for (source, mode) in [
        ("secret", 0o644),
        ("configMap", 0o644),
        ("downwardAPI", 0o644),
        ("projected", 0o644),
    ] {
        if let Some(s) = child(v, source) {
            default_ptr(s, "defaultMode", mode);
        }
    }
    if let Some(d) = child(v, "downwardAPI") {
        default_field_refs(d);
    }
    if let Some(p) = child(v, "projected") {
        for s in items(p, "sources") {
            if let Some(d) = child(s, "downwardAPI") {
                default_field_refs(d);
            }
            if let Some(t) = child(s, "serviceAccountToken") {
                default_ptr(t, "expirationSeconds", 3600);
            }
        }
    }
    if let Some(iscsi) = child(v, "iscsi") {
        default_str(iscsi, "iscsiInterface", "default");
    }
    if let Some(rbd) = child(v, "rbd") {
        default_str(rbd, "pool", "rbd");
        default_str(rbd, "user", "admin");
        default_str(rbd, "keyring", "/etc/ceph/keyring");
    }
    if let Some(disk) = child(v, "azureDisk") {
        default_ptr(disk, "cachingMode", "ReadWrite");
        default_ptr(disk, "fsType", "ext4");
        default_ptr(disk, "readOnly", false);
        default_ptr(disk, "kind", "Shared");
    }
    if let Some(scale_io) = child(v, "scaleIO") {
        default_str(scale_io, "storageMode", "ThinProvisioned");
        default_str(scale_io, "fsType", "xfs");
    }
    let claim = child(v, "ephemeral").and_then(|e| child(e, "volumeClaimTemplate"));
    if let Some(spec) = claim.and_then(|t| child(t, "spec")) {
        default_ptr(spec, "volumeMode", "Filesystem");
        if let Some(r) = child(spec, "resources") {
            default_resource_list(r, "limits");
            default_resource_list(r, "requests");
        }
    }
}

/// `SetDefaults_ObjectFieldSelector` for every item of a downward API source, and its resource references' divisors.
fn default_field_refs(d: &mut Object) {
    for item in items(d, "items") {
        if let Some(f) = child(item, "fieldRef") {
            default_str(f, "apiVersion", "v1");
        }
        if let Some(r) = child(item, "resourceFieldRef") {
            divisor(r);
        }
    }
}

/// A resource reference's `divisor` is a `Quantity` struct, which Go always writes: `"0"` when unset.
fn divisor(resource_ref: &mut Object) {
    if absent(resource_ref, "divisor") {
        resource_ref.insert("divisor".into(), Value::from("0"));
    }
    canonical_field(resource_ref, "divisor");
}

/// The pod strategy's `PrepareForCreate`.
pub(super) fn create_pod(obj: &mut Object, _: &Cluster<'_>) -> Result<(), Failure> {
    let qos = obj
        .get("spec")
        .and_then(Value::as_object)
        .map_or("BestEffort", qos::pod_qos);
    let mut status = json!({"phase": "Pending", "qosClass": qos});
    let labels = obj
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let annotations = obj
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(spec) = child(obj, "spec") {
        let gated = spec
            .get("schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if gated {
            status["conditions"] = json!([{
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": null,
                "lastTransitionTime": format_rfc3339(std::time::SystemTime::now()),
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }]);
        }
        merge_label_keys(spec, &labels);
        apparmor_annotations_to_fields(spec, &annotations);
    }
    obj.insert("status".into(), status);
    Ok(())
}

/// `mutatePodAffinity` and `mutateTopologySpreadConstraints`: the values of the pod's labels named by
/// `matchLabelKeys` (`In`) and `mismatchLabelKeys` (`NotIn`) join the term's label selector, when it has one.
fn merge_label_keys(spec: &mut Object, labels: &Object) {
    fn apply(term: &mut Object, labels: &Object, keys: &[(&str, &str)]) {
        let mut added = Vec::new();
        for (field, operator) in keys {
            for key in term.get(*field).and_then(Value::as_array).into_iter().flatten() {
                let Some(key) = key.as_str() else { continue };
                if let Some(value) = labels.get(key) {
                    added.push(json!({"key": key, "operator": operator, "values": [value]}));
                }
            }
        }
        if added.is_empty() {
            return;
        }
        let Some(selector) = child(term, "labelSelector") else {
            return;
        };
        if let Some(Value::Array(exprs)) = selector.get_mut("matchExpressions") {
            exprs.extend(added);
        } else if absent(selector, "matchExpressions") {
            selector.insert("matchExpressions".into(), Value::Array(added));
        }
    }
    let affinity_keys = [("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")];
    if let Some(affinity) = child(spec, "affinity") {
        for kind in ["podAffinity", "podAntiAffinity"] {
            let Some(a) = child(affinity, kind) else { continue };
            for term in items(a, "requiredDuringSchedulingIgnoredDuringExecution") {
                apply(term, labels, &affinity_keys);
            }
            for weighted in items(a, "preferredDuringSchedulingIgnoredDuringExecution") {
                if let Some(term) = child(weighted, "podAffinityTerm") {
                    apply(term, labels, &affinity_keys);
                }
            }
        }
    }
    for constraint in items(spec, "topologySpreadConstraints") {
        apply(constraint, labels, &[("matchLabelKeys", "In")]);
    }
}

/// `applyAppArmorVersionSkew`: a container's deprecated AppArmor annotation becomes its
/// `securityContext.appArmorProfile` when it has none and the profile differs from the pod's.
fn apparmor_annotations_to_fields(spec: &mut Object, annotations: &Object) {
    const PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";
    let windows = spec.get("os").and_then(|o| o.get("name")).and_then(Value::as_str) == Some("windows");
    if windows || !annotations.keys().any(|k| k.starts_with(PREFIX)) {
        return;
    }
    let pod_profile = spec
        .get("securityContext")
        .and_then(|s| s.get("appArmorProfile"))
        .filter(|p| !p.is_null())
        .cloned();
    for list in CONTAINER_LISTS {
        for c in items(spec, list) {
            let key = format!("{PREFIX}{}", text(c, "name"));
            let Some(annotation) = annotations.get(&key).and_then(Value::as_str) else {
                continue;
            };
            let has_field = c
                .get("securityContext")
                .and_then(|s| s.get("appArmorProfile"))
                .is_some_and(|p| !p.is_null());
            if has_field {
                continue;
            }
            let field = match annotation {
                "unconfined" => Some(json!({"type": "Unconfined"})),
                "runtime/default" => Some(json!({"type": "RuntimeDefault"})),
                a => a
                    .strip_prefix("localhost/")
                    .filter(|p| !p.is_empty() && p.len() <= 4095)
                    .map(|p| json!({"type": "Localhost", "localhostProfile": p})),
            };
            if let Some(field) = field.filter(|f| Some(f) != pod_profile.as_ref())
                && let Some(sc) = child_or_empty(c, "securityContext")
            {
                sc.insert("appArmorProfile".into(), field);
            }
        }
    }
}

/// The pod status strategy's `PrepareForUpdate` (the spec and metadata are kept by the generic rules): the QoS class
/// and `observedGeneration`s a write leaves out are kept.
pub(super) fn update_pod(new: &mut Object, old: &Object, status_only: bool, _: &Cluster<'_>) -> Result<(), Failure> {
    if !status_only {
        return Ok(());
    }
    let no_status = Object::new();
    let old_status = old.get("status").and_then(Value::as_object).unwrap_or(&no_status);
    let Some(status) = child_or_empty(new, "status") else {
        return Ok(());
    };
    for key in ["qosClass", "observedGeneration"] {
        let unset = if key == "qosClass" {
            super::empty_str(status, key)
        } else {
            zero_num(status, key)
        };
        if let (true, Some(v)) = (unset, old_status.get(key)) {
            status.insert(key.into(), v.clone());
        }
    }
    // Conditions keep the observedGeneration of the old condition of the same type, in order.
    let mut old_generations: Vec<(String, Value)> = old_status
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let generation = c.get("observedGeneration").cloned().unwrap_or(Value::Null);
            Some((c.get("type")?.as_str()?.to_owned(), generation))
        })
        .collect();
    for c in items(status, "conditions") {
        let kind = text(c, "type").to_owned();
        let Some(i) = old_generations.iter().position(|(t, _)| *t == kind) else {
            continue;
        };
        let (_, generation) = old_generations.remove(i);
        if zero_num(c, "observedGeneration") && !generation.is_null() {
            c.insert("observedGeneration".into(), generation);
        }
    }
    Ok(())
}
