//! The `approval` subresource of CertificateSigningRequests (`pkg/registry/certificates/certificates/strategy.go`'s
//! approval strategy): a write there changes only `status.conditions` — the spec, the rest of the status and the
//! metadata stay as stored — each condition's `lastUpdateTime` and `lastTransitionTime` filled in when missing
//! (the transition time kept from a stored condition of the same type and status), then checked as
//! `ValidateCertificateSigningRequestApprovalUpdate` does: `Approved` and `Denied` only with status `True`, never
//! both, never removed once set, each type once.

use serde_json::{Value, json};

use crate::api::errors::{self, Failure, FieldError};
use kube_informer::object::time::format_rfc3339;

/// Turns `new` (the object a PUT or patch of `approval` gives) into what is stored: `old` with `new`'s conditions.
pub(crate) fn update(old: &Value, new: &mut Value) -> Result<(), Failure> {
    let name = old["metadata"]["name"].as_str().unwrap_or("").to_owned();
    let now = format_rfc3339(std::time::SystemTime::now());
    let old_conditions = old["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let mut conditions = new["status"]["conditions"].as_array().cloned().unwrap_or_default();
    for c in &mut conditions {
        if c["lastUpdateTime"].is_null() {
            c["lastUpdateTime"] = json!(now);
        }
        if c["lastTransitionTime"].is_null() {
            let kept = old_conditions
                .iter()
                .find(|o| o["type"] == c["type"] && o["status"] == c["status"])
                .map(|o| o["lastTransitionTime"].clone())
                .filter(|t| !t.is_null());
            c["lastTransitionTime"] = kept.unwrap_or_else(|| json!(now));
        }
    }
    let errs = validate(&old_conditions, &conditions);
    if !errs.is_empty() {
        return Err(errors::invalid(
            "certificates.k8s.io",
            "CertificateSigningRequest",
            &name,
            errs,
        ));
    }
    let rv = new["metadata"]["resourceVersion"].clone();
    *new = old.clone();
    if !rv.is_null() {
        new["metadata"]["resourceVersion"] = rv;
    }
    if conditions.is_empty() {
        if let Some(s) = new["status"].as_object_mut() {
            s.remove("conditions");
        }
    } else {
        new["status"]["conditions"] = Value::Array(conditions);
    }
    Ok(())
}

fn validate(old: &[Value], conditions: &[Value]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let t = c["type"].as_str().unwrap_or("");
        let field = format!("status.conditions[{i}]");
        if t.is_empty() {
            errs.push(FieldError::required(&format!("{field}.type"), ""));
            continue;
        }
        if matches!(t, "Approved" | "Denied" | "Failed") {
            if seen.contains(&t) {
                errs.push(FieldError::duplicate(&format!("{field}.type"), t));
            }
            seen.push(t);
        }
        if matches!(t, "Approved" | "Denied") && c["status"] != "True" {
            errs.push(FieldError::not_supported(
                &format!("{field}.status"),
                c["status"].as_str().unwrap_or(""),
                &["True"],
            ));
        }
    }
    if seen.contains(&"Approved") && seen.contains(&"Denied") {
        errs.push(FieldError::invalid(
            "status.conditions",
            "",
            "Approved and Denied conditions are mutually exclusive",
        ));
    }
    for t in ["Approved", "Denied"] {
        if old.iter().any(|c| c["type"] == t) && !seen.contains(&t) {
            errs.push(FieldError::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {t:?}"),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_changes_only_the_conditions() {
        let old = json!({"metadata": {"name": "c", "resourceVersion": "3"}, "spec": {"signerName": "x"},
                         "status": {"certificate": "Y2VydA=="}});
        let mut new = json!({"metadata": {"name": "c", "resourceVersion": "3", "labels": {"a": "b"}},
                             "spec": {"signerName": "changed"},
                             "status": {"certificate": "", "conditions": [{"type": "Approved", "status": "True", "reason": "R"}]}});
        update(&old, &mut new).unwrap();
        assert_eq!(new["spec"]["signerName"], "x");
        assert_eq!(new["metadata"].get("labels"), None);
        assert_eq!(new["status"]["certificate"], "Y2VydA==");
        let c = &new["status"]["conditions"][0];
        assert_eq!(
            (c["type"].as_str(), c["reason"].as_str()),
            (Some("Approved"), Some("R"))
        );
        assert!(c["lastUpdateTime"].is_string() && c["lastTransitionTime"].is_string());
        let mut both = json!({"status": {"conditions": [{"type": "Approved", "status": "True"},
                                                         {"type": "Denied", "status": "True"}]}});
        assert_eq!(update(&old, &mut both).unwrap_err().code, 422);
    }
}
