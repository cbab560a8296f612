//! Fault injection: a queue of faults, each shaping the answer to the next request that matches it.
//!
//! A test scripts a sequence by pushing several faults; each request takes the first pending fault whose target
//! matches (verb and resource), and a fault with `times(n)` serves `n` requests before it is used up.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

mod form;

pub use crate::http::fault_action::FaultAction;
use crate::http::log::Verb;
use crate::registry::resource::ResourceSpec;
use form::FaultForm;

/// The requests a fault applies to: a verb (or any) and a resource (or any).
///
/// Build one with [`Fault::on`], [`Fault::list`], [`Fault::watch`] or [`Fault::any_request`], then pick the action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultTarget {
    verb: Option<Verb>,
    resource: Option<String>,
}

/// A fault for the next request(s) matching its target.
///
/// ```
/// use std::time::Duration;
/// use kube_informer_apiserver::{Fault, Verb};
///
/// // The next 3 LISTs of configmaps get 429 with Retry-After: 1.
/// let throttle = Fault::list("configmaps").error(429).retry_after(1).times(3);
/// // The next watch of pods is cut after 2 events.
/// let cut = Fault::watch("pods").cut_after_events(2);
/// // The next request of any kind hangs for 5 s.
/// let hang = Fault::any_request().stall().lasting(Duration::from_secs(5));
/// // Deletes of leases fail with 500.
/// let broken = Fault::on(Some(Verb::Delete), Some("leases")).error(500);
/// # let _ = (throttle, cut, hang, broken);
/// ```
///
/// A fault also has a JSON form (serde), the builder's vocabulary as fields, which the admin API takes
/// ([`ApiServerBuilder::admin_api`](crate::ApiServerBuilder::admin_api)):
///
/// ```
/// use kube_informer_apiserver::Fault;
///
/// let fault: Fault = serde_json::from_str(
///     r#"{"verb": "list", "resource": "configmaps", "error": 429, "retryAfter": 1, "times": 3}"#,
/// )
/// .unwrap();
/// assert_eq!(fault, Fault::list("configmaps").error(429).retry_after(1).times(3));
/// let stall: Fault = serde_json::from_str(r#"{"stall": true, "lasting": "5s"}"#).unwrap();
/// # let _ = stall;
/// ```
///
/// The fields: `verb` (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`; absent
/// or `*` for any), `resource` (plural or `plural.group`; absent or `*` for any), one action — `error` (with
/// `retryAfter`), `cutAfterEvents`, `cutAfterBytes`, `stall: true` or `stallAfterEvents` (with `lasting`, a Go
/// duration such as `"5s"`), `garbageAfterEvents` (with `garbage`, text, or `garbageBase64`),
/// `closeMidObjectAfterEvents` — and `times`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(try_from = "FaultForm", into = "FaultForm")]
pub struct Fault {
    target: FaultTarget,
    action: FaultAction,
    /// Requests still to be served by this fault; ≥ 1 while queued.
    times: u32,
}

impl Fault {
    /// Requests with this verb (any when `None`) on this resource (any when `None`; plural or `plural.group`).
    pub fn on(verb: Option<Verb>, resource: Option<&str>) -> FaultTarget {
        FaultTarget {
            verb,
            resource: resource.map(str::to_owned),
        }
    }

    /// LIST requests on `resource`.
    pub fn list(resource: &str) -> FaultTarget {
        Fault::on(Some(Verb::List), Some(resource))
    }

    /// WATCH requests on `resource`.
    pub fn watch(resource: &str) -> FaultTarget {
        Fault::on(Some(Verb::Watch), Some(resource))
    }

    /// Any request, discovery included.
    pub fn any_request() -> FaultTarget {
        Fault::on(None, None)
    }

    /// Serve `n` matching requests (default 1).
    #[must_use]
    pub fn times(mut self, n: u32) -> Self {
        self.times = n.max(1);
        self
    }

    /// For an error fault: add `Retry-After: seconds` and `details.retryAfterSeconds`.
    #[must_use]
    pub fn retry_after(mut self, seconds: u32) -> Self {
        if let FaultAction::Error { retry_after, .. } = &mut self.action {
            *retry_after = Some(seconds);
        }
        self
    }

    /// For a stall: end it after `d` instead of waiting to be cleared.
    #[must_use]
    pub fn lasting(mut self, d: Duration) -> Self {
        if let FaultAction::Stall { duration, .. } = &mut self.action {
            *duration = Some(d);
        }
        self
    }

    /// The action.
    pub fn action(&self) -> &FaultAction {
        &self.action
    }

    /// The verb and resource the fault applies to (`None`: any).
    pub(crate) fn target_parts(&self) -> (Option<Verb>, Option<&str>) {
        (self.target.verb, self.target.resource.as_deref())
    }

    /// Requests this fault will still serve.
    pub(crate) fn remaining(&self) -> u32 {
        self.times
    }
}

impl FaultTarget {
    fn with(self, action: FaultAction) -> Fault {
        Fault {
            target: self,
            action,
            times: 1,
        }
    }

    /// Answer with `code` (429, 500, 503, …) and a `Status` body.
    pub fn error(self, code: u16) -> Fault {
        self.with(FaultAction::Error {
            code,
            retry_after: None,
        })
    }

    /// Cut the connection after `n` watch events (before any answer for other requests).
    pub fn cut_after_events(self, n: usize) -> Fault {
        self.with(FaultAction::CutAfterEvents(n))
    }

    /// Cut the connection after `n` bytes of response body.
    pub fn cut_after_bytes(self, n: usize) -> Fault {
        self.with(FaultAction::CutAfterBytes(n))
    }

    /// Send nothing, before any answer, until cleared (or [`Fault::lasting`]).
    pub fn stall(self) -> Fault {
        self.with(FaultAction::Stall {
            after_events: None,
            duration: None,
        })
    }

    /// On a watch: send the headers and `n` events, then nothing until cleared (or [`Fault::lasting`]).
    pub fn stall_after_events(self, n: usize) -> Fault {
        self.with(FaultAction::Stall {
            after_events: Some(n),
            duration: None,
        })
    }

    /// On a watch: after `n` events, write `bytes` into the stream.
    pub fn garbage_after_events(self, n: usize, bytes: &[u8]) -> Fault {
        self.with(FaultAction::Garbage {
            after_events: n,
            bytes: bytes.to_vec(),
        })
    }

    /// On a watch: after `n` events, send half of the next one and cut the connection.
    pub fn close_mid_object_after_events(self, n: usize) -> Fault {
        self.with(FaultAction::CloseMidObject { after_events: n })
    }
}

/// The pending faults and the stall release signal.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    queue: Mutex<VecDeque<Fault>>,
    /// Bumped by `clear` (and shutdown): stalled requests waiting for a clear compare against it.
    generation: Mutex<u64>,
    released: Condvar,
}

impl Faults {
    pub(crate) fn push(&self, fault: Fault) {
        self.queue.lock().push_back(fault);
    }

    pub(crate) fn pending(&self) -> usize {
        self.queue.lock().len()
    }

    /// The pending faults, in the order they match.
    pub(crate) fn snapshot(&self) -> Vec<Fault> {
        self.queue.lock().iter().cloned().collect()
    }

    /// Takes the action of the first pending fault matching this request, with a ticket for [`Faults::stall`]: a
    /// clear from now on releases the stall, even one that happens before the stall begins.
    pub(crate) fn take(&self, verb: Verb, resource: Option<&ResourceSpec>) -> Option<(FaultAction, u64)> {
        let mut q = self.queue.lock();
        let i = q.iter().position(|f| {
            f.target.verb.is_none_or(|v| v == verb)
                && match (&f.target.resource, resource) {
                    (None, _) => true,
                    (Some(want), Some(spec)) => *want == spec.api.plural || *want == spec.id(),
                    (Some(_), None) => false,
                }
        })?;
        let fault = &mut q[i];
        fault.times -= 1;
        let action = fault.action.clone();
        if fault.times == 0 {
            q.remove(i);
        }
        let ticket = *self.generation.lock();
        Some((action, ticket))
    }

    /// Drops pending faults and releases every stall waiting to be cleared.
    pub(crate) fn clear(&self) {
        self.queue.lock().clear();
        self.release();
    }

    /// Wakes stalled requests (they re-check their deadline and whether to stop).
    pub(crate) fn release(&self) {
        *self.generation.lock() += 1;
        self.released.notify_all();
    }

    /// Blocks for `duration` (`None` = until cleared after `ticket` was issued), or until `stop()` turns true
    /// (checked on every release and at least every 100 ms).
    pub(crate) fn stall(&self, duration: Option<Duration>, ticket: u64, stop: impl Fn() -> bool) {
        let deadline = duration.map(crate::api::util::deadline_after);
        let mut generation = self.generation.lock();
        loop {
            if stop() || (duration.is_none() && *generation != ticket) {
                return;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return;
            }
            let mut wake = now + Duration::from_millis(100);
            if let Some(d) = deadline {
                wake = wake.min(d);
            }
            self.released.wait_until(&mut generation, wake);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_informer::object::ApiResource;

    #[test]
    fn faults_match_in_order_and_run_out() {
        let faults = Faults::default();
        let cm = ResourceSpec::new(ApiResource::new("", "v1", "ConfigMap", "configmaps", true));
        let lease = ResourceSpec::new(ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true));
        faults.push(Fault::watch("configmaps").cut_after_events(1));
        faults.push(
            Fault::list("leases.coordination.k8s.io")
                .error(429)
                .retry_after(2)
                .times(2),
        );
        faults.push(Fault::any_request().error(503));
        let take = |verb, spec| faults.take(verb, spec).map(|(action, _)| action);
        assert_eq!(
            take(Verb::List, Some(&cm)),
            Some(FaultAction::Error {
                code: 503,
                retry_after: None
            })
        );
        let throttled = FaultAction::Error {
            code: 429,
            retry_after: Some(2),
        };
        assert_eq!(take(Verb::List, Some(&lease)), Some(throttled.clone()));
        assert_eq!(take(Verb::List, Some(&lease)), Some(throttled));
        assert_eq!(take(Verb::List, Some(&lease)), None);
        assert_eq!(take(Verb::Get, None), None);
        assert_eq!(take(Verb::Watch, Some(&cm)), Some(FaultAction::CutAfterEvents(1)));
        assert_eq!(faults.pending(), 0);
    }

    #[test]
    fn a_cleared_stall_returns() {
        let faults = std::sync::Arc::new(Faults::default());
        let f2 = faults.clone();
        faults.push(Fault::any_request().stall());
        let (_, ticket) = faults.take(Verb::Get, None).unwrap();
        let t = std::thread::spawn(move || f2.stall(None, ticket, || false));
        // Cleared before or after the stall begins: either way it returns.
        faults.clear();
        t.join().unwrap();
        // A bounded stall returns by itself; a stop condition ends it at once.
        faults.stall(Some(Duration::from_millis(1)), ticket, || false);
        faults.stall(None, ticket, || true);
    }
}
