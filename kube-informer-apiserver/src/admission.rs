//! What the server does to every object written, before the write rules of [`strategy`](super::strategy): drop
//! what the resource's schema does not know (reporting it as `fieldValidation` asks, refusing the write under
//! `Strict`); default a built-in kind as its Go type's defaulting does ([`defaults`](super::defaults)); for a custom
//! resource, apply its schema's defaults and validate it (422); for a CRD, check it.

use serde_json::Value;

use super::crd;
use super::errors::{self, Failure};
use super::field_validation::{self, Directive, Stage};
use super::resource::ResourceSpec;
use super::schema;

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
        if spec.custom
            && let Some(s) = spec.schema.get()
        {
            schema::default(obj, Some(s));
            let mut errs = schema::validate(obj, s);
            if let Some(scale) = &spec.scale {
                errs.extend(scale.validate(obj));
            }
            // Then, as kube-apiserver orders them: the scale subresource's fields (above), the embedded
            // resources, the list types.
            errs.extend(schema::validate_embedded(obj, s));
            errs.extend(schema::validate_list_types(obj, s));
            if !errs.is_empty() {
                let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
                return Err(errors::invalid(&spec.api.group, &spec.api.kind, name, errs));
            }
        }
        if spec.id() == crd::ID {
            crd::check(obj)?;
        }
        Ok(())
    }
}
