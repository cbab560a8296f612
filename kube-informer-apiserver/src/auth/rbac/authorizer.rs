//! The RBAC authorizer (`plugin/pkg/auth/authorizer/rbac/rbac.go`): a request is allowed when any rule that applies
//! to its user in its namespace allows it — the union of every binding's role, nothing denied explicitly — with the
//! binding that allowed it as the reason; refused with no opinion otherwise, the errors met resolving the user's
//! bindings (a role that does not exist) as the reason.

use super::evaluation_helpers::rule_allows;
use super::rule_resolver::{Policy, Visit, aggregate};
use super::types::PolicyRule;
use crate::api::user::UserInfo;
use crate::auth::attributes::{Attributes, Decision};

/// Decides a request.
pub(crate) fn authorize(policy: &Policy, attrs: &Attributes<'_>) -> Decision {
    let mut allowed_by = None;
    let mut errors = Vec::new();
    policy.visit_rules_for(attrs.user, &attrs.namespace, &mut |v| match v {
        Visit::Rule(source, rule) if rule_allows(attrs, rule) => {
            allowed_by = Some(source.to_string());
            false
        }
        Visit::Rule(..) => true,
        Visit::Error(e) => {
            errors.push(e);
            true
        }
    });
    match allowed_by {
        Some(source) => Decision {
            allowed: true,
            reason: format!("RBAC: allowed by {source}"),
        },
        None if errors.is_empty() => Decision::default(),
        None => Decision {
            allowed: false,
            reason: format!("RBAC: {}", aggregate(&errors)),
        },
    }
}

/// The rules of `user` in `namespace` as a `SelfSubjectRulesReview` lists them: resource rules, non-resource rules
/// (a rule with both is in both), and the errors met.
pub(crate) fn rules_for(
    policy: &Policy,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<PolicyRule>, Vec<PolicyRule>, Vec<String>) {
    let (rules, errors) = policy.rules_for(user, namespace);
    let resource = rules.iter().filter(|r| !r.resources.is_empty()).cloned().collect();
    let non_resource = rules.into_iter().filter(|r| !r.non_resource_urls.is_empty()).collect();
    (resource, non_resource, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::types::GROUP;
    use serde_json::{Value, json};

    fn role(name: &str, ns: &str, rules: Value) -> Value {
        if ns.is_empty() {
            json!({"kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
        } else {
            json!({"kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": rules})
        }
    }

    fn binding(name: &str, ns: &str, kind: &str, role: &str, subjects: Value) -> Value {
        let b = if ns.is_empty() {
            "ClusterRoleBinding"
        } else {
            "RoleBinding"
        };
        json!({"kind": b, "metadata": {"name": name, "namespace": ns},
               "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role}, "subjects": subjects})
    }

    fn user(name: &str) -> Value {
        json!([{"kind": "User", "apiGroup": GROUP, "name": name}])
    }

    /// `[verb, namespace, group, resource, subresource, name]`.
    fn can(p: &Policy, u: &UserInfo, request: [&str; 6]) -> bool {
        let [verb, ns, group, resource, sub, name] = request;
        authorize(p, &Attributes::resource(u, verb, ns, group, resource, sub, name)).allowed
    }

    // Cases of kube-apiserver's TestAuthorizer (plugin/pkg/auth/authorizer/rbac/rbac_test.go).
    #[test]
    fn cluster_roles_bound_in_a_namespace_grant_only_there() {
        let p = Policy::from_values(&[
            role(
                "admin",
                "",
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
            ),
            binding("admin", "ns1", "ClusterRole", "admin", user("admin")),
        ]);
        let admin = UserInfo::new("admin", &[]);
        assert!(can(&p, &admin, ["get", "ns1", "", "pods", "", ""]));
        assert!(can(&p, &admin, ["watch", "ns1", "apps", "deployments", "", ""]));
        assert!(
            !can(&p, &admin, ["get", "ns2", "", "pods", "", ""]),
            "another namespace"
        );
        assert!(!can(&p, &admin, ["get", "", "", "nodes", "", ""]), "cluster-scoped");
        assert!(!can(
            &p,
            &UserInfo::new("other", &[]),
            ["get", "ns1", "", "pods", "", ""]
        ));
    }

    #[test]
    fn cluster_role_bindings_grant_everywhere_and_roles_only_in_their_namespace() {
        let p = Policy::from_values(&[
            role(
                "reader",
                "",
                json!([{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["*"]}]),
            ),
            role(
                "writer",
                "ns1",
                json!([{"verbs": ["create", "update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": []}]),
            ),
            binding(
                "readers",
                "",
                "ClusterRole",
                "reader",
                json!([{"kind": "Group", "apiGroup": GROUP, "name": "devs"}]),
            ),
            binding("writers", "ns1", "Role", "writer", user("bob")),
            binding("cross", "ns2", "Role", "writer", user("bob")),
        ]);
        let bob = UserInfo::new("bob", &["devs"]);
        assert!(can(&p, &bob, ["list", "", "", "nodes", "", ""]));
        assert!(can(&p, &bob, ["list", "ns9", "", "pods", "", ""]));
        assert!(!can(&p, &bob, ["list", "ns9", "apps", "deployments", "", ""]));
        assert!(can(&p, &bob, ["create", "ns1", "", "configmaps", "", ""]));
        assert!(
            !can(&p, &bob, ["create", "ns2", "", "configmaps", "", ""]),
            "ns2 has no Role writer"
        );
        let d = authorize(
            &p,
            &Attributes::resource(&bob, "create", "ns2", "", "configmaps", "", ""),
        );
        assert_eq!(d.reason, r#"RBAC: role.rbac.authorization.k8s.io "writer" not found"#);
        let d = authorize(
            &p,
            &Attributes::resource(&bob, "create", "ns1", "", "configmaps", "", ""),
        );
        assert_eq!(
            d.reason,
            r#"RBAC: allowed by RoleBinding "writers/ns1" of Role "writer" to User "bob""#
        );
    }

    #[test]
    fn resource_names_and_subresources_narrow_a_rule() {
        let p = Policy::from_values(&[
            role(
                "r",
                "",
                json!([
                    {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["leader"]},
                    {"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments/scale"]},
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}
                ]),
            ),
            binding("b", "", "ClusterRole", "r", user("ctl")),
        ]);
        let ctl = UserInfo::new("ctl", &[]);
        assert!(can(&p, &ctl, ["get", "ns", "", "configmaps", "", "leader"]));
        assert!(!can(&p, &ctl, ["get", "ns", "", "configmaps", "", "other"]));
        assert!(!can(&p, &ctl, ["list", "ns", "", "configmaps", "", ""]));
        assert!(can(&p, &ctl, ["update", "ns", "apps", "deployments", "scale", "d"]));
        assert!(!can(&p, &ctl, ["update", "ns", "apps", "deployments", "", "d"]));
        assert!(can(&p, &ctl, ["get", "ns", "", "pods", "status", "p"]));
        assert!(!can(&p, &ctl, ["get", "ns", "", "pods", "log", "p"]));
    }

    #[test]
    fn non_resource_urls_come_from_cluster_roles() {
        let p = Policy::from_values(&[
            role(
                "disco",
                "",
                json!([{"verbs": ["get"], "nonResourceURLs": ["/apis/*", "/version"]}]),
            ),
            binding(
                "disco",
                "",
                "ClusterRole",
                "disco",
                json!([{"kind": "Group", "apiGroup": GROUP, "name": "system:authenticated"}]),
            ),
        ]);
        let u = UserInfo::new("u", &["system:authenticated"]);
        assert!(authorize(&p, &Attributes::non_resource(&u, "get", "/apis/apps")).allowed);
        assert!(!authorize(&p, &Attributes::non_resource(&u, "post", "/apis/apps")).allowed);
        assert!(
            !authorize(
                &p,
                &Attributes::non_resource(&UserInfo::new("x", &[]), "get", "/version")
            )
            .allowed
        );
        let (resource, non_resource, errors) = rules_for(&p, &u, "ns");
        assert!(resource.is_empty() && errors.is_empty());
        assert_eq!(non_resource.len(), 1);
    }
}
