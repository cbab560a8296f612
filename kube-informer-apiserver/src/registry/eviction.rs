//! `POST pods/{name}/eviction` (a policy/v1 `Eviction`) as kube-apiserver's eviction REST decides it
//! (`pkg/registry/core/pod/storage/eviction.go`): a pod that is pending, finished or already being deleted is
//! deleted at once; otherwise the PodDisruptionBudgets of its namespace whose selector matches its labels decide —
//! none: deleted; more than one: 500 (the eviction API supports one); one whose status is older than its spec:
//! 429 with ten seconds to wait; one allowing no disruption: 429 `TooManyRequests` with a `DisruptionBudget` cause
//! naming the budget's healthy counts; else the budget's `disruptionsAllowed` is decremented (the pod noted in its
//! `disruptedPods`, `DisruptionAllowed` turned `False` at 0) and the pod deleted. A pod that is not ready is
//! deleted without touching the budget when the budget's `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or when it
//! has its desired healthy pods. The answer is kube-apiserver's `Success` Status (201).

use serde_json::{Value, json};

use crate::api::errors::{self, Failure};
use crate::patch::managed_fields::SERVER;
use crate::registry::Store;
use crate::registry::reply::Reply;
use crate::registry::strategy::{self, DeleteOptions, OnCommit, Target};
use crate::storage::store::{StoredObject, object_key};
use kube_informer::object::time::format_rfc3339;
use kube_informer::object::{Status, StatusCause, StatusDetails};
use kube_informer::selector::{LabelSelector, Selector};

const BUDGETS: &str = "poddisruptionbudgets.policy";
const MESSAGE: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// 429 with a `DisruptionBudget` cause.
fn too_many_requests(cause: String, retry_after: i64) -> Failure {
    let mut st = Status::failure(429, "TooManyRequests", MESSAGE);
    st.details = Some(StatusDetails {
        causes: vec![StatusCause {
            reason: "DisruptionBudget".into(),
            message: cause,
            field: String::new(),
        }],
        retry_after_seconds: (retry_after > 0).then_some(retry_after),
        ..Default::default()
    });
    Box::new(st)
}

fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// The budgets of `ns` whose selector (neither missing nor empty) matches `pod`'s labels.
fn budgets_of(store: &Store, ns: &str, pod: &StoredObject) -> Vec<Value> {
    let g = store.lock();
    if g.spec(BUDGETS).is_none() {
        return Vec::new();
    }
    g.list_current(BUDGETS, Some(ns))
        .iter()
        .map(|o| o.to_value())
        .filter(|b| {
            let Ok(ls) = serde_json::from_value::<LabelSelector>(b["spec"]["selector"].clone()) else {
                return false;
            };
            Selector::from_label_selector(&ls).is_ok_and(|s| !s.is_empty() && s.matches(&pod.labels))
        })
        .collect()
}

/// Serves an eviction of pod `name` in `ns` whose body is `eviction`.
pub(crate) fn create(
    store: &Store,
    ns: &str,
    name: &str,
    eviction: &Value,
    dry_run: bool,
    on_commit: OnCommit<'_>,
) -> Result<Reply, Failure> {
    if let Some(n) = eviction["metadata"]["name"].as_str().filter(|n| !n.is_empty())
        && n != name
    {
        return Err(errors::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let pods = store
        .lock()
        .spec("pods")
        .ok_or_else(|| errors::internal("pods are not served"))?;
    let stored = store
        .lock()
        .get("pods", &object_key(ns, name))
        .ok_or_else(|| errors::not_found(&pods.api, name))?;
    let pod = stored.to_value();
    let d = &eviction["deleteOptions"];
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let opts = DeleteOptions {
        uid: text(d.pointer("/preconditions/uid")),
        resource_version: text(d.pointer("/preconditions/resourceVersion")),
        dry_run: dry_run || d["dryRun"].as_array().is_some_and(|a| a.iter().any(|x| x == "All")),
        grace_period: d["gracePeriodSeconds"].as_i64(),
    };
    let phase = pod["status"]["phase"].as_str().unwrap_or("");
    let ignores_budgets = matches!(phase, "Succeeded" | "Failed" | "Pending")
        || pod["metadata"].get("deletionTimestamp").is_some_and(|t| !t.is_null());
    if !ignores_budgets {
        let budgets = budgets_of(store, ns, &stored);
        match budgets.as_slice() {
            [] => {}
            [budget] => spend(store, ns, &pod, budget, opts.dry_run)?,
            _ => {
                return Ok(Reply::Json(
                    500,
                    br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.","code":500}"#
                        .to_vec(),
                ));
            }
        }
    }
    strategy::delete(store, &pods, Some(ns), name, &opts, on_commit)?;
    Ok(Reply::object_value(
        201,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    ))
}

/// Checks `budget` for evicting `pod` and, when it allows a disruption, spends one (`checkAndDecrement`); an
/// unready pod the budget lets go spends nothing.
fn spend(store: &Store, ns: &str, pod: &Value, budget: &Value, dry_run: bool) -> Result<(), Failure> {
    let name = budget["metadata"]["name"].as_str().unwrap_or("").to_owned();
    let status = &budget["status"];
    let int = |v: &Value| v.as_i64().unwrap_or(0);
    let (desired, current) = (int(&status["desiredHealthy"]), int(&status["currentHealthy"]));
    if !ready(pod)
        && (budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow" || (current >= desired && desired > 0))
    {
        return Ok(());
    }
    if int(&status["observedGeneration"]) < int(&budget["metadata"]["generation"]) {
        return Err(too_many_requests(
            format!("The disruption budget {name} is still being processed by the server."),
            10,
        ));
    }
    let allowed = int(&status["disruptionsAllowed"]);
    if allowed < 0 {
        return Err(errors::forbidden_named(
            "poddisruptionbudgets.policy",
            &name,
            "pdb disruptions allowed is negative",
        ));
    }
    if status["disruptedPods"].as_object().is_some_and(|m| m.len() > 2000) {
        return Err(errors::forbidden_named(
            "poddisruptionbudgets.policy",
            &name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(too_many_requests(
            format!("The disruption budget {name} needs {desired} healthy pods and has {current} currently"),
            0,
        ));
    }
    if dry_run {
        return Ok(());
    }
    let mut updated = budget.clone();
    let now = format_rfc3339(std::time::SystemTime::now());
    updated["status"]["disruptionsAllowed"] = json!(allowed - 1);
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or("");
    if !updated["status"]["disruptedPods"].is_object() {
        updated["status"]["disruptedPods"] = json!({});
    }
    updated["status"]["disruptedPods"][pod_name] = json!(now);
    if allowed == 1 {
        let condition = json!({"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods",
                               "message": "", "observedGeneration": status["observedGeneration"],
                               "lastTransitionTime": now});
        let mut conditions: Vec<Value> = updated["status"]["conditions"].as_array().cloned().unwrap_or_default();
        match conditions.iter_mut().find(|c| c["type"] == "DisruptionAllowed") {
            Some(c) if c["status"] == "False" => {}
            Some(c) => *c = condition,
            None => conditions.push(condition),
        }
        updated["status"]["conditions"] = Value::Array(conditions);
    }
    let spec = store
        .lock()
        .spec(BUDGETS)
        .ok_or_else(|| errors::internal("poddisruptionbudgets are not served"))?;
    let w = strategy::update(
        Target::new(store, &spec, Some(ns), &name),
        updated,
        true,
        SERVER,
        &mut |_| {},
    );
    match w {
        Ok(_) => Ok(()),
        Err(st) if st.code == 409 => Err(too_many_requests(
            format!("The disruption budget {name} is still being processed by the server."),
            10,
        )),
        Err(st) => Err(st),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_allowing_nothing_answers_kube_apiserver_s_429() {
        let st = too_many_requests(
            "The disruption budget web-pdb needs 2 healthy pods and has 2 currently".into(),
            0,
        );
        assert_eq!(
            serde_json::to_string(&st).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web-pdb needs 2 healthy pods and has 2 currently"}]},"code":429}"#
        );
    }
}
