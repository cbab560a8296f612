//! `Recycler`: objects replaced or deleted in the cache go back to the thread that decoded them, to be decoded into
//! or freed there.
//!
//! The reflector thread allocates every object it decodes; without this, the old versions are freed on handler
//! threads. With glibc's malloc (Rust's default on Linux) frees from another thread bypass the decoding thread's
//! per-thread cache and contend for its arena's lock, so every allocation of the next decode takes the slow path.
//! Back on the decoding thread, a retired object is first offered to the watch decoder, which decodes the next
//! event over it (`WatchDecoder::recycle`), reusing its strings and maps; what the decoder does not take is freed
//! there, where its memory is reused at once from that thread's cache.
//!
//! The reflector hands its recycler to the `ListerWatcher` each time it opens a watch
//! ([`ListerWatcher::watch_recycling`](super::ListerWatcher::watch_recycling)), as the [`SpareObjects`] the watch
//! stream decodes into.

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, bounded};

use crate::watch::SpareObjects;

/// Objects waiting to be freed at most (each about the size of one cached object): small enough that an idle watch
/// keeps little garbage, large enough to hold what handlers retire while the reflector decodes one read's events.
const CAPACITY: usize = 256;

/// Retired objects kept for the decoder at most; beyond that [`Recycler::trim`] frees them.
pub(crate) const KEEP: usize = 192;

/// A bounded queue of last references, taken by the decoder ([`Recycler::take`]) or freed ([`Recycler::trim`]) by
/// the thread that decodes.
pub(crate) struct Recycler<K> {
    tx: Sender<Arc<K>>,
    rx: Receiver<Arc<K>>,
}

impl<K> Recycler<K> {
    pub(crate) fn new() -> Self {
        let (tx, rx) = bounded(CAPACITY);
        Recycler { tx, rx }
    }

    /// Hands `obj` to the draining thread when this is its last reference (freed here when the queue is full, or
    /// when another reference remains: then it is not ours to free).
    pub(crate) fn retire(&self, obj: Arc<K>) {
        if Arc::strong_count(&obj) == 1 {
            let _ = self.tx.try_send(obj);
        }
    }

    /// Frees what was retired beyond `keep` objects.
    pub(crate) fn trim(&self, keep: usize) {
        while self.rx.len() > keep {
            match self.rx.try_recv() {
                Ok(obj) => drop(obj),
                Err(_) => break,
            }
        }
    }

    /// A retired object, owned: for the decoder to decode the next event into.
    pub(crate) fn take(&self) -> Option<K> {
        while let Ok(obj) = self.rx.try_recv() {
            // The last reference (`retire` checks), unless a `Weak` somebody kept was upgraded since: then the
            // object lives on with that holder, and this reference is dropped.
            if let Ok(obj) = Arc::try_unwrap(obj) {
                return Some(obj);
            }
        }
        None
    }
}

impl<K: Send + Sync> SpareObjects<K> for Recycler<K> {
    fn take(&self) -> Option<K> {
        Recycler::take(self)
    }
}

#[cfg(test)]
impl<K> Recycler<K> {
    /// Objects waiting to be freed.
    pub(crate) fn len(&self) -> usize {
        self.rx.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_last_references_wait_and_drain_frees_them() {
        let r = Recycler::new();
        let last = Arc::new(1);
        let last_weak = Arc::downgrade(&last);
        r.retire(last);
        assert_eq!(r.len(), 1);
        assert_eq!(last_weak.strong_count(), 1, "kept until drained");

        let shared = Arc::new(2);
        let kept = shared.clone();
        r.retire(shared);
        assert_eq!(r.len(), 1, "an object somebody else holds is not queued");
        assert_eq!(Arc::strong_count(&kept), 1, "the retired reference was released");

        r.trim(0);
        assert_eq!(r.len(), 0);
        assert_eq!(last_weak.strong_count(), 0, "freed by the draining thread");
        assert_eq!(*kept, 2);
    }

    #[test]
    fn a_full_queue_frees_on_the_retiring_thread() {
        let r = Recycler::new();
        let objs: Vec<Arc<usize>> = (0..=CAPACITY).map(Arc::new).collect();
        let weaks: Vec<_> = objs.iter().map(Arc::downgrade).collect();
        for o in objs {
            r.retire(o);
        }
        assert_eq!(r.len(), CAPACITY, "the queue is bounded");
        assert_eq!(
            weaks[CAPACITY].strong_count(),
            0,
            "the one over capacity was freed at once"
        );
        assert!(weaks[..CAPACITY].iter().all(|w| w.strong_count() == 1));
        r.trim(0);
        assert!(weaks.iter().all(|w| w.strong_count() == 0));
    }

    #[test]
    fn take_hands_out_owned_objects_and_trim_frees_beyond_what_is_kept() {
        let r = Recycler::new();
        let objs: Vec<Arc<String>> = (0..5).map(|i| Arc::new(format!("o{i}"))).collect();
        let weaks: Vec<_> = objs.iter().map(Arc::downgrade).collect();
        for o in objs {
            r.retire(o);
        }
        assert_eq!(r.take().as_deref(), Some("o0"), "oldest first, owned");
        r.trim(2);
        assert_eq!(r.len(), 2);
        assert_eq!(
            weaks[1].strong_count() + weaks[2].strong_count(),
            0,
            "the oldest beyond two were freed"
        );
        assert_eq!(r.take().as_deref(), Some("o3"));
        assert_eq!(r.take().as_deref(), Some("o4"));
        assert_eq!(r.take(), None);
    }
}
