//! The storage: etcd-like MVCC over serialized objects, one global revision counter, and a bounded event history
//! per resource (the watch cache).
//!
//! * Every write takes the next revision of the one global counter (etcd's revision) and stamps it into the object's
//!   `metadata.resourceVersion`.
//! * Each key keeps a short list of versions, so a LIST can read any revision not yet compacted: pages of one list
//!   are a consistent snapshot at the first page's revision, and `resourceVersionMatch=Exact` reads the past.
//!   Compaction drops versions no readable revision needs.
//! * Each resource keeps its last events in a ring; a watcher holds a sequence number into it and reads at its own
//!   pace without ever blocking a writer. Events evicted from the ring (or compacted) raise the resource's *floor*:
//!   a watch from a resourceVersion below it is answered `410 Expired`.
//!
//! The store knows no kinds: each resource is registered with a description of the registry's ([`Spec`]: where it
//! is filed, its version, the fields stored beside its objects), which it keeps and hands back.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};
use serde_json::Value;

use crate::api::util;
use crate::serializer::json;

/// What the store needs of a resource's description (the registry's `ResourceSpec` is one).
pub(crate) trait Spec: fmt::Debug {
    /// The key the resource is filed under (`plural.group`).
    fn id(&self) -> String;
    /// The group and plural: the order [`StoreInner::specs`] lists resources in.
    fn group_and_plural(&self) -> (&str, &str);
    /// The version this description serves.
    fn version(&self) -> &str;
    /// A custom resource (a CRD's).
    fn custom(&self) -> bool;
    /// The selectable fields whose values are stored beside each object, in this order.
    fn selectable_fields(&self) -> &[String];
    /// Where the value of the selectable field `label` is read when it is not its own path: the path, and the value
    /// an object without it has.
    fn field_label_source(&self, label: &str) -> Option<(&str, &str)>;
}

impl<T: Spec + ?Sized> Spec for Arc<T> {
    fn id(&self) -> String {
        (**self).id()
    }
    fn group_and_plural(&self) -> (&str, &str) {
        (**self).group_and_plural()
    }
    fn version(&self) -> &str {
        (**self).version()
    }
    fn custom(&self) -> bool {
        (**self).custom()
    }
    fn selectable_fields(&self) -> &[String] {
        (**self).selectable_fields()
    }
    fn field_label_source(&self, label: &str) -> Option<(&str, &str)> {
        (**self).field_label_source(label)
    }
}

/// One stored version of an object: its JSON bytes plus the parsed fields filtering needs.
#[derive(Debug)]
pub(crate) struct StoredObject {
    /// The object exactly as served, `metadata.resourceVersion` included.
    pub(crate) json: Box<[u8]>,
    pub(crate) name: String,
    /// Empty for cluster-scoped objects.
    pub(crate) namespace: String,
    pub(crate) uid: String,
    /// `metadata.resourceVersion` as a number.
    pub(crate) rev: u64,
    pub(crate) labels: BTreeMap<String, String>,
    /// Values of the resource's `selectable_fields`, in the same order ("" when absent).
    pub(crate) fields: Vec<String>,
}

impl StoredObject {
    /// Serializes `value` and reads the fields used for filtering.
    pub(crate) fn from_value(spec: &impl Spec, value: &Value) -> StoredObject {
        let meta = value.get("metadata");
        let text = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let labels = meta
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|l| {
                l.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        StoredObject {
            // The bytes kube-apiserver would serve: a built-in kind in its Go type's field order, a custom
            // resource with sorted keys.
            json: if spec.custom() {
                json::to_vec_unstructured(value)
            } else {
                json::to_vec(value)
            }
            .into_boxed_slice(),
            name: text("name"),
            namespace: text("namespace"),
            uid: text("uid"),
            rev: text("resourceVersion").parse().unwrap_or(0),
            labels,
            fields: spec
                .selectable_fields()
                .iter()
                .map(|p| match spec.field_label_source(p) {
                    Some((path, default)) => Some(field_value(value, path))
                        .filter(|v| !v.is_empty())
                        .unwrap_or_else(|| default.to_owned()),
                    None => field_value(value, p),
                })
                .collect(),
        }
    }

    /// The object parsed back into a JSON value.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// The storage key: `namespace/name`, or `name`.
    pub(crate) fn key(&self) -> String {
        object_key(&self.namespace, &self.name)
    }

    /// The value of a selectable field (`metadata.name`, `metadata.namespace` or one of the spec's).
    pub(crate) fn field<'a>(&'a self, spec: &impl Spec, path: &str) -> Option<&'a str> {
        match path {
            "metadata.name" => Some(&self.name),
            "metadata.namespace" => Some(&self.namespace),
            _ => spec
                .selectable_fields()
                .iter()
                .position(|f| f == path)
                // An object stored before its resource gained this field reads it as absent.
                .map(|i| self.fields.get(i).map_or("", String::as_str)),
        }
    }

    /// A copy whose `metadata.resourceVersion` is `rev` (the last state carried by a DELETED event).
    pub(crate) fn at_revision(&self, spec: &impl Spec, rev: u64) -> StoredObject {
        let mut v = self.to_value();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("resourceVersion".into(), Value::String(rev.to_string()));
        }
        StoredObject::from_value(spec, &v)
    }
}

/// A dot-separated path into a JSON object, as a field selector reads it ("" when absent or not a scalar).
pub(crate) fn field_value(value: &Value, path: &str) -> String {
    let mut v = value;
    for part in path.split('.') {
        match v.get(part) {
            Some(next) => v = next,
            None => return String::new(),
        }
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// `namespace/name`, or `name` when the namespace is empty.
pub(crate) fn object_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

/// The type of a stored event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    Added,
    Modified,
    Deleted,
}

impl EventKind {
    pub(crate) fn wire_name(self) -> &'static str {
        match self {
            EventKind::Added => "ADDED",
            EventKind::Modified => "MODIFIED",
            EventKind::Deleted => "DELETED",
        }
    }
}

/// One change, shared by every watcher of its resource.
#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) rev: u64,
    pub(crate) kind: EventKind,
    /// The new state; for DELETED the last state, with the deletion's resourceVersion.
    pub(crate) object: Arc<StoredObject>,
    /// The state before a MODIFIED event (a watcher whose selector the object left sees it as DELETED).
    pub(crate) prev: Option<Arc<StoredObject>>,
    /// `prev` restamped with this event's resourceVersion, made once on first need.
    prev_at_rev: OnceLock<Box<[u8]>>,
}

impl Event {
    /// `prev`'s JSON with this event's resourceVersion (what kube-apiserver sends when an object leaves a
    /// watcher's selector). Empty when there is no `prev`.
    pub(crate) fn prev_json_at_rev(&self, spec: &impl Spec) -> &[u8] {
        self.prev_at_rev.get_or_init(|| match &self.prev {
            Some(p) => p.at_revision(spec, self.rev).json,
            None => Box::default(),
        })
    }
}

/// One version of a key: the object, or `None` for a deletion (tombstone).
#[derive(Debug)]
struct Version {
    rev: u64,
    obj: Option<Arc<StoredObject>>,
}

/// The object at `rev` among ascending versions.
fn version_at(versions: &[Version], rev: u64) -> Option<&Arc<StoredObject>> {
    versions
        .iter()
        .rev()
        .find(|v| v.rev <= rev)
        .and_then(|v| v.obj.as_ref())
}

/// Drops versions no revision ≥ `compacted` can read: everything before the newest version at or below
/// `compacted`, and that version too when it is a tombstone.
fn prune(versions: &mut Vec<Version>, compacted: u64) {
    if let Some(i) = versions.iter().rposition(|v| v.rev <= compacted) {
        versions.drain(..i);
        if versions[0].obj.is_none() {
            versions.remove(0);
        }
    }
}

/// One resource's data.
#[derive(Debug)]
pub(crate) struct ResourceState<S> {
    /// The storage version's spec: objects are stored as it says (their `apiVersion`, the selectable fields'
    /// values beside them).
    pub(crate) spec: Arc<S>,
    /// The versions served, most preferred first (Kubernetes' version priority); empty while none is (a CRD whose
    /// versions are all `served: false` keeps its objects). For a resource registered with one spec: that spec.
    served: Vec<Arc<S>>,
    /// Versions by key, in etcd key order. Invariant: every list is non-empty and ascending by revision.
    objects: BTreeMap<String, Vec<Version>>,
    /// The last events, ascending by revision. Invariant: `history.len() <= capacity`.
    history: VecDeque<Arc<Event>>,
    /// Sequence number of `history[0]`; sequence numbers grow by one per event and are never reused.
    first_seq: u64,
    /// A watch may start from any resourceVersion ≥ `floor`: no event after it was evicted or compacted.
    floor: u64,
    /// Watches currently streaming this resource.
    watchers: usize,
    /// Notified on every write to this resource (watchers of other resources sleep on).
    signal: Arc<Condvar>,
    /// The resource stopped being served (its CRD was deleted): its last events stay readable for the watchers
    /// draining them, which then end; nothing else finds it.
    removed: bool,
}

/// A change to commit.
pub(crate) enum Change {
    /// Create or replace with this object (stamped with the next revision).
    Put(StoredObject),
    /// Delete; this is the last state, stamped with the next revision.
    Delete(StoredObject),
}

/// What LIST reads.
pub(crate) struct ListQuery<'a> {
    /// `None`: every namespace (or a cluster-scoped resource).
    pub(crate) namespace: Option<&'a str>,
    /// The revision to read at.
    pub(crate) at: u64,
    /// Continue after this key.
    pub(crate) after: Option<&'a str>,
    /// Page size; 0 = everything.
    pub(crate) limit: usize,
    /// Selector match.
    pub(crate) filter: &'a dyn Fn(&StoredObject) -> bool,
    /// Count the matching objects after the page (only done when there is no selector, as etcd does).
    pub(crate) count_remaining: bool,
}

/// One page of a LIST.
pub(crate) struct ListPage {
    pub(crate) items: Vec<Arc<StoredObject>>,
    /// Another matching object follows the page.
    pub(crate) more: bool,
    /// Matching objects after the page (when counted).
    pub(crate) remaining: u64,
}

/// Everything behind the store lock.
#[derive(Debug)]
pub(crate) struct StoreInner<S> {
    /// Revision of the latest write; starts at the configured initial revision (≥ 1, "0" means "any" on the wire).
    rev: u64,
    /// Revisions below this cannot be read; ≤ `rev`.
    compacted: u64,
    history_capacity: usize,
    resources: HashMap<String, ResourceState<S>>,
    /// Bumped when the server cuts its connections: waits for a future revision give up.
    interrupts: u64,
    /// Bumped by every change to the set of resources or their specs (what OpenAPI documents are built from).
    registrations: u64,
}

impl<S: Spec> StoreInner<S> {
    fn new(initial_rev: u64, history_capacity: usize) -> Self {
        StoreInner {
            rev: initial_rev.max(1),
            compacted: 0,
            history_capacity: history_capacity.max(1),
            resources: HashMap::new(),
            interrupts: 0,
            registrations: 0,
        }
    }

    /// The revision of the latest write.
    pub(crate) fn rev(&self) -> u64 {
        self.rev
    }

    /// The compaction revision.
    pub(crate) fn compacted(&self) -> u64 {
        self.compacted
    }

    /// Adds a resource served in one version, or replaces the spec of a registered one (keeping its objects).
    pub(crate) fn register(&mut self, spec: S) {
        let spec = Arc::new(spec);
        self.register_versions(spec.clone(), vec![spec]);
    }

    /// Adds a resource stored as `storage` says and served in the `served` versions (most preferred first), or
    /// replaces the specs of a registered one (keeping its objects).
    pub(crate) fn register_versions(&mut self, storage: Arc<S>, served: Vec<Arc<S>>) {
        self.registrations += 1;
        let id = storage.id();
        let spec = storage;
        match self.resources.get_mut(&id) {
            Some(r) if !r.removed => {
                r.spec = spec;
                r.served = served;
            }
            _ => {
                self.resources.insert(
                    id,
                    ResourceState {
                        spec,
                        served,
                        objects: BTreeMap::new(),
                        history: VecDeque::new(),
                        first_seq: 0,
                        floor: self.compacted,
                        watchers: 0,
                        signal: Arc::new(Condvar::new()),
                        removed: false,
                    },
                );
            }
        }
    }

    /// A number that changes whenever the registered resources (or their specs) do.
    pub(crate) fn registrations(&self) -> u64 {
        self.registrations
    }

    /// Stops serving `id`: every object is deleted (a DELETED event each, at new revisions), then the resource is
    /// marked removed — watchers read those events and end. Returns false when it was not served.
    pub(crate) fn unregister(&mut self, id: &str) -> bool {
        let Some(r) = self.resources.get(id).filter(|r| !r.removed) else {
            return false;
        };
        let spec = r.spec.clone();
        let live: Vec<Arc<StoredObject>> = r
            .objects
            .values()
            .filter_map(|v| v.last().and_then(|v| v.obj.clone()))
            .collect();
        for o in live {
            let last = o.at_revision(&spec, self.rev + 1);
            self.commit(id, Change::Delete(last));
        }
        if let Some(r) = self.resources.get_mut(id) {
            r.removed = true;
        }
        self.registrations += 1;
        true
    }

    /// True when a watcher holding `signal` on `id` must end: the resource was removed or replaced since.
    pub(crate) fn gone(&self, id: &str, signal: &Arc<Condvar>) -> bool {
        self.resources
            .get(id)
            .is_none_or(|r| r.removed || !Arc::ptr_eq(&r.signal, signal))
    }

    /// Every served version of every registered resource, by group and plural, each resource's versions most
    /// preferred first.
    pub(crate) fn specs(&self) -> Vec<Arc<S>> {
        let mut resources: Vec<&ResourceState<S>> = self.resources.values().filter(|r| !r.removed).collect();
        resources.sort_by(|a, b| a.spec.group_and_plural().cmp(&b.spec.group_and_plural()));
        resources.into_iter().flat_map(|r| r.served.iter().cloned()).collect()
    }

    /// The ids of the registered custom resources (CRDs' resources), served or not.
    pub(crate) fn custom_ids(&self) -> Vec<String> {
        self.resources
            .iter()
            .filter(|(_, r)| !r.removed && r.spec.custom())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The storage version's spec of the resource filed under `id` (`plural.group`), served or not.
    pub(crate) fn spec(&self, id: &str) -> Option<Arc<S>> {
        self.resources.get(id).filter(|r| !r.removed).map(|r| r.spec.clone())
    }

    /// The spec of `id` served in `version`.
    pub(crate) fn served(&self, id: &str, version: &str) -> Option<Arc<S>> {
        let r = self.resources.get(id).filter(|r| !r.removed)?;
        r.served.iter().find(|s| s.version() == version).cloned()
    }

    /// The specs of the versions `id` is served in, most preferred first.
    pub(crate) fn served_versions(&self, id: &str) -> Vec<Arc<S>> {
        self.resources
            .get(id)
            .filter(|r| !r.removed)
            .map(|r| r.served.clone())
            .unwrap_or_default()
    }

    /// The latest live version of a key.
    pub(crate) fn get(&self, id: &str, key: &str) -> Option<Arc<StoredObject>> {
        self.get_at(id, key, self.rev)
    }

    /// The live version of a key at a revision.
    pub(crate) fn get_at(&self, id: &str, key: &str, rev: u64) -> Option<Arc<StoredObject>> {
        let versions = self.resources.get(id)?.objects.get(key)?;
        version_at(versions, rev).cloned()
    }

    /// Applies a change at revision `rev() + 1`, records its event, and returns the stored object.
    ///
    /// The object must already carry that revision in its JSON and `rev` field.
    pub(crate) fn commit(&mut self, id: &str, change: Change) -> Option<Arc<StoredObject>> {
        let rev = self.rev + 1;
        let compacted = self.compacted;
        let capacity = self.history_capacity;
        let r = self.resources.get_mut(id)?;
        let (obj, deleted) = match change {
            Change::Put(o) => (Arc::new(o), false),
            Change::Delete(o) => (Arc::new(o), true),
        };
        debug_assert_eq!(obj.rev, rev);
        let key = obj.key();
        let versions = r.objects.entry(key).or_default();
        let prev = versions.last().and_then(|v| v.obj.clone());
        let kind = match (deleted, &prev) {
            (true, _) => EventKind::Deleted,
            (false, None) => EventKind::Added,
            (false, Some(_)) => EventKind::Modified,
        };
        versions.push(Version {
            rev,
            obj: if deleted { None } else { Some(obj.clone()) },
        });
        prune(versions, compacted);
        r.history.push_back(Arc::new(Event {
            rev,
            kind,
            object: obj.clone(),
            prev: if kind == EventKind::Modified { prev } else { None },
            prev_at_rev: OnceLock::new(),
        }));
        if r.history.len() > capacity
            && let Some(old) = r.history.pop_front()
        {
            r.first_seq += 1;
            r.floor = r.floor.max(old.rev);
        }
        self.rev = rev;
        Some(obj)
    }

    /// Every live object of resource `id` (in `namespace`, or in all) at the current revision, in key order.
    pub(crate) fn list_current(&self, id: &str, namespace: Option<&str>) -> Vec<Arc<StoredObject>> {
        let q = ListQuery {
            namespace,
            at: self.rev(),
            after: None,
            limit: 0,
            filter: &|_| true,
            count_remaining: false,
        };
        self.list(id, &q).items
    }

    /// Reads one page of a list.
    pub(crate) fn list(&self, id: &str, q: &ListQuery<'_>) -> ListPage {
        let mut page = ListPage {
            items: Vec::new(),
            more: false,
            remaining: 0,
        };
        let Some(r) = self.resources.get(id) else {
            return page;
        };
        let (lo, hi) = match q.namespace {
            Some(ns) => (format!("{ns}/"), Some(format!("{ns}0"))),
            None => (String::new(), None),
        };
        let lower = match q.after {
            Some(after) if after >= lo.as_str() => Bound::Excluded(after),
            _ => Bound::Included(lo.as_str()),
        };
        let upper = match &hi {
            // `range` panics on an empty or inverted range.
            Some(h) if q.after.is_some_and(|a| a >= h.as_str()) => return page,
            Some(h) => Bound::Excluded(h.as_str()),
            None => Bound::Unbounded,
        };
        for (_, versions) in r.objects.range::<str, _>((lower, upper)) {
            let Some(obj) = version_at(versions, q.at) else {
                continue;
            };
            if !(q.filter)(obj) {
                continue;
            }
            if q.limit == 0 || page.items.len() < q.limit {
                page.items.push(obj.clone());
                continue;
            }
            page.more = true;
            if !q.count_remaining {
                break;
            }
            page.remaining += 1;
        }
        page
    }

    /// Compacts to `rev` (at most the current revision): older revisions become unreadable, superseded versions
    /// are dropped, and the watch history before `rev` is discarded. Returns the compaction revision.
    pub(crate) fn compact(&mut self, rev: u64) -> u64 {
        let rev = rev.min(self.rev);
        if rev <= self.compacted {
            return self.compacted;
        }
        self.compacted = rev;
        for r in self.resources.values_mut() {
            r.objects.retain(|_, versions| {
                prune(versions, rev);
                !versions.is_empty()
            });
            while r.history.front().is_some_and(|e| e.rev <= rev) {
                r.history.pop_front();
                r.first_seq += 1;
            }
            r.floor = r.floor.max(rev);
        }
        rev
    }

    /// Where a watch from `after_rev` starts: the sequence number of the first event newer than it, or
    /// `Err(floor)` when events it needs are gone.
    pub(crate) fn watch_from(&self, id: &str, after_rev: u64) -> Result<u64, u64> {
        let Some(r) = self.resources.get(id) else {
            return Ok(0);
        };
        if after_rev < r.floor {
            return Err(r.floor);
        }
        Ok(r.first_seq + r.history.partition_point(|e| e.rev <= after_rev) as u64)
    }

    /// The sequence number the next event of `id` will get.
    pub(crate) fn end_seq(&self, id: &str) -> u64 {
        self.resources
            .get(id)
            .map(|r| r.first_seq + r.history.len() as u64)
            .unwrap_or(0)
    }

    /// Appends up to `max` events from sequence number `seq` to `out`; returns the next sequence number, or
    /// `Err(floor)` when the history has moved past `seq` (the watcher fell too far behind).
    pub(crate) fn read_events(&self, id: &str, seq: u64, max: usize, out: &mut Vec<Arc<Event>>) -> Result<u64, u64> {
        let Some(r) = self.resources.get(id) else {
            return Ok(seq);
        };
        if seq < r.first_seq {
            return Err(r.floor);
        }
        let start = (seq - r.first_seq) as usize;
        let before = out.len();
        out.extend(r.history.iter().skip(start).take(max).cloned());
        Ok(seq + (out.len() - before) as u64)
    }

    /// Counts a watch starting (`+1`) or ending (`-1`).
    pub(crate) fn track_watcher(&mut self, id: &str, starting: bool) {
        if let Some(r) = self.resources.get_mut(id) {
            if starting {
                r.watchers += 1;
            } else {
                r.watchers = r.watchers.saturating_sub(1);
            }
        }
    }

    /// Makes every pending [`Store::wait_for_rev`] give up (the server is cutting its connections).
    pub(crate) fn interrupt(&mut self) {
        self.interrupts += 1;
    }

    /// The condition variable notified on every write to `id`.
    pub(crate) fn signal(&self, id: &str) -> Option<Arc<Condvar>> {
        self.resources.get(id).map(|r| r.signal.clone())
    }

    /// Watches currently streaming `id`.
    pub(crate) fn watchers(&self, id: &str) -> usize {
        self.resources.get(id).map(|r| r.watchers).unwrap_or(0)
    }
}

/// The store's lock, held.
pub(crate) type StoreGuard<'a, S> = MutexGuard<'a, StoreInner<S>>;

/// The store: its lock, and a condition variable every write, compaction, watcher change and shutdown notifies.
#[derive(Debug)]
pub(crate) struct Store<S> {
    inner: Mutex<StoreInner<S>>,
    changed: Condvar,
}

impl<S: Spec> Store<S> {
    /// A store of `specs`' resources, its revision starting at `initial_rev`, each resource keeping its last
    /// `history_capacity` events.
    pub(crate) fn new(initial_rev: u64, history_capacity: usize, specs: Vec<S>) -> Self {
        let mut inner = StoreInner::new(initial_rev, history_capacity);
        for s in specs {
            inner.register(s);
        }
        Store {
            inner: Mutex::new(inner),
            changed: Condvar::new(),
        }
    }

    /// Locks the store. Never hold the guard across I/O.
    pub(crate) fn lock(&self) -> StoreGuard<'_, S> {
        self.inner.lock()
    }

    /// Wakes every thread waiting for a change, watchers of every resource included. Call without the lock.
    pub(crate) fn notify(&self) {
        let signals: Vec<Arc<Condvar>> = self.lock().resources.values().map(|r| r.signal.clone()).collect();
        for s in signals {
            s.notify_all();
        }
        self.changed.notify_all();
    }

    /// Wakes the threads waiting for a change of the store as a whole (`wait_for_watchers`), not the watchers: for a
    /// watcher registering or leaving, which no watcher needs to hear of. Call without the lock.
    pub(crate) fn watchers_changed(&self) {
        self.changed.notify_all();
    }

    /// Releases the lock after a write to `id` and wakes that resource's watchers and the revision waiters (not
    /// the watchers of other resources).
    pub(crate) fn written(&self, g: StoreGuard<'_, S>, id: &str) {
        let signal = g.signal(id);
        drop(g);
        if let Some(s) = signal {
            s.notify_all();
        }
        self.changed.notify_all();
    }

    /// Waits for any change (not single writes to resources: see [`Store::written`]), at most until `deadline`.
    pub(crate) fn wait_until(&self, guard: &mut StoreGuard<'_, S>, deadline: Instant) {
        self.changed.wait_until(guard, deadline);
    }

    /// Waits until the store reaches revision `rev` or `wait` passes (or an interrupt); returns the guard and
    /// whether it got there.
    pub(crate) fn wait_for_rev(&self, rev: u64, wait: Duration) -> (StoreGuard<'_, S>, bool) {
        let deadline = util::deadline_after(wait);
        let mut g = self.lock();
        let interrupts = g.interrupts;
        while g.rev < rev {
            if Instant::now() >= deadline || g.interrupts != interrupts {
                return (g, false);
            }
            self.changed.wait_until(&mut g, deadline);
        }
        (g, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::StoreInner;
    use crate::registry::resource::ResourceSpec;
    use kube_informer::object::ApiResource;
    use serde_json::json;

    fn spec() -> ResourceSpec {
        ResourceSpec::new(ApiResource::new("", "v1", "ConfigMap", "configmaps", true)).selectable_field("data.k")
    }

    fn obj(ns: &str, name: &str, rev: u64) -> StoredObject {
        StoredObject::from_value(
            &spec(),
            &json!({"metadata": {"name": name, "namespace": ns, "resourceVersion": rev.to_string(),
                    "labels": {"a": "b"}}, "data": {"k": "v"}}),
        )
    }

    fn put(s: &mut StoreInner, ns: &str, name: &str) -> u64 {
        let rev = s.rev() + 1;
        s.commit("configmaps", Change::Put(obj(ns, name, rev)));
        rev
    }

    fn del(s: &mut StoreInner, ns: &str, name: &str) -> u64 {
        let rev = s.rev() + 1;
        s.commit("configmaps", Change::Delete(obj(ns, name, rev)));
        rev
    }

    fn names(s: &StoreInner, ns: Option<&str>, at: u64, after: Option<&str>, limit: usize) -> (Vec<String>, bool, u64) {
        let all = |_: &StoredObject| true;
        let p = s.list(
            "configmaps",
            &ListQuery {
                namespace: ns,
                at,
                after,
                limit,
                filter: &all,
                count_remaining: true,
            },
        );
        (p.items.iter().map(|o| o.key()).collect(), p.more, p.remaining)
    }

    fn store() -> StoreInner {
        let mut s = StoreInner::new(1, 3);
        s.register(spec());
        s
    }

    #[test]
    fn extracts_filter_fields() {
        let o = obj("ns", "a", 7);
        assert_eq!((o.name.as_str(), o.namespace.as_str(), o.rev), ("a", "ns", 7));
        assert_eq!(o.labels["a"], "b");
        assert_eq!(o.field(&spec(), "data.k"), Some("v"));
        assert_eq!(o.field(&spec(), "metadata.namespace"), Some("ns"));
        assert_eq!(field_value(&json!({"a": {"b": 3}}), "a.b"), "3");
        assert_eq!(field_value(&json!({"a": {"b": [1]}}), "a.b"), "");
    }

    #[test]
    fn lists_snapshots_at_old_revisions() {
        let mut s = store();
        let r1 = put(&mut s, "a", "x");
        let r2 = put(&mut s, "a", "y");
        let r3 = del(&mut s, "a", "x");
        put(&mut s, "b", "z");
        assert_eq!(names(&s, None, r1, None, 0).0, ["a/x"]);
        assert_eq!(names(&s, None, r2, None, 0).0, ["a/x", "a/y"]);
        assert_eq!(names(&s, None, r3, None, 0).0, ["a/y"]);
        assert_eq!(names(&s, None, s.rev(), None, 0).0, ["a/y", "b/z"]);
        assert_eq!(names(&s, Some("b"), s.rev(), None, 0).0, ["b/z"]);
        assert!(s.get("configmaps", "a/x").is_none());
        assert!(s.get_at("configmaps", "a/x", r2).is_some());
    }

    #[test]
    fn pages_with_remaining_counts() {
        let mut s = store();
        for n in ["a", "b", "c", "d", "e"] {
            put(&mut s, "ns", n);
        }
        let rev = s.rev();
        assert_eq!(
            names(&s, None, rev, None, 2),
            (vec!["ns/a".into(), "ns/b".into()], true, 3)
        );
        assert_eq!(
            names(&s, Some("ns"), rev, Some("ns/b"), 2),
            (vec!["ns/c".into(), "ns/d".into()], true, 1)
        );
        assert_eq!(
            names(&s, Some("ns"), rev, Some("ns/d"), 2),
            (vec!["ns/e".into()], false, 0)
        );
    }

    #[test]
    fn namespace_ranges_do_not_leak_into_similar_names() {
        let mut s = store();
        put(&mut s, "a", "1");
        put(&mut s, "a-b", "2");
        put(&mut s, "ab", "3");
        assert_eq!(names(&s, Some("a"), s.rev(), None, 0).0, ["a/1"]);
    }

    #[test]
    fn compaction_prunes_versions_and_history() {
        let mut s = store();
        let r1 = put(&mut s, "a", "x");
        put(&mut s, "a", "x");
        del(&mut s, "a", "y");
        let r4 = put(&mut s, "a", "x");
        assert_eq!(s.watch_from("configmaps", r1), Ok(1));
        assert_eq!(s.compact(r4), r4);
        assert_eq!(s.compact(1), r4, "compaction never goes back");
        let r = &s.resources["configmaps"];
        assert_eq!(r.objects.len(), 1, "the tombstone is gone");
        assert_eq!(r.objects["a/x"].len(), 1);
        assert!(r.history.is_empty());
        assert_eq!(s.watch_from("configmaps", r1), Err(r4));
        assert_eq!(s.watch_from("configmaps", r4), Ok(4));
    }

    #[test]
    fn bounded_history_raises_the_floor_and_expires_readers() {
        let mut s = store();
        let revs: Vec<u64> = (0..5).map(|i| put(&mut s, "a", &i.to_string())).collect();
        // Capacity 3: the first two events were evicted.
        assert_eq!(s.watch_from("configmaps", revs[0]), Err(revs[1]));
        let seq = s.watch_from("configmaps", revs[1]).unwrap();
        let mut out = Vec::new();
        assert_eq!(s.read_events("configmaps", seq, 10, &mut out), Ok(5));
        assert_eq!(out.iter().map(|e| e.rev).collect::<Vec<_>>(), revs[2..]);
        assert_eq!(s.read_events("configmaps", 0, 10, &mut out), Err(revs[1]));
    }

    #[test]
    fn events_carry_kind_and_previous_state() {
        let mut s = store();
        put(&mut s, "a", "x");
        put(&mut s, "a", "x");
        let r = del(&mut s, "a", "x");
        let mut out = Vec::new();
        s.read_events("configmaps", 0, 10, &mut out).unwrap();
        let kinds: Vec<_> = out.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventKind::Added, EventKind::Modified, EventKind::Deleted]);
        assert_eq!(out[1].prev.as_ref().unwrap().rev, 2);
        let restamped: Value = serde_json::from_slice(out[1].prev_json_at_rev(&spec())).unwrap();
        assert_eq!(restamped["metadata"]["resourceVersion"], "3");
        assert_eq!(out[2].object.rev, r);
    }
}
