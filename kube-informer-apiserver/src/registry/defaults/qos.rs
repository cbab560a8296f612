//! A pod's quality-of-service class (`qos.ComputePodQOS`), which kube-apiserver writes into `status.qosClass` when
//! the pod is created: `BestEffort` without any CPU or memory request or limit, `Guaranteed` when every container
//! (or the pod-level resources, when set) limits both and requests equal limits, `Burstable` otherwise.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Object;
use crate::api::quantity::{Quantity, from_json};

/// The resources QoS looks at.
const COMPUTE: [&str; 2] = ["cpu", "memory"];

/// Adds the positive CPU and memory quantities of `list` to `sums`; the names found.
fn add_positive(list: Option<&Value>, sums: &mut BTreeMap<&'static str, Quantity>) -> Vec<&'static str> {
    let mut found = Vec::new();
    let Some(list) = list.and_then(Value::as_object) else {
        return found;
    };
    let zero = Quantity::parse("0").expect("0 is a quantity");
    for name in COMPUTE {
        let Some(q) = list.get(name).and_then(from_json) else {
            continue;
        };
        if q.cmp_value(&zero).is_gt() {
            found.push(name);
            let sum = match sums.get(name) {
                Some(prev) => q.add(prev).unwrap_or(q),
                None => q,
            };
            sums.insert(name, sum);
        }
    }
    found
}

/// The QoS class of a pod's (defaulted) spec.
pub(super) fn pod_qos(spec: &Object) -> &'static str {
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    let mut guaranteed = true;
    let resources = |c: &Value, key: &str| c.get("resources").and_then(|r| r.get(key)).cloned();
    match spec.get("resources").filter(|r| r.is_object()) {
        // Pod-level resources decide when they are set (PodLevelResources, beta and on since 1.34).
        Some(pod) => {
            add_positive(pod.get("requests"), &mut requests);
            let has_limits = pod
                .get("limits")
                .and_then(Value::as_object)
                .is_some_and(|l| !l.is_empty());
            if has_limits && add_positive(pod.get("limits"), &mut limits).len() < COMPUTE.len() {
                guaranteed = false;
            }
        }
        None => {
            // Ephemeral containers cannot have resources and do not count.
            let containers = ["containers", "initContainers"]
                .into_iter()
                .filter_map(|k| spec.get(k).and_then(Value::as_array))
                .flatten();
            for c in containers {
                add_positive(resources(c, "requests").as_ref(), &mut requests);
                if add_positive(resources(c, "limits").as_ref(), &mut limits).len() < COMPUTE.len() {
                    guaranteed = false;
                }
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let matching = requests
        .iter()
        .all(|(name, req)| limits.get(name).is_some_and(|lim| lim.cmp_value(req).is_eq()));
    if guaranteed && matching && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn container(requests: Value, limits: Value) -> Value {
        json!({"name": "c", "resources": {"requests": requests, "limits": limits}})
    }

    #[test]
    fn classes_follow_the_containers() {
        // Cases after pkg/apis/core/helper/qos's tests.
        let none = json!(null);
        for (containers, want) in [
            (vec![json!({"name": "c"})], "BestEffort"),
            (
                vec![container(json!({"cpu": "0"}), json!({"memory": "0"}))],
                "BestEffort",
            ),
            (
                vec![container(
                    json!({"cpu": "100m", "memory": "100Mi"}),
                    json!({"cpu": "100m", "memory": "100Mi"}),
                )],
                "Guaranteed",
            ),
            (
                vec![container(
                    json!({"cpu": "0.1", "memory": "100Mi"}),
                    json!({"cpu": "100m", "memory": "104857600"}),
                )],
                "Guaranteed",
            ),
            (
                vec![
                    container(
                        json!({"cpu": "100m", "memory": "100Mi"}),
                        json!({"cpu": "100m", "memory": "100Mi"}),
                    ),
                    container(
                        json!({"cpu": "100m", "memory": "100Mi"}),
                        json!({"cpu": "100m", "memory": "100Mi"}),
                    ),
                ],
                "Guaranteed",
            ),
            (vec![container(json!({"cpu": "100m"}), none.clone())], "Burstable"),
            (
                vec![container(json!({"cpu": "100m"}), json!({"cpu": "200m"}))],
                "Burstable",
            ),
            (
                vec![container(
                    json!({"cpu": "100m", "memory": "1Gi"}),
                    json!({"cpu": "200m", "memory": "1Gi"}),
                )],
                "Burstable",
            ),
            (
                vec![
                    container(
                        json!({"cpu": "100m", "memory": "100Mi"}),
                        json!({"cpu": "100m", "memory": "100Mi"}),
                    ),
                    json!({"name": "besteffort"}),
                ],
                "Burstable",
            ),
            (vec![container(none, json!({"nvidia.com/gpu": "1"}))], "BestEffort"),
        ] {
            assert_eq!(
                pod_qos(&spec(json!({"containers": containers}))),
                want,
                "{containers:?}"
            );
        }
    }

    #[test]
    fn pod_level_resources_decide_when_set() {
        let s = spec(json!({
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "containers": [{"name": "c"}],
        }));
        assert_eq!(pod_qos(&s), "Guaranteed");
        let s = spec(json!({"resources": {"requests": {"cpu": "1"}}, "containers": [{"name": "c"}]}));
        assert_eq!(pod_qos(&s), "Burstable");
    }
}
