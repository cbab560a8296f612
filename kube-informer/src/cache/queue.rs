//! The queue between an informer's reflector and its cache: a RealFIFO (the default, as in client-go since
//! Kubernetes 1.33) or a DeltaFIFO, chosen with [`Fifo`] (client-go's `Queue`, and its `InOrderInformers` gate).
//!
//! The reflector pushes into it and the informer's processing thread pops from it through one seam, [`Queue`], so
//! that everything above the queue — the store, the handlers, their promises — is the same whichever it is.

use std::sync::Arc;

use super::{Closed, Delta, DeltaFifo, Deltas, Key, KnownObjects, RealFifo, ReplaceSession, SyncHook, Wake};
use crate::object::Object;

/// Which queue an informer puts between its reflector and its cache.
///
/// Both give each object its changes in the order the server made them, and both end in the server's state; they
/// differ in the order *across* objects and in what a slow processing thread costs:
///
/// | | [`Fifo::Real`] (default) | [`Fifo::Delta`] |
/// |---|---|---|
/// | order across objects | the server's: changes to A, B, A reach handlers as A, B, A | an object's changes wait at the place of its first one: A, A, B |
/// | while the processing thread is behind | one entry per change | one entry per object, holding its changes |
/// | client-go | `RealFIFO`, its informers' queue since 1.33 (gate `InOrderInformers`, on) | `DeltaFIFO`, the queue before |
///
/// Handlers that reason across objects — a Service and its EndpointSlices, an owner and what it owns — need the
/// first: with a DeltaFIFO, B's change at t=2 can reach them before A's change at t=3. The default follows client-go
/// (1.34: `InOrderInformers` beta and on); the README gives both queues' figures.
///
/// ```
/// use kube_informer::cache::Fifo;
/// use kube_informer::informer::{FactoryOptions, InformerOptions};
/// use kube_informer::object::core::ConfigMap;
///
/// assert_eq!(Fifo::default(), Fifo::Real);
/// let factory_options = FactoryOptions::default().fifo(Fifo::Delta); // every informer of a factory…
/// let informer_options = InformerOptions::<ConfigMap>::default().fifo(Fifo::Real); // …but this one
/// # let _ = (factory_options, informer_options);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fifo {
    /// A RealFIFO: every change its own entry, in arrival order (client-go's default since 1.33).
    #[default]
    Real,
    /// A DeltaFIFO: the changes of an object gathered at its place in the queue.
    Delta,
}

impl Fifo {
    /// Both queues, the default first.
    pub const ALL: [Fifo; 2] = [Fifo::Real, Fifo::Delta];

    /// `"RealFIFO"` or `"DeltaFIFO"`, as client-go names them.
    pub fn name(self) -> &'static str {
        match self {
            Fifo::Real => "RealFIFO",
            Fifo::Delta => "DeltaFIFO",
        }
    }
}

/// An informer's queue, as its reflector and processing thread use it.
pub(crate) enum Queue<K> {
    /// See [`Fifo::Real`].
    Real(Arc<RealFifo<K>>),
    /// See [`Fifo::Delta`].
    Delta(Arc<DeltaFifo<K>>),
}

impl<K> Clone for Queue<K> {
    fn clone(&self) -> Self {
        match self {
            Queue::Real(f) => Queue::Real(f.clone()),
            Queue::Delta(f) => Queue::Delta(f.clone()),
        }
    }
}

impl<K> From<Arc<DeltaFifo<K>>> for Queue<K> {
    fn from(f: Arc<DeltaFifo<K>>) -> Self {
        Queue::Delta(f)
    }
}

impl<K> From<Arc<RealFifo<K>>> for Queue<K> {
    fn from(f: Arc<RealFifo<K>>) -> Self {
        Queue::Real(f)
    }
}

impl<K: Object> Queue<K> {
    /// A queue of the kind `fifo` keyed by `namespace/name`, detecting deletions against `known` (the informer's
    /// store); `on_synced` is called when a finished replace leaves it synced with nothing to pop.
    pub(crate) fn new(fifo: Fifo, known: Arc<dyn KnownObjects<K>>, on_synced: SyncHook) -> Self {
        match fifo {
            Fifo::Real => Queue::Real(Arc::new(RealFifo::new(known).with_sync_hook(on_synced))),
            Fifo::Delta => Queue::Delta(Arc::new(DeltaFifo::new(Some(known)).with_sync_hook(on_synced))),
        }
    }
}

impl<K> Queue<K> {
    /// Which queue this is.
    pub(crate) fn kind(&self) -> Fifo {
        match self {
            Queue::Real(_) => Fifo::Real,
            Queue::Delta(_) => Fifo::Delta,
        }
    }

    /// Starts a streamed replace (a relist).
    pub(crate) fn begin_replace(&self) -> ReplaceSession<'_, K> {
        match self {
            Queue::Real(f) => f.begin_replace(),
            Queue::Delta(f) => f.begin_replace(),
        }
    }

    /// Queues a watch's changes in order under one lock (see [`DeltaFifo::push_all`]).
    pub(crate) fn push_all(&self, deltas: &mut Vec<Delta<K>>, wake: Wake) {
        match self {
            Queue::Real(f) => f.push_all(deltas, wake),
            Queue::Delta(f) => f.push_all(deltas, wake),
        }
    }

    /// Wakes the waiting pops for items queued with [`Wake::Later`].
    pub(crate) fn wake(&self) {
        match self {
            Queue::Real(f) => f.wake(),
            Queue::Delta(f) => f.wake(),
        }
    }

    /// Queues a `Sync` for every known object with nothing queued.
    pub(crate) fn resync(&self) {
        match self {
            Queue::Real(f) => f.resync(),
            Queue::Delta(f) => f.resync(),
        }
    }

    /// Blocks until something is queued, takes up to `max` items (objects of a DeltaFIFO, changes of a RealFIFO —
    /// each then a `Deltas` of one) in queue order under one hold of the lock, and runs `process` on them outside
    /// it: `process` gets each item's key, deltas and whether it belongs to the initial list. Whatever must see the
    /// store as the batch leaves it (a replace's end, a resync, [`exclusive`](Queue::exclusive), the next pop) waits
    /// until `process` returns.
    pub(crate) fn pop_batch<R>(
        &self,
        max: usize,
        process: impl FnOnce(&mut dyn Iterator<Item = (Key, Deltas<K>, bool)>) -> R,
    ) -> Result<R, Closed> {
        match self {
            Queue::Real(f) => f.pop_batch_with(max, |items| {
                process(&mut items.map(|(key, delta, initial)| (key, Deltas::new(delta), initial)))
            }),
            Queue::Delta(f) => f.pop_batch_with(max, |mut items| process(&mut items)),
        }
    }

    /// Runs `f` under the queue's lock once no popped batch is being processed.
    pub(crate) fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        match self {
            Queue::Real(q) => q.exclusive(f),
            Queue::Delta(q) => q.exclusive(f),
        }
    }

    /// Closes the queue: pops return [`Closed`].
    pub(crate) fn close(&self) {
        match self {
            Queue::Real(f) => f.close(),
            Queue::Delta(f) => f.close(),
        }
    }

    /// Items waiting: changes (RealFIFO) or objects (DeltaFIFO).
    pub(crate) fn len(&self) -> usize {
        match self {
            Queue::Real(f) => f.len(),
            Queue::Delta(f) => f.len(),
        }
    }

    /// True once the first replace has finished and all its items were popped and processed.
    pub(crate) fn has_synced(&self) -> bool {
        match self {
            Queue::Real(f) => f.has_synced(),
            Queue::Delta(f) => f.has_synced(),
        }
    }

    /// Threads waiting for a popped batch to be processed.
    #[cfg(test)]
    pub(crate) fn settling(&self) -> usize {
        match self {
            Queue::Real(f) => f.settling(),
            Queue::Delta(f) => f.settling(),
        }
    }
}
