//! `Worker`: a named thread that can be joined with a deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, bounded};

use crate::error::{Error, Result};
use crate::thread_name::ThreadName;

/// How long a component's `stop` waits for its threads before leaving stragglers (a thread stuck in user code)
/// detached, so that stop returns within a second from any state.
pub(crate) const STOP_BUDGET: Duration = Duration::from_millis(900);

/// A named thread plus a token that drops when it exits, so `join_until` can wait with a deadline instead of
/// blocking forever on a thread stuck in user code.
#[derive(Debug)]
pub(crate) struct Worker {
    /// The full name, for logs (the OS shows the short one).
    name: String,
    handle: JoinHandle<()>,
    /// Disconnected once the thread's closure has returned (or unwound).
    exited: Receiver<()>,
}

impl Worker {
    /// Spawns `f` on a thread named `name.short` (logs use `name.full`); `live` counts the group's running threads
    /// (incremented now, decremented when `f` returns or unwinds).
    pub(crate) fn spawn(
        name: ThreadName,
        live: &Arc<AtomicUsize>,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<Worker> {
        let (token, exited) = bounded::<()>(0);
        let live = LiveToken::new(live.clone());
        let ThreadName { full: name, short } = name;
        let handle = std::thread::Builder::new()
            .name(short)
            .spawn(move || {
                let _token = token;
                let _live = live;
                f();
            })
            .map_err(|e| Error::InvalidInput(format!("cannot spawn thread {name}: {e}")))?;
        Ok(Worker { name, handle, exited })
    }

    /// Joins the thread if it exits before `deadline`; otherwise leaves it running (detached) and returns false.
    /// Called from the thread itself (a handler stopping its own informer), it returns at once: the thread ends when
    /// its current callback returns.
    pub(crate) fn join_until(self, deadline: Instant) -> bool {
        if std::thread::current().id() == self.handle.thread().id() {
            return false;
        }
        match self.exited.recv_deadline(deadline) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                if self.handle.join().is_err() {
                    log::warn!("thread {} panicked", self.name);
                }
                true
            }
            Err(RecvTimeoutError::Timeout) => {
                log::warn!("thread {} did not stop in time; leaving it detached", self.name);
                false
            }
        }
    }

    /// True once the thread has finished.
    #[cfg(test)]
    pub(crate) fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
}

/// Counts a running thread in its group until dropped.
struct LiveToken(Arc<AtomicUsize>);

impl LiveToken {
    fn new(counter: Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        LiveToken(counter)
    }
}

impl Drop for LiveToken {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The text of a panic payload, when it has one.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn joins_a_finished_thread_and_detaches_a_stuck_one() {
        let live = Arc::new(AtomicUsize::new(0));
        let done = Worker::spawn(ThreadName::new("done", "test", "kube-informer/test/done"), &live, || {}).unwrap();
        assert!(done.join_until(Instant::now() + Duration::from_secs(10)));
        assert_eq!(live.load(Ordering::SeqCst), 0);
        let (release, wait) = bounded::<()>(0);
        let stuck = Worker::spawn(
            ThreadName::new("stuck", "test", "kube-informer/test/stuck"),
            &live,
            move || {
                let _ = wait.recv();
            },
        )
        .unwrap();
        assert!(!stuck.is_finished());
        assert_eq!(live.load(Ordering::SeqCst), 1);
        assert!(!stuck.join_until(Instant::now()), "deadline already passed");
        drop(release);
    }

    #[test]
    fn a_thread_joining_itself_returns_at_once() {
        let live = Arc::new(AtomicUsize::new(0));
        let (give, take) = bounded::<Worker>(1);
        let (done, returned) = bounded::<bool>(1);
        let me = Worker::spawn(
            ThreadName::new("self", "test", "kube-informer/test/self"),
            &live,
            move || {
                let me = take.recv().unwrap();
                // An hour: only the self-join shortcut makes this return.
                let _ = done.send(me.join_until(Instant::now() + Duration::from_secs(3600)));
            },
        )
        .unwrap();
        give.send(me).unwrap();
        let joined = returned
            .recv_timeout(Duration::from_secs(20))
            .expect("returned without waiting for itself");
        assert!(!joined, "a thread cannot join itself: reported as left running");
    }
}
