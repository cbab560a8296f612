//! Applying popped changes to the store, and the notifications they make (client-go's `processDeltas` and
//! `processDeltasInBatch`).
//!
//! The processing thread pops a batch from the queue and applies it here under one hold of the store's lock — the
//! store and its indexes take the whole batch at once, and a reader sees all of it or none — then hands the
//! notifications to the listeners after releasing it. The changes of a batch are applied one after the other, each
//! reading the state the one before it left, so a batch may hold several changes of one object (client-go's
//! transaction reads every old state first, and so ends a batch at a second change of an object).

use super::handler::Notification;
use super::processor::Sequenced;
use crate::cache::{Delta, Deltas, Key, StoreInner};
use crate::object::{MetaAccessor, Object};

/// Applies one popped item — an object's `deltas` (one, from a RealFIFO), oldest first — to `store`, and appends
/// the notification of each change to `out`, numbered `seq`:
/// * an add, update, replace or sync of an object the store holds is an update, and a resync when the resource
///   version did not change (client-go: those go only to handlers that asked for resyncs); of one it does not hold,
///   an add;
/// * a deletion of an object the store holds is a delete; of one it does not hold, nothing (a DeltaFIFO never queues
///   one; a RealFIFO queues every deletion a watch reports, as client-go's does, and the informer keeps handlers from
///   hearing of an object they never saw).
pub(super) fn process_deltas<K: Object>(
    store: &mut StoreInner<K>,
    key: &Key,
    deltas: Deltas<K>,
    is_in_initial_list: bool,
    seq: u64,
    out: &mut Vec<Sequenced<K>>,
) {
    for delta in deltas {
        match delta {
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                match store.put(key.clone(), obj.clone()) {
                    Some(old) => {
                        let is_sync = old.meta().resource_version() == obj.meta().resource_version();
                        out.push(Sequenced {
                            event: Notification::Update { old, new: obj },
                            seq,
                            is_sync,
                        });
                    }
                    None => out.push(Sequenced {
                        event: Notification::Add {
                            obj,
                            is_in_initial_list,
                        },
                        seq,
                        is_sync: false,
                    }),
                }
            }
            Delta::Deleted(d) => {
                if store.delete(key).is_some() {
                    out.push(Sequenced {
                        event: Notification::Delete(d),
                        seq,
                        is_sync: false,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::cache::{DeletedObject, Indexers, Store};
    use crate::object::ObjectMeta;
    use crate::object::core::ConfigMap;

    fn cm(rv: &str) -> Arc<ConfigMap> {
        let mut m = ObjectMeta::namespaced("ns", "a");
        m.resource_version = Some(rv.into());
        Arc::new(ConfigMap::new(m))
    }

    fn kinds(out: &[Sequenced<ConfigMap>]) -> Vec<String> {
        out.iter()
            .map(|n| {
                let what = match &n.event {
                    Notification::Add { obj, .. } => format!("add {}", obj.meta().resource_version().unwrap()),
                    Notification::Update { old, new } => format!(
                        "update {}->{}",
                        old.meta().resource_version().unwrap(),
                        new.meta().resource_version().unwrap()
                    ),
                    Notification::Delete(d) => format!("delete {}", d.object().meta().resource_version().unwrap()),
                };
                format!("{what}{}", if n.is_sync { " (sync)" } else { "" })
            })
            .collect()
    }

    #[test]
    fn changes_of_one_object_in_one_batch_each_see_the_state_the_one_before_left() {
        let store = Store::<ConfigMap>::new(Indexers::new());
        let key: Key = "ns/a".into();
        let mut out = Vec::new();
        let mut inner = store.write();
        let deleted = |o| Delta::Deleted(DeletedObject::Object(o));
        for (seq, delta) in [
            Delta::Added(cm("1")),
            Delta::Updated(cm("2")),
            Delta::Sync(cm("2")),
            deleted(cm("3")),
            // A second deletion (a server reporting one twice): the store no longer holds the object.
            deleted(cm("3")),
            Delta::Replaced(cm("4")),
        ]
        .into_iter()
        .enumerate()
        {
            process_deltas(&mut inner, &key, Deltas::new(delta), false, seq as u64, &mut out);
        }
        drop(inner);
        assert_eq!(
            kinds(&out),
            ["add 1", "update 1->2", "update 2->2 (sync)", "delete 3", "add 4"]
        );
        assert_eq!(out.iter().map(|n| n.seq).collect::<Vec<_>>(), [0, 1, 2, 3, 5]);
        assert_eq!(store.get("ns/a").unwrap().meta().resource_version(), Some("4"));
    }
}
