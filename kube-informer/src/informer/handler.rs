//! Event handlers: what an informer calls when objects change (client-go's `ResourceEventHandler`).

use std::sync::Arc;

use crate::cache::DeletedObject;

/// One notification to a handler.
#[derive(Debug)]
pub enum Notification<K> {
    /// An object appeared: created, listed for the first time, or seen again after a missed delete.
    Add {
        /// The object.
        obj: Arc<K>,
        /// True while delivering the initial list (before the informer synced) and for the synthetic adds a handler
        /// added late receives for objects already cached.
        is_in_initial_list: bool,
    },
    /// An object changed. With an unchanged resourceVersion this is a resync, delivered only to handlers whose
    /// resync period is due.
    Update {
        /// The state the cache held before.
        old: Arc<K>,
        /// The new state.
        new: Arc<K>,
    },
    /// An object went away: its final state, or its last known state when the deletion itself was missed.
    Delete(DeletedObject<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => Notification::Add {
                obj: obj.clone(),
                is_in_initial_list: *is_in_initial_list,
            },
            Notification::Update { old, new } => Notification::Update {
                old: old.clone(),
                new: new.clone(),
            },
            Notification::Delete(d) => Notification::Delete(d.clone()),
        }
    }
}

impl<K> Notification<K> {
    /// The object the event is about (the new state of an update).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Notification::Add { obj, .. } => obj,
            Notification::Update { new, .. } => new,
            Notification::Delete(d) => d.object(),
        }
    }

    pub(crate) fn is_initial_add(&self) -> bool {
        matches!(
            self,
            Notification::Add {
                is_in_initial_list: true,
                ..
            }
        )
    }
}

/// Receives an informer's notifications, on the handler's own thread, in order per object.
///
/// Every method has a no-op default: implement only what you need. Each handler runs on a thread of its own, so
/// `&mut self` needs no locking; a slow handler delays only itself. A panic in a method is caught and logged, and the
/// handler keeps receiving later events.
///
/// ```
/// use std::sync::Arc;
/// use kube_informer::cache::DeletedObject;
/// use kube_informer::informer::ResourceEventHandler;
/// use kube_informer::object::core::ConfigMap;
///
/// #[derive(Default)]
/// struct Counter {
///     live: usize,
/// }
///
/// impl ResourceEventHandler<ConfigMap> for Counter {
///     fn on_add(&mut self, _obj: &Arc<ConfigMap>, _initial: bool) {
///         self.live += 1;
///     }
///     fn on_delete(&mut self, _obj: &DeletedObject<ConfigMap>) {
///         self.live -= 1;
///     }
/// }
/// ```
pub trait ResourceEventHandler<K>: Send + 'static {
    /// An object was added. `is_in_initial_list` is true for the objects of the initial list, delivered before the
    /// informer syncs (and for the objects already cached that a handler added late receives first), false for an
    /// object created later — what a controller checks to tell "this existed when I started" from "this is new".
    fn on_add(&mut self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }

    /// An object was updated (`old` → `new`).
    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }

    /// An object was deleted.
    fn on_delete(&mut self, obj: &DeletedObject<K>) {
        let _ = obj;
    }

    /// Dispatches one event to the methods above.
    fn handle(&mut self, event: &Notification<K>) {
        match event {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => self.on_add(obj, *is_in_initial_list),
            Notification::Update { old, new } => self.on_update(old, new),
            Notification::Delete(d) => self.on_delete(d),
        }
    }
}

/// Any `FnMut(&Notification<K>)` closure is a handler.
///
/// ```
/// use kube_informer::informer::{Notification, ResourceEventHandler};
/// use kube_informer::object::core::ConfigMap;
///
/// fn takes_handler(_h: impl ResourceEventHandler<ConfigMap>) {}
/// takes_handler(|ev: &Notification<ConfigMap>| {
///     if let Notification::Add { obj, .. } = ev {
///         println!("added {:?}", obj.metadata.name);
///     }
/// });
/// ```
impl<K, F> ResourceEventHandler<K> for F
where
    F: FnMut(&Notification<K>) + Send + 'static,
{
    fn handle(&mut self, event: &Notification<K>) {
        self(event)
    }
}

type AddFn<K> = Box<dyn FnMut(&Arc<K>, bool) + Send>;
type UpdateFn<K> = Box<dyn FnMut(&Arc<K>, &Arc<K>) + Send>;
type DeleteFn<K> = Box<dyn FnMut(&DeletedObject<K>) + Send>;

/// A handler built from closures (client-go's `ResourceEventHandlerFuncs`). Closures given for the same event
/// run one after the other, in the order given: a second `on_add` adds to the first, it does not replace it.
///
/// ```
/// use kube_informer::informer::HandlerFuncs;
/// use kube_informer::object::core::ConfigMap;
///
/// let handler = HandlerFuncs::<ConfigMap>::new()
///     .on_add(|cm, _initial| println!("add {:?}", cm.metadata.name))
///     .on_delete(|d| println!("delete {:?}", d.object().metadata.name));
/// ```
pub struct HandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> HandlerFuncs<K> {
    /// A handler that does nothing until closures are set.
    pub fn new() -> Self {
        HandlerFuncs {
            add: None,
            update: None,
            delete: None,
        }
    }

    /// Adds an add closure (after those added before). It gets the object and `is_in_initial_list`: true for the objects of the initial list
    /// (and the cached objects a handler added late receives first), false for objects created later (see
    /// [`ResourceEventHandler::on_add`]).
    #[must_use]
    pub fn on_add(mut self, mut f: impl FnMut(&Arc<K>, bool) + Send + 'static) -> Self
    where
        K: 'static,
    {
        self.add = Some(match self.add.take() {
            None => Box::new(f),
            Some(mut before) => Box::new(move |obj: &Arc<K>, initial: bool| {
                before(obj, initial);
                f(obj, initial);
            }),
        });
        self
    }

    /// Adds an update closure (after those added before).
    #[must_use]
    pub fn on_update(mut self, mut f: impl FnMut(&Arc<K>, &Arc<K>) + Send + 'static) -> Self
    where
        K: 'static,
    {
        self.update = Some(match self.update.take() {
            None => Box::new(f),
            Some(mut before) => Box::new(move |old: &Arc<K>, new: &Arc<K>| {
                before(old, new);
                f(old, new);
            }),
        });
        self
    }

    /// Adds a delete closure (after those added before).
    #[must_use]
    pub fn on_delete(mut self, mut f: impl FnMut(&DeletedObject<K>) + Send + 'static) -> Self
    where
        K: 'static,
    {
        self.delete = Some(match self.delete.take() {
            None => Box::new(f),
            Some(mut before) => Box::new(move |gone: &DeletedObject<K>| {
                before(gone);
                f(gone);
            }),
        });
        self
    }
}

impl<K> Default for HandlerFuncs<K> {
    fn default() -> Self {
        HandlerFuncs::new()
    }
}

impl<K: 'static> ResourceEventHandler<K> for HandlerFuncs<K> {
    fn on_add(&mut self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &mut self.add {
            f(obj, is_in_initial_list)
        }
    }
    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &mut self.update {
            f(old, new)
        }
    }
    fn on_delete(&mut self, obj: &DeletedObject<K>) {
        if let Some(f) = &mut self.delete {
            f(obj)
        }
    }
}

/// Passes on only objects matching a filter (client-go's `FilteringResourceEventHandler`): an update that makes an
/// object match is delivered as an add, one that makes it stop matching as a delete.
///
/// ```
/// use kube_informer::informer::{Notification, FilteringHandler};
/// use kube_informer::object::core::ConfigMap;
///
/// let only_prod = FilteringHandler::new(
///     |cm: &ConfigMap| cm.metadata.namespace.as_deref() == Some("prod"),
///     |ev: &Notification<ConfigMap>| println!("{:?}", ev.object().metadata.name),
/// );
/// ```
pub struct FilteringHandler<K, F, H> {
    filter: F,
    inner: H,
    _k: std::marker::PhantomData<fn(K)>,
}

impl<K, F, H> FilteringHandler<K, F, H>
where
    F: Fn(&K) -> bool + Send + 'static,
    H: ResourceEventHandler<K>,
{
    /// Wraps `inner` behind `filter`.
    pub fn new(filter: F, inner: H) -> Self {
        FilteringHandler {
            filter,
            inner,
            _k: std::marker::PhantomData,
        }
    }
}

impl<K, F, H> ResourceEventHandler<K> for FilteringHandler<K, F, H>
where
    K: 'static,
    F: Fn(&K) -> bool + Send + 'static,
    H: ResourceEventHandler<K>,
{
    fn on_add(&mut self, obj: &Arc<K>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.inner.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.inner.on_update(old, new),
            (false, true) => self.inner.on_add(new, false),
            (true, false) => self.inner.on_delete(&DeletedObject::Object(old.clone())),
            (false, false) => {}
        }
    }

    fn on_delete(&mut self, obj: &DeletedObject<K>) {
        if (self.filter)(obj.object()) {
            self.inner.on_delete(obj);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Log(Vec<String>);

    impl ResourceEventHandler<i32> for Log {
        fn on_add(&mut self, obj: &Arc<i32>, initial: bool) {
            self.0.push(format!("add {obj} {initial}"));
        }
        fn on_update(&mut self, old: &Arc<i32>, new: &Arc<i32>) {
            self.0.push(format!("update {old}->{new}"));
        }
        fn on_delete(&mut self, obj: &DeletedObject<i32>) {
            self.0.push(format!("delete {}", obj.object()));
        }
    }

    #[test]
    fn filtering_handler_turns_crossing_updates_into_adds_and_deletes() {
        let mut h = FilteringHandler::new(|v: &i32| *v % 2 == 0, Log::default());
        h.handle(&Notification::Add {
            obj: Arc::new(1),
            is_in_initial_list: true,
        });
        h.handle(&Notification::Add {
            obj: Arc::new(2),
            is_in_initial_list: true,
        });
        h.handle(&Notification::Update {
            old: Arc::new(1),
            new: Arc::new(4),
        });
        h.handle(&Notification::Update {
            old: Arc::new(4),
            new: Arc::new(6),
        });
        h.handle(&Notification::Update {
            old: Arc::new(6),
            new: Arc::new(7),
        });
        h.handle(&Notification::Update {
            old: Arc::new(7),
            new: Arc::new(9),
        });
        h.handle(&Notification::Delete(DeletedObject::Object(Arc::new(9))));
        h.handle(&Notification::Delete(DeletedObject::Object(Arc::new(2))));
        assert_eq!(
            h.inner.0,
            ["add 2 true", "add 4 false", "update 4->6", "delete 6", "delete 2"]
        );
    }

    #[test]
    fn closures_and_funcs_receive_events() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut f = move |ev: &Notification<i32>| tx.send(**ev.object()).unwrap();
        f.handle(&Notification::Add {
            obj: Arc::new(3),
            is_in_initial_list: false,
        });
        assert_eq!(rx.try_recv(), Ok(3));
        let counter = Arc::new(std::sync::atomic::AtomicI32::new(0));
        let c = counter.clone();
        let mut funcs = HandlerFuncs::<i32>::new().on_update(move |_, new| {
            c.fetch_add(**new, std::sync::atomic::Ordering::SeqCst);
        });
        funcs.handle(&Notification::Update {
            old: Arc::new(1),
            new: Arc::new(5),
        });
        // No add closure: a no-op, not a panic.
        funcs.handle(&Notification::Add {
            obj: Arc::new(1),
            is_in_initial_list: false,
        });
        assert_eq!(counter.load(std::sync::atomic::Ordering::SeqCst), 5);
    }

    #[test]
    fn closures_given_twice_for_an_event_both_run_in_order() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let say = |tx: &crossbeam_channel::Sender<String>, what: &'static str| {
            let tx = tx.clone();
            move |v: i32| tx.send(format!("{what} {v}")).unwrap()
        };
        let (a1, a2, u1, u2, d1, d2) = (
            say(&tx, "add1"),
            say(&tx, "add2"),
            say(&tx, "update1"),
            say(&tx, "update2"),
            say(&tx, "delete1"),
            say(&tx, "delete2"),
        );
        let mut funcs = HandlerFuncs::<i32>::new()
            .on_add(move |o, _| a1(**o))
            .on_update(move |_, n| u1(**n))
            .on_delete(move |d| d1(**d.object()))
            .on_add(move |o, _| a2(**o))
            .on_update(move |_, n| u2(**n))
            .on_delete(move |d| d2(**d.object()));
        funcs.handle(&Notification::Add {
            obj: Arc::new(1),
            is_in_initial_list: false,
        });
        funcs.handle(&Notification::Update {
            old: Arc::new(1),
            new: Arc::new(2),
        });
        funcs.handle(&Notification::Delete(DeletedObject::Object(Arc::new(2))));
        drop((tx, funcs));
        assert_eq!(
            rx.iter().collect::<Vec<_>>(),
            ["add1 1", "add2 1", "update1 2", "update2 2", "delete1 2", "delete2 2"]
        );
    }
}
