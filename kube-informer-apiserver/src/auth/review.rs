//! The review resources, answered from the server's authenticators and authorizers (create only, nothing stored):
//!
//! * `authorization.k8s.io/v1` `SelfSubjectAccessReview` (`kubectl auth can-i VERB RESOURCE`),
//!   `SelfSubjectRulesReview` (`kubectl auth can-i --list`), `SubjectAccessReview` (any user's, `kubectl auth can-i
//!   --as`) and `LocalSubjectAccessReview` (namespaced);
//! * `authentication.k8s.io/v1` `TokenReview` (who a bearer token is) and `SelfSubjectReview` (`kubectl auth
//!   whoami`).
//!
//! In the RBAC mode they are authorized like any resource (every authenticated user may create the self reviews
//! through the bootstrap `system:basic-user` role) and answered by RBAC, with its reasons. In the access-rules mode
//! the self reviews are open to every authenticated user and answered from the [`AccessRule`]s.

use serde_json::{Map, Value, json};

use crate::api::errors::{self, Failure, FieldError};
use crate::api::user::UserInfo;
use crate::auth::authentication::{self, TokenAnswer};
use crate::auth::authorizer;
use crate::auth::rbac::{self, Policy};
use crate::auth::serviceaccount::TokenIssuer;
use crate::auth::{AccessRule, Auth};
use crate::registry::Store;

/// The group and version the access reviews are served under.
pub(crate) const GROUP: &str = "authorization.k8s.io";
/// Version (of both groups).
pub(crate) const VERSION: &str = "v1";
/// The group of the token and self-subject reviews.
pub(crate) const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// Which review a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Review {
    /// `selfsubjectaccessreviews`
    Access,
    /// `selfsubjectrulesreviews`
    Rules,
    /// `subjectaccessreviews`
    SubjectAccess,
    /// `localsubjectaccessreviews` (namespaced)
    LocalSubjectAccess,
    /// `tokenreviews`
    Token,
    /// `selfsubjectreviews`
    SelfSubject,
}

/// In the order discovery lists them (by plural, as kube-apiserver's).
const ALL: [Review; 6] = [
    Review::LocalSubjectAccess,
    Review::Access,
    Review::Rules,
    Review::SubjectAccess,
    Review::SelfSubject,
    Review::Token,
];

impl Review {
    /// By group and plural.
    pub(crate) fn find(group: &str, plural: &str) -> Option<Review> {
        ALL.into_iter().find(|r| r.group() == group && r.plural() == plural)
    }

    /// The plural.
    pub(crate) fn plural(self) -> &'static str {
        match self {
            Review::Access => "selfsubjectaccessreviews",
            Review::Rules => "selfsubjectrulesreviews",
            Review::SubjectAccess => "subjectaccessreviews",
            Review::LocalSubjectAccess => "localsubjectaccessreviews",
            Review::Token => "tokenreviews",
            Review::SelfSubject => "selfsubjectreviews",
        }
    }

    /// The kind.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Review::Access => "SelfSubjectAccessReview",
            Review::Rules => "SelfSubjectRulesReview",
            Review::SubjectAccess => "SubjectAccessReview",
            Review::LocalSubjectAccess => "LocalSubjectAccessReview",
            Review::Token => "TokenReview",
            Review::SelfSubject => "SelfSubjectReview",
        }
    }

    /// The API group.
    pub(crate) fn group(self) -> &'static str {
        match self {
            Review::Token | Review::SelfSubject => AUTHENTICATION_GROUP,
            _ => GROUP,
        }
    }

    /// `group/v1`.
    pub(crate) fn api_version(self) -> String {
        format!("{}/{VERSION}", self.group())
    }

    /// Served under `/namespaces/{ns}/`.
    pub(crate) fn namespaced(self) -> bool {
        self == Review::LocalSubjectAccess
    }

    /// The discovery entries of a group's reviews (`create` only).
    pub(crate) fn discovery(group: &str) -> Vec<Value> {
        ALL.iter()
            .filter(|r| r.group() == group)
            .map(|r| {
                json!({
                    "name": r.plural(),
                    "singularName": r.kind().to_ascii_lowercase(),
                    "namespaced": r.namespaced(),
                    "kind": r.kind(),
                    "verbs": ["create"],
                })
            })
            .collect()
    }
}

/// What a review is answered from.
pub(crate) struct Context<'a> {
    pub(crate) auth: &'a Auth,
    /// The RBAC objects (the RBAC mode only).
    pub(crate) policy: Option<&'a Policy>,
    /// The requester (`None` when authentication is off: everything is allowed).
    pub(crate) user: Option<&'a UserInfo>,
    /// The namespace of the path (local subject access reviews).
    pub(crate) namespace: Option<&'a str>,
    /// What token reviews need: the signer and the store (the bound objects).
    pub(crate) tokens: Option<(&'a TokenIssuer, &'a Store)>,
}

/// Answers a POST of a review.
pub(crate) fn answer(review: Review, ctx: &Context<'_>, body: Value) -> Result<Value, Failure> {
    let Value::Object(mut obj) = body else {
        return Err(errors::bad_request("the body of the request must be a JSON object"));
    };
    let text = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let want_version = review.api_version();
    let (version, kind) = (text(&obj, "apiVersion"), text(&obj, "kind"));
    if !version.is_empty() && version != want_version {
        return Err(errors::bad_request(format!(
            "the API version in the data ({version}) does not match the expected API version ({want_version})"
        )));
    }
    if !kind.is_empty() && kind != review.kind() {
        return Err(errors::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            review.kind()
        )));
    }
    obj.insert("apiVersion".into(), json!(want_version));
    obj.insert("kind".into(), json!(review.kind()));
    obj.entry("metadata").or_insert_with(|| json!({}));
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let status = match review {
        Review::Access => access(ctx, &spec)?,
        Review::Rules => rules(ctx, &spec)?,
        Review::SubjectAccess | Review::LocalSubjectAccess => subject_access(review, ctx, &spec)?,
        Review::Token => token(ctx, &spec)?,
        Review::SelfSubject => json!({"userInfo": ctx.user.map(user_json).unwrap_or_else(|| json!({}))}),
    };
    obj.insert("status".into(), status);
    Ok(Value::Object(obj))
}

/// A `UserInfo` as the review types write it (empty fields omitted).
fn user_json(u: &UserInfo) -> Value {
    let mut m = Map::new();
    if !u.name.is_empty() {
        m.insert("username".into(), json!(u.name));
    }
    if !u.uid.is_empty() {
        m.insert("uid".into(), json!(u.uid));
    }
    if !u.groups.is_empty() {
        m.insert("groups".into(), json!(u.groups));
    }
    if !u.extra.is_empty() {
        m.insert("extra".into(), json!(u.extra));
    }
    Value::Object(m)
}

fn invalid(kind: &str, field: &str, detail: &str) -> Failure {
    let e = FieldError::invalid(field, "null", detail);
    errors::invalid(GROUP, kind, "", vec![e])
}

/// `spec` names exactly one kind of attributes.
fn check_attributes(kind: &str, spec: &Value) -> Result<(), Failure> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(_), Some(_)) => Err(invalid(
            kind,
            "spec.nonResourceAttributes",
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => Err(invalid(
            kind,
            "spec.resourceAttributes",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => Ok(()),
    }
}

/// The status of an access review's decision.
fn decision_status(d: &authorizer::Decision) -> Value {
    let mut status = json!({"allowed": d.allowed});
    if !d.reason.is_empty() {
        status["reason"] = json!(d.reason);
    }
    status
}

/// The status of a `SelfSubjectAccessReview`.
fn access(ctx: &Context<'_>, spec: &Value) -> Result<Value, Failure> {
    check_attributes("SelfSubjectAccessReview", spec)?;
    let Some(user) = ctx.user else {
        return Ok(json!({"allowed": true, "reason": "authentication is off: every request is allowed"}));
    };
    if ctx.auth.rbac {
        let attrs = authorizer::review_attributes(user, spec).ok_or_else(|| errors::bad_request("no attributes"))?;
        return Ok(decision_status(&authorizer::authorize(ctx.auth, ctx.policy, &attrs)));
    }
    let attr = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let Some(r) = spec.get("resourceAttributes").filter(|v| !v.is_null()) else {
        // The server serves its non-resource paths (discovery, version, health) to every authenticated user.
        return Ok(json!({"allowed": true, "reason": "non-resource URLs are open to every authenticated user"}));
    };
    let (verb, group, plural) = (attr(r, "verb"), attr(r, "group"), attr(r, "resource"));
    let sub = attr(r, "subresource");
    let sub = (!sub.is_empty()).then_some(sub.as_str());
    if !ctx.auth.has_rules() {
        return Ok(json!({"allowed": true, "reason": "no access rules are set: every request is allowed"}));
    }
    Ok(match ctx.auth.granting_rule(&user.name, &verb, &group, &plural, sub) {
        Some(rule) => json!({"allowed": true, "reason": format!("allowed by {}", describe(rule))}),
        // RBAC denies by having no opinion, with no reason (kubectl prints a bare "no").
        None => json!({"allowed": false}),
    })
}

fn describe(rule: &AccessRule) -> String {
    format!(
        "the access rule of user {:?} (verbs {}; resources {})",
        rule.user,
        rule.verbs.join(","),
        rule.resources.join(",")
    )
}

/// The status of a `SubjectAccessReview` or `LocalSubjectAccessReview`: the spec's user, as the authorizers judge
/// them (no group is added: a review of `alice` alone is not one of `system:authenticated`).
fn subject_access(review: Review, ctx: &Context<'_>, spec: &Value) -> Result<Value, Failure> {
    let kind = review.kind();
    check_attributes(kind, spec)?;
    let text = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let groups: Vec<String> = spec
        .get("groups")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if text("user").is_empty() && groups.is_empty() {
        let e = FieldError::invalid("spec.user", "", "at least one of user or group must be specified");
        return Err(errors::invalid(GROUP, kind, "", vec![e]));
    }
    if review == Review::LocalSubjectAccess {
        if spec.get("nonResourceAttributes").is_some_and(|v| !v.is_null()) {
            return Err(invalid(
                kind,
                "spec.nonResourceAttributes",
                "disallowed on this kind of request",
            ));
        }
        let ns = ctx.namespace.unwrap_or("");
        let asked = spec
            .pointer("/resourceAttributes/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        if asked != ns {
            return Err(errors::bad_request(format!(
                "spec.resourceAttributes.namespace must match namespace: {ns}"
            )));
        }
    }
    let extra = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let values = v
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect());
                    (k.clone(), values.unwrap_or_default())
                })
                .collect()
        })
        .unwrap_or_default();
    let subject = UserInfo {
        name: text("user"),
        uid: text("uid"),
        groups,
        extra,
    };
    let attrs = authorizer::review_attributes(&subject, spec).ok_or_else(|| errors::bad_request("no attributes"))?;
    if ctx.user.is_none() {
        return Ok(json!({"allowed": true, "reason": "authentication is off: every request is allowed"}));
    }
    Ok(decision_status(&authorizer::authorize(ctx.auth, ctx.policy, &attrs)))
}

/// The status of a `TokenReview`.
fn token(ctx: &Context<'_>, spec: &Value) -> Result<Value, Failure> {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(errors::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let Some((issuer, store)) = ctx.tokens else {
        return Err(errors::internal("token reviews are not served here"));
    };
    Ok(
        match authentication::authenticate_token(ctx.auth, issuer, store, token, &audiences) {
            TokenAnswer::User(u, auds) => json!({"authenticated": true, "user": user_json(&u), "audiences": auds}),
            TokenAnswer::Unknown => json!({"user": {}}),
            TokenAnswer::Invalid(e) => json!({"user": {}, "error": e}),
        },
    )
}

/// The status of a `SelfSubjectRulesReview`: the requester's rules in `spec.namespace`.
fn rules(ctx: &Context<'_>, spec: &Value) -> Result<Value, Failure> {
    let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
    let everything = || json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]);
    let user = ctx.user;
    if ctx.auth.rbac {
        if namespace.is_empty() {
            return Err(errors::bad_request("no namespace on request"));
        }
        let Some(user) = user else {
            return Ok(json!({"resourceRules": everything(), "nonResourceRules": [], "incomplete": false}));
        };
        let empty = Policy::default();
        let policy = ctx.policy.unwrap_or(&empty);
        let (resource, non_resource, errors) = rbac::authorizer::rules_for(policy, user, namespace);
        let mut resource_rules: Vec<Value> = resource
            .iter()
            .map(|r| {
                let mut v = json!({"verbs": r.verbs});
                for (k, list) in [
                    ("apiGroups", &r.api_groups),
                    ("resources", &r.resources),
                    ("resourceNames", &r.resource_names),
                ] {
                    if !list.is_empty() {
                        v[k] = json!(list);
                    }
                }
                v
            })
            .collect();
        resource_rules.extend(access_rules_of(ctx.auth, &user.name));
        let non_resource_rules: Vec<Value> = non_resource
            .iter()
            .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
            .collect();
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": false,
        });
        if !errors.is_empty() {
            status["evaluationError"] = json!(rbac::rule_resolver::aggregate(&errors));
        }
        return Ok(status);
    }
    let resource_rules = match user.filter(|_| ctx.auth.has_rules()) {
        None => everything(),
        Some(user) => Value::Array(access_rules_of(ctx.auth, &user.name)),
    };
    Ok(json!({
        "resourceRules": resource_rules,
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["*"]}],
        "incomplete": false,
    }))
}

/// The access rules of `user` as RBAC would write them.
fn access_rules_of(auth: &Auth, user: &str) -> Vec<Value> {
    auth.rules_of(user)
        .flat_map(|rule| {
            rule.resources.iter().map(move |r| {
                // `plural.group` names one group; a bare plural (or `*`) matches it in any group.
                let (name, sub) = match r.split_once('/') {
                    Some((n, s)) => (n, Some(s)),
                    None => (r.as_str(), None),
                };
                let (plural, group) = match name.split_once('.') {
                    Some((p, g)) => (p, g),
                    None => (name, "*"),
                };
                let resource = match sub {
                    Some(s) => format!("{plural}/{s}"),
                    None => plural.to_owned(),
                };
                json!({"verbs": rule.verbs, "apiGroups": [group], "resources": [resource]})
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> Auth {
        let mut a = Auth::default();
        a.add_token("t", "viewer");
        a.add_rule(AccessRule::user("viewer").verbs(&["get", "list"]).resources(&[
            "configmaps",
            "leases.coordination.k8s.io",
            "pods/log",
        ]));
        a.add_rule(AccessRule::user("admin"));
        a
    }

    fn ctx<'a>(auth: &'a Auth, user: Option<&'a UserInfo>) -> Context<'a> {
        Context {
            auth,
            policy: None,
            user,
            namespace: None,
            tokens: None,
        }
    }

    fn call(review: Review, auth: &Auth, user: Option<&str>, body: Value) -> Result<Value, Failure> {
        let u = user.map(|n| UserInfo::new(n, &[]));
        answer(review, &ctx(auth, u.as_ref()), body)
    }

    fn ssar(attrs: Value) -> Value {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attrs}})
    }

    #[test]
    fn access_reviews_follow_the_rules() {
        let a = auth();
        let ask =
            |user: &str, attrs: Value| call(Review::Access, &a, Some(user), ssar(attrs)).unwrap()["status"].clone();
        assert_eq!(
            ask(
                "viewer",
                json!({"verb": "list", "resource": "configmaps", "namespace": "x"})
            )["allowed"],
            true
        );
        let no = ask("viewer", json!({"verb": "create", "resource": "configmaps"}));
        assert_eq!(no["allowed"], false);
        assert_eq!(no.get("reason"), None, "a denial has no reason, as RBAC's");
        assert_eq!(
            ask(
                "viewer",
                json!({"verb": "get", "resource": "leases", "group": "coordination.k8s.io"})
            )["allowed"],
            true
        );
        assert_eq!(
            ask(
                "viewer",
                json!({"verb": "get", "resource": "pods", "subresource": "log"})
            )["allowed"],
            true
        );
        assert_eq!(
            ask("viewer", json!({"verb": "get", "resource": "pods"}))["allowed"],
            false
        );
        assert_eq!(ask("admin", json!({"verb": "*", "resource": "*"}))["allowed"], true);
        assert_eq!(
            ask("viewer", json!({"verb": "*", "resource": "configmaps"}))["allowed"],
            false
        );
        assert_eq!(
            ask("stranger", json!({"verb": "get", "resource": "pods"}))["allowed"],
            false
        );
        let off = call(
            Review::Access,
            &Auth::default(),
            None,
            ssar(json!({"verb": "delete", "resource": "nodes"})),
        )
        .unwrap();
        assert_eq!(off["status"]["allowed"], true);
        assert_eq!(off["kind"], "SelfSubjectAccessReview");
    }

    #[test]
    fn access_reviews_need_exactly_one_kind_of_attributes() {
        let a = auth();
        let none = json!({"spec": {}});
        let e = call(Review::Access, &a, Some("viewer"), none).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message
                .contains("exactly one of nonResourceAttributes or resourceAttributes"),
            "{}",
            e.message
        );
        let both = json!({"spec": {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}});
        assert_eq!(call(Review::Access, &a, Some("viewer"), both).unwrap_err().code, 422);
        let wrong = json!({"kind": "SubjectAccessReview", "spec": {}});
        assert_eq!(call(Review::Access, &a, Some("viewer"), wrong).unwrap_err().code, 400);
        let url = json!({"spec": {"nonResourceAttributes": {"path": "/version", "verb": "get"}}});
        assert_eq!(
            call(Review::Access, &a, Some("viewer"), url).unwrap()["status"]["allowed"],
            true
        );
    }

    #[test]
    fn rules_reviews_list_the_users_rules() {
        let a = auth();
        let st = call(
            Review::Rules,
            &a,
            Some("viewer"),
            json!({"spec": {"namespace": "default"}}),
        )
        .unwrap()["status"]
            .clone();
        assert_eq!(
            st["resourceRules"],
            json!([
                {"verbs": ["get", "list"], "apiGroups": ["*"], "resources": ["configmaps"]},
                {"verbs": ["get", "list"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]},
                {"verbs": ["get", "list"], "apiGroups": ["*"], "resources": ["pods/log"]},
            ])
        );
        assert_eq!(st["incomplete"], false);
        let all = call(Review::Rules, &Auth::default(), None, json!({"spec": {}})).unwrap();
        assert_eq!(all["status"]["resourceRules"][0]["verbs"], json!(["*"]));
    }
}
