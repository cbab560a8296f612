//! Discovery: `/api`, `/apis`, `/apis/{g}`, `/api/v1` and `/apis/{g}/{v}` (legacy, unaggregated documents),
//! `/version`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};

use super::conversion;
use super::errors::{self, Failure};
use super::resource::ResourceSpec;
use super::review::{self, Review};
use super::router::Discovery;

/// The Kubernetes version the server claims in `/version`.
pub(crate) const MAJOR: &str = "1";
/// Minor version.
pub(crate) const MINOR: &str = "34";

/// Group → versions, most preferred first by Kubernetes' version priority (GA, then beta, then alpha, newer
/// first); the access reviews' `authorization.k8s.io/v1` is always served.
fn groups(specs: &[Arc<ResourceSpec>]) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    out.insert(review::GROUP, vec![review::VERSION]);
    out.insert(review::AUTHENTICATION_GROUP, vec![review::VERSION]);
    for s in specs.iter().filter(|s| !s.api.group.is_empty()) {
        let versions = out.entry(&s.api.group).or_default();
        if !versions.contains(&s.api.version.as_str()) {
            versions.push(&s.api.version);
        }
    }
    for versions in out.values_mut() {
        versions.sort_by(|a, b| conversion::priority(a, b));
    }
    out
}

fn group_json(name: &str, versions: &[&str]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(versions[0]),
    })
}

fn resource_list(group: &str, version: &str, specs: &[Arc<ResourceSpec>]) -> Option<Value> {
    let mut resources = Vec::new();
    for s in specs
        .iter()
        .filter(|s| s.api.group == group && s.api.version == version)
    {
        let mut r = json!({
            "name": s.api.plural,
            "singularName": s.singular(),
            "namespaced": s.api.namespaced,
            "kind": s.api.kind,
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        });
        if !s.short_names.is_empty() {
            r["shortNames"] = json!(s.short_names);
        }
        if !s.categories.is_empty() {
            r["categories"] = json!(s.categories);
        }
        resources.push(r);
        if s.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", s.api.plural),
                "singularName": "",
                "namespaced": s.api.namespaced,
                "kind": s.api.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if s.scale.is_some() {
            // The group/version/kind of the subresource's own type: client-go's scale client reads them.
            resources.push(json!({
                "name": format!("{}/scale", s.api.plural),
                "singularName": "",
                "namespaced": s.api.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    if version == review::VERSION {
        resources.extend(Review::discovery(group));
    }
    if group.is_empty() && specs.iter().any(|s| s.id() == "serviceaccounts") {
        // A service account's TokenRequest subresource.
        resources.push(json!({
            "name": "serviceaccounts/token", "singularName": "", "namespaced": true,
            "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"],
        }));
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

/// The JSON answer to a discovery path, or 404.
pub(crate) fn answer(path: &Discovery, specs: &[Arc<ResourceSpec>], addr: SocketAddr) -> Result<Value, Failure> {
    match path {
        Discovery::Api => Ok(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr.to_string()}],
        })),
        Discovery::Apis => {
            let list: Vec<Value> = groups(specs).iter().map(|(g, v)| group_json(g, v)).collect();
            Ok(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": list}))
        }
        Discovery::Group(g) => {
            let all = groups(specs);
            let versions = all.get(g.as_str()).ok_or_else(errors::no_such_path)?;
            let mut v = group_json(g, versions);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            Ok(v)
        }
        Discovery::GroupVersion(g, v) => resource_list(g, v, specs).ok_or_else(errors::no_such_path),
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
        assert_eq!(
            names,
            [
                "apps",
                "authentication.k8s.io",
                "authorization.k8s.io",
                "coordination.k8s.io"
            ]
        );
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
