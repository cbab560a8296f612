//! # kube-informer
//!
//! Kubernetes informers for synchronous Rust: a live, indexed, always-current local cache of Kubernetes objects and
//! callbacks when they change — what client-go's `SharedInformer` does for Go — built on threads, with no async
//! runtime.
//!
//! ## Architecture
//!
//! ```text
//!  API server ──LIST pages──┐                     ┌─> listener thread ─> handler A (on_add/on_update/on_delete)
//!             ──WATCH stream┤                     ├─> listener thread ─> handler B
//!                           v                     │
//!   client (ureq+rustls) -> watch decoder -> Reflector ─push deltas─> RealFIFO ──pop─> process ─┤
//!                                                                   (or DeltaFIFO)      │ update store/indexes
//!                                                                                       v
//!                                                                         Store + Indexers  <── Listers (reads)
//!   Controller: handlers enqueue keys ─> WorkQueue (rate limited) ─> N worker threads ─> reconcile
//! ```
//!
//! * [`object`](mod@object): metadata, statuses, [`ApiResource`](object::ApiResource), the [`Object`](object::Object) trait,
//!   [`DynamicObject`](object::DynamicObject), custom resources declared in Rust ([`custom_resource!`]).
//! * `crd` (feature `schema`): the CustomResourceDefinition of a custom resource, its structural schema derived from
//!   the Rust types with schemars.
//! * [`selector`]: label and field selectors.
//! * [`client`]: configuration (kubeconfig, in-cluster, exec plugins), TLS, client-side rate limit, paged LIST,
//!   streaming WATCH, writes, pod logs and eviction, raw requests.
//! * [`watch`]: watch events and the incremental stream decoder.
//! * [`cache`]: Reflector, RealFIFO and DeltaFIFO, thread-safe indexed store, listers.
//! * [`informer`]: shared index informers, event handlers, the factory.
//! * [`workqueue`]: rate-limited work queues.
//! * [`clock`]: time as queues and leader election read it (a fake clock for tests), and shared jitter.
//! * [`controller`]: controllers — informers, a work queue and reconciling workers.
//! * [`leaderelection`]: leader election over a Lease, so that one replica of a controller works at a time.
//! * [`events`]: an event recorder writing core/v1 Events in the background, repeats aggregated.
//! * [`health`]: whether each component works, and why not — for people and for liveness/readiness probes.
//! * [`registry`]: the components a program runs, gathered for probes and metrics.
//! * [`wait`]: waiting for a condition on a cache or an object, with a deadline.
//! * [`prelude`]: what a controller binary uses, in one `use`.
//! * [`manager`]: runs a program's controllers, leader election and probes until SIGTERM, then stops them
//!   gracefully — a controller binary's `main`.
//! * `metrics` (feature `metrics`): every figure the crate keeps, in the Prometheus text format.
//! * `probe` (feature `probe`): `/metrics`, `/healthz` and `/readyz` over HTTP, as controller-runtime's manager serves them.
//! * [`unstable`]: plumbing a few programs reach into (watch recycling, a `ListerWatcher`'s hooks) — **not covered
//!   by semver**; nothing else in the crate is unstable.
//!
//! The API server the examples and tests run against is another crate, `kube-informer-apiserver` (a
//! dev-dependency: the library never depends on it).
//!
//! ## Example
//!
//! Informers come from a [`SharedInformerFactory`](informer::SharedInformerFactory): one informer per resource,
//! shared by every part of the program, with the factory's options (namespaces, selectors, transforms) — the way to
//! build them. Here over the embedded API server (with a real cluster, use `Client::try_default()` instead):
//!
//! ```
//! use std::time::Duration;
//! use kube_informer::informer::{FactoryOptions, Notification, SharedInformerFactory};
//! use kube_informer::object::{core::ConfigMap, ObjectMeta};
//! use kube_informer_apiserver::ApiServer;
//!
//! let server = ApiServer::start()?;
//! server.create(&ConfigMap::new(ObjectMeta::namespaced("default", "settings")).with("mode", "fast"))?;
//!
//! let factory = SharedInformerFactory::new(server.client()?, FactoryOptions::default().namespace("default"));
//! let configmaps = factory.informer::<ConfigMap>();
//! let (tx, rx) = std::sync::mpsc::channel();
//! configmaps.add_event_handler(move |ev: &Notification<ConfigMap>| {
//!     let _ = tx.send(ev.object().metadata.name.clone());
//! })?;
//! factory.start()?;
//! factory.wait_for_cache_sync(Duration::from_secs(30))?;
//! assert_eq!(rx.recv()?.as_deref(), Some("settings"));
//! assert_eq!(configmaps.lister().namespace("default").get("settings").unwrap().data.get("mode"), Some("fast"));
//! factory.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A factory given several namespaces watches each of them, behind one informer per resource; an informer of
//! [`PartialObjectMetadata<K>`](object::PartialObjectMetadata) caches only metadata. Building an informer without a
//! factory ([`SharedIndexInformer::for_api`](informer::SharedIndexInformer::for_api), or
//! [`SharedIndexInformer::new`](informer::SharedIndexInformer::new) over a
//! [`ListerWatcher`](cache::ListerWatcher) of your own) is for what a factory does not cover.
//!
//! ## Quick start with a real cluster
//!
//! [`Client::try_default`](client::Client::try_default) finds the cluster as kubectl does: the files `KUBECONFIG`
//! names, else `~/.kube/config`, else the pod's service account. The classic Pod informer, for pods of every
//! namespace (add `.strip_managed_fields()` to the options to keep the cache small):
//!
//! ```no_run
//! use std::time::Duration;
//! use kube_informer::client::Client;
//! use kube_informer::informer::HandlerFuncs;
//! use kube_informer::manager::{Manager, ManagerOptions};
//! use kube_informer::object::{ApiResource, DynamicObject};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let manager = Manager::new(Client::try_default()?, ManagerOptions::default())?;
//!     let pods = manager.factory().informer_for::<DynamicObject>(&ApiResource::new("", "v1", "Pod", "pods", true));
//!     let name = |p: &DynamicObject| p.metadata.name.clone().unwrap_or_default();
//!     pods.add_event_handler(
//!         HandlerFuncs::new()
//!             .on_add(move |p, _in_initial_list| println!("added {}", name(p)))
//!             .on_update(move |_old, new| println!("updated {}", name(new)))
//!             .on_delete(move |gone| println!("deleted {}", name(gone.object()))),
//!     )?;
//!     manager.start()?;
//!     // Names what is missing (RBAC, an unreachable server, …) if the cache does not fill in time.
//!     manager.factory().wait_for_cache_sync(Duration::from_secs(60))?;
//!     println!("{} pods", pods.lister().list(&Default::default()).len());
//!     // Handlers run on their own threads until SIGTERM or Ctrl-C; then every thread is stopped and joined.
//!     println!("{}", manager.run()?);
//!     Ok(())
//! }
//! ```
//!
//! With k8s-openapi's types instead (`k8s_openapi::api::core::v1::Pod`), enable this crate's `k8s-openapi` feature
//! and depend on k8s-openapi 0.29 with the feature of your cluster's version (`v1_33` … `v1_37`).
//!
//! ## Logging
//!
//! The library logs through the [`log`](https://docs.rs/log) facade: install any logger, e.g. `env_logger::init()`
//! with `RUST_LOG=kube_informer=info`, to see failures that persist (a `warn!` when one starts and once a minute
//! while it lasts, an `info!` when it ends) and leader changes; retried trouble is at `debug!`.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![warn(rust_2018_idioms, unreachable_pub)]

pub mod cache;
pub mod client;
pub mod clock;
pub mod controller;
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub mod crd;
mod error;
pub mod events;
mod failure_streak;
pub mod health;
pub mod informer;
pub mod leaderelection;
pub mod manager;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod object;
pub mod prelude;
#[cfg(feature = "probe")]
pub mod probe;
pub mod registry;
pub mod selector;
mod stop;
#[cfg(test)]
mod test_log;
mod thread_name;
pub mod unstable;
pub mod wait;
pub mod watch;
mod worker;
pub mod workqueue;

/// What the crate's macros expand to refer to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use serde;
}

/// README.md's code blocks, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

pub use error::{
    ConfigError, DecodeError, DecodeErrorKind, Error, MAX_RETRY_AFTER, OwnershipLost, Result, TransportError,
    TransportErrorKind,
};
