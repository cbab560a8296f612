//! Admission (k8s.io/apiserver's `admission`): what the server does to every object written, before the write
//! rules of [`strategy`](crate::registry::strategy): drop what the resource's schema does not know (reporting it as
//! `fieldValidation` asks, refusing the write under `Strict`: [`field_validation`]); default a built-in kind as its
//! Go type's defaulting does ([`defaults`](crate::registry::defaults)); for a custom resource, apply its schema's
//! defaults (its validation comes after the write rules prepared the object,
//! [`customresource_strategy`](crate::registry::customresource_strategy)); for a CRD, check it; and the
//! ValidatingAdmissionPolicy plugin ([`validating_admission_policy`]).

pub(crate) mod field_validation;
pub(crate) mod validating_admission_policy;

use serde_json::Value;

use field_validation::{Directive, Stage};

use super::schema;
use crate::api::errors::{self, Failure, FieldError};
use crate::registry::crd;
use crate::registry::resource::ResourceSpec;
use crate::registry::store::AdmissionHooks;
use crate::registry::strategy::PatchType;
use crate::schema::type_check::{self, Decoder};

/// The admission the server hands the registry's store ([`Store::new`](crate::registry::Store::new)): a write's
/// whole object admitted quietly where it has no request body of its own, and the ValidatingAdmissionPolicy plugin as
/// every write's validating admission.
pub(crate) const HOOKS: AdmissionHooks = AdmissionHooks {
    admit: |spec, obj| Admission::quiet(spec).admit(obj),
    validate: validating_admission_policy::admit,
};

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
    /// The patch the object is the result of (its type and document), which decides how a type error is answered;
    /// `None` for a body.
    pub(crate) patch: Option<(PatchType, &'a Value)>,
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
            patch: None,
            warnings: Vec::new(),
        }
    }

    /// A built-in kind's object as kube-apiserver's decoders read it into its Go type: a type error is refused
    /// before anything else, as kube-apiserver's decoding fails before validation (and whatever the
    /// `fieldValidation`).
    fn type_check(&self, obj: &Value) -> Result<(), Failure> {
        let spec = self.spec;
        if spec.custom {
            return Ok(());
        }
        let api = &spec.api;
        let api_version = api.api_version();
        let decoder = match self.patch {
            Some((PatchType::Strategic | PatchType::Apply, _)) => Decoder::Unstructured,
            _ => Decoder::Json,
        };
        let Err(mut message) = type_check::check(&api_version, &api.kind, obj, decoder, None) else {
            return Ok(());
        };
        // The JSON decoder meets problems in the body's order: which comes first is worth a second pass.
        if let (Some(body), Decoder::Json) = (self.body, decoder) {
            let order = type_check::positions(&field_validation::document_order(body));
            if let Err(m) = type_check::check(&api_version, &api.kind, obj, decoder, Some(&order)) {
                message = m;
            }
        }
        Err(match self.patch {
            // The create and update handlers' `transformDecodeError`.
            None => errors::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: {message}",
                api.kind, api.version, api.kind
            )),
            // The patch handlers: the patched object (JSON and merge patches) or the patch (strategic merge) is
            // the invalid value.
            Some((PatchType::Json | PatchType::Merge, _)) => {
                let patched = serde_json::to_string(obj).unwrap_or_default();
                errors::invalid("", "", "", vec![FieldError::invalid("patch", &patched, &message)])
            }
            Some((PatchType::Strategic, patch)) => {
                let printed = type_check::go_value(patch);
                errors::invalid("", "", "", vec![FieldError::invalid("patch", &printed, &message)])
            }
            // Server-side apply: the field manager's conversion of the applied object, an error that is no API
            // status (500).
            Some((PatchType::Apply, _)) => {
                let meta = |k: &str| {
                    obj.pointer(&format!("/metadata/{k}"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                };
                errors::internal(format!(
                    "failed to convert new object ({}/{}; {}, Kind={}) to proper version ({api_version}): {message}",
                    meta("namespace"),
                    meta("name"),
                    if api.group.is_empty() {
                        format!("/{}", api.version)
                    } else {
                        api_version.clone()
                    },
                    api.kind
                ))
            }
        })
    }

    /// Admits `obj` (the whole object to be written), changing it as kube-apiserver would.
    pub(crate) fn admit(&mut self, obj: &mut Value) -> Result<(), Failure> {
        let spec = self.spec;
        self.type_check(obj)?;
        if !spec.custom {
            type_check::zero_nulls(&spec.api.api_version(), &spec.api.kind, obj);
        }
        let unknown = spec.prune(obj);
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
        // [`customresource_strategy`](crate::registry::customresource_strategy).
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
