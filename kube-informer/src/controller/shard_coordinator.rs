//! `ShardCoordinator`: the thread that gets, keeps and gives up a sharded controller's slots.
//!
//! The group's Leases — labelled [`GROUP_LABEL`]`=<name>` — are watched by an informer of the coordinator's own: one
//! list when it starts, then one watch, whatever the number of replicas and slots. Its handler notes when each
//! Lease's version was first seen here, and wakes the coordinator when a slot is released or a replica comes or
//! goes.
//!
//! Every retry period (and at once when a slot's election changes, or the handler wakes it), a round:
//! 1. renews this replica's membership Lease `<name>-member-<identity>`;
//! 2. reads the group's Leases from the informer's observations: the members seen alive — a membership Lease that
//!    changed within the lease duration, as observed here (client-go's rule for locks: no trust in other machines'
//!    clocks), and not seen holding an expired slot since its membership Lease last changed — and who holds each
//!    slot `<name>-slot-<i>`;
//! 3. balances: with `S` slots and `M` live members, each replica aims at `⌊S/M⌋` or `⌈S/M⌉` slots. Below that it
//!    runs an election for free slots (no Lease, released, or held by a replica no longer alive — whose Lease the
//!    election takes over only after it expired); above it, or above `⌊S/M⌋` while a member holds fewer, it drains
//!    one slot ([`Ownership::drain`]) and releases it once no reconcile of it runs.
//!
//! Each slot's election is a [`LeaderElector`] over a [`LeaseLock`]: its guarantees are the election's — at most
//! one live owner, a renewal that fails past the renew deadline ends the ownership before anyone may take over —
//! and each term of it fences the client the slot's reconciles write through
//! ([`Ownership::acquired`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{Receiver, Sender};
use log::{debug, info, warn};
use parking_lot::Mutex;

use super::context::Fenced;
use super::ownership::Ownership;
use super::sharding::ShardingConfig;
use crate::cache::ListWatch;
use crate::client::params::{DeleteParams, PostParams};
use crate::client::{Api, Client};
use crate::clock::deadline::deadline_after;
use crate::error::{Error, Result};
use crate::health::{Health, HealthCell};
use crate::informer::{InformerOptions, Notification, SharedIndexInformer, StopJoin};
use crate::leaderelection::{LeaderCallbacks, LeaderElectionRecord, LeaderElector, Lease, LeaseLock};
use crate::object::ObjectMeta;
use crate::selector::ShardSelector;
use crate::stop::StopSignal;
use crate::thread_name::ThreadName;
use crate::worker::Worker;

/// Called with slots just acquired (queues their cached keys).
pub(crate) type OnAcquired = dyn Fn(&[u32]) + Send + Sync;

/// How long stopping the coordinator may take: electors released, membership Lease deleted, thread joined.
const STOP_BUDGET: Duration = Duration::from_millis(900);

/// The label on a sharded controller's Leases (slots and membership), whose value names the group (the Leases'
/// name prefix): what the coordinator's informer watches.
pub(crate) const GROUP_LABEL: &str = "kube-informer.io/shard-group";

/// The client the slots' reconciles write through (fenced by each slot's term), and the counter of the writes
/// fencing refuses.
pub(crate) type ReconcileClient = (Option<Client>, Arc<AtomicU64>);

/// Counters shared with the controller's metrics.
#[derive(Default)]
pub(crate) struct CoordinatorStats {
    pub(crate) acquired: AtomicU64,
    pub(crate) rebalanced: AtomicU64,
    pub(crate) lost: AtomicU64,
    /// Slots given up whose Lease could not be released in time ([`ShardingMetrics::unreleased`](super::ShardingMetrics)).
    pub(crate) unreleased: AtomicU64,
    pub(crate) members: AtomicUsize,
    /// The outage of the last slot hand-over here ([`ShardingMetrics::last_handover`](super::ShardingMetrics)).
    pub(crate) last_handover: Mutex<Option<Duration>>,
    /// The outage of each slot's last hand-over here, by slot.
    pub(crate) handovers: Mutex<BTreeMap<u32, Duration>>,
    /// Hand-overs measured.
    pub(crate) handover_count: AtomicU64,
    /// `Degraded` while the membership Lease or the Leases' list fails, or an owned slot cannot be renewed.
    pub(crate) health: HealthCell,
}

impl CoordinatorStats {
    /// The first reconcile of `slot` since it was acquired: the hand-over's outage was `outage`.
    pub(crate) fn handed_over(&self, slot: u32, outage: Duration) {
        *self.last_handover.lock() = Some(outage);
        self.handovers.lock().insert(slot, outage);
        self.handover_count.fetch_add(1, Ordering::Relaxed);
    }
}

/// The running coordinator of one controller; stopped (slots released) by [`ShardCoordinator::stop`].
pub(crate) struct ShardCoordinator {
    stop: Arc<StopSignal>,
    kick: Sender<()>,
    worker: Option<Worker>,
}

/// What the coordinator's thread works with.
struct Coordinator {
    controller: String,
    config: ShardingConfig,
    /// The Leases' name prefix.
    group: String,
    member_lease: String,
    /// The Leases' API, on connections and a rate-limit bucket of the coordinator's own.
    api: Api<Lease>,
    /// The group's label value.
    label: String,
    /// Watches the group's Leases (see the module).
    leases: Arc<SharedIndexInformer<Lease>>,
    /// The membership Lease as last written: the next renewal replaces it without reading it first.
    member: Option<Lease>,
    /// When the membership Lease was last renewed: rounds run on every change of a slot, renewals once a retry
    /// period.
    renewed: Option<Instant>,
    client: Client,
    /// What the slots' reconciles write through.
    reconciles: ReconcileClient,
    ownership: Arc<Ownership>,
    stats: Arc<CoordinatorStats>,
    /// Called once a slot is owned (queues its cached keys).
    on_acquired: Arc<OnAcquired>,
    stop: Arc<StopSignal>,
    kick_tx: Sender<()>,
    kick_rx: Receiver<()>,
    /// Slots just acquired, sent by their elections: their cached keys are queued here, on this thread (an
    /// election's callback must return at once: its thread renews the Lease).
    acquired_tx: Sender<u32>,
    acquired_rx: Receiver<u32>,
    /// Elections running, by slot: held or being tried.
    electors: BTreeMap<u32, SlotElection>,
    /// The group's Leases (membership and slots) as last seen, by name: kept by the informer's handler. A slot's
    /// observation is handed to its election when it starts, so that a dead owner's slot is taken `lease_duration`
    /// after its last renewal was seen here, not after the election's own first read.
    seen: Arc<Mutex<HashMap<String, Observed>>>,
    /// Rounds run; the first only announces this replica (see [`Coordinator::round`]).
    rounds: u64,
    /// The earliest moment another replica's Lease (membership or slot) expires unless renewed, as last read: a
    /// round runs then, so that a dead replica's slots are taken at their expiry, not up to a retry period later.
    next_expiry: Option<Instant>,
    /// Replicas seen dead — holding a slot whose Lease expired — and when: they count as members again only once
    /// their membership Lease changes after that (see [`Coordinator::read_leases`]). Only replicas whose
    /// membership Lease has not expired are kept.
    dead: HashMap<String, Instant>,
    /// Membership failures in a row, and since when.
    failing: Option<(Instant, u64)>,
}

/// A Lease as last seen.
#[derive(Clone)]
struct Observed {
    resource_version: String,
    /// When `resource_version` was first seen here (client-go's `observedTime`).
    since: Instant,
    record: LeaderElectionRecord,
}

/// One slot's election.
struct SlotElection {
    elector: LeaderElector,
    /// Set before the coordinator stops the elector itself: `on_stopped_leading` is then a release, not a loss.
    releasing: Arc<AtomicBool>,
    /// When it started: a holder observed renewing the slot since then is alive and keeps it.
    started: Instant,
}

impl SlotElection {
    /// Stops the election by `deadline`, releasing the slot if held: a release, not a loss. A Lease that could not
    /// be released by then (or whose elector had not finished) is counted in `stats`: it expires on its own.
    fn give_up(self, deadline: Instant, stats: &CoordinatorStats) {
        self.releasing.store(true, Ordering::SeqCst);
        let stopped = self.elector.stop_by(deadline);
        if !stopped.joined || stopped.released == Some(false) {
            stats.unreleased.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl ShardCoordinator {
    /// Starts coordinating `ownership`'s slots for the controller `controller`.
    ///
    /// # Errors
    /// When the thread cannot be spawned.
    pub(crate) fn start(
        controller: &str,
        client: &Client,
        config: &ShardingConfig,
        ownership: Arc<Ownership>,
        stats: Arc<CoordinatorStats>,
        on_acquired: Arc<OnAcquired>,
        reconciles: ReconcileClient,
    ) -> Result<ShardCoordinator> {
        // A controller's name may hold a `/` (an informer's `configmaps/ns`): not in an object's name.
        let group = object_name(config.name.as_deref().unwrap_or(controller), 200);
        let label = object_name(&group, 63);
        let (kick_tx, kick_rx) = crossbeam_channel::bounded(1);
        let (acquired_tx, acquired_rx) = crossbeam_channel::unbounded();
        let stop = Arc::new(StopSignal::new());
        // Connections and a rate-limit bucket of its own: the controller's requests never delay a round.
        let api = Api::namespaced(client.isolated_child(), &config.lease_namespace);
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let leases = watch_leases(controller, &api, &label, &group, &seen, &kick_tx)?;
        let mut coordinator = Coordinator {
            controller: controller.to_owned(),
            member_lease: lease_name(&group, "member", &config.identity),
            group,
            label,
            leases,
            config: config.clone(),
            api,
            member: None,
            renewed: None,
            client: client.clone(),
            reconciles,
            ownership,
            stats,
            on_acquired,
            stop: stop.clone(),
            kick_tx: kick_tx.clone(),
            kick_rx,
            acquired_tx,
            acquired_rx,
            electors: BTreeMap::new(),
            seen,
            rounds: 0,
            next_expiry: None,
            dead: HashMap::new(),
            failing: None,
        };
        let live = Arc::new(AtomicUsize::new(0));
        let name = ThreadName::new(
            "shard",
            controller,
            format!("kube-informer/controller/{controller}/sharding"),
        );
        let leases = coordinator.leases.clone();
        let worker = match Worker::spawn(name, &live, move || coordinator.run()) {
            Ok(worker) => worker,
            Err(e) => {
                leases.stop();
                return Err(e);
            }
        };
        Ok(ShardCoordinator {
            stop,
            kick: kick_tx,
            worker: Some(worker),
        })
    }

    /// Stops: every slot's Lease released (the controller's workers have finished first), the membership Lease
    /// deleted, the thread joined — within about a second.
    pub(crate) fn stop(mut self) {
        self.stop.stop();
        let _ = self.kick.try_send(());
        if let Some(worker) = self.worker.take()
            && !worker.join_until(deadline_after(Instant::now(), STOP_BUDGET + Duration::from_millis(100)))
        {
            warn!("sharding: the coordinator did not stop in time; left detached");
        }
    }
}

impl Drop for ShardCoordinator {
    fn drop(&mut self) {
        self.stop.stop();
        let _ = self.kick.try_send(());
    }
}

impl Coordinator {
    fn run(&mut self) {
        info!(
            "controller {}: sharded over {} slots, Leases {}/{}-slot-*, as {}",
            self.controller, self.config.slots, self.config.lease_namespace, self.group, self.config.identity
        );
        // A round every retry period, and at once when kicked (a slot gained, lost or drained).
        let mut next_round = Instant::now();
        while !self.stop.is_stopped() {
            if Instant::now() >= next_round {
                self.round();
                next_round = deadline_after(Instant::now(), self.config.election.retry_period);
                if let Some(expiry) = self.next_expiry {
                    next_round = next_round.min(expiry);
                }
            }
            let wait = next_round.saturating_duration_since(Instant::now());
            crossbeam_channel::select! {
                recv(self.kick_rx) -> _ => next_round = Instant::now(),
                recv(self.acquired_rx) -> slot => {
                    // Slots come in bursts: their keys are queued in one pass over the cache.
                    let slots: Vec<u32> = slot.into_iter().chain(self.acquired_rx.try_iter()).collect();
                    (self.on_acquired)(&slots);
                }
                default(wait) => {}
            }
        }
        self.shut_down();
    }

    /// One round: membership, then the Leases read, then balance.
    fn round(&mut self) {
        let now = Instant::now();
        let deadline = deadline_after(now, self.config.election.renew_deadline);
        let api = self.api.with_deadline(deadline);
        let due = self
            .renewed
            .is_none_or(|at| now.saturating_duration_since(at) >= self.config.election.retry_period);
        let renewed = if due { self.renew_membership(&api) } else { Ok(()) };
        let view = match renewed.and_then(|()| self.read_leases(now)) {
            Ok(Some(view)) => Ok(view),
            // The Leases' informer has not synced yet, and is not failing: nothing to balance on yet.
            Ok(None) => return,
            Err(e) => Err(e),
        };
        // A slot whose renewals fail is as much trouble as the membership's: the replica may lose it.
        let slot_trouble = view.as_ref().ok().and_then(|_| {
            self.electors.iter().find_map(|(slot, e)| match e.elector.health() {
                Health::Degraded { last_error, .. } if self.ownership.owned().contains(slot) => {
                    Some(format!("cannot renew the Lease of slot {slot}: {last_error}"))
                }
                _ => None,
            })
        });
        let view = match (view, slot_trouble) {
            (Ok(view), None) => {
                if self.failing.take().is_some() {
                    info!("controller {}: sharding Leases renewed again", self.controller);
                }
                self.stats.health.recovered();
                view
            }
            (Ok(view), Some(trouble)) => {
                let (since, attempts) = self.failing.get_or_insert((now, 0));
                *attempts += 1;
                self.stats.health.failed(*since, *attempts, &trouble);
                debug!("controller {}: {trouble}", self.controller);
                view
            }
            (Err(e), _) => {
                let (since, attempts) = self.failing.get_or_insert((now, 0));
                *attempts += 1;
                self.stats.health.failed(*since, *attempts, &e.to_string());
                if *attempts == 1 {
                    warn!(
                        "controller {}: cannot renew its sharding membership or read the slot Leases: {e}; owned \
                         slots are kept while their own Leases renew",
                        self.controller
                    );
                } else {
                    debug!("controller {}: sharding round failed again: {e}", self.controller);
                }
                return;
            }
        };
        if log::log_enabled!(log::Level::Trace) {
            let leading: Vec<u32> = self
                .electors
                .iter()
                .filter(|(_, e)| e.elector.is_leader())
                .map(|(s, _)| *s)
                .collect();
            log::trace!(
                "controller {}: owned {:?} draining {:?} elections {:?} leading {:?} members {:?} holders {:?}",
                self.controller,
                self.ownership.owned(),
                self.ownership.draining(),
                self.electors.keys().collect::<Vec<_>>(),
                leading,
                view.members,
                view.holders
            );
        }
        self.stats.members.store(view.members.len(), Ordering::Relaxed);
        self.next_expiry = view.next_expiry;
        self.finish_drains();
        // The first round announces this replica and looks: replicas started together then see each other before
        // any takes slots (else the first would take them all, to give most back a round later).
        self.rounds += 1;
        if self.rounds > 1 {
            self.balance(&view);
        }
    }

    /// Creates or renews this replica's membership Lease.
    fn renew_membership(&mut self, api: &Api<Lease>) -> Result<()> {
        let started = Instant::now();
        let written = self.write_membership(api);
        match written {
            Ok(lease) => {
                self.member = Some(lease);
                self.renewed = Some(started);
                Ok(())
            }
            Err(e) => {
                self.member = None; // read it again next time
                Err(e)
            }
        }
    }

    fn write_membership(&self, api: &Api<Lease>) -> Result<Lease> {
        let wall = SystemTime::now();
        let record = LeaderElectionRecord {
            holder_identity: self.config.identity.clone(),
            lease_duration_seconds: self.config.election.lease_seconds(),
            acquire_time: Some(wall),
            renew_time: Some(wall),
            leader_transitions: 0,
        };
        let current = match &self.member {
            Some(lease) => Some(lease.clone()),
            None => api.get_opt(&self.member_lease)?,
        };
        match current {
            Some(mut lease) => {
                if lease.metadata.labels.get(GROUP_LABEL) != Some(self.label.as_str()) {
                    lease.metadata.labels.insert(GROUP_LABEL.to_owned(), self.label.clone());
                }
                let acquired = lease.spec.to_record().acquire_time;
                lease.spec.set_record(&LeaderElectionRecord {
                    acquire_time: acquired.or(Some(wall)),
                    ..record
                });
                api.replace(&self.member_lease, &PostParams::default(), &lease)
            }
            None => {
                let mut lease = Lease::new(ObjectMeta::namespaced(
                    self.config.lease_namespace.as_str(),
                    self.member_lease.as_str(),
                ));
                lease.metadata.labels.insert(GROUP_LABEL.to_owned(), self.label.clone());
                lease.spec.set_record(&record);
                api.create(&PostParams::default(), &lease)
            }
        }
    }

    /// What the group's Leases say now, from the informer's observations; `None` before it synced (unless it fails,
    /// which is an error).
    fn read_leases(&mut self, now: Instant) -> Result<Option<View>> {
        // Synced, and every Lease of the initial list through the handler into `seen` (not only queued to it).
        if !self.leases.wait_synced(Duration::ZERO) {
            return match self.leases.health().state {
                Health::Degraded { last_error, .. } => {
                    Err(Error::InvalidInput(format!("cannot watch the Leases: {last_error}")))
                }
                _ => Ok(None),
            };
        }
        let member_prefix = format!("{}-member-", self.group);
        let slot_prefix = format!("{}-slot-", self.group);
        let mut view = View {
            members: HashSet::from([self.config.identity.clone()]),
            holders: BTreeMap::new(),
            held_since: BTreeMap::new(),
            expired: HashSet::new(),
            next_expiry: None,
        };
        // Replicas holding a slot whose Lease expired: dead (or cut off), whatever their membership says yet.
        let mut dead = HashSet::new();
        // Live membership Leases: the replica, and since when its current version was seen.
        let mut alive = Vec::new();
        for (name, seen) in self.seen.lock().iter() {
            let slot = name.strip_prefix(&slot_prefix).and_then(|s| s.parse::<u32>().ok());
            let slot = slot.filter(|s| *s < self.config.slots);
            if slot.is_none() && !name.starts_with(&member_prefix) {
                continue;
            }
            // Unchanged for its duration, as seen here: nobody alive renews it.
            let lasts = seen.record.lease_duration();
            let stale = now.saturating_duration_since(seen.since) >= lasts;
            let holder = &seen.record.holder_identity;
            if !stale && !holder.is_empty() && *holder != self.config.identity {
                let expiry = deadline_after(seen.since, lasts);
                view.next_expiry = Some(view.next_expiry.map_or(expiry, |n| n.min(expiry)));
            }
            match slot {
                Some(slot) => {
                    if stale {
                        view.expired.insert(slot);
                        dead.insert(holder.clone());
                    }
                    if !holder.is_empty() {
                        view.holders.insert(slot, holder.clone());
                        view.held_since.insert(slot, seen.since);
                    }
                }
                None if !stale && !holder.is_empty() => alive.push((holder.clone(), seen.since)),
                None => {}
            }
        }
        // A replica stops counting when the first of its slots expires, not a retry period later when its
        // membership does — and does not count again once its expired slots were taken while its membership has
        // not expired yet, unless it renews that membership: the others take its slots for shares counted without
        // it, and give none back.
        dead.remove(&self.config.identity);
        for identity in dead {
            self.dead.entry(identity).or_insert(now);
        }
        self.dead.retain(|identity, _| alive.iter().any(|(m, _)| m == identity));
        for (identity, since) in alive {
            if self.dead.get(&identity).is_none_or(|dead| since > *dead) {
                self.dead.remove(&identity);
                view.members.insert(identity);
            }
        }
        Ok(Some(view))
    }

    /// Releases the draining slots whose reconciles have finished.
    fn finish_drains(&mut self) {
        for slot in self.ownership.draining() {
            if self.ownership.is_drained(slot)
                && let Some(election) = self.electors.remove(&slot)
            {
                election.give_up(deadline_after(Instant::now(), STOP_BUDGET), &self.stats);
                self.stats.rebalanced.fetch_add(1, Ordering::Relaxed);
                info!(
                    "controller {}: released slot {slot} to balance the replicas",
                    self.controller
                );
            }
        }
    }

    /// Starts and stops elections towards this replica's share (see the module).
    fn balance(&mut self, view: &View) {
        let slots = self.config.slots;
        let me = self.config.identity.as_str();
        let members = u32::try_from(view.members.len()).unwrap_or(u32::MAX).max(1);
        let (low, high) = (slots / members, slots.div_ceil(members));
        let owned = self.ownership.owned();
        let draining = self.ownership.draining();
        let mine = u32::try_from(owned.len()).unwrap_or(u32::MAX);
        // Elections not (yet) won, for slots someone alive holds: give them up, and try free slots instead.
        // Only when the holder was seen renewing since the election began: an older observation is what the
        // election was started on, and an election that leads already has won (the view may not show it yet).
        let tried: Vec<u32> = self
            .electors
            .iter()
            .filter(|(s, e)| !owned.contains(s) && !draining.contains(s) && !e.elector.is_leader())
            .map(|(s, _)| *s)
            .collect();
        for slot in &tried {
            let renewed_since = |started: Instant| view.held_since.get(slot).is_some_and(|at| *at >= started);
            if view
                .holders
                .get(slot)
                .is_some_and(|h| h != me && view.members.contains(h))
                && self.electors.get(slot).is_some_and(|e| renewed_since(e.started))
                && let Some(election) = self.electors.remove(slot)
            {
                election.give_up(deadline_after(Instant::now(), STOP_BUDGET), &self.stats);
            }
        }
        let trying = u32::try_from(self.electors.len().saturating_sub(owned.len() + draining.len())).unwrap_or(0);
        // Above the share: give the surplus up (each slot after its keys finish).
        let mut held: HashMap<&str, u32> = HashMap::new();
        for holder in view.holders.values() {
            *held.entry(holder.as_str()).or_default() += 1;
        }
        let someone_starved = view
            .members
            .iter()
            .filter(|m| m.as_str() != me)
            .any(|m| held.get(m.as_str()).copied().unwrap_or(0) < low);
        let keep = if someone_starved { low } else { high };
        if mine > keep {
            // The highest slots go: replicas agree on nothing, but each gives up the same end of its list.
            for &slot in owned
                .iter()
                .rev()
                .take(usize::try_from(mine - keep).unwrap_or(usize::MAX))
            {
                if self.ownership.drain(slot) {
                    debug!(
                        "controller {}: draining slot {slot} ({mine} owned, share {low}..={high} of {members} \
                         replicas)",
                        self.controller
                    );
                }
            }
            let _ = self.kick_tx.try_send(());
            return;
        }
        // Below the share: elections for free slots — only up to ⌊S/M⌋ while another replica has fewer, so that
        // what the others give up goes to it.
        let target = if mine + trying < low || someone_starved {
            low
        } else {
            high
        };
        let mut want = target.saturating_sub(mine + trying + u32::try_from(draining.len()).unwrap_or(0));
        if want == 0 {
            return;
        }
        let offset = u32::try_from(ShardSelector::hash(me) % u64::from(slots)).unwrap_or(0);
        for i in 0..slots {
            if want == 0 {
                break;
            }
            let slot = (offset + i) % slots;
            if self.electors.contains_key(&slot) {
                continue;
            }
            let free =
                view.expired.contains(&slot) || view.holders.get(&slot).is_none_or(|h| !view.members.contains(h));
            if !free {
                continue;
            }
            match self.elect(slot) {
                Ok(election) => {
                    self.electors.insert(slot, election);
                    want -= 1;
                }
                Err(e) => {
                    warn!(
                        "controller {}: cannot run the election of slot {slot}: {e}",
                        self.controller
                    );
                    return;
                }
            }
        }
    }

    /// Starts the election of `slot`.
    fn elect(&self, slot: u32) -> Result<SlotElection> {
        let lease = format!("{}-slot-{slot}", self.group);
        let lock = LeaseLock::new(
            &self.client,
            &self.config.lease_namespace,
            &lease,
            self.config.identity.clone(),
        )
        .with_labels([(GROUP_LABEL, self.label.as_str())]);
        let observed = self.seen.lock().get(&lease).map(|o| (o.record.clone(), o.since));
        let releasing = Arc::new(AtomicBool::new(false));
        let (on, off) = (self.ownership.clone(), self.ownership.clone());
        let (stats_on, stats_off) = (self.stats.clone(), self.stats.clone());
        let (kick_on, kick_off) = (self.kick_tx.clone(), self.kick_tx.clone());
        let (controller, released) = (self.controller.clone(), releasing.clone());
        let acquired = self.acquired_tx.clone();
        let (base, writes_refused) = self.reconciles.clone();
        let callbacks = LeaderCallbacks::new()
            .on_started_leading_with_term(move |term| {
                // A hand-over of an earlier term of this slot here is not this one's.
                stats_on.handovers.lock().remove(&slot);
                // The slot's reconciles write through a client fenced by this term.
                on.acquired(slot, Some(Fenced::new(term, base.as_ref(), &writes_refused)));
                let _ = acquired.send(slot);
                stats_on.acquired.fetch_add(1, Ordering::Relaxed);
                let _ = kick_on.try_send(());
            })
            .on_stopped_leading(move || {
                off.lost(slot);
                if !released.load(Ordering::SeqCst) {
                    stats_off.lost.fetch_add(1, Ordering::Relaxed);
                    warn!("controller {controller}: lost slot {slot} (its Lease could not be renewed)");
                }
                let _ = kick_off.try_send(());
            });
        // Released on stop, named after its Lease, and on the real clock: the seeded observation is an `Instant`.
        let config = self
            .config
            .election
            .clone()
            .release_on_cancel(true)
            .name(lease)
            .clock(crate::clock::RealClock);
        let elector = LeaderElector::start_observed(lock, config, callbacks, observed)?;
        Ok(SlotElection {
            elector,
            releasing,
            started: Instant::now(),
        })
    }

    /// Releases every slot (in parallel: each release is a write to the server) and deletes the membership Lease.
    fn shut_down(&mut self) {
        let deadline = deadline_after(Instant::now(), STOP_BUDGET);
        let watching: StopJoin = self.leases.begin_stop();
        let electors = std::mem::take(&mut self.electors);
        let released = electors.len();
        let stats = &*self.stats;
        std::thread::scope(|scope| {
            for (slot, election) in electors {
                let spawned = std::thread::Builder::new()
                    .name(format!("rel:{slot}"))
                    .spawn_scoped(scope, move || election.give_up(deadline, stats));
                if let Err(e) = spawned {
                    debug!("sharding: no thread to release slot {slot} ({e}); its Lease will expire");
                }
            }
        });
        let api = self.api.with_deadline(deadline);
        match api.delete(&self.member_lease, &DeleteParams::default()) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => debug!("sharding: membership Lease not deleted ({e}); it will be seen dead"),
        }
        if !watching.finish(deadline) {
            debug!("sharding: the Leases' informer did not stop in time");
        }
        self.stats.health.halt("stopped");
        debug!(
            "controller {}: sharding stopped, {released} slot(s) released",
            self.controller
        );
    }
}

/// Starts the informer of the group's Leases (labelled `GROUP_LABEL=label`): its handler keeps `seen` — each
/// Lease's version and when it was first seen here — and kicks the coordinator when a slot is released or deleted,
/// or a replica comes or goes.
fn watch_leases(
    controller: &str,
    api: &Api<Lease>,
    label: &str,
    group: &str,
    seen: &Arc<Mutex<HashMap<String, Observed>>>,
    kick: &Sender<()>,
) -> Result<Arc<SharedIndexInformer<Lease>>> {
    let informer = Arc::new(SharedIndexInformer::new(
        ListWatch::new(api).labels(&format!("{GROUP_LABEL}={label}")),
        InformerOptions::default().name(format!("leases/{controller}")),
    ));
    let (seen, kick) = (seen.clone(), kick.clone());
    let member_prefix = format!("{group}-member-");
    informer.add_event_handler(move |ev: &Notification<Lease>| {
        let lease = ev.object();
        let name = lease.metadata.name.clone().unwrap_or_default();
        let wake = match ev {
            Notification::Delete(_) => {
                seen.lock().remove(&name);
                true
            }
            _ => {
                let record = lease.spec.to_record();
                let resource_version = lease.metadata.resource_version.clone().unwrap_or_default();
                let mut seen = seen.lock();
                let new = !seen.contains_key(&name);
                let changed = seen.get(&name).is_none_or(|o| o.resource_version != resource_version);
                if changed {
                    // Released (holder emptied) is worth a round now; a renewal is not.
                    let released = record.holder_identity.is_empty()
                        && seen.get(&name).is_some_and(|o| !o.record.holder_identity.is_empty());
                    seen.insert(
                        name.clone(),
                        Observed {
                            resource_version,
                            since: Instant::now(),
                            record,
                        },
                    );
                    released || (new && name.starts_with(&member_prefix))
                } else {
                    false
                }
            }
        };
        if wake {
            let _ = kick.try_send(());
        }
    })?;
    if let Err(e) = informer.start() {
        informer.stop();
        return Err(e);
    }
    Ok(informer)
}

/// What a round read of the Leases.
struct View {
    /// The identities of the replicas alive, this one included.
    members: HashSet<String>,
    /// Slot → the identity holding its Lease (slots released or never held are absent).
    holders: BTreeMap<u32, String>,
    /// Slot → when its Lease's current version was first seen here (for the slots in `holders`).
    held_since: BTreeMap<u32, Instant>,
    /// Slots whose Lease has not changed for its duration, as seen here: held by nobody alive.
    expired: HashSet<u32>,
    /// The earliest expiry, unless renewed, of another replica's Lease.
    next_expiry: Option<Instant>,
}

/// `raw` made a valid object name of at most `max` bytes (≤ 253): lower case, characters outside `[a-z0-9.-]` as
/// `-`, starting and ending with an alphanumeric; a name cut short keeps a hash of the whole, so that two long
/// names stay apart.
fn object_name(raw: &str, max: usize) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.len() > max {
        name.truncate(max.saturating_sub(17));
        let _ = write!(name, "-{:016x}", ShardSelector::hash(raw));
    }
    let trim = |c: char| !c.is_ascii_alphanumeric();
    let name = name.trim_start_matches(trim).trim_end_matches(trim);
    if name.is_empty() {
        "x".to_owned()
    } else {
        name.to_owned()
    }
}

/// The membership Lease of `identity` in `group` (a valid object name already).
fn lease_name(group: &str, kind: &str, identity: &str) -> String {
    object_name(&format!("{group}-{kind}-{identity}"), 253)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_names_are_valid_object_names() {
        assert_eq!(lease_name("web", "member", "Pod_7F"), "web-member-pod-7f");
        assert_eq!(lease_name("web", "member", "a_"), "web-member-a");
        assert_eq!(object_name("configmaps/team-a", 200), "configmaps-team-a");
        assert_eq!(object_name("/?", 200), "x");
        let long = lease_name("web", "member", &"x".repeat(400));
        assert!(long.len() <= 253 && long.starts_with("web-member-x"));
        assert_ne!(long, lease_name("web", "member", &"x".repeat(401)));
    }
}
