//! Request building: method, path, query, content type and body of every call — pure, no I/O.

use serde::Serialize;
use ureq::http;

use super::params::{
    DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, Query, WatchParams, percent_encode_into,
};
use crate::object::{ApiResource, Scale};
use crate::{Error, Result};

/// `Accept` of an object (or a watch's events) as its metadata alone: the JSON clauses of client-go's metadata
/// client (kube-apiserver's conversion, then plain JSON for a server without it; protobuf is not read here).
pub(crate) const ACCEPT_PARTIAL_OBJECT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// `Accept` of a list as its items' metadata alone (`PartialObjectMetadataList`), as client-go's metadata client
/// asks for it.
pub(crate) const ACCEPT_PARTIAL_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// The HTTP methods the Kubernetes API uses, for [`Client::request`](super::Client::request).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`: read (get, list, watch, logs).
    Get,
    /// `POST`: create (and subresources such as `eviction`).
    Post,
    /// `PUT`: replace.
    Put,
    /// `PATCH`: patch.
    Patch,
    /// `DELETE`: delete.
    Delete,
}

impl Method {
    /// `GET`, `POST`, …
    pub fn as_str(self) -> &'static str {
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
    /// `Accept`; `None`: `application/json`.
    pub(crate) accept: Option<&'static str>,
    pub(crate) body: Option<Vec<u8>>,
    /// Headers of the caller's choosing (a raw request's): sent after the client's own; an `Accept` here replaces
    /// the client's `application/json`.
    pub(crate) headers: Vec<(http::HeaderName, http::HeaderValue)>,
}

impl Request {
    fn new(method: Method, path: String, query: Query) -> Self {
        Request {
            method,
            path,
            query: query.into_string(),
            content_type: None,
            accept: None,
            body: None,
            headers: Vec::new(),
        }
    }

    /// The request with `Accept: accept`.
    pub(crate) fn accepting(mut self, accept: &'static str) -> Self {
        self.accept = Some(accept);
        self
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

    /// A JSON body holding an object of `resource`: `apiVersion` and `kind` are added when the serialised object
    /// lacks them (types declared with `object!` carry no type fields), as server-side apply requires them and
    /// kube-apiserver checks them against the URL everywhere else.
    fn object_body<T: Serialize + ?Sized>(
        self,
        content_type: &'static str,
        body: &T,
        (api_version, kind): (&str, &str),
    ) -> Result<Self> {
        let mut req = self.json_body(content_type, body)?;
        if let Some(bytes) = req.body.take() {
            req.body = Some(with_type_meta(bytes, api_version, kind));
        }
        Ok(req)
    }
}

/// `body` (one serialised JSON value) with `"apiVersion"` and `"kind"` added at the front of the top-level object
/// when it lacks them; any other body (not an object, not parseable) is returned unchanged for the server to judge.
pub(crate) fn with_type_meta(body: Vec<u8>, api_version: &str, kind: &str) -> Vec<u8> {
    let Some(keys) = top_level_keys(&body) else {
        return body;
    };
    let mut prefix = String::new();
    for (present, key, value) in [(keys.api_version, "apiVersion", api_version), (keys.kind, "kind", kind)] {
        if !present {
            prefix.push_str(&serde_json::Value::from(key).to_string());
            prefix.push(':');
            prefix.push_str(&serde_json::Value::from(value).to_string());
            prefix.push(',');
        }
    }
    if prefix.is_empty() {
        return body;
    }
    if keys.count == 0 {
        prefix.pop(); // `{}`: nothing follows
    }
    // The serialiser writes no whitespace: the object opens at byte 0.
    let mut out = Vec::with_capacity(body.len() + prefix.len());
    out.push(b'{');
    out.extend_from_slice(prefix.as_bytes());
    out.extend_from_slice(&body[1..]);
    out
}

/// Which type fields a JSON object has, and how many keys.
struct TopLevelKeys {
    api_version: bool,
    kind: bool,
    count: usize,
}

/// The top-level keys of a JSON object (values are skipped, not built); `None` when `body` is not one.
fn top_level_keys(body: &[u8]) -> Option<TopLevelKeys> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    use std::borrow::Cow;

    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = TopLevelKeys;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<TopLevelKeys, A::Error> {
            let mut keys = TopLevelKeys {
                api_version: false,
                kind: false,
                count: 0,
            };
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                map.next_value::<IgnoredAny>()?;
                keys.count += 1;
                match &*key {
                    "apiVersion" => keys.api_version = true,
                    "kind" => keys.kind = true,
                    _ => {}
                }
            }
            Ok(keys)
        }
    }
    if body.first() != Some(&b'{') {
        return None;
    }
    serde_json::Deserializer::from_slice(body).deserialize_map(Keys).ok()
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

    /// The `apiVersion` and `kind` of bodies sent to the object or one of its subresources: the resource's own,
    /// except for `scale` (an autoscaling/v1 `Scale`).
    fn body_type(&self, subresource: Option<&str>) -> (String, &str) {
        match subresource {
            Some("scale") => (Scale::API_VERSION.to_owned(), Scale::KIND),
            _ => (self.resource.api_version(), &self.resource.kind),
        }
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
        let (api_version, kind) = self.body_type(None);
        Request::new(Method::Post, self.for_create()?, q).object_body("application/json", obj, (&api_version, kind))
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
        let (api_version, kind) = self.body_type(subresource);
        Request::new(Method::Put, self.object(name, subresource)?, q).object_body(
            "application/json",
            obj,
            (&api_version, kind),
        )
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
        let req = Request::new(Method::Patch, self.object(name, subresource)?, q);
        if is_apply {
            // An apply body is a whole (partial) object: it names its type.
            let (api_version, kind) = self.body_type(subresource);
            req.object_body(patch.content_type(), patch.body(), (&api_version, kind))
        } else {
            req.json_body(patch.content_type(), patch.body())
        }
    }

    pub(crate) fn delete(&self, name: &str, dp: &DeleteParams) -> Result<Request> {
        Request::new(Method::Delete, self.object(name, None)?, Query::default())
            .json_body("application/json", &dp.to_body())
    }

    /// GET of a pod's `log` subresource (the caller checked that this is pods).
    pub(crate) fn log(&self, name: &str, lp: &LogParams) -> Result<Request> {
        let mut q = Query::default();
        lp.append_to(&mut q);
        let mut req = Request::new(Method::Get, self.object(name, Some("log"))?, q);
        // What kubectl asks: the log is text/plain, an error a JSON Status.
        req.headers.push((
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/json, */*"),
        ));
        Ok(req)
    }

    /// POST of a policy/v1 `Eviction` of pod `name` to its `eviction` subresource (the caller checked that this is
    /// pods).
    pub(crate) fn evict(&self, name: &str, dp: &DeleteParams) -> Result<Request> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Eviction<'a> {
            api_version: &'static str,
            kind: &'static str,
            metadata: Meta<'a>,
            delete_options: super::params::DeleteOptions<'a>,
        }
        #[derive(Serialize)]
        struct Meta<'a> {
            name: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            namespace: Option<&'a str>,
        }
        let path = self.object(name, Some("eviction"))?;
        let body = Eviction {
            api_version: "policy/v1",
            kind: "Eviction",
            metadata: Meta {
                name,
                namespace: self.namespace,
            },
            delete_options: dp.to_body(),
        };
        Request::new(Method::Post, path, Query::default()).json_body("application/json", &body)
    }

    /// DELETE of the collection, narrowed by `lp`'s selectors (a namespaced resource needs a namespace: kube-apiserver
    /// serves no deletecollection across namespaces). `limit` and `continue` are not sent: the server deletes every
    /// match.
    pub(crate) fn delete_collection(&self, dp: &DeleteParams, lp: &ListParams) -> Result<Request> {
        if self.resource.namespaced && self.namespace.is_none() {
            return Err(Error::InvalidInput(format!(
                "{} is namespaced: delete a collection within one namespace (Api::namespaced)",
                self.resource.qualified_name()
            )));
        }
        let lp = ListParams {
            limit: None,
            continue_token: None,
            ..lp.clone()
        };
        let mut q = Query::default();
        lp.append_to(&mut q);
        Request::new(Method::Delete, self.collection()?, q).json_body("application/json", &dp.to_body())
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
        assert_eq!(
            r.body.unwrap(),
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#
        );

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
        assert_eq!(
            r.body.unwrap(),
            br#"{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2}}"#,
            "an apply body names its type"
        );
    }

    #[test]
    fn builds_scale_and_collection_requests() {
        let ar = deploy();
        let t = Target {
            resource: &ar,
            namespace: Some("prod"),
        };
        let r = t.get("web", Some("scale")).unwrap();
        assert_eq!(r.path, "/apis/apps/v1/namespaces/prod/deployments/web/scale");
        // A Scale names its own type, not the deployment's.
        let body = json!({"metadata": {"name": "web"}, "spec": {"replicas": 3}});
        let r = t.replace("web", &PostParams::default(), &body, Some("scale")).unwrap();
        assert_eq!(
            r.body.unwrap(),
            br#"{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":3}}"#
        );
        let r = t
            .patch(
                "web",
                &PatchParams::apply("hpa"),
                &Patch::Apply(json!({"spec": {"replicas": 1}})),
                Some("scale"),
            )
            .unwrap();
        assert!(
            r.body
                .unwrap()
                .starts_with(br#"{"apiVersion":"autoscaling/v1","kind":"Scale","#)
        );
        let r = t
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 1}})),
                Some("scale"),
            )
            .unwrap();
        assert_eq!(r.body.unwrap(), br#"{"spec":{"replicas":1}}"#);

        let r = t
            .delete_collection(
                &DeleteParams {
                    dry_run: true,
                    ..Default::default()
                },
                &ListParams::default().labels("app=web").limit(10).continue_token("x"),
            )
            .unwrap();
        assert_eq!(
            (r.method, r.path_and_query().as_str()),
            (
                Method::Delete,
                "/apis/apps/v1/namespaces/prod/deployments?labelSelector=app%3Dweb"
            )
        );
        assert_eq!(
            r.body.unwrap(),
            br#"{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}"#
        );
        let all = Target {
            resource: &ar,
            namespace: None,
        };
        let e = all
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .unwrap_err();
        assert!(e.to_string().contains("within one namespace"), "{e}");
        let nodes = node();
        let cluster = Target {
            resource: &nodes,
            namespace: None,
        };
        let r = cluster
            .delete_collection(
                &DeleteParams::default(),
                &ListParams::default().fields("spec.unschedulable=true"),
            )
            .unwrap();
        assert_eq!(
            r.path_and_query(),
            "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue"
        );
    }

    #[test]
    fn object_bodies_gain_the_type_fields_they_lack() {
        let cases: [(&[u8], &[u8]); 8] = [
            (
                br#"{"metadata":{}}"#,
                br#"{"apiVersion":"v1","kind":"Pod","metadata":{}}"#,
            ),
            (br#"{}"#, br#"{"apiVersion":"v1","kind":"Pod"}"#),
            // What the caller set wins.
            (br#"{"kind":"Pod","a":1}"#, br#"{"apiVersion":"v1","kind":"Pod","a":1}"#),
            (
                br#"{"apiVersion":"v2","x":{"kind":"n"}}"#,
                br#"{"kind":"Pod","apiVersion":"v2","x":{"kind":"n"}}"#,
            ),
            (
                br#"{"apiVersion":"v1","kind":"Pod","metadata":{}}"#,
                br#"{"apiVersion":"v1","kind":"Pod","metadata":{}}"#,
            ),
            // An escaped key is still the key.
            (
                br#"{"kin\u0064":"Pod","apiVersion":"v1"}"#,
                br#"{"kin\u0064":"Pod","apiVersion":"v1"}"#,
            ),
            // Not an object: left for the server to refuse.
            (br#"[1,2]"#, br#"[1,2]"#),
            (br#"{"a":"#, br#"{"a":"#),
        ];
        for (body, want) in cases {
            let got = with_type_meta(body.to_vec(), "v1", "Pod");
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(want),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        // Only the object verbs: merge, JSON and strategic patches are sent as given.
        let ar = cm();
        let t = Target {
            resource: &ar,
            namespace: Some("default"),
        };
        let r = t
            .patch("x", &PatchParams::default(), &Patch::Merge(json!({"data": {}})), None)
            .unwrap();
        assert_eq!(r.body.unwrap(), br#"{"data":{}}"#);
    }

    #[test]
    fn builds_log_and_eviction_requests() {
        let ar = ApiResource::new("", "v1", "Pod", "pods", true);
        let t = Target {
            resource: &ar,
            namespace: Some("prod"),
        };
        let r = t
            .log("web-0", &LogParams::default().container("app").follow().tail_lines(5))
            .unwrap();
        assert_eq!(
            (r.method, r.path_and_query().as_str()),
            (
                Method::Get,
                "/api/v1/namespaces/prod/pods/web-0/log?container=app&follow=true&tailLines=5"
            )
        );
        assert_eq!(r.headers[0].1, "application/json, */*");
        let r = t
            .evict(
                "web-0",
                &DeleteParams {
                    grace_period_seconds: Some(30),
                    dry_run: true,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(
            (r.method, r.path.as_str(), r.query.as_str(), r.content_type),
            (
                Method::Post,
                "/api/v1/namespaces/prod/pods/web-0/eviction",
                "",
                Some("application/json")
            )
        );
        assert_eq!(
            String::from_utf8(r.body.unwrap()).unwrap(),
            r#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0","namespace":"prod"},"deleteOptions":{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":30,"dryRun":["All"]}}"#
        );
        let all = Target {
            resource: &ar,
            namespace: None,
        };
        assert!(
            all.log("web-0", &LogParams::default()).is_err(),
            "a pod needs its namespace"
        );
        assert!(all.evict("web-0", &DeleteParams::default()).is_err());
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
