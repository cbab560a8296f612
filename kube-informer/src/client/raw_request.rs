//! [`Client::request`]: any path of the API server — what [`Api`](super::Api) does not wrap (a subresource, an
//! aggregated API, `/version`, `/metrics`) — with the client's authentication, TLS, rate limit and error mapping.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Read};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use ureq::http;

use super::Client;
use super::Reading;
use super::abort::{Canceller, StreamStopper};
use super::api::decode_json;
use super::params::Query;
use super::request::{Method, Request};
use crate::{Error, Result, TransportErrorKind};

impl Client {
    /// A request of `method` to `path` — an absolute path below the server URL (`/api/v1/namespaces/default/pods/
    /// web/log`, `/version`), with or without a query string — built further with [`RawRequest`]'s setters, then
    /// sent with [`send`](RawRequest::send) (the body read whole) or [`stream`](RawRequest::stream).
    ///
    /// The request gets what every request of the client gets: its credentials, TLS, impersonation, proxy, rate
    /// limit, timeouts, and its errors — a non-2xx answer is [`Error::Api`] with the server's `Status`.
    ///
    /// ```no_run
    /// use kube_informer::client::{Client, Method};
    ///
    /// let client = Client::try_default()?;
    /// let version = client.request(Method::Get, "/version").send()?;
    /// let info: serde_json::Value = version.json()?;
    /// println!("server {}", info["gitVersion"]);
    ///
    /// // A subresource `Api` does not wrap, with a body:
    /// let approval = serde_json::json!({"status": {"conditions": [{"type": "Approved", "status": "True"}]}});
    /// client
    ///     .request(Method::Patch, "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-1/approval")
    ///     .body("application/merge-patch+json", serde_json::to_vec(&approval).unwrap())
    ///     .send()?;
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn request(&self, method: Method, path: &str) -> RawRequest {
        let (path, query) = match path.split_once('?') {
            Some((p, q)) => (p, q),
            None => (path, ""),
        };
        let mut problem = None;
        if !path.starts_with('/') || path.starts_with("//") {
            problem = Some(format!(
                "{path:?} is not an absolute path below the server URL (it starts with one '/')"
            ));
        } else if path.contains('#') || query.contains('#') {
            problem = Some(format!("{path:?} has a fragment ('#'); a request cannot carry one"));
        }
        let mut request = Request {
            method,
            path: path.to_owned(),
            query: query.to_owned(),
            content_type: None,
            accept: None,
            body: None,
            headers: Vec::new(),
        };
        if problem.is_some() {
            request.path = String::from("/");
        }
        RawRequest {
            client: self.clone(),
            request,
            stream_read_timeout: self.read_timeout(),
            problem,
        }
    }
}

/// A request to any path, built by [`Client::request`]: query parameters, headers and a body, then
/// [`send`](Self::send) or [`stream`](Self::stream). A setter given something unusable (a header that is not one)
/// makes the request fail with [`Error::InvalidInput`] when sent.
#[must_use = "a request does nothing until it is sent"]
pub struct RawRequest {
    client: Client,
    request: Request,
    /// The longest a streamed answer may stay silent between two reads; `None`: forever.
    stream_read_timeout: Option<Duration>,
    /// The first unusable input given to a setter: reported when sent.
    problem: Option<String>,
}

/// Headers the client itself writes: the credential, and the framing of the body.
const RESERVED_HEADERS: [http::HeaderName; 5] = [
    http::header::AUTHORIZATION,
    http::header::HOST,
    http::header::CONTENT_LENGTH,
    http::header::TRANSFER_ENCODING,
    http::header::CONNECTION,
];

impl RawRequest {
    /// Adds `key=value` to the query string, percent-encoded (repeat a key for a list: `…&key=a&key=b`).
    pub fn query(mut self, key: &str, value: &str) -> Self {
        let mut q = Query::default();
        q.push(key, value);
        let pair = q.into_string();
        if self.request.query.is_empty() {
            self.request.query = pair;
        } else {
            self.request.query.push('&');
            self.request.query.push_str(&pair);
        }
        self
    }

    /// Adds a header. `Accept` replaces the client's `application/json`; the client's own headers — `Authorization`
    /// (the credential is the client's), `Host`, `Content-Length`, `Transfer-Encoding`, `Connection` — are refused,
    /// and `Content-Type` comes with [`body`](Self::body).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        let parsed = http::HeaderName::try_from(name)
            .ok()
            .zip(http::HeaderValue::from_str(value).ok());
        match parsed {
            None => self.refuse(format!("{name:?}: {value:?} is not a valid HTTP header")),
            Some((n, _)) if RESERVED_HEADERS.contains(&n) => {
                self.refuse(format!("the {n} header is the client's own and cannot be set"))
            }
            Some((n, _)) if n == http::header::CONTENT_TYPE => {
                self.refuse("set the Content-Type with RawRequest::body".to_owned())
            }
            Some(header) => {
                self.request.headers.push(header);
                self
            }
        }
    }

    /// Sends `body` with this `Content-Type` (`application/json`, `application/merge-patch+json`, …).
    pub fn body(mut self, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        let Ok(value) = http::HeaderValue::from_str(content_type) else {
            return self.refuse(format!("{content_type:?} is not a valid Content-Type"));
        };
        self.request.headers.retain(|(n, _)| n != http::header::CONTENT_TYPE);
        self.request.headers.push((http::header::CONTENT_TYPE, value));
        self.request.body = Some(body.into());
        self
    }

    /// Sends `body` serialised as JSON (`application/json`).
    pub fn json<T: Serialize + ?Sized>(self, body: &T) -> Self {
        match serde_json::to_vec(body) {
            Ok(bytes) => self.body("application/json", bytes),
            Err(e) => self.refuse(format!("the body cannot be serialised: {e}")),
        }
    }

    /// The longest a [`stream`](Self::stream)ed answer may stay silent between two reads: the client's
    /// [`Timeouts::read`](super::Timeouts::read) unless set here; `None` waits forever (for a stream that may stay
    /// silent for long, as a followed log does — stop it with its [`StreamStopper`]). [`send`](Self::send) keeps the
    /// client's timeouts.
    pub fn stream_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.stream_read_timeout = timeout;
        self
    }

    fn refuse(mut self, problem: String) -> Self {
        self.problem.get_or_insert(problem);
        self
    }

    fn checked(&self) -> Result<()> {
        match &self.problem {
            Some(p) => Err(Error::InvalidInput(format!("{}: {p}", self.request.describe()))),
            None => Ok(()),
        }
    }

    /// Sends the request and reads the whole answer (at most
    /// [`Config::max_response_size`](super::Config::max_response_size) bytes). A non-2xx answer is [`Error::Api`] with the server's `Status`;
    /// redirects are refused. Bounded by [`Timeouts::request`](super::Timeouts::request) when the client has one.
    pub fn send(self) -> Result<RawResponse> {
        self.checked()?;
        let client = &self.client;
        let cancel = client.transport.canceller.signal();
        let response = client.execute(&self.request, None, &cancel, Reading::Whole)?;
        let (parts, body) = response.into_parts();
        let body = client.read_whole(body, &cancel, &self.request.describe())?;
        Ok(RawResponse {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        })
    }

    /// Sends the request and returns the answer as it arrives: a blocking [`Read`] over the body, on a connection
    /// of its own that [`ResponseStream::stopper`] (or the client's [`AbortHandle`](super::AbortHandle)) closes
    /// from any thread. The request takes a token of the client's rate limit; reading the body takes none. A
    /// non-2xx answer is [`Error::Api`] here, with the server's `Status`.
    pub fn stream(self) -> Result<ResponseStream> {
        self.checked()?;
        ResponseStream::open(&self.client, &self.request, Reading::Stream(self.stream_read_timeout))
    }
}

impl fmt::Debug for RawRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawRequest")
            .field("method", &self.request.method)
            .field("path", &self.request.path)
            .field("query", &self.request.query)
            .field(
                "headers",
                &self.request.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("body_bytes", &self.request.body.as_ref().map(Vec::len))
            .finish()
    }
}

/// A whole 2xx answer to a [`RawRequest`].
#[derive(Clone)]
pub struct RawResponse {
    status: u16,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

impl RawResponse {
    /// The HTTP status code (2xx).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The first value of header `name` (any case), when it is there and is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body, owned.
    pub fn into_body(self) -> Vec<u8> {
        self.body
    }

    /// The body as text (invalid UTF-8 replaced by `�`).
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }

    /// The body decoded from JSON; [`Error::Decode`] (with the offset) when it does not fit `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T> {
        decode_json(&self.body)
    }
}

impl fmt::Debug for RawResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawResponse")
            .field("status", &self.status)
            .field("body_bytes", &self.body.len())
            .finish_non_exhaustive()
    }
}

/// A 2xx answer whose body is read as it arrives ([`RawRequest::stream`],
/// [`Api::log_stream`](super::Api::log_stream)).
///
/// `read` blocks until bytes arrive and returns `Ok(0)` once the server ended the body. Its errors carry this
/// crate's [`Error`] (`io::Error::get_ref` / `into_inner` and a downcast give it back): after
/// [`StreamStopper::stop`] or the client's abort, reads fail at once with [`Error::Stopped`] (kind
/// `ConnectionAborted`); a silent connection past the read limit fails with a transport timeout (kind `TimedOut`).
/// Dropping the stream closes its connection.
pub struct ResponseStream {
    status: u16,
    headers: http::HeaderMap,
    reader: ureq::BodyReader<'static>,
    canceller: Arc<Canceller>,
    client: Client,
    /// `GET /path` for messages.
    what: String,
    /// Once true (end of body, or an error), reads return what they returned last: `Ok(0)` or the error again.
    ended: bool,
}

impl ResponseStream {
    /// Sends `req` on a connection of its own and returns its answer, the body unread.
    pub(super) fn open(client: &Client, req: &Request, reading: Reading) -> Result<ResponseStream> {
        let (response, canceller) = client.request_dedicated(req, reading)?;
        let (parts, body) = response.into_parts();
        Ok(ResponseStream {
            status: parts.status.as_u16(),
            headers: parts.headers,
            reader: body.into_reader(),
            canceller,
            client: client.clone(),
            what: req.describe(),
            ended: false,
        })
    }

    /// The HTTP status code (2xx).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The first value of header `name` (any case), when it is there and is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// A handle that ends this stream from any thread: a read blocked in it returns within milliseconds.
    pub fn stopper(&self) -> StreamStopper {
        StreamStopper {
            inner: Arc::clone(&self.canceller),
        }
    }
}

impl Read for ResponseStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let signal = self.canceller.signal();
        if signal.is_cancelled() {
            self.ended = true;
            return Err(into_io(self.client.stopped(&self.what)));
        }
        if self.ended || buf.is_empty() {
            return Ok(0);
        }
        match self.reader.read(buf) {
            Ok(0) => {
                self.ended = true;
                Ok(0)
            }
            Ok(n) => Ok(n),
            Err(e) => Err(into_io(self.client.map_io(e, &signal, &self.what, None))),
        }
    }
}

impl fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseStream")
            .field("request", &self.what)
            .field("status", &self.status)
            .field("stopped", &self.canceller.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// This crate's error as an I/O error of the closest kind, the error itself inside.
pub(crate) fn into_io(e: Error) -> io::Error {
    let kind = match &e {
        Error::Stopped => io::ErrorKind::ConnectionAborted,
        Error::Transport(t) => match t.kind {
            TransportErrorKind::Timeout => io::ErrorKind::TimedOut,
            TransportErrorKind::ConnectionLost => io::ErrorKind::ConnectionReset,
            TransportErrorKind::ConnectionRefused => io::ErrorKind::ConnectionRefused,
            TransportErrorKind::Aborted => io::ErrorKind::ConnectionAborted,
            _ => io::ErrorKind::Other,
        },
        Error::Decode(_) => io::ErrorKind::InvalidData,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}
