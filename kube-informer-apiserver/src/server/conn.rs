//! One client connection: TLS handshake, HTTP/1.1 keep-alive loop, and the request pipeline
//! (route → fault → authenticate → authorize → handle → log → answer). Every read has a deadline
//! ([`ServingLimits`](crate::http::serving_limits::ServingLimits)): the TLS handshake and each request head from
//! their start, a body from the end of its head, the wait for the next request on an idle keep-alive connection;
//! every write has a timeout.

use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use rustls::{ServerConnection, StreamOwned};

use crate::admission::field_validation::Directive;
use crate::api::errors;
use crate::api::user::UserInfo;
use crate::api::util::parse_query;
use crate::auth::authentication::{self, CertificateUser};
use crate::auth::authorizer::{self, Attributes};
use crate::auth::impersonation;
use crate::auth::review;
use crate::endpoints::aggregated_discovery;
use crate::endpoints::handlers::{self, RequestContext};
use crate::endpoints::list::ListOptions;
use crate::endpoints::openapi;
use crate::endpoints::router::{self, Route};
use crate::endpoints::table::{self, Converter};
use crate::endpoints::watch::{self, WatchEnd, WatchRequest};
use crate::http::log::{PendingRecord, RequestRecord, Verb};
use crate::http::request_info::RequestInfo;
use crate::http::serving_limits::{self, InFlightSlot};
use crate::http::tls::{Pki, subject_common_name, subject_organizations};
use crate::http::{self, HttpError, MAX_BODY, RequestHead};
use crate::registry::conversion;
use crate::registry::reply::{self, Reply, Sent};
use crate::server::admin;
use crate::server::faults::FaultAction;
use crate::server::shared::Shared;

/// A connection's socket: its one file descriptor, shared with the server's table of live connections (which shuts
/// it down to cut the connection). Reads fail with `TimedOut` once the deadline set, if any, has passed.
pub(crate) struct Sock {
    tcp: Arc<TcpStream>,
    deadline: Option<Instant>,
    /// The first bytes read (up to five), to tell plain HTTP sent to the TLS port.
    first: [u8; 5],
    first_len: usize,
}

impl Sock {
    fn new(tcp: Arc<TcpStream>) -> Sock {
        Sock {
            tcp,
            deadline: None,
            first: [0; 5],
            first_len: 0,
        }
    }

    /// Sets (or, with `None`, clears) the deadline of the reads that follow.
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        if deadline.is_none() && self.deadline.is_some() {
            let _ = self.tcp.set_read_timeout(None);
        }
        self.deadline = deadline;
    }

    /// Go's `tlsRecordHeaderLooksLikeHTTP`: the first five bytes a plain HTTP request starts with.
    fn looks_like_http(&self) -> bool {
        self.first_len == 5 && matches!(&self.first, b"GET /" | b"HEAD " | b"POST " | b"PUT /" | b"OPTIO")
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            // Per read: a slow client cannot stretch the deadline by trickling bytes.
            self.tcp
                .set_read_timeout(Some(left.max(serving_limits::SHORTEST_WAIT)))?;
        }
        let n = match (&*self.tcp).read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && self.deadline.is_some() => {
                return Err(io::ErrorKind::TimedOut.into());
            }
            r => r?,
        };
        if self.first_len < self.first.len() {
            let take = n.min(self.first.len() - self.first_len);
            self.first[self.first_len..self.first_len + take].copy_from_slice(&buf[..take]);
            self.first_len += take;
        }
        Ok(n)
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self.tcp).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&*self.tcp).flush()
    }
}

/// A client connection, plain or TLS.
pub(crate) enum Stream {
    Plain(Sock),
    Tls(Box<StreamOwned<ServerConnection, Sock>>),
}

impl Stream {
    fn sock(&mut self) -> &mut Sock {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &mut s.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// What a request handler needs to know about its connection.
pub(crate) struct ConnCtx {
    pub(crate) shared: Arc<Shared>,
    /// The server epoch this connection belongs to; a restart starts a new one and ends this connection.
    epoch: u64,
    /// The socket, for cutting it and for checking an idle watch's client is still there.
    raw: Arc<TcpStream>,
    /// The CN and Os of a verified client certificate.
    cert_user: Option<CertificateUser>,
    /// Connection number, for the request log.
    id: u64,
}

impl watch::Connection for ConnCtx {
    fn state(&self) -> &dyn crate::endpoints::ServerState {
        &*self.shared
    }
    fn stopping(&self) -> bool {
        ConnCtx::stopping(self)
    }
    fn peer_closed(&self) -> bool {
        ConnCtx::peer_closed(self)
    }
}

impl ConnCtx {
    /// True when the server is shutting down or restarting.
    pub(crate) fn stopping(&self) -> bool {
        self.shared.stopping(self.epoch)
    }

    /// Closes the socket at once: no terminating chunk, no TLS close_notify.
    fn cut(&self) {
        let _ = self.raw.shutdown(Shutdown::Both);
    }

    /// True when the client closed its side (checked without blocking).
    pub(crate) fn peer_closed(&self) -> bool {
        if self.raw.set_nonblocking(true).is_err() {
            return true;
        }
        let mut b = [0u8; 1];
        let r = self.raw.peek(&mut b);
        let _ = self.raw.set_nonblocking(false);
        match r {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != io::ErrorKind::WouldBlock && e.kind() != io::ErrorKind::Interrupted,
        }
    }
}

/// Why a TLS handshake failed.
enum Handshake {
    /// Plain HTTP to the TLS port: answered as Go's server answers it.
    PlainHttp(Sock),
    /// Anything else (a timeout, a broken client): the connection closes.
    Failed,
}

fn handshake(pki: &Pki, sock: Sock) -> Result<(Stream, Option<CertificateUser>), Handshake> {
    let conn = ServerConnection::new(pki.config.clone()).map_err(|_| Handshake::Failed)?;
    let mut s = StreamOwned::new(conn, sock);
    // `complete_io`, by hand: a client that is not speaking TLS gets Go's plain answer, not an alert before it.
    while s.conn.is_handshaking() {
        while s.conn.wants_write() {
            s.conn.write_tls(&mut s.sock).map_err(|_| Handshake::Failed)?;
        }
        if !s.conn.is_handshaking() {
            break;
        }
        match s.conn.read_tls(&mut s.sock) {
            Ok(0) | Err(_) => return Err(Handshake::Failed),
            Ok(_) => {}
        }
        if s.conn.process_new_packets().is_err() {
            if s.sock.looks_like_http() {
                return Err(Handshake::PlainHttp(s.sock));
            }
            // The alert rustls queued, if the client is still there to read it.
            let _ = s.conn.write_tls(&mut s.sock);
            return Err(Handshake::Failed);
        }
    }
    while s.conn.wants_write() {
        s.conn.write_tls(&mut s.sock).map_err(|_| Handshake::Failed)?;
    }
    let user = s.conn.peer_certificates().and_then(|c| c.first()).and_then(|c| {
        Some(CertificateUser {
            name: subject_common_name(c)?,
            groups: subject_organizations(c),
        })
    });
    Ok((Stream::Tls(Box::new(s)), user))
}

/// The deadline `wait` from now (none past the end of time: far enough).
fn after(wait: std::time::Duration) -> Option<Instant> {
    Instant::now().checked_add(wait)
}

/// Serves one connection, accepted at `accepted`, until the client leaves, an error, a timeout, a fault cut, or
/// shutdown.
pub(crate) fn serve(shared: Arc<Shared>, tcp: Arc<TcpStream>, accepted: Instant, epoch: u64, id: u64) {
    let limits = shared.limits.clone();
    let _ = tcp.set_nodelay(true);
    let _ = tcp.set_write_timeout(Some(limits.write_timeout));
    let raw = tcp.clone();
    let mut sock = Sock::new(tcp);
    let (stream, cert_user) = match &shared.pki {
        None => (Stream::Plain(sock), None),
        Some(pki) => {
            sock.set_deadline(accepted.checked_add(limits.tls_handshake_timeout));
            match handshake(pki, sock) {
                Ok(x) => x,
                Err(Handshake::PlainHttp(mut sock)) => {
                    let _ = sock.write_all(
                        b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n",
                    );
                    linger_close(&raw);
                    return;
                }
                Err(Handshake::Failed) => {
                    let _ = raw.shutdown(Shutdown::Both);
                    return;
                }
            }
        }
    };
    let ctx = ConnCtx {
        shared,
        epoch,
        raw,
        cert_user,
        id,
    };
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    let mut first = true;
    loop {
        if ctx.stopping() {
            break;
        }
        // An idle keep-alive connection waits this long for its next request's first byte.
        if !first && reader.buffer().is_empty() {
            reader.get_mut().sock().set_deadline(after(limits.idle_timeout));
            match reader.fill_buf() {
                Ok([]) => break,
                Ok(_) => {}
                Err(e) => {
                    log::debug!("embedded API server: an idle connection: {e}");
                    break;
                }
            }
        }
        first = false;
        reader.get_mut().sock().set_deadline(after(limits.read_header_timeout));
        let head = match http::read_head(&mut reader) {
            Ok(Some(h)) => h,
            Ok(None) => break,
            // A timeout included: Go's server closes without answering.
            Err(HttpError::Io(e)) => {
                log::debug!("embedded API server: reading a request: {e}");
                break;
            }
            Err(HttpError::Malformed(_)) => {
                refuse_head(&ctx, reader.get_mut(), 400, None);
                break;
            }
            Err(HttpError::BadRequest(why)) => {
                refuse_head(&ctx, reader.get_mut(), 400, Some(why));
                break;
            }
            Err(HttpError::TooLarge(code)) => {
                refuse_head(&ctx, reader.get_mut(), code, None);
                break;
            }
        };
        let framing = match head.framing() {
            Ok(f) => f,
            Err(_) => {
                refuse(&ctx, reader.get_mut(), 400, "invalid body framing");
                break;
            }
        };
        reader.get_mut().sock().set_deadline(after(limits.request_body_timeout));
        if head.expects_continue() && framing != http::BodyFraming::None {
            let out = reader.get_mut();
            if out
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .and_then(|()| out.flush())
                .is_err()
            {
                break;
            }
        }
        let body = match http::read_body(&mut reader, framing, MAX_BODY) {
            Ok(b) => b,
            Err(HttpError::Io(e)) if e.kind() == io::ErrorKind::TimedOut => {
                // kube-apiserver's request timeout, reached while reading the body.
                let st = errors::timeout();
                let mut w = BufWriter::new(&mut *reader.get_mut());
                let _ = reply::write_reply(&mut w, &Reply::Status(st), false, None);
                break;
            }
            Err(HttpError::Io(_)) => break,
            Err(HttpError::Malformed(why) | HttpError::BadRequest(why)) => {
                refuse(&ctx, reader.get_mut(), 400, why);
                break;
            }
            Err(HttpError::TooLarge(code)) => {
                // kube-apiserver reads up to the limit before it answers: a client sending a body just past it
                // gets to send it whole, and reads the answer.
                if let http::BodyFraming::Length(n) = framing {
                    let _ = io::copy(&mut (&mut reader).take(n.min(MAX_BODY + 1) as u64), &mut io::sink());
                }
                let st = errors::request_entity_too_large(MAX_BODY);
                refuse_status(&ctx, reader.get_mut(), st, code);
                break;
            }
        };
        reader.get_mut().sock().set_deadline(None);
        match handle(&ctx, reader.get_mut(), &head, &body) {
            Next::KeepAlive if head.keep_alive() => continue,
            Next::Cut => {
                ctx.cut();
                return;
            }
            _ => break,
        }
    }
    if let Stream::Tls(s) = reader.get_mut() {
        s.conn.send_close_notify();
        let _ = s.flush();
    }
    let _ = ctx.raw.shutdown(Shutdown::Both);
}

/// Answers a request whose head could not be read as Go's server does (plain text), then closes.
fn refuse_head(ctx: &ConnCtx, out: &mut Stream, code: u16, why: Option<&str>) {
    let _ = http::write_go_error(out, code, why);
    if let Stream::Tls(s) = out {
        s.conn.send_close_notify();
        let _ = s.flush();
    }
    linger_close(&ctx.raw);
}

/// Answers a request that could not be read; the connection then closes.
fn refuse(ctx: &ConnCtx, out: &mut Stream, code: u16, why: &str) {
    let st = Box::new(kube_informer::object::Status::failure(
        code,
        kube_informer::object::Status::reason_for_code(code),
        why,
    ));
    refuse_status(ctx, out, st, code);
}

fn refuse_status(ctx: &ConnCtx, out: &mut Stream, st: errors::Failure, _code: u16) {
    let mut w = BufWriter::new(&mut *out);
    let _ = reply::write_reply(&mut w, &Reply::Status(st), false, None);
    drop(w);
    if let Stream::Tls(s) = out {
        s.conn.send_close_notify();
        let _ = s.flush();
    }
    linger_close(&ctx.raw);
}

/// Lingering close, as Go's server does: closing with unread input would reset the connection and could destroy the
/// answer before the client reads it. Drain briefly (bounded in time and bytes) first.
pub(crate) fn linger_close(raw: &TcpStream) {
    let _ = raw.shutdown(Shutdown::Write);
    let _ = raw.set_read_timeout(Some(std::time::Duration::from_millis(100)));
    let mut sink = [0u8; 8192];
    let mut budget: usize = 256 * 1024;
    while budget > 0 {
        match (&*raw).read(&mut sink) {
            Ok(n) if n > 0 => budget = budget.saturating_sub(n),
            _ => break,
        }
    }
}

/// What the connection does after a request.
enum Next {
    KeepAlive,
    Close,
    Cut,
}

/// Logs the record, then writes the answer (so a client that got the answer always finds the record).
fn respond(
    ctx: &ConnCtx,
    out: &mut Stream,
    head: &RequestHead,
    record: RequestRecord,
    reply: Reply,
    fault: Option<&FaultAction>,
) -> Next {
    answer(out, head, PendingRecord::new(&ctx.shared.log, record), reply, fault)
}

/// [`respond`] for a request that may already be logged (by a write's commit).
fn answer(
    out: &mut Stream,
    head: &RequestHead,
    record: PendingRecord<'_>,
    reply: Reply,
    fault: Option<&FaultAction>,
) -> Next {
    record.answer(reply.code());
    let keep = head.keep_alive();
    let mut w = BufWriter::with_capacity(64 * 1024, out);
    match reply::write_reply(&mut w, &reply, keep, fault) {
        Ok(Sent::Done) if keep => Next::KeepAlive,
        Ok(Sent::Done) => Next::Close,
        Ok(Sent::Cut) => Next::Cut,
        Err(_) => Next::Close,
    }
}

/// An admin API request: no fault applies and the request log does not record it.
fn serve_admin(ctx: &ConnCtx, out: &mut Stream, head: &RequestHead, body: &[u8]) -> Next {
    let req = admin::AdminRequest {
        shared: &ctx.shared,
        connection: ctx.id,
        stopping: &|| ctx.stopping(),
        user: authenticate(ctx, head).map(|u| u.map(|u| u.name)),
        remote: ctx.raw.peer_addr().is_ok_and(|a| !a.ip().to_canonical().is_loopback()),
        head,
        body,
    };
    let answer = admin::handle(&req);
    let keep = head.keep_alive() && !answer.close;
    let mut w = BufWriter::new(&mut *out);
    match reply::write_reply(&mut w, &answer.reply, keep, None) {
        Ok(_) if keep => Next::KeepAlive,
        _ => Next::Close,
    }
}

/// The requester, as the authenticators find them.
fn authenticate(ctx: &ConnCtx, head: &RequestHead) -> Result<Option<UserInfo>, ()> {
    let shared = &ctx.shared;
    authentication::authenticate(
        &shared.auth,
        &shared.issuer,
        &shared.store,
        head.header("authorization"),
        ctx.cert_user.as_ref(),
    )
}

/// kube-apiserver's 429 past its in-flight limits (`http.Error`'s plain text, retry after a second).
fn too_many_requests() -> Reply {
    Reply::Raw {
        code: 429,
        headers: vec![
            ("Content-Type".to_owned(), "text/plain; charset=utf-8".to_owned()),
            ("X-Content-Type-Options".to_owned(), "nosniff".to_owned()),
            ("Retry-After".to_owned(), "1".to_owned()),
        ],
        body: Arc::new(serving_limits::TOO_MANY_REQUESTS.as_bytes().to_vec()),
    }
}

fn is_true(v: &str) -> bool {
    matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True")
}

fn handle(ctx: &ConnCtx, out: &mut Stream, head: &RequestHead, body: &[u8]) -> Next {
    let shared = &ctx.shared;
    if shared.admin.is_some() && admin::is_admin_path(&head.path) {
        return serve_admin(ctx, out, head, body);
    }
    let query = parse_query(&head.query);
    // The one reading of the path that authorization and routing share; `None` names nothing (`..`, `//`, a bad
    // escape) and is refused before authorization.
    let info = RequestInfo::read(&head.method, &head.path, &head.query);
    let route = match &info {
        Some(info) => router::route(info, &shared.store.lock()),
        None => Route::NotFound,
    };
    let watch_param = query.iter().any(|(k, v)| k == "watch" && is_true(v));
    let mut record = RequestRecord {
        method: head.method.clone(),
        path: head.path.clone(),
        query: head.query.clone(),
        verb: Verb::Get,
        resource: None,
        subresource: None,
        namespace: None,
        name: None,
        user: None,
        code: 0,
        fault: None,
        connection: ctx.id,
        time: SystemTime::now(),
    };
    if let Route::Review(review, ns) = &route {
        record.verb = Verb::Create;
        record.resource = Some(format!("{}.{}", review.plural(), review.group()));
        record.namespace = ns.clone();
    }
    let resource = match &route {
        Route::Resource(r) => {
            record.resource = Some(r.spec.id());
            record.subresource = r.subresource.clone();
            record.namespace = r.namespace.clone();
            record.name = r.name.clone();
            match router::verb(&head.method, r, watch_param) {
                Some(v) => record.verb = v,
                None => {
                    return respond(
                        ctx,
                        out,
                        head,
                        record,
                        Reply::Status(errors::method_not_allowed()),
                        None,
                    );
                }
            }
            Some(r)
        }
        _ => None,
    };
    let verb = record.verb;

    // kube-apiserver's max-in-flight filter: a request that is not long-running takes a slot (mutating or not) for
    // as long as it is handled — stalled by a fault included —, or gets 429; `system:masters` always gets an answer.
    let long_running = verb == Verb::Watch
        || resource.is_some_and(|r| {
            matches!(
                r.subresource.as_deref(),
                Some("attach" | "exec" | "proxy" | "log" | "portforward")
            )
        });
    let mutating = match &route {
        Route::Resource(_) => !matches!(verb, Verb::Get | Verb::List | Verb::Watch),
        _ => !matches!(head.method.as_str(), "GET" | "HEAD"),
    };
    let _slot: Option<InFlightSlot<'_>> = if long_running {
        None
    } else {
        match shared.in_flight.acquire(&shared.limits, mutating) {
            Some(slot) => Some(slot),
            None if serving_limits::exempt(authenticate(ctx, head).ok().flatten().as_ref()) => None,
            None => return respond(ctx, out, head, record, too_many_requests(), None),
        }
    };

    // Faults first: they stand for the network and the server's own trouble, whoever asks.
    let (fault, ticket) = match shared.faults.take(verb, resource.map(|r| &*r.spec)) {
        Some((f, t)) => (Some(f), t),
        None => (None, 0),
    };
    record.fault = fault.as_ref().map(|f| format!("{f:?}"));
    match &fault {
        Some(FaultAction::Error { code, retry_after }) => {
            let st = errors::injected(*code, *retry_after);
            return respond(ctx, out, head, record, Reply::Status(st), None);
        }
        Some(FaultAction::Stall { after_events, duration }) if after_events.is_none() || verb != Verb::Watch => {
            // A client that hangs up meanwhile ends the stall, and its request is dropped, not served late: as
            // kube-apiserver cancels a request's context when its client goes away.
            shared
                .faults
                .stall(*duration, ticket, || ctx.stopping() || ctx.peer_closed());
            if ctx.stopping() || ctx.peer_closed() {
                shared.log.push(record);
                return Next::Close;
            }
        }
        Some(FaultAction::CutAfterEvents(_)) if verb != Verb::Watch => {
            shared.log.push(record);
            return Next::Cut;
        }
        _ => {}
    }

    let mut user = match authenticate(ctx, head) {
        Ok(u) => u,
        Err(()) => return respond(ctx, out, head, record, Reply::Status(errors::unauthorized()), None),
    };
    // The RBAC objects the authorizers read (the RBAC mode only).
    let policy = shared.auth.rbac.then(|| shared.policy.current(&shared.store));
    if let Some(requester) = &user {
        match impersonation::impersonate(&shared.auth, policy.as_deref(), requester, &head.headers) {
            Ok(Some(as_user)) => user = Some(as_user),
            Ok(None) => {}
            Err(st) => return respond(ctx, out, head, record, Reply::Status(st), None),
        }
    }
    record.user = user.as_ref().map(|u| u.name.clone());
    // Authorization before routing, as kube-apiserver's filters run before its router: a refused request gets its 403
    // even for a resource that does not exist.
    // A path that names nothing is refused (404) before authorization, so no authorizer reads it.
    let Some(info) = info else {
        return respond(ctx, out, head, record, Reply::Status(errors::no_such_path()), None);
    };
    if let Some(u) = &user {
        let attrs = Attributes::of_request(u, &info);
        let decision = authorizer::authorize(&shared.auth, policy.as_deref(), &attrs);
        if !decision.allowed {
            let st = authorizer::forbidden(&attrs, &decision.reason);
            return respond(ctx, out, head, record, Reply::Status(st), None);
        }
    }

    let r = match route {
        Route::NotFound => return respond(ctx, out, head, record, Reply::Status(errors::no_such_path()), None),
        // Every authenticated user may review their own access (kube-apiserver's `system:basic-user`).
        Route::Review(kind, review_ns) => {
            let reply = if head.method != "POST" {
                Reply::Status(errors::method_not_allowed())
            } else {
                let api_version = kind.api_version();
                let decoded =
                    handlers::decode_body_as(&api_version, kind.kind(), head, body, Directive::Ignore).map(|(v, _)| v);
                let context = review::Context {
                    auth: &shared.auth,
                    policy: policy.as_deref(),
                    user: user.as_ref(),
                    namespace: review_ns.as_deref(),
                    tokens: Some((&shared.issuer, &shared.store)),
                };
                match decoded.and_then(|b| review::answer(kind, &context, b)) {
                    Ok(v) => Reply::object_value(201, &v),
                    Err(st) => Reply::Status(st),
                }
            };
            return respond(ctx, out, head, record, reply, fault.as_ref());
        }
        Route::Discovery(d) => {
            let reply = if head.method != "GET" {
                Reply::Status(errors::method_not_allowed())
            } else {
                let specs = shared.store.lock().specs();
                aggregated_discovery::serve(&d, &specs, shared.client_addr, head)
            };
            return respond(ctx, out, head, record, reply, fault.as_ref());
        }
        Route::OpenApi(rest) => {
            let (registrations, specs) = {
                let g = shared.store.lock();
                (g.registrations(), g.specs())
            };
            let reply = openapi::answer(&shared.openapi, registrations, &specs, &rest, &query, head);
            return respond(ctx, out, head, record, reply, fault.as_ref());
        }
        Route::Resource(r) => r,
    };
    // A version that would need a conversion webhook is refused rather than served unconverted.
    if let Some(st) = conversion::refused(&r.spec) {
        return respond(ctx, out, head, record, Reply::Status(st), None);
    }
    // What the answer is to be (a Table for `kubectl get`): 406 before anything is done when nothing it accepts
    // is served, as kube-apiserver negotiates first.
    let conversion = match table::negotiate(head.header("accept")) {
        Ok(c) => c,
        Err(st) => return respond(ctx, out, head, record, Reply::Status(st), None),
    };
    if verb != Verb::Watch {
        let mut pending = PendingRecord::new(&shared.log, record);
        let request = RequestContext {
            shared: &**shared,
            head,
            query: &query,
            body,
            info: &info,
            verb,
            path: &r,
            user: user.as_ref(),
            policy,
        };
        let mut reply = handlers::handle(&request, &mut |code| pending.commit(code));
        // `includeObject` is read when the answer is converted: a write with a bad value still happens.
        match Converter::new(&r.spec, conversion, &query) {
            Ok(Some(mut c)) => reply = c.reply(reply),
            Ok(None) => {}
            Err(st) => reply = Reply::Status(st),
        }
        return answer(out, head, pending, reply, fault.as_ref());
    }
    let converter = match Converter::new(&r.spec, conversion, &query) {
        Ok(c) => c,
        Err(st) => return respond(ctx, out, head, record, Reply::Status(st), None),
    };

    let mut opts = match ListOptions::parse(&query, &r.spec, shared.sharded_list_and_watch_enabled()) {
        Ok(o) => o,
        Err(st) => return respond(ctx, out, head, record, Reply::Status(st), None),
    };
    opts.name = r.name.clone();
    let mut pending = Some(record.clone());
    let end = {
        let mut started = |code: u16| {
            if let Some(mut rec) = pending.take() {
                rec.code = code;
                shared.log.push(rec);
            }
        };
        let request = WatchRequest {
            spec: &r.spec,
            namespace: r.namespace.as_deref(),
            opts: &opts,
            http10: head.http10,
            fault: fault.map(|f| (f, ticket)),
            converter,
        };
        watch::serve(ctx, out, request, &mut started)
    };
    match end {
        WatchEnd::Refused(st) => respond(ctx, out, head, record, Reply::Status(st), None),
        WatchEnd::Done => Next::KeepAlive,
        WatchEnd::Close => Next::Close,
        WatchEnd::Cut => Next::Cut,
    }
}
