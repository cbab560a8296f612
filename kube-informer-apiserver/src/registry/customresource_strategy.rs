//! The validation of a custom resource's write (apiextensions-apiserver's `registry/customresource` strategies:
//! `Validate`, `ValidateUpdate` and the status strategy's), on the object the write rules prepared: its schema
//! (ratcheted on updates: a value equal to its old one keeps its errors to itself), the scale subresource's fields,
//! the embedded resources, the list types (checked on an update only when the old object passed them), then the
//! `x-kubernetes-validations` rules — unless an error of a kind that makes rules meaningless came first.

use serde_json::Value;

use crate::api::errors::{self, Failure, FieldError};
use crate::registry::resource::{ResourceSpec, SchemaSlot};
use crate::schema;

/// The reasons after which CEL rules are not evaluated (kube's `hasBlockingErr`).
const BLOCKING: [&str; 5] = [
    "FieldValueNotSupported",
    "FieldValueRequired",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
];

/// Validates `new` (an update of `old` when there is one); the 422 kube-apiserver answers, or the warnings to
/// answer with.
pub(crate) fn validate(spec: &ResourceSpec, new: &Value, old: Option<&Value>) -> Result<Vec<String>, Failure> {
    // A custom resource's schema is given with its CRD (a built-in kind's comes from the catalog and has no rules).
    let SchemaSlot::Given(s) = &spec.schema else {
        return Ok(Vec::new());
    };
    let mut errs = match old {
        Some(o) => schema::validate_update(new, s, o),
        None => schema::validate(new, s),
    };
    if let Some(scale) = &spec.scale {
        errs.extend(scale.validate(new));
    }
    // Then, as kube-apiserver orders them: the scale subresource's fields (above), the embedded resources, the
    // list types (ratcheted as a whole: not checked when the old object already broke them).
    errs.extend(schema::validate_embedded(new, s));
    if old.is_none_or(|o| schema::validate_list_types(o, s).is_empty()) {
        errs.extend(schema::validate_list_types(new, s));
    }
    let mut warnings = Vec::new();
    if !has_rules(s) {
        // No rules: nothing is left unchecked.
    } else if errs.iter().any(|e| BLOCKING.contains(&e.reason)) {
        errs.push(FieldError {
            reason: "FieldValueInvalid",
            field: "<nil>".into(),
            message: "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
        });
    } else {
        rules(s, new, old, &mut errs, &mut warnings);
    }
    if errs.is_empty() {
        Ok(warnings)
    } else {
        let name = new.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        Err(errors::invalid(&spec.api.group, &spec.api.kind, name, errs))
    }
}

#[cfg(feature = "cel")]
fn has_rules(s: &std::sync::Arc<Value>) -> bool {
    schema::cel::has_rules(s)
}

#[cfg(not(feature = "cel"))]
fn has_rules(_s: &std::sync::Arc<Value>) -> bool {
    false
}

#[cfg(feature = "cel")]
fn rules(
    s: &std::sync::Arc<Value>,
    new: &Value,
    old: Option<&Value>,
    errs: &mut Vec<FieldError>,
    warnings: &mut Vec<String>,
) {
    let outcome = schema::cel::validate(s, new, old);
    errs.extend(outcome.errors);
    warnings.extend(outcome.warnings);
}

/// Without the `cel` feature no CRD carrying rules is accepted ([`schema::check_rules`]): nothing to evaluate.
#[cfg(not(feature = "cel"))]
fn rules(
    _s: &std::sync::Arc<Value>,
    _new: &Value,
    _old: Option<&Value>,
    _errs: &mut Vec<FieldError>,
    _warnings: &mut Vec<String>,
) {
}
