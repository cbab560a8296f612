//! `LeaseLock`: the election record in a `coordination.k8s.io/v1` Lease (client-go's `resourcelock.LeaseLock`).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use log::debug;
use parking_lot::Mutex;

use super::{LeaderElectionRecord, Lease, Lock};
use crate::client::params::{PostParams, WatchParams};
use crate::client::{Api, Client};
use crate::error::{Error, Result};
use crate::object::{ObjectMeta, StringMap};
use crate::watch::WatchEvent;

/// A [`Lock`] stored in a Lease object. Updates replace the Lease carrying the resourceVersion of the last read or
/// write, so a concurrent change by another candidate makes them fail with 409 Conflict.
///
/// Safe with any client: every request is made with the elector's deadline
/// ([`Client::with_deadline`](crate::client::Client::with_deadline)), so a renewal the server leaves hanging is
/// aborted — its connection closed — when the leader's term ends, and the leader stops leading on time instead of
/// when the request returns (client-go likewise cuts each renewal at its renew deadline). The requests go through
/// connections of the lock's own (as [`Client::isolated`](crate::client::Client::isolated) makes, but aborted
/// along with the given client), so that a stopping elector can abort a request in flight without touching the
/// caller's.
///
/// ```no_run
/// use kube_informer::client::Client;
/// use kube_informer::leaderelection::LeaseLock;
///
/// let lock = LeaseLock::new(&Client::try_default()?, "kube-system", "my-controller", "pod-7f9c");
/// # let _ = lock;
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct LeaseLock {
    name: String,
    identity: String,
    /// The Lease as last read or written (`None` before the first read, or when it did not exist): its
    /// resourceVersion makes the next update conditional.
    current: Mutex<Option<Lease>>,
    /// The caller's API, from which `connection` is made.
    api: Api<Lease>,
    /// The API through this lock's own connections, and the calls in flight on it. Invariant: a call counts itself
    /// in under this lock, so `interrupt` sees every call that could be using the connections it aborts.
    connection: Mutex<(Api<Lease>, usize)>,
    /// Set by `interrupt` (under `connection`'s lock): `wait_for_release` then returns at once.
    interrupted: AtomicBool,
    /// The Lease cannot be watched (RBAC grants no `watch` on leases, say): candidates only poll.
    no_watch: AtomicBool,
    /// Labels the Lease carries: set when this lock creates it, added when it writes a Lease without them.
    labels: StringMap,
}

impl LeaseLock {
    /// The Lease `namespace/name`, held as `identity`.
    pub fn new(client: &Client, namespace: &str, name: &str, identity: impl Into<String>) -> LeaseLock {
        LeaseLock::with_api(Api::namespaced(client.clone(), namespace), name, identity)
    }

    /// The Lease `name` of `api`'s namespace, held as `identity`.
    pub fn with_api(api: Api<Lease>, name: &str, identity: impl Into<String>) -> LeaseLock {
        let own = api.with_client(api.client().isolated_child());
        LeaseLock {
            name: name.to_owned(),
            identity: identity.into(),
            current: Mutex::new(None),
            api,
            connection: Mutex::new((own, 0)),
            interrupted: AtomicBool::new(false),
            no_watch: AtomicBool::new(false),
            labels: StringMap::default(),
        }
    }

    /// Puts `labels` on the Lease: when this lock creates it, and on any write of a Lease that lacks them (a
    /// sharded controller's coordinator watches its Leases by label).
    #[must_use]
    pub fn with_labels<K: AsRef<str>, V: AsRef<str>>(mut self, labels: impl IntoIterator<Item = (K, V)>) -> Self {
        self.labels.extend(labels);
        self
    }

    /// Sets this lock's labels on `meta` where they are missing or differ.
    fn label(&self, meta: &mut ObjectMeta) {
        for (k, v) in &self.labels {
            if meta.labels.get(k) != Some(v) {
                meta.labels.insert(k.to_owned(), v.to_owned());
            }
        }
    }

    /// The Lease as last read or written.
    pub fn lease(&self) -> Option<Lease> {
        self.current.lock().clone()
    }

    /// Runs `call` on the lock's connections, every request ending by `deadline`.
    fn call<T>(&self, deadline: Instant, call: impl FnOnce(&Api<Lease>) -> Result<T>) -> Result<T> {
        let api = {
            let mut connection = self.connection.lock();
            connection.1 += 1;
            connection.0.with_deadline(deadline)
        };
        let result = call(&api);
        self.connection.lock().1 -= 1;
        result
    }

    /// Watches the Lease from `resource_version` until an event shows it released or deleted (true), the deadline
    /// (false) or an error.
    fn watch_release(&self, api: &Api<Lease>, resource_version: String) -> Result<bool> {
        let params = WatchParams {
            field_selector: Some(format!("metadata.name={}", self.name)),
            resource_version: Some(resource_version),
            allow_bookmarks: true,
            ..WatchParams::default()
        };
        for event in api.watch(&params)? {
            match event? {
                WatchEvent::Added(l) | WatchEvent::Modified(l)
                    if l.spec.holder_identity.as_deref().is_none_or(str::is_empty) =>
                {
                    return Ok(true);
                }
                WatchEvent::Deleted(_) => return Ok(true),
                WatchEvent::Error(status) => return Err(Error::Api(status)),
                _ => {} // renewed by its holder, or a bookmark: keep waiting
            }
        }
        Ok(false)
    }
}

impl Lock for LeaseLock {
    fn get(&self, deadline: Instant) -> Result<Option<LeaderElectionRecord>> {
        let lease = self.call(deadline, |api| api.get_opt(&self.name))?;
        let record = lease.as_ref().map(|l| l.spec.to_record());
        *self.current.lock() = lease;
        Ok(record)
    }

    fn create(&self, record: &LeaderElectionRecord, deadline: Instant) -> Result<()> {
        let mut lease = Lease::new(ObjectMeta::named(&self.name));
        lease.metadata.namespace = self.api.namespace().map(str::to_owned);
        self.label(&mut lease.metadata);
        lease.spec.set_record(record);
        let stored = self.call(deadline, |api| api.create(&PostParams::default(), &lease))?;
        *self.current.lock() = Some(stored);
        Ok(())
    }

    fn update(&self, record: &LeaderElectionRecord, deadline: Instant) -> Result<()> {
        let Some(mut lease) = self.current.lock().clone() else {
            return Err(Error::InvalidInput(
                "lease lock: not read yet (call get or create first)".into(),
            ));
        };
        lease.spec.set_record(record);
        self.label(&mut lease.metadata);
        let stored = self.call(deadline, |api| api.replace(&self.name, &PostParams::default(), &lease))?;
        *self.current.lock() = Some(stored);
        Ok(())
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        match self.api.namespace() {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Watches the Lease (`fieldSelector=metadata.name=…`) from the version last read, until a change empties its
    /// holder or deletes it. Renewals by the holder do not end the wait. A watch the server refuses (403: no
    /// `watch` verb on leases; 404; 405) is not tried again: the candidate then polls, as client-go's do.
    fn wait_for_release(&self, deadline: Instant) -> bool {
        if self.no_watch.load(Ordering::Relaxed) {
            return false;
        }
        let Some(resource_version) = self
            .current
            .lock()
            .as_ref()
            .and_then(|l| l.metadata.resource_version.clone())
        else {
            return false; // no Lease read yet: the next attempt creates or reads it
        };
        let api = {
            let mut connection = self.connection.lock();
            if self.interrupted.load(Ordering::SeqCst) {
                return false;
            }
            connection.1 += 1;
            connection.0.with_deadline(deadline)
        };
        let result = self.watch_release(&api, resource_version);
        self.connection.lock().1 -= 1;
        match result {
            Ok(released) => released,
            Err(e) => {
                if matches!(e.code(), Some(403..=405)) {
                    debug!(
                        "{}: cannot watch the lease ({e}); candidates poll it instead",
                        self.describe()
                    );
                    self.no_watch.store(true, Ordering::Relaxed);
                }
                false
            }
        }
    }

    /// Aborts the lock's connections when a call is in flight (it fails at once with [`Error::Stopped`]), and
    /// takes fresh ones for the calls that follow; `wait_for_release` returns at once from now on.
    fn interrupt(&self) {
        let mut connection = self.connection.lock();
        self.interrupted.store(true, Ordering::SeqCst);
        if connection.1 > 0 {
            connection.0.client().abort_handle().abort();
            connection.0 = self.api.with_client(self.api.client().isolated_child());
        }
    }
}

impl fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseLock")
            .field("lease", &self.describe())
            .field("identity", &self.identity)
            .finish()
    }
}
