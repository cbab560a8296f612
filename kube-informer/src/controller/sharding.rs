//! `ShardingConfig` and `ShardingMetrics`: what a user sets and reads of a sharded controller
//! ([`ControllerBuilder::sharded`](super::ControllerBuilder::sharded)).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::leaderelection::LeaderElectionConfig;
use crate::selector::ShardField;

/// The slots of a sharded controller unless set ([`ShardingConfig::slots`]).
pub const DEFAULT_SLOTS: u32 = 32;

/// The most slots a controller may cut its objects into: each owned slot is a Lease renewed every retry period.
pub const MAX_SLOTS: u32 = 1024;

/// How a sharded controller splits its objects between its replicas.
///
/// The hash space of `field` (64-bit FNV-1a, as kube-apiserver's `shardSelector` hashes it) is cut into `slots`
/// equal slots; a replica reconciles the objects of the slots it owns, and owns a slot by holding its Lease
/// `<name>-slot-<i>` in `lease_namespace` — a leader election per slot, with `election`'s timing (client-go's
/// 15/10/2 s by default), so a slot has at most one live owner, a dead replica's slots are taken over after the
/// lease duration, and a stopping replica releases its slots at once. Each replica also renews a membership Lease
/// `<name>-member-<identity>`: that is how replicas count each other and keep the slots balanced.
///
/// ```
/// use kube_informer::controller::ShardingConfig;
///
/// let config = ShardingConfig::new("operators", "replica-0").slots(16);
/// assert_eq!(config.slots, 16);
/// assert!(config.validate().is_ok());
/// assert!(ShardingConfig::new("operators", "").validate().is_err());
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ShardingConfig {
    /// How many slots the hash space is cut into ([`DEFAULT_SLOTS`]; 1 to [`MAX_SLOTS`]). Every replica of a
    /// controller must use the same count: it is part of the Leases' meaning. More slots balance more finely and
    /// cost more Lease renewals (one per owned slot per retry period).
    pub slots: u32,
    /// The field hashed: [`ShardField::Uid`] (default: objects spread evenly) or [`ShardField::Namespace`] (a
    /// namespace's objects together; then the controller's secondary informers are sharded too, so each replica
    /// caches only its namespaces' objects of every kind).
    pub field: ShardField,
    /// The namespace of the slot and membership Leases.
    pub lease_namespace: String,
    /// This replica's identity: unique among the replicas (a pod's name). See
    /// [`with_default_identity`](Self::with_default_identity).
    pub identity: String,
    /// The prefix of the Leases' names (default: the controller's name).
    pub name: Option<String>,
    /// The timing of each slot's election and of the membership Lease (client-go's 15/10/2 s by default). The
    /// retry period is also the pace of balancing. Its other settings are the coordinator's: a slot is always
    /// released when its replica stops, each election is named after its Lease, and time is the real clock's.
    pub election: LeaderElectionConfig,
}

impl ShardingConfig {
    /// Slots Leases in `lease_namespace`, held as `identity`; everything else default.
    pub fn new(lease_namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        ShardingConfig {
            slots: DEFAULT_SLOTS,
            field: ShardField::Uid,
            lease_namespace: lease_namespace.into(),
            identity: identity.into(),
            name: None,
            election: LeaderElectionConfig::default(),
        }
    }

    /// Slots Leases in `lease_namespace`, held as the host name (a pod's name) plus 16 random hex digits: unique
    /// per process, as the manager's leader election identity.
    pub fn with_default_identity(lease_namespace: impl Into<String>) -> Self {
        ShardingConfig::new(lease_namespace, crate::leaderelection::default_identity())
    }

    /// Sets [`slots`](Self::slots).
    #[must_use]
    pub fn slots(mut self, slots: u32) -> Self {
        self.slots = slots;
        self
    }

    /// Sets [`field`](Self::field).
    #[must_use]
    pub fn field(mut self, field: ShardField) -> Self {
        self.field = field;
        self
    }

    /// Sets [`name`](Self::name).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets [`election`](Self::election).
    #[must_use]
    pub fn election(mut self, election: LeaderElectionConfig) -> Self {
        self.election = election;
        self
    }

    /// Checks the settings: slots within 1..=[`MAX_SLOTS`], an identity and a namespace, the election's
    /// constraints.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming what is wrong.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidInput(format!("sharding: {m}")));
        if !(1..=MAX_SLOTS).contains(&self.slots) {
            return bad(format!("slots must be between 1 and {MAX_SLOTS}, not {}", self.slots));
        }
        if self.identity.is_empty() {
            return bad("the identity is empty".into());
        }
        if self.lease_namespace.is_empty() {
            return bad("the lease namespace is empty".into());
        }
        self.election.validate()
    }
}

/// A snapshot of a sharded controller's ownership, from
/// [`Controller::sharding_metrics`](super::Controller::sharding_metrics).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardingMetrics {
    /// This replica's identity.
    pub identity: String,
    /// The slot count.
    pub slots: u32,
    /// The slots this replica owns now (their keys are reconciled here), sorted.
    pub owned: Vec<u32>,
    /// The replicas seen alive at the last balancing round (this one included).
    pub members: usize,
    /// Slots acquired, over the controller's life.
    pub acquired: u64,
    /// Slots released to balance the load (after their keys were finished).
    pub rebalanced: u64,
    /// Slots lost without a release (a renewal failed past the renew deadline).
    pub lost: u64,
    /// Slots this replica gave up (stopping, or to balance) whose Lease it could not release within the stop
    /// budget (the server too slow or unreachable): each expires on its own, so its next owner takes it a lease
    /// duration later instead of at once.
    pub unreleased: u64,
    /// The outage of the last hand-over of a slot to this replica: from the previous owner's last renewal of the
    /// slot's Lease that this replica observed, to the first reconcile of one of the slot's keys here — what users
    /// saw. After a replica dies, about the lease duration (give or take a retry period); after a graceful release,
    /// a fraction of a second. Slots never held before, and slots without objects, report none.
    pub last_handover: Option<Duration>,
    /// The same for each slot owned now whose hand-over was measured, by slot.
    pub handovers: BTreeMap<u32, Duration>,
    /// Keys not reconciled here because their object's slot was not owned (another replica's key, or a slot being
    /// handed over).
    pub skipped: u64,
    /// The objects of the primary cache per owned slot.
    pub objects_per_slot: BTreeMap<u32, usize>,
    /// The objects of the primary cache, all slots together (those of slots being given up included).
    pub cached_objects: usize,
}
