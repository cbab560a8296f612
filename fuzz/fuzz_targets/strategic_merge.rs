//! Strategic merge patch never panics on any JSON: the input is a patch for a Deployment (or, as `[original,
//! patch]`, both documents), applied with the Deployment's and the Pod's built-in schemas. Applying `{}` gives the
//! original back, an error is one of the three kube-apiserver answers, and a result holds no directive key the
//! original did not.

#![no_main]

use std::sync::LazyLock;

use kube_informer_apiserver::ResourceSpec;
use kube_informer_apiserver::strategic_merge::{self, StrategicMergeError};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

static SCHEMAS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    ResourceSpec::defaults()
        .into_iter()
        .filter(|s| ["Deployment", "Pod"].contains(&s.api_resource().kind.as_str()))
        .map(|s| s.object_schema().expect("built-in schema").clone())
        .collect()
});

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a", "b"]},
        "spec": {"replicas": 2, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                 "template": {"spec": {
                     "containers": [
                         {"name": "a", "image": "x", "ports": [{"containerPort": 80}], "env": [{"name": "E"}]},
                         {"name": "b", "image": "y", "args": ["1", "2"]},
                     ],
                     "volumes": [{"name": "v", "emptyDir": {}}],
                 }}},
    })
}

fn is_directive(k: &str) -> bool {
    k == "$patch"
        || k == "$retainKeys"
        || k.starts_with("$setElementOrder")
        || k.starts_with("$deleteFromPrimitiveList")
}

fn has_directive(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| is_directive(k) || has_directive(v)),
        Value::Array(a) => a.iter().any(has_directive),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (original, patch) = match input {
        Value::Array(mut pair) if pair.len() == 2 => {
            let patch = pair.pop().unwrap_or_default();
            (pair.pop().unwrap_or_default(), patch)
        }
        patch => (deployment(), patch),
    };
    for schema in SCHEMAS.iter() {
        if original.is_object() {
            let same = strategic_merge::apply(original.clone(), json!({}), schema);
            assert_eq!(same.as_ref(), Ok(&original), "{{}} changed {original}");
        }
        match strategic_merge::apply(original.clone(), patch.clone(), schema) {
            Ok(result) => assert!(
                has_directive(&original) || !has_directive(&result),
                "a directive was stored: {original} + {patch} = {result}"
            ),
            Err(e) => {
                assert!(matches!(
                    e,
                    StrategicMergeError::BadRequest(_)
                        | StrategicMergeError::Invalid(_)
                        | StrategicMergeError::Internal(_)
                ));
                let _ = (e.to_string(), e.code());
            }
        }
    }
});
