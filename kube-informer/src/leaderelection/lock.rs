//! `Lock`: where the election record lives (client-go's `resourcelock.Interface`).

use std::time::Instant;

use super::LeaderElectionRecord;
use crate::error::Result;

/// A lock object holding a [`LeaderElectionRecord`], with optimistic concurrency.
///
/// The election algorithm only talks to the lock through this trait, so it is tested against in-memory fakes; the
/// real lock is [`LeaseLock`](super::LeaseLock). Implementations block (they do I/O) and are called from the
/// elector's thread only — except [`interrupt`](Lock::interrupt), which the stopping thread calls.
///
/// Every call gets a **deadline**, an instant of the real clock ([`Instant::now`]): while leading, the end of the
/// leader's term (the start of its last successful renewal plus the renew deadline). The call must return by then
/// — [`LeaseLock`](super::LeaseLock) aborts its request there — because the elector cannot end leadership while the
/// call holds its thread. A call that returns after its deadline counts as failed, whatever it returns.
pub trait Lock: Send + Sync + 'static {
    /// The current record; `Ok(None)` when the lock object does not exist.
    fn get(&self, deadline: Instant) -> Result<Option<LeaderElectionRecord>>;

    /// Creates the lock object holding `record`.
    fn create(&self, record: &LeaderElectionRecord, deadline: Instant) -> Result<()>;

    /// Replaces the record — **only if the lock object is still the one last read or written through this lock**
    /// (the resourceVersion of the last `get`, `create` or `update`): a concurrent change by another candidate must
    /// make this fail (a 409 Conflict), which is what makes at most one candidate win.
    fn update(&self, record: &LeaderElectionRecord, deadline: Instant) -> Result<()>;

    /// This candidate's identity (unique among the candidates: a pod name, hostname plus a random suffix...).
    fn identity(&self) -> &str;

    /// The lock's name for logs (`namespace/name`).
    fn describe(&self) -> String;

    /// A candidate between two attempts: blocks until the lock is released (its holder emptied) or deleted —
    /// `true`: the candidate attempts at once, rather than a retry period later — or until `deadline` (`false`).
    /// After [`interrupt`](Lock::interrupt) it returns `false` at once, and it returns `false` early when it cannot
    /// watch (the elector then sleeps until its next attempt, as client-go's candidates always do).
    ///
    /// The default returns `false` at once. [`LeaseLock`](super::LeaseLock) watches the Lease.
    fn wait_for_release(&self, deadline: Instant) -> bool {
        let _ = deadline;
        false
    }

    /// The elector is stopping: a call in flight should return at once (with an error), and
    /// [`wait_for_release`](Lock::wait_for_release) return `false` from now on; the other calls that follow — the
    /// release of the lock — must work as usual. Called from another thread than the elector's.
    ///
    /// The default does nothing: a call in flight then ends by its deadline, which may be later than the elector's
    /// [`stop`](super::LeaderElector::stop) waits (the lock is then released late, or expires).
    fn interrupt(&self) {}
}
