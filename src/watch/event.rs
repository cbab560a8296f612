//! `WatchEvent`: one event of a watch stream.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

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
