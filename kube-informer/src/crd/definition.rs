//! The `CustomResourceDefinition` (apiextensions.k8s.io/v1) as this crate writes and reads it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::object::{ObjectMeta, PrinterColumn, ScaleSubresource};

/// An apiextensions.k8s.io/v1 `CustomResourceDefinition`: what a cluster needs to serve a custom resource.
///
/// The schema is kept as JSON (`openAPIV3Schema`); everything else is typed. It serialises with its `apiVersion`
/// and `kind`, so it prints as a manifest `kubectl apply -f` takes, and it is an object an
/// [`Api`](crate::client::Api) creates, reads and watches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinition {
    /// `apiextensions.k8s.io/v1`.
    #[serde(default = "api_version")]
    pub api_version: String,
    /// `CustomResourceDefinition`.
    #[serde(default = "kind")]
    pub kind: String,
    /// Standard metadata; the name is `<plural>.<group>`.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What the resource is.
    pub spec: CustomResourceDefinitionSpec,
    /// What the API server made of it (accepted names, conditions, stored versions), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
}

fn api_version() -> String {
    "apiextensions.k8s.io/v1".into()
}

fn kind() -> String {
    "CustomResourceDefinition".into()
}

crate::object!(CustomResourceDefinition, group: "apiextensions.k8s.io", version: "v1",
               kind: "CustomResourceDefinition", plural: "customresourcedefinitions", namespaced: false);

impl CustomResourceDefinition {
    /// The condition `type` of the status (`Established`, `NamesAccepted`), when the server wrote it: its `status`
    /// (`"True"`, `"False"`, `"Unknown"`).
    pub fn condition(&self, type_: &str) -> Option<&str> {
        self.status
            .as_ref()?
            .get("conditions")?
            .as_array()?
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))?
            .get("status")?
            .as_str()
    }

    /// The version marked as the storage version.
    pub fn storage_version(&self) -> Option<&CustomResourceDefinitionVersion> {
        self.spec.versions.iter().find(|v| v.storage)
    }
}

/// `spec` of a [`CustomResourceDefinition`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinitionSpec {
    /// The API group (`example.com`).
    pub group: String,
    /// The resource's names.
    pub names: CustomResourceDefinitionNames,
    /// `Namespaced` or `Cluster`.
    pub scope: String,
    /// The versions served, exactly one of them stored.
    pub versions: Vec<CustomResourceDefinitionVersion>,
    /// How objects are converted between versions (`{"strategy": "None"}` when absent), verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversion: Option<Value>,
}

/// `spec.names` of a [`CustomResourceDefinition`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinitionNames {
    /// The plural, in URLs (`fleets`).
    pub plural: String,
    /// The singular (`fleet`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub singular: Option<String>,
    /// The kind (`Fleet`).
    pub kind: String,
    /// The kind of lists (`FleetList`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_kind: Option<String>,
    /// Short names for kubectl (`fl`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Categories (`all`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
}

/// One version of a [`CustomResourceDefinition`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinitionVersion {
    /// The version (`v1`, `v1beta2`).
    pub name: String,
    /// Served by the API.
    pub served: bool,
    /// The version objects are stored in.
    pub storage: bool,
    /// Deprecated (each request in it gets a warning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<bool>,
    /// The warning of a deprecated version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_warning: Option<String>,
    /// The schema of objects in this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<CustomResourceValidation>,
    /// The status and scale subresources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresources: Option<CustomResourceSubresources>,
    /// Columns `kubectl get` prints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_printer_columns: Vec<PrinterColumn>,
    /// Fields usable in field selectors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectable_fields: Vec<SelectableField>,
}

/// `schema` of a version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CustomResourceValidation {
    /// The structural OpenAPI v3 schema of the whole object.
    #[serde(rename = "openAPIV3Schema")]
    pub open_api_v3_schema: Value,
}

/// `subresources` of a version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CustomResourceSubresources {
    /// The status subresource (`{}` when on): `.status` is written through `/status` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    /// The scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<ScaleSubresource>,
}

/// A field usable in field selectors.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectableField {
    /// Its JSON path (`.spec.color`).
    pub json_path: String,
}
