//! Whether one set of rules covers another (`component-helpers/auth/rbac/validation/policy_comparator.go`): each
//! rule of the second set broken into rules of one verb, group, resource and name, each of which one rule of the
//! first set must cover whole. What is not covered is returned, to be named in the escalation error.

use super::types::{ALL, PolicyRule};

/// True with nothing left when `owner` covers `servant`; false with the uncovered one-verb rules otherwise.
pub(crate) fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

/// A rule as rules of at most one verb, group, resource and name (`BreakdownRule`).
pub(crate) fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    out.extend(rule.resource_names.iter().map(|n| PolicyRule {
                        resource_names: one(n),
                        ..base.clone()
                    }));
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Default::default()
            });
        }
    }
    out
}

fn has(set: &[String], e: &str) -> bool {
    set.iter().any(|s| s == e)
}

fn has_all(set: &[String], contains: &[String]) -> bool {
    contains.iter().all(|c| has(set, c))
}

fn resource_covers_all(set: &[String], covers: &[String]) -> bool {
    if has(set, ALL) || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        has(set, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(set, &format!("*/{sub}")))
    })
}

fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    owner == sub || (owner.ends_with('*') && sub.starts_with(owner.trim_end_matches('*')))
}

/// True when `owner` covers `sub`, a rule of at most one verb, resource and name (`ruleCovers`).
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = sub
        .non_resource_urls
        .iter()
        .all(|p| owner.non_resource_urls.iter().any(|o| non_resource_url_covers(o, p)));
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule::resources(verbs, groups, resources)
    }

    // Cases of kube-apiserver's policy comparator tests (pkg/registry/rbac/validation/policy_comparator_test.go).
    #[test]
    fn covers_as_kube_compares_policies() {
        // Exact match, one verb, and a star.
        assert!(
            covers(
                &[r(&["get", "list"], &[""], &["pods"])],
                &[r(&["get"], &[""], &["pods"])]
            )
            .0
        );
        assert!(
            covers(
                &[r(&["*"], &["*"], &["*"])],
                &[r(&["delete"], &["apps"], &["deployments/scale"])]
            )
            .0
        );
        // A missing verb is reported alone.
        let (ok, missing) = covers(
            &[r(&["get"], &[""], &["pods"])],
            &[r(&["get", "delete"], &[""], &["pods"])],
        );
        assert!(!ok);
        assert_eq!(missing, [r(&["delete"], &[""], &["pods"])]);
        // Subresources: `*/status` covers every status, a resource does not cover its subresources.
        assert!(
            covers(
                &[r(&["get"], &[""], &["*/status"])],
                &[r(&["get"], &[""], &["pods/status"])]
            )
            .0
        );
        assert!(
            !covers(
                &[r(&["get"], &[""], &["pods"])],
                &[r(&["get"], &[""], &["pods/status"])]
            )
            .0
        );
        // Names: no names covers any name; names do not cover "no names".
        assert!(
            covers(
                &[r(&["get"], &[""], &["pods"])],
                &[r(&["get"], &[""], &["pods"]).names(&["a"])]
            )
            .0
        );
        assert!(
            !covers(
                &[r(&["get"], &[""], &["pods"]).names(&["a"])],
                &[r(&["get"], &[""], &["pods"])]
            )
            .0
        );
        assert!(
            covers(
                &[r(&["get"], &[""], &["pods"]).names(&["a", "b"])],
                &[r(&["get"], &[""], &["pods"]).names(&["b"])]
            )
            .0
        );
        // Non-resource URLs: a trailing star covers a prefix.
        assert!(
            covers(
                &[PolicyRule::urls(&["get"], &["/api/*"])],
                &[PolicyRule::urls(&["get"], &["/api/v1"])]
            )
            .0
        );
        assert!(
            !covers(
                &[PolicyRule::urls(&["get"], &["/api"])],
                &[PolicyRule::urls(&["get"], &["/api/v1"])]
            )
            .0
        );
        // Several owner rules together: each sub-rule by one of them.
        assert!(
            covers(
                &[r(&["get"], &[""], &["pods"]), r(&["list"], &[""], &["pods"])],
                &[r(&["get", "list"], &[""], &["pods"])]
            )
            .0
        );
        // Groups must be covered.
        assert!(
            !covers(
                &[r(&["get"], &[""], &["pods"])],
                &[r(&["get"], &["", "apps"], &["pods"])]
            )
            .0
        );
    }

    #[test]
    fn rules_break_down_to_one_verb_resource_and_name() {
        let rule = r(&["get", "list"], &["", "apps"], &["a"]).names(&["x", "y"]);
        assert_eq!(breakdown_rule(&rule).len(), 8);
        assert_eq!(
            breakdown_rule(&PolicyRule::urls(&["get", "post"], &["/a", "/b"])).len(),
            4
        );
    }
}
