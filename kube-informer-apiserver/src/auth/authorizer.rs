//! Authorization: the attributes of a request (apiserver's `authorizer.AttributesRecord`), the decision of the
//! server's authorizers, and the 403 kube-apiserver answers when none allows.
//!
//! Two modes, as [`ApiServerBuilder::rbac`](crate::ApiServerBuilder::rbac) chooses:
//!
//! * **Access rules** (the default): the [`AccessRule`](crate::AccessRule)s alone; with none, every authenticated
//!   user may do everything; non-resource paths (discovery, `/version`, health) are open to every authenticated user,
//!   and so are a user's reviews of their own access, as `system:basic-user` makes them.
//! * **RBAC**, as kube-apiserver with `--authorization-mode=RBAC` decides: members of `system:masters` may do
//!   everything (kube-apiserver authorizes that group before any authorizer), then the access rules (each grants;
//!   none denies), then the RBAC authorizer over the Roles, ClusterRoles and bindings stored in the server. Nothing
//!   is allowed by default.

use serde_json::Value;

use crate::api::errors::Failure;
use crate::api::user::{SYSTEM_PRIVILEGED_GROUP, UserInfo};
use crate::auth::Auth;
use crate::auth::rbac::{self, Policy};
use crate::http::request_info::RequestInfo;
use kube_informer::object::{Status, StatusDetails};

/// What is asked, by whom.
#[derive(Clone, Debug)]
pub(crate) struct Attributes<'a> {
    pub(crate) user: &'a UserInfo,
    pub(crate) verb: String,
    /// A request on a resource (`/api/…`, `/apis/…`), else on a non-resource `path`.
    pub(crate) resource_request: bool,
    pub(crate) namespace: String,
    pub(crate) api_group: String,
    pub(crate) resource: String,
    pub(crate) subresource: String,
    pub(crate) name: String,
    pub(crate) path: String,
}

impl<'a> Attributes<'a> {
    /// A request on a resource.
    pub(crate) fn resource(
        user: &'a UserInfo,
        verb: &str,
        namespace: &str,
        group: &str,
        resource: &str,
        subresource: &str,
        name: &str,
    ) -> Self {
        Attributes {
            user,
            verb: verb.to_owned(),
            resource_request: true,
            namespace: namespace.to_owned(),
            api_group: group.to_owned(),
            resource: resource.to_owned(),
            subresource: subresource.to_owned(),
            name: name.to_owned(),
            path: String::new(),
        }
    }

    /// A request on a non-resource path.
    pub(crate) fn non_resource(user: &'a UserInfo, verb: &str, path: &str) -> Self {
        Attributes {
            user,
            verb: verb.to_owned(),
            resource_request: false,
            namespace: String::new(),
            api_group: String::new(),
            resource: String::new(),
            subresource: String::new(),
            name: String::new(),
            path: path.to_owned(),
        }
    }

    /// The attributes of a request as [`RequestInfo`] reads it.
    pub(crate) fn of_request(user: &'a UserInfo, info: &RequestInfo) -> Self {
        if info.resource_request {
            Attributes::resource(
                user,
                &info.verb,
                &info.namespace,
                &info.api_group,
                &info.resource,
                &info.subresource,
                &info.name,
            )
        } else {
            Attributes::non_resource(user, &info.verb, &info.path)
        }
    }
}

/// An authorizer's answer: allowed or not, and why (empty when nothing is to be said).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) allowed: bool,
    pub(crate) reason: String,
}

/// Reviews every authenticated user may create in the access-rules mode (`system:basic-user`'s resources).
const SELF_REVIEWS: [(&str, &str); 3] = [
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
];

/// Decides a request. `policy` is read only in the RBAC mode (pass the current one, or `None` outside it).
pub(crate) fn authorize(auth: &Auth, policy: Option<&Policy>, attrs: &Attributes<'_>) -> Decision {
    if !auth.rbac {
        let allowed = !attrs.resource_request
            || !auth.has_rules()
            || (attrs.verb == "create"
                && attrs.subresource.is_empty()
                && SELF_REVIEWS.contains(&(attrs.api_group.as_str(), attrs.resource.as_str())))
            || access_rule_allows(auth, attrs);
        return Decision {
            allowed,
            reason: String::new(),
        };
    }
    if attrs.user.in_group(SYSTEM_PRIVILEGED_GROUP) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    if attrs.resource_request && access_rule_allows(auth, attrs) {
        return Decision {
            allowed: true,
            reason: format!("allowed by an access rule of user {:?}", attrs.user.name),
        };
    }
    match policy {
        Some(p) => rbac::authorizer::authorize(p, attrs),
        None => Decision::default(),
    }
}

fn access_rule_allows(auth: &Auth, attrs: &Attributes<'_>) -> bool {
    let sub = (!attrs.subresource.is_empty()).then_some(attrs.subresource.as_str());
    auth.granting_rule(&attrs.user.name, &attrs.verb, &attrs.api_group, &attrs.resource, sub)
        .is_some()
}

/// The 403 of a refused request (apiserver's `responsewriters.Forbidden`): `configmaps "x" is forbidden: User
/// "alice" cannot get resource "configmaps" in API group "" in the namespace "ns"`, the authorizer's reason after a
/// colon; `forbidden: User "u" cannot get path "/x"` for a non-resource path.
pub(crate) fn forbidden(attrs: &Attributes<'_>, reason: &str) -> Failure {
    let user = &attrs.user.name;
    let mut why = if !attrs.resource_request {
        format!("User {user:?} cannot {} path {:?}", attrs.verb, attrs.path)
    } else {
        let resource = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        let scope = if attrs.namespace.is_empty() {
            "at the cluster scope".to_owned()
        } else {
            format!("in the namespace {:?}", attrs.namespace)
        };
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}",
            attrs.verb, attrs.api_group
        )
    };
    if !reason.is_empty() {
        why = format!("{why}: {reason}");
    }
    forbidden_status(&attrs.api_group, &attrs.resource, &attrs.name, &why)
}

/// `errors.NewForbidden(group/resource, name, err)`.
pub(crate) fn forbidden_status(group: &str, resource: &str, name: &str, why: &str) -> Failure {
    let qualified = if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    };
    let message = if resource.is_empty() && group.is_empty() {
        format!("forbidden: {why}")
    } else if name.is_empty() {
        format!("{qualified} is forbidden: {why}")
    } else {
        format!("{qualified} {name:?} is forbidden: {why}")
    };
    Box::new(Status::failure(403, "Forbidden", message).with_details(StatusDetails {
        name: name.to_owned(),
        group: group.to_owned(),
        kind: resource.to_owned(),
        ..Default::default()
    }))
}

/// The attributes of an access review's `spec` (`resourceAttributes` or `nonResourceAttributes`) for `user`.
pub(crate) fn review_attributes<'a>(user: &'a UserInfo, spec: &Value) -> Option<Attributes<'a>> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    if let Some(r) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
        return Some(Attributes::resource(
            user,
            &text(r, "verb"),
            &text(r, "namespace"),
            &text(r, "group"),
            &text(r, "resource"),
            &text(r, "subresource"),
            &text(r, "name"),
        ));
    }
    let n = spec.get("nonResourceAttributes").filter(|v| v.is_object())?;
    Some(Attributes::non_resource(user, &text(n, "verb"), &text(n, "path")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::AccessRule;

    #[test]
    fn forbidden_is_worded_as_kube_apiserver_words_it() {
        let alice = UserInfo::new("alice", &[]);
        let get = Attributes::resource(&alice, "get", "ns", "", "configmaps", "", "x");
        let f = forbidden(&get, "");
        assert_eq!(
            f.message,
            r#"configmaps "x" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "ns""#
        );
        assert_eq!(f.details.as_ref().unwrap().kind, "configmaps");
        let list = Attributes::resource(&alice, "list", "", "apps", "deployments", "scale", "");
        assert_eq!(
            forbidden(&list, "RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found").message,
            r#"deployments.apps is forbidden: User "alice" cannot list resource "deployments/scale" in API group "apps" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "x" not found"#
        );
        let path = Attributes::non_resource(&alice, "get", "/nope");
        assert_eq!(
            forbidden(&path, "").message,
            r#"forbidden: User "alice" cannot get path "/nope""#
        );
    }

    #[test]
    fn access_rules_mode_allows_without_rules_and_self_reviews_always() {
        let alice = UserInfo::new("alice", &[]);
        let mut auth = Auth::default();
        let delete = Attributes::resource(&alice, "delete", "ns", "", "pods", "", "p");
        assert!(authorize(&auth, None, &delete).allowed);
        auth.add_rule(AccessRule::user("bob"));
        assert!(!authorize(&auth, None, &delete).allowed);
        let review = Attributes::resource(
            &alice,
            "create",
            "",
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "",
            "",
        );
        assert!(authorize(&auth, None, &review).allowed);
        let sar = Attributes::resource(
            &alice,
            "create",
            "",
            "authorization.k8s.io",
            "subjectaccessreviews",
            "",
            "",
        );
        assert!(!authorize(&auth, None, &sar).allowed);
        assert!(authorize(&auth, None, &Attributes::non_resource(&alice, "get", "/version")).allowed);
    }

    #[test]
    fn rbac_mode_denies_by_default_but_not_system_masters() {
        let mut auth = Auth {
            rbac: true,
            ..Default::default()
        };
        let policy = Policy::default();
        let alice = UserInfo::new("alice", &["system:authenticated"]);
        let get = Attributes::resource(&alice, "get", "ns", "", "pods", "", "p");
        assert!(!authorize(&auth, Some(&policy), &get).allowed);
        assert!(
            !authorize(
                &auth,
                Some(&policy),
                &Attributes::non_resource(&alice, "get", "/version")
            )
            .allowed
        );
        let admin = UserInfo::new("root", &["system:masters"]);
        assert!(
            authorize(
                &auth,
                Some(&policy),
                &Attributes::resource(&admin, "delete", "", "", "nodes", "", "")
            )
            .allowed
        );
        auth.add_rule(AccessRule::user("alice").verbs(&["get"]).resources(&["pods"]));
        let d = authorize(&auth, Some(&policy), &get);
        assert!(d.allowed, "an access rule grants in the RBAC mode too");
    }
}
