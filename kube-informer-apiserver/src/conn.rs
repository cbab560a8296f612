//! One client connection: TLS handshake, HTTP/1.1 keep-alive loop, and the request pipeline
//! (route → fault → authenticate → authorize → handle → log → answer).

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::SystemTime;

use rustls::{ServerConnection, StreamOwned};

use super::admin;
use super::authentication::{self, CertificateUser};
use super::authorizer::{self, Attributes};
use super::conversion;
use super::discovery;
use super::errors;
use super::faults::FaultAction;
use super::field_validation::Directive;
use super::handlers;
use super::http::{self, HttpError, MAX_BODY, RequestHead};
use super::impersonation;
use super::list::ListOptions;
use super::log::{PendingRecord, RequestRecord, Verb};
use super::openapi;
use super::reply::{self, Reply, Sent};
use super::request_info::RequestInfo;
use super::review;
use super::router::{self, Route};
use super::server::Shared;
use super::table::{self, Converter};
use super::tls::{Pki, subject_common_name, subject_organizations};
use super::user::UserInfo;
use super::watch::{self, WatchEnd};
use crate::util::parse_query;

/// A client connection, plain or TLS.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ServerConnection, TcpStream>>),
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
    raw: TcpStream,
    /// The CN and Os of a verified client certificate.
    cert_user: Option<CertificateUser>,
    /// Connection number, for the request log.
    id: u64,
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

fn handshake(pki: &Pki, tcp: TcpStream) -> Option<(Stream, Option<CertificateUser>)> {
    let conn = ServerConnection::new(pki.config.clone()).ok()?;
    let mut s = StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).ok()?;
    }
    let user = s.conn.peer_certificates().and_then(|c| c.first()).and_then(|c| {
        Some(CertificateUser {
            name: subject_common_name(c)?,
            groups: subject_organizations(c),
        })
    });
    Some((Stream::Tls(Box::new(s)), user))
}

/// Serves one connection until the client leaves, an error, a fault cut, or shutdown.
pub(crate) fn serve(shared: Arc<Shared>, tcp: TcpStream, epoch: u64, id: u64) {
    let _ = tcp.set_nodelay(true);
    let Ok(raw) = tcp.try_clone() else {
        return;
    };
    let (stream, cert_user) = match &shared.pki {
        None => (Stream::Plain(tcp), None),
        Some(pki) => match handshake(pki, tcp) {
            Some(x) => x,
            None => return,
        },
    };
    let ctx = ConnCtx {
        shared,
        epoch,
        raw,
        cert_user,
        id,
    };
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    loop {
        if ctx.stopping() {
            break;
        }
        let head = match http::read_head(&mut reader) {
            Ok(Some(h)) => h,
            Ok(None) => break,
            Err(HttpError::Io(e)) => {
                log::debug!("embedded API server: reading a request: {e}");
                break;
            }
            Err(HttpError::Malformed(why)) => {
                refuse(&ctx, reader.get_mut(), 400, why);
                break;
            }
            Err(HttpError::TooLarge(code)) => {
                refuse(&ctx, reader.get_mut(), code, "request too large");
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
            Err(HttpError::Io(_)) => break,
            Err(HttpError::Malformed(why)) => {
                refuse(&ctx, reader.get_mut(), 400, why);
                break;
            }
            Err(HttpError::TooLarge(code)) => {
                refuse(&ctx, reader.get_mut(), code, "request body too large");
                break;
            }
        };
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

/// Answers a request that could not be parsed; the connection then closes.
fn refuse(ctx: &ConnCtx, out: &mut Stream, code: u16, why: &str) {
    let st = Box::new(kube_informer::object::Status::failure(
        code,
        kube_informer::object::Status::reason_for_code(code),
        why,
    ));
    let mut w = BufWriter::new(&mut *out);
    let _ = reply::write_reply(&mut w, &Reply::Status(st), false, None);
    drop(w);
    if let Stream::Tls(s) = out {
        s.conn.send_close_notify();
        let _ = s.flush();
    }
    // Lingering close, as Go's server does: closing with unread input would reset the connection and could
    // destroy the answer before the client reads it. Drain briefly (bounded in time and bytes) first.
    let _ = ctx.raw.shutdown(Shutdown::Write);
    let _ = ctx.raw.set_read_timeout(Some(std::time::Duration::from_millis(100)));
    let mut sink = [0u8; 8192];
    let mut budget: usize = 256 * 1024;
    while budget > 0 {
        match (&ctx.raw).read(&mut sink) {
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

fn is_true(v: &str) -> bool {
    matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True")
}

fn handle(ctx: &ConnCtx, out: &mut Stream, head: &RequestHead, body: &[u8]) -> Next {
    let shared = &ctx.shared;
    if shared.admin.is_some() && admin::is_admin_path(&head.path) {
        return serve_admin(ctx, out, head, body);
    }
    let query = parse_query(&head.query);
    let route = router::route(&head.path, &shared.store.lock());
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
    if let Some(u) = &user {
        let info = RequestInfo::new(&head.method, &head.path, &head.query);
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
                    Ok(v) => Reply::value(201, &v),
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
                discovery::reply(&d, &specs, shared.client_addr, head)
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
        let mut reply = handlers::handle(
            shared,
            verb,
            &r,
            head,
            &query,
            body,
            user.as_ref(),
            policy,
            &mut |code| pending.commit(code),
        );
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
        watch::serve(
            ctx,
            out,
            &r.spec,
            r.namespace.as_deref(),
            &opts,
            head.http10,
            fault.map(|f| (f, ticket)),
            converter,
            &mut started,
        )
    };
    match end {
        WatchEnd::Refused(st) => respond(ctx, out, head, record, Reply::Status(st), None),
        WatchEnd::Done => Next::KeepAlive,
        WatchEnd::Close => Next::Close,
        WatchEnd::Cut => Next::Cut,
    }
}
