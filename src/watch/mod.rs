//! Watch streams: the event type and the incremental decoder that turns response bytes into events.

mod event;

pub use event::{Bookmark, INITIAL_EVENTS_END_ANNOTATION, WatchEvent};
