//! Eviction: the `eviction` subresource of core/v1 pods (policy/v1 `Eviction`), a delete that respects the pod's
//! PodDisruptionBudget.

use std::time::Duration;

use super::api::{Api, decode_json};
use super::params::DeleteParams;
use crate::object::{Object, Status};
use crate::{Error, Result};

/// The `reason` of the `Status` cause kube-apiserver adds when a PodDisruptionBudget refuses an eviction
/// (policy/v1 `DisruptionBudgetCause`).
const DISRUPTION_BUDGET_CAUSE: &str = "DisruptionBudget";

/// What became of an eviction ([`Api::evict`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EvictionOutcome {
    /// The pod is being deleted, gracefully (it may still be terminating; watch it go).
    Evicted,
    /// A PodDisruptionBudget does not allow the disruption now: the pod stays. Evicting it again later may
    /// succeed, once other pods are ready (`kubectl drain` retries every 5 s).
    Blocked(BlockedEviction),
}

/// Why a PodDisruptionBudget refused an eviction: kube-apiserver's 429 answer, whose `Status` names the budget.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockedEviction {
    /// The server's message: "Cannot evict pod as it would violate the pod's disruption budget."
    pub message: String,
    /// The budget's side, one line per `DisruptionBudget` cause: "The disruption budget web needs 2 healthy pods
    /// and has 2 currently", or "… is still being processed by the server." while the disruption controller has
    /// not yet observed the budget.
    pub causes: Vec<String>,
    /// How long the server asks to wait before the next attempt (10 s while the budget is being processed), at
    /// most [`MAX_RETRY_AFTER`](crate::MAX_RETRY_AFTER); `None` when it says nothing.
    pub retry_after: Option<Duration>,
    /// The server's whole `Status`.
    pub status: Box<Status>,
}

impl<K: Object> Api<K> {
    /// Evicts pod `name` (POST of a policy/v1 `Eviction` to its `eviction` subresource, with `dp` as its
    /// `DeleteOptions`: grace period, preconditions, dry run): deleted unless a PodDisruptionBudget forbids it.
    ///
    /// A refusal by a budget is not an error but [`EvictionOutcome::Blocked`] — kube-apiserver answers it with a
    /// 429 (client-go's `apierrors.IsTooManyRequests`) whose `Status` carries a `DisruptionBudget` cause. Any other
    /// 429 — the server's priority and fairness throttling this client — stays an [`Error::Api`] with
    /// [`Error::is_too_many_requests`], as do 404 (no such pod), 403, and a 500 for a pod covered by more than one
    /// budget (which the eviction API does not support).
    ///
    /// Works on any `Api` of core/v1 pods addressed in a namespace (see [`logs`](Self::logs)).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use kube_informer::client::{Api, Client, EvictionOutcome, params::DeleteParams};
    /// use kube_informer::object::core::Pod;
    ///
    /// let pods: Api<Pod> = Api::namespaced(Client::try_default()?, "prod");
    /// loop {
    ///     match pods.evict("web-0", &DeleteParams::default())? {
    ///         EvictionOutcome::Evicted => break,
    ///         EvictionOutcome::Blocked(b) => {
    ///             eprintln!("{}: {}", b.message, b.causes.join("; "));
    ///             std::thread::sleep(b.retry_after.unwrap_or(Duration::from_secs(5)));
    ///         }
    ///         _ => unreachable!("EvictionOutcome has two variants today"),
    ///     }
    /// }
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn evict(&self, name: &str, dp: &DeleteParams) -> Result<EvictionOutcome> {
        self.pods_only("evictions")?;
        let req = self.target().evict(name, dp)?;
        match self.client().request_bytes(&req) {
            Ok(body) => outcome_of_success(&body),
            Err(Error::Api(status)) => match blocked_by_budget(status) {
                Ok(blocked) => Ok(EvictionOutcome::Blocked(blocked)),
                Err(status) => Err(Error::Api(status)),
            },
            Err(e) => Err(e),
        }
    }
}

/// A 2xx answer: kube-apiserver's `Status` with `status: Success` (201); a `Status` saying `Failure` with a success
/// code — what the eviction REST returns for a pod under two budgets, as a result rather than an error — is the
/// error it describes.
fn outcome_of_success(body: &[u8]) -> Result<EvictionOutcome> {
    #[derive(serde::Deserialize)]
    struct Kind {
        #[serde(default)]
        kind: String,
        #[serde(default)]
        status: serde_json::Value,
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(EvictionOutcome::Evicted);
    }
    let kind: Kind = decode_json(body)?;
    if kind.kind == "Status" && kind.status == "Failure" {
        let mut status: Status = decode_json(body)?;
        if status.code == 0 {
            status.code = 500;
        }
        if status.reason.is_empty() {
            status.reason = Status::reason_for_code(status.code).to_owned();
        }
        return Err(Error::Api(Box::new(status)));
    }
    Ok(EvictionOutcome::Evicted)
}

/// The refusal in a 429 `Status` when a PodDisruptionBudget caused it (a `DisruptionBudget` cause; servers before
/// the cause existed say so only in the message); the `Status` back otherwise.
fn blocked_by_budget(status: Box<Status>) -> std::result::Result<BlockedEviction, Box<Status>> {
    let causes: Vec<String> = status
        .details
        .iter()
        .flat_map(|d| &d.causes)
        .filter(|c| c.reason == DISRUPTION_BUDGET_CAUSE)
        .map(|c| c.message.clone())
        .collect();
    let by_budget = !causes.is_empty() || status.message.contains("disruption budget");
    if status.code != 429 || !by_budget {
        return Err(status);
    }
    let retry_after = Error::Api(status.clone()).retry_after();
    Ok(BlockedEviction {
        message: status.message.clone(),
        causes,
        retry_after,
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(body: &str) -> Box<Status> {
        match crate::client::transport::status_error(429, None, body.as_bytes()) {
            Error::Api(s) => s,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn a_budget_refusal_is_told_from_throttling() {
        // kube-apiserver's answers (pkg/registry/core/pod/storage/eviction.go): DisruptionsAllowed is 0 …
        let blocked = blocked_by_budget(status(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web-pdb needs 2 healthy pods and has 2 currently"}]},"code":429}"#,
        ))
        .unwrap();
        assert_eq!(
            blocked.causes,
            ["The disruption budget web-pdb needs 2 healthy pods and has 2 currently"]
        );
        assert_eq!(blocked.retry_after, None);
        // … the budget's generation is not observed yet (retry after 10 s) …
        let blocked = blocked_by_budget(status(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web-pdb is still being processed by the server."}],"retryAfterSeconds":10},"code":429}"#,
        ))
        .unwrap();
        assert_eq!(blocked.retry_after, Some(Duration::from_secs(10)));
        // … and an older server says it in the message only.
        assert!(
            blocked_by_budget(status(
                r#"{"kind":"Status","status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","code":429}"#
            ))
            .is_ok()
        );
        // Priority and fairness throttling is no budget.
        let throttled = blocked_by_budget(status(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}"#,
        ))
        .unwrap_err();
        assert_eq!(throttled.code, 429);
    }

    #[test]
    fn a_failure_status_with_a_success_code_is_an_error() {
        assert_eq!(
            outcome_of_success(br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}"#)
                .unwrap(),
            EvictionOutcome::Evicted
        );
        let e = outcome_of_success(
            br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.","code":500}"#,
        )
        .unwrap_err();
        assert_eq!(e.code(), Some(500), "{e}");
        assert!(e.to_string().contains("more than one PodDisruptionBudget"), "{e}");
    }
}
