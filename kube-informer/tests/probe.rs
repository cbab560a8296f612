//! The registry, the Prometheus exposition and the probe endpoint, against the embedded API server: the metrics
//! text is read back by a Prometheus text-format parser we did not write, the probes over real HTTP.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::*;
use kube_informer::Result;
use kube_informer::client::Api;
use kube_informer::controller::{Action, Context, Controller, ControllerOptions};
use kube_informer::events::{ApiEventSink, EventRecorder, RecorderOptions};
use kube_informer::health::Health;
use kube_informer::informer::{FactoryOptions, InformerOptions, SharedIndexInformer, SharedInformerFactory};
use kube_informer::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ApiResource, DynamicObject};
use kube_informer::probe::ProbeServer;
use kube_informer::registry::Registry;
use kube_informer_apiserver::ApiServer;
use prometheus_parse::{Sample, Scrape, Value};

fn parse(text: &str) -> Scrape {
    Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("the exposition parses")
}

/// The samples of `metric` whose labels include every one of `labels`.
fn series<'a>(scrape: &'a Scrape, metric: &str, labels: &[(&str, &str)]) -> Vec<&'a Sample> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect()
}

fn one<'a>(scrape: &'a Scrape, metric: &str, labels: &[(&str, &str)]) -> &'a Value {
    let found = series(scrape, metric, labels);
    assert_eq!(found.len(), 1, "{metric}{labels:?} in {:#?}", scrape.samples);
    &found[0].value
}

fn number(v: &Value) -> f64 {
    match v {
        Value::Counter(n) | Value::Gauge(n) | Value::Untyped(n) => *n,
        other => panic!("not a number: {other:?}"),
    }
}

fn reconcile(_key: &str, _ctx: &Context<'_, ConfigMap, ()>) -> Result<Action> {
    Ok(Action::await_change())
}

#[test]
fn every_component_is_exported_under_client_go_and_controller_runtime_names() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    server.create(&cm("ns", "a", "1")).unwrap();
    // A rate limit far above what the test sends: its waits are exported too.
    let limit = kube_informer::client::RateLimit::new(10_000.0, 10_000);
    let client = kube_informer::client::Client::new(server.config().unwrap().rate_limit(limit)).unwrap();
    let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default());
    let configmaps = factory.informer::<ConfigMap>();
    let controller = Arc::new(
        Controller::builder(configmaps.clone(), ())
            .options(ControllerOptions::default().name("cm-controller"))
            .build(reconcile)
            .unwrap(),
    );
    let recorder = EventRecorder::new(ApiEventSink::new(client.clone()), RecorderOptions::new("tester")).unwrap();
    let elector = LeaderElector::start(
        LeaseLock::new(&client, "default", "tester", "me"),
        LeaderElectionConfig::default(),
        LeaderCallbacks::new(),
    )
    .unwrap();
    let registry = Registry::new();
    registry
        .add_factory(&factory)
        .add_controller(&controller)
        .add_leader_elector(&elector)
        .add_event_recorder(&recorder)
        .add_informer(&configmaps); // already there through the factory: reported once

    factory.start().unwrap();
    controller.start().unwrap();
    eventually("a reconcile", || controller.metrics().reconciles >= 1);
    eventually("leading", || elector.is_leader());
    let cm = server.get::<ConfigMap>(Some("ns"), "a").unwrap();
    recorder.normal(&cm, "Tested", "a test event");
    assert!(recorder.flush(WAIT));

    let text = kube_informer::metrics::encode(&registry);
    let scrape = parse(&text);
    let name = [("name", "cm-controller")];
    assert_eq!(number(one(&scrape, "workqueue_depth", &name)), 0.0);
    assert!(number(one(&scrape, "workqueue_adds_total", &name)) >= 1.0);
    assert!(number(one(&scrape, "workqueue_retries_total", &name)) >= 0.0);
    assert!(number(one(&scrape, "workqueue_unfinished_work_seconds", &name)) >= 0.0);
    assert!(number(one(&scrape, "workqueue_longest_running_processor_seconds", &name)) >= 0.0);
    for histogram in ["workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"] {
        let Value::Histogram(buckets) = one(&scrape, histogram, &name) else {
            panic!("{histogram} is not a histogram")
        };
        assert_eq!(buckets.len(), 13, "client-go's 12 buckets and +Inf");
        assert!(buckets.last().unwrap().count >= 1.0, "{histogram}: {buckets:?}");
    }
    let controller_label = [("controller", "cm-controller"), ("result", "success")];
    assert!(number(one(&scrape, "controller_runtime_reconcile_total", &controller_label)) >= 1.0);
    assert_eq!(
        number(one(
            &scrape,
            "controller_runtime_reconcile_errors_total",
            &[("controller", "cm-controller")]
        )),
        0.0
    );

    assert_eq!(
        number(one(
            &scrape,
            "kube_informer_controller_filtered_total",
            &[("controller", "cm-controller")]
        )),
        controller.metrics().filtered as f64
    );

    let host = server
        .url()
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .to_owned();
    let get_ok = [("code", "200"), ("method", "GET"), ("host", host.as_str())];
    assert!(
        number(one(&scrape, "rest_client_requests_total", &get_ok)) >= 1.0,
        "{text}"
    );
    let created = [("code", "201"), ("method", "POST"), ("host", host.as_str())];
    assert!(
        number(one(&scrape, "rest_client_requests_total", &created)) >= 1.0,
        "the event and the lease"
    );
    let Value::Histogram(latency) = one(&scrape, "rest_client_request_duration_seconds", &[("verb", "GET")]) else {
        panic!("not a histogram")
    };
    assert_eq!(latency.len(), 13);
    let Value::Histogram(waits) = one(
        &scrape,
        "rest_client_rate_limiter_duration_seconds",
        &[("verb", "GET"), ("host", host.as_str())],
    ) else {
        panic!("not a histogram")
    };
    assert_eq!(waits.len(), 13, "client-go's 12 buckets and +Inf");
    assert!(waits.last().unwrap().count >= 1.0, "{waits:?}");

    assert_eq!(
        number(one(
            &scrape,
            "leader_election_master_status",
            &[("name", "default/tester")]
        )),
        1.0
    );
    let informer = [("name", "configmaps")];
    assert!(number(one(&scrape, "reflector_lists_total", &informer)) >= 1.0);
    assert!(number(one(&scrape, "reflector_watches_total", &informer)) >= 1.0);
    assert_eq!(number(one(&scrape, "kube_informer_informer_synced", &informer)), 1.0);
    assert_eq!(
        number(one(&scrape, "kube_informer_informer_store_objects", &informer)),
        1.0
    );
    assert_eq!(
        series(&scrape, "kube_informer_reflector_relists_total", &informer).len(),
        3,
        "one series per cause"
    );
    assert_eq!(
        number(one(
            &scrape,
            "kube_informer_events_total",
            &[("component", "tester"), ("result", "created")]
        )),
        1.0
    );
    for check in [
        "informer:configmaps",
        "controller:cm-controller",
        "leader-election:default/tester",
        "events:tester",
    ] {
        assert_eq!(
            number(one(
                &scrape,
                "kube_informer_health",
                &[("check", check), ("state", "healthy")]
            )),
            1.0,
            "{check}"
        );
    }

    let report = registry.report();
    assert!(report.is_live() && report.is_ready(), "{report:?}");
    assert_eq!(report.checks.len(), 4, "the informer once: {report:?}");
    let leading = report
        .checks
        .iter()
        .find(|c| c.name.starts_with("leader-election:"))
        .unwrap();
    assert_eq!(leading.detail.as_deref(), Some("leading"));

    elector.stop();
    controller.stop();
    recorder.stop();
    let stopped = registry.report();
    assert!(!stopped.is_live(), "stopped components are halted: {stopped:?}");
    assert_eq!(
        controller.health(),
        Health::Halted {
            reason: "stopped".into()
        }
    );
    assert_eq!(
        elector.health(),
        Health::Halted {
            reason: "stopped".into()
        }
    );
    assert_eq!(
        recorder.health(),
        Health::Halted {
            reason: "stopped".into()
        }
    );
    factory.shutdown();

    drop((controller, elector, recorder, configmaps));
    drop(factory);
    let report = registry.report();
    assert!(report.checks.is_empty(), "dropped components are forgotten: {report:?}");
}

/// A GET over a real TCP connection: the status, the content type and the body.
fn get(addr: std::net::SocketAddr, path: &str) -> std::result::Result<(u16, String, String), ureq::Error> {
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().http_status_as_error(false).build());
    let mut response = agent.get(&format!("http://{addr}{path}")).call()?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.body_mut().read_to_string()?;
    Ok((status, content_type, body))
}

#[test]
fn the_probe_endpoint_answers_over_http_and_says_why_it_is_not_ready() {
    let server = server_allowing_only_configmaps();
    let factory = SharedInformerFactory::new(
        server.client().unwrap(),
        FactoryOptions::default().reflector(quick_reflector()),
    );
    let configmaps = factory.informer::<ConfigMap>();
    let secrets = factory.informer_for::<DynamicObject>(&ApiResource::new("", "v1", "Secret", "secrets", true));
    let registry = Registry::new();
    registry.add_factory(&factory);
    let probe = ProbeServer::start("127.0.0.1:0", registry).unwrap();
    let addr = probe.local_addr();

    let (status, _, body) = get(addr, "/readyz").unwrap();
    assert_eq!(
        (status, body.contains("not synced")),
        (503, true),
        "before the start: {body}"
    );

    factory.start().unwrap();
    configmaps.wait_for_cache_sync(WAIT).unwrap();
    eventually("secrets degraded", || {
        matches!(secrets.health().state, Health::Degraded { .. })
    });
    let (status, _, body) = get(addr, "/readyz").unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("[+]informer:configmaps ok\n")
            && body.contains("[-]informer:secrets failed: degraded for ")
            && body.contains("403 Forbidden")
            && body.contains(r#"the credentials lack the RBAC verb "list" on this resource"#)
            && body.ends_with("readyz check failed\n"),
        "{body}"
    );
    assert_eq!(get(addr, "/readyz/informer:configmaps").unwrap().0, 200, "one check");
    assert_eq!(get(addr, "/healthz").unwrap().0, 200, "degraded is alive");
    assert_eq!(get(addr, "/nothing-here").unwrap().0, 404);

    let (status, content_type, text) = get(addr, "/metrics").unwrap();
    assert_eq!(
        (status, content_type.as_str()),
        (200, kube_informer::metrics::CONTENT_TYPE)
    );
    let scrape = parse(&text);
    let forbidden = series(
        &scrape,
        "rest_client_requests_total",
        &[("code", "403"), ("method", "GET")],
    );
    assert!(
        forbidden.iter().any(|s| number(&s.value) >= 1.0),
        "the refused lists are counted: {text}"
    );
    assert_eq!(
        number(one(
            &scrape,
            "kube_informer_health",
            &[("check", "informer:secrets"), ("state", "degraded")]
        )),
        1.0
    );

    secrets.stop();
    let (status, _, body) = get(addr, "/healthz").unwrap();
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("[-]informer:secrets failed: halted: stopped (not synced)\n"),
        "{body}"
    );

    probe.stop();
    assert_eq!(probe.running_threads(), 0, "the serving thread is joined");
    probe.stop(); // idempotent
    factory.shutdown();
}

#[test]
fn a_halted_informer_fails_liveness_with_its_panic() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    server.create(&cm("ns", "fine", "1")).unwrap();
    let informer = SharedIndexInformer::for_api(
        &Api::<ConfigMap>::all(server.client().unwrap()),
        InformerOptions::default()
            .name("fragile")
            .transform(|cm: &mut ConfigMap| {
                assert!(cm.metadata.name.as_deref() != Some("boom"), "cannot transform boom");
            }),
    );
    let registry = Registry::new();
    registry.add_informer(&informer);
    let probe = ProbeServer::start("127.0.0.1:0", registry.clone()).unwrap();
    informer.start().unwrap();
    informer.wait_for_cache_sync(WAIT).unwrap();
    assert_eq!(get(probe.local_addr(), "/healthz").unwrap().0, 200);
    assert_eq!(get(probe.local_addr(), "/readyz").unwrap().0, 200);

    server.create(&cm("ns", "boom", "1")).unwrap();
    eventually("halted", || informer.health().state.is_halted());
    let (status, _, body) = get(probe.local_addr(), "/healthz?verbose").unwrap();
    assert_eq!(status, 500);
    assert!(
        body.starts_with("[-]informer:fragile failed: halted: the reflector thread panicked: ")
            && body.contains("cannot transform boom"),
        "{body}"
    );
    let metrics: HashMap<String, f64> = parse(&kube_informer::metrics::encode(&registry))
        .samples
        .iter()
        .filter(|s| s.metric == "kube_informer_health")
        .map(|s| (s.labels.get("state").unwrap_or_default().to_owned(), number(&s.value)))
        .collect();
    assert_eq!(metrics["halted"], 1.0);
    assert_eq!(metrics["healthy"], 0.0);
    drop(probe);
    informer.stop();
}
