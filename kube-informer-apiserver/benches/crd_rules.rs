//! The cost of a custom resource write with `x-kubernetes-validations`: creates and updates through HTTP of a
//! custom resource whose schema has ten CEL rules (one a transition rule), against the same schema without rules.
//!
//! Run: `cargo bench -p kube-informer-apiserver --bench crd_rules` (prints a table; `harness = false`). On the 2-core
//! development machine, shared and loaded (load average ~10), 2026-11-27: fastest of 10 rounds of 400 writes, a
//! create 260 µs without rules and 300 µs with the ten, an update 253 µs and 373 µs (medians 693/1245 and 1135/1319
//! µs: the load dominates them).

use std::time::Instant;

use kube_informer_apiserver::ApiServer;
use serde_json::json;

const WRITES: usize = 4_000;
const ROUNDS: usize = 10;

const RULES: [&str; 10] = [
    "self.replicas <= self.maxReplicas",
    "self.replicas >= 0",
    "self.name.size() <= 20",
    "self.name.matches('^[a-z][a-z0-9-]*$')",
    "self.tags.all(t, t.lowerAscii() == t)",
    "self.tags.size() <= 5",
    "!has(self.mode) || self.mode in ['fast', 'slow']",
    "self.ports.all(p, p > 0 && p < 65536)",
    "isQuantity(self.memory) && quantity(self.memory).isLessThan(quantity('4Gi'))",
    "self.name == oldSelf.name",
];

fn crd(plural: &str, rules: bool) -> String {
    let validations: Vec<serde_json::Value> = if rules {
        RULES.iter().map(|r| json!({"rule": r})).collect()
    } else {
        Vec::new()
    };
    let mut spec = json!({"type": "object", "properties": {
        "replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
        "name": {"type": "string", "maxLength": 20}, "mode": {"type": "string", "maxLength": 10},
        "memory": {"type": "string", "maxLength": 10},
        "tags": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 10}},
        "ports": {"type": "array", "maxItems": 5, "items": {"type": "integer"}}}});
    if rules {
        spec["x-kubernetes-validations"] = json!(validations);
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.bench.example.com")},
        "spec": {"group": "bench.example.com", "scope": "Namespaced",
                 "names": {"plural": plural, "kind": if rules { "Ruled" } else { "Plain" }},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}})
    .to_string()
}

fn object(kind: &str, name: &str, replicas: usize) -> String {
    json!({"apiVersion": "bench.example.com/v1", "kind": kind, "metadata": {"name": name},
           "spec": {"replicas": replicas % 3, "maxReplicas": 3, "name": "web", "mode": "fast", "memory": "1Gi",
                    "tags": ["a", "b", "c"], "ports": [80, 443]}})
    .to_string()
}

/// Microseconds per write of one round: creates of `WRITES / ROUNDS` objects, then their updates.
fn round(agent: &ureq::Agent, base: &str, kind: &str, tag: &str) -> (f64, f64) {
    let n = WRITES / ROUNDS;
    let start = Instant::now();
    for i in 0..n {
        let body = object(kind, &format!("{tag}-{i}"), i);
        agent
            .post(base)
            .header("Content-Type", "application/json")
            .send(&body)
            .unwrap();
    }
    let create = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    let start = Instant::now();
    for i in 0..n {
        let body = object(kind, &format!("{tag}-{i}"), i + 1);
        agent
            .put(&format!("{base}/{tag}-{i}"))
            .header("Content-Type", "application/json")
            .send(&body)
            .unwrap();
    }
    (create, start.elapsed().as_secs_f64() * 1e6 / n as f64)
}

fn main() {
    let server = ApiServer::start().unwrap();
    server.install_crd(&crd("plains", false)).unwrap();
    server.install_crd(&crd("ruleds", true)).unwrap();
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().proxy(None).build());
    let base = |plural: &str| format!("{}/apis/bench.example.com/v1/namespaces/default/{plural}", server.url());
    let (plain_url, ruled_url) = (base("plains"), base("ruleds"));
    // Warm both paths (the rules are compiled at the first write of their schema).
    round(&agent, &plain_url, "Plain", "warm");
    round(&agent, &ruled_url, "Ruled", "warm");
    // Rounds alternate, so that a busy machine slows both alike; the fastest round of each is reported (the least
    // disturbed), with the median.
    let (mut plain, mut ruled) = (Vec::new(), Vec::new());
    for r in 0..ROUNDS {
        plain.push(round(&agent, &plain_url, "Plain", &format!("o{r}")));
        ruled.push(round(&agent, &ruled_url, "Ruled", &format!("o{r}")));
    }
    let stat = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| {
        let mut x: Vec<f64> = v.iter().map(f).collect();
        x.sort_by(|a, b| a.total_cmp(b));
        (x[0], x[x.len() / 2])
    };
    let (pc, pu) = (stat(&plain, |r| r.0), stat(&plain, |r| r.1));
    let (rc, ru) = (stat(&ruled, |r| r.0), stat(&ruled, |r| r.1));
    println!(
        "custom resource write through HTTP, µs per write: fastest (median) of {ROUNDS} rounds of {} writes",
        WRITES / ROUNDS
    );
    println!("{:<24} {:>18} {:>18}", "", "create", "update");
    println!(
        "{:<24} {:>8.1} ({:>7.1}) {:>8.1} ({:>7.1})",
        "schema, no rules", pc.0, pc.1, pu.0, pu.1
    );
    println!(
        "{:<24} {:>8.1} ({:>7.1}) {:>8.1} ({:>7.1})",
        "schema + 10 CEL rules", rc.0, rc.1, ru.0, ru.1
    );
    println!(
        "{:<24} {:>8.1} ({:>7.1}) {:>8.1} ({:>7.1})",
        "cost of the rules",
        rc.0 - pc.0,
        rc.1 - pc.1,
        ru.0 - pu.0,
        ru.1 - pu.1
    );
}
