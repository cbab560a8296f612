//! apiextensions.k8s.io/v1 CustomResourceDefinition: `SetObjectDefaults_CustomResourceDefinition` (the spec's names
//! and conversion, a webhook service's port, the stored versions). Checking a CRD and serving what it defines is
//! [`crd`]'s.

use serde_json::{Value, json};

use super::{Cluster, Object, absent, child, child_or_empty, default_ptr, empty_str, text};
use crate::api::errors::{self, Failure};
use crate::registry::crd;

/// `SetDefaults_CustomResourceDefinition`: the singular name (the kind in lower case) and list kind (`<Kind>List`),
/// conversion strategy `None`, a conversion webhook service's port 443, and `status.storedVersions` (when a status
/// is written without it) holding the storage version.
pub(super) fn default_crd(obj: &mut Object) {
    let Some(spec) = child_or_empty(obj, "spec") else {
        return;
    };
    if let Some(names) = child_or_empty(spec, "names") {
        let kind = text(names, "kind").to_owned();
        if empty_str(names, "singular") {
            names.insert("singular".into(), Value::from(kind.to_lowercase()));
        }
        if empty_str(names, "listKind") && !kind.is_empty() {
            names.insert("listKind".into(), Value::from(format!("{kind}List")));
        }
    }
    if absent(spec, "conversion") {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    let service = child(spec, "conversion")
        .and_then(|c| child(c, "webhook"))
        .and_then(|w| child(w, "clientConfig"))
        .and_then(|c| child(c, "service"));
    if let Some(service) = service {
        default_ptr(service, "port", 443);
    }
    let storage = obj
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("storage") == Some(&Value::Bool(true)))
        .and_then(|v| v.get("name"))
        .cloned();
    if let (Some(status), Some(storage)) = (child(obj, "status"), storage) {
        let unset = status
            .get("storedVersions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if unset {
            status.insert("storedVersions".into(), json!([storage]));
        }
    }
}

/// The CRD strategy's `PrepareForCreate`: the status a client's create answer shows, before the naming and
/// establishing controllers write theirs — no names accepted yet (`acceptedNames` with empty `plural` and `kind`,
/// as Go writes the empty struct), no conditions, the storage version in `storedVersions`.
pub(super) fn prepare_crd_create(obj: &mut Object, _: &Cluster<'_>) -> Result<(), Failure> {
    let storage = obj
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage") == Some(&Value::Bool(true)))
        .filter_map(|v| v.get("name").cloned())
        .collect::<Vec<Value>>();
    obj.insert(
        "status".into(),
        json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": storage}),
    );
    Ok(())
}

/// The CRD strategy's `ValidateUpdate` beyond what every write checks: the group and plural never change, the
/// scope and kind not once established, and every version objects were stored in stays listed. A status write is
/// the controllers' and is not checked here.
pub(super) fn prepare_crd_update(
    new: &mut Object,
    old: &Object,
    status_only: bool,
    _: &Cluster<'_>,
) -> Result<(), Failure> {
    if status_only {
        return Ok(());
    }
    let errs = crd::check_update(&Value::Object(new.clone()), &Value::Object(old.clone()));
    if errs.is_empty() {
        return Ok(());
    }
    let name = old
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(errors::invalid(crd::GROUP, "CustomResourceDefinition", name, errs))
}
