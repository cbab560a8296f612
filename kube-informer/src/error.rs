//! The crate's one error type.
//!
//! Every fallible call in kube-informer returns [`Error`]. When the API server answered with a Kubernetes `Status`
//! (410 Expired, 404, 409 Conflict, 422, 429…), the whole status is kept in [`Error::Api`], so callers can branch
//! on [`Status::code`] and [`Status::reason`] exactly as client-go's `apierrors.IsXxx` helpers do; the helper methods
//! on [`Error`] ([`Error::is_expired`], [`Error::is_conflict`], …) cover the common cases.
//!
//! No variant ever carries a token, password or private key: the credential code builds its messages from file
//! names and field names only.

use std::fmt;
use std::time::Duration;

use crate::object::{OwnerReferenceError, Status};

/// The longest wait a server's `Retry-After` (header or `details.retryAfterSeconds`) can impose: 5 minutes.
///
/// A server, proxy or load balancer may ask for anything (`Retry-After: 999999` is 11.6 days); honoured in full, an
/// informer would sit on a stale cache that long while `has_synced()` says all is well. Five minutes is longer than
/// any real throttling asks for (kube-apiserver's priority and fairness answers `Retry-After: 1`), and short enough
/// that a cache never falls that far behind unnoticed. [`Error::retry_after`] applies it, so every retry in the crate
/// (the reflector's back-off, the event recorder) does.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(5 * 60);

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in kube-informer.
///
/// ```
/// use kube_informer::{Error, object::Status};
///
/// let err = Error::Api(Box::new(Status::failure(410, "Expired", "too old resource version: 5 (10)")));
/// assert!(err.is_expired());
/// assert_eq!(err.to_string(), "API error 410 Expired: too old resource version: 5 (10)");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The API server answered with an error `Status` (any non-2xx answer; when the body was not a `Status`,
    /// one is synthesised from the HTTP status code and the start of the body).
    Api(Box<Status>),
    /// The request never got an answer: connection refused, DNS, TLS handshake, reset, I/O.
    Transport(Box<TransportError>),
    /// A watch received no byte (no event, no bookmark) for longer than its idle limit: the connection is presumed
    /// dead (half-open) and was closed.
    WatchIdle(Duration),
    /// The server sent bytes that are not what the Kubernetes API promises (bad JSON, truncated stream, an object
    /// over the size limit).
    Decode(Box<DecodeError>),
    /// A configuration problem: kubeconfig, in-cluster files, TLS material. The message names the file, context and
    /// field at fault.
    Config(Box<ConfigError>),
    /// Obtaining credentials failed (exec plugin, token file).
    Auth(String),
    /// The caller passed something unusable (a bad selector, an empty name, a missing namespace).
    InvalidInput(String),
    /// A request body could not be serialised.
    Serialize(String),
    /// An owner reference could not be set (another controller, an orphan not to adopt, another namespace, an
    /// owner never stored).
    OwnerReference(Box<OwnerReferenceError>),
    /// The operation was stopped because its owner is shutting down.
    Stopped,
    /// A request of a client fenced by a Lease's term ([`Client::fenced`](crate::client::Client::fenced), every
    /// client a reconcile gets from its [`Context`](crate::controller::Context)) was refused, or aborted in flight,
    /// because the term was over: this replica no longer owns the work, another one may. Not worth retrying here —
    /// a controller requeues the key for whoever owns it next.
    OwnershipLost(Box<OwnershipLost>),
}

impl Error {
    /// The server's `Status`, when the server answered with one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api(s) => Some(s),
            _ => None,
        }
    }

    /// The HTTP status code of an [`Error::Api`].
    pub fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }

    /// 410 Gone / reason `Expired` or `Gone`: the resourceVersion or continue token is too old. The reflector answers
    /// this with a relist.
    pub fn is_expired(&self) -> bool {
        self.status()
            .is_some_and(|s| s.code == 410 || s.reason == "Expired" || s.reason == "Gone")
    }

    /// The server refused a resourceVersion newer than it has ("Too large resource version"), as an API server
    /// whose watch cache lags behind answers. client-go treats it like an expired version: relist from `""`.
    pub fn is_too_large_resource_version(&self) -> bool {
        self.status().is_some_and(|s| {
            s.details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.reason == "ResourceVersionTooLarge"))
                || s.message.contains("Too large resource version")
        })
    }

    /// 404 Not Found.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// 409 with reason `Conflict` (stale resourceVersion on a write).
    pub fn is_conflict(&self) -> bool {
        self.status()
            .is_some_and(|s| s.code == 409 && s.reason != "AlreadyExists")
    }

    /// 409 with reason `AlreadyExists`.
    pub fn is_already_exists(&self) -> bool {
        self.status().is_some_and(|s| s.reason == "AlreadyExists")
    }

    /// 429 Too Many Requests.
    pub fn is_too_many_requests(&self) -> bool {
        self.code() == Some(429)
    }

    /// 401 Unauthorized.
    pub fn is_unauthorized(&self) -> bool {
        self.code() == Some(401)
    }

    /// 403 Forbidden.
    pub fn is_forbidden(&self) -> bool {
        self.code() == Some(403)
    }

    /// How long the server asked us to wait (`Retry-After` header or `details.retryAfterSeconds`), at most
    /// [`MAX_RETRY_AFTER`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use kube_informer::{Error, MAX_RETRY_AFTER, object::{Status, StatusDetails}};
    ///
    /// let throttled = |secs| {
    ///     let mut s = Status::failure(429, "TooManyRequests", "slow down");
    ///     s.details = Some(StatusDetails { retry_after_seconds: Some(secs), ..Default::default() });
    ///     Error::Api(Box::new(s))
    /// };
    /// assert_eq!(throttled(2).retry_after(), Some(Duration::from_secs(2)));
    /// assert_eq!(throttled(999_999).retry_after(), Some(MAX_RETRY_AFTER));
    /// assert_eq!(throttled(0).retry_after(), None);
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        self.status()
            .and_then(|s| s.details.as_ref())
            .and_then(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(s.unsigned_abs()).min(MAX_RETRY_AFTER))
    }

    /// Worth retrying the same request after a back-off, without relisting: 429, 5xx, connection refused, a dead
    /// connection, an idle watch. (client-go's `isWatchErrorRetriable` retries 429 and a refused connection; 5xx is
    /// retried here too, as an API server restarting behind a load balancer answers 502 or 503 for a moment.)
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Api(s) => s.code == 429 || s.code >= 500,
            Error::Transport(_) | Error::WatchIdle(_) | Error::Decode(_) => true,
            _ => false,
        }
    }

    /// [`Error::OwnershipLost`]: a fenced request refused or aborted because its Lease's term was over.
    pub fn is_ownership_lost(&self) -> bool {
        matches!(self, Error::OwnershipLost(_))
    }

    /// Wraps a configuration error.
    pub(crate) fn config(err: ConfigError) -> Error {
        Error::Config(Box::new(err))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api(s) => write!(f, "API error {s}"),
            Error::Transport(e) => write!(f, "{e}"),
            Error::WatchIdle(d) => write!(f, "watch received nothing for {d:?}; connection presumed dead"),
            Error::Decode(e) => write!(f, "{e}"),
            Error::Config(e) => write!(f, "{e}"),
            Error::Auth(m) => write!(f, "authentication failed: {m}"),
            Error::InvalidInput(m) => write!(f, "invalid input: {m}"),
            Error::Serialize(m) => write!(f, "cannot serialise request body: {m}"),
            Error::OwnerReference(e) => write!(f, "owner reference: {e}"),
            Error::Stopped => f.write_str("stopped"),
            Error::OwnershipLost(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Transport(e) => Some(&**e),
            Error::Decode(e) => Some(&**e),
            Error::Config(e) => Some(&**e),
            Error::OwnerReference(e) => Some(&**e),
            Error::OwnershipLost(e) => Some(&**e),
            _ => None,
        }
    }
}

impl From<TransportError> for Error {
    fn from(e: TransportError) -> Self {
        Error::Transport(Box::new(e))
    }
}

/// A body that turned out to be a Kubernetes `Status` ([`DecodeErrorKind::Status`]) becomes [`Error::Api`]; every
/// other decode error becomes [`Error::Decode`].
impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        match e.kind {
            DecodeErrorKind::Status(status) => Error::Api(status),
            _ => Error::Decode(Box::new(e)),
        }
    }
}

/// `?` on [`set_controller_reference`](crate::object::set_controller_reference) in a function returning this crate's
/// `Result`.
///
/// ```
/// use kube_informer::object::core::ConfigMap;
/// use kube_informer::object::{set_controller_reference, ObjectMeta, OwnerReferenceError};
/// use kube_informer::Error;
///
/// fn own(owner: &ConfigMap, cm: &mut ConfigMap) -> kube_informer::Result<()> {
///     set_controller_reference(owner, cm)?;
///     Ok(())
/// }
/// let draft = ConfigMap::new(ObjectMeta::namespaced("ns", "never-created"));
/// let e = own(&draft, &mut ConfigMap::new(ObjectMeta::namespaced("ns", "copy"))).unwrap_err();
/// assert!(matches!(e, Error::OwnerReference(ref o) if **o == OwnerReferenceError::OwnerNotPersisted));
/// ```
impl From<OwnerReferenceError> for Error {
    fn from(e: OwnerReferenceError) -> Self {
        Error::OwnerReference(Box::new(e))
    }
}

/// A request a Lease's term no longer covered ([`Error::OwnershipLost`]).
///
/// ```
/// use kube_informer::{Error, OwnershipLost};
///
/// let e = Error::from(OwnershipLost::new("leases/my-controller", "PATCH /api/v1/namespaces/a/configmaps/b", true));
/// assert!(e.is_ownership_lost() && !e.is_retriable());
/// assert_eq!(
///     e.to_string(),
///     "ownership lost: PATCH /api/v1/namespaces/a/configmaps/b aborted in flight: the term of Lease \
///      leases/my-controller ended (the server may have applied it before the abort reached it)"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OwnershipLost {
    /// The Lease whose term ended, `namespace/name`.
    pub lease: String,
    /// The request, `METHOD /path` (`PATCH /api/v1/namespaces/default/configmaps/settings`).
    pub request: String,
    /// `true`: the request was on the wire when the term ended and was aborted there — a server that read it before
    /// the abort reached it may have applied it (kube-apiserver drops a request whose client went away, unless its
    /// write had reached storage). `false`: it was never sent.
    pub in_flight: bool,
    /// Why it was not sent, when that was not simply the term being over.
    pub(crate) detail: Option<&'static str>,
}

impl OwnershipLost {
    /// The request `request` (`METHOD /path`), refused (`in_flight: false`) or aborted (`true`) because the term of
    /// the Lease `lease` ended.
    pub fn new(lease: impl Into<String>, request: impl Into<String>, in_flight: bool) -> Self {
        OwnershipLost {
            lease: lease.into(),
            request: request.into(),
            in_flight,
            detail: None,
        }
    }
}

impl fmt::Display for OwnershipLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (request, lease) = (&self.request, &self.lease);
        if self.in_flight {
            return write!(
                f,
                "ownership lost: {request} aborted in flight: the term of Lease {lease} ended (the server may have \
                 applied it before the abort reached it)"
            );
        }
        write!(f, "ownership lost: {request} not sent: ")?;
        match self.detail {
            Some(detail) => write!(f, "{detail} (Lease {lease})"),
            None => write!(f, "the term of Lease {lease} is over"),
        }
    }
}

impl std::error::Error for OwnershipLost {}

impl From<OwnershipLost> for Error {
    fn from(e: OwnershipLost) -> Self {
        Error::OwnershipLost(Box::new(e))
    }
}

/// What kind of transport failure happened; decides retry behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// TCP connection refused: the API server is down or restarting.
    ConnectionRefused,
    /// Host name resolution failed.
    Dns,
    /// TLS handshake or certificate verification failed.
    Tls,
    /// A connect or read timed out.
    Timeout,
    /// The connection was reset or closed unexpectedly.
    ConnectionLost,
    /// The request was aborted from another thread (shutdown).
    Aborted,
    /// A redirect was refused (credentials are never sent to another host).
    Redirect,
    /// The body was larger than the configured limit.
    TooLarge,
    /// Anything else.
    Other,
}

/// A request that never got an HTTP answer, or whose body could not be read.
#[derive(Clone, Debug)]
pub struct TransportError {
    /// What went wrong, coarsely.
    pub kind: TransportErrorKind,
    /// A human-readable description (never contains credentials).
    pub message: String,
}

impl TransportError {
    /// A new transport error.
    pub fn new(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        TransportError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            TransportErrorKind::ConnectionRefused => "connection refused",
            TransportErrorKind::Dns => "name resolution failed",
            TransportErrorKind::Tls => "TLS error",
            TransportErrorKind::Timeout => "timed out",
            TransportErrorKind::ConnectionLost => "connection lost",
            TransportErrorKind::Aborted => "request aborted",
            TransportErrorKind::Redirect => "redirect refused",
            TransportErrorKind::TooLarge => "response too large",
            TransportErrorKind::Other => "transport error",
        };
        write!(f, "{what}: {}", self.message)
    }
}

impl std::error::Error for TransportError {}

/// Bytes from the server that could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Offset of the problem in the stream (bytes from the start of the response body).
    pub offset: u64,
    /// What was wrong.
    pub kind: DecodeErrorKind,
}

/// The kinds of [`DecodeError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The bytes are not valid JSON (or not the expected JSON shape); the message comes from serde_json.
    Json(String),
    /// The stream is not valid UTF-8.
    InvalidUtf8,
    /// The stream ended inside an object.
    Truncated,
    /// One object is larger than the configured maximum.
    TooLarge {
        /// The configured maximum size in bytes.
        limit: usize,
    },
    /// The body is a Kubernetes `Status` where a list was expected (the server reported an error with a success
    /// code). Converting the [`DecodeError`] into an [`Error`] gives [`Error::Api`] with this status.
    Status(Box<Status>),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DecodeErrorKind::Json(m) => write!(f, "malformed JSON at byte {}: {m}", self.offset),
            DecodeErrorKind::InvalidUtf8 => write!(f, "invalid UTF-8 at byte {}", self.offset),
            DecodeErrorKind::Truncated => write!(f, "stream ended inside an object at byte {}", self.offset),
            DecodeErrorKind::TooLarge { limit } => {
                write!(f, "object at byte {} exceeds the {limit}-byte limit", self.offset)
            }
            DecodeErrorKind::Status(s) => write!(f, "expected a list, the server sent a Status: {s}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A configuration error: which file, which context, which field, and what is wrong with it.
///
/// The message never contains the value of a secret field, only its name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigError {
    /// The file at fault (kubeconfig, token file, certificate file), when there is one.
    pub file: Option<std::path::PathBuf>,
    /// The kubeconfig context being loaded, when there is one.
    pub context: Option<String>,
    /// The field at fault, as written in the kubeconfig (`users[alice].client-key-data`).
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// A new error with only a message.
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError {
            message: message.into(),
            ..Default::default()
        }
    }

    /// Sets the file at fault.
    #[must_use]
    pub fn file(mut self, file: impl Into<std::path::PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Sets the context being loaded.
    #[must_use]
    pub fn context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    /// Sets the field at fault.
    #[must_use]
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("config error")?;
        if let Some(file) = &self.file {
            write!(f, " in {}", file.display())?;
        }
        if let Some(ctx) = &self.context {
            write!(f, " (context {ctx:?})")?;
        }
        if let Some(field) = &self.field {
            write!(f, " at {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::config(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{StatusCause, StatusDetails};

    #[test]
    fn error_stays_small() {
        // Results of Error travel through every hot path; keep the enum at most four words.
        assert!(std::mem::size_of::<Error>() <= 32, "{}", std::mem::size_of::<Error>());
    }

    #[test]
    fn classifies_statuses() {
        let expired = Error::Api(Box::new(Status::failure(410, "Expired", "too old")));
        assert!(expired.is_expired() && !expired.is_conflict() && !expired.is_retriable());
        let conflict = Error::Api(Box::new(Status::failure(409, "Conflict", "stale")));
        assert!(conflict.is_conflict() && !conflict.is_already_exists());
        let exists = Error::Api(Box::new(Status::failure(409, "AlreadyExists", "dup")));
        assert!(exists.is_already_exists() && !exists.is_conflict());
        let mut throttled = Status::failure(429, "TooManyRequests", "slow down");
        throttled.details = Some(StatusDetails {
            retry_after_seconds: Some(3),
            ..Default::default()
        });
        let throttled = Error::Api(Box::new(throttled));
        assert!(throttled.is_too_many_requests() && throttled.is_retriable());
        assert_eq!(throttled.retry_after(), Some(Duration::from_secs(3)));
        let mut too_large = Status::failure(504, "Timeout", "Too large resource version: 20, current: 10");
        too_large.details = Some(StatusDetails {
            causes: vec![StatusCause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            ..Default::default()
        });
        assert!(Error::Api(Box::new(too_large)).is_too_large_resource_version());
        let refused = Error::from(TransportError::new(
            TransportErrorKind::ConnectionRefused,
            "127.0.0.1:1",
        ));
        assert!(refused.is_retriable());
        assert!(!Error::InvalidInput("x".into()).is_retriable());
    }

    #[test]
    fn displays_config_errors_with_location() {
        let e = ConfigError::new("not valid base64")
            .file("/home/me/.kube/config")
            .context("kind-kind")
            .field("users[kind-kind].client-key-data");
        assert_eq!(
            e.to_string(),
            "config error in /home/me/.kube/config (context \"kind-kind\") at users[kind-kind].client-key-data: \
             not valid base64"
        );
    }

    #[test]
    fn displays_decode_errors_with_offset() {
        let e = DecodeError {
            offset: 17,
            kind: DecodeErrorKind::TooLarge { limit: 1024 },
        };
        assert_eq!(e.to_string(), "object at byte 17 exceeds the 1024-byte limit");
    }

    #[test]
    fn a_status_body_becomes_an_api_error() {
        let e = DecodeError {
            offset: 0,
            kind: DecodeErrorKind::Status(Box::new(Status::failure(410, "Expired", "too old"))),
        };
        assert_eq!(
            e.to_string(),
            "expected a list, the server sent a Status: 410 Expired: too old"
        );
        assert!(Error::from(e).is_expired());
        let e = DecodeError {
            offset: 3,
            kind: DecodeErrorKind::Truncated,
        };
        assert!(matches!(Error::from(e), Error::Decode(d) if d.offset == 3));
    }
}
