//! What kube-apiserver does with an object's structural schema (a CRD's `openAPIV3Schema`, or a
//! [`ResourceSpec::schema`](super::ResourceSpec::schema)): pruning of unknown fields ([`prune`]), defaulting
//! ([`default`]), validation with its 422 wording ([`validate`]) — apiextensions-apiserver's algorithms, on
//! `serde_json::Value`s. Pure functions: the handlers decide when each runs. Beside them: the default resources'
//! schemas ([`builtin_schemas`]) and what decoding a built-in object into its Go type refuses ([`type_check`]).

pub(crate) mod builtin_schemas;
#[cfg(feature = "cel")]
pub(crate) mod cel;
mod defaulting;
mod listtype;
mod objectmeta;
mod pruning;
pub(crate) mod ratcheting;
pub(crate) mod type_check;
mod validation;

use serde_json::{Map, Value};

pub(crate) use defaulting::{default, prune_non_nullable_nulls};
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

/// A field path as kube-apiserver prints it: `spec.containers[0].name`.
#[derive(Clone, Debug, Default)]
pub(crate) struct FieldPath(String);

impl FieldPath {
    #[cfg(feature = "cel")]
    /// A path already written out.
    pub(crate) fn from_raw(path: String) -> FieldPath {
        FieldPath(path)
    }

    /// `.key` (no dot at the start).
    pub(crate) fn child(&self, key: &str) -> FieldPath {
        if self.0.is_empty() {
            FieldPath(key.to_owned())
        } else {
            FieldPath(format!("{}.{key}", self.0))
        }
    }

    /// `[key]`: a key of a map whose values share one schema (`additionalProperties`), as `field.Path.Key` prints
    /// it.
    pub(crate) fn key(&self, key: &str) -> FieldPath {
        FieldPath(format!("{}[{key}]", self.0))
    }

    /// `[i]`.
    pub(crate) fn index(&self, i: usize) -> FieldPath {
        FieldPath(format!("{}[{i}]", self.0))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// A schema node's view: the keywords these algorithms read.
pub(crate) trait SchemaNode {
    fn keyword(&self, key: &str) -> Option<&Value>;

    /// A boolean keyword or extension set to true.
    fn flag(&self, key: &str) -> bool {
        self.keyword(key).and_then(Value::as_bool) == Some(true)
    }

    fn properties(&self) -> Option<&Map<String, Value>> {
        self.keyword("properties").and_then(Value::as_object)
    }

    /// `additionalProperties`: `None` when absent; `Some(None)` for a boolean (no schema for the values).
    fn additional(&self) -> Option<Option<&Value>> {
        match self.keyword("additionalProperties")? {
            s @ Value::Object(_) => Some(Some(s)),
            Value::Bool(_) => Some(None),
            _ => None,
        }
    }

    fn items(&self) -> Option<&Value> {
        self.keyword("items").filter(|i| i.is_object())
    }

    fn preserves_unknown(&self) -> bool {
        self.flag("x-kubernetes-preserve-unknown-fields")
    }

    fn embedded(&self) -> bool {
        self.flag("x-kubernetes-embedded-resource")
    }

    fn nullable(&self) -> bool {
        self.flag("nullable")
    }
}

impl SchemaNode for Value {
    fn keyword(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}
