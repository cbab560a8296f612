//! fleet: a Fleet keeps `spec.replicas` ConfigMaps holding `spec.template`; its CRD comes from these types
//! (`cargo run --example crdgen | kubectl apply -f -`). `cargo run --example fleet` runs the controller against the
//! kubeconfig's cluster under a manager, until SIGTERM or Ctrl-C.
//!
//! What it does: a finalizer (the ConfigMaps deleted before the Fleet goes), a status with the observed generation
//! (written only when it changes), the scale subresource (`kubectl scale fleet/web --replicas=5`), a generation
//! predicate (its status writes do not wake it), an invalid spec reported and parked (no retry until the spec
//! changes), someone else's ConfigMap under a wanted name never taken over (reported; the Fleet resumes when that
//! ConfigMap goes), surplus ConfigMaps pruned, and a graceful shutdown whose report is the exit status.

use kube_informer::object::core::ConfigMap;
use kube_informer::prelude::*;
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

fn reconcile(_key: &str, ctx: &Context<'_, Fleet, ()>) -> Result<Action, FinalizerError<Error>> {
    ctx.finalizer(FINALIZER, |event| match event {
        FinalizerEvent::Apply(fleet) => apply(ctx, &fleet),
        FinalizerEvent::Cleanup(_) => ctx.prune(|_: &ConfigMap| false).map(|_| Action::await_change()),
    })
}

/// Makes the Fleet own exactly `<name>-0` … `<name>-<replicas - 1>`, each holding the template; reports in its
/// status. An invalid spec or someone else's ConfigMap is reported there, not retried: the Fleet is reconciled
/// again when its spec changes, or when that ConfigMap changes or goes.
fn apply(ctx: &Context<'_, Fleet, ()>, fleet: &Fleet) -> Result<Action> {
    let wanted: Vec<String> = (0..fleet.spec.replicas)
        .map(|i| format!("{}-{i}", ctx.name()))
        .collect();
    let invalid = |k: &&String| !k.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c));
    let bad_key = fleet.spec.template.keys().find(invalid);
    let mut error = bad_key.map(|k| format!("template key {k:?} is not a valid ConfigMap key"));
    if error.is_none() {
        let configmaps = ctx.api::<ConfigMap>()?;
        for name in &wanted {
            let done = ctx.create_or_update(&configmaps, name, |cm| {
                cm.metadata.labels.insert(FLEET_LABEL.into(), ctx.name().into());
                cm.data = (&fleet.spec.template).into();
            })?;
            if let OperationResult::Refused(why) = done {
                error.get_or_insert(why.to_string());
            }
        }
        ctx.prune(|cm: &ConfigMap| wanted.iter().any(|w| cm.meta().name() == Some(w.as_str())))?;
    }
    ctx.update_status(&FleetStatus {
        replicas: if error.is_none() {
            fleet.spec.replicas
        } else {
            ctx.owned::<ConfigMap>()?.len() as u32
        },
        observed_generation: fleet.metadata.generation,
        selector: format!("{FLEET_LABEL}={}", ctx.name()),
        error,
    })?;
    Ok(Action::await_change())
}

pub fn controller(factory: &SharedInformerFactory) -> Result<Controller<Fleet, ()>> {
    Controller::builder(factory.informer::<Fleet>(), ())
        .predicate(GenerationChanged)
        .owns(factory.informer::<ConfigMap>())
        .build(reconcile)
}

#[allow(dead_code)] // the test and crdgen include this file for the controller and the types
fn main() -> Result<ShutdownReport, Box<dyn std::error::Error>> {
    let manager = Manager::try_default()?;
    manager.add_controller(controller(manager.factory())?)?;
    Ok(manager.run()?) // until SIGTERM or Ctrl-C: reconciles in flight finish, threads are joined
}
