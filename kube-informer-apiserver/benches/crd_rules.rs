//! The cost of a custom resource write with `x-kubernetes-validations`: creates and updates through HTTP of a
//! custom resource whose schema has ten CEL rules (one a transition rule), against the same schema without rules.
//!
//! Run: `cargo bench --bench crd_rules` (prints a table; `harness = false`).

use std::time::Instant;

use kube_informer_apiserver::ApiServer;
use serde_json::json;

const WRITES: usize = 2_000;

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

/// Microseconds per write (median of five rounds): creates, then updates of the objects created.
fn run(server: &ApiServer, plural: &str, kind: &str) -> (f64, f64) {
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().proxy(None).build());
    let base = format!("{}/apis/bench.example.com/v1/namespaces/default/{plural}", server.url());
    let mut creates = Vec::new();
    let mut updates = Vec::new();
    for round in 0..5 {
        let start = Instant::now();
        for i in 0..WRITES / 5 {
            let body = object(kind, &format!("o{round}-{i}"), i);
            agent
                .post(&base)
                .header("Content-Type", "application/json")
                .send(&body)
                .unwrap();
        }
        creates.push(start.elapsed().as_secs_f64() * 1e6 / (WRITES / 5) as f64);
        let start = Instant::now();
        for i in 0..WRITES / 5 {
            let body = object(kind, &format!("o{round}-{i}"), i + 1);
            agent
                .put(&format!("{base}/o{round}-{i}"))
                .header("Content-Type", "application/json")
                .send(&body)
                .unwrap();
        }
        updates.push(start.elapsed().as_secs_f64() * 1e6 / (WRITES / 5) as f64);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    (median(creates), median(updates))
}

fn main() {
    let server = ApiServer::start().unwrap();
    server.install_crd(&crd("plains", false)).unwrap();
    server.install_crd(&crd("ruleds", true)).unwrap();
    // Warm both paths (the rules are compiled at the first write of their schema).
    run(&server, "plains", "Plain");
    run(&server, "ruleds", "Ruled");
    let plain = run(&server, "plains", "Plain");
    let ruled = run(&server, "ruleds", "Ruled");
    println!(
        "custom resource write through HTTP, µs per write (median of 5 rounds of {} writes)",
        WRITES / 5
    );
    println!("{:<28} {:>10} {:>10}", "", "create", "update");
    println!("{:<28} {:>10.1} {:>10.1}", "schema, no rules", plain.0, plain.1);
    println!("{:<28} {:>10.1} {:>10.1}", "schema + 10 CEL rules", ruled.0, ruled.1);
    println!(
        "{:<28} {:>10.1} {:>10.1}",
        "cost of the rules",
        ruled.0 - plain.0,
        ruled.1 - plain.1
    );
}
