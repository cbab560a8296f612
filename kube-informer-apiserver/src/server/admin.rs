//! The admin API: fault injection and control over HTTP under [`PREFIX`], on the server's own port, for tests
//! written in any language (what [`ApiServer`](crate::ApiServer)'s methods do for Rust tests).
//!
//! Requests here are not Kubernetes requests: no fault applies to them and the request log does not record them.
//! With authentication on, only admin users may use them (401 without credentials, 403 for other users).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::api::errors::{self, Failure};
use crate::api::util;
use crate::api::util::parse_query;
use crate::http::RequestHead;
use crate::http::log::{LogMark, RequestRecord};
use crate::registry::reply::Reply;
use crate::server::faults::Fault;
use crate::server::shared::{Admin, Shared};
use kube_informer::object::Status;

/// Where the admin API lives. Kubernetes serves nothing under it.
pub const PREFIX: &str = "/kube-informer/admin/";

/// The longest a `watchers` request waits.
const MAX_WAIT: Duration = Duration::from_secs(600);

/// The endpoints, for the index.
const ENDPOINTS: &[(&str, &str)] = &[
    (
        "GET",
        "status: revision, compaction, pending faults, request log mark, watchers, settings",
    ),
    (
        "GET, POST, DELETE",
        "faults: list pending / queue one or an array / clear them (and end stalls)",
    ),
    (
        "POST",
        "compact: to {\"revision\": N} or, with no body, to the latest revision",
    ),
    (
        "POST",
        "restart: cut every connection, keep the state; {\"refuseFor\": \"2s\"} stays down that long",
    ),
    (
        "GET",
        "requests?since=MARK&verb=V&resource=R: the request log after MARK, and the new mark",
    ),
    (
        "GET",
        "watchers?resource=R&count=N&timeout=30s: wait until N watches stream R",
    ),
    (
        "GET, PUT",
        "settings: {\"bookmarkInterval\": \"1m\", \"watchList\": true}",
    ),
];

/// True for a path of the admin API.
pub(crate) fn is_admin_path(path: &str) -> bool {
    path.starts_with(PREFIX) || path == PREFIX.trim_end_matches('/')
}

/// An admin answer, and whether the connection must close after it (a restart ends the connection's epoch).
pub(crate) struct AdminAnswer {
    pub(crate) reply: Reply,
    pub(crate) close: bool,
}

impl From<Result<Reply, Failure>> for AdminAnswer {
    fn from(r: Result<Reply, Failure>) -> Self {
        AdminAnswer {
            reply: r.unwrap_or_else(Reply::Status),
            close: false,
        }
    }
}

/// The request on its way: what a handler may look at.
pub(crate) struct AdminRequest<'a> {
    pub(crate) shared: &'a Arc<Shared>,
    /// The connection carrying it (spared by a restart so it can answer).
    pub(crate) connection: u64,
    /// True once the server stops or restarts: long waits end.
    pub(crate) stopping: &'a dyn Fn() -> bool,
    /// The authenticated user (`Ok(None)` when authentication is off; `Err` when credentials are missing or
    /// wrong).
    pub(crate) user: Result<Option<String>, ()>,
    /// The peer is not on loopback.
    pub(crate) remote: bool,
    pub(crate) head: &'a RequestHead,
    pub(crate) body: &'a [u8],
}

/// Serves one admin request.
pub(crate) fn handle(req: &AdminRequest<'_>) -> AdminAnswer {
    let Some(admin) = &req.shared.admin else {
        return Err(errors::no_such_path()).into();
    };
    match &req.user {
        Err(()) => return Err(errors::unauthorized()).into(),
        Ok(Some(user)) if !admin.users.iter().any(|u| u == user) => {
            let message = format!("user \"{user}\" may not use the admin API ({PREFIX})");
            return Err(Box::new(Status::failure(403, "Forbidden", message))).into();
        }
        // Without authentication nobody can be told apart: only this machine's processes may use it.
        Ok(None) if req.remote => {
            let message = format!("the admin API ({PREFIX}) answers only loopback clients when authentication is off");
            return Err(Box::new(Status::failure(403, "Forbidden", message))).into();
        }
        Ok(_) => {}
    }
    let path = req.head.path.strip_prefix(PREFIX).unwrap_or("");
    let method = req.head.method.as_str();
    match (path.trim_end_matches('/'), method) {
        ("" | "status", "GET") => Ok(Reply::value(200, &status(req.shared))).into(),
        ("faults", "GET") => {
            let items: Vec<Value> = req
                .shared
                .faults
                .snapshot()
                .into_iter()
                .map(|f| serde_json::to_value(f).unwrap_or_default())
                .collect();
            Ok(Reply::value(200, &json!({"items": items}))).into()
        }
        ("faults", "POST") => add_faults(req.shared, req.body).into(),
        ("faults", "DELETE") => {
            req.shared.faults.clear();
            Ok(Reply::value(
                200,
                &json!({"pendingFaults": req.shared.faults.pending()}),
            ))
            .into()
        }
        ("compact", "POST") => compact(req.shared, req.body).into(),
        ("restart", "POST") => restart(req, admin),
        ("requests", "GET") => requests(req.shared, &req.head.query).into(),
        ("watchers", "GET") => {
            admin.waiting.fetch_add(1, Ordering::Relaxed);
            let answer = watchers(req);
            admin.waiting.fetch_sub(1, Ordering::Relaxed);
            answer.into()
        }
        ("settings", "GET") => Ok(Reply::value(200, &settings(req.shared))).into(),
        ("settings", "PUT" | "PATCH") => put_settings(req.shared, req.body).into(),
        ("" | "status" | "faults" | "compact" | "restart" | "requests" | "watchers" | "settings", _) => {
            Err(errors::method_not_allowed()).into()
        }
        _ => Err(errors::no_such_path()).into(),
    }
}

/// The body as a JSON value; `Null` when empty.
fn body_json(body: &[u8]) -> Result<Value, Failure> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(body).map_err(|e| errors::bad_request(format!("the body is not JSON: {e}")))
}

/// An object's fields; `{}` for an empty body.
fn body_object(body: &[u8], allowed: &[&str]) -> Result<serde_json::Map<String, Value>, Failure> {
    let map = match body_json(body)? {
        Value::Null => serde_json::Map::new(),
        Value::Object(m) => m,
        _ => return Err(errors::bad_request("the body must be a JSON object")),
    };
    if let Some(k) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(errors::bad_request(format!(
            "unknown field {k:?} (known: {})",
            allowed.join(", ")
        )));
    }
    Ok(map)
}

fn duration_field(map: &serde_json::Map<String, Value>, key: &str) -> Result<Option<Duration>, Failure> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => util::parse_duration(s)
            .map(Some)
            .map_err(|e| errors::bad_request(format!("{key}: {e}"))),
        Some(_) => Err(errors::bad_request(format!("{key} must be a duration such as \"2s\""))),
    }
}

fn status(shared: &Shared) -> Value {
    let (revision, compacted, watchers) = {
        let g = shared.store.lock();
        let watchers: serde_json::Map<String, Value> = g
            .specs()
            .iter()
            .map(|s| (s.id(), g.watchers(&s.id())))
            .filter(|(_, n)| *n > 0)
            .map(|(id, n)| (id, json!(n)))
            .collect();
        (g.rev(), g.compacted(), watchers)
    };
    let endpoints: Vec<Value> = ENDPOINTS
        .iter()
        .map(|(methods, what)| json!(format!("{methods} {PREFIX}{what}")))
        .collect();
    json!({
        "revision": revision,
        "compactedRevision": compacted,
        "pendingFaults": shared.faults.pending(),
        "requestLogMark": shared.log.mark().0,
        "watchers": watchers,
        "settings": settings(shared),
        "waitingAdminRequests": shared.admin.as_ref().map_or(0, |a| a.waiting.load(Ordering::Relaxed)),
        "endpoints": endpoints,
    })
}

fn add_faults(shared: &Shared, body: &[u8]) -> Result<Reply, Failure> {
    let forms = match body_json(body)? {
        Value::Array(items) => items,
        Value::Null => {
            return Err(errors::bad_request(
                "the body must be a fault (a JSON object) or an array of them",
            ));
        }
        one => vec![one],
    };
    let mut faults = Vec::with_capacity(forms.len());
    for (i, form) in forms.into_iter().enumerate() {
        let fault = serde_json::from_value::<Fault>(form).map_err(|e| {
            let which = if i == 0 { String::new() } else { format!("fault {i}: ") };
            errors::bad_request(format!("{which}{e}"))
        })?;
        faults.push(fault);
    }
    let added = faults.len();
    for f in faults {
        shared.faults.push(f);
    }
    Ok(Reply::value(
        201,
        &json!({"added": added, "pendingFaults": shared.faults.pending()}),
    ))
}

fn compact(shared: &Shared, body: &[u8]) -> Result<Reply, Failure> {
    let map = body_object(body, &["revision"])?;
    let target = match map.get("revision") {
        None | Some(Value::Null) => u64::MAX,
        Some(v) => v
            .as_u64()
            .filter(|r| *r > 0)
            .ok_or_else(|| errors::bad_request("revision must be a positive integer"))?,
    };
    let revision = shared.store.lock().compact(target);
    shared.store.notify();
    Ok(Reply::value(200, &json!({"revision": revision})))
}

fn restart(req: &AdminRequest<'_>, admin: &Admin) -> AdminAnswer {
    let down = match body_object(req.body, &["refuseFor"]).and_then(|m| duration_field(&m, "refuseFor")) {
        Ok(d) => d,
        Err(st) => return Err(st).into(),
    };
    let Some(_guard) = admin.restarting.try_lock() else {
        let st = Status::failure(409, "Conflict", "another restart is under way");
        return Err(Box::new(st)).into();
    };
    match (req.shared.restart)(req.shared, down, Some(req.connection)) {
        Ok(()) => {
            let mut answer = json!({"restarted": true});
            if let Some(d) = down {
                answer["refusingFor"] = json!(util::format_duration(d));
            }
            AdminAnswer {
                reply: Reply::value(200, &answer),
                close: true,
            }
        }
        Err(e) => AdminAnswer {
            reply: Reply::Status(errors::internal(format!("cannot listen again: {e}"))),
            close: true,
        },
    }
}

fn record_json(index: usize, r: &RequestRecord) -> Value {
    json!({
        "index": index,
        "method": r.method,
        "path": r.path,
        "query": r.query,
        "verb": r.verb.as_str(),
        "resource": r.resource,
        "subresource": r.subresource,
        "namespace": r.namespace,
        "name": r.name,
        "user": r.user,
        "code": r.code,
        "fault": r.fault,
        "connection": r.connection,
        "time": kube_informer::object::time::format_rfc3339_micros(r.time),
    })
}

fn requests(shared: &Shared, query: &str) -> Result<Reply, Failure> {
    let mut since = 0usize;
    let (mut verb, mut resource) = (None, None);
    for (k, v) in parse_query(query) {
        match k.as_str() {
            "since" => {
                since = v
                    .parse()
                    .map_err(|_| errors::bad_request(format!("since must be a log mark (a number), not {v:?}")))?;
            }
            "verb" => verb = Some(v),
            "resource" => resource = Some(v),
            _ => return Err(errors::bad_request(format!("unknown parameter {k:?}"))),
        }
    }
    let records = shared.log.since(LogMark(since));
    let mark = since + records.len();
    let items: Vec<Value> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| verb.as_deref().is_none_or(|v| r.verb.as_str() == v))
        .filter(|(_, r)| resource.as_deref().is_none_or(|res| r.is_for(res)))
        .map(|(i, r)| record_json(since + i, r))
        .collect();
    Ok(Reply::value(200, &json!({"mark": mark, "items": items})))
}

fn watchers(req: &AdminRequest<'_>) -> Result<Reply, Failure> {
    let (mut resource, mut count, mut timeout) = (None, None, Duration::from_secs(30));
    for (k, v) in parse_query(&req.head.query) {
        match k.as_str() {
            "resource" => resource = Some(v),
            "count" => {
                count = Some(
                    v.parse::<usize>()
                        .map_err(|_| errors::bad_request(format!("count must be a number, not {v:?}")))?,
                );
            }
            "timeout" => timeout = util::parse_duration(&v).map_err(errors::bad_request)?.min(MAX_WAIT),
            _ => return Err(errors::bad_request(format!("unknown parameter {k:?}"))),
        }
    }
    let resource = resource.ok_or_else(|| errors::bad_request("resource is required (a plural or plural.group)"))?;
    let shared = req.shared;
    let id = {
        let g = shared.store.lock();
        g.specs()
            .into_iter()
            .find(|s| s.api.plural == resource || s.id() == resource)
            .map(|s| s.id())
    }
    .ok_or_else(|| errors::bad_request(format!("the server serves no resource {resource:?}")))?;
    let want = count.unwrap_or(0);
    // `timeout` is at most MAX_WAIT: no overflow.
    let deadline = Instant::now() + timeout;
    let mut g = shared.store.lock();
    loop {
        let n = g.watchers(&id);
        if n >= want {
            return Ok(Reply::value(200, &json!({"resource": id, "watchers": n})));
        }
        let now = Instant::now();
        if (req.stopping)() || now >= deadline {
            let message = format!(
                "{want} watches of {id} wanted, {n} after {}",
                util::format_duration(timeout)
            );
            return Err(Box::new(Status::failure(504, "Timeout", message)));
        }
        // Woken by every watcher change and by shutdown; the cap re-checks `stopping` regardless.
        shared
            .store
            .wait_until(&mut g, deadline.min(now + Duration::from_millis(100)));
    }
}

fn settings(shared: &Shared) -> Value {
    json!({
        "bookmarkInterval": util::format_duration(shared.bookmark_interval()),
        "watchList": shared.watch_list_enabled(),
        "shardedListAndWatch": shared.sharded_list_and_watch_enabled(),
    })
}

fn put_settings(shared: &Shared, body: &[u8]) -> Result<Reply, Failure> {
    let map = body_object(body, &["bookmarkInterval", "watchList", "shardedListAndWatch"])?;
    let interval = duration_field(&map, "bookmarkInterval")?;
    if interval.is_some_and(|d| d.is_zero()) {
        return Err(errors::bad_request("bookmarkInterval must be more than 0"));
    }
    let watch_list = match map.get("watchList") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(errors::bad_request("watchList must be true or false")),
    };
    let sharded = match map.get("shardedListAndWatch") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(errors::bad_request("shardedListAndWatch must be true or false")),
    };
    if let Some(d) = interval {
        shared.set_bookmark_interval(d);
    }
    if let Some(b) = sharded {
        shared.set_sharded_list_and_watch(b);
    }
    if let Some(b) = watch_list {
        shared.set_watch_list(b);
    }
    Ok(Reply::value(200, &settings(shared)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_paths_are_the_prefix_and_below() {
        assert!(is_admin_path("/kube-informer/admin"));
        assert!(is_admin_path("/kube-informer/admin/"));
        assert!(is_admin_path("/kube-informer/admin/faults"));
        assert!(!is_admin_path("/kube-informer/administrator"));
        assert!(!is_admin_path("/api/v1/kube-informer/admin/"));
    }

    #[test]
    fn bodies_are_checked_field_by_field() {
        assert!(body_object(b"", &["a"]).unwrap().is_empty());
        assert!(body_object(b" \n", &["a"]).unwrap().is_empty());
        assert_eq!(body_object(br#"{"a":1}"#, &["a"]).unwrap()["a"], 1);
        let e = body_object(br#"{"b":1}"#, &["a"]).unwrap_err();
        assert!(e.message.contains("unknown field \"b\""), "{}", e.message);
        assert_eq!(body_object(b"[1]", &["a"]).unwrap_err().code, 400);
        assert_eq!(body_object(b"{", &["a"]).unwrap_err().code, 400);
        let m = body_object(br#"{"d":"2s","e":3}"#, &["d", "e"]).unwrap();
        assert_eq!(duration_field(&m, "d").unwrap(), Some(Duration::from_secs(2)));
        assert!(duration_field(&m, "e").is_err());
        assert_eq!(duration_field(&m, "f").unwrap(), None);
    }
}
