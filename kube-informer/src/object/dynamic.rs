//! `DynamicObject`: any Kubernetes object, for resources known only at run time.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::managed_fields::SharedStr;
use super::meta::InPlace;
use super::{ApiResource, Object, ObjectMeta, RawJson, interner};

/// An object of any kind: parsed metadata plus every other top-level field kept as raw JSON text.
///
/// It decodes in place (`Deserialize::deserialize_in_place`), reusing the metadata's strings of the object decoded
/// over: the informer decodes watch events into the objects its cache let go of.
///
/// Keeping `spec`, `status`, `data`… as text makes a cached `DynamicObject` about as large as its JSON instead of the
/// ~3× a `serde_json::Value` tree costs; fields are parsed only when read ([`DynamicObject::field`]). `apiVersion`,
/// `kind` and the names of the fields are shared between the objects of a cache.
///
/// ```
/// use kube_informer::object::{ApiResource, DynamicObject};
/// use serde_json::json;
///
/// let ar = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
/// let mut d = DynamicObject::new("web", &ar).within("prod");
/// d.set_field("spec", &json!({"replicas": 3})).unwrap();
/// assert_eq!(d.field::<serde_json::Value>("spec").unwrap().unwrap()["replicas"], 3);
///
/// let text = serde_json::to_string(&d).unwrap();
/// assert_eq!(text, r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod"},"spec":{"replicas":3}}"#);
/// let back: DynamicObject = serde_json::from_str(&text).unwrap();
/// assert_eq!(back, d);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DynamicObject {
    /// `apiVersion` (empty when absent; shared between the objects of a cache).
    pub api_version: Arc<str>,
    /// `kind` (empty when absent; shared).
    pub kind: Arc<str>,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// Every other top-level field in the order received. Invariant: keys are unique.
    fields: Box<[(Arc<str>, RawJson)]>,
}

impl DynamicObject {
    /// An empty object of the given resource with a name.
    pub fn new(name: &str, resource: &ApiResource) -> Self {
        DynamicObject {
            api_version: resource.api_version().into(),
            kind: resource.kind.as_str().into(),
            metadata: ObjectMeta::named(name),
            fields: Box::default(),
        }
    }

    /// Sets the namespace.
    #[must_use]
    pub fn within(mut self, namespace: &str) -> Self {
        self.metadata.namespace = Some(namespace.into());
        self
    }

    /// Sets a top-level field from any serialisable value (builder style).
    ///
    /// # Panics
    /// Never for values serde_json can represent; a value that fails to serialise (a map with non-string keys) is
    /// skipped. Use [`DynamicObject::set_field`] to see that error.
    #[must_use]
    pub fn with_field<T: Serialize + ?Sized>(mut self, key: &str, value: &T) -> Self {
        let _ = self.set_field(key, value);
        self
    }

    /// Parses one top-level field; `Ok(None)` when absent.
    pub fn field<'a, T: Deserialize<'a>>(&'a self, key: &str) -> serde_json::Result<Option<T>> {
        self.raw_field(key).map(|r| r.parse()).transpose()
    }

    /// One top-level field as raw JSON text.
    pub fn raw_field(&self, key: &str) -> Option<&RawJson> {
        self.fields.iter().find(|(k, _)| &**k == key).map(|(_, v)| v)
    }

    /// Sets (or replaces) a top-level field. `apiVersion`, `kind` and `metadata` are set through their struct
    /// fields instead; passing one of those keys returns an error.
    pub fn set_field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> serde_json::Result<()> {
        if matches!(key, "apiVersion" | "kind" | "metadata") {
            return Err(de::Error::custom(format!("{key} is a struct field of DynamicObject")));
        }
        let raw = RawJson::from_value(value)?;
        match self.fields.iter_mut().find(|(k, _)| &**k == key) {
            Some(slot) => slot.1 = raw,
            None => {
                let mut fields = std::mem::take(&mut self.fields).into_vec();
                fields.push((key.into(), raw));
                self.fields = fields.into_boxed_slice();
            }
        }
        Ok(())
    }

    /// Removes a top-level field, returning it.
    pub fn remove_field(&mut self, key: &str) -> Option<RawJson> {
        let i = self.fields.iter().position(|(k, _)| &**k == key)?;
        let mut fields = std::mem::take(&mut self.fields).into_vec();
        let removed = fields.remove(i).1;
        self.fields = fields.into_boxed_slice();
        Some(removed)
    }

    /// The non-metadata top-level fields, in order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &RawJson)> {
        self.fields.iter().map(|(k, v)| (&**k, v))
    }

    /// Converts the whole object into a `serde_json::Value` (allocates; for inspection, not for caches).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl Object for DynamicObject {
    type Meta = ObjectMeta;
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Serialize for DynamicObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3 + self.fields.len()))?;
        if !self.api_version.is_empty() {
            map.serialize_entry("apiVersion", &*self.api_version)?;
        }
        if !self.kind.is_empty() {
            map.serialize_entry("kind", &*self.kind)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        for (k, v) in self.fields.iter() {
            map.serialize_entry(&**k, v)?;
        }
        map.end()
    }
}

/// Reads a DynamicObject over `self.0` (a default one for a fresh decode), reusing its metadata's allocations.
struct DynVisitor<'a>(&'a mut DynamicObject);

thread_local! {
    /// Where [`DynVisitor`] gathers an object's fields before boxing them at their exact count: a `Vec` grown for
    /// them and then shrunk into the box splits off a small free chunk for every object decoded, which glibc's fast
    /// bins keep from joining its neighbours — the holes a relist's new versions then cannot use. Taken while in use,
    /// so a decode nested in another (none today) gets a fresh one.
    static FIELDS: std::cell::Cell<Vec<(Arc<str>, RawJson)>> = const { std::cell::Cell::new(Vec::new()) };
}

impl<'de> Visitor<'de> for DynVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let o = self.0;
        // Left empty on an error (`?` drops it): the next decode starts a new one. In a thread's destructors, where
        // the scratch is gone, a fresh `Vec` does the same job.
        let mut fields = FIELDS.try_with(std::cell::Cell::take).unwrap_or_default();
        let (mut api_version, mut kind, mut metadata) = (None, None, false);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                // `null` reads as absent.
                "apiVersion" => api_version = map.next_value_seed(SharedStr)?,
                "kind" => kind = map.next_value_seed(SharedStr)?,
                "metadata" => {
                    metadata = true;
                    map.next_value_seed(InPlace(&mut o.metadata))?;
                }
                _ => {
                    let v: RawJson = map.next_value()?;
                    match fields.iter_mut().find(|(k, _): &&mut (Arc<str>, RawJson)| **k == *key) {
                        // Duplicate keys: the last one wins, as in serde_json::Value.
                        Some(slot) => slot.1 = v,
                        None => fields.push((interner::intern(&key), v)),
                    }
                }
            }
        }
        // What the object did not mention takes its default, as in a fresh decode.
        o.api_version = api_version.unwrap_or_else(|| interner::intern(""));
        o.kind = kind.unwrap_or_else(|| interner::intern(""));
        // `drain` knows its length: one allocation of exactly that, no shrinking.
        o.fields = fields.drain(..).collect();
        // Gone only in a thread's destructors: the `Vec` is then dropped here.
        let _ = FIELDS.try_with(|scratch| scratch.set(fields));
        if !metadata {
            o.metadata = ObjectMeta::default();
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for DynamicObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut o = DynamicObject::default();
        d.deserialize_map(DynVisitor(&mut o))?;
        Ok(o)
    }

    /// Decodes into `place`, reusing its strings, metadata and field list; the result is the same as
    /// [`deserialize`](Self::deserialize)'s. On an error `place` holds a mix of old and new fields.
    fn deserialize_in_place<D: Deserializer<'de>>(d: D, place: &mut Self) -> Result<(), D::Error> {
        d.deserialize_map(DynVisitor(place))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_unknown_fields_verbatim() {
        let text = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"d"},"spec":{"containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"Running"}}"#;
        let o: DynamicObject = serde_json::from_str(text).unwrap();
        assert_eq!(&*o.kind, "Pod");
        assert_eq!(o.raw_field("status").unwrap().get(), r#"{"phase":"Running"}"#);
        let a: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(o.to_value(), a);
    }

    /// A decode in a thread's destructors, after the thread's decode scratch (fields, labels, managedFields) is
    /// gone, works as anywhere else instead of panicking.
    #[test]
    fn decodes_in_a_threads_destructors() {
        const TEXT: &str = r#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","labels":{"app":"a"},"managedFields":[{"manager":"m","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},"spec":{"size":3}}"#;
        type Decoded = std::thread::Result<DynamicObject>;
        struct DecodeOnDrop(Option<std::sync::mpsc::Sender<Decoded>>);
        impl Drop for DecodeOnDrop {
            fn drop(&mut self) {
                let decoded = std::panic::catch_unwind(|| serde_json::from_str::<DynamicObject>(TEXT).unwrap());
                if let Some(tx) = self.0.take() {
                    let _ = tx.send(decoded);
                }
            }
        }
        thread_local! {
            static ON_EXIT: std::cell::RefCell<DecodeOnDrop> = const { std::cell::RefCell::new(DecodeOnDrop(None)) };
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("test:tls-exit".into())
            .spawn(move || {
                // Touched first, so destroyed after the scratch the decode below sets up (destructors run in
                // reverse order of first use).
                ON_EXIT.with(|d| d.borrow_mut().0 = Some(tx));
                let first: DynamicObject = serde_json::from_str(TEXT).unwrap();
                assert_eq!(first.metadata.managed_fields.map(|m| m.len()), Some(1));
            })
            .unwrap()
            .join()
            .unwrap();
        let o = rx.recv().unwrap().expect("the decode in the destructor panicked");
        assert_eq!(o.metadata.labels.get("app"), Some("a"));
        assert_eq!(o.metadata.managed_fields.as_ref().map(|m| m.len()), Some(1));
        assert_eq!(o.raw_field("spec").unwrap().get(), r#"{"size":3}"#);
    }

    #[test]
    fn duplicate_keys_keep_the_last_value() {
        let o: DynamicObject = serde_json::from_str(r#"{"metadata":{},"spec":1,"spec":2}"#).unwrap();
        assert_eq!(o.fields().count(), 1);
        assert_eq!(o.field::<i32>("spec").unwrap(), Some(2));
    }

    #[test]
    fn refuses_struct_fields_through_set_field() {
        let mut o = DynamicObject::default();
        assert!(o.set_field("metadata", &1).is_err());
        o.set_field("data", &serde_json::json!({"a": "b"})).unwrap();
        o.set_field("data", &serde_json::json!({"a": "c"})).unwrap();
        assert_eq!(o.fields().count(), 1);
        assert_eq!(o.remove_field("data").unwrap().get(), r#"{"a":"c"}"#);
        assert_eq!(o.field::<serde_json::Value>("data").unwrap(), None);
    }
}
