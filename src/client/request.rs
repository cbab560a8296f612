//! Request building: method, path, query, content type and body of every call — pure, no I/O.

use serde::Serialize;

use super::params::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, Query, WatchParams, percent_encode_into,
};
use crate::object::ApiResource;
use crate::{Error, Result};

/// HTTP methods the API uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

/// One request, before authentication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) method: Method,
    /// Absolute path below the server URL (`/api/v1/namespaces/default/configmaps`).
    pub(crate) path: String,
    /// Query string without `?` (may be empty).
    pub(crate) query: String,
    /// `Content-Type` of the body.
    pub(crate) content_type: Option<&'static str>,
    pub(crate) body: Option<Vec<u8>>,
}

impl Request {
    fn new(method: Method, path: String, query: Query) -> Self {
        Request {
            method,
            path,
            query: query.into_string(),
            content_type: None,
            body: None,
        }
    }

    /// A GET of an absolute path (discovery).
    pub(crate) fn get_path(path: &str) -> Self {
        Request::new(Method::Get, path.to_owned(), Query::default())
    }

    /// `path?query`.
    pub(crate) fn path_and_query(&self) -> String {
        if self.query.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{}", self.path, self.query)
        }
    }

    /// `GET /path` without the query, for messages (queries can be long).
    pub(crate) fn describe(&self) -> String {
        format!("{} {}", self.method.as_str(), self.path)
    }

    fn json_body<T: Serialize + ?Sized>(mut self, content_type: &'static str, body: &T) -> Result<Self> {
        self.body = Some(serde_json::to_vec(body).map_err(|e| Error::Serialize(e.to_string()))?);
        self.content_type = Some(content_type);
        Ok(self)
    }
}

/// Checks a name or namespace the way client-go's `IsValidPathSegmentName` does, so it cannot change the path.
fn check_segment(what: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::InvalidInput(format!("{what} is empty")));
    }
    if value == "." || value == ".." || value.contains('/') || value.contains('%') {
        return Err(Error::InvalidInput(format!(
            "{what} {value:?} cannot be used in a URL path (it may not be '.', '..', or contain '/' or '%')"
        )));
    }
    Ok(())
}

/// Where requests of one `Api` go: a resource and an optional namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target<'a> {
    pub(crate) resource: &'a ApiResource,
    /// `None`: all namespaces (or a cluster-scoped resource).
    pub(crate) namespace: Option<&'a str>,
}

impl Target<'_> {
    /// The collection path (checks the namespace).
    fn collection(&self) -> Result<String> {
        let ns = self.namespace.filter(|_| self.resource.namespaced);
        let mut p = self.resource.base_path();
        if let Some(ns) = ns {
            check_segment("namespace", ns)?;
            p.push_str("/namespaces/");
            percent_encode_into(&mut p, ns);
        }
        p.push('/');
        p.push_str(&self.resource.plural);
        Ok(p)
    }

    /// The path of one object, with an optional subresource. A namespaced resource needs a namespace here.
    fn object(&self, name: &str, subresource: Option<&str>) -> Result<String> {
        check_segment("name", name)?;
        if self.resource.namespaced && self.namespace.is_none() {
            return Err(Error::InvalidInput(format!(
                "{} is namespaced: use Api::namespaced (or Api::default_namespaced) to address one object",
                self.resource.qualified_name()
            )));
        }
        let mut p = self.collection()?;
        p.push('/');
        percent_encode_into(&mut p, name);
        if let Some(sub) = subresource {
            p.push('/');
            p.push_str(sub);
        }
        Ok(p)
    }

    /// Creating needs a namespace for namespaced resources, like addressing one object.
    fn for_create(&self) -> Result<String> {
        if self.resource.namespaced && self.namespace.is_none() {
            return Err(Error::InvalidInput(format!(
                "{} is namespaced: use Api::namespaced (or Api::default_namespaced) to create one",
                self.resource.qualified_name()
            )));
        }
        self.collection()
    }

    pub(crate) fn list(&self, lp: &ListParams) -> Result<Request> {
        let mut q = Query::default();
        lp.append_to(&mut q);
        Ok(Request::new(Method::Get, self.collection()?, q))
    }

    pub(crate) fn watch(&self, wp: &WatchParams) -> Result<Request> {
        let mut q = Query::default();
        wp.append_to(&mut q);
        Ok(Request::new(Method::Get, self.collection()?, q))
    }

    pub(crate) fn get(&self, name: &str, subresource: Option<&str>) -> Result<Request> {
        Ok(Request::new(
            Method::Get,
            self.object(name, subresource)?,
            Query::default(),
        ))
    }

    pub(crate) fn create<K: Serialize>(&self, pp: &PostParams, obj: &K) -> Result<Request> {
        let mut q = Query::default();
        pp.append_to(&mut q);
        Request::new(Method::Post, self.for_create()?, q).json_body("application/json", obj)
    }

    pub(crate) fn replace<K: Serialize>(
        &self,
        name: &str,
        pp: &PostParams,
        obj: &K,
        subresource: Option<&str>,
    ) -> Result<Request> {
        let mut q = Query::default();
        pp.append_to(&mut q);
        Request::new(Method::Put, self.object(name, subresource)?, q).json_body("application/json", obj)
    }

    pub(crate) fn patch<P: Serialize>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
        subresource: Option<&str>,
    ) -> Result<Request> {
        let is_apply = matches!(patch, Patch::Apply(_));
        if is_apply && pp.field_manager.as_deref().is_none_or(str::is_empty) {
            return Err(Error::InvalidInput(
                "server-side apply needs a field manager: use PatchParams::apply(\"my-controller\")".into(),
            ));
        }
        if pp.force && !is_apply {
            return Err(Error::InvalidInput(
                "force is only allowed with server-side apply (Patch::Apply)".into(),
            ));
        }
        let mut q = Query::default();
        pp.append_to(&mut q);
        Request::new(Method::Patch, self.object(name, subresource)?, q).json_body(patch.content_type(), patch.body())
    }

    pub(crate) fn delete(&self, name: &str, dp: &DeleteParams) -> Result<Request> {
        Request::new(Method::Delete, self.object(name, None)?, Query::default())
            .json_body("application/json", &dp.to_body())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::params::{PropagationPolicy, VersionMatch};
    use serde_json::json;

    fn cm() -> ApiResource {
        ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
    }

    fn deploy() -> ApiResource {
        ApiResource::new("apps", "v1", "Deployment", "deployments", true)
    }

    fn node() -> ApiResource {
        ApiResource::new("", "v1", "Node", "nodes", false)
    }

    #[test]
    fn builds_lists_and_watches() {
        let ar = cm();
        let all = Target {
            resource: &ar,
            namespace: None,
        };
        let r = all.list(&ListParams::default().limit(500).at("0")).unwrap();
        assert_eq!(
            (r.method, r.path_and_query().as_str(), r.body),
            (Method::Get, "/api/v1/configmaps?limit=500&resourceVersion=0", None)
        );
        let ar = deploy();
        let ns = Target {
            resource: &ar,
            namespace: Some("prod"),
        };
        let r = ns
            .watch(
                &WatchParams::default()
                    .at("10")
                    .bookmarks(true)
                    .timeout(300)
                    .labels("app=web"),
            )
            .unwrap();
        assert_eq!(
            r.path_and_query(),
            "/apis/apps/v1/namespaces/prod/deployments?watch=1&labelSelector=app%3Dweb&resourceVersion=10&\
             allowWatchBookmarks=true&timeoutSeconds=300"
        );
        let r = ns
            .list(
                &ListParams::default()
                    .at("5")
                    .matching(VersionMatch::Exact)
                    .continue_token("abc"),
            )
            .unwrap();
        assert_eq!(r.query, "continue=abc&resourceVersion=5&resourceVersionMatch=Exact");
    }

    #[test]
    fn builds_object_requests() {
        let ar = cm();
        let t = Target {
            resource: &ar,
            namespace: Some("default"),
        };
        let r = t.get("settings", None).unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (Method::Get, "/api/v1/namespaces/default/configmaps/settings")
        );
        let r = t.get("settings", Some("status")).unwrap();
        assert_eq!(r.path, "/api/v1/namespaces/default/configmaps/settings/status");

        let obj = json!({"metadata": {"name": "x"}});
        let r = t
            .create(
                &PostParams {
                    dry_run: true,
                    field_manager: Some("me".into()),
                },
                &obj,
            )
            .unwrap();
        assert_eq!(
            (r.method, r.path_and_query().as_str(), r.content_type),
            (
                Method::Post,
                "/api/v1/namespaces/default/configmaps?dryRun=All&fieldManager=me",
                Some("application/json")
            )
        );
        assert_eq!(r.body.unwrap(), br#"{"metadata":{"name":"x"}}"#);

        let r = t.replace("x", &PostParams::default(), &obj, Some("status")).unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (Method::Put, "/api/v1/namespaces/default/configmaps/x/status")
        );

        let r = t
            .delete(
                "x",
                &DeleteParams {
                    propagation_policy: Some(PropagationPolicy::Background),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(r.method, Method::Delete);
        assert_eq!(
            r.body.unwrap(),
            br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}"#
        );
    }

    #[test]
    fn builds_every_patch_type() {
        let ar = deploy();
        let t = Target {
            resource: &ar,
            namespace: Some("prod"),
        };
        let body = json!({"spec": {"replicas": 2}});
        for (patch, ct) in [
            (Patch::Merge(body.clone()), "application/merge-patch+json"),
            (Patch::Strategic(body.clone()), "application/strategic-merge-patch+json"),
            (
                Patch::Json(json!([{"op": "replace", "path": "/spec/replicas", "value": 2}])),
                "application/json-patch+json",
            ),
        ] {
            let r = t.patch("web", &PatchParams::default(), &patch, None).unwrap();
            assert_eq!((r.method, r.content_type), (Method::Patch, Some(ct)));
            assert_eq!(r.body.unwrap(), serde_json::to_vec(patch.body()).unwrap());
        }
        let r = t
            .patch(
                "web",
                &PatchParams::apply("ctl").force(),
                &Patch::Apply(body.clone()),
                Some("status"),
            )
            .unwrap();
        assert_eq!(
            r.path_and_query(),
            "/apis/apps/v1/namespaces/prod/deployments/web/status?fieldManager=ctl&force=true"
        );
        assert_eq!(r.content_type, Some("application/apply-patch+yaml"));
    }

    #[test]
    fn refuses_misuse() {
        let ar = deploy();
        let t = Target {
            resource: &ar,
            namespace: Some("prod"),
        };
        let apply = Patch::Apply(json!({}));
        let e = t
            .patch("web", &PatchParams::default(), &apply, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs a field manager"), "{e}");
        let e = t
            .patch("web", &PatchParams::default().force(), &Patch::Merge(json!({})), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("force is only allowed"), "{e}");
        for bad in ["", ".", "..", "a/b", "50%"] {
            assert!(t.get(bad, None).is_err(), "{bad:?}");
        }
        let all = Target {
            resource: &ar,
            namespace: None,
        };
        assert!(
            all.get("web", None)
                .unwrap_err()
                .to_string()
                .contains("deployments.apps is namespaced")
        );
        assert!(all.create(&PostParams::default(), &json!({})).is_err());
        let bad_ns = Target {
            resource: &ar,
            namespace: Some("a/b"),
        };
        assert!(bad_ns.list(&ListParams::default()).is_err());
    }

    #[test]
    fn cluster_scoped_resources_ignore_namespaces_and_encode_names() {
        let ar = node();
        let t = Target {
            resource: &ar,
            namespace: Some("ignored"),
        };
        assert_eq!(t.get("node-1", None).unwrap().path, "/api/v1/nodes/node-1");
        let crb = ApiResource::new("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false);
        let t = Target {
            resource: &crb,
            namespace: None,
        };
        assert_eq!(
            t.get("system:controller:x", None).unwrap().path,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Acontroller%3Ax"
        );
    }
}
