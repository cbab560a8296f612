//! `Families`: the observations of a registry grouped into metric families (one name, help and type, every labelled
//! series of it), in a fixed order, then written with `prometheus_client`'s encoder.

use std::collections::HashMap;
use std::time::Duration;

use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::registry::Unit;

use crate::client::{LatencyHistogram, RequestMetrics};
use crate::controller::{ControllerMetrics, ShardingMetrics};
use crate::events::RecorderMetrics;
use crate::health::{Health, InformerHealth};
use crate::informer::InformerMetrics;
use crate::registry::{Check, Observation, Observed};
use crate::workqueue::Histogram;

/// A sample's labels, in order.
type Labels = Vec<(&'static str, String)>;

/// One sample's value.
enum Value {
    Counter(u64),
    Gauge(f64),
    /// Per-bucket counts (not cumulative) with their upper bounds in seconds; the encoder adds `+Inf`.
    Histogram {
        sum: f64,
        count: u64,
        buckets: Vec<(f64, u64)>,
    },
}

/// A metric family: its descriptor and its samples.
struct Family {
    /// The name without the unit and `_total` suffixes (the encoder adds them).
    name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    kind: MetricType,
    samples: Vec<(Labels, Value)>,
}

/// Every family, in the order first declared.
pub(super) struct Families {
    families: Vec<Family>,
    index: HashMap<&'static str, usize>,
}

impl Families {
    fn new() -> Families {
        Families {
            families: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// The families of what `observations` say.
    pub(super) fn of(observations: &[Observation]) -> Families {
        let mut f = Families::new();
        for o in observations {
            match &o.what {
                Observed::Informer { health, metrics } => f.informer(health, metrics),
                Observed::Client(requests) => f.client(requests),
                Observed::Controller { metrics, sharding, .. } => {
                    f.controller(metrics);
                    if let Some(sharding) = sharding {
                        f.sharding(&metrics.name, sharding);
                    }
                }
                Observed::LeaderElector {
                    name,
                    leading,
                    last_handover,
                    handovers,
                    ..
                } => {
                    let name = || vec![("name", name.clone())];
                    f.gauge(
                        "leader_election_master_status",
                        "1 while this replica holds the leader election lock, 0 otherwise.",
                        None,
                        name(),
                        f64::from(u8::from(*leading)),
                    );
                    f.counter(
                        "kube_informer_leader_election_handovers",
                        "Hand-overs of the lock to this replica whose outage was measured.",
                        name(),
                        *handovers,
                    );
                    if let Some(outage) = last_handover {
                        f.gauge(
                            "kube_informer_leader_election_last_handover",
                            "The outage of the last hand-over to this replica: from the previous holder's last \
                             renewal observed here to the first work under this replica's term.",
                            Some(Unit::Seconds),
                            name(),
                            outage.as_secs_f64(),
                        );
                    }
                }
                Observed::EventRecorder { component, metrics, .. } => f.recorder(component, metrics),
                Observed::Check { .. } => {}
            }
            if let Some(check) = Check::of(&o.what) {
                f.health(&check.name, &check.health);
            }
        }
        f
    }

    fn family(&mut self, name: &'static str, help: &'static str, unit: Option<Unit>, kind: MetricType) -> &mut Family {
        let i = *self.index.entry(name).or_insert_with(|| {
            self.families.push(Family {
                name,
                help,
                unit,
                kind,
                samples: Vec::new(),
            });
            self.families.len() - 1
        });
        &mut self.families[i]
    }

    fn counter(&mut self, name: &'static str, help: &'static str, labels: Labels, value: u64) {
        self.family(name, help, None, MetricType::Counter)
            .samples
            .push((labels, Value::Counter(value)));
    }

    fn gauge(&mut self, name: &'static str, help: &'static str, unit: Option<Unit>, labels: Labels, value: f64) {
        self.family(name, help, unit, MetricType::Gauge)
            .samples
            .push((labels, Value::Gauge(value)));
    }

    fn histogram(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: Labels,
        (sum, count, buckets): (Duration, u64, Vec<(f64, u64)>),
    ) {
        let value = Value::Histogram {
            sum: sum.as_secs_f64(),
            count,
            buckets,
        };
        self.family(name, help, Some(Unit::Seconds), MetricType::Histogram)
            .samples
            .push((labels, value));
    }

    fn informer(&mut self, health: &InformerHealth, m: &InformerMetrics) {
        let name = || vec![("name", health.name.clone())];
        let r = &m.reflector;
        self.counter(
            "reflector_lists",
            "Lists (and streaming lists) started by a reflector.",
            name(),
            r.lists,
        );
        self.counter("reflector_watches", "Watches opened by a reflector.", name(), r.watches);
        if let Ok(rv) = r.last_sync_resource_version.parse::<u64>() {
            self.gauge(
                "reflector_last_resource_version",
                "The resource version a reflector last saw.",
                None,
                name(),
                rv as f64,
            );
        }
        for (reason, n) in [
            ("gone", r.relists_gone),
            ("expired_continue", r.relists_expired_continue),
            ("error", r.relists_after_error),
        ] {
            let mut labels = name();
            labels.push(("reason", reason.to_owned()));
            self.counter(
                "kube_informer_reflector_relists",
                "Relists by cause: 410 Gone, an expired continue token, any other error.",
                labels,
                n,
            );
        }
        self.counter(
            "kube_informer_reflector_watch_restarts",
            "Watches that ended and were re-opened without a relist.",
            name(),
            r.watch_restarts,
        );
        self.counter(
            "kube_informer_reflector_watch_events",
            "Watch events received, bookmarks included.",
            name(),
            r.watch_events,
        );
        self.counter(
            "kube_informer_reflector_streaming_list_fallbacks",
            "Rounds where a streaming list failed and a list then watch took its place.",
            name(),
            r.streaming_list_fallbacks,
        );
        if let Some(server_side) = r.shard_server_side {
            self.gauge(
                "kube_informer_reflector_shard_server_filtered",
                "For a sharded informer: 1 when the API server filtered its last list by shardSelector, 0 when the \
                 informer filters its shard itself.",
                None,
                name(),
                if server_side { 1.0 } else { 0.0 },
            );
        }
        self.counter(
            "kube_informer_reflector_shard_client_filtered",
            "Objects of other shards the API server sent and the informer dropped before its cache.",
            name(),
            r.shard_filtered_client_side,
        );
        if let Some(age) = r.watch_age {
            self.gauge(
                "kube_informer_reflector_watch_age",
                "How long the current watch has been open.",
                Some(Unit::Seconds),
                name(),
                age.as_secs_f64(),
            );
        }
        if let Some(age) = health.last_event_age {
            self.gauge(
                "kube_informer_informer_last_event_age",
                "Time since the last watch event or bookmark arrived.",
                Some(Unit::Seconds),
                name(),
                age.as_secs_f64(),
            );
        }
        if let Some(age) = health.last_list_age {
            self.gauge(
                "kube_informer_informer_last_list_age",
                "Time since the last successful list.",
                Some(Unit::Seconds),
                name(),
                age.as_secs_f64(),
            );
        }
        self.gauge(
            "kube_informer_informer_synced",
            "1 once the informer's cache has synced.",
            None,
            name(),
            f64::from(u8::from(m.synced)),
        );
        self.gauge(
            "kube_informer_informer_store_objects",
            "Objects in the informer's cache.",
            None,
            name(),
            m.store_size as f64,
        );
        self.gauge(
            "kube_informer_informer_fifo_depth",
            "Items waiting in the informer's queue: changes (RealFIFO) or objects (DeltaFIFO).",
            None,
            name(),
            m.fifo_depth as f64,
        );
        for h in &m.handlers {
            let labels = || vec![("name", health.name.clone()), ("handler", h.name.clone())];
            self.gauge(
                "kube_informer_handler_pending",
                "Events waiting for a handler (its lag).",
                None,
                labels(),
                h.pending as f64,
            );
            self.gauge(
                "kube_informer_handler_max_pending",
                "Most events ever waiting for a handler at once.",
                None,
                labels(),
                h.max_pending as f64,
            );
            self.counter(
                "kube_informer_handler_delivered",
                "Events a handler handled.",
                labels(),
                h.delivered,
            );
            self.counter(
                "kube_informer_handler_panics",
                "Handler calls that panicked.",
                labels(),
                h.panics,
            );
            self.counter(
                "kube_informer_handler_coalesced",
                "Events merged away by a handler's coalescing queue.",
                labels(),
                h.coalesced,
            );
        }
    }

    fn client(&mut self, m: &RequestMetrics) {
        for r in &m.requests {
            self.counter(
                "rest_client_requests",
                "Requests to the API server, by status code, method and host.",
                vec![
                    ("code", r.code.clone()),
                    ("method", r.method.to_owned()),
                    ("host", m.host.clone()),
                ],
                r.count,
            );
        }
        for l in &m.latency {
            self.histogram(
                "rest_client_request_duration",
                "Request latency to the response headers, by verb and host.",
                vec![("verb", l.verb.to_owned()), ("host", m.host.clone())],
                rest_buckets(&l.histogram),
            );
        }
        for l in &m.rate_limiter_latency {
            self.histogram(
                "rest_client_rate_limiter_duration",
                "Time waited for the client-side rate limiter, by verb and host.",
                vec![("verb", l.verb.to_owned()), ("host", m.host.clone())],
                rest_buckets(&l.histogram),
            );
        }
    }

    fn sharding(&mut self, name: &str, m: &ShardingMetrics) {
        let controller = || vec![("controller", name.to_owned())];
        self.gauge(
            "kube_informer_shard_slots_owned",
            "Slots this replica of a sharded controller owns.",
            None,
            controller(),
            m.owned.len() as f64,
        );
        self.gauge(
            "kube_informer_shard_slots",
            "Slots a sharded controller's objects are cut into.",
            None,
            controller(),
            f64::from(m.slots),
        );
        self.gauge(
            "kube_informer_shard_members",
            "Replicas of a sharded controller seen alive.",
            None,
            controller(),
            m.members as f64,
        );
        for (name, help, value) in [
            ("kube_informer_shard_acquired", "Slots acquired.", m.acquired),
            (
                "kube_informer_shard_rebalanced",
                "Slots released to balance the replicas.",
                m.rebalanced,
            ),
            (
                "kube_informer_shard_lost",
                "Slots lost: their Lease could not be renewed.",
                m.lost,
            ),
            (
                "kube_informer_shard_unreleased",
                "Slots given up whose Lease could not be released in time: they expire on their own.",
                m.unreleased,
            ),
            (
                "kube_informer_shard_skipped_keys",
                "Keys not reconciled here: their slot was not owned.",
                m.skipped,
            ),
        ] {
            self.counter(name, help, controller(), value);
        }
        if let Some(handover) = m.last_handover {
            self.gauge(
                "kube_informer_shard_last_handover",
                "The outage of the last slot hand-over here: from the previous owner's last renewal observed here to \
                 the first reconcile of the slot's keys here.",
                Some(Unit::Seconds),
                controller(),
                handover.as_secs_f64(),
            );
        }
        for (slot, outage) in &m.handovers {
            let mut labels = controller();
            labels.push(("slot", slot.to_string()));
            self.gauge(
                "kube_informer_shard_handover",
                "The outage of each owned slot's hand-over here, as kube_informer_shard_last_handover_seconds.",
                Some(Unit::Seconds),
                labels,
                outage.as_secs_f64(),
            );
        }
        self.gauge(
            "kube_informer_shard_cached_objects",
            "Objects of the primary cache, every slot together.",
            None,
            controller(),
            m.cached_objects as f64,
        );
        for (slot, objects) in &m.objects_per_slot {
            let mut labels = controller();
            labels.push(("slot", slot.to_string()));
            self.gauge(
                "kube_informer_shard_objects",
                "Objects of the primary cache per owned slot.",
                None,
                labels,
                *objects as f64,
            );
        }
    }

    fn controller(&mut self, m: &ControllerMetrics) {
        let controller = || vec![("controller", m.name.clone())];
        let failed = m.errors.saturating_add(m.panics);
        let succeeded = m.reconciles.saturating_sub(failed).saturating_sub(m.ownership_lost);
        for (result, n) in [
            ("success", succeeded),
            ("error", failed),
            ("ownership_lost", m.ownership_lost),
        ] {
            let mut labels = controller();
            labels.push(("result", result.to_owned()));
            self.counter(
                "controller_runtime_reconcile",
                "Reconciles finished, by result.",
                labels,
                n,
            );
        }
        self.counter(
            "controller_runtime_reconcile_errors",
            "Reconciles that returned an error or panicked.",
            controller(),
            failed,
        );
        self.counter(
            "controller_runtime_reconcile_panics",
            "Reconciles that panicked.",
            controller(),
            m.panics,
        );
        self.counter(
            "kube_informer_controller_filtered",
            "Informer events a predicate kept from queueing a key.",
            controller(),
            m.filtered,
        );
        self.counter(
            "kube_informer_controller_ownership_lost",
            "Reconciles that failed because the Lease term they worked under was over (not counted as errors).",
            controller(),
            m.ownership_lost,
        );
        self.counter(
            "kube_informer_controller_fenced_writes",
            "Writes of reconciles refused, or aborted in flight, because their Lease term was over.",
            controller(),
            m.fenced_writes,
        );
        self.gauge(
            "controller_runtime_active_workers",
            "Reconciles running now.",
            None,
            controller(),
            m.in_flight as f64,
        );
        let Some(q) = &m.queue else { return };
        let name = || vec![("name", m.name.clone())];
        self.gauge(
            "workqueue_depth",
            "Keys waiting in the work queue.",
            None,
            name(),
            q.depth as f64,
        );
        self.counter("workqueue_adds", "Adds handled by the work queue.", name(), q.adds);
        self.histogram(
            "workqueue_queue_duration",
            "How long a key stays in the work queue before a worker picks it up.",
            name(),
            queue_buckets(&q.queue_latency),
        );
        self.histogram(
            "workqueue_work_duration",
            "How long processing a key takes.",
            name(),
            queue_buckets(&q.work_duration),
        );
        self.counter(
            "workqueue_retries",
            "Retries handled by the work queue.",
            name(),
            q.retries,
        );
        self.gauge(
            "workqueue_unfinished_work",
            "Summed age of the keys being processed: work not yet observed in workqueue_work_duration_seconds.",
            Some(Unit::Seconds),
            name(),
            q.unfinished_work.as_secs_f64(),
        );
        self.gauge(
            "workqueue_longest_running_processor",
            "How long the longest-running key in flight has been processing.",
            Some(Unit::Seconds),
            name(),
            q.longest_running_processor.as_secs_f64(),
        );
    }

    fn recorder(&mut self, component: &str, m: &RecorderMetrics) {
        let labels = || vec![("component", component.to_owned())];
        for (result, n) in [
            ("created", m.created),
            ("patched", m.patched),
            ("dropped", m.dropped),
            ("failed", m.failed),
        ] {
            let mut l = labels();
            l.push(("result", result.to_owned()));
            self.counter(
                "kube_informer_events",
                "Events recorded, by result: created, patched (a repeat), dropped (queue full), failed.",
                l,
                n,
            );
        }
        self.counter(
            "kube_informer_events_retries",
            "Event writes retried.",
            labels(),
            m.retries,
        );
        self.gauge(
            "kube_informer_events_queued",
            "Events waiting to be written.",
            None,
            labels(),
            m.queued as f64,
        );
    }

    fn health(&mut self, check: &str, health: &Health) {
        for state in ["healthy", "degraded", "halted"] {
            self.gauge(
                "kube_informer_health",
                "1 for the current state of each health check (informer, controller, leader election, events, yours).",
                None,
                vec![("check", check.to_owned()), ("state", state.to_owned())],
                f64::from(u8::from(health.state() == state)),
            );
        }
    }

    /// Writes every family that has samples.
    pub(super) fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        for family in self.families.iter().filter(|f| !f.samples.is_empty()) {
            let mut metric = encoder.encode_descriptor(family.name, family.help, family.unit.as_ref(), family.kind)?;
            for (labels, value) in &family.samples {
                let sample = metric.encode_family(labels)?;
                write_value(sample, value)?;
            }
        }
        Ok(())
    }
}

fn write_value(mut sample: MetricEncoder<'_>, value: &Value) -> Result<(), std::fmt::Error> {
    match value {
        Value::Counter(n) => sample.encode_counter::<NoLabelSet, u64, u64>(n, None),
        Value::Gauge(v) => sample.encode_gauge(v),
        Value::Histogram { sum, count, buckets } => sample.encode_histogram::<NoLabelSet>(
            *sum,
            *count,
            buckets,
            None::<&HashMap<usize, Exemplar<NoLabelSet, f64>>>,
        ),
    }
}

/// The buckets of a work-queue histogram (the overflow bucket is `+Inf`'s, which the encoder adds).
fn queue_buckets(h: &Histogram) -> (Duration, u64, Vec<(f64, u64)>) {
    let buckets = Histogram::BOUNDS
        .iter()
        .zip(h.buckets)
        .map(|(bound, n)| (bound.as_secs_f64(), n))
        .collect();
    (h.sum, h.count, buckets)
}

/// The buckets of a request-latency histogram.
fn rest_buckets(h: &LatencyHistogram) -> (Duration, u64, Vec<(f64, u64)>) {
    let buckets = LatencyHistogram::BOUNDS
        .iter()
        .zip(h.buckets)
        .map(|(bound, n)| (bound.as_secs_f64(), n))
        .collect();
    (h.sum, h.count, buckets)
}
