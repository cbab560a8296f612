//! Discovery: `/api`, `/apis`, `/apis/{g}`, `/api/v1` and `/apis/{g}/{v}` (legacy, unaggregated documents),
//! `/version`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::errors::{self, Failure};
use crate::auth::review::{self, Review};
use crate::endpoints::router::Discovery;
use crate::registry::builtin_catalog;
use crate::registry::conversion;
use crate::registry::resource::ResourceSpec;

pub(crate) use crate::api::util::{MAJOR, MINOR};

/// A resource as discovery describes it (legacy `APIResource`, aggregated `APIResourceDiscovery`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Described {
    pub(crate) name: String,
    pub(crate) singular: String,
    pub(crate) namespaced: bool,
    pub(crate) kind: String,
    pub(crate) verbs: Vec<String>,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) storage_version_hash: Option<String>,
    pub(crate) subresources: Vec<DescribedSubresource>,
}

/// A subresource as discovery describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DescribedSubresource {
    pub(crate) name: String,
    pub(crate) kind: String,
    /// Set when the subresource's kind is another group's (`autoscaling`/`v1` `Scale`).
    pub(crate) group_version: Option<(String, String)>,
    pub(crate) verbs: Vec<String>,
}

const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// How discovery describes a registered resource: a built-in one as its catalog entry says, any other with every
/// verb and the `status` and `scale` subresources it has.
pub(crate) fn describe(s: &ResourceSpec) -> Described {
    let subresources = match s.catalog {
        Some(entry) => entry
            .subresources
            .iter()
            .map(|sub| DescribedSubresource {
                name: sub.name.clone(),
                kind: sub.kind.clone(),
                group_version: sub.group.clone().zip(sub.version.clone()),
                verbs: sub.verbs.clone(),
            })
            .collect(),
        None => {
            let mut subs = Vec::new();
            if s.scale.is_some() {
                // The group/version/kind of the subresource's own type: client-go's scale client reads them.
                subs.push(DescribedSubresource {
                    name: "scale".into(),
                    kind: "Scale".into(),
                    group_version: Some(("autoscaling".into(), "v1".into())),
                    verbs: strings(&["get", "patch", "update"]),
                });
            }
            if s.status_subresource {
                subs.push(DescribedSubresource {
                    name: "status".into(),
                    kind: s.api.kind.clone(),
                    group_version: None,
                    verbs: strings(&["get", "patch", "update"]),
                });
            }
            subs
        }
    };
    Described {
        name: s.api.plural.clone(),
        singular: s.singular(),
        namespaced: s.api.namespaced,
        kind: s.api.kind.clone(),
        verbs: s.catalog.map_or_else(|| strings(&ALL_VERBS), |e| e.verbs.clone()),
        short_names: s.short_names.clone(),
        categories: s.categories.clone(),
        storage_version_hash: s.catalog.and_then(|e| e.storage_version_hash.clone()),
        subresources,
    }
}

/// The resources kube-apiserver serves without storing anything (access and token reviews, bindings): the
/// catalog's when the built-in resources are registered, else the access reviews the server always answers.
fn unstored(builtins: bool) -> Vec<(String, String, Described)> {
    if !builtins {
        return [review::GROUP, review::AUTHENTICATION_GROUP]
            .into_iter()
            .flat_map(|g| Review::discovery(g).into_iter().map(move |v| (g, v)))
            .map(|(g, v)| {
                let text = |k: &str| v[k].as_str().unwrap_or("").to_owned();
                let d = Described {
                    name: text("name"),
                    singular: text("singularName"),
                    namespaced: v["namespaced"].as_bool().unwrap_or(false),
                    kind: text("kind"),
                    verbs: vec!["create".to_owned()],
                    short_names: Vec::new(),
                    categories: Vec::new(),
                    storage_version_hash: None,
                    subresources: Vec::new(),
                };
                (g.to_owned(), review::VERSION.to_owned(), d)
            })
            .collect();
    }
    builtin_catalog::entries()
        .iter()
        .filter(|e| !e.stored())
        .map(|e| {
            let d = Described {
                name: e.plural.clone(),
                singular: e.singular.clone(),
                namespaced: e.namespaced,
                kind: e.kind.clone(),
                verbs: e.verbs.clone(),
                short_names: e.short_names.clone(),
                categories: e.categories.clone(),
                storage_version_hash: None,
                subresources: Vec::new(),
            };
            (e.group.clone(), e.version.clone(), d)
        })
        .collect()
}

/// Everything discovery lists: group → version → resources (sorted by name). Groups come in kube-apiserver's
/// order (the built-in groups by their API services' priority, then the others by name), versions most preferred
/// first by Kubernetes' version priority.
pub(crate) struct Catalogue {
    pub(crate) groups: Vec<(String, Vec<GroupVersion>)>,
}

/// A version of a group and its resources.
pub(crate) type GroupVersion = (String, Vec<Described>);

impl Catalogue {
    pub(crate) fn new(specs: &[Arc<ResourceSpec>]) -> Catalogue {
        let builtins = specs.iter().any(|s| s.catalog.is_some());
        let mut all: BTreeMap<(usize, String), BTreeMap<String, Vec<Described>>> = BTreeMap::new();
        let mut add = |group: &str, version: &str, d: Described| {
            all.entry((builtin_catalog::group_rank(group), group.to_owned()))
                .or_default()
                .entry(version.to_owned())
                .or_default()
                .push(d);
        };
        for s in specs {
            add(&s.api.group, &s.api.version, describe(s));
        }
        for (g, v, d) in unstored(builtins) {
            add(&g, &v, d);
        }
        let groups = all
            .into_iter()
            .map(|((_, group), versions)| {
                let mut versions: Vec<GroupVersion> = versions.into_iter().collect();
                versions.sort_by(|a, b| conversion::priority(&a.0, &b.0));
                for (_, resources) in &mut versions {
                    resources.sort_by(|a, b| a.name.cmp(&b.name));
                }
                (group, versions)
            })
            .collect();
        Catalogue { groups }
    }

    fn group(&self, name: &str) -> Option<&[GroupVersion]> {
        self.groups.iter().find(|(g, _)| g == name).map(|(_, v)| v.as_slice())
    }
}

fn group_json(name: &str, versions: &[GroupVersion]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(|(v, _)| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(&versions[0].0),
    })
}

/// The legacy `APIResource`s of a described resource: itself, then one per subresource (`pods/status`).
fn legacy_resources(d: &Described, out: &mut Vec<(String, Value)>) {
    let mut r = json!({
        "name": d.name,
        "singularName": d.singular,
        "namespaced": d.namespaced,
        "kind": d.kind,
        "verbs": d.verbs,
    });
    if !d.short_names.is_empty() {
        r["shortNames"] = json!(d.short_names);
    }
    if !d.categories.is_empty() {
        r["categories"] = json!(d.categories);
    }
    if let Some(hash) = &d.storage_version_hash {
        r["storageVersionHash"] = json!(hash);
    }
    out.push((d.name.clone(), r));
    for sub in &d.subresources {
        let name = format!("{}/{}", d.name, sub.name);
        let mut r = json!({"name": name, "singularName": "", "namespaced": d.namespaced});
        if let Some((g, v)) = &sub.group_version {
            r["group"] = json!(g);
            r["version"] = json!(v);
        }
        r["kind"] = json!(sub.kind);
        r["verbs"] = json!(sub.verbs);
        out.push((name, r));
    }
}

fn resource_list(group: &str, version: &str, catalogue: &Catalogue) -> Option<Value> {
    let described = catalogue.group(group)?.iter().find(|(v, _)| v == version)?;
    let mut resources = Vec::new();
    for d in &described.1 {
        legacy_resources(d, &mut resources);
    }
    // kube-apiserver's installer lists the paths sorted: `pods`, `pods/attach`, …, `podtemplates`.
    resources.sort_by(|a, b| a.0.cmp(&b.0));
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = resources.into_iter().map(|(_, r)| r).collect();
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

/// A discovery answer's bytes as kube-apiserver writes them: Go's `encoding/json` over meta/v1's `APIVersions`,
/// `APIGroupList`, `APIGroup`, `APIResourceList` and apimachinery's `version.Info`, their fields in declaration
/// order. `/api`'s `APIVersions` has a `kind` and no `apiVersion`, as kube-apiserver sends it.
pub(crate) fn to_vec(path: &Discovery, v: &Value) -> Vec<u8> {
    use crate::serializer::json;
    match (path, v) {
        (Discovery::Api, Value::Object(o)) => {
            let mut fields = o.clone();
            let kind = fields.remove("kind");
            let body = json::to_vec_as(&Value::Object(fields), "meta.v1.APIVersions");
            match kind {
                // TypeMeta's `kind`, then the struct's fields.
                Some(kind) if body.len() > 2 => {
                    let head = format!("{{\"kind\":{kind},");
                    [head.as_bytes(), &body[1..]].concat()
                }
                _ => json::to_vec(v),
            }
        }
        (Discovery::Version, _) => json::to_vec_as(v, "version.Info"),
        _ => json::to_vec(v),
    }
}

/// The JSON answer to a discovery path, or 404.
pub(crate) fn answer(path: &Discovery, specs: &[Arc<ResourceSpec>], addr: SocketAddr) -> Result<Value, Failure> {
    let catalogue = || Catalogue::new(specs);
    match path {
        Discovery::Api => Ok(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr.to_string()}],
        })),
        Discovery::Apis => {
            let list: Vec<Value> = catalogue()
                .groups
                .iter()
                .filter(|(g, _)| !g.is_empty())
                .map(|(g, v)| group_json(g, v))
                .collect();
            Ok(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": list}))
        }
        Discovery::Group(g) if !g.is_empty() => {
            let catalogue = catalogue();
            let versions = catalogue.group(g).ok_or_else(errors::no_such_path)?;
            let mut v = group_json(g, versions);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            Ok(v)
        }
        Discovery::Group(_) => Err(errors::no_such_path()),
        Discovery::GroupVersion(g, v) => resource_list(g, v, &catalogue()).ok_or_else(errors::no_such_path),
        Discovery::Version => Ok(json!({
            "major": MAJOR,
            "minor": MINOR,
            "gitVersion": format!("v{MAJOR}.{MINOR}.0"),
            "gitCommit": "kube-informer-embedded-apiserver",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24",
            "compiler": "gc",
            "platform": "linux/amd64",
        })),
        Discovery::Health => Ok(Value::String("ok".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_groups_and_resources() {
        let specs: Vec<_> = ResourceSpec::defaults().into_iter().map(Arc::new).collect();
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let apis = answer(&Discovery::Apis, &specs, addr).unwrap();
        let names: Vec<&str> = apis["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        // kube-apiserver's order: the API services' priorities, not the names'.
        assert_eq!(
            names[..4],
            [
                "apiregistration.k8s.io",
                "apps",
                "events.k8s.io",
                "authentication.k8s.io"
            ]
        );
        // Every stable group of kube-apiserver 1.34 (CRDs' apiextensions.k8s.io comes with the server's CRD
        // resource, not the defaults).
        assert_eq!(names.len(), 19, "{names:?}");
        let core = answer(&Discovery::GroupVersion(String::new(), "v1".into()), &specs, addr).unwrap();
        assert_eq!(core["groupVersion"], "v1");
        let res = core["resources"].as_array().unwrap();
        assert!(res.iter().any(|r| r["name"] == "pods/status"));
        let cm = res.iter().find(|r| r["name"] == "configmaps").unwrap();
        assert_eq!(
            (cm["kind"].as_str(), cm["namespaced"].as_bool()),
            (Some("ConfigMap"), Some(true))
        );
        assert_eq!(cm["shortNames"][0], "cm");
        assert!(cm.get("categories").is_none());
        let pods = res.iter().find(|r| r["name"] == "pods").unwrap();
        assert_eq!(pods["categories"], serde_json::json!(["all"]));
        // Sorted by name as kube-apiserver's installer sorts its paths, subresources after their resource.
        let listed: Vec<&str> = res.iter().map(|r| r["name"].as_str().unwrap()).collect();
        let mut sorted = listed.clone();
        sorted.sort_unstable();
        assert_eq!(listed, sorted);
        for name in [
            "bindings",
            "componentstatuses",
            "pods/log",
            "pods/exec",
            "namespaces/finalize",
            "serviceaccounts",
        ] {
            assert!(listed.contains(&name), "{name}");
        }
        let eviction = res.iter().find(|r| r["name"] == "pods/eviction").unwrap();
        assert_eq!(
            serde_json::json!([
                eviction["group"],
                eviction["version"],
                eviction["kind"],
                eviction["verbs"]
            ]),
            serde_json::json!(["policy", "v1", "Eviction", ["create"]])
        );
        let ns = res.iter().find(|r| r["name"] == "namespaces").unwrap();
        assert_eq!(
            ns["verbs"],
            serde_json::json!(["create", "delete", "get", "list", "patch", "update", "watch"])
        );
        assert_eq!(cm["storageVersionHash"], "qFsyl6wFWjQ=");
        assert_eq!(
            answer(&Discovery::GroupVersion("apps".into(), "v2".into()), &specs, addr)
                .unwrap_err()
                .code,
            404
        );
        assert_eq!(
            answer(&Discovery::Group("apps".into()), &specs, addr).unwrap()["preferredVersion"]["version"],
            "v1"
        );
    }
}
