//! Whether one rule allows a request (`pkg/apis/rbac/v1/evaluation_helpers.go` and `RuleAllows` of the RBAC
//! authorizer): a verb, an API group, a resource (with `*/subresource`), a name and a non-resource URL (a trailing
//! `*` matches any suffix).

use super::types::{ALL, PolicyRule};
use crate::auth::attributes::Attributes;

pub(crate) fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

pub(crate) fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// `combined` is `resource` or `resource/subresource`; a rule's `*/sub` matches every resource's `sub`.
pub(crate) fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources
        .iter()
        .any(|r| r == ALL || r == combined || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource)))
}

/// A rule without names matches every name (the empty name of a list or create included).
pub(crate) fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

pub(crate) fn non_resource_url_matches(rule: &PolicyRule, url: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == ALL
            || u == url
            || u.strip_suffix('*')
                .is_some_and(|_| url.starts_with(u.trim_end_matches('*')))
    })
}

/// True when `rule` allows the request.
pub(crate) fn rule_allows(attrs: &Attributes<'_>, rule: &PolicyRule) -> bool {
    if attrs.resource_request {
        let combined = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        verb_matches(rule, &attrs.verb)
            && api_group_matches(rule, &attrs.api_group)
            && resource_matches(rule, &combined, &attrs.subresource)
            && resource_name_matches(rule, &attrs.name)
    } else {
        verb_matches(rule, &attrs.verb) && non_resource_url_matches(rule, &attrs.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::user::UserInfo;

    fn resource(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes<'static> {
        static USER: std::sync::LazyLock<UserInfo> = std::sync::LazyLock::new(|| UserInfo::new("u", &[]));
        Attributes::resource(&USER, verb, "ns", group, resource, sub, name)
    }

    // Cases of kube-apiserver's TestRuleMatches (plugin/pkg/auth/authorizer/rbac/rbac_test.go).
    #[test]
    fn rules_match_as_the_rbac_authorizer_matches_them() {
        let star = PolicyRule::resources(&["*"], &["*"], &["*"]);
        assert!(rule_allows(&resource("get", "", "pods", "", ""), &star));
        assert!(rule_allows(&resource("get", "", "pods", "status", "x"), &star));
        let sub_all = PolicyRule::resources(&["get"], &[""], &["*/status"]);
        assert!(rule_allows(&resource("get", "", "pods", "status", ""), &sub_all));
        assert!(!rule_allows(&resource("get", "", "pods", "", ""), &sub_all));
        assert!(!rule_allows(&resource("get", "", "pods", "log", ""), &sub_all));
        let pods = PolicyRule::resources(&["get"], &[""], &["pods"]);
        assert!(
            !rule_allows(&resource("get", "", "pods", "status", ""), &pods),
            "a resource is not its subresources"
        );
        assert!(
            !rule_allows(&resource("get", "apps", "pods", "", ""), &pods),
            "the group must match"
        );
        assert!(
            !rule_allows(&resource("list", "", "pods", "", ""), &pods),
            "the verb must match"
        );
        let pods_status = PolicyRule::resources(&["get"], &[""], &["pods/status"]);
        assert!(rule_allows(&resource("get", "", "pods", "status", ""), &pods_status));
        let named = PolicyRule::resources(&["get"], &[""], &["pods"]).names(&["a"]);
        assert!(rule_allows(&resource("get", "", "pods", "", "a"), &named));
        assert!(!rule_allows(&resource("get", "", "pods", "", "b"), &named));
        assert!(
            !rule_allows(&resource("get", "", "pods", "", ""), &named),
            "a list names no object"
        );
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_a_trailing_star() {
        let user = UserInfo::new("u", &[]);
        let url = |path: &str| Attributes::non_resource(&user, "get", path);
        let rule = PolicyRule::urls(&["get"], &["/apis/*", "/version", "/health*"]);
        assert!(rule_allows(&url("/apis/apps/v1"), &rule));
        assert!(rule_allows(&url("/apis/"), &rule));
        assert!(!rule_allows(&url("/apis"), &rule));
        assert!(rule_allows(&url("/version"), &rule));
        assert!(!rule_allows(&url("/version/"), &rule));
        assert!(rule_allows(&url("/healthz/ping"), &rule));
        assert!(rule_allows(&url("/anything"), &PolicyRule::urls(&["get"], &["*"])));
        assert!(!rule_allows(
            &Attributes::non_resource(&user, "post", "/version"),
            &rule
        ));
    }
}
