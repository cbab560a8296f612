//! The fleet example's controller (`examples/fleet.rs`, included as it is) against the embedded API server with the
//! CRD its Rust types generate: installed unchanged, checked by kubectl (`apply --dry-run=server`), objects
//! round-tripping into the Rust type; then the controller's life — create, scale up and down (spec and scale
//! subresource), an invalid spec parked, an orphan it refuses to adopt, delete with cleanup; a squatter under a
//! wanted name blocking a Fleet until it goes.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use kube_informer::client::params::{DeleteParams, Patch, PatchParams, PostParams};
use kube_informer::client::{Api, Client};
use kube_informer::crd::CustomResourceExt;
use kube_informer::informer::SharedInformerFactory;
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, Resource, is_controlled_by};
use kube_informer_apiserver::{ApiServer, Verb};
use serde_json::json;

use common::WAIT;
use kube_informer::wait;

#[allow(dead_code)]
#[path = "../examples/fleet.rs"]
mod fleet;

use fleet::{FLEET_LABEL, Fleet, FleetSpec, FleetStatus};

/// The CRD as `cargo run --example crdgen` prints it.
fn crd_yaml() -> String {
    let yaml = Fleet::crd_yaml().unwrap();
    assert_eq!(yaml, serde_saphyr::to_string(&Fleet::crd().unwrap()).unwrap());
    yaml
}

fn server() -> ApiServer {
    let server = ApiServer::start().unwrap();
    assert_eq!(
        server.install_crd(&crd_yaml()).unwrap(),
        ["fleets.demo.kube-informer.io"]
    );
    server
}

fn fleet(name: &str, replicas: u32, template: &[(&str, &str)]) -> Fleet {
    let mut f = Fleet::new(
        name,
        FleetSpec {
            replicas,
            template: template.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        },
    );
    f.metadata.namespace = Some("default".into());
    f
}

#[test]
fn the_generated_crd_installs_unchanged_and_objects_round_trip() {
    let server = server();
    let api: Api<Fleet> = Api::namespaced(server.client().unwrap(), "default");
    let created = api
        .create(&PostParams::default(), &fleet("a", 2, &[("k", "v")]))
        .unwrap();
    assert_eq!(created.spec, fleet("a", 2, &[("k", "v")]).spec);
    assert!(created.metadata.uid.is_some() && created.status.is_none());
    // The schema's default fills a template left out.
    let raw = json!({"apiVersion": "demo.kube-informer.io/v1", "kind": "Fleet",
                     "metadata": {"name": "b"}, "spec": {"replicas": 1}});
    let b: Fleet = serde_json::from_value(raw).unwrap();
    assert_eq!(
        api.create(&PostParams::default(), &b).unwrap().spec.template,
        BTreeMap::new()
    );
    // The status subresource takes the status type as it serialises.
    let status = FleetStatus {
        replicas: 2,
        observed_generation: Some(1),
        selector: format!("{FLEET_LABEL}=a"),
        error: None,
    };
    let patched = api
        .patch_status("a", &PatchParams::default(), &Patch::Merge(json!({"status": status})))
        .unwrap();
    assert_eq!(patched.status.as_ref(), Some(&status));
    assert_eq!(api.get("a").unwrap(), patched);
    // The scale subresource reads the paths the CRD names.
    let scale = api.get_scale("a").unwrap();
    assert_eq!(
        (scale.spec.replicas, scale.status.map(|s| s.replicas)),
        (Some(2), Some(2))
    );
    // What the schema refuses, the server refuses: a negative count (u32's minimum 0).
    let bad = json!({"apiVersion": "demo.kube-informer.io/v1", "kind": "Fleet", "metadata": {"name": "c"},
                     "spec": {"replicas": -1}});
    let e = server
        .create_json(&Fleet::api_resource(), Some("default"), bad)
        .unwrap_err();
    assert!(e.to_string().contains("spec.replicas"), "{e}");
}

/// The kubectl to run: `KUBECTL`, else the machine's; `None` (the test prints why and passes) where there is none.
fn kubectl() -> Option<PathBuf> {
    let path = std::env::var_os("KUBECTL").map_or_else(|| PathBuf::from("/usr/bin/kubectl"), PathBuf::from);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("skipped: no kubectl at {} (set KUBECTL)", path.display());
        None
    }
}

#[test]
fn kubectl_applies_the_crdgen_output_with_a_server_dry_run() {
    let Some(kubectl) = kubectl() else { return };
    let out = Command::new(common::example("crdgen"))
        .output()
        .expect("the crdgen example is built by cargo test");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout.clone()).unwrap(), crd_yaml());
    let dir = common::TempDir::new("fleet-crd");
    let file = dir.path("crd.yaml");
    std::fs::write(&file, &out.stdout).unwrap();
    let server = ApiServer::start().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(server.kubeconfig_path())
            .args(args)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "kubectl {args:?}: {text}");
        text
    };
    let file = file.to_str().unwrap();
    let dry = run(&["apply", "--dry-run=server", "-f", file]);
    assert_eq!(
        dry.trim(),
        "customresourcedefinition.apiextensions.k8s.io/fleets.demo.kube-informer.io created (server dry run)"
    );
    assert!(
        run(&["get", "crd", "-o", "name"]).trim().is_empty(),
        "a dry run stores nothing"
    );
    run(&["apply", "-f", file]);
    // Applied as it is, it serves the kind with its columns and short name.
    let manifest = dir.path("fleet.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: demo.kube-informer.io/v1\nkind: Fleet\nmetadata: {name: web, namespace: default}\nspec: {replicas: 3}\n",
    )
    .unwrap();
    run(&["apply", "-f", manifest.to_str().unwrap()]);
    let table = run(&["get", "fl", "-n", "default"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "REPLICAS", "READY", "AGE"], "{table}");
    assert!(table.lines().nth(1).unwrap().starts_with("web"), "{table}");
}

/// The example's controller over a factory, against `server`.
struct Running {
    client: Client,
    factory: SharedInformerFactory,
    controller: kube_informer::controller::Controller<Fleet, ()>,
}

impl Running {
    fn start(server: &ApiServer) -> Running {
        let client = server.client().unwrap();
        let factory = SharedInformerFactory::new(client.clone(), Default::default());
        let controller = fleet::controller(&factory).unwrap();
        controller.start().unwrap();
        Running {
            client,
            factory,
            controller,
        }
    }

    fn fleets(&self) -> Api<Fleet> {
        Api::namespaced(self.client.clone(), "default")
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), "default")
    }

    /// Names of the ConfigMaps the Fleet `name` controls, on the server.
    fn owned(&self, name: &str) -> Vec<String> {
        let Some(fleet) = self.fleets().get_opt(name).unwrap() else {
            return Vec::new();
        };
        let mut names: Vec<String> = self
            .configmaps()
            .list(&Default::default())
            .unwrap()
            .items
            .into_iter()
            .filter(|cm| is_controlled_by(cm, &fleet))
            .filter_map(|cm| cm.metadata.name)
            .collect();
        names.sort();
        names
    }

    /// Waits, on a watch of the Fleet `name`, until `condition` holds for it (`None`: it does not exist).
    fn until(&self, name: &str, what: &str, condition: impl FnMut(Option<&Fleet>) -> bool) -> Option<Fleet> {
        wait::object_timeout(&self.fleets(), name, WAIT, condition).unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    /// Waits until the Fleet's status holds an error `cond` accepts.
    fn until_error(&self, name: &str, what: &str, cond: impl Fn(&str) -> bool) {
        self.until(name, what, |f| {
            f.and_then(|f| f.status.as_ref()?.error.as_deref().map(&cond))
                .unwrap_or(false)
        });
    }

    /// Waits until the Fleet reports `replicas` ready at its current generation, without error, and owns exactly
    /// `<name>-0` … on the server. (The status is written after its ConfigMaps, but a prune reads the cache: one
    /// the cache did not hold yet goes in a later reconcile, which its arrival in the cache queues.)
    fn converged(&self, name: &str, replicas: u32) {
        self.until(name, &format!("{name} converged at {replicas}"), |f| {
            f.is_some_and(|f| {
                f.status.as_ref().is_some_and(|s| {
                    s.replicas == replicas && s.observed_generation == f.metadata.generation && s.error.is_none()
                })
            })
        });
        let want: Vec<String> = (0..replicas).map(|i| format!("{name}-{i}")).collect();
        let gone = |cm: Option<&ConfigMap>| cm.is_none();
        for surplus in self.owned(name).iter().filter(|n| !want.contains(n)) {
            wait::object_timeout(&self.configmaps(), surplus, WAIT, gone).unwrap();
        }
        assert_eq!(self.owned(name), want);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.controller.stop();
        self.factory.shutdown();
    }
}

#[test]
fn the_fleet_controller_creates_scales_parks_and_cleans_up() {
    let server = server();
    let run = Running::start(&server);
    let fleets = run.fleets();
    let pp = PostParams::default();

    // Create: three ConfigMaps holding the template, the finalizer, a status at generation 1.
    fleets.create(&pp, &fleet("web", 3, &[("color", "blue")])).unwrap();
    run.converged("web", 3);
    let live = fleets.get("web").unwrap();
    assert_eq!(live.metadata.finalizers, ["fleets.demo.kube-informer.io/cleanup"]);
    assert_eq!(live.status.as_ref().unwrap().selector, format!("{FLEET_LABEL}=web"));
    let cm = run.configmaps().get("web-1").unwrap();
    assert_eq!(cm.data.get("color"), Some("blue"));
    assert_eq!(cm.metadata.labels.get(FLEET_LABEL), Some("web"));

    // Scale up by the spec, with a template change reaching every ConfigMap.
    let patch = json!({"spec": {"replicas": 5, "template": {"color": "green"}}});
    fleets
        .patch("web", &PatchParams::default(), &Patch::Merge(patch))
        .unwrap();
    run.converged("web", 5);
    for i in 0..5 {
        let cm = run.configmaps().get(&format!("web-{i}")).unwrap();
        assert_eq!(cm.data.get("color"), Some("green"), "web-{i}");
    }

    // Scale down through the scale subresource, as `kubectl scale` does.
    let scale = json!({"spec": {"replicas": 1}});
    fleets
        .patch_scale("web", &PatchParams::default(), &Patch::Merge(scale))
        .unwrap();
    run.converged("web", 1);

    // An invalid spec: reported in the status and parked (no retry) until the spec changes.
    let retries = || run.controller.metrics().queue.map_or(0, |q| q.retries);
    let retries_before = retries();
    let bad = json!({"spec": {"template": {"not valid!": "x"}}});
    fleets
        .patch("web", &PatchParams::default(), &Patch::Merge(bad))
        .unwrap();
    run.until_error("web", "the invalid spec reported", |e| {
        e.contains("\"not valid!\" is not a valid")
    });
    // Another Fleet converging takes many times the first back-off (5 ms): a key sent back to the rate limiter
    // would have been retried by then. (Its ConfigMaps' deletions still reconcile it, and fail: no retry.)
    fleets.create(&pp, &fleet("other", 1, &[])).unwrap();
    run.converged("other", 1);
    assert_eq!(
        retries(),
        retries_before,
        "the invalid spec went back to the rate limiter"
    );
    // Fixed: it converges again.
    let fixed = json!({"spec": {"template": {"not valid!": null, "color": "red"}}});
    fleets
        .patch("web", &PatchParams::default(), &Patch::Merge(fixed))
        .unwrap();
    run.converged("web", 1);

    // Someone's ConfigMap has the name a Fleet wants: not adopted, not overwritten.
    let theirs = ConfigMap::new(ObjectMeta::namespaced("default", "mine-0")).with("owner", "someone");
    run.configmaps().create(&pp, &theirs).unwrap();
    fleets.create(&pp, &fleet("mine", 1, &[("color", "blue")])).unwrap();
    run.until_error("mine", "the adoption refused", |e| e.contains("refusing to adopt"));
    let still = run.configmaps().get("mine-0").unwrap();
    assert_eq!(
        (still.data.get("owner"), still.data.get("color")),
        (Some("someone"), None)
    );
    assert!(still.metadata.owner_references.is_empty());

    // Delete: the finalizer's cleanup deletes what the Fleet owns, then lets it go; the orphan stays.
    for name in ["web", "other", "mine"] {
        fleets.delete(name, &DeleteParams::default()).unwrap();
    }
    for name in ["web", "other", "mine"] {
        run.until(name, "the fleets gone", |f| f.is_none());
    }
    let left: Vec<String> = run
        .configmaps()
        .list(&Default::default())
        .unwrap()
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .collect();
    assert_eq!(left, ["mine-0"]);
}

#[test]
fn a_squatter_blocks_its_fleet_until_it_goes() {
    let server = server();
    let run = Running::start(&server);
    let pp = PostParams::default();
    // Someone's ConfigMap under the second name the Fleet wants.
    let theirs = ConfigMap::new(ObjectMeta::namespaced("default", "blocked-1")).with("owner", "someone");
    run.configmaps().create(&pp, &theirs).unwrap();
    run.fleets()
        .create(&pp, &fleet("blocked", 2, &[("color", "blue")]))
        .unwrap();
    run.until_error("blocked", "the Fleet blocked by the squatter", |e| {
        e.contains("\"blocked-1\"") && e.contains("refusing to adopt")
    });
    // What it could make, it made; the squatter is untouched and not adopted.
    assert_eq!(run.owned("blocked"), ["blocked-0"]);
    let still = run.configmaps().get("blocked-1").unwrap();
    assert_eq!(
        (still.data.get("owner"), still.data.get("color")),
        (Some("someone"), None)
    );
    assert!(still.metadata.owner_references.is_empty());
    // The squatter goes: nothing about the Fleet changed, yet it resumes — the refused name was remembered.
    run.configmaps().delete("blocked-1", &DeleteParams::default()).unwrap();
    run.converged("blocked", 2);
    let cm = run.configmaps().get("blocked-1").unwrap();
    assert_eq!(cm.data.get("color"), Some("blue"));
}

#[test]
fn a_steady_state_reconcile_writes_no_status() {
    let server = server();
    let run = Running::start(&server);
    run.fleets()
        .create(&PostParams::default(), &fleet("calm", 2, &[("color", "blue")]))
        .unwrap();
    run.converged("calm", 2);
    // Quiet first: the controller's cache holds the Fleet as the server does (a reconcile still running on an
    // older copy would write the status again, rightly), and nothing is queued or running.
    let live = run.fleets().get("calm").unwrap();
    wait::until_timeout(&run.factory.informer::<Fleet>(), WAIT, |cache| {
        cache
            .get("default/calm")
            .is_some_and(|f| f.metadata.resource_version == live.metadata.resource_version)
    })
    .unwrap();
    common::eventually("the controller idle", || {
        let m = run.controller.metrics();
        m.in_flight == 0 && m.queue.is_some_and(|q| q.depth == 0 && q.processing == 0)
    });
    let reconciles = || run.controller.metrics().reconciles;
    let before = reconciles();
    let mark = server.requests().mark();
    // An owned ConfigMap edited by hand: the Fleet is reconciled and puts it back; its status, unchanged, is not
    // written.
    let edit = json!({"data": {"color": "red"}});
    run.configmaps()
        .patch("calm-0", &PatchParams::default(), &Patch::Merge(edit))
        .unwrap();
    wait::object_timeout(&run.configmaps(), "calm-0", WAIT, |cm| {
        cm.is_some_and(|cm| cm.data.get("color") == Some("blue"))
    })
    .unwrap();
    // The reconcile that put it back has returned (its status write, had there been one, is in the log).
    common::eventually("the reconcile returned", || reconciles() > before);
    let status_writes = server
        .requests()
        .since(mark)
        .into_iter()
        .filter(|r| r.is(Verb::Patch, "fleets") && r.subresource.as_deref() == Some("status"))
        .count();
    assert_eq!(status_writes, 0);
    let patches: Vec<_> = server
        .requests()
        .since(mark)
        .into_iter()
        .filter(|r| r.is(Verb::Patch, "configmaps") && r.code == 200)
        .collect();
    assert_eq!(patches.len(), 2, "the hand edit and the controller's: {patches:#?}");
}
