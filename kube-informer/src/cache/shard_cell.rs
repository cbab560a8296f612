//! `ShardCell`: the shard an informer holds, changeable while it runs — what a sharded controller's informers
//! follow as their replica gains and loses slots.
//!
//! The cell holds a [`ShardScope`] and a generation, bumped by every change. A reflector reads both before it
//! lists; it compares the generation between watch events, and a change makes it relist with the new shard (the
//! relist's replace drops the objects the shard no longer holds). A reflector blocked on a watch with nothing to
//! read is woken through the callbacks registered here, which end that watch (`WatchHooks::end_watch`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::selector::ShardSelector;

/// What a reflector following a cell should hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ShardScope {
    /// The objects of this shard.
    Shard(ShardSelector),
    /// No object at all (a replica that owns no slot): nothing is asked of the server and the cache is emptied.
    Nothing,
}

/// A callback ending the watch a reflector is blocked on.
pub(crate) type WatchEnder = dyn Fn() + Send + Sync;

/// The changeable shard of one or more informers (see the module).
pub(crate) struct ShardCell {
    state: Mutex<CellState>,
    /// A copy of `state.generation`, read per watch batch without the lock (stored under it, after the scope).
    generation: AtomicU64,
    changed: Condvar,
}

struct CellState {
    scope: ShardScope,
    /// Bumped by every change of `scope`. Invariant: equal to the cell's atomic copy once the lock is released.
    generation: u64,
    /// The reflectors following the cell; dead ones are pruned on each change.
    enders: Vec<Weak<WatchEnder>>,
}

impl ShardCell {
    /// A cell holding `scope`, generation 0.
    pub(crate) fn new(scope: ShardScope) -> Arc<ShardCell> {
        Arc::new(ShardCell {
            state: Mutex::new(CellState {
                scope,
                generation: 0,
                enders: Vec::new(),
            }),
            generation: AtomicU64::new(0),
            changed: Condvar::new(),
        })
    }

    /// The current scope and its generation, read together.
    pub(crate) fn get(&self) -> (u64, ShardScope) {
        let state = self.state.lock();
        (state.generation, state.scope.clone())
    }

    /// The current generation (one atomic load).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Replaces the scope; when it differs, bumps the generation, wakes the reflectors waiting on the cell and ends
    /// the watches of those reading one (after the generation is visible: a reflector that opens a watch and then
    /// reads the generation either sees the change or has its watch ended). Returns true when it changed.
    pub(crate) fn set(&self, scope: ShardScope) -> bool {
        let enders: Vec<Arc<WatchEnder>> = {
            let mut state = self.state.lock();
            if state.scope == scope {
                return false;
            }
            state.scope = scope;
            state.generation += 1;
            self.generation.store(state.generation, Ordering::SeqCst);
            state.enders.retain(|e| e.strong_count() > 0);
            state.enders.iter().filter_map(Weak::upgrade).collect()
        };
        self.changed.notify_all();
        // Outside the lock: an ender aborts a connection, and must not wait on a reflector reading the cell.
        for end in enders {
            end();
        }
        true
    }

    /// Registers `ender` (held weakly: dropping it unregisters it), called on every change.
    pub(crate) fn subscribe(&self, ender: &Arc<WatchEnder>) {
        self.state.lock().enders.push(Arc::downgrade(ender));
    }

    /// Waits until the generation differs from `seen` (true) or until `deadline` (false).
    pub(crate) fn wait_changed(&self, seen: u64, deadline: Instant) -> bool {
        let mut state = self.state.lock();
        while state.generation == seen {
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                return state.generation != seen;
            }
        }
        true
    }
}

impl fmt::Debug for ShardCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("ShardCell")
            .field("scope", &state.scope)
            .field("generation", &state.generation)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::ShardField;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    fn part(i: u32) -> ShardScope {
        ShardScope::Shard(ShardSelector::split(ShardField::Uid, 4, i).unwrap())
    }

    #[test]
    fn a_change_bumps_the_generation_and_ends_watches_once_a_setting_of_the_same_scope_does_not() {
        let cell = ShardCell::new(part(0));
        let ended = Arc::new(AtomicUsize::new(0));
        let counter = ended.clone();
        let ender: Arc<WatchEnder> = Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        cell.subscribe(&ender);
        assert!(!cell.set(part(0)));
        assert_eq!((cell.generation(), ended.load(Ordering::SeqCst)), (0, 0));
        assert!(cell.set(part(1)));
        assert_eq!(cell.get(), (1, part(1)));
        assert_eq!(ended.load(Ordering::SeqCst), 1);
        drop(ender);
        assert!(cell.set(ShardScope::Nothing));
        assert_eq!(ended.load(Ordering::SeqCst), 1, "a dropped ender is not called");
        assert_eq!(cell.generation(), 2);
    }

    #[test]
    fn a_waiter_wakes_on_a_change_and_not_before() {
        let cell = ShardCell::new(ShardScope::Nothing);
        assert!(!cell.wait_changed(0, Instant::now()), "nothing changed");
        let setter = cell.clone();
        let t = std::thread::spawn(move || setter.set(part(2)));
        assert!(cell.wait_changed(0, Instant::now() + Duration::from_secs(30)));
        assert!(t.join().unwrap());
        assert!(cell.wait_changed(0, Instant::now()), "already changed: no wait");
    }
}
