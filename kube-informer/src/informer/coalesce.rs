//! The `CoalesceByKey` handler queue: at most one pending entry per object, so a slow handler costs O(objects)
//! memory, never O(events).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::{Condvar, Mutex};

use super::handler::Notification;
use super::listener::ListenerStats;
use super::synced::SyncNotify;
use crate::cache::{DeletedObject, Key};
use crate::object::{Object, key_of};

/// What is pending for one object: the merge of every event since the handler last saw it.
enum Pending<K> {
    Add {
        obj: Arc<K>,
        initial: bool,
    },
    Update {
        old: Arc<K>,
        new: Arc<K>,
    },
    Delete(DeletedObject<K>),
    /// The object was deleted and created again: the handler must see both (its UID changed).
    DeleteThenAdd {
        deleted: DeletedObject<K>,
        obj: Arc<K>,
        initial: bool,
    },
}

/// Result of merging an event into an entry.
enum Merged<K> {
    Keep(Pending<K>),
    /// The entry cancels out (added then deleted before the handler saw either).
    Drop,
}

/// How many initial adds a merge discarded, for the sync accounting.
fn merge<K>(pending: Pending<K>, ev: Notification<K>) -> (Merged<K>, usize) {
    use Merged::{Drop, Keep};
    match (pending, ev) {
        (
            Pending::Add { initial, .. },
            Notification::Add {
                obj,
                is_in_initial_list,
            },
        ) => (Keep(Pending::Add { obj, initial }), usize::from(is_in_initial_list)),
        (Pending::Add { initial, .. }, Notification::Update { new, .. }) => {
            (Keep(Pending::Add { obj: new, initial }), 0)
        }
        (Pending::Add { initial, .. }, Notification::Delete(_)) => (Drop, usize::from(initial)),
        (
            Pending::Update { old, .. },
            Notification::Add {
                obj,
                is_in_initial_list,
            },
        ) => (Keep(Pending::Update { old, new: obj }), usize::from(is_in_initial_list)),
        (Pending::Update { old, .. }, Notification::Update { new, .. }) => (Keep(Pending::Update { old, new }), 0),
        (Pending::Update { .. }, Notification::Delete(d)) => (Keep(Pending::Delete(d)), 0),
        (
            Pending::Delete(deleted),
            Notification::Add {
                obj,
                is_in_initial_list,
            },
        ) => (
            Keep(Pending::DeleteThenAdd {
                deleted,
                obj,
                initial: is_in_initial_list,
            }),
            0,
        ),
        (Pending::Delete(deleted), Notification::Update { new, .. }) => (
            Keep(Pending::DeleteThenAdd {
                deleted,
                obj: new,
                initial: false,
            }),
            0,
        ),
        (Pending::Delete(first), Notification::Delete(second)) => {
            // Keep the real final state over a tombstone.
            let keep = if first.is_final_state_unknown() { second } else { first };
            (Keep(Pending::Delete(keep)), 0)
        }
        (
            Pending::DeleteThenAdd { deleted, initial, .. },
            Notification::Add {
                obj,
                is_in_initial_list,
            },
        ) => (
            Keep(Pending::DeleteThenAdd { deleted, obj, initial }),
            usize::from(is_in_initial_list),
        ),
        (Pending::DeleteThenAdd { deleted, initial, .. }, Notification::Update { new, .. }) => (
            Keep(Pending::DeleteThenAdd {
                deleted,
                obj: new,
                initial,
            }),
            0,
        ),
        (Pending::DeleteThenAdd { deleted, initial, .. }, Notification::Delete(_)) => {
            (Keep(Pending::Delete(deleted)), usize::from(initial))
        }
    }
}

struct State<K> {
    /// Invariant: a key is in `order` iff it is in `pending`, exactly once.
    pending: HashMap<Key, Pending<K>>,
    /// Keys in the order their pending entry was created.
    order: VecDeque<Key>,
    closed: bool,
}

/// A queue keeping one merged entry per object key.
pub(crate) struct CoalesceQueue<K> {
    state: Mutex<State<K>>,
    /// Signalled when an entry is created or the queue closes.
    cond: Condvar,
    stats: Arc<ListenerStats>,
}

impl<K: Object> CoalesceQueue<K> {
    pub(crate) fn new(stats: Arc<ListenerStats>) -> Self {
        CoalesceQueue {
            state: Mutex::new(State {
                pending: HashMap::new(),
                order: VecDeque::new(),
                closed: false,
            }),
            cond: Condvar::new(),
            stats,
        }
    }

    /// Merges `ev` into its object's pending entry. Never blocks. False once closed.
    pub(crate) fn push(&self, ev: Notification<K>, sync: &SyncNotify) -> bool {
        let key: Key = match &ev {
            Notification::Delete(DeletedObject::FinalStateUnknown { key, .. }) => key.clone(),
            other => key_of(&**other.object()).into(),
        };
        let mut st = self.state.lock();
        if st.closed {
            return false;
        }
        let dropped_initial = match st.pending.remove(&key) {
            None => {
                let entry = match ev {
                    Notification::Add {
                        obj,
                        is_in_initial_list,
                    } => Pending::Add {
                        obj,
                        initial: is_in_initial_list,
                    },
                    Notification::Update { old, new } => Pending::Update { old, new },
                    Notification::Delete(d) => Pending::Delete(d),
                };
                st.pending.insert(key.clone(), entry);
                st.order.push_back(key);
                let n = st.order.len();
                self.stats.queued.store(n, Ordering::Relaxed);
                self.stats.note_queued(n);
                self.cond.notify_one();
                0
            }
            Some(prev) => {
                let (merged, dropped) = merge(prev, ev);
                match merged {
                    Merged::Keep(p) => {
                        st.pending.insert(key, p);
                    }
                    Merged::Drop => {
                        st.order.retain(|k| *k != key);
                        self.stats.queued.store(st.order.len(), Ordering::Relaxed);
                    }
                }
                // Counted once the merge is visible, so a reader seeing the count also sees the queue it produced.
                self.stats.coalesced.fetch_add(1, Ordering::Release);
                dropped
            }
        };
        drop(st);
        self.stats.initial_done(dropped_initial, sync);
        true
    }

    /// Takes the oldest pending entry's next event; blocks until there is one. `None` once closed.
    pub(crate) fn pop(&self) -> Option<Notification<K>> {
        let mut st = self.state.lock();
        loop {
            if st.closed {
                return None;
            }
            if let Some(key) = st.order.pop_front() {
                let entry = st.pending.remove(&key).expect("invariant: ordered keys are pending");
                let ev = match entry {
                    Pending::Add { obj, initial } => Notification::Add {
                        obj,
                        is_in_initial_list: initial,
                    },
                    Pending::Update { old, new } => Notification::Update { old, new },
                    Pending::Delete(d) => Notification::Delete(d),
                    Pending::DeleteThenAdd { deleted, obj, initial } => {
                        // Deliver the delete now; the add stays first in line.
                        st.pending.insert(key.clone(), Pending::Add { obj, initial });
                        st.order.push_front(key);
                        Notification::Delete(deleted)
                    }
                };
                self.stats.queued.store(st.order.len(), Ordering::Relaxed);
                return Some(ev);
            }
            self.cond.wait(&mut st);
        }
    }

    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.cond.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectMeta;
    use crate::object::core::ConfigMap;

    fn cm(name: &str, v: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap::new(ObjectMeta::namespaced("ns", name)).with("v", v))
    }

    fn describe(ev: &Notification<ConfigMap>) -> String {
        let v = |o: &Arc<ConfigMap>| format!("{}{}", o.metadata.name.as_deref().unwrap(), &o.data["v"]);
        match ev {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => format!("add {}{}", v(obj), if *is_in_initial_list { "*" } else { "" }),
            Notification::Update { old, new } => format!("update {}->{}", v(old), v(new)),
            Notification::Delete(d) => format!(
                "delete {}{}",
                v(d.object()),
                if d.is_final_state_unknown() { "?" } else { "" }
            ),
        }
    }

    fn run(events: Vec<Notification<ConfigMap>>) -> (Vec<String>, Arc<ListenerStats>) {
        let stats = Arc::new(ListenerStats::new("t".into()));
        let sync = SyncNotify::default();
        let q = CoalesceQueue::new(stats.clone());
        for ev in events {
            if ev.is_initial_add() {
                stats.pending_initial.fetch_add(1, Ordering::SeqCst);
            }
            assert!(q.push(ev, &sync));
        }
        let mut out = Vec::new();
        while stats.queued.load(Ordering::Relaxed) > 0 {
            let ev = q.pop().unwrap();
            if ev.is_initial_add() {
                stats.initial_done(1, &sync);
            }
            out.push(describe(&ev));
        }
        (out, stats)
    }

    fn add(o: Arc<ConfigMap>, initial: bool) -> Notification<ConfigMap> {
        Notification::Add {
            obj: o,
            is_in_initial_list: initial,
        }
    }
    fn upd(old: Arc<ConfigMap>, new: Arc<ConfigMap>) -> Notification<ConfigMap> {
        Notification::Update { old, new }
    }
    fn del(o: Arc<ConfigMap>) -> Notification<ConfigMap> {
        Notification::Delete(DeletedObject::Object(o))
    }

    #[test]
    fn merges_per_object_keeping_the_pair_the_handler_needs() {
        let (out, stats) = run(vec![
            add(cm("a", "1"), true),
            upd(cm("a", "1"), cm("a", "2")),
            upd(cm("b", "1"), cm("b", "2")),
            upd(cm("b", "2"), cm("b", "3")),
            upd(cm("c", "1"), cm("c", "2")),
            del(cm("c", "2")),
            add(cm("d", "1"), false),
            del(cm("d", "1")),
            del(cm("e", "1")),
            add(cm("e", "2"), false),
            upd(cm("e", "2"), cm("e", "3")),
        ]);
        assert_eq!(out, ["add a2*", "update b1->b3", "delete c2", "delete e1", "add e3"]);
        assert_eq!(stats.coalesced.load(Ordering::Relaxed), 6);
        assert_eq!(stats.pending_initial.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn dropped_initial_adds_are_uncounted() {
        let (out, stats) = run(vec![add(cm("a", "1"), true), del(cm("a", "1"))]);
        assert!(out.is_empty());
        assert_eq!(
            stats.pending_initial.load(Ordering::SeqCst),
            0,
            "a dropped initial add no longer blocks sync"
        );
    }

    #[test]
    fn memory_is_bounded_by_objects_not_events() {
        let stats = Arc::new(ListenerStats::new("t".into()));
        let q = CoalesceQueue::new(stats.clone());
        let sync = SyncNotify::default();
        for i in 0..10_000 {
            let name = format!("o{}", i % 10);
            let o = cm(&name, &i.to_string());
            q.push(upd(o.clone(), o), &sync);
        }
        assert_eq!(stats.queued.load(Ordering::Relaxed), 10);
        assert_eq!(stats.max_queued.load(Ordering::Relaxed), 10);
        q.close();
        assert!(q.pop().is_none());
        assert!(!q.push(add(cm("z", "1"), false), &sync), "closed");
    }
}
