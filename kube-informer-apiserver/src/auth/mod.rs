//! Authentication and authorization (k8s.io/apiserver's `authentication` and `authorization`, kube-apiserver's
//! RBAC authorizer and `serviceaccount`): who makes a request ([`authentication`], [`serviceaccount`] tokens,
//! [`impersonation`]), what it may do ([`attributes`] of a request, [`authorizer`], [`rbac`]) and the review
//! resources answered from both ([`review`]).
//!
//! This module itself holds the allow rules of the small authorizer ([`AccessRule`]) and the bearer tokens and
//! client certificates the server accepts.

pub(crate) mod attributes;
pub(crate) mod authentication;
pub(crate) mod authorizer;
pub(crate) mod impersonation;
pub(crate) mod rbac;
pub(crate) mod review;
pub(crate) mod serviceaccount;

use std::collections::HashMap;
use std::fmt;

/// Grants a user some verbs on some resources. A user with no matching rule gets 403 — once any rule exists;
/// with no rules at all, every authenticated user may do everything.
///
/// Resources are named by plural (`configmaps`), `plural.group` (`leases.coordination.k8s.io`), with a subresource
/// (`pods/status`), or `*`; verbs by their RBAC names (`get`, `list`, `watch`, `create`, `update`, `patch`,
/// `delete`, `deletecollection`) or `*`. Unlike RBAC there are no namespaces, groups or non-resource URLs.
///
/// ```
/// use kube_informer_apiserver::AccessRule;
///
/// let read_only = AccessRule::user("viewer").verbs(&["get", "list", "watch"]).resources(&["configmaps"]);
/// # let _ = read_only;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRule {
    pub(crate) user: String,
    pub(crate) verbs: Vec<String>,
    pub(crate) resources: Vec<String>,
}

impl AccessRule {
    /// Everything for `user`; narrow it with [`verbs`](Self::verbs) and [`resources`](Self::resources).
    pub fn user(user: &str) -> Self {
        AccessRule {
            user: user.to_owned(),
            verbs: vec!["*".into()],
            resources: vec!["*".into()],
        }
    }

    /// Only these verbs.
    #[must_use]
    pub fn verbs(mut self, verbs: &[&str]) -> Self {
        self.verbs = verbs.iter().map(|v| (*v).to_owned()).collect();
        self
    }

    /// Only these resources.
    #[must_use]
    pub fn resources(mut self, resources: &[&str]) -> Self {
        self.resources = resources.iter().map(|r| (*r).to_owned()).collect();
        self
    }

    /// True when this rule lets `user` do `verb` on `plural` of `group` (`sub`resource). A rule's `*` matches any
    /// verb or resource; a request for `*` is granted only by a rule's `*`.
    fn grants(&self, user: &str, verb: &str, group: &str, plural: &str, sub: Option<&str>) -> bool {
        if self.user != user || !self.verbs.iter().any(|v| v == "*" || v == verb) {
            return false;
        }
        let id = if group.is_empty() {
            plural.to_owned()
        } else {
            format!("{plural}.{group}")
        };
        self.resources.iter().any(|r| {
            if r == "*" {
                return true;
            }
            let (name, rsub) = match r.split_once('/') {
                Some((n, s)) => (n, Some(s)),
                None => (r.as_str(), None),
            };
            (name == "*" || name == plural || name == id) && (rsub == sub || rsub == Some("*"))
        })
    }
}

/// Who may talk to the server.
#[derive(Clone, Default)]
pub(crate) struct Auth {
    /// Bearer token → user name.
    tokens: HashMap<String, String>,
    /// When false, every request is served as an anonymous one and no rule applies.
    pub(crate) required: bool,
    rules: Vec<AccessRule>,
    /// Authorization by RBAC ([`authorizer`]), the access rules granting beside it.
    pub(crate) rbac: bool,
    /// Requests without credentials are served as `system:anonymous` (kube-apiserver's `--anonymous-auth`, which
    /// it turns off when every request is allowed anyway: here, outside the RBAC mode).
    pub(crate) anonymous: bool,
    /// Groups of token and certificate users, beside a certificate's `O=`.
    groups: HashMap<String, Vec<String>>,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Tokens are secrets: count them, never print them.
        f.debug_struct("Auth")
            .field("tokens", &self.tokens.len())
            .field("required", &self.required)
            .field("rules", &self.rules)
            .field("rbac", &self.rbac)
            .field("anonymous", &self.anonymous)
            .field("groups", &self.groups)
            .finish()
    }
}

impl Auth {
    pub(crate) fn add_token(&mut self, token: &str, user: &str) {
        self.tokens.insert(token.to_owned(), user.to_owned());
        self.required = true;
    }

    /// Puts `user` in `groups` (whether authenticated by token or certificate).
    pub(crate) fn add_groups(&mut self, user: &str, groups: &[String]) {
        let g = self.groups.entry(user.to_owned()).or_default();
        for group in groups {
            if !g.contains(group) {
                g.push(group.clone());
            }
        }
    }

    /// The groups configured for `user`.
    pub(crate) fn groups_of(&self, user: &str) -> &[String] {
        self.groups.get(user).map_or(&[], Vec::as_slice)
    }

    /// The user of a static bearer token.
    pub(crate) fn token_user(&self, token: &str) -> Option<&str> {
        self.tokens.get(token).map(String::as_str)
    }

    pub(crate) fn add_rule(&mut self, rule: AccessRule) {
        self.rules.push(rule);
    }

    /// True when any rule is configured (else every authenticated user may do everything).
    pub(crate) fn has_rules(&self) -> bool {
        !self.rules.is_empty()
    }

    /// The first rule granting `user` `verb` on `plural` of `group` (`sub`resource).
    pub(crate) fn granting_rule(
        &self,
        user: &str,
        verb: &str,
        group: &str,
        plural: &str,
        sub: Option<&str>,
    ) -> Option<&AccessRule> {
        self.rules.iter().find(|r| r.grants(user, verb, group, plural, sub))
    }

    /// The rules of `user`.
    pub(crate) fn rules_of<'a>(&'a self, user: &'a str) -> impl Iterator<Item = &'a AccessRule> {
        self.rules.iter().filter(move |r| r.user == user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::log::Verb;
    use crate::registry::resource::ResourceSpec;
    use kube_informer::object::ApiResource;

    #[test]
    fn rules_grant_verbs_on_resources() {
        let cm = ResourceSpec::new(ApiResource::new("", "v1", "ConfigMap", "configmaps", true));
        let lease = ResourceSpec::new(ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true));
        let mut auth = Auth::default();
        let authorize = |auth: &Auth, user: &str, verb: Verb, spec: &ResourceSpec, sub: Option<&str>| {
            !auth.has_rules()
                || auth
                    .granting_rule(user, verb.as_str(), &spec.api.group, &spec.api.plural, sub)
                    .is_some()
        };
        assert!(
            authorize(&auth, "anyone", Verb::Delete, &cm, None),
            "no rules: allow all"
        );
        assert!(
            !format!("{:?}", {
                let mut a = Auth::default();
                a.add_token("s3cret", "alice");
                a
            })
            .contains("s3cret")
        );
        auth.add_rule(
            AccessRule::user("viewer")
                .verbs(&["list", "watch"])
                .resources(&["configmaps"]),
        );
        auth.add_rule(AccessRule::user("admin"));
        auth.add_rule(AccessRule::user("ctl").resources(&["leases.coordination.k8s.io", "configmaps/status"]));
        assert!(authorize(&auth, "viewer", Verb::List, &cm, None));
        assert!(!authorize(&auth, "viewer", Verb::Create, &cm, None));
        assert!(!authorize(&auth, "viewer", Verb::List, &lease, None));
        assert!(!authorize(&auth, "viewer", Verb::List, &cm, Some("status")));
        assert!(authorize(&auth, "admin", Verb::Delete, &lease, Some("status")));
        assert!(authorize(&auth, "ctl", Verb::Update, &lease, None));
        assert!(authorize(&auth, "ctl", Verb::Update, &cm, Some("status")));
        assert!(!authorize(&auth, "ctl", Verb::Update, &cm, None));
        assert!(!authorize(&auth, "stranger", Verb::Get, &cm, None));
    }
}
