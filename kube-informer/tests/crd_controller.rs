//! A controller of a custom resource, tested end to end the way a project would test its own: the CRD comes from
//! the project's YAML (`tests/fixtures/crds/`, as controller-gen writes it), the type is an `object!` struct, and a
//! real [`Controller`] over a [`SharedIndexInformer`] reconciles each `Frontend` into an owned ConfigMap and writes
//! its `.status` (observedGeneration, replicas, the replicas' selector) through the status subresource.
//!
//! What the server must do for such a test to mean something, each checked here: 422s with kube-apiserver's causes
//! through the typed client, the status subresource's split of writes, the scale subresource driving the
//! controller, the printer columns as kubectl prints them, and the removal of everything when the CRD goes.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use kube_informer::cache::{DeletedObject, ListWatch};
use kube_informer::client::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_informer::client::{Api, Client};
use kube_informer::controller::predicate::GenerationChanged;
use kube_informer::controller::{Action, Context, Controller, ControllerOptions};
use kube_informer::informer::{InformerOptions, ResourceEventHandler, SharedIndexInformer};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, Resource, Scale, is_controlled_by, set_controller_reference};
use kube_informer::{Error, Result};
use kube_informer_apiserver::ApiServer;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use common::eventually;

// ----- the project's API: the custom resource as its Rust type -----

/// `Frontend` (web.example.com/v1), the kind `tests/fixtures/crds/web.example.com_frontends.yaml` defines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Frontend {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: FrontendSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<FrontendStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct FrontendSpec {
    /// Required by the schema: left out of the body when empty, to let a test leave it out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    port: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    env: Vec<EnvVar>,
    /// Free-form (`x-kubernetes-preserve-unknown-fields`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    settings: Option<Value>,
    /// An embedded resource (`x-kubernetes-embedded-resource`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sidecar: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum IntOrString {
    Int(i64),
    String(String),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct EnvVar {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrontendStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    selector: Option<String>,
}

kube_informer::object!(Frontend, group: "web.example.com", version: "v1", kind: "Frontend", plural: "frontends",
                       namespaced: true);

const INSTANCE: &str = "app.kubernetes.io/instance";

fn frontend(name: &str, image: &str) -> Frontend {
    Frontend {
        metadata: ObjectMeta::namespaced("default", name),
        spec: FrontendSpec {
            image: image.into(),
            ..Default::default()
        },
        status: None,
    }
}

// ----- the project's controller -----

/// What every reconcile needs, and what the tests read of its work.
struct App {
    client: Client,
    /// Keys whose reconcile found the Frontend gone.
    gone: Mutex<BTreeSet<String>>,
}

/// Makes `<name>-config` (controlled by the Frontend) hold the Frontend's settings, then reports in `.status` the
/// generation acted on, the replicas (as if they ran at once) and the selector of their pods. A Frontend gone
/// takes its ConfigMap along (no garbage collector runs here).
fn reconcile(key: &str, ctx: &Context<'_, Frontend, App>) -> Result<Action> {
    let app = ctx.data();
    let ns = ctx.namespace();
    let configmaps: Api<ConfigMap> = Api::namespaced(app.client.clone(), ns);
    let cm_name = format!("{}-config", ctx.name());
    let Some(fe) = ctx.object() else {
        app.gone.lock().insert(key.to_owned());
        match configmaps.delete(&cm_name, &DeleteParams::default()) {
            Err(e) if !e.is_not_found() => return Err(e),
            _ => return Ok(Action::await_change()),
        }
    };
    let mut entry = configmaps
        .entry(&cm_name)?
        .or_insert(|| ConfigMap::new(ObjectMeta::namespaced(ns, &cm_name)));
    let cm = entry.get_mut();
    set_controller_reference(&*fe, cm).map_err(|e| Error::InvalidInput(e.to_string()))?;
    cm.metadata.labels.insert(INSTANCE.into(), ctx.name().into());
    cm.data = config_data(&fe.spec).into_iter().collect();
    entry.commit(&PostParams::default())?;

    let status = FrontendStatus {
        observed_generation: fe.metadata.generation,
        replicas: fe.spec.replicas,
        selector: Some(format!("{INSTANCE}={}", ctx.name())),
    };
    if fe.status.as_ref() != Some(&status) {
        Api::<Frontend>::namespaced(app.client.clone(), ns).patch_status(
            ctx.name(),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )?;
    }
    Ok(Action::await_change())
}

/// The ConfigMap's data for a spec.
fn config_data(spec: &FrontendSpec) -> Vec<(String, String)> {
    let mut data = vec![
        ("image".to_owned(), spec.image.clone()),
        ("replicas".to_owned(), spec.replicas.unwrap_or(0).to_string()),
        ("tier".to_owned(), spec.tier.clone().unwrap_or_default()),
    ];
    if let Some(port) = &spec.port {
        let port = match port {
            IntOrString::Int(n) => n.to_string(),
            IntOrString::String(s) => s.clone(),
        };
        data.push(("port".to_owned(), port));
    }
    for e in &spec.env {
        data.push((format!("env.{}", e.name), e.value.clone().unwrap_or_default()));
    }
    if let Some(settings) = &spec.settings {
        data.push(("settings.json".to_owned(), settings.to_string()));
    }
    data
}

// ----- the test harness: server, informers, controller -----

/// The folder of the project's CRDs.
fn crd_folder() -> PathBuf {
    common::fixture("crds")
}

fn crd_manifest() -> String {
    std::fs::read_to_string(crd_folder().join("web.example.com_frontends.yaml")).unwrap()
}

/// Records the Frontends the informer saw deleted.
struct DeletionRecorder(Arc<Mutex<BTreeSet<String>>>);

impl ResourceEventHandler<Frontend> for DeletionRecorder {
    fn on_delete(&mut self, obj: &DeletedObject<Frontend>) {
        let name = obj.object().metadata.name.clone().unwrap_or_default();
        self.0.lock().insert(name);
    }
}

/// A running controller of Frontends against `server`.
struct Running {
    client: Client,
    frontends: Arc<SharedIndexInformer<Frontend>>,
    configmaps: Arc<SharedIndexInformer<ConfigMap>>,
    controller: Controller<Frontend, App>,
    /// Names of the Frontends the informer delivered a deletion of.
    deleted: Arc<Mutex<BTreeSet<String>>>,
}

impl Running {
    fn start(server: &ApiServer) -> Running {
        let client = server.client().unwrap();
        let frontends = Arc::new(SharedIndexInformer::new(
            ListWatch::new(&Api::<Frontend>::all(client.clone())),
            InformerOptions::default().name("frontends"),
        ));
        let deleted = Arc::new(Mutex::new(BTreeSet::new()));
        frontends.add_event_handler(DeletionRecorder(deleted.clone())).unwrap();
        let configmaps = Arc::new(SharedIndexInformer::new(
            ListWatch::new(&Api::<ConfigMap>::all(client.clone())).labels(INSTANCE),
            InformerOptions::default().name("frontend-configs"),
        ));
        let app = App {
            client: client.clone(),
            gone: Mutex::new(BTreeSet::new()),
        };
        let controller = Controller::builder(frontends.clone(), app)
            .options(ControllerOptions::default().name("frontends").workers(2))
            .predicate(GenerationChanged)
            .owns(configmaps.clone())
            .build(reconcile)
            .unwrap();
        controller.start().unwrap();
        Running {
            client,
            frontends,
            configmaps,
            controller,
            deleted,
        }
    }

    fn api(&self) -> Api<Frontend> {
        Api::namespaced(self.client.clone(), "default")
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), "default")
    }

    /// Waits until the controller has acted on the Frontend's current generation.
    fn converged(&self, name: &str) -> Frontend {
        let api = self.api();
        let mut last = None;
        eventually(&format!("the controller acts on {name}'s generation"), || {
            let fe = api.get(name).unwrap();
            let done = fe
                .status
                .as_ref()
                .is_some_and(|s| s.observed_generation == fe.metadata.generation);
            last = Some(fe);
            done
        });
        last.unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.controller.stop();
        self.frontends.stop();
        self.configmaps.stop();
    }
}

/// The typed 422 of a write: its message and its causes as `field: message`.
fn invalid(result: Result<Frontend>) -> (String, Vec<String>) {
    let err = result.expect_err("the write is refused");
    let status = err.status().unwrap_or_else(|| panic!("an API error, not {err:?}"));
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"), "{status:?}");
    let details = status.details.as_ref().expect("details");
    assert_eq!(
        (details.group.as_str(), details.kind.as_str(), details.name.as_str()),
        ("web.example.com", "Frontend", "bad")
    );
    let causes = details
        .causes
        .iter()
        .map(|c| format!("{} [{}] {}", c.field, c.reason, c.message))
        .collect();
    (status.message.clone(), causes)
}

// ----- the tests -----

#[test]
fn the_projects_crd_yaml_installs_from_a_folder_and_through_install_crd() {
    // The folder, as a kubebuilder project keeps it (config/crd/bases).
    let from_folder = ApiServer::builder().crds_from_folder(crd_folder()).start().unwrap();
    // One manifest, installed into a running server.
    let installed = ApiServer::start().unwrap();
    assert_eq!(
        installed.install_crd(&crd_manifest()).unwrap(),
        ["frontends.web.example.com"]
    );
    for server in [&from_folder, &installed] {
        let api: Api<Frontend> = Api::namespaced(server.client().unwrap(), "default");
        let created = api
            .create(&PostParams::default(), &frontend("shop", "nginx:1.27"))
            .unwrap();
        // The schema's defaults: replicas, tier and the int-or-string port.
        assert_eq!(created.spec.replicas, Some(1));
        assert_eq!(created.spec.tier.as_deref(), Some("web"));
        assert_eq!(created.spec.port, Some(IntOrString::Int(8080)));
        assert_eq!(created.metadata.generation, Some(1));
        let (code, discovery) = get_json(&format!("{}/apis/web.example.com/v1", server.url()));
        assert_eq!(code, 200, "{discovery}");
        let names: BTreeSet<&str> = discovery["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert_eq!(
            names,
            BTreeSet::from(["frontends", "frontends/scale", "frontends/status"])
        );
        let main = discovery["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "frontends")
            .unwrap();
        assert_eq!(main["shortNames"], json!(["fe"]));
        assert_eq!(main["categories"], json!(["all", "web"]));
        assert_eq!(main["singularName"], "frontend");
    }
}

#[test]
fn the_controller_reconciles_each_frontend_into_an_owned_configmap_and_its_status() {
    let server = ApiServer::builder().crds_from_folder(crd_folder()).start().unwrap();
    let run = Running::start(&server);
    let mut fe = frontend("shop", "nginx:1.27");
    fe.spec.env = vec![EnvVar {
        name: "MODE".into(),
        value: Some("prod".into()),
    }];
    fe.spec.settings = Some(json!({"theme": {"color": "blue", "dark": true}}));
    fe.spec.sidecar = Some(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "proxy"},
                                  "spec": {"containers": [{"name": "envoy", "image": "envoy:1"}]}}));
    let created = run.api().create(&PostParams::default(), &fe).unwrap();
    // The embedded resource and the free-form settings are kept whole.
    assert_eq!(created.spec.settings, fe.spec.settings);
    assert_eq!(created.spec.sidecar, fe.spec.sidecar);

    let shop = run.converged("shop");
    assert_eq!(
        shop.status,
        Some(FrontendStatus {
            observed_generation: Some(1),
            replicas: Some(1),
            selector: Some(format!("{INSTANCE}=shop")),
        })
    );
    let cm = run.configmaps().get("shop-config").unwrap();
    assert!(is_controlled_by(&cm, &shop), "{:?}", cm.metadata.owner_references);
    assert_eq!(
        cm.data.to_btree_map(),
        [
            ("env.MODE", "prod"),
            ("image", "nginx:1.27"),
            ("port", "8080"),
            ("replicas", "1"),
            ("settings.json", r#"{"theme":{"color":"blue","dark":true}}"#),
            ("tier", "web"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect::<std::collections::BTreeMap<_, _>>()
    );

    // A spec change: a new generation, acted on.
    run.api()
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "nginx:1.28", "port": "http"}})),
        )
        .unwrap();
    let shop = run.converged("shop");
    assert_eq!(shop.metadata.generation, Some(2));
    let cm = run.configmaps().get("shop-config").unwrap();
    assert_eq!(
        (cm.data.get("image"), cm.data.get("port")),
        (Some("nginx:1.28"), Some("http"))
    );

    // The owned ConfigMap deleted by someone else comes back (the controller owns what it creates).
    run.configmaps()
        .delete("shop-config", &DeleteParams::default())
        .unwrap();
    eventually("the ConfigMap is made again", || {
        run.configmaps().get_opt("shop-config").unwrap().is_some()
    });
}

#[test]
fn invalid_frontends_get_kube_apiserver_422_causes_through_the_typed_api() {
    let server = ApiServer::builder().crds_from_folder(crd_folder()).start().unwrap();
    let api: Api<Frontend> = Api::namespaced(server.client().unwrap(), "default");
    let pp = PostParams::default();

    let mut bad = frontend("bad", "Not An Image");
    bad.spec.replicas = Some(11);
    bad.spec.tier = Some("db".into());
    bad.spec.env = vec![
        EnvVar {
            name: "A".into(),
            value: None,
        },
        EnvVar {
            name: "A".into(),
            value: Some("again".into()),
        },
    ];
    let (message, causes) = invalid(api.create(&pp, &bad));
    assert!(
        message.starts_with(r#"Frontend.web.example.com "bad" is invalid: ["#),
        "{message}"
    );
    // kube-apiserver checks list types after the schema: the duplicate comes last (the order of the schema's own
    // causes follows Go's map iteration there, so it is not compared).
    assert!(
        causes.last().is_some_and(|c| c.starts_with("spec.env[1] ")),
        "{causes:?}"
    );
    let causes: BTreeSet<String> = causes.into_iter().collect();
    assert_eq!(
        causes,
        BTreeSet::from([
            r#"spec.env[1] [FieldValueDuplicate] Duplicate value: {"name":"A"}"#.to_owned(),
            r#"spec.image [FieldValueInvalid] Invalid value: "Not An Image": spec.image in body should match '^[a-z0-9]+([._/:-][a-z0-9]+)*$'"#.to_owned(),
            "spec.replicas [FieldValueInvalid] Invalid value: 11: spec.replicas in body should be less than or equal to 10".to_owned(),
            r#"spec.tier [FieldValueNotSupported] Unsupported value: "db": supported values: "web", "api", "worker""#.to_owned(),
        ])
    );

    // A required field missing, a negative count.
    let mut bad = frontend("bad", "");
    bad.spec.replicas = Some(-1);
    let (_, causes) = invalid(api.create(&pp, &bad));
    assert!(
        causes.contains(&"spec.image [FieldValueRequired] Required value".to_owned()),
        "{causes:?}"
    );
    assert!(
        causes.contains(
            &"spec.replicas [FieldValueInvalid] Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
                .to_owned()
        ),
        "{causes:?}"
    );
    // The scale subresource's own check of the replicas, named by its path.
    assert!(
        causes.contains(
            &".spec.replicas [FieldValueInvalid] Invalid value: -1: should be a non-negative integer".to_owned()
        ),
        "{causes:?}"
    );

    // The embedded resource must say what it is.
    let mut bad = frontend("bad", "nginx");
    bad.spec.sidecar = Some(json!({"metadata": {"name": "proxy"}}));
    let (_, causes) = invalid(api.create(&pp, &bad));
    assert_eq!(
        causes,
        [
            "spec.sidecar.apiVersion [FieldValueRequired] Required value",
            "spec.sidecar.kind [FieldValueRequired] Required value",
        ]
    );

    // Updates are validated too, and nothing invalid was stored.
    let good = api.create(&pp, &frontend("bad", "nginx")).unwrap();
    let mut changed = good.clone();
    changed.spec.tier = Some("db".into());
    let (_, causes) = invalid(api.replace("bad", &pp, &changed));
    assert_eq!(
        causes,
        [r#"spec.tier [FieldValueNotSupported] Unsupported value: "db": supported values: "web", "api", "worker""#]
    );
    let (_, causes) = invalid(api.patch(
        "bad",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 11}})),
    ));
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(api.get("bad").unwrap(), good);
}

#[test]
fn main_resource_writes_ignore_status_and_status_writes_ignore_the_rest() {
    let server = ApiServer::builder().crds_from_folder(crd_folder()).start().unwrap();
    let api: Api<Frontend> = Api::namespaced(server.client().unwrap(), "default");
    let pp = PostParams::default();
    let claimed = FrontendStatus {
        observed_generation: Some(7),
        replicas: Some(7),
        selector: Some("made=up".into()),
    };

    // Create drops .status.
    let mut fe = frontend("shop", "nginx");
    fe.status = Some(claimed.clone());
    let created = api.create(&pp, &fe).unwrap();
    assert_eq!(created.status, None);

    // The status subresource writes .status, and nothing else: not the spec, not the labels.
    let mut via_status = created.clone();
    via_status.spec.image = "changed-by-status".into();
    via_status.metadata.labels.insert("via".into(), "status".into());
    via_status.status = Some(FrontendStatus {
        replicas: Some(1),
        ..Default::default()
    });
    let after_status = api.replace_status("shop", &pp, &via_status).unwrap();
    assert_eq!(after_status.spec, created.spec);
    assert!(after_status.metadata.labels.is_empty());
    assert_eq!(after_status.status.as_ref().and_then(|s| s.replicas), Some(1));
    assert_eq!(
        after_status.metadata.generation,
        Some(1),
        "a status write is no new generation"
    );
    let patched = api
        .patch_status(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}, "status": {"selector": "app=shop"}})),
        )
        .unwrap();
    assert_eq!(patched.spec.replicas, Some(1));
    assert_eq!(
        patched.status.as_ref().and_then(|s| s.selector.as_deref()),
        Some("app=shop")
    );

    // The main resource writes the rest, and keeps the stored status.
    let mut via_main = patched.clone();
    via_main.spec.replicas = Some(3);
    via_main.status = Some(claimed.clone());
    let replaced = api.replace("shop", &pp, &via_main).unwrap();
    assert_eq!(replaced.spec.replicas, Some(3));
    assert_eq!(replaced.status, patched.status);
    assert_eq!(replaced.metadata.generation, Some(2));
    let merged = api
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 9}})),
        )
        .unwrap();
    assert_eq!(merged.status, patched.status);
    assert_eq!(
        merged.metadata.resource_version, replaced.metadata.resource_version,
        "a main-resource write of only .status changes nothing"
    );
}

#[test]
fn the_scale_subresource_moves_spec_replicas_and_reads_the_controllers_status() {
    let server = ApiServer::builder().crds_from_folder(crd_folder()).start().unwrap();
    let run = Running::start(&server);
    let api = run.api();
    api.create(&PostParams::default(), &frontend("shop", "nginx")).unwrap();
    run.converged("shop");

    let scale = api.get_scale("shop").unwrap();
    assert_eq!(scale.spec.replicas, Some(1));
    let status = scale.status.clone().expect("the Scale's status");
    assert_eq!(status.replicas, 1);
    assert_eq!(status.selector.as_deref(), Some("app.kubernetes.io/instance=shop"));

    // Scaling up (conditionally on the Scale's resourceVersion) is a spec change the controller acts on.
    let updated = api
        .replace_scale("shop", &PostParams::default(), &Scale::new(scale.metadata.clone(), 4))
        .unwrap();
    assert_eq!(updated.spec.replicas, Some(4));
    let shop = run.converged("shop");
    assert_eq!((shop.spec.replicas, shop.metadata.generation), (Some(4), Some(2)));
    assert_eq!(shop.status.as_ref().and_then(|s| s.replicas), Some(4));
    eventually("the ConfigMap says 4 replicas", || {
        run.configmaps().get("shop-config").unwrap().data.get("replicas") == Some("4")
    });
    let scale = api.get_scale("shop").unwrap();
    assert_eq!(
        (scale.spec.replicas, scale.status.map(|s| s.replicas)),
        (Some(4), Some(4))
    );

    // The stale Scale is refused; the schema's bounds hold through the subresource too.
    let stale = api.replace_scale("shop", &PostParams::default(), &Scale::new(updated.metadata.clone(), 2));
    assert!(stale.as_ref().is_err_and(Error::is_conflict), "{stale:?}");
    let mut fresh = api.get_scale("shop").unwrap().metadata;
    fresh.resource_version = None;
    let too_many = api.replace_scale("shop", &PostParams::default(), &Scale::new(fresh, 11));
    let err = too_many.expect_err("11 replicas is above the schema's maximum");
    let status = err.status().expect("an API error");
    assert_eq!(
        status.message,
        r#"Frontend.web.example.com "shop" is invalid: spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"#
    );
    assert_eq!(api.get("shop").unwrap().spec.replicas, Some(4));
}

/// The kubectl to run: `KUBECTL`, else the one on `PATH`; `None` (the test skipped, saying why) without one.
fn kubectl() -> Option<PathBuf> {
    common::skip::program(
        "kubectl",
        "KUBECTL",
        "checks the printer columns as kubectl prints them",
    )
}

fn run_kubectl(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", kubectl.display()));
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// kubectl's table, split into rows of cells (cells are separated by two or more spaces).
fn table(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

#[test]
fn kubectl_prints_the_crds_printer_columns() {
    let Some(kubectl) = kubectl() else { return };
    let server = ApiServer::builder().crds_from_folder(crd_folder()).start().unwrap();
    let run = Running::start(&server);
    let mut fe = frontend("shop", "nginx:1.27");
    fe.spec.replicas = Some(3);
    fe.spec.tier = Some("api".into());
    run.api().create(&PostParams::default(), &fe).unwrap();
    run.converged("shop");
    let kc = server.kubeconfig_path();

    let rows = table(&run_kubectl(&kubectl, kc, &["get", "frontends", "-n", "default"]));
    assert_eq!(rows[0], ["NAME", "IMAGE", "DESIRED", "READY", "AGE"]);
    assert_eq!(rows[1][..4], ["shop", "nginx:1.27", "3", "3"]);
    // AGE is a date column: kubectl prints it as an age (`0s`, `12m`).
    assert!(rows[1][4].ends_with(|c: char| "smhdy".contains(c)), "{:?}", rows[1]);

    let rows = table(&run_kubectl(
        &kubectl,
        kc,
        &["get", "frontends", "-n", "default", "-o", "wide"],
    ));
    assert_eq!(
        rows[0],
        ["NAME", "IMAGE", "DESIRED", "READY", "TIER", "SELECTOR", "AGE"]
    );
    assert_eq!(
        rows[1][..6],
        ["shop", "nginx:1.27", "3", "3", "api", "app.kubernetes.io/instance=shop"]
    );

    // By short name, and in the category `all`.
    let rows = table(&run_kubectl(&kubectl, kc, &["get", "fe", "shop", "-n", "default"]));
    assert_eq!(rows[1][..2], ["shop", "nginx:1.27"]);
    let all = run_kubectl(&kubectl, kc, &["get", "all", "-n", "default"]);
    assert!(all.contains("frontend.web.example.com/shop"), "{all}");
}

#[test]
fn deleting_the_crd_removes_every_frontend_and_the_controller_sees_them_gone() {
    let server = ApiServer::builder().crds_from_folder(crd_folder()).start().unwrap();
    let run = Running::start(&server);
    let names = ["a", "b", "c"];
    for name in names {
        run.api()
            .create(&PostParams::default(), &frontend(name, "nginx"))
            .unwrap();
    }
    for name in names {
        run.converged(name);
    }
    assert_eq!(run.configmaps().list(&ListParams::default()).unwrap().items.len(), 3);
    assert!(server.wait_for_watchers("frontends.web.example.com", 1, common::WAIT));

    let crds = kube_informer::object::ApiResource::new(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    );
    // The CRD's name: the resource's plural and group.
    let crd_name = Frontend::api_resource().qualified_name();
    Api::<kube_informer::object::DynamicObject>::all_with(run.client.clone(), &crds)
        .delete(&crd_name, &DeleteParams::default())
        .unwrap();

    let all: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
    eventually("the informer delivers every deletion", || *run.deleted.lock() == all);
    assert!(run.frontends.lister().list(&Default::default()).is_empty());
    let keys: BTreeSet<String> = names.iter().map(|n| format!("default/{n}")).collect();
    eventually("the reconciles find every Frontend gone", || {
        *run.controller.data().gone.lock() == keys
    });
    eventually("the reconciles take the ConfigMaps along", || {
        run.configmaps().list(&ListParams::default()).unwrap().items.is_empty()
    });
    let err = run.api().list(&ListParams::default()).unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    let (_, groups) = get_json(&format!("{}/apis", server.url()));
    assert!(
        !groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "web.example.com"),
        "{groups}"
    );
    let (code, _) = get_json(&format!("{}/apis/web.example.com/v1", server.url()));
    assert_eq!(code, 404);
}

/// GET `url` over plain HTTP: (status, JSON body).
fn get_json(url: &str) -> (u16, serde_json::Value) {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(common::WAIT))
            .build(),
    );
    let response = agent.get(url).call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let code = response.status().as_u16();
    let text = response.into_body().read_to_string().unwrap();
    (
        code,
        serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
    )
}
