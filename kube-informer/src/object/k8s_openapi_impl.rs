//! `Object`, `Resource` and `MetaAccessor` for k8s-openapi's types (feature `k8s-openapi`).
//!
//! Any type implementing `k8s_openapi::Resource` and `k8s_openapi::Metadata<Ty = ObjectMeta>` (every top-level
//! API object k8s-openapi generates) can be an informer's object type. The crate does not choose a `v1_*` feature
//! of k8s-openapi: the application does.

use std::any::TypeId;
use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as K8sMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ApiResource, EMPTY_MAP, MetaAccessor, NamespacedResource, Object, OwnerReference, Resource, StrMap};

impl<T> Object for T
where
    T: k8s_openapi::Resource + k8s_openapi::Metadata<Ty = K8sMeta> + Serialize + DeserializeOwned,
    T: Send + Sync + 'static,
{
    type Meta = K8sMeta;
    fn meta(&self) -> &K8sMeta {
        k8s_openapi::Metadata::metadata(self)
    }
    fn meta_mut(&mut self) -> &mut K8sMeta {
        k8s_openapi::Metadata::metadata_mut(self)
    }
}

impl<T> Resource for T
where
    T: k8s_openapi::Resource + k8s_openapi::Metadata<Ty = K8sMeta> + Serialize + DeserializeOwned,
    T: Send + Sync + 'static,
{
    fn api_resource() -> ApiResource {
        let namespaced = TypeId::of::<T::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>();
        ApiResource::new(T::GROUP, T::VERSION, T::KIND, T::URL_PATH_SEGMENT, namespaced)
    }
}

impl<T> NamespacedResource for T
where
    T: k8s_openapi::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    T: k8s_openapi::Metadata<Ty = K8sMeta> + Serialize + DeserializeOwned + Send + Sync + 'static,
{
}

impl MetaAccessor for K8sMeta {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }
    fn generation(&self) -> Option<i64> {
        self.generation
    }
    fn labels(&self) -> &dyn StrMap {
        self.labels.as_ref().unwrap_or(&EMPTY_MAP)
    }
    fn annotations(&self) -> &dyn StrMap {
        self.annotations.as_ref().unwrap_or(&EMPTY_MAP)
    }
    fn owner_references(&self) -> Cow<'_, [OwnerReference]> {
        let refs = self.owner_references.as_deref().unwrap_or(&[]);
        Cow::Owned(
            refs.iter()
                .map(|r| OwnerReference {
                    api_version: r.api_version.as_str().into(),
                    kind: r.kind.as_str().into(),
                    name: r.name.as_str().into(),
                    uid: r.uid.as_str().into(),
                    controller: r.controller,
                    block_owner_deletion: r.block_owner_deletion,
                })
                .collect(),
        )
    }
    fn finalizers(&self) -> &[String] {
        self.finalizers.as_deref().unwrap_or(&[])
    }
    fn is_being_deleted(&self) -> bool {
        self.deletion_timestamp.is_some()
    }
    fn set_name(&mut self, name: String) {
        self.name = Some(name);
    }
    fn set_namespace(&mut self, namespace: Option<String>) {
        self.namespace = namespace;
    }
    fn set_resource_version(&mut self, rv: Option<String>) {
        self.resource_version = rv;
    }
    fn labels_mut(&mut self) -> &mut dyn StrMap {
        self.labels.get_or_insert_with(BTreeMap::new)
    }
    fn annotations_mut(&mut self) -> &mut dyn StrMap {
        self.annotations.get_or_insert_with(BTreeMap::new)
    }
    fn clear_managed_fields(&mut self) {
        self.managed_fields = None;
    }
    fn set_owner_references(&mut self, refs: Vec<OwnerReference>) {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference as K8sRef;
        self.owner_references = Some(
            refs.into_iter()
                .map(|r| K8sRef {
                    api_version: r.api_version.to_string(),
                    kind: r.kind.to_string(),
                    name: r.name.to_string(),
                    uid: r.uid.to_string(),
                    controller: r.controller,
                    block_owner_deletion: r.block_owner_deletion,
                })
                .collect(),
        )
        .filter(|r: &Vec<K8sRef>| !r.is_empty());
    }
    fn finalizers_mut(&mut self) -> &mut Vec<String> {
        self.finalizers.get_or_insert_with(Vec::new)
    }
}
