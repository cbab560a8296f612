//! configmap-sync: keeps a ConfigMap in every namespace that carries a label.
//!
//! For each Namespace labelled `configmap-sync=enabled` (`--selector`), the controller keeps a ConfigMap named
//! `shared-settings` (`--name`) holding the given data (`--data KEY=VALUE`, repeatable):
//!
//! * created when missing — and re-created if someone deletes it;
//! * corrected if someone edits its data;
//! * owned by the Namespace (a controller owner reference), so the cluster's garbage collector deletes it with the
//!   namespace; deleted by the controller when the label goes;
//! * left alone, with a Warning event, when a ConfigMap of that name exists that the controller does not own;
//! * its status written back to the Namespace as an annotation (`configmap-sync.kube-informer.io/synced`: the
//!   resourceVersion of the ConfigMap it verified), and every action recorded as an Event on the Namespace.
//!
//! It watches Namespaces (the primary objects) and the ConfigMaps of that name in every namespace (a field selector
//! keeps the cache small), mapped to their owning Namespace.
//!
//! It runs under a [`Manager`]: `main` builds the parts, `run` blocks until SIGTERM or Ctrl-C, then stops the
//! controller taking work, lets the reconciles in flight finish, releases the Lease (`--leader-elect`: another
//! replica leads at once), stops the informers and exits 0 when everything stopped cleanly.
//!
//! ```text
//! cargo run --example controller                      # embedded API server: seeds objects, runs, prints, exits
//! cargo run --example controller -- --kubeconfig ~/.kube/config [--context NAME] [--leader-elect]
//! cargo run --example controller -- --probe-addr 127.0.0.1:8081   # also serve /metrics, /healthz, /readyz
//! ```
//!
//! Against a real cluster it runs until SIGTERM or Ctrl-C and needs RBAC to list/watch namespaces and configmaps,
//! create/update/delete configmaps, patch namespaces, create/patch events and, with `--leader-elect`,
//! get/create/update leases in `--lease-namespace`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::cache::ListWatch;
use kube_informer::client::params::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube_informer::client::{Api, Client};
use kube_informer::controller::{Action, Context, Controller, ControllerOptions};
use kube_informer::events::{ApiEventSink, Event, EventRecorder, RecorderOptions};
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::manager::{Manager, ManagerOptions, ShutdownReport};
use kube_informer::object::core::{ConfigMap, Namespace};
use kube_informer::object::{MetaAccessor, ObjectMeta, is_controlled_by, set_controller_reference};
use kube_informer::selector::Selector;
use kube_informer::{Error, Result};
use kube_informer_apiserver::ApiServer;
use serde_json::json;

#[path = "support/mod.rs"]
#[allow(dead_code)] // its stdin wait is the configset example's: this one stops on signals
mod support;
const NAME: &str = "configmap-sync";
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
const SYNCED: &str = "configmap-sync.kube-informer.io/synced";

/// Command-line settings.
struct Args {
    kubeconfig: Option<String>,
    context: Option<String>,
    selector: String,
    name: String,
    data: BTreeMap<String, String>,
    leader_elect: bool,
    lease_namespace: String,
    workers: usize,
    /// Where to serve `/metrics`, `/healthz` and `/readyz` (none: not served).
    probe_addr: Option<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: controller [--kubeconfig FILE] [--context NAME] [--selector LABELS] [--name CONFIGMAP]\n\
         \x20                 [--data KEY=VALUE]... [--leader-elect] [--lease-namespace NS] [--workers N]\n\
         \x20                 [--probe-addr HOST:PORT]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        kubeconfig: None,
        context: None,
        selector: "configmap-sync=enabled".into(),
        name: "shared-settings".into(),
        data: BTreeMap::new(),
        leader_elect: false,
        lease_namespace: "default".into(),
        workers: 2,
        probe_addr: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--kubeconfig" => args.kubeconfig = Some(value()),
            "--context" => args.context = Some(value()),
            "--selector" => args.selector = value(),
            "--name" => args.name = value(),
            "--data" => {
                let kv = value();
                let (k, v) = kv.split_once('=').unwrap_or_else(|| usage());
                args.data.insert(k.into(), v.into());
            }
            "--leader-elect" => args.leader_elect = true,
            "--lease-namespace" => args.lease_namespace = value(),
            "--workers" => args.workers = value().parse().unwrap_or_else(|_| usage()),
            "--probe-addr" => args.probe_addr = Some(value()),
            _ => usage(),
        }
    }
    if args.data.is_empty() {
        args.data.insert("log-level".into(), "info".into());
        args.data.insert("owner".into(), "platform-team".into());
    }
    args
}

/// What every reconcile needs (its client comes from the context: fenced by the leader's term).
struct App {
    selector: Selector,
    name: String,
    data: BTreeMap<String, String>,
    recorder: EventRecorder,
}

impl App {
    fn new(args: &Args, recorder: EventRecorder) -> Result<App> {
        Ok(App {
            selector: args.selector.parse()?,
            name: args.name.clone(),
            data: args.data.clone(),
            recorder,
        })
    }
}

fn main() -> std::result::Result<ShutdownReport, Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init(); // logs on stderr
    let args = parse_args();
    // A real cluster (--kubeconfig), or an embedded API server that the demo below seeds and drives.
    let (server, config) = support::connect(args.kubeconfig.as_deref(), args.context.as_deref())?;
    if let Some(server) = &server {
        seed(server, &args)?; // the demo's starting state
    }
    let mut options = ManagerOptions::default();
    if args.leader_elect {
        options = options.leader_election(&args.lease_namespace, NAME);
    }
    if let Some(addr) = &args.probe_addr {
        options = options.probe_addr(addr.as_str());
    }
    let manager = Manager::new(Client::new(config)?, options)?;
    let client = manager.client().clone();

    let namespaces = manager.factory().informer::<Namespace>();
    let configmaps = Arc::new(SharedIndexInformer::new(
        ListWatch::new(&Api::<ConfigMap>::all(client.clone())).fields(&format!("metadata.name={}", args.name)),
        InformerOptions::default().name("configmaps"),
    ));
    manager.add_informer(&configmaps)?;
    let recorder = EventRecorder::new(ApiEventSink::new(client.clone()), RecorderOptions::new(NAME))?;
    manager.add_event_recorder(&recorder);
    let app = App::new(&args, recorder)?;
    let controller = Controller::builder(namespaces, app)
        .options(ControllerOptions::default().name(NAME).workers(args.workers))
        .owns(configmaps) // a ConfigMap edited or deleted re-triggers its Namespace
        .build(reconcile)?;
    manager.add_controller(controller)?;

    manager.start()?;
    if let Some(addr) = manager.probe_addr() {
        println!("probes: http://{addr}/readyz (/healthz, /metrics)");
    }
    let report = match &server {
        Some(server) => demo(&manager, server, &args)?,
        None => manager.run()?, // until SIGTERM or Ctrl-C
    };
    println!("{report}");
    Ok(report) // the exit status: 0 when everything stopped cleanly, 1 otherwise
}

/// The reconcile: one Namespace key.
fn reconcile(_key: &str, ctx: &Context<'_, Namespace, App>) -> Result<Action> {
    let app = ctx.data();
    let ns_name = ctx.name();
    // Under leader election, fenced by the leader's term: nothing written here lands once another replica leads.
    let client = ctx.client()?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns_name);
    let existing = ctx
        .lister_of::<ConfigMap>()
        .and_then(|l| l.namespace(ns_name).get(&app.name));
    let ns = ctx.object();
    let wanted = ns
        .as_ref()
        .filter(|n| !n.metadata.is_being_deleted() && app.selector.matches(n.metadata.labels()));

    let Some(ns) = wanted else {
        // Not (or no longer) selected: remove our ConfigMap, if we made one.
        if let (Some(ns), Some(cm)) = (&ns, &existing)
            && is_controlled_by(&**cm, &**ns)
        {
            let dp = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: cm.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..Default::default()
            };
            match api.delete(&app.name, &dp) {
                Err(e) if !e.is_not_found() => return Err(e),
                _ => {}
            }
            say(ns_name, format!("label removed: deleted ConfigMap {}", app.name));
            app.recorder
                .normal(&**ns, "Deleted", format!("deleted ConfigMap {}", app.name));
            set_synced(&client, ns, None)?;
        }
        return Ok(Action::await_change());
    };

    let synced_rv = match existing {
        None => {
            let created = match api.create(&PostParams::default(), &desired(app, ns)?) {
                Ok(cm) => cm,
                // Our cache lags behind: a later event brings it, and another reconcile.
                Err(e) if e.is_already_exists() => return Ok(Action::await_change()),
                Err(e) => return Err(e),
            };
            say(ns_name, format!("created ConfigMap {}", app.name));
            app.recorder
                .normal(&**ns, "Created", format!("created ConfigMap {}", app.name));
            created.metadata.resource_version
        }
        Some(cm) if !is_controlled_by(&*cm, &**ns) => {
            say(
                ns_name,
                format!("ConfigMap {} exists and is not ours: left alone", app.name),
            );
            app.recorder.warning(
                &**ns,
                "NotManaged",
                format!("ConfigMap {} exists and is not managed by {NAME}", app.name),
            );
            return Ok(Action::await_change());
        }
        Some(cm) if cm.data != app.data => {
            let mut fixed = desired(app, ns)?;
            fixed.metadata.resource_version = cm.metadata.resource_version.clone();
            let updated = api.replace(&app.name, &PostParams::default(), &fixed)?;
            say(
                ns_name,
                format!("corrected ConfigMap {} (edited by someone else)", app.name),
            );
            app.recorder.normal(
                &**ns,
                "Corrected",
                format!("restored the data of ConfigMap {}", app.name),
            );
            updated.metadata.resource_version
        }
        Some(cm) => cm.metadata.resource_version.clone(),
    };
    set_synced(&client, ns, synced_rv.as_deref())?;
    Ok(Action::await_change())
}

/// The ConfigMap the namespace should have, controlled by the namespace.
fn desired(app: &App, ns: &Namespace) -> Result<ConfigMap> {
    let ns_name = ns.metadata.name.clone().unwrap_or_default();
    let mut cm = ConfigMap::new(ObjectMeta::namespaced(&ns_name, &app.name));
    cm.metadata.labels.insert(MANAGED_BY.into(), NAME.into());
    cm.data = (&app.data).into();
    set_controller_reference(ns, &mut cm).map_err(|e| Error::InvalidInput(e.to_string()))?;
    Ok(cm)
}

/// Writes the result back to the Namespace (only when it changed, so the controller converges).
fn set_synced(client: &Client, ns: &Namespace, rv: Option<&str>) -> Result<()> {
    if ns.metadata.annotations.get(SYNCED) == rv {
        return Ok(());
    }
    let api: Api<Namespace> = Api::all(client.clone());
    let patch = json!({"metadata": {"annotations": {SYNCED: rv}}});
    api.patch(
        ns.metadata.name.as_deref().unwrap_or_default(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )?;
    Ok(())
}

fn say(namespace: &str, what: String) {
    println!("  [{namespace}] {what}");
}

fn namespace(name: &str, selected: bool) -> Namespace {
    let mut meta = ObjectMeta::named(name);
    if selected {
        meta.labels.insert("configmap-sync".into(), "enabled".into());
    }
    Namespace {
        metadata: meta,
        ..Default::default()
    }
}

/// The embedded server's starting state: three selected namespaces (one holding a foreign ConfigMap of our name)
/// and one that is not.
fn seed(server: &ApiServer, args: &Args) -> Result<()> {
    println!("embedded API server at {}", server.url());
    for (name, selected) in [("team-a", true), ("team-b", true), ("team-c", true), ("sandbox", false)] {
        server.create(&namespace(name, selected))?;
    }
    server.create(&ConfigMap::new(ObjectMeta::namespaced("team-c", &args.name)).with("handmade", "true"))?;
    println!(
        "seeded namespaces team-a, team-b, team-c (selected; team-c holds a hand-made {}), sandbox",
        args.name
    );
    Ok(())
}

/// The embedded demo: runs the manager while a driver disturbs the state and waits for the controller to converge
/// each time, then stops the manager and prints what the server holds. The driver's writes and polls go through the
/// server's own client (no rate limit), so that only the controller's requests wait for theirs.
fn demo(manager: &Manager, server: &ApiServer, args: &Args) -> Result<ShutdownReport> {
    let client = server.client()?;
    let stop = manager.stop_handle();
    let report = std::thread::scope(|scope| {
        let driver = std::thread::Builder::new()
            .name("demo".into())
            .spawn_scoped(scope, || {
                let driven = drive(&client, args);
                stop.stop();
                driven
            })
            .map_err(|e| Error::InvalidInput(format!("cannot start the demo: {e}")))?;
        let report = manager.run()?;
        driver.join().expect("the demo driver does not panic")?;
        Ok::<_, Error>(report)
    })?;
    summary(&client, args)?;
    Ok(report)
}

/// Waits for convergence, disturbs the state, waits again.
fn drive(client: &Client, args: &Args) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let ours = |ns: &str| -> Result<Option<ConfigMap>> {
        Api::<ConfigMap>::namespaced(client.clone(), ns).get_opt(&args.name)
    };
    let converged = |nss: &[&str]| -> Result<bool> {
        for ns in nss {
            match ours(ns)? {
                Some(cm) if cm.data == args.data => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    };
    let wait = |what: &str, cond: &dyn Fn() -> Result<bool>| -> Result<()> {
        while !cond()? {
            if Instant::now() > deadline {
                return Err(Error::InvalidInput(format!("the controller did not converge: {what}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    };
    println!("\nphase 1: initial sync");
    wait("initial sync", &|| converged(&["team-a", "team-b"]))?;

    println!("\nphase 2: someone edits team-a's ConfigMap, deletes team-b's, and labels sandbox");
    let mut edited = ours("team-a")?.expect("synced");
    edited.data.insert("log-level".into(), "debug".into());
    Api::<ConfigMap>::namespaced(client.clone(), "team-a").replace(&args.name, &PostParams::default(), &edited)?;
    Api::<ConfigMap>::namespaced(client.clone(), "team-b").delete(&args.name, &DeleteParams::default())?;
    let nss: Api<Namespace> = Api::all(client.clone());
    nss.patch(
        "sandbox",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"configmap-sync": "enabled"}}})),
    )?;
    wait("corrections", &|| converged(&["team-a", "team-b", "sandbox"]))?;

    println!("\nphase 3: team-b's label is removed");
    nss.patch(
        "team-b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"configmap-sync": null}}})),
    )?;
    wait("removal", &|| Ok(ours("team-b")?.is_none()))?;
    Ok(())
}

/// What the embedded server holds at the end.
fn summary(client: &Client, args: &Args) -> Result<()> {
    println!("\nfinal state:");
    let selector: Selector = args.selector.parse()?;
    let nss: Api<Namespace> = Api::all(client.clone());
    for ns in nss.list(&Default::default())?.items {
        let name = ns.metadata.name.clone().unwrap_or_default();
        let cm = Api::<ConfigMap>::namespaced(client.clone(), &name).get_opt(&args.name)?;
        let state = match &cm {
            Some(cm) if is_controlled_by(cm, &ns) => format!("{} {:?}", args.name, cm.data),
            Some(_) => format!("{} (not managed)", args.name),
            None => "-".into(),
        };
        let synced = ns.metadata.annotations.get(SYNCED).unwrap_or("-");
        let selected = selector.matches(ns.metadata.labels());
        println!("  {name:<8} selected={selected:<5} {state}  synced-rv={synced}");
    }
    println!("\nevents:");
    let events: Api<Event> = Api::all(client.clone());
    for e in events.list(&Default::default())?.items {
        println!(
            "  {:<7} {:<10} {:<8} x{} {}",
            e.type_.unwrap_or_default(),
            e.reason.unwrap_or_default(),
            e.involved_object.name,
            e.count.unwrap_or(1),
            e.message.unwrap_or_default()
        );
    }
    Ok(())
}
