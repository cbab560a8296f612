//! The reflector's shard (see [`Reflector`]'s `shard_cell`): which objects it keeps, how it follows a shard that
//! changes while it runs, and what it says when the server did not filter.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{Reflector, SHARD_QUIET, SHARD_SETTLE_MAX, State};
use crate::cache::shard_cell::{ShardCell, ShardScope, WatchEnder};
use crate::clock::deadline::deadline_after;
use crate::object::Object;
use crate::selector::ShardSelector;

/// What a streaming list's objects say of whether the server filtered them by shard — such a list has no
/// `metadata.shardInfo` to say it: one object of another shard says no; enough distinct values of the shard's field,
/// every one in the shard, say yes (were the server not filtering, each would have been in the shard only by the
/// chance of the shard's share of the hash space).
#[derive(Default)]
pub(super) struct StreamedShard {
    /// Distinct hashes of the shard's field among the objects kept (at most [`STREAMED_VALUES`]).
    values: HashSet<u64>,
    /// An object of another shard arrived.
    foreign: bool,
}

/// The most distinct field values a streaming list counts: far more than any share of the hash space needs.
const STREAMED_VALUES: usize = 256;

/// The chance below which "every value in the shard" is not taken for a coincidence.
const COINCIDENCE: f64 = 1e-6;

impl StreamedShard {
    /// An object of the list arrived: `kept`, or dropped as another shard's.
    pub(super) fn saw<K: Object>(&mut self, shard: Option<&ShardSelector>, obj: &K, kept: bool) {
        let Some(shard) = shard else { return };
        if !kept {
            self.foreign = true;
        } else if self.values.len() < STREAMED_VALUES {
            self.values.insert(ShardSelector::hash(shard.field().value(obj.meta())));
        }
    }
}

impl<K: Object> Reflector<K> {
    /// Holds only the objects of the shard in `cell`, following its changes (see the fields).
    pub(crate) fn with_shard(mut self, cell: Option<Arc<ShardCell>>) -> Self {
        if let Some(cell) = &cell {
            let lw = Arc::downgrade(&self.lw);
            let ender: Arc<WatchEnder> = Arc::new(move || {
                if let Some(hooks) = lw.upgrade().as_deref().and_then(|lw| lw.unstable_hooks()) {
                    hooks.end_watch();
                }
            });
            cell.subscribe(&ender);
            self._watch_ender = Some(ender);
        }
        self.shard_cell = cell;
        self
    }

    /// Reads the shard to list: false when it is [`ShardScope::Nothing`].
    pub(super) fn refresh_shard(&mut self) -> bool {
        let Some(cell) = &self.shard_cell else {
            return true;
        };
        let (mut generation, mut scope) = cell.get();
        if generation != self.shard_generation {
            // Changes come in bursts (a replica acquires several slots within milliseconds): one list once the
            // shard is quiet for a moment, rather than one per change — each may be a list of everything.
            let until = deadline_after(Instant::now(), SHARD_SETTLE_MAX);
            while cell.wait_changed(generation, deadline_after(Instant::now(), SHARD_QUIET).min(until))
                && Instant::now() < until
            {
                generation = cell.generation();
            }
            (generation, scope) = cell.get();
        }
        self.shard_generation = generation;
        match scope {
            ShardScope::Shard(selector) => {
                self.shard = Some(selector);
                true
            }
            ShardScope::Nothing => {
                self.shard = None;
                false
            }
        }
    }

    /// True when the shard changed since the current list began: counted, and the caller relists.
    pub(super) fn shard_changed(&self) -> bool {
        let changed = self
            .shard_cell
            .as_ref()
            .is_some_and(|c| c.generation() != self.shard_generation);
        if changed {
            self.stats.shard_changes.fetch_add(1, Ordering::Relaxed);
            log::debug!("{}: the informer's shard changed; relisting", self.name);
        }
        changed
    }

    /// The shard holds nothing: the cache is emptied (a replace by an empty list), and nothing is asked of the
    /// server until the shard changes.
    pub(super) fn hold_nothing(&mut self) -> State<K> {
        let fifo = self.fifo.clone();
        let session = fifo.begin_replace();
        self.stats.last_list.set_now();
        session.finish();
        self.healthy();
        State::Idle
    }

    /// True when `obj` belongs in this reflector's cache; counts and (once) logs what a server sent of other shards.
    pub(super) fn in_shard(&self, obj: &K) -> bool {
        let Some(shard) = &self.shard else {
            return true;
        };
        if shard.matches(obj.meta()) {
            return true;
        }
        self.stats.shard_dropped.fetch_add(1, Ordering::Relaxed);
        self.note_client_side_filtering();
        false
    }

    /// A streaming list's initial events ended: records whether the server filtered them, when they tell
    /// ([`StreamedShard`]).
    pub(super) fn judge_streamed(&self, streamed: &StreamedShard) {
        let Some(shard) = &self.shard else { return };
        let filtered = if streamed.foreign {
            false
        } else {
            // The shard's share of the hash space (overlapping ranges count twice: a larger share, a safer call).
            let covered: u128 = shard.ranges().iter().map(|r| r.end() - u128::from(r.start())).sum();
            let share = (covered as f64 / 2f64.powi(64)).min(1.0);
            let values = i32::try_from(streamed.values.len()).unwrap_or(i32::MAX);
            if share >= 1.0 || share.powi(values) > COINCIDENCE {
                return; // nothing tells
            }
            true
        };
        self.stats
            .shard_server_side
            .store(if filtered { 1 } else { 2 }, Ordering::Relaxed);
    }

    /// Says once, at info, that this reflector filters its shard itself.
    pub(super) fn note_client_side_filtering(&self) {
        if !self.stats.shard_fallback_logged.swap(true, Ordering::Relaxed) {
            log::info!(
                "{}: the API server does not filter by shardSelector (no ShardedListAndWatch); filtering the shard \
                 client-side, every object still crosses the network",
                self.name
            );
        }
    }
}
