//! LIST: query options (shared with WATCH), their validation, resourceVersion semantics, paging with continue
//! tokens.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::api::errors::{self, Failure, FieldError};
use crate::api::util;
use crate::registry::Store;
use crate::registry::reply::Reply;
use crate::registry::resource::ResourceSpec;
use crate::serializer::json;
use crate::storage::store::{ListQuery, StoredObject};
use kube_informer::selector::{FieldSelector, Selector, ShardField, ShardSelector};

/// The query parameters of a LIST or WATCH (`metav1.ListOptions`).
#[derive(Debug, Default)]
pub(crate) struct ListOptions {
    pub(crate) label: Selector,
    pub(crate) field: FieldSelector,
    /// `shardSelector`, read only while the `ShardedListAndWatch` gate is on (else ignored, as kube-apiserver ignores
    /// a disabled alpha field).
    pub(crate) shard: Option<ShardSelector>,
    /// Set by a `/watch/…/{name}` path: only this object.
    pub(crate) name: Option<String>,
    /// 0 = no limit.
    pub(crate) limit: usize,
    pub(crate) continue_token: Option<String>,
    /// `None` when absent or empty.
    pub(crate) resource_version: Option<String>,
    pub(crate) rv_match: Option<String>,
    pub(crate) send_initial_events: Option<bool>,
    pub(crate) allow_bookmarks: bool,
    pub(crate) timeout_seconds: Option<u64>,
    pub(crate) watch: bool,
}

/// Go's `strconv.ParseBool`.
fn parse_bool(key: &str, v: &str) -> Result<bool, Failure> {
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(errors::bad_request(format!(
            "invalid value {v:?} for {key}: not a boolean"
        ))),
    }
}

fn parse_number(key: &str, v: &str) -> Result<i64, Failure> {
    v.parse()
        .map_err(|_| errors::bad_request(format!("invalid value {v:?} for {key}: not an integer")))
}

impl ListOptions {
    /// Reads the query parameters; 400 on a malformed value or selector. `sharding`: the `ShardedListAndWatch` gate.
    pub(crate) fn parse(
        query: &[(String, String)],
        spec: &ResourceSpec,
        sharding: bool,
    ) -> Result<ListOptions, Failure> {
        let mut o = ListOptions::default();
        for (k, v) in query {
            match k.as_str() {
                "labelSelector" => {
                    o.label = v
                        .parse()
                        .map_err(|e| errors::bad_request(format!("unable to parse requirement: {e}")))?;
                }
                "fieldSelector" => {
                    o.field = v
                        .parse()
                        .map_err(|e| errors::bad_request(format!("invalid field selector: {e}")))?;
                    if let Some(t) = o.field.terms().iter().find(|t| !spec.selectable(&t.field)) {
                        return Err(errors::bad_request(format!("field label not supported: {}", t.field)));
                    }
                }
                // An empty value is no selector, as an unset field.
                "shardSelector" if sharding && !v.is_empty() => {
                    o.shard = Some(v.parse().map_err(|e| match e {
                        kube_informer::Error::InvalidInput(m) => {
                            errors::bad_request(format!("invalid shard selector: {m}"))
                        }
                        other => errors::bad_request(format!("invalid shard selector: {other}")),
                    })?);
                }
                "limit" => o.limit = usize::try_from(parse_number(k, v)?).unwrap_or(0),
                "continue" if !v.is_empty() => o.continue_token = Some(v.clone()),
                "resourceVersion" if !v.is_empty() => o.resource_version = Some(v.clone()),
                "resourceVersionMatch" if !v.is_empty() => o.rv_match = Some(v.clone()),
                "sendInitialEvents" => o.send_initial_events = Some(parse_bool(k, v)?),
                "allowWatchBookmarks" => o.allow_bookmarks = parse_bool(k, v)?,
                "watch" => o.watch = parse_bool(k, v)?,
                "timeoutSeconds" => o.timeout_seconds = Some(u64::try_from(parse_number(k, v)?).unwrap_or(0)),
                _ => {}
            }
        }
        Ok(o)
    }

    /// True when the object passes the label, field and shard selectors (and the path's name).
    pub(crate) fn matches(&self, spec: &ResourceSpec, o: &StoredObject) -> bool {
        self.name.as_ref().is_none_or(|n| *n == o.name)
            && self.label.matches(&o.labels)
            && self.field.matches(|f| o.field(spec, f))
            && self.shard.as_ref().is_none_or(|s| {
                s.matches_value(match s.field() {
                    ShardField::Uid => &o.uid,
                    ShardField::Namespace => &o.namespace,
                })
            })
    }

    /// True when a selector narrows the list (etcd then does not count the remaining items).
    fn has_selector(&self) -> bool {
        !self.label.is_empty() || !self.field.is_empty() || self.shard.is_some()
    }

    /// What binds a continue token to this list's shard selector: the FNV-1a of its canonical form.
    fn shard_binding(&self) -> Option<String> {
        self.shard
            .as_ref()
            .map(|s| format!("{:016x}", ShardSelector::hash(&s.to_string())))
    }

    /// The resourceVersion as a number: `Ok(None)` when absent, 400 when not a number.
    pub(crate) fn rv_number(&self) -> Result<Option<u64>, Failure> {
        match self.resource_version.as_deref() {
            None => Ok(None),
            Some(rv) => rv
                .parse()
                .map(Some)
                .map_err(|_| errors::bad_request(format!("invalid resource version {rv:?}"))),
        }
    }

    /// apimachinery's `ValidateListOptions` for a LIST.
    fn validate_list(&self) -> Result<(), Failure> {
        let mut errs = Vec::new();
        if let Some(m) = &self.rv_match {
            if self.resource_version.is_none() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if self.continue_token.is_some() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if m != "Exact" && m != "NotOlderThan" {
                errs.push(FieldError::not_supported(
                    "resourceVersionMatch",
                    m,
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if m == "Exact" && self.resource_version.as_deref() == Some("0") {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if self.send_initial_events.is_some() {
            errs.push(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errors::invalid_list_options(errs))
        }
    }
}

/// The message of a 410 for a continue token whose revision was compacted.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// A continue token: base64url of `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}`, as kube-apiserver makes
/// them. `rv` -1 means "continue at the latest revision" (handed out with a 410 for a compacted token). A list with a
/// shard selector adds `"shard"`, the selector's binding: the next page must ask for the same shard (else 400), so a
/// client that changed its shard between pages never assembles a list of two shards.
fn encode_continue(rv: i64, last_key: &str, shard: Option<&str>) -> String {
    let mut doc = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{last_key}\u{0}")});
    if let Some(s) = shard {
        doc["shard"] = json!(s);
    }
    util::base64_url(doc.to_string().as_bytes())
}

/// (rv, start key, shard binding).
fn decode_continue(token: &str) -> Result<(i64, String, Option<String>), Failure> {
    let bad = |why: &str| errors::bad_request(format!("invalid continue token: {why}"));
    let bytes = util::base64_url_decode(token).ok_or_else(|| bad("not base64"))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad("not JSON"))?;
    if v["v"] != "meta.k8s.io/v1" {
        return Err(bad("unknown version"));
    }
    let rv = v["rv"]
        .as_i64()
        .filter(|rv| *rv > 0 || *rv == -1)
        .ok_or_else(|| bad("bad resourceVersion"))?;
    let start = v["start"]
        .as_str()
        .and_then(|s| s.strip_suffix('\u{0}'))
        .ok_or_else(|| bad("bad start key"))?;
    if start.is_empty() || start.contains("..") {
        return Err(bad("bad start key"));
    }
    let shard = match v.get("shard") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("bad shard")),
    };
    Ok((rv, start.to_owned(), shard))
}

/// Serves a LIST.
pub(crate) fn list(
    store: &Store,
    too_large_wait: Duration,
    watch_cache: bool,
    spec: &ResourceSpec,
    namespace: Option<&str>,
    opts: &ListOptions,
) -> Result<Reply, Failure> {
    opts.validate_list()?;
    let id = spec.id();
    let rv = opts.rv_number()?;
    // Which revision to read, where to start, whether to page.
    let mut after = None;
    let mut limit = opts.limit;
    let mut at_latest = true;
    let mut at = 0;
    if let Some(token) = &opts.continue_token {
        if rv.is_some_and(|rv| rv != 0) {
            return Err(errors::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (token_rv, key, token_shard) = decode_continue(token)?;
        if token_shard != opts.shard_binding() {
            return Err(errors::bad_request(
                "invalid continue token: the shardSelector differs from the one the list started with",
            ));
        }
        if let Some(ns) = namespace
            && !key.starts_with(&format!("{ns}/"))
        {
            return Err(errors::bad_request(
                "invalid continue token: key outside the listed namespace",
            ));
        }
        if token_rv > 0 {
            at_latest = false;
            at = token_rv as u64;
        }
        after = Some(key);
    } else {
        match rv {
            None => {}
            // "Any": served like the watch cache serves it, whole, ignoring limit (paged without a watch cache).
            Some(0) if watch_cache => limit = 0,
            Some(0) => {}
            Some(n) => {
                let exact = match opts.rv_match.as_deref() {
                    Some(m) => m == "Exact",
                    // Legacy semantics: a resourceVersion with a limit and no match means Exact.
                    None => opts.limit > 0,
                };
                if exact {
                    at_latest = false;
                    at = n;
                } else {
                    at = n;
                }
            }
        }
    }
    let (g, fresh) = if at > 0 {
        store.wait_for_rev(at, too_large_wait)
    } else {
        (store.lock(), true)
    };
    if !fresh {
        return Err(errors::too_large_resource_version(at, g.rev()));
    }
    if at_latest {
        at = g.rev();
    } else if at < g.compacted() {
        drop(g);
        return Err(match &after {
            Some(key) => {
                let mut st = errors::expired(INCONSISTENT_CONTINUE);
                st.metadata.continue_token = Some(encode_continue(-1, key, opts.shard_binding().as_deref()));
                st
            }
            None => errors::expired("The resourceVersion for the provided list is too old."),
        });
    }
    let filter = |o: &StoredObject| opts.matches(spec, o);
    let page = g.list(
        &id,
        &ListQuery {
            namespace: if spec.api.namespaced { namespace } else { None },
            at,
            after: after.as_deref(),
            limit,
            filter: &filter,
            count_remaining: !opts.has_selector(),
        },
    );
    drop(g);
    let mut meta = json!({"resourceVersion": at.to_string()});
    if page.more {
        if let Some(last) = page.items.last() {
            meta["continue"] = json!(encode_continue(at as i64, &last.key(), opts.shard_binding().as_deref()));
        }
        if !opts.has_selector() {
            meta["remainingItemCount"] = json!(page.remaining);
        }
    }
    // Tells the client the server filtered: a server without the gate answers without it, and the client filters.
    if let Some(s) = &opts.shard {
        meta["shardInfo"] = json!({"selector": s.to_string()});
    }
    Ok(list_reply(spec, &meta, page.items))
}

/// A list as kube-apiserver writes it: a built-in kind's as its Go struct (`kind`, `apiVersion`, `metadata` in
/// `ListMeta`'s order — `resourceVersion`, `continue`, `remainingItemCount` — then `items`), a custom resource's
/// as `UnstructuredList` writes it, keys sorted (`apiVersion`, `items`, `kind`, `metadata`).
pub(crate) fn list_reply(spec: &ResourceSpec, meta: &Value, items: Vec<Arc<StoredObject>>) -> Reply {
    let kind = json::to_vec_unstructured(&json!(format!("{}List", spec.api.kind)));
    let api_version = json::to_vec_unstructured(&json!(spec.api.api_version()));
    let (prefix, suffix) = if spec.custom {
        let meta = json::to_vec_unstructured(meta);
        (
            [&b"{\"apiVersion\":"[..], &api_version, b",\"items\":["].concat(),
            [&b",\"kind\":"[..], &kind, b",\"metadata\":", &meta, b"}"].concat(),
        )
    } else {
        let meta = json::to_vec_as(meta, "meta.v1.ListMeta");
        (
            [
                &b"{\"kind\":"[..],
                &kind,
                b",\"apiVersion\":",
                &api_version,
                b",\"metadata\":",
                &meta,
                b",\"items\":[",
            ]
            .concat(),
            b"}".to_vec(),
        )
    };
    Reply::List { prefix, items, suffix }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_informer::object::ApiResource;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn spec() -> ResourceSpec {
        ResourceSpec::new(ApiResource::new("", "v1", "ConfigMap", "configmaps", true))
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let t = encode_continue(42, "ns/a", None);
        assert_eq!(decode_continue(&t).unwrap(), (42, "ns/a".to_owned(), None));
        assert_eq!(
            decode_continue(&encode_continue(-1, "b", Some("ab"))).unwrap(),
            (-1, "b".to_owned(), Some("ab".to_owned()))
        );
        for bad in [
            "",
            "!!",
            "e30",
            &util::base64_url(br#"{"v":"x","rv":1,"start":"a\u0000"}"#),
        ] {
            assert_eq!(decode_continue(bad).unwrap_err().code, 400, "{bad}");
        }
        assert!(decode_continue(&encode_continue(0, "a", None)).is_err());
    }

    #[test]
    fn parses_and_validates_options() {
        let o = ListOptions::parse(
            &q(&[("labelSelector", "a in (b)"), ("limit", "5"), ("watch", "1")]),
            &spec(),
            false,
        )
        .unwrap();
        assert_eq!((o.limit, o.watch), (5, true));
        for bad in [
            ("labelSelector", "a in ("),
            ("fieldSelector", "spec.x=1"),
            ("limit", "x"),
            ("watch", "yes"),
            ("fieldSelector", "nope"),
        ] {
            assert_eq!(
                ListOptions::parse(&q(&[bad]), &spec(), false).unwrap_err().code,
                400,
                "{bad:?}"
            );
        }
        for invalid in [
            vec![("resourceVersionMatch", "Exact")],
            vec![("resourceVersionMatch", "Exact"), ("resourceVersion", "0")],
            vec![("resourceVersionMatch", "Newest"), ("resourceVersion", "1")],
            vec![
                ("resourceVersionMatch", "Exact"),
                ("resourceVersion", "1"),
                ("continue", "x"),
            ],
            vec![("sendInitialEvents", "true")],
        ] {
            let o = ListOptions::parse(&q(&invalid), &spec(), false).unwrap();
            let e = o.validate_list().unwrap_err();
            assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{invalid:?}");
        }
    }
}
