//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): the resource itself, the checks kube-apiserver makes on a
//! CRD (422 with its wording), the status its controllers give an accepted one (`NamesAccepted`, `Established`),
//! and the [`ResourceSpec`]s a CRD defines — the served version's schema, names, scope, short names, categories and
//! status subresource — which the server registers while the CRD exists.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::errors::{self, Failure, FieldError};
use super::managed_fields::{DIRECT_FIELD_MANAGER, SERVER};
use super::printer_column::{ColumnType, PrinterColumn};
use super::printers;
use super::resource::{NameRule, ResourceSpec, validate_name};
use super::scale::ScaleSubresource;
use super::store::{ListQuery, Store, StoredObject};
use super::strategy;
use crate::object::ApiResource;
use crate::object::time::format_rfc3339;

/// The group of CRDs.
pub(crate) const GROUP: &str = "apiextensions.k8s.io";
/// `customresourcedefinitions.apiextensions.k8s.io`: the store id of CRDs.
pub(crate) const ID: &str = "customresourcedefinitions.apiextensions.k8s.io";

/// The CRD resource, served by every server as kube-apiserver does.
pub(crate) fn resource() -> ResourceSpec {
    ResourceSpec::new(ApiResource::new(
        GROUP,
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ))
    .with_status_subresource()
    .short_name("crd")
    .short_name("crds")
    .category("api-extensions")
    .with_builtin_rules()
    .printer_columns(printers::default_convertor())
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

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The CRD's served versions as resources, with the storage version's name; or the field errors kube-apiserver's
/// CRD validation answers with.
pub(crate) fn specs(crd: &Value) -> Result<Vec<ResourceSpec>, Vec<FieldError>> {
    let mut errs = Vec::new();
    let group = text(crd, "/spec/group");
    let plural = text(crd, "/spec/names/plural");
    let kind = text(crd, "/spec/names/kind");
    let scope = text(crd, "/spec/scope");
    let name = text(crd, "/metadata/name");
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    } else if let Err(m) = validate_name(NameRule::Subdomain, group) {
        errs.push(FieldError::invalid("spec.group", group, &m));
    }
    if plural.is_empty() {
        errs.push(FieldError::required("spec.names.plural", ""));
    } else if let Err(m) = validate_name(NameRule::Label, plural) {
        errs.push(FieldError::invalid("spec.names.plural", plural, &m));
    }
    let singular = text(crd, "/spec/names/singular");
    if !singular.is_empty() {
        if let Err(m) = validate_name(NameRule::Label, singular) {
            errs.push(FieldError::invalid("spec.names.singular", singular, &m));
        }
    }
    if kind.is_empty() {
        errs.push(FieldError::required("spec.names.kind", ""));
    }
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
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        errs.push(FieldError::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    } else if versions.iter().filter(|v| v["storage"] == true).count() != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            &serde_json::to_string(&versions.iter().map(|v| &v["name"]).collect::<Vec<_>>()).unwrap_or_default(),
            "must have exactly one version marked as storage version",
        ));
    }
    let mut out = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let vname = v["name"].as_str().unwrap_or("");
        if vname.is_empty() {
            errs.push(FieldError::required(&format!("{path}.name"), ""));
        } else if let Err(m) = validate_name(NameRule::Label, vname) {
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
            Some(s) => structural(s, &format!("{path}.schema.openAPIV3Schema"), true, &mut errs),
        }
        if v["served"] != true || !errs.is_empty() {
            continue;
        }
        let mut spec = ResourceSpec::new(ApiResource::new(group, vname, kind, plural, namespaced));
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
        for key in ["shortNames", "categories"] {
            for n in crd
                .pointer(&format!("/spec/names/{key}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(n) = n.as_str() {
                    spec = if key == "shortNames" {
                        spec.short_name(n)
                    } else {
                        spec.category(n)
                    };
                }
            }
        }
        if !singular.is_empty() {
            spec.singular = Some(singular.to_owned());
        }
        out.push(spec);
    }
    // The storage version first: it is the one served (other versions are not, yet).
    let storage = versions
        .iter()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str())
        .unwrap_or("");
    out.sort_by_key(|s| s.api.version != storage);
    if errs.is_empty() { Ok(out) } else { Err(errs) }
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

/// Refuses an invalid CRD with kube-apiserver's 422.
pub(crate) fn check(crd: &Value) -> Result<Vec<ResourceSpec>, Failure> {
    specs(crd).map_err(|errs| errors::invalid(GROUP, "CustomResourceDefinition", text(crd, "/metadata/name"), errs))
}

/// The status kube-apiserver's controllers give a CRD whose names are free: `acceptedNames` (with the singular
/// and list kind defaulted), `NamesAccepted` and `Established` true, `storedVersions` holding the storage version.
/// `None` when the status already says so.
pub(crate) fn accepted_status(crd: &Value) -> Option<Value> {
    let names = crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({}));
    let mut accepted = names.clone();
    let kind = text(crd, "/spec/names/kind").to_owned();
    if text(&accepted, "/singular").is_empty() {
        accepted["singular"] = json!(kind.to_ascii_lowercase());
    }
    if text(&accepted, "/listKind").is_empty() {
        accepted["listKind"] = json!(format!("{kind}List"));
    }
    let storage: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == true)
        .map(|v| v["name"].clone())
        .collect();
    let mut stored: Vec<Value> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    let established = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Established" && c["status"] == "True"));
    if established
        && crd.pointer("/status/acceptedNames") == Some(&accepted)
        && crd.pointer("/status/storedVersions") == Some(&Value::Array(stored.clone()))
    {
        return None;
    }
    let now = format_rfc3339(SystemTime::now());
    Some(json!({
        "acceptedNames": accepted,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"},
        ],
        "storedVersions": stored,
    }))
}

/// Brings the server in line with its CRDs after one was written: each gets its accepted status (a second write,
/// as kube-apiserver's controllers make it), the resources they define are registered (or updated), and those
/// whose CRD is gone are removed with their objects (watchers get the DELETED events, then their stream ends).
pub(crate) fn sync(store: &Store) {
    let (crd_spec, crds) = {
        let g = store.lock();
        let Some(spec) = g.spec(ID) else {
            return;
        };
        let all = |_: &StoredObject| true;
        let q = ListQuery {
            namespace: None,
            at: g.rev(),
            after: None,
            limit: 0,
            filter: &all,
            count_remaining: false,
        };
        (spec, g.list(ID, &q).items)
    };
    let mut desired: Vec<ResourceSpec> = Vec::new();
    for o in &crds {
        let v = o.to_value();
        if let Some(status) = accepted_status(&v) {
            let mut with_status = v.clone();
            with_status["status"] = status;
            // A concurrent write wins; the next sync catches up.
            let _ = strategy::update(
                store,
                &crd_spec,
                None,
                &o.name,
                with_status,
                true,
                false,
                SERVER,
                &mut |_| {},
            );
        }
        if let Some(first) = specs(&v).ok().and_then(|s| s.into_iter().next()) {
            desired.push(first);
        }
    }
    let mut g = store.lock();
    for served in g.specs().into_iter().filter(|s| s.custom) {
        if !desired.iter().any(|d| d.id() == served.id()) {
            g.unregister(&served.id());
        }
    }
    for d in desired {
        if g.spec(&d.id()).as_deref() != Some(&d) {
            g.register(d);
        }
    }
    drop(g);
    store.notify();
}

/// Splits a manifest into its documents: YAML (`---` between documents) or JSON.
pub(crate) fn documents(manifest: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let flush = |text: &str, out: &mut Vec<Value>| -> Result<(), String> {
        if text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        {
            return Ok(());
        }
        let v: Value = serde_saphyr::from_str(text).map_err(|e| format!("error decoding YAML: {e}"))?;
        match v {
            Value::Null => {}
            Value::Object(_) => out.push(v),
            _ => return Err("a manifest document must be an object".to_owned()),
        }
        Ok(())
    };
    for line in manifest.lines() {
        if line.starts_with("---") {
            flush(&current, &mut out)?;
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    flush(&current, &mut out)?;
    Ok(out)
}

/// Creates the CRD `crd`, or replaces the spec of the one with its name (`kubectl apply`'s outcome), then syncs.
pub(crate) fn install(store: &Store, crd: Value) -> Result<String, Failure> {
    if crd.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
        return Err(errors::bad_request(format!(
            "not a CustomResourceDefinition: kind {:?}",
            crd.get("kind").and_then(Value::as_str).unwrap_or("")
        )));
    }
    let spec = store.lock().spec(ID).ok_or_else(errors::no_such_path)?;
    let mut crd = crd;
    super::admission::Admission::quiet(&spec).admit(&mut crd)?;
    let name = text(&crd, "/metadata/name").to_owned();
    let exists = store.lock().get(ID, &name).is_some();
    if exists {
        if let Some(m) = crd.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        strategy::update(
            store,
            &spec,
            None,
            &name,
            crd,
            false,
            false,
            DIRECT_FIELD_MANAGER,
            &mut |_| {},
        )?;
    } else {
        strategy::create(store, &spec, None, crd, false, DIRECT_FIELD_MANAGER, &mut |_| {})?;
    }
    sync(store);
    Ok(name)
}

impl super::ApiServer {
    /// Installs the CustomResourceDefinitions of a manifest (YAML, several documents allowed, or JSON) as `kubectl
    /// apply -f` would — created, or their spec replaced — and returns their names. When it returns, each CRD is
    /// `Established` and its resources are served (discovery, OpenAPI, CRUD, watch, schema validation).
    ///
    /// # Errors
    /// [`Error::Api`](crate::Error::Api) with kube-apiserver's answer (422 for an invalid CRD, 400 for a document
    /// that is not a CRD or not YAML/JSON).
    pub fn install_crd(&self, manifest: &str) -> Result<Vec<String>, crate::Error> {
        let docs = documents(manifest).map_err(|m| crate::Error::Api(errors::bad_request(m)))?;
        docs.into_iter()
            .map(|d| install(&self.shared().store, d).map_err(crate::Error::Api))
            .collect()
    }
}

/// The CRD manifests of a folder: `.yaml`, `.yml` and `.json` files (not recursing), in name order; documents of
/// other kinds are left out.
pub(crate) fn manifests_in(dir: &std::path::Path) -> Result<Vec<Value>, String> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| matches!(x, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("reading {}: {e}", f.display()))?;
        let docs = documents(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        out.extend(
            docs.into_iter()
                .filter(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"],
                          "categories": ["all"]},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                              "subresources": {"status": {}},
                              "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                  "spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}}}],
            },
        })
    }

    #[test]
    fn a_crd_defines_its_served_versions() {
        let specs = specs(&crd()).unwrap();
        assert_eq!(specs.len(), 1);
        let s = &specs[0];
        assert_eq!(s.api, ApiResource::new("example.com", "v1", "Widget", "widgets", true));
        assert!(s.custom && s.has_status_subresource());
        assert_eq!(s.short_names, ["wd"]);
        assert_eq!(s.categories, ["all"]);
        assert!(s.object_schema().is_some());
    }

    #[test]
    fn invalid_crds_get_kube_apiserver_wording() {
        let mut bad = crd();
        bad["metadata"]["name"] = json!("wrong");
        bad["spec"]["scope"] = json!("Global");
        bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] = json!({});
        let e = check(&bad).unwrap_err();
        assert_eq!(e.code, 422);
        let causes: Vec<String> = e
            .details
            .unwrap()
            .causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(
            causes,
            [
                r#"metadata.name: Invalid value: "wrong": must be spec.names.plural+"."+spec.group"#,
                r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#,
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields",
            ]
        );
        assert!(
            e.message
                .starts_with(r#"CustomResourceDefinition.apiextensions.k8s.io "wrong" is invalid: ["#)
        );
        let mut two = crd();
        two["spec"]["versions"] = json!([]);
        assert!(check(&two).is_err());
    }

    #[test]
    fn accepted_crds_are_established_once() {
        let mut c = crd();
        let status = accepted_status(&c).unwrap();
        assert_eq!(status["acceptedNames"]["listKind"], "WidgetList");
        assert_eq!(status["storedVersions"], json!(["v1"]));
        assert_eq!(status["conditions"][1]["type"], "Established");
        c["status"] = status;
        assert!(accepted_status(&c).is_none());
    }
}
