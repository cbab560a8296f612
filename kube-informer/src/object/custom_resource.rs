//! Custom resources declared in Rust: the root type from a spec and a status struct ([`custom_resource!`]), and
//! what its CustomResourceDefinition says besides the schema ([`CrdOptions`]).
//!
//! The CustomResourceDefinition itself (with the schema derived from the spec and status types) comes from
//! `kube_informer::crd` (feature `schema`).
//!
//! [`custom_resource!`]: crate::custom_resource!

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::{ObjectMeta, Resource};

/// A custom resource: a root type holding `metadata`, a `spec` and an optional `status`, as
/// [`custom_resource!`](crate::custom_resource!) declares it.
pub trait CustomResource: Resource {
    /// The type of `.spec`.
    type Spec;
    /// The type of `.status` ([`NoStatus`] for a resource without one).
    type Status;

    /// What the CustomResourceDefinition says besides the schema: short names, printer columns, subresources...
    fn crd_options() -> CrdOptions {
        CrdOptions::default()
    }
}

/// The status type of a custom resource declared without one: no `.status`, no status subresource.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoStatus {}

/// A validation rule in CEL (`x-kubernetes-validations`), checked by the API server on every write.
///
/// In a CRD, on the root through [`CrdOptions::validation`], and on any field or type of the spec and status with
/// schemars' attribute (feature `schema`):
///
/// ```ignore
/// #[derive(JsonSchema)]
/// #[schemars(transform = ValidationRule::new("self.min <= self.max").message("min must not exceed max"))]
/// struct Range { min: i32, max: i32 }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ValidationRule {
    /// The CEL expression (`self.replicas <= 10`); `self` is the value the rule is attached to, `oldSelf` its
    /// previous value on an update (a transition rule).
    pub rule: String,
    /// What the API server answers when the rule fails (default: the rule's text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A CEL expression giving the message, evaluated when the rule fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
    /// The `reason` of the cause in the 422 (`FieldValueInvalid`, `FieldValueForbidden`, `FieldValueRequired`,
    /// `FieldValueDuplicate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The field path the cause names, relative to where the rule is (`.spec.replicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
    /// For a transition rule: also check it when the old value was invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional_old_self: Option<bool>,
}

impl ValidationRule {
    /// A rule from its CEL expression.
    pub fn new(rule: impl Into<String>) -> Self {
        ValidationRule {
            rule: rule.into(),
            message: None,
            message_expression: None,
            reason: None,
            field_path: None,
            optional_old_self: None,
        }
    }

    /// Sets the message.
    #[must_use]
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Sets the message expression.
    #[must_use]
    pub fn message_expression(mut self, expression: impl Into<String>) -> Self {
        self.message_expression = Some(expression.into());
        self
    }

    /// Sets the reason.
    #[must_use]
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Sets the field path.
    #[must_use]
    pub fn field_path(mut self, path: impl Into<String>) -> Self {
        self.field_path = Some(path.into());
        self
    }

    /// Sets `optionalOldSelf`.
    #[must_use]
    pub fn optional_old_self(mut self) -> Self {
        self.optional_old_self = Some(true);
        self
    }
}

/// A column `kubectl get` prints (`additionalPrinterColumns`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PrinterColumn {
    /// The column's header.
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// A simple JSON path into each object (`.spec.replicas`).
    pub json_path: String,
    /// A description of the column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// An OpenAPI format (`int32`, `date-time`, `name`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// 0 for the default view; more for `-o wide` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

/// The scale subresource: where the replica counts and the selector are (`kubectl scale`, HorizontalPodAutoscalers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ScaleSubresource {
    /// The desired replicas, under `.spec` (`.spec.replicas`).
    pub spec_replicas_path: String,
    /// The observed replicas, under `.status` (`.status.replicas`).
    pub status_replicas_path: String,
    /// The selector of the replicas (a string in the label-selector syntax), under `.status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector_path: Option<String>,
}

/// What a CustomResourceDefinition says besides the schema, for one version. The defaults are kube-rs's and
/// controller-gen's: served and stored, a status subresource when the resource has a status, no short names,
/// categories or columns.
///
/// ```
/// use kube_informer::object::CrdOptions;
///
/// let options = CrdOptions::default()
///     .short_name("fl")
///     .category("demo")
///     .printer_column("Replicas", "integer", ".spec.replicas")
///     .scale(".spec.replicas", ".status.replicas", Some(".status.selector"));
/// assert_eq!(options.short_names, ["fl"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CrdOptions {
    /// `names.singular` (default: the kind in lower case).
    pub singular: Option<String>,
    /// `names.shortNames` (`kubectl get fl`).
    pub short_names: Vec<String>,
    /// `names.categories` (`kubectl get all` lists the kinds in the category `all`).
    pub categories: Vec<String>,
    /// `additionalPrinterColumns` of this version.
    pub printer_columns: Vec<PrinterColumn>,
    /// The scale subresource.
    pub scale: Option<ScaleSubresource>,
    /// The status subresource (default: when the resource has a status).
    pub status_subresource: Option<bool>,
    /// Rules on the whole object (`self.metadata.name`, `self.spec`...).
    pub validations: Vec<ValidationRule>,
    /// `selectableFields` (field selectors on lists and watches): JSON paths of scalar fields.
    pub selectable_fields: Vec<String>,
    /// Whether this version is served (default: true).
    pub served: bool,
    /// Whether this version is the storage version (default: true; exactly one version of a CRD is).
    pub storage: bool,
    /// Deprecated, with this warning (`None`: not deprecated; `Some("")`: the API server's default warning).
    pub deprecation_warning: Option<String>,
    /// Labels of the CustomResourceDefinition object.
    pub labels: Vec<(String, String)>,
    /// Annotations of the CustomResourceDefinition object.
    pub annotations: Vec<(String, String)>,
}

impl Default for CrdOptions {
    fn default() -> Self {
        CrdOptions {
            singular: None,
            short_names: Vec::new(),
            categories: Vec::new(),
            printer_columns: Vec::new(),
            scale: None,
            status_subresource: None,
            validations: Vec::new(),
            selectable_fields: Vec::new(),
            served: true,
            storage: true,
            deprecation_warning: None,
            labels: Vec::new(),
            annotations: Vec::new(),
        }
    }
}

impl CrdOptions {
    /// Sets the singular name.
    #[must_use]
    pub fn singular(mut self, singular: impl Into<String>) -> Self {
        self.singular = Some(singular.into());
        self
    }

    /// Adds a short name.
    #[must_use]
    pub fn short_name(mut self, name: impl Into<String>) -> Self {
        self.short_names.push(name.into());
        self
    }

    /// Adds a category.
    #[must_use]
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.categories.push(category.into());
        self
    }

    /// Adds a printer column of `type_` (`integer`, `number`, `string`, `boolean`, `date`) at `json_path`.
    #[must_use]
    pub fn printer_column(
        mut self,
        name: impl Into<String>,
        type_: impl Into<String>,
        json_path: impl Into<String>,
    ) -> Self {
        self.printer_columns.push(PrinterColumn {
            name: name.into(),
            type_: type_.into(),
            json_path: json_path.into(),
            description: None,
            format: None,
            priority: None,
        });
        self
    }

    /// Adds a printer column given whole (description, format, priority).
    #[must_use]
    pub fn column(mut self, column: PrinterColumn) -> Self {
        self.printer_columns.push(column);
        self
    }

    /// Sets the scale subresource.
    #[must_use]
    pub fn scale(
        mut self,
        spec_replicas_path: impl Into<String>,
        status_replicas_path: impl Into<String>,
        label_selector_path: Option<&str>,
    ) -> Self {
        self.scale = Some(ScaleSubresource {
            spec_replicas_path: spec_replicas_path.into(),
            status_replicas_path: status_replicas_path.into(),
            label_selector_path: label_selector_path.map(str::to_owned),
        });
        self
    }

    /// Turns the status subresource on or off (by default it is on when the resource has a status).
    #[must_use]
    pub fn status_subresource(mut self, enabled: bool) -> Self {
        self.status_subresource = Some(enabled);
        self
    }

    /// Adds a rule on the whole object.
    #[must_use]
    pub fn validation(mut self, rule: ValidationRule) -> Self {
        self.validations.push(rule);
        self
    }

    /// Adds a selectable field.
    #[must_use]
    pub fn selectable_field(mut self, json_path: impl Into<String>) -> Self {
        self.selectable_fields.push(json_path.into());
        self
    }

    /// Sets whether this version is served.
    #[must_use]
    pub fn served(mut self, served: bool) -> Self {
        self.served = served;
        self
    }

    /// Sets whether this version is the storage version.
    #[must_use]
    pub fn storage(mut self, storage: bool) -> Self {
        self.storage = storage;
        self
    }

    /// Marks this version deprecated, with `warning` (empty: the API server's default warning).
    #[must_use]
    pub fn deprecated(mut self, warning: impl Into<String>) -> Self {
        self.deprecation_warning = Some(warning.into());
        self
    }

    /// Adds a label to the CustomResourceDefinition object.
    #[must_use]
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.push((key.into(), value.into()));
        self
    }

    /// Adds an annotation to the CustomResourceDefinition object.
    #[must_use]
    pub fn annotation(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.annotations.push((key.into(), value.into()));
        self
    }
}

/// The plural of a kind as kube-rs and the API server's REST mapper form it: lower case, `s` added, `-y` after a
/// consonant becoming `-ies`, `-s`/`-x`/`-z`/`-ch`/`-sh` taking `-es`.
///
/// ```
/// use kube_informer::object::plural_of;
///
/// assert_eq!(plural_of("Fleet"), "fleets");
/// assert_eq!(plural_of("Policy"), "policies");
/// assert_eq!(plural_of("Gateway"), "gateways");
/// assert_eq!(plural_of("Ingress"), "ingresses");
/// ```
pub fn plural_of(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    let consonant_y = lower.ends_with('y')
        && lower
            .chars()
            .rev()
            .nth(1)
            .is_some_and(|c| !matches!(c, 'a' | 'e' | 'i' | 'o' | 'u'));
    if consonant_y {
        format!("{}ies", &lower[..lower.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"].iter().any(|s| lower.ends_with(s)) {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// Writes a custom resource's root: `apiVersion`, `kind`, `metadata`, `spec` and `status` when there is one.
#[doc(hidden)]
pub fn serialize_root<R, S>(
    metadata: &ObjectMeta,
    spec: &R::Spec,
    status: Option<&R::Status>,
    serializer: S,
) -> Result<S::Ok, S::Error>
where
    R: CustomResource,
    R::Spec: Serialize,
    R::Status: Serialize,
    S: Serializer,
{
    let ar = R::api_resource();
    let mut map = serializer.serialize_map(Some(4 + usize::from(status.is_some())))?;
    map.serialize_entry("apiVersion", &ar.api_version())?;
    map.serialize_entry("kind", &ar.kind)?;
    map.serialize_entry("metadata", metadata)?;
    map.serialize_entry("spec", spec)?;
    if let Some(status) = status {
        map.serialize_entry("status", status)?;
    }
    map.end()
}

/// Reads a custom resource's root: `metadata` (default when absent), `spec` (required), `status` (absent or
/// `null`: none); `apiVersion`, `kind` and unknown fields are skipped.
#[doc(hidden)]
pub fn deserialize_root<'de, Spec, Status, D>(deserializer: D) -> Result<(ObjectMeta, Spec, Option<Status>), D::Error>
where
    Spec: DeserializeOwned,
    Status: DeserializeOwned,
    D: Deserializer<'de>,
{
    struct RootVisitor<Spec, Status>(PhantomData<fn() -> (Spec, Status)>);

    impl<'de, Spec: DeserializeOwned, Status: DeserializeOwned> Visitor<'de> for RootVisitor<Spec, Status> {
        type Value = (ObjectMeta, Spec, Option<Status>);

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a custom resource (metadata, spec, status)")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let (mut metadata, mut spec, mut status) = (None, None, None);
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                match &*key {
                    "metadata" if metadata.is_none() => metadata = Some(map.next_value::<ObjectMeta>()?),
                    "spec" if spec.is_none() => spec = Some(map.next_value::<Spec>()?),
                    "status" if status.is_none() => status = Some(map.next_value::<Option<Status>>()?),
                    "metadata" | "spec" | "status" => {
                        return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            let spec = spec.ok_or_else(|| de::Error::missing_field("spec"))?;
            Ok((metadata.unwrap_or_default(), spec, status.flatten()))
        }
    }

    deserializer.deserialize_map(RootVisitor(PhantomData))
}

/// Declares a custom resource: the root type of a spec and a status struct, with [`Object`](crate::object::Object),
/// [`Resource`], [`CustomResource`] and (namespaced ones)
/// [`NamespacedResource`](crate::object::NamespacedResource) implemented — kube-rs's `#[derive(CustomResource)]`
/// without a procedural macro.
///
/// The root type has public fields `metadata: ObjectMeta`, `spec` and `status: Option<Status>`, a
/// `new(name, spec)`, and serde impls that write `apiVersion` and `kind` (so the object can be applied as it is)
/// and skip them on reading. The kind is the type's name; the plural defaults to [`plural_of`] the kind. With the
/// `schema` feature, `kube_informer::crd::CustomResourceExt` gives the type its CustomResourceDefinition, the schema
/// derived from the spec and status types (`#[derive(schemars::JsonSchema)]`); `crd:` gives the rest of it.
///
/// ```
/// use kube_informer::object::{CrdOptions, CustomResource, Resource};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
/// pub struct BackupSpec {
///     pub schedule: String,
/// }
/// #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
/// pub struct BackupStatus {
///     pub last_run: Option<String>,
/// }
///
/// kube_informer::custom_resource! {
///     /// A scheduled backup.
///     #[derive(Clone, Debug, PartialEq)]
///     pub struct Backup { spec: BackupSpec, status: BackupStatus }
///     group: "ops.example.com", version: "v1", namespaced: true,
///     crd: CrdOptions::default().short_name("bk"),
/// }
///
/// let b = Backup::new("nightly", BackupSpec { schedule: "@daily".into() });
/// assert_eq!(Backup::api_resource().plural, "backups");
/// let json = serde_json::to_value(&b).unwrap();
/// assert_eq!(json["apiVersion"], "ops.example.com/v1");
/// assert_eq!(json["kind"], "Backup");
/// assert_eq!(serde_json::from_value::<Backup>(json).unwrap(), b);
/// assert_eq!(Backup::crd_options().short_names, ["bk"]);
/// ```
///
/// The options, after `namespaced`, in this order, each optional: `plural: "..."`, `crd: <CrdOptions>`. Without
/// `status: Type`, the resource has no status ([`NoStatus`]).
#[macro_export]
macro_rules! custom_resource {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident { spec: $spec:ty $(,)? }
        $($rest:tt)*
    ) => {
        $crate::custom_resource! {
            $(#[$meta])*
            $vis struct $name { spec: $spec, status: $crate::object::NoStatus }
            $($rest)*
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident { spec: $spec:ty, status: $status:ty $(,)? }
        group: $group:expr, version: $version:expr, namespaced: $namespaced:tt
        $(, plural: $plural:expr)? $(, crd: $crd:expr)? $(,)?
    ) => {
        $(#[$meta])*
        $vis struct $name {
            /// Standard metadata.
            pub metadata: $crate::object::ObjectMeta,
            /// The desired state.
            pub spec: $spec,
            /// The observed state.
            pub status: ::std::option::Option<$status>,
        }

        impl $name {
            /// An object named `name` (in no namespace yet) with `spec` and no status.
            #[allow(dead_code)]
            $vis fn new(name: &str, spec: $spec) -> Self {
                $name { metadata: $crate::object::ObjectMeta::named(name), spec, status: None }
            }
        }

        impl $crate::__private::serde::Serialize for $name {
            fn serialize<S: $crate::__private::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                $crate::object::__serialize_root::<Self, S>(&self.metadata, &self.spec, self.status.as_ref(), s)
            }
        }

        impl<'de> $crate::__private::serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__private::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let (metadata, spec, status) = $crate::object::__deserialize_root::<$spec, $status, D>(d)?;
                Ok($name { metadata, spec, status })
            }
        }

        $crate::object!($name);

        impl $crate::object::Resource for $name {
            fn api_resource() -> $crate::object::ApiResource {
                let kind = stringify!($name);
                #[allow(unused_mut, unused_assignments)]
                let mut plural = $crate::object::plural_of(kind);
                $(plural = ::std::string::String::from($plural);)?
                $crate::object::ApiResource::new($group, $version, kind, plural, $namespaced)
            }
        }

        $crate::__namespaced_marker!($name, $namespaced);

        impl $crate::object::CustomResource for $name {
            type Spec = $spec;
            type Status = $status;
            $(fn crd_options() -> $crate::object::CrdOptions {
                $crd
            })?
        }
    };
}

/// Implements [`NamespacedResource`](crate::object::NamespacedResource) when the scope is `true`.
#[doc(hidden)]
#[macro_export]
macro_rules! __namespaced_marker {
    ($ty:ty, true) => {
        impl $crate::object::NamespacedResource for $ty {}
    };
    ($ty:ty, false) => {};
    ($ty:ty, $other:tt) => {};
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{MetaAccessor, NamespacedResource, Resource};

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    struct GadgetSpec {
        size: u32,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    struct GadgetStatus {
        ready: bool,
    }

    crate::custom_resource! {
        /// A gadget.
        #[derive(Clone, Debug, PartialEq)]
        struct Gadget { spec: GadgetSpec, status: GadgetStatus }
        group: "example.com", version: "v1alpha1", namespaced: true, plural: "gadgetry",
    }

    crate::custom_resource! {
        #[derive(Debug)]
        struct Policy { spec: GadgetSpec }
        group: "example.com", version: "v1", namespaced: false,
        crd: CrdOptions::default().short_name("pol"),
    }

    fn namespaced<K: NamespacedResource>() {}

    #[test]
    fn the_root_type_reads_and_writes_what_the_api_server_serves() {
        namespaced::<Gadget>();
        assert_eq!(Gadget::api_resource().plural, "gadgetry");
        assert_eq!(Gadget::api_resource().api_version(), "example.com/v1alpha1");
        let g: Gadget = serde_json::from_value(serde_json::json!({
            "apiVersion": "example.com/v1alpha1", "kind": "Gadget",
            "metadata": {"name": "g", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"size": 3}, "status": null, "unknown": [1, 2]
        }))
        .unwrap();
        assert_eq!(
            (g.metadata.name(), g.spec.size, g.status.as_ref()),
            (Some("g"), 3, None)
        );
        let mut g2 = g.clone();
        g2.status = Some(GadgetStatus { ready: true });
        let json = serde_json::to_value(&g2).unwrap();
        assert_eq!(json["kind"], "Gadget");
        assert_eq!(json["status"]["ready"], true);
        assert_eq!(serde_json::from_value::<Gadget>(json).unwrap(), g2);
        assert!(serde_json::to_value(&g).unwrap().get("status").is_none());

        let e = serde_json::from_value::<Gadget>(serde_json::json!({"metadata": {"name": "g"}})).unwrap_err();
        assert!(e.to_string().contains("missing field `spec`"), "{e}");
        let e = serde_json::from_str::<Gadget>(r#"{"spec": {"size": 1}, "spec": {"size": 2}}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate field `spec`"), "{e}");
    }

    #[test]
    fn a_resource_without_status_has_none_and_cluster_scope() {
        let p = Policy::new("p", GadgetSpec { size: 1 });
        assert_eq!(Policy::api_resource().plural, "policies");
        assert!(!Policy::api_resource().namespaced);
        assert_eq!(Policy::crd_options().short_names, ["pol"]);
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"apiVersion": "example.com/v1", "kind": "Policy",
                                             "metadata": {"name": "p"}, "spec": {"size": 1}})
        );
    }

    #[test]
    fn plurals_follow_the_rest_mapper() {
        for (kind, plural) in [
            ("Fleet", "fleets"),
            ("Policy", "policies"),
            ("Key", "keys"),
            ("Box", "boxes"),
            ("Match", "matches"),
            ("Mesh", "meshes"),
            ("Class", "classes"),
            ("Gateway", "gateways"),
        ] {
            assert_eq!(plural_of(kind), plural, "{kind}");
        }
    }
}
