//! An informer over a set of namespaces (controller-runtime's `multiNamespaceCache` and `multiNamespaceInformer`):
//! one informer per namespace behind one [`SharedIndexInformer`](super::SharedIndexInformer) handle. What is here is
//! how the one handle speaks for many: one handler shared by the informers of every namespace, and their names,
//! versions, metrics and health combined. The lister over their caches is [`Lister`](crate::cache::Lister)'s.
//!
//! Each namespace keeps an informer of its own, rather than one cache fed by several watches: a relist of one
//! namespace must delete the objects that namespace lost, and only those, which a queue's `replace` does
//! against its own cache.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::handler::{Notification, ResourceEventHandler};
use super::listener::HandlerMetrics;
use super::shared_informer::InformerMetrics;
use crate::cache::{DeletedObject, ReflectorMetrics};
use crate::health::{Health, InformerHealth};

/// One handler registered with the informer of each namespace: each feeds it from its own thread and queue, and
/// the lock lets one of them call it at a time (it is `FnMut`). A handler that panics releases the lock as the
/// panic unwinds (parking_lot's locks are not poisoned), and the listener catches the panic as for any handler.
pub(crate) struct SharedHandler<H>(Arc<Mutex<H>>);

impl<H> SharedHandler<H> {
    pub(crate) fn new(handler: H) -> Self {
        SharedHandler(Arc::new(Mutex::new(handler)))
    }
}

impl<H> Clone for SharedHandler<H> {
    fn clone(&self) -> Self {
        SharedHandler(self.0.clone())
    }
}

impl<K, H: ResourceEventHandler<K>> ResourceEventHandler<K> for SharedHandler<H> {
    fn on_add(&mut self, obj: &Arc<K>, is_in_initial_list: bool) {
        self.0.lock().on_add(obj, is_in_initial_list);
    }

    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        self.0.lock().on_update(old, new);
    }

    fn on_delete(&mut self, obj: &DeletedObject<K>) {
        self.0.lock().on_delete(obj);
    }

    fn handle(&mut self, event: &Notification<K>) {
        self.0.lock().handle(event);
    }
}

/// The name of an informer over `namespaces` (sorted, at least one): `<name>/<namespace>` for one, as a factory
/// names an informer of one namespace; `<name>/<first>+<n>` for more (`configmaps/a+2`: a and two others), short
/// enough for logs and thread names however many namespaces there are.
pub(crate) fn set_name(name: &str, namespaces: &[String]) -> String {
    match namespaces {
        [] => name.to_owned(),
        [only] => format!("{name}/{only}"),
        [first, rest @ ..] => format!("{name}/{first}+{}", rest.len()),
    }
}

/// `namespace=version` of each namespace, joined by `,` (versions are empty before a namespace's first list).
pub(crate) fn per_namespace_versions<'a>(versions: impl Iterator<Item = (&'a str, String)>) -> String {
    versions
        .map(|(ns, rv)| format!("{ns}={rv}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A handler's counters over several informers: sums, and the largest backlog seen by any of them.
pub(crate) fn sum_handler(mut acc: HandlerMetrics, m: &HandlerMetrics) -> HandlerMetrics {
    acc.pending += m.pending;
    acc.max_pending = acc.max_pending.max(m.max_pending);
    acc.delivered += m.delivered;
    acc.panics += m.panics;
    acc.coalesced += m.coalesced;
    acc
}

/// The metrics of a set of namespaces: counters and sizes summed, synced when every namespace is, the most recent
/// error. Handlers are matched by position: each registration adds one to every informer of the set, in the same
/// order.
pub(crate) fn sum_metrics(parts: Vec<InformerMetrics>) -> InformerMetrics {
    let mut parts = parts.into_iter();
    let Some(mut acc) = parts.next() else {
        return InformerMetrics::default();
    };
    let mut versions = vec![acc.reflector.last_sync_resource_version.clone()];
    for m in parts {
        versions.push(m.reflector.last_sync_resource_version.clone());
        acc.reflector = sum_reflector(acc.reflector, &m.reflector);
        acc.fifo_depth += m.fifo_depth;
        acc.store_size += m.store_size;
        acc.synced &= m.synced;
        for (i, h) in m.handlers.iter().enumerate() {
            match acc.handlers.get_mut(i) {
                Some(a) => *a = sum_handler(std::mem::take(a), h),
                None => acc.handlers.push(h.clone()),
            }
        }
        acc.last_error = match (acc.last_error.take(), m.last_error) {
            (Some(a), Some(b)) => Some(if b.age < a.age { b } else { a }),
            (a, b) => a.or(b),
        };
    }
    acc.reflector.last_sync_resource_version = versions.join(",");
    acc
}

fn sum_reflector(mut acc: ReflectorMetrics, m: &ReflectorMetrics) -> ReflectorMetrics {
    acc.lists += m.lists;
    acc.relists_gone += m.relists_gone;
    acc.relists_expired_continue += m.relists_expired_continue;
    acc.relists_after_error += m.relists_after_error;
    acc.watches += m.watches;
    acc.watch_restarts += m.watch_restarts;
    acc.watch_events += m.watch_events;
    acc.streaming_list_refused |= m.streaming_list_refused;
    acc.streaming_list_fallbacks += m.streaming_list_fallbacks;
    acc.shard_filtered_client_side += m.shard_filtered_client_side;
    acc.shard_changes += m.shard_changes;
    // Filtered by the server only when every namespace's list was.
    acc.shard_server_side = match (acc.shard_server_side, m.shard_server_side) {
        (Some(a), Some(b)) => Some(a && b),
        (a, b) => a.or(b),
    };
    // The youngest watch: a namespace without one (`None`) leaves the others'.
    acc.watch_age = match (acc.watch_age, m.watch_age) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    acc
}

/// The health of a set of namespaces as one: the worst state, synced when every namespace is, the oldest of the
/// namespaces' last events and lists (the staleness of the worst), the most recent error.
pub(crate) fn worst_health(name: &str, parts: Vec<InformerHealth>) -> InformerHealth {
    // `None` (never) when any namespace has none: the set is as stale as its stalest namespace.
    let oldest = |age: fn(&InformerHealth) -> Option<Duration>| {
        parts
            .iter()
            .map(age)
            .try_fold(Duration::ZERO, |acc, a| a.map(|a| acc.max(a)))
    };
    InformerHealth {
        name: name.to_owned(),
        state: Health::worst(parts.iter().map(|p| p.state.clone())),
        synced: parts.iter().all(|p| p.synced),
        last_event_age: oldest(|p| p.last_event_age).filter(|_| !parts.is_empty()),
        last_list_age: oldest(|p| p.last_list_age).filter(|_| !parts.is_empty()),
        last_error: parts.iter().filter_map(|p| p.last_error.clone()).min_by_key(|e| e.age),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_short_however_many_namespaces() {
        let ns = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(set_name("configmaps", &ns(&["prod"])), "configmaps/prod");
        assert_eq!(set_name("configmaps", &ns(&["a", "b", "c"])), "configmaps/a+2");
    }

    #[test]
    fn health_of_a_set_is_its_worst_and_stalest_namespace() {
        let part = |name: &str, state: Health, synced, event: Option<u64>| InformerHealth {
            name: name.into(),
            state,
            synced,
            last_event_age: event.map(Duration::from_secs),
            last_list_age: Some(Duration::from_secs(1)),
            last_error: None,
        };
        let set = worst_health(
            "cms/a+1",
            vec![
                part("cms/a", Health::Healthy, true, Some(3)),
                part(
                    "cms/b",
                    Health::Halted {
                        reason: "stopped".into(),
                    },
                    false,
                    Some(9),
                ),
            ],
        );
        assert_eq!(set.name, "cms/a+1");
        assert!(set.state.is_halted() && !set.synced);
        assert_eq!(set.last_event_age, Some(Duration::from_secs(9)));
        // A namespace that never had an event makes the set's age unknown, not that of the others.
        let set = worst_health(
            "cms/a+1",
            vec![
                part("cms/a", Health::Healthy, true, Some(3)),
                part("cms/b", Health::Healthy, true, None),
            ],
        );
        assert_eq!(set.last_event_age, None);
    }
}
