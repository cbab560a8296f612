//! Predicates: which informer events are worth a reconcile (controller-runtime's `predicate` package).
//!
//! A controller reconciles on every event by default. Many events change nothing the reconcile reads — above all
//! the controller's own status writes: a reconcile writes `.status`, the write is an update event, the update
//! queues the key, the key is reconciled again and writes the status again (or at least reads everything again).
//! Under [`GenerationChanged`] the loop is gone: the API server bumps `metadata.generation` only when the spec
//! changes, so a status write (or a label edit) passes by without queueing anything.
//!
//! Predicates apply before a key is queued, on the primary informer
//! ([`ControllerBuilder::predicate`](super::ControllerBuilder::predicate)) or on a secondary one
//! ([`owns_filtered`](super::ControllerBuilder::owns_filtered), [`watches_filtered`](super::ControllerBuilder::watches_filtered)).
//! They compose with [`and`](Predicate::and), [`or`](Predicate::or) and [`not`](Predicate::not); closures become
//! predicates with [`on_update`], [`on_create`] and [`on_delete`].
//!
//! ```
//! use kube_informer::controller::predicate::{self, AnnotationsChanged, GenerationChanged, LabelsChanged, Predicate};
//! use kube_informer::object::core::ConfigMap;
//! use kube_informer::object::ObjectMeta;
//!
//! // Spec changes, label changes, and an annotation that asks for a run.
//! let p = GenerationChanged
//!     .or(LabelsChanged)
//!     .or(AnnotationsChanged.and(predicate::on_update(|_old: &ConfigMap, new: &ConfigMap| {
//!         new.metadata.annotations.contains_key("example.com/run-now")
//!     })));
//! let mut old = ConfigMap::new(ObjectMeta::namespaced("ns", "a"));
//! old.metadata.generation = Some(1);
//! let mut new = old.clone();
//! new.metadata.resource_version = Some("2".into()); // a status write: same generation
//! assert!(!p.update(&old, &new));
//! new.metadata.annotations.insert("example.com/run-now".into(), "1".into());
//! assert!(p.update(&old, &new));
//! assert!(p.create(&new) && p.delete(&new));
//! ```

use std::marker::PhantomData;

use crate::informer::Notification;
use crate::object::{MetaAccessor, Object, StrMap};

/// Decides whether an event of an informer should queue a reconcile. Each method defaults to `true` (let it
/// through): a predicate overrides the kinds of event it judges.
pub trait Predicate<K>: Send + Sync + 'static {
    /// An object appeared (created, or listed for the first time).
    fn create(&self, obj: &K) -> bool {
        let _ = obj;
        true
    }

    /// An object changed from `old` to `new`.
    fn update(&self, old: &K, new: &K) -> bool {
        let _ = (old, new);
        true
    }

    /// An object went away (its last known state).
    fn delete(&self, obj: &K) -> bool {
        let _ = obj;
        true
    }

    /// Lets through what both `self` and `other` let through.
    fn and<P: Predicate<K>>(self, other: P) -> And<Self, P, K>
    where
        Self: Sized,
    {
        And(self, other, PhantomData)
    }

    /// Lets through what either `self` or `other` lets through.
    fn or<P: Predicate<K>>(self, other: P) -> Or<Self, P, K>
    where
        Self: Sized,
    {
        Or(self, other, PhantomData)
    }

    /// Lets through what `self` stops, and the reverse — for every kind of event (`GenerationChanged.not()` stops
    /// creates and deletes too).
    fn not(self) -> Not<Self, K>
    where
        Self: Sized,
    {
        Not(self, PhantomData)
    }
}

/// Whether `predicate` lets `event` through.
pub(crate) fn admits<K: 'static>(predicate: &dyn Predicate<K>, event: &Notification<K>) -> bool {
    match event {
        Notification::Add { obj, .. } => predicate.create(obj),
        Notification::Update { old, new } => predicate.update(old, new),
        Notification::Delete(d) => predicate.delete(d.object()),
    }
}

impl<K: 'static, P: Predicate<K> + ?Sized> Predicate<K> for Box<P> {
    fn create(&self, obj: &K) -> bool {
        (**self).create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        (**self).update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        (**self).delete(obj)
    }
}

/// Updates whose `metadata.generation` changed: spec changes, and the start of a deletion (the server bumps the
/// generation when it sets `deletionTimestamp`) — not status writes, nor metadata edits. Creates and deletes pass.
///
/// Resources whose objects carry no generation (ConfigMaps, Secrets: no spec) let every update through, where
/// controller-runtime's `GenerationChangedPredicate` would let none: a missed change is worse than an extra
/// reconcile.
#[derive(Clone, Copy, Debug, Default)]
pub struct GenerationChanged;

impl<K: Object> Predicate<K> for GenerationChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        match (old.meta().generation(), new.meta().generation()) {
            (Some(a), Some(b)) => a != b,
            _ => true,
        }
    }
}

/// Updates whose labels changed. Creates and deletes pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelsChanged;

impl<K: Object> Predicate<K> for LabelsChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        !same_map(old.meta().labels(), new.meta().labels())
    }
}

/// Updates whose annotations changed. Creates and deletes pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnnotationsChanged;

impl<K: Object> Predicate<K> for AnnotationsChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        !same_map(old.meta().annotations(), new.meta().annotations())
    }
}

/// Updates whose finalizers changed. Creates and deletes pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct FinalizersChanged;

impl<K: Object> Predicate<K> for FinalizersChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        old.meta().finalizers() != new.meta().finalizers()
    }
}

/// Updates whose resourceVersion changed: every real change, but not the periodic resyncs an informer replays
/// with the same version. Creates and deletes pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResourceVersionChanged;

impl<K: Object> Predicate<K> for ResourceVersionChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        old.meta().resource_version() != new.meta().resource_version()
    }
}

/// Equal entries, whatever the order.
fn same_map(a: &dyn StrMap, b: &dyn StrMap) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v))
}

/// [`Predicate::and`] (the object type is part of the type, so that it is inferred from where the predicate is
/// used).
pub struct And<A, B, K>(A, B, PhantomData<fn(&K)>);

impl<K: 'static, A: Predicate<K>, B: Predicate<K>> Predicate<K> for And<A, B, K> {
    fn create(&self, obj: &K) -> bool {
        self.0.create(obj) && self.1.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.0.update(old, new) && self.1.update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        self.0.delete(obj) && self.1.delete(obj)
    }
}

/// [`Predicate::or`].
pub struct Or<A, B, K>(A, B, PhantomData<fn(&K)>);

impl<K: 'static, A: Predicate<K>, B: Predicate<K>> Predicate<K> for Or<A, B, K> {
    fn create(&self, obj: &K) -> bool {
        self.0.create(obj) || self.1.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.0.update(old, new) || self.1.update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        self.0.delete(obj) || self.1.delete(obj)
    }
}

/// [`Predicate::not`].
pub struct Not<A, K>(A, PhantomData<fn(&K)>);

impl<K: 'static, A: Predicate<K>> Predicate<K> for Not<A, K> {
    fn create(&self, obj: &K) -> bool {
        !self.0.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        !self.0.update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        !self.0.delete(obj)
    }
}

/// A predicate judging updates with `f(old, new)`; creates and deletes pass.
pub fn on_update<K, F>(f: F) -> OnUpdate<K, F>
where
    F: Fn(&K, &K) -> bool + Send + Sync + 'static,
{
    OnUpdate(f, PhantomData)
}

/// A predicate judging creates with `f(obj)`; updates and deletes pass.
pub fn on_create<K, F>(f: F) -> OnCreate<K, F>
where
    F: Fn(&K) -> bool + Send + Sync + 'static,
{
    OnCreate(f, PhantomData)
}

/// A predicate judging deletes with `f(last_state)`; creates and updates pass.
pub fn on_delete<K, F>(f: F) -> OnDelete<K, F>
where
    F: Fn(&K) -> bool + Send + Sync + 'static,
{
    OnDelete(f, PhantomData)
}

/// [`on_update`].
pub struct OnUpdate<K, F>(F, PhantomData<fn(&K)>);

impl<K: 'static, F: Fn(&K, &K) -> bool + Send + Sync + 'static> Predicate<K> for OnUpdate<K, F> {
    fn update(&self, old: &K, new: &K) -> bool {
        (self.0)(old, new)
    }
}

/// [`on_create`].
pub struct OnCreate<K, F>(F, PhantomData<fn(&K)>);

impl<K: 'static, F: Fn(&K) -> bool + Send + Sync + 'static> Predicate<K> for OnCreate<K, F> {
    fn create(&self, obj: &K) -> bool {
        (self.0)(obj)
    }
}

/// [`on_delete`].
pub struct OnDelete<K, F>(F, PhantomData<fn(&K)>);

impl<K: 'static, F: Fn(&K) -> bool + Send + Sync + 'static> Predicate<K> for OnDelete<K, F> {
    fn delete(&self, obj: &K) -> bool {
        (self.0)(obj)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::cache::DeletedObject;
    use crate::object::ObjectMeta;
    use crate::object::core::ConfigMap;

    fn obj(generation: Option<i64>, rv: &str) -> ConfigMap {
        let mut meta = ObjectMeta::namespaced("ns", "a");
        meta.generation = generation;
        meta.resource_version = Some(rv.into());
        ConfigMap::new(meta)
    }

    #[test]
    fn generation_changed_stops_status_writes_and_lets_spec_changes_through() {
        let p = GenerationChanged;
        assert!(!p.update(&obj(Some(1), "1"), &obj(Some(1), "2")), "a status write");
        assert!(p.update(&obj(Some(1), "1"), &obj(Some(2), "2")), "a spec change");
        assert!(
            p.update(&obj(None, "1"), &obj(None, "2")),
            "no generation: every update"
        );
        assert!(p.update(&obj(None, "1"), &obj(Some(1), "2")));
        assert!(p.create(&obj(Some(1), "1")) && p.delete(&obj(Some(1), "1")));
    }

    #[test]
    fn metadata_predicates_compare_what_they_name() {
        let a = obj(Some(1), "1");
        let mut b = obj(Some(1), "2");
        assert!(ResourceVersionChanged.update(&a, &b));
        assert!(!ResourceVersionChanged.update(&a, &a.clone()), "a resync");
        assert!(!LabelsChanged.update(&a, &b) && !AnnotationsChanged.update(&a, &b));
        b.metadata.labels.insert("x".into(), "1".into());
        assert!(LabelsChanged.update(&a, &b) && !AnnotationsChanged.update(&a, &b));
        // Order does not matter, values do.
        let mut c = a.clone();
        c.metadata.labels.insert("y".into(), "2".into());
        c.metadata.labels.insert("x".into(), "1".into());
        let mut d = a.clone();
        d.metadata.labels.insert("x".into(), "1".into());
        d.metadata.labels.insert("y".into(), "2".into());
        assert!(!LabelsChanged.update(&c, &d));
        d.metadata.labels.insert("y".into(), "3".into());
        assert!(LabelsChanged.update(&c, &d));
        b.metadata.annotations.insert("n".into(), "v".into());
        assert!(AnnotationsChanged.update(&a, &b));
        assert!(!FinalizersChanged.update(&a, &b));
        b.metadata.finalizers.push("f".into());
        assert!(FinalizersChanged.update(&a, &b));
    }

    #[test]
    fn combinators_follow_boolean_logic_per_event_kind() {
        let spec = obj(Some(2), "2");
        let status = obj(Some(1), "2");
        let base = obj(Some(1), "1");
        let never = on_update(|_: &ConfigMap, _: &ConfigMap| false);
        let always = on_update(|_: &ConfigMap, _: &ConfigMap| true);
        assert!(!GenerationChanged.and(always).update(&base, &status));
        assert!(
            GenerationChanged
                .and(on_update(|_: &ConfigMap, _: &ConfigMap| true))
                .update(&base, &spec)
        );
        assert!(!GenerationChanged.and(never).update(&base, &spec));
        assert!(GenerationChanged.or(ResourceVersionChanged).update(&base, &status));
        assert!(
            !GenerationChanged
                .or(on_update(|_: &ConfigMap, _: &ConfigMap| false))
                .update(&base, &status)
        );
        assert!(GenerationChanged.not().update(&base, &status));
        assert!(
            !GenerationChanged.not().create(&base),
            "not negates every kind of event"
        );
        let only_prod = on_create(|c: &ConfigMap| c.metadata.namespace.as_deref() == Some("prod"));
        assert!(!only_prod.create(&base) && only_prod.update(&base, &spec) && only_prod.delete(&base));
        let keep = on_delete(|c: &ConfigMap| c.metadata.finalizers.is_empty());
        assert!(keep.delete(&base) && keep.create(&base));
        let boxed: Box<dyn Predicate<ConfigMap>> = Box::new(GenerationChanged);
        assert!(!boxed.update(&base, &status));
    }

    #[test]
    fn events_are_judged_by_their_kind() {
        let p = on_update(|_: &ConfigMap, _: &ConfigMap| false).and(on_delete(|_: &ConfigMap| false));
        let o = Arc::new(obj(Some(1), "1"));
        assert!(admits(
            &p,
            &Notification::Add {
                obj: o.clone(),
                is_in_initial_list: false
            }
        ));
        assert!(!admits(
            &p,
            &Notification::Update {
                old: o.clone(),
                new: o.clone()
            }
        ));
        assert!(!admits(&p, &Notification::Delete(DeletedObject::Object(o))));
    }
}
