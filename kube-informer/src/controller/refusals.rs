//! `Refusals`: the names of secondary objects a reconcile was refused (someone else's object under a name the
//! primary wants), so that a change or deletion of such an object queues the primary again.
//!
//! [`ControllerBuilder::owns`](super::ControllerBuilder::owns) maps only objects that name their controller; an
//! object the controller refused to take over names none (or another), so without this the primary would never
//! hear that it changed or went, and would stay blocked until its own next change.

use std::any::TypeId;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::options::QueueKey;

/// Secondary objects (by type and key) whose changes queue primaries besides their controller's.
///
/// Race-free by this order: a reconcile of primary `p` forgets its names when it starts ([`forget_primary`]); a
/// write of a secondary object watches its name ([`watch`]) *before* reading the cache, and forgets it
/// ([`forget`]) only when the write succeeded (the object is `p`'s then, mapped by its owner reference). A change
/// the cache applies after the watch began reaches `p` through the handler; one applied before was read by the
/// write.
///
/// [`forget_primary`]: Refusals::forget_primary
/// [`watch`]: Refusals::watch
/// [`forget`]: Refusals::forget
#[derive(Default)]
pub(super) struct Refusals {
    /// `(type of the object, its key)` → the primaries to queue when it changes. Never holds an empty set.
    names: Mutex<HashMap<(TypeId, String), HashSet<QueueKey>>>,
    /// `names.len()`, read without the lock on every event.
    len: AtomicUsize,
}

impl Refusals {
    /// Queues `primary` on every change of the `ty` object `key` until forgotten.
    pub(super) fn watch(&self, ty: TypeId, key: String, primary: &QueueKey) {
        let mut names = self.names.lock();
        names.entry((ty, key)).or_default().insert(primary.clone());
        self.len.store(names.len(), Ordering::Relaxed);
    }

    /// Stops queueing `primary` on changes of the `ty` object `key`.
    pub(super) fn forget(&self, ty: TypeId, key: String, primary: &QueueKey) {
        let mut names = self.names.lock();
        let entry = (ty, key);
        if let Some(set) = names.get_mut(&entry) {
            set.remove(primary);
            if set.is_empty() {
                names.remove(&entry);
            }
        }
        self.len.store(names.len(), Ordering::Relaxed);
    }

    /// Forgets every name `primary` watched (its reconcile starts: it watches again what it is refused again).
    pub(super) fn forget_primary(&self, primary: &str) {
        if self.len.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut names = self.names.lock();
        names.retain(|_, set| {
            set.remove(primary);
            !set.is_empty()
        });
        self.len.store(names.len(), Ordering::Relaxed);
    }

    /// The primaries watching the `ty` object `key`.
    pub(super) fn primaries_of(&self, ty: TypeId, key: &str) -> Vec<QueueKey> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        self.names
            .lock()
            .get(&(ty, key.to_owned()))
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.names.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_queues_its_primaries_until_forgotten() {
        let r = Refusals::default();
        let cm = TypeId::of::<u8>();
        let (a, b): (QueueKey, QueueKey) = ("ns/a".into(), "ns/b".into());
        assert!(r.primaries_of(cm, "ns/x").is_empty());
        r.watch(cm, "ns/x".into(), &a);
        r.watch(cm, "ns/x".into(), &b);
        r.watch(cm, "ns/y".into(), &a);
        let mut got = r.primaries_of(cm, "ns/x");
        got.sort();
        assert_eq!(got, [a.clone(), b.clone()]);
        assert!(r.primaries_of(TypeId::of::<u16>(), "ns/x").is_empty(), "another type");
        r.forget(cm, "ns/x".into(), &b);
        assert_eq!(r.primaries_of(cm, "ns/x"), std::slice::from_ref(&a));
        r.forget_primary("ns/a");
        assert!(r.primaries_of(cm, "ns/x").is_empty());
        assert_eq!(r.len(), 0, "no empty sets kept");
    }
}
