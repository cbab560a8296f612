//! A reflector's counters: [`ReflectorStats`], which it writes, and [`ReflectorMetrics`], their snapshot.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::health::{HealthCell, Stamp};

/// Counters a reflector keeps; read through [`ReflectorMetrics`].
#[derive(Debug, Default)]
pub(crate) struct ReflectorStats {
    /// Resource version of the last list or event seen ("" before the first list).
    pub(super) last_sync_rv: Mutex<String>,
    pub(super) lists: AtomicU64,
    pub(super) relists_gone: AtomicU64,
    pub(super) relists_expired_continue: AtomicU64,
    pub(super) relists_after_error: AtomicU64,
    pub(super) watches: AtomicU64,
    pub(super) watch_restarts: AtomicU64,
    pub(super) watch_events: AtomicU64,
    pub(super) streaming_list_refused: AtomicBool,
    pub(super) streaming_list_fallbacks: AtomicU64,
    /// Objects of other shards the reflector dropped itself (the server did not filter).
    pub(super) shard_dropped: AtomicU64,
    /// 0: not known yet (or no shard); 1: the last list came filtered by the server; 2: it did not.
    pub(super) shard_server_side: AtomicU8,
    /// The client-side filtering was logged (once per reflector).
    pub(super) shard_fallback_logged: AtomicBool,
    /// Relists because the informer's shard changed (a sharded controller's replica gained or lost slots).
    pub(super) shard_changes: AtomicU64,
    /// The list/watch loop's health: `Degraded` through a streak of failures (see
    /// [`Reflector::round_failed`](super::reflector::Reflector::round_failed)), `Healthy` again when it ends
    /// ([`Reflector::healthy`](super::reflector::Reflector::healthy)); the informer halts it.
    pub(crate) health: HealthCell,
    /// When the last list (or streaming list) completed.
    pub(crate) last_list: Stamp,
    /// When the last watch event or bookmark arrived (stamped once per batch read).
    pub(crate) last_event: Stamp,
    /// When the current watch opened; cleared when it ends.
    pub(crate) watch_opened: Stamp,
}

/// A snapshot of a reflector's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReflectorMetrics {
    /// Resource version of the last list or event seen.
    pub last_sync_resource_version: String,
    /// Lists (and streaming lists) started, the initial one included.
    pub lists: u64,
    /// Relists because the server answered 410 Gone / Expired (watch or list).
    pub relists_gone: u64,
    /// Full relists because a continue token expired mid-list.
    pub relists_expired_continue: u64,
    /// Relists after any other error.
    pub relists_after_error: u64,
    /// Watches opened.
    pub watches: u64,
    /// Watches that ended and were re-opened without a relist (clean close, idle, 429, 5xx).
    pub watch_restarts: u64,
    /// Watch events received (bookmarks included).
    pub watch_events: u64,
    /// True once the server refused a streaming list (the reflector lists instead from then on).
    pub streaming_list_refused: bool,
    /// Rounds where the streaming list failed and a LIST then WATCH took its place (403 on `watch`, a broken
    /// stream…).
    pub streaming_list_fallbacks: u64,
    /// How long the current watch has been open (`None`: no watch open now).
    pub watch_age: Option<Duration>,
    /// Objects outside the informer's shard that the server sent anyway and the reflector dropped before the cache
    /// (a server without the `ShardedListAndWatch` gate ignores `shardSelector`).
    pub shard_filtered_client_side: u64,
    /// For a sharded informer: whether the server filtered its last list (`Some(true)`: the list answered
    /// `metadata.shardInfo`; `Some(false)`: it did not, and the reflector filters). A streaming list has no
    /// `shardInfo`: one object of another shard among its initial events says `false`; enough distinct values of the
    /// shard's field, all in the shard, say `true` (a coincidence's chance below one in a million). `None`: no
    /// shard, or not known yet (a streaming list of too few objects to tell).
    pub shard_server_side: Option<bool>,
    /// Relists because the informer's shard changed while it ran (a [sharded
    /// controller](crate::controller::ControllerBuilder::sharded)'s replica gained or lost slots).
    pub shard_changes: u64,
}

impl ReflectorStats {
    pub(crate) fn snapshot(&self) -> ReflectorMetrics {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ReflectorMetrics {
            last_sync_resource_version: self.last_sync_rv.lock().clone(),
            lists: n(&self.lists),
            relists_gone: n(&self.relists_gone),
            relists_expired_continue: n(&self.relists_expired_continue),
            relists_after_error: n(&self.relists_after_error),
            watches: n(&self.watches),
            watch_restarts: n(&self.watch_restarts),
            watch_events: n(&self.watch_events),
            streaming_list_refused: self.streaming_list_refused.load(Ordering::Relaxed),
            streaming_list_fallbacks: n(&self.streaming_list_fallbacks),
            watch_age: self.watch_opened.age(Instant::now()),
            shard_filtered_client_side: n(&self.shard_dropped),
            shard_server_side: match self.shard_server_side.load(Ordering::Relaxed) {
                1 => Some(true),
                2 => Some(false),
                _ => None,
            },
            shard_changes: n(&self.shard_changes),
        }
    }

    pub(crate) fn last_sync_resource_version(&self) -> String {
        self.last_sync_rv.lock().clone()
    }

    pub(super) fn set_rv(&self, rv: &str) {
        if !rv.is_empty() {
            let mut cur = self.last_sync_rv.lock();
            cur.clear();
            cur.push_str(rv);
        }
    }
}
