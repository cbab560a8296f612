//! A pod's subresources as kube-apiserver answers them where no kubelet runs (`pkg/registry/core/pod/strategy.go`'s
//! `LogLocation`, `ExecLocation`, `AttachLocation`, `PortForwardLocation`, and the ephemeral containers strategy):
//!
//! * `log`: the container is checked (a pod of several containers needs `?container=`, which must be one of
//!   them: 400); a pod bound to no node answers an empty `text/plain` log, as kube-apiserver does while a pod is
//!   unscheduled; a bound pod's node must exist (404) and, no kubelet being there, its log is empty too.
//! * `exec`, `attach`, `portforward`: the same container check, then 400 `pod p does not have a host assigned` for an
//!   unscheduled pod; a bound pod's missing node is a 404, and an existing one has no kubelet to dial (500, as
//!   kube-apiserver's proxy answers when a kubelet cannot be reached).
//! * `ephemeralcontainers`: GET answers the pod; PUT and PATCH change only `spec.ephemeralContainers`, which may
//!   only grow (a container once added may not be changed or removed: 422).

use serde_json::Value;

use crate::api::errors::{self, Failure, FieldError};
use crate::registry::Store;
use crate::registry::reply::Reply;
use crate::storage::store::object_key;
use kube_informer::object::ApiResource;
use std::sync::Arc;

fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

fn nodes() -> ApiResource {
    ApiResource::new("", "v1", "Node", "nodes", false)
}

/// The stored pod, or 404.
fn pod(store: &Store, ns: &str, name: &str) -> Result<Value, Failure> {
    store
        .lock()
        .get("pods", &object_key(ns, name))
        .map(|o| o.to_value())
        .ok_or_else(|| errors::not_found(&pods(), name))
}

fn names(pod: &Value, list: &str) -> Vec<String> {
    pod["spec"][list]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The container a request is for (`validateContainer`): the one asked, which must be the pod's; else the pod's
/// only container.
fn container(pod: &Value, name: &str, asked: Option<&str>) -> Result<String, Failure> {
    let containers = names(pod, "containers");
    let mut all = names(pod, "initContainers");
    all.extend(containers.iter().cloned());
    all.extend(names(pod, "ephemeralContainers"));
    match asked.filter(|c| !c.is_empty()) {
        Some(c) if all.iter().any(|x| x == c) => Ok(c.to_owned()),
        Some(c) => Err(errors::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => match containers.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(errors::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => Err(errors::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                all.join(" ")
            ))),
        },
    }
}

/// The node a pod is bound to, which must exist; `None` when the pod is unscheduled.
fn node(store: &Store, pod: &Value) -> Result<Option<String>, Failure> {
    let Some(node) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    if store.lock().get("nodes", node).is_none() {
        return Err(errors::not_found(&nodes(), node));
    }
    Ok(Some(node.to_owned()))
}

fn param<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// `GET pods/{name}/log`.
pub(crate) fn log(store: &Store, ns: &str, name: &str, query: &[(String, String)]) -> Result<Reply, Failure> {
    let pod = pod(store, ns, name)?;
    container(&pod, name, param(query, "container"))?;
    node(store, &pod)?;
    Ok(Reply::Raw {
        code: 200,
        headers: vec![("Content-Type".to_owned(), "text/plain".to_owned())],
        body: Arc::new(Vec::new()),
    })
}

/// `exec`, `attach` (GET or POST) and `portforward` of a pod.
pub(crate) fn stream(
    store: &Store,
    ns: &str,
    name: &str,
    subresource: &str,
    query: &[(String, String)],
) -> Result<Reply, Failure> {
    let pod = pod(store, ns, name)?;
    if subresource != "portforward" {
        container(&pod, name, param(query, "container"))?;
    }
    match node(store, &pod)? {
        None => Err(errors::bad_request(format!("pod {name} does not have a host assigned"))),
        Some(node) => Err(errors::internal(format!(
            "error dialing backend: no kubelet serves node {node:?} (the embedded API server runs none)"
        ))),
    }
}

/// The pod `new` as an `ephemeralcontainers` write leaves it: `old` but for `spec.ephemeralContainers`, checked to
/// only grow.
pub(crate) fn ephemeral_containers_update(old: &Value, new: &mut Value) -> Result<(), Failure> {
    let name = old["metadata"]["name"].as_str().unwrap_or("").to_owned();
    let wanted = new["spec"]["ephemeralContainers"].clone();
    let had = old["spec"]["ephemeralContainers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let now = wanted.as_array().cloned().unwrap_or_default();
    let mut errs = Vec::new();
    for (i, c) in had.iter().enumerate() {
        let same = now.iter().find(|n| n["name"] == c["name"]);
        match same {
            None => errs.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                &format!(
                    "existing ephemeral containers {:?} may not be removed",
                    c["name"].as_str().unwrap_or("")
                ),
            )),
            Some(n) if n != c => errs.push(FieldError::forbidden(
                &format!("spec.ephemeralContainers[{i}]"),
                "may not be changed in an update",
            )),
            Some(_) => {}
        }
    }
    if !errs.is_empty() {
        return Err(errors::invalid("", "Pod", &name, errs));
    }
    let rv = new["metadata"]["resourceVersion"].clone();
    *new = old.clone();
    if !rv.is_null() {
        new["metadata"]["resourceVersion"] = rv;
    }
    match wanted {
        Value::Array(a) if !a.is_empty() => new["spec"]["ephemeralContainers"] = Value::Array(a),
        _ => {
            if let Some(spec) = new["spec"].as_object_mut() {
                spec.remove("ephemeralContainers");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_container_is_the_one_asked_or_the_only_one() {
        let one = json!({"spec": {"containers": [{"name": "a"}]}});
        assert_eq!(container(&one, "p", None).unwrap(), "a");
        assert_eq!(
            container(&one, "p", Some("b")).unwrap_err().message,
            "container b is not valid for pod p"
        );
        let two = json!({"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            container(&two, "p", None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [i a b]"
        );
        assert_eq!(container(&two, "p", Some("i")).unwrap(), "i");
    }

    #[test]
    fn ephemeral_containers_may_only_be_added() {
        let old = json!({"metadata": {"name": "p", "resourceVersion": "5"},
                         "spec": {"containers": [{"name": "a"}], "ephemeralContainers": [{"name": "d", "image": "busybox"}]}});
        let mut new = json!({"metadata": {"name": "p", "resourceVersion": "5"},
                             "spec": {"containers": [{"name": "changed"}],
                                      "ephemeralContainers": [{"name": "d", "image": "busybox"}, {"name": "e", "image": "x"}]}});
        ephemeral_containers_update(&old, &mut new).unwrap();
        assert_eq!(
            new["spec"]["containers"],
            json!([{"name": "a"}]),
            "only ephemeral containers change"
        );
        assert_eq!(new["spec"]["ephemeralContainers"][1]["name"], "e");
        let mut removed = json!({"spec": {"ephemeralContainers": []}});
        let err = ephemeral_containers_update(&old, &mut removed).unwrap_err();
        assert_eq!(err.code, 422);
    }
}
