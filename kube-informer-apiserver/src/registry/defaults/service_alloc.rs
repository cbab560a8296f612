//! What the Service REST storage does around a write (`pkg/registry/core/service/storage`): IP family fields
//! initialised for the cluster, cluster IPs and node ports allocated, values allocated earlier kept when an update
//! leaves them out, and the cluster IP's immutability.
//!
//! The cluster is single-stack IPv4 with kubeadm's service range, `10.96.0.0/12` ([`SERVICE_CIDR`]), and the default
//! node port range, 30000–32767. As kube-apiserver's allocators do, a dynamic cluster IP is drawn at random from
//! above the range's static band (the first 256 addresses, kept for addresses users choose), falling back to the
//! static band when the rest is full; node ports likewise above the first 86 ports. `10.96.0.1` is the
//! `default/kubernetes` service's (which the server creates at start, as kube-apiserver does): no other service is
//! given it, even once that one is deleted (kube-apiserver's reconciler would create it again). What is taken is read
//! from the stored services at each write (under the store's lock), so a deleted service frees its addresses and a
//! dry run takes nothing.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Value, json};

use super::{Cluster, Object, absent, text, zero_num};
use crate::api::errors::{self, Failure, FieldError};
use crate::api::util::random_u64;
use kube_informer::object::Status;

/// The service IP range, as kube-apiserver's `--service-cluster-ip-range` (kubeadm's and kind's default).
pub(crate) const SERVICE_CIDR: &str = "10.96.0.0/12";
const NETWORK: u32 = 0x0a60_0000;
const PREFIX: u32 = 12;
/// Addresses in the range, network and broadcast addresses included.
const SIZE: u32 = 1 << (32 - PREFIX);
/// The static band: `min(max(16, size/16), 256)` addresses above the network address.
const IP_STATIC_BAND: u32 = 256;
/// `10.96.0.1`, the `kubernetes` service's.
const KUBERNETES_SERVICE_IP: u32 = NETWORK + 1;

const NODE_PORT_MIN: u16 = 30000;
const NODE_PORT_MAX: u16 = 32767;
/// The static band of node ports: `min(max(16, size/32), 128)`.
const PORT_STATIC_BAND: u16 = 86;

/// What other services hold.
struct Taken {
    ips: HashSet<u32>,
    ports: HashSet<u16>,
}

fn taken(cluster: &Cluster<'_>) -> Taken {
    let mut t = Taken {
        ips: HashSet::new(),
        ports: HashSet::new(),
    };
    if cluster.key() != "default/kubernetes" {
        t.ips.insert(KUBERNETES_SERVICE_IP);
    }
    for svc in cluster.others() {
        let Some(spec) = svc.get("spec").and_then(Value::as_object) else {
            continue;
        };
        for ip in cluster_ips(spec) {
            if let Ok(IpAddr::V4(v4)) = ip.parse::<IpAddr>() {
                t.ips.insert(u32::from(v4));
            }
        }
        for p in spec.get("ports").and_then(Value::as_array).into_iter().flatten() {
            if let Some(n) = p
                .get("nodePort")
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
            {
                t.ports.insert(n);
            }
        }
        if let Some(n) = spec.get("healthCheckNodePort").and_then(Value::as_u64)
            && let Ok(n) = u16::try_from(n)
        {
            t.ports.insert(n);
        }
    }
    t
}

fn invalid(name: &str, errs: Vec<FieldError>) -> Failure {
    errors::invalid("", "Service", name, errs)
}

/// `errors.NewInternalError`.
fn internal(message: &str) -> Failure {
    Box::new(Status::failure(
        500,
        "InternalError",
        format!("Internal error occurred: {message}"),
    ))
}

/// A field error whose value is a Go `[]string` (`field.Invalid` prints it with `%#v`).
fn invalid_list(field: &str, list: &[String], detail: &str) -> FieldError {
    let quoted: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    FieldError {
        reason: "FieldValueInvalid",
        field: field.to_owned(),
        message: format!("Invalid value: []string{{{}}}: {detail}", quoted.join(", ")),
    }
}

fn strings(spec: &Object, key: &str) -> Vec<String> {
    spec.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn cluster_ips(spec: &Object) -> Vec<String> {
    strings(spec, "clusterIPs")
}

fn set_strings(spec: &mut Object, key: &str, list: &[String]) {
    if list.is_empty() {
        spec.remove(key);
    } else {
        spec.insert(key.into(), json!(list));
    }
}

fn service_type(spec: &Object) -> &str {
    text(spec, "type")
}

fn needs_cluster_ip(spec: &Object) -> bool {
    service_type(spec) != "ExternalName"
}

fn needs_node_port(spec: &Object) -> bool {
    matches!(service_type(spec), "NodePort" | "LoadBalancer")
}

/// A load balancer that keeps traffic local needs a health-check node port.
pub(super) fn needs_health_check(spec: &Object) -> bool {
    service_type(spec) == "LoadBalancer" && text(spec, "externalTrafficPolicy") == "Local"
}

fn headless(spec: &Object) -> bool {
    text(spec, "clusterIP") == "None"
}

fn has_selector(spec: &Object) -> bool {
    spec.get("selector")
        .and_then(Value::as_object)
        .is_some_and(|s| !s.is_empty())
}

/// `normalizeClusterIPs`: keeps `clusterIP` and `clusterIPs` in step for clients that only know the first.
fn normalize_cluster_ips(new: &mut Object, old: Option<&Object>) {
    let ip = text(new, "clusterIP").to_owned();
    let ips = cluster_ips(new);
    let Some(old) = old else {
        if !ip.is_empty() && ips.is_empty() {
            set_strings(new, "clusterIPs", &[ip]);
        }
        return;
    };
    let (old_ip, old_ips) = (text(old, "clusterIP"), cluster_ips(old));
    let mut ips = ips;
    if !old_ips.is_empty() && ips.is_empty() && old_ip == ip {
        ips.clone_from(&old_ips);
    }
    if old_ip != ip {
        if !old_ip.is_empty() && ip.is_empty() {
            if ips == old_ips {
                ips.clear();
            }
        } else if ips == old_ips {
            ips = vec![ip];
        }
    }
    set_strings(new, "clusterIPs", &ips);
}

/// `patchAllocatedValues`: a write that leaves out what was allocated keeps it (the cluster IPs, node ports by port
/// name, the health-check node port).
fn patch_allocated_values(new: &mut Object, old: &Object) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        if text(new, "clusterIP").is_empty() && !absent(old, "clusterIP") {
            new.insert("clusterIP".into(), old["clusterIP"].clone());
        }
        if cluster_ips(new).is_empty() && !cluster_ips(old).is_empty() {
            new.insert("clusterIPs".into(), old["clusterIPs"].clone());
        }
    }
    if needs_node_port(old) && needs_node_port(new) {
        let ports_of = |s: &Object| -> Vec<(String, u64)> {
            s.get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|p| {
                    let name = p.get("name").and_then(Value::as_str).unwrap_or("").to_owned();
                    (name, p.get("nodePort").and_then(Value::as_u64).unwrap_or(0))
                })
                .collect()
        };
        let old_ports = ports_of(old);
        let new_ports: HashSet<u64> = ports_of(new).into_iter().map(|(_, n)| n).filter(|n| *n != 0).collect();
        // A node port the new spec already uses elsewhere cannot be patched in.
        let used: HashSet<u64> = old_ports
            .iter()
            .map(|(_, n)| *n)
            .filter(|n| new_ports.contains(n))
            .collect();
        for p in super::items(new, "ports") {
            if zero_num(p, "nodePort") {
                let name = text(p, "name");
                // Go's map lookup: the last old port of that name, 0 when none.
                let old_value = old_ports.iter().rev().find(|(n, _)| n == name).map_or(0, |(_, v)| *v);
                if old_value != 0 && !used.contains(&old_value) {
                    p.insert("nodePort".into(), Value::from(old_value));
                }
            }
        }
    }
    if needs_health_check(old)
        && needs_health_check(new)
        && zero_num(new, "healthCheckNodePort")
        && let Some(v) = old.get("healthCheckNodePort")
    {
        new.insert("healthCheckNodePort".into(), v.clone());
    }
}

/// The family of an address: `Some(true)` for IPv4, `Some(false)` for IPv6.
fn is_ipv4(ip: &str) -> Option<bool> {
    ip.parse::<IpAddr>().ok().map(|a| a.is_ipv4())
}

/// `initIPFamilyFields`, for a single-stack IPv4 cluster.
fn init_ip_families(spec: &mut Object, old: Option<&Object>, name: &str) -> Result<(), Failure> {
    if !needs_cluster_ip(spec) {
        return Ok(());
    }
    if let Some(old) = old {
        let prefer = |s: &Object| text(s, "ipFamilyPolicy") == "PreferDualStack";
        let same = cluster_ips(spec) == cluster_ips(old) && strings(spec, "ipFamilies") == strings(old, "ipFamilies");
        if prefer(spec) && prefer(old) && same {
            return Ok(());
        }
    }
    if absent(spec, "ipFamilyPolicy") {
        let policy = match old.map(|o| text(o, "ipFamilyPolicy")).filter(|p| !p.is_empty()) {
            Some(p) => p.to_owned(),
            None if headless(spec) && !has_selector(spec) => "RequireDualStack".to_owned(),
            None => "SingleStack".to_owned(),
        };
        spec.insert("ipFamilyPolicy".into(), Value::from(policy));
    }
    let policy = text(spec, "ipFamilyPolicy").to_owned();
    let mut ips = cluster_ips(spec);
    let mut families = strings(spec, "ipFamilies");
    // Loose pre-validation (`ValidateServiceClusterIPsRelatedFields`, in part).
    let mut errs = Vec::new();
    if !ips.is_empty() && text(spec, "clusterIP") != ips[0] {
        errs.push(invalid_list(
            "spec.clusterIPs",
            &ips,
            "first value must match `clusterIP`",
        ));
    }
    for (i, ip) in ips.iter().enumerate() {
        if ip != "None" && is_ipv4(ip).is_none() {
            errs.push(FieldError::invalid(
                &format!("spec.clusterIPs[{i}]"),
                ip,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    if !errs.is_empty() {
        return Err(invalid(name, errs));
    }
    if let Some(old) = old
        && policy == "SingleStack"
    {
        if ips == cluster_ips(old) && ips.len() > 1 {
            ips.truncate(1);
        }
        if families == strings(old, "ipFamilies") && families.len() > 1 {
            families.truncate(1);
        }
    }
    if policy == "SingleStack" {
        if ips.len() == 2 {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                &policy,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if families.len() == 2 {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                &policy,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    for (i, ip) in ips.iter().enumerate() {
        if ip == "None" {
            break;
        }
        if i >= families.len() {
            if is_ipv4(ip) == Some(true) {
                families.push("IPv4".to_owned());
            } else {
                errs.push(invalid_list(
                    &format!("spec.clusterIPs[{i}]"),
                    &ips,
                    "IPv6 is not configured on this cluster",
                ));
            }
        }
    }
    if !errs.is_empty() {
        return Err(invalid(name, errs));
    }
    if headless(spec) && !has_selector(spec) {
        if families.is_empty() {
            families.push("IPv4".to_owned());
        }
        if families.len() < 2 && policy != "SingleStack" {
            let other = if families[0] == "IPv4" { "IPv6" } else { "IPv4" };
            families.push(other.to_owned());
        }
        set_strings(spec, "clusterIPs", &ips);
        set_strings(spec, "ipFamilies", &families);
        return Ok(());
    }
    if policy == "RequireDualStack" {
        errs.push(FieldError::invalid(
            "spec.ipFamilyPolicy",
            &policy,
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in families.iter().enumerate() {
        if family != "IPv4" {
            errs.push(FieldError::invalid(
                &format!("spec.ipFamilies[{i}]"),
                family,
                "not configured on this cluster",
            ));
        }
    }
    if !errs.is_empty() {
        return Err(invalid(name, errs));
    }
    if families.is_empty() {
        families.push("IPv4".to_owned());
    }
    set_strings(spec, "clusterIPs", &ips);
    set_strings(spec, "ipFamilies", &families);
    Ok(())
}

/// `allocClusterIPs`: the requested address (checked) or a free one, unless the service is headless.
fn alloc_cluster_ip(spec: &mut Object, taken: &Taken, name: &str) -> Result<(), Failure> {
    let mut ips = cluster_ips(spec);
    if ips.first().is_some_and(|ip| ip == "None") {
        return Ok(());
    }
    let ip = match ips.first().filter(|ip| !ip.is_empty()) {
        Some(requested) => {
            let Ok(IpAddr::V4(v4)) = requested.parse::<IpAddr>() else {
                return Err(internal(&format!("failed to parse service IP {requested:?}")));
            };
            let n = u32::from(v4);
            let why = if n & !(SIZE - 1) != NETWORK || n == NETWORK || n == NETWORK + SIZE - 1 {
                Some(format!(
                    "the provided IP ({requested}) is not in the valid range. The range of valid IPs is {SERVICE_CIDR}"
                ))
            } else if taken.ips.contains(&n) {
                Some("provided IP is already allocated".to_owned())
            } else {
                None
            };
            if let Some(why) = why {
                let detail = format!("failed to allocate IP {requested}: {why}");
                return Err(invalid(name, vec![invalid_list("spec.clusterIPs", &ips, &detail)]));
            }
            requested.clone()
        }
        None => match next_free(IP_STATIC_BAND, SIZE - 2, |offset| {
            !taken.ips.contains(&(NETWORK + 1 + offset))
        }) {
            Some(offset) => Ipv4Addr::from(NETWORK + 1 + offset).to_string(),
            None => return Err(internal("failed to allocate a serviceIP: range is full")),
        },
    };
    if ips.is_empty() {
        ips.push(ip.clone());
    } else {
        ips[0] = ip.clone();
    }
    spec.insert("clusterIP".into(), Value::from(ip));
    set_strings(spec, "clusterIPs", &ips);
    Ok(())
}

/// A random free offset in `[band, max)`, else in `[0, band)` (the allocators' preference for the upper band).
fn next_free(band: u32, max: u32, free: impl Fn(u32) -> bool) -> Option<u32> {
    let scan = |lo: u32, hi: u32| -> Option<u32> {
        if lo >= hi {
            return None;
        }
        let span = hi - lo;
        let start = (random_u64() % u64::from(span)) as u32;
        (0..span).map(|i| lo + (start + i) % span).find(|o| free(*o))
    };
    scan(band, max).or_else(|| scan(0, band.min(max)))
}

fn next_node_port(taken: &Taken, also: &HashSet<u16>) -> Option<u16> {
    let span = u32::from(NODE_PORT_MAX - NODE_PORT_MIN + 1);
    next_free(u32::from(PORT_STATIC_BAND), span, |o| {
        let p = NODE_PORT_MIN + o as u16;
        !taken.ports.contains(&p) && !also.contains(&p)
    })
    .map(|o| NODE_PORT_MIN + o as u16)
}

/// Checks a requested node port against the range and the other services.
fn check_node_port(port: u64, taken: &Taken) -> Result<u16, String> {
    match u16::try_from(port) {
        Ok(p) if (NODE_PORT_MIN..=NODE_PORT_MAX).contains(&p) => {
            if taken.ports.contains(&p) {
                Err("provided port is already allocated".to_owned())
            } else {
                Ok(p)
            }
        }
        _ => Err(format!(
            "provided port is not in the valid range. The range of valid ports is {NODE_PORT_MIN}-{NODE_PORT_MAX}"
        )),
    }
}

/// `allocateLoadBalancerNodePorts: false` stops automatic node ports for a load balancer.
fn allocates_node_ports(spec: &Object) -> bool {
    match service_type(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&Value::Bool(false)),
        _ => false,
    }
}

/// Node ports for the service's ports (`initNodePorts` / `updateNodePorts`): requested ones checked, missing ones
/// allocated; two ports with the same number share one node port. `kept` are node ports the service held before.
fn alloc_node_ports(spec: &mut Object, taken: &Taken, kept: &HashSet<u16>, name: &str) -> Result<(), Failure> {
    let auto = allocates_node_ports(spec);
    let mut mine: HashSet<u16> = HashSet::new();
    let mut by_port: Vec<(Value, u16)> = Vec::new();
    let requested: Vec<(Value, u64)> = spec
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p.get("port").cloned().unwrap_or(Value::Null),
                p.get("nodePort").and_then(Value::as_u64).unwrap_or(0),
            )
        })
        .collect();
    for (i, p) in super::items(spec, "ports").enumerate() {
        let port = p.get("port").cloned().unwrap_or(Value::Null);
        let node_port = p.get("nodePort").and_then(Value::as_u64).unwrap_or(0);
        if node_port == 0 && !auto {
            continue;
        }
        let allocated = by_port.iter().find(|(v, _)| *v == port).map(|(_, n)| *n);
        let field = format!("spec.ports[{i}].nodePort");
        let check = |n: u64| -> Result<u16, Failure> {
            match u16::try_from(n) {
                Ok(p) if kept.contains(&p) => Ok(p),
                _ => check_node_port(n, taken).map_err(|why| {
                    let e = FieldError {
                        reason: "FieldValueInvalid",
                        field: field.clone(),
                        message: format!("Invalid value: {n}: {why}"),
                    };
                    invalid(name, vec![e])
                }),
            }
        };
        let chosen = match (node_port, allocated) {
            (0, Some(a)) => a,
            (0, None) => {
                // A later port with the same number may ask for a node port: use it.
                let wanted = requested[i + 1..]
                    .iter()
                    .find(|(v, n)| *v == port && *n != 0)
                    .map(|(_, n)| *n);
                match wanted {
                    Some(n) => check(n)?,
                    None => next_node_port(taken, &mine)
                        .ok_or_else(|| internal("failed to allocate a nodePort: range is full"))?,
                }
            }
            (n, Some(a)) if n == u64::from(a) => a,
            (n, _) => {
                let p = check(n)?;
                if mine.contains(&p) && !kept.contains(&p) {
                    let e = FieldError {
                        reason: "FieldValueInvalid",
                        field,
                        message: format!("Invalid value: {n}: provided port is already allocated"),
                    };
                    return Err(invalid(name, vec![e]));
                }
                p
            }
        };
        mine.insert(chosen);
        if allocated.is_none() {
            by_port.push((port, chosen));
        }
        p.insert("nodePort".into(), Value::from(chosen));
    }
    Ok(())
}

/// The health-check node port of a local-traffic load balancer: the requested one, or a free one.
fn alloc_health_check_port(spec: &mut Object, taken: &Taken) -> Result<(), Failure> {
    let mine: HashSet<u16> = spec
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            p.get("nodePort")
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
        })
        .collect();
    let port = match spec
        .get("healthCheckNodePort")
        .and_then(Value::as_u64)
        .filter(|n| *n != 0)
    {
        Some(n) => check_node_port(n, taken)
            .map_err(|why| internal(&format!("failed to allocate requested HealthCheck NodePort {n}: {why}")))?,
        None => next_node_port(taken, &mine)
            .ok_or_else(|| internal("failed to allocate a HealthCheck NodePort: range is full"))?,
    };
    spec.insert("healthCheckNodePort".into(), Value::from(port));
    Ok(())
}

/// `beginCreate`: IP families, the cluster IP, node ports, the health-check node port.
pub(super) fn allocate_create(spec: &mut Object, name: &str, cluster: &Cluster<'_>) -> Result<(), Failure> {
    normalize_cluster_ips(spec, None);
    init_ip_families(spec, None, name)?;
    let taken = taken(cluster);
    if needs_cluster_ip(spec) {
        alloc_cluster_ip(spec, &taken, name)?;
    }
    if needs_node_port(spec) {
        alloc_node_ports(spec, &taken, &HashSet::new(), name)?;
    }
    if needs_health_check(spec) {
        alloc_health_check_port(spec, &taken)?;
    }
    Ok(())
}

/// `beginUpdate`: allocated values kept, IP families, a cluster IP for a service leaving `ExternalName`, the
/// primary cluster IP immutable, node ports and the health-check node port for the new type.
pub(super) fn allocate_update(
    new: &mut Object,
    old: &Object,
    name: &str,
    cluster: &Cluster<'_>,
) -> Result<(), Failure> {
    patch_allocated_values(new, old);
    normalize_cluster_ips(new, Some(old));
    init_ip_families(new, Some(old), name)?;
    let taken = taken(cluster);
    if needs_cluster_ip(new) {
        if !needs_cluster_ip(old) {
            alloc_cluster_ip(new, &taken, name)?;
        } else if !(headless(old) && headless(new)) {
            let (old_ips, new_ips) = (cluster_ips(old), cluster_ips(new));
            let changed = match (old_ips.first(), new_ips.first()) {
                (Some(o), Some(n)) => o != n,
                (Some(_), None) => true,
                _ => false,
            };
            if changed {
                let detail = if new_ips.is_empty() {
                    "primary clusterIP can not be unset"
                } else {
                    "may not change once set"
                };
                return Err(invalid(
                    name,
                    vec![invalid_list("spec.clusterIPs[0]", &new_ips, detail)],
                ));
            }
        }
    }
    if needs_node_port(new) {
        let kept: HashSet<u16> = strings_u16(old, "nodePort");
        alloc_node_ports(new, &taken, &kept, name)?;
    }
    if needs_health_check(new) {
        let before = if needs_health_check(old) {
            old.get("healthCheckNodePort").and_then(Value::as_u64)
        } else {
            None
        };
        let now = new
            .get("healthCheckNodePort")
            .and_then(Value::as_u64)
            .filter(|n| *n != 0);
        if now.is_none() || now != before {
            alloc_health_check_port(new, &taken)?;
        }
    }
    Ok(())
}

/// The node ports of a spec's ports.
fn strings_u16(spec: &Object, key: &str) -> HashSet<u16> {
    spec.get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get(key).and_then(Value::as_u64).and_then(|n| u16::try_from(n).ok()))
        .collect()
}
