//! `componentstatuses` (core/v1, deprecated since 1.19, still served by 1.34): kube-apiserver probes its
//! scheduler, controller-manager and etcd servers when asked. Here the store is the etcd and nothing else runs: every
//! component answers `Healthy` with `ok`, as on a healthy cluster, so that clients listing them find the shape they
//! expect. Not stored, not watchable: GET and LIST only, with kube-apiserver's deprecation warning.

use serde_json::{Value, json};

use super::errors::{self, Failure};
use super::reply::Reply;
use kube_informer::object::ApiResource;

/// The warning kube-apiserver attaches to every answer.
pub(crate) const WARNING: &str = "v1 ComponentStatus is deprecated in v1.19+";

const COMPONENTS: [&str; 3] = ["controller-manager", "etcd-0", "scheduler"];

fn status(name: &str) -> Value {
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
    })
}

/// GET of one component (404 for another name).
pub(crate) fn get(name: &str) -> Result<Reply, Failure> {
    if !COMPONENTS.contains(&name) {
        let ar = ApiResource::new("", "v1", "ComponentStatus", "componentstatuses", false);
        return Err(errors::not_found(&ar, name));
    }
    Ok(Reply::warned(Reply::value(200, &status(name)), vec![WARNING.to_owned()]))
}

/// LIST of every component.
pub(crate) fn list() -> Reply {
    let items: Vec<Value> = COMPONENTS.iter().map(|n| status(n)).collect();
    let list = json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items});
    Reply::warned(Reply::value(200, &list), vec![WARNING.to_owned()])
}
