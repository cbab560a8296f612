//! `ListerWatcher`: the seam between the Reflector and the network (client-go's `ListerWatcher`).
//!
//! The Reflector only ever lists pages and opens watches through this trait, so its state machine is tested against
//! scripted fakes, and users can feed an informer from anything that speaks list/watch.

use crate::client::params::{ListParams, WatchParams};
use crate::error::Result;
use crate::object::ListMeta;
use crate::watch::WatchEvent;

/// A blocking stream of watch events as a reflector consumes it; `None` is a clean close by the server.
///
/// The lower bound of its `size_hint` must count only events that `next` returns without blocking (0 is always
/// correct): the reflector queues those together with the event before them, and wakes the informer's processing
/// thread once they are queued.
pub type EventStream<K> = Box<dyn Iterator<Item = Result<WatchEvent<K>>> + Send>;

/// Lists and watches one resource (already scoped to a namespace and selectors by the implementation).
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// Lists one page. Each object is handed to `on_item` as soon as it is decoded, so a huge page never sits in
    /// memory whole. The reflector sets `resource_version`, `resource_version_match`, `limit` and
    /// `continue_token`; the implementation adds its own selectors.
    fn list_page(&self, params: &ListParams, on_item: &mut dyn FnMut(K)) -> Result<ListMeta>;

    /// Like [`list_page`](ListerWatcher::list_page), also telling `on_item` whether the next item is already
    /// decoded (`true`: the following call comes without waiting for the network). The reflector uses it to wake
    /// the informer's processing thread once per burst of items instead of once per item. The default says `false`
    /// for every item.
    fn list_page_hinted(&self, params: &ListParams, on_item: &mut dyn FnMut(K, bool)) -> Result<ListMeta> {
        self.list_page(params, &mut |item| on_item(item, false))
    }

    /// Opens a watch. The reflector sets `resource_version`, `allow_bookmarks`, `timeout_seconds` and, for a
    /// streaming list, `send_initial_events` and `resource_version_match`.
    fn watch(&self, params: &WatchParams) -> Result<EventStream<K>>;

    /// Makes every blocked and future call return promptly with an error (used by stop). Called from another
    /// thread.
    fn interrupt(&self);
}
