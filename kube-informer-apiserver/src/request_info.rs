//! What a request asks to do, read from its method, path and query alone (apiserver's `RequestInfoFactory`): the
//! attributes the authorizers judge, before the router knows whether the resource exists — so a user without the
//! permission gets kube-apiserver's 403, not a 404, for a resource that is not there.

/// A request's verb, resource, namespace and name, or its non-resource path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    pub(crate) resource_request: bool,
    /// The URL path as sent (non-resource requests are judged by it).
    pub(crate) path: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, `proxy`; for a
    /// non-resource request the method in lower case.
    pub(crate) verb: String,
    pub(crate) api_group: String,
    pub(crate) api_version: String,
    pub(crate) namespace: String,
    pub(crate) resource: String,
    pub(crate) subresource: String,
    pub(crate) name: String,
}

/// Subresources of a namespace reached as `/namespaces/{name}/{sub}`.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl RequestInfo {
    /// Reads a request. `query` is the raw query string.
    pub(crate) fn new(method: &str, path: &str, query: &str) -> RequestInfo {
        let mut info = RequestInfo {
            path: path.to_owned(),
            verb: method.to_ascii_lowercase(),
            ..Default::default()
        };
        let trimmed = path.trim_matches('/');
        let parts: Vec<&str> = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').collect()
        };
        if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
            return info;
        }
        let mut parts = &parts[1..];
        if info.path_prefix_is_apis(path) {
            if parts.len() < 3 {
                return info;
            }
            info.api_group = parts[0].to_owned();
            parts = &parts[1..];
        }
        info.resource_request = true;
        info.api_version = parts[0].to_owned();
        parts = &parts[1..];
        let mut special = false;
        if matches!(parts.first(), Some(&("proxy" | "watch"))) {
            if parts.len() < 2 {
                // kube-apiserver cannot tell kind and namespace: it refuses the request; nothing is granted.
                info.verb = String::new();
                return info;
            }
            info.verb = parts[0].to_owned();
            parts = &parts[1..];
            special = true;
        } else {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_owned();
        }
        if parts.first() == Some(&"namespaces") && parts.len() > 1 {
            info.namespace = parts[1].to_owned();
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
                parts = &parts[2..];
            }
        }
        if parts.len() >= 3 && !(special && info.verb == "proxy") {
            info.subresource = parts[2].to_owned();
        }
        if parts.len() >= 2 {
            info.name = parts[1].to_owned();
        }
        if let Some(r) = parts.first() {
            info.resource = (*r).to_owned();
        }
        if info.name.is_empty() && info.verb == "get" {
            let params = crate::util::parse_query(query);
            let watch = params
                .iter()
                .find(|(k, _)| k == "watch")
                .is_some_and(|(_, v)| !matches!(v.to_ascii_lowercase().as_str(), "false" | "0"));
            info.verb = if watch { "watch" } else { "list" }.to_owned();
            if let Some((_, selector)) = params.iter().find(|(k, _)| k == "fieldSelector")
                && let Some(name) = exact_name(selector)
                && valid_path_segment(&name)
            {
                info.name = name;
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_owned();
        }
        info
    }

    fn path_prefix_is_apis(&self, path: &str) -> bool {
        path.trim_start_matches('/').starts_with("apis/")
    }
}

/// The value a field selector requires of `metadata.name` (`=` or `==`), if any.
fn exact_name(selector: &str) -> Option<String> {
    let mut terms = Vec::new();
    let mut current = String::new();
    let mut chars = selector.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                current.push(c);
                if let Some(n) = chars.next() {
                    current.push(n);
                }
            }
            ',' => terms.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    terms.push(current);
    terms.iter().find_map(|t| {
        let t = t.trim();
        let rest = t.strip_prefix("metadata.name")?;
        let value = rest.strip_prefix("==").or_else(|| rest.strip_prefix('='))?;
        Some(unescape(value))
    })
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// `path.IsValidPathSegmentName`.
fn valid_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, path: &str, query: &str) -> (bool, String, String, String, String, String, String) {
        let i = RequestInfo::new(method, path, query);
        (
            i.resource_request,
            i.verb,
            i.api_group,
            i.namespace,
            i.resource,
            i.subresource,
            i.name,
        )
    }

    fn res(
        verb: &str,
        group: &str,
        ns: &str,
        resource: &str,
        sub: &str,
        name: &str,
    ) -> (bool, String, String, String, String, String, String) {
        let s = |x: &str| x.to_owned();
        (true, s(verb), s(group), s(ns), s(resource), s(sub), s(name))
    }

    // Cases of apiserver's TestGetAPIRequestInfo (pkg/endpoints/request/requestinfo_test.go).
    #[test]
    fn resource_requests_are_read_as_kube_apiserver_reads_them() {
        assert_eq!(
            info("GET", "/api/v1/namespaces", ""),
            res("list", "", "", "namespaces", "", "")
        );
        assert_eq!(
            info("GET", "/api/v1/namespaces/other", ""),
            res("get", "", "other", "namespaces", "", "other")
        );
        assert_eq!(
            info("GET", "/api/v1/namespaces/other/pods", ""),
            res("list", "", "other", "pods", "", "")
        );
        assert_eq!(
            info("GET", "/api/v1/namespaces/other/pods/foo", ""),
            res("get", "", "other", "pods", "", "foo")
        );
        assert_eq!(
            info("HEAD", "/api/v1/namespaces/other/pods/foo", ""),
            res("get", "", "other", "pods", "", "foo")
        );
        assert_eq!(info("GET", "/api/v1/pods", ""), res("list", "", "", "pods", "", ""));
        assert_eq!(
            info("GET", "/api/v1/namespaces/other/pods/foo/status", ""),
            res("get", "", "other", "pods", "status", "foo")
        );
        assert_eq!(
            info("GET", "/api/v1/watch/pods", ""),
            res("watch", "", "", "pods", "", "")
        );
        assert_eq!(
            info("GET", "/api/v1/pods", "watch=true"),
            res("watch", "", "", "pods", "", "")
        );
        assert_eq!(
            info("GET", "/api/v1/pods", "watch=false"),
            res("list", "", "", "pods", "", "")
        );
        assert_eq!(
            info("GET", "/api/v1/watch/namespaces/other/pods", ""),
            res("watch", "", "other", "pods", "", "")
        );
        assert_eq!(
            info("GET", "/api/v1/watch/namespaces/other/pods/foo", ""),
            res("watch", "", "other", "pods", "", "foo")
        );
        assert_eq!(
            info("POST", "/api/v1/namespaces/other/pods", ""),
            res("create", "", "other", "pods", "", "")
        );
        assert_eq!(
            info("PUT", "/api/v1/namespaces/other/pods/foo", ""),
            res("update", "", "other", "pods", "", "foo")
        );
        assert_eq!(
            info("DELETE", "/api/v1/namespaces/other/pods/foo", ""),
            res("delete", "", "other", "pods", "", "foo")
        );
        assert_eq!(
            info("DELETE", "/api/v1/namespaces/other/pods", ""),
            res("deletecollection", "", "other", "pods", "", "")
        );
        assert_eq!(
            info("PATCH", "/apis/apps/v1/namespaces/n/deployments/d/scale", ""),
            res("patch", "apps", "n", "deployments", "scale", "d")
        );
        assert_eq!(
            info("PUT", "/api/v1/namespaces/n/finalize", ""),
            res("update", "", "n", "namespaces", "finalize", "n")
        );
        assert_eq!(
            info("POST", "/api/v1/namespaces/n/serviceaccounts/sa/token", ""),
            res("create", "", "n", "serviceaccounts", "token", "sa")
        );
        assert_eq!(
            info("GET", "/api/v1/namespaces/n/pods", "fieldSelector=metadata.name%3Dfoo"),
            res("list", "", "n", "pods", "", "foo")
        );
        assert_eq!(
            info(
                "GET",
                "/api/v1/namespaces/n/pods",
                "fieldSelector=a%3Db,metadata.name%3D%3Dfoo&watch=1"
            ),
            res("watch", "", "n", "pods", "", "foo")
        );
        assert_eq!(
            info("GET", "/api/v1/namespaces/n/pods", "fieldSelector=metadata.name!%3Dfoo"),
            res("list", "", "n", "pods", "", "")
        );
        assert_eq!(
            info(
                "GET",
                "/api/v1/namespaces/n/pods",
                "fieldSelector=metadata.name%3Da%2Fb"
            ),
            res("list", "", "n", "pods", "", "")
        );
        assert_eq!(
            info("GET", "/api/v1/proxy/namespaces/n/pods/p/x/y", ""),
            res("proxy", "", "n", "pods", "", "p")
        );
    }

    #[test]
    fn other_paths_are_non_resource_requests() {
        for (method, path) in [
            ("GET", "/"),
            ("GET", "/api"),
            ("GET", "/api/v1"),
            ("GET", "/apis/apps"),
            ("GET", "/apis/apps/v1"),
            ("GET", "/version"),
            ("GET", "/healthz"),
            ("POST", "/other/x/y"),
        ] {
            let i = RequestInfo::new(method, path, "");
            assert!(!i.resource_request, "{path}");
            assert_eq!(i.verb, method.to_ascii_lowercase());
            assert_eq!(i.path, path);
        }
        assert_eq!(
            RequestInfo::new("GET", "/api/v1/watch", "").verb,
            "",
            "kube-apiserver refuses it"
        );
    }
}
