//! What kube-apiserver does with an object's structural schema (a CRD's `openAPIV3Schema`, or a
//! [`ResourceSpec::schema`](super::ResourceSpec::schema)): pruning of unknown fields ([`prune`]), defaulting
//! ([`default`]), validation with its 422 wording ([`validate`]) — apiextensions-apiserver's algorithms, on
//! `serde_json::Value`s. Pure functions: the handlers decide when each runs. Beside them: the default resources'
//! schemas ([`builtin_schemas`]) and what decoding a built-in object into its Go type refuses ([`type_check`]).

pub(crate) mod builtin_schemas;
#[cfg(feature = "cel")]
pub(crate) mod cel;
mod defaulting;
pub(crate) mod field_path;
mod listtype;
mod objectmeta;
mod pruning;
pub(crate) mod ratcheting;
pub(crate) mod structural;
pub(crate) mod type_check;
mod validation;

use serde_json::Value;

pub(crate) use defaulting::{default, prune_non_nullable_nulls};
pub(crate) use field_path::FieldPath;
pub(crate) use listtype::validate_list_types;
pub(crate) use objectmeta::{coerce_embedded_metadata, prune_object_meta, validate_embedded};
pub(crate) use pruning::prune;
pub(crate) use validation::{validate, validate_update};

/// The errors of a CRD schema's `x-kubernetes-validations` (at `path`), as kube-apiserver's CRD validation finds
/// them ([`cel::check_definition`]).
#[cfg(feature = "cel")]
pub(crate) fn check_rules(schema: &Value, path: &str) -> Vec<crate::api::errors::FieldError> {
    cel::check_definition(schema, path)
}

/// Built without the `cel` feature, the server cannot evaluate rules: a CRD carrying any is refused, naming the
/// feature, rather than served with its rules silently ignored.
#[cfg(not(feature = "cel"))]
pub(crate) fn check_rules(schema: &Value, path: &str) -> Vec<crate::api::errors::FieldError> {
    let mut out = Vec::new();
    refuse_rules(schema, path, &mut out);
    out
}

#[cfg(not(feature = "cel"))]
fn refuse_rules(s: &Value, path: &str, out: &mut Vec<crate::api::errors::FieldError>) {
    if s.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
    {
        out.push(crate::api::errors::FieldError::forbidden(
            &format!("{path}.x-kubernetes-validations"),
            "CEL validation rules cannot be evaluated: this kube-informer-apiserver was built without its `cel` feature",
        ));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            refuse_rules(p, &format!("{path}.properties[{k}]"), out);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(c) = s.get(key).filter(|c| c.is_object()) {
            refuse_rules(c, &format!("{path}.{key}"), out);
        }
    }
}
