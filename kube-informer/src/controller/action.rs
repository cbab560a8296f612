//! `Action`: what a reconcile (or the error policy, after a failed one) asks of the controller next.

use std::time::Duration;

/// What to do with a key after a reconcile: returned by a successful reconcile, and by the
/// [error policy](super::ControllerBuilder::build_with_error_policy) after a failed one.
///
/// | Action | after a success | after a failure |
/// |---|---|---|
/// | [`await_change`](Action::await_change) | failure history cleared; reconciled again on the next change | the error is dropped: history cleared, no retry until the next change |
/// | [`requeue_after(d)`](Action::requeue_after) | history cleared; reconciled again after `d` | retried after `d`; the failure count is kept (not increased) |
/// | [`requeue_rate_limited`](Action::requeue_rate_limited) | retried after the rate limiter's next delay, which counts as a failure | the default: the rate limiter's next delay (5 ms · 2ⁿ, up to 1000 s) |
///
/// An earlier change still triggers a reconcile at once whatever the action says.
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
/// // Not ready yet (a dependency still starting): back off as after a failure, without logging an error.
/// assert!(Action::requeue_rate_limited().is_rate_limited());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct Action {
    next: Next,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    AwaitChange,
    After(Duration),
    RateLimited,
}

impl Action {
    /// Reconcile the key again after `delay`, whether or not anything changes. A zero delay queues it again
    /// immediately.
    pub fn requeue_after(delay: Duration) -> Action {
        Action {
            next: Next::After(delay),
        }
    }

    /// Reconcile the key again only when the object, or something mapped to it, changes.
    pub fn await_change() -> Action {
        Action {
            next: Next::AwaitChange,
        }
    }

    /// Reconcile the key again after the rate limiter's next delay for it (the work queue's `add_rate_limited`,
    /// controller-runtime's `Result{Requeue: true}`): each such requeue backs off further, until a reconcile returns
    /// another action.
    pub fn requeue_rate_limited() -> Action {
        Action {
            next: Next::RateLimited,
        }
    }

    /// The requeue delay of [`requeue_after`](Action::requeue_after), if that is the action.
    pub fn requeue_after_duration(&self) -> Option<Duration> {
        match self.next {
            Next::After(d) => Some(d),
            _ => None,
        }
    }

    /// True for [`requeue_rate_limited`](Action::requeue_rate_limited).
    pub fn is_rate_limited(&self) -> bool {
        self.next == Next::RateLimited
    }
}

impl Default for Action {
    /// [`Action::await_change`].
    fn default() -> Self {
        Action::await_change()
    }
}
