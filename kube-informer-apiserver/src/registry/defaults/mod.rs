//! What kube-apiserver does to an object of a built-in kind on its way to storage, beyond the generic registry
//! rules of [`strategy`](crate::registry::strategy): the scheme's defaulting (`pkg/apis/<group>/<version>/defaults.go`
//! and the generated `SetObjectDefaults_<Kind>`, which says which defaulters run for which nested types), the registry
//! strategy's `PrepareForCreate` / `PrepareForUpdate` (`pkg/registry/<group>/<kind>/strategy.go`), and the Service
//! REST's allocation of cluster IPs and node ports.
//!
//! Each default resource carries its [`KindRules`] ([`ResourceSpec::defaults`](crate::ResourceSpec::defaults)), found
//! by `apiVersion/Kind`; a custom resource has none (its schema's defaults are applied by
//! [`schema`](crate::schema)). Both kinds of defaulting run at the same point, [`admission`](crate::admission), on
//! every object decoded from a create or update body and on the result of a patch (kube-apiserver decodes the
//! patched JSON into its Go type, which defaults it). Most of Kubernetes' defaulting of its own types depends on
//! other fields (a pull policy by the image's tag, a target port from the port, a rolling update only for that
//! strategy type, requests from limits), which a schema's `default` cannot say: hence functions, not schema data.
//! Then the write rules of [`strategy`](crate::registry::strategy) call the rest:
//!
//! 1. [`KindRules::prepare_for_create`] once the generic registry has prepared a new object (name, uid, status
//!    dropped unless [`KindRules::create_keeps_status`]);
//! 2. [`KindRules::prepare_for_update`] with the stored object, before the generation is compared.
//!
//! Besides defaulting proper, [`KindRules::default`] also writes the fields Go's `encoding/json` always writes for
//! a built-in type — a non-pointer struct is never omitted, a field without `omitempty` is written even when empty —
//! where a client that leaves them out would otherwise read back something a cluster never shows (a container's
//! `resources: {}`, an event's `reportingComponent: ""`).

mod apiextensions;
mod apps;
mod core;
mod image;
mod pod;
mod qos;
pub(crate) mod rbac;
mod service;
mod service_alloc;

use serde_json::Value;

use crate::api::errors::Failure;
use crate::registry::kind_rules::{Cluster, KindRules, Object};

/// Nothing beyond the generic rules.
fn no_create(_: &mut Object, _: &Cluster<'_>) -> Result<(), Failure> {
    Ok(())
}

fn no_update(_: &mut Object, _: &Object, _: bool, _: &Cluster<'_>) -> Result<(), Failure> {
    Ok(())
}

/// Every kind with rules: the default resources' kinds, and CRDs.
static RULES: [KindRules; 10] = [
    KindRules {
        kind: "v1/ConfigMap",
        default: |_| {},
        create_keeps_status: false,
        prepare_for_create: no_create,
        prepare_for_update: no_update,
        delete_finalizer: None,
    },
    KindRules {
        kind: "v1/Secret",
        default: core::default_secret,
        create_keeps_status: false,
        prepare_for_create: no_create,
        prepare_for_update: no_update,
        delete_finalizer: None,
    },
    KindRules {
        kind: "v1/Namespace",
        default: core::default_namespace,
        create_keeps_status: false,
        prepare_for_create: core::create_namespace,
        prepare_for_update: core::update_namespace,
        delete_finalizer: None,
    },
    KindRules {
        kind: "v1/Event",
        default: core::default_event,
        create_keeps_status: false,
        prepare_for_create: no_create,
        prepare_for_update: no_update,
        delete_finalizer: None,
    },
    KindRules {
        kind: "v1/Pod",
        default: pod::default_pod,
        create_keeps_status: false,
        prepare_for_create: pod::create_pod,
        prepare_for_update: pod::update_pod,
        delete_finalizer: None,
    },
    KindRules {
        kind: "v1/Node",
        default: core::default_node,
        create_keeps_status: true,
        prepare_for_create: no_create,
        prepare_for_update: no_update,
        delete_finalizer: None,
    },
    KindRules {
        kind: "v1/Service",
        default: service::default_service,
        create_keeps_status: false,
        prepare_for_create: service::create_service,
        prepare_for_update: service::update_service,
        delete_finalizer: None,
    },
    KindRules {
        kind: "coordination.k8s.io/v1/Lease",
        default: core::default_lease,
        create_keeps_status: false,
        prepare_for_create: no_create,
        prepare_for_update: no_update,
        delete_finalizer: None,
    },
    KindRules {
        kind: "apps/v1/Deployment",
        default: apps::default_deployment,
        create_keeps_status: false,
        prepare_for_create: apps::create_deployment,
        prepare_for_update: no_update,
        delete_finalizer: None,
    },
    KindRules {
        kind: "apiextensions.k8s.io/v1/CustomResourceDefinition",
        default: apiextensions::default_crd,
        create_keeps_status: false,
        prepare_for_create: apiextensions::prepare_crd_create,
        prepare_for_update: apiextensions::prepare_crd_update,
        delete_finalizer: Some(crate::registry::crd::FINALIZER),
    },
];

/// The rules of a built-in kind, by `apiVersion` (`v1`, `apps/v1`) and kind.
pub(crate) fn rules(api_version: &str, kind: &str) -> Option<&'static KindRules> {
    RULES
        .iter()
        .chain(rbac::RULES.iter())
        .find(|r| r.kind.strip_suffix(kind).and_then(|v| v.strip_suffix('/')) == Some(api_version))
}

// ----- JSON helpers: Go's view of a decoded field -----

/// Absent or null: a nil pointer, map or slice.
pub(super) fn absent(m: &Object, key: &str) -> bool {
    m.get(key).is_none_or(Value::is_null)
}

/// A string field Go decodes as `""` (absent, null or empty).
pub(super) fn empty_str(m: &Object, key: &str) -> bool {
    match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

/// A number field Go decodes as 0 (absent, null or zero).
pub(super) fn zero_num(m: &Object, key: &str) -> bool {
    match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(_) => false,
    }
}

/// The string at `key`, `""` when absent or not a string.
pub(super) fn text<'a>(m: &'a Object, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Sets a pointer field (`*int64`, `*bool`, a map) when nil.
pub(super) fn default_ptr(m: &mut Object, key: &str, value: impl Into<Value>) {
    if absent(m, key) {
        m.insert(key.to_owned(), value.into());
    }
}

/// Sets a string field when empty.
pub(super) fn default_str(m: &mut Object, key: &str, value: &str) {
    if empty_str(m, key) {
        m.insert(key.to_owned(), Value::String(value.to_owned()));
    }
}

/// Sets an integer field when zero.
pub(super) fn default_num(m: &mut Object, key: &str, value: i64) {
    if zero_num(m, key) {
        m.insert(key.to_owned(), Value::from(value));
    }
}

/// The object at `key`, if it is one.
pub(super) fn child<'a>(m: &'a mut Object, key: &str) -> Option<&'a mut Object> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The object at `key`, made `{}` when nil (a pointer to a struct defaulted to its zero value, or a non-pointer
/// struct Go always encodes); `None` when something else is there.
pub(super) fn child_or_empty<'a>(m: &'a mut Object, key: &str) -> Option<&'a mut Object> {
    if absent(m, key) {
        m.insert(key.to_owned(), Value::Object(Object::new()));
    }
    child(m, key)
}

/// The objects of the array at `key`.
pub(super) fn items<'a>(m: &'a mut Object, key: &str) -> impl Iterator<Item = &'a mut Object> {
    m.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests;
