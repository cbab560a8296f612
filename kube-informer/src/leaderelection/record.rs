//! The election record, and the `coordination.k8s.io/v1` Lease that stores it.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::object::ObjectMeta;
use crate::object::time::{format_rfc3339_micros, parse_rfc3339};

/// Who holds a lock and until when, as client-go's `LeaderElectionRecord` (what a Lease's spec says).
///
/// Timestamps are written for people and other tools: the election itself never compares them with a clock (see
/// the [module docs](super)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// The leader's identity; empty when nobody holds the lock (never acquired, or released).
    pub holder_identity: String,
    /// How long the holder's lease lasts after its last renewal, in whole seconds.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lock.
    pub acquire_time: Option<SystemTime>,
    /// When the current holder last renewed the lock.
    pub renew_time: Option<SystemTime>,
    /// How many times the lock changed hands.
    pub leader_transitions: i32,
}

impl LeaderElectionRecord {
    /// The lease duration as a `Duration` (0 when negative).
    pub fn lease_duration(&self) -> Duration {
        Duration::from_secs(u64::try_from(self.lease_duration_seconds).unwrap_or(0))
    }
}

/// A `coordination.k8s.io/v1` Lease: the lock object of leader election (and of node heartbeats).
///
/// ```
/// use kube_informer::leaderelection::Lease;
/// use kube_informer::object::{ObjectMeta, Resource};
///
/// let lease = Lease::new(ObjectMeta::namespaced("kube-system", "my-controller"));
/// assert_eq!(Lease::api_resource().api_version(), "coordination.k8s.io/v1");
/// let json = serde_json::to_value(&lease).unwrap();
/// assert_eq!(json["kind"], "Lease");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// `apiVersion`: `coordination.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `kind`: `Lease`.
    #[serde(default)]
    pub kind: String,
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The lease's state.
    #[serde(default)]
    pub spec: LeaseSpec,
}

crate::object!(Lease, group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases", namespaced: true);

impl Lease {
    /// A Lease with this metadata and an empty spec.
    pub fn new(metadata: ObjectMeta) -> Lease {
        Lease {
            api_version: "coordination.k8s.io/v1".into(),
            kind: "Lease".into(),
            metadata,
            spec: LeaseSpec::default(),
        }
    }
}

/// The spec of a [`Lease`]. Fields this crate does not know are kept in `extra`, so a lease read and written back
/// loses nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseSpec {
    /// The holder's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_identity: Option<String>,
    /// How long, after `renewTime`, candidates must wait before taking the lease over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration_seconds: Option<i32>,
    /// When the current holder acquired it (MicroTime, RFC 3339 with microseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<String>,
    /// When the holder last renewed it (MicroTime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<String>,
    /// How many times the lease changed holders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_transitions: Option<i32>,
    /// Other fields (`strategy`, `preferredHolder`...), verbatim.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl LeaseSpec {
    /// The election record this spec holds (client-go's `LeaseSpecToLeaderElectionRecord`); unparsable times read
    /// as absent.
    pub fn to_record(&self) -> LeaderElectionRecord {
        LeaderElectionRecord {
            holder_identity: self.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: self.lease_duration_seconds.unwrap_or(0),
            acquire_time: self.acquire_time.as_deref().and_then(parse_rfc3339),
            renew_time: self.renew_time.as_deref().and_then(parse_rfc3339),
            leader_transitions: self.lease_transitions.unwrap_or(0),
        }
    }

    /// Writes `record` into this spec (client-go's `LeaderElectionRecordToLeaseSpec`), keeping unknown fields.
    pub fn set_record(&mut self, record: &LeaderElectionRecord) {
        self.holder_identity = Some(record.holder_identity.clone());
        self.lease_duration_seconds = Some(record.lease_duration_seconds);
        self.acquire_time = record.acquire_time.map(format_rfc3339_micros);
        self.renew_time = record.renew_time.map(format_rfc3339_micros);
        self.lease_transitions = Some(record.leader_transitions);
    }
}

/// `t` truncated to whole microseconds, the precision a MicroTime keeps: a record written and read back compares
/// equal.
pub(crate) fn micro_time(t: SystemTime) -> SystemTime {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH + Duration::from_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_through_a_lease_spec() {
        let now = micro_time(SystemTime::now());
        let record = LeaderElectionRecord {
            holder_identity: "foo".into(),
            lease_duration_seconds: 10,
            acquire_time: Some(now),
            renew_time: Some(now + Duration::from_micros(5)),
            leader_transitions: 1,
        };
        let mut spec = LeaseSpec::default();
        spec.set_record(&record);
        assert_eq!(spec.to_record(), record);
        let json = serde_json::to_string(&spec).unwrap();
        let back: LeaseSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, spec);
        assert_eq!(back.to_record(), record);
    }

    #[test]
    fn an_empty_spec_is_an_unheld_record_and_unknown_fields_survive() {
        let lease: Lease = serde_json::from_str(
            r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},
                "spec":{"strategy":"OldestEmulationVersion","preferredHolder":"x"}}"#,
        )
        .unwrap();
        assert_eq!(lease.spec.to_record(), LeaderElectionRecord::default());
        let mut spec = lease.spec.clone();
        spec.set_record(&LeaderElectionRecord {
            holder_identity: "me".into(),
            ..Default::default()
        });
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(json["strategy"], "OldestEmulationVersion");
        assert_eq!(json["preferredHolder"], "x");
        assert_eq!(json["holderIdentity"], "me");
        assert_eq!(json["leaseTransitions"], 0);
    }

    #[test]
    fn micro_time_truncates_to_microseconds() {
        let t = UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
        assert_eq!(
            micro_time(t),
            UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_000)
        );
    }
}
