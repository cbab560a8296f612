//! WATCH: a chunked stream of JSON events read from the resource's shared history at the watcher's own pace.
//!
//! Protocol, as kube-apiserver's watch cache serves it:
//! 1. Validate the options (422 for `resourceVersionMatch`/`sendInitialEvents` misuse, or for `sendInitialEvents`
//!    when the WatchList feature is off).
//! 2. Under the store lock, fix the starting point: the current state (synthetic ADDED events) when no
//!    resourceVersion, "0", or `sendInitialEvents=true` is given; otherwise the first history event newer than the
//!    resourceVersion, or an ERROR event with a 410 Status when the history no longer reaches back that far.
//!    The watcher is counted (for `wait_for_watchers`) in the same critical section, so every later write reaches it.
//! 3. Stream: initial events, the `k8s.io/initial-events-end` BOOKMARK for a streaming list, then history events,
//!    filtered per watcher (an object leaving the selector is sent as DELETED, one entering it as ADDED).
//!    BOOKMARKs go out every bookmark interval; their resourceVersion is the store's revision only when the
//!    watcher has consumed every event of its resource, else the last event consumed — never ahead of an unsent one.
//! 4. End with the terminating chunk at `timeoutSeconds`, after a 410 ERROR when the watcher fell behind the
//!    history, or abruptly when a fault, the client, a restart or shutdown ends it.

use std::borrow::Cow;
use std::io::{self, BufWriter, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::api::errors::{self, Failure, FieldError};
use crate::api::util;
use crate::endpoints::ServerState;
use crate::endpoints::list::ListOptions;
use crate::endpoints::table::Converter;
use crate::http::fault_action::FaultAction;
use crate::http::{self, ResponseBody};
use crate::registry::conversion;
use crate::registry::reply::Limit;
use crate::registry::resource::ResourceSpec;
use crate::storage::store::{Event, EventKind, ListQuery, StoredObject};
use kube_informer::watch::INITIAL_EVENTS_END_ANNOTATION;

/// How a watch request ended.
pub(crate) enum WatchEnd {
    /// Refused before streaming: answer with this status.
    Refused(Failure),
    /// The stream ended cleanly; the connection may serve another request.
    Done,
    /// Close the connection (client gone, shutdown, restart).
    Close,
    /// A fault cut the stream: close without a goodbye.
    Cut,
}

/// Why streaming stopped early.
enum Stop {
    Cut,
    Gone,
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::ConnectionAborted {
            Stop::Cut
        } else {
            Stop::Gone
        }
    }
}

/// apimachinery's `validateWatchOptions`.
fn validate(o: &ListOptions, watch_list_enabled: bool) -> Result<(), Failure> {
    let mut errs = Vec::new();
    let m = o.rv_match.as_deref();
    if o.send_initial_events.is_some() {
        if m != Some("NotOlderThan") {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !watch_list_enabled {
            errs.push(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
    }
    if let Some(m) = m {
        if o.send_initial_events.is_none() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if m != "NotOlderThan" {
            errs.push(FieldError::not_supported("resourceVersionMatch", m, &["NotOlderThan"]));
        }
        if o.continue_token.is_some() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errors::invalid_list_options(errs))
    }
}

/// The object of a BOOKMARK event.
fn bookmark_json(spec: &ResourceSpec, rv: u64, initial_events_end: bool) -> Vec<u8> {
    let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_events_end {
        meta["annotations"] = json!({ INITIAL_EVENTS_END_ANNOTATION: "true" });
    }
    let obj = json!({"kind": spec.api.kind, "apiVersion": spec.api.api_version(), "metadata": meta});
    if spec.custom {
        crate::serializer::json::to_vec_unstructured(&obj)
    } else {
        crate::serializer::json::to_vec(&obj)
    }
}

/// What a watcher with `filter` sees of a stored event (kube-apiserver's `cacheWatcher.convertToWatchEvent`).
fn convert<'e>(
    e: &'e Event,
    spec: &ResourceSpec,
    filter: &dyn Fn(&StoredObject) -> bool,
) -> Option<(&'static str, &'e [u8])> {
    match e.kind {
        EventKind::Added | EventKind::Deleted => filter(&e.object).then(|| (e.kind.wire_name(), &e.object.json[..])),
        EventKind::Modified => {
            let now = filter(&e.object);
            let before = e.prev.as_ref().is_some_and(|p| filter(p));
            match (now, before) {
                (true, true) => Some(("MODIFIED", &e.object.json[..])),
                (true, false) => Some(("ADDED", &e.object.json[..])),
                (false, true) => Some(("DELETED", e.prev_json_at_rev(spec))),
                (false, false) => None,
            }
        }
    }
}

/// Writes events as chunks and applies the event-counted faults.
struct Streamer<'a> {
    w: BufWriter<Limit<&'a mut dyn Write>>,
    chunked: bool,
    /// Events written so far (bookmarks included).
    sent: usize,
    fault: Option<FaultAction>,
    /// The fault's stall ticket.
    ticket: u64,
    /// The one-shot part of the fault (stall, garbage) already happened.
    fault_done: bool,
    /// Turns each event's object into what the client asked for (a Table row for `kubectl get -w`).
    converter: Option<Converter<'a>>,
    /// The version watched: objects are sent in it.
    spec: &'a ResourceSpec,
}

impl Streamer<'_> {
    fn frame(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        if self.chunked {
            http::write_chunk(&mut self.w, parts)
        } else {
            parts.iter().try_for_each(|p| self.w.write_all(p))
        }
    }

    fn event(&mut self, ctx: &dyn Connection, kind: &str, object: &[u8]) -> Result<(), Stop> {
        let served = match kind {
            "ERROR" | "BOOKMARK" => Cow::Borrowed(object),
            _ => conversion::served_json(self.spec, object),
        };
        let object = &served[..];
        let converted = self.converter.as_mut().map(|c| c.event_object(kind, object));
        let object = converted.as_deref().unwrap_or(object);
        let parts: [&[u8]; 5] = [b"{\"type\":\"", kind.as_bytes(), b"\",\"object\":", object, b"}\n"];
        if let Some(FaultAction::CloseMidObject { after_events }) = &self.fault
            && self.sent == *after_events
        {
            let whole: Vec<u8> = parts.concat();
            self.frame(&[&whole[..whole.len() / 2]])?;
            self.w.flush()?;
            return Err(Stop::Cut);
        }
        self.frame(&parts)?;
        self.sent += 1;
        self.checkpoint(ctx)
    }

    /// Applies a fault due after `sent` events (called after the headers and after every event).
    fn checkpoint(&mut self, ctx: &dyn Connection) -> Result<(), Stop> {
        match &self.fault {
            Some(FaultAction::CutAfterEvents(n)) if self.sent == *n => {
                self.w.flush()?;
                Err(Stop::Cut)
            }
            Some(FaultAction::Stall {
                after_events: Some(n),
                duration,
            }) if self.sent == *n && !self.fault_done => {
                self.fault_done = true;
                let duration = *duration;
                self.w.flush()?;
                ctx.state().stall(duration, self.ticket, &|| ctx.stopping());
                if ctx.stopping() { Err(Stop::Gone) } else { Ok(()) }
            }
            Some(FaultAction::Garbage { after_events, bytes }) if self.sent == *after_events && !self.fault_done => {
                self.fault_done = true;
                let bytes = bytes.clone();
                self.frame(&[&bytes])?;
                self.w.flush()?;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.chunked {
            http::write_last_chunk(&mut self.w)?;
        }
        self.w.flush()
    }
}

/// Where the stream starts.
enum Start {
    /// 410: the requested resourceVersion is older than the history.
    Expired {
        requested: u64,
        floor: u64,
    },
    Stream(Resume),
}

/// Where a stream that starts begins: its initial events, then the history from a point.
struct Resume {
    initial: Vec<Arc<StoredObject>>,
    /// History sequence number of the first event to read.
    seq: u64,
    /// Events at or below this revision are already reflected (skip them).
    min_rv: u64,
    /// Send the initial-events-end bookmark at this revision.
    end_bookmark: Option<u64>,
}

/// A WATCH request as the connection hands it over: the version watched, the namespace (none for all), the list
/// options, the fault that shapes the stream (with its stall ticket), and the conversion of each event's object.
pub(crate) struct WatchRequest<'a> {
    pub(crate) spec: &'a Arc<ResourceSpec>,
    pub(crate) namespace: Option<&'a str>,
    pub(crate) opts: &'a ListOptions,
    /// The client speaks HTTP/1.0: the stream ends with the connection, not in chunks.
    pub(crate) http10: bool,
    pub(crate) fault: Option<(FaultAction, u64)>,
    pub(crate) converter: Option<Converter<'a>>,
}

/// The connection a watch streams on, as the server hands it down: the server's state, and whether to stop.
pub(crate) trait Connection {
    /// The server's state.
    fn state(&self) -> &dyn ServerState;
    /// True when the server is shutting down or restarting.
    fn stopping(&self) -> bool;
    /// True when the client closed its side (checked without blocking).
    fn peer_closed(&self) -> bool;
}

/// Counts the watcher while it streams.
struct Registration<'a> {
    ctx: &'a dyn Connection,
    id: String,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.ctx.state().store().lock().track_watcher(&self.id, false);
        self.ctx.state().store().watchers_changed();
    }
}

/// Serves a WATCH request; `started(200)` is called, under the store's lock, once the stream is sure to begin.
pub(crate) fn serve(
    ctx: &dyn Connection,
    out: &mut dyn Write,
    request: WatchRequest<'_>,
    started: &mut dyn FnMut(u16),
) -> WatchEnd {
    let WatchRequest {
        spec,
        namespace,
        opts,
        http10,
        fault,
        converter,
    } = request;
    let (fault, ticket) = match fault {
        Some((f, t)) => (Some(f), t),
        None => (None, 0),
    };
    let shared = ctx.state();
    let store = shared.store();
    if let Err(st) = validate(opts, shared.watch_list_enabled()) {
        return WatchEnd::Refused(st);
    }
    let rv = match opts.rv_number() {
        Ok(rv) => rv,
        Err(st) => return WatchEnd::Refused(st),
    };
    let id = spec.id();
    let ns = if spec.api.namespaced { namespace } else { None };
    let filter = |o: &StoredObject| ns.is_none_or(|n| o.namespace == n) && opts.matches(spec, o);

    let mut registration = None;
    let start = {
        let mut g = match (opts.send_initial_events, rv) {
            (Some(true), Some(n)) if n > 0 => {
                let (g, fresh) = store.wait_for_rev(n, shared.too_large_wait());
                if !fresh {
                    return WatchEnd::Refused(errors::too_large_resource_version(n, g.rev()));
                }
                g
            }
            _ => store.lock(),
        };
        let current = g.rev();
        let synthetic = opts.send_initial_events.unwrap_or(rv.is_none_or(|n| n == 0));
        let from = if synthetic || rv.is_none_or(|n| n == 0) {
            Ok((g.end_seq(&id), current))
        } else {
            let n = rv.unwrap_or(0);
            g.watch_from(&id, n).map(|seq| (seq, n)).map_err(|floor| (n, floor))
        };
        // Logged under the store's lock, before the watcher is registered: a test that sees the watch established
        // (`wait_for_watchers`) or the stream start also finds its record.
        started(200);
        match from {
            Err((requested, floor)) => Start::Expired { requested, floor },
            Ok((seq, min_rv)) => {
                let initial = if synthetic {
                    let q = ListQuery {
                        namespace: ns,
                        at: current,
                        after: None,
                        limit: 0,
                        filter: &filter,
                        count_remaining: false,
                    };
                    g.list(&id, &q).items
                } else {
                    Vec::new()
                };
                g.track_watcher(&id, true);
                registration = Some(Registration { ctx, id: id.clone() });
                Start::Stream(Resume {
                    initial,
                    seq,
                    min_rv,
                    end_bookmark: (opts.send_initial_events == Some(true) && opts.allow_bookmarks).then_some(current),
                })
            }
        }
    };
    store.watchers_changed();

    let body = if http10 {
        ResponseBody::UntilClose
    } else {
        ResponseBody::Chunked
    };
    let limit = match &fault {
        Some(FaultAction::CutAfterBytes(n)) => Some(*n),
        _ => None,
    };
    let warning = crate::http::warning::headers(spec.deprecation.as_deref());
    let headers: Vec<(&str, &str)> = warning.iter().map(|w| ("Warning", w.as_str())).collect();
    if http::write_head(&mut &mut *out, 200, &headers, body, !http10).is_err() {
        return WatchEnd::Close;
    }
    let mut s = Streamer {
        w: BufWriter::with_capacity(
            64 * 1024,
            Limit {
                inner: out,
                remaining: limit,
            },
        ),
        chunked: !http10,
        sent: 0,
        fault,
        ticket,
        fault_done: false,
        converter,
        spec,
    };
    let result = match start {
        Start::Expired { requested, floor } => {
            let st = errors::expired(format!("too old resource version: {requested} ({floor})"));
            let json = crate::serializer::json::status_to_vec(&st);
            s.checkpoint(ctx).and_then(|()| s.event(ctx, "ERROR", &json))
        }
        Start::Stream(resume) => stream(ctx, &mut s, opts, &filter, resume),
    };
    drop(registration);
    match result {
        Ok(()) => match s.finish() {
            Ok(()) if !http10 => WatchEnd::Done,
            Ok(()) => WatchEnd::Close,
            Err(e) => match Stop::from(e) {
                Stop::Cut => WatchEnd::Cut,
                Stop::Gone => WatchEnd::Close,
            },
        },
        Err(Stop::Cut) => WatchEnd::Cut,
        Err(Stop::Gone) => WatchEnd::Close,
    }
}

/// What the watcher found under the lock.
enum Step {
    Events { caught_up_rev: Option<u64> },
    Expired(u64),
    Bookmark(u64),
    Liveness,
    Timeout,
    Stop,
}

/// How often an idle watcher checks that its client is still there.
const LIVENESS_INTERVAL: Duration = Duration::from_millis(500);

fn stream(
    ctx: &dyn Connection,
    s: &mut Streamer<'_>,
    opts: &ListOptions,
    filter: &dyn Fn(&StoredObject) -> bool,
    resume: Resume,
) -> Result<(), Stop> {
    let Resume {
        initial,
        mut seq,
        min_rv,
        end_bookmark,
    } = resume;
    let spec = s.spec;
    let store = ctx.state().store();
    let id = spec.id();
    // Writes to this resource wake this condition variable; everything else (restart, shutdown, bookmark
    // interval changes, compaction) goes through `Store::notify`, which wakes it too.
    let Some(signal) = store.lock().signal(&id) else {
        return Ok(());
    };
    s.checkpoint(ctx)?;
    for o in &initial {
        s.event(ctx, "ADDED", &o.json)?;
    }
    drop(initial);
    if let Some(rv) = end_bookmark {
        s.event(ctx, "BOOKMARK", &bookmark_json(spec, rv, true))?;
    }
    s.w.flush()?;

    // kube-apiserver closes a watch without timeoutSeconds after a random 30–60 minutes.
    let timeout = match opts.timeout_seconds {
        Some(t) if t > 0 => Duration::from_secs(t),
        _ => Duration::from_secs(1800 + util::random_u64() % 1800),
    };
    // A client's timeoutSeconds may be anything up to 2⁶⁴ − 1: the deadline saturates.
    let deadline = util::deadline_after(timeout);
    let mut last_bookmark = Instant::now();
    let mut last_liveness = Instant::now();
    // The newest revision this watcher is known to reflect.
    let mut last_rv = min_rv;
    let mut batch: Vec<Arc<Event>> = Vec::with_capacity(512);
    loop {
        batch.clear();
        let step = {
            let mut g = store.lock();
            loop {
                if ctx.stopping() {
                    break Step::Stop;
                }
                match g.read_events(&id, seq, 512, &mut batch) {
                    Err(floor) => break Step::Expired(floor),
                    Ok(next) if next > seq => {
                        seq = next;
                        let caught_up_rev = (next == g.end_seq(&id)).then(|| g.rev());
                        break Step::Events { caught_up_rev };
                    }
                    // Every event read and the resource gone (its CRD deleted): the stream ends, as on a cluster.
                    Ok(_) if g.gone(&id, &signal) => break Step::Timeout,
                    Ok(_) => {}
                }
                let now = Instant::now();
                if now >= deadline {
                    break Step::Timeout;
                }
                let bookmark_at = last_bookmark + ctx.state().bookmark_interval();
                if opts.allow_bookmarks && now >= bookmark_at {
                    break Step::Bookmark(g.rev());
                }
                if now >= last_liveness + LIVENESS_INTERVAL {
                    break Step::Liveness;
                }
                let mut wake = deadline.min(last_liveness + LIVENESS_INTERVAL);
                if opts.allow_bookmarks {
                    wake = wake.min(bookmark_at);
                }
                signal.wait_until(&mut g, wake);
            }
        };
        match step {
            Step::Stop => return Err(Stop::Gone),
            Step::Timeout => return Ok(()),
            Step::Expired(floor) => {
                let st = errors::expired(format!("too old resource version: {last_rv} ({floor})"));
                return s.event(ctx, "ERROR", &crate::serializer::json::status_to_vec(&st));
            }
            Step::Liveness => {
                last_liveness = Instant::now();
                if ctx.peer_closed() {
                    return Err(Stop::Gone);
                }
            }
            Step::Bookmark(rev) => {
                last_rv = last_rv.max(rev);
                s.event(ctx, "BOOKMARK", &bookmark_json(spec, last_rv, false))?;
                s.w.flush()?;
                last_bookmark = Instant::now();
            }
            Step::Events { caught_up_rev } => {
                for e in &batch {
                    if e.rev <= min_rv {
                        continue;
                    }
                    last_rv = last_rv.max(e.rev);
                    if let Some((kind, json)) = convert(e, spec, filter) {
                        s.event(ctx, kind, json)?;
                    }
                }
                if opts.allow_bookmarks && Instant::now() >= last_bookmark + ctx.state().bookmark_interval() {
                    if let Some(rev) = caught_up_rev {
                        last_rv = last_rv.max(rev);
                    }
                    s.event(ctx, "BOOKMARK", &bookmark_json(spec, last_rv, false))?;
                    last_bookmark = Instant::now();
                }
                s.w.flush()?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_informer::object::ApiResource;

    #[test]
    fn validates_like_apimachinery() {
        let o = |pairs: &[(&str, &str)]| {
            let spec = ResourceSpec::new(ApiResource::new("", "v1", "ConfigMap", "configmaps", true));
            let q: Vec<(String, String)> = pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
            ListOptions::parse(&q, &spec, false).unwrap()
        };
        let ok = o(&[("sendInitialEvents", "true"), ("resourceVersionMatch", "NotOlderThan")]);
        assert!(validate(&ok, true).is_ok());
        let off = validate(&ok, false).unwrap_err();
        assert_eq!(off.code, 422);
        assert_eq!(
            off.message,
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
        );
        for bad in [
            vec![("sendInitialEvents", "true")],
            vec![("resourceVersionMatch", "NotOlderThan")],
            vec![("sendInitialEvents", "true"), ("resourceVersionMatch", "Exact")],
        ] {
            assert_eq!(validate(&o(&bad), true).unwrap_err().code, 422, "{bad:?}");
        }
    }

    #[test]
    fn bookmarks_carry_kind_and_annotation() {
        let spec = ResourceSpec::new(ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true));
        let v: serde_json::Value = serde_json::from_slice(&bookmark_json(&spec, 7, true)).unwrap();
        assert_eq!(v["kind"], "Lease");
        assert_eq!(v["apiVersion"], "coordination.k8s.io/v1");
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert_eq!(v["metadata"]["annotations"][INITIAL_EVENTS_END_ANNOTATION], "true");
    }
}
