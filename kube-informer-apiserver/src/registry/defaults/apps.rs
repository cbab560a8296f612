//! apps/v1 Deployment: `SetDefaults_Deployment`, the pod template's defaulters, and the strategy's
//! `PrepareForCreate` (an empty status; the generation is the generic rules').

use serde_json::{Value, json};

use super::pod::default_pod_template;
use super::{Cluster, Object, absent, child_or_empty, default_ptr, text};
use crate::api::errors::Failure;

/// `SetObjectDefaults_Deployment`: one replica, a rolling update of 25% / 25%, ten old replica sets kept, a
/// 600-second progress deadline; the template defaulted as a pod spec is.
pub(super) fn default_deployment(obj: &mut Object) {
    let Some(spec) = child_or_empty(obj, "spec") else {
        return;
    };
    default_ptr(spec, "replicas", 1);
    if let Some(strategy) = child_or_empty(spec, "strategy") {
        super::default_str(strategy, "type", "RollingUpdate");
        if text(strategy, "type") == "RollingUpdate"
            && let Some(rolling) = child_or_empty(strategy, "rollingUpdate")
        {
            default_ptr(rolling, "maxUnavailable", "25%");
            default_ptr(rolling, "maxSurge", "25%");
        }
    }
    default_ptr(spec, "revisionHistoryLimit", 10);
    default_ptr(spec, "progressDeadlineSeconds", 600);
    if let Some(template) = child_or_empty(spec, "template") {
        default_pod_template(template);
    }
    if absent(obj, "status") {
        obj.insert("status".into(), json!({}));
    }
}

/// The deployment strategy's `PrepareForCreate`: `status` is reset to an empty `DeploymentStatus`.
pub(super) fn create_deployment(obj: &mut Object, _: &Cluster<'_>) -> Result<(), Failure> {
    obj.insert("status".into(), Value::Object(Object::new()));
    Ok(())
}
