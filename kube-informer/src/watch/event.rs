//! `WatchEvent`: one event of a watch stream.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::object::Status;

/// The annotation on the BOOKMARK that ends the initial events of a streaming list.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One event of a watch stream (`{"type": …, "object": …}`).
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent<K> {
    /// `ADDED`: the object was created (or is part of the initial state of a streaming list).
    Added(K),
    /// `MODIFIED`: the object changed.
    Modified(K),
    /// `DELETED`: the object is gone; this is its last state.
    Deleted(K),
    /// `BOOKMARK`: progress notification; only the resourceVersion (and annotations) are meaningful.
    Bookmark(Bookmark),
    /// `ERROR`: the server ends the watch with a status (410 Expired when the resourceVersion is too old).
    Error(Box<Status>),
}

/// The content of a BOOKMARK event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bookmark {
    /// The resourceVersion the watch has reached.
    pub resource_version: String,
    /// Annotations on the bookmark object (`k8s.io/initial-events-end`).
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// True on the bookmark that ends the initial events of a streaming list.
    pub fn is_initial_events_end(&self) -> bool {
        self.annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .is_some_and(|v| v == "true")
    }
}

impl<K> WatchEvent<K> {
    /// The wire name of the event type.
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark(_) => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }
}

/// Writes the wire form: `{"type":"ADDED","object":{…}}`; a bookmark's object carries only metadata.
///
/// ```
/// use kube_informer::watch::{Bookmark, WatchEvent};
///
/// let ev: WatchEvent<()> = WatchEvent::Bookmark(Bookmark { resource_version: "9".into(), ..Default::default() });
/// assert_eq!(serde_json::to_string(&ev).unwrap(),
///            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#);
/// ```
impl<K: Serialize> Serialize for WatchEvent<K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct BookmarkMeta<'a> {
            resource_version: &'a str,
            #[serde(skip_serializing_if = "BTreeMap::is_empty")]
            annotations: &'a BTreeMap<String, String>,
        }
        #[derive(Serialize)]
        struct BookmarkObject<'a> {
            metadata: BookmarkMeta<'a>,
        }
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", self.type_name())?;
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                map.serialize_entry("object", o)?
            }
            WatchEvent::Bookmark(b) => map.serialize_entry(
                "object",
                &BookmarkObject {
                    metadata: BookmarkMeta {
                        resource_version: &b.resource_version,
                        annotations: &b.annotations,
                    },
                },
            )?,
            WatchEvent::Error(st) => map.serialize_entry("object", st)?,
        }
        map.end()
    }
}

/// The event types of the wire form.
#[derive(Clone, Copy)]
enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

impl<'de> Deserialize<'de> for EventType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TypeVisitor;
        impl Visitor<'_> for TypeVisitor {
            type Value = EventType;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a watch event type (ADDED, MODIFIED, DELETED, BOOKMARK or ERROR)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EventType, E> {
                Ok(match v {
                    "ADDED" => EventType::Added,
                    "MODIFIED" => EventType::Modified,
                    "DELETED" => EventType::Deleted,
                    "BOOKMARK" => EventType::Bookmark,
                    "ERROR" => EventType::Error,
                    other => return Err(E::custom(format_args!("unknown watch event type {other:?}"))),
                })
            }
        }
        d.deserialize_str(TypeVisitor)
    }
}

/// The keys of a watch event, matched without allocating.
enum EventKey {
    Type,
    Object,
    Other,
}

impl<'de> Deserialize<'de> for EventKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = EventKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a watch event key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EventKey, E> {
                Ok(match v {
                    "type" => EventKey::Type,
                    "object" => EventKey::Object,
                    _ => EventKey::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// The object of a BOOKMARK event: an object of the watched kind carrying only `metadata.resourceVersion` (and
/// maybe annotations). Every other field is ignored, so a typed `K` whose required fields are absent still works.
#[derive(Deserialize)]
struct WireBookmark {
    metadata: WireBookmarkMeta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireBookmarkMeta {
    resource_version: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    annotations: BTreeMap<String, String>,
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    Ok(Option::deserialize(d)?.unwrap_or_default())
}

impl From<WireBookmark> for Bookmark {
    fn from(w: WireBookmark) -> Self {
        Bookmark {
            resource_version: w.metadata.resource_version,
            annotations: w.metadata.annotations,
        }
    }
}

impl EventType {
    /// Decodes an event's object once its type is known; an object event is decoded over `spare` when there is one
    /// (which is used up either way).
    fn decode_object<'de, K: Deserialize<'de>, D: Deserializer<'de>>(
        self,
        d: D,
        spare: &mut Option<K>,
    ) -> Result<WatchEvent<K>, D::Error> {
        let object = |d: D, spare: &mut Option<K>| match spare.take() {
            Some(mut obj) => K::deserialize_in_place(d, &mut obj).map(|()| obj),
            None => K::deserialize(d),
        };
        Ok(match self {
            EventType::Added => WatchEvent::Added(object(d, spare)?),
            EventType::Modified => WatchEvent::Modified(object(d, spare)?),
            EventType::Deleted => WatchEvent::Deleted(object(d, spare)?),
            EventType::Bookmark => WatchEvent::Bookmark(WireBookmark::deserialize(d)?.into()),
            EventType::Error => WatchEvent::Error(Box::new(Status::deserialize(d)?)),
        })
    }
}

/// Seeds `next_value` with the event type, so the object is decoded straight into its final type.
struct ObjectSeed<'a, K>(EventType, &'a mut Option<K>);

impl<'de, K: Deserialize<'de>> de::DeserializeSeed<'de> for ObjectSeed<'_, K> {
    type Value = WatchEvent<K>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<WatchEvent<K>, D::Error> {
        self.0.decode_object(d, self.1)
    }
}

/// Decodes a [`WatchEvent`] whose object (of an ADDED, MODIFIED or DELETED event) is decoded over `spare` when it
/// holds one: `Deserialize::deserialize_in_place` then reuses that object's allocations. The result is what
/// `WatchEvent::deserialize` gives; `spare` is used up whenever an object is decoded, successfully or not.
pub(crate) struct EventSeed<'a, K> {
    pub(crate) spare: &'a mut Option<K>,
}

impl<'de, K: DeserializeOwned> de::DeserializeSeed<'de> for EventSeed<'_, K> {
    type Value = WatchEvent<K>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<WatchEvent<K>, D::Error> {
        d.deserialize_map(EventVisitor { spare: self.spare })
    }
}

struct EventVisitor<'a, K> {
    spare: &'a mut Option<K>,
}

impl<'de, K: DeserializeOwned> Visitor<'de> for EventVisitor<'_, K> {
    type Value = WatchEvent<K>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a watch event {\"type\": …, \"object\": …}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WatchEvent<K>, A::Error> {
        let mut ty: Option<EventType> = None;
        let mut event: Option<WatchEvent<K>> = None;
        let mut raw: Option<Box<RawValue>> = None;
        while let Some(key) = map.next_key::<EventKey>()? {
            match key {
                EventKey::Type => {
                    if ty.is_some() {
                        return Err(de::Error::duplicate_field("type"));
                    }
                    ty = Some(map.next_value()?);
                }
                EventKey::Object => {
                    if event.is_some() || raw.is_some() {
                        return Err(de::Error::duplicate_field("object"));
                    }
                    match ty {
                        Some(t) => event = Some(map.next_value_seed(ObjectSeed(t, &mut *self.spare))?),
                        None => raw = Some(map.next_value()?),
                    }
                }
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let Some(ty) = ty else {
            return Err(de::Error::missing_field("type"));
        };
        if let Some(event) = event {
            return Ok(event);
        }
        let Some(raw) = raw else {
            return Err(de::Error::missing_field("object"));
        };
        let mut de = serde_json::Deserializer::from_str(raw.get());
        ty.decode_object(&mut de, self.spare).map_err(de::Error::custom)
    }
}

/// Reads the wire form `{"type":"ADDED","object":{…}}`.
///
/// When `type` comes first (as every API server sends it), `object` is decoded once, straight into `K`, a
/// [`Bookmark`] (of which only `metadata.resourceVersion` and `metadata.annotations` are read) or a [`Status`].
/// When `object` comes first it is kept as raw JSON and decoded once the type is known; that path works only with
/// serde_json's deserializers. Unknown keys are ignored; an unknown type, a missing or repeated `type` or `object`
/// are errors.
///
/// ```
/// use kube_informer::object::core::ConfigMap;
/// use kube_informer::watch::WatchEvent;
///
/// let ev: WatchEvent<ConfigMap> = serde_json::from_str(
///     r#"{"type":"ADDED","object":{"metadata":{"name":"a"},"data":{"k":"v"}}}"#,
/// ).unwrap();
/// assert!(matches!(ev, WatchEvent::Added(cm) if cm.data.get("k") == Some("v")));
///
/// // A bookmark's object lacks the kind's fields; only the resourceVersion matters.
/// let ev: WatchEvent<ConfigMap> = serde_json::from_str(
///     r#"{"object":{"kind":"ConfigMap","metadata":{"resourceVersion":"12"}},"type":"BOOKMARK"}"#,
/// ).unwrap();
/// assert!(matches!(ev, WatchEvent::Bookmark(b) if b.resource_version == "12"));
/// ```
impl<'de, K: DeserializeOwned> Deserialize<'de> for WatchEvent<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::DeserializeSeed::deserialize(EventSeed { spare: &mut None }, d)
    }
}
