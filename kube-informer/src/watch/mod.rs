//! Watch streams: the event type and the incremental decoders that turn response bytes into events and list items.
//!
//! * [`WatchDecoder`]: a watch response (`{"type":…,"object":…}` after `{"type":…,"object":…}`) into
//!   [`WatchEvent`]s.
//! * [`ListDecoder`]: a LIST response (`{"kind":"…List","metadata":{…},"items":[…]}`) into its items, one by one as
//!   they arrive, then its [`ListMeta`](crate::object::ListMeta).
//! * [`WatchDecoder::recycle`]: an object a decoder may decode the next event into, reusing its memory (an informer
//!   hands its decoders its retired versions by itself).

mod decoder;
mod event;
mod framer;
pub(crate) use framer::json_error;
mod list_decoder;
pub(crate) mod spares;

pub use decoder::{DEFAULT_MAX_OBJECT_SIZE, WatchDecoder};
pub use event::{Bookmark, INITIAL_EVENTS_END_ANNOTATION, WatchEvent};
pub use list_decoder::ListDecoder;
