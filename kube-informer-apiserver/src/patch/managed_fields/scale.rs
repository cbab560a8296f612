//! The scale subresource's view of managed fields, as k8s.io/apimachinery's `ScaleHandler` gives it: a write of
//! `…/scale` is tracked on the `autoscaling/v1` `Scale` (with its own field manager, subresource `scale`), whose
//! entries are those of the parent owning the replicas, moved to the Scale's `.spec.replicas`; afterwards, whoever
//! owns the Scale's replicas owns the parent's replicas path, and the parent's other owners of it lose it.

use std::sync::LazyLock;

use serde_json::Value;

use super::entries::{self, Managed};
use super::field_manager::{FieldManager, Subresource};
use super::path::PathElement;
use super::schema::Schema;
use super::set::Set;
use super::updater::VersionedSet;

/// The version of `Scale`.
pub(crate) const SCALE_VERSION: &str = "autoscaling/v1";

/// `autoscaling/v1` `Scale`'s schema.
static SCALE_SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    serde_json::json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {"replicas": {"format": "int32", "type": "integer"}}},
        "status": {"type": "object", "properties": {
            "replicas": {"format": "int32", "type": "integer"},
            "selector": {"type": "string"},
        }},
    }})
});

/// The field manager of writes to `…/scale`.
pub(crate) fn scale_field_manager() -> FieldManager<'static> {
    FieldManager {
        schema: Schema::new(Some(&SCALE_SCHEMA), false),
        api_version: SCALE_VERSION.to_owned(),
        kind: "Scale",
        subresource: Subresource::Scale,
        status_subresource: false,
        builtin: false,
        other_versions: &[],
    }
}

fn path_of(dotted: &str) -> Vec<PathElement> {
    dotted
        .split('.')
        .filter(|s| !s.is_empty())
        .map(|s| PathElement::Field(s.to_owned()))
        .collect()
}

/// The entries of a parent and where its replicas are.
pub(crate) struct ScaleHandler<'a> {
    parent: &'a [Value],
    /// The parent's version: entries of another one are not the Scale's, and a scale write drops them.
    version: &'a str,
    replicas: Vec<PathElement>,
}

impl<'a> ScaleHandler<'a> {
    /// The handler of a parent with these entries, in `version`, its replicas at `replicas_path` (`.spec.replicas`).
    pub(crate) fn new(parent: &'a [Value], version: &'a str, replicas_path: &str) -> ScaleHandler<'a> {
        ScaleHandler {
            parent,
            version,
            replicas: path_of(replicas_path),
        }
    }

    /// The Scale's entries: the parent's owners of the replicas, owning the Scale's replicas.
    pub(crate) fn to_subresource(&self) -> Result<Vec<Value>, String> {
        let parent = entries::decode(self.parent)?;
        let mut out = Managed::default();
        let replicas = path_of(".spec.replicas");
        for (m, vs) in parent.fields {
            if vs.api_version == self.version && vs.set.has(&self.replicas) {
                out.fields.insert(
                    m.clone(),
                    VersionedSet {
                        set: Set::of([replicas.as_slice()]),
                        api_version: SCALE_VERSION.to_owned(),
                        applied: vs.applied,
                    },
                );
                if let Some(t) = parent.times.get(&m) {
                    out.times.insert(m, t.clone());
                }
            }
        }
        Ok(entries::encode(&out))
    }

    /// The parent's entries after a Scale write left the Scale with `scale` entries.
    pub(crate) fn to_parent(&self, scale: &[Value]) -> Result<Vec<Value>, String> {
        let parent = entries::decode(self.parent)?;
        let mut scale = entries::decode(scale)?.fields;
        let replicas = Set::of([self.replicas.as_slice()]);
        let mut out = Managed::default();
        let keep = |out: &mut Managed, m: &String, vs: VersionedSet| {
            if let Some(t) = parent.times.get(m) {
                out.times.insert(m.clone(), t.clone());
            }
            out.fields.insert(m.clone(), vs);
        };
        for (m, vs) in &parent.fields {
            if vs.api_version != self.version {
                continue;
            }
            // Without the replicas, or still owning the Scale's: as it was.
            if !vs.set.has(&self.replicas) || scale.remove(m).is_some() {
                keep(&mut out, m, vs.clone());
            } else {
                // Its replicas were taken by the Scale's writer.
                let set = vs.set.difference(&replicas);
                if !set.is_empty() {
                    keep(&mut out, m, VersionedSet { set, ..vs.clone() });
                }
            }
        }
        let scale_replicas = path_of(".spec.replicas");
        for (m, vs) in scale {
            if vs.set.has(&scale_replicas) {
                let owned = VersionedSet {
                    set: replicas.clone(),
                    api_version: self.version.to_owned(),
                    applied: vs.applied,
                };
                keep(&mut out, &m, owned);
            }
        }
        Ok(entries::encode(&out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, version: &str, sub: &str, fields: Value) -> Value {
        let mut e = json!({"manager": manager, "operation": "Update", "apiVersion": version, "fieldsType": "FieldsV1",
                           "fieldsV1": fields, "time": "2001-01-01T00:00:00Z"});
        if !sub.is_empty() {
            e["subresource"] = json!(sub);
        }
        e
    }

    // Cases of apimachinery's scalehandler_test.go (TestTransformManagedFieldsToSubresource,
    // TestTransformingManagedFieldsToParent).
    #[test]
    fn replicas_ownership_moves_between_the_parent_and_its_scale() {
        let replicas = json!({"f:spec": {"f:replicas": {}}});
        let parent = vec![
            entry("manager-1", "apps/v1", "", json!({"f:spec": {"f:another-field": {}}})),
            entry("manager-2", "apps/v1", "", replicas.clone()),
        ];
        let h = ScaleHandler::new(&parent, "apps/v1", ".spec.replicas");
        assert_eq!(
            h.to_subresource().unwrap(),
            vec![entry("manager-2", "autoscaling/v1", "", replicas.clone())]
        );

        let untimed = |mut e: Value| {
            e.as_object_mut().unwrap().remove("time");
            e
        };
        let with_selector = json!({"f:spec": {"f:replicas": {}, "f:selector": {}}});
        let selector = json!({"f:spec": {"f:selector": {}}});
        let test = [entry("test", "apps/v1", "", with_selector.clone())];
        let h = ScaleHandler::new(&test, "apps/v1", ".spec.replicas");
        // different managers, update -> update: the scale's writer takes the replicas.
        let scale = [untimed(entry("scale", "autoscaling/v1", "scale", replicas.clone()))];
        assert_eq!(
            h.to_parent(&scale).unwrap(),
            vec![
                untimed(entry("scale", "apps/v1", "scale", replicas.clone())),
                entry("test", "apps/v1", "", selector.clone()),
            ]
        );
        // same manager, update -> update: still another entry (the subresource tells them apart).
        let scale = [untimed(entry("test", "autoscaling/v1", "scale", replicas.clone()))];
        assert_eq!(
            h.to_parent(&scale).unwrap(),
            vec![
                untimed(entry("test", "apps/v1", "scale", replicas.clone())),
                entry("test", "apps/v1", "", selector.clone()),
            ]
        );
        // subresource doesn't own the path anymore: the parent's other entries stay.
        let scale = [untimed(entry(
            "scale",
            "autoscaling/v1",
            "scale",
            json!({"f:status": {"f:replicas": {}}}),
        ))];
        assert_eq!(
            h.to_parent(&scale).unwrap(),
            vec![entry("test", "apps/v1", "", selector.clone())]
        );
        // An applier's entry is the same manager on both sides (no version in its identifier): kept as it was.
        let mut applied = entry("test", "apps/v1", "", with_selector.clone());
        applied["operation"] = json!("Apply");
        let parent = [applied.clone()];
        let h = ScaleHandler::new(&parent, "apps/v1", ".spec.replicas");
        assert_eq!(h.to_parent(&h.to_subresource().unwrap()).unwrap(), vec![applied]);
        // Entries of other versions are not the Scale's, and go.
        let old = vec![entry("old", "apps/v1beta1", "", replicas.clone())];
        let h = ScaleHandler::new(&old, "apps/v1", ".spec.replicas");
        assert!(h.to_subresource().unwrap().is_empty());
        assert!(h.to_parent(&[]).unwrap().is_empty());
    }
}
