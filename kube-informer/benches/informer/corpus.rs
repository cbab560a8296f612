//! The ConfigMap corpus: what the sync, relist, scale and burst runs cache.

use kube_informer::object::ApiResource;
use serde_json::{Value, json};

pub(crate) const NAMESPACES: usize = 50;
/// Objects the watch burst updates, round robin.
pub(crate) const BURST_OBJECTS: usize = 1000;

pub(crate) fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

/// A ConfigMap as clusters hold them: 10 data keys, 4 labels, 2 annotations, a managedFields entry (Helm; about 36%
/// of the object), about 2 KB of JSON once the server adds uid, resourceVersion and timestamps.
pub(crate) fn object(i: usize, version: usize) -> Value {
    let keys: Vec<String> = (0..10).map(|k| format!("config-key-{k:02}.properties")).collect();
    let data: serde_json::Map<String, Value> = keys
        .iter()
        .enumerate()
        .map(|(k, key)| {
            (
                key.clone(),
                json!(format!(
                    "value-{i}-{k}-{version:06}: some setting = {}",
                    "x".repeat(k * 3)
                )),
            )
        })
        .collect();
    let fields_data: serde_json::Map<String, Value> = keys.iter().map(|key| (format!("f:{key}"), json!({}))).collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("app-config-{i:06}"),
            "namespace": namespace(i),
            "labels": {
                "app.kubernetes.io/name": "shop",
                "app.kubernetes.io/component": format!("component-{}", i % 7),
                "app.kubernetes.io/managed-by": "helm",
                "environment": "production"
            },
            "annotations": {
                "meta.helm.sh/release-name": "shop",
                "meta.helm.sh/release-namespace": namespace(i)
            },
            "managedFields": [{
                "manager": "helm",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-05-06T07:08:09Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:data": fields_data,
                    "f:metadata": {
                        "f:annotations": {".": {}, "f:meta.helm.sh/release-name": {}, "f:meta.helm.sh/release-namespace": {}},
                        "f:labels": {".": {}, "f:app.kubernetes.io/component": {}, "f:app.kubernetes.io/managed-by": {},
                                     "f:app.kubernetes.io/name": {}, "f:environment": {}}
                    }
                }
            }]
        },
        "data": data
    })
}

pub(crate) fn namespace(i: usize) -> String {
    format!("team-{:02}", i % NAMESPACES)
}
