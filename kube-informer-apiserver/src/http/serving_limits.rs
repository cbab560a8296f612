//! What a connection and a request may take: kube-apiserver's waits (Go `net/http`'s read-header, TLS-handshake
//! and idle timeouts as kube-apiserver sets them, its request timeout for a body), its max-in-flight limits (429
//! past them), and this server's own cap on connections, each of which holds a thread and one file descriptor.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::api::user::{SYSTEM_PRIVILEGED_GROUP, UserInfo};

/// The limits a server was built with ([`ApiServerBuilder`](crate::ApiServerBuilder)'s setters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServingLimits {
    /// From the first byte of a request (or a connection's start) to the end of its head: kube-apiserver's
    /// `ReadHeaderTimeout`, 32 s ("just shy of requestTimeoutUpperBound").
    pub(crate) read_header_timeout: Duration,
    /// A TLS handshake from the connection's start: Go derives it from the read-header timeout.
    pub(crate) tls_handshake_timeout: Duration,
    /// A request body, from the end of its head: kube-apiserver's `--request-timeout`, 60 s, within which its handler
    /// must have read it.
    pub(crate) request_body_timeout: Duration,
    /// A keep-alive connection waiting for its next request: kube-apiserver's `IdleTimeout`, 90 s.
    pub(crate) idle_timeout: Duration,
    /// One write that makes no progress (a client that stopped reading a watch or an answer). Go's server has none
    /// (kube-apiserver leaves a stuck write to TCP); 60 s here, so that an abandoned stream frees its thread.
    pub(crate) write_timeout: Duration,
    /// Connections served at once; past it a connection is refused (plain HTTP: kube's 429 text; TLS: closed).
    pub(crate) max_connections: usize,
    /// Non-mutating requests handled at once, watches and other long-running requests aside: kube-apiserver's
    /// `--max-requests-inflight`, 400; 0 for no limit.
    pub(crate) max_requests_in_flight: usize,
    /// Mutating requests handled at once: kube-apiserver's `--max-mutating-requests-inflight`, 200; 0 for no limit.
    pub(crate) max_mutating_requests_in_flight: usize,
}

/// kube-apiserver's `ReadHeaderTimeout`.
pub(crate) const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
/// kube-apiserver's `--request-timeout` default.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// kube-apiserver's `IdleTimeout` ("matches http.DefaultTransport keep-alive timeout").
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The default cap on connections (and connection threads).
pub(crate) const MAX_CONNECTIONS: usize = 1024;

/// The shortest wait any setter takes: a zero would make every read fail at once (Go's 0 means "no limit", which
/// this server does not offer: every wait has a deadline).
pub(crate) const SHORTEST_WAIT: Duration = Duration::from_millis(1);

impl Default for ServingLimits {
    fn default() -> Self {
        ServingLimits {
            read_header_timeout: READ_HEADER_TIMEOUT,
            tls_handshake_timeout: READ_HEADER_TIMEOUT,
            request_body_timeout: REQUEST_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            write_timeout: REQUEST_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            max_requests_in_flight: 400,
            max_mutating_requests_in_flight: 200,
        }
    }
}

/// kube-apiserver's answer past its in-flight limits (`tooManyRequests`: `http.Error`'s plain text).
pub(crate) const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.\n";

/// Requests being handled, by kind (kube-apiserver's max-in-flight filter).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    reading: AtomicUsize,
    mutating: AtomicUsize,
}

/// A request's place in flight, given back on drop.
#[derive(Debug)]
pub(crate) struct InFlightSlot<'a> {
    counter: &'a AtomicUsize,
}

impl Drop for InFlightSlot<'_> {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::AcqRel);
    }
}

impl InFlight {
    /// A slot for a request (`mutating` for create, update, patch, delete), or `None` past `limits`' (0: no limit).
    pub(crate) fn acquire(&self, limits: &ServingLimits, mutating: bool) -> Option<InFlightSlot<'_>> {
        let (counter, max) = if mutating {
            (&self.mutating, limits.max_mutating_requests_in_flight)
        } else {
            (&self.reading, limits.max_requests_in_flight)
        };
        let taken = counter.fetch_add(1, Ordering::AcqRel);
        let slot = InFlightSlot { counter };
        (max == 0 || taken < max).then_some(slot)
    }
}

/// kube-apiserver serves members of `system:masters` past the in-flight limits ("a super-admin or a loopback
/// connection ... should always get an answer").
pub(crate) fn exempt(user: Option<&UserInfo>) -> bool {
    user.is_some_and(|u| u.in_group(SYSTEM_PRIVILEGED_GROUP))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_per_kind_and_given_back() {
        let limits = ServingLimits {
            max_requests_in_flight: 2,
            max_mutating_requests_in_flight: 1,
            ..ServingLimits::default()
        };
        let f = InFlight::default();
        let a = f.acquire(&limits, false).unwrap();
        let _b = f.acquire(&limits, false).unwrap();
        assert!(f.acquire(&limits, false).is_none());
        let w = f.acquire(&limits, true).unwrap();
        assert!(f.acquire(&limits, true).is_none());
        drop(a);
        drop(w);
        assert!(f.acquire(&limits, false).is_some());
        assert!(f.acquire(&limits, true).is_some());
        let unlimited = ServingLimits {
            max_requests_in_flight: 0,
            ..ServingLimits::default()
        };
        let held: Vec<_> = (0..1000).map(|_| f.acquire(&unlimited, false).unwrap()).collect();
        assert_eq!(held.len(), 1000);
    }

    #[test]
    fn defaults_are_kube_apiservers() {
        let d = ServingLimits::default();
        assert_eq!(d.read_header_timeout, Duration::from_secs(32));
        assert_eq!(d.tls_handshake_timeout, d.read_header_timeout);
        assert_eq!(d.idle_timeout, Duration::from_secs(90));
        assert_eq!(d.request_body_timeout, Duration::from_secs(60));
        assert_eq!(
            (d.max_requests_in_flight, d.max_mutating_requests_in_flight),
            (400, 200)
        );
    }
}
