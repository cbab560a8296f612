//! Deltas: what happened to one object while it waited in the [`DeltaFifo`](super::DeltaFifo) (a
//! [`RealFifo`](super::RealFifo) keeps each [`Delta`] apart).

use std::fmt;
use std::sync::Arc;

/// A cache key: `namespace/name`, or `name` for cluster-scoped objects. Shared (not copied) between the queue, the
/// store and the indexes.
pub type Key = Arc<str>;

/// The kind of change a [`Delta`] records (client-go's `DeltaType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum DeltaType {
    /// The object was created (watch ADDED).
    Added,
    /// The object changed (watch MODIFIED).
    Updated,
    /// The object was deleted (watch DELETED), or a relist found it gone.
    Deleted,
    /// A relist (or streaming list) returned the object; it may or may not have changed.
    Replaced,
    /// A periodic resync re-delivered the cached object.
    Sync,
}

/// The object of a deletion: either its final state, or the last state the cache knew when the deletion itself was
/// missed (client-go's `DeletedFinalStateUnknown`).
///
/// ```
/// use std::sync::Arc;
/// use kube_informer::cache::DeletedObject;
///
/// let d = DeletedObject::FinalStateUnknown { key: "ns/a".into(), last_known: Arc::new(7) };
/// assert!(d.is_final_state_unknown());
/// assert_eq!(**d.object(), 7);
/// ```
pub enum DeletedObject<K> {
    /// The watch reported the deletion; this is the object's final state.
    Object(Arc<K>),
    /// The deletion happened while the watch was down (a relist found the object gone). `last_known` is the last
    /// state the cache saw and may be stale.
    FinalStateUnknown {
        /// The object's cache key.
        key: Key,
        /// The last state known to the cache.
        last_known: Arc<K>,
    },
}

impl<K> DeletedObject<K> {
    /// The object, whichever kind of deletion this is.
    pub fn object(&self) -> &Arc<K> {
        match self {
            DeletedObject::Object(o) => o,
            DeletedObject::FinalStateUnknown { last_known, .. } => last_known,
        }
    }

    /// True for a missed deletion (tombstone).
    pub fn is_final_state_unknown(&self) -> bool {
        matches!(self, DeletedObject::FinalStateUnknown { .. })
    }
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Object(o) => DeletedObject::Object(o.clone()),
            DeletedObject::FinalStateUnknown { key, last_known } => DeletedObject::FinalStateUnknown {
                key: key.clone(),
                last_known: last_known.clone(),
            },
        }
    }
}

impl<K: PartialEq> PartialEq for DeletedObject<K> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (DeletedObject::Object(a), DeletedObject::Object(b)) => a == b,
            (
                DeletedObject::FinalStateUnknown { key: ka, last_known: a },
                DeletedObject::FinalStateUnknown { key: kb, last_known: b },
            ) => ka == kb && a == b,
            _ => false,
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for DeletedObject<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeletedObject::Object(o) => f.debug_tuple("Object").field(o).finish(),
            DeletedObject::FinalStateUnknown { key, last_known } => f
                .debug_struct("FinalStateUnknown")
                .field("key", key)
                .field("last_known", last_known)
                .finish(),
        }
    }
}

/// One change to one object, carrying the object's state after the change (for a deletion, its final or last known
/// state).
pub(crate) enum Delta<K> {
    /// See [`DeltaType::Added`].
    Added(Arc<K>),
    /// See [`DeltaType::Updated`].
    Updated(Arc<K>),
    /// See [`DeltaType::Deleted`].
    Deleted(DeletedObject<K>),
    /// See [`DeltaType::Replaced`].
    Replaced(Arc<K>),
    /// See [`DeltaType::Sync`].
    Sync(Arc<K>),
}

impl<K> Delta<K> {
    /// The kind of change.
    pub(crate) fn delta_type(&self) -> DeltaType {
        match self {
            Delta::Added(_) => DeltaType::Added,
            Delta::Updated(_) => DeltaType::Updated,
            Delta::Deleted(_) => DeltaType::Deleted,
            Delta::Replaced(_) => DeltaType::Replaced,
            Delta::Sync(_) => DeltaType::Sync,
        }
    }

    /// The object (for a deletion, its final or last known state).
    pub(crate) fn object(&self) -> &Arc<K> {
        match self {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => o,
            Delta::Deleted(d) => d.object(),
        }
    }
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Delta::Added(o) => Delta::Added(o.clone()),
            Delta::Updated(o) => Delta::Updated(o.clone()),
            Delta::Deleted(d) => Delta::Deleted(d.clone()),
            Delta::Replaced(o) => Delta::Replaced(o.clone()),
            Delta::Sync(o) => Delta::Sync(o.clone()),
        }
    }
}

impl<K: PartialEq> PartialEq for Delta<K> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Delta::Deleted(a), Delta::Deleted(b)) => a == b,
            (Delta::Deleted(_), _) | (_, Delta::Deleted(_)) => false,
            (a, b) => a.delta_type() == b.delta_type() && a.object() == b.object(),
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for Delta<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Delta::Deleted(d) => f.debug_tuple("Deleted").field(d).finish(),
            other => f
                .debug_tuple(match other.delta_type() {
                    DeltaType::Added => "Added",
                    DeltaType::Updated => "Updated",
                    DeltaType::Replaced => "Replaced",
                    _ => "Sync",
                })
                .field(other.object())
                .finish(),
        }
    }
}

/// The deltas of one object, oldest first. Never empty.
///
/// Most objects wait in the queue with a single delta, so one delta is stored inline without a heap allocation.
pub(crate) struct Deltas<K> {
    /// Invariant: `first` is the oldest delta; `rest` holds the newer ones in order.
    first: Delta<K>,
    rest: Vec<Delta<K>>,
}

impl<K> Deltas<K> {
    /// Deltas holding one delta.
    pub(crate) fn new(delta: Delta<K>) -> Self {
        Deltas {
            first: delta,
            rest: Vec::new(),
        }
    }

    /// Number of deltas (at least 1).
    pub(crate) fn len(&self) -> usize {
        1 + self.rest.len()
    }

    /// The oldest delta.
    #[cfg(test)]
    pub(crate) fn oldest(&self) -> &Delta<K> {
        &self.first
    }

    /// The newest delta.
    pub(crate) fn newest(&self) -> &Delta<K> {
        self.rest.last().unwrap_or(&self.first)
    }

    /// The deltas, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Delta<K>> {
        std::iter::once(&self.first).chain(self.rest.iter())
    }

    /// Appends a delta, then collapses the two newest when both are deletions (client-go's `dedupDeltas`): an older
    /// `FinalStateUnknown` gives way to the newer deletion; an older real final state is kept.
    pub(crate) fn push(&mut self, delta: Delta<K>) {
        if let (Delta::Deleted(prev), Delta::Deleted(_)) = (self.newest(), &delta) {
            if prev.is_final_state_unknown() {
                *self.newest_mut() = delta;
            }
            return;
        }
        self.rest.push(delta);
    }

    /// Deltas exactly as given, without deduplication (test expectations are written out in full).
    #[cfg(test)]
    pub(crate) fn from_vec_verbatim(list: Vec<Delta<K>>) -> Self {
        let mut it = list.into_iter();
        let first = it.next().expect("Deltas are never empty");
        Deltas {
            first,
            rest: it.collect(),
        }
    }

    fn newest_mut(&mut self) -> &mut Delta<K> {
        match self.rest.last_mut() {
            Some(d) => d,
            None => &mut self.first,
        }
    }
}

impl<K> Clone for Deltas<K> {
    fn clone(&self) -> Self {
        Deltas {
            first: self.first.clone(),
            rest: self.rest.clone(),
        }
    }
}

impl<K: PartialEq> PartialEq for Deltas<K> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl<K: fmt::Debug> fmt::Debug for Deltas<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<K> IntoIterator for Deltas<K> {
    type Item = Delta<K>;
    type IntoIter = std::iter::Chain<std::iter::Once<Delta<K>>, std::vec::IntoIter<Delta<K>>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self.first).chain(self.rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tomb(v: i32) -> Delta<i32> {
        Delta::Deleted(DeletedObject::FinalStateUnknown {
            key: "k".into(),
            last_known: Arc::new(v),
        })
    }

    fn del(v: i32) -> Delta<i32> {
        Delta::Deleted(DeletedObject::Object(Arc::new(v)))
    }

    // client-go's TestDeltaFIFO dedup cases: which of two consecutive deletions survives.
    #[test]
    fn consecutive_deletions_collapse_keeping_the_real_state() {
        let cases = [
            (del(1), del(2), del(1)),
            (del(1), tomb(2), del(1)),
            (tomb(1), del(2), del(2)),
            (tomb(1), tomb(2), tomb(2)),
        ];
        for (older, newer, kept) in cases {
            let mut d = Deltas::new(Delta::Added(Arc::new(0)));
            d.push(older);
            d.push(newer);
            assert_eq!(d.len(), 2);
            assert_eq!(d.newest(), &kept);
        }
    }

    #[test]
    fn non_deletions_accumulate_in_order() {
        let mut d = Deltas::new(Delta::Added(Arc::new(1)));
        d.push(Delta::Updated(Arc::new(2)));
        d.push(del(3));
        d.push(Delta::Added(Arc::new(4)));
        let kinds: Vec<_> = d.iter().map(Delta::delta_type).collect();
        assert_eq!(
            kinds,
            [
                DeltaType::Added,
                DeltaType::Updated,
                DeltaType::Deleted,
                DeltaType::Added
            ]
        );
        assert_eq!(**d.oldest().object(), 1);
        assert_eq!(**d.newest().object(), 4);
        assert_eq!(d.into_iter().count(), 4);
    }
}
