//! `Registration`: a handler's registration with an informer — its sync state, lag, and removal (client-go's
//! `ResourceEventHandlerRegistration`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::listener::{HandlerMetrics, ListenerStats};
use super::shared_informer::Shared;
use crate::object::Object;

/// A handler's registration: its sync state, lag, and removal.
///
/// Dropping a `Registration` does **not** remove its handler, which keeps receiving events until
/// [`remove`](Registration::remove) is called or the informer stops — as in client-go, where the handle that
/// `AddEventHandler` returns is usually ignored, and as a dropped [`JoinHandle`](std::thread::JoinHandle) leaves its
/// thread running. Keep it to remove the handler later (a controller that stops watching something) or to read
/// whether the handler has caught up ([`has_synced`](Registration::has_synced)) and how far behind it is. Over a set
/// of namespaces, it covers the handler's registration with the informer of each namespace.
///
/// ```
/// # use std::sync::Arc;
/// # use kube_informer::informer::{HandlerFuncs, InformerOptions, SharedIndexInformer};
/// # use kube_informer::object::core::ConfigMap;
/// # fn demo(informer: &SharedIndexInformer<ConfigMap>) -> kube_informer::Result<()> {
/// // Stays registered although the registration is dropped at once:
/// informer.add_event_handler(HandlerFuncs::new().on_add(|cm: &Arc<ConfigMap>, _| println!("{:?}", cm.metadata.name)))?;
/// // Kept, to be removed later:
/// let audit = informer.add_event_handler(|_: &kube_informer::informer::Notification<ConfigMap>| {})?;
/// audit.remove();
/// # Ok(())
/// # }
/// ```
pub struct Registration<K: Object> {
    /// One per informer the handler is registered with. Never empty once returned.
    pub(super) parts: Vec<RegisteredPart<K>>,
}

/// The handler's registration with one informer.
pub(crate) struct RegisteredPart<K: Object> {
    pub(super) id: u64,
    pub(super) stats: Arc<ListenerStats>,
    pub(super) informer: Weak<Shared<K>>,
}

impl<K: Object> Registration<K> {
    /// True once the informer has synced and this handler has handled every initial add.
    pub fn has_synced(&self) -> bool {
        self.parts.iter().all(|p| {
            p.informer.upgrade().is_some_and(|s| s.has_synced()) && p.stats.pending_initial.load(Ordering::SeqCst) == 0
        })
    }

    /// Events waiting for this handler (its lag).
    pub fn pending(&self) -> usize {
        self.parts.iter().map(|p| p.stats.queued.load(Ordering::Relaxed)).sum()
    }

    /// This handler's counters (over a set of namespaces, summed; `max_pending` is the largest of them).
    pub fn metrics(&self) -> HandlerMetrics {
        let mut parts = self.parts.iter().map(|p| p.stats.snapshot());
        let first = parts.next().unwrap_or_default();
        parts.fold(first, |acc, m| super::multi_namespace::sum_handler(acc, &m))
    }

    /// Removes the handler: no more events; its threads are joined. Idempotent.
    pub fn remove(&self) {
        for p in &self.parts {
            if let Some(s) = p.informer.upgrade() {
                s.remove_handler(p.id);
            }
        }
    }
}

impl<K: Object> std::fmt::Debug for Registration<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("handler", &self.parts.first().map(|p| p.stats.name.as_str()))
            .field("informers", &self.parts.len())
            .finish()
    }
}
