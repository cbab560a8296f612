//! Who makes a request (kube-apiserver's authenticators, in its order): a verified client certificate (`CN` the
//! user, each `O` a group), else a bearer token — a static one ([`ApiServerBuilder::token`](crate::ApiServerBuilder::token))
//! or a service-account token this server signed — each answer in `system:authenticated`; else, where anonymous
//! requests are on (the RBAC mode), `system:anonymous` in `system:unauthenticated`. A bearer token that is none of
//! these is refused (401), never served as anonymous.

use std::time::SystemTime;

use serde_json::Value;

use crate::api::user::UserInfo;
use crate::auth::Auth;
use crate::auth::serviceaccount::TokenIssuer;
use crate::auth::serviceaccount::claims::{self, Found};
use crate::auth::serviceaccount::jwt::{ISSUER, Rejection};
use crate::registry::Store;
use crate::storage::store::object_key;
use kube_informer::object::time::parse_rfc3339;

/// A verified client certificate's subject: `CN` and the `O`s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CertificateUser {
    pub(crate) name: String,
    pub(crate) groups: Vec<String>,
}

/// The bearer token of an `Authorization` header.
pub(crate) fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    authorization
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty())
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// What the token authenticators say of a token.
#[derive(Debug)]
pub(crate) enum TokenAnswer {
    /// Authenticated, for these audiences.
    User(UserInfo, Vec<String>),
    /// Not a token any authenticator knows (no error).
    Unknown,
    /// A token of this server that is no longer (or never was) valid: the error.
    Invalid(String),
}

/// Authenticates a bearer token for `audiences` (the API server's when empty).
pub(crate) fn authenticate_token(
    auth: &Auth,
    issuer: &TokenIssuer,
    store: &Store,
    token: &str,
    audiences: &[String],
) -> TokenAnswer {
    let api = [ISSUER.to_owned()];
    let wanted: &[String] = if audiences.is_empty() { &api } else { audiences };
    if let Some(user) = auth.token_user(token) {
        // Static tokens know no audience: they are valid for the API server's.
        if !wanted.iter().any(|a| a == ISSUER) {
            return TokenAnswer::Unknown;
        }
        let groups: Vec<&str> = auth.groups_of(user).iter().map(String::as_str).collect();
        return TokenAnswer::User(UserInfo::new(user, &groups).authenticated(), wanted.to_vec());
    }
    let claims = match issuer.verify(token) {
        Ok(c) => c,
        Err(Rejection::NotOurs) => return TokenAnswer::Unknown,
        Err(Rejection::Invalid(e)) => return TokenAnswer::Invalid(e),
    };
    let token_auds = claims::audiences(&claims);
    let token_auds = if token_auds.is_empty() {
        api.to_vec()
    } else {
        token_auds
    };
    let common: Vec<String> = token_auds.iter().filter(|a| wanted.contains(a)).cloned().collect();
    if common.is_empty() {
        let quote = |l: &[String]| format!("[{}]", l.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(" "));
        return TokenAnswer::Invalid(format!(
            "token audiences {} is invalid for the target audiences {}",
            quote(&token_auds),
            quote(wanted)
        ));
    }
    let lookup = |resource: &str, ns: &str, name: &str| {
        let g = store.lock();
        let o = g.get(resource, &object_key(ns, name))?;
        let deleted_at = o
            .to_value()
            .pointer("/metadata/deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(parse_rfc3339)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        Some(Found {
            uid: o.uid.clone(),
            deleted_at,
        })
    };
    match claims::validate(&claims, now_secs(), &lookup) {
        Ok(info) => TokenAnswer::User(info.user().authenticated(), common),
        Err(e) => TokenAnswer::Invalid(e),
    }
}

/// The user of a request: `Ok(None)` when authentication is off (everything allowed), `Err(())` for 401.
pub(crate) fn authenticate(
    auth: &Auth,
    issuer: &TokenIssuer,
    store: &Store,
    authorization: Option<&str>,
    certificate: Option<&CertificateUser>,
) -> Result<Option<UserInfo>, ()> {
    if auth.required
        && let Some(c) = certificate
    {
        let mut u = UserInfo {
            name: c.name.clone(),
            groups: c.groups.clone(),
            ..Default::default()
        };
        for g in auth.groups_of(&c.name) {
            if !u.groups.contains(g) {
                u.groups.push(g.clone());
            }
        }
        return Ok(Some(u.authenticated()));
    }
    if let Some(token) = bearer_token(authorization) {
        match authenticate_token(auth, issuer, store, token, &[]) {
            TokenAnswer::User(u, _)
                if auth.required || u.name.starts_with(crate::api::user::SERVICE_ACCOUNT_USERNAME_PREFIX) =>
            {
                return Ok(Some(u));
            }
            TokenAnswer::Invalid(e) => {
                log::debug!("embedded API server: bearer token refused: {e}");
                return Err(());
            }
            _ if auth.required => return Err(()),
            // Authentication off: any other token (a kubeconfig's placeholder) is not looked at.
            _ => return Ok(None),
        }
    }
    if !auth.required {
        Ok(None)
    } else if auth.anonymous {
        Ok(Some(UserInfo::anonymous()))
    } else {
        Err(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::resource::ResourceSpec;

    fn setup() -> (Auth, TokenIssuer, Store) {
        let mut auth = Auth::default();
        auth.add_token("s3cret", "alice");
        auth.add_groups("alice", &["dev".to_owned()]);
        (
            auth,
            TokenIssuer::new().unwrap(),
            Store::new(1, 10, ResourceSpec::defaults(), crate::admission::HOOKS),
        )
    }

    #[test]
    fn certificates_then_tokens_then_anonymous() {
        let (mut auth, issuer, store) = setup();
        let cert = CertificateUser {
            name: "bob".into(),
            groups: vec!["ops".into()],
        };
        let who = |auth: &Auth, h: Option<&str>, c: Option<&CertificateUser>| authenticate(auth, &issuer, &store, h, c);
        let alice = who(&auth, Some("Bearer s3cret"), None).unwrap().unwrap();
        assert_eq!(
            (alice.name.as_str(), alice.groups.clone()),
            ("alice", vec!["dev".to_owned(), "system:authenticated".to_owned()])
        );
        let bob = who(&auth, Some("Bearer s3cret"), Some(&cert)).unwrap().unwrap();
        assert_eq!(bob.groups, ["ops", "system:authenticated"]);
        assert_eq!(who(&auth, Some("Bearer nope"), None), Err(()));
        assert_eq!(who(&auth, None, None), Err(()), "anonymous is off outside RBAC");
        auth.anonymous = true;
        assert_eq!(who(&auth, None, None).unwrap().unwrap().name, "system:anonymous");
        assert_eq!(
            who(&auth, Some("Basic eDp5"), None).unwrap().unwrap().name,
            "system:anonymous"
        );
        assert_eq!(
            who(&auth, Some("Bearer nope"), None),
            Err(()),
            "a bad token is never anonymous"
        );
        assert_eq!(
            who(&Auth::default(), Some("Bearer placeholder"), None),
            Ok(None),
            "authentication off"
        );
    }
}
