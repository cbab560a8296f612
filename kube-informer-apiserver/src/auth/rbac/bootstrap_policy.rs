//! The roles and bindings kube-apiserver creates at start when RBAC is on (its `rbac/bootstrap-roles` post-start
//! hook): cluster-admin, admin, edit and view (the last three aggregated by label), the `system:*` roles of the
//! control plane's users and of every controller, their bindings (`system:masters` to cluster-admin, every
//! authenticated user to `system:basic-user`, `system:discovery` and `system:public-info-viewer`, …), and the
//! namespaced roles of `kube-system` and `kube-public`. The data, `bootstrap_policy.txt`, says where it comes from
//! and how it is written.

use serde_json::{Map, Value, json};

use super::types::{GROUP, PolicyRule};
use crate::admission::Admission;
use crate::api::errors::{self, Failure};
use crate::registry::Store;
use crate::registry::strategy;

/// The policy's text.
const DATA: &str = include_str!("bootstrap_policy.txt");

/// One object to create: its kind (`Role`, `ClusterRole`, `RoleBinding`, `ClusterRoleBinding`), namespace and body.
#[derive(Debug)]
pub(crate) struct BootstrapObject {
    pub(crate) kind: &'static str,
    pub(crate) namespace: Option<String>,
    pub(crate) object: Value,
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| if x == "\"\"" { String::new() } else { x.to_owned() })
        .collect()
}

fn metadata(name: &str, namespace: Option<&str>, labels: &[(String, String)]) -> Value {
    let mut l = Map::new();
    l.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
    for (k, v) in labels {
        l.insert(k.clone(), json!(v));
    }
    let mut m = json!({
        "name": name,
        "labels": l,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    });
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}

fn subject(s: &str) -> Value {
    match s.split_once(':') {
        Some(("group", name)) => json!({"apiGroup": GROUP, "kind": "Group", "name": name}),
        Some(("user", name)) => json!({"apiGroup": GROUP, "kind": "User", "name": name}),
        Some(("sa", rest)) => {
            let (ns, name) = rest.split_once('/').unwrap_or(("", rest));
            json!({"kind": "ServiceAccount", "name": name, "namespace": ns})
        }
        _ => panic!("bootstrap_policy.txt: bad subject {s:?}"),
    }
}

fn binding(
    kind: &'static str,
    name: &str,
    ns: Option<&str>,
    role_kind: &str,
    role: &str,
    subjects: &[&str],
) -> BootstrapObject {
    let mut object = json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": kind,
        "metadata": metadata(name, ns, &[]),
        "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role},
    });
    if !subjects.is_empty() {
        object["subjects"] = Value::Array(subjects.iter().map(|s| subject(s)).collect());
    }
    BootstrapObject {
        kind,
        namespace: ns.map(str::to_owned),
        object,
    }
}

/// Every object of the bootstrap policy, roles first. Panics on a malformed data file (a test parses it).
pub(crate) fn objects() -> Vec<BootstrapObject> {
    let mut roles: Vec<BootstrapObject> = Vec::new();
    let mut bindings = Vec::new();
    for (n, line) in DATA.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            [w, ..] if w.starts_with('#') => {}
            ["clusterrole", name, labels @ ..] => {
                let labels: Vec<(String, String)> = labels
                    .iter()
                    .map(|l| {
                        l.split_once('=')
                            .map(|(k, v)| (k.to_owned(), v.to_owned()))
                            .unwrap_or_else(|| malformed(n, line))
                    })
                    .collect();
                roles.push(BootstrapObject {
                    kind: "ClusterRole",
                    namespace: None,
                    object: json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole",
                                   "metadata": metadata(name, None, &labels)}),
                });
            }
            ["controllerrole", name] => {
                let full = format!("system:controller:{name}");
                roles.push(BootstrapObject {
                    kind: "ClusterRole",
                    namespace: None,
                    object: json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole",
                                   "metadata": metadata(&full, None, &[])}),
                });
                let sa = format!("sa:kube-system/{name}");
                bindings.push(binding("ClusterRoleBinding", &full, None, "ClusterRole", &full, &[&sa]));
            }
            ["role", ns, name] => roles.push(BootstrapObject {
                kind: "Role",
                namespace: Some((*ns).to_owned()),
                object: json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Role",
                               "metadata": metadata(name, Some(ns), &[])}),
            }),
            ["aggregate", label] => {
                let (k, v) = label.split_once('=').unwrap_or_else(|| malformed(n, line));
                let role = &mut roles.last_mut().unwrap_or_else(|| malformed(n, line)).object;
                let selectors = role["aggregationRule"]["clusterRoleSelectors"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let mut selectors = selectors;
                selectors.push(json!({"matchLabels": {k: v}}));
                role["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
            }
            ["r", verbs, groups, resources, names @ ..] => {
                let mut rule = PolicyRule {
                    verbs: list(verbs),
                    api_groups: list(groups),
                    resources: list(resources),
                    ..Default::default()
                };
                match names {
                    [] => {}
                    [names] => rule.resource_names = list(names),
                    _ => malformed(n, line),
                }
                push_rule(&mut roles, rule).unwrap_or_else(|()| malformed(n, line));
            }
            ["u", verbs, urls] => {
                let rule = PolicyRule {
                    verbs: list(verbs),
                    non_resource_urls: list(urls),
                    ..Default::default()
                };
                push_rule(&mut roles, rule).unwrap_or_else(|()| malformed(n, line));
            }
            ["clusterrolebinding", name, role, subjects @ ..] => {
                bindings.push(binding("ClusterRoleBinding", name, None, "ClusterRole", role, subjects));
            }
            ["rolebinding", ns, name, kind, role, subjects @ ..] => {
                bindings.push(binding("RoleBinding", name, Some(ns), kind, role, subjects));
            }
            _ => malformed(n, line),
        }
    }
    roles.extend(bindings);
    roles
}

/// The field manager of the bootstrap objects (kube-apiserver writes them through its loopback client).
const FIELD_MANAGER: &str = "kube-apiserver";

/// Creates the bootstrap policy in `store`, then aggregates the cluster roles.
pub(crate) fn create(store: &Store) -> Result<(), Failure> {
    for o in objects() {
        let plural = match o.kind {
            "Role" => "roles",
            "ClusterRole" => "clusterroles",
            "RoleBinding" => "rolebindings",
            _ => "clusterrolebindings",
        };
        let id = format!("{plural}.{GROUP}");
        let Some(spec) = store.lock().served(&id, "v1") else {
            return Err(errors::internal(format!("bootstrap policy: {id} is not served")));
        };
        let mut obj = o.object;
        Admission::quiet(&spec).admit(&mut obj)?;
        strategy::create(
            store,
            &spec,
            o.namespace.as_deref(),
            obj,
            false,
            FIELD_MANAGER,
            &mut |_| {},
        )?;
    }
    super::clusterrole_aggregation::sync(store);
    Ok(())
}

fn malformed(n: usize, line: &str) -> ! {
    panic!("bootstrap_policy.txt:{}: {line:?}", n + 1)
}

fn push_rule(roles: &mut [BootstrapObject], rule: PolicyRule) -> Result<(), ()> {
    let role = roles.last_mut().ok_or(())?;
    let rules = role
        .object
        .as_object_mut()
        .map(|o| o.entry("rules").or_insert_with(|| json!([])));
    rules.and_then(Value::as_array_mut).ok_or(())?.push(rule.to_json());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_parses_into_kube_apiserver_s_objects() {
        let objects = objects();
        let count = |kind: &str| objects.iter().filter(|o| o.kind == kind).count();
        assert_eq!(count("ClusterRole"), 31 + 38);
        assert_eq!(count("ClusterRoleBinding"), 12 + 38);
        assert_eq!((count("Role"), count("RoleBinding")), (7, 7));
        let find = |name: &str| objects.iter().find(|o| o.object["metadata"]["name"] == name).unwrap();
        let admin = &find("cluster-admin").object;
        assert_eq!(
            admin["rules"],
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, {"verbs": ["*"], "nonResourceURLs": ["*"]}])
        );
        assert_eq!(
            admin["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
        let edit = &find("edit").object;
        assert_eq!(
            edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"],
            "true"
        );
        assert_eq!(
            edit["aggregationRule"],
            json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}]})
        );
        assert!(edit.get("rules").is_none());
        let gc = objects
            .iter()
            .find(|o| {
                o.kind == "ClusterRoleBinding"
                    && o.object["metadata"]["name"] == "system:controller:generic-garbage-collector"
            })
            .unwrap();
        assert_eq!(
            gc.object["subjects"],
            json!([{"kind": "ServiceAccount", "name": "generic-garbage-collector", "namespace": "kube-system"}])
        );
        let node = objects
            .iter()
            .find(|o| o.kind == "ClusterRoleBinding" && o.object["metadata"]["name"] == "system:node")
            .unwrap();
        assert!(
            node.object.get("subjects").is_none(),
            "bound to nobody: the Node authorizer handles nodes"
        );
        let signer = find("extension-apiserver-authentication-reader");
        assert_eq!(signer.namespace.as_deref(), Some("kube-system"));
        assert_eq!(
            signer.object["rules"][0]["resourceNames"],
            json!(["extension-apiserver-authentication"])
        );
    }
}
