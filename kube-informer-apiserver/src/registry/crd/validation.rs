//! What apiextensions-apiserver checks on a CRD (`validation.go`: 422 with its wording) and the [`ResourceSpec`]s a
//! valid one defines: one per version — its schema, subresources, printer columns and selectable fields — the
//! storage version's telling how objects are stored, the others converting to it.

use std::sync::Arc;

use serde_json::Value;

use super::naming::{self, Names};
use super::text;
use crate::api::errors::FieldError;
use crate::registry::conversion;
use crate::registry::printer_column::{ColumnType, PrinterColumn};
use crate::registry::resource::{Conversion, ConversionStrategy, NameRule, ResourceSpec, validate_name};
use crate::registry::scale_subresource::ScaleSubresource;
use kube_informer::object::ApiResource;

/// At most this many selectable fields per version (`MaxSelectableFields`).
const MAX_SELECTABLE_FIELDS: usize = 8;

/// What a valid CRD serves.
#[derive(Debug)]
pub(crate) struct Definition {
    /// The storage version's spec (served or not): objects are stored as it says.
    pub(crate) storage: ResourceSpec,
    /// The served versions' specs, most preferred first.
    pub(crate) served: Vec<ResourceSpec>,
}

/// apimachinery's `IsDNS1035Label`.
fn dns1035(value: &str) -> Result<(), String> {
    const MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    let b = value.as_bytes();
    if b.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b[b.len() - 1] != b'-'
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if ok { Ok(()) } else { Err(MSG.into()) }
}

/// The CRD's versions as resources under `names` (the names it has been given: its accepted names once the naming
/// controller has run), or the field errors kube-apiserver's CRD validation answers with.
pub(crate) fn definition(crd: &Value, names: &Names) -> Result<Definition, Vec<FieldError>> {
    let mut errs = Vec::new();
    let group = text(crd, "/spec/group");
    let scope = text(crd, "/spec/scope");
    let name = text(crd, "/metadata/name");
    let requested = Names::from_value(crd.pointer("/spec/names").unwrap_or(&Value::Null));
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if let Err(m) = validate_name(NameRule::Subdomain, group) {
        errs.push(FieldError::invalid("spec.group", group, &m));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
    check_names(&requested, &mut errs);
    let plural = requested.plural.as_str();
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let namespaced = match scope {
        "Namespaced" => true,
        "Cluster" => false,
        "" => {
            errs.push(FieldError::required("spec.scope", ""));
            false
        }
        other => {
            errs.push(FieldError::not_supported(
                "spec.scope",
                other,
                &["Cluster", "Namespaced"],
            ));
            false
        }
    };
    let strategy = check_conversion(crd, &mut errs);
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let names_json =
        || serde_json::to_string(&versions.iter().map(|v| &v["name"]).collect::<Vec<_>>()).unwrap_or_default();
    let mut seen: Vec<&str> = Vec::new();
    let unique = versions.iter().all(|v| {
        let n = v["name"].as_str().unwrap_or("");
        let fresh = !seen.contains(&n);
        seen.push(n);
        fresh
    });
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            &names_json(),
            "must contain unique version names",
        ));
    }
    if versions.iter().filter(|v| v["storage"] == true).count() != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            &names_json(),
            "must have exactly one version marked as storage version",
        ));
    }
    let storage_name = versions
        .iter()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str())
        .unwrap_or("");
    // Objects may be stored in another version than the one asked for once the CRD has more than one.
    let stored_versions = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    // Or since they were written, once the CRD's spec changed (its generation moved past 1): objects are then
    // defaulted and pruned by today's schemas as they are read.
    let changed = crd.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1) > 1;
    let multi = versions.len() > 1 || stored_versions > 1 || changed;
    let schemas: Vec<(String, Arc<Value>)> = versions
        .iter()
        .filter_map(|v| {
            Some((
                format!("{group}/{}", v["name"].as_str()?),
                Arc::new(v.pointer("/schema/openAPIV3Schema")?.clone()),
            ))
        })
        .collect();
    let mut specs: Vec<(ResourceSpec, bool, Vec<String>)> = Vec::new();
    // Versions of one schema are validated as kube-apiserver's internal CRD holds them: moved to
    // `spec.validation` (`hasIdenticalPerVersionSchema`), where its rules' errors are reported, once.
    let one_schema = schemas.len() == versions.len() && schemas.windows(2).all(|w| w[0].1 == w[1].1);
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let vname = v["name"].as_str().unwrap_or("");
        if let Err(m) = dns1035(vname) {
            errs.push(FieldError::invalid(&format!("{path}.name"), vname, &m));
        }
        let columns = printer_columns(v, &path, &mut errs);
        let scale = v
            .pointer("/subresources/scale")
            .and_then(|sc| scale_subresource(sc, &path, &mut errs));
        let schema = v.pointer("/schema/openAPIV3Schema");
        match schema {
            None => errs.push(FieldError::required(
                &format!("{path}.schema.openAPIV3Schema"),
                "schemas are required",
            )),
            Some(s) => {
                let before = errs.len();
                structural(s, &format!("{path}.schema.openAPIV3Schema"), true, &mut errs);
                super::structural::check(s, &format!("{path}.schema.openAPIV3Schema"), true, &mut errs);
                // The rules are compiled once the schema itself is sound, as kube-apiserver does.
                if errs.len() == before && !(one_schema && i > 0) {
                    let at = if one_schema {
                        "spec.validation.openAPIV3Schema".to_owned()
                    } else {
                        format!("{path}.schema.openAPIV3Schema")
                    };
                    errs.extend(crate::schema::check_rules(s, &at));
                }
            }
        }
        let selectable = selectable_fields(v, schema, &path, &mut errs);
        let deprecated = v["deprecated"] == true;
        let warning = text(v, "/deprecationWarning");
        if !warning.is_empty() {
            if !deprecated {
                errs.push(FieldError::invalid(
                    &format!("{path}.deprecationWarning"),
                    warning,
                    "can only be set for deprecated versions",
                ));
            } else if warning.len() > 256 {
                errs.push(FieldError::invalid(
                    &format!("{path}.deprecationWarning"),
                    warning,
                    "must be <= 256 characters long",
                ));
            }
        }
        if !errs.is_empty() {
            continue;
        }
        let mut spec = ResourceSpec::new(ApiResource::new(group, vname, &names.kind, plural, namespaced));
        if let Some(s) = schema {
            spec = spec.schema(s.clone());
        }
        spec.custom = true;
        if v.pointer("/subresources/status").is_some() {
            spec = spec.with_status_subresource();
        }
        if let Some(scale) = scale {
            spec = spec.with_scale_subresource(scale);
        }
        spec = spec.printer_columns(columns);
        for n in &names.short_names {
            spec = spec.short_name(n);
        }
        for c in &names.categories {
            spec = spec.category(c);
        }
        if !names.singular.is_empty() {
            spec.singular = Some(names.singular.clone());
        }
        if multi {
            spec.conversion = Some(Conversion {
                storage_api_version: format!("{group}/{storage_name}"),
                strategy,
                api_versions: versions
                    .iter()
                    .filter_map(|v| v["name"].as_str())
                    .map(|n| format!("{group}/{n}"))
                    .collect(),
                schemas: schemas.clone(),
            });
        }
        if deprecated {
            spec.deprecation = Some(if warning.is_empty() {
                default_deprecation_warning(crd, vname, &names.kind)
            } else {
                warning.to_owned()
            });
        }
        specs.push((spec, v["served"] == true, selectable));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    // Every version stores the values of every version's selectable fields, in one order, so that any version's
    // spec reads what is stored beside an object; each version accepts its own.
    let mut all: Vec<String> = Vec::new();
    for (_, _, own) in &specs {
        for f in own {
            if !all.contains(f) {
                all.push(f.clone());
            }
        }
    }
    for (spec, _, own) in &mut specs {
        spec.selectable_fields = all.clone();
        if *own != all {
            spec.field_selectable = Some(std::mem::take(own));
        }
    }
    let storage = specs
        .iter()
        .find(|(s, _, _)| s.api.version == storage_name)
        .map(|(s, _, _)| s.clone())
        .ok_or_else(|| {
            vec![FieldError::required(
                "spec.versions",
                "must have exactly one version marked as storage version",
            )]
        })?;
    let mut served: Vec<ResourceSpec> = specs.into_iter().filter(|(_, on, _)| *on).map(|(s, _, _)| s).collect();
    served.sort_by(|a, b| conversion::priority(&a.api.version, &b.api.version));
    Ok(Definition { storage, served })
}

/// `defaultDeprecationWarning`: `<group>/<version> <Kind> is deprecated`, naming the most preferred served version
/// that is newer and not deprecated, if there is one.
fn default_deprecation_warning(crd: &Value, version: &str, kind: &str) -> String {
    let group = text(crd, "/spec/group");
    let mut msg = format!("{group}/{version} {kind} is deprecated");
    let newer = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true && v["deprecated"] != true)
        .filter_map(|v| v["name"].as_str())
        .filter(|v| conversion::priority(version, v) == std::cmp::Ordering::Greater)
        .min_by(|a, b| conversion::priority(a, b));
    if let Some(newer) = newer {
        msg.push_str(&format!("; use {group}/{newer} {kind}"));
    }
    msg
}

/// `ValidateCustomResourceDefinitionNames` plus the names the spec requires.
fn check_names(n: &Names, errs: &mut Vec<FieldError>) {
    for (field, value, mixed) in [
        ("plural", &n.plural, false),
        ("singular", &n.singular, false),
        ("kind", &n.kind, true),
        ("listKind", &n.list_kind, true),
    ] {
        if value.is_empty() {
            continue;
        }
        if let Err(m) = dns1035(&value.to_ascii_lowercase()) {
            let detail = if mixed {
                format!("may have mixed case, but should otherwise match: {m}")
            } else {
                m
            };
            errs.push(FieldError::invalid(&format!("spec.names.{field}"), value, &detail));
        }
    }
    for (key, list) in [("shortNames", &n.short_names), ("categories", &n.categories)] {
        for (i, s) in list.iter().enumerate() {
            if let Err(m) = dns1035(s) {
                errs.push(FieldError::invalid(&format!("spec.names.{key}[{i}]"), s, &m));
            }
        }
    }
    if !n.kind.is_empty() && n.kind == n.list_kind {
        errs.push(FieldError::invalid(
            "spec.names.listKind",
            &n.list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (field, value) in [("plural", &n.plural), ("kind", &n.kind)] {
        if value.is_empty() {
            errs.push(FieldError::required(&format!("spec.names.{field}"), ""));
        }
    }
}

/// `validateCustomResourceConversion` (the paths are those of the internal type kube-apiserver reports).
fn check_conversion(crd: &Value, errs: &mut Vec<FieldError>) -> ConversionStrategy {
    let c = crd.pointer("/spec/conversion");
    let webhook = c.and_then(|c| c.get("webhook")).filter(|w| !w.is_null());
    match c.map_or("None", |c| text(c, "/strategy")) {
        "None" => {
            if webhook.is_some_and(|w| w.get("clientConfig").is_some_and(|c| !c.is_null())) {
                errs.push(FieldError::forbidden(
                    "spec.conversion.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if webhook
                .and_then(|w| w.get("conversionReviewVersions"))
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
            {
                errs.push(FieldError::forbidden(
                    "spec.conversion.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            ConversionStrategy::None
        }
        "Webhook" => {
            let config = webhook.and_then(|w| w.get("clientConfig")).filter(|c| !c.is_null());
            match config {
                None => errs.push(FieldError::required(
                    "spec.conversion.webhookClientConfig",
                    "required when strategy is set to Webhook",
                )),
                Some(cc) if cc.get("url").is_some() == cc.get("service").is_some() => errs.push(FieldError::required(
                    "spec.conversion.webhookClientConfig",
                    "exactly one of url or service is required",
                )),
                Some(_) => {}
            }
            let reviews: Vec<&str> = webhook
                .and_then(|w| w.get("conversionReviewVersions"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if reviews.is_empty() {
                errs.push(FieldError::required("spec.conversion.conversionReviewVersions", ""));
            } else if !reviews.iter().any(|v| matches!(*v, "v1" | "v1beta1")) {
                errs.push(FieldError::invalid(
                    "spec.conversion.conversionReviewVersions",
                    &format!("{reviews:?}"),
                    "must include at least one of v1, v1beta1",
                ));
            }
            ConversionStrategy::Webhook
        }
        "" => {
            errs.push(FieldError::required("spec.conversion.strategy", ""));
            ConversionStrategy::None
        }
        other => {
            errs.push(FieldError::not_supported(
                "spec.conversion.strategy",
                other,
                &["None", "Webhook"],
            ));
            ConversionStrategy::None
        }
    }
}

/// `ValidateCustomResourceSelectableFields`: each `jsonPath` a simple path (no array notation, not into
/// `metadata`) to a string, boolean or integer field of the version's schema, each once, at most 8. Returns the
/// paths as field selectors name them (`spec.color`).
fn selectable_fields(version: &Value, schema: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) -> Vec<String> {
    let declared = version
        .get("selectableFields")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut out: Vec<String> = Vec::new();
    for (i, f) in declared.iter().enumerate() {
        let at = format!("{path}.selectableFields[{i}].jsonPath");
        let p = text(f, "/jsonPath");
        if p.is_empty() {
            errs.push(FieldError::required(&at, ""));
            continue;
        }
        let resolved = match resolve_field_path(p, schema.unwrap_or(&Value::Null)) {
            Ok(r) => r,
            Err(e) => {
                errs.push(FieldError::invalid(&at, p, &format!("is an invalid path: {e}")));
                continue;
            }
        };
        let (segments, leaf) = resolved;
        if segments.first().is_some_and(|s| s == "metadata") {
            errs.push(FieldError::invalid(&at, p, "must not point to fields in metadata"));
        }
        if !matches!(
            leaf.get("type").and_then(Value::as_str),
            Some("string" | "boolean" | "integer")
        ) {
            errs.push(FieldError::invalid(
                &at,
                p,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        let joined = segments.join(".");
        if out.contains(&joined) {
            errs.push(FieldError::duplicate(&at, p));
        } else {
            out.push(joined);
        }
    }
    if out.len() > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(
            &format!("{path}.selectableFields"),
            out.len(),
            MAX_SELECTABLE_FIELDS,
        ));
    }
    out
}

/// A `.a.b` path resolved through a schema's `properties` (or `additionalProperties`): its segments and the leaf's
/// schema; the error is CEL's `ValidFieldPath` wording.
fn resolve_field_path<'s>(p: &str, schema: &'s Value) -> Result<(Vec<String>, &'s Value), String> {
    if p.contains('[') {
        return Err("array notation is not allowed".into());
    }
    let Some(rest) = p.strip_prefix('.') else {
        let first = p.split('.').next().unwrap_or(p);
        return Err(format!("expected [ or . but got: {first}"));
    };
    let mut at = schema;
    let mut segments = Vec::new();
    for seg in rest.split('.') {
        if seg.is_empty() {
            return Err("unexpected end of JSON path".into());
        }
        let next = match at.get("properties").and_then(Value::as_object) {
            Some(props) => props.get(seg),
            None => at.get("additionalProperties").filter(|a| a.is_object()),
        };
        at = next.ok_or_else(|| "does not refer to a valid field".to_owned())?;
        segments.push(seg.to_owned());
    }
    Ok((segments, at))
}

/// The checks of an update: those of [`definition`], plus what may not change — the group and plural always, the
/// scope and kind once the CRD is established — and the versions objects were stored in, which must stay listed.
pub(crate) fn check_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let established = naming::is_true(old, "Established");
    for (pointer, field, always) in [
        ("/spec/group", "spec.group", true),
        ("/spec/names/plural", "spec.names.plural", true),
        ("/spec/scope", "spec.scope", false),
        ("/spec/names/kind", "spec.names.kind", false),
    ] {
        if (always || established) && text(new, pointer) != text(old, pointer) {
            errs.push(FieldError::invalid(field, text(new, pointer), "field is immutable"));
        }
    }
    let listed: Vec<&str> = new
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .collect();
    let stored = old
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, v) in stored.iter().enumerate() {
        let v = v.as_str().unwrap_or("");
        if !listed.contains(&v) {
            errs.push(FieldError::invalid(
                &format!("status.storedVersions[{i}]"),
                v,
                "must appear in spec.versions",
            ));
        }
    }
    errs
}

/// A served version's `additionalPrinterColumns` as table columns (NAME first, as apiextensions-apiserver's table
/// convertor puts it; AGE alone when none are declared), checked as kube-apiserver checks them.
fn printer_columns(version: &Value, path: &str, errs: &mut Vec<FieldError>) -> Vec<PrinterColumn> {
    let declared = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut columns = vec![PrinterColumn::name()];
    if declared.is_empty() {
        columns.push(
            PrinterColumn::json_path("Age", ColumnType::Date, ".metadata.creationTimestamp")
                .unwrap_or_else(|_| PrinterColumn::age()),
        );
        return columns;
    }
    for (j, c) in declared.iter().enumerate() {
        let at = format!("{path}.additionalPrinterColumns[{j}]");
        let name = text(c, "/name");
        if name.is_empty() {
            errs.push(FieldError::required(&format!("{at}.name"), ""));
        }
        let ty = text(c, "/type");
        let column_type = ColumnType::parse(ty);
        if ty.is_empty() {
            errs.push(FieldError::required(&format!("{at}.type"), ""));
        } else if column_type.is_none() {
            errs.push(FieldError::not_supported(
                &format!("{at}.type"),
                ty,
                &["boolean", "date", "integer", "number", "string"],
            ));
        }
        let format = text(c, "/format");
        const FORMATS: [&str; 8] = [
            "byte",
            "date",
            "date-time",
            "double",
            "float",
            "int32",
            "int64",
            "password",
        ];
        if !format.is_empty() && !FORMATS.contains(&format) {
            errs.push(FieldError::not_supported(&format!("{at}.format"), format, &FORMATS));
        }
        let json_path = text(c, "/jsonPath");
        let column = if json_path.is_empty() {
            errs.push(FieldError::required(&format!("{at}.JSONPath"), ""));
            None
        } else {
            match PrinterColumn::json_path(name, column_type.unwrap_or(ColumnType::String), json_path) {
                Ok(col) => Some(col),
                Err(_) => {
                    errs.push(FieldError::invalid(
                        &format!("{at}.JSONPath"),
                        json_path,
                        "must be a simple json path starting with .",
                    ));
                    None
                }
            }
        };
        if let (Some(col), Some(_)) = (column, column_type) {
            let priority = c.get("priority").and_then(Value::as_i64).unwrap_or(0);
            let mut col = col.priority(i32::try_from(priority).unwrap_or(i32::MAX)).format(format);
            if let Some(d) = c.get("description").and_then(Value::as_str) {
                col = col.description(d);
            }
            columns.push(col);
        }
    }
    columns
}

/// A served version's `subresources.scale`, checked as kube-apiserver checks it.
fn scale_subresource(scale: &Value, path: &str, errs: &mut Vec<FieldError>) -> Option<ScaleSubresource> {
    let spec_path = text(scale, "/specReplicasPath");
    let status_path = text(scale, "/statusReplicasPath");
    let before = errs.len();
    for (field, value, root) in [
        ("specReplicasPath", spec_path, ".spec."),
        ("statusReplicasPath", status_path, ".status."),
    ] {
        let at = format!("{path}.subresources.scale.{field}");
        if value.is_empty() {
            errs.push(FieldError::required(&at, ""));
        } else if !value.starts_with(root) || value.contains('[') {
            errs.push(FieldError::invalid(
                &at,
                value,
                &format!("should be a json path under {}", root.trim_end_matches('.')),
            ));
        }
    }
    if errs.len() > before {
        return None;
    }
    let mut scale_subresource = ScaleSubresource::new(spec_path, status_path);
    match text(scale, "/labelSelectorPath") {
        "" => {}
        p if (p.starts_with(".spec.") || p.starts_with(".status.")) && !p.contains('[') => {
            scale_subresource = scale_subresource.label_selector_path(p);
        }
        p => {
            errs.push(FieldError::invalid(
                &format!("{path}.subresources.scale.labelSelectorPath"),
                p,
                "should be a json path under either .spec or .status",
            ));
            return None;
        }
    }
    Some(scale_subresource)
}

/// The structural-schema rules that catch the usual mistakes: the root is an object, and every specified field says
/// its type (unless it is an int-or-string or preserves unknown fields); `metadata` at the root may only constrain
/// `name` and `generateName`.
fn structural(s: &Value, path: &str, root: bool, errs: &mut Vec<FieldError>) {
    let Some(o) = s.as_object() else {
        errs.push(FieldError::invalid(path, "", "must be an object"));
        return;
    };
    let flag = |k: &str| o.get(k).and_then(Value::as_bool) == Some(true);
    let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
    if root && ty != "object" {
        if ty.is_empty() {
            errs.push(FieldError::required(
                &format!("{path}.type"),
                "must not be empty at the root",
            ));
        } else {
            errs.push(FieldError::invalid(
                &format!("{path}.type"),
                ty,
                "must be object at the root",
            ));
        }
    } else if !root
        && ty.is_empty()
        && !flag("x-kubernetes-int-or-string")
        && !flag("x-kubernetes-preserve-unknown-fields")
    {
        errs.push(FieldError::required(
            &format!("{path}.type"),
            "must not be empty for specified object fields",
        ));
    }
    if let Some(Value::Object(props)) = o.get("properties") {
        for (k, p) in props {
            let child = format!("{path}.properties[{k}]");
            if root && k == "metadata" {
                let extra = p
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|mp| mp.keys().any(|m| m != "name" && m != "generateName"));
                if extra {
                    errs.push(FieldError::forbidden(&child, "must not specify anything other than name and generateName, but metadata is implicitly specified"));
                }
            }
            structural(p, &child, false, errs);
        }
    }
    if let Some(items @ Value::Object(_)) = o.get("items") {
        structural(items, &format!("{path}.items"), false, errs);
    } else if ty == "array" {
        errs.push(FieldError::required(&format!("{path}.items"), "must be specified"));
    }
    if let Some(ap @ Value::Object(_)) = o.get("additionalProperties") {
        structural(ap, &format!("{path}.additionalProperties"), false, errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn version(name: &str, served: bool, storage: bool) -> Value {
        json!({"name": name, "served": served, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {
                       "color": {"type": "string"}, "size": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
                       "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}})
    }

    fn crd(versions: Vec<Value>) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                     "versions": versions},
        })
    }

    fn define(c: &Value) -> Result<Definition, Vec<String>> {
        definition(c, &Names::from_value(&c["spec"]["names"]))
            .map_err(|errs| errs.iter().map(|e| format!("{}: {}", e.field, e.message)).collect())
    }

    #[test]
    fn every_version_is_a_resource_stored_in_the_storage_version() {
        let c = crd(vec![
            version("v1beta1", true, false),
            version("v1", true, true),
            version("v2alpha1", false, false),
            version("v2", true, false),
        ]);
        let d = define(&c).unwrap();
        assert_eq!(
            d.storage.api,
            ApiResource::new("example.com", "v1", "Widget", "widgets", true)
        );
        assert!(d.storage.custom);
        let served: Vec<&str> = d.served.iter().map(|s| s.api.version.as_str()).collect();
        assert_eq!(
            served,
            ["v2", "v1", "v1beta1"],
            "most preferred first; v2alpha1 is not served"
        );
        let v2 = &d.served[0];
        let c2 = v2.conversion.as_ref().unwrap();
        assert_eq!(
            (c2.storage_api_version.as_str(), c2.strategy),
            ("example.com/v1", ConversionStrategy::None)
        );
        assert!(
            d.served
                .iter()
                .all(|s| s.short_names == ["wd"] && s.singular.as_deref() == Some("widget"))
        );
        // The storage version need not be served: objects are still stored in it.
        let hidden = crd(vec![version("v1", false, true), version("v2", true, false)]);
        let d = define(&hidden).unwrap();
        assert_eq!(d.storage.api.version, "v1");
        assert_eq!(d.served.len(), 1);
    }

    #[test]
    fn versions_are_checked_as_kube_apiserver_checks_them() {
        let mut dup = crd(vec![version("v1", true, true), version("v1", true, false)]);
        assert_eq!(
            define(&dup).unwrap_err(),
            [r#"spec.versions: Invalid value: "[\"v1\",\"v1\"]": must contain unique version names"#]
        );
        dup["spec"]["versions"][1]["name"] = json!("V2");
        let errs = define(&dup).unwrap_err();
        assert!(
            errs[0].starts_with(
                r#"spec.versions[1].name: Invalid value: "V2": a DNS-1035 label must consist of lower case"#
            ),
            "{errs:?}"
        );
        let two = crd(vec![version("v1", true, true), version("v2", true, true)]);
        assert_eq!(
            define(&two).unwrap_err(),
            [
                r#"spec.versions: Invalid value: "[\"v1\",\"v2\"]": must have exactly one version marked as storage version"#
            ]
        );
        let mut warned = crd(vec![version("v1", true, true)]);
        warned["spec"]["versions"][0]["deprecationWarning"] = json!("old");
        assert_eq!(
            define(&warned).unwrap_err(),
            [r#"spec.versions[0].deprecationWarning: Invalid value: "old": can only be set for deprecated versions"#]
        );
    }

    #[test]
    fn deprecated_versions_warn_and_name_a_newer_one() {
        let mut c = crd(vec![
            version("v1alpha1", true, false),
            version("v1beta1", true, false),
            version("v1", true, true),
        ]);
        c["spec"]["versions"][0]["deprecated"] = json!(true);
        c["spec"]["versions"][1]["deprecated"] = json!(true);
        c["spec"]["versions"][1]["deprecationWarning"] = json!("v1beta1 goes away in 2027");
        let d = define(&c).unwrap();
        let warning = |v: &str| {
            d.served
                .iter()
                .find(|s| s.api.version == v)
                .unwrap()
                .deprecation
                .clone()
        };
        assert_eq!(
            warning("v1alpha1").as_deref(),
            Some("example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget")
        );
        assert_eq!(warning("v1beta1").as_deref(), Some("v1beta1 goes away in 2027"));
        assert_eq!(warning("v1"), None);
        // Nothing newer and not deprecated: the warning names none.
        let mut only = crd(vec![version("v1", true, true)]);
        only["spec"]["versions"][0]["deprecated"] = json!(true);
        assert_eq!(
            define(&only).unwrap().served[0].deprecation.as_deref(),
            Some("example.com/v1 Widget is deprecated")
        );
    }

    // Cases of apiextensions-apiserver's selectable fields validation tests.
    #[test]
    fn selectable_fields_point_at_scalar_fields_of_the_schema() {
        let mut c = crd(vec![version("v1", true, true)]);
        c["spec"]["versions"][0]["selectableFields"] =
            json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.labels.team"}]);
        let d = define(&c).unwrap();
        assert_eq!(
            d.storage.selectable_fields,
            ["spec.color", "spec.size", "spec.labels.team"]
        );
        assert!(d.storage.selectable("spec.color") && !d.storage.selectable("spec.tags"));
        c["spec"]["versions"][0]["selectableFields"] = json!([
            {"jsonPath": ".spec.tags"}, {"jsonPath": ".metadata.name"}, {"jsonPath": ".spec.nope"},
            {"jsonPath": ".spec.tags[0]"}, {"jsonPath": "spec.color"}, {"jsonPath": ".spec.color"},
            {"jsonPath": ".spec.color"}, {}
        ]);
        let errs = define(&c).unwrap_err();
        let f = |i: usize| format!("spec.versions[0].selectableFields[{i}].jsonPath");
        assert_eq!(
            errs,
            [
                format!(
                    r#"{}: Invalid value: ".spec.tags": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#,
                    f(0)
                ),
                format!(
                    r#"{}: Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field"#,
                    f(1)
                ),
                format!(
                    r#"{}: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field"#,
                    f(2)
                ),
                format!(
                    r#"{}: Invalid value: ".spec.tags[0]": is an invalid path: array notation is not allowed"#,
                    f(3)
                ),
                format!(
                    r#"{}: Invalid value: "spec.color": is an invalid path: expected [ or . but got: spec"#,
                    f(4)
                ),
                format!(r#"{}: Duplicate value: ".spec.color""#, f(6)),
                format!("{}: Required value", f(7)),
            ]
        );
    }

    #[test]
    fn versions_declaring_different_selectable_fields_share_one_layout() {
        let mut c = crd(vec![version("v1", true, true), version("v2", true, false)]);
        c["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
        c["spec"]["versions"][1]["selectableFields"] = json!([{"jsonPath": ".spec.size"}, {"jsonPath": ".spec.color"}]);
        let d = define(&c).unwrap();
        for s in std::iter::once(&d.storage).chain(&d.served) {
            assert_eq!(s.selectable_fields, ["spec.color", "spec.size"], "{}", s.api.version);
        }
        let v1 = d.served.iter().find(|s| s.api.version == "v1").unwrap();
        assert!(v1.selectable("spec.color") && !v1.selectable("spec.size"));
        assert!(d.served[0].selectable("spec.size"));
    }

    #[test]
    fn webhook_conversion_needs_its_client_config() {
        let mut c = crd(vec![version("v1", true, true), version("v2", true, false)]);
        c["spec"]["conversion"] = json!({"strategy": "Webhook"});
        assert_eq!(
            define(&c).unwrap_err(),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ]
        );
        c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://conv.example.com/convert"}, "conversionReviewVersions": ["v1"]}});
        let d = define(&c).unwrap();
        assert_eq!(
            d.served[0].conversion.as_ref().unwrap().strategy,
            ConversionStrategy::Webhook
        );
        c["spec"]["conversion"] = json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://x"}}});
        assert_eq!(
            define(&c).unwrap_err(),
            ["spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"]
        );
        c["spec"]["conversion"] = json!({"strategy": "Lazy"});
        assert_eq!(
            define(&c).unwrap_err(),
            [r#"spec.conversion.strategy: Unsupported value: "Lazy": supported values: "None", "Webhook""#]
        );
    }

    #[test]
    fn updates_keep_names_scope_and_stored_versions() {
        let mut old = crd(vec![version("v1", true, true)]);
        old["status"] = json!({"storedVersions": ["v1"], "conditions": [{"type": "Established", "status": "True"}]});
        let mut new = crd(vec![version("v2", true, true)]);
        new["spec"]["scope"] = json!("Cluster");
        new["spec"]["names"]["kind"] = json!("Gadget");
        new["spec"]["group"] = json!("example.org");
        let errs: Vec<String> = check_update(&new, &old)
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect();
        assert_eq!(
            errs,
            [
                r#"spec.group: Invalid value: "example.org": field is immutable"#,
                r#"spec.scope: Invalid value: "Cluster": field is immutable"#,
                r#"spec.names.kind: Invalid value: "Gadget": field is immutable"#,
                r#"status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions"#,
            ]
        );
        // Not yet established: scope and kind may still change.
        old["status"]["conditions"] = json!([]);
        let mut later = crd(vec![version("v1", true, true), version("v2", true, false)]);
        later["spec"]["scope"] = json!("Cluster");
        assert!(check_update(&later, &old).is_empty());
    }
}
