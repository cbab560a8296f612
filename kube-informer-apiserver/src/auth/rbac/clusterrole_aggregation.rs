//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation-controller` keeps it: a
//! ClusterRole with an `aggregationRule` holds the rules of every other ClusterRole its selectors match — selector
//! by selector, matching roles by name, each distinct rule once — written by server-side apply as the field manager
//! `clusterrole-aggregation-controller` whenever they differ. Here it runs after every write to a ClusterRole
//! (and at start), until nothing changes: the aggregated roles are up to date when the write's answer is sent.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::rule_resolver::CLUSTER_ROLES;
use super::types::{ClusterRole, GROUP, PolicyRule};
use crate::admission::Admission;
use crate::patch::managed_fields::Writer;
use crate::registry::Store;
use crate::registry::strategy::{self, PatchType, Target};

/// The field manager of the aggregated rules.
pub(crate) const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";

/// Rounds before giving up on a fixed point (a cycle of aggregations that never settles keeps what it reached, as
/// with kube's controller).
const MAX_ROUNDS: usize = 16;

/// The rules `role` aggregates from `all` (`syncClusterRole`).
pub(crate) fn aggregated_rules(role: &ClusterRole, all: &BTreeMap<String, ClusterRole>) -> Option<Vec<PolicyRule>> {
    let selectors = role.aggregation.as_ref()?;
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors {
        // `all` is ordered by name, as the controller sorts the roles each selector lists.
        for other in all
            .values()
            .filter(|o| o.name != role.name && selector.matches(&o.labels))
        {
            for r in &other.rules {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Some(rules)
}

/// Brings every aggregated ClusterRole up to date: the fixed point is found on the roles as read (aggregations
/// feeding aggregations settle in as many rounds as the chain is long), then each role that changed is written once.
pub(crate) fn sync(store: &Store) {
    let Some(spec) = store.lock().served(CLUSTER_ROLES, "v1") else {
        return;
    };
    let mut all: BTreeMap<String, ClusterRole> = {
        let g = store.lock();
        g.list_current(CLUSTER_ROLES, None)
            .iter()
            .map(|o| (o.name.clone(), ClusterRole::from_json(&o.to_value())))
            .collect()
    };
    let mut changed: Vec<String> = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let updates: Vec<(String, Vec<PolicyRule>)> = all
            .values()
            .filter_map(|role| {
                let rules = aggregated_rules(role, &all)?;
                (rules != role.rules).then(|| (role.name.clone(), rules))
            })
            .collect();
        if updates.is_empty() {
            break;
        }
        for (name, rules) in updates {
            if let Some(role) = all.get_mut(&name) {
                role.rules = rules;
            }
            if !changed.contains(&name) {
                changed.push(name);
            }
        }
    }
    for name in changed {
        let rules = &all[&name].rules;
        let mut config = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole",
                                "metadata": {"name": name}});
        if !rules.is_empty() {
            config["rules"] = Value::Array(rules.iter().map(PolicyRule::to_json).collect());
        }
        let writer = Writer {
            manager: FIELD_MANAGER.to_owned(),
            force: true,
        };
        let result = strategy::patch(
            Target::new(store, &spec, None, &name),
            PatchType::Apply,
            &config,
            false,
            &writer,
            &mut |obj| Admission::quiet(&spec).admit(obj),
            &mut |_| {},
        );
        match result {
            Ok(_) => {}
            // Deleted meanwhile: nothing to aggregate into.
            Err(st) if st.code == 404 => {}
            Err(st) => log::warn!("embedded API server: aggregating ClusterRole {name:?}: {}", st.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(v: Value) -> ClusterRole {
        ClusterRole::from_json(&v)
    }

    // Cases of kube-controller-manager's TestSyncClusterRole (pkg/controller/clusterroleaggregation).
    #[test]
    fn aggregation_unions_matching_roles_by_name_each_rule_once() {
        let get_pods = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]});
        let list_pods = json!({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]});
        let all: BTreeMap<String, ClusterRole> = [
            role(json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"foo": "bar"}}, {"matchLabels": {"foo": "other"}}]},
                        "rules": []})),
            role(json!({"metadata": {"name": "b", "labels": {"foo": "bar"}}, "rules": [list_pods, get_pods]})),
            role(json!({"metadata": {"name": "a", "labels": {"foo": "bar"}}, "rules": [get_pods]})),
            role(json!({"metadata": {"name": "c", "labels": {"foo": "other"}}, "rules": [get_pods]})),
            role(json!({"metadata": {"name": "d", "labels": {"foo": "none"}}, "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]})),
        ]
        .into_iter()
        .map(|r| (r.name.clone(), r))
        .collect();
        let rules = aggregated_rules(&all["agg"], &all).unwrap();
        assert_eq!(
            rules,
            [PolicyRule::from_json(&get_pods), PolicyRule::from_json(&list_pods)]
        );
        assert_eq!(aggregated_rules(&all["a"], &all), None, "no aggregation rule");
        let selfish = role(json!({"metadata": {"name": "s", "labels": {"foo": "bar"}},
                                  "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"foo": "bar"}}]}}));
        let mut with_self = all.clone();
        with_self.insert("s".into(), selfish.clone());
        assert_eq!(
            aggregated_rules(&selfish, &with_self).unwrap().len(),
            2,
            "a role never aggregates itself"
        );
    }
}
