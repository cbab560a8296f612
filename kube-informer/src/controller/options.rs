//! `ControllerOptions`: workers, retries, shutdown.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::workqueue::RateLimiter;

/// A work-queue key: `namespace/name` or `name`, shared rather than copied.
pub(crate) type QueueKey = Arc<str>;

/// Controller settings. The defaults follow controller-runtime and client-go, as each field says.
///
/// ```
/// use std::time::Duration;
/// use kube_informer::controller::ControllerOptions;
///
/// let opts = ControllerOptions::default().name("configmap-sync").workers(4);
/// assert_eq!(opts.workers, 4);
/// assert_eq!(opts.shutdown_grace, Duration::from_millis(900));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ControllerOptions {
    /// Name used in logs, thread names (`w0:<name>`, shortened to the 15 bytes the OS keeps) and metrics. Default: the
    /// primary informer's name.
    pub name: Option<String>,
    /// Worker threads, hence reconciles running at once (never two for the same key). Default: 1, as
    /// controller-runtime's `MaxConcurrentReconciles`.
    pub workers: usize,
    /// Paces the retries of failing keys. Default: client-go's `DefaultTypedControllerRateLimiter` (per key 5 ms ·
    /// 2ⁿ up to 1000 s, overall 10 qps with a burst of 100). Shared by every term of the controller, so a key's
    /// failure count survives a pause.
    pub rate_limiter: Option<Arc<dyn RateLimiter<QueueKey>>>,
    /// How long a pause or stop lets in-flight reconciles finish before leaving their threads detached (with a
    /// warning). Default: 900 ms, so that stopping returns within a second, as every component of this crate.
    pub shutdown_grace: Duration,
    /// The failure of a key's reconcile that is first logged at `warn!` (earlier ones are `debug!`): while the key
    /// keeps failing, one `warn!` a minute follows, with the attempt count and how long it has failed; when it
    /// succeeds again, one `info!`. Default: 1, the first failure. A panic is always a `warn!`.
    pub warn_after_failures: u32,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        ControllerOptions {
            name: None,
            workers: 1,
            rate_limiter: None,
            shutdown_grace: Duration::from_millis(900),
            warn_after_failures: 1,
        }
    }
}

impl ControllerOptions {
    /// Sets [`name`](ControllerOptions::name).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets [`workers`](ControllerOptions::workers) (at least 1).
    #[must_use]
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Sets [`rate_limiter`](ControllerOptions::rate_limiter).
    #[must_use]
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<Arc<str>> + 'static) -> Self {
        self.rate_limiter = Some(Arc::new(limiter));
        self
    }

    /// Sets [`shutdown_grace`](ControllerOptions::shutdown_grace).
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Sets [`warn_after_failures`](ControllerOptions::warn_after_failures) (at least 1).
    #[must_use]
    pub fn warn_after_failures(mut self, failures: u32) -> Self {
        self.warn_after_failures = failures.max(1);
        self
    }
}

impl fmt::Debug for ControllerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerOptions")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .field("rate_limiter", &self.rate_limiter.as_ref().map(|_| "custom"))
            .field("shutdown_grace", &self.shutdown_grace)
            .field("warn_after_failures", &self.warn_after_failures)
            .finish()
    }
}
