//! `ResourceSpec`: a resource the embedded server serves, and how (status subresource, selectable fields, names,
//! schema), as data: names, scope, verbs, subresources, and the function values of a kind's rules
//! ([`KindRules`]). This module imports only plain values of the registry (the catalog's [`Entry`], [`KindRules`],
//! [`PrinterColumn`], [`ScaleSubresource`]); the modules that fill a spec import it, never the reverse
//! (`tests/layering.rs` holds it): the catalog builds the default ones
//! ([`ResourceSpec::defaults`], in [`builtin_kinds`](crate::registry::builtin_kinds)), a CRD's versions are built by
//! [`crd`](crate::registry::crd), a version's [`Conversion`] is applied by
//! [`conversion`](crate::registry::conversion), and what a resource's schema decides for a write (pruning, the patch
//! types, the field manager) is [`codec`](crate::registry::codec)'s.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::api::meta::GenerationRule;
use crate::registry::builtin_catalog::Entry;
use crate::registry::kind_rules::KindRules;
use crate::registry::printer_column::PrinterColumn;
use crate::registry::scale_subresource::ScaleSubresource;
use kube_informer::object::ApiResource;

pub use crate::api::names::NameRule;
pub(crate) use crate::api::names::validate_name;

/// An object's schema: none, one given, or a built-in kind's, which Kubernetes publishes and the
/// [`builtin_catalog`](crate::registry::builtin_catalog) entry reads from the generated data the first time it is
/// needed (starting a server inlines none of them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum SchemaSlot {
    #[default]
    None,
    Given(Arc<Value>),
    Builtin(&'static Entry),
}

impl SchemaSlot {
    /// The schema, if any.
    pub(crate) fn get(&self) -> Option<&Value> {
        match self {
            SchemaSlot::None => None,
            SchemaSlot::Given(v) => Some(v),
            SchemaSlot::Builtin(entry) => entry.schema(),
        }
    }
}

/// How a CRD converts between its versions (`spec.conversion.strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConversionStrategy {
    /// Only `apiVersion` changes.
    None,
    /// A webhook converts; the embedded server calls none.
    Webhook,
}

/// How the objects of a CRD are read and written when they may not match the version asked for: set on the spec of
/// every version of a CRD that has more than one version (declared, or stored at some time) or whose spec changed
/// since it was created. Without it, objects are served exactly as stored. Data; the reading and writing through it
/// is [`conversion`](crate::registry::conversion)'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conversion {
    /// The `apiVersion` objects are stored with from now on (`example.com/v1`).
    pub(crate) storage_api_version: String,
    pub(crate) strategy: ConversionStrategy,
    /// The `apiVersion` of every version the CRD declares, served or not.
    pub(crate) api_versions: Vec<String>,
    /// The schema of each version, by `apiVersion`: an object read back is defaulted by the one of the version it
    /// is stored in.
    pub(crate) schemas: Vec<(String, Arc<Value>)>,
}

/// The resources whose kube-apiserver strategy allows create-on-update (`AllowCreateOnUpdate() bool { return true }`
/// in `pkg/registry/…/strategy.go`).
const CREATE_ON_UPDATE: [&str; 11] = [
    "endpoints",
    "events",
    "events.events.k8s.io",
    "leases.coordination.k8s.io",
    "limitranges",
    "runtimeclasses.node.k8s.io",
    "services",
    "roles.rbac.authorization.k8s.io",
    "clusterroles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
];

/// A resource served by [`ApiServer`](crate::ApiServer): its [`ApiResource`] plus what the server needs to know
/// to serve it like kube-apiserver does.
///
/// ```
/// use kube_informer::object::ApiResource;
/// use kube_informer_apiserver::ResourceSpec;
///
/// let widgets = ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true))
///     .with_status_subresource()
///     .selectable_field("spec.color")
///     .short_name("wd");
/// assert_eq!(widgets.api_resource().plural, "widgets");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceSpec {
    pub(crate) api: ApiResource,
    /// `…/{name}/status` exists: main-resource writes keep the stored `.status`, status writes change only it,
    /// and a create drops `.status`.
    pub(crate) status_subresource: bool,
    /// `…/{name}/scale` exists, reading and writing replicas at these paths.
    pub(crate) scale: Option<ScaleSubresource>,
    /// Field paths accepted by `fieldSelector` besides `metadata.name` and `metadata.namespace` (a CRD's
    /// `selectableFields`, a pod's `spec.nodeName`).
    pub(crate) selectable_fields: Vec<String>,
    /// Field labels a built-in kind's `GetAttrs` computes rather than reads as named: (label, JSON path it reads,
    /// the value when the path is absent — Go's zero value printed, `false` or `0`).
    pub(crate) field_label_sources: Vec<(&'static str, &'static str, &'static str)>,
    pub(crate) short_names: Vec<String>,
    /// Groupings this resource belongs to in discovery (`all`, which `kubectl get all` lists), as a CRD's
    /// `names.categories`.
    pub(crate) categories: Vec<String>,
    pub(crate) name_rule: NameRule,
    /// When `metadata.generation` is set and bumped.
    pub(crate) generation: GenerationRule,
    /// The object's OpenAPI v3 schema, as a CRD's `openAPIV3Schema` holds it: one structural tree, inlined (no
    /// `$ref`), which may carry the extensions kube-apiserver publishes (`x-kubernetes-patch-merge-key`,
    /// `x-kubernetes-patch-strategy`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
    /// `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-int-or-string`, `x-kubernetes-embedded-resource`).
    /// `None`: nothing is known of the object's shape beyond its metadata.
    pub(crate) schema: SchemaSlot,
    /// Served as a custom resource (a CRD's): the schema is validated (422) and its defaults applied, nulls the
    /// schema does not allow are dropped, and strategic merge patches are refused.
    pub(crate) custom: bool,
    /// The singular name discovery gives (a CRD's `names.singular`); the kind in lower case when `None`.
    pub(crate) singular: Option<String>,
    /// What kube-apiserver does to objects of this built-in kind on their way to storage (defaulting, the registry
    /// strategy's preparation, a service's allocations): set for the default resources, `None` otherwise.
    pub(crate) builtin: Option<&'static KindRules>,
    /// The columns of the `Table` answer (`kubectl get`), in order; empty: NAME and AGE.
    pub(crate) printer_columns: Vec<PrinterColumn>,
    /// Set on a served version of a CRD that is not its storage version: objects are converted on their way in and
    /// out ([`conversion`](crate::registry::conversion)). `None`: objects are stored in this version.
    pub(crate) conversion: Option<Conversion>,
    /// The `Warning` every request of this version gets (a CRD version marked `deprecated`).
    pub(crate) deprecation: Option<String>,
    /// The fields this version accepts in a field selector, when its CRD's versions declare different
    /// `selectableFields`: `selectable_fields` then lists those of every version, in the same order for all, so that
    /// each version reads the same values stored beside an object. `None`: `selectable_fields`.
    pub(crate) field_selectable: Option<Vec<String>>,
    /// Its CRD is being deleted: creates are refused (405) and every write lets the CRD's cleanup go on.
    pub(crate) terminating: bool,
    /// A built-in resource's entry in the [`builtin_catalog`](crate::registry::builtin_catalog): the verbs and subresources kube-apiserver serves for
    /// it (discovery lists them, other methods get 405) and its storage version hash. `None`: every verb, and the
    /// `status` and `scale` subresources as set.
    pub(crate) catalog: Option<&'static Entry>,
    /// A DELETE answers the object as it was deleted, not a `Status` (a registry's `ReturnDeletedObject`).
    pub(crate) returns_deleted_object: bool,
}

impl ResourceSpec {
    /// A resource without status subresource, extra selectable fields or short names; names are DNS subdomains;
    /// generations counted as for a custom resource ([`GenerationRule::Spec`]).
    pub fn new(api: ApiResource) -> Self {
        ResourceSpec {
            api,
            status_subresource: false,
            scale: None,
            selectable_fields: Vec::new(),
            field_label_sources: Vec::new(),
            short_names: Vec::new(),
            categories: Vec::new(),
            name_rule: NameRule::Subdomain,
            generation: GenerationRule::Spec,
            schema: SchemaSlot::None,
            custom: false,
            singular: None,
            builtin: None,
            printer_columns: Vec::new(),
            conversion: None,
            deprecation: None,
            field_selectable: None,
            terminating: false,
            catalog: None,
            returns_deleted_object: false,
        }
    }

    /// A DELETE answers the deleted object (as it was last stored) instead of a `Success` `Status`, as
    /// kube-apiserver's storages of pods, services, namespaces, service accounts, persistent volumes and claims and
    /// the storage.k8s.io kinds do (`ReturnDeletedObject`). An object that finalizers keep is answered either way.
    ///
    /// ```
    /// use kube_informer::object::ApiResource;
    /// use kube_informer_apiserver::ResourceSpec;
    ///
    /// let widgets = ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true))
    ///     .delete_returns_object();
    /// assert!(widgets.returns_deleted_object());
    /// ```
    #[must_use]
    pub fn delete_returns_object(mut self) -> Self {
        self.returns_deleted_object = true;
        self
    }

    /// True when a DELETE answers the deleted object.
    pub fn returns_deleted_object(&self) -> bool {
        self.returns_deleted_object
    }

    /// True when kube-apiserver serves `verb` (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`) on this resource: every verb but for a built-in resource whose catalog says otherwise
    /// (no `deletecollection` of namespaces, only `get` and `list` of component statuses).
    pub(crate) fn serves(&self, verb: &str) -> bool {
        self.catalog.is_none_or(|e| e.verbs.iter().any(|v| v == verb))
    }

    /// The kind's strategy allows create-on-update (`AllowCreateOnUpdate`): a PUT of an object that does not exist
    /// creates it (201), after the same authorization (`create` too) and escalation checks as a POST. True for the
    /// built-in kinds whose kube-apiserver 1.34 strategy says so; never for custom resources (the CRD strategy's
    /// `false`).
    pub(crate) fn allows_create_on_update(&self) -> bool {
        self.catalog.is_some() && CREATE_ON_UPDATE.contains(&self.id().as_str())
    }

    /// True when `…/{name}/{sub}` exists: a built-in resource's catalog subresources, or the `status` and `scale`
    /// subresources set.
    pub(crate) fn has_subresource(&self, sub: &str) -> bool {
        match self.catalog {
            Some(e) => e.subresource(sub).is_some(),
            None => (sub == "status" && self.status_subresource) || (sub == "scale" && self.scale.is_some()),
        }
    }

    /// True when `verb` is served on the subresource `sub` (`get`, `update` and `patch` of `status` and `scale`).
    pub(crate) fn serves_on(&self, sub: &str, verb: &str) -> bool {
        match self.catalog.and_then(|e| e.subresource(sub)) {
            Some(s) => s.verbs.iter().any(|v| v == verb),
            None => self.has_subresource(sub) && matches!(verb, "get" | "update" | "patch"),
        }
    }

    /// Adds the `status` subresource.
    #[must_use]
    pub fn with_status_subresource(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    /// Adds the `scale` subresource (`…/{name}/scale`, an `autoscaling/v1` `Scale`, what `kubectl scale` and a
    /// HorizontalPodAutoscaler use), reading and writing the replicas where `scale` says.
    #[must_use]
    pub fn with_scale_subresource(mut self, scale: ScaleSubresource) -> Self {
        self.scale = Some(scale);
        self
    }

    /// The scale subresource, if the resource has one.
    pub fn scale_subresource(&self) -> Option<&ScaleSubresource> {
        self.scale.as_ref()
    }

    /// Accepts `path` (dot-separated, e.g. `spec.nodeName`) in field selectors.
    #[must_use]
    pub fn selectable_field(mut self, path: &str) -> Self {
        self.selectable_fields.push(path.to_owned());
        self
    }

    /// Adds a short name to discovery (`cm`).
    #[must_use]
    pub fn short_name(mut self, name: &str) -> Self {
        self.short_names.push(name.to_owned());
        self
    }

    /// Adds the resource to a category of discovery (`all`: `kubectl get all` lists it), as a CRD's
    /// `names.categories` does.
    ///
    /// ```
    /// use kube_informer::object::ApiResource;
    /// use kube_informer_apiserver::ResourceSpec;
    ///
    /// let widgets = ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true)).category("all");
    /// assert_eq!(widgets.categories(), ["all"]);
    /// ```
    #[must_use]
    pub fn category(mut self, name: &str) -> Self {
        if !self.categories.iter().any(|c| c == name) {
            self.categories.push(name.to_owned());
        }
        self
    }

    /// The categories the resource belongs to.
    pub fn categories(&self) -> &[String] {
        &self.categories
    }

    /// Sets the name validation rule.
    #[must_use]
    pub fn names(mut self, rule: NameRule) -> Self {
        self.name_rule = rule;
        self
    }

    /// Sets when `metadata.generation` is set and bumped (default [`GenerationRule::Spec`], as for every custom
    /// resource).
    #[must_use]
    pub fn generation(mut self, rule: GenerationRule) -> Self {
        self.generation = rule;
        self
    }

    /// When `metadata.generation` is set and bumped.
    pub fn generation_rule(&self) -> GenerationRule {
        self.generation
    }

    /// Sets the object's OpenAPI v3 schema: a structural schema of the whole object, inlined as a CRD's
    /// `openAPIV3Schema` is (no `$ref`), with the `x-kubernetes-*` extensions kube-apiserver publishes where they
    /// apply. A schema that declares strategic merge keys or strategies (`x-kubernetes-patch-merge-key`,
    /// `x-kubernetes-patch-strategy`, as Kubernetes' own types do) makes the resource accept strategic merge patches,
    /// applied as [`strategic_merge`](crate::strategic_merge) describes; without them the server answers a
    /// strategic merge patch 415, as kube-apiserver answers it for a custom resource.
    ///
    /// ```
    /// use kube_informer::object::ApiResource;
    /// use kube_informer_apiserver::ResourceSpec;
    ///
    /// let widgets = ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true)).schema(
    ///     serde_json::json!({
    ///         "type": "object",
    ///         "properties": {"spec": {"type": "object", "properties": {"color": {"type": "string"}}}},
    ///     }),
    /// );
    /// assert!(widgets.object_schema().is_some());
    /// ```
    #[must_use]
    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = SchemaSlot::Given(Arc::new(schema));
        self
    }

    /// The object's OpenAPI v3 schema, if one was given.
    pub fn object_schema(&self) -> Option<&Value> {
        self.schema.get()
    }

    /// Sets the columns of the server-side `Table` that `kubectl get` prints (`-o wide` adds those of priority
    /// above 0), in order: what a CRD's `additionalPrinterColumns` declares, or kube-apiserver's built-in printers
    /// compute. Without any, a table has NAME and AGE.
    ///
    /// ```
    /// use kube_informer::object::ApiResource;
    /// use kube_informer_apiserver::{ColumnType, PrinterColumn, ResourceSpec};
    ///
    /// let widgets = ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true))
    ///     .printer_columns(vec![
    ///         PrinterColumn::name(),
    ///         PrinterColumn::json_path("Color", ColumnType::String, ".spec.color").unwrap(),
    ///         PrinterColumn::age(),
    ///     ]);
    /// assert_eq!(widgets.table_columns()[1].column_name(), "Color");
    /// ```
    #[must_use]
    pub fn printer_columns(mut self, columns: Vec<PrinterColumn>) -> Self {
        self.printer_columns = columns;
        self
    }

    /// The columns of the resource's `Table`: those set, or NAME and AGE.
    pub fn table_columns(&self) -> Cow<'_, [PrinterColumn]> {
        if self.printer_columns.is_empty() {
            Cow::Owned(vec![PrinterColumn::name(), PrinterColumn::age()])
        } else {
            Cow::Borrowed(&self.printer_columns)
        }
    }

    /// The resource.
    pub fn api_resource(&self) -> &ApiResource {
        &self.api
    }

    /// True when the resource has a status subresource.
    pub fn has_status_subresource(&self) -> bool {
        self.status_subresource
    }

    /// The singular name (`configmap`).
    pub(crate) fn singular(&self) -> String {
        self.singular
            .clone()
            .unwrap_or_else(|| self.api.kind.to_ascii_lowercase())
    }

    /// The key the server files this resource under: `plural.group` (`plural` for the core group).
    pub(crate) fn id(&self) -> String {
        self.api.qualified_name()
    }

    /// True when `field` may appear in a field selector.
    pub(crate) fn selectable(&self, field: &str) -> bool {
        let declared = self.field_selectable.as_ref().unwrap_or(&self.selectable_fields);
        field == "metadata.name" || field == "metadata.namespace" || declared.iter().any(|f| f == field)
    }
}

impl From<ApiResource> for ResourceSpec {
    /// [`ResourceSpec::new`].
    fn from(api: ApiResource) -> Self {
        ResourceSpec::new(api)
    }
}

impl crate::storage::store::Spec for ResourceSpec {
    fn id(&self) -> String {
        ResourceSpec::id(self)
    }
    fn group_and_plural(&self) -> (&str, &str) {
        (&self.api.group, &self.api.plural)
    }
    fn version(&self) -> &str {
        &self.api.version
    }
    fn custom(&self) -> bool {
        self.custom
    }
    fn selectable_fields(&self) -> &[String] {
        &self.selectable_fields
    }
    fn field_label_source(&self, label: &str) -> Option<(&str, &str)> {
        self.field_label_sources
            .iter()
            .find(|(l, ..)| *l == label)
            .map(|(_, path, default)| (*path, *default))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_dns_names_like_apimachinery() {
        for ok in ["a", "a-b", "a.b", "0abc", "x".repeat(253).as_str()] {
            assert!(validate_name(NameRule::Subdomain, ok).is_ok(), "{ok}");
        }
        for bad in ["", "A", "a_b", "-a", "a-", "a..b", ".a", "a.", "x".repeat(254).as_str()] {
            assert!(validate_name(NameRule::Subdomain, bad).is_err(), "{bad}");
        }
        assert!(validate_name(NameRule::Label, "a.b").is_err());
        assert!(validate_name(NameRule::Label, &"x".repeat(64)).is_err());
        assert!(validate_name(NameRule::Label, "kube-system").is_ok());
        assert!(validate_name(NameRule::PathSegment, "system:controller:x").is_ok());
        assert_eq!(
            validate_name(NameRule::PathSegment, ".."),
            Err("may not be '..'".into())
        );
        assert_eq!(
            validate_name(NameRule::PathSegment, "a/b"),
            Err("may not contain '/'".into())
        );
    }

    #[test]
    fn defaults_cover_the_core_resources() {
        let ids: Vec<String> = ResourceSpec::defaults().iter().map(ResourceSpec::id).collect();
        for id in [
            "configmaps",
            "secrets",
            "namespaces",
            "events",
            "leases.coordination.k8s.io",
        ] {
            assert!(ids.iter().any(|i| i == id), "{id}");
        }
        let pods = ResourceSpec::defaults()
            .into_iter()
            .find(|s| s.api.plural == "pods")
            .unwrap();
        assert!(pods.selectable("spec.nodeName") && pods.selectable("metadata.name") && !pods.selectable("spec.x"));
    }
}
