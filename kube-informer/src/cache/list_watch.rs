//! `ListerWatcher`: the seam between the Reflector and the network (client-go's `ListerWatcher`), and `ListWatch`,
//! its implementation over an [`Api`] (client-go's `NewFilteredListWatchFromClient`).
//!
//! The Reflector only ever lists pages and opens watches through this trait, so its state machine is tested against
//! scripted fakes, and users can feed an informer from anything that speaks list/watch. The client below knows
//! nothing of it: this side adapts the client to the seam.

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::client::params::{ListParams, WatchParams, and_selector};
use crate::client::{Api, Client, StreamStopper, WatchStream};
use crate::error::Result;
use crate::object::{ListMeta, Object};
use crate::watch::WatchEvent;
use crate::watch::spares::SpareObjects;

/// A blocking stream of watch events as a reflector consumes it; `None` is a clean close by the server.
///
/// The lower bound of its `size_hint` must count only events that `next` returns without blocking (0 is always
/// correct): the reflector queues those together with the event before them, and wakes the informer's processing
/// thread once they are queued.
pub type EventStream<K> = Box<dyn Iterator<Item = Result<WatchEvent<K>>> + Send>;

/// Lists and watches one resource (already scoped to a namespace and selectors by the implementation).
///
/// A `ListerWatcher` of one's own, here one that counts the watches it opens through another:
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use kube_informer::cache::{EventStream, ListWatch, ListerWatcher};
/// use kube_informer::client::params::{ListParams, WatchParams};
/// use kube_informer::object::{core::ConfigMap, ListMeta};
///
/// /// Counts the watches it opens.
/// struct Counting {
///     inner: ListWatch<ConfigMap>,
///     watches: AtomicUsize,
/// }
///
/// impl ListerWatcher<ConfigMap> for Counting {
///     fn list_page(&self, p: &ListParams, on_item: &mut dyn FnMut(ConfigMap)) -> kube_informer::Result<ListMeta> {
///         self.inner.list_page(p, on_item)
///     }
///     fn watch(&self, p: &WatchParams) -> kube_informer::Result<EventStream<ConfigMap>> {
///         self.watches.fetch_add(1, Ordering::Relaxed);
///         self.inner.watch(p)
///     }
///     fn interrupt(&self) {
///         self.inner.interrupt()
///     }
/// }
/// ```
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// Lists one page. Each object is handed to `on_item` as soon as it is decoded, so a huge page never sits in
    /// memory whole. The reflector sets `resource_version`, `resource_version_match`, `limit`, `continue_token`
    /// and, for a sharded informer, `shard_selector` (an implementation passes it on; the reflector drops other
    /// shards' objects whatever the server did); the implementation adds its own label and field selectors.
    fn list_page(&self, params: &ListParams, on_item: &mut dyn FnMut(K)) -> Result<ListMeta>;

    /// Like [`list_page`](ListerWatcher::list_page), also telling `on_item` whether the next item is already
    /// decoded (`true`: the following call comes without waiting for the network). The reflector uses it to wake
    /// the informer's processing thread once per burst of items instead of once per item. The default says `false`
    /// for every item.
    fn list_page_hinted(&self, params: &ListParams, on_item: &mut dyn FnMut(K, bool)) -> Result<ListMeta> {
        self.list_page(params, &mut |item| on_item(item, false))
    }

    /// Opens a watch. The reflector sets `resource_version`, `allow_bookmarks`, `timeout_seconds`, for a
    /// streaming list `send_initial_events` and `resource_version_match`, and for a sharded informer
    /// `shard_selector`.
    fn watch(&self, params: &WatchParams) -> Result<EventStream<K>>;

    /// Makes every blocked and future call return promptly with an error (used by stop). Called from another
    /// thread.
    fn interrupt(&self);

    /// What this implementation offers the informer's reflector beyond listing and watching — watches that decode
    /// into the memory of objects the cache let go of, ending a watch when a sharded informer's shard changes —
    /// through [`unstable::WatchHooks`](crate::unstable::WatchHooks), which semver does not cover. The default, none,
    /// is correct: watches then decode into new memory, and a shard change is seen at the watch's next event or end.
    /// [`ListWatch`] offers both; a `ListerWatcher` wrapping one may pass its hooks on.
    fn unstable_hooks(&self) -> Option<&dyn WatchHooks<K>> {
        None
    }

    /// The client this lister-watcher reads through, if it has one: a
    /// [`Controller`](crate::controller::Controller) over an informer of it hands its reconciles a copy
    /// ([`Context::client`](crate::controller::Context::client)). The default: none.
    fn client(&self) -> Option<&Client> {
        None
    }
}

/// Lists and watches one resource through its own isolated client, so that
/// [`interrupt`](ListerWatcher::interrupt) (an informer stopping) aborts this informer's requests and nobody
/// else's.
///
/// ```no_run
/// use kube_informer::cache::ListWatch;
/// use kube_informer::client::{Api, Client};
/// use kube_informer::object::core::ConfigMap;
///
/// let client = Client::try_default()?;
/// let lw = ListWatch::new(&Api::<ConfigMap>::default_namespaced(client)).labels("app=web");
/// # let _ = lw;
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct ListWatch<K> {
    api: Api<K>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    /// Ends the watch opened last ([`WatchHooks::end_watch`]).
    last_watch: Mutex<Option<StreamStopper>>,
}

impl<K: Object> ListWatch<K> {
    /// Lists and watches what `api` addresses (its resource and namespace), on an isolated copy of its client.
    pub fn new(api: &Api<K>) -> Self {
        ListWatch {
            api: api.with_client(api.client().isolated()),
            label_selector: None,
            field_selector: None,
            last_watch: Mutex::new(None),
        }
    }

    /// Remembers `stream`'s stopper for [`WatchHooks::end_watch`], and hands the stream on.
    fn opened(&self, stream: WatchStream<K>) -> EventStream<K> {
        *self.last_watch.lock() = Some(stream.stopper());
        Box::new(stream)
    }

    /// Only objects matching this label selector (and any given before).
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        and_selector(&mut self.label_selector, selector);
        self
    }

    /// Only objects matching this field selector (and any given before).
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        and_selector(&mut self.field_selector, selector);
        self
    }

    /// `params` with this list-watch's selectors.
    fn scoped(&self, params: &WatchParams) -> WatchParams {
        WatchParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            ..params.clone()
        }
    }
}

impl<K: Object> ListerWatcher<K> for ListWatch<K> {
    fn list_page(&self, params: &ListParams, on_item: &mut dyn FnMut(K)) -> Result<ListMeta> {
        self.list_page_hinted(params, &mut |obj, _| on_item(obj))
    }

    fn list_page_hinted(&self, params: &ListParams, on_item: &mut dyn FnMut(K, bool)) -> Result<ListMeta> {
        let params = ListParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            ..params.clone()
        };
        self.api.list_each_hinted(&params, |obj, more| {
            on_item(obj, more);
            Ok(())
        })
    }

    fn watch(&self, params: &WatchParams) -> Result<EventStream<K>> {
        Ok(self.opened(self.api.watch(&self.scoped(params))?))
    }

    fn interrupt(&self) {
        self.api.client().abort_handle().abort();
    }

    fn unstable_hooks(&self) -> Option<&dyn WatchHooks<K>> {
        Some(self)
    }

    fn client(&self) -> Option<&Client> {
        Some(self.api.client())
    }
}

impl<K: Object> WatchHooks<K> for ListWatch<K> {
    fn watch_recycling(&self, params: &WatchParams, spares: Arc<dyn SpareObjects<K>>) -> Result<EventStream<K>> {
        Ok(self.opened(self.api.watch(&self.scoped(params))?.recycling(spares)))
    }

    fn end_watch(&self) {
        if let Some(stopper) = self.last_watch.lock().take() {
            stopper.stop();
        }
    }
}

/// What the informer's reflector asks of a [`ListerWatcher`] beyond listing and watching, when its
/// [`unstable_hooks`](ListerWatcher::unstable_hooks) offers it. Unstable: not covered by semver (see
/// [`unstable`](crate::unstable)).
///
/// A `ListerWatcher` that wraps a [`ListWatch`] passes its hooks on by answering `self.inner.unstable_hooks()`, or
/// implements this trait itself to see the watches opened through it.
pub trait WatchHooks<K>: Send + Sync {
    /// Opens a watch, as [`ListerWatcher::watch`], whose events may be decoded into objects taken from `spares` —
    /// the versions the informer's cache let go of — reusing their memory
    /// ([`Recycling::recycling`](crate::unstable::Recycling::recycling) on a
    /// [`WatchStream`], [`RecycleFrom`](crate::unstable::RecycleFrom) on a decoder of
    /// one's own). The reflector opens its watches (all but a streaming list's) with this.
    fn watch_recycling(&self, params: &WatchParams, spares: Arc<dyn SpareObjects<K>>) -> Result<EventStream<K>>;

    /// Ends the watch opened last, if it is still open — its `next` returns an error or `None` promptly — and
    /// nothing else: later calls work as usual. Called from another thread when a sharded informer's shard changes,
    /// so that a reflector blocked on a quiet watch relists with the new shard. The default does nothing: the
    /// reflector then sees the change at the watch's next event or end.
    fn end_watch(&self) {}
}

impl<K> fmt::Debug for ListWatch<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListWatch")
            .field("api", &self.api)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Client, Config};
    use crate::object::core::ConfigMap;

    #[test]
    fn selectors_given_twice_must_both_match() {
        let client = Client::new(Config::new("http://127.0.0.1:1")).unwrap();
        let lw = ListWatch::new(&Api::<ConfigMap>::all(client))
            .labels("app=web")
            .labels("env=prod")
            .fields("metadata.name!=a")
            .fields("metadata.namespace=x");
        let wp = lw.scoped(&WatchParams::default());
        assert_eq!(wp.label_selector.as_deref(), Some("app=web,env=prod"));
        assert_eq!(
            wp.field_selector.as_deref(),
            Some("metadata.name!=a,metadata.namespace=x")
        );
    }
}
