//! Authorization: the decision of the server's authorizers on a request's [`Attributes`] (kept, with the
//! [`Decision`] and the 403 of a refusal, in [`attributes`](super::attributes)).
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

use crate::api::user::{SYSTEM_PRIVILEGED_GROUP, UserInfo};
use crate::auth::Auth;
pub(crate) use crate::auth::attributes::{Attributes, Decision, forbidden, forbidden_status};
use crate::auth::rbac::escalation_check::Authorizer;
use crate::auth::rbac::{self, Policy};

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

/// The server's authorizer, as RBAC's escalation check is handed it.
impl Authorizer for Auth {
    fn authorize(&self, policy: &Policy, attrs: &Attributes<'_>) -> Decision {
        authorize(self, Some(policy), attrs)
    }
}

fn access_rule_allows(auth: &Auth, attrs: &Attributes<'_>) -> bool {
    let sub = (!attrs.subresource.is_empty()).then_some(attrs.subresource.as_str());
    auth.granting_rule(&attrs.user.name, &attrs.verb, &attrs.api_group, &attrs.resource, sub)
        .is_some()
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
