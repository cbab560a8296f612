//! A field path as errors print it (apimachinery's `validation/field.Path`), plain values every schema algorithm
//! and the handlers share.

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
