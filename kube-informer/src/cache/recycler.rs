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
//! ([`WatchHooks::watch_recycling`](crate::unstable::WatchHooks::watch_recycling)), as the [`SpareObjects`] the watch
//! stream decodes into.

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, bounded};

use crate::watch::spares::SpareObjects;

/// Objects waiting to be freed at most (each about the size of one cached object): small enough that an idle watch
/// keeps little garbage, large enough to hold what handlers retire while the reflector decodes one read's events.
const CAPACITY: usize = 256;

/// Retired objects kept for the decoder at most; beyond that [`Recycler::trim`] frees them.
pub(crate) const KEEP: usize = 192;

/// A bounded queue of objects whose last reference was let go of, taken by the decoder ([`Recycler::take`]) or
/// freed ([`Recycler::trim`]) by the thread that decodes.
pub(crate) struct Recycler<K> {
    tx: Sender<K>,
    rx: Receiver<K>,
}

impl<K> Recycler<K> {
    pub(crate) fn new() -> Self {
        let (tx, rx) = bounded(CAPACITY);
        Recycler { tx, rx }
    }

    /// Hands `obj` to the draining thread when this is its last reference (freed here when the queue is full).
    ///
    /// Several threads let go of the same object at once (the informer's processing thread after distributing an
    /// event, each handler's thread after delivering it): `Arc::into_inner` gives it to exactly one of them, where a
    /// look at the strong count could have each see the other's reference and none keep it.
    pub(crate) fn retire(&self, obj: Arc<K>) {
        if let Some(obj) = Arc::into_inner(obj) {
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
        self.rx.try_recv().ok()
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

    /// An object that says whether it still lives: `alive(&token)` counts the copies not yet freed.
    struct Tracked(#[allow(dead_code)] Arc<()>, &'static str);

    fn alive(token: &Arc<()>) -> usize {
        Arc::strong_count(token) - 1
    }

    #[test]
    fn only_last_references_wait_and_trim_frees_them() {
        let r = Recycler::new();
        let token = Arc::new(());
        r.retire(Arc::new(Tracked(token.clone(), "last")));
        assert_eq!(r.len(), 1);
        assert_eq!(alive(&token), 1, "kept until trimmed");

        let shared = Arc::new(Tracked(token.clone(), "shared"));
        let kept = shared.clone();
        r.retire(shared);
        assert_eq!(r.len(), 1, "an object somebody else holds is not queued");
        assert_eq!(Arc::strong_count(&kept), 1, "the retired reference was released");

        r.trim(0);
        assert_eq!(r.len(), 0);
        assert_eq!(
            alive(&token),
            1,
            "the queued one freed by the trimming thread, the kept one alive"
        );
        assert_eq!(kept.1, "shared");
    }

    #[test]
    fn a_full_queue_frees_on_the_retiring_thread() {
        let r = Recycler::new();
        let token = Arc::new(());
        for _ in 0..=CAPACITY {
            r.retire(Arc::new(Tracked(token.clone(), "o")));
        }
        assert_eq!(r.len(), CAPACITY, "the queue is bounded");
        assert_eq!(alive(&token), CAPACITY, "the one over capacity was freed at once");
        r.trim(0);
        assert_eq!(alive(&token), 0);
    }

    #[test]
    fn take_hands_out_owned_objects_and_trim_frees_beyond_what_is_kept() {
        let r = Recycler::new();
        for i in 0..5 {
            r.retire(Arc::new(format!("o{i}")));
        }
        assert_eq!(r.take().as_deref(), Some("o0"), "oldest first, owned");
        r.trim(2);
        assert_eq!(r.len(), 2, "the oldest beyond two were freed");
        assert_eq!(r.take().as_deref(), Some("o3"));
        assert_eq!(r.take().as_deref(), Some("o4"));
        assert_eq!(r.take(), None);
    }

    #[test]
    fn two_threads_letting_go_at_once_queue_the_object_exactly_once() {
        let r = Recycler::new();
        let token = Arc::new(());
        let start = std::sync::Barrier::new(2);
        for _ in 0..2_000 {
            let obj = Arc::new(Tracked(token.clone(), "both"));
            let other = obj.clone();
            std::thread::scope(|s| {
                s.spawn(|| {
                    start.wait();
                    r.retire(other);
                });
                start.wait();
                r.retire(obj);
            });
            assert_eq!(r.len(), 1, "one of the two threads queued it");
            assert!(r.take().is_some());
        }
        assert_eq!(alive(&token), 0);
    }
}
