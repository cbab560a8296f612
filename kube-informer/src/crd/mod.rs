//! CustomResourceDefinitions from Rust types (feature `schema`): the schema derived from the spec and status
//! structs (`#[derive(schemars::JsonSchema)]`), rewritten into the *structural* schema apiextensions requires, and
//! the rest of the definition from [`CrdOptions`](crate::object::CrdOptions) — kube-rs's
//! `#[derive(CustomResource)]`, controller-gen's markers.
//!
//! ```
//! use kube_informer::crd::CustomResourceExt;
//! use kube_informer::object::{CrdOptions, ValidationRule};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! /// The desired state of a Fleet.
//! #[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
//! #[schemars(transform = ValidationRule::new("self.replicas <= 100").message("at most 100 replicas"))]
//! pub struct FleetSpec {
//!     /// How many ConfigMaps.
//!     pub replicas: u32,
//! }
//! #[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
//! #[serde(rename_all = "camelCase")]
//! pub struct FleetStatus {
//!     pub ready_replicas: u32,
//! }
//! kube_informer::custom_resource! {
//!     pub struct Fleet { spec: FleetSpec, status: FleetStatus }
//!     group: "demo.example.com", version: "v1", namespaced: true,
//!     crd: CrdOptions::default().short_name("fl").printer_column("Replicas", "integer", ".spec.replicas"),
//! }
//!
//! let crd = Fleet::crd()?;
//! assert_eq!(crd.metadata.name.as_deref(), Some("fleets.demo.example.com"));
//! let schema = &crd.spec.versions[0].schema.as_ref().unwrap().open_api_v3_schema;
//! assert_eq!(schema["properties"]["spec"]["properties"]["replicas"]["type"], "integer");
//! assert_eq!(schema["properties"]["spec"]["x-kubernetes-validations"][0]["rule"], "self.replicas <= 100");
//! println!("{}", serde_json::to_string_pretty(&crd)?); // or YAML: what `kubectl apply -f` takes
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What becomes of what schemars emits
//!
//! apiextensions refuses much of JSON Schema: every field must say its type, `$ref`, `uniqueItems`,
//! `additionalProperties: false` and type lists are forbidden, and `anyOf`/`oneOf`/`allOf` may only carry value
//! validations (no types, descriptions, defaults or properties of their own). The rewrite (kube-rs's
//! `StructuralSchemaRewriter`, `OptionalEnum` and `OptionalIntOrString`, as rules) turns:
//!
//! | Rust | schemars | structural |
//! |---|---|---|
//! | `Option<T>` | `type: [T, null]`, or `anyOf` of `T` and `null` | `T` with `nullable: true` |
//! | a unit-only enum | `oneOf` of one-value `enum`s | one `enum` of every value |
//! | an enum of struct variants (external or internal tag) | `oneOf` of objects | the variants' properties on one object, `oneOf` of their `required` |
//! | `#[serde(untagged)]` enum of structs | `anyOf` of objects | the same, with `anyOf` |
//! | an untagged enum of an integer and a string | `anyOf` of both | `x-kubernetes-int-or-string: true` |
//! | `serde_json::Value` | `{}` | `x-kubernetes-preserve-unknown-fields: true` |
//! | `BTreeMap<String, Value>`, `#[serde(flatten)]` maps | `additionalProperties: true` | `type: object`, `x-kubernetes-preserve-unknown-fields: true` |
//! | `#[serde(deny_unknown_fields)]` | `additionalProperties: false` | removed (the API server prunes unknown fields) |
//! | `HashSet<scalar>` | `uniqueItems: true` | `x-kubernetes-list-type: set` (the server refuses duplicates) |
//! | `u8` … `u64`, `i8`, `i16` | formats `uint8` … | `int32` / `int64` with the bounds kept |
//!
//! What has no structural form is an error naming the field: a recursive type, a tuple, an enum mixing unit and
//! data variants, an untagged enum of unrelated types, `patternProperties` and the other keywords apiextensions
//! does not know.
//!
//! # Validation rules, list types and other extensions as attributes
//!
//! schemars' own attributes carry them: `#[schemars(transform = ValidationRule::new("self.a <= self.b"))]` on a
//! struct, enum or field adds an `x-kubernetes-validations` rule ([`ValidationRule`]
//! implements schemars' `Transform`); `#[schemars(extend("x-kubernetes-list-type" = "map",
//! "x-kubernetes-list-map-keys" = ["name"]))]` any other extension; `#[schemars(range(min = 1))]`,
//! `length(max = 63)`, `regex(pattern = "...")` bounds. Rules on the whole object go in
//! [`CrdOptions::validation`](crate::object::CrdOptions::validation).

mod definition;
mod structural;

use std::any::TypeId;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

pub use definition::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceSubresources, CustomResourceValidation, SelectableField,
};
pub use structural::CrdError;

/// The schemars crate this module derives schemas with, for a crate that would rather not name it in its own
/// `Cargo.toml` (its derive then needs `#[schemars(crate = "kube_informer::crd::schemars")]`).
pub use schemars;

use crate::object::{CustomResource, NoStatus, ObjectMeta, ValidationRule};

/// The CustomResourceDefinition of a [`custom_resource!`](crate::custom_resource!) type whose spec and status
/// derive `schemars::JsonSchema`.
pub trait CustomResourceExt: CustomResource {
    /// The definition: names, scope, one version with its structural schema, subresources, printer columns and
    /// rules from [`CustomResource::crd_options`].
    ///
    /// # Errors
    /// [`CrdError::Unstructural`] when a type of the spec or status has no structural schema (the error names
    /// the field and why).
    fn crd() -> Result<CustomResourceDefinition, CrdError>;

    /// The definition as YAML, for `kubectl apply -f -` (a `crdgen` binary's whole `main`:
    /// `print!("{}", Fleet::crd_yaml()?)`).
    ///
    /// # Errors
    /// As [`crd`](Self::crd).
    fn crd_yaml() -> Result<String, CrdError> {
        serde_saphyr::to_string(&Self::crd()?).map_err(|e| CrdError::Yaml(e.to_string()))
    }

    /// `<plural>.<group>`, the definition's name.
    fn crd_name() -> String {
        let ar = Self::api_resource();
        format!("{}.{}", ar.plural, ar.group)
    }
}

impl<T> CustomResourceExt for T
where
    T: CustomResource,
    T::Spec: JsonSchema,
    T::Status: JsonSchema + 'static,
{
    fn crd() -> Result<CustomResourceDefinition, CrdError> {
        let ar = T::api_resource();
        let options = T::crd_options();
        let has_status = TypeId::of::<T::Status>() != TypeId::of::<NoStatus>();

        let mut properties = Map::new();
        properties.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": "The versioned schema of this representation of an object."}),
        );
        properties.insert(
            "kind".into(),
            json!({"type": "string", "description": "The REST resource this object represents."}),
        );
        properties.insert("metadata".into(), json!({"type": "object"}));
        properties.insert("spec".into(), schema_for::<T::Spec>("spec")?);
        if has_status {
            properties.insert("status".into(), schema_for::<T::Status>("status")?);
        }
        let mut root = Map::new();
        root.insert("type".into(), "object".into());
        root.insert("properties".into(), Value::Object(properties));
        root.insert("required".into(), json!(["spec"]));
        if !options.validations.is_empty() {
            root.insert(
                "x-kubernetes-validations".into(),
                serde_json::to_value(&options.validations).unwrap_or_default(),
            );
        }

        let status_subresource = options.status_subresource.unwrap_or(has_status);
        let subresources = (status_subresource || options.scale.is_some()).then(|| CustomResourceSubresources {
            status: status_subresource.then(|| json!({})),
            scale: options.scale.clone(),
        });
        let mut metadata = ObjectMeta::named(Self::crd_name());
        for (k, v) in &options.labels {
            metadata.labels.insert(k.clone(), v.clone());
        }
        for (k, v) in &options.annotations {
            metadata.annotations.insert(k.clone(), v.clone());
        }
        Ok(CustomResourceDefinition {
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            metadata,
            spec: CustomResourceDefinitionSpec {
                group: ar.group.clone(),
                names: CustomResourceDefinitionNames {
                    plural: ar.plural.clone(),
                    singular: Some(options.singular.clone().unwrap_or_else(|| ar.kind.to_ascii_lowercase())),
                    kind: ar.kind.clone(),
                    list_kind: None,
                    short_names: options.short_names.clone(),
                    categories: options.categories.clone(),
                },
                scope: if ar.namespaced { "Namespaced" } else { "Cluster" }.into(),
                versions: vec![CustomResourceDefinitionVersion {
                    name: ar.version.clone(),
                    served: options.served,
                    storage: options.storage,
                    deprecated: options.deprecation_warning.as_ref().map(|_| true),
                    deprecation_warning: options.deprecation_warning.clone().filter(|w| !w.is_empty()),
                    schema: Some(CustomResourceValidation {
                        open_api_v3_schema: Value::Object(root),
                    }),
                    subresources,
                    additional_printer_columns: options.printer_columns.clone(),
                    selectable_fields: options
                        .selectable_fields
                        .iter()
                        .map(|p| SelectableField { json_path: p.clone() })
                        .collect(),
                }],
                conversion: None,
            },
            status: None,
        })
    }
}

/// The structural schema of `T` (as it appears under a CRD's `openAPIV3Schema`, e.g. for `spec`): schemars'
/// OpenAPI 3 schema with every subschema inlined, rewritten as the module's docs say. `field` names the value in
/// errors.
///
/// # Errors
/// [`CrdError::Unstructural`] naming the first field that has no structural form.
pub fn schema_for<T: JsonSchema>(field: &str) -> Result<Value, CrdError> {
    let generator = SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(m) = schema.as_object_mut() {
        m.remove("title");
    }
    structural::rewrite(schema, field)
}

/// One definition of several versions of a resource, each from the [`CustomResourceExt::crd`] of its Rust type
/// (kube-rs's `merge_crds`): the versions in the order given, `storage_version` the one stored.
///
/// ```
/// use kube_informer::crd::{merge_versions, CustomResourceExt};
///
/// mod v1 {
///     #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
///     pub struct WidgetSpec { a: i32 }
///     kube_informer::custom_resource! { pub struct Widget { spec: WidgetSpec } group: "example.com", version: "v1", namespaced: true }
/// }
/// mod v2 {
///     #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
///     pub struct WidgetSpec { a: i64, b: String }
///     kube_informer::custom_resource! { pub struct Widget { spec: WidgetSpec } group: "example.com", version: "v2", namespaced: true }
/// }
///
/// fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let crd = merge_versions(vec![v1::Widget::crd()?, v2::Widget::crd()?], "v2")?;
///     let versions: Vec<_> = crd.spec.versions.iter().map(|v| (v.name.as_str(), v.storage)).collect();
///     assert_eq!(versions, [("v1", false), ("v2", true)]);
///     Ok(())
/// }
/// ```
///
/// # Errors
/// [`CrdError::Mismatch`] when the definitions are not of one resource (group, names, scope), when a version comes
/// twice, or when `storage_version` is not among them.
pub fn merge_versions(
    crds: Vec<CustomResourceDefinition>,
    storage_version: &str,
) -> Result<CustomResourceDefinition, CrdError> {
    let mut crds = crds.into_iter();
    let mut merged = crds
        .next()
        .ok_or_else(|| CrdError::Mismatch("no definition to merge".into()))?;
    for crd in crds {
        let (a, b) = (&merged.spec, &crd.spec);
        if a.group != b.group || a.names.kind != b.names.kind || a.names.plural != b.names.plural || a.scope != b.scope
        {
            return Err(CrdError::Mismatch(format!(
                "{} ({} {}, {}) and {} ({} {}, {}) are not one resource",
                a.names.kind, a.group, a.names.plural, a.scope, b.names.kind, b.group, b.names.plural, b.scope
            )));
        }
        merged.spec.versions.extend(crd.spec.versions);
    }
    let mut seen = std::collections::BTreeSet::new();
    for v in &merged.spec.versions {
        if !seen.insert(v.name.clone()) {
            return Err(CrdError::Mismatch(format!("version {} comes twice", v.name)));
        }
    }
    if !seen.contains(storage_version) {
        return Err(CrdError::Mismatch(format!(
            "the storage version {storage_version} is not among the versions {seen:?}"
        )));
    }
    for v in &mut merged.spec.versions {
        v.storage = v.name == storage_version;
    }
    Ok(merged)
}

/// `#[schemars(transform = ValidationRule::new("..."))]`: the rule joins the schema's `x-kubernetes-validations`.
impl schemars::transform::Transform for ValidationRule {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        let Ok(rule) = serde_json::to_value(&*self) else {
            return;
        };
        if let Some(m) = schema.as_object_mut() {
            match m
                .entry("x-kubernetes-validations")
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(rules) => rules.push(rule),
                other => *other = Value::Array(vec![rule]),
            }
        }
    }
}

/// A resource without a status has no `.status` in its schema; this schema is never used.
impl JsonSchema for NoStatus {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoStatus".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object"})
    }
}

#[cfg(test)]
mod tests;
