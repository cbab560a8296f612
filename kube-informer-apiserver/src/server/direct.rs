//! Direct store calls on [`ApiServer`]: create, replace, patch, delete, get and list without HTTP — as JSON values
//! or typed objects. They follow the same rules as the HTTP verbs (validation, resourceVersions, finalizers,
//! events for watchers, `managedFields`: their writes are owned by [`DIRECT_FIELD_MANAGER`]), but skip faults,
//! authentication and the request log.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::admission::Admission;
use crate::api::errors::{self, Failure};
use crate::patch::managed_fields::{DIRECT_FIELD_MANAGER, Writer};
use crate::registry::conversion;
use crate::registry::crd;
use crate::registry::namespace_deletion;
use crate::registry::resource::ResourceSpec;
use crate::registry::strategy::{self, DeleteOptions, Deleted, PatchType, Target};
use crate::server::ApiServer;
use crate::storage::store::StoredObject;
use kube_informer::Error;
use kube_informer::object::{ApiResource, MetaAccessor, Resource};

fn api(st: Failure) -> Error {
    Error::Api(st)
}

fn to_value<T: Serialize>(obj: &T) -> Result<Value, Error> {
    serde_json::to_value(obj).map_err(|e| Error::Serialize(e.to_string()))
}

fn from_stored<K: DeserializeOwned>(o: &StoredObject) -> Result<K, Error> {
    serde_json::from_slice(&o.json).map_err(|e| Error::Serialize(format!("stored object does not fit the type: {e}")))
}

impl ApiServer {
    /// A write to a CRD, or to an object of a CRD being deleted, changes what the server serves.
    fn after_write(&self, spec: &ResourceSpec, namespace: Option<&str>, name: Option<&str>) {
        if spec.id() == crd::ID || spec.terminating {
            crd::sync(&self.shared().store);
        }
        namespace_deletion::after_write(&self.shared().store, spec, namespace, name);
        if spec.id() == crate::auth::rbac::rule_resolver::CLUSTER_ROLES {
            crate::auth::rbac::clusterrole_aggregation::sync(&self.shared().store);
        }
    }

    /// The spec of `ar` in its version: 404 when not served, 500 when serving it needs a conversion webhook.
    fn spec_of(&self, ar: &ApiResource) -> Result<std::sync::Arc<ResourceSpec>, Error> {
        let spec = self
            .shared()
            .store
            .lock()
            .served(&ar.qualified_name(), &ar.version)
            .ok_or_else(|| api(errors::no_such_path()))?;
        match conversion::refused(&spec) {
            Some(st) => Err(api(st)),
            None => Ok(spec),
        }
    }

    /// Creates an object (POST semantics: generateName, validation, uid, creationTimestamp, generation 1 where the
    /// resource counts generations).
    ///
    /// # Errors
    /// [`Error::Api`] with the Status the HTTP verb would answer (409 AlreadyExists, 422 Invalid, …).
    ///
    /// ```
    /// use kube_informer::object::ApiResource;
    /// use kube_informer_apiserver::ApiServer;
    /// use serde_json::json;
    ///
    /// let server = ApiServer::start().unwrap();
    /// let cm = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// let created = server.create_json(&cm, Some("default"), json!({"metadata": {"name": "a"}})).unwrap();
    /// assert!(created["metadata"].get("generation").is_none(), "config maps have no generation");
    /// assert_eq!(server.get_json(&cm, Some("default"), "a").unwrap(), created);
    /// ```
    pub fn create_json(&self, ar: &ApiResource, namespace: Option<&str>, obj: Value) -> Result<Value, Error> {
        let spec = self.spec_of(ar)?;
        let mut obj = obj;
        Admission::quiet(&spec).admit(&mut obj).map_err(api)?;
        let store = &self.shared().store;
        let w =
            strategy::create(store, &spec, namespace, obj, false, DIRECT_FIELD_MANAGER, &mut |_| {}).map_err(api)?;
        self.after_write(&spec, namespace, None);
        Ok(conversion::served(&spec, w.object).to_value())
    }

    /// Replaces an object (PUT semantics: a non-empty resourceVersion must be current, else 409).
    ///
    /// # Errors
    /// [`Error::Api`] as the HTTP verb.
    pub fn replace_json(&self, ar: &ApiResource, namespace: Option<&str>, obj: Value) -> Result<Value, Error> {
        let spec = self.spec_of(ar)?;
        self.replace_stored(&spec, namespace, obj, false)
    }

    /// Replaces an object's `.status` only (PUT on the status subresource).
    ///
    /// # Errors
    /// [`Error::Api`] as the HTTP verb; 404 when the resource has no status subresource.
    pub fn replace_status_json(&self, ar: &ApiResource, namespace: Option<&str>, obj: Value) -> Result<Value, Error> {
        let spec = self.spec_of(ar)?;
        if !spec.status_subresource {
            return Err(api(errors::no_such_path()));
        }
        self.replace_stored(&spec, namespace, obj, true)
    }

    /// PUT of the object or (`status`) of its status subresource: admission, then the update strategy.
    fn replace_stored(
        &self,
        spec: &ResourceSpec,
        namespace: Option<&str>,
        obj: Value,
        status: bool,
    ) -> Result<Value, Error> {
        let mut obj = obj;
        Admission::quiet(spec).admit(&mut obj).map_err(api)?;
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let w = strategy::update(
            Target::new(&self.shared().store, spec, namespace, &name),
            obj,
            status,
            DIRECT_FIELD_MANAGER,
            &mut |_| {},
        )
        .map_err(api)?;
        self.after_write(spec, namespace, None);
        Ok(conversion::served(spec, w.object).to_value())
    }

    /// Applies a JSON merge patch (RFC 7386) to an object.
    ///
    /// # Errors
    /// [`Error::Api`] as the HTTP verb.
    pub fn patch_json(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<Value, Error> {
        let spec = self.spec_of(ar)?;
        let w = strategy::patch(
            Target::new(&self.shared().store, &spec, namespace, name),
            PatchType::Merge,
            patch,
            false,
            &Writer {
                manager: DIRECT_FIELD_MANAGER.to_owned(),
                force: false,
            },
            &mut |obj| Admission::quiet(&spec).admit(obj),
            &mut |_| {},
        )
        .map_err(api)?;
        self.after_write(&spec, namespace, Some(name));
        Ok(conversion::served(&spec, w.object).to_value())
    }

    /// Deletes an object. Returns `Ok(true)` when it is gone, `Ok(false)` when finalizers hold it (it now has a
    /// deletionTimestamp).
    ///
    /// # Errors
    /// [`Error::Api`] 404 when absent.
    pub fn delete_json(&self, ar: &ApiResource, namespace: Option<&str>, name: &str) -> Result<bool, Error> {
        let spec = self.spec_of(ar)?;
        let outcome = strategy::delete(
            &self.shared().store,
            &spec,
            namespace,
            name,
            &DeleteOptions::default(),
            &mut |_| {},
        )
        .map_err(api)?;
        self.after_write(&spec, namespace, Some(name));
        Ok(matches!(outcome, Deleted::Gone(_)))
    }

    /// The current state of an object.
    ///
    /// # Errors
    /// [`Error::Api`] 404 when absent.
    pub fn get_json(&self, ar: &ApiResource, namespace: Option<&str>, name: &str) -> Result<Value, Error> {
        self.get_stored(ar, namespace, name).map(|o| o.to_value())
    }

    fn get_stored(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<std::sync::Arc<StoredObject>, Error> {
        let spec = self.spec_of(ar)?;
        let ns = if spec.api.namespaced {
            namespace.unwrap_or("")
        } else {
            ""
        };
        self.shared()
            .store
            .lock()
            .get(&spec.id(), &crate::storage::store::object_key(ns, name))
            .map(|o| conversion::served(&spec, o))
            .ok_or_else(|| api(errors::not_found(&spec.api, name)))
    }

    fn list_stored(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
    ) -> Result<Vec<std::sync::Arc<StoredObject>>, Error> {
        let spec = self.spec_of(ar)?;
        let g = self.shared().store.lock();
        let items = g.list_current(&spec.id(), if spec.api.namespaced { namespace } else { None });
        drop(g);
        Ok(items.into_iter().map(|o| conversion::served(&spec, o)).collect())
    }

    /// Every object of a resource (in one namespace, or all when `None`), in key order.
    ///
    /// # Errors
    /// [`Error::Api`] 404 when the resource is not served.
    pub fn list_json(&self, ar: &ApiResource, namespace: Option<&str>) -> Result<Vec<Value>, Error> {
        Ok(self.list_stored(ar, namespace)?.iter().map(|o| o.to_value()).collect())
    }

    /// Creates a typed object in its `metadata.namespace`.
    ///
    /// # Errors
    /// As [`create_json`](Self::create_json); [`Error::Serialize`] when the object does not serialise.
    ///
    /// ```
    /// use kube_informer::object::{core::ConfigMap, ObjectMeta};
    /// use kube_informer_apiserver::ApiServer;
    ///
    /// let server = ApiServer::start().unwrap();
    /// let cm = server.create(&ConfigMap::new(ObjectMeta::namespaced("default", "c")).with("k", "v")).unwrap();
    /// assert!(cm.metadata.uid.is_some());
    /// let again: ConfigMap = server.get(Some("default"), "c").unwrap();
    /// assert_eq!(again, cm);
    /// ```
    pub fn create<K: Resource>(&self, obj: &K) -> Result<K, Error> {
        let ns = obj.meta().namespace().map(str::to_owned);
        let v = self.create_json(&K::api_resource(), ns.as_deref(), to_value(obj)?)?;
        serde_json::from_value(v).map_err(|e| Error::Serialize(e.to_string()))
    }

    /// Replaces a typed object (409 when its resourceVersion is stale).
    ///
    /// # Errors
    /// As [`replace_json`](Self::replace_json).
    pub fn replace<K: Resource>(&self, obj: &K) -> Result<K, Error> {
        let ns = obj.meta().namespace().map(str::to_owned);
        let v = self.replace_json(&K::api_resource(), ns.as_deref(), to_value(obj)?)?;
        serde_json::from_value(v).map_err(|e| Error::Serialize(e.to_string()))
    }

    /// Replaces a typed object's status.
    ///
    /// # Errors
    /// As [`replace_status_json`](Self::replace_status_json).
    pub fn replace_status<K: Resource>(&self, obj: &K) -> Result<K, Error> {
        let ns = obj.meta().namespace().map(str::to_owned);
        let v = self.replace_status_json(&K::api_resource(), ns.as_deref(), to_value(obj)?)?;
        serde_json::from_value(v).map_err(|e| Error::Serialize(e.to_string()))
    }

    /// A typed object.
    ///
    /// # Errors
    /// As [`get_json`](Self::get_json).
    pub fn get<K: Resource>(&self, namespace: Option<&str>, name: &str) -> Result<K, Error> {
        from_stored(&*self.get_stored(&K::api_resource(), namespace, name)?)
    }

    /// Every object of a typed resource (in one namespace, or all).
    ///
    /// # Errors
    /// As [`list_json`](Self::list_json).
    pub fn list<K: Resource>(&self, namespace: Option<&str>) -> Result<Vec<K>, Error> {
        self.list_stored(&K::api_resource(), namespace)?
            .iter()
            .map(|o| from_stored(o))
            .collect()
    }

    /// Deletes a typed object; `Ok(false)` when finalizers hold it.
    ///
    /// # Errors
    /// As [`delete_json`](Self::delete_json).
    pub fn delete<K: Resource>(&self, namespace: Option<&str>, name: &str) -> Result<bool, Error> {
        self.delete_json(&K::api_resource(), namespace, name)
    }
}
