//! The endpoints floor (k8s.io/apiserver's `endpoints`: `handlers`, `discovery`, `openapi`): a request's route
//! ([`router`]), the handlers per verb ([`handlers`], one `RequestContext` passed down), LIST options and paging
//! ([`list`]), WATCH streams ([`watch`]), tables and other conversions of an answer ([`table`]), discovery
//! ([`discovery`], [`aggregated_discovery`]) and the OpenAPI documents ([`openapi`]).

pub(crate) mod aggregated_discovery;
pub(crate) mod discovery;
pub(crate) mod handlers;
pub(crate) mod list;
pub(crate) mod openapi;
pub(crate) mod router;
pub(crate) mod table;
pub(crate) mod watch;

use std::time::Duration;

use crate::auth::Auth;
use crate::auth::serviceaccount::TokenIssuer;
use crate::registry::Store;

/// What the endpoints read of the server's state: handed down by the server (its `Shared` implements it), so that
/// no endpoint imports the server.
pub(crate) trait ServerState {
    /// The store.
    fn store(&self) -> &Store;
    /// Authentication and the allow rules.
    fn auth(&self) -> &Auth;
    /// Signs and checks service-account tokens.
    fn issuer(&self) -> &TokenIssuer;
    /// How long a request for a resourceVersion ahead of the store waits before 504 (kube-apiserver: 3 s).
    fn too_large_wait(&self) -> Duration;
    /// True: `resourceVersion=0` lists are served whole, ignoring `limit`, as the watch cache serves them.
    fn watch_cache(&self) -> bool;
    /// How often a watch sends a BOOKMARK.
    fn bookmark_interval(&self) -> Duration;
    /// The `WatchList` feature: streaming lists (`sendInitialEvents`) served.
    fn watch_list_enabled(&self) -> bool;
    /// The `ShardedListAndWatch` feature gate: `shardSelector` honoured.
    fn sharded_list_and_watch_enabled(&self) -> bool;
    /// Waits out an injected stall (`duration`, or until the faults are cleared when `None`) of the fault holding
    /// `ticket`, or until `stop` says to.
    fn stall(&self, duration: Option<Duration>, ticket: u64, stop: &dyn Fn() -> bool);
}
