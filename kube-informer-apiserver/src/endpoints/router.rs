//! URL paths to resources (`/api/v1/namespaces/{ns}/{plural}/{name}/{sub}`, `/apis/{g}/{v}/…`, the legacy
//! `/watch/` prefix) and to discovery endpoints; methods to verbs.

use std::sync::Arc;

use crate::auth::review::{self, Review};
use crate::http::log::Verb;
use crate::http::request_info::RequestInfo;
use crate::registry::StoreInner;
use crate::registry::resource::ResourceSpec;

/// A non-resource path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Discovery {
    /// `/api`
    Api,
    /// `/apis`
    Apis,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1` (group "") or `/apis/{group}/{version}`
    GroupVersion(String, String),
    /// `/version`
    Version,
    /// `/healthz`, `/livez`, `/readyz`
    Health,
}

/// A path naming a resource collection, object or subresource.
#[derive(Clone, Debug)]
pub(crate) struct ResourcePath {
    pub(crate) spec: Arc<ResourceSpec>,
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
    /// The deprecated `/watch/` path prefix was used.
    pub(crate) watch_prefix: bool,
}

/// Where a path leads.
#[derive(Clone, Debug)]
pub(crate) enum Route {
    Discovery(Discovery),
    Resource(ResourcePath),
    /// `/openapi/…`: the rest of the path (`v2`, `v3`, `v3/apis/apps/v1`).
    OpenApi(String),
    /// `/apis/authorization.k8s.io/v1/…reviews`, `/apis/authentication.k8s.io/v1/…reviews` (and a local subject
    /// access review's namespace).
    Review(Review, Option<String>),
    NotFound,
}

/// Resolves a request's path, as [`RequestInfo::read`] decoded it, against the registered resources.
///
/// Trailing slashes are ignored: kube-apiserver routes these paths through go-restful, whose router (v3.11+, with
/// its default `TrimRightSlashEnabled = true`) trims the slashes at the end of a request path before matching, and
/// whose request-info parser (`splitPath`) does too; `/apis/` and `/apis/{group}/` are registered with the trailing
/// slash by the aggregator. So `/version/`, `/api/`, `/apis/apps/v1/`, `…/configmaps/` (the list) and
/// `…/configmaps/name/` (the object) are answered as without the slash.
pub(crate) fn route(info: &RequestInfo, store: &StoreInner) -> Route {
    let segs = info.segments();
    match segs.as_slice() {
        ["api"] => Route::Discovery(Discovery::Api),
        ["apis"] => Route::Discovery(Discovery::Apis),
        ["version"] => Route::Discovery(Discovery::Version),
        ["openapi", rest @ ..] if !rest.is_empty() => Route::OpenApi(rest.join("/")),
        ["healthz" | "livez" | "readyz", ..] => Route::Discovery(Discovery::Health),
        ["api", v] => Route::Discovery(Discovery::GroupVersion(String::new(), (*v).to_owned())),
        ["apis", g] => Route::Discovery(Discovery::Group((*g).to_owned())),
        ["apis", g, v] => Route::Discovery(Discovery::GroupVersion((*g).to_owned(), (*v).to_owned())),
        ["apis", g, review::VERSION, plural] if Review::find(g, plural).is_some_and(|r| !r.namespaced()) => {
            Route::Review(Review::find(g, plural).unwrap_or(Review::Access), None)
        }
        ["apis", review::GROUP, review::VERSION, "namespaces", ns, plural]
            if Review::find(review::GROUP, plural).is_some_and(Review::namespaced) =>
        {
            Route::Review(Review::LocalSubjectAccess, Some((*ns).to_owned()))
        }
        ["api", v, rest @ ..] => resource_route("", v, rest, store),
        ["apis", g, v, rest @ ..] => resource_route(g, v, rest, store),
        _ => Route::NotFound,
    }
}

fn find(store: &StoreInner, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceSpec>> {
    let id = if group.is_empty() {
        plural.to_owned()
    } else {
        format!("{plural}.{group}")
    };
    store.served(&id, version)
}

fn resource_route(group: &str, version: &str, rest: &[&str], store: &StoreInner) -> Route {
    let (watch_prefix, rest) = match rest {
        ["watch", tail @ ..] => (true, tail),
        _ => (false, rest),
    };
    let (spec, namespace, tail) = match rest {
        ["namespaces", ns, plural, tail @ ..] if !ns.is_empty() => {
            match find(store, group, version, plural).filter(|s| s.api.namespaced) {
                Some(spec) => (spec, Some((*ns).to_owned()), tail),
                None => match find(store, group, version, "namespaces") {
                    // `/api/v1/namespaces/{name}/status`: a subresource of a namespace.
                    // (any other name is no resource: 404, as no route of kube-apiserver matches).
                    Some(spec) if tail.is_empty() && group.is_empty() && spec.has_subresource(plural) => {
                        (spec, None, &rest[1..])
                    }
                    _ => return Route::NotFound,
                },
            }
        }
        [plural, tail @ ..] => match find(store, group, version, plural) {
            Some(spec) => (spec, None, tail),
            None => return Route::NotFound,
        },
        [] => return Route::NotFound,
    };
    let (name, subresource) = match tail {
        [] => (None, None),
        [name] if !name.is_empty() => (Some((*name).to_owned()), None),
        [name, sub] if !name.is_empty() && !sub.is_empty() => (Some((*name).to_owned()), Some((*sub).to_owned())),
        _ => return Route::NotFound,
    };
    // A namespaced object needs its namespace.
    if spec.api.namespaced && namespace.is_none() && name.is_some() {
        return Route::NotFound;
    }
    if subresource.as_deref().is_some_and(|s| !spec.has_subresource(s)) {
        return Route::NotFound;
    }
    Route::Resource(ResourcePath {
        spec,
        namespace,
        name,
        subresource,
        watch_prefix,
    })
}

/// The verb of a request on a resource path; `None` when the method is not allowed there (kube-apiserver's 405:
/// a built-in resource serves the verbs its catalog entry lists, a subresource those of its own).
pub(crate) fn verb(method: &str, path: &ResourcePath, watch_param: bool) -> Option<Verb> {
    let verb = method_verb(method, path, watch_param)?;
    let served = match &path.subresource {
        Some(sub) => path.spec.serves_on(sub, verb.as_str()),
        None => path.spec.serves(verb.as_str()),
    };
    served.then_some(verb)
}

fn method_verb(method: &str, path: &ResourcePath, watch_param: bool) -> Option<Verb> {
    let object = path.name.is_some();
    // A subresource is read, replaced, patched or created (a service account's token, a pod's eviction): never
    // listed, watched or deleted; which of these it serves is the catalog's (`verb`).
    if path.subresource.is_some() {
        return match method {
            "GET" if !path.watch_prefix => Some(Verb::Get),
            "PUT" => Some(Verb::Update),
            "PATCH" => Some(Verb::Patch),
            "POST" => Some(Verb::Create),
            _ => None,
        };
    }
    Some(match (method, object) {
        // A watch of one object (`/watch/…/{name}` or `…/{name}?watch=true`) watches that name.
        ("GET", _) if path.watch_prefix || watch_param => Verb::Watch,
        ("GET", false) => Verb::List,
        ("GET", true) => Verb::Get,
        ("POST", false) => Verb::Create,
        ("PUT", true) => Verb::Update,
        ("PATCH", true) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        ("DELETE", false) => Verb::DeleteCollection,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Store;

    fn store() -> Store {
        Store::new(1, 10, ResourceSpec::defaults(), crate::admission::HOOKS)
    }

    /// (resource id, namespace, name, subresource, watch prefix)
    type Resolved = (String, Option<String>, Option<String>, Option<String>, bool);

    /// A path as sent, read as a request reads it.
    fn at(path: &str) -> RequestInfo {
        RequestInfo::read("GET", path, "").expect(path)
    }

    fn resource(path: &str) -> Option<Resolved> {
        let s = store();
        match route(&RequestInfo::read("GET", path, "")?, &s.lock()) {
            Route::Resource(r) => Some((r.spec.id(), r.namespace, r.name, r.subresource, r.watch_prefix)),
            _ => None,
        }
    }

    #[test]
    fn routes_core_and_group_resources() {
        let s = |x: &str| Some(x.to_owned());
        assert_eq!(
            resource("/api/v1/configmaps"),
            Some(("configmaps".into(), None, None, None, false))
        );
        assert_eq!(
            resource("/api/v1/namespaces/default/configmaps/a%2Eb"),
            Some(("configmaps".into(), s("default"), s("a.b"), None, false))
        );
        assert_eq!(
            resource("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l"),
            Some((
                "leases.coordination.k8s.io".into(),
                s("kube-system"),
                s("l"),
                None,
                false
            ))
        );
        assert_eq!(
            resource("/api/v1/namespaces/default/pods/p/status"),
            Some(("pods".into(), s("default"), s("p"), s("status"), false))
        );
        assert_eq!(
            resource("/api/v1/namespaces/ns1"),
            Some(("namespaces".into(), None, s("ns1"), None, false))
        );
        assert_eq!(
            resource("/api/v1/namespaces/ns1/status"),
            Some(("namespaces".into(), None, s("ns1"), s("status"), false))
        );
        assert_eq!(
            resource("/api/v1/watch/namespaces/ns/configmaps"),
            Some(("configmaps".into(), s("ns"), None, None, true))
        );
        assert_eq!(
            resource("/api/v1/nodes/n1"),
            Some(("nodes".into(), None, s("n1"), None, false))
        );
    }

    #[test]
    fn trailing_slashes_are_ignored_as_go_restful_trims_them() {
        let s = |x: &str| Some(x.to_owned());
        assert_eq!(
            resource("/api/v1/namespaces/default/configmaps/"),
            Some(("configmaps".into(), s("default"), None, None, false))
        );
        assert_eq!(
            resource("/api/v1/namespaces/default/configmaps/a//"),
            Some(("configmaps".into(), s("default"), s("a"), None, false))
        );
        assert_eq!(
            resource("/apis/apps/v1/namespaces/d/deployments/x/scale/"),
            Some(("deployments.apps".into(), s("d"), s("x"), s("scale"), false))
        );
        let st = store();
        let g = st.lock();
        assert!(matches!(
            route(&at("/version/"), &g),
            Route::Discovery(Discovery::Version)
        ));
        assert!(matches!(route(&at("/api/"), &g), Route::Discovery(Discovery::Api)));
        assert!(matches!(route(&at("/apis/"), &g), Route::Discovery(Discovery::Apis)));
        assert!(matches!(
            route(&at("/apis/apps/"), &g),
            Route::Discovery(Discovery::Group(_))
        ));
        assert!(matches!(
            route(&at("/apis/apps/v1/"), &g),
            Route::Discovery(Discovery::GroupVersion(..))
        ));
        assert!(matches!(
            route(&at("/api/v1/"), &g),
            Route::Discovery(Discovery::GroupVersion(..))
        ));
    }

    #[test]
    fn unknown_or_malformed_paths_go_nowhere() {
        for p in [
            "/api/v2/configmaps",
            "/api/v1/widgets",
            "/apis/apps/v2/deployments",
            "/api/v1/configmaps/x",
            "/api/v1/namespaces/default/configmaps/a%2Fb",
            "/api/v1/namespaces/default/configmaps/a/b/c",
            "/api/v1/namespaces/default/configmaps/%zz",
            "/api/v1/namespaces//configmaps",
            "//api/v1/configmaps",
            "/",
        ] {
            assert!(resource(p).is_none(), "{p}");
        }
        let s = store();
        assert!(matches!(
            route(&at("/apis"), &s.lock()),
            Route::Discovery(Discovery::Apis)
        ));
        assert!(
            matches!(route(&at("/api/v1"), &s.lock()), Route::Discovery(Discovery::GroupVersion(g, _)) if g.is_empty())
        );
        assert!(matches!(route(&at("/nope"), &s.lock()), Route::NotFound));
    }
}
