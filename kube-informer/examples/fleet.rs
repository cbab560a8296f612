//! fleet: a Fleet keeps `spec.replicas` ConfigMaps holding `spec.template`; its CRD comes from these types
//! (`cargo run --example crdgen | kubectl apply -f -`). `cargo run --example fleet` runs the controller against the
//! kubeconfig's cluster under a manager, until SIGTERM or Ctrl-C.

use kube_informer::client::{Api, Client, params::DeleteParams, params::Patch, params::PatchParams};
use kube_informer::controller::{Action, Context, Controller, FinalizerError, FinalizerEvent, finalizer};
use kube_informer::manager::{Manager, ManagerOptions};
use kube_informer::object::{CrdOptions, core::ConfigMap, set_controller_reference};
use kube_informer::{Error, Result, controller::predicate::GenerationChanged, informer::SharedInformerFactory};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetSpec {
    /// How many ConfigMaps.
    pub replicas: u32,
    /// The data of each.
    #[serde(default)]
    pub template: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    pub replicas: u32,
    pub observed_generation: Option<i64>,
    pub selector: String,
    pub error: Option<String>,
}

kube_informer::custom_resource! {
    #[derive(Clone, Debug, PartialEq)]
    pub struct Fleet { spec: FleetSpec, status: FleetStatus }
    group: "demo.kube-informer.io", version: "v1", namespaced: true,
    crd: CrdOptions::default().short_name("fl").printer_column("Replicas", "integer", ".spec.replicas")
        .printer_column("Ready", "integer", ".status.replicas").printer_column("Age", "date", ".metadata.creationTimestamp")
        .scale(".spec.replicas", ".status.replicas", Some(".status.selector")),
}

const FINALIZER: &str = "fleets.demo.kube-informer.io/cleanup";
pub const FLEET_LABEL: &str = "fleets.demo.kube-informer.io/name";

fn reconcile(_key: &str, ctx: &Context<'_, Fleet, Client>) -> Result<Action, FinalizerError<Error>> {
    let Some(fleet) = ctx.object() else {
        return Ok(Action::await_change());
    };
    let fleets: Api<Fleet> = Api::namespaced(ctx.data().clone(), ctx.namespace());
    finalizer(&fleets, FINALIZER, fleet, |event| match event {
        FinalizerEvent::Apply(fleet) => apply(ctx, &fleet, &fleets),
        FinalizerEvent::Cleanup(fleet) => scale(ctx, &fleet, 0).map(|_| Action::await_change()),
    })
}

fn apply(ctx: &Context<'_, Fleet, Client>, fleet: &Fleet, fleets: &Api<Fleet>) -> Result<Action> {
    let valid = |k: &&String| k.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c));
    let result = match fleet.spec.template.keys().find(|k| !valid(k)) {
        Some(k) => Err(Error::InvalidInput(format!(
            "template key {k:?} is not a valid ConfigMap key"
        ))),
        None => scale(ctx, fleet, fleet.spec.replicas),
    };
    let status = FleetStatus {
        replicas: *result.as_ref().unwrap_or(&(ctx.owned::<ConfigMap>()?.len() as u32)),
        observed_generation: fleet.metadata.generation,
        selector: format!("{FLEET_LABEL}={}", ctx.name()),
        error: result.as_ref().err().map(ToString::to_string),
    };
    if fleet.status.as_ref() != Some(&status) {
        let patch = Patch::Merge(serde_json::json!({ "status": status }));
        fleets.patch_status(ctx.name(), &PatchParams::default(), &patch)?;
    }
    result.map(|_| Action::await_change())
}

/// Makes the Fleet own exactly `<name>-0` … `<name>-<replicas - 1>`, each holding the template.
fn scale(ctx: &Context<'_, Fleet, Client>, fleet: &Fleet, replicas: u32) -> Result<u32> {
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.data().clone(), ctx.namespace());
    let wanted: Vec<String> = (0..replicas).map(|i| format!("{}-{i}", ctx.name())).collect();
    for name in &wanted {
        ctx.create_or_update(&configmaps, name, |cm: &mut ConfigMap| {
            set_controller_reference(fleet, cm)?; // refuses a ConfigMap of that name someone else made
            cm.metadata.labels.insert(FLEET_LABEL.into(), ctx.name().into());
            cm.data = (&fleet.spec.template).into();
            Ok::<_, Error>(())
        })?;
    }
    for cm in ctx.owned::<ConfigMap>()? {
        let (Some(name), Some(uid)) = (&cm.metadata.name, &cm.metadata.uid) else {
            continue;
        };
        if wanted.contains(name) {
            continue;
        }
        match configmaps.delete(name, &DeleteParams::default().precondition_uid(uid)) {
            Err(e) if !e.is_not_found() && !e.is_conflict() => return Err(e),
            _ => {} // gone already, or another object under that name since
        }
    }
    Ok(replicas)
}

/// An invalid spec, or a ConfigMap someone else made under a wanted name: retrying will not help.
fn error_policy(_: Option<&Fleet>, err: &FinalizerError<Error>, _: &Context<'_, Fleet, Client>) -> Action {
    match err {
        FinalizerError::Apply(Error::InvalidInput(_) | Error::OwnerReference(_)) => Action::await_change(),
        _ => Action::requeue_rate_limited(),
    }
}

pub fn controller(factory: &SharedInformerFactory, client: Client) -> Result<Controller<Fleet, Client>> {
    Controller::builder(factory.informer::<Fleet>(), client)
        .predicate(GenerationChanged)
        .owns(factory.informer::<ConfigMap>())
        .build_with_error_policy(reconcile, error_policy)
}

#[allow(dead_code)] // the test and crdgen include this file for the controller and the types
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manager = Manager::new(Client::try_default()?, ManagerOptions::default())?;
    manager.add_controller(controller(manager.factory(), manager.client().clone())?)?;
    let report = manager.run()?; // until SIGTERM or Ctrl-C: reconciles in flight finish, threads are joined
    std::process::exit(if report.is_clean() { 0 } else { 1 });
}
