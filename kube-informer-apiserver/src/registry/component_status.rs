//! `componentstatuses` (core/v1, deprecated since 1.19, still served by 1.34): kube-apiserver probes its
//! scheduler, controller-manager and etcd servers when asked. Here the store is the etcd and nothing else runs: every
//! component answers `Healthy` with `ok`, as on a healthy cluster, so that clients listing them find the shape they
//! expect. Not stored, not watchable: GET and LIST only, with kube-apiserver's deprecation warning.

use serde_json::{Value, json};

use std::sync::Arc;

use crate::api::errors::{self, Failure};
use crate::registry::reply::Reply;
use crate::registry::resource::ResourceSpec;
use crate::storage::store::StoredObject;

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

/// GET of one component (404 for another name); answered as objects are, so that a `Table` is made of it.
pub(crate) fn get(spec: &ResourceSpec, name: &str) -> Result<Reply, Failure> {
    if !COMPONENTS.contains(&name) {
        return Err(errors::not_found(&spec.api, name));
    }
    let obj = Arc::new(StoredObject::from_value(spec, &status(name)));
    Ok(Reply::warned(Reply::Object(200, obj), vec![WARNING.to_owned()]))
}

/// LIST of every component.
pub(crate) fn list(spec: &ResourceSpec) -> Reply {
    let items = COMPONENTS
        .iter()
        .map(|n| Arc::new(StoredObject::from_value(spec, &status(n))))
        .collect();
    let prefix = br#"{"kind":"ComponentStatusList","apiVersion":"v1","metadata":{},"items":["#.to_vec();
    let suffix = b"}".to_vec();
    Reply::warned(Reply::List { prefix, items, suffix }, vec![WARNING.to_owned()])
}
