//! Role-based access control as kube-apiserver enforces it (`--authorization-mode=RBAC`): the authorizer over the
//! Roles, ClusterRoles, RoleBindings and ClusterRoleBindings the server stores, the rule resolver it reads them
//! through, escalation prevention on writes of roles and bindings, ClusterRole aggregation and the bootstrap policy
//! created at start. The four kinds' defaulting and validation are the registry's (`registry::defaults::rbac`).

pub(crate) mod authorizer;
pub(crate) mod bootstrap_policy;
pub(crate) mod clusterrole_aggregation;
pub(crate) mod escalation_check;
pub(crate) mod evaluation_helpers;
pub(crate) mod policy_comparator;
pub(crate) mod rule_resolver;
pub(crate) mod types;

pub(crate) use rule_resolver::{Policy, PolicyCache};
