//! What a fault does to the request it matches ([`FaultAction`]): a plain value, low in the house, which the answer
//! writers (`reply`, `watch`) act on and the fault queue (`faults`) hands out.

use std::fmt;
use std::time::Duration;

/// What happens to a matched request.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultAction {
    /// Answer with this HTTP status and a `Status` body (reason from the code); with `retry_after`, a
    /// `Retry-After` header and `details.retryAfterSeconds` too.
    Error {
        /// HTTP status code (429, 500, 503, …).
        code: u16,
        /// Seconds the client is asked to wait.
        retry_after: Option<u32>,
    },
    /// Cut the connection (no terminating chunk, no TLS close) after this many watch events; a non-watch request is
    /// cut before any answer.
    CutAfterEvents(usize),
    /// Cut the connection after this many bytes of response body (chunk framing included).
    CutAfterBytes(usize),
    /// Send nothing and keep the socket open, for `duration` or (when `None`) until
    /// [`ApiServer::clear_faults`](crate::ApiServer::clear_faults); then carry on normally. With `after_events`,
    /// a watch stalls after its headers and that many events; otherwise the request stalls before any answer — and
    /// before it is served: a client that hangs up during the stall ends it, and its request is dropped (logged
    /// with code 0), as kube-apiserver drops a request whose client went away before its write reached storage.
    Stall {
        /// Watch events sent before the stall.
        after_events: Option<usize>,
        /// How long; `None` = until cleared.
        duration: Option<Duration>,
    },
    /// After this many watch events, write `bytes` into the stream (as one chunk), then carry on. A non-watch
    /// request gets `bytes` as its whole (200) body.
    Garbage {
        /// Watch events sent before the garbage.
        after_events: usize,
        /// The garbage.
        bytes: Vec<u8>,
    },
    /// After this many watch events, send the first half of the next event and cut the connection. A non-watch
    /// request gets the first half of its body, then the cut.
    CloseMidObject {
        /// Watch events sent before the torn one.
        after_events: usize,
    },
}

impl fmt::Debug for FaultAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultAction::Error { code, retry_after } => write!(f, "Error({code}, retry_after={retry_after:?})"),
            FaultAction::CutAfterEvents(n) => write!(f, "CutAfterEvents({n})"),
            FaultAction::CutAfterBytes(n) => write!(f, "CutAfterBytes({n})"),
            FaultAction::Stall { after_events, duration } => {
                write!(f, "Stall(after_events={after_events:?}, duration={duration:?})")
            }
            FaultAction::Garbage { after_events, bytes } => {
                write!(f, "Garbage(after_events={after_events}, {} bytes)", bytes.len())
            }
            FaultAction::CloseMidObject { after_events } => write!(f, "CloseMidObject(after_events={after_events})"),
        }
    }
}
