//! `LeaseLock`: the election record in a `coordination.k8s.io/v1` Lease (client-go's `resourcelock.LeaseLock`).

use std::fmt;

use parking_lot::Mutex;

use super::{LeaderElectionRecord, Lease, Lock};
use crate::client::params::PostParams;
use crate::client::{Api, Client};
use crate::error::{Error, Result};
use crate::object::ObjectMeta;

/// A [`Lock`] stored in a Lease object. Updates replace the Lease carrying the resourceVersion of the last read or
/// write, so a concurrent change by another candidate makes them fail with 409 Conflict.
///
/// Give it a client whose requests are bounded ([`Config::request_timeout`](crate::client::Config::request_timeout))
/// well below the election's `renew_deadline`: client-go cuts every renewal at the renew deadline, and a renewal
/// hanging past it would keep a leader working after it should have stopped.
///
/// ```no_run
/// use std::time::Duration;
/// use kube_informer::client::{Client, Config};
/// use kube_informer::leaderelection::LeaseLock;
///
/// let config = Config::infer()?.request_timeout(Some(Duration::from_secs(5)));
/// let lock = LeaseLock::new(&Client::new(config)?, "kube-system", "my-controller", "pod-7f9c");
/// # let _ = lock;
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct LeaseLock {
    api: Api<Lease>,
    name: String,
    identity: String,
    /// The Lease as last read or written (`None` before the first read, or when it did not exist): its
    /// resourceVersion makes the next update conditional.
    current: Mutex<Option<Lease>>,
}

impl LeaseLock {
    /// The Lease `namespace/name`, held as `identity`.
    pub fn new(client: &Client, namespace: &str, name: &str, identity: impl Into<String>) -> LeaseLock {
        LeaseLock::with_api(Api::namespaced(client.clone(), namespace), name, identity)
    }

    /// The Lease `name` of `api`'s namespace, held as `identity`.
    pub fn with_api(api: Api<Lease>, name: &str, identity: impl Into<String>) -> LeaseLock {
        LeaseLock {
            api,
            name: name.to_owned(),
            identity: identity.into(),
            current: Mutex::new(None),
        }
    }

    /// The Lease as last read or written.
    pub fn lease(&self) -> Option<Lease> {
        self.current.lock().clone()
    }
}

impl Lock for LeaseLock {
    fn get(&self) -> Result<Option<LeaderElectionRecord>> {
        let lease = self.api.get_opt(&self.name)?;
        let record = lease.as_ref().map(|l| l.spec.to_record());
        *self.current.lock() = lease;
        Ok(record)
    }

    fn create(&self, record: &LeaderElectionRecord) -> Result<()> {
        let mut lease = Lease::new(ObjectMeta::named(&self.name));
        lease.metadata.namespace = self.api.namespace().map(str::to_owned);
        lease.spec.set_record(record);
        let stored = self.api.create(&PostParams::default(), &lease)?;
        *self.current.lock() = Some(stored);
        Ok(())
    }

    fn update(&self, record: &LeaderElectionRecord) -> Result<()> {
        let Some(mut lease) = self.current.lock().clone() else {
            return Err(Error::InvalidInput(
                "lease lock: not read yet (call get or create first)".into(),
            ));
        };
        lease.spec.set_record(record);
        let stored = self.api.replace(&self.name, &PostParams::default(), &lease)?;
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
}

impl fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseLock")
            .field("lease", &self.describe())
            .field("identity", &self.identity)
            .finish()
    }
}
