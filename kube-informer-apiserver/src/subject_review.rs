//! The reviews about a subject other than the access reviews of [`review`](super::review): authentication.k8s.io/v1
//! `SelfSubjectReview` (`kubectl auth whoami`: who the server takes the requester for) and authorization.k8s.io/v1
//! `SubjectAccessReview` and `LocalSubjectAccessReview` (may user U do this?, as a webhook authorizer or a
//! controller asks), answered from the same [`AccessRule`](super::AccessRule)s. Each is create-only and stores
//! nothing: the answer is the request with its `status` filled in (201).

use serde_json::{Map, Value, json};

use super::auth::Auth;
use super::errors::{self, Failure, FieldError};
use super::review;

/// Which review a path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SubjectReview {
    /// `/apis/authentication.k8s.io/v1/selfsubjectreviews`
    SelfSubject,
    /// `/apis/authorization.k8s.io/v1/subjectaccessreviews`
    Access,
    /// `/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews`
    LocalAccess(String),
}

impl SubjectReview {
    /// The review a path's segments name.
    pub(crate) fn from_path(segments: &[&str]) -> Option<SubjectReview> {
        match segments {
            ["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"] => Some(SubjectReview::SelfSubject),
            ["apis", review::GROUP, review::VERSION, "subjectaccessreviews"] => Some(SubjectReview::Access),
            [
                "apis",
                review::GROUP,
                review::VERSION,
                "namespaces",
                ns,
                "localsubjectaccessreviews",
            ] if !ns.is_empty() => Some(SubjectReview::LocalAccess((*ns).to_owned())),
            _ => None,
        }
    }

    /// `plural.group`, as the request log names resources.
    pub(crate) fn resource(&self) -> String {
        match self {
            SubjectReview::SelfSubject => "selfsubjectreviews.authentication.k8s.io".to_owned(),
            SubjectReview::Access => format!("subjectaccessreviews.{}", review::GROUP),
            SubjectReview::LocalAccess(_) => format!("localsubjectaccessreviews.{}", review::GROUP),
        }
    }

    /// The namespace of a local review.
    pub(crate) fn namespace(&self) -> Option<&str> {
        match self {
            SubjectReview::LocalAccess(ns) => Some(ns),
            _ => None,
        }
    }

    /// `apiVersion` of the review's kind.
    pub(crate) fn api_version(&self) -> &'static str {
        match self {
            SubjectReview::SelfSubject => "authentication.k8s.io/v1",
            _ => "authorization.k8s.io/v1",
        }
    }

    /// The kind.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            SubjectReview::SelfSubject => "SelfSubjectReview",
            SubjectReview::Access => "SubjectAccessReview",
            SubjectReview::LocalAccess(_) => "LocalSubjectAccessReview",
        }
    }
}

/// Answers a POST of a review by `user` (`None` when authentication is off).
pub(crate) fn answer(review: &SubjectReview, auth: &Auth, user: Option<&str>, body: Value) -> Result<Value, Failure> {
    let Value::Object(mut obj) = body else {
        return Err(errors::bad_request("the body of the request must be a JSON object"));
    };
    let text = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let (version, kind) = (text(&obj, "apiVersion"), text(&obj, "kind"));
    if !version.is_empty() && version != review.api_version() {
        return Err(errors::bad_request(format!(
            "the API version in the data ({version}) does not match the expected API version ({})",
            review.api_version()
        )));
    }
    if !kind.is_empty() && kind != review.kind() {
        return Err(errors::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            review.kind()
        )));
    }
    obj.insert("apiVersion".into(), json!(review.api_version()));
    obj.insert("kind".into(), json!(review.kind()));
    obj.entry("metadata").or_insert_with(|| json!({}));
    let status = match review {
        // Requests are anonymous while authentication is off, as kube-apiserver names them.
        SubjectReview::SelfSubject => match user {
            Some(u) => json!({"userInfo": {"username": u, "groups": ["system:authenticated"]}}),
            None => json!({"userInfo": {"username": "system:anonymous", "groups": ["system:unauthenticated"]}}),
        },
        SubjectReview::Access | SubjectReview::LocalAccess(_) => {
            let mut spec = obj.get("spec").cloned().unwrap_or(Value::Null);
            let subject = spec.get("user").and_then(Value::as_str).unwrap_or("").to_owned();
            let groups = spec
                .get("groups")
                .and_then(Value::as_array)
                .is_some_and(|g| !g.is_empty());
            if subject.is_empty() && !groups {
                let e = FieldError::invalid("spec.user", "\"\"", "at least one of user or group must be specified");
                return Err(errors::invalid(review::GROUP, review.kind(), "", vec![e]));
            }
            if let Some(ns) = review.namespace() {
                let named = spec
                    .pointer("/resourceAttributes/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if spec.get("nonResourceAttributes").is_some_and(|v| !v.is_null()) {
                    let e = FieldError::invalid(
                        "spec.nonResourceAttributes",
                        "null",
                        "disallowed on this kind of request",
                    );
                    return Err(errors::invalid(review::GROUP, review.kind(), "", vec![e]));
                }
                if !named.is_empty() && named != ns {
                    let e = FieldError::invalid(
                        "spec.resourceAttributes.namespace",
                        &format!("{named:?}"),
                        "must match metadata.namespace",
                    );
                    return Err(errors::invalid(review::GROUP, review.kind(), "", vec![e]));
                }
                if let Some(attrs) = spec.get_mut("resourceAttributes").and_then(Value::as_object_mut) {
                    attrs.insert("namespace".into(), json!(ns));
                }
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("namespace".into(), json!(ns));
                }
            }
            if subject.is_empty() && auth.has_rules() {
                // Rules name users: none grants a group alone anything.
                json!({"allowed": false})
            } else {
                // The subject is not the requester: whether authentication is on says nothing about them.
                review::access_of(auth, review.kind(), Some(subject.as_str()), &spec)?
            }
        }
    };
    obj.insert("status".into(), status);
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::AccessRule;

    #[test]
    fn paths_name_the_reviews() {
        assert_eq!(
            SubjectReview::from_path(&[
                "apis",
                "authorization.k8s.io",
                "v1",
                "namespaces",
                "ns",
                "localsubjectaccessreviews"
            ]),
            Some(SubjectReview::LocalAccess("ns".into()))
        );
        assert_eq!(
            SubjectReview::from_path(&["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"]),
            Some(SubjectReview::SelfSubject)
        );
        assert_eq!(
            SubjectReview::from_path(&["apis", "authorization.k8s.io", "v1", "widgets"]),
            None
        );
    }

    #[test]
    fn subject_access_reviews_answer_for_the_named_user() {
        let mut auth = Auth::default();
        auth.add_token("t", "admin");
        auth.add_rule(AccessRule::user("admin"));
        auth.add_rule(AccessRule::user("viewer").verbs(&["get"]).resources(&["configmaps"]));
        let ask = |user: &str, verb: &str| {
            let body = json!({"spec": {"user": user, "resourceAttributes": {"verb": verb, "resource": "configmaps", "namespace": "x"}}});
            answer(&SubjectReview::LocalAccess("x".into()), &auth, Some("admin"), body).unwrap()
        };
        let yes = ask("viewer", "get");
        assert_eq!(
            (yes["status"]["allowed"].as_bool(), yes["kind"].as_str()),
            (Some(true), Some("LocalSubjectAccessReview"))
        );
        assert_eq!(yes["metadata"]["namespace"], "x");
        assert_eq!(ask("viewer", "delete")["status"], json!({"allowed": false}));
        let st = answer(
            &SubjectReview::Access,
            &auth,
            None,
            json!({"spec": {"resourceAttributes": {}}}),
        )
        .unwrap_err();
        assert_eq!(st.code, 422);
        let st = answer(
            &SubjectReview::LocalAccess("x".into()),
            &auth,
            None,
            json!({"spec": {"user": "u", "resourceAttributes": {"namespace": "y"}}}),
        )
        .unwrap_err();
        assert_eq!(st.code, 422);
    }

    #[test]
    fn self_subject_reviews_name_the_requester() {
        let auth = Auth::default();
        let me = answer(&SubjectReview::SelfSubject, &auth, Some("alice"), json!({})).unwrap();
        assert_eq!(me["status"]["userInfo"]["username"], "alice");
        assert_eq!(me["apiVersion"], "authentication.k8s.io/v1");
        let anon = answer(&SubjectReview::SelfSubject, &auth, None, json!({})).unwrap();
        assert_eq!(anon["status"]["userInfo"]["username"], "system:anonymous");
    }
}
