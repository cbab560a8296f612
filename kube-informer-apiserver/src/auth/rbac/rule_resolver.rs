//! The rules that apply to a user in a namespace (`pkg/registry/rbac/validation/rule.go`'s `DefaultRuleResolver`):
//! every ClusterRoleBinding naming the user, one of their groups or their service account, then every RoleBinding
//! of the namespace that does, each resolved to the rules of the Role or ClusterRole it references.
//!
//! The resolver reads a [`Policy`]: the four RBAC resources parsed, as kube-apiserver's authorizer reads them from
//! its informers' caches. [`PolicyCache`] keeps the last one and builds a new one only when a write reached one of
//! those resources (the store's event sequence numbers say so), so a request costs no parsing.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use super::types::{Binding, ClusterRole, GROUP, PolicyRule, RoleRef, Subject, go_quote};
use crate::api::user::{UserInfo, matches_service_account};
use crate::registry::Store;
use crate::storage::store::StoredObject;

/// Store ids of the four resources.
pub(crate) const ROLES: &str = "roles.rbac.authorization.k8s.io";
pub(crate) const CLUSTER_ROLES: &str = "clusterroles.rbac.authorization.k8s.io";
pub(crate) const ROLE_BINDINGS: &str = "rolebindings.rbac.authorization.k8s.io";
pub(crate) const CLUSTER_ROLE_BINDINGS: &str = "clusterrolebindings.rbac.authorization.k8s.io";

/// The RBAC objects at one moment.
#[derive(Debug, Default)]
pub(crate) struct Policy {
    /// `namespace/name` → rules.
    roles: HashMap<String, Vec<PolicyRule>>,
    cluster_roles: BTreeMap<String, ClusterRole>,
    /// namespace → its role bindings, by name.
    role_bindings: BTreeMap<String, Vec<Binding>>,
    /// By name.
    cluster_role_bindings: Vec<Binding>,
}

/// Where a rule comes from, as the authorizer's reason names it: `ClusterRoleBinding "b" of ClusterRole "r" to
/// User "alice"`, `RoleBinding "b/ns" of Role "r" to ServiceAccount "ctl/ns"`.
pub(crate) struct Source<'a> {
    binding: &'a Binding,
    subject: &'a Subject,
}

impl fmt::Display for Source<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.binding;
        if b.namespace.is_empty() {
            write!(
                f,
                "ClusterRoleBinding {} of {} {} to {}",
                go_quote(&b.name),
                b.role_ref.kind,
                go_quote(&b.role_ref.name),
                self.subject.describe("")
            )
        } else {
            write!(
                f,
                "RoleBinding {} of {} {} to {}",
                go_quote(&format!("{}/{}", b.name, b.namespace)),
                b.role_ref.kind,
                go_quote(&b.role_ref.name),
                self.subject.describe(&b.namespace)
            )
        }
    }
}

/// What a visit sees: a rule and its source, or an error resolving a binding's role.
pub(crate) enum Visit<'a> {
    Rule(&'a Source<'a>, &'a PolicyRule),
    Error(String),
}

impl Policy {
    /// Builds a policy from the objects of the four resources.
    pub(crate) fn from_objects(
        roles: &[Arc<StoredObject>],
        cluster_roles: &[Arc<StoredObject>],
        role_bindings: &[Arc<StoredObject>],
        cluster_role_bindings: &[Arc<StoredObject>],
    ) -> Policy {
        let mut p = Policy::default();
        for o in roles {
            let v = o.to_value();
            p.roles.insert(
                format!("{}/{}", o.namespace, o.name),
                PolicyRule::list_from_json(v.get("rules")),
            );
        }
        for o in cluster_roles {
            p.cluster_roles
                .insert(o.name.clone(), ClusterRole::from_json(&o.to_value()));
        }
        for o in role_bindings {
            p.role_bindings
                .entry(o.namespace.clone())
                .or_default()
                .push(Binding::from_json(&o.to_value()));
        }
        for o in cluster_role_bindings {
            p.cluster_role_bindings.push(Binding::from_json(&o.to_value()));
        }
        p
    }

    /// A policy of parsed objects (tests).
    #[cfg(test)]
    pub(crate) fn from_values(objects: &[serde_json::Value]) -> Policy {
        let mut p = Policy::default();
        for v in objects {
            let meta = &v["metadata"];
            let (ns, name) = (
                meta["namespace"].as_str().unwrap_or(""),
                meta["name"].as_str().unwrap_or(""),
            );
            match v["kind"].as_str().unwrap_or("") {
                "Role" => {
                    p.roles
                        .insert(format!("{ns}/{name}"), PolicyRule::list_from_json(v.get("rules")));
                }
                "ClusterRole" => {
                    p.cluster_roles.insert(name.to_owned(), ClusterRole::from_json(v));
                }
                "RoleBinding" => p
                    .role_bindings
                    .entry(ns.to_owned())
                    .or_default()
                    .push(Binding::from_json(v)),
                "ClusterRoleBinding" => p.cluster_role_bindings.push(Binding::from_json(v)),
                other => panic!("not an RBAC kind: {other}"),
            }
        }
        p
    }

    /// The rules a binding of `namespace` (empty for a ClusterRoleBinding) grants through `role_ref`; the error is
    /// the one kube-apiserver's informer listers give (`clusterrole.rbac.authorization.k8s.io "x" not found`).
    pub(crate) fn role_reference_rules(&self, role_ref: &RoleRef, namespace: &str) -> Result<&[PolicyRule], String> {
        match role_ref.kind.as_str() {
            "Role" => self
                .roles
                .get(&format!("{namespace}/{}", role_ref.name))
                .map(Vec::as_slice)
                .ok_or_else(|| format!("role.{GROUP} {} not found", go_quote(&role_ref.name))),
            "ClusterRole" => self
                .cluster_roles
                .get(&role_ref.name)
                .map(|r| r.rules.as_slice())
                .ok_or_else(|| format!("clusterrole.{GROUP} {} not found", go_quote(&role_ref.name))),
            other => Err(format!("unsupported role reference kind: {}", go_quote(other))),
        }
    }

    /// Calls `visitor` with every rule that applies to `user` in `namespace` (cluster role bindings first) and every
    /// error met resolving them, until it returns false.
    pub(crate) fn visit_rules_for(&self, user: &UserInfo, namespace: &str, visitor: &mut dyn FnMut(Visit<'_>) -> bool) {
        let namespaced = if namespace.is_empty() {
            None
        } else {
            self.role_bindings.get(namespace)
        };
        let bindings = self
            .cluster_role_bindings
            .iter()
            .chain(namespaced.into_iter().flatten());
        for binding in bindings {
            let Some(subject) = binding
                .subjects
                .iter()
                .find(|s| applies_to_user(user, s, &binding.namespace))
            else {
                continue;
            };
            match self.role_reference_rules(&binding.role_ref, &binding.namespace) {
                Err(e) => {
                    if !visitor(Visit::Error(e)) {
                        return;
                    }
                }
                Ok(rules) => {
                    let source = Source { binding, subject };
                    for rule in rules {
                        if !visitor(Visit::Rule(&source, rule)) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Every rule that applies to `user` in `namespace`, and the errors met (`RulesFor`).
    pub(crate) fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        self.visit_rules_for(user, namespace, &mut |v| {
            match v {
                Visit::Rule(_, r) => rules.push(r.clone()),
                Visit::Error(e) => errors.push(e),
            }
            true
        });
        (rules, errors)
    }
}

/// True when the binding subject `s` (of a binding in `namespace`, empty for a cluster role binding) names `user`.
fn applies_to_user(user: &UserInfo, s: &Subject, namespace: &str) -> bool {
    match s.kind.as_str() {
        "User" => user.name == s.name,
        "Group" => user.in_group(&s.name),
        "ServiceAccount" => {
            // A subject without a namespace is the binding's namespace's service account.
            let ns = if s.namespace.is_empty() {
                namespace
            } else {
                &s.namespace
            };
            !ns.is_empty() && matches_service_account(ns, &s.name, &user.name)
        }
        _ => false,
    }
}

/// `utilerrors.NewAggregate(errs).Error()`: one message alone, several (duplicates once) as `[a, b]`.
pub(crate) fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The sequence numbers of the four resources' event histories and the store's registrations: unchanged while no
/// RBAC object was written.
type Key = [u64; 5];

/// The last [`Policy`] built, rebuilt when an RBAC object changed.
#[derive(Debug, Default)]
pub(crate) struct PolicyCache {
    last: Mutex<Option<(Key, Arc<Policy>)>>,
}

impl PolicyCache {
    /// The policy as the store holds it now.
    pub(crate) fn current(&self, store: &Store) -> Arc<Policy> {
        let (key, objects) = {
            let g = store.lock();
            let key = [
                g.end_seq(ROLES),
                g.end_seq(CLUSTER_ROLES),
                g.end_seq(ROLE_BINDINGS),
                g.end_seq(CLUSTER_ROLE_BINDINGS),
                g.registrations(),
            ];
            if let Some((k, p)) = &*self.last.lock()
                && *k == key
            {
                return p.clone();
            }
            let all = |id: &str| g.list_current(id, None);
            (
                key,
                [
                    all(ROLES),
                    all(CLUSTER_ROLES),
                    all(ROLE_BINDINGS),
                    all(CLUSTER_ROLE_BINDINGS),
                ],
            )
        };
        // Parsed without the store's lock.
        let [roles, cluster_roles, role_bindings, cluster_role_bindings] = &objects;
        let policy = Arc::new(Policy::from_objects(
            roles,
            cluster_roles,
            role_bindings,
            cluster_role_bindings,
        ));
        *self.last.lock() = Some((key, policy.clone()));
        policy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy() -> Policy {
        Policy::from_values(&[
            json!({"kind": "ClusterRole", "metadata": {"name": "reader"},
                   "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
            json!({"kind": "Role", "metadata": {"name": "writer", "namespace": "ns"},
                   "rules": [{"verbs": ["create"], "apiGroups": [""], "resources": ["pods"]}]}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "readers"},
                   "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "reader"},
                   "subjects": [{"kind": "Group", "name": "dev", "apiGroup": GROUP}]}),
            json!({"kind": "RoleBinding", "metadata": {"name": "writers", "namespace": "ns"},
                   "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "writer"},
                   "subjects": [{"kind": "ServiceAccount", "name": "ctl"}]}),
            json!({"kind": "RoleBinding", "metadata": {"name": "dangling", "namespace": "ns"},
                   "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "gone"},
                   "subjects": [{"kind": "User", "name": "alice", "apiGroup": GROUP}]}),
        ])
    }

    // Cases of kube-apiserver's TestAppliesTo and TestDefaultRuleResolver (pkg/registry/rbac/validation).
    #[test]
    fn subjects_apply_by_user_group_and_service_account() {
        let alice = UserInfo::new("alice", &["dev"]);
        assert!(applies_to_user(
            &alice,
            &Subject::from_json(&json!({"kind": "User", "name": "alice"})),
            ""
        ));
        assert!(applies_to_user(
            &alice,
            &Subject::from_json(&json!({"kind": "Group", "name": "dev"})),
            ""
        ));
        assert!(!applies_to_user(
            &alice,
            &Subject::from_json(&json!({"kind": "Group", "name": "ops"})),
            ""
        ));
        let sa = UserInfo::new("system:serviceaccount:ns:ctl", &[]);
        let local = Subject::from_json(&json!({"kind": "ServiceAccount", "name": "ctl"}));
        assert!(applies_to_user(&sa, &local, "ns"), "a binding's own namespace");
        assert!(!applies_to_user(&sa, &local, "other"));
        assert!(!applies_to_user(&sa, &local, ""), "no namespace, no service account");
        let qualified = Subject::from_json(&json!({"kind": "ServiceAccount", "name": "ctl", "namespace": "ns"}));
        assert!(applies_to_user(&sa, &qualified, "other"));
        assert!(!applies_to_user(
            &sa,
            &Subject::from_json(&json!({"kind": "Robot", "name": "ctl"})),
            "ns"
        ));
    }

    #[test]
    fn rules_come_from_cluster_bindings_then_the_namespaces_bindings() {
        let p = policy();
        let sa = UserInfo::new("system:serviceaccount:ns:ctl", &["dev"]);
        let (rules, errors) = p.rules_for(&sa, "ns");
        assert_eq!(
            rules,
            [
                PolicyRule::resources(&["get"], &[""], &["pods"]),
                PolicyRule::resources(&["create"], &[""], &["pods"])
            ]
        );
        assert!(errors.is_empty());
        assert_eq!(
            p.rules_for(&sa, "").0.len(),
            1,
            "cluster-wide: only cluster role bindings"
        );
        let (rules, errors) = p.rules_for(&UserInfo::new("alice", &[]), "ns");
        assert!(rules.is_empty());
        assert_eq!(errors, [r#"clusterrole.rbac.authorization.k8s.io "gone" not found"#]);
        let mut sources = Vec::new();
        p.visit_rules_for(&sa, "ns", &mut |v| {
            if let Visit::Rule(s, _) = v {
                sources.push(s.to_string());
            }
            true
        });
        assert_eq!(
            sources,
            [
                r#"ClusterRoleBinding "readers" of ClusterRole "reader" to Group "dev""#,
                r#"RoleBinding "writers/ns" of Role "writer" to ServiceAccount "ctl/ns""#
            ]
        );
    }

    #[test]
    fn errors_aggregate_as_go_aggregates_them() {
        assert_eq!(aggregate(&[]), "");
        assert_eq!(aggregate(&["a".into(), "a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into(), "a".into()]), "[a, b]");
    }
}
