//! core/v1 Service: `SetDefaults_Service`, the strategy's `PrepareForCreate` / `PrepareForUpdate` (an empty status;
//! `dropTypeDependentFields`), around the REST storage's allocations ([`service_alloc`](super::service_alloc)).

use serde_json::{Value, json};

use super::service_alloc::{allocate_create, allocate_update, needs_health_check};
use super::{Cluster, Object, absent, child_or_empty, default_ptr, default_str, items, text};
use crate::api::errors::Failure;

fn externally_accessible(spec: &Object) -> bool {
    match text(spec, "type") {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => spec
            .get("externalIPs")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty()),
        _ => false,
    }
}

/// `SetDefaults_Service`, and the status struct Go always encodes (`status.loadBalancer`).
pub(super) fn default_service(obj: &mut Object) {
    if let Some(spec) = child_or_empty(obj, "spec") {
        default_str(spec, "sessionAffinity", "None");
        match text(spec, "sessionAffinity") {
            "None" => {
                spec.remove("sessionAffinityConfig");
            }
            "ClientIP" => {
                let timeout = spec
                    .get("sessionAffinityConfig")
                    .and_then(|c| c.get("clientIP"))
                    .and_then(|c| c.get("timeoutSeconds"))
                    .filter(|t| !t.is_null());
                if timeout.is_none() {
                    spec.insert(
                        "sessionAffinityConfig".into(),
                        json!({"clientIP": {"timeoutSeconds": 10800}}),
                    );
                }
            }
            _ => {}
        }
        default_str(spec, "type", "ClusterIP");
        for p in items(spec, "ports") {
            default_str(p, "protocol", "TCP");
            let unset = match p.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(_) => false,
            };
            if unset {
                let port = p
                    .get("port")
                    .filter(|v| v.is_number())
                    .cloned()
                    .unwrap_or(Value::from(0));
                p.insert("targetPort".into(), port);
            }
        }
        if externally_accessible(spec) {
            default_str(spec, "externalTrafficPolicy", "Cluster");
        }
        if matches!(text(spec, "type"), "NodePort" | "LoadBalancer" | "ClusterIP") {
            default_ptr(spec, "internalTrafficPolicy", "Cluster");
        }
        if text(spec, "type") == "LoadBalancer" {
            default_ptr(spec, "allocateLoadBalancerNodePorts", true);
        }
    }
    let load_balancer = obj.get("spec").and_then(|s| s.get("type")).and_then(Value::as_str) == Some("LoadBalancer");
    let Some(status) = child_or_empty(obj, "status") else {
        return;
    };
    let Some(lb) = child_or_empty(status, "loadBalancer") else {
        return;
    };
    if load_balancer {
        for ingress in items(lb, "ingress") {
            if !text(ingress, "ip").is_empty() {
                default_ptr(ingress, "ipMode", "VIP");
            }
        }
    }
}

fn name_of(obj: &Object) -> String {
    obj.get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// `beginCreate`'s allocations, then `PrepareForCreate`: an empty status.
pub(super) fn create_service(obj: &mut Object, cluster: &Cluster<'_>) -> Result<(), Failure> {
    let name = name_of(obj);
    if let Some(spec) = child_or_empty(obj, "spec") {
        allocate_create(spec, &name, cluster)?;
    }
    obj.insert("status".into(), json!({"loadBalancer": {}}));
    Ok(())
}

/// `beginUpdate`'s allocations, then `PrepareForUpdate` (the status is kept by the generic rules) with
/// `dropTypeDependentFields`. A status write changes nothing else.
pub(super) fn update_service(
    new: &mut Object,
    old: &Object,
    status_only: bool,
    cluster: &Cluster<'_>,
) -> Result<(), Failure> {
    if status_only {
        return Ok(());
    }
    let name = name_of(new);
    let no_spec = Object::new();
    let old_spec = old.get("spec").and_then(Value::as_object).unwrap_or(&no_spec);
    let Some(spec) = child_or_empty(new, "spec") else {
        return Ok(());
    };
    allocate_update(spec, old_spec, &name, cluster)?;
    let left_load_balancer = drop_type_dependent_fields(spec, old_spec);
    if left_load_balancer && let Some(status) = child_or_empty(new, "status") {
        status.insert("loadBalancer".into(), json!({}));
    }
    Ok(())
}

/// `dropTypeDependentFields`: what the old type needed and the new one does not is wiped, when the write left it as
/// it was (the system may have set it). True when the service stopped being a load balancer (its status goes too).
fn drop_type_dependent_fields(new: &mut Object, old: &Object) -> bool {
    let same = |k: &str, new: &Object| new.get(k).filter(|v| !v.is_null()) == old.get(k).filter(|v| !v.is_null());
    let kind = |s: &Object| text(s, "type").to_owned();
    let needs_ip = |s: &Object| kind(s) != "ExternalName";
    let needs_node_port = |s: &Object| matches!(kind(s).as_str(), "NodePort" | "LoadBalancer");
    if needs_ip(old) && !needs_ip(new) {
        if same("clusterIP", new) && same("clusterIPs", new) {
            new.remove("clusterIP");
            new.remove("clusterIPs");
        }
        if same("ipFamilies", new) {
            new.remove("ipFamilies");
        }
        if same("ipFamilyPolicy", new) {
            new.remove("ipFamilyPolicy");
        }
    }
    // `sameNodePorts`: the write adds no node port the old service did not have.
    let node_ports = |s: &Object| -> Vec<u64> {
        s.get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("nodePort").and_then(Value::as_u64).filter(|n| *n != 0))
            .collect()
    };
    let (old_ports, new_ports) = (node_ports(old), node_ports(new));
    let no_new_ports = new_ports.iter().all(|p| old_ports.contains(p));
    if needs_node_port(old) && !needs_node_port(new) && no_new_ports {
        for p in items(new, "ports") {
            p.remove("nodePort");
        }
    }
    if needs_health_check(old) && !needs_health_check(new) && same("healthCheckNodePort", new) {
        new.remove("healthCheckNodePort");
    }
    let left_load_balancer = kind(old) == "LoadBalancer" && kind(new) != "LoadBalancer";
    if left_load_balancer {
        if !absent(new, "allocateLoadBalancerNodePorts") && same("allocateLoadBalancerNodePorts", new) {
            new.remove("allocateLoadBalancerNodePorts");
        }
        if same("loadBalancerClass", new) {
            new.remove("loadBalancerClass");
        }
    }
    if externally_accessible(old) && !externally_accessible(new) && same("externalTrafficPolicy", new) {
        new.remove("externalTrafficPolicy");
    }
    left_load_balancer
}
