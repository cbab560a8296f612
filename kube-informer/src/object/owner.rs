//! Owner references: building them from an owner, setting them on a dependent with controller-runtime's rules
//! (`controllerutil.SetControllerReference` / `SetOwnerReference`), and reading them back.
//!
//! An owner reference ties a dependent to its owner for the garbage collector (the dependent goes when the owner
//! goes) and, when marked `controller: true`, names the one controller that manages the dependent — what
//! [`ControllerBuilder::owns`](crate::controller::ControllerBuilder::owns) maps back to the owner's key.
//!
//! # Adoption is asked for, never implied
//!
//! An object that already exists on the server and has no controller (an *orphan*: made by hand, by another tool,
//! or left behind by an owner deleted with `propagationPolicy: Orphan`) may carry exactly the name a controller is
//! about to use. Making the controller its owner then takes the object over, and the controller's next write
//! replaces what its author put there. controller-runtime's `SetControllerReference` does that silently;
//! [`set_controller_reference`] refuses with [`OwnerReferenceError::WouldAdopt`] instead — the safe default, since
//! the one who loses data is not the one who wrote the controller. A controller that means to take orphans over
//! (as the ReplicaSet controller adopts the pods its selector matches) says so with [`adopt`]. A new object (no
//! uid yet) and one the owner already controls are not adoptions: both functions accept them.

use std::fmt;

use super::{ApiResource, MetaAccessor, Object, OwnerReference, Resource};

/// Why an owner reference could not be set.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OwnerReferenceError {
    /// The owner has no name or no uid: it was built locally rather than read from (or created on) the server, and
    /// a reference needs the uid the server assigned.
    OwnerNotPersisted,
    /// The dependent already has a controller reference to another object; an object has at most one controller.
    AlreadyOwned {
        /// The controller reference in place.
        existing: OwnerReference,
    },
    /// A namespaced owner in another namespace than the dependent's: the garbage collector treats such a reference
    /// as pointing to a missing owner and deletes the dependent.
    CrossNamespace {
        /// The owner's namespace.
        owner_namespace: String,
        /// The dependent's namespace.
        namespace: String,
    },
    /// A dependent without a namespace (cluster-scoped, or not yet given one) cannot have a namespaced owner.
    NamespacedOwnerOfClusterScoped {
        /// The owner's namespace.
        owner_namespace: String,
    },
    /// The object exists on the server (it has a uid) and has no controller: making the owner its controller would
    /// take over an object someone else made, whose content the caller's next write replaces. Refused by
    /// [`set_controller_reference`]; [`adopt`] does it when that is the intent.
    WouldAdopt {
        /// The object's name.
        name: String,
    },
}

impl fmt::Display for OwnerReferenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OwnerReferenceError::OwnerNotPersisted => {
                f.write_str("the owner has no name or uid: read it from the server before referring to it")
            }
            OwnerReferenceError::AlreadyOwned { existing } => write!(
                f,
                "the object is already controlled by {} {} (uid {})",
                existing.kind, existing.name, existing.uid
            ),
            OwnerReferenceError::CrossNamespace {
                owner_namespace,
                namespace,
            } => write!(
                f,
                "cross-namespace owner references are not allowed: the owner is in {owner_namespace:?}, the object \
                 in {namespace:?}"
            ),
            OwnerReferenceError::NamespacedOwnerOfClusterScoped { owner_namespace } => write!(
                f,
                "an object without a namespace cannot have an owner in namespace {owner_namespace:?}"
            ),
            OwnerReferenceError::WouldAdopt { name } => write!(
                f,
                "{name:?} exists and has no controller: refusing to adopt it (and overwrite it); adopt it \
                 explicitly if that is intended"
            ),
        }
    }
}

impl std::error::Error for OwnerReferenceError {}

impl OwnerReference {
    /// A plain (non-controller) reference to `owner`, a `resource` object; `None` when the owner has no name or uid
    /// yet.
    ///
    /// ```
    /// use kube_informer::object::{ApiResource, DynamicObject, OwnerReference};
    ///
    /// let ar = ApiResource::new("example.com", "v1", "Widget", "widgets", true);
    /// let mut w = DynamicObject::new("w1", &ar).within("prod");
    /// assert_eq!(OwnerReference::to(&w, &ar), None); // not created yet: no uid
    /// w.metadata.uid = Some("7c0e".into());
    /// let r = OwnerReference::to(&w, &ar).unwrap();
    /// assert_eq!((r.api_version(), r.kind(), r.name()), ("example.com/v1", "Widget", "w1"));
    /// assert_eq!((r.controller, r.block_owner_deletion), (None, None));
    /// ```
    pub fn to<O: Object>(owner: &O, resource: &ApiResource) -> Option<OwnerReference> {
        let meta = owner.meta();
        let name = meta.name().filter(|n| !n.is_empty())?;
        let uid = meta.uid().filter(|u| !u.is_empty())?;
        Some(OwnerReference::new(resource.api_version(), &resource.kind, name, uid))
    }

    /// A controller reference to `owner` (`controller: true`, `blockOwnerDeletion: true`, as controller-runtime's
    /// `SetControllerReference` writes it); `None` when the owner has no name or uid yet.
    pub fn controller_to<O: Object>(owner: &O, resource: &ApiResource) -> Option<OwnerReference> {
        OwnerReference::to(owner, resource).map(OwnerReference::controlling)
    }

    /// True when both references point to the same object: same API group (the version may differ), kind and
    /// name (controller-runtime's `referSameObject`; the uid is not compared, so a reference to a deleted and
    /// re-created owner is replaced rather than duplicated).
    pub fn refers_to_same_object(&self, other: &OwnerReference) -> bool {
        group_of(&self.api_version) == group_of(&other.api_version)
            && self.kind == other.kind
            && self.name == other.name
    }

    /// True when this is the controller reference (`controller: true`).
    pub fn is_controller(&self) -> bool {
        self.controller == Some(true)
    }
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Owner references built from an object whose resource is known statically; for a resource known only at run
/// time, use [`OwnerReference::to`] and [`OwnerReference::controller_to`].
///
/// ```
/// use kube_informer::object::core::ConfigMap;
/// use kube_informer::object::{ObjectMeta, OwnerRefs};
///
/// let mut cm = ConfigMap::new(ObjectMeta::namespaced("prod", "settings"));
/// cm.metadata.uid = Some("5d2a".into());
/// let r = cm.controller_owner_ref().unwrap();
/// assert_eq!((r.api_version(), r.kind()), ("v1", "ConfigMap"));
/// assert_eq!((r.controller, r.block_owner_deletion), (Some(true), Some(true)));
/// ```
pub trait OwnerRefs: Resource {
    /// A plain reference to this object; `None` without a name or uid.
    fn owner_ref(&self) -> Option<OwnerReference> {
        OwnerReference::to(self, &Self::api_resource())
    }

    /// A controller reference to this object; `None` without a name or uid.
    fn controller_owner_ref(&self) -> Option<OwnerReference> {
        OwnerReference::controller_to(self, &Self::api_resource())
    }
}

impl<R: Resource> OwnerRefs for R {}

/// The controller reference of `obj`, if any (apimachinery's `metav1.GetControllerOf`).
pub fn controller_of<K: Object>(obj: &K) -> Option<OwnerReference> {
    obj.meta()
        .owner_references()
        .iter()
        .find(|r| r.is_controller())
        .cloned()
}

/// True when `obj`'s controller reference points to `owner`, compared by uid (apimachinery's
/// `metav1.IsControlledBy`): a re-created owner of the same name does not control the old one's dependents.
pub fn is_controlled_by<K: Object, O: Object>(obj: &K, owner: &O) -> bool {
    let Some(uid) = owner.meta().uid().filter(|u| !u.is_empty()) else {
        return false;
    };
    obj.meta()
        .owner_references()
        .iter()
        .any(|r| r.is_controller() && *r.uid == *uid)
}

/// Makes `owner` the controller of `obj` (controller-runtime's `SetControllerReference`, without its silent
/// adoption): adds a reference with `controller: true` and `blockOwnerDeletion: true`, or updates the one already
/// pointing to `owner` (same group, kind and name). Refuses when `obj` is controlled by another object, when `obj`
/// exists on the server without a controller ([`OwnerReferenceError::WouldAdopt`]: see [`adopt`]), when `owner` is
/// namespaced in another namespace, and when `owner` was never stored (no uid).
///
/// ```
/// use kube_informer::object::core::{ConfigMap, Namespace};
/// use kube_informer::object::{set_controller_reference, ObjectMeta, OwnerReferenceError};
///
/// let mut owner = ConfigMap::new(ObjectMeta::namespaced("prod", "app"));
/// owner.metadata.uid = Some("u-1".into());
/// let mut dependent = ConfigMap::new(ObjectMeta::namespaced("prod", "app-derived"));
/// set_controller_reference(&owner, &mut dependent).unwrap();
/// set_controller_reference(&owner, &mut dependent).unwrap(); // idempotent
/// assert_eq!(dependent.metadata.owner_references.len(), 1);
///
/// let mut other = ConfigMap::new(ObjectMeta::namespaced("prod", "other"));
/// other.metadata.uid = Some("u-2".into());
/// assert!(matches!(
///     set_controller_reference(&other, &mut dependent),
///     Err(OwnerReferenceError::AlreadyOwned { .. })
/// ));
/// ```
pub fn set_controller_reference<O: Resource, K: Object>(owner: &O, obj: &mut K) -> Result<(), OwnerReferenceError> {
    set_controller(owner, &O::api_resource(), obj, false)
}

/// [`set_controller_reference`] for an owner whose resource is known only at run time.
pub fn set_controller_reference_with<O: Object, K: Object>(
    owner: &O,
    resource: &ApiResource,
    obj: &mut K,
) -> Result<(), OwnerReferenceError> {
    set_controller(owner, resource, obj, false)
}

/// Makes `owner` the controller of `obj` as [`set_controller_reference`] does, taking over (*adopting*) an object
/// that exists without a controller — controller-runtime's `SetControllerReference`. For a controller that means
/// to manage objects it did not create (the ReplicaSet controller adopts the pods its selector matches); its next
/// write replaces what the object held.
///
/// ```
/// use kube_informer::object::core::ConfigMap;
/// use kube_informer::object::{adopt, set_controller_reference, ObjectMeta, OwnerReferenceError};
///
/// let mut owner = ConfigMap::new(ObjectMeta::namespaced("prod", "app"));
/// owner.metadata.uid = Some("u-1".into());
/// let mut orphan = ConfigMap::new(ObjectMeta::namespaced("prod", "app-settings"));
/// orphan.metadata.uid = Some("u-9".into()); // it exists: someone made it
/// assert!(matches!(set_controller_reference(&owner, &mut orphan), Err(OwnerReferenceError::WouldAdopt { .. })));
/// adopt(&owner, &mut orphan).unwrap();
/// set_controller_reference(&owner, &mut orphan).unwrap(); // ours now
/// ```
pub fn adopt<O: Resource, K: Object>(owner: &O, obj: &mut K) -> Result<(), OwnerReferenceError> {
    set_controller(owner, &O::api_resource(), obj, true)
}

/// [`adopt`] for an owner whose resource is known only at run time.
pub fn adopt_with<O: Object, K: Object>(
    owner: &O,
    resource: &ApiResource,
    obj: &mut K,
) -> Result<(), OwnerReferenceError> {
    set_controller(owner, resource, obj, true)
}

fn set_controller<O: Object, K: Object>(
    owner: &O,
    resource: &ApiResource,
    obj: &mut K,
    adopt_orphans: bool,
) -> Result<(), OwnerReferenceError> {
    validate_owner(owner, resource, obj)?;
    let new = OwnerReference::controller_to(owner, resource).ok_or(OwnerReferenceError::OwnerNotPersisted)?;
    match controller_of(obj) {
        Some(existing) if !existing.refers_to_same_object(&new) => {
            return Err(OwnerReferenceError::AlreadyOwned { existing });
        }
        Some(_) => {}
        None if !adopt_orphans && obj.meta().uid().is_some_and(|u| !u.is_empty()) => {
            return Err(OwnerReferenceError::WouldAdopt {
                name: obj.meta().name().unwrap_or_default().to_owned(),
            });
        }
        None => {}
    }
    upsert(obj, new);
    Ok(())
}

/// The controller reference of `obj` when it names an object of `owner`'s kind and API group (any version), as a
/// reference to that object: in `obj`'s namespace when `owner` is namespaced.
pub(crate) fn controller_ref_of<S: Object>(obj: &S, owner: &ApiResource) -> Option<super::ObjectRef<()>> {
    let meta = obj.meta();
    let refs = meta.owner_references();
    let r = refs.iter().find(|r| r.is_controller())?;
    if *r.kind != *owner.kind || group_of(&r.api_version) != owner.group || r.name.is_empty() {
        return None;
    }
    let found = super::ObjectRef::new(r.name());
    match meta.namespace().filter(|ns| owner.namespaced && !ns.is_empty()) {
        Some(ns) => Some(found.within(ns)),
        None => Some(found),
    }
}

/// Adds a plain reference to `owner` on `obj` (controller-runtime's `SetOwnerReference`): the garbage collector
/// then deletes `obj` with `owner`, without `owner` being its controller. A reference already pointing to `owner`
/// is replaced — and loses its `controller` mark: use [`set_controller_reference`] to keep one.
pub fn set_owner_reference<O: Resource, K: Object>(owner: &O, obj: &mut K) -> Result<(), OwnerReferenceError> {
    set_owner_reference_with(owner, &O::api_resource(), obj)
}

/// [`set_owner_reference`] for an owner whose resource is known only at run time.
pub fn set_owner_reference_with<O: Object, K: Object>(
    owner: &O,
    resource: &ApiResource,
    obj: &mut K,
) -> Result<(), OwnerReferenceError> {
    validate_owner(owner, resource, obj)?;
    let new = OwnerReference::to(owner, resource).ok_or(OwnerReferenceError::OwnerNotPersisted)?;
    upsert(obj, new);
    Ok(())
}

/// Removes every reference of `obj` pointing to `owner` (same group, kind and name); true if one was there.
pub fn remove_owner_reference<O: Resource, K: Object>(owner: &O, obj: &mut K) -> bool {
    let resource = O::api_resource();
    let target = OwnerReference::new(
        resource.api_version(),
        &resource.kind,
        owner.meta().name().unwrap_or_default(),
        "",
    );
    let mut refs = obj.meta().owner_references().into_owned();
    let before = refs.len();
    refs.retain(|r| !r.refers_to_same_object(&target));
    let removed = refs.len() != before;
    if removed {
        obj.meta_mut().set_owner_references(refs);
    }
    removed
}

/// Refuses owners in another namespace, and namespaced owners of objects without a namespace.
fn validate_owner<O: Object, K: Object>(owner: &O, resource: &ApiResource, obj: &K) -> Result<(), OwnerReferenceError> {
    let Some(owner_ns) = owner
        .meta()
        .namespace()
        .filter(|ns| resource.namespaced && !ns.is_empty())
    else {
        return Ok(());
    };
    match obj.meta().namespace().filter(|ns| !ns.is_empty()) {
        None => Err(OwnerReferenceError::NamespacedOwnerOfClusterScoped {
            owner_namespace: owner_ns.to_owned(),
        }),
        Some(ns) if ns != owner_ns => Err(OwnerReferenceError::CrossNamespace {
            owner_namespace: owner_ns.to_owned(),
            namespace: ns.to_owned(),
        }),
        Some(_) => Ok(()),
    }
}

/// Replaces the reference to the same object as `new`, or appends `new`.
fn upsert<K: Object>(obj: &mut K, new: OwnerReference) {
    let mut refs = obj.meta().owner_references().into_owned();
    match refs.iter_mut().find(|r| r.refers_to_same_object(&new)) {
        Some(slot) if *slot == new => return,
        Some(slot) => *slot = new,
        None => refs.push(new),
    }
    obj.meta_mut().set_owner_references(refs);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectMeta;
    use crate::object::core::{ConfigMap, Namespace};

    fn stored(ns: Option<&str>, name: &str, uid: &str) -> ConfigMap {
        let mut meta = ObjectMeta::named(name);
        meta.namespace = ns.map(Into::into);
        meta.uid = Some(uid.into());
        ConfigMap::new(meta)
    }

    /// A dependent about to be created: no uid yet.
    fn fresh(ns: Option<&str>, name: &str) -> ConfigMap {
        let mut meta = ObjectMeta::named(name);
        meta.namespace = ns.map(Into::into);
        ConfigMap::new(meta)
    }

    fn namespace(name: &str, uid: &str) -> Namespace {
        let mut meta = ObjectMeta::named(name);
        meta.uid = Some(uid.into());
        Namespace {
            metadata: meta,
            ..Default::default()
        }
    }

    #[test]
    fn a_controller_reference_is_set_once_and_updated_in_place() {
        let owner = stored(Some("ns"), "owner", "u1");
        let mut dep = fresh(Some("ns"), "dep");
        // A plain reference to someone else stays untouched.
        dep.metadata.owner_references.push(OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            uid: "w".into(),
            controller: None,
            block_owner_deletion: None,
        });
        set_controller_reference(&owner, &mut dep).unwrap();
        assert_eq!(dep.metadata.owner_references.len(), 2);
        let r = &dep.metadata.owner_references[1];
        assert_eq!(
            (r.name(), r.uid(), r.controller, r.block_owner_deletion),
            ("owner", "u1", Some(true), Some(true))
        );
        assert!(is_controlled_by(&dep, &owner));

        // The owner was re-created (new uid): the reference is replaced, not duplicated.
        let recreated = stored(Some("ns"), "owner", "u2");
        assert!(!is_controlled_by(&dep, &recreated));
        set_controller_reference(&recreated, &mut dep).unwrap();
        assert_eq!(dep.metadata.owner_references.len(), 2);
        assert_eq!(dep.metadata.owner_references[1].uid(), "u2");
        assert!(is_controlled_by(&dep, &recreated) && !is_controlled_by(&dep, &owner));
    }

    #[test]
    fn a_second_controller_is_refused() {
        let mut dep = fresh(Some("ns"), "dep");
        set_controller_reference(&stored(Some("ns"), "a", "ua"), &mut dep).unwrap();
        let e = set_controller_reference(&stored(Some("ns"), "b", "ub"), &mut dep).unwrap_err();
        match &e {
            OwnerReferenceError::AlreadyOwned { existing } => assert_eq!(existing.name(), "a"),
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("already controlled by ConfigMap a"), "{e}");
        // A plain owner reference may still be added.
        set_owner_reference(&stored(Some("ns"), "b", "ub"), &mut dep).unwrap();
        assert_eq!(dep.metadata.owner_references.len(), 2);
        assert_eq!(controller_of(&dep).unwrap().name(), "a");
        // Removing the controller frees the slot.
        assert!(remove_owner_reference(&stored(Some("ns"), "a", "ua"), &mut dep));
        assert!(!remove_owner_reference(&stored(Some("ns"), "a", "ua"), &mut dep));
        set_controller_reference(&stored(Some("ns"), "c", "uc"), &mut dep).unwrap();
        assert_eq!(controller_of(&dep).unwrap().name(), "c");
    }

    #[test]
    fn setting_an_owner_reference_replaces_a_controller_mark() {
        let owner = stored(Some("ns"), "owner", "u1");
        let mut dep = fresh(Some("ns"), "dep");
        set_controller_reference(&owner, &mut dep).unwrap();
        set_owner_reference(&owner, &mut dep).unwrap();
        assert_eq!(dep.metadata.owner_references.len(), 1);
        assert_eq!(controller_of(&dep), None);
    }

    #[test]
    fn namespaces_are_checked() {
        let mut dep = fresh(Some("b"), "dep");
        assert_eq!(
            set_controller_reference(&stored(Some("a"), "owner", "u1"), &mut dep),
            Err(OwnerReferenceError::CrossNamespace {
                owner_namespace: "a".into(),
                namespace: "b".into()
            })
        );
        let mut cluster_scoped = fresh(None, "dep");
        assert!(matches!(
            set_owner_reference(&stored(Some("a"), "owner", "u1"), &mut cluster_scoped),
            Err(OwnerReferenceError::NamespacedOwnerOfClusterScoped { .. })
        ));
        // A cluster-scoped owner may own anything.
        set_controller_reference(&namespace("b", "n1"), &mut dep).unwrap();
        set_controller_reference(&namespace("b", "n1"), &mut cluster_scoped).unwrap();
        assert_eq!(dep.metadata.owner_references[0].kind(), "Namespace");
    }

    #[test]
    fn an_owner_never_stored_cannot_be_referred_to() {
        let mut dep = fresh(Some("ns"), "dep");
        let draft = ConfigMap::new(ObjectMeta::namespaced("ns", "draft"));
        assert_eq!(
            set_controller_reference(&draft, &mut dep),
            Err(OwnerReferenceError::OwnerNotPersisted)
        );
        assert_eq!(draft.owner_ref(), None);
        assert!(!is_controlled_by(&dep, &draft));
    }

    #[test]
    fn same_object_ignores_the_version_but_not_the_group() {
        let r = |api_version: &str, kind: &str, name: &str| OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            ..Default::default()
        };
        assert!(r("apps/v1", "Deployment", "w").refers_to_same_object(&r("apps/v1beta1", "Deployment", "w")));
        assert!(!r("apps/v1", "Deployment", "w").refers_to_same_object(&r("example.com/v1", "Deployment", "w")));
        assert!(!r("v1", "ConfigMap", "w").refers_to_same_object(&r("v1", "Secret", "w")));
        assert!(!r("v1", "ConfigMap", "w").refers_to_same_object(&r("v1", "ConfigMap", "x")));
    }

    #[test]
    fn an_orphan_on_the_server_is_adopted_only_when_asked() {
        let owner = stored(Some("ns"), "owner", "u1");
        // Someone's ConfigMap with the name the controller wants.
        let mut orphan = stored(Some("ns"), "dep", "d1");
        assert_eq!(
            set_controller_reference(&owner, &mut orphan),
            Err(OwnerReferenceError::WouldAdopt { name: "dep".into() })
        );
        assert!(
            orphan.metadata.owner_references.is_empty(),
            "nothing changed on a refusal"
        );
        let e = set_controller_reference_with(&owner, &ConfigMap::api_resource(), &mut orphan).unwrap_err();
        assert!(e.to_string().contains("refusing to adopt"), "{e}");
        // A plain owner reference is no takeover.
        set_owner_reference(&owner, &mut orphan).unwrap();
        assert_eq!(
            set_controller_reference(&owner, &mut orphan),
            Err(OwnerReferenceError::WouldAdopt { name: "dep".into() })
        );
        adopt(&owner, &mut orphan).unwrap();
        assert!(is_controlled_by(&orphan, &owner));
        assert_eq!(orphan.metadata.owner_references.len(), 1);
        // Controlled by the owner now: no adoption any more.
        set_controller_reference(&owner, &mut orphan).unwrap();
        // Adoption never takes an object from another controller.
        let mut taken = stored(Some("ns"), "taken", "d2");
        adopt_with(&stored(Some("ns"), "a", "ua"), &ConfigMap::api_resource(), &mut taken).unwrap();
        assert!(matches!(
            adopt(&owner, &mut taken),
            Err(OwnerReferenceError::AlreadyOwned { .. })
        ));
    }
}
