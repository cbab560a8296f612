//! `POST …/serviceaccounts/{name}/token`: a TokenRequest (`authentication.k8s.io/v1`) answered with a signed token
//! (`pkg/registry/core/serviceaccount/storage/token.go`): audiences (the API server's by default), an expiry of 10
//! minutes to 2³² seconds (1 hour by default), and optionally the Pod, Secret or Node it is bound to, which must
//! exist (with the uid given, if one is) — a pod must run as that service account.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::claims::{self, Bound, TokenSpec};
use super::jwt::{ISSUER, TokenIssuer};
use crate::api::errors::{self, Failure, FieldError};
use crate::api::util::new_uid;
use crate::registry::Store;
use crate::storage::store::object_key;
use kube_informer::object::time::format_rfc3339;
use kube_informer::object::{ApiResource, Status, StatusDetails};

/// The default expiry (`SetDefaults_TokenRequestSpec`).
pub(crate) const DEFAULT_EXPIRATION_SECS: i64 = 3600;
const MIN_EXPIRATION_SECS: i64 = 600;
const MAX_EXPIRATION_SECS: i64 = 1 << 32;

fn seconds(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The uid, `spec.serviceAccountName` (pods) and `spec.nodeName` (pods) of a stored object.
fn stored(store: &Store, id: &str, namespace: &str, name: &str) -> Option<Value> {
    store.lock().get(id, &object_key(namespace, name)).map(|o| o.to_value())
}

fn text(v: &Value, pointer: &str) -> String {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// Issues a token for the service account `namespace`/`name` as `request` (a TokenRequest body) asks.
pub(crate) fn create(
    store: &Store,
    issuer: &TokenIssuer,
    namespace: &str,
    name: &str,
    mut request: Value,
) -> Result<Value, Failure> {
    let invalid = |errs: Vec<FieldError>, obj_name: &str| {
        errors::invalid("authentication.k8s.io", "TokenRequest", obj_name, errs)
    };
    let meta_name = text(&request, "/metadata/name");
    if !meta_name.is_empty() && meta_name != name {
        let e = FieldError::invalid(
            "metadata.name",
            &meta_name,
            "must match the service account name if specified",
        );
        return Err(invalid(vec![e], name));
    }
    let meta_ns = text(&request, "/metadata/namespace");
    if !meta_ns.is_empty() && meta_ns != namespace {
        let e = FieldError::invalid(
            "metadata.namespace",
            &meta_ns,
            "must match the service account namespace if specified",
        );
        return Err(invalid(vec![e], name));
    }
    let sa = stored(store, "serviceaccounts", namespace, name).ok_or_else(|| {
        errors::not_found(
            &ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true),
            name,
        )
    })?;
    let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences = vec![ISSUER.to_owned()];
    }
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECS,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| errors::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    if expiration < MIN_EXPIRATION_SECS {
        let e = FieldError::invalid_number(
            "spec.expirationSeconds",
            expiration,
            "may not specify a duration less than 10 minutes",
        );
        return Err(invalid(vec![e], ""));
    }
    if expiration > MAX_EXPIRATION_SECS {
        let e = FieldError::invalid_number(
            "spec.expirationSeconds",
            expiration,
            "may not specify a duration larger than 2^32 seconds",
        );
        return Err(invalid(vec![e], ""));
    }
    let (mut bound, mut pod_node) = (None, None);
    if let Some(r) = spec.get("boundObjectRef").filter(|v| v.is_object()) {
        let (kind, api_version, ref_name, ref_uid) = (
            text(r, "/kind"),
            text(r, "/apiVersion"),
            text(r, "/name"),
            text(r, "/uid"),
        );
        let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let (resource, claim, ns, ar) = match (group, kind.as_str()) {
            ("", "Pod") => (
                "pods",
                "pod",
                namespace,
                ApiResource::new("", "v1", "Pod", "pods", true),
            ),
            ("", "Secret") => (
                "secrets",
                "secret",
                namespace,
                ApiResource::new("", "v1", "Secret", "secrets", true),
            ),
            ("", "Node") => ("nodes", "node", "", ApiResource::new("", "v1", "Node", "nodes", false)),
            _ => {
                let gvk = if group.is_empty() {
                    format!("/{}, Kind={kind}", api_version)
                } else {
                    format!("{api_version}, Kind={kind}")
                };
                return Err(errors::bad_request(format!(
                    "cannot bind token to object of type {gvk}"
                )));
            }
        };
        let obj = stored(store, resource, ns, &ref_name).ok_or_else(|| errors::not_found(&ar, &ref_name))?;
        if claim == "pod" && text(&obj, "/spec/serviceAccountName") != name {
            return Err(errors::bad_request(format!(
                "cannot bind token for serviceaccount {name:?} to pod running with different serviceaccount name."
            )));
        }
        let uid = text(&obj, "/metadata/uid");
        if !ref_uid.is_empty() && ref_uid != uid {
            let message = format!(
                "Operation cannot be fulfilled on {kind} {ref_name:?}: the UID in the bound object reference ({ref_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            );
            return Err(Box::new(Status::failure(409, "Conflict", message).with_details(
                StatusDetails {
                    name: ref_name.clone(),
                    kind: kind.clone(),
                    ..Default::default()
                },
            )));
        }
        if claim == "pod" {
            let node = text(&obj, "/spec/nodeName");
            if let Some(n) = (!node.is_empty()).then(|| stored(store, "nodes", "", &node)).flatten() {
                pod_node = Some(Bound {
                    claim: "node",
                    name: node,
                    uid: text(&n, "/metadata/uid"),
                });
            }
        }
        bound = Some(Bound {
            claim,
            name: ref_name,
            uid,
        });
    }
    let now = SystemTime::now();
    let now_secs = seconds(now);
    let token_spec = TokenSpec {
        namespace,
        service_account: name,
        service_account_uid: &text(&sa, "/metadata/uid"),
        bound,
        pod_node,
        audiences: &audiences,
        expiration_seconds: expiration,
        jti: new_uid(),
    };
    let token = issuer
        .sign(&claims::claims(ISSUER, &token_spec, now_secs))
        .map_err(errors::internal)?;
    let expires = now + std::time::Duration::from_secs(u64::try_from(expiration).unwrap_or(0));
    let obj = request
        .as_object_mut()
        .ok_or_else(|| errors::bad_request("the body must be a TokenRequest"))?;
    obj.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
    obj.insert("kind".into(), json!("TokenRequest"));
    obj.insert(
        "metadata".into(),
        json!({"name": name, "namespace": namespace, "creationTimestamp": format_rfc3339(now)}),
    );
    let mut out_spec = spec;
    out_spec["audiences"] = json!(audiences);
    out_spec["expirationSeconds"] = json!(expiration);
    if out_spec.get("boundObjectRef").is_some_and(Value::is_null) {
        out_spec.as_object_mut().map(|m| m.remove("boundObjectRef"));
    }
    obj.insert("spec".into(), out_spec);
    obj.insert(
        "status".into(),
        json!({"token": token, "expirationTimestamp": format_rfc3339(expires)}),
    );
    Ok(request)
}
