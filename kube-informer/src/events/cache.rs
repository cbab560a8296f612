//! Aggregation of repeated events (client-go's `EventLogger` in `events_cache.go`): an event identical to a recent
//! one — same object, type, reason and message — becomes a PATCH bumping the first one's `count` and
//! `lastTimestamp`, instead of a new Event object.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::{Event, EventSource, EventType, ObjectReference};
use crate::object::ObjectMeta;
use crate::object::time::format_rfc3339;

/// One event as the recorder received it.
#[derive(Clone, Debug)]
pub(crate) struct Pending {
    pub(crate) reference: ObjectReference,
    pub(crate) type_: EventType,
    pub(crate) reason: String,
    pub(crate) message: String,
    pub(crate) time: SystemTime,
}

/// What makes two events "the same" (client-go's `getEventKey`, minus the source, which is the recorder's own):
/// the object's identity (not its resourceVersion, which changes), the type, the reason and the message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AggregateKey {
    api_version: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    field_path: String,
    type_: EventType,
    reason: String,
    message: String,
}

impl AggregateKey {
    fn of(p: &Pending) -> AggregateKey {
        let r = &p.reference;
        AggregateKey {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
            field_path: r.field_path.clone(),
            type_: p.type_,
            reason: p.reason.clone(),
            message: p.message.clone(),
        }
    }
}

/// What to send for an event.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Write {
    /// A new Event object.
    Create(Event),
    /// A repeat: a merge patch of `count`, `lastTimestamp` and `message` on the existing Event `event.metadata.name`.
    /// `event` is the whole aggregated event, created instead if the existing one has gone (events expire on the
    /// server after an hour by default).
    Patch { patch: serde_json::Value, event: Event },
}

/// The last written state of an aggregated event.
#[derive(Debug)]
struct Entry {
    name: String,
    count: i32,
    first_timestamp: Option<String>,
    last_seen: Instant,
    /// This entry's position in `lru`.
    seq: u64,
}

/// Recently written events, bounded (least recently seen evicted first).
#[derive(Debug)]
pub(crate) struct EventCache {
    /// Invariant: `entries[k].seq == s` iff `lru[s] == k`; `entries.len() <= capacity`.
    entries: HashMap<AggregateKey, Entry>,
    lru: BTreeMap<u64, AggregateKey>,
    next_seq: u64,
    capacity: usize,
    /// A repeat seen later than this after the previous occurrence starts a new Event object.
    window: Duration,
}

impl EventCache {
    pub(crate) fn new(capacity: usize, window: Duration) -> EventCache {
        EventCache {
            entries: HashMap::new(),
            lru: BTreeMap::new(),
            next_seq: 0,
            capacity: capacity.max(1),
            window,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Decides how to write `p`, seen at `now`.
    pub(crate) fn prepare(&self, p: &Pending, source: &EventSource, now: Instant) -> (AggregateKey, Write) {
        let key = AggregateKey::of(p);
        let mut event = new_event(p, source);
        let repeat = self
            .entries
            .get(&key)
            .filter(|e| now.saturating_duration_since(e.last_seen) <= self.window);
        let write = match repeat {
            None => Write::Create(event),
            Some(e) => {
                let count = e.count.saturating_add(1);
                event.metadata.name = Some(e.name.clone());
                event.count = Some(count);
                event.first_timestamp = e.first_timestamp.clone();
                Write::Patch {
                    patch: json!({
                        "count": count,
                        "lastTimestamp": event.last_timestamp,
                        "message": p.message,
                    }),
                    event,
                }
            }
        };
        (key, write)
    }

    /// Records what the server stored for `key`.
    pub(crate) fn written(&mut self, key: AggregateKey, stored: &Event, now: Instant) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Entry {
            name: stored.metadata.name.clone().unwrap_or_default(),
            count: stored.count.unwrap_or(1),
            first_timestamp: stored.first_timestamp.clone(),
            last_seen: now,
            seq,
        };
        if let Some(old) = self.entries.insert(key.clone(), entry) {
            self.lru.remove(&old.seq);
        }
        self.lru.insert(seq, key);
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.lru.pop_first() else { break };
            self.entries.remove(&oldest);
        }
    }
}

/// A new Event for `p` (client-go's `makeEvent`): named `<object>.<hex unix nanoseconds>`, in the object's
/// namespace (`default` for a cluster-scoped object), count 1.
fn new_event(p: &Pending, source: &EventSource) -> Event {
    let nanos = p.time.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    let namespace = if p.reference.namespace.is_empty() {
        "default".to_owned()
    } else {
        p.reference.namespace.clone()
    };
    let t = format_rfc3339(p.time);
    Event {
        api_version: "v1".into(),
        kind: "Event".into(),
        metadata: ObjectMeta::namespaced(namespace, format!("{}.{nanos:x}", p.reference.name)),
        involved_object: p.reference.clone(),
        reason: Some(p.reason.clone()),
        message: Some(p.message.clone()),
        source: Some(source.clone()),
        first_timestamp: Some(t.clone()),
        last_timestamp: Some(t),
        count: Some(1),
        type_: Some(p.type_.as_str().to_owned()),
        reporting_component: Some(source.component.clone()).filter(|c| !c.is_empty()),
        reporting_instance: Some(source.host.clone()).filter(|h| !h.is_empty()),
        extra: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(name: &str, reason: &str, message: &str, secs: u64) -> Pending {
        Pending {
            reference: ObjectReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: "prod".into(),
                name: name.into(),
                uid: "u1".into(),
                resource_version: format!("{secs}"),
                field_path: String::new(),
            },
            type_: EventType::Normal,
            reason: reason.into(),
            message: message.into(),
            time: UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs),
        }
    }

    fn source() -> EventSource {
        EventSource {
            component: "my-controller".into(),
            host: "node-1".into(),
        }
    }

    fn stored(w: &Write) -> Event {
        match w {
            Write::Create(e) | Write::Patch { event: e, .. } => e.clone(),
        }
    }

    #[test]
    fn a_first_event_is_created_as_client_go_makes_it() {
        let cache = EventCache::new(10, Duration::from_secs(600));
        let (_, w) = cache.prepare(&pending("settings", "Synced", "all good", 0), &source(), Instant::now());
        let Write::Create(e) = w else { panic!("{w:?}") };
        let nanos = 1_700_000_000u128 * 1_000_000_000;
        assert_eq!(e.metadata.name, Some(format!("settings.{nanos:x}")));
        assert_eq!(e.metadata.namespace.as_deref(), Some("prod"));
        assert_eq!((e.count, e.type_.as_deref()), (Some(1), Some("Normal")));
        assert_eq!(e.first_timestamp.as_deref(), Some("2023-11-14T22:13:20Z"));
        assert_eq!(e.first_timestamp, e.last_timestamp);
        assert_eq!(e.reporting_component.as_deref(), Some("my-controller"));
        assert_eq!(e.reporting_instance.as_deref(), Some("node-1"));
        assert_eq!(e.source, Some(source()));
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["involvedObject"]["kind"], "ConfigMap");
        assert_eq!(json["type"], "Normal");
        assert_eq!(json["reportingComponent"], "my-controller");
    }

    #[test]
    fn repeats_within_the_window_patch_the_first_event() {
        let mut cache = EventCache::new(10, Duration::from_secs(600));
        let t0 = Instant::now();
        let (k, w) = cache.prepare(&pending("settings", "Synced", "all good", 0), &source(), t0);
        let first = stored(&w);
        cache.written(k, &first, t0);
        // Same object (a newer resourceVersion), reason, type and message: a repeat.
        let (k, w) = cache.prepare(
            &pending("settings", "Synced", "all good", 30),
            &source(),
            t0 + Duration::from_secs(30),
        );
        let Write::Patch { patch, event } = &w else {
            panic!("{w:?}")
        };
        assert_eq!(
            *patch,
            json!({"count": 2, "lastTimestamp": "2023-11-14T22:13:50Z", "message": "all good"})
        );
        assert_eq!(event.metadata.name, first.metadata.name);
        assert_eq!(event.first_timestamp, first.first_timestamp);
        cache.written(k, event, t0 + Duration::from_secs(30));
        let (_, w) = cache.prepare(
            &pending("settings", "Synced", "all good", 60),
            &source(),
            t0 + Duration::from_secs(60),
        );
        assert!(matches!(&w, Write::Patch { patch, .. } if patch["count"] == 3));

        // Anything different is another event.
        for other in [
            pending("settings", "Synced", "changed", 60),
            pending("settings", "Failed", "all good", 60),
            pending("other", "Synced", "all good", 60),
        ] {
            let (_, w) = cache.prepare(&other, &source(), t0 + Duration::from_secs(60));
            assert!(matches!(w, Write::Create(_)), "{other:?}");
        }
        let mut warning = pending("settings", "Synced", "all good", 60);
        warning.type_ = EventType::Warning;
        assert!(matches!(cache.prepare(&warning, &source(), t0).1, Write::Create(_)));
    }

    #[test]
    fn a_repeat_after_the_window_is_a_new_event() {
        let mut cache = EventCache::new(10, Duration::from_secs(600));
        let t0 = Instant::now();
        let (k, w) = cache.prepare(&pending("a", "R", "m", 0), &source(), t0);
        cache.written(k, &stored(&w), t0);
        let later = t0 + Duration::from_secs(601);
        assert!(matches!(
            cache.prepare(&pending("a", "R", "m", 601), &source(), later).1,
            Write::Create(_)
        ));
    }

    #[test]
    fn the_cache_is_bounded_and_evicts_the_least_recently_seen() {
        let mut cache = EventCache::new(2, Duration::from_secs(600));
        let t0 = Instant::now();
        for name in ["a", "b"] {
            let (k, w) = cache.prepare(&pending(name, "R", "m", 0), &source(), t0);
            cache.written(k, &stored(&w), t0);
        }
        // "a" seen again: "b" is now the oldest.
        let (k, w) = cache.prepare(&pending("a", "R", "m", 1), &source(), t0);
        cache.written(k, &stored(&w), t0);
        let (k, w) = cache.prepare(&pending("c", "R", "m", 2), &source(), t0);
        cache.written(k, &stored(&w), t0);
        assert_eq!(cache.len(), 2);
        assert!(matches!(
            cache.prepare(&pending("a", "R", "m", 3), &source(), t0).1,
            Write::Patch { .. }
        ));
        assert!(matches!(
            cache.prepare(&pending("b", "R", "m", 3), &source(), t0).1,
            Write::Create(_)
        ));
        assert_eq!(cache.lru.len(), cache.entries.len());
    }

    #[test]
    fn a_cluster_scoped_object_s_events_go_to_default() {
        let cache = EventCache::new(10, Duration::from_secs(600));
        let mut p = pending("team-a", "R", "m", 0);
        p.reference.namespace.clear();
        p.reference.kind = "Namespace".into();
        let (_, w) = cache.prepare(&p, &source(), Instant::now());
        assert_eq!(stored(&w).metadata.namespace.as_deref(), Some("default"));
    }
}
