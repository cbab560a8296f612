//! The API Priority and Fairness configuration kube-apiserver 1.34 writes at start (its
//! `priority-and-fairness-config-producer` post-start hook, from apiserver's `pkg/apis/flowcontrol/bootstrap`): the
//! mandatory PriorityLevelConfigurations `exempt` and `catch-all` with their FlowSchemas, and the suggested ones
//! (`system`, `node-high`, `leader-election`, `workload-high`, `workload-low`, `global-default` and the eleven
//! FlowSchemas routing to them), each annotated `apf.kubernetes.io/autoupdate-spec: "true"`; then each FlowSchema's
//! `Dangling` condition as the configuration consumer writes it. Nothing here limits requests: the objects are what
//! a client reads on a fresh cluster.

use serde_json::{Value, json};

use crate::api::errors::Failure;
use crate::registry::Store;
use crate::registry::strategy::{self, Target};

/// The group's store ids.
const FLOW_SCHEMAS: &str = "flowschemas.flowcontrol.apiserver.k8s.io";
const PRIORITY_LEVELS: &str = "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io";
const API_VERSION: &str = "flowcontrol.apiserver.k8s.io/v1";

/// The field manager of the producer's writes, and of the consumer's status writes.
const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

fn metadata(name: &str) -> Value {
    json!({"name": name, "annotations": {"apf.kubernetes.io/autoupdate-spec": "true"}})
}

/// A queuing priority level: nominal concurrency shares, lendable percent, queues, hand size (queue length 50).
fn limited(name: &str, shares: u32, lendable: u32, queues: u32, hand: u32) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration", "metadata": metadata(name),
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": shares, "lendablePercent": lendable,
            "limitResponse": {"type": "Queue", "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": 50}},
        }},
    })
}

/// The priority levels, mandatory first.
fn priority_levels() -> Vec<Value> {
    vec![
        json!({"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration", "metadata": metadata("exempt"),
               "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}}),
        json!({"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration", "metadata": metadata("catch-all"),
               "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0,
                                                        "limitResponse": {"type": "Reject"}}}}),
        limited("system", 30, 33, 64, 6),
        limited("node-high", 40, 25, 64, 6),
        limited("leader-election", 10, 0, 16, 4),
        limited("workload-high", 40, 50, 128, 6),
        limited("workload-low", 100, 90, 128, 6),
        limited("global-default", 20, 50, 128, 6),
    ]
}

fn group(name: &str) -> Value {
    json!({"kind": "Group", "group": {"name": name}})
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "user": {"name": name}})
}

fn kube_system_sa(name: &str) -> Value {
    json!({"kind": "ServiceAccount", "serviceAccount": {"name": name, "namespace": "kube-system"}})
}

/// Every verb on every resource, cluster-scoped or in any namespace, and every non-resource URL.
fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true,
                           "namespaces": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    })
}

fn get_create_update(group: &str, resources: &[&str], namespace: &str) -> Value {
    json!({"verbs": ["get", "create", "update"], "apiGroups": [group], "resources": resources,
           "namespaces": [namespace]})
}

fn flow_schema(name: &str, level: &str, precedence: u32, distinguisher: Option<&str>, rules: Value) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": [rules],
    });
    if let Some(d) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": d});
    }
    json!({"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": metadata(name), "spec": spec})
}

/// The flow schemas, mandatory first.
fn flow_schemas() -> Vec<Value> {
    let all_users = || vec![group("system:unauthenticated"), group("system:authenticated")];
    let kcm = "system:kube-controller-manager";
    let sched = "system:kube-scheduler";
    vec![
        flow_schema("exempt", "exempt", 1, None, everything(vec![group("system:masters")])),
        flow_schema("catch-all", "catch-all", 10000, Some("ByUser"), everything(all_users())),
        flow_schema(
            "system-nodes",
            "system",
            500,
            Some("ByUser"),
            everything(vec![group("system:nodes")]),
        ),
        flow_schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!({"subjects": [group("system:nodes")], "resourceRules": [
                {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"], "clusterScope": true,
                 "namespaces": ["*"]},
                {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": ["*"]},
            ]}),
        ),
        flow_schema(
            "probes",
            "exempt",
            2,
            None,
            json!({"subjects": all_users(),
                   "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}),
        ),
        flow_schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            json!({"subjects": [user(kcm), user(sched), kube_system_sa("*")], "resourceRules": [
                get_create_update("", &["endpoints", "configmaps"], "kube-system"),
                get_create_update("coordination.k8s.io", &["leases"], "*"),
            ]}),
        ),
        flow_schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some("ByUser"),
            json!({"subjects": [kube_system_sa("*")], "resourceRules": [
                get_create_update("", &["endpoints", "configmaps"], "*"),
                get_create_update("coordination.k8s.io", &["leases"], "*"),
            ]}),
        ),
        flow_schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some("ByUser"),
            json!({"subjects": [user(kcm), kube_system_sa("endpoint-controller"),
                                kube_system_sa("endpointslicemirroring-controller")],
                   "resourceRules": [get_create_update("", &["endpoints"], "*")]}),
        ),
        flow_schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            everything(vec![user(kcm)]),
        ),
        flow_schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            everything(vec![user(sched)]),
        ),
        flow_schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            everything(vec![kube_system_sa("*")]),
        ),
        flow_schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            everything(vec![group("system:serviceaccounts")]),
        ),
        flow_schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            everything(all_users()),
        ),
    ]
}

/// Creates the configuration (when the flowcontrol group is served), then the FlowSchemas' `Dangling` conditions.
pub(crate) fn create(store: &Store) -> Result<(), Failure> {
    let (Some(levels), Some(schemas)) = ({ store.lock().spec(PRIORITY_LEVELS) }, {
        store.lock().spec(FLOW_SCHEMAS)
    }) else {
        return Ok(());
    };
    for obj in priority_levels() {
        create_one(store, &levels, obj)?;
    }
    let now = kube_informer::object::time::format_rfc3339(std::time::SystemTime::now());
    for obj in flow_schemas() {
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_owned();
        let level = obj["spec"]["priorityLevelConfiguration"]["name"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let Some(mut created) = create_one(store, &schemas, obj)? else {
            continue;
        };
        created["status"] = json!({"conditions": [{
            "type": "Dangling", "status": "False", "lastTransitionTime": now, "reason": "Found",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"),
        }]});
        strategy::update(
            Target::new(store, &schemas, None, &name),
            created,
            true,
            CONSUMER,
            &mut |_| {},
        )?;
    }
    Ok(())
}

/// Creates `obj`; `None` when it exists already.
fn create_one(
    store: &Store,
    spec: &crate::registry::resource::ResourceSpec,
    obj: Value,
) -> Result<Option<Value>, Failure> {
    match strategy::create(store, spec, None, obj, false, PRODUCER, &mut |_| {}) {
        Ok(w) => Ok(Some(w.object.to_value())),
        Err(st) if st.code == 409 => Ok(None),
        Err(st) => Err(st),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flow_schema_names_a_priority_level_of_the_configuration() {
        let levels: Vec<Value> = priority_levels()
            .iter()
            .map(|l| l["metadata"]["name"].clone())
            .collect();
        let schemas = flow_schemas();
        assert_eq!((levels.len(), schemas.len()), (8, 13));
        for s in &schemas {
            assert!(levels.contains(&s["spec"]["priorityLevelConfiguration"]["name"]), "{s}");
        }
    }
}
