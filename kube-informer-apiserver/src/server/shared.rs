//! The state the server's threads share (k8s.io/apiserver's `GenericAPIServer`): the store, faults, the request
//! log, authentication and authorization, serving limits and settings, and the connections being served.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::faults::Faults;
use crate::auth::Auth;
use crate::auth::rbac::PolicyCache;
use crate::auth::serviceaccount::TokenIssuer;
use crate::endpoints::openapi;
use crate::http::log::RequestLog;
use crate::http::serving_limits::{InFlight, ServingLimits};
use crate::http::tls::Pki;
use crate::registry::Store;

/// State shared by the server handle and every thread.
pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) faults: Faults,
    pub(crate) log: RequestLog,
    pub(crate) auth: Auth,
    /// Signs and checks service-account tokens.
    pub(crate) issuer: TokenIssuer,
    /// The RBAC objects as the authorizer reads them (the RBAC mode only).
    pub(crate) policy: PolicyCache,
    pub(crate) pki: Option<Pki>,
    /// The address listened on (an unspecified IP listens on every interface).
    pub(crate) listen_addr: SocketAddr,
    /// The address clients connect to: `addr`, or loopback when `addr` is unspecified.
    pub(crate) client_addr: SocketAddr,
    /// The admin API under [`admin::PREFIX`](crate::server::admin::PREFIX), when turned on.
    pub(crate) admin: Option<Admin>,
    /// The OpenAPI documents of the registered resources.
    pub(crate) openapi: openapi::Cache,
    /// How long a request for a resourceVersion ahead of the store waits before 504 (kube-apiserver: 3 s).
    pub(crate) too_large_wait: Duration,
    pub(super) bookmark_interval: Mutex<Duration>,
    pub(super) watch_list: AtomicBool,
    /// The `ShardedListAndWatch` feature gate: `shardSelector` honoured (else ignored, as kube-apiserver ignores a
    /// disabled alpha field).
    pub(super) sharded_list_and_watch: AtomicBool,
    /// True: `resourceVersion=0` lists are served whole, ignoring `limit`, as the watch cache serves them.
    pub(crate) watch_cache: bool,
    /// Timeouts and caps of connections and requests.
    pub(crate) limits: ServingLimits,
    /// Requests being handled (the max-in-flight limits).
    pub(crate) in_flight: InFlight,
    pub(super) shutdown: AtomicBool,
    /// Bumped by every restart: connections of an older epoch end.
    pub(super) epoch: AtomicU64,
    pub(super) conns: Mutex<Conns>,
    /// The acceptor thread, while listening.
    pub(super) acceptor: Mutex<Option<JoinHandle<()>>>,
    /// Stop flag and wake-up of the timer threads (compactor, restart timers).
    pub(super) timer: (Mutex<bool>, Condvar),
    /// Timers of restarts that refuse connections for a while; joined on shutdown.
    pub(super) restarts: Mutex<Vec<JoinHandle<()>>>,
    /// A restart ([`serving::restart`](super::serving::restart)), handed in by the wiring: the admin API restarts
    /// through it without reaching up to the acceptor that serves its own connection.
    pub(super) restart: Restart,
}

/// Cuts every connection but the one given, and listens again at once or after the given time.
pub(super) type Restart = fn(&Arc<Shared>, Option<Duration>, Option<u64>) -> io::Result<()>;

impl crate::endpoints::ServerState for Shared {
    fn store(&self) -> &Store {
        &self.store
    }
    fn auth(&self) -> &Auth {
        &self.auth
    }
    fn issuer(&self) -> &TokenIssuer {
        &self.issuer
    }
    fn too_large_wait(&self) -> Duration {
        self.too_large_wait
    }
    fn watch_cache(&self) -> bool {
        self.watch_cache
    }
    fn bookmark_interval(&self) -> Duration {
        Shared::bookmark_interval(self)
    }
    fn watch_list_enabled(&self) -> bool {
        Shared::watch_list_enabled(self)
    }
    fn sharded_list_and_watch_enabled(&self) -> bool {
        Shared::sharded_list_and_watch_enabled(self)
    }
    fn stall(&self, duration: Option<Duration>, ticket: u64, stop: &dyn Fn() -> bool) {
        self.faults.stall(duration, ticket, stop);
    }
}

impl Shared {
    /// True when a thread of `epoch` must stop.
    pub(crate) fn stopping(&self, epoch: u64) -> bool {
        self.shutdown.load(Ordering::Acquire) || self.epoch.load(Ordering::Acquire) != epoch
    }

    pub(crate) fn bookmark_interval(&self) -> Duration {
        *self.bookmark_interval.lock()
    }

    pub(crate) fn watch_list_enabled(&self) -> bool {
        self.watch_list.load(Ordering::Relaxed)
    }

    /// Changes the bookmark interval of every watch, running ones included.
    pub(crate) fn set_bookmark_interval(&self, interval: Duration) {
        *self.bookmark_interval.lock() = interval;
        self.store.notify();
    }

    pub(crate) fn set_watch_list(&self, enabled: bool) {
        self.watch_list.store(enabled, Ordering::Relaxed);
    }

    pub(crate) fn sharded_list_and_watch_enabled(&self) -> bool {
        self.sharded_list_and_watch.load(Ordering::Relaxed)
    }

    pub(crate) fn set_sharded_list_and_watch(&self, enabled: bool) {
        self.sharded_list_and_watch.store(enabled, Ordering::Relaxed);
    }
}

/// Connections being served (by [`serving`](super::serving)). Invariant: every live connection's thread is in
/// `threads`.
#[derive(Debug, Default)]
pub(super) struct Conns {
    pub(super) next_id: u64,
    /// Each live connection's socket (its one file descriptor, shared with its thread), to cut it.
    pub(super) live: HashMap<u64, Arc<TcpStream>>,
    pub(super) threads: Vec<JoinHandle<()>>,
}

/// The admin API's configuration and state (the API itself is [`admin`](super::admin)'s).
#[derive(Debug)]
pub(crate) struct Admin {
    /// Users allowed when authentication is on.
    pub(super) users: Vec<String>,
    /// Held during a restart: a second one at the same time is refused (each would cut the other's connection).
    pub(super) restarting: Mutex<()>,
    /// `watchers` requests waiting now (shown by `status`, so a test can tell a wait has begun).
    pub(super) waiting: AtomicUsize,
}

impl Admin {
    pub(crate) fn new(users: Vec<String>) -> Admin {
        Admin {
            users,
            restarting: Mutex::new(()),
            waiting: AtomicUsize::new(0),
        }
    }
}
