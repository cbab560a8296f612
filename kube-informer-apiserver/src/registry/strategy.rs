//! The write rules of kube-apiserver's generic registry (its `rest` create/update/delete strategies), applied to
//! JSON objects under the store lock: system metadata, optimistic concurrency, generation, finalizers, status.
//! Every stored object's metadata goes through [`meta::normalize`] first, as a Go round-trip of `ObjectMeta` would.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::api::errors::{self, Failure, FieldError};
use crate::api::meta;
use crate::api::util;
use crate::patch::json;
use crate::patch::managed_fields::{FieldManager, Ownership, Requested, Subresource, Writer, take_requested};
use crate::patch::strategic_merge;
use crate::registry::conversion;
use crate::registry::kind_rules::Cluster;
use crate::registry::namespace_lifecycle;
use crate::registry::resource::{ResourceSpec, validate_name};
use crate::registry::store::{AdmissionHooks, Attributes};
use crate::registry::{Store, StoreGuard, StoreInner};
use crate::storage::store::{Change, StoredObject, object_key};
use kube_informer::object::time::format_rfc3339;
use kube_informer::object::{Status, StatusDetails};
use kube_informer::selector::{Operator, Requirement};

type Object = Map<String, Value>;

/// The JSON object in a request body; 400 otherwise.
pub(crate) fn parse_object(body: &[u8]) -> Result<Value, Failure> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| errors::bad_request(format!("the body of the request could not be decoded as JSON: {e}")))?;
    if !v.is_object() {
        return Err(errors::bad_request("the body of the request must be a JSON object"));
    }
    Ok(v)
}

/// The object a write is aimed at, and how it is done: the store, the resource, the URL's namespace and name, and
/// whether it is a dry run — the registry's part of a request's context (the handlers build it from theirs; the
/// server's own writers from what they write).
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) store: &'a Store,
    pub(crate) spec: &'a ResourceSpec,
    /// The URL's namespace (`None` for a cluster-scoped resource, or a namespaced one named without it).
    pub(crate) namespace: Option<&'a str>,
    pub(crate) name: &'a str,
    pub(crate) dry_run: bool,
}

impl<'a> Target<'a> {
    /// A write by the server itself (not a dry run).
    pub(crate) fn new(store: &'a Store, spec: &'a ResourceSpec, namespace: Option<&'a str>, name: &'a str) -> Self {
        Target {
            store,
            spec,
            namespace,
            name,
            dry_run: false,
        }
    }

    /// The same target, as a dry run when `dry_run`.
    pub(crate) fn dry_run(self, dry_run: bool) -> Self {
        Target { dry_run, ..self }
    }
}

fn as_object(v: &mut Value) -> Result<&mut Object, Failure> {
    v.as_object_mut()
        .ok_or_else(|| errors::bad_request("the body of the request must be a JSON object"))
}

fn meta_mut(obj: &mut Object) -> Result<&mut Object, Failure> {
    let m = obj.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if m.is_null() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut()
        .ok_or_else(|| errors::bad_request("metadata must be a JSON object"))
}

fn text<'a>(m: &'a Object, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Checks `apiVersion`/`kind` against the resource and fills them in; checks the shape of the metadata maps.
fn check_type(spec: &ResourceSpec, obj: &mut Object) -> Result<(), Failure> {
    let (want_version, want_kind) = (spec.api.api_version(), &spec.api.kind);
    let got_version = text(obj, "apiVersion");
    if !got_version.is_empty() && got_version != want_version {
        return Err(errors::bad_request(format!(
            "the API version in the data ({got_version}) does not match the expected API version ({want_version})"
        )));
    }
    let got_kind = text(obj, "kind");
    if !got_kind.is_empty() && got_kind != want_kind {
        return Err(errors::bad_request(format!(
            "the kind in the data ({got_kind}) does not match the expected kind ({want_kind})"
        )));
    }
    obj.insert("apiVersion".into(), Value::String(want_version));
    obj.insert("kind".into(), Value::String(want_kind.clone()));
    let meta = meta_mut(obj)?;
    for key in ["labels", "annotations"] {
        match meta.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) if m.values().all(Value::is_string) => {}
            Some(_) => {
                return Err(errors::bad_request(format!("metadata.{key} must be a map of strings")));
            }
        }
    }
    match meta.get("finalizers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
        Some(_) => return Err(errors::bad_request("metadata.finalizers must be a list of strings")),
    }
    for key in ["name", "generateName", "namespace", "resourceVersion", "uid"] {
        if meta.get(key).is_some_and(|v| !v.is_string() && !v.is_null()) {
            return Err(errors::bad_request(format!("metadata.{key} must be a string")));
        }
    }
    if meta.get("generation").is_some_and(|v| !v.is_i64() && !v.is_null()) {
        return Err(errors::bad_request("metadata.generation must be an integer"));
    }
    Ok(())
}

/// The namespace the object lives in: the URL's, which the body must agree with; none for cluster-scoped
/// resources.
fn resolve_namespace(spec: &ResourceSpec, url_ns: Option<&str>, meta: &mut Object) -> Result<String, Failure> {
    if !spec.api.namespaced {
        meta.remove("namespace");
        return Ok(String::new());
    }
    let body_ns = text(meta, "namespace").to_owned();
    let ns = match url_ns {
        Some(u) if !body_ns.is_empty() && body_ns != u => {
            return Err(errors::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Some(u) => u.to_owned(),
        None => return Err(errors::method_not_allowed()),
    };
    meta.insert("namespace".into(), Value::String(ns.clone()));
    Ok(ns)
}

/// The handlers' first check of a body (apiserver's `EnsureObjectNamespaceMatchesRequestNamespace`, run right after
/// decoding, before admission, authorization of a create-on-update or any escalation check): a namespaced object's
/// `metadata.namespace`, when set, must be the URL's (400).
pub(crate) fn ensure_namespace_matches(spec: &ResourceSpec, url_ns: Option<&str>, obj: &Value) -> Result<(), Failure> {
    let body_ns = obj
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str);
    match (spec.api.namespaced, url_ns, body_ns) {
        (true, Some(u), Some(b)) if !b.is_empty() && b != u => Err(errors::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => Ok(()),
    }
}

fn validate_labels(spec: &ResourceSpec, name: &str, meta: &Object) -> Result<(), Failure> {
    let mut errs = Vec::new();
    if let Some(Value::Object(labels)) = meta.get("labels") {
        for (k, v) in labels {
            let v = v.as_str().unwrap_or("");
            if let Err(e) = Requirement::new(k, Operator::Equals, [v]) {
                errs.push(FieldError::invalid(
                    "metadata.labels",
                    &format!("{k}={v}"),
                    &e.to_string(),
                ));
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errors::invalid(&spec.api.group, &spec.api.kind, name, errs))
    }
}

fn finalizers(meta: &Object) -> Vec<&str> {
    match meta.get("finalizers") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The result of a write.
#[derive(Debug)]
pub(crate) struct Written {
    pub(crate) object: Arc<StoredObject>,
    /// True when the write created the object (201).
    pub(crate) created: bool,
    /// Warnings of the write's validation (ratcheted CEL rules, validating admission policies in `Warn`).
    pub(crate) warnings: Vec<String>,
}

fn commit(g: &mut StoreInner, spec: &ResourceSpec, change: Change, dry_run: bool) -> Arc<StoredObject> {
    if dry_run {
        return Arc::new(match change {
            Change::Put(o) | Change::Delete(o) => o,
        });
    }
    g.commit(&spec.id(), change).expect("resource registered")
}

fn stamp(value: &mut Value, rev: u64) {
    if let Some(m) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("resourceVersion".into(), Value::String(rev.to_string()));
    }
}

/// POST: creates an object in `url_ns`, for `manager`.
pub(crate) fn create(
    store: &Store,
    spec: &ResourceSpec,
    url_ns: Option<&str>,
    body: Value,
    dry_run: bool,
    manager: &str,
    on_commit: OnCommit<'_>,
) -> Result<Written, Failure> {
    let hooks = store.admission();
    let mut g = store.lock();
    let w = create_locked(&mut g, hooks, spec, url_ns, body, dry_run, Ownership::Track(manager))?;
    publish(store, g, spec, 201, on_commit);
    Ok(w)
}

/// Called with the object a patch produced (or an apply patch creates), before anything is checked or stored: what
/// the server does to every written object ([`field_validation`](crate::admission::field_validation), a CRD's schema).
pub(crate) type Admit<'a> = &'a mut dyn FnMut(&mut Value) -> Result<(), Failure>;

/// Called with the answer's status code once a write is committed, still under the store's lock: nothing the
/// write did is visible to any other request or watcher yet (the request log relies on it, see
/// [`PendingRecord`](crate::http::log::PendingRecord)).
pub(crate) type OnCommit<'a> = &'a mut dyn FnMut(u16);

/// Ends a write: tells `on_commit`, then releases the lock and wakes the resource's watchers.
fn publish(store: &Store, g: StoreGuard<'_>, spec: &ResourceSpec, code: u16, on_commit: OnCommit<'_>) {
    on_commit(code);
    store.written(g, &spec.id());
}

fn create_locked(
    g: &mut StoreInner,
    admission: &AdmissionHooks,
    spec: &ResourceSpec,
    url_ns: Option<&str>,
    mut body: Value,
    dry_run: bool,
    ownership: Ownership<'_>,
) -> Result<Written, Failure> {
    if spec.terminating {
        return Err(errors::create_while_terminating(&spec.api));
    }
    let obj = as_object(&mut body)?;
    check_type(spec, obj)?;
    let requested = match ownership {
        Ownership::Track(_) => take_requested(meta_mut(obj)?),
        Ownership::Computed => Requested::Absent,
    };
    if spec.status_subresource && !spec.builtin.is_some_and(|r| r.create_keeps_status) {
        obj.remove("status");
    }
    let meta = meta_mut(obj)?;
    let ns = resolve_namespace(spec, url_ns, meta)?;
    namespace_lifecycle::admit_create(g, spec, &ns, text(meta, "name"))?;
    if !text(meta, "resourceVersion").is_empty() {
        return Err(errors::internal(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let (name, generate) = (text(meta, "name").to_owned(), text(meta, "generateName").to_owned());
    let invalid = |name: &str, errs| errors::invalid(&spec.api.group, &spec.api.kind, name, errs);
    if name.is_empty() && generate.is_empty() {
        let e = FieldError::required("metadata.name", "name or generateName is required");
        return Err(invalid("", vec![e]));
    }
    validate_labels(spec, &name, meta)?;
    let name = if name.is_empty() {
        // apiserver's SimpleNameGenerator: prefix cut to 58 characters, then 5 random ones.
        let prefix: String = generate.chars().take(58).collect();
        let mut candidate = format!("{prefix}{}", util::name_suffix());
        for _ in 0..16 {
            if g.get(&spec.id(), &object_key(&ns, &candidate)).is_none() {
                break;
            }
            candidate = format!("{prefix}{}", util::name_suffix());
        }
        candidate
    } else {
        name
    };
    if let Err(msg) = validate_name(spec.name_rule, &name) {
        return Err(invalid(&name, vec![FieldError::invalid("metadata.name", &name, &msg)]));
    }
    if g.get(&spec.id(), &object_key(&ns, &name)).is_some() {
        return Err(errors::already_exists(&spec.api, &name));
    }
    let rev = g.rev() + 1;
    let key = object_key(&ns, &name);
    meta.insert("name".into(), Value::String(name));
    meta.insert("uid".into(), Value::String(util::new_uid()));
    meta.insert(
        "creationTimestamp".into(),
        Value::String(format_rfc3339(SystemTime::now())),
    );
    // Kinds whose strategy counts generations start at 1; the others keep what the body says (BeforeCreate
    // leaves it alone).
    if spec.generation.is_tracked() {
        meta.insert("generation".into(), Value::from(1));
    }
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    if dry_run {
        meta.remove("resourceVersion");
    } else {
        meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
    }
    meta::normalize(meta);
    // Field ownership is decided before the strategy's preparation, as kube-apiserver's handler does.
    if let Ownership::Track(manager) = ownership {
        spec.field_manager(Subresource::Main)
            .create(&mut body, requested, manager);
    }
    if let Some(rules) = spec.builtin {
        rules.prepare_for_create(as_object(&mut body)?, &Cluster::new(g, &spec.id(), &key))?;
    }
    // Validation of the object as it will be stored, as the registry's `BeforeCreate` then validating admission
    // run it.
    let warnings = validate_write(g, admission, spec, &body, None, false)?;
    conversion::to_storage(spec, &mut body);
    crate::api::nesting::check_stored(&body)?;
    let stored = StoredObject::from_value(spec, &body);
    Ok(Written {
        object: commit(g, spec, Change::Put(stored), dry_run),
        created: true,
        warnings,
    })
}

/// Checks the name in the body against the URL's, and fills it in when absent.
fn check_name(obj: &mut Object, url_name: &str) -> Result<(), Failure> {
    let meta = meta_mut(obj)?;
    let body_name = text(meta, "name");
    if body_name != url_name {
        return Err(errors::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({url_name})"
        )));
    }
    Ok(())
}

/// The validation of a write after the strategy prepared it (`new`, an update of `old` when there is one): a custom
/// resource's schema and rules ([`customresource_strategy`](crate::registry::customresource_strategy)), then
/// validating admission (the store's [`AdmissionHooks::validate`]). Returns the warnings to answer with.
fn validate_write(
    g: &StoreInner,
    admission: &AdmissionHooks,
    spec: &ResourceSpec,
    new: &Value,
    old: Option<&Value>,
    status_only: bool,
) -> Result<Vec<String>, Failure> {
    let mut warnings = Vec::new();
    if spec.custom {
        warnings.extend(crate::registry::customresource_strategy::validate(spec, new, old)?);
    }
    // Then validating admission: ValidatingAdmissionPolicies.
    let attributes = Attributes {
        spec,
        operation: if old.is_some() { "UPDATE" } else { "CREATE" },
        subresource: if status_only { "status" } else { "" },
        object: Some(new),
        old_object: old,
        dry_run: false,
    };
    warnings.extend((admission.validate)(g, &attributes)?);
    Ok(warnings)
}

/// Turns a requested new state into the one to store, following the update rules; `None` when nothing changed.
/// Also the validation's warnings.
fn prepare_update(
    g: &StoreInner,
    admission: &AdmissionHooks,
    spec: &ResourceSpec,
    current: &StoredObject,
    mut new: Value,
    status_only: bool,
    ownership: Ownership<'_>,
) -> Result<(Option<Value>, Vec<String>), Failure> {
    // Both sides as the request's version sees them: only what the request changes counts.
    let mut old = current.to_value();
    conversion::read(spec, &mut old);
    conversion::to_served(spec, &mut new);
    let (Some(old_obj), Some(new_obj)) = (old.as_object(), new.as_object_mut()) else {
        return Err(errors::internal("stored object is not a JSON object"));
    };
    let (id, key) = (spec.id(), current.key());
    let cluster = Cluster::new(g, &id, &key);
    let no_meta = Object::new();
    let old_meta = old_obj.get("metadata").and_then(Value::as_object).unwrap_or(&no_meta);
    let name = current.name.as_str();
    let new_meta = meta_mut(new_obj)?;
    let rv = text(new_meta, "resourceVersion");
    if !rv.is_empty() {
        let Ok(rv) = rv.parse::<u64>() else {
            return Err(errors::bad_request(format!("invalid resourceVersion {rv:?}")));
        };
        if rv != current.rev {
            return Err(errors::stale(&spec.api, name));
        }
    }
    let requested = match ownership {
        Ownership::Track(_) => take_requested(new_meta),
        Ownership::Computed => Requested::Absent,
    };
    let mut result = if status_only {
        // Only `.status` comes from the request; everything else stays as stored.
        let status = new_obj.remove("status");
        let mut r = old_obj.clone();
        match status {
            Some(s) => r.insert("status".into(), s),
            None => r.remove("status"),
        };
        let fm = spec.field_manager(Subresource::Status);
        r = track(&fm, ownership, &old, r, Some(&*new_obj), requested)?;
        if let Some(rules) = spec.builtin {
            rules.prepare_for_update(&mut r, old_obj, true, &cluster)?;
        }
        r
    } else {
        let new_uid = text(new_meta, "uid");
        if !new_uid.is_empty() && new_uid != current.uid {
            let e = FieldError::invalid("metadata.uid", new_uid, "field is immutable");
            return Err(errors::invalid(&spec.api.group, &spec.api.kind, name, vec![e]));
        }
        for key in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            match old_meta.get(key) {
                Some(v) => new_meta.insert(key.into(), v.clone()),
                None => new_meta.remove(key),
            };
        }
        validate_labels(spec, name, new_meta)?;
        if old_meta.contains_key("deletionTimestamp") {
            let before = finalizers(old_meta);
            if let Some(added) = finalizers(new_meta).into_iter().find(|f| !before.contains(f)) {
                let e = FieldError::forbidden(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers [{added:?}]"
                    ),
                );
                return Err(errors::invalid(&spec.api.group, &spec.api.kind, name, vec![e]));
            }
        }
        if spec.status_subresource {
            match old_obj.get("status") {
                Some(s) => new_obj.insert("status".into(), s.clone()),
                None => new_obj.remove("status"),
            };
        }
        meta::normalize(meta_mut(new_obj)?);
        let fm = spec.field_manager(Subresource::Main);
        *new_obj = track(&fm, ownership, &old, std::mem::take(new_obj), None, requested)?;
        if let Some(rules) = spec.builtin {
            rules.prepare_for_update(new_obj, old_obj, false, &cluster)?;
        }
        if meta::bumps(spec.generation, spec.status_subresource, old_obj, new_obj) {
            let generation = old_meta.get("generation").and_then(Value::as_i64).unwrap_or(0);
            meta_mut(new_obj)?.insert("generation".into(), Value::from(generation + 1));
        }
        std::mem::take(new_obj)
    };
    let result_meta = meta_mut(&mut result)?;
    result_meta.insert("resourceVersion".into(), Value::String(current.rev.to_string()));
    meta::normalize(result_meta);
    let result = Value::Object(result);
    let warnings = validate_write(g, admission, spec, &result, Some(&old), status_only)?;
    crate::api::nesting::check_stored(&result)?;
    // Written only when what would be stored differs from what is (kube-apiserver compares the encoded bytes): a
    // custom object read through a version that prunes or defaults it is stored again as that version sees it.
    let unchanged = if spec.conversion.is_some() {
        let mut stored = result.clone();
        conversion::to_storage(spec, &mut stored);
        stored == current.to_value()
    } else {
        result == old
    };
    Ok((if unchanged { None } else { Some(result) }, warnings))
}

/// Sets the `managedFields` of `new`, an update of `old`: tracked for the writer, or (computed already) taken from
/// `computed_from`, the object the apply or scale write produced, when `new` was rebuilt from the stored one.
fn track(
    fm: &FieldManager<'_>,
    ownership: Ownership<'_>,
    old: &Value,
    new: Object,
    computed_from: Option<&Object>,
    requested: Requested,
) -> Result<Object, Failure> {
    let mut new = Value::Object(new);
    match ownership {
        Ownership::Track(manager) => fm.update(old, &mut new, requested, manager),
        Ownership::Computed => {
            if let (Some(from), Some(meta)) = (computed_from, new.get_mut("metadata").and_then(Value::as_object_mut)) {
                match from.get("metadata").and_then(|m| m.get("managedFields")) {
                    Some(entries) => meta.insert("managedFields".into(), entries.clone()),
                    None => meta.remove("managedFields"),
                };
            }
        }
    }
    match new {
        Value::Object(o) => Ok(o),
        _ => Err(errors::internal("the object is not a JSON object")),
    }
}

/// Stores a prepared update: a MODIFIED event, or DELETED when it removed the last finalizer of an object being
/// deleted.
fn store_update(
    g: &mut StoreInner,
    spec: &ResourceSpec,
    current: &Arc<StoredObject>,
    new: Option<Value>,
    dry_run: bool,
) -> Arc<StoredObject> {
    let Some(mut new) = new else {
        return current.clone();
    };
    let rev = if dry_run { current.rev } else { g.rev() + 1 };
    stamp(&mut new, rev);
    let meta = new.get("metadata").and_then(Value::as_object);
    let finished = meta.is_some_and(|m| m.contains_key("deletionTimestamp") && finalizers(m).is_empty())
        && namespace_lifecycle::may_go(spec, &new);
    conversion::to_storage(spec, &mut new);
    let stored = StoredObject::from_value(spec, &new);
    let change = if finished {
        Change::Delete(stored)
    } else {
        Change::Put(stored)
    };
    commit(g, spec, change, dry_run)
}

/// A write only the server makes, past the kind's update rules (which would keep what it changes: a namespace's
/// `spec.finalizers` change only through its `finalize` subresource, its conditions only through `status`): `edit`
/// changes the stored object, stored as it comes out — deleted when that ends its deletion. Nothing is written when
/// `edit` changes nothing.
pub(crate) fn update_raw(
    store: &Store,
    spec: &ResourceSpec,
    ns: Option<&str>,
    name: &str,
    edit: impl FnOnce(&mut Value),
) -> Result<Arc<StoredObject>, Failure> {
    let ns = if spec.api.namespaced { ns.unwrap_or("") } else { "" };
    let mut g = store.lock();
    let current = g
        .get(&spec.id(), &object_key(ns, name))
        .ok_or_else(|| errors::not_found(&spec.api, name))?;
    let old = current.to_value();
    let mut new = old.clone();
    edit(&mut new);
    if new == old {
        return Ok(current);
    }
    let written = store_update(&mut g, spec, &current, Some(new), false);
    publish(store, g, spec, 200, &mut |_| {});
    Ok(written)
}

/// PUT of an object that does not exist, where the kind's strategy allows it
/// ([`ResourceSpec::allows_create_on_update`]): the body's name must be the URL's, then it is created as by POST.
pub(crate) fn create_on_update(
    target: Target<'_>,
    mut body: Value,
    manager: &str,
    on_commit: OnCommit<'_>,
) -> Result<Written, Failure> {
    let Target {
        store,
        spec,
        namespace,
        name,
        dry_run,
    } = target;
    check_name(as_object(&mut body)?, name)?;
    create(store, spec, namespace, body, dry_run, manager, on_commit)
}

/// Whether the target object is stored.
pub(crate) fn exists(target: Target<'_>) -> bool {
    let Target {
        store,
        spec,
        namespace,
        name,
        ..
    } = target;
    let ns = if spec.api.namespaced {
        namespace.unwrap_or("")
    } else {
        ""
    };
    store.lock().get(&spec.id(), &object_key(ns, name)).is_some()
}

/// PUT (`status_only`: PUT of the status subresource), for `manager`.
pub(crate) fn update(
    target: Target<'_>,
    mut body: Value,
    status_only: bool,
    manager: &str,
    on_commit: OnCommit<'_>,
) -> Result<Written, Failure> {
    let Target {
        store,
        spec,
        namespace: url_ns,
        name,
        dry_run,
    } = target;
    let obj = as_object(&mut body)?;
    check_type(spec, obj)?;
    check_name(obj, name)?;
    let ns = resolve_namespace(spec, url_ns, meta_mut(obj)?)?;
    let hooks = store.admission();
    let mut g = store.lock();
    let current = g
        .get(&spec.id(), &object_key(&ns, name))
        .ok_or_else(|| errors::not_found(&spec.api, name))?;
    let (new, warnings) = prepare_update(&g, hooks, spec, &current, body, status_only, Ownership::Track(manager))?;
    let object = store_update(&mut g, spec, &current, new, dry_run);
    publish(store, g, spec, 200, on_commit);
    Ok(Written {
        object,
        created: false,
        warnings,
    })
}

/// An update computed from the current object (a subresource's write): `build` makes the requested new state of
/// the whole object under the store's lock, its `managedFields` included; the update rules then apply as for a PUT
/// (a resourceVersion in it is a precondition).
pub(crate) fn update_current(
    store: &Store,
    spec: &ResourceSpec,
    url_ns: Option<&str>,
    name: &str,
    dry_run: bool,
    on_commit: OnCommit<'_>,
    build: impl FnOnce(&StoredObject) -> Result<Value, Failure>,
) -> Result<Written, Failure> {
    let ns = if spec.api.namespaced { url_ns.unwrap_or("") } else { "" };
    let hooks = store.admission();
    let mut g = store.lock();
    let current = g
        .get(&spec.id(), &object_key(ns, name))
        .ok_or_else(|| errors::not_found(&spec.api, name))?;
    let (new, warnings) = prepare_update(&g, hooks, spec, &current, build(&current)?, false, Ownership::Computed)?;
    let object = store_update(&mut g, spec, &current, new, dry_run);
    publish(store, g, spec, 200, on_commit);
    Ok(Written {
        object,
        created: false,
        warnings,
    })
}

/// A strategic merge patch that does not apply, answered as kube-apiserver's patch handler answers: 400 with the
/// message, 422 with a generic one, and the 500 of an error it did not classify.
fn strategic_merge_failure(e: strategic_merge::StrategicMergeError) -> Failure {
    match e {
        strategic_merge::StrategicMergeError::BadRequest(m) => errors::bad_request(m),
        strategic_merge::StrategicMergeError::Invalid(_) => Box::new(
            Status::failure(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
            )
            .with_details(StatusDetails::default()),
        ),
        other => errors::internal(other.message()),
    }
}

/// The patch formats kube-apiserver accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchType {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/strategic-merge-patch+json`: lists merge as the resource's schema says
    /// ([`strategic_merge`]).
    Strategic,
    /// `application/apply-patch+yaml` (or `+json`): server-side apply
    /// ([`managed_fields`](crate::patch::managed_fields)), which may create.
    Apply,
}

impl PatchType {
    /// From a `Content-Type` header.
    pub(crate) fn from_content_type(ct: &str) -> Option<PatchType> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// Decodes a patch body (JSON; YAML too for apply).
pub(crate) fn parse_patch(kind: PatchType, body: &[u8]) -> Result<Value, Failure> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => Ok(v),
        Err(e) if kind == PatchType::Apply => {
            let text = std::str::from_utf8(body).map_err(|_| errors::bad_request("apply patch is not UTF-8"))?;
            serde_saphyr::from_str::<Value>(text)
                .map_err(|y| errors::bad_request(format!("error decoding YAML: {y} (as JSON: {e})")))
        }
        Err(e) => Err(errors::bad_request(format!("error decoding patch: {e}"))),
    }
}

/// PATCH (`status_only`: PATCH of the status subresource) by `writer`. An apply patch of a missing object creates
/// it.
pub(crate) fn patch(
    target: Target<'_>,
    kind: PatchType,
    patch_doc: &Value,
    status_only: bool,
    writer: &Writer,
    admit: Admit<'_>,
    on_commit: OnCommit<'_>,
) -> Result<Written, Failure> {
    let Target {
        store,
        spec,
        namespace: url_ns,
        name,
        dry_run,
    } = target;
    if matches!(kind, PatchType::Merge | PatchType::Apply) && !patch_doc.is_object() {
        return Err(errors::bad_request("a merge patch must be a JSON object"));
    }
    if spec.api.namespaced && url_ns.is_none() {
        return Err(errors::method_not_allowed());
    }
    let ns = if spec.api.namespaced { url_ns.unwrap_or("") } else { "" };
    let fm = spec.field_manager(if status_only {
        Subresource::Status
    } else {
        Subresource::Main
    });
    let hooks = store.admission();
    let mut g = store.lock();
    let Some(current) = g.get(&spec.id(), &object_key(ns, name)) else {
        if kind == PatchType::Apply && !status_only {
            let mut body = fm.apply(None, patch_doc, &writer.manager, writer.force)?;
            let meta = meta_mut(as_object(&mut body)?)?;
            if text(meta, "name").is_empty() {
                meta.insert("name".into(), Value::String(name.to_owned()));
            }
            let uid = text(meta, "uid");
            if !uid.is_empty() {
                let why =
                    format!("uid mismatch: the provided object specified uid {uid}, and no existing object was found");
                return Err(errors::conflict(&spec.api, name, &why));
            }
            check_name(as_object(&mut body)?, name)?;
            admit(&mut body)?;
            let w = create_locked(&mut g, hooks, spec, url_ns, body, dry_run, Ownership::Computed)?;
            publish(store, g, spec, 201, on_commit);
            return Ok(w);
        }
        return Err(errors::not_found(&spec.api, name));
    };
    let mut doc = current.to_value();
    conversion::read(spec, &mut doc);
    let mut ownership = Ownership::Track(&writer.manager);
    match kind {
        PatchType::Json => json::json_patch(&mut doc, patch_doc).map_err(json::failure)?,
        PatchType::Strategic => {
            let schema = spec
                .strategic_merge_schema()
                .ok_or_else(|| spec.unsupported_patch_type())?;
            doc = strategic_merge::apply(doc, patch_doc.clone(), schema).map_err(strategic_merge_failure)?;
        }
        PatchType::Merge => json::merge_patch(&mut doc, patch_doc),
        PatchType::Apply => {
            doc = fm.apply(Some(&doc), patch_doc, &writer.manager, writer.force)?;
            ownership = Ownership::Computed;
        }
    }
    // No patch makes an object nested deeper than a request body may be (a JSON patch is held to it at each
    // operation; the merges cannot pass their inputs').
    let depth = crate::api::nesting::nesting(&doc);
    if depth > crate::api::nesting::MAX_NESTING {
        return Err(Box::new(kube_informer::object::Status::failure(
            422,
            "Invalid",
            format!(
                "the patched object nests {depth} levels deep, more than the {} a request body may",
                crate::api::nesting::MAX_NESTING
            ),
        )));
    }
    admit(&mut doc)?;
    let obj = as_object(&mut doc)?;
    check_type(spec, obj)?;
    // A resourceVersion in the patched object is a precondition: `prepare_update` checks it, as for a PUT.
    check_name(obj, name)?;
    resolve_namespace(spec, url_ns, meta_mut(obj)?)?;
    let (new, warnings) = prepare_update(&g, hooks, spec, &current, doc, status_only, ownership)?;
    let object = store_update(&mut g, spec, &current, new, dry_run);
    publish(store, g, spec, 200, on_commit);
    Ok(Written {
        object,
        created: false,
        warnings,
    })
}

/// `DeleteOptions` the server honours.
#[derive(Debug, Default)]
pub(crate) struct DeleteOptions {
    pub(crate) uid: Option<String>,
    pub(crate) resource_version: Option<String>,
    pub(crate) dry_run: bool,
    /// `gracePeriodSeconds` (pods: their `terminationGracePeriodSeconds` when absent).
    pub(crate) grace_period: Option<i64>,
}

/// A pod's grace period for this deletion (`podStrategy.CheckGracefulDelete`): 0 for a pod no node runs or that
/// has finished, else the one asked, else the pod's `terminationGracePeriodSeconds` (30 by default).
fn pod_grace_period(pod: &Value, opts: &DeleteOptions) -> i64 {
    let unscheduled = pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
    let finished = matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
    if unscheduled || finished {
        return 0;
    }
    opts.grace_period
        .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
        .unwrap_or(30)
        .max(0)
}

/// What a delete did.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// The object is gone; its last state (at the deletion's resourceVersion).
    Gone(Arc<StoredObject>),
    /// Finalizers are pending: the object now carries a deletionTimestamp.
    Finalizing(Arc<StoredObject>),
}

/// DELETE of one object.
pub(crate) fn delete(
    store: &Store,
    spec: &ResourceSpec,
    ns: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
    on_commit: OnCommit<'_>,
) -> Result<Deleted, Failure> {
    let ns = if spec.api.namespaced { ns.unwrap_or("") } else { "" };
    let mut g = store.lock();
    let current = g
        .get(&spec.id(), &object_key(ns, name))
        .ok_or_else(|| errors::not_found(&spec.api, name))?;
    namespace_lifecycle::admit_delete(spec, name)?;
    let precondition = |what: &str, want: &str, have: &str| {
        errors::conflict(
            &spec.api,
            name,
            &format!("Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}"),
        )
    };
    if let Some(uid) = opts.uid.as_deref().filter(|u| *u != current.uid) {
        return Err(precondition("UID", uid, &current.uid));
    }
    if let Some(rv) = opts
        .resource_version
        .as_deref()
        .filter(|r| *r != current.rev.to_string())
    {
        return Err(precondition("ResourceVersion", rv, &current.rev.to_string()));
    }
    let mut value = current.to_value();
    let grace = if spec.id() == "pods" && spec.catalog.is_some() {
        pod_grace_period(&value, opts)
    } else {
        0
    };
    // Validating admission sees the deletion (warnings of a delete are not answered).
    let attributes = Attributes {
        spec,
        operation: "DELETE",
        subresource: "",
        object: None,
        old_object: Some(&value),
        dry_run: opts.dry_run,
    };
    (store.admission().validate)(&g, &attributes)?;
    // A namespace with `spec.finalizers` is only marked, its content deleted first.
    let kept = namespace_lifecycle::mark_for_deletion(spec, &mut value);
    let mut meta = value.get_mut("metadata").and_then(Value::as_object_mut);
    // The kind's own finalizer, added at the first delete (a CRD's: its objects go first).
    if let (Some(f), Some(m)) = (spec.builtin.and_then(|r| r.delete_finalizer), meta.as_deref_mut())
        && !m.contains_key("deletionTimestamp")
        && !finalizers(m).contains(&f)
    {
        let list = m.entry("finalizers").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(a) = list {
            a.push(Value::String(f.to_owned()));
        }
    }
    let outcome = match meta {
        Some(meta) if kept || !finalizers(meta).is_empty() => {
            if meta.contains_key("deletionTimestamp") {
                Deleted::Finalizing(current)
            } else {
                // Graceful deletion: mark, bump the generation where there is one (the generic registry's
                // `markAsDeleting` bumps only a generation above 0), let the finalizers' owners finish.
                let rev = if opts.dry_run { current.rev } else { g.rev() + 1 };
                meta.insert(
                    "deletionTimestamp".into(),
                    Value::String(format_rfc3339(SystemTime::now())),
                );
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
                let generation = meta.get("generation").and_then(Value::as_i64).unwrap_or(0);
                if generation > 0 {
                    meta.insert("generation".into(), Value::from(generation + 1));
                }
                meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
                let stored = StoredObject::from_value(spec, &value);
                Deleted::Finalizing(commit(&mut g, spec, Change::Put(stored), opts.dry_run))
            }
        }
        Some(meta) if grace > 0 && !meta.contains_key("deletionTimestamp") => {
            // A running pod's graceful deletion: marked with its grace period (what the answer and watchers see),
            // then deleted as its kubelet would once the containers stopped — at once, no kubelet running here.
            let rev = if opts.dry_run { current.rev } else { g.rev() + 1 };
            let at = SystemTime::now()
                .checked_add(std::time::Duration::from_secs(grace.unsigned_abs()))
                .unwrap_or_else(SystemTime::now);
            meta.insert("deletionTimestamp".into(), Value::String(format_rfc3339(at)));
            meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
            meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
            let marked = commit(
                &mut g,
                spec,
                Change::Put(StoredObject::from_value(spec, &value)),
                opts.dry_run,
            );
            if !opts.dry_run {
                let last = marked.at_revision(spec, g.rev() + 1);
                commit(&mut g, spec, Change::Delete(last), false);
            }
            Deleted::Gone(marked)
        }
        _ => {
            let rev = if opts.dry_run { current.rev } else { g.rev() + 1 };
            let last = current.at_revision(spec, rev);
            Deleted::Gone(commit(&mut g, spec, Change::Delete(last), opts.dry_run))
        }
    };
    publish(store, g, spec, 200, on_commit);
    Ok(outcome)
}

#[cfg(test)]
#[path = "strategy_tests.rs"]
mod tests;
