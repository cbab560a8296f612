//! What a resource's schema decides for its objects on a write, as kube-apiserver's per-resource request scope holds
//! it (the codec, the field manager, the patch types its handler accepts): pruning by the schema as decoding through
//! its codec does, the field manager of its writes, and the patch media types it takes (strategic merge only with a
//! schema that says how). Methods of [`ResourceSpec`], which stays data: it imports none of the pure libraries
//! ([`schema`], [`patch`](crate::patch)) whose work this is.

use serde_json::Value;

use crate::api::errors::{self, Failure};
use crate::patch::managed_fields::{FieldManager, Schema, Subresource};
use crate::patch::strategic_merge;
use crate::registry::resource::ResourceSpec;
use crate::schema::{self, FieldPath};

impl ResourceSpec {
    /// The field manager of this resource's writes through its main endpoint or `subresource`: its schema, kind and
    /// versions.
    pub(crate) fn field_manager(&self, subresource: Subresource) -> FieldManager<'_> {
        FieldManager {
            schema: Schema::new(self.object_schema(), self.custom),
            api_version: self.api.api_version(),
            kind: &self.api.kind,
            subresource,
            status_subresource: self.status_subresource,
            builtin: self.builtin.is_some(),
            other_versions: self.conversion.as_ref().map_or(&[][..], |c| c.api_versions.as_slice()),
        }
    }

    /// Drops what this resource's schema does not know from `obj` (a whole object), as decoding through its codec
    /// does; returns the dropped paths in the order kube-apiserver reports them (`fieldValidation`) for a custom
    /// resource: metadata first, then the schema's (sorted), then embedded resources' metadata. Nothing happens
    /// without a schema.
    pub(crate) fn prune(&self, obj: &mut Value) -> Vec<String> {
        let Some(schema) = self.schema.get() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some(meta) = obj.get_mut("metadata") {
            out.extend(schema::prune_object_meta(meta, &FieldPath::default().child("metadata")));
        }
        out.extend(schema::prune(obj, Some(schema), true));
        if self.custom {
            schema::prune_non_nullable_nulls(obj, Some(schema));
        }
        out.extend(schema::coerce_embedded_metadata(obj, Some(schema)));
        out
    }

    /// The schema, if it carries strategic merge information (as the built-in kinds' do) and the resource is not a
    /// custom resource (whose merge keys kube-apiserver never reads): the resource accepts
    /// `application/strategic-merge-patch+json`.
    pub(crate) fn strategic_merge_schema(&self) -> Option<&Value> {
        self.schema
            .get()
            .filter(|s| !self.custom && strategic_merge::has_strategy(s))
    }

    /// The media types a PATCH of this resource accepts, in the order kube-apiserver lists them (its OpenAPI
    /// documents and its 415): strategic merge patch only with [`strategic_merge_schema`](Self::strategic_merge_schema).
    pub(crate) fn patch_types(&self) -> Vec<&'static str> {
        let mut types = vec!["application/json-patch+json", "application/merge-patch+json"];
        if self.strategic_merge_schema().is_some() {
            types.push("application/strategic-merge-patch+json");
        }
        types.push("application/apply-patch+yaml");
        types
    }

    /// 415 for a PATCH whose `Content-Type` the resource does not take: kube-apiserver lists the patch types it
    /// serves ([`ResourceSpec::patch_types`]; a custom resource's omit strategic merge patch).
    pub(crate) fn unsupported_patch_type(&self) -> Failure {
        errors::unsupported_body_type(&self.patch_types())
    }
}
