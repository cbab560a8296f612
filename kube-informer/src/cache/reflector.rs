//! The Reflector: ListAndWatch into the informer's queue, a RealFIFO or a DeltaFIFO (client-go's `Reflector`),
//! written as a state machine.
//!
//! ```text
//!            ┌──────────── list ok ───────────┐
//!   List ────┤                                 v
//!     ^  ^   └─ streaming list ok ──> Watching <──── watch opened ──── Watch <──┐
//!     │  │                            │  │  │                            ^      │
//!     │  └───── 410 / expired ────────┘  │  └── clean close ─────────────┘      │
//!     │                                  └── 429 / 5xx / refused / idle ──> BackingOff ─┘
//!     └──────── other list/watch errors (after back-off) ─────────────────────┘
//! ```
//!
//! Semantics kept from client-go (see the crate's DESIGN notes):
//! * The first list asks `resourceVersion=0` (served from the watch cache, which ignores `limit`); later relists ask
//!   the last synced resourceVersion, unpaged unless the server paginated before; `resourceVersion=""` only after an
//!   "expired" or "too large resource version" answer. An expired continue token falls back to one full list.
//! * When the server offers it, the initial state comes from a *streaming list* (`sendInitialEvents=true`) ending at
//!   the BOOKMARK annotated `k8s.io/initial-events-end`. As in client-go, any error of the streaming list falls back
//!   to LIST then WATCH for that round ("making progress is better than deadlocking": credentials allowed to `list`
//!   but not to `watch` still fill the cache), except a refused connection or a 429, which back off and try the
//!   streaming list again. A server without the feature (400 / 422, or a bookmark without the annotation) is
//!   remembered and listed from then on; client-go asks again each round.
//! * Failures are logged where a person sees them (see [`FailureStreak`]): the first failed attempt of a streak at
//!   `warn!`, then one `warn!` a minute with the attempt count and how long it has lasted, and its end once at
//!   `info!`. A watch that fails before its first event counts as a failed attempt; one that ends after delivering
//!   events with a retriable error (a load balancer cutting it) is a normal restart, logged at `debug!`.
//! * Watches ask for bookmarks and a random timeout of 5–10 minutes. A clean close re-watches from the last
//!   resourceVersion (no relist); bookmarks advance it; 410 relists; 429, 5xx, refused connections and dead (idle)
//!   watches re-watch without relisting.
//! * A watch that delivered events (or bookmarks) and is then cut — its connection reset or closed mid-stream (or
//!   mid-event), a read timing out, silence past the idle limit: a load balancer's idle cut, an API server restart —
//!   re-watches at once, without a back-off step, as a clean close does: client-go's `handleWatch` ends such a watch (a "probable
//!   EOF") without an error, and only errors step its back-off. Otherwise an API server restarted every minute (a
//!   rolling upgrade) would add a step per restart within the back-off's 2-minute reset, and informers would sit out
//!   whole disruptions. The same cut before any event is a failed attempt.
//! * Every failed attempt waits through one back-off, client-go's `ListAndWatch` back-off (800 ms → 30 s, ×2,
//!   jitter up to one more step, reset after 2 minutes without failure; [`BackoffConfig`]), with the server's
//!   `Retry-After` as a floor (at most [`MAX_RETRY_AFTER`](crate::MAX_RETRY_AFTER)): a storm of any kind — 410s on
//!   the watch or the list (a flapping load balancer, a compacting etcd), 429s, refused connections — slows the
//!   loop down exponentially. The first 410 after a healthy period relists at once (after `relist_jitter`).
//!
//! Every list streams straight into the queue ([`ReplaceSession`]): no full list is ever buffered. A relist — the
//! store full of the old versions — reads no further than [`RELIST_AHEAD`] objects ahead of what the processing
//! thread has applied: each object queued is a second version beside the store's until then.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::backoff::{Backoff, BackoffConfig};
use super::list_watch::{EventStream, ListerWatcher};
use super::recycler::{KEEP, Recycler};
pub use super::reflector_metrics::ReflectorMetrics;
pub(crate) use super::reflector_metrics::ReflectorStats;
use super::relist_budget::RelistBudget;
use super::shard_cell::{ShardCell, WatchEnder};
use super::{DeletedObject, Delta, Queue, ReplaceSession, Wake};
use crate::client::params::{ListParams, VersionMatch, WatchParams};
use crate::clock::deadline::deadline_after;
use crate::clock::jitter::{full_jitter, random_between};
use crate::error::{DecodeErrorKind, Error, Result, TransportError, TransportErrorKind};
use crate::failure_streak::{FailureStreak, human_duration};
use crate::object::interner::Interner;
use crate::object::{MetaAccessor, Object};
use crate::selector::ShardSelector;
use crate::stop::StopSignal;
use crate::watch::WatchEvent;

/// A function applied to every object before it is cached (for example: drop `managedFields`).
pub type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// Called with every list or watch error (client-go's `WatchErrorHandler`), from the reflector thread.
pub type WatchErrorHandler = Arc<dyn Fn(&Error) + Send + Sync>;

/// Reflector settings. Defaults are client-go's.
#[derive(Clone, Debug)]
pub struct ReflectorConfig {
    /// LIST page size (client-go: 500).
    pub page_size: u32,
    /// Try a streaming list (`sendInitialEvents`) first; fall back to LIST when the server refuses.
    pub streaming_list: bool,
    /// Watch timeouts are random in `[min_watch_timeout, 2 × min_watch_timeout)` (client-go: 5 min).
    pub min_watch_timeout: Duration,
    /// Back-off after failures.
    pub backoff: BackoffConfig,
    /// The first relist after a 410 in a healthy period waits a random delay up to this, instead of the back-off
    /// (client-go waits its back-off, 0.8–1.6 s then): informers hit by the same compaction spread out instead of
    /// relisting in lockstep. Further 410s in a row back off like any failure.
    pub relist_jitter: Duration,
    /// Limit on concurrent lists shared with other reflectors (herd control); `None`: unlimited.
    pub relist_budget: Option<Arc<RelistBudget>>,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            page_size: 500,
            streaming_list: true,
            min_watch_timeout: Duration::from_secs(300),
            backoff: BackoffConfig::default(),
            relist_jitter: Duration::from_secs(1),
            relist_budget: None,
        }
    }
}

/// Where the reflector is. Each [`Reflector::step`] performs one transition.
enum State<K> {
    /// Next: get the full state (streaming list or paged list).
    List,
    /// Next: open a watch from the last synced resource version.
    Watch,
    /// Reading a watch: one event per step, with those decoded ahead after it.
    Watching {
        stream: EventStream<K>,
        opened: Instant,
        events: u64,
    },
    /// Sleeping until `until` (woken early by stop), then `then`.
    BackingOff { until: Instant, then: Next },
    /// Holding nothing (the shard is [`ShardScope::Nothing`](super::ShardScope::Nothing)): waiting for the shard to
    /// change.
    Idle,
    /// Done: stop was requested.
    Stopped,
}

/// How a watch ended.
enum WatchEnd {
    /// An error: the stream's, or an ERROR event's.
    Failed(Error),
    /// The server closed the stream cleanly.
    Closed,
}

/// A changed shard is listed once it has not changed for this long (or [`SHARD_SETTLE_MAX`] after the change).
const SHARD_QUIET: Duration = Duration::from_millis(100);

/// The longest a list of a changed shard waits for the shard to settle.
const SHARD_SETTLE_MAX: Duration = Duration::from_millis(300);

/// How often a reflector holding nothing checks the stop flag while it waits for its shard to change.
const IDLE_CHECK: Duration = Duration::from_millis(100);

/// A relist waits, once this many of its objects are queued and not yet applied to the store, for the processing
/// thread to bring the queue down to half of it (see [`ReplaceSession::bounded`]): the old and new versions alive
/// at once stay within this many objects (and one popped batch) whatever the threads' scheduling, while a burst
/// decoded from one read (~100 ConfigMaps of 128 KiB) fits several times over.
pub(crate) const RELIST_AHEAD: usize = 1024;

/// Most watch events queued under one lock of the queue (the stream decodes up to 128 ahead; see `WatchStream`).
const BATCH: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    List,
    Watch,
}

impl<K> fmt::Debug for State<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::List => f.write_str("List"),
            State::Watch => f.write_str("Watch"),
            State::Watching { events, .. } => write!(f, "Watching({events} events)"),
            State::BackingOff { then, .. } => write!(f, "BackingOff(then {then:?})"),
            State::Idle => f.write_str("Idle"),
            State::Stopped => f.write_str("Stopped"),
        }
    }
}

/// Why a streaming list did not produce the initial state.
enum StreamingListError {
    /// The server does not offer streaming lists: list from now on.
    Refused(Error),
    /// Anything else: list then watch for this round (or back off, for a refused connection or a 429).
    Failed(Error),
}

/// The request a failure belongs to, as the log names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attempt {
    List,
    StreamingList,
    Watch,
}

impl Attempt {
    /// The RBAC verb the request needs.
    fn verb(self) -> &'static str {
        match self {
            Attempt::List => "list",
            Attempt::StreamingList | Attempt::Watch => "watch",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Attempt::List => "list",
            Attempt::StreamingList => "streaming list (a watch with sendInitialEvents)",
            Attempt::Watch => "watch",
        }
    }
}

/// What to do about an error, when it is one a person must act on.
fn hint(attempt: Attempt, e: &Error) -> Option<String> {
    let verb = attempt.verb();
    if e.is_forbidden() {
        return Some(match attempt {
            Attempt::Watch => "the credentials may list but not watch this resource: grant the RBAC verb \"watch\" \
                               (meanwhile the cache is refreshed by a full list after each back-off)"
                .to_owned(),
            _ => format!("the credentials lack the RBAC verb \"{verb}\" on this resource"),
        });
    }
    if e.is_unauthorized() {
        return Some(
            "the server rejected the credentials: check the kubeconfig user's token, client certificate or exec \
             plugin"
                .to_owned(),
        );
    }
    if e.is_not_found() {
        return Some(
            "the server does not serve this resource: check its group and version, and that its \
             CustomResourceDefinition is installed"
                .to_owned(),
        );
    }
    None
}

/// A refused connection or a 429: the server is down or asks us to slow down, and any request would fare the same
/// (client-go's `isWatchErrorRetriable`).
fn is_transient(e: &Error) -> bool {
    e.is_too_many_requests() || matches!(e, Error::Transport(t) if t.kind == TransportErrorKind::ConnectionRefused)
}

/// The watch's connection went away: reset, or closed mid-stream (inside an event, too), a read timed out, or
/// nothing came for longer than the idle limit (client-go's "probable EOF" — `io.EOF`, `io.ErrUnexpectedEOF`, a
/// reset, a closed connection —, which ends a watch without an error).
fn is_cut(e: &Error) -> bool {
    match e {
        Error::WatchIdle(_) => true,
        Error::Transport(t) => matches!(t.kind, TransportErrorKind::ConnectionLost | TransportErrorKind::Timeout),
        Error::Decode(d) => d.kind == DecodeErrorKind::Truncated,
        _ => false,
    }
}

/// `{request} failed: {error}`, with what to do when there is something to do.
struct Failure<'a> {
    attempt: Attempt,
    error: &'a Error,
}

impl fmt::Display for Failure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.attempt.describe(), self.error)?;
        match hint(self.attempt, self.error) {
            Some(h) => write!(f, " — {h}"),
            None => Ok(()),
        }
    }
}

/// Keeps the informer's queue in step with the server (list, then watch; relist when needed).
pub(crate) struct Reflector<K> {
    name: String,
    lw: Arc<dyn ListerWatcher<K>>,
    fifo: Queue<K>,
    transform: Option<Transform<K>>,
    config: ReflectorConfig,
    state: State<K>,
    stats: Arc<ReflectorStats>,
    /// Set after "expired" / "too large resource version": the next list asks `resourceVersion=""`.
    rv_unavailable: bool,
    /// The server paginated a list before: keep paging relists at a specific resource version.
    paginated_result: bool,
    /// Cleared when the server refuses a streaming list.
    try_streaming: bool,
    /// Failed attempts since the loop was last healthy: what is logged, and how loudly. Every failure of a round
    /// goes through [`Reflector::round_failed`] and every return to health through [`Reflector::healthy`].
    failures: FailureStreak,
    backoff: Backoff,
    stop: Arc<StopSignal>,
    on_error: Option<WatchErrorHandler>,
    /// Objects the cache let go of, freed on this thread between events (see [`Recycler`]); the informer's, or
    /// one nobody retires into.
    recycler: Arc<Recycler<K>>,
    /// Changes of the watch events being read, queued together ([`Queue::push_all`]). Invariant: empty between
    /// steps (the vector is kept for its capacity).
    batch: Vec<Delta<K>>,
    /// The resourceVersion of the last of those events, set just before they are queued. Invariant: empty between
    /// steps.
    batch_rv: String,
    /// The informer's shard, when it has one: fixed, or changing while the reflector runs.
    shard_cell: Option<Arc<ShardCell>>,
    /// Keeps this reflector's registration with `shard_cell` alive: ends the watch being read when the shard
    /// changes.
    _watch_ender: Option<Arc<WatchEnder>>,
    /// The shard of the current list and watch, read from `shard_cell` when the list began: asked of the server as
    /// `shardSelector` and enforced here, before the queue, whatever the server did with it (one without the
    /// `ShardedListAndWatch` gate ignores it).
    shard: Option<ShardSelector>,
    /// The generation of `shard_cell` that `shard` was read at: another one means a relist is due.
    shard_generation: u64,
}

impl<K: Object> Reflector<K> {
    /// A reflector feeding `fifo` from `lw`. `name` appears in logs and thread names.
    pub(crate) fn new(
        name: String,
        lw: Arc<dyn ListerWatcher<K>>,
        fifo: impl Into<Queue<K>>,
        config: ReflectorConfig,
        stop: Arc<StopSignal>,
    ) -> Self {
        Reflector {
            name,
            lw,
            fifo: fifo.into(),
            transform: None,
            try_streaming: config.streaming_list,
            backoff: Backoff::new(config.backoff.clone()),
            config,
            state: State::List,
            stats: Arc::new(ReflectorStats::default()),
            rv_unavailable: false,
            paginated_result: false,
            failures: FailureStreak::default(),
            stop,
            on_error: None,
            recycler: Arc::new(Recycler::new()),
            batch: Vec::new(),
            batch_rv: String::new(),
            shard_cell: None,
            _watch_ender: None,
            shard: None,
            shard_generation: 0,
        }
    }

    pub(crate) fn with_transform(mut self, transform: Option<Transform<K>>) -> Self {
        self.transform = transform;
        self
    }

    /// Shares counters with an owner that outlives the reflector thread.
    pub(crate) fn with_stats(mut self, stats: Arc<ReflectorStats>) -> Self {
        self.stats = stats;
        self
    }

    pub(crate) fn with_error_handler(mut self, handler: Option<WatchErrorHandler>) -> Self {
        self.on_error = handler;
        self
    }

    /// Frees, between watch events, the objects retired into `recycler`.
    pub(crate) fn with_recycler(mut self, recycler: Arc<Recycler<K>>) -> Self {
        self.recycler = recycler;
        self
    }

    /// Runs until stopped. Everything this cache lists and watches is decoded on this thread, through an interner
    /// that lives as long as the thread: the objects share what repeats between them ([`Interner`]).
    pub(crate) fn run(mut self) {
        let _interning = Interner::enter();
        while self.step() {}
        log::debug!("{}: reflector stopped", self.name);
    }

    /// Performs one transition; false once stopped.
    pub(crate) fn step(&mut self) -> bool {
        if self.stop.is_stopped() {
            self.state = State::Stopped;
            return false;
        }
        let state = std::mem::replace(&mut self.state, State::Stopped);
        self.state = match state {
            State::List => self.list(),
            State::Watch => self.open_watch(),
            State::Watching { stream, opened, events } => self.read_watch(stream, opened, events),
            State::BackingOff { until, then } => {
                if self.stop.wait_until(until) {
                    State::Stopped
                } else if then == Next::List {
                    State::List
                } else {
                    State::Watch
                }
            }
            State::Idle => {
                let generation = self.shard_generation;
                let changed = self
                    .shard_cell
                    .as_ref()
                    .is_some_and(|cell| cell.wait_changed(generation, deadline_after(Instant::now(), IDLE_CHECK)));
                if changed { State::List } else { State::Idle }
            }
            State::Stopped => State::Stopped,
        };
        if self.stop.is_stopped() {
            self.state = State::Stopped;
        }
        !matches!(self.state, State::Stopped)
    }

    /// The resource version a relist asks for (client-go's `relistResourceVersion`).
    fn relist_rv(&self) -> String {
        if self.rv_unavailable {
            return String::new();
        }
        let last = self.stats.last_sync_resource_version();
        if last.is_empty() { "0".to_owned() } else { last }
    }

    /// Transforms a decoded object and shares it; first frees what the cache retired beyond what the watch decoder
    /// may decode into (`recycler::KEEP`), so that the next decode reuses that memory.
    fn prepare(&self, mut obj: K) -> Arc<K> {
        self.recycler.trim(KEEP);
        if let Some(t) = &self.transform {
            t(&mut obj);
        }
        Arc::new(obj)
    }

    fn report(&self, err: &Error) {
        if let Some(h) = &self.on_error {
            h(err);
        }
    }

    /// A failed attempt of the list/watch loop: reported to the error handler and logged — at `warn!` for the first
    /// of a streak and then once a minute, at `debug!` in between.
    fn round_failed(&mut self, attempt: Attempt, e: &Error) {
        self.report(e);
        let failure = Failure { attempt, error: e };
        let now = Instant::now();
        let level = self.failures.failed(now, &failure, 1);
        let Some(streak) = self.failures.current() else { return };
        self.stats
            .health
            .failed(streak.since, streak.attempts, &streak.last_error);
        if streak.attempts == 1 {
            log::log!(level, "{}: {failure}; retrying with back-off", self.name);
        } else {
            log::log!(
                level,
                "{}: still failing after {} attempts over {}: {failure}",
                self.name,
                streak.attempts,
                human_duration(streak.lasted(now))
            );
        }
    }

    /// The loop is healthy again (synced by a streaming list, or a watch delivered its first event or ran its
    /// course): ends a streak of failures, telling its end once when it was told at all.
    fn healthy(&mut self) {
        if !self.failures.is_failing() {
            return;
        }
        self.stats.health.recovered();
        let now = Instant::now();
        if let Some(streak) = self.failures.recovered() {
            log::info!(
                "{}: list and watch recovered after {} failed attempts over {}",
                self.name,
                streak.attempts,
                human_duration(streak.lasted(now))
            );
        }
    }

    /// Every failed attempt of the loop ends here, in three steps: what the failure means for the next attempt (a
    /// relist, or only a re-watch), what is counted and logged, and how long to wait — always the one back-off,
    /// client-go's `ListAndWatch` back-off (see [`BackoffConfig`]) with the server's `Retry-After` as a floor, so
    /// that a storm of any kind (410s on the watch or the list, 429s, refused connections, watches closed at once)
    /// slows the loop down exponentially. The one exception is the first 410 after a healthy period (a compaction
    /// while a watch was idle): it relists at once, after at most `relist_jitter`.
    ///
    /// `delivered`: a watch that delivered events before it failed (a normal restart, not counted in the streak).
    /// Such a watch that was cut (see [`is_cut`]) re-watches at once, taking no back-off step.
    fn failed(&mut self, attempt: Attempt, e: &Error, delivered: bool) -> State<K> {
        if self.stop.is_stopped() {
            return State::Stopped;
        }
        if attempt == Attempt::Watch && delivered && is_cut(e) {
            self.stats.watch_restarts.fetch_add(1, Ordering::Relaxed);
            self.report(e);
            log::debug!("{}: watch cut after it delivered events ({e}); re-watching", self.name);
            return State::Watch;
        }
        let now = Instant::now();
        let gone = e.is_expired() || e.is_too_large_resource_version();
        // 1. What comes next.
        let then = match attempt {
            Attempt::List => {
                if gone {
                    self.rv_unavailable = true;
                    self.stats.relists_gone.fetch_add(1, Ordering::Relaxed);
                } else {
                    self.stats.relists_after_error.fetch_add(1, Ordering::Relaxed);
                }
                Next::List
            }
            // Only a refused connection or a 429 (the others fall back to LIST for the round).
            Attempt::StreamingList => Next::List,
            // client-go relists at the last resource version first (a list is "at least as fresh").
            Attempt::Watch if gone => {
                self.stats.relists_gone.fetch_add(1, Ordering::Relaxed);
                Next::List
            }
            Attempt::Watch if e.is_retriable() => {
                self.stats.watch_restarts.fetch_add(1, Ordering::Relaxed);
                Next::Watch
            }
            Attempt::Watch => {
                self.stats.relists_after_error.fetch_add(1, Ordering::Relaxed);
                Next::List
            }
        };
        // 2. Counted and logged: a watch that worked before failing, or the first 410 in a while, is a normal restart.
        let first_gone = gone && attempt == Attempt::Watch && self.backoff.is_fresh(now);
        if delivered || first_gone {
            self.report(e);
            let what = if then == Next::List { "relisting" } else { "re-watching" };
            log::debug!("{}: watch ended ({e}); {what}", self.name);
        } else {
            self.round_failed(attempt, e);
        }
        // 3. How long to wait.
        if first_gone {
            self.backoff.failed_at(now);
            if self.config.relist_jitter.is_zero() {
                return State::List;
            }
            return State::BackingOff {
                until: deadline_after(now, full_jitter(self.config.relist_jitter)),
                then: Next::List,
            };
        }
        let delay = self.backoff.next_delay(now, e.retry_after());
        State::BackingOff {
            until: deadline_after(now, delay),
            then,
        }
    }

    // ---- List ----

    fn list(&mut self) -> State<K> {
        let budget = self.config.relist_budget.clone();
        let _permit = match &budget {
            Some(b) => match b.acquire(&self.stop) {
                Some(p) => Some(p),
                None => return State::Stopped,
            },
            None => None,
        };
        if !self.refresh_shard() {
            return self.hold_nothing();
        }
        self.stats.lists.fetch_add(1, Ordering::Relaxed);
        if self.try_streaming {
            match self.streaming_list() {
                Ok(stream) => {
                    self.healthy();
                    self.stats.watch_opened.set_now();
                    return State::Watching {
                        stream,
                        opened: Instant::now(),
                        events: 0,
                    };
                }
                Err(_) if self.stop.is_stopped() => return State::Stopped,
                Err(_) if self.shard_changed() => return State::List,
                Err(StreamingListError::Refused(e)) => {
                    log::debug!(
                        "{}: the server does not offer streaming lists ({e}); listing from now on",
                        self.name
                    );
                    self.try_streaming = false;
                    self.stats.streaming_list_refused.store(true, Ordering::Relaxed);
                }
                // client-go's watch-list retries these itself after a back-off: the server is down or asks us to
                // slow down, and a LIST would fare no better.
                Err(StreamingListError::Failed(e)) if is_transient(&e) => {
                    return self.failed(Attempt::StreamingList, &e, false);
                }
                Err(StreamingListError::Failed(e)) => {
                    if e.is_expired() || e.is_too_large_resource_version() {
                        self.rv_unavailable = true;
                        self.stats.relists_gone.fetch_add(1, Ordering::Relaxed);
                    }
                    log::debug!(
                        "{}: {}; listing then watching instead for this round",
                        self.name,
                        Failure {
                            attempt: Attempt::StreamingList,
                            error: &e
                        }
                    );
                    self.stats.streaming_list_fallbacks.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        match self.paged_list() {
            Ok(()) => State::Watch,
            Err(e) => self.failed(Attempt::List, &e, false),
        }
    }

    /// LIST, paged, at the relist resource version; on "expired" / "too large", once more at `""`.
    fn paged_list(&mut self) -> Result<()> {
        let rv = self.relist_rv();
        match self.list_at(&rv) {
            Err(e) if (e.is_expired() || e.is_too_large_resource_version()) && !rv.is_empty() => {
                log::debug!(
                    "{}: list at resourceVersion {rv:?} failed ({e}); listing the latest",
                    self.name
                );
                self.rv_unavailable = true;
                self.stats.relists_gone.fetch_add(1, Ordering::Relaxed);
                self.list_at("")
            }
            other => other,
        }
    }

    fn list_at(&mut self, rv: &str) -> Result<()> {
        // client-go: a list at a specific version goes unpaged (served from the watch cache) unless the server
        // paginated before; "0" is served from the cache anyway, which ignores the limit.
        let paged = rv.is_empty() || rv == "0" || self.paginated_result;
        let first_params = ListParams {
            resource_version: (!rv.is_empty()).then(|| rv.to_owned()),
            limit: paged.then_some(self.config.page_size),
            shard_selector: self.shard.clone(),
            ..Default::default()
        };
        let mut params = first_params.clone();
        let fifo = self.fifo.clone();
        let mut session = fifo.begin_replace().bounded(RELIST_AHEAD, self.stop.clone());
        let mut first_page = true;
        let mut fell_back = false;
        let final_rv = loop {
            let page = {
                let this = &*self;
                let session: &mut ReplaceSession<'_, K> = &mut session;
                // Items already decoded behind this one: wake the processing thread after the last of them.
                let mut add = |obj: K, more: bool| {
                    let wake = if more { Wake::Later } else { Wake::Now };
                    // One of another shard is dropped; the page's end wakes for those queued before it.
                    if this.in_shard(&obj) {
                        session.add_waking(this.prepare(obj), wake);
                    }
                };
                let page = self.lw.list_page_hinted(&params, &mut add);
                // Whatever a lister hinted, nothing stays unwoken past a page.
                fifo.wake();
                page
            };
            match page {
                Ok(meta) => {
                    if self.shard.is_some() {
                        let filtered = meta.shard_info.is_some();
                        self.stats
                            .shard_server_side
                            .store(if filtered { 1 } else { 2 }, Ordering::Relaxed);
                        if !filtered {
                            self.note_client_side_filtering();
                        }
                    }
                    if first_page && meta.continue_token.as_deref().is_some_and(|c| !c.is_empty()) {
                        self.paginated_result = true;
                    }
                    first_page = false;
                    match meta.continue_token.filter(|c| !c.is_empty()) {
                        Some(token) => {
                            params.continue_token = Some(token);
                            params.resource_version = None;
                            params.resource_version_match = None;
                        }
                        None => break meta.resource_version.unwrap_or_default(),
                    }
                }
                Err(e) if e.is_expired() && params.continue_token.is_some() && !fell_back => {
                    // client-go's pager: the continue token expired mid-list; list everything at once instead.
                    log::debug!("{}: continue token expired ({e}); full list", self.name);
                    self.stats.relists_expired_continue.fetch_add(1, Ordering::Relaxed);
                    session.restart();
                    fell_back = true;
                    params = ListParams {
                        limit: None,
                        ..first_params.clone()
                    };
                }
                Err(e) => return Err(e),
            }
            if self.stop.is_stopped() {
                return Err(Error::Stopped);
            }
        };
        // Stamped before the sync it completes can be observed.
        self.stats.last_list.set_now();
        session.finish();
        self.stats.set_rv(&final_rv);
        self.rv_unavailable = false;
        Ok(())
    }

    /// A streaming list: ADDED events for the current state, ended by the initial-events-end BOOKMARK; the same
    /// stream then carries on as a normal watch.
    fn streaming_list(&mut self) -> Result<EventStream<K>, StreamingListError> {
        let result = self.streaming_list_events();
        // Events queued with `Wake::Later` are woken for, whatever happened (an error leaves them queued).
        self.fifo.wake();
        result
    }

    fn streaming_list_events(&mut self) -> Result<EventStream<K>, StreamingListError> {
        let rv = if self.rv_unavailable {
            String::new()
        } else {
            self.stats.last_sync_resource_version()
        };
        let params = WatchParams {
            resource_version: (!rv.is_empty()).then_some(rv),
            resource_version_match: Some(VersionMatch::NotOlderThan),
            allow_bookmarks: true,
            send_initial_events: true,
            timeout_seconds: Some(self.watch_timeout_seconds()),
            shard_selector: self.shard.clone(),
            ..Default::default()
        };
        let mut stream = match self.lw.watch(&params) {
            Ok(s) => s,
            // A server without the WatchList feature rejects the parameters.
            Err(e) if matches!(e.code(), Some(400 | 422)) => return Err(StreamingListError::Refused(e)),
            Err(e) => return Err(StreamingListError::Failed(e)),
        };
        self.stats.watches.fetch_add(1, Ordering::Relaxed);
        let fifo = self.fifo.clone();
        let mut session = fifo.begin_replace().bounded(RELIST_AHEAD, self.stop.clone());
        let mut streamed = shard::StreamedShard::default();
        loop {
            let event = match stream.next() {
                Some(Ok(ev)) => ev,
                Some(Err(e)) => return Err(StreamingListError::Failed(e)),
                None => {
                    return Err(StreamingListError::Failed(
                        TransportError::new(
                            TransportErrorKind::ConnectionLost,
                            "watch closed before the initial events ended",
                        )
                        .into(),
                    ));
                }
            };
            self.stats.watch_events.fetch_add(1, Ordering::Relaxed);
            // Wake the processing thread once per burst of events already received, not once per event.
            let wake = if stream.size_hint().0 > 0 {
                Wake::Later
            } else {
                Wake::Now
            };
            match event {
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                    let kept = self.in_shard(&obj);
                    streamed.saw(self.shard.as_ref(), &obj, kept);
                    if kept {
                        session.add_waking(self.prepare(obj), wake);
                    } else if matches!(wake, Wake::Now) {
                        fifo.wake();
                    }
                }
                WatchEvent::Deleted(_) => {
                    return Err(StreamingListError::Failed(Error::InvalidInput(
                        "DELETED event during the initial events of a streaming list".into(),
                    )));
                }
                WatchEvent::Bookmark(b) if b.is_initial_events_end() => {
                    // Stamped, and recovered, before the sync it completes can be observed.
                    let now = Instant::now();
                    self.stats.last_list.set(now);
                    self.stats.last_event.set(now);
                    self.healthy();
                    session.finish();
                    self.judge_streamed(&streamed);
                    self.stats.set_rv(&b.resource_version);
                    self.rv_unavailable = false;
                    return Ok(stream);
                }
                WatchEvent::Bookmark(_) => {
                    // The server ignored sendInitialEvents: what it sent is not a complete state.
                    return Err(StreamingListError::Refused(Error::InvalidInput(
                        "bookmark without initial-events-end during a streaming list".into(),
                    )));
                }
                WatchEvent::Error(status) => return Err(StreamingListError::Failed(Error::Api(status))),
            }
            if self.stop.is_stopped() {
                return Err(StreamingListError::Failed(Error::Stopped));
            }
        }
    }

    // ---- Watch ----

    fn watch_timeout_seconds(&self) -> u32 {
        let min = self.config.min_watch_timeout;
        let secs = random_between(min, min.saturating_mul(2)).as_secs();
        u32::try_from(secs).unwrap_or(u32::MAX).max(1)
    }

    fn open_watch(&mut self) -> State<K> {
        // A watch continues the list: of the same shard, or a relist.
        if self.shard_changed() {
            return State::List;
        }
        let params = WatchParams {
            resource_version: Some(self.stats.last_sync_resource_version()).filter(|rv| !rv.is_empty()),
            allow_bookmarks: true,
            timeout_seconds: Some(self.watch_timeout_seconds()),
            shard_selector: self.shard.clone(),
            ..Default::default()
        };
        // The stream decodes events into what the cache let go of.
        let opened = match self.lw.unstable_hooks() {
            Some(hooks) => hooks.watch_recycling(&params, self.recycler.clone()),
            None => self.lw.watch(&params),
        };
        match opened {
            Ok(stream) => {
                self.stats.watches.fetch_add(1, Ordering::Relaxed);
                // The shard changed while the watch opened: its change may have come before the watch could be
                // ended (see `ShardCell::set`).
                if self.shard_changed() {
                    return State::List;
                }
                self.stats.watch_opened.set_now();
                State::Watching {
                    stream,
                    opened: Instant::now(),
                    events: 0,
                }
            }
            Err(e) => self.failed(Attempt::Watch, &e, false),
        }
    }

    /// Reads the next event (which may block) and every event the stream has already decoded after it (which does
    /// not), up to [`BATCH`]; queues their changes under one lock of the queue.
    fn read_watch(&mut self, mut stream: EventStream<K>, opened: Instant, mut events: u64) -> State<K> {
        let read_before = events;
        let end = loop {
            match self.read_watch_event(&mut stream) {
                Some(end) => break Some(end),
                None => events += 1,
            }
            if stream.size_hint().0 == 0 || self.batch.len() >= BATCH {
                break None;
            }
        };
        // The resourceVersion of the last event read (a bookmark's included), then their changes, then how the watch
        // ended, if it did. The version is set first so that a handler that has seen a change finds it (or a later
        // one) in `last_sync_resource_version`; a re-watch, which reads it on this thread, comes after both.
        if !self.batch_rv.is_empty() {
            self.stats.set_rv(&self.batch_rv);
            self.batch_rv.clear();
        }
        // Changes queued with `Wake::Later` are woken for before anything that may block: a read (no event decoded
        // ahead), a back-off or a list — also after a batch of bookmarks, which queues nothing.
        let wake = if end.is_none() && stream.size_hint().0 > 0 {
            Wake::Later
        } else {
            Wake::Now
        };
        self.fifo.push_all(&mut self.batch, wake);
        if events > read_before {
            self.stats.last_event.set_now();
        }
        if events > 0 {
            self.healthy();
        }
        if end.is_some() {
            self.stats.watch_opened.clear();
        }
        // A new shard: what this watch sends is the old one's (its end may be the stop that the change caused).
        if self.shard_changed() {
            self.stats.watch_opened.clear();
            return State::List;
        }
        match end {
            None => State::Watching { stream, opened, events },
            Some(WatchEnd::Failed(e)) => self.failed(Attempt::Watch, &e, events > 0),
            Some(WatchEnd::Closed) => {
                // client-go's "very short watch": a server closing at once must not make us spin.
                if events == 0 && opened.elapsed() < Duration::from_secs(1) {
                    let e: Error = TransportError::new(
                        TransportErrorKind::ConnectionLost,
                        "the server closed the watch at once, with no event",
                    )
                    .into();
                    return self.failed(Attempt::Watch, &e, false);
                }
                self.stats.watch_restarts.fetch_add(1, Ordering::Relaxed);
                self.healthy();
                log::debug!("{}: watch closed after {events} events; re-watching", self.name);
                State::Watch
            }
        }
    }

    /// Reads one event into the batch, or how the watch ended.
    fn read_watch_event(&mut self, stream: &mut EventStream<K>) -> Option<WatchEnd> {
        let event = match stream.next() {
            Some(Ok(ev)) => ev,
            Some(Err(e)) => return Some(WatchEnd::Failed(e)),
            None => return Some(WatchEnd::Closed),
        };
        self.stats.watch_events.fetch_add(1, Ordering::Relaxed);
        // An event of another shard: its version is reached all the same (a re-watch need not see it again).
        if let WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) = &event
            && !self.in_shard(obj)
        {
            if let Some(rv) = obj.meta().resource_version().filter(|rv| !rv.is_empty()) {
                self.batch_rv.clear();
                self.batch_rv.push_str(rv);
            }
            return None;
        }
        let delta = match event {
            WatchEvent::Added(obj) => Delta::Added(self.seen(obj)),
            WatchEvent::Modified(obj) => Delta::Updated(self.seen(obj)),
            WatchEvent::Deleted(obj) => Delta::Deleted(DeletedObject::Object(self.seen(obj))),
            WatchEvent::Bookmark(b) => {
                if !b.resource_version.is_empty() {
                    self.batch_rv.clear();
                    self.batch_rv.push_str(&b.resource_version);
                }
                return None;
            }
            WatchEvent::Error(status) => return Some(WatchEnd::Failed(Error::Api(status))),
        };
        self.batch.push(delta);
        None
    }

    /// Notes the resourceVersion of a watched object as the server sent it (before any transform; copied without
    /// allocating), and prepares the object for the queue.
    fn seen(&mut self, obj: K) -> Arc<K> {
        if let Some(rv) = obj.meta().resource_version().filter(|rv| !rv.is_empty()) {
            self.batch_rv.clear();
            self.batch_rv.push_str(rv);
        }
        self.prepare(obj)
    }

    #[cfg(test)]
    fn state_name(&self) -> String {
        format!("{:?}", self.state)
    }

    /// How long the current back-off still has to run.
    #[cfg(test)]
    fn backoff_remaining(&self) -> Option<Duration> {
        match &self.state {
            State::BackingOff { until, .. } => Some(until.saturating_duration_since(Instant::now())),
            _ => None,
        }
    }
}

// The reflector's shard: a child module, so that it reaches the reflector's fields.
#[path = "reflector_shard.rs"]
mod shard;

#[cfg(test)]
#[path = "reflector_tests.rs"]
mod tests;
