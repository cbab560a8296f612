//! The `scale` subresource as a resource declares it ([`ScaleSubresource`]): where the replica counts and the label
//! selector live in its objects, as a CRD's `subresources.scale` names them, and what every write of such an object
//! must hold there. A plain value a [`ResourceSpec`](crate::registry::resource::ResourceSpec) holds; serving
//! `…/{name}/scale` is [`scale`](crate::registry::scale)'s.

use serde_json::Value;

use crate::api::errors::FieldError;

/// The `scale` subresource of a resource: where the desired and observed replica counts and the label selector
/// live in its objects, as a CRD's `subresources.scale` names them (`specReplicasPath`, `statusReplicasPath`,
/// `labelSelectorPath`).
///
/// Paths are dot-separated JSON paths from the object's root (`.spec.replicas`), without array notation.
///
/// ```
/// use kube_informer::object::ApiResource;
/// use kube_informer_apiserver::{ResourceSpec, ScaleSubresource};
///
/// let workers = ResourceSpec::new(ApiResource::new("example.com", "v1", "Worker", "workers", true))
///     .with_status_subresource()
///     .with_scale_subresource(
///         ScaleSubresource::new(".spec.replicas", ".status.replicas").label_selector_path(".status.selector"),
///     );
/// assert!(workers.scale_subresource().is_some());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleSubresource {
    pub(crate) spec_replicas_path: String,
    pub(crate) status_replicas_path: String,
    pub(crate) label_selector_path: Option<String>,
}

impl ScaleSubresource {
    /// Replicas are desired at `spec_replicas_path` and observed at `status_replicas_path`.
    pub fn new(spec_replicas_path: &str, status_replicas_path: &str) -> Self {
        ScaleSubresource {
            spec_replicas_path: spec_replicas_path.to_owned(),
            status_replicas_path: status_replicas_path.to_owned(),
            label_selector_path: None,
        }
    }

    /// The label selector (`Scale.status.selector`, what a HorizontalPodAutoscaler counts pods by) is at `path`:
    /// a string in the label selector syntax, as a CRD requires, or a `LabelSelector` object (`matchLabels`,
    /// `matchExpressions`), as a deployment's `.spec.selector`, which is written out as kube-apiserver does.
    #[must_use]
    pub fn label_selector_path(mut self, path: &str) -> Self {
        self.label_selector_path = Some(path.to_owned());
        self
    }

    /// What deployments declare: `.spec.replicas`, `.status.replicas`, `.spec.selector`.
    pub(crate) fn deployment() -> Self {
        ScaleSubresource::new(".spec.replicas", ".status.replicas").label_selector_path(".spec.selector")
    }

    /// What kube-apiserver checks on every write of a custom resource with a scale subresource, besides its schema
    /// (`ValidateScaleSpec`, `ValidateScaleStatus`): each replica count, where present, an integer from 0 to
    /// 2³¹-1, and the label selector, where present, a string. The fields are named by their paths, leading dot
    /// and all (`.spec.replicas`), as kube-apiserver names them.
    pub(crate) fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for path in [&self.spec_replicas_path, &self.status_replicas_path] {
            let problem = match read(obj, path) {
                None => None,
                Some(v) => match v.as_i64() {
                    None => Some((0, accessor_error(path, v, "int64"))),
                    Some(n) if n < 0 => Some((n, "should be a non-negative integer".to_owned())),
                    Some(n) if n > i64::from(i32::MAX) => {
                        Some((n, format!("should be less than or equal to {}", i32::MAX)))
                    }
                    Some(_) => None,
                },
            };
            if let Some((shown, detail)) = problem {
                errs.push(FieldError::invalid_number(path, shown, &detail));
            }
        }
        if let Some(path) = &self.label_selector_path
            && let Some(v) = read(obj, path).filter(|v| !v.is_string())
        {
            errs.push(FieldError::invalid(path, "", &accessor_error(path, v, "string")));
        }
        errs
    }
}

/// unstructured's `Nested*` accessor error for a value of the wrong type, with the Go type name JSON decoding gives
/// it.
fn accessor_error(path: &str, v: &Value, expected: &str) -> String {
    let (shown, go_type) = match v {
        Value::String(s) => (s.clone(), "string"),
        Value::Bool(b) => (b.to_string(), "bool"),
        Value::Number(n) if n.is_i64() => (n.to_string(), "int64"),
        Value::Number(n) => (n.as_f64().map_or_else(|| n.to_string(), |f| f.to_string()), "float64"),
        Value::Null => ("<nil>".to_owned(), "<nil>"),
        Value::Array(_) => (v.to_string(), "[]interface {}"),
        Value::Object(_) => (v.to_string(), "map[string]interface {}"),
    };
    format!("{path} accessor error: {shown} is of the type {go_type}, expected {expected}")
}

/// The segments of a dot-separated path (`.spec.replicas`).
pub(crate) fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.trim_start_matches('.').split('.').filter(|s| !s.is_empty())
}

/// The value at a dot-separated path, if any (unstructured's `NestedFieldNoCopy`).
pub(crate) fn read<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    segments(path).try_fold(obj, |v, seg| v.get(seg))
}
