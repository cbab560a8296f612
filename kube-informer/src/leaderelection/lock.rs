//! `Lock`: where the election record lives (client-go's `resourcelock.Interface`).

use super::LeaderElectionRecord;
use crate::error::Result;

/// A lock object holding a [`LeaderElectionRecord`], with optimistic concurrency.
///
/// The election algorithm only talks to the lock through this trait, so it is tested against in-memory fakes; the
/// real lock is [`LeaseLock`](super::LeaseLock). Implementations block (they do I/O) and are called from the
/// elector's thread only.
pub trait Lock: Send + Sync + 'static {
    /// The current record; `Ok(None)` when the lock object does not exist.
    fn get(&self) -> Result<Option<LeaderElectionRecord>>;

    /// Creates the lock object holding `record`.
    fn create(&self, record: &LeaderElectionRecord) -> Result<()>;

    /// Replaces the record — **only if the lock object is still the one last read or written through this lock**
    /// (the resourceVersion of the last `get`, `create` or `update`): a concurrent change by another candidate must
    /// make this fail (a 409 Conflict), which is what makes at most one candidate win.
    fn update(&self, record: &LeaderElectionRecord) -> Result<()>;

    /// This candidate's identity (unique among the candidates: a pod name, hostname plus a random suffix...).
    fn identity(&self) -> &str;

    /// The lock's name for logs (`namespace/name`).
    fn describe(&self) -> String;
}
