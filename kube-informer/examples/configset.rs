//! configset: a controller of a custom resource, `ConfigSet` (demo.kube-informer.io/v1), that keeps a ConfigMap of
//! the same name holding the ConfigSet's `spec.data`.
//!
//! What it shows of the controller toolkit:
//!
//! * **owner references**: the ConfigMap is controlled by its ConfigSet (`set_controller_reference`), so an edit or
//!   deletion of the ConfigMap re-triggers the ConfigSet (`owns`), and a ConfigMap controlled by someone else is
//!   left alone;
//! * **a finalizer**: deleting a ConfigSet first deletes its ConfigMap (idempotently: the cleanup may run again
//!   after a crash), then lets the ConfigSet go;
//! * **the generation predicate**: the controller writes `status` (`observedGeneration`, `phase`) and those writes
//!   do not queue the ConfigSet again — only spec changes do;
//! * **conflicts retried**: the ConfigMap is written through `Api::entry` inside `on_error`, which reads again and
//!   retries when another writer got there first (the demo makes the server answer one write with 409);
//! * **an error policy**: an invalid spec (a key a ConfigMap cannot hold) is reported in `status` and not retried
//!   until the spec changes; other errors back off.
//!
//! ```text
//! cargo run --example configset                      # embedded API server: seeds objects, runs, prints, exits
//! cargo run --example configset -- --kubeconfig ~/.kube/config [--context NAME] [--run-for SECS]
//! ```
//!
//! It installs the CustomResourceDefinition through the API when the resource is not served yet — into the embedded
//! server as into a cluster. Against a cluster it then runs until Enter is pressed (or stdin closes, or `--run-for`
//! passes), printing what it does and every failed reconcile. The permissions it needs (`tests/examples.rs` runs it
//! with exactly these):
//!
//! | resource | verbs |
//! |---|---|
//! | `customresourcedefinitions.apiextensions.k8s.io` | `create` (only while the CRD is not installed) |
//! | `configsets.demo.kube-informer.io` | `get`, `list`, `watch`, `patch` |
//! | `configsets.demo.kube-informer.io/status` | `patch` |
//! | `configmaps` | `get`, `list`, `watch`, `create`, `update`, `delete` |

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use kube_informer::cache::ListWatch;
use kube_informer::client::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_informer::client::{Api, Client, Committed, RetryBackoff, on_error};
use kube_informer::controller::predicate::GenerationChanged;
use kube_informer::controller::{
    Action, Context, Controller, ControllerOptions, FinalizerError, FinalizerEvent, finalizer,
};
use kube_informer::informer::{InformerOptions, SharedIndexInformer};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{
    ApiResource, DynamicObject, ObjectMeta, OwnerReferenceError, Resource, is_controlled_by, set_controller_reference,
};
use kube_informer_apiserver::{ApiServer, Fault, Verb};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[path = "support/mod.rs"]
mod support;
const NAME: &str = "configset-controller";
const FINALIZER: &str = "configsets.demo.kube-informer.io/cleanup";
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// The custom resource.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct ConfigSet {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: ConfigSetSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<ConfigSetStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct ConfigSetSpec {
    #[serde(default)]
    data: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigSetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
    #[serde(default)]
    phase: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    message: String,
}

kube_informer::object!(ConfigSet, group: "demo.kube-informer.io", version: "v1", kind: "ConfigSet",
                       plural: "configsets", namespaced: true);

/// The object schema of the CRD.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "data": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
            "status": {"type": "object", "properties": {
                "observedGeneration": {"type": "integer", "format": "int64"},
                "phase": {"type": "string"},
                "message": {"type": "string"},
            }},
        },
    })
}

/// The CustomResourceDefinition installed where configsets are not served yet.
fn crd() -> Value {
    let ar = ConfigSet::api_resource();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": ar.qualified_name()},
        "spec": {
            "group": ar.group,
            "scope": "Namespaced",
            "names": {"plural": ar.plural, "singular": "configset", "kind": ar.kind, "shortNames": ["cfgset"]},
            "versions": [{
                "name": ar.version,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": schema()},
            }],
        },
    })
}

/// Errors of a reconcile.
#[derive(Debug)]
enum AppError {
    /// The spec cannot be realised; retrying will not help.
    Invalid(String),
    Api(kube_informer::Error),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Invalid(m) => write!(f, "invalid: {m}"),
            AppError::Api(e) => write!(f, "{e}"),
        }
    }
}

impl From<kube_informer::Error> for AppError {
    fn from(e: kube_informer::Error) -> Self {
        AppError::Api(e)
    }
}

/// What every reconcile needs.
struct App {
    client: Client,
    configsets: Api<ConfigSet>,
    /// Writes of a ConfigMap that lost a race and were retried.
    conflicts_retried: AtomicU32,
}

impl App {
    fn configmaps(&self, ns: &str) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), ns)
    }
}

/// The reconcile of one ConfigSet key: everything behind the finalizer.
fn reconcile(_key: &str, ctx: &Context<'_, ConfigSet, App>) -> Result<Action, FinalizerError<AppError>> {
    let Some(cs) = ctx.object() else {
        return Ok(Action::await_change()); // gone: its cleanup ran before the finalizer let it go
    };
    let app = ctx.data();
    finalizer(&app.configsets, FINALIZER, cs, |event| match event {
        FinalizerEvent::Apply(cs) => apply(app, &cs),
        FinalizerEvent::Cleanup(cs) => cleanup(app, &cs),
    })
}

/// After a failed reconcile: an invalid spec waits for a change, anything else backs off.
fn error_policy(_cs: Option<&ConfigSet>, err: &FinalizerError<AppError>, ctx: &Context<'_, ConfigSet, App>) -> Action {
    match err {
        FinalizerError::Apply(AppError::Invalid(_)) => {
            say(ctx.key(), "invalid spec: not retried until it changes".into());
            Action::await_change()
        }
        _ => {
            say(ctx.key(), format!("failed, retried with back-off: {err}"));
            Action::requeue_rate_limited()
        }
    }
}

fn apply(app: &App, cs: &ConfigSet) -> Result<Action, AppError> {
    let (ns, name) = names(cs);
    if let Some(bad) = cs.spec.data.keys().find(|k| !valid_key(k)) {
        let message = format!("key {bad:?} is not a valid ConfigMap key");
        set_status(app, cs, "Invalid", &message)?;
        return Err(AppError::Invalid(message));
    }
    let configmaps = app.configmaps(&ns);
    let mut attempts = 0;
    let retriable = |e: &AppError| matches!(e, AppError::Api(e) if e.is_conflict() || e.is_already_exists());
    let outcome = on_error(RetryBackoff::DEFAULT_RETRY, retriable, || {
        attempts += 1;
        let mut entry = configmaps
            .entry(&name)?
            .or_insert(|| ConfigMap::new(ObjectMeta::namespaced(&ns, &name)));
        let cm = entry.get_mut();
        match set_controller_reference(cs, cm) {
            Ok(()) => {}
            Err(OwnerReferenceError::AlreadyOwned { existing }) => {
                return Err(AppError::Invalid(format!(
                    "ConfigMap {name} is controlled by {} {}",
                    existing.kind, existing.name
                )));
            }
            Err(e) => return Err(AppError::Invalid(e.to_string())),
        }
        cm.metadata.labels.insert(MANAGED_BY.into(), NAME.into());
        cm.data = (&cs.spec.data).into();
        Ok(entry.commit(&PostParams::default())?)
    });
    let outcome = match outcome {
        Err(AppError::Invalid(m)) => {
            set_status(app, cs, "Blocked", &m)?;
            return Err(AppError::Invalid(m));
        }
        other => other?,
    };
    if attempts > 1 {
        app.conflicts_retried.fetch_add(attempts - 1, Ordering::SeqCst);
        say(
            &key(cs),
            format!("ConfigMap write conflicted; read again and retried ({attempts} attempts)"),
        );
    }
    match outcome {
        Committed::Created => say(&key(cs), format!("created ConfigMap {name}")),
        Committed::Updated => say(&key(cs), format!("updated ConfigMap {name}")),
        Committed::Unchanged => {}
    }
    set_status(app, cs, "Ready", "")?;
    Ok(Action::await_change())
}

fn cleanup(app: &App, cs: &ConfigSet) -> Result<Action, AppError> {
    let (ns, name) = names(cs);
    let configmaps = app.configmaps(&ns);
    // Idempotent: nothing there (or not ours) is success — this may run again after a crash.
    let Some(cm) = configmaps.get_opt(&name)? else {
        return Ok(Action::await_change());
    };
    if !is_controlled_by(&cm, cs) {
        return Ok(Action::await_change());
    }
    let dp = DeleteParams::default().precondition_uid(cm.metadata.uid.clone().unwrap_or_default());
    match configmaps.delete(&name, &dp) {
        Err(e) if !e.is_not_found() => return Err(e.into()),
        _ => say(&key(cs), format!("cleanup: deleted ConfigMap {name}")),
    }
    Ok(Action::await_change())
}

/// Writes the status when it changed. Under the generation predicate this write does not queue the ConfigSet
/// again.
fn set_status(app: &App, cs: &ConfigSet, phase: &str, message: &str) -> Result<(), AppError> {
    let wanted = ConfigSetStatus {
        observed_generation: cs.metadata.generation,
        phase: phase.into(),
        message: message.into(),
    };
    if cs.status.as_ref() == Some(&wanted) {
        return Ok(());
    }
    let (ns, name) = names(cs);
    Api::<ConfigSet>::namespaced(app.client.clone(), &ns).patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": wanted})),
    )?;
    say(
        &key(cs),
        format!("status: {phase} (generation {})", cs.metadata.generation.unwrap_or(0)),
    );
    Ok(())
}

/// A ConfigMap key: alphanumerics, `-`, `_`, `.`; at most 253 characters.
fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 253
        && k.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn names(cs: &ConfigSet) -> (String, String) {
    (
        cs.metadata.namespace.as_deref().unwrap_or_default().to_owned(),
        cs.metadata.name.clone().unwrap_or_default(),
    )
}

fn key(cs: &ConfigSet) -> String {
    let (ns, name) = names(cs);
    format!("{ns}/{name}")
}

fn say(key: &str, what: String) {
    println!("  [{key}] {what}");
}

/// Command-line settings.
struct Args {
    kubeconfig: Option<String>,
    context: Option<String>,
    run_for: Option<Duration>,
}

fn usage() -> ! {
    eprintln!("usage: configset [--kubeconfig FILE] [--context NAME] [--run-for SECS]");
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        kubeconfig: None,
        context: None,
        run_for: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--kubeconfig" => args.kubeconfig = Some(value()),
            "--context" => args.context = Some(value()),
            "--run-for" => args.run_for = Some(Duration::from_secs(value().parse().unwrap_or_else(|_| usage()))),
            _ => usage(),
        }
    }
    args
}

fn main() {
    // Logs on stderr: the library's warnings and recoveries by default, everything with RUST_LOG=debug.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = parse_args();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

type BoxError = Box<dyn std::error::Error>;

fn run(args: &Args) -> Result<(), BoxError> {
    // Against a cluster, or against an embedded API server.
    let (server, config) = support::connect(args.kubeconfig.as_deref(), args.context.as_deref())?;
    let client = Client::new(config.request_timeout(Some(Duration::from_secs(10))))?;
    if let Some(s) = &server {
        println!("embedded API server at {}", s.url());
    }
    ensure_crd(&client)?;

    let configsets = Arc::new(SharedIndexInformer::new(
        ListWatch::new(&Api::<ConfigSet>::all(client.clone())),
        InformerOptions::default().name("configsets"),
    ));
    let configmaps = Arc::new(SharedIndexInformer::new(
        ListWatch::new(&Api::<ConfigMap>::all(client.clone())).labels(&format!("{MANAGED_BY}={NAME}")),
        InformerOptions::default().name("configmaps"),
    ));
    let app = App {
        client: client.clone(),
        configsets: Api::all(client.clone()),
        conflicts_retried: AtomicU32::new(0),
    };
    let controller = Controller::builder(configsets.clone(), app)
        .options(ControllerOptions::default().name(NAME).workers(2))
        .predicate(GenerationChanged)
        .owns(configmaps.clone())
        .build_with_error_policy(reconcile, error_policy)?;
    controller.start()?;

    match &server {
        Some(s) => demo(s, &client, &controller)?,
        None => support::wait_for_exit("configset", args.run_for),
    }

    controller.stop();
    configsets.stop();
    configmaps.stop();
    let m = controller.metrics();
    println!(
        "\ncontroller: {} reconciles, {} errors, {} events filtered by the generation predicate, {} conflicts retried",
        m.reconciles,
        m.errors,
        m.filtered,
        controller.data().conflicts_retried.load(Ordering::SeqCst)
    );
    if server.is_some() {
        summary(&client)?;
    }
    Ok(())
}

/// Installs the CRD unless the cluster already serves configsets, and waits until it does.
fn ensure_crd(client: &Client) -> Result<(), BoxError> {
    let probe = || Api::<ConfigSet>::all(client.clone()).list(&ListParams::default().limit(1));
    match probe() {
        Ok(_) => return Ok(()),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    let crds = ApiResource::new(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    );
    let crd: DynamicObject = serde_json::from_value(crd())?;
    match Api::<DynamicObject>::all_with(client.clone(), &crds).create(&PostParams::default(), &crd) {
        Err(e) if !e.is_already_exists() => return Err(e.into()),
        _ => println!(
            "installed CustomResourceDefinition {}",
            ConfigSet::api_resource().qualified_name()
        ),
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match probe() {
            Ok(_) => return Ok(()),
            Err(e) if e.is_not_found() && Instant::now() < deadline => std::thread::sleep(Duration::from_millis(250)),
            Err(e) => return Err(format!("configsets are not served after installing the CRD: {e}").into()),
        }
    }
}

fn configset(ns: &str, name: &str, data: &[(&str, &str)]) -> ConfigSet {
    ConfigSet {
        metadata: ObjectMeta::namespaced(ns, name),
        spec: ConfigSetSpec {
            data: data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        },
        status: None,
    }
}

/// Drives the embedded demo: each phase changes something and waits for the controller to converge.
fn demo(server: &ApiServer, client: &Client, controller: &Controller<ConfigSet, App>) -> Result<(), BoxError> {
    // The demo's namespace, which a cluster would need to exist too.
    server.create_namespace("demo")?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let wait = |what: &str, cond: &dyn Fn() -> Result<bool, BoxError>| -> Result<(), BoxError> {
        while !cond()? {
            if Instant::now() > deadline {
                return Err(format!("the controller did not converge: {what}").into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    };
    let sets: Api<ConfigSet> = Api::namespaced(client.clone(), "demo");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "demo");
    let phase = |name: &str| -> Result<Option<(String, Option<i64>)>, BoxError> {
        Ok(sets
            .get_opt(name)?
            .and_then(|c| c.status)
            .map(|s| (s.phase, s.observed_generation)))
    };
    let data = |name: &str, key: &str| -> Result<Option<String>, BoxError> {
        Ok(cms.get_opt(name)?.and_then(|c| c.data.get(key).map(str::to_owned)))
    };

    println!("\nphase 1: two ConfigSets are created");
    let pp = PostParams::default();
    sets.create(&pp, &configset("demo", "web", &[("color", "blue")]))?;
    sets.create(&pp, &configset("demo", "api", &[("replicas", "3")]))?;
    wait("web and api ready", &|| {
        Ok(phase("web")? == Some(("Ready".into(), Some(1))) && phase("api")? == Some(("Ready".into(), Some(1))))
    })?;

    println!("\nphase 2: web's spec changes while another writer races the controller (the server answers 409 once)");
    server.inject(Fault::on(Some(Verb::Update), Some("configmaps")).error(409));
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"data": {"color": "green"}}})),
    )?;
    wait("web's ConfigMap green", &|| {
        Ok(data("web", "color")?.as_deref() == Some("green"))
    })?;
    wait("web ready at generation 2", &|| {
        Ok(phase("web")? == Some(("Ready".into(), Some(2))))
    })?;

    println!("\nphase 3: someone deletes api's ConfigMap; its owner reference brings it back");
    cms.delete("api", &DeleteParams::default())?;
    wait("api's ConfigMap back", &|| {
        Ok(data("api", "replicas")?.as_deref() == Some("3"))
    })?;

    println!("\nphase 4: a ConfigSet with a key no ConfigMap can hold");
    sets.create(&pp, &configset("demo", "bad", &[("not valid!", "x")]))?;
    wait("bad reported invalid", &|| {
        Ok(phase("bad")?.is_some_and(|(p, _)| p == "Invalid"))
    })?;

    println!("\nphase 5: web is deleted; its finalizer holds it until the ConfigMap is gone");
    sets.delete("web", &DeleteParams::default())?;
    wait("web and its ConfigMap gone", &|| {
        Ok(sets.get_opt("web")?.is_none() && cms.get_opt("web")?.is_none())
    })?;
    let m = controller.metrics();
    println!(
        "\n{} status writes and other updates without a spec change queued nothing",
        m.filtered
    );
    Ok(())
}

/// What the embedded server holds at the end.
fn summary(client: &Client) -> Result<(), BoxError> {
    println!("\nfinal state:");
    let sets: Api<ConfigSet> = Api::all(client.clone());
    for cs in sets.list(&ListParams::default())?.items {
        let status = cs.status.clone().unwrap_or_default();
        println!(
            "  configset {:<12} phase={:<8} observedGeneration={} finalizers={:?} {}",
            key(&cs),
            status.phase,
            status.observed_generation.unwrap_or(0),
            cs.metadata.finalizers,
            status.message
        );
    }
    let cms: Api<ConfigMap> = Api::all(client.clone());
    for cm in cms.list(&ListParams::default())?.items {
        let owner = cm
            .metadata
            .owner_references
            .first()
            .map(|r| format!("{} {}", r.kind, r.name));
        println!(
            "  configmap {:<12} data={:?} controller={}",
            format!(
                "{}/{}",
                cm.metadata.namespace.as_deref().unwrap_or(""),
                cm.metadata.name.as_deref().unwrap_or("")
            ),
            cm.data,
            owner.unwrap_or_else(|| "-".into())
        );
    }
    Ok(())
}
