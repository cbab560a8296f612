//! A structural schema node (apiextensions-apiserver's `schema.Structural`), read through the keywords the schema
//! algorithms read.

use serde_json::{Map, Value};

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
