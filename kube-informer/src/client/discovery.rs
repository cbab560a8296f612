//! Discovery: turning a name a person types (`deployments.apps`, `cm`, `ConfigMap`) into an [`ApiResource`], from
//! the server's `/api`, `/apis` and resource lists — fetched lazily, group by group, and cached.
//!
//! Matching follows kubectl: `group/version/plural` and `plural.group` are exact; a bare name matches, in this order
//! of strength, a plural, a singular, a short name, then a kind (case-insensitively); within one strength the core
//! group wins, then groups in the server's order, each at its preferred version.

use std::collections::HashMap;
use std::sync::Arc;

use log::debug;
use parking_lot::Mutex;
use serde::Deserialize;

use crate::object::ApiResource;
use crate::{Error, Result};

/// One resource of a resource list.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct ResourceInfo {
    name: String,
    #[serde(default)]
    singular_name: String,
    #[serde(default)]
    namespaced: bool,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    short_names: Vec<String>,
}

#[derive(Deserialize)]
struct ResourceList {
    #[serde(default)]
    resources: Vec<ResourceInfo>,
}

#[derive(Deserialize)]
struct ApiVersions {
    #[serde(default)]
    versions: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupVersionRef {
    #[serde(default)]
    version: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiGroup {
    name: String,
    #[serde(default)]
    versions: Vec<GroupVersionRef>,
    preferred_version: Option<GroupVersionRef>,
}

#[derive(Deserialize)]
struct ApiGroupList {
    #[serde(default)]
    groups: Vec<ApiGroup>,
}

/// A group and its preferred version.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Group {
    name: String,
    preferred: String,
    versions: Vec<String>,
}

/// What is known of the server's API; cloned out of the cache so no lock is held across requests.
#[derive(Clone, Default)]
struct Snapshot {
    /// Core group first, then `/apis` in server order; `None` until fetched.
    groups: Option<Arc<Vec<Group>>>,
    /// Resource lists by `group/version` (`v1` for core); `None` = the list could not be fetched.
    lists: HashMap<String, Option<Arc<Vec<ResourceInfo>>>>,
}

/// Fetches an absolute path.
pub(crate) type Fetch<'a> = dyn FnMut(&str) -> Result<Vec<u8>> + 'a;

fn gv_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

impl Snapshot {
    fn groups(&mut self, fetch: &mut Fetch<'_>) -> Result<Arc<Vec<Group>>> {
        if let Some(g) = &self.groups {
            return Ok(Arc::clone(g));
        }
        let core: ApiVersions = super::api::decode_json(&fetch("/api")?)?;
        let mut groups = vec![Group {
            name: String::new(),
            preferred: core.versions.first().cloned().unwrap_or_else(|| "v1".into()),
            versions: core.versions,
        }];
        let list: ApiGroupList = super::api::decode_json(&fetch("/apis")?)?;
        for g in list.groups {
            let versions: Vec<String> = g.versions.into_iter().map(|v| v.version).collect();
            let preferred = g
                .preferred_version
                .map(|v| v.version)
                .or_else(|| versions.first().cloned())
                .unwrap_or_default();
            groups.push(Group {
                name: g.name,
                preferred,
                versions,
            });
        }
        let groups = Arc::new(groups);
        self.groups = Some(Arc::clone(&groups));
        Ok(groups)
    }

    /// The resources of one group version; `None` when the server could not list them (an aggregated API that is
    /// down is skipped, as kubectl skips it).
    fn resources(&mut self, group: &str, version: &str, fetch: &mut Fetch<'_>) -> Option<Arc<Vec<ResourceInfo>>> {
        let key = gv_key(group, version);
        if let Some(cached) = self.lists.get(&key) {
            return cached.clone();
        }
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let list = match fetch(&path).and_then(|b| super::api::decode_json::<ResourceList>(&b)) {
            Ok(l) => Some(Arc::new(
                l.resources
                    .into_iter()
                    .filter(|r| !r.name.contains('/'))
                    .collect::<Vec<_>>(),
            )),
            Err(e) => {
                debug!("discovery: cannot list {path}: {e}");
                None
            }
        };
        self.lists.insert(key, list.clone());
        list
    }

    fn resolve(&mut self, input: &str, fetch: &mut Fetch<'_>) -> Result<Option<ApiResource>> {
        let input = input.trim();
        if input.is_empty() {
            return Err(Error::InvalidInput("empty resource name".into()));
        }
        // group/version/resource or version/resource (core).
        let parts: Vec<&str> = input.split('/').collect();
        if parts.len() > 1 {
            let (group, version, name) = match parts.as_slice() {
                [v, n] => ("", *v, *n),
                [g, v, n] => (*g, *v, *n),
                _ => return Err(Error::InvalidInput(format!("{input:?} is not group/version/resource"))),
            };
            let Some(list) = self.resources(group, version, fetch) else {
                return Ok(None);
            };
            return Ok(find(&list, name, Strength::ANY).map(|r| to_resource(group, version, r)));
        }
        let groups = self.groups(fetch)?;
        // plural.group or Kind.group.
        if let Some((name, group)) = input.split_once('.')
            && let Some(g) = groups.iter().find(|g| g.name == group)
            && let Some(list) = self.resources(&g.name, &g.preferred, fetch)
            && let Some(r) = find(&list, name, Strength::ANY)
        {
            return Ok(Some(to_resource(&g.name, &g.preferred, r)));
        }
        for strength in Strength::ORDER {
            for g in groups.iter() {
                if let Some(list) = self.resources(&g.name, &g.preferred, fetch)
                    && let Some(r) = find(&list, input, &[strength])
                {
                    return Ok(Some(to_resource(&g.name, &g.preferred, r)));
                }
            }
        }
        Ok(None)
    }
}

/// How a name matches a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Strength {
    Plural,
    Singular,
    Short,
    Kind,
}

impl Strength {
    const ORDER: [Strength; 4] = [Strength::Plural, Strength::Singular, Strength::Short, Strength::Kind];
    const ANY: &'static [Strength] = &Strength::ORDER;
}

fn find<'a>(list: &'a [ResourceInfo], name: &str, strengths: &[Strength]) -> Option<&'a ResourceInfo> {
    strengths.iter().find_map(|s| {
        list.iter().find(|r| match s {
            Strength::Plural => r.name == name,
            Strength::Singular => !r.singular_name.is_empty() && r.singular_name == name,
            Strength::Short => r.short_names.iter().any(|n| n == name),
            Strength::Kind => r.kind.eq_ignore_ascii_case(name),
        })
    })
}

fn to_resource(group: &str, version: &str, r: &ResourceInfo) -> ApiResource {
    ApiResource::new(group, version, r.kind.clone(), r.name.clone(), r.namespaced)
}

/// The discovery cache of a client (shared by its clones and isolated copies).
#[derive(Default)]
pub(crate) struct Cache {
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    snapshot: Snapshot,
    resolved: HashMap<String, ApiResource>,
}

impl Cache {
    /// Resolves `name`, fetching what is missing with `fetch`. A miss on cached data refreshes the cache once (a
    /// CRD may have been installed since).
    pub(crate) fn resolve(&self, name: &str, fetch: &mut Fetch<'_>) -> Result<ApiResource> {
        let (mut snapshot, had_data) = {
            let st = self.state.lock();
            if let Some(r) = st.resolved.get(name) {
                return Ok(r.clone());
            }
            (
                st.snapshot.clone(),
                st.snapshot.groups.is_some() || !st.snapshot.lists.is_empty(),
            )
        };
        let mut found = snapshot.resolve(name, fetch)?;
        if found.is_none() && had_data {
            snapshot = Snapshot::default();
            found = snapshot.resolve(name, fetch)?;
        }
        let mut st = self.state.lock();
        st.snapshot = snapshot;
        match found {
            Some(r) => {
                st.resolved.insert(name.to_owned(), r.clone());
                Ok(r)
            }
            None => Err(Error::InvalidInput(format!(
                "the server has no resource named {name:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake server: path -> body, counting requests.
    fn server() -> impl FnMut(&str) -> Result<Vec<u8>> {
        move |path: &str| {
            let body = match path {
                "/api" => r#"{"kind":"APIVersions","versions":["v1"]}"#,
                "/apis" => {
                    r#"{"kind":"APIGroupList","groups":[
                    {"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
                    {"name":"metrics.k8s.io","versions":[{"version":"v1beta1"}],"preferredVersion":{"version":"v1beta1"}},
                    {"name":"example.com","versions":[{"version":"v1"},{"version":"v1alpha1"}],"preferredVersion":{"version":"v1"}}]}"#
                }
                "/api/v1" => {
                    r#"{"kind":"APIResourceList","groupVersion":"v1","resources":[
                    {"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","shortNames":["cm"]},
                    {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","shortNames":["po"]},
                    {"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod"},
                    {"name":"nodes","singularName":"node","namespaced":false,"kind":"Node","shortNames":["no"]}]}"#
                }
                "/apis/apps/v1" => {
                    r#"{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
                    {"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","shortNames":["deploy"]}]}"#
                }
                "/apis/example.com/v1" => {
                    r#"{"kind":"APIResourceList","resources":[
                    {"name":"widgets","singularName":"widget","namespaced":false,"kind":"Widget"},
                    {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod"}]}"#
                }
                "/apis/example.com/v1alpha1" => {
                    r#"{"kind":"APIResourceList","resources":[{"name":"widgets","namespaced":true,"kind":"Widget"}]}"#
                }
                _ => {
                    return Err(Error::Api(Box::new(crate::object::Status::failure(
                        503,
                        "ServiceUnavailable",
                        "down",
                    ))));
                }
            };
            Ok(body.as_bytes().to_vec())
        }
    }

    #[test]
    fn resolves_every_spelling() {
        let cache = Cache::default();
        let mut fetch = server();
        let r = |n: &str, f: &mut dyn FnMut(&str) -> Result<Vec<u8>>| cache.resolve(n, f).unwrap();
        let cm = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
        for name in [
            "configmaps",
            "configmap",
            "cm",
            "ConfigMap",
            "configMap",
            "v1/configmaps",
        ] {
            assert_eq!(r(name, &mut fetch), cm, "{name}");
        }
        let deploy = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
        for name in [
            "deployments",
            "deployments.apps",
            "Deployment.apps",
            "apps/v1/deployments",
            "deploy",
            "Deployment",
        ] {
            assert_eq!(r(name, &mut fetch), deploy, "{name}");
        }
        // Core wins over a group defining the same plural; an explicit group picks that group.
        assert_eq!(r("pods", &mut fetch).group, "");
        assert_eq!(r("pods.example.com", &mut fetch).group, "example.com");
        // The preferred version unless the version is explicit.
        assert_eq!(r("widgets", &mut fetch).version, "v1");
        let alpha = r("example.com/v1alpha1/widgets", &mut fetch);
        assert_eq!((alpha.version.as_str(), alpha.namespaced), ("v1alpha1", true));
        // Subresources are not resources.
        assert!(cache.resolve("pods/status", &mut fetch).is_err());
    }

    #[test]
    fn unknown_names_are_clear_errors_and_results_are_cached() {
        let cache = Cache::default();
        let calls = std::cell::Cell::new(0);
        let mut inner = server();
        let mut fetch = |p: &str| {
            calls.set(calls.get() + 1);
            inner(p)
        };
        let e = cache.resolve("gizmos", &mut fetch).unwrap_err().to_string();
        assert!(e.contains("no resource named \"gizmos\""), "{e}");
        cache.resolve("cm", &mut fetch).unwrap();
        let before = calls.get();
        cache.resolve("cm", &mut fetch).unwrap();
        assert_eq!(calls.get(), before, "a resolved name is served from the cache");
    }
}
