//! Aborting requests from another thread: [`AbortHandle`] for a whole client, [`StreamStopper`] for one stream (a
//! watch, a log, a raw stream).
//!
//! A blocked socket read is interrupted by shutting the agent's sockets down (ureq's `Agent::shutdown`); the steps
//! that have no socket yet — name resolution, TCP connect, an exec credential plugin — run on helper threads while
//! the requesting thread waits on a channel that closes on abort. Either way the request returns at once.

use std::sync::Arc;
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

/// A message type with no values: the channels below only ever close.
#[derive(Debug)]
pub(crate) enum Never {}

/// The receiving side of a cancellation: cheap to clone, checked or waited on by the code doing I/O.
#[derive(Clone, Debug)]
pub(crate) struct CancelSignal {
    flag: Arc<AtomicBool>,
    /// Disconnected (and so ready in a `select!`) once cancelled.
    rx: Receiver<Never>,
}

impl CancelSignal {
    /// True once cancelled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// A receiver that becomes ready (disconnected) on cancellation; for `crossbeam_channel::select!`.
    pub(crate) fn receiver(&self) -> &Receiver<Never> {
        &self.rx
    }
}

/// The sending side: cancels its signal, shuts its agent's sockets down, and cancels its children.
pub(crate) struct Canceller {
    signal: CancelSignal,
    /// Dropped on cancel, which disconnects `signal.rx`.
    tx: Mutex<Option<Sender<Never>>>,
    /// The agent whose sockets to shut down. Set once the agent exists (the agent's connectors hold the signal, so
    /// the canceller is built first).
    agent: Mutex<Option<ureq::Agent>>,
    /// Cancellers cancelled along with this one (the dedicated agents of watches).
    children: Mutex<Vec<Weak<Canceller>>>,
}

impl Canceller {
    pub(crate) fn new() -> Arc<Canceller> {
        let (tx, rx) = crossbeam_channel::bounded(0);
        Arc::new(Canceller {
            signal: CancelSignal {
                flag: Arc::new(AtomicBool::new(false)),
                rx,
            },
            tx: Mutex::new(Some(tx)),
            agent: Mutex::new(None),
            children: Mutex::new(Vec::new()),
        })
    }

    /// A canceller cancelled when `self` is (and on its own).
    pub(crate) fn child(self: &Arc<Self>) -> Arc<Canceller> {
        let child = Canceller::new();
        let mut children = self.children.lock();
        children.retain(|c| c.strong_count() > 0);
        children.push(Arc::downgrade(&child));
        drop(children);
        // A parent cancelled before the child registered must still reach it.
        if self.is_cancelled() {
            child.cancel();
        }
        child
    }

    pub(crate) fn signal(&self) -> CancelSignal {
        self.signal.clone()
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.signal.is_cancelled()
    }

    /// Registers the agent whose connections `cancel` shuts down. An agent set after cancellation is shut down
    /// straight away.
    pub(crate) fn set_agent(&self, agent: ureq::Agent) {
        self.replace_agent(agent);
    }

    /// Replaces the registered agent (after a client-certificate rotation); returns the previous one. An agent
    /// given after cancellation is shut down straight away.
    pub(crate) fn replace_agent(&self, agent: ureq::Agent) -> Option<ureq::Agent> {
        let mut slot = self.agent.lock();
        if self.is_cancelled() {
            drop(slot);
            agent.shutdown();
            return None;
        }
        slot.replace(agent)
    }

    /// Cancels: idempotent, callable from any thread, never blocks on I/O.
    pub(crate) fn cancel(&self) {
        self.signal.flag.store(true, Ordering::Release);
        self.tx.lock().take();
        if let Some(agent) = self.agent.lock().take() {
            agent.shutdown();
        }
        let children = std::mem::take(&mut *self.children.lock());
        for child in children.iter().filter_map(Weak::upgrade) {
            child.cancel();
        }
    }
}

/// Aborts every in-flight and future request of one [`Client`](super::Client) (and of its clones, which share its
/// connections), including its watches, from any thread. Other clients — [`Client::isolated`](super::Client::isolated)
/// copies included — are not affected.
///
/// Requests interrupted this way fail with [`Error::Stopped`](crate::Error::Stopped) (or a transport error of kind
/// `Aborted`), within a few milliseconds whatever they were doing: connecting, waiting for an exec plugin, blocked
/// in a read. An abort is final: to talk to the server again, make another copy with
/// [`Client::isolated`](super::Client::isolated) from a client that was not aborted.
#[derive(Clone)]
pub struct AbortHandle {
    pub(crate) inner: Arc<Canceller>,
}

impl AbortHandle {
    /// Aborts. Idempotent.
    pub fn abort(&self) {
        self.inner.cancel();
    }

    /// True once [`abort`](Self::abort) was called.
    pub fn is_aborted(&self) -> bool {
        self.inner.is_cancelled()
    }
}

impl std::fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AbortHandle")
            .field("aborted", &self.is_aborted())
            .finish()
    }
}

/// Ends one stream from any thread, closing its connection (and nothing else): a
/// [`WatchStream`](super::WatchStream)'s pending or next `next()` returns `Some(Err(Error::Stopped))` within
/// milliseconds, then `None`; a [`ResponseStream`](super::ResponseStream)'s (a raw stream's, a pod log's) pending
/// or next `read` fails with [`Error::Stopped`](crate::Error::Stopped) inside the I/O error.
#[derive(Clone)]
pub struct StreamStopper {
    pub(crate) inner: Arc<Canceller>,
}

impl StreamStopper {
    /// Stops the stream. Idempotent.
    pub fn stop(&self) {
        self.inner.cancel();
    }

    /// True once stopped (by [`stop`](Self::stop) or by the client's [`AbortHandle`]).
    pub fn is_stopped(&self) -> bool {
        self.inner.is_cancelled()
    }
}

impl std::fmt::Debug for StreamStopper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamStopper")
            .field("stopped", &self.is_stopped())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_disconnects_the_signal_and_reaches_children() {
        let parent = Canceller::new();
        let child = parent.child();
        let (ps, cs) = (parent.signal(), child.signal());
        assert!(!ps.is_cancelled() && !cs.is_cancelled());
        assert!(ps.receiver().try_recv().is_err_and(|e| e.is_empty()));
        parent.cancel();
        assert!(ps.is_cancelled() && cs.is_cancelled());
        assert!(ps.receiver().recv().is_err(), "a cancelled signal is disconnected");
        assert!(cs.receiver().recv().is_err());
        // Children created after the cancellation start cancelled.
        assert!(parent.child().is_cancelled());
    }

    #[test]
    fn child_cancel_leaves_parent_alone() {
        let parent = Canceller::new();
        let child = parent.child();
        child.cancel();
        assert!(child.is_cancelled() && !parent.is_cancelled());
    }
}
