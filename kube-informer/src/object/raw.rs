//! `RawJson`: a JSON value kept as its text.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A JSON value kept verbatim as compact text: parsed only when somebody asks, written back byte for byte.
///
/// Used for `managedFields` and for the non-metadata fields of a [`DynamicObject`](super::DynamicObject): a cache
/// holds them at their JSON size instead of the ~3× a `serde_json::Value` tree costs.
///
/// ```
/// use kube_informer::object::RawJson;
///
/// let raw = RawJson::from_value(&serde_json::json!({"replicas": 3})).unwrap();
/// assert_eq!(raw.get(), r#"{"replicas":3}"#);
/// let v: serde_json::Value = raw.parse().unwrap();
/// assert_eq!(v["replicas"], 3);
/// ```
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// Serialises `value` into raw JSON text.
    pub fn from_value<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Self> {
        serde_json::value::to_raw_value(value).map(RawJson)
    }

    /// Validates `text` as JSON and keeps it.
    pub fn from_string(text: String) -> serde_json::Result<Self> {
        RawValue::from_string(text).map(RawJson)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// Parses the text into `T`.
    pub fn parse<'a, T: Deserialize<'a>>(&'a self) -> serde_json::Result<T> {
        serde_json::from_str(self.0.get())
    }

    /// The underlying `RawValue`.
    pub fn as_raw_value(&self) -> &RawValue {
        &self.0
    }
}

impl From<Box<RawValue>> for RawJson {
    fn from(raw: Box<RawValue>) -> Self {
        RawJson(raw)
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawJson {}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(RawJson)
    }
}
