//! The controller runner against the embedded API server: convergence, retries, panics, shutdown.
//!
//! The controller under test copies every ConfigMap labelled `role=source` to `<name>-copy` in the same namespace,
//! owned by the source (a controller owner reference), and deletes the copy when the source goes (the embedded
//! server has no garbage collector: the deleted primary's reconcile does it).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use kube_informer::cache::ListWatch;
use kube_informer::client::params::{DeleteParams, PostParams};
use kube_informer::client::{Api, Client, Config};
use kube_informer::controller::{Action, Context, Controller, ControllerOptions};
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, OwnerReference};
use kube_informer::workqueue::ItemExponentialFailureRateLimiter;
use kube_informer::{Error, Result};
use kube_informer_apiserver::{ApiServer, Verb};

mod common;
use common::{eventually, example};

fn client(server: &ApiServer) -> Client {
    Client::new(Config::new(server.url()).proxy(None)).unwrap()
}

fn informer(client: &Client, labels: &str, name: &str) -> Arc<SharedIndexInformer<ConfigMap>> {
    let api: Api<ConfigMap> = Api::all(client.clone());
    Arc::new(SharedIndexInformer::new(
        ListWatch::new(&api).labels(labels),
        InformerOptions::default().name(name),
    ))
}

fn source(ns: &str, name: &str, value: &str) -> ConfigMap {
    let mut meta = ObjectMeta::namespaced(ns, name);
    meta.labels.insert("role".into(), "source".into());
    ConfigMap::new(meta).with("value", value)
}

/// Fast retries, so that tests of failures do not wait for the default back-off.
fn fast(name: &str) -> ControllerOptions {
    ControllerOptions::default()
        .name(name)
        .workers(2)
        .rate_limiter(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_millis(200),
        ))
}

/// The copy controller's reconcile: make `<name>-copy` match the source, or delete it when the source is gone.
fn copy(_key: &str, ctx: &Context<'_, ConfigMap, Client>) -> Result<Action> {
    let ns = ctx.namespace();
    let api: Api<ConfigMap> = Api::namespaced(ctx.data().clone(), ns);
    let copy_name = format!("{}-copy", ctx.name());
    let copies = ctx.lister_of::<ConfigMap>().expect("the copies' lister");
    let existing = copies.namespace(ns).get(&copy_name);
    let Some(src) = ctx.object() else {
        if existing.is_some() {
            match api.delete(&copy_name, &DeleteParams::default()) {
                Err(e) if !e.is_not_found() => return Err(e),
                _ => {}
            }
        }
        return Ok(Action::await_change());
    };
    let mut meta = ObjectMeta::namespaced(ns, &copy_name);
    meta.labels.insert("role".into(), "copy".into());
    meta.owner_references.push(OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: ctx.name().into(),
        uid: src.metadata.uid.as_deref().unwrap_or_default().into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    });
    let mut desired = ConfigMap::new(meta);
    desired.data = src.data.clone();
    match existing {
        None => match api.create(&PostParams::default(), &desired) {
            Err(e) if !e.is_already_exists() => return Err(e),
            _ => {}
        },
        Some(cur) if cur.data != desired.data || cur.metadata.owner_references != desired.metadata.owner_references => {
            desired.metadata.resource_version = cur.metadata.resource_version.clone();
            api.replace(&copy_name, &PostParams::default(), &desired)?;
        }
        Some(_) => {}
    }
    Ok(Action::await_change())
}

/// Copies as the server holds them: namespace/name → value.
fn copies(server: &ApiServer) -> BTreeMap<String, String> {
    server
        .list::<ConfigMap>(None)
        .unwrap()
        .into_iter()
        .filter(|cm| cm.metadata.labels.get("role").is_some_and(|r| r == "copy"))
        .map(|cm| {
            (
                format!("{}/{}", cm.metadata.namespace.unwrap(), cm.metadata.name.unwrap()),
                cm.data.get("value").map(str::to_owned).unwrap_or_default(),
            )
        })
        .collect()
}

fn expect(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn the_controller_converges_the_servers_state_and_keeps_it_converged() {
    let server = ApiServer::builder().namespaces(["a", "b", "ns"]).start().unwrap();
    server.create(&source("a", "one", "1")).unwrap();
    server.create(&source("a", "two", "2")).unwrap();
    server.create(&source("b", "one", "3")).unwrap();
    let c = client(&server);
    let sources = informer(&c, "role=source", "sources");
    let copies_inf = informer(&c, "role=copy", "copies");
    let controller = Controller::builder(sources.clone(), c.clone())
        .options(fast("copier"))
        .owns(copies_inf.clone())
        .build(copy)
        .unwrap();
    controller.start().unwrap();
    let want = expect(&[("a/one-copy", "1"), ("a/two-copy", "2"), ("b/one-copy", "3")]);
    eventually("the copies", || copies(&server) == want);

    // A changed source is copied again.
    server.replace(&source("a", "one", "1b")).unwrap();
    eventually("the update copied", || {
        copies(&server).get("a/one-copy").map(String::as_str) == Some("1b")
    });

    // A copy edited by someone else is corrected; a deleted copy is recreated (through the owner mapping).
    let mut drifted: ConfigMap = server.get(Some("a"), "two-copy").unwrap();
    drifted.data.insert("value".into(), "tampered".into());
    server.replace(&drifted).unwrap();
    server.delete::<ConfigMap>(Some("b"), "one-copy").unwrap();
    let want = expect(&[("a/one-copy", "1b"), ("a/two-copy", "2"), ("b/one-copy", "3")]);
    eventually("the drift corrected and the copy recreated", || copies(&server) == want);

    // A deleted source still gets a reconcile: its copy goes.
    server.delete::<ConfigMap>(Some("a"), "two").unwrap();
    let want = expect(&[("a/one-copy", "1b"), ("b/one-copy", "3")]);
    eventually("the orphaned copy deleted", || copies(&server) == want);

    // Errors may happen (a write conflicting with a cache that lags behind it is retried); panics may not.
    let m = controller.metrics();
    assert_eq!(m.panics, 0, "{m:?}");
    assert!(
        m.reconciles >= 3 && m.queue.as_ref().is_some_and(|q| q.adds > 0),
        "{m:?}"
    );
    controller.stop();
    sources.stop();
    copies_inf.stop();
    assert_eq!(controller.running_workers(), 0);
    assert_eq!(sources.running_threads() + copies_inf.running_threads(), 0);
}

#[test]
fn a_reconcile_failing_twice_is_retried_with_back_off_and_succeeds() {
    let server = ApiServer::builder().namespaces(["a", "b", "ns"]).start().unwrap();
    server.create(&source("ns", "flaky", "v")).unwrap();
    let c = client(&server);
    let sources = informer(&c, "role=source", "sources");
    let copies_inf = informer(&c, "role=copy", "copies");
    // Each attempt's outcome and the failures it was told of, in order.
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let seen = attempts.clone();
    let controller = Controller::builder(sources.clone(), c.clone())
        .options(fast("flaky"))
        .owns(copies_inf.clone())
        .build(move |key: &str, ctx: &Context<'_, ConfigMap, Client>| {
            let mut seen = seen.lock();
            if seen.len() < 2 {
                seen.push((false, ctx.retries()));
                return Err(Error::InvalidInput(format!("{key}: not yet")));
            }
            seen.push((true, ctx.retries()));
            drop(seen);
            copy(key, ctx)
        })
        .unwrap();
    let mark = server.requests().mark();
    controller.start().unwrap();
    eventually("the copy", || copies(&server).contains_key("ns/flaky-copy"));
    // Later reconciles (the copy's creation maps back to its owner) may follow; the first three tell the story.
    assert_eq!(
        attempts.lock()[..3],
        [(false, 0), (false, 1), (true, 2)],
        "two failures, each retried, then the success"
    );
    let m = controller.metrics();
    assert_eq!(m.errors, 2);
    assert_eq!(
        m.queue.unwrap().retries,
        2,
        "each failure scheduled one rate-limited retry"
    );
    assert_eq!(server.requests().count_since(mark, Verb::Create, "configmaps"), 1);
    controller.stop();
}

#[test]
fn a_panicking_reconcile_is_retried_and_the_worker_survives() {
    let server = ApiServer::builder().namespaces(["a", "b", "ns"]).start().unwrap();
    server.create(&source("ns", "boom", "v")).unwrap();
    let c = client(&server);
    let sources = informer(&c, "role=source", "sources");
    let copies_inf = informer(&c, "role=copy", "copies");
    let attempts = Arc::new(AtomicU32::new(0));
    let counted = attempts.clone();
    let controller = Controller::builder(sources.clone(), c.clone())
        .options(fast("panicky").workers(1))
        .owns(copies_inf.clone())
        .build(move |key: &str, ctx: &Context<'_, ConfigMap, Client>| {
            if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("a bug in the reconcile");
            }
            copy(key, ctx)
        })
        .unwrap();
    controller.start().unwrap();
    eventually("the copy after the panic", || {
        copies(&server).contains_key("ns/boom-copy")
    });
    assert_eq!(controller.metrics().panics, 1);
    assert_eq!(controller.running_workers(), 1);
    controller.stop();
}

#[test]
fn stop_returns_with_every_thread_joined() {
    let server = ApiServer::builder().namespaces(["a", "b", "ns"]).start().unwrap();
    for i in 0..20 {
        server.create(&source("ns", &format!("s{i}"), "v")).unwrap();
    }
    let c = client(&server);
    let sources = informer(&c, "role=source", "sources");
    let copies_inf = informer(&c, "role=copy", "copies");
    let controller = Controller::builder(sources.clone(), c.clone())
        .options(fast("stopper").workers(4))
        .owns(copies_inf.clone())
        .build(copy)
        .unwrap();
    controller.start().unwrap();
    eventually("some copies", || !copies(&server).is_empty());
    // Stop while work is in flight.
    controller.stop();
    assert_eq!(controller.running_workers(), 0);
    assert!(!controller.is_running());
    assert!(matches!(controller.start(), Err(Error::Stopped)));
    let handlers = sources.metrics().handlers.len() + copies_inf.metrics().handlers.len();
    assert_eq!(handlers, 0, "the controller's handlers were removed");
    sources.stop();
    copies_inf.stop();
    assert_eq!(sources.running_threads() + copies_inf.running_threads(), 0);
}

#[test]
fn the_example_controller_converges_its_embedded_server_and_exits_0() {
    for args in [&[][..], &["--leader-elect"][..]] {
        let out = std::process::Command::new(example("controller"))
            .args(args)
            .output()
            .expect("the controller example is built by cargo test");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in [
            "[team-a] created ConfigMap shared-settings",
            "[team-c] ConfigMap shared-settings exists and is not ours: left alone",
            "[team-a] corrected ConfigMap shared-settings (edited by someone else)",
            "[sandbox] created ConfigMap shared-settings",
            "[team-b] label removed: deleted ConfigMap shared-settings",
            "Normal  Created    team-b   x2 created ConfigMap shared-settings",
            "Warning NotManaged team-c",
        ] {
            assert!(stdout.contains(line), "{args:?}: missing {line:?} in\n{stdout}");
        }
        let log = String::from_utf8_lossy(&out.stderr);
        if args.is_empty() {
            assert!(stdout.ends_with("stopped cleanly (stop requested)\n"), "{stdout}");
        } else {
            assert!(log.contains("manager: leading; starting the controllers"), "{log}");
            assert!(
                stdout.ends_with("stopped cleanly (stop requested); lease default/configmap-sync released\n"),
                "{stdout}"
            );
        }
    }
}
