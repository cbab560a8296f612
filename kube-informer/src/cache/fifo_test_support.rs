//! What the queues' unit tests share: client-go's test object (a name and a value), its key function, known objects
//! fixed at construction, shorthands for deltas.

use std::sync::Arc;
use std::time::Duration;

use super::{DeletedObject, Delta, Key, KnownObjects};

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Obj {
    pub(crate) name: &'static str,
    pub(crate) val: i32,
}

pub(crate) fn o(name: &'static str, val: i32) -> Arc<Obj> {
    Arc::new(Obj { name, val })
}

pub(crate) fn name_key(obj: &Obj, buf: &mut String) {
    buf.push_str(obj.name);
}

/// Known objects fixed at construction (client-go's `literalListerGetter`), listed in order.
pub(crate) struct Literal(pub(crate) Vec<Arc<Obj>>);

impl KnownObjects<Obj> for Literal {
    fn known_keys(&self) -> Vec<Key> {
        self.0.iter().map(|o| Key::from(o.name)).collect()
    }
    fn known_object(&self, key: &str) -> Option<Arc<Obj>> {
        self.0.iter().find(|o| o.name == key).cloned()
    }
}

/// Known objects whose non-blocking key lookup always finds the store busy (a writer holding it), while the
/// waiting one answers with the store's own key; counts the waiting lookups.
pub(crate) struct Busy {
    pub(crate) objs: Vec<(Key, Arc<Obj>)>,
    pub(crate) waited: std::sync::atomic::AtomicUsize,
}

impl Busy {
    pub(crate) fn new(objs: Vec<Arc<Obj>>) -> Self {
        Busy {
            objs: objs.into_iter().map(|o| (Key::from(o.name), o)).collect(),
            waited: Default::default(),
        }
    }

    /// The key held for `name`.
    pub(crate) fn key(&self, name: &str) -> &Key {
        &self.objs.iter().find(|(k, _)| &**k == name).unwrap().0
    }
}

impl KnownObjects<Obj> for Busy {
    fn known_keys(&self) -> Vec<Key> {
        self.objs.iter().map(|(k, _)| k.clone()).collect()
    }
    fn known_object(&self, key: &str) -> Option<Arc<Obj>> {
        self.objs.iter().find(|(k, _)| &**k == key).map(|(_, o)| o.clone())
    }
    fn known_key(&self, _: &str) -> Option<Key> {
        None
    }
    fn known_key_waiting(&self, key: &str) -> Option<Key> {
        self.waited.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.objs.iter().find(|(k, _)| &**k == key).map(|(k, _)| k.clone())
    }
}

pub(crate) fn added(x: Arc<Obj>) -> Delta<Obj> {
    Delta::Added(x)
}
pub(crate) fn updated(x: Arc<Obj>) -> Delta<Obj> {
    Delta::Updated(x)
}
pub(crate) fn replaced(x: Arc<Obj>) -> Delta<Obj> {
    Delta::Replaced(x)
}
pub(crate) fn deleted(x: Arc<Obj>) -> Delta<Obj> {
    Delta::Deleted(DeletedObject::Object(x))
}
pub(crate) fn tomb(key: &str, x: Arc<Obj>) -> Delta<Obj> {
    Delta::Deleted(DeletedObject::FinalStateUnknown {
        key: key.into(),
        last_known: x,
    })
}

/// How long a test waits for what must happen (a failure, not a pace).
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// Yields until `done` holds: a wait for another thread to reach a state the test can see (a counter, a finished
/// thread), not a timing. Fails after [`WAIT`] as a guard against a hang.
pub(crate) fn yield_until(done: impl Fn() -> bool, what: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "never happened: {what}");
        std::thread::yield_now();
    }
}
