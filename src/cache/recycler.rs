//! `Recycler`: objects replaced or deleted in the cache go back to the thread that decoded them, to be freed there.
//!
//! The reflector thread allocates every object it decodes; without this, the old versions are freed on handler
//! threads. With glibc's malloc (Rust's default on Linux) frees from another thread bypass the decoding thread's
//! per-thread cache and contend for its arena's lock, so every allocation of the next decode takes the slow path.
//! Freed on the decoding thread instead, their memory is reused at once, from that thread's cache.

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, bounded};

/// Objects waiting to be freed at most (each about the size of one cached object): small enough that an idle watch
/// keeps little garbage, large enough to hold what handlers retire while the reflector decodes one read's events.
const CAPACITY: usize = 256;

/// A bounded queue of last references, freed by the thread that calls [`Recycler::drain`].
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

    /// Frees what was retired so far.
    pub(crate) fn drain(&self) {
        while let Ok(obj) = self.rx.try_recv() {
            drop(obj);
        }
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

        r.drain();
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
        r.drain();
        assert!(weaks.iter().all(|w| w.strong_count() == 0));
    }
}
