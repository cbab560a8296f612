//! `ObjectList<K>`: one page of a LIST response.

use serde::{Deserialize, Serialize};

use super::ListMeta;

/// One page of a LIST response (`ConfigMapList`, …).
///
/// ```
/// use kube_informer::object::{DynamicObject, ObjectList};
///
/// let page: ObjectList<DynamicObject> = serde_json::from_str(
///     r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"t"},
///        "items":[{"metadata":{"name":"a"}}]}"#,
/// ).unwrap();
/// assert_eq!(page.metadata.continue_token.as_deref(), Some("t"));
/// assert_eq!(page.items.len(), 1);
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "K: Deserialize<'de>"))]
pub struct ObjectList<K> {
    /// `apiVersion` of the list.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `kind` of the list (`ConfigMapList`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Resource version and continue token.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The objects of this page. `null` is read as empty.
    #[serde(default = "Vec::new", deserialize_with = "null_as_empty")]
    pub items: Vec<K>,
}

fn null_as_empty<'de, D, K>(d: D) -> Result<Vec<K>, D::Error>
where
    D: serde::Deserializer<'de>,
    K: Deserialize<'de>,
{
    Ok(Option::<Vec<K>>::deserialize(d)?.unwrap_or_default())
}
