//! The objects kube-apiserver creates itself when it starts, which every fresh cluster has: the `default`,
//! `kube-system`, `kube-public` and `kube-node-lease` namespaces (its system namespaces controller), the `kubernetes`
//! Service in `default` with its Endpoints and EndpointSlice naming the server itself (its endpoint reconciler), the
//! `system-node-critical` and `system-cluster-critical` PriorityClasses (the scheduling post-start hook).
//!
//! Not here: what the controller-manager creates (service account `default` in each namespace, its token, the
//! `kube-root-ca.crt` config maps, leases of the nodes), nor the bootstrap RBAC policy and the priority-and-fairness
//! configuration, which are the work of other parts.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::api::errors::Failure;
use crate::patch::managed_fields::SERVER;
use crate::registry::Store;
use crate::registry::strategy;

/// The namespaces kube-apiserver creates.
pub(crate) const NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The `kubernetes` Service's cluster IP: the first of the service range (kubeadm's `10.96.0.0/12`).
pub(crate) const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// Creates `obj` of `resource` (`plural` or `plural.group`) in `namespace` as kube-apiserver, when that resource is
/// served. An object already there is left as it is.
fn create(store: &Store, resource: &str, namespace: Option<&str>, obj: Value) -> Result<(), Failure> {
    let Some(spec) = store.lock().spec(resource) else {
        return Ok(());
    };
    match strategy::create(store, &spec, namespace, obj, false, SERVER, &mut |_| {}) {
        Err(st) if st.code == 409 => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Creates namespace `name` (as a client would, defaulted as any).
pub(crate) fn namespace(store: &Store, name: &str) -> Result<(), Failure> {
    create(
        store,
        "namespaces",
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    )
}

/// Creates what a fresh cluster has; `addr` is where clients reach the server (the `kubernetes` Service's
/// endpoint).
pub(crate) fn create_all(store: &Store, addr: SocketAddr) -> Result<(), Failure> {
    for name in NAMESPACES {
        namespace(store, name)?;
    }
    create(
        store,
        "services",
        Some("default"),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {
                "clusterIP": KUBERNETES_SERVICE_IP,
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": addr.port()}],
                "sessionAffinity": "None",
                "type": "ClusterIP",
            },
        }),
    )?;
    let ip = addr.ip().to_string();
    let family = if addr.is_ipv4() { "IPv4" } else { "IPv6" };
    let port = json!({"name": "https", "port": addr.port(), "protocol": "TCP"});
    create(
        store,
        "endpoints",
        Some("default"),
        json!({
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [port]}],
        }),
    )?;
    create(
        store,
        "endpointslices.discovery.k8s.io",
        Some("default"),
        json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": family,
            "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
            "ports": [port],
        }),
    )?;
    for (name, value, description) in [
        (
            "system-node-critical",
            2_000_001_000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        (
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
    ] {
        create(
            store,
            "priorityclasses.scheduling.k8s.io",
            None,
            json!({
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "description": description,
                "preemptionPolicy": "PreemptLowerPriority",
            }),
        )?;
    }
    Ok(())
}
