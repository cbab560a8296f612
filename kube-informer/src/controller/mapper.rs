//! Mapping secondary objects to the primary keys they concern: owner references, or any function.

#[cfg(test)]
use crate::object::owner::controller_ref_of;
#[cfg(test)]
use crate::object::{ApiResource, Object};

/// The key of the primary that controls `obj`: the owner reference marked `controller: true` (there is at most one,
/// client-go's `metav1.GetControllerOf`) when its kind and API group are `owner`'s — the version may differ, as the
/// same object is served under several versions. The key is `namespace/name` for a namespaced owner (an owner lives
/// in its dependent's namespace) and `name` for a cluster-scoped one. (Typed:
/// [`ObjectRef::controller_of`](crate::object::ObjectRef::controller_of).)
#[cfg(test)]
fn controller_owner_key<S: Object>(obj: &S, owner: &ApiResource) -> Option<String> {
    controller_ref_of(obj, owner).map(|r| r.key())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::core::ConfigMap;
    use crate::object::{ObjectMeta, OwnerReference};

    fn owned_by(api_version: &str, kind: &str, name: &str, controller: Option<bool>) -> ConfigMap {
        let mut meta = ObjectMeta::namespaced("ns", "cm");
        meta.owner_references.push(OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: "u".into(),
            controller,
            block_owner_deletion: None,
        });
        ConfigMap::new(meta)
    }

    #[test]
    fn only_the_controller_reference_of_the_right_kind_and_group_counts() {
        let deploy = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
        let cases = [
            (owned_by("apps/v1", "Deployment", "web", Some(true)), Some("ns/web")),
            // Another version of the same group is the same kind.
            (
                owned_by("apps/v1beta2", "Deployment", "web", Some(true)),
                Some("ns/web"),
            ),
            (owned_by("apps/v1", "Deployment", "web", Some(false)), None),
            (owned_by("apps/v1", "Deployment", "web", None), None),
            (
                owned_by("extensions.example.com/v1", "Deployment", "web", Some(true)),
                None,
            ),
            (owned_by("apps/v1", "ReplicaSet", "web", Some(true)), None),
            (owned_by("apps/v1", "Deployment", "", Some(true)), None),
            (ConfigMap::new(ObjectMeta::namespaced("ns", "cm")), None),
        ];
        for (obj, want) in cases {
            assert_eq!(
                controller_owner_key(&obj, &deploy).as_deref(),
                want,
                "{:?}",
                obj.metadata.owner_references
            );
        }
        let ns = ApiResource::new("", "v1", "Namespace", "namespaces", false);
        assert_eq!(
            controller_owner_key(&owned_by("v1", "Namespace", "ns", Some(true)), &ns).as_deref(),
            Some("ns"),
            "a cluster-scoped owner's key has no namespace"
        );
    }

    #[test]
    fn a_non_controller_reference_before_the_controller_is_skipped() {
        let mut cm = owned_by("v1", "ConfigMap", "other", None);
        cm.metadata.owner_references.push(OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "boss".into(),
            uid: "u2".into(),
            controller: Some(true),
            block_owner_deletion: None,
        });
        let ar = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
        assert_eq!(controller_owner_key(&cm, &ar).as_deref(), Some("ns/boss"));
    }
}
