//! `authorization.k8s.io/v1` access reviews of the requesting user, answered from the [`AccessRule`]s:
//! `SelfSubjectAccessReview` (`kubectl auth can-i VERB RESOURCE`) and `SelfSubjectRulesReview`
//! (`kubectl auth can-i --list`). Like kube-apiserver's `system:basic-user` role, every authenticated user may
//! create them, whatever the rules say.

use serde_json::{Map, Value, json};

use super::auth::{AccessRule, Auth};
use super::discovery::Described;
use super::errors::{self, Failure, FieldError};

/// The group and version the reviews are served under.
pub(crate) const GROUP: &str = "authorization.k8s.io";
/// Version.
pub(crate) const VERSION: &str = "v1";

/// Which review a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Review {
    /// `selfsubjectaccessreviews`
    Access,
    /// `selfsubjectrulesreviews`
    Rules,
}

impl Review {
    /// From the plural in a path.
    pub(crate) fn from_plural(plural: &str) -> Option<Review> {
        match plural {
            "selfsubjectaccessreviews" => Some(Review::Access),
            "selfsubjectrulesreviews" => Some(Review::Rules),
            _ => None,
        }
    }

    /// The plural.
    pub(crate) fn plural(self) -> &'static str {
        match self {
            Review::Access => "selfsubjectaccessreviews",
            Review::Rules => "selfsubjectrulesreviews",
        }
    }

    /// The kind.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Review::Access => "SelfSubjectAccessReview",
            Review::Rules => "SelfSubjectRulesReview",
        }
    }

    /// The discovery entries of the reviews (`create` only, cluster-scoped).
    pub(crate) fn discovery() -> Vec<Described> {
        [Review::Access, Review::Rules]
            .iter()
            .map(|r| Described {
                name: r.plural().to_owned(),
                singular: r.kind().to_ascii_lowercase(),
                namespaced: false,
                kind: r.kind().to_owned(),
                verbs: vec!["create".to_owned()],
                short_names: Vec::new(),
                categories: Vec::new(),
                storage_version_hash: None,
                subresources: Vec::new(),
            })
            .collect()
    }
}

/// Answers a POST of a review by `user` (`None` when authentication is off: everything is allowed).
pub(crate) fn answer(review: Review, auth: &Auth, user: Option<&str>, body: Value) -> Result<Value, Failure> {
    let Value::Object(mut obj) = body else {
        return Err(errors::bad_request("the body of the request must be a JSON object"));
    };
    let text = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let want_version = format!("{GROUP}/{VERSION}");
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
        Review::Access => access(auth, user, &spec)?,
        Review::Rules => rules(auth, user),
    };
    obj.insert("status".into(), status);
    Ok(Value::Object(obj))
}

/// The status of a `SelfSubjectAccessReview`.
fn access(auth: &Auth, user: Option<&str>, spec: &Value) -> Result<Value, Failure> {
    access_of(auth, "SelfSubjectAccessReview", user, spec)
}

/// The status of an access review of `kind` asking about `user` (`None` when authentication is off).
pub(crate) fn access_of(auth: &Auth, kind: &str, user: Option<&str>, spec: &Value) -> Result<Value, Failure> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let invalid = |field: &str, detail: &str| {
        let e = FieldError::invalid(field, "null", detail);
        errors::invalid(GROUP, kind, "", vec![e])
    };
    let attr = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match (resource, non_resource) {
        (Some(_), Some(_)) => Err(invalid(
            "spec.nonResourceAttributes",
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => Err(invalid(
            "spec.resourceAttributes",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        // The server serves its non-resource paths (discovery, version, health) to every authenticated user.
        (None, Some(_)) => {
            Ok(json!({"allowed": true, "reason": "non-resource URLs are open to every authenticated user"}))
        }
        (Some(r), None) => {
            let (verb, group, plural) = (attr(r, "verb"), attr(r, "group"), attr(r, "resource"));
            let sub = attr(r, "subresource");
            let sub = (!sub.is_empty()).then_some(sub.as_str());
            let Some(user) = user.filter(|_| auth.has_rules()) else {
                let why = if user.is_none() {
                    "authentication is off"
                } else {
                    "no access rules are set"
                };
                return Ok(json!({"allowed": true, "reason": format!("{why}: every request is allowed")}));
            };
            Ok(match auth.granting_rule(user, &verb, &group, &plural, sub) {
                Some(rule) => json!({"allowed": true, "reason": format!("allowed by {}", describe(rule))}),
                // RBAC denies by having no opinion, with no reason (kubectl prints a bare "no").
                None => json!({"allowed": false}),
            })
        }
    }
}

fn describe(rule: &AccessRule) -> String {
    format!(
        "the access rule of user {:?} (verbs {}; resources {})",
        rule.user,
        rule.verbs.join(","),
        rule.resources.join(",")
    )
}

/// The status of a `SelfSubjectRulesReview`: each rule of the user as RBAC would write it.
fn rules(auth: &Auth, user: Option<&str>) -> Value {
    let everything = || json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]);
    let resource_rules = match user.filter(|_| auth.has_rules()) {
        None => everything(),
        Some(user) => Value::Array(
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
                .collect(),
        ),
    };
    json!({
        "resourceRules": resource_rules,
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["*"]}],
        "incomplete": false,
    })
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

    fn ssar(attrs: Value) -> Value {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attrs}})
    }

    #[test]
    fn access_reviews_follow_the_rules() {
        let a = auth();
        let ask =
            |user: &str, attrs: Value| answer(Review::Access, &a, Some(user), ssar(attrs)).unwrap()["status"].clone();
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
        let off = answer(
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
        let e = answer(Review::Access, &a, Some("viewer"), none).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message
                .contains("exactly one of nonResourceAttributes or resourceAttributes"),
            "{}",
            e.message
        );
        let both = json!({"spec": {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}});
        assert_eq!(answer(Review::Access, &a, Some("viewer"), both).unwrap_err().code, 422);
        let wrong = json!({"kind": "SubjectAccessReview", "spec": {}});
        assert_eq!(answer(Review::Access, &a, Some("viewer"), wrong).unwrap_err().code, 400);
        let url = json!({"spec": {"nonResourceAttributes": {"path": "/version", "verb": "get"}}});
        assert_eq!(
            answer(Review::Access, &a, Some("viewer"), url).unwrap()["status"]["allowed"],
            true
        );
    }

    #[test]
    fn rules_reviews_list_the_users_rules() {
        let a = auth();
        let st = answer(
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
        let all = answer(Review::Rules, &Auth::default(), None, json!({"spec": {}})).unwrap();
        assert_eq!(all["status"]["resourceRules"][0]["verbs"], json!(["*"]));
    }
}
