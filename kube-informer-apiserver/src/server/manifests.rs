//! Loading manifests: YAML (multi-document) and JSON files, or folders of them, created in the server as
//! `kubectl create -f` would, namespaces first.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::server::ApiServer;
use kube_informer::Error;

/// One object read from a manifest, and where it came from (`file`, `file#2` for a later document, `[i]` for a
/// `List`'s item).
#[derive(Debug)]
struct Manifest {
    source: String,
    object: Value,
}

/// Creation order by kind: what others need first (namespaces, then definitions and configuration), workloads
/// last, anything unlisted after them. A stable sort keeps the files' order within a rank.
fn rank(kind: &str) -> usize {
    const ORDER: &[&str] = &[
        "Namespace",
        "CustomResourceDefinition",
        "PriorityClass",
        "ServiceAccount",
        "Secret",
        "ConfigMap",
        "StorageClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Service",
        "Node",
        "Lease",
        "DaemonSet",
        "Pod",
        "ReplicaSet",
        "Deployment",
        "StatefulSet",
        "Job",
        "CronJob",
    ];
    ORDER.iter().position(|k| *k == kind).unwrap_or(ORDER.len())
}

fn invalid(message: String) -> Error {
    Error::InvalidInput(message)
}

/// The manifest files at `path`: the file itself, or every `.yaml`, `.yml` and `.json` file below the folder
/// (recursively, sorted by path, hidden entries skipped).
fn files(path: &Path) -> Result<Vec<PathBuf>, Error> {
    let meta = fs::metadata(path).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = fs::read_dir(path)
        .map_err(|e| invalid(format!("{}: {e}", path.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(files(&p)?);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json") {
            out.push(p);
        }
    }
    Ok(out)
}

/// The objects of one file's text: each YAML document (or the JSON document), `List`s expanded.
fn parse(name: &str, text: &str, json: bool) -> Result<Vec<Manifest>, Error> {
    let docs: Vec<Value> = if json {
        vec![serde_json::from_str(text).map_err(|e| invalid(format!("{name}: not JSON: {e}")))?]
    } else {
        serde_saphyr::from_multiple(text).map_err(|e| invalid(format!("{name}: not YAML: {e}")))?
    };
    let mut out = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let source = if i == 0 {
            name.to_owned()
        } else {
            format!("{name}#{}", i + 1)
        };
        expand(source, doc, &mut out)?;
    }
    Ok(out)
}

/// Adds an object, or a `List`'s items, to `out`; empty documents are skipped.
fn expand(source: String, doc: Value, out: &mut Vec<Manifest>) -> Result<(), Error> {
    match doc {
        Value::Null => Ok(()),
        Value::Object(mut map) => {
            let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
            if kind.is_empty() {
                return Err(invalid(format!("{source}: the object has no kind")));
            }
            if kind == "List" || (kind.ends_with("List") && map.get("items").is_some_and(Value::is_array)) {
                let Some(Value::Array(items)) = map.remove("items") else {
                    return Ok(());
                };
                for (j, item) in items.into_iter().enumerate() {
                    expand(format!("{source}[{j}]"), item, out)?;
                }
                return Ok(());
            }
            out.push(Manifest {
                source,
                object: Value::Object(map),
            });
            Ok(())
        }
        _ => Err(invalid(format!("{source}: a manifest must be an object"))),
    }
}

impl ApiServer {
    /// Creates the objects of the manifests at `path` — a YAML file (several documents separated by `---`), a JSON
    /// file, or a folder of `.yaml`/`.yml`/`.json` files (recursively, in path order) — and returns them as
    /// created. `List` kinds are expanded; namespaces are created first, then other kinds in an order that puts
    /// what others use before its users (as `kubectl create -f` on a folder would need); a namespaced object with
    /// no namespace goes to `default`.
    ///
    /// Every file is read and every kind resolved before anything is created; a creation that fails (an object
    /// that exists already, an invalid one) stops there, leaving the objects created before it.
    ///
    /// ```
    /// use kube_informer_apiserver::ApiServer;
    ///
    /// let dir = std::env::temp_dir().join(format!("manifests-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("app.yaml"), "\
    /// apiVersion: v1
    /// kind: ConfigMap
    /// metadata: {name: settings, namespace: shop}
    /// data: {color: blue}
    /// ---
    /// apiVersion: v1
    /// kind: Namespace
    /// metadata: {name: shop}
    /// ").unwrap();
    /// let server = ApiServer::start().unwrap();
    /// let created = server.load_manifests(&dir).unwrap();
    /// assert_eq!(created[0]["kind"], "Namespace");
    /// assert_eq!(created[1]["metadata"]["namespace"], "shop");
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the file (and document) at fault: unreadable, not YAML/JSON, no `kind`, a
    /// kind the server does not serve, or the creation's own error.
    pub fn load_manifests(&self, path: impl AsRef<Path>) -> Result<Vec<Value>, Error> {
        let mut manifests = Vec::new();
        for file in files(path.as_ref())? {
            let name = file.display().to_string();
            let text = fs::read_to_string(&file).map_err(|e| invalid(format!("{name}: {e}")))?;
            let json = file.extension().is_some_and(|e| e == "json");
            manifests.extend(parse(&name, &text, json)?);
        }
        // CRDs first, so that the custom objects of the same load find their resources.
        let (crds, manifests): (Vec<Manifest>, Vec<Manifest>) = manifests
            .into_iter()
            .partition(|m| m.object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"));
        let mut installed = Vec::with_capacity(crds.len());
        for m in crds {
            let name = crate::registry::crd::install(&self.shared().store, m.object).map_err(|e| {
                invalid(format!(
                    "{}: installing a CustomResourceDefinition: {}",
                    m.source, e.message
                ))
            })?;
            installed.push(
                self.shared()
                    .store
                    .lock()
                    .get(crate::registry::crd::ID, &name)
                    .map(|o| o.to_value()),
            );
        }
        let specs = self.shared().store.lock().specs();
        let mut resolved = Vec::with_capacity(manifests.len());
        for m in manifests {
            let api_version = m.object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let kind = m.object.get("kind").and_then(Value::as_str).unwrap_or("");
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let spec = specs
                .iter()
                .find(|s| s.api.group == group && s.api.version == version && s.api.kind == kind)
                .ok_or_else(|| {
                    invalid(format!(
                        "{}: the server serves no kind {kind:?} in apiVersion {api_version:?}",
                        m.source
                    ))
                })?;
            resolved.push((rank(kind), spec.clone(), m));
        }
        resolved.sort_by_key(|(rank, _, _)| *rank);
        let mut created: Vec<Value> = installed.into_iter().flatten().collect();
        for (_, spec, m) in resolved {
            let namespace = spec.api.namespaced.then(|| {
                m.object
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .filter(|ns| !ns.is_empty())
                    .unwrap_or("default")
                    .to_owned()
            });
            let name = m
                .object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let object = self
                .create_json(&spec.api, namespace.as_deref(), m.object)
                .map_err(|e| invalid(format!("{}: creating {} {name:?}: {e}", m.source, spec.api.kind)))?;
            created.push(object);
        }
        Ok(created)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::kubeconfig::TempDir;

    #[test]
    fn reads_multi_document_yaml_lists_and_json_in_folders() {
        let dir = TempDir::new().unwrap();
        let sub = dir.path().join("b-more");
        fs::create_dir(&sub).unwrap();
        fs::write(
            dir.path().join("a.yaml"),
            "# a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: two}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: ns1}}\n",
        )
        .unwrap();
        fs::write(
            sub.join("c.json"),
            r#"{"apiVersion":"v1","kind":"ConfigMapList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"three","namespace":"ns1"}}]}"#,
        )
        .unwrap();
        fs::write(sub.join("notes.txt"), "not a manifest").unwrap();
        fs::write(dir.path().join(".hidden.yaml"), "not: [valid").unwrap();
        let server = ApiServer::builder().compaction_interval(None).start().unwrap();
        let created = server.load_manifests(dir.path()).unwrap();
        let names: Vec<(&str, &str)> = created
            .iter()
            .map(|o| (o["kind"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("Namespace", "ns1"),
                ("Secret", "two"),
                ("ConfigMap", "one"),
                ("ConfigMap", "three")
            ]
        );
        assert_eq!(created[2]["metadata"]["namespace"], "default");
        assert_eq!(created[3]["metadata"]["namespace"], "ns1");
        assert!(created[0]["metadata"].get("namespace").is_none());
    }

    #[test]
    fn errors_name_the_file_and_document_and_create_nothing_before_resolving() {
        let dir = TempDir::new().unwrap();
        let file = dir.path().join("m.yaml");
        let server = ApiServer::builder().compaction_interval(None).start().unwrap();
        let cases = [
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\nkind: Widget\napiVersion: example.com/v1\n",
                "m.yaml#2: the server serves no kind \"Widget\" in apiVersion \"example.com/v1\"",
            ),
            (
                "apiVersion: v1\nmetadata: {name: x}\n",
                "m.yaml: the object has no kind",
            ),
            ("- 1\n- 2\n", "m.yaml: a manifest must be an object"),
            ("a: [1\n", "m.yaml: not YAML"),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n",
                "m.yaml: creating ConfigMap \"Bad_Name\": API error 422",
            ),
        ];
        for (text, want) in cases {
            fs::write(&file, text).unwrap();
            let err = server.load_manifests(&file).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        let cm = kube_informer::object::ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
        assert!(server.list_json(&cm, None).unwrap().is_empty(), "nothing created");
        let missing = server
            .load_manifests(dir.path().join("none.yaml"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("none.yaml"), "{missing}");
    }
}
