//! What authorization is asked and what it answers (k8s.io/apiserver's `authorization/authorizer`): the
//! attributes of a request (`AttributesRecord`), an authorizer's decision, and the 403 a refusal becomes
//! (`responsewriters.Forbidden`, `errors.NewForbidden`). Plain values, read by the server's authorizer and by RBAC
//! alike.

use crate::api::errors::Failure;
use crate::api::user::UserInfo;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
