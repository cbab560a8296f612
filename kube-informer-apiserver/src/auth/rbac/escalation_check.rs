//! Escalation prevention on writes of roles and bindings (`pkg/registry/rbac/escalation_check.go` and the
//! `policybased` storages of roles, cluster roles and both bindings): nobody grants what they do not hold.
//!
//! * A Role or ClusterRole may be written by a member of `system:masters`, by a user allowed the `escalate` verb on
//!   it, or by a user whose own rules (in the role's namespace) cover every rule it holds; an aggregation rule
//!   needs every permission (cluster-admin's).
//! * A binding may be written by a member of `system:masters`, by a user allowed the `bind` verb on the role it
//!   references, or by a user who holds every rule of that role (which must then exist: 404 otherwise).
//! * An update that only changes what the garbage collector writes (owner references, finalizers) passes.
//!
//! The refusal is kube-apiserver's 403: `clusterroles.rbac.authorization.k8s.io "x" is forbidden: user "alice"
//! (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` and the missing
//! rules, one per line.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::policy_comparator::covers;
use super::rule_resolver::{Policy, aggregate};
use super::types::{ClusterRole, GROUP, PolicyRule, RoleRef, go_quote, go_quote_list};
use crate::api::errors::{self, Failure};
use crate::api::user::{SYSTEM_PRIVILEGED_GROUP, UserInfo};
use crate::auth::attributes::{Attributes, Decision, forbidden_status};
use kube_informer::object::ApiResource;

/// `system:masters` may escalate (`EscalationAllowed`).
pub(crate) fn escalation_allowed(user: &UserInfo) -> bool {
    user.in_group(SYSTEM_PRIVILEGED_GROUP)
}

/// The user's own rules in `namespace` cover `rules` (`ConfirmNoEscalation`); the error names what they lack.
pub(crate) fn confirm_no_escalation(
    policy: &Policy,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owner, errors) = policy.rules_for(user, namespace);
    let (ok, missing) = covers(&owner, rules);
    if ok {
        return Ok(());
    }
    let mut described: Vec<String> = compact_rules(missing).iter().map(PolicyRule::compact_string).collect();
    described.sort();
    described.dedup();
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        go_quote_list(&user.groups),
        described.join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", aggregate(&errors)));
    }
    Err(msg)
}

/// Joins rules of one group and one resource that differ only by their verbs (`CompactRules`).
pub(crate) fn compact_rules(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut simple: BTreeMap<(String, String), PolicyRule> = BTreeMap::new();
    let mut out = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if is_simple {
            let key = (rule.api_groups[0].clone(), rule.resources[0].clone());
            match simple.get_mut(&key) {
                Some(existing) => existing.verbs.extend(rule.verbs),
                None => {
                    simple.insert(key, rule);
                }
            }
        } else {
            out.push(rule);
        }
    }
    out.extend(simple.into_values());
    out
}

/// Which RBAC kind a write is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl Kind {
    /// By the store id of its resource.
    pub(crate) fn of_resource(id: &str) -> Option<Kind> {
        Some(match id {
            super::rule_resolver::ROLES => Kind::Role,
            super::rule_resolver::CLUSTER_ROLES => Kind::ClusterRole,
            super::rule_resolver::ROLE_BINDINGS => Kind::RoleBinding,
            super::rule_resolver::CLUSTER_ROLE_BINDINGS => Kind::ClusterRoleBinding,
            _ => return None,
        })
    }

    fn plural(self) -> &'static str {
        match self {
            Kind::Role => "roles",
            Kind::ClusterRole => "clusterroles",
            Kind::RoleBinding => "rolebindings",
            Kind::ClusterRoleBinding => "clusterrolebindings",
        }
    }
}

/// What decides whether the writer may `escalate` or `bind` (`authorizer.Authorizer`, as kube's
/// `RoleEscalationAuthorized` and `BindingAuthorized` are handed it): the server's authorizer, over the policy the
/// check reads.
pub(crate) trait Authorizer {
    /// Decides `attrs` with `policy` as the RBAC policy.
    fn authorize(&self, policy: &Policy, attrs: &Attributes<'_>) -> Decision;
}

/// Every permission there is: what an aggregation rule needs.
fn full_authority() -> [PolicyRule; 2] {
    [
        PolicyRule::resources(&["*"], &["*"], &["*"]),
        PolicyRule::urls(&["*"], &["*"]),
    ]
}

/// The escalation check of one write by one user, set up before the write (outside the store's lock, which the
/// check must not take: it may run under it, as a patch's admission does).
pub(crate) struct Guard<'a> {
    kind: Kind,
    auth: &'a dyn Authorizer,
    policy: Arc<Policy>,
    user: UserInfo,
    /// The request's namespace (empty for the cluster-scoped kinds).
    namespace: String,
    /// The object as stored before the write (updates and patches).
    old: Option<Value>,
    /// `escalate` is allowed on the role resource (roles only).
    may_escalate: bool,
}

impl<'a> Guard<'a> {
    /// The check of a write of `id` (a store id) named `name` by `user`; `None` when nothing is to be checked
    /// (another resource, or a member of `system:masters`).
    pub(crate) fn new(
        auth: &'a dyn Authorizer,
        policy: Arc<Policy>,
        user: &UserInfo,
        id: &str,
        namespace: &str,
        name: &str,
        old: Option<Value>,
    ) -> Option<Guard<'a>> {
        let kind = Kind::of_resource(id)?;
        if escalation_allowed(user) {
            return None;
        }
        let may_escalate = matches!(kind, Kind::Role | Kind::ClusterRole) && {
            let attrs = Attributes::resource(user, "escalate", namespace, GROUP, kind.plural(), "", name);
            auth.authorize(&policy, &attrs).allowed
        };
        Some(Guard {
            kind,
            auth,
            policy,
            user: user.clone(),
            namespace: namespace.to_owned(),
            old,
            may_escalate,
        })
    }

    /// Checks the object about to be written (after admission): 403, or 404 for a binding of a missing role.
    pub(crate) fn check(&self, obj: &Value) -> Result<(), Failure> {
        if self.may_escalate {
            return Ok(());
        }
        if let Some(old) = &self.old
            && only_gc_fields_change(obj, old)
        {
            return Ok(());
        }
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        let refuse = |why: &str| forbidden_status(GROUP, self.kind.plural(), name, why);
        match self.kind {
            Kind::Role | Kind::ClusterRole => {
                let rules = PolicyRule::list_from_json(obj.get("rules"));
                confirm_no_escalation(&self.policy, &self.user, &self.namespace, &rules).map_err(|e| refuse(&e))?;
                if self.kind == Kind::ClusterRole {
                    let aggregates = |v: &Value| ClusterRole::from_json(v).aggregation.is_some_and(|s| !s.is_empty());
                    if (aggregates(obj) || self.old.as_ref().is_some_and(aggregates))
                        && confirm_no_escalation(&self.policy, &self.user, "", &full_authority()).is_err()
                    {
                        return Err(refuse("must have cluster-admin privileges to use the aggregationRule"));
                    }
                }
                Ok(())
            }
            Kind::RoleBinding | Kind::ClusterRoleBinding => {
                let role_ref = RoleRef::from_json(obj.get("roleRef"));
                if self.binding_authorized(&role_ref) {
                    return Ok(());
                }
                let rules = self
                    .policy
                    .role_reference_rules(&role_ref, &self.namespace)
                    .map_err(|_| {
                        let (kind, plural) = if role_ref.kind == "Role" {
                            ("Role", "roles")
                        } else {
                            ("ClusterRole", "clusterroles")
                        };
                        errors::not_found(
                            &ApiResource::new(GROUP, "v1", kind, plural, kind == "Role"),
                            &role_ref.name,
                        )
                    })?;
                confirm_no_escalation(&self.policy, &self.user, &self.namespace, rules).map_err(|e| refuse(&e))
            }
        }
    }

    /// The user may `bind` the referenced role (`BindingAuthorized`).
    fn binding_authorized(&self, role_ref: &RoleRef) -> bool {
        let resource = match role_ref.kind.as_str() {
            "ClusterRole" => "clusterroles",
            "Role" => "roles",
            _ => return false,
        };
        let attrs = Attributes::resource(
            &self.user,
            "bind",
            &self.namespace,
            &role_ref.api_group,
            resource,
            "",
            &role_ref.name,
        );
        self.auth.authorize(&self.policy, &attrs).allowed
    }
}

/// True when `new` differs from `old` at most in the fields the garbage collector writes (`IsOnlyMutatingGCFields`:
/// owner references, finalizers, selfLink, managed fields).
fn only_gc_fields_change(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in ["ownerReferences", "finalizers", "selfLink", "managedFields"] {
                m.remove(k);
            }
        }
        v
    };
    strip(new) == strip(old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Auth;
    use serde_json::json;

    fn policy() -> Arc<Policy> {
        Arc::new(Policy::from_values(&[
            json!({"kind": "ClusterRole", "metadata": {"name": "pods-reader"},
                   "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
            json!({"kind": "ClusterRole", "metadata": {"name": "secrets-reader"},
                   "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]}),
            json!({"kind": "ClusterRole", "metadata": {"name": "pods-writer"},
                   "rules": [{"verbs": ["create"], "apiGroups": [""], "resources": ["pods"]}]}),
            json!({"kind": "ClusterRole", "metadata": {"name": "binder"},
                   "rules": [{"verbs": ["bind"], "apiGroups": [GROUP], "resources": ["clusterroles"], "resourceNames": ["secrets-reader"]}]}),
            json!({"kind": "RoleBinding", "metadata": {"name": "alice", "namespace": "ns"},
                   "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "pods-reader"},
                   "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "alice"}]}),
            json!({"kind": "RoleBinding", "metadata": {"name": "alice-binds", "namespace": "ns"},
                   "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "binder"},
                   "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "alice"}]}),
        ]))
    }

    fn rbac_auth() -> Auth {
        Auth {
            rbac: true,
            ..Default::default()
        }
    }

    fn role(rules: Value) -> Value {
        json!({"kind": "Role", "metadata": {"name": "r", "namespace": "ns"}, "rules": rules})
    }

    fn binding(kind: &str, role: &str) -> Value {
        json!({"kind": "RoleBinding", "metadata": {"name": "b", "namespace": "ns"},
               "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role},
               "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "bob"}]})
    }

    // Cases of kube-apiserver's escalation tests (pkg/registry/rbac/validation/rule_test.go, the policybased
    // storages' tests).
    #[test]
    fn roles_may_hold_only_what_the_writer_holds() {
        let auth = rbac_auth();
        let alice = UserInfo::new("alice", &["system:authenticated"]);
        let guard = Guard::new(
            &auth,
            policy(),
            &alice,
            super::super::rule_resolver::ROLES,
            "ns",
            "r",
            None,
        )
        .unwrap();
        guard
            .check(&role(
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ))
            .unwrap();
        let e = guard
            .check(&role(
                json!([{"verbs": ["get", "delete", "create"], "apiGroups": [""], "resources": ["pods"]}]),
            ))
            .unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"create\"]}"
        );
        // In another namespace alice holds nothing.
        let elsewhere = Guard::new(
            &auth,
            policy(),
            &alice,
            super::super::rule_resolver::ROLES,
            "other",
            "r",
            None,
        )
        .unwrap();
        assert!(
            elsewhere
                .check(&role(
                    json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])
                ))
                .is_err()
        );
        let root = UserInfo::new("root", &["system:masters"]);
        assert!(
            Guard::new(
                &auth,
                policy(),
                &root,
                super::super::rule_resolver::ROLES,
                "ns",
                "r",
                None
            )
            .is_none()
        );
    }

    #[test]
    fn bindings_need_the_bind_verb_or_the_role_s_rules() {
        let auth = rbac_auth();
        let alice = UserInfo::new("alice", &[]);
        let guard = Guard::new(
            &auth,
            policy(),
            &alice,
            super::super::rule_resolver::ROLE_BINDINGS,
            "ns",
            "b",
            None,
        )
        .unwrap();
        guard.check(&binding("ClusterRole", "pods-reader")).unwrap();
        guard.check(&binding("ClusterRole", "secrets-reader")).unwrap();
        // alice holds every rule of binder (through her own binding of it).
        guard.check(&binding("ClusterRole", "binder")).unwrap();
        let e = guard.check(&binding("ClusterRole", "pods-writer")).unwrap_err();
        assert_eq!(e.code, 403, "{}", e.message);
        assert!(
            e.message
                .starts_with(r#"rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "alice""#)
        );
        let e = guard.check(&binding("ClusterRole", "missing")).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (404, r#"clusterroles.rbac.authorization.k8s.io "missing" not found"#)
        );
    }

    #[test]
    fn aggregation_rules_need_every_permission() {
        let auth = rbac_auth();
        let p = Arc::new(Policy::from_values(&[
            json!({"kind": "ClusterRole", "metadata": {"name": "escalator"},
                   "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "e"},
                   "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "escalator"},
                   "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "carol"}]}),
        ]));
        let carol = UserInfo::new("carol", &[]);
        let agg = json!({"kind": "ClusterRole", "metadata": {"name": "agg"}, "rules": [],
                          "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}});
        // `*` on resources covers `escalate`: carol may write it without any check.
        let g = Guard::new(
            &auth,
            p.clone(),
            &carol,
            super::super::rule_resolver::CLUSTER_ROLES,
            "",
            "agg",
            None,
        )
        .unwrap();
        g.check(&agg).unwrap();
        let p2 = Arc::new(Policy::from_values(&[
            json!({"kind": "ClusterRole", "metadata": {"name": "writer"},
                   "rules": [{"verbs": ["create"], "apiGroups": [GROUP], "resources": ["clusterroles"]}]}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "w"},
                   "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "writer"},
                   "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "carol"}]}),
        ]));
        let g = Guard::new(
            &auth,
            p2,
            &carol,
            super::super::rule_resolver::CLUSTER_ROLES,
            "",
            "agg",
            None,
        )
        .unwrap();
        let e = g.check(&agg).unwrap_err();
        assert!(
            e.message
                .ends_with("must have cluster-admin privileges to use the aggregationRule"),
            "{}",
            e.message
        );
    }

    #[test]
    fn updates_of_gc_fields_pass_and_compaction_joins_verbs() {
        let old = json!({"metadata": {"name": "r", "finalizers": ["a"]}, "rules": [{"verbs": ["*"]}]});
        let new = json!({"metadata": {"name": "r", "ownerReferences": [{"uid": "u"}]}, "rules": [{"verbs": ["*"]}]});
        assert!(only_gc_fields_change(&new, &old));
        assert!(!only_gc_fields_change(
            &json!({"metadata": {"name": "r"}, "rules": []}),
            &old
        ));
        let compact = compact_rules(vec![
            PolicyRule::resources(&["get"], &[""], &["pods"]),
            PolicyRule::resources(&["list"], &[""], &["pods"]),
            PolicyRule::resources(&["get"], &[""], &["pods"]).names(&["x"]),
        ]);
        assert_eq!(compact.len(), 2);
        assert!(compact.contains(&PolicyRule::resources(&["get", "list"], &[""], &["pods"])));
    }
}
