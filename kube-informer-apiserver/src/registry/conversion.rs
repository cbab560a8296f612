//! How a custom resource's objects are read and written when they may not be in the shape of the version asked for:
//! a CRD served in several versions, or whose schema changed since objects were written. As apiextensions-apiserver's
//! storage codec does it: an object is stored in the storage version of its write; read back, it is pruned and
//! defaulted by the schema of the version it is stored in (defaults on read), converted to the version asked for — with
//! `conversion: {strategy: None}` only `apiVersion` changes — and pruned by that version's schema (a field the
//! version does not know is not served in it, and a write through that version drops it, as on a cluster). A CRD
//! whose strategy is `Webhook` is served in its storage version only: the server calls no webhook, and answers a
//! request in another version with an error instead of handing out unconverted data.
//!
//! Also here: the order Kubernetes gives versions (`version.CompareKubeAwareVersionStrings`), which decides a
//! group's preferred version in discovery.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::Value;

use crate::api::errors::{self, Failure};
use crate::registry::reply::Reply;
use crate::registry::resource::{ConversionStrategy, ResourceSpec};
use crate::schema;
use crate::storage::store::StoredObject;

/// The Status answering a request that would need a conversion webhook.
pub(crate) fn refused(spec: &ResourceSpec) -> Option<Failure> {
    let c = spec.conversion.as_ref()?;
    (c.strategy == ConversionStrategy::Webhook && spec.api.api_version() != c.storage_api_version).then(|| {
        errors::internal(format!(
            "conversion webhook for {}, Kind={} failed: the embedded API server calls no conversion webhook \
             (spec.conversion.strategy: Webhook); request the storage version {}",
            spec.api.api_version(),
            spec.api.kind,
            c.storage_api_version
        ))
    })
}

/// Sets the object's `apiVersion` to the storage version, when `spec`'s version is not it.
pub(crate) fn to_storage(spec: &ResourceSpec, value: &mut Value) {
    if let (Some(c), Some(o)) = (&spec.conversion, value.as_object_mut()) {
        o.insert("apiVersion".into(), Value::String(c.storage_api_version.clone()));
    }
}

/// Sets the object's `apiVersion` to `spec`'s version, when it may be stored in another.
pub(crate) fn to_served(spec: &ResourceSpec, value: &mut Value) {
    if let (Some(_), Some(o)) = (&spec.conversion, value.as_object_mut()) {
        o.insert("apiVersion".into(), Value::String(spec.api.api_version()));
    }
}

/// A stored object made what a read through `spec`'s version gives: pruned and defaulted by the schema of the
/// version it is stored in, then in `spec`'s version, pruned by its schema. Nothing changes without a
/// [`Conversion`](crate::registry::resource::Conversion).
pub(crate) fn read(spec: &ResourceSpec, value: &mut Value) {
    let Some(c) = &spec.conversion else {
        return;
    };
    let stored = value.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_owned();
    if let Some((_, schema)) = c.schemas.iter().find(|(v, _)| *v == stored) {
        // The storage codec prunes by the schema of the version the object is stored in (a field written through
        // a version that knows it, into a storage version that does not, is gone), then defaults by it.
        schema::prune(value, Some(schema), true);
        schema::default(value, Some(schema));
    }
    to_served(spec, value);
    spec.prune(value);
}

/// The object as read through `spec`'s version, and its JSON, when that differs from what is stored.
fn coerced(spec: &ResourceSpec, json: &[u8]) -> Option<(Value, Vec<u8>)> {
    spec.conversion.as_ref()?;
    let mut v: Value = serde_json::from_slice(json).ok()?;
    read(spec, &mut v);
    // Stored objects are written by the same serializer (a CRD's objects, the only ones converted, are
    // unstructured: sorted keys): equal bytes, nothing changed.
    let out = crate::serializer::json::to_vec_unstructured(&v);
    (out != json).then_some((v, out))
}

/// A stored object's JSON as served in `spec`'s version: borrowed when it is served as stored.
pub(crate) fn served_json<'a>(spec: &ResourceSpec, json: &'a [u8]) -> Cow<'a, [u8]> {
    match coerced(spec, json) {
        Some((_, out)) => Cow::Owned(out),
        None => Cow::Borrowed(json),
    }
}

/// A stored object as served in `spec`'s version: the same one when it is served as stored.
pub(crate) fn served(spec: &ResourceSpec, obj: Arc<StoredObject>) -> Arc<StoredObject> {
    match coerced(spec, &obj.json) {
        Some((v, _)) => Arc::new(StoredObject::from_value(spec, &v)),
        None => obj,
    }
}

/// An answer with every object it carries in `spec`'s version.
pub(crate) fn reply(spec: &ResourceSpec, answer: Reply) -> Reply {
    if spec.conversion.is_none() {
        return answer;
    }
    match answer {
        Reply::Object(code, o) => Reply::Object(code, served(spec, o)),
        Reply::List { prefix, items, suffix } => Reply::List {
            prefix,
            items: items.into_iter().map(|o| served(spec, o)).collect(),
            suffix,
        },
        Reply::Warned(w, inner) => Reply::Warned(w, Box::new(reply(spec, *inner))),
        other => other,
    }
}

/// A Kubernetes-like version (`v1`, `v2beta1`, `v1alpha3`): major, stage (GA 3, beta 2, alpha 1), minor.
fn kube_like(v: &str) -> Option<(u64, u8, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return None;
    }
    let major: u64 = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((major, 3, 0));
    }
    let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
        (2, n)
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n)
    } else {
        return None;
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) || num.starts_with('0') {
        return None;
    }
    Some((major, stage, num.parse().ok()?))
}

/// Kubernetes' version priority: GA before beta before alpha, higher numbers first within each, then versions
/// that do not look like Kubernetes versions, in alphabetical order. `Less` means `a` comes first (is preferred).
pub(crate) fn priority(a: &str, b: &str) -> Ordering {
    match (kube_like(a), kube_like(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb.cmp(&sa).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::resource::Conversion;
    use kube_informer::object::ApiResource;
    use serde_json::json;

    #[test]
    fn versions_sort_as_kubernetes_sorts_them() {
        // The order apimachinery's version package documents and tests.
        let mut v = vec![
            "foo10",
            "v11alpha2",
            "v1",
            "v3beta1",
            "v12alpha1",
            "foo1",
            "v10beta3",
            "v2",
            "v11beta2",
            "v10",
        ];
        v.sort_by(|a, b| priority(a, b));
        assert_eq!(
            v,
            [
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v12alpha1",
                "v11alpha2",
                "foo1",
                "foo10"
            ]
        );
        // Leading zeros and other shapes are not Kubernetes versions.
        for odd in ["v01", "v1beta", "v1gamma1", "v1beta01", "1", "v"] {
            assert_eq!(priority("v1alpha1", odd), Ordering::Less, "{odd}");
        }
    }

    fn spec(version: &str, stored: Option<&str>) -> ResourceSpec {
        let mut s = ResourceSpec::new(ApiResource::new("example.com", version, "Widget", "widgets", true));
        s.conversion = stored.map(|v| Conversion {
            storage_api_version: format!("example.com/{v}"),
            strategy: ConversionStrategy::None,
            api_versions: vec!["example.com/v1".into(), "example.com/v2".into()],
            schemas: Vec::new(),
        });
        s
    }

    #[test]
    fn only_api_version_changes_between_versions() {
        let v2 = spec("v2", Some("v1"));
        let mut obj = json!({"apiVersion": "example.com/v2", "kind": "Widget", "spec": {"apiVersion": "x"}});
        to_storage(&v2, &mut obj);
        assert_eq!(obj["apiVersion"], "example.com/v1");
        assert_eq!(obj["spec"]["apiVersion"], "x");
        let stored = br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"}}"#;
        let out: Value = serde_json::from_slice(&served_json(&v2, stored)).unwrap();
        assert_eq!(
            out,
            json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "a"}})
        );
        let v1 = spec("v1", Some("v1"));
        assert!(
            matches!(served_json(&v1, stored), Cow::Borrowed(_)),
            "stored in the version asked for"
        );
        let single = spec("v1", None);
        assert!(
            matches!(served_json(&single, br#"{"apiVersion":"x"}"#), Cow::Borrowed(_)),
            "one version only"
        );
        // An object stored before the storage version moved to v2 is served in v2.
        let v2_storage = spec("v2", Some("v2"));
        let out: Value = serde_json::from_slice(&served_json(&v2_storage, stored)).unwrap();
        assert_eq!(out["apiVersion"], "example.com/v2");
        assert!(refused(&v2).is_none());
    }

    #[test]
    fn webhook_conversion_is_refused_not_faked() {
        let mut v2 = spec("v2", Some("v1"));
        v2.conversion.as_mut().unwrap().strategy = ConversionStrategy::Webhook;
        let st = refused(&v2).unwrap();
        assert_eq!(st.code, 500);
        assert!(
            st.message
                .starts_with("conversion webhook for example.com/v2, Kind=Widget failed"),
            "{}",
            st.message
        );
        assert!(refused(&spec("v1", None)).is_none());
        let mut storage = spec("v1", Some("v1"));
        storage.conversion.as_mut().unwrap().strategy = ConversionStrategy::Webhook;
        assert!(refused(&storage).is_none(), "the storage version needs no webhook");
    }
}
