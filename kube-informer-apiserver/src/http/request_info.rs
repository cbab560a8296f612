//! What a request asks to do, read from its method, path and query alone (apiserver's `RequestInfoFactory`): the
//! attributes the authorizers judge, before the router knows whether the resource exists — so a user without the
//! permission gets kube-apiserver's 403, not a 404, for a resource that is not there.
//!
//! The path is read once: [`RequestInfo::read`] percent-decodes it as Go's `net/http` decodes `URL.Path` (an
//! encoded `/` becomes a separator, as in kube-apiserver), and both the authorizers and the router read that one
//! decoded path — the request that is authorized is the request that is served.

/// A request's verb, resource, namespace and name, or its non-resource path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    pub(crate) resource_request: bool,
    /// The URL path, percent-decoded (as Go's `URL.Path`): non-resource requests are judged by it and the router
    /// resolves it.
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
    /// Reads a request as sent: `path` percent-encoded, `query` the raw query string. `None` for a path that
    /// names nothing whoever asks, refused before authorization ([`decode_path`]).
    pub(crate) fn read(method: &str, path: &str, query: &str) -> Option<RequestInfo> {
        decode_path(path).map(|decoded| RequestInfo::new(method, &decoded, query))
    }

    /// The decoded path's segments, without the leading and trailing slashes.
    pub(crate) fn segments(&self) -> Vec<&str> {
        let trimmed = self.path.strip_prefix('/').unwrap_or(&self.path).trim_end_matches('/');
        if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').collect()
        }
    }

    /// Reads a request whose `path` is already decoded. `query` is the raw query string.
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
            let params = crate::api::util::parse_query(query);
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

/// Decodes a request path once, as Go's `url.PathUnescape` fills `URL.Path` (`%XX` of two hex digits; `+` stays a
/// plus; `%2F` becomes a `/` that separates segments, as kube-apiserver reads it). `None` — the path names nothing —
/// when an escape is malformed, the result is not UTF-8, or a segment of the decoded path (trailing slashes aside,
/// which go-restful trims) is empty (`//`), `.` or `..`: kube-apiserver routes no such path to an object (its
/// `path.IsValidPathSegmentName` refuses `.` and `..` as names, its router matches no empty segment), and this
/// server refuses it before authorization rather than let any layer resolve it.
pub(crate) fn decode_path(raw: &str) -> Option<String> {
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            // Two hex digits exactly (`from_str_radix` alone would take "+f").
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let decoded = String::from_utf8(out).ok()?;
    let trimmed = decoded.strip_prefix('/').unwrap_or(&decoded).trim_end_matches('/');
    if !trimmed.is_empty() && trimmed.split('/').any(|s| matches!(s, "" | "." | "..")) {
        return None;
    }
    Some(decoded)
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
    fn the_path_is_decoded_once_as_go_decodes_url_path() {
        assert_eq!(decode_path("/a%2Eb%2e").as_deref(), Some("/a.b."));
        assert_eq!(decode_path("/a+b").as_deref(), Some("/a+b"));
        assert_eq!(decode_path("/health%7A").as_deref(), Some("/healthz"));
        for bad in ["/%+f", "/%-1", "/% f", "/%g0", "/%2", "/%", "/%ff"] {
            assert_eq!(decode_path(bad), None, "{bad}");
        }
        // An encoded slash separates segments, as in Go's `URL.Path`.
        assert_eq!(
            RequestInfo::read("GET", "/api/v1/namespaces/n/configmaps%2Fcm%2Dx", ""),
            Some(RequestInfo::new("GET", "/api/v1/namespaces/n/configmaps/cm-x", ""))
        );
        let read = RequestInfo::read("GET", "/api/v1/namespaces/n/configmaps/cm%2Dx", "").unwrap();
        assert_eq!(
            (read.name.as_str(), read.path.as_str()),
            ("cm-x", "/api/v1/namespaces/n/configmaps/cm-x")
        );
        assert_eq!(read.segments(), ["api", "v1", "namespaces", "n", "configmaps", "cm-x"]);
        // Trailing slashes are no empty segment; `/` alone names nothing but is no refusal.
        assert!(decode_path("/api/v1/namespaces/n/configmaps/a//").is_some());
        assert!(decode_path("/").is_some());
        for refused in [
            "/api/v1/namespaces//configmaps",
            "//api/v1/configmaps",
            "/api/v1/namespaces/n/configmaps/..",
            "/api/v1/namespaces/n/configmaps/%2E%2E",
            "/api/v1/namespaces/n/configmaps/.",
            "/api/v1/namespaces/a%2F..%2Fb/configmaps",
            "/api/v1/namespaces/n/configmaps/a%2F%2Fb",
            "/healthz/../version",
        ] {
            assert_eq!(RequestInfo::read("GET", refused, ""), None, "{refused}");
        }
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
