//! Object metadata as kube-apiserver keeps it: which resources carry `metadata.generation` and when it moves
//! ([`GenerationRule`], data of a [`ResourceSpec`](crate::ResourceSpec)), and the metadata a Go round-trip of
//! `ObjectMeta` keeps (empty maps, lists and strings dropped).

use serde_json::{Map, Value};

/// When `metadata.generation` is set and bumped: the generation handling of a resource's registry strategy in
/// kube-apiserver (`PrepareForCreate` / `PrepareForUpdate`, and the deletion code of the generic registry).
///
/// ```
/// use kube_informer::object::ApiResource;
/// use kube_informer_apiserver::{GenerationRule, ResourceSpec};
///
/// // A custom resource counts generations (the default, as apiextensions-apiserver does for every CRD).
/// let widgets = ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true));
/// assert_eq!(widgets.generation_rule(), GenerationRule::Spec);
/// // A kind without a spec does not.
/// let notes = ResourceSpec::new(ApiResource::new("example.com", "v1", "Note", "notes", true))
///     .generation(GenerationRule::Untracked);
/// assert_eq!(notes.generation_rule(), GenerationRule::Untracked);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GenerationRule {
    /// The server never sets it (config maps, secrets, namespaces, events, nodes, services, leases): a create keeps
    /// what the body carries, an update keeps the stored value.
    Untracked,
    /// 1 on create; bumped by a write that changes anything outside `metadata` — and outside `status` where a
    /// status subresource exists (custom resources; pods, whose registry bumps it on spec changes since 1.33).
    Spec,
    /// As [`Spec`](Self::Spec), and also bumped when the annotations change (deployments: their annotations are
    /// copied to their replica sets).
    SpecAndAnnotations,
}

impl GenerationRule {
    /// True when the server sets and bumps the generation.
    pub fn is_tracked(self) -> bool {
        self != GenerationRule::Untracked
    }
}

/// The fields of `metav1.ObjectMeta`: anything else in `metadata` is dropped by the Go decoding.
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Drops what a Go round-trip of `ObjectMeta` drops: unknown fields, nulls, and the empty values of fields
/// declared `omitempty` — empty strings, `generation: 0`, empty `labels`/`annotations` maps, empty
/// `finalizers`/`ownerReferences`/`managedFields` lists. (`deletionGracePeriodSeconds: 0` stays: it is a pointer.)
pub(crate) fn normalize(meta: &mut Map<String, Value>) {
    meta.retain(|k, v| {
        OBJECT_META_FIELDS.contains(&k.as_str())
            && match v {
                Value::Null => false,
                Value::String(s) => !s.is_empty(),
                Value::Object(m) => !m.is_empty(),
                Value::Array(a) => !a.is_empty(),
                Value::Number(n) if k == "generation" => n.as_i64() != Some(0),
                _ => true,
            }
    });
}

/// True when a write from `old` to `new` (whole objects) moves the generation under `rule`: anything outside
/// `metadata` differs (outside `status` too when `status_subresource`), or, for
/// [`GenerationRule::SpecAndAnnotations`], the annotations differ.
pub(crate) fn bumps(
    rule: GenerationRule,
    status_subresource: bool,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
) -> bool {
    let counted = |k: &str| k != "metadata" && !(status_subresource && k == "status");
    let differs = |a: &Map<String, Value>, b: &Map<String, Value>| {
        a.iter().filter(|(k, _)| counted(k)).any(|(k, v)| b.get(k) != Some(v))
    };
    let annotations = |o: &Map<String, Value>| o.get("metadata").and_then(|m| m.get("annotations")).cloned();
    match rule {
        GenerationRule::Untracked => false,
        GenerationRule::Spec => differs(old, new) || differs(new, old),
        GenerationRule::SpecAndAnnotations => {
            differs(old, new) || differs(new, old) || annotations(old) != annotations(new)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn normalizing_drops_what_go_drops() {
        let mut m = obj(json!({
            "name": "a", "generateName": "", "namespace": "ns", "labels": {}, "annotations": {},
            "finalizers": [], "ownerReferences": [], "managedFields": [], "generation": 0,
            "deletionGracePeriodSeconds": 0, "uid": null, "unknown": "x", "clusterName": "c",
        }));
        normalize(&mut m);
        assert_eq!(
            Value::Object(m),
            json!({"name": "a", "namespace": "ns", "deletionGracePeriodSeconds": 0})
        );
        let mut kept = obj(json!({"labels": {"a": ""}, "finalizers": ["f"], "generation": 3}));
        let before = kept.clone();
        normalize(&mut kept);
        assert_eq!(kept, before);
    }

    #[test]
    fn generations_move_by_rule() {
        let base =
            obj(json!({"metadata": {"name": "d", "annotations": {"a": "1"}}, "spec": {"r": 1}, "status": {"s": 1}}));
        let mut status = base.clone();
        status.insert("status".into(), json!({"s": 2}));
        let mut annotated = base.clone();
        annotated.insert("metadata".into(), json!({"name": "d", "annotations": {"a": "2"}}));
        let mut spec = base.clone();
        spec.insert("spec".into(), json!({"r": 2}));
        let mut removed = base.clone();
        removed.remove("spec");
        for (rule, sub, new, want) in [
            (GenerationRule::Untracked, true, &spec, false),
            (GenerationRule::Spec, true, &spec, true),
            (GenerationRule::Spec, true, &removed, true),
            (GenerationRule::Spec, true, &status, false),
            (GenerationRule::Spec, false, &status, true),
            (GenerationRule::Spec, true, &annotated, false),
            (GenerationRule::SpecAndAnnotations, true, &annotated, true),
            (GenerationRule::SpecAndAnnotations, true, &base, false),
        ] {
            assert_eq!(bumps(rule, sub, &base, new), want, "{rule:?} {sub} {new:?}");
        }
    }
}
