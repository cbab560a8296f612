//! `SpareObjects`: where a watch decoder finds objects to decode the next events into.

/// A source of objects nobody uses any more — the versions an informer's cache replaced or deleted — for a watch
/// decoder to decode the next events into ([`WatchDecoder::recycle`](crate::watch::WatchDecoder::recycle)), reusing their
/// strings and maps instead of allocating new ones and freeing the old on another thread.
///
/// An informer's reflector hands its source to the `ListerWatcher` each time it opens a watch
/// ([`WatchHooks::watch_recycling`](crate::unstable::WatchHooks::watch_recycling)); a watch stream takes it with
/// [`Recycling::recycling`](crate::unstable::Recycling::recycling), and a decoder of one's own with
/// [`RecycleFrom::recycle_from`](crate::unstable::RecycleFrom::recycle_from). Recycling never changes what is
/// decoded. Unstable: not covered by semver.
///
/// ```
/// use std::sync::Mutex;
/// use kube_informer::object::core::ConfigMap;
/// use kube_informer::unstable::{RecycleFrom, SpareObjects};
/// use kube_informer::watch::{WatchDecoder, WatchEvent};
///
/// /// Spares kept in a vector.
/// struct Pile(Mutex<Vec<ConfigMap>>);
///
/// impl SpareObjects<ConfigMap> for Pile {
///     fn take(&self) -> Option<ConfigMap> {
///         self.0.lock().unwrap().pop()
///     }
/// }
///
/// let pile = Pile(Mutex::new(vec![ConfigMap::default().with("old", "data")]));
/// let mut dec = WatchDecoder::<ConfigMap>::new();
/// dec.recycle_from(&pile);
/// assert!(dec.has_spare() && pile.0.lock().unwrap().is_empty());
/// dec.push(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n");
/// let Some(Ok(WatchEvent::Added(cm))) = dec.next_event() else { panic!() };
/// assert!(cm.data.is_empty()); // nothing of the spare shows through
/// ```
pub trait SpareObjects<K>: Send + Sync {
    /// An object to decode into, owned, or `None` when there is none now. Called on the decoding thread before a
    /// decode; must not block.
    fn take(&self) -> Option<K>;
}
