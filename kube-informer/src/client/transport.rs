//! The HTTP transport: ureq agents with our own connectors, and the mapping of answers and failures to [`Error`].
//!
//! Connector chain of every agent (ureq's `unversioned::transport`):
//!
//! 1. ureq's SOCKS and HTTP `CONNECT` proxy connectors (when a proxy is configured);
//! 2. [`AbortableTcp`]: ureq's TCP connector run on a helper thread, so an abort returns at once even while a TCP
//!    connect to an unreachable address is pending (the socket is registered with the agent, so
//!    `Agent::shutdown` interrupts everything after that);
//! 3. [`KubeTls`]: TLS with the rustls configuration of [`tls`](super::tls), including `tls-server-name`;
//! 4. [`Unseal`]: writes the request's credential in place of its placeholder (see [`sealed`](super::sealed)).
//!
//! Name resolution goes through [`AbortableResolver`] for the same reason as the TCP connect.
//!
//! Policies: redirects are never followed (a 3xx is an error of kind `Redirect`, so credentials never reach another
//! host); any non-2xx answer becomes [`Error::Api`] with the server's `Status` (or one synthesised from the code and
//! the start of the body), and `Retry-After` fills `details.retryAfterSeconds`.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::sync::Arc;

use crossbeam_channel::select;
use log::debug;
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::time::Duration as UreqDuration;
use ureq::unversioned::transport::{
    Buffers, ConnectProxyConnector, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, SocksConnector,
    TcpConnector, Transport, TransportAdapter,
};

use super::abort::CancelSignal;
use super::sealed::Unseal;
use super::tls::TlsSetup;
use crate::object::Status;
use crate::{Error, Result, TransportError, TransportErrorKind};

/// Builds an agent with the client's configuration whose connections use its TLS setup and put its sealed
/// credentials on the wire, and whose resolve and connect steps give up when `cancel` fires.
pub(crate) fn build_agent(shared: &super::Shared, cancel: &CancelSignal) -> ureq::Agent {
    let resolver = AbortableResolver { cancel: cancel.clone() };
    let chain = ()
        .chain(SocksConnector::default())
        .chain(ConnectProxyConnector::default())
        .chain(AbortableTcp {
            cancel: cancel.clone(),
            resolver: resolver.clone(),
        })
        .chain(KubeTls {
            tls: Arc::clone(&shared.tls),
        })
        .chain(Unseal {
            seals: Arc::clone(&shared.seals),
        });
    ureq::Agent::with_parts(shared.agent_config.clone(), chain, resolver)
}

/// The error a helper-thread wait returns when cancelled.
fn aborted() -> ureq::Error {
    ureq::Error::Io(io::Error::new(io::ErrorKind::Interrupted, "aborted"))
}

/// Name resolution on a helper thread; the caller stops waiting when cancelled.
#[derive(Clone, Debug)]
struct AbortableResolver {
    cancel: CancelSignal,
}

impl Resolver for AbortableResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        if self.cancel.is_cancelled() {
            return Err(aborted());
        }
        let literal = uri.host().is_some_and(|h| bare_host(h).parse::<IpAddr>().is_ok());
        let untimed = NextTimeout {
            after: UreqDuration::NotHappening,
            ..timeout
        };
        if literal {
            // No lookup happens for an IP address: nothing to wait for.
            return DefaultResolver::default().resolve(uri, config, untimed);
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        let (uri_owned, config_owned) = (uri.clone(), config.clone());
        std::thread::Builder::new()
            .name("client-resolve".into())
            .spawn(move || {
                let _ = tx.send(DefaultResolver::default().resolve(&uri_owned, &config_owned, untimed));
            })
            .map_err(ureq::Error::Io)?;
        let deadline = match timeout.after {
            UreqDuration::Exact(d) => crossbeam_channel::after(d),
            UreqDuration::NotHappening => crossbeam_channel::never(),
        };
        select! {
            recv(rx) -> r => r.unwrap_or(Err(ureq::Error::HostNotFound)),
            recv(deadline) -> _ => Err(ureq::Error::Timeout(timeout.reason)),
            recv(self.cancel.receiver()) -> _ => Err(aborted()),
        }
    }
}

/// ureq's TCP connector on a helper thread, so that a cancelled caller does not wait for a pending connect.
#[derive(Debug)]
struct AbortableTcp {
    cancel: CancelSignal,
    resolver: AbortableResolver,
}

impl<In: Transport> Connector<In> for AbortableTcp {
    type Out = Either<In, Box<dyn Transport>>;

    fn connect(&self, details: &ConnectionDetails<'_>, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(t) = chained {
            return Ok(Some(Either::A(t)));
        }
        if self.cancel.is_cancelled() {
            return Err(aborted());
        }
        let uri = details.uri.clone();
        let addrs = details.addrs.clone();
        let config = details.config.clone();
        let request_level = details.request_level;
        let now = details.now;
        let timeout = details.timeout;
        let current_time = details.current_time.clone();
        let run_connector = details.run_connector.clone();
        let register_shutdown = details.register_shutdown.clone();
        let resolver = self.resolver.clone();
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::Builder::new()
            .name("client-connect".into())
            .spawn(move || {
                let d = ConnectionDetails {
                    uri: &uri,
                    addrs,
                    config: &config,
                    request_level,
                    resolver: &resolver,
                    now,
                    timeout,
                    current_time,
                    run_connector,
                    register_shutdown,
                };
                let r = TcpConnector::default()
                    .connect(&d, None::<()>)
                    .map(|o| o.map(|t| Box::new(t) as Box<dyn Transport>));
                // A cancelled caller is gone: the connection is dropped (closed) here.
                let _ = tx.send(r);
            })
            .map_err(ureq::Error::Io)?;
        select! {
            recv(rx) -> r => Ok(r.unwrap_or(Err(ureq::Error::ConnectionFailed))?.map(Either::B)),
            recv(self.cancel.receiver()) -> _ => Err(aborted()),
        }
    }
}

/// TLS with our rustls configuration: the cluster's CA, client certificate and `tls-server-name` for the API server;
/// Mozilla roots for any other host (an `https://` proxy).
struct KubeTls {
    tls: Arc<TlsSetup>,
}

impl fmt::Debug for KubeTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeTls").field("tls", &self.tls).finish()
    }
}

impl<In: Transport> Connector<In> for KubeTls {
    type Out = Either<In, TlsTransport>;

    fn connect(&self, details: &ConnectionDetails<'_>, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = bare_host(details.uri.host().unwrap_or_default()).to_ascii_lowercase();
        let (config, name) = if host == self.tls.cluster_host {
            (Arc::clone(&self.tls.config), self.tls.server_name.clone())
        } else {
            let name = ServerName::try_from(host).map_err(|_| ureq::Error::Tls("invalid proxy host name"))?;
            (Arc::clone(&self.tls.other_hosts), name)
        };
        let mut conn = ClientConnection::new(config, name).map_err(ureq::Error::Rustls)?;
        let mut sock = TransportAdapter::new(Box::new(transport) as Box<dyn Transport>, details.current_time.clone());
        sock.set_timeout(details.timeout);
        if let Err(e) = conn.complete_io(&mut sock) {
            return Err(match rustls_error_in(&e) {
                Some(tls) => ureq::Error::Rustls(tls),
                None => ureq::Error::from(e),
            });
        }
        let buffers = LazyBuffers::new(details.config.input_buffer_size(), details.config.output_buffer_size());
        Ok(Some(Either::B(TlsTransport {
            buffers,
            stream: StreamOwned { conn, sock },
        })))
    }
}

/// The rustls error inside an I/O error, if any.
fn rustls_error_in(e: &io::Error) -> Option<rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>().cloned()
}

/// A TLS connection over any ureq transport.
struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsTransport").finish()
    }
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let mut amount = self.stream.read(input)?;
        if amount > 0 {
            amount += take_received(&mut self.stream, &mut input[amount..]);
        }
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

/// Moves into `buf` the plaintext of TLS records already received — decrypted by rustls, or still sealed in the
/// transport's buffer — without reading the socket; returns how many bytes.
///
/// A rustls read decrypts what one `read_tls` takes in, about one full record (16 KB) at most, while a watch burst
/// brings many records per socket read. Each read that returns less than what has arrived costs the watch's reader a
/// round through the HTTP layer and, worse, a wake-up of the informer's processing thread (it is woken whenever the
/// reader may block). Errors are left for the next read, which reports them: rustls keeps a connection's error.
fn take_received(stream: &mut StreamOwned<ClientConnection, TransportAdapter>, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match stream.conn.reader().read(&mut buf[n..]) {
            Ok(0) => break, // close_notify: the next read reports the end
            Ok(k) => {
                n += k;
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {} // nothing decrypted is left
            Err(_) => break,
        }
        // Open the next record only if its bytes are here already: reading the socket could block.
        if stream.sock.get_mut().buffers().input().is_empty() {
            break;
        }
        if stream.conn.read_tls(&mut stream.sock).is_err() || stream.conn.process_new_packets().is_err() {
            break;
        }
    }
    n
}

/// What a request was doing when it failed; shapes the error.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FailureContext<'a> {
    /// `GET /api/v1/...` for messages.
    pub(crate) what: &'a str,
    /// The TLS server name, for certificate messages.
    pub(crate) server_name: &'a str,
    /// `host:port` of the server URL: every transport error names it.
    pub(crate) endpoint: &'a str,
    /// An `http://` URL, before any answer: a server that does not answer in HTTP may be speaking TLS.
    pub(crate) plain_http: bool,
    /// For a watch: the idle limit, reported as [`Error::WatchIdle`] when a read times out.
    pub(crate) idle_limit: Option<std::time::Duration>,
}

/// Maps a ureq error to ours. A cancelled request is always [`Error::Stopped`], whatever ureq saw. Messages name the
/// request and the server's `host:port`, and say what to check where there is something to check.
pub(crate) fn map_error(e: ureq::Error, cancel: &CancelSignal, ctx: &FailureContext<'_>) -> Error {
    if cancel.is_cancelled() {
        return Error::Stopped;
    }
    use TransportErrorKind as K;
    let (what, at) = (ctx.what, ctx.endpoint);
    let t = |kind, message: String| Error::from(TransportError::new(kind, message));
    // A TLS server answering a plain HTTP request sends TLS bytes or hangs up: say so.
    let tls_hint = || {
        if ctx.plain_http {
            format!(" — {at} may be an HTTPS port: the server URL says http://; try https://")
        } else {
            String::new()
        }
    };
    match e {
        ureq::Error::Timeout(ureq::Timeout::PerRead) if ctx.idle_limit.is_some() => {
            Error::WatchIdle(ctx.idle_limit.unwrap_or_default())
        }
        ureq::Error::Timeout(reason) => t(
            K::Timeout,
            format!("{what} on {at}: no answer within the {} timeout", timeout_name(reason)),
        ),
        ureq::Error::HostNotFound => t(K::Dns, format!("{what} on {at}: the host name does not resolve")),
        ureq::Error::Rustls(tls) => t(
            K::Tls,
            format!("{what} on {at}: {}", super::tls::explain(&tls, ctx.server_name)),
        ),
        ureq::Error::Tls(m) => t(K::Tls, format!("{what} on {at}: {m}")),
        ureq::Error::Pem(_) => t(K::Tls, format!("{what} on {at}: unreadable PEM")),
        ureq::Error::TooManyRedirects | ureq::Error::RedirectFailed => {
            t(K::Redirect, format!("{what} on {at}: redirects are not followed"))
        }
        ureq::Error::BodyExceedsLimit(n) => t(K::TooLarge, format!("{what} on {at}: body exceeds {n} bytes")),
        ureq::Error::Io(io) => {
            if let Some(tls) = rustls_error_in(&io) {
                return t(
                    K::Tls,
                    format!("{what} on {at}: {}", super::tls::explain(&tls, ctx.server_name)),
                );
            }
            let kind = match io.kind() {
                io::ErrorKind::ConnectionRefused => K::ConnectionRefused,
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => K::Timeout,
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof
                | io::ErrorKind::NotConnected => K::ConnectionLost,
                io::ErrorKind::Interrupted => K::Aborted,
                // std's resolver reports a failed lookup (getaddrinfo) as an uncategorised I/O error.
                _ if io.to_string().starts_with("failed to lookup address information") => K::Dns,
                _ => K::Other,
            };
            let hint = match kind {
                K::ConnectionRefused => {
                    " — nothing accepts connections there: is the API server running, and is the server URL right?"
                        .to_owned()
                }
                K::ConnectionLost => tls_hint(),
                K::Dns => " — check the host name of the server URL".to_owned(),
                _ => String::new(),
            };
            t(kind, format!("{what} on {at}: {io}{hint}"))
        }
        ureq::Error::Protocol(p) => t(
            K::ConnectionLost,
            format!("{what} on {at}: the answer is not HTTP ({p}){}", tls_hint()),
        ),
        ureq::Error::ConnectionFailed => t(K::ConnectionRefused, format!("{what}: cannot connect to {at}")),
        ureq::Error::ConnectProxyFailed(m) => t(K::ConnectionRefused, format!("{what} on {at}: proxy: {m}")),
        ureq::Error::InvalidProxyUrl => t(K::Other, format!("{what}: invalid proxy URL")),
        other => t(K::Other, format!("{what} on {at}: {other}")),
    }
}

/// A ureq timeout as a message names it.
fn timeout_name(reason: ureq::Timeout) -> &'static str {
    match reason {
        ureq::Timeout::Resolve => "name resolution",
        ureq::Timeout::Connect => "connect",
        ureq::Timeout::Global | ureq::Timeout::PerCall => "request",
        ureq::Timeout::PerRead | ureq::Timeout::RecvResponse | ureq::Timeout::RecvBody => "read",
        ureq::Timeout::PerWrite | ureq::Timeout::SendRequest | ureq::Timeout::SendBody => "send",
        _ => "request",
    }
}

/// Reads a whole body, failing with `TooLarge` past `limit` bytes.
pub(crate) fn read_limited(reader: &mut impl Read, limit: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let n = reader.take(limit as u64 + 1).read_to_end(&mut out)?;
    if n > limit {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("body exceeds {limit} bytes"),
        ));
    }
    Ok(out)
}

/// The error for a non-2xx answer: the server's `Status` when the body is one, else a `Status` synthesised from the
/// code and the start of the body. A `Retry-After` header fills `details.retryAfterSeconds` when the body has none.
pub(crate) fn status_error(code: u16, retry_after: Option<&str>, body: &[u8]) -> Error {
    let parsed = serde_json::from_slice::<Status>(body)
        .ok()
        .filter(|s| s.kind == "Status" && (s.code != 0 || !s.status.is_empty() || !s.message.is_empty()));
    let mut status = match parsed {
        Some(mut s) => {
            if s.code == 0 {
                s.code = code;
            }
            if s.reason.is_empty() {
                s.reason = Status::reason_for_code(code).to_owned();
            }
            s
        }
        None => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            // Go's TLS listener answers a plain HTTP request with this 400 (kube-apiserver, most Go proxies).
            if code == 400 && text.starts_with("Client sent an HTTP request to an HTTPS server") {
                return Error::Api(Box::new(Status::failure(
                    code,
                    Status::reason_for_code(code),
                    format!(
                        "the server speaks HTTPS and the server URL says http:// — use https:// (it answered: {text})"
                    ),
                )));
            }
            let cut = text.char_indices().nth(512).map_or(text.len(), |(i, _)| i);
            let message = if text.is_empty() {
                format!("the server answered {code} with an empty body")
            } else {
                text[..cut].to_owned()
            };
            Status::failure(code, Status::reason_for_code(code), message)
        }
    };
    if let Some(secs) = retry_after.and_then(retry_after_seconds) {
        let details = status.details.get_or_insert_with(Default::default);
        if details.retry_after_seconds.is_none() {
            details.retry_after_seconds = Some(secs);
        }
    }
    Error::Api(Box::new(status))
}

/// A `Retry-After` header in seconds (its HTTP-date form is ignored); a number too large for an `i64` saturates
/// (`Error::retry_after` caps it anyway).
fn retry_after_seconds(value: &str) -> Option<i64> {
    let digits = value.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse().unwrap_or(i64::MAX))
}

/// The error for a 3xx answer: redirects are refused so that credentials never reach another host.
pub(crate) fn redirect_error(code: u16, location: Option<&str>, what: &str) -> Error {
    Error::from(TransportError::new(
        TransportErrorKind::Redirect,
        format!(
            "{what}: the server answered {code} redirecting to {}; redirects are not followed so that credentials \
             never reach another host",
            location.unwrap_or("(no Location)")
        ),
    ))
}

/// A URI host without the brackets of an IPv6 literal (`[::1]` → `::1`).
pub(crate) fn bare_host(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// The proxy Go's `http.ProxyFromEnvironment` would pick for `uri` (client-go's default): `HTTPS_PROXY` for https,
/// `HTTP_PROXY` for http, none for `localhost`, loopback addresses and `NO_PROXY` matches.
pub(crate) fn proxy_from_env(uri: &ureq::http::Uri, getenv: impl Fn(&str) -> Option<String>) -> Option<String> {
    let host = bare_host(uri.host()?).to_ascii_lowercase();
    if host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
        return None;
    }
    let get = |names: [&str; 2]| names.iter().find_map(|n| getenv(n).filter(|v| !v.trim().is_empty()));
    let https = uri.scheme_str() == Some("https");
    let proxy = if https {
        get(["HTTPS_PROXY", "https_proxy"])
    } else {
        get(["HTTP_PROXY", "http_proxy"])
    }?;
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    if let Some(no_proxy) = get(["NO_PROXY", "no_proxy"])
        && no_proxy_matches(&no_proxy, &host, port)
    {
        debug!("NO_PROXY excludes {host}: connecting directly");
        return None;
    }
    let proxy = proxy.trim();
    Some(if proxy.contains("://") {
        proxy.to_owned()
    } else {
        format!("http://{proxy}")
    })
}

/// Go's `NO_PROXY` rules: `*`; CIDR blocks; IP addresses; `host[:port]` matching the host and its subdomains;
/// `.domain` (or `*.domain`) matching subdomains only.
fn no_proxy_matches(no_proxy: &str, host: &str, port: u16) -> bool {
    let ip = host.parse::<IpAddr>().ok();
    for entry in no_proxy
        .split(',')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
    {
        if entry == "*" {
            return true;
        }
        if let Some((net, bits)) = entry.split_once('/') {
            if let (Some(ip), Ok(net), Ok(bits)) = (ip, net.parse::<IpAddr>(), bits.parse::<u32>())
                && cidr_contains(net, bits, ip)
            {
                return true;
            }
            continue;
        }
        if let (Some(ip), Ok(e)) = (ip, bare_host(&entry).parse::<IpAddr>()) {
            if ip == e {
                return true;
            }
            continue;
        }
        let (pattern, entry_port) = match entry.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() => (h.to_owned(), p.parse::<u16>().ok()),
            _ => (entry.clone(), None),
        };
        if entry_port.is_some_and(|p| p != port) {
            continue;
        }
        let pattern = pattern.strip_prefix('*').unwrap_or(&pattern);
        if let Some(suffix) = pattern.strip_prefix('.') {
            if host.ends_with(&format!(".{suffix}")) {
                return true;
            }
        } else if host == pattern || host.ends_with(&format!(".{pattern}")) {
            return true;
        }
    }
    false
}

fn cidr_contains(net: IpAddr, bits: u32, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) if bits <= 32 => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(n) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(i)) if bits <= 128 => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_servers_status() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" already exists","reason":"AlreadyExists","details":{"name":"x","kind":"configmaps"},"code":409}"#;
        let e = status_error(409, None, body);
        assert!(e.is_already_exists(), "{e}");
        assert_eq!(e.status().unwrap().details.as_ref().unwrap().name, "x");
    }

    #[test]
    fn synthesises_a_status_from_a_foreign_body() {
        let e = status_error(502, None, b"<html>Bad Gateway</html>");
        let s = e.status().unwrap();
        assert_eq!(
            (s.code, s.reason.as_str(), s.message.as_str()),
            (502, "Unknown", "<html>Bad Gateway</html>")
        );
        let long = "x".repeat(5000);
        assert_eq!(
            status_error(500, None, long.as_bytes()).status().unwrap().message.len(),
            512
        );
        assert!(
            status_error(404, None, b"")
                .to_string()
                .contains("404 NotFound: the server answered 404 with an empty body")
        );
        // A JSON body that is not a Status is kept as text.
        let e = status_error(400, None, br#"{"error":"nope"}"#);
        assert_eq!(e.status().unwrap().message, r#"{"error":"nope"}"#);
    }

    #[test]
    fn retry_after_fills_the_status_unless_the_body_has_it() {
        let e = status_error(
            429,
            Some("7"),
            br#"{"kind":"Status","code":429,"reason":"TooManyRequests","message":"slow"}"#,
        );
        assert_eq!(e.retry_after(), Some(std::time::Duration::from_secs(7)));
        let e = status_error(
            429,
            Some("7"),
            br#"{"kind":"Status","code":429,"message":"slow","details":{"retryAfterSeconds":2}}"#,
        );
        assert_eq!(e.retry_after(), Some(std::time::Duration::from_secs(2)));
        assert_eq!(
            status_error(503, Some("3"), b"busy").retry_after(),
            Some(std::time::Duration::from_secs(3))
        );
        assert_eq!(
            status_error(503, Some("Wed, 21 Oct 2015 07:28:00 GMT"), b"").retry_after(),
            None
        );
    }

    #[test]
    fn limits_bodies() {
        assert_eq!(read_limited(&mut &b"12345"[..], 5).unwrap(), b"12345");
        assert!(read_limited(&mut &b"123456"[..], 5).is_err());
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn picks_the_proxy_like_go() {
        let uri: ureq::http::Uri = "https://api.example.com:6443".parse().unwrap();
        let e = env(&[("HTTPS_PROXY", "proxy:3128"), ("HTTP_PROXY", "http://other:1")]);
        assert_eq!(proxy_from_env(&uri, e).as_deref(), Some("http://proxy:3128"));
        let plain: ureq::http::Uri = "http://api.example.com".parse().unwrap();
        assert_eq!(
            proxy_from_env(&plain, env(&[("HTTPS_PROXY", "a:1"), ("http_proxy", "http://b:2")])).as_deref(),
            Some("http://b:2")
        );
        for local in ["https://127.0.0.1:1", "https://localhost:1", "https://[::1]:1"] {
            let uri: ureq::http::Uri = local.parse().unwrap();
            assert_eq!(proxy_from_env(&uri, env(&[("HTTPS_PROXY", "p:1")])), None, "{local}");
        }
    }

    #[test]
    fn no_proxy_follows_go_rules() {
        // Cases from Go's golang.org/x/net/http/httpproxy tests.
        for (no_proxy, host, port, matches) in [
            ("*", "anything.com", 443, true),
            ("example.com", "example.com", 443, true),
            ("example.com", "sub.example.com", 443, true),
            ("example.com", "notexample.com", 443, false),
            (".example.com", "example.com", 443, false),
            (".example.com", "sub.example.com", 443, true),
            ("*.example.com", "sub.example.com", 443, true),
            ("example.com:6443", "example.com", 443, false),
            ("example.com:6443", "example.com", 6443, true),
            ("10.0.0.0/8", "10.1.2.3", 443, true),
            ("10.0.0.0/8", "11.1.2.3", 443, false),
            ("fd00::/8", "fd12::1", 443, true),
            ("192.168.1.1", "192.168.1.1", 443, true),
            ("192.168.1.1", "192.168.1.2", 443, false),
            ("a.com, b.com", "b.com", 443, true),
        ] {
            assert_eq!(
                no_proxy_matches(no_proxy, host, port),
                matches,
                "{no_proxy} vs {host}:{port}"
            );
        }
    }

    /// A client connection whose socket is an in-memory buffer, and its server, after a handshake done in memory.
    fn tls_pair() -> (
        TlsTransport,
        rustls::ServerConnection,
        Arc<std::sync::atomic::AtomicUsize>,
    ) {
        let (client, server) = handshaken_in_memory();
        let mem = MemTransport {
            buffers: LazyBuffers::new(256 * 1024, 1024),
            socket_reads: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        };
        let socket_reads = mem.socket_reads.clone();
        let now: Arc<dyn Fn() -> ureq::unversioned::transport::time::Instant + Send + Sync> =
            Arc::new(ureq::unversioned::transport::time::Instant::now);
        let sock = TransportAdapter::new(Box::new(mem) as Box<dyn Transport>, now);
        let transport = TlsTransport {
            buffers: LazyBuffers::new(256 * 1024, 1024),
            stream: StreamOwned { conn: client, sock },
        };
        (transport, server, socket_reads)
    }

    /// A TLS client and server for `localhost` (a self-signed certificate), their handshake done in memory.
    fn handshaken_in_memory() -> (rustls::ClientConnection, rustls::ServerConnection) {
        use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server_config = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.der().clone()).unwrap();
        let client_config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("localhost").unwrap();
        let mut client = rustls::ClientConnection::new(Arc::new(client_config), name).unwrap();
        let mut server = rustls::ServerConnection::new(Arc::new(server_config)).unwrap();
        kube_informer_test_support::tls::handshake(&mut client, &mut server);
        (client, server)
    }

    /// A socket whose bytes are put in its buffer by the test; waiting for more counts a (would-be blocking) read
    /// and finds the end of the stream.
    #[derive(Debug)]
    struct MemTransport {
        buffers: LazyBuffers,
        socket_reads: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Transport for MemTransport {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }
        fn transmit_output(&mut self, _: usize, _: NextTimeout) -> Result<(), ureq::Error> {
            Ok(())
        }
        fn await_input(&mut self, _: NextTimeout) -> Result<bool, ureq::Error> {
            self.socket_reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(false)
        }
        fn is_open(&mut self) -> bool {
            true
        }
    }

    /// Seals `records` records of `size` bytes each (one write each, so one TLS record each): what the server
    /// sends.
    fn seal(server: &mut rustls::ServerConnection, records: usize, size: usize) -> Vec<u8> {
        let mut wire = Vec::new();
        for i in 0..records {
            server.writer().write_all(&vec![b'a' + (i % 26) as u8; size]).unwrap();
            while server.wants_write() {
                server.write_tls(&mut wire).unwrap();
            }
        }
        wire
    }

    /// `bytes` arrive in the client's transport buffer, as from one socket read.
    fn deliver(transport: &mut TlsTransport, bytes: &[u8]) {
        let sock = transport.stream.sock.get_mut();
        sock.buffers().input_append_buf()[..bytes.len()].copy_from_slice(bytes);
        sock.buffers().input_appended(bytes.len());
    }

    #[test]
    fn one_read_takes_every_tls_record_already_received() {
        let (mut transport, mut server, _) = tls_pair();
        let wire = seal(&mut server, 10, 10_000);
        deliver(&mut transport, &wire);
        assert!(transport.await_input(NextTimeout::default()).unwrap());
        let got = transport.buffers().input().to_vec();
        assert_eq!(got.len(), 100_000, "all ten records, not the first one");
        for (i, record) in got.chunks(10_000).enumerate() {
            assert!(record.iter().all(|&b| b == b'a' + i as u8), "record {i} in order");
        }
    }

    #[test]
    fn a_record_not_wholly_received_is_left_for_the_next_read_without_waiting_for_it() {
        let (mut transport, mut server, socket_reads) = tls_pair();
        let wire = seal(&mut server, 3, 10_000);
        // The last 10 bytes of the third record have not arrived yet.
        let (now, later) = wire.split_at(wire.len() - 10);
        deliver(&mut transport, now);
        let mut buf = vec![0; 65536];
        // The first read is rustls's own (it may wait on the socket: nothing was decrypted yet).
        let first = transport.stream.read(&mut buf).unwrap();
        let waited = socket_reads.load(std::sync::atomic::Ordering::SeqCst);
        let more = take_received(&mut transport.stream, &mut buf[first..]);
        assert_eq!(first + more, 20_000, "the two whole records, not the partial third");
        assert_eq!(
            socket_reads.load(std::sync::atomic::Ordering::SeqCst),
            waited,
            "no wait on the socket"
        );
        // The rest arrives: the next read completes the third record.
        deliver(&mut transport, later);
        assert!(transport.await_input(NextTimeout::default()).unwrap());
        assert_eq!(transport.buffers().input(), &[b'c'; 10_000][..]);
    }
}
