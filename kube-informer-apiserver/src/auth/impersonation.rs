//! Impersonation (apiserver's `WithImpersonation` filter): `Impersonate-User` (a service account's user name
//! impersonates the service account), `Impersonate-Group` (repeated), `Impersonate-Uid` and `Impersonate-Extra-<key>`
//! headers turn the request into one by that user, once the authorizer allows the requester the `impersonate` verb on
//! `users`, `groups`, `serviceaccounts` (in their namespace), `uids` or `userextras/<key>` — kubectl's `--as` and
//! `--as-group`. The impersonated user is in `system:authenticated` unless `system:unauthenticated` (or the
//! anonymous user) was asked for.

use std::collections::BTreeMap;

use crate::api::errors::{self, Failure};
use crate::api::user::{
    ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, UserInfo, service_account_groups, service_account_username,
    split_service_account_username,
};
use crate::auth::Auth;
use crate::auth::authorizer::{self, Attributes};
use crate::auth::rbac::Policy;

/// One thing asked to be impersonated, with the attributes the requester must be allowed.
struct Request {
    verb_group: &'static str,
    resource: &'static str,
    subresource: String,
    namespace: String,
    name: String,
}

/// The user a request acts as: `Ok(None)` without impersonation headers; the 403 (or 500 for headers that ask for
/// groups, extras or a uid without a user, as kube-apiserver answers) when refused.
pub(crate) fn impersonate(
    auth: &Auth,
    policy: Option<&Policy>,
    requester: &UserInfo,
    headers: &[(String, String)],
) -> Result<Option<UserInfo>, Failure> {
    let header = |name: &'static str| {
        headers
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let user = header("impersonate-user").next().filter(|u| !u.is_empty());
    let groups: Vec<&str> = header("impersonate-group").collect();
    let uid = header("impersonate-uid").next().filter(|u| !u.is_empty());
    let extras: Vec<(String, &str)> = headers
        .iter()
        .filter_map(|(k, v)| {
            let lower = k.to_ascii_lowercase();
            lower
                .strip_prefix("impersonate-extra-")
                .map(|key| (percent_decode(key), v.as_str()))
        })
        .collect();
    if user.is_none() && groups.is_empty() && uid.is_none() && extras.is_empty() {
        return Ok(None);
    }
    let Some(user) = user else {
        return Err(errors::internal(
            "requested impersonation of groups, extra fields or a uid without impersonating a user",
        ));
    };
    let mut requests = Vec::new();
    let mut name = user.to_owned();
    let mut out_groups: Vec<String> = Vec::new();
    match split_service_account_username(user) {
        Some((ns, sa)) => {
            requests.push(Request {
                verb_group: "",
                resource: "serviceaccounts",
                subresource: String::new(),
                namespace: ns.to_owned(),
                name: sa.to_owned(),
            });
            name = service_account_username(ns, sa);
            if groups.is_empty() {
                out_groups = service_account_groups(ns);
            }
        }
        None => requests.push(Request {
            verb_group: "",
            resource: "users",
            subresource: String::new(),
            namespace: String::new(),
            name: user.to_owned(),
        }),
    }
    for g in &groups {
        requests.push(Request {
            verb_group: "",
            resource: "groups",
            subresource: String::new(),
            namespace: String::new(),
            name: (*g).to_owned(),
        });
        out_groups.push((*g).to_owned());
    }
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, value) in &extras {
        requests.push(Request {
            verb_group: "authentication.k8s.io",
            resource: "userextras",
            subresource: key.clone(),
            namespace: String::new(),
            name: (*value).to_owned(),
        });
        extra.entry(key.clone()).or_default().push((*value).to_owned());
    }
    if let Some(u) = uid {
        requests.push(Request {
            verb_group: "authentication.k8s.io",
            resource: "uids",
            subresource: String::new(),
            namespace: String::new(),
            name: u.to_owned(),
        });
    }
    for r in &requests {
        let attrs = Attributes::resource(
            requester,
            "impersonate",
            &r.namespace,
            r.verb_group,
            r.resource,
            &r.subresource,
            &r.name,
        );
        let decision = authorizer::authorize(auth, policy, &attrs);
        if !decision.allowed {
            return Err(authorizer::forbidden(&attrs, &decision.reason));
        }
    }
    if name != ANONYMOUS {
        if !out_groups
            .iter()
            .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED)
        {
            out_groups.push(ALL_AUTHENTICATED.to_owned());
        }
    } else if !out_groups.iter().any(|g| g == ALL_UNAUTHENTICATED) {
        out_groups.push(ALL_UNAUTHENTICATED.to_owned());
    }
    Ok(Some(UserInfo {
        name,
        uid: uid.unwrap_or("").to_owned(),
        groups: out_groups,
        extra,
    }))
}

/// An extra key's `%XX` escapes decoded (`unescapeExtraKey`); kept as sent when malformed.
fn percent_decode(key: &str) -> String {
    percent_encoding::percent_decode_str(key)
        .decode_utf8()
        .map(|s| s.into_owned())
        .unwrap_or_else(|_| key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::types::GROUP;
    use serde_json::json;

    fn headers(h: &[(&str, &str)]) -> Vec<(String, String)> {
        h.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    // Cases of apiserver's TestImpersonationFilter (pkg/endpoints/filters/impersonation_test.go).
    #[test]
    fn impersonation_needs_the_impersonate_verb_on_each_thing_asked() {
        let auth = Auth {
            rbac: true,
            ..Default::default()
        };
        let policy = Policy::from_values(&[
            json!({"kind": "ClusterRole", "metadata": {"name": "imp"}, "rules": [
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"]},
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["serviceaccounts"]}]}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "imp"},
                   "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "imp"},
                   "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "alice"}]}),
        ]);
        let alice = UserInfo::new("alice", &["system:authenticated"]);
        assert_eq!(impersonate(&auth, Some(&policy), &alice, &headers(&[])).unwrap(), None);
        let bob = impersonate(&auth, Some(&policy), &alice, &headers(&[("Impersonate-User", "bob")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (bob.name.as_str(), bob.groups.clone()),
            ("bob", vec!["system:authenticated".to_owned()])
        );
        let e = impersonate(&auth, Some(&policy), &alice, &headers(&[("Impersonate-User", "carol")])).unwrap_err();
        assert_eq!(
            e.message,
            r#"users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        let e = impersonate(
            &auth,
            Some(&policy),
            &alice,
            &headers(&[("Impersonate-User", "bob"), ("Impersonate-Group", "admins")]),
        )
        .unwrap_err();
        assert!(
            e.message.starts_with(r#"groups "admins" is forbidden"#),
            "{}",
            e.message
        );
        let sa = impersonate(
            &auth,
            Some(&policy),
            &alice,
            &headers(&[("impersonate-user", "system:serviceaccount:ns:ctl")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            sa.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        let e = impersonate(&auth, Some(&policy), &alice, &headers(&[("Impersonate-Group", "x")])).unwrap_err();
        assert_eq!(e.code, 500);
    }
}
