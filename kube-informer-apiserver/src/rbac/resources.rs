//! TEMPORARY (issue 30, until the catalog of built-in kinds of issue 29 lands): registers the four RBAC kinds and
//! `serviceaccounts` among the default resources, so that roles, bindings and service accounts can be written.
//! Once the catalog serves them, drop this file and its one call in `server.rs` (`rbac::resources::missing`); the
//! RBAC kinds keep their defaulting and validation through `defaults::rules` (see `rbac::validation`).

use kube_informer::object::ApiResource;

use crate::meta::GenerationRule;
use crate::resource::{NameRule, ResourceSpec};

/// The specs of the kinds RBAC and service-account tokens need that `specs` does not already serve.
pub(crate) fn missing(specs: &[ResourceSpec]) -> Vec<ResourceSpec> {
    let rbac = |kind: &str, plural: &str, namespaced: bool| {
        ResourceSpec::new(ApiResource::new(super::types::GROUP, "v1", kind, plural, namespaced))
            .generation(GenerationRule::Untracked)
            .names(NameRule::PathSegment)
    };
    [
        rbac("Role", "roles", true),
        rbac("ClusterRole", "clusterroles", false),
        rbac("RoleBinding", "rolebindings", true),
        rbac("ClusterRoleBinding", "clusterrolebindings", false),
        ResourceSpec::new(ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true))
            .generation(GenerationRule::Untracked)
            .short_name("sa"),
    ]
    .into_iter()
    .filter(|s| !specs.iter().any(|d| d.id() == s.id()))
    .map(ResourceSpec::with_builtin_rules)
    .collect()
}
