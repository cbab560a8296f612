//! The `rbac.authorization.k8s.io/v1` types the authorizer reads (`k8s.io/api/rbac/v1`): rules, subjects, role
//! references, and the four kinds, read from stored JSON. Reading is lenient, as the authorizer's informers are:
//! validation refuses malformed objects at write time, and what cannot be read grants nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

/// The API group of the RBAC kinds.
pub(crate) use crate::registry::defaults::rbac::GROUP;
/// `*` in verbs, apiGroups, resources and nonResourceURLs.
pub(crate) const ALL: &str = "*";

/// One rule of a role.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct PolicyRule {
    pub(crate) verbs: Vec<String>,
    pub(crate) api_groups: Vec<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) resource_names: Vec<String>,
    pub(crate) non_resource_urls: Vec<String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

impl PolicyRule {
    /// A rule on resources.
    pub(crate) fn resources(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Self {
        let own = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect();
        PolicyRule {
            verbs: own(verbs),
            api_groups: own(groups),
            resources: own(resources),
            ..Default::default()
        }
    }

    /// A rule on non-resource URLs.
    pub(crate) fn urls(verbs: &[&str], urls: &[&str]) -> Self {
        let own = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect();
        PolicyRule {
            verbs: own(verbs),
            non_resource_urls: own(urls),
            ..Default::default()
        }
    }

    /// Restricted to these names.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn names(mut self, names: &[&str]) -> Self {
        self.resource_names = names.iter().map(|x| (*x).to_owned()).collect();
        self
    }

    pub(crate) fn from_json(v: &Value) -> Self {
        PolicyRule {
            verbs: strings(v.get("verbs")),
            api_groups: strings(v.get("apiGroups")),
            resources: strings(v.get("resources")),
            resource_names: strings(v.get("resourceNames")),
            non_resource_urls: strings(v.get("nonResourceURLs")),
        }
    }

    /// The rules of a role's `rules` array.
    pub(crate) fn list_from_json(v: Option<&Value>) -> Vec<PolicyRule> {
        v.and_then(Value::as_array)
            .map(|a| a.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    /// As `k8s.io/api` encodes it: `verbs` always, the other lists when not empty.
    pub(crate) fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("verbs".into(), json!(self.verbs));
        for (key, list) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() {
                m.insert(key.into(), json!(list));
            }
        }
        Value::Object(m)
    }

    /// `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`: the compact form escalation errors
    /// print (`rbacv1helpers.CompactString`, Go's `%q` of each list).
    pub(crate) fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        for (label, list) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !list.is_empty() {
                parts.push(format!("{label}:{}", go_quote_list(list)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` of a string: double-quoted, with Go's escapes.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub(crate) fn go_quote_list(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", items.join(" "))
}

/// The kind of a binding's subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Subject {
    pub(crate) kind: String,
    pub(crate) api_group: String,
    pub(crate) name: String,
    pub(crate) namespace: String,
}

impl Subject {
    pub(crate) fn from_json(v: &Value) -> Self {
        Subject {
            kind: text(v, "kind"),
            api_group: text(v, "apiGroup"),
            name: text(v, "name"),
            namespace: text(v, "namespace"),
        }
    }

    /// `User "alice"`, `Group "dev"`, `ServiceAccount "ctl/ns"` (a service account's name, then its namespace, or
    /// the binding's when it names none): as the authorizer's reasons describe a subject.
    pub(crate) fn describe(&self, binding_namespace: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                binding_namespace
            } else {
                &self.namespace
            };
            format!("{} {}", self.kind, go_quote(&format!("{}/{ns}", self.name)))
        } else {
            format!("{} {}", self.kind, go_quote(&self.name))
        }
    }
}

/// What a binding grants: a Role (of the binding's namespace) or a ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RoleRef {
    pub(crate) api_group: String,
    pub(crate) kind: String,
    pub(crate) name: String,
}

impl RoleRef {
    pub(crate) fn from_json(v: Option<&Value>) -> Self {
        let Some(v) = v else {
            return RoleRef::default();
        };
        RoleRef {
            api_group: text(v, "apiGroup"),
            kind: text(v, "kind"),
            name: text(v, "name"),
        }
    }
}

/// A RoleBinding or ClusterRoleBinding (`namespace` empty).
#[derive(Clone, Debug)]
pub(crate) struct Binding {
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) role_ref: RoleRef,
    pub(crate) subjects: Vec<Subject>,
}

impl Binding {
    pub(crate) fn from_json(v: &Value) -> Self {
        let meta = v.get("metadata").cloned().unwrap_or(Value::Null);
        Binding {
            name: text(&meta, "name"),
            namespace: text(&meta, "namespace"),
            role_ref: RoleRef::from_json(v.get("roleRef")),
            subjects: v
                .get("subjects")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Subject::from_json).collect())
                .unwrap_or_default(),
        }
    }
}

/// A label selector of an aggregation rule (`matchLabels` and `matchExpressions`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    pub(crate) match_labels: BTreeMap<String, String>,
    /// (key, operator, values)
    pub(crate) match_expressions: Vec<(String, String, Vec<String>)>,
}

impl LabelSelector {
    pub(crate) fn from_json(v: &Value) -> Self {
        LabelSelector {
            match_labels: v
                .get("matchLabels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                        .collect()
                })
                .unwrap_or_default(),
            match_expressions: v
                .get("matchExpressions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|e| (text(e, "key"), text(e, "operator"), strings(e.get("values"))))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// True when `labels` match (`metav1.LabelSelectorAsSelector`; an unknown operator matches nothing, as the
    /// conversion's error makes the aggregation controller skip the role).
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|(key, op, values)| {
                let value = labels.get(key);
                match op.as_str() {
                    "In" => value.is_some_and(|v| values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !values.contains(v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

/// A ClusterRole as the aggregation controller and the resolver read it.
#[derive(Clone, Debug)]
pub(crate) struct ClusterRole {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) rules: Vec<PolicyRule>,
    /// `aggregationRule.clusterRoleSelectors`; `None` without an aggregation rule.
    pub(crate) aggregation: Option<Vec<LabelSelector>>,
}

impl ClusterRole {
    pub(crate) fn from_json(v: &Value) -> Self {
        let meta = v.get("metadata").cloned().unwrap_or(Value::Null);
        ClusterRole {
            name: text(&meta, "name"),
            labels: meta
                .get("labels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                        .collect()
                })
                .unwrap_or_default(),
            rules: PolicyRule::list_from_json(v.get("rules")),
            aggregation: v.get("aggregationRule").filter(|a| a.is_object()).map(|a| {
                a.get("clusterRoleSelectors")
                    .and_then(Value::as_array)
                    .map(|s| s.iter().map(LabelSelector::from_json).collect())
                    .unwrap_or_default()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_print_as_go_prints_them() {
        let r = PolicyRule::resources(&["get", "list"], &[""], &["pods"]).names(&["a\"b"]);
        assert_eq!(
            r.compact_string(),
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a\"b"], Verbs:["get" "list"]}"#
        );
        assert_eq!(
            PolicyRule::urls(&["get"], &["/healthz"]).compact_string(),
            r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#
        );
        assert_eq!(
            r.to_json(),
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a\"b"]})
        );
        assert_eq!(PolicyRule::from_json(&r.to_json()), r);
    }

    #[test]
    fn subjects_are_described_as_the_authorizer_describes_them() {
        let sa = Subject::from_json(&json!({"kind": "ServiceAccount", "name": "ctl"}));
        assert_eq!(sa.describe("ns"), r#"ServiceAccount "ctl/ns""#);
        let sa2 = Subject::from_json(&json!({"kind": "ServiceAccount", "name": "ctl", "namespace": "other"}));
        assert_eq!(sa2.describe("ns"), r#"ServiceAccount "ctl/other""#);
        let u = Subject::from_json(&json!({"kind": "User", "name": "alice", "apiGroup": GROUP}));
        assert_eq!(u.describe(""), r#"User "alice""#);
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels: BTreeMap<String, String> = [("a".to_owned(), "1".to_owned())].into_iter().collect();
        let sel = |v: Value| LabelSelector::from_json(&v);
        assert!(sel(json!({"matchLabels": {"a": "1"}})).matches(&labels));
        assert!(!sel(json!({"matchLabels": {"a": "2"}})).matches(&labels));
        assert!(
            sel(json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]})).matches(&labels)
        );
        assert!(sel(json!({"matchExpressions": [{"key": "b", "operator": "DoesNotExist"}]})).matches(&labels));
        assert!(!sel(json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]})).matches(&labels));
        assert!(sel(json!({})).matches(&labels), "an empty selector matches everything");
    }
}
