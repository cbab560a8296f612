//! Who made a request, once authenticated: kube-apiserver's `user.Info` (name, uid, groups, extra), the names of the
//! groups the authenticators add, and the service-account naming rules
//! (`system:serviceaccount:<namespace>:<name>`).

use std::collections::BTreeMap;

/// Everyone in it may do everything: kube-apiserver authorizes it before any authorizer, and RBAC's escalation
/// checks let it grant anything.
pub(crate) const SYSTEM_PRIVILEGED_GROUP: &str = "system:masters";
/// Added to every authenticated user.
pub(crate) const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of a request without credentials.
pub(crate) const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user of a request without credentials.
pub(crate) const ANONYMOUS: &str = "system:anonymous";

/// The prefix of a service account's user name.
pub(crate) const SERVICE_ACCOUNT_USERNAME_PREFIX: &str = "system:serviceaccount:";
/// Every service account is in it.
pub(crate) const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// An authenticated user, as the authorizers see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserInfo {
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) groups: Vec<String>,
    pub(crate) extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with a name and groups.
    pub(crate) fn new(name: &str, groups: &[&str]) -> Self {
        UserInfo {
            name: name.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..Default::default()
        }
    }

    /// The user of a request without credentials.
    pub(crate) fn anonymous() -> Self {
        UserInfo::new(ANONYMOUS, &[ALL_UNAUTHENTICATED])
    }

    /// True when the user is in `group`.
    pub(crate) fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Adds `system:authenticated` unless the user already has it (kube-apiserver's group adder, which every
    /// authenticator's answer goes through).
    pub(crate) fn authenticated(mut self) -> Self {
        if !self.in_group(ALL_AUTHENTICATED) {
            self.groups.push(ALL_AUTHENTICATED.to_owned());
        }
        self
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub(crate) fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}")
}

/// The groups of a service account: `system:serviceaccounts` and `system:serviceaccounts:<namespace>`.
pub(crate) fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        ALL_SERVICE_ACCOUNTS_GROUP.to_owned(),
        format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"),
    ]
}

/// The namespace and name of a service account's user name; `None` for any other name (both parts must be
/// non-empty and the name holds no further `:`, as `serviceaccount.SplitUsername` requires).
pub(crate) fn split_service_account_username(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix(SERVICE_ACCOUNT_USERNAME_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

/// True when `username` is the service account `namespace`/`name` (`serviceaccount.MatchesUsername`).
pub(crate) fn matches_service_account(namespace: &str, name: &str, username: &str) -> bool {
    username
        .strip_prefix(SERVICE_ACCOUNT_USERNAME_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(':'))
        == Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_split_and_match_as_kube_does() {
        assert_eq!(service_account_username("ns", "sa"), "system:serviceaccount:ns:sa");
        assert_eq!(
            split_service_account_username("system:serviceaccount:ns:sa"),
            Some(("ns", "sa"))
        );
        for bad in [
            "system:serviceaccount:ns",
            "system:serviceaccount::sa",
            "system:serviceaccount:ns:",
            "system:serviceaccount:ns:a:b",
            "alice",
        ] {
            assert_eq!(split_service_account_username(bad), None, "{bad}");
        }
        assert!(matches_service_account("ns", "sa", "system:serviceaccount:ns:sa"));
        assert!(!matches_service_account("ns", "sa", "system:serviceaccount:ns:sa2"));
        assert!(!matches_service_account("n", "s:sa", "system:serviceaccount:ns:sa"));
        assert_eq!(
            service_account_groups("ns"),
            ["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
    }

    #[test]
    fn the_authenticated_group_is_added_once() {
        let u = UserInfo::new("alice", &["dev"]).authenticated().authenticated();
        assert_eq!(u.groups, ["dev", "system:authenticated"]);
        assert!(UserInfo::anonymous().in_group(ALL_UNAUTHENTICATED));
    }
}
