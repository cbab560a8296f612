//! Prometheus exposition (feature `metrics`): every figure the crate keeps, in the Prometheus text format, named
//! and labelled as client-go and controller-runtime name theirs so that existing dashboards and alerts work.
//!
//! The figures come from a [`Registry`] (the components you added to it) at each scrape: nothing is counted twice,
//! nothing runs between scrapes. The encoding is [`prometheus-client`](https://docs.rs/prometheus-client)'s (the
//! official Rust client), so the output follows the exposition format to the letter; [`Collector`] plugs the same
//! figures into a `prometheus_client` registry of your own, next to your metrics.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `workqueue_depth` | gauge | `name` | keys waiting in a controller's queue |
//! | `workqueue_adds_total` | counter | `name` | adds that queued a key |
//! | `workqueue_queue_duration_seconds` | histogram | `name` | add → picked up by a worker |
//! | `workqueue_work_duration_seconds` | histogram | `name` | picked up → done |
//! | `workqueue_retries_total` | counter | `name` | delayed re-adds (rate-limited retries, requeue-after) |
//! | `workqueue_unfinished_work_seconds` | gauge | `name` | summed age of the reconciles in flight |
//! | `workqueue_longest_running_processor_seconds` | gauge | `name` | age of the oldest reconcile in flight |
//! | `controller_runtime_reconcile_total` | counter | `controller`, `result` (`success`, `error`, `ownership_lost`) | reconciles finished |
//! | `controller_runtime_reconcile_errors_total` | counter | `controller` | reconciles that failed (panics included) |
//! | `controller_runtime_reconcile_panics_total` | counter | `controller` | reconciles that panicked |
//! | `controller_runtime_active_workers` | gauge | `controller` | reconciles running now |
//! | `rest_client_requests_total` | counter | `code`, `method`, `host` | requests by answer (`<error>`: none came) |
//! | `rest_client_request_duration_seconds` | histogram | `verb`, `host` | time to the response headers |
//! | `rest_client_rate_limiter_duration_seconds` | histogram | `verb`, `host` | time waited for the client-side rate limit |
//! | `leader_election_master_status` | gauge | `name` | 1 while this replica leads |
//! | `kube_informer_leader_election_last_handover_seconds` | gauge | `name` | outage of the last hand-over to this replica: the previous leader's last renewal seen → the first reconcile under this term |
//! | `kube_informer_leader_election_handovers_total` | counter | `name` | hand-overs to this replica measured |
//! | `reflector_lists_total` | counter | `name` | lists started (client-go's name) |
//! | `reflector_watches_total` | counter | `name` | watches opened (client-go's name) |
//! | `reflector_last_resource_version` | gauge | `name` | resource version last seen, when numeric (client-go's name) |
//! | `kube_informer_reflector_relists_total` | counter | `name`, `reason` (`gone`, `expired_continue`, `error`) | relists by cause |
//! | `kube_informer_reflector_watch_restarts_total` | counter | `name` | watches re-opened without a relist |
//! | `kube_informer_reflector_watch_events_total` | counter | `name` | watch events received, bookmarks included |
//! | `kube_informer_reflector_streaming_list_fallbacks_total` | counter | `name` | streaming lists replaced by list + watch |
//! | `kube_informer_reflector_shard_server_filtered` | gauge | `name` | sharded informers: 1 when the server filtered the last list by `shardSelector`, 0 when the informer filters itself |
//! | `kube_informer_reflector_shard_client_filtered_total` | counter | `name` | objects of other shards dropped before the cache |
//! | `kube_informer_reflector_watch_age_seconds` | gauge | `name` | how long the current watch has been open |
//! | `kube_informer_informer_last_event_age_seconds` | gauge | `name` | time since the last watch event or bookmark |
//! | `kube_informer_informer_last_list_age_seconds` | gauge | `name` | time since the last successful list |
//! | `kube_informer_informer_synced` | gauge | `name` | 1 once the cache synced (`has_synced`) |
//! | `kube_informer_informer_store_objects` | gauge | `name` | objects in the cache |
//! | `kube_informer_informer_fifo_depth` | gauge | `name` | items waiting in the informer's queue (changes of a RealFIFO, objects of a DeltaFIFO) |
//! | `kube_informer_handler_pending` | gauge | `name`, `handler` | events waiting for a handler (its lag) |
//! | `kube_informer_handler_max_pending` | gauge | `name`, `handler` | most events ever waiting for it |
//! | `kube_informer_handler_delivered_total` | counter | `name`, `handler` | events handled |
//! | `kube_informer_handler_panics_total` | counter | `name`, `handler` | handler calls that panicked |
//! | `kube_informer_handler_coalesced_total` | counter | `name`, `handler` | events merged by a coalescing queue |
//! | `kube_informer_controller_filtered_total` | counter | `controller` | informer events a predicate kept from queueing a key |
//! | `kube_informer_controller_ownership_lost_total` | counter | `controller` | reconciles that failed with their Lease term over (the key went to the next owner) |
//! | `kube_informer_controller_fenced_writes_total` | counter | `controller` | writes refused, or aborted in flight, because their Lease term was over |
//! | `kube_informer_shard_slots` | gauge | `controller` | a sharded controller's slot count |
//! | `kube_informer_shard_slots_owned` | gauge | `controller` | slots this replica owns |
//! | `kube_informer_shard_members` | gauge | `controller` | replicas seen alive |
//! | `kube_informer_shard_acquired_total` | counter | `controller` | slots acquired |
//! | `kube_informer_shard_rebalanced_total` | counter | `controller` | slots released to balance the replicas |
//! | `kube_informer_shard_lost_total` | counter | `controller` | slots lost: their Lease could not be renewed |
//! | `kube_informer_shard_unreleased_total` | counter | `controller` | slots given up whose Lease could not be released in time: they expire on their own |
//! | `kube_informer_shard_skipped_keys_total` | counter | `controller` | keys not reconciled here: another replica's slot |
//! | `kube_informer_shard_last_handover_seconds` | gauge | `controller` | outage of the last slot hand-over here: the previous owner's last renewal seen → the first reconcile of the slot here |
//! | `kube_informer_shard_handover_seconds` | gauge | `controller`, `slot` | the same, per owned slot |
//! | `kube_informer_shard_objects` | gauge | `controller`, `slot` | objects of the primary cache per owned slot |
//! | `kube_informer_shard_cached_objects` | gauge | `controller` | objects of the primary cache, every slot together |
//! | `kube_informer_events_total` | counter | `component`, `result` (`created`, `patched`, `dropped`, `failed`) | Events recorded |
//! | `kube_informer_events_retries_total` | counter | `component` | Event writes retried |
//! | `kube_informer_events_queued` | gauge | `component` | Events waiting to be written |
//! | `kube_informer_health` | gauge | `check`, `state` (`healthy`, `degraded`, `halted`) | 1 for each check's current state |
//!
//! client-go's reflector metrics were removed from it (Kubernetes 1.23); the three whose meaning ours share keep
//! their old names, the others are this crate's own, under `kube_informer_`.
//!
//! ```
//! use kube_informer::health::Health;
//! use kube_informer::registry::Registry;
//!
//! let registry = Registry::new();
//! registry.add_check("disk", || Health::Healthy);
//! let text = kube_informer::metrics::encode(&registry);
//! assert!(text.contains(r#"kube_informer_health{check="disk",state="healthy"} 1"#));
//! ```

mod families;

use prometheus_client::encoding::DescriptorEncoder;

use crate::registry::Registry;

/// The `Content-Type` of [`encode`]'s output: the Prometheus text format, version 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every metric of the registry's components now, in the Prometheus text format ([`CONTENT_TYPE`]).
pub fn encode(registry: &Registry) -> String {
    let mut prometheus = prometheus_client::registry::Registry::default();
    prometheus.register_collector(Box::new(Collector::new(registry.clone())));
    let mut out = String::new();
    // Writing to a String cannot fail, and the collector fails only when its writer does.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &prometheus);
    out
}

/// The metrics of a [`Registry`] as a `prometheus_client` collector, to serve them from a `prometheus_client`
/// registry of your own (with `register_collector`) beside your metrics.
///
/// ```
/// use kube_informer::registry::Registry;
/// use kube_informer::metrics::Collector;
///
/// let mut mine = prometheus_client::registry::Registry::default();
/// mine.register_collector(Box::new(Collector::new(Registry::new())));
/// ```
#[derive(Debug)]
pub struct Collector {
    registry: Registry,
}

impl Collector {
    /// A collector of `registry`'s components (shared with it: components added later are collected too).
    pub fn new(registry: Registry) -> Collector {
        Collector { registry }
    }
}

impl prometheus_client::collector::Collector for Collector {
    fn encode(&self, encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        families::Families::of(&self.registry.observe()).encode(encoder)
    }
}
