//! `Action`: what a successful reconcile asks of the controller next.

use std::time::Duration;

/// What to do with a key after a successful reconcile.
///
/// Either way the key's failure history is cleared (the work queue's `forget`): its next failure backs off from the
/// start again.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::controller::Action;
///
/// // Nothing more to do until the object (or something mapped to it) changes.
/// let idle = Action::await_change();
/// assert_eq!(idle.requeue_after_duration(), None);
/// // Look again in five minutes even if nothing changes (polling an external system, a certificate expiry...).
/// let poll = Action::requeue_after(Duration::from_secs(300));
/// assert_eq!(poll.requeue_after_duration(), Some(Duration::from_secs(300)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct Action {
    /// `Some(d)`: reconcile the key again after `d` (the work queue's `add_after`); `None`: only on change.
    requeue_after: Option<Duration>,
}

impl Action {
    /// Reconcile the key again after `delay`, whether or not anything changes (an earlier change still triggers a
    /// reconcile at once). A zero delay queues it again immediately.
    pub fn requeue_after(delay: Duration) -> Action {
        Action {
            requeue_after: Some(delay),
        }
    }

    /// Reconcile the key again only when the object, or something mapped to it, changes.
    pub fn await_change() -> Action {
        Action { requeue_after: None }
    }

    /// The requeue delay, if any.
    pub fn requeue_after_duration(&self) -> Option<Duration> {
        self.requeue_after
    }
}

impl Default for Action {
    /// [`Action::await_change`].
    fn default() -> Self {
        Action::await_change()
    }
}
