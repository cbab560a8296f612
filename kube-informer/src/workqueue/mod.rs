//! Work queues in the manner of client-go's `util/workqueue`: deduplicating, delaying, rate limited — blocking, on
//! threads.
//!
//! Informer event handlers put keys (`namespace/name`) on a queue; worker threads take them off and reconcile. The
//! semantics are client-go's, which controller authors rely on:
//!
//! * a key waiting to be processed is queued once however often it is added;
//! * a key is never handed to two workers at once: adding a key that is being processed marks it, and it is queued
//!   again when its worker is done — so every add is followed by a processing that starts after it;
//! * FIFO otherwise; failed keys come back after a rate-limited delay.
//!
//! Three layers, each deref-ing to the one below:
//!
//! * [`Queue`]: add / get / done, `len`, shutdown with or without drain, metrics;
//! * [`DelayingQueue`]: `add_after`, served by one named delay thread over a min-heap;
//! * [`RateLimitingQueue`]: `add_rate_limited` / `forget` / `num_requeues` over a [`RateLimiter`] — client-go's
//!   limiters are here with client-go's defaults ([`default_controller_rate_limiter`]).
//!
//! [`Queue::get`] returns a [`Processing`] guard that marks the key done when dropped, so a panicking worker cannot
//! wedge its key; [`Processing::into_key`] + [`Queue::done`] is client-go's explicit style. Every time-dependent
//! part reads the queue's [`Clock`](crate::clock::Clock); tests use a [`FakeClock`](crate::clock::FakeClock) and never sleep. Metrics come as a plain
//! [`QueueMetrics`] snapshot.
//!
//! One deliberate difference from client-go: `add_rate_limited` for a key whose retry is already pending does not
//! advance the key's failure count (see [`RateLimitingQueue`]).
//!
//! ## The usual worker loop
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::thread;
//! use kube_informer::workqueue::{QueueConfig, RateLimitingQueue};
//!
//! // Stands in for the controller's reconcile: "default/b" fails the first time.
//! let failed_once = Arc::new(AtomicBool::new(false));
//! let reconcile = move |key: &str| -> Result<(), String> {
//!     if key == "default/b" && !failed_once.swap(true, Ordering::SeqCst) {
//!         return Err("conflict".into());
//!     }
//!     Ok(())
//! };
//!
//! let queue: Arc<RateLimitingQueue<String>> =
//!     Arc::new(RateLimitingQueue::with_config(QueueConfig::default().name("configmaps")));
//! let (reconciled, reconciled_rx) = crossbeam_channel::unbounded();
//! let workers: Vec<_> = (0..2)
//!     .map(|i| {
//!         let (queue, reconcile, reconciled) = (queue.clone(), reconcile.clone(), reconciled.clone());
//!         thread::Builder::new()
//!             .name(format!("w{i}:configmaps")) // the OS shows 15 bytes of a thread name
//!             .spawn(move || {
//!                 // `None` once the queue is shut down and empty.
//!                 while let Some(key) = queue.get() {
//!                     match reconcile(&key) {
//!                         Ok(()) => {
//!                             queue.forget(&key); // reset its backoff
//!                             reconciled.send(key.clone()).unwrap();
//!                         }
//!                         Err(_) => {
//!                             queue.add_rate_limited(key.clone()); // retry in 5 ms, 10 ms, 20 ms…
//!                         }
//!                     }
//!                 } // each `key` guard marks its key done as it drops
//!             })
//!             .unwrap()
//!     })
//!     .collect();
//!
//! queue.add("default/a".to_string());
//! queue.add("default/b".to_string());
//! let mut done: Vec<String> = (0..2).map(|_| reconciled_rx.recv().unwrap()).collect();
//! done.sort();
//! assert_eq!(done, ["default/a", "default/b"]);
//!
//! assert!(queue.shut_down_with_drain()); // refuse adds, wait for keys in flight, join the delay thread
//! for worker in workers {
//!     worker.join().unwrap();
//! }
//! ```

mod delaying;
mod metrics;
pub(crate) mod queue;
mod rate_limiter;
mod rate_limiting;

/// The queues' clocks live in [`crate::clock`] (shared with leader election); re-exported here.
pub use delaying::DelayingQueue;
pub use metrics::{Histogram, QueueMetrics};
pub use queue::{GetTimeoutError, Item, Processing, Queue, QueueConfig, TryGetError};
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
    WithMaxWaitRateLimiter, default_controller_rate_limiter, default_controller_rate_limiter_with_clock,
};
pub use rate_limiting::RateLimitingQueue;
