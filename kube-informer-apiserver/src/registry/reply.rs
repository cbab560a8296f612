//! Non-streaming answers and how they are written, injected faults included.

use std::io::{self, Write};
use std::sync::Arc;

use serde_json::Value;

use crate::api::errors::Failure;
use crate::http::fault_action::FaultAction;
use crate::http::{self, ResponseBody};
use crate::storage::store::StoredObject;

/// A complete (non-watch) answer.
pub(crate) enum Reply {
    /// A `Status` (error, or a delete's `Success`); its code is the HTTP code.
    Status(Failure),
    /// Any JSON document.
    Json(u16, Vec<u8>),
    /// One stored object, written from its shared bytes.
    Object(u16, Arc<StoredObject>),
    /// A list: `prefix`, the items joined by commas, `]`, then `suffix` (`}` after a built-in kind's items, which
    /// come last; a custom resource's list has its keys sorted: `kind` and `metadata` after `items`).
    List {
        prefix: Vec<u8>,
        items: Vec<Arc<StoredObject>>,
        suffix: Vec<u8>,
    },
    /// Plain text (`/healthz`).
    Text(u16, &'static str),
    /// Another answer with `Warning` headers (`299 - "text"`), as kube-apiserver sends for `fieldValidation=Warn`.
    Warned(Vec<String>, Box<Reply>),
    /// Any body with its own headers (a shared OpenAPI document, a redirect, a 304).
    Raw {
        code: u16,
        headers: Vec<(String, String)>,
        body: Arc<Vec<u8>>,
    },
}

impl Reply {
    /// A JSON value.
    pub(crate) fn value(code: u16, v: &Value) -> Reply {
        Reply::Json(code, serde_json::to_vec(v).unwrap_or_default())
    }

    /// A Kubernetes object (`kind` and `apiVersion` set), written as kube-apiserver writes its kind: a built-in
    /// kind's fields in its Go type's order.
    pub(crate) fn object_value(code: u16, v: &Value) -> Reply {
        Reply::Json(code, crate::serializer::json::to_vec(v))
    }

    /// `reply`, with `Warning` headers when there are warnings: `warnings` first, then those `reply` already has.
    pub(crate) fn warned(reply: Reply, warnings: Vec<String>) -> Reply {
        if warnings.is_empty() {
            return reply;
        }
        match reply {
            Reply::Warned(mut earlier, inner) => {
                let mut all = warnings;
                all.append(&mut earlier);
                Reply::Warned(all, inner)
            }
            other => Reply::Warned(warnings, Box::new(other)),
        }
    }

    /// The HTTP status code.
    pub(crate) fn code(&self) -> u16 {
        match self {
            Reply::Warned(_, inner) => inner.code(),
            Reply::Status(s) if s.code == 0 => 500,
            Reply::Status(s) => s.code,
            Reply::Json(c, _) | Reply::Object(c, _) | Reply::Text(c, _) | Reply::Raw { code: c, .. } => *c,
            Reply::List { .. } => 200,
        }
    }

    /// True when the body is a JSON document, which kube-apiserver's encoder ends with a newline (`json.Encoder`
    /// writes one after each value): every answer but plain text and the prepared documents (OpenAPI).
    fn ends_with_newline(&self) -> bool {
        match self {
            Reply::Warned(_, inner) => inner.ends_with_newline(),
            Reply::Status(_) | Reply::Json(..) | Reply::Object(..) | Reply::List { .. } => true,
            Reply::Text(..) | Reply::Raw { .. } => false,
        }
    }

    fn body_len(&self, status_json: &[u8]) -> usize {
        usize::from(self.ends_with_newline()) + self.bare_body_len(status_json)
    }

    fn bare_body_len(&self, status_json: &[u8]) -> usize {
        match self {
            Reply::Warned(_, inner) => inner.bare_body_len(status_json),
            Reply::Status(_) => status_json.len(),
            Reply::Json(_, b) => b.len(),
            Reply::Object(_, o) => o.json.len(),
            Reply::Text(_, t) => t.len(),
            Reply::Raw { body, .. } => body.len(),
            Reply::List { prefix, items, suffix } => {
                prefix.len()
                    + items.iter().map(|o| o.json.len()).sum::<usize>()
                    + items.len().saturating_sub(1)
                    + 1
                    + suffix.len()
            }
        }
    }

    fn write_body(&self, status_json: &[u8], w: &mut impl Write) -> io::Result<()> {
        self.write_bare_body(status_json, w)?;
        if self.ends_with_newline() {
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    fn write_bare_body(&self, status_json: &[u8], w: &mut impl Write) -> io::Result<()> {
        match self {
            Reply::Warned(_, inner) => inner.write_bare_body(status_json, w),
            Reply::Status(_) => w.write_all(status_json),
            Reply::Json(_, b) => w.write_all(b),
            Reply::Object(_, o) => w.write_all(&o.json),
            Reply::Text(_, t) => w.write_all(t.as_bytes()),
            Reply::Raw { body, .. } => w.write_all(body),
            Reply::List { prefix, items, suffix } => {
                w.write_all(prefix)?;
                for (i, o) in items.iter().enumerate() {
                    if i > 0 {
                        w.write_all(b",")?;
                    }
                    w.write_all(&o.json)?;
                }
                w.write_all(b"]")?;
                w.write_all(suffix)
            }
        }
    }
}

/// Passes at most `remaining` bytes, then fails every write: a connection cut after N bytes.
pub(crate) struct Limit<W> {
    pub(crate) inner: W,
    /// Bytes still allowed; `None` = unlimited.
    pub(crate) remaining: Option<usize>,
}

/// The error a [`Limit`] raises once its bytes are spent.
pub(crate) fn cut_error() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "injected fault: connection cut")
}

impl<W: Write> Write for Limit<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.remaining {
            None => self.inner.write(buf),
            Some(0) if !buf.is_empty() => Err(cut_error()),
            Some(n) => {
                let k = self.inner.write(&buf[..buf.len().min(n)])?;
                self.remaining = Some(n - k);
                Ok(k)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// How writing an answer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Complete; the connection may serve another request if the client wants.
    Done,
    /// An injected fault cut the answer short: close the connection without a goodbye.
    Cut,
}

/// Writes `reply` (headers and body), shaped by a fault: `Garbage` replaces the body, `CloseMidObject` sends half
/// of it, `CutAfterBytes` stops after that many body bytes.
pub(crate) fn write_reply(
    w: &mut impl Write,
    reply: &Reply,
    keep_alive: bool,
    fault: Option<&FaultAction>,
) -> io::Result<Sent> {
    let status_json = match reply {
        Reply::Status(s) => crate::serializer::json::status_to_vec(s),
        _ => Vec::new(),
    };
    if let Some(FaultAction::Garbage { bytes, .. }) = fault {
        http::write_head(w, 200, &[], ResponseBody::Length(bytes.len()), keep_alive)?;
        w.write_all(bytes)?;
        w.flush()?;
        return Ok(Sent::Done);
    }
    let len = reply.body_len(&status_json);
    let retry_after = match reply {
        Reply::Status(s) => s
            .details
            .as_ref()
            .and_then(|d| d.retry_after_seconds)
            .filter(|s| *s > 0),
        _ => None,
    };
    let retry_text = retry_after.map(|s| s.to_string());
    let mut headers: Vec<(&str, &str)> = Vec::new();
    if let Some(t) = &retry_text {
        headers.push(("Retry-After", t));
    }
    if let Reply::Text(..) = reply {
        headers.push(("Content-Type", "text/plain; charset=utf-8"));
    }
    if let Reply::Raw { headers: own, .. } = reply {
        headers.extend(own.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    }
    let warnings: Vec<String> = match reply {
        Reply::Warned(w, _) => crate::http::warning::headers(w.iter().map(String::as_str)),
        _ => Vec::new(),
    };
    headers.extend(warnings.iter().map(|w| ("Warning", w.as_str())));
    let limit = match fault {
        Some(FaultAction::CloseMidObject { .. }) => Some(len / 2),
        Some(FaultAction::CutAfterBytes(n)) => Some(*n),
        _ => None,
    };
    http::write_head(w, reply.code(), &headers, ResponseBody::Length(len), keep_alive)?;
    let mut limited = Limit {
        inner: &mut *w,
        remaining: limit,
    };
    let result = reply.write_body(&status_json, &mut limited);
    w.flush()?;
    match result {
        Ok(()) if limit.is_none() => Ok(Sent::Done),
        Ok(()) => Ok(Sent::Cut),
        Err(e) if e.kind() == io::ErrorKind::ConnectionAborted && limit.is_some() => Ok(Sent::Cut),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(reply: &Reply, fault: Option<&FaultAction>) -> (String, Sent) {
        let mut out = Vec::new();
        let sent = write_reply(&mut out, reply, true, fault).unwrap();
        (String::from_utf8(out).unwrap(), sent)
    }

    #[test]
    fn writes_status_with_retry_after() {
        let st = crate::api::errors::injected(429, Some(3));
        let (text, sent) = written(&Reply::Status(st), None);
        assert_eq!(sent, Sent::Done);
        assert!(text.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
        assert!(text.contains("Retry-After: 3\r\n"));
        assert!(text.contains(r#""retryAfterSeconds":3"#));
    }

    #[test]
    fn warnings_become_quoted_headers() {
        let reply = Reply::warned(
            Reply::Json(201, b"{}".to_vec()),
            vec![r#"unknown field "spec.x""#.to_owned(); 3],
        );
        let (text, _) = written(&reply, None);
        assert!(text.starts_with("HTTP/1.1 201 Created\r\n"));
        assert!(
            text.contains("\r\nWarning: 299 - \"unknown field \\\"spec.x\\\"\"\r\n"),
            "{text}"
        );
        assert_eq!(text.matches("Warning:").count(), 1, "each warning once: {text}");
        // kube-apiserver's JSON encoder ends every body with a newline, counted in Content-Length.
        assert!(text.ends_with("\r\n\r\n{}\n"));
        assert!(text.contains("Content-Length: 3\r\n"));
        let (text, _) = written(&Reply::Text(200, "ok"), None);
        assert!(text.ends_with("\r\n\r\nok"), "plain text has none");
        let (text, _) = written(&Reply::Status(crate::api::errors::no_such_path()), None);
        assert!(text.ends_with("}\n"), "{text}");
    }

    #[test]
    fn faults_shape_the_body() {
        let reply = Reply::Json(200, b"0123456789".to_vec());
        let (text, sent) = written(&reply, Some(&FaultAction::CutAfterBytes(4)));
        assert_eq!(sent, Sent::Cut);
        assert!(text.ends_with("\r\n\r\n0123"));
        let (text, _) = written(&reply, Some(&FaultAction::CloseMidObject { after_events: 0 }));
        assert!(text.ends_with("\r\n\r\n01234"));
        let garbage = FaultAction::Garbage {
            after_events: 0,
            bytes: b"{{{".to_vec(),
        };
        let (text, sent) = written(&reply, Some(&garbage));
        assert_eq!(sent, Sent::Done);
        assert!(text.contains("Content-Length: 3\r\n") && text.ends_with("{{{"));
    }

    #[test]
    fn lists_join_items() {
        use crate::registry::resource::ResourceSpec;
        use kube_informer::object::ApiResource;
        let spec = ResourceSpec::new(ApiResource::new("", "v1", "ConfigMap", "configmaps", true));
        let obj = |n: &str| {
            Arc::new(StoredObject::from_value(
                &spec,
                &serde_json::json!({"metadata":{"name":n}}),
            ))
        };
        let reply = Reply::List {
            prefix: b"{\"items\":[".to_vec(),
            items: vec![obj("a"), obj("b")],
            suffix: b"}".to_vec(),
        };
        let (text, _) = written(&reply, None);
        let body = text.split("\r\n\r\n").nth(1).unwrap();
        let v: Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["items"][1]["metadata"]["name"], "b");
        assert!(text.contains(&format!("Content-Length: {}\r\n", body.len())));
    }
}
