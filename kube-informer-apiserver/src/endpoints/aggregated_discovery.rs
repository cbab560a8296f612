//! Aggregated discovery (`apidiscovery.k8s.io/v2`, and `v2beta1`, which kube-apiserver 1.34 still serves): every
//! group, version and resource in one document, `GET /apis` (and `/api` for the core group) with
//! `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` — what client-go (1.26+),
//! kubectl (1.30+ asks v2 first) and kube-rs ask before the legacy documents. The same [`Catalogue`] as the legacy
//! documents; without a storage version hash, as kube-apiserver leaves it out there. Answered with an `ETag`
//! (304 on `If-None-Match`) and `Vary: Accept`, as kube-apiserver does.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::util::hash_hex;
use crate::endpoints::discovery::{self, Catalogue, Described};
use crate::endpoints::router::Discovery;
use crate::http::RequestHead;
use crate::registry::reply::Reply;
use crate::registry::resource::ResourceSpec;

/// The answer to a discovery path: aggregated for `/api` and `/apis` when the `Accept` header asks for it, else the
/// legacy document ([`discovery::answer`]).
pub(crate) fn serve(path: &Discovery, specs: &[Arc<ResourceSpec>], addr: SocketAddr, head: &RequestHead) -> Reply {
    if matches!(path, Discovery::Api | Discovery::Apis)
        && let Some(version) = negotiate(head.header("accept"))
    {
        return reply(&Catalogue::new(specs), *path == Discovery::Api, version, head);
    }
    match discovery::answer(path, specs, addr) {
        Ok(Value::String(_)) => Reply::Text(200, "ok"),
        Ok(v) => Reply::Json(200, discovery::to_vec(path, &v)),
        Err(st) => Reply::Status(st),
    }
}

/// The versions of `apidiscovery.k8s.io` served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    V2,
    V2Beta1,
}

impl Version {
    fn name(self) -> &'static str {
        match self {
            Version::V2 => "v2",
            Version::V2Beta1 => "v2beta1",
        }
    }

    fn content_type(self) -> String {
        format!(
            "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList",
            self.name()
        )
    }
}

/// What an `Accept` header asks of `/api` or `/apis`: an aggregated document (`Some`) or the legacy one (`None`).
/// The clauses are taken best first (by `q`, then order); the first one served wins: JSON aggregated discovery of
/// a served version, or a media type the legacy document satisfies (`application/json`, `*/*`). Protobuf clauses
/// are passed over, as nothing here is served in protobuf.
pub(crate) fn negotiate(accept: Option<&str>) -> Option<Version> {
    let mut clauses: Vec<(f32, usize, &str)> = accept
        .unwrap_or("")
        .split(',')
        .enumerate()
        .map(|(i, clause)| {
            let q = clause
                .split(';')
                .skip(1)
                .filter_map(|p| p.trim().strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok()))
                .next()
                .unwrap_or(1.0);
            (q, i, clause)
        })
        .filter(|(q, _, _)| *q > 0.0)
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, _, clause) in clauses {
        let mut parts = clause.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut g, mut v, mut as_) = ("", "", "");
        for p in parts {
            match p.split_once('=') {
                Some(("g", x)) => g = x,
                Some(("v", x)) => v = x,
                Some(("as", x)) => as_ = x,
                _ => {}
            }
        }
        let json = matches!(media.as_str(), "application/json" | "application/*" | "*/*");
        if g.is_empty() && as_.is_empty() {
            if json {
                return None;
            }
            continue;
        }
        if media == "application/json" && g == "apidiscovery.k8s.io" && as_ == "APIGroupDiscoveryList" {
            match v {
                "v2" => return Some(Version::V2),
                "v2beta1" => return Some(Version::V2Beta1),
                _ => {}
            }
        }
    }
    None
}

fn response_kind(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

fn resource(d: &Described) -> Value {
    let mut r = json!({
        "resource": d.name,
        "responseKind": response_kind("", "", &d.kind),
        "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": d.singular,
        "verbs": d.verbs,
    });
    if !d.short_names.is_empty() {
        r["shortNames"] = json!(d.short_names);
    }
    if !d.categories.is_empty() {
        r["categories"] = json!(d.categories);
    }
    if !d.subresources.is_empty() {
        let mut subs: Vec<&_> = d.subresources.iter().collect();
        subs.sort_by(|a, b| a.name.cmp(&b.name));
        r["subresources"] = subs
            .into_iter()
            .map(|s| {
                let (g, v) = s.group_version.clone().unwrap_or_default();
                json!({"subresource": s.name, "responseKind": response_kind(&g, &v, &s.kind), "verbs": s.verbs})
            })
            .collect();
    }
    r
}

/// The `APIGroupDiscoveryList` of the core group (`core`) or of every other group.
pub(crate) fn document(catalogue: &Catalogue, core: bool, version: Version) -> Value {
    let items: Vec<Value> = catalogue
        .groups
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, versions)| {
            let mut metadata = json!({"creationTimestamp": null});
            if !g.is_empty() {
                metadata["name"] = json!(g);
            }
            let versions: Vec<Value> = versions
                .iter()
                .map(|(v, resources)| {
                    json!({"version": v, "resources": resources.iter().map(resource).collect::<Vec<_>>(), "freshness": "Current"})
                })
                .collect();
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{}", version.name()),
        "metadata": {},
        "items": items,
    })
}

/// The answer to `GET /api` (`core`) or `/apis` asking aggregated discovery in `version`.
pub(crate) fn reply(catalogue: &Catalogue, core: bool, version: Version, head: &RequestHead) -> Reply {
    // Go's encoding of apidiscovery's structs (their declaration order), as kube-apiserver writes the document.
    let mut body = crate::serializer::json::to_vec(&document(catalogue, core, version));
    body.push(b'\n');
    let etag = format!("\"{}\"", hash_hex(&body));
    let current = head
        .header("if-none-match")
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let headers = vec![
        ("Content-Type".to_owned(), version.content_type()),
        ("ETag".to_owned(), etag),
        ("Vary".to_owned(), "Accept".to_owned()),
    ];
    Reply::Raw {
        code: if current { 304 } else { 200 },
        headers,
        body: Arc::new(if current { Vec::new() } else { body }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_choose_aggregated_or_legacy_discovery() {
        let v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        let v2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        // client-go's header: v2, then v2beta1, then the legacy document.
        assert_eq!(
            negotiate(Some(&format!("{v2},{v2beta1},application/json"))),
            Some(Version::V2)
        );
        assert_eq!(
            negotiate(Some(&format!("{v2beta1},application/json"))),
            Some(Version::V2Beta1)
        );
        // kubectl's protobuf clauses come first; nothing is served in protobuf.
        let proto = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(
            negotiate(Some(&format!("{proto},{v2},application/json"))),
            Some(Version::V2)
        );
        assert_eq!(
            negotiate(Some(&format!("application/json;q=0.9,{v2}"))),
            Some(Version::V2)
        );
        assert_eq!(negotiate(Some(&format!("application/json,{v2}"))), None);
        assert_eq!(
            negotiate(Some(
                "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"
            )),
            None
        );
        assert_eq!(negotiate(None), None);
        assert_eq!(negotiate(Some("*/*")), None);
    }
}
