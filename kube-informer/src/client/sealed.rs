//! Sealed credentials: the `Authorization` header goes on the wire without ever passing through a log line.
//!
//! ureq's HTTP layer hands every request head it writes to `log`: at trace level ureq-proto prints a hex dump of
//! each byte, credentials included. A library cannot tell an application's logger to skip those records, so the
//! credential never reaches that layer: the request carries a placeholder, `authorization: kube-informer-sealed
//! <id>`, and the outermost transport of every agent — which sees the plaintext after ureq has logged it, just
//! before it is encrypted or written to the socket — swaps the placeholder for the real value.
//!
//! A [`Seal`] registers the value under a random id for the duration of one request and withdraws it on drop. Only
//! a placeholder in header position (`\r\nauthorization: ` before it, `\r\n` after it) with a live id is replaced:
//! a request body that happens to contain the marker text cannot pull a credential into the request.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

use super::secret::Secret;

/// The placeholder's marker; the id follows as 16 hex digits.
const MARKER: &[u8] = b"kube-informer-sealed ";
/// What precedes a placeholder in a request head (ureq writes header names in lower case).
const HEADER_PREFIX: &[u8] = b"\r\nauthorization: ";
const ID_LEN: usize = 16;

/// Credentials of requests in flight, by placeholder id; shared by every agent of a client.
#[derive(Default)]
pub(crate) struct Seals {
    live: Mutex<HashMap<u64, Secret>>,
    /// Keys the id generator: ids are unpredictable.
    random: RandomState,
    counter: AtomicU64,
}

impl fmt::Debug for Seals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Seals").field("live", &self.live.lock().len()).finish()
    }
}

impl Seals {
    /// Registers `value` (a whole header value, such as `Bearer …`) until the returned seal drops.
    pub(crate) fn seal(self: &Arc<Self>, value: Secret) -> Seal {
        let mut live = self.live.lock();
        let id = loop {
            let mut h = self.random.build_hasher();
            h.write_u64(self.counter.fetch_add(1, Ordering::Relaxed));
            let id = h.finish();
            if !live.contains_key(&id) {
                break id;
            }
        };
        live.insert(id, value);
        Seal {
            seals: Arc::clone(self),
            id,
        }
    }

    fn value(&self, id: u64) -> Option<Secret> {
        self.live.lock().get(&id).cloned()
    }
}

/// A credential registered for one request; withdrawn on drop.
pub(crate) struct Seal {
    seals: Arc<Seals>,
    id: u64,
}

impl Seal {
    /// The placeholder header value to send instead of the credential.
    pub(crate) fn placeholder(&self) -> String {
        format!("{}{:016x}", std::str::from_utf8(MARKER).unwrap_or_default(), self.id)
    }
}

impl Drop for Seal {
    fn drop(&mut self) {
        self.seals.live.lock().remove(&self.id);
    }
}

/// Finds a placeholder in header position: its byte range and id.
fn find_placeholder(out: &[u8]) -> Option<(std::ops::Range<usize>, u64)> {
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&out[from..], MARKER) {
        let start = from + at;
        let end = start + MARKER.len() + ID_LEN;
        let in_header = start >= HEADER_PREFIX.len()
            && out[start - HEADER_PREFIX.len()..start].eq_ignore_ascii_case(HEADER_PREFIX)
            && out.get(end..end + 2) == Some(b"\r\n");
        if in_header {
            let id = std::str::from_utf8(&out[start + MARKER.len()..end])
                .ok()
                .and_then(|hex| u64::from_str_radix(hex, 16).ok());
            if let Some(id) = id {
                return Some((start..end, id));
            }
        }
        from = start + 1;
    }
    None
}

/// The last connector of every agent's chain: puts a [`SealedTransport`] on top of whatever transport the chain made
/// (TLS or plain TCP), so it sees the request's plaintext.
#[derive(Debug)]
pub(crate) struct Unseal {
    pub(crate) seals: Arc<Seals>,
}

impl<In: Transport> Connector<In> for Unseal {
    type Out = SealedTransport<In>;

    fn connect(&self, _: &ConnectionDetails<'_>, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|inner| SealedTransport {
            inner,
            seals: Arc::clone(&self.seals),
        }))
    }
}

/// A transport that replaces sealed placeholders by their credential as it transmits.
pub(crate) struct SealedTransport<T> {
    inner: T,
    seals: Arc<Seals>,
}

impl<T> fmt::Debug for SealedTransport<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealedTransport").finish_non_exhaustive()
    }
}

impl<T: Transport> Transport for SealedTransport<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let found = find_placeholder(&self.inner.buffers().output()[..amount]);
        let Some((range, id)) = found else {
            return self.inner.transmit_output(amount, timeout);
        };
        // A placeholder whose seal was withdrawn goes out as it is: the server answers 401.
        let Some(value) = self.seals.value(id) else {
            return self.inner.transmit_output(amount, timeout);
        };
        let out = &self.inner.buffers().output()[..amount];
        let mut real = Vec::with_capacity(amount + value.expose().len());
        real.extend_from_slice(&out[..range.start]);
        real.extend_from_slice(value.expose());
        real.extend_from_slice(&out[range.end..]);
        // Through the inner transport's own buffer, in as many pieces as it takes.
        let mut rest = &real[..];
        let result = loop {
            if rest.is_empty() {
                break Ok(());
            }
            let buf = self.inner.buffers().output();
            let n = buf.len().min(rest.len());
            buf[..n].copy_from_slice(&rest[..n]);
            if let Err(e) = self.inner.transmit_output(n, timeout) {
                break Err(e);
            }
            rest = &rest[n..];
        };
        real.fill(0);
        result
    }

    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.inner.maybe_await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(value: &str) -> Vec<u8> {
        format!("GET /api HTTP/1.1\r\nhost: h\r\nauthorization: {value}\r\naccept: application/json\r\n\r\n")
            .into_bytes()
    }

    #[test]
    fn finds_placeholders_in_header_position_only() {
        let seals = Arc::new(Seals::default());
        let seal = seals.seal(Secret::from("Bearer t"));
        let p = seal.placeholder();
        let h = head(&p);
        let (range, id) = find_placeholder(&h).expect("found");
        assert_eq!((&h[range], id), (p.as_bytes(), seal.id));
        assert_eq!(seals.value(id), Some(Secret::from("Bearer t")));
        // In a body, or after another header name, it is left alone.
        let body = format!("PUT /x HTTP/1.1\r\ncontent-length: 9\r\n\r\n{{\"v\":\"{p}\"}}\r\n");
        assert_eq!(find_placeholder(body.as_bytes()), None);
        assert_eq!(find_placeholder(format!("\r\nx-other: {p}\r\n").as_bytes()), None);
        assert_eq!(
            find_placeholder(format!("\r\nAuthorization: {p}\r\n").as_bytes()).map(|f| f.1),
            Some(id)
        );
        drop(seal);
        assert_eq!(seals.value(id), None, "withdrawn on drop");
    }

    #[test]
    fn ids_are_distinct() {
        let seals = Arc::new(Seals::default());
        let a = seals.seal(Secret::from("a"));
        let b = seals.seal(Secret::from("b"));
        assert_ne!(a.placeholder(), b.placeholder());
        assert_eq!(a.placeholder().len(), MARKER.len() + ID_LEN);
    }
}
