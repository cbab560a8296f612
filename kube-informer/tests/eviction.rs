//! Eviction against a scripted peer sending kube-apiserver's bytes (pkg/registry/core/pod/storage/eviction.go and the
//! create handler: 201 with a `Success` Status; 429 with a `DisruptionBudget` cause when a PodDisruptionBudget
//! refuses, `Retry-After: 10` while the budget is being processed; 404 for a missing pod), beside priority and
//! fairness's own 429.

use std::time::Duration;

use kube_informer::Error;
use kube_informer::client::params::{DeleteParams, Preconditions};
use kube_informer::client::{Api, Client, Config, EvictionOutcome};
use kube_informer::object::core::{ConfigMap, Pod};

mod common;
use common::peer::{Peer, response};

fn answer(status: &str, extra: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut headers = vec![
        ("Audit-Id", "3c6f0b1e-8d2a-4c47-9a1b-7e0d5f2c8b11"),
        ("Cache-Control", "no-cache, private"),
        ("Content-Type", "application/json"),
    ];
    headers.extend_from_slice(extra);
    response(status, &headers, format!("{body}\n").as_bytes())
}

const EVICTED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}"#;

const BUDGET_EXHAUSTED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web-pdb needs 2 healthy pods and has 2 currently"}]},"code":429}"#;

const BUDGET_PROCESSING: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web-pdb is still being processed by the server."}],"retryAfterSeconds":10},"code":429}"#;

const THROTTLED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}"#;

const NOT_FOUND: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"web-9\" not found","reason":"NotFound","details":{"name":"web-9","kind":"pods"},"code":404}"#;

const TWO_BUDGETS: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.","code":500}"#;

fn pods(peer: &Peer) -> Api<Pod> {
    Api::namespaced(Client::new(Config::new(peer.url()).proxy(None)).unwrap(), "prod")
}

#[test]
fn an_eviction_posts_a_policy_v1_eviction_and_succeeds() {
    let peer = Peer::start(|_, _| answer("201 Created", &[], EVICTED));
    let dp = DeleteParams {
        grace_period_seconds: Some(30),
        preconditions: Some(Preconditions {
            uid: Some("8d2a".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(pods(&peer).evict("web-0", &dp).unwrap(), EvictionOutcome::Evicted);
    let request = &peer.requests()[0];
    assert_eq!(
        (request.method.as_str(), request.target.as_str()),
        ("POST", "/api/v1/namespaces/prod/pods/web-0/eviction")
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "web-0", "namespace": "prod"},
            "deleteOptions": {
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "gracePeriodSeconds": 30,
                "preconditions": {"uid": "8d2a"}
            }
        })
    );
}

#[test]
fn a_disruption_budget_refusal_is_an_outcome_and_throttling_an_error() {
    let peer = Peer::start(|_, n| match n {
        0 => answer("429 Too Many Requests", &[], BUDGET_EXHAUSTED),
        1 => answer("429 Too Many Requests", &[("Retry-After", "10")], BUDGET_PROCESSING),
        _ => answer(
            "429 Too Many Requests",
            &[
                ("Retry-After", "1"),
                ("X-Kubernetes-Pf-Flowschema-Uid", "7c1f"),
                ("X-Kubernetes-Pf-Prioritylevel-Uid", "9e2d"),
            ],
            THROTTLED,
        ),
    });
    let pods = pods(&peer);
    let EvictionOutcome::Blocked(blocked) = pods.evict("web-0", &DeleteParams::default()).unwrap() else {
        panic!("a budget refusal is Blocked")
    };
    assert_eq!(
        blocked.message,
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        blocked.causes,
        ["The disruption budget web-pdb needs 2 healthy pods and has 2 currently"]
    );
    assert_eq!((blocked.retry_after, blocked.status.code), (None, 429));

    let EvictionOutcome::Blocked(blocked) = pods.evict("web-0", &DeleteParams::default()).unwrap() else {
        panic!("a budget still being processed is Blocked")
    };
    assert_eq!(blocked.retry_after, Some(Duration::from_secs(10)));

    let e = pods.evict("web-0", &DeleteParams::default()).unwrap_err();
    assert!(e.is_too_many_requests(), "{e}");
    assert_eq!(e.retry_after(), Some(Duration::from_secs(1)));
}

#[test]
fn a_missing_pod_and_a_pod_under_two_budgets_are_errors() {
    let peer = Peer::start(|request, n| {
        if request.target.contains("/web-9/") {
            answer("404 Not Found", &[], NOT_FOUND)
        } else if n == 1 {
            answer("500 Internal Server Error", &[], TWO_BUDGETS)
        } else {
            // The same Status as the eviction's result rather than its error: the create handler's 201.
            answer("201 Created", &[], TWO_BUDGETS)
        }
    });
    let pods = pods(&peer);
    assert!(
        pods.evict("web-9", &DeleteParams::default())
            .unwrap_err()
            .is_not_found()
    );
    for _ in 0..2 {
        let e = pods.evict("web-0", &DeleteParams::default()).unwrap_err();
        assert_eq!(e.code(), Some(500), "{e}");
        assert!(e.to_string().contains("more than one PodDisruptionBudget"), "{e}");
    }
}

#[test]
fn only_pods_are_evicted() {
    let peer = Peer::start(|_, _| answer("201 Created", &[], EVICTED));
    let client = Client::new(Config::new(peer.url()).proxy(None)).unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "prod");
    assert!(matches!(
        cms.evict("x", &DeleteParams::default()),
        Err(Error::InvalidInput(m)) if m.contains("pods only")
    ));
    let everywhere: Api<Pod> = Api::all(client);
    assert!(matches!(
        everywhere.evict("web-0", &DeleteParams::default()),
        Err(Error::InvalidInput(_))
    ));
    assert!(peer.requests().is_empty());
}
