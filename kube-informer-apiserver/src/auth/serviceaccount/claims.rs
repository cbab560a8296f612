//! The claims of a service-account token and their validation (`pkg/serviceaccount/claims.go`): the public JWT
//! claims (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti`) and the private `kubernetes.io` claim naming the
//! namespace, the service account and the object the token is bound to. A token is valid while it has not expired
//! (a minute's leeway, as go-jose's), its service account still exists with the same uid, and the object it is bound
//! to too (deleted more than a minute ago, or recreated with another uid: invalidated).

use serde_json::{Map, Value, json};

use crate::api::user::{UserInfo, service_account_groups, service_account_username};

/// go-jose's leeway on `exp`, `nbf` and `iat`, and kube's grace for objects being deleted.
pub(crate) const LEEWAY_SECS: i64 = 60;

/// An object a token is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bound {
    /// `pod`, `secret` or `node` (the claim's key).
    pub(crate) claim: &'static str,
    pub(crate) name: String,
    pub(crate) uid: String,
}

/// What a TokenRequest asks to be signed.
pub(crate) struct TokenSpec<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) service_account: &'a str,
    pub(crate) service_account_uid: &'a str,
    pub(crate) bound: Option<Bound>,
    /// The node of a bound pod, also named in the claims.
    pub(crate) pod_node: Option<Bound>,
    pub(crate) audiences: &'a [String],
    pub(crate) expiration_seconds: i64,
    pub(crate) jti: String,
}

/// The claims of a token issued at `now` (seconds since the epoch).
pub(crate) fn claims(issuer: &str, spec: &TokenSpec<'_>, now: i64) -> Value {
    let mut k8s = Map::new();
    k8s.insert("namespace".into(), json!(spec.namespace));
    k8s.insert(
        "serviceaccount".into(),
        json!({"name": spec.service_account, "uid": spec.service_account_uid}),
    );
    for b in spec.bound.iter().chain(spec.pod_node.iter()) {
        k8s.insert(b.claim.into(), json!({"name": b.name, "uid": b.uid}));
    }
    json!({
        "aud": spec.audiences,
        "exp": now.saturating_add(spec.expiration_seconds),
        "iat": now,
        "iss": issuer,
        "jti": spec.jti,
        "kubernetes.io": k8s,
        "nbf": now,
        "sub": service_account_username(spec.namespace, spec.service_account),
    })
}

/// An object as a validator finds it: its uid and, once being deleted, its deletionTimestamp (seconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) uid: String,
    pub(crate) deleted_at: Option<i64>,
}

/// Looks up an object of `resource` (`serviceaccounts`, `pods`, `secrets`, `nodes`) by namespace and name.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str, &str, &str) -> Option<Found>;

/// The identity a valid token carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServiceAccountInfo {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) pod: Option<(String, String)>,
    pub(crate) node: Option<(String, String)>,
    pub(crate) jti: String,
}

impl ServiceAccountInfo {
    /// The user: `system:serviceaccount:<ns>:<name>`, its groups, and the bound pod, node and token id as extra.
    pub(crate) fn user(&self) -> UserInfo {
        let groups = service_account_groups(&self.namespace);
        let mut u = UserInfo {
            name: service_account_username(&self.namespace, &self.name),
            uid: self.uid.clone(),
            groups,
            ..Default::default()
        };
        let mut extra = |k: &str, v: &str| {
            u.extra
                .insert(format!("authentication.kubernetes.io/{k}"), vec![v.to_owned()]);
        };
        if let Some((name, uid)) = &self.pod {
            extra("pod-name", name);
            extra("pod-uid", uid);
        }
        if let Some((name, uid)) = &self.node {
            extra("node-name", name);
            extra("node-uid", uid);
        }
        if !self.jti.is_empty() {
            extra("credential-id", &format!("JTI={}", self.jti));
        }
        u
    }
}

/// The `aud` claim: a string or a list.
pub(crate) fn audiences(claims: &Value) -> Vec<String> {
    match claims.get("aud") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Validates verified claims at `now` (`validator.Validate`); the error is kube-apiserver's.
pub(crate) fn validate(claims: &Value, now: i64, lookup: Lookup<'_>) -> Result<ServiceAccountInfo, String> {
    let num = |k: &str| claims.get(k).and_then(Value::as_i64);
    if let Some(exp) = num("exp")
        && now > exp.saturating_add(LEEWAY_SECS)
    {
        return Err("service account token has expired".into());
    }
    if let Some(nbf) = num("nbf")
        && now.saturating_add(LEEWAY_SECS) < nbf
    {
        return Err("service account token is not valid yet".into());
    }
    if let Some(iat) = num("iat")
        && now.saturating_add(LEEWAY_SECS) < iat
    {
        return Err("service account token is issued in the future".into());
    }
    let k8s = claims.get("kubernetes.io").cloned().unwrap_or(Value::Null);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let namespace = text(&k8s, "namespace");
    let sa = k8s.get("serviceaccount").cloned().unwrap_or(Value::Null);
    let (name, uid) = (text(&sa, "name"), text(&sa, "uid"));
    if namespace.is_empty() || name.is_empty() {
        return Err("service account token claims could not be validated due to unexpected private claim".into());
    }
    let invalid_if_deleted_before = now - LEEWAY_SECS;
    let deleted_long_ago = |f: &Found| f.deleted_at.is_some_and(|t| t < invalid_if_deleted_before);
    let found =
        lookup("serviceaccounts", &namespace, &name).ok_or_else(|| format!("serviceaccounts {name:?} not found"))?;
    if deleted_long_ago(&found) {
        return Err(format!("service account {namespace}/{name} has been deleted"));
    }
    if found.uid != uid {
        return Err(format!(
            "service account UID ({}) does not match claim ({uid})",
            found.uid
        ));
    }
    let bound = |claim: &str, resource: &str, ns: &str| -> Result<Option<(String, String)>, String> {
        let Some(r) = k8s.get(claim).filter(|v| v.is_object()) else {
            return Ok(None);
        };
        let (bname, buid) = (text(r, "name"), text(r, "uid"));
        match lookup(resource, ns, &bname) {
            Some(f) if !deleted_long_ago(&f) && f.uid == buid => Ok(Some((bname, buid))),
            Some(f) if !deleted_long_ago(&f) => Err(format!(
                "{} UID ({}) does not match service account {claim} ref claim ({buid})",
                if claim == "pod" { "pod" } else { claim },
                f.uid
            )),
            _ => Err("service account token has been invalidated".into()),
        }
    };
    bound("secret", "secrets", &namespace)?;
    let pod = bound("pod", "pods", &namespace)?;
    let node = bound("node", "nodes", "")?;
    Ok(ServiceAccountInfo {
        namespace,
        name,
        uid,
        pod,
        node,
        jti: claims.get("jti").and_then(Value::as_str).unwrap_or("").to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn spec<'a>(auds: &'a [String], bound: Option<Bound>) -> TokenSpec<'a> {
        TokenSpec {
            namespace: "ns",
            service_account: "ctl",
            service_account_uid: "sa-uid",
            bound,
            pod_node: None,
            audiences: auds,
            expiration_seconds: 3600,
            jti: "j1".into(),
        }
    }

    fn world(objects: &[(&str, &str, &str, Option<i64>)]) -> HashMap<(String, String), Found> {
        objects
            .iter()
            .map(|(res, name, uid, del)| {
                (
                    (res.to_string(), name.to_string()),
                    Found {
                        uid: uid.to_string(),
                        deleted_at: *del,
                    },
                )
            })
            .collect()
    }

    // Cases of kube-apiserver's TestValidator / TestClaims (pkg/serviceaccount/claims_test.go).
    #[test]
    fn tokens_are_valid_until_they_expire_and_while_their_objects_live() {
        let auds = vec!["https://kubernetes.default.svc.cluster.local".to_owned()];
        let c = claims("iss", &spec(&auds, None), 1000);
        assert_eq!(c["sub"], "system:serviceaccount:ns:ctl");
        assert_eq!((c["exp"].as_i64(), c["nbf"].as_i64()), (Some(4600), Some(1000)));
        assert_eq!(c["kubernetes.io"]["serviceaccount"]["uid"], "sa-uid");
        let w = world(&[("serviceaccounts", "ctl", "sa-uid", None)]);
        let lookup = |r: &str, _: &str, n: &str| w.get(&(r.to_owned(), n.to_owned())).cloned();
        let info = validate(&c, 1000, &lookup).unwrap();
        assert_eq!(info.user().name, "system:serviceaccount:ns:ctl");
        assert_eq!(
            info.user().groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
        assert_eq!(
            info.user().extra["authentication.kubernetes.io/credential-id"],
            ["JTI=j1"]
        );
        assert!(validate(&c, 4660, &lookup).is_ok(), "a minute's leeway");
        assert_eq!(
            validate(&c, 4661, &lookup).unwrap_err(),
            "service account token has expired"
        );
        assert_eq!(
            validate(&c, 900, &lookup).unwrap_err(),
            "service account token is not valid yet"
        );
        let recreated = world(&[("serviceaccounts", "ctl", "other-uid", None)]);
        let lookup2 = |r: &str, _: &str, n: &str| recreated.get(&(r.to_owned(), n.to_owned())).cloned();
        assert_eq!(
            validate(&c, 1000, &lookup2).unwrap_err(),
            "service account UID (other-uid) does not match claim (sa-uid)"
        );
        let none = |_: &str, _: &str, _: &str| None;
        assert_eq!(
            validate(&c, 1000, &none).unwrap_err(),
            r#"serviceaccounts "ctl" not found"#
        );
    }

    #[test]
    fn bound_tokens_die_with_their_object() {
        let auds = vec!["a".to_owned()];
        let pod = Bound {
            claim: "pod",
            name: "p".into(),
            uid: "pod-uid".into(),
        };
        let c = claims("iss", &spec(&auds, Some(pod)), 1000);
        assert_eq!(c["kubernetes.io"]["pod"], json!({"name": "p", "uid": "pod-uid"}));
        let alive = world(&[
            ("serviceaccounts", "ctl", "sa-uid", None),
            ("pods", "p", "pod-uid", None),
        ]);
        let lookup = |r: &str, _: &str, n: &str| alive.get(&(r.to_owned(), n.to_owned())).cloned();
        let info = validate(&c, 1000, &lookup).unwrap();
        assert_eq!(info.user().extra["authentication.kubernetes.io/pod-name"], ["p"]);
        let gone = world(&[("serviceaccounts", "ctl", "sa-uid", None)]);
        let lookup = |r: &str, _: &str, n: &str| gone.get(&(r.to_owned(), n.to_owned())).cloned();
        assert_eq!(
            validate(&c, 1000, &lookup).unwrap_err(),
            "service account token has been invalidated"
        );
        let deleting = world(&[
            ("serviceaccounts", "ctl", "sa-uid", None),
            ("pods", "p", "pod-uid", Some(930)),
        ]);
        let lookup = |r: &str, _: &str, n: &str| deleting.get(&(r.to_owned(), n.to_owned())).cloned();
        assert!(
            validate(&c, 980, &lookup).is_ok(),
            "being deleted for less than a minute"
        );
        assert!(validate(&c, 1000, &lookup).is_err());
    }
}
