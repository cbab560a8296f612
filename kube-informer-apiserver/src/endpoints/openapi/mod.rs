//! `/openapi/v2` and `/openapi/v3`: the OpenAPI documents of the registered resources, generated from their
//! [`ResourceSpec`]s and served as kube-apiserver serves them.
//!
//! * `/openapi/v2`: one document, as JSON or — for `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`,
//!   what every kubectl asks for — gnostic's protobuf encoding ([`gnostic`]); `ETag` (and 304 on `If-None-Match`),
//!   `Vary: Accept`, 406 when no offered type is acceptable.
//! * `/openapi/v3`: the index, `{"paths": {"apis/apps/v1": {"serverRelativeURL": "/openapi/v3/apis/apps/v1?hash=…"}}}`;
//!   `/openapi/v3/api/v1`, `/openapi/v3/apis/{group}/{version}`: one group-version's document, JSON only. With the
//!   index's `hash`, the answer is cacheable forever (`Cache-Control: public, immutable`); with a stale one, a 301
//!   to the current URL.
//!
//! Documents are built once per set of registered resources and shared by every request until a resource is
//! registered (or a CRD changes).

mod convert;
mod document;
mod gnostic;
mod meta;

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
#[cfg(test)]
use serde_json::Value;
use serde_json::json;

use crate::api::errors;
use crate::api::util::hash_hex;
use crate::http::RequestHead;
use crate::registry::reply::Reply;
use crate::registry::resource::ResourceSpec;

/// The protobuf media type of the v2 document (the `@` form is the deprecated one kubectl still sends; the answer
/// always names the dotted one, as kube-apiserver's does).
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const V2_PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// One document in its served encodings.
struct Served {
    body: Arc<Vec<u8>>,
    /// Quoted, as the header carries it.
    etag: String,
}

impl Served {
    fn new(body: Vec<u8>) -> Served {
        let etag = format!("\"{}\"", hash_hex(&body));
        Served {
            body: Arc::new(body),
            etag,
        }
    }
}

/// Every document of one set of resources.
struct Documents {
    /// `StoreInner::registrations` they were built from.
    generation: u64,
    v2_json: Served,
    v2_proto: Served,
    v3_index: Served,
    /// By path under `/openapi/v3/` (`apis/apps/v1`).
    v3: BTreeMap<String, Served>,
}

/// The documents of the current resources, rebuilt when they change.
#[derive(Default)]
pub(crate) struct Cache {
    docs: Mutex<Option<Arc<Documents>>>,
}

impl Cache {
    fn get(&self, generation: u64, specs: &[Arc<ResourceSpec>]) -> Arc<Documents> {
        let mut slot = self.docs.lock();
        match &*slot {
            Some(d) if d.generation == generation => d.clone(),
            _ => {
                let d = Arc::new(build(generation, specs));
                *slot = Some(d.clone());
                d
            }
        }
    }
}

fn build(generation: u64, specs: &[Arc<ResourceSpec>]) -> Documents {
    let v2 = document::v2(specs);
    let v2_json = Served::new(serde_json::to_vec(&v2).unwrap_or_default());
    let mut v2_proto = Served::new(gnostic::encode_v2(&v2));
    // One ETag for both encodings, as kube-apiserver (they differ by `Vary: Accept`).
    v2_proto.etag.clone_from(&v2_json.etag);
    let mut v3 = BTreeMap::new();
    let mut index = serde_json::Map::new();
    for (path, (group, version)) in document::v3_paths(specs) {
        let served = Served::new(serde_json::to_vec(&document::v3(specs, &group, &version)).unwrap_or_default());
        let hash = served.etag.trim_matches('"').to_owned();
        index.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
        );
        v3.insert(path, served);
    }
    let v3_index = Served::new(serde_json::to_vec(&json!({"paths": index})).unwrap_or_default());
    Documents {
        generation,
        v2_json,
        v2_proto,
        v3_index,
        v3,
    }
}

/// The media types of an `Accept` header, best first (by `q`, then order); `*/*` when absent.
fn accepted(head: &RequestHead) -> Vec<String> {
    let header = head.header("accept").unwrap_or("*/*");
    let mut clauses: Vec<(f32, usize, String)> = header
        .split(',')
        .enumerate()
        .filter_map(|(i, clause)| {
            let mut parts = clause.split(';');
            let media = parts.next()?.trim().to_ascii_lowercase();
            if media.is_empty() {
                return None;
            }
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok()))
                .next()
                .unwrap_or(1.0);
            (q > 0.0).then_some((q, i, media))
        })
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    clauses.into_iter().map(|(_, _, m)| m).collect()
}

/// True when the clause `media` (`type/sub`, `type/*`, `*/*`) matches the offered `offer`.
fn matches(media: &str, offer: &str) -> bool {
    let (mt, ms) = media.split_once('/').unwrap_or((media, ""));
    let (ot, os) = offer.split_once('/').unwrap_or((offer, ""));
    (mt == "*" || mt == ot) && (ms == "*" || ms == os)
}

/// A document answer: 304 when the client's copy is current, else the body with its headers.
fn document(head: &RequestHead, served: &Served, content_type: &str, extra: Vec<(String, String)>) -> Reply {
    let mut headers = vec![
        ("Content-Type".to_owned(), content_type.to_owned()),
        ("ETag".to_owned(), served.etag.clone()),
        ("Vary".to_owned(), "Accept".to_owned()),
    ];
    headers.extend(extra);
    let current = head
        .header("if-none-match")
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == served.etag || t.trim() == "*"));
    if current {
        return Reply::Raw {
            code: 304,
            headers,
            body: Arc::new(Vec::new()),
        };
    }
    Reply::Raw {
        code: 200,
        headers,
        body: served.body.clone(),
    }
}

fn not_acceptable() -> Reply {
    Reply::Raw {
        code: 406,
        headers: vec![("Vary".to_owned(), "Accept".to_owned())],
        body: Arc::new(Vec::new()),
    }
}

/// Answers `GET /openapi/{rest}`. `registrations` and `specs` describe the resources served now.
pub(crate) fn answer(
    cache: &Cache,
    registrations: u64,
    specs: &[Arc<ResourceSpec>],
    rest: &str,
    query: &[(String, String)],
    head: &RequestHead,
) -> Reply {
    if head.method != "GET" && head.method != "HEAD" {
        return Reply::Status(errors::method_not_allowed());
    }
    let docs = cache.get(registrations, specs);
    match rest {
        "v2" => {
            for media in accepted(head) {
                if matches(&media, "application/json") {
                    return document(head, &docs.v2_json, "application/json", Vec::new());
                }
                if media == V2_PROTOBUF || media == V2_PROTOBUF_DEPRECATED {
                    return document(head, &docs.v2_proto, V2_PROTOBUF, Vec::new());
                }
            }
            not_acceptable()
        }
        "v3" | "v3/" => document(head, &docs.v3_index, "application/json", Vec::new()),
        _ => {
            let Some(gv) = rest.strip_prefix("v3/") else {
                return Reply::Status(errors::no_such_path());
            };
            let gv = gv.trim_end_matches('/');
            let Some(served) = docs.v3.get(gv) else {
                return Reply::Status(errors::no_such_path());
            };
            if !accepted(head).iter().any(|m| matches(m, "application/json")) {
                return not_acceptable();
            }
            let current = served.etag.trim_matches('"');
            match query.iter().find(|(k, _)| k == "hash").map(|(_, v)| v.as_str()) {
                Some(h) if !h.is_empty() && h != current => Reply::Raw {
                    code: 301,
                    headers: vec![("Location".to_owned(), format!("/openapi/v3/{gv}?hash={current}"))],
                    body: Arc::new(Vec::new()),
                },
                Some(h) if !h.is_empty() => document(
                    head,
                    served,
                    "application/json",
                    vec![
                        ("Cache-Control".to_owned(), "public, immutable".to_owned()),
                        ("Expires".to_owned(), "Fri, 01 Jan 2100 00:00:00 GMT".to_owned()),
                    ],
                ),
                _ => document(head, served, "application/json", Vec::new()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(accept: Option<&str>, if_none_match: Option<&str>) -> RequestHead {
        let mut headers = Vec::new();
        if let Some(a) = accept {
            headers.push(("accept".to_owned(), a.to_owned()));
        }
        if let Some(t) = if_none_match {
            headers.push(("if-none-match".to_owned(), t.to_owned()));
        }
        RequestHead {
            method: "GET".into(),
            path: "/openapi/v2".into(),
            query: String::new(),
            http10: false,
            headers,
        }
    }

    fn specs() -> Vec<Arc<ResourceSpec>> {
        ResourceSpec::defaults().into_iter().map(Arc::new).collect()
    }

    fn raw(reply: Reply) -> (u16, Vec<(String, String)>, Vec<u8>) {
        match reply {
            Reply::Raw { code, headers, body } => (code, headers, body.to_vec()),
            other => panic!("not a document answer: {}", other.code()),
        }
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn accept_clauses_are_ordered_by_quality() {
        let h = head(
            Some("application/json;q=0.5, application/x;q=0.9,  text/plain, bad;q=0"),
            None,
        );
        assert_eq!(accepted(&h), ["text/plain", "application/x", "application/json"]);
        assert_eq!(accepted(&head(None, None)), ["*/*"]);
        assert!(matches("application/*", "application/json") && !matches("text/*", "application/json"));
    }

    #[test]
    fn v2_is_served_as_protobuf_or_json_with_an_etag() {
        let cache = Cache::default();
        let specs = specs();
        let (code, headers, body) = raw(answer(
            &cache,
            1,
            &specs,
            "v2",
            &[],
            &head(Some(V2_PROTOBUF_DEPRECATED), None),
        ));
        assert_eq!(code, 200);
        assert_eq!(header(&headers, "content-type"), Some(V2_PROTOBUF));
        let doc = gnostic::wire::parse(&body).expect("protobuf");
        assert_eq!(gnostic::wire::string(&doc, 1), Some("2.0"));
        let etag = header(&headers, "etag").unwrap().to_owned();
        let (code, headers, body) = raw(answer(&cache, 1, &specs, "v2", &[], &head(None, None)));
        assert_eq!(
            (code, header(&headers, "content-type")),
            (200, Some("application/json"))
        );
        assert_eq!(serde_json::from_slice::<Value>(&body).unwrap()["swagger"], "2.0");
        assert_eq!(header(&headers, "etag"), Some(etag.as_str()));
        let (code, _, body) = raw(answer(&cache, 1, &specs, "v2", &[], &head(None, Some(&etag))));
        assert_eq!((code, body.len()), (304, 0));
        let (code, _, _) = raw(answer(&cache, 1, &specs, "v2", &[], &head(Some("text/html"), None)));
        assert_eq!(code, 406);
    }

    #[test]
    fn v3_index_links_each_group_version_by_hash() {
        let cache = Cache::default();
        let specs = specs();
        let (_, _, body) = raw(answer(&cache, 1, &specs, "v3", &[], &head(None, None)));
        let index: Value = serde_json::from_slice(&body).unwrap();
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap()
            .to_owned();
        let (path, hash) = url.split_once("?hash=").unwrap();
        let rest = path.strip_prefix("/openapi/").unwrap();
        let q = vec![("hash".to_owned(), hash.to_owned())];
        let (code, headers, body) = raw(answer(
            &cache,
            1,
            &specs,
            rest,
            &q,
            &head(Some("application/json"), None),
        ));
        assert_eq!(code, 200);
        assert_eq!(header(&headers, "cache-control"), Some("public, immutable"));
        let doc: Value = serde_json::from_slice(&body).unwrap();
        assert!(doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"].is_object());
        let stale = vec![("hash".to_owned(), "0123".to_owned())];
        let (code, headers, _) = raw(answer(&cache, 1, &specs, rest, &stale, &head(None, None)));
        assert_eq!((code, header(&headers, "location")), (301, Some(url.as_str())));
        assert_eq!(
            answer(&cache, 1, &specs, "v3/apis/nope/v1", &[], &head(None, None)).code(),
            404
        );
        // New resources, new documents.
        let mut more = specs.clone();
        more.push(Arc::new(ResourceSpec::new(kube_informer::object::ApiResource::new(
            "example.com",
            "v1",
            "Widget",
            "widgets",
            true,
        ))));
        let (_, _, body) = raw(answer(&cache, 2, &more, "v3", &[], &head(None, None)));
        let index: Value = serde_json::from_slice(&body).unwrap();
        assert!(index["paths"]["apis/example.com/v1"].is_object());
    }
}
