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
