//! The ground floor (k8s.io/apiserver's `server/httpserver`, `endpoints/request`, Go's `net/http`): HTTP/1.1 on
//! the wire, TLS, what a connection and a request may take, the one reading of a request's path and query
//! (`RequestInfo`), the `Warning` headers, what a fault does to an answer and the request log. Nothing here knows a
//! kind or the store.
//!
//! This module itself is a minimal HTTP/1.1 server side: request heads and bodies (Content-Length or chunked),
//! response heads, chunked encoding. Malformed input gives an [`HttpError`], never a panic.

pub(crate) mod fault_action;
pub(crate) mod log;
pub(crate) mod request_info;
pub(crate) mod serving_limits;
pub(crate) mod tls;
pub(crate) mod warning;

use std::io::{self, BufRead, Read, Write};

/// Longest request line plus headers accepted (kube-apiserver's Go server allows 1 MiB; 64 KiB is plenty here).
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Most headers accepted in one request.
const MAX_HEADERS: usize = 128;
/// Largest request body accepted, whatever its content type (JSON, YAML, protobuf, every patch type): kube-apiserver
/// reads every body through `limitedReadBody` with its `MaxRequestBodyBytes`, 3 MiB.
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

/// Why a request could not be read.
#[derive(Debug)]
pub(crate) enum HttpError {
    /// The connection failed, closed mid-request, or sent nothing before its deadline.
    Io(io::Error),
    /// The request is not valid HTTP/1.x: answer 400 and close.
    Malformed(&'static str),
    /// A request head Go's server refuses naming the reason in its answer (`400 Bad Request: missing required Host
    /// header`): answer so and close.
    BadRequest(&'static str),
    /// Head or body too large: answer 431 / 413 and close.
    TooLarge(u16),
}

impl From<io::Error> for HttpError {
    fn from(e: io::Error) -> Self {
        HttpError::Io(e)
    }
}

/// How a request body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    /// No body.
    None,
    /// `Content-Length: n`.
    Length(usize),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A parsed request line and headers.
#[derive(Debug)]
pub(crate) struct RequestHead {
    /// `GET`, `POST`, …
    pub(crate) method: String,
    /// The path, still percent-encoded.
    pub(crate) path: String,
    /// The query string without `?` (empty when absent).
    pub(crate) query: String,
    /// True for HTTP/1.0.
    pub(crate) http10: bool,
    /// Headers in order, names lowercased.
    pub(crate) headers: Vec<(String, String)>,
}

impl RequestHead {
    /// The first value of a header (name in lowercase).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// True when the connection may serve another request after this one.
    pub(crate) fn keep_alive(&self) -> bool {
        let conn = self.header("connection").unwrap_or("").to_ascii_lowercase();
        if self.http10 {
            conn.split(',').any(|t| t.trim() == "keep-alive")
        } else {
            !conn.split(',').any(|t| t.trim() == "close")
        }
    }

    /// True when the client waits for `100 Continue` before sending its body.
    pub(crate) fn expects_continue(&self) -> bool {
        !self.http10
            && self
                .header("expect")
                .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    }

    /// The body framing, from `Transfer-Encoding` and `Content-Length`.
    pub(crate) fn framing(&self) -> Result<BodyFraming, HttpError> {
        if let Some(te) = self.header("transfer-encoding") {
            if te
                .rsplit(',')
                .next()
                .map(str::trim)
                .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
            {
                return Ok(BodyFraming::Chunked);
            }
            return Err(HttpError::Malformed("unsupported transfer-encoding"));
        }
        let mut length = None;
        for (n, v) in &self.headers {
            if n == "content-length" {
                let v = v.trim();
                if v.is_empty() || !v.bytes().all(|c| c.is_ascii_digit()) || v.len() > 12 {
                    return Err(HttpError::Malformed("invalid content-length"));
                }
                let n: usize = v.parse().map_err(|_| HttpError::Malformed("invalid content-length"))?;
                if length.is_some_and(|l| l != n) {
                    return Err(HttpError::Malformed("conflicting content-length"));
                }
                length = Some(n);
            }
        }
        Ok(match length {
            Some(0) | None => BodyFraming::None,
            Some(n) => BodyFraming::Length(n),
        })
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
}

/// Reads one line (up to `\n`) into `buf`, counting against `budget`. `Ok(false)` on EOF before any byte.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>, budget: &mut usize) -> Result<bool, HttpError> {
    buf.clear();
    let n = r.by_ref().take(*budget as u64 + 1).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(false);
    }
    if n > *budget {
        return Err(HttpError::TooLarge(431));
    }
    *budget -= n;
    if buf.last() != Some(&b'\n') {
        return Err(HttpError::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    buf.pop();
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(true)
}

/// Reads a request line and headers. `Ok(None)` when the peer closed the connection before sending anything.
pub(crate) fn read_head(r: &mut impl BufRead) -> Result<Option<RequestHead>, HttpError> {
    let mut budget = MAX_HEAD;
    let mut line = Vec::with_capacity(256);
    // RFC 9112 §2.2: ignore empty lines before the request line.
    loop {
        if !read_line(r, &mut line, &mut budget)? {
            return Ok(None);
        }
        if !line.is_empty() {
            break;
        }
    }
    let mut parts = line.split(|&c| c == b' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::Malformed("invalid request line"));
    };
    let method = std::str::from_utf8(method).map_err(|_| HttpError::Malformed("invalid method"))?;
    if !is_token(method) {
        return Err(HttpError::Malformed("invalid method"));
    }
    let http10 = match version {
        b"HTTP/1.1" => false,
        b"HTTP/1.0" => true,
        _ => return Err(HttpError::Malformed("unsupported HTTP version")),
    };
    if target.first() != Some(&b'/') || target.iter().any(|&c| c <= b' ' || c == 0x7f) {
        return Err(HttpError::Malformed("invalid request target"));
    }
    // Go's server takes any other byte in the target; bytes that are not UTF-8 name nothing the router knows (404),
    // as they would escaped.
    let target = target_text(target);
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), q.to_owned()),
        None => (target.clone(), String::new()),
    };
    let mut head = RequestHead {
        method: method.to_owned(),
        path,
        query,
        http10,
        headers: Vec::new(),
    };
    loop {
        if !read_line(r, &mut line, &mut budget)? {
            return Err(HttpError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        if line.is_empty() {
            break;
        }
        if head.headers.len() == MAX_HEADERS {
            return Err(HttpError::TooLarge(431));
        }
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            return Err(HttpError::Malformed("header without colon"));
        };
        let name = std::str::from_utf8(&line[..colon]).unwrap_or("");
        if !is_token(name) {
            return Err(HttpError::BadRequest("invalid header name"));
        }
        // Go's `httpguts.ValidHeaderFieldValue`: no control byte but a tab (bytes past ASCII are allowed).
        let value = &line[colon + 1..];
        if value.iter().any(|&c| (c < b' ' && c != b'\t') || c == 0x7f) {
            return Err(HttpError::BadRequest("invalid header value"));
        }
        let value = String::from_utf8_lossy(value);
        head.headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    check_host(&head)?;
    Ok(Some(head))
}

/// The `Host` rules of Go's server: required on HTTP/1.1, once, made of the bytes a host and port may hold.
fn check_host(head: &RequestHead) -> Result<(), HttpError> {
    let mut hosts = head.headers.iter().filter(|(n, _)| n == "host").map(|(_, v)| v);
    match (hosts.next(), hosts.next()) {
        (None, _) if !head.http10 => Err(HttpError::BadRequest("missing required Host header")),
        (Some(_), Some(_)) => Err(HttpError::BadRequest("too many Host headers")),
        (Some(h), None) if !h.bytes().all(valid_host_byte) => Err(HttpError::BadRequest("malformed Host header")),
        _ => Ok(()),
    }
}

/// Go's `httpguts.validHostByte`: what a host, an IPv6 literal, a zone and a port are made of.
fn valid_host_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!$%&'()*+,-.:;=[]_~".contains(&c)
}

/// A request target as text: itself when UTF-8, else with each byte past ASCII percent-escaped.
fn target_text(target: &[u8]) -> String {
    match std::str::from_utf8(target) {
        Ok(t) => t.to_owned(),
        Err(_) => target
            .iter()
            .map(|&c| {
                if c.is_ascii() {
                    char::from(c).to_string()
                } else {
                    format!("%{c:02X}")
                }
            })
            .collect(),
    }
}

/// Go's own answer to a request it cannot read (`400 Bad Request`, `400 Bad Request: missing required Host header`,
/// `431 Request Header Fields Too Large`): plain text, and the connection closes.
pub(crate) fn write_go_error(w: &mut impl Write, code: u16, why: Option<&str>) -> io::Result<()> {
    let status = match why {
        Some(why) => format!("{code} {}: {why}", reason_phrase(code)),
        None => format!("{code} {}", reason_phrase(code)),
    };
    write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n{status}"
    )?;
    w.flush()
}

/// Reads the body framed as `framing`, refusing more than `max` bytes.
pub(crate) fn read_body(r: &mut impl BufRead, framing: BodyFraming, max: usize) -> Result<Vec<u8>, HttpError> {
    match framing {
        BodyFraming::None => Ok(Vec::new()),
        BodyFraming::Length(n) => {
            if n > max {
                return Err(HttpError::TooLarge(413));
            }
            let mut body = vec![0; n];
            r.read_exact(&mut body)?;
            Ok(body)
        }
        BodyFraming::Chunked => {
            let mut body = Vec::new();
            let mut line = Vec::new();
            let mut budget = MAX_HEAD;
            loop {
                if !read_line(r, &mut line, &mut budget)? {
                    return Err(HttpError::Io(io::ErrorKind::UnexpectedEof.into()));
                }
                let size_text = line.split(|&c| c == b';').next().unwrap_or(&[]);
                let size_text = std::str::from_utf8(size_text).map_err(|_| HttpError::Malformed("chunk size"))?;
                let size_text = size_text.trim();
                if size_text.is_empty() || size_text.len() > 8 {
                    return Err(HttpError::Malformed("chunk size"));
                }
                let size = usize::from_str_radix(size_text, 16).map_err(|_| HttpError::Malformed("chunk size"))?;
                if size == 0 {
                    // Trailers, up to the empty line.
                    loop {
                        if !read_line(r, &mut line, &mut budget)? || line.is_empty() {
                            return Ok(body);
                        }
                    }
                }
                if body.len() + size > max {
                    return Err(HttpError::TooLarge(413));
                }
                let start = body.len();
                body.resize(start + size, 0);
                r.read_exact(&mut body[start..])?;
                let mut crlf = [0u8; 2];
                r.read_exact(&mut crlf)?;
                if &crlf != b"\r\n" {
                    return Err(HttpError::Malformed("chunk not followed by CRLF"));
                }
            }
        }
    }
}

/// The reason phrase of a status code.
pub(crate) fn reason_phrase(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        301 => "Moved Permanently",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// How a response body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResponseBody {
    /// `Content-Length: n`.
    Length(usize),
    /// `Transfer-Encoding: chunked` (HTTP/1.1 streams: watches).
    Chunked,
    /// Neither: the body ends when the connection closes (HTTP/1.0 streams).
    UntilClose,
}

/// Writes a status line and headers (`Content-Type: application/json` unless given in `extra`).
pub(crate) fn write_head(
    w: &mut impl Write,
    code: u16,
    extra: &[(&str, &str)],
    body: ResponseBody,
    keep_alive: bool,
) -> io::Result<()> {
    let mut head = String::with_capacity(256);
    head.push_str("HTTP/1.1 ");
    head.push_str(&code.to_string());
    head.push(' ');
    head.push_str(reason_phrase(code));
    head.push_str("\r\n");
    if !extra.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
        head.push_str("Content-Type: application/json\r\n");
    }
    if !extra.iter().any(|(n, _)| n.eq_ignore_ascii_case("cache-control")) {
        head.push_str("Cache-Control: no-cache, private\r\n");
    }
    for (n, v) in extra {
        head.push_str(n);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    match body {
        ResponseBody::Length(n) => {
            head.push_str("Content-Length: ");
            head.push_str(&n.to_string());
            head.push_str("\r\n");
        }
        ResponseBody::Chunked => head.push_str("Transfer-Encoding: chunked\r\n"),
        ResponseBody::UntilClose => {}
    }
    if !keep_alive || body == ResponseBody::UntilClose {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())
}

/// Writes one chunk made of `parts` (nothing when they are all empty: an empty chunk would end the body).
pub(crate) fn write_chunk(w: &mut impl Write, parts: &[&[u8]]) -> io::Result<()> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len == 0 {
        return Ok(());
    }
    write!(w, "{len:x}\r\n")?;
    for p in parts {
        w.write_all(p)?;
    }
    w.write_all(b"\r\n")
}

/// Writes the terminating chunk of a chunked body.
pub(crate) fn write_last_chunk(w: &mut impl Write) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Result<Option<RequestHead>, HttpError> {
        read_head(&mut io::Cursor::new(text.as_bytes().to_vec()))
    }

    #[test]
    fn parses_request_line_headers_and_query() {
        let h = head("GET /api/v1/pods?watch=1&x=%20 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer t\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.method.as_str(), h.path.as_str(), h.query.as_str()),
            ("GET", "/api/v1/pods", "watch=1&x=%20")
        );
        assert_eq!(h.header("authorization"), Some("Bearer t"));
        assert!(h.keep_alive());
        assert_eq!(h.framing().unwrap(), BodyFraming::None);
    }

    #[test]
    fn clean_eof_is_no_request() {
        assert!(head("").unwrap().is_none());
        assert!(head("\r\n").unwrap().is_none());
    }

    #[test]
    fn rejects_malformed_heads() {
        for bad in [
            "GET\r\n\r\n",
            "GET / HTTP/2.0\r\n\r\n",
            "GET nopath HTTP/1.1\r\n\r\n",
            "G(T / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nno colon\r\n\r\n",
            "GET / HTTP/1.1 extra\r\n\r\n",
        ] {
            assert!(matches!(head(bad), Err(HttpError::Malformed(_))), "{bad:?}");
        }
        assert!(matches!(head("GET / HTTP/1.1\r\nHost: a"), Err(HttpError::Io(_))));
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(head(&huge), Err(HttpError::TooLarge(431))));
        let h = head("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.framing().is_err());
        let h = head("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.framing().is_err());
    }

    #[test]
    fn heads_follow_gos_host_and_header_value_rules() {
        let refused = |text: &str| match head(text) {
            Err(HttpError::BadRequest(why)) => why,
            other => panic!("{text:?}: {other:?}"),
        };
        assert_eq!(refused("GET / HTTP/1.1\r\n\r\n"), "missing required Host header");
        assert_eq!(
            refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
            "too many Host headers"
        );
        assert_eq!(refused("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), "malformed Host header");
        for control in ["\x00", "\x01", "\x1b", "\x7f", "a\rb"] {
            let text = format!("GET / HTTP/1.1\r\nHost: a\r\nX-Bad: v{control}v\r\n\r\n");
            assert_eq!(refused(&text), "invalid header value", "{control:?}");
        }
        // HTTP/1.0 needs no Host; tabs and bytes past ASCII are values; an IPv6 host with its port is a host.
        assert!(head("GET / HTTP/1.0\r\n\r\n").unwrap().is_some());
        let h = head("GET / HTTP/1.1\r\nHost: [::1]:6443\r\nX: a\tb \u{e9}\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.header("x"), Some("a\tb \u{e9}"));
        // A target that is not UTF-8 is kept, escaped: it names nothing.
        let mut r = io::Cursor::new(b"GET /api/v1/namespaces/\xff HTTP/1.1\r\nHost: a\r\n\r\n".to_vec());
        assert_eq!(read_head(&mut r).unwrap().unwrap().path, "/api/v1/namespaces/%FF");
    }

    #[test]
    fn gos_own_answers_are_plain_text() {
        let mut out = Vec::new();
        write_go_error(&mut out, 400, Some("missing required Host header")).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 400 Bad Request: missing required Host header\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Connection: close\r\n\r\n400 Bad Request: missing required Host header"
        );
    }

    #[test]
    fn reads_length_and_chunked_bodies() {
        let mut r = io::Cursor::new(b"hello".to_vec());
        assert_eq!(read_body(&mut r, BodyFraming::Length(5), 10).unwrap(), b"hello");
        let mut r = io::Cursor::new(b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n".to_vec());
        assert_eq!(read_body(&mut r, BodyFraming::Chunked, 10).unwrap(), b"abcde");
        let mut r = io::Cursor::new(b"3\r\nabcXX".to_vec());
        assert!(read_body(&mut r, BodyFraming::Chunked, 10).is_err());
        let mut r = io::Cursor::new(b"zz\r\n".to_vec());
        assert!(read_body(&mut r, BodyFraming::Chunked, 10).is_err());
        let mut r = io::Cursor::new(b"b\r\nabcdefghijk\r\n0\r\n\r\n".to_vec());
        assert!(matches!(
            read_body(&mut r, BodyFraming::Chunked, 10),
            Err(HttpError::TooLarge(413))
        ));
        assert!(matches!(
            read_body(&mut io::Cursor::new(vec![]), BodyFraming::Length(11), 10),
            Err(HttpError::TooLarge(413))
        ));
    }

    #[test]
    fn connection_semantics_follow_the_version() {
        let h = head("GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!h.keep_alive());
        let h = head("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.keep_alive());
        let h = head("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!h.keep_alive());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A small xorshift generator: deterministic, no dependency.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet =
            b"GET /a?b HTTP/1.1\r\n:Content-Length: 5\r\nTransfer-Encoding: chunked\r\n0123456789abcdef;\x00\xff";
        for _ in 0..20_000 {
            let len = (next() % 200) as usize;
            let input: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let mut r = io::Cursor::new(input);
            if let Ok(Some(h)) = read_head(&mut r) {
                let _ = h.keep_alive();
                if let Ok(f) = h.framing() {
                    let _ = read_body(&mut r, f, 1024);
                }
            }
        }
    }

    #[test]
    fn writes_heads_and_chunks() {
        let mut out = Vec::new();
        write_head(&mut out, 404, &[], ResponseBody::Length(2), true).unwrap();
        write_chunk(&mut out, &[b"ab", b"c"]).unwrap();
        write_chunk(&mut out, &[b""]).unwrap();
        write_last_chunk(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"));
        assert!(text.contains("Content-Length: 2\r\n\r\n"));
        assert!(text.ends_with("\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
    }
}
