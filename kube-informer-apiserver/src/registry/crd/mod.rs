//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): the resource itself, and what apiextensions-apiserver's
//! controllers make of a CRD — its names accepted or refused ([`naming`]), its versions served as resources
//! ([`validation`]: checks with kube-apiserver's 422 wording, one [`ResourceSpec`] per version, objects stored in the
//! storage version and converted for the others), and its objects removed before it goes when deleted
//! ([`finalizer`]).

mod finalizer;
mod naming;
mod structural;
mod validation;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::errors::{self, Failure};
use crate::patch::managed_fields::{DIRECT_FIELD_MANAGER, SERVER};
use crate::registry::Store;
use crate::registry::resource::ResourceSpec;
use crate::registry::strategy::{self, Target};

pub(crate) use finalizer::FINALIZER;
use naming::{Condition, Names, Taken};
pub(crate) use validation::check_update;

/// The group of CRDs.
pub(crate) const GROUP: &str = "apiextensions.k8s.io";
/// `customresourcedefinitions.apiextensions.k8s.io`: the store id of CRDs.
pub(crate) const ID: &str = "customresourcedefinitions.apiextensions.k8s.io";

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn requested_names(crd: &Value) -> Names {
    Names::from_value(crd.pointer("/spec/names").unwrap_or(&Value::Null))
}

fn accepted_names(crd: &Value) -> Names {
    Names::from_value(crd.pointer("/status/acceptedNames").unwrap_or(&Value::Null))
}

/// Refuses an invalid CRD with kube-apiserver's 422.
pub(crate) fn check(crd: &Value) -> Result<(), Failure> {
    validation::definition(crd, &requested_names(crd))
        .map(|_| ())
        .map_err(|errs| errors::invalid(GROUP, "CustomResourceDefinition", text(crd, "/metadata/name"), errs))
}

/// The status apiextensions-apiserver's controllers give `crd` when `taken` holds the names accepted in its group:
/// accepted names and `NamesAccepted`, `Established`, `Terminating` while it is being deleted with `remaining`
/// objects, and the stored versions with the storage version added.
fn status(crd: &Value, taken: &Taken, remaining: Option<usize>) -> Value {
    let (names, accepted) = naming::accept(&requested_names(crd), &accepted_names(crd), taken);
    let mut conditions = naming::current(crd);
    naming::set_condition(&mut conditions, &accepted);
    let established = naming::established(naming::is_true(crd, "Established"), accepted.status);
    naming::set_condition(&mut conditions, &established);
    if let Some(n) = remaining {
        let (reason, message) = if n == 0 {
            (
                "InstanceDeletionPending",
                "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon".to_owned(),
            )
        } else {
            (
                "InstanceDeletionInProgress",
                format!("CustomResource deletion is in progress: {n} object(s) wait for their finalizers"),
            )
        };
        naming::set_condition(
            &mut conditions,
            &Condition {
                kind: "Terminating",
                status: true,
                reason,
                message,
            },
        );
    }
    let mut stored: Vec<Value> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == true)
        .map(|v| v["name"].clone());
    if let Some(s) = storage.filter(|s| !stored.contains(s)) {
        stored.push(s);
    }
    json!({"acceptedNames": names.to_value(), "conditions": conditions, "storedVersions": stored})
}

/// Every CRD, in the order the naming controller meets them: oldest first.
fn all(store: &Store) -> Vec<Value> {
    let g = store.lock();
    let mut crds: Vec<Value> = g.list_current(ID, None).iter().map(|o| o.to_value()).collect();
    crds.sort_by(|a, b| {
        (text(a, "/metadata/creationTimestamp"), text(a, "/metadata/name"))
            .cmp(&(text(b, "/metadata/creationTimestamp"), text(b, "/metadata/name")))
    });
    crds
}

/// The specs `crd` is served with: under its accepted names, once its names were accepted or it was established
/// (apiextensions-apiserver serves a CRD in either case), each marked terminating while it is deleted.
fn served(crd: &Value) -> Option<validation::Definition> {
    if !naming::is_true(crd, "Established") && !naming::is_true(crd, "NamesAccepted") {
        return None;
    }
    let mut d = validation::definition(crd, &accepted_names(crd)).ok()?;
    let terminating = crd.pointer("/metadata/deletionTimestamp").is_some();
    for s in std::iter::once(&mut d.storage).chain(d.served.iter_mut()) {
        s.terminating = terminating;
    }
    Some(d)
}

/// Brings the server in line with its CRDs after a write that may change what they serve: each CRD gets the
/// status the naming and establishing controllers would give it (a write of its own, as theirs are), a deleted
/// CRD's objects are deleted and the CRD goes once none is left, the resources of established CRDs are registered
/// (or updated) with every served version, and those whose CRD is gone are removed (watchers get their stream's
/// end).
pub(crate) fn sync(store: &Store) {
    let Some(crd_spec) = store.lock().spec(ID) else {
        return;
    };
    let mut crds = all(store);
    let mut remaining: HashMap<String, usize> = HashMap::new();
    for c in crds.iter().filter(|c| finalizer::pending(c)) {
        remaining.insert(
            text(c, "/metadata/name").to_owned(),
            finalizer::cleanup(store, &crd_spec, c),
        );
    }
    if !remaining.is_empty() {
        crds = all(store);
    }
    for i in 0..crds.len() {
        let group = text(&crds[i], "/spec/group").to_owned();
        let mut taken = Taken::default();
        for c in crds.iter().filter(|c| text(c, "/spec/group") == group) {
            taken.add(&accepted_names(c));
        }
        let name = text(&crds[i], "/metadata/name").to_owned();
        let left = finalizer::pending(&crds[i]).then(|| remaining.get(&name).copied().unwrap_or(0));
        let new = status(&crds[i], &taken, left);
        if crds[i].get("status") == Some(&new) {
            continue;
        }
        let mut with_status = crds[i].clone();
        with_status["status"] = new;
        // A concurrent write wins; the sync after it catches up.
        if let Ok(w) = strategy::update(
            Target::new(store, &crd_spec, None, &name),
            with_status,
            true,
            SERVER,
            &mut |_| {},
        ) {
            crds[i] = w.object.to_value();
        }
    }
    let desired: Vec<validation::Definition> = crds.iter().filter_map(served).collect();
    let mut g = store.lock();
    for id in g.custom_ids() {
        if !desired.iter().any(|d| d.storage.id() == id) {
            g.unregister(&id);
        }
    }
    for d in desired {
        let id = d.storage.id();
        let served: Vec<Arc<ResourceSpec>> = d.served.into_iter().map(Arc::new).collect();
        let same = g.spec(&id).as_deref() == Some(&d.storage) && g.served_versions(&id) == served;
        if !same {
            g.register_versions(Arc::new(d.storage), served);
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
    (store.admission().admit)(&spec, &mut crd)?;
    let name = text(&crd, "/metadata/name").to_owned();
    let exists = store.lock().get(ID, &name).is_some();
    if exists {
        if let Some(m) = crd.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        strategy::update(
            Target::new(store, &spec, None, &name),
            crd,
            false,
            DIRECT_FIELD_MANAGER,
            &mut |_| {},
        )?;
    } else {
        strategy::create(store, &spec, None, crd, false, DIRECT_FIELD_MANAGER, &mut |_| {})?;
    }
    sync(store);
    let crd = store.lock().get(ID, &name).map(|o| o.to_value()).unwrap_or(Value::Null);
    if !naming::is_true(&crd, "Established") {
        let why = naming::current(&crd)
            .into_iter()
            .find(|c| c["type"] == "NamesAccepted")
            .map(|c| format!("{}: {}", text(&c, "/reason"), text(&c, "/message")))
            .unwrap_or_default();
        return Err(Box::new(kube_informer::object::Status::failure(
            409,
            "Conflict",
            format!(
                "CustomResourceDefinition {name:?} was stored but is not established: its names are not accepted ({why})"
            ),
        )));
    }
    Ok(name)
}

impl crate::ApiServer {
    /// Installs the CustomResourceDefinitions of a manifest (YAML, several documents allowed, or JSON) as `kubectl
    /// apply -f` would — created, or their spec replaced — and returns their names. When it returns, each CRD is
    /// `Established` and its resources are served in every served version (discovery, OpenAPI, CRUD, watch,
    /// schema validation).
    ///
    /// # Errors
    /// [`Error::Api`](kube_informer::Error::Api) with kube-apiserver's answer (422 for an invalid CRD, 400 for a document
    /// that is not a CRD or not YAML/JSON), or 409 when a CRD was stored but names another CRD of its group already
    /// has keep it from being established (its `NamesAccepted` condition says which).
    pub fn install_crd(&self, manifest: &str) -> Result<Vec<String>, kube_informer::Error> {
        let docs = documents(manifest).map_err(|m| kube_informer::Error::Api(errors::bad_request(m)))?;
        docs.into_iter()
            .map(|d| install(&self.shared().store, d).map_err(kube_informer::Error::Api))
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
    fn accepted_crds_are_established_once_and_keep_their_names() {
        let mut c = crd();
        let status = status(&c, &Taken::default(), None);
        assert_eq!(status["acceptedNames"]["listKind"], "WidgetList");
        assert_eq!(status["storedVersions"], json!(["v1"]));
        let types: Vec<&str> = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["NamesAccepted", "Established"]);
        c["status"] = status.clone();
        let mut taken = Taken::default();
        taken.add(&accepted_names(&c));
        assert_eq!(super::status(&c, &taken, None), status, "a second pass changes nothing");
        // Asking for a short name another CRD of the group holds: refused, the resource stays established and is
        // served under the names it had.
        let mut other = Taken::default();
        other.add(&Names::from_value(
            &json!({"plural": "gadgets", "kind": "Gadget", "shortNames": ["gd"]}),
        ));
        other.add(&accepted_names(&c));
        c["spec"]["names"]["shortNames"] = json!(["gd"]);
        let next = super::status(&c, &other, None);
        assert_eq!(next["acceptedNames"]["shortNames"], json!(["wd"]));
        assert_eq!(next["conditions"][0]["status"], "False");
        assert_eq!(next["conditions"][0]["reason"], "ShortNamesConflict");
        assert_eq!(next["conditions"][1]["status"], "True");
    }
}
