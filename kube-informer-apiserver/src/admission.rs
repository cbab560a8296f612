//! What the server does to every object written, before the write rules of [`strategy`](super::strategy): drop
//! what the resource's schema does not know (reporting it as `fieldValidation` asks, refusing the write under
//! `Strict`); default a built-in kind as its Go type's defaulting does ([`defaults`](super::defaults)); for a custom
//! resource, apply its schema's defaults (its validation comes after the write rules prepared the object,
//! [`customresource_strategy`](super::customresource_strategy)); for a CRD, check it.

use serde_json::Value;

use super::crd;
use super::errors::Failure;
use super::field_validation::{self, Directive, Stage};
use super::resource::ResourceSpec;
use super::schema;
use super::validating_admission_policy;

/// One write's admission: the request's own problems, found while decoding it, and the warnings to answer with.
pub(crate) struct Admission<'a> {
    pub(crate) spec: &'a ResourceSpec,
    pub(crate) directive: Directive,
    pub(crate) stage: Stage,
    /// Problems of the request body itself, already worded (a JSON patch's unknown operation keys).
    pub(crate) worded: Vec<String>,
    /// Keys repeated in the request body.
    pub(crate) duplicates: Vec<String>,
    /// The body, to report a typed object's problems in its order.
    pub(crate) body: Option<&'a [u8]>,
    /// Filled by [`admit`](Self::admit).
    pub(crate) warnings: Vec<String>,
}

impl<'a> Admission<'a> {
    /// An admission that reports nothing (the direct Rust calls).
    pub(crate) fn quiet(spec: &'a ResourceSpec) -> Self {
        Admission {
            spec,
            directive: Directive::Ignore,
            stage: Stage::Decode,
            worded: Vec::new(),
            duplicates: Vec::new(),
            body: None,
            warnings: Vec::new(),
        }
    }

    /// Admits `obj` (the whole object to be written), changing it as kube-apiserver would.
    pub(crate) fn admit(&mut self, obj: &mut Value) -> Result<(), Failure> {
        let spec = self.spec;
        let unknown = field_validation::prune(spec, obj);
        self.warnings = field_validation::judge(
            spec,
            self.directive,
            self.stage,
            std::mem::take(&mut self.worded),
            std::mem::take(&mut self.duplicates),
            unknown,
            self.body,
        )?;
        // Defaulting, as decoding into kube-apiserver's types does: a built-in kind's defaulting functions, a custom
        // resource's schema defaults.
        if let (Some(rules), Some(o)) = (spec.builtin, obj.as_object_mut()) {
            rules.default(o);
        }
        // A custom resource's validation (its schema, rules) runs once the strategy prepared the object:
        // [`customresource_strategy`](super::customresource_strategy).
        if spec.custom
            && let Some(s) = spec.schema.get()
        {
            schema::default(obj, Some(s));
        }
        if spec.id() == crd::ID {
            crd::check(obj)?;
        }
        let id = spec.id();
        if id == validating_admission_policy::POLICIES || id == validating_admission_policy::BINDINGS {
            validating_admission_policy::check(&id, obj)?;
        }
        Ok(())
    }
}
