//! `WatchDecoder`: turns the bytes of a watch response, as they arrive, into [`WatchEvent`]s.

use std::fmt;
use std::io::{self, Read};
use std::marker::PhantomData;

use memchr::memchr;
use serde::de::DeserializeOwned;

use super::WatchEvent;
use super::framer::{SizeHint, StreamBuf, ValueScan, describe, is_ws, json_error, syntax_error, try_decode, utf8};
use crate::error::{DecodeError, DecodeErrorKind};

/// The default largest event (or list item) the decoders accept: 64 MiB. Objects stored in etcd are limited to about
/// 1.5 MiB, so this only stops a broken or hostile server from making the client buffer without bound.
pub const DEFAULT_MAX_OBJECT_SIZE: usize = 64 * 1024 * 1024;

/// Incremental decoder of a watch stream: a sequence of JSON objects `{"type": …, "object": …}`.
///
/// Feed it bytes with [`push`](WatchDecoder::push) or [`read_from`](WatchDecoder::read_from) and take events with
/// [`next_event`](WatchDecoder::next_event) until it returns `None`; at the end of the stream,
/// [`finish`](WatchDecoder::finish) tells whether it ended cleanly. Bytes may be split anywhere, even inside a UTF-8
/// character; events may be separated by whitespace or by nothing at all.
///
/// * **Each byte is examined a bounded number of times**, however the stream is split: a 60 MB event arriving in
///   16 KB reads is scanned once, not once per read. Each event is decoded exactly once, straight from the buffer.
/// * **Memory is bounded** by the largest event plus one read, provided events are taken after each read: an event
///   that grows past the size limit fails as soon as the limit is crossed (`TooLarge`), not when it completes.
/// * **Errors are sticky**: after any error (malformed JSON, invalid UTF-8, an unknown event type, bytes other than
///   whitespace between events, an event over the limit) every later call returns the same error, so an event is
///   never silently skipped; the caller restarts the watch.
///
/// How it frames events: the API server writes one event per line, so when an event starts a line and the next
/// newline is in the buffer, serde_json decodes the event straight from the text before it (no separate scan at
/// all); without newlines, once the buffer holds as many bytes as the previous event had, it tries a window
/// proportional to that size. When that fails (the event is not complete yet, spreads over several lines, or is
/// malformed), an incremental scanner finds the end of the event by tracking depth and strings, and
/// the event is decoded from exactly those bytes. Both ways give the same events and the same errors, wherever the
/// stream is split; the scanner only ever sees the partial event at the end of a read.
///
/// ```
/// use kube_informer::object::DynamicObject;
/// use kube_informer::watch::{WatchDecoder, WatchEvent};
///
/// let stream = br#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}}
/// {"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"2"}}}
/// "#;
/// let mut dec = WatchDecoder::<DynamicObject>::new();
/// let mut events = Vec::new();
/// for chunk in stream.chunks(7) {
///     dec.push(chunk);
///     while let Some(ev) = dec.next_event() {
///         events.push(ev.unwrap());
///     }
/// }
/// dec.finish().unwrap();
/// assert!(matches!(&events[0], WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("a")));
/// assert!(matches!(&events[1], WatchEvent::Bookmark(b) if b.resource_version == "2"));
/// ```
pub struct WatchDecoder<K> {
    buf: StreamBuf,
    /// Largest accepted event, in bytes.
    limit: usize,
    /// The event being framed. Invariant: when `Some`, it starts at the first pending byte of `buf` (a `{`).
    frame: Option<Frame>,
    /// A newline has been skipped since the last event ended (or no event has ended yet): the next event starts a
    /// line, so the text up to the next newline is probably exactly that event.
    at_line_start: bool,
    /// Stream offset of the first newline at or after `nl_searched_from`, when known.
    nl_next: Option<u64>,
    /// There is no newline in the stream between the current position and this offset (when `nl_next` is `None`).
    nl_searched: u64,
    /// Sizes the optimistic decode windows.
    hint: SizeHint,
    /// Set by the first error; returned by every later call.
    error: Option<DecodeError>,
    _k: PhantomData<fn() -> K>,
}

/// Scan state of one event being framed.
struct Frame {
    scan: ValueScan,
    /// This event starts a line (see `WatchDecoder::at_line_start`).
    line_start: bool,
    /// The optimistic decode may still be tried for this event (it is tried at most once).
    try_fast: bool,
}

impl<K> fmt::Debug for WatchDecoder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchDecoder")
            .field("consumed", &self.buf.offset())
            .field("buffered", &self.buf.pending().len())
            .field("limit", &self.limit)
            .field("error", &self.error)
            .finish()
    }
}

impl<K: DeserializeOwned> Default for WatchDecoder<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: DeserializeOwned> WatchDecoder<K> {
    /// A decoder accepting events up to [`DEFAULT_MAX_OBJECT_SIZE`] (64 MiB).
    pub fn new() -> Self {
        Self::with_max_object_size(DEFAULT_MAX_OBJECT_SIZE)
    }

    /// A decoder accepting events up to `limit` bytes (the whole `{"type":…,"object":…}` text).
    pub fn with_max_object_size(limit: usize) -> Self {
        WatchDecoder {
            buf: StreamBuf::default(),
            limit,
            frame: None,
            at_line_start: true,
            nl_next: None,
            nl_searched: 0,
            hint: SizeHint::default(),
            error: None,
            _k: PhantomData,
        }
    }

    /// Appends bytes received from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.error.is_none() {
            self.buf.push(bytes);
        }
    }

    /// Reads once from `r` straight into the decoder's buffer (no intermediate copy). Returns the number of bytes
    /// read; `Ok(0)` is the end of the stream. `Interrupted` errors are retried.
    pub fn read_from<R: Read>(&mut self, r: &mut R) -> io::Result<usize> {
        let n = self.buf.read_from(r)?;
        if self.error.is_some() {
            self.buf.discard();
        }
        Ok(n)
    }

    /// The next complete event, `None` when more bytes are needed, or the decoder's error (sticky).
    pub fn next_event(&mut self) -> Option<Result<WatchEvent<K>, DecodeError>> {
        if let Some(e) = &self.error {
            return Some(Err(e.clone()));
        }
        match self.step() {
            Ok(Some(ev)) => Some(Ok(ev)),
            Ok(None) => None,
            Err(e) => {
                self.error = Some(e.clone());
                self.frame = None;
                self.buf.discard();
                Some(Err(e))
            }
        }
    }

    /// Call at the end of the stream, after [`next_event`](WatchDecoder::next_event) returned `None`: `Ok` when
    /// nothing but whitespace is left, `Truncated` (at the offset where the stream ended) when it ended inside an
    /// event, or the decoder's earlier error.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.buf.pending().iter().all(|&b| is_ws(b)) {
            Ok(())
        } else {
            Err(DecodeError {
                offset: self.buf.end(),
                kind: DecodeErrorKind::Truncated,
            })
        }
    }

    /// Bytes of the stream fully decoded so far: the end of the last event returned, plus any whitespace after it.
    pub fn bytes_consumed(&self) -> u64 {
        self.buf.offset()
    }

    /// Bytes received but not yet decoded (the partial event held in memory).
    pub fn buffered(&self) -> usize {
        self.buf.pending().len()
    }

    /// One attempt to produce an event from the buffered bytes.
    fn step(&mut self) -> Result<Option<WatchEvent<K>>, DecodeError> {
        let mut frame = match self.frame.take() {
            Some(f) => f,
            None => {
                let data = self.buf.pending();
                let Some(i) = data.iter().position(|&b| !is_ws(b)) else {
                    self.at_line_start |= memchr(b'\n', data).is_some();
                    let n = data.len();
                    self.buf.consume(n);
                    return Ok(None);
                };
                let first = data[i];
                let line_start = self.at_line_start || memchr(b'\n', &data[..i]).is_some();
                self.buf.consume(i);
                if first != b'{' {
                    let at = self.buf.offset();
                    return Err(syntax_error(
                        at,
                        format!("expected '{{' to start a watch event, found {}", describe(first)),
                    ));
                }
                self.at_line_start = false;
                Frame {
                    scan: ValueScan::new(first),
                    line_start,
                    try_fast: true,
                }
            }
        };
        let offset = self.buf.offset();

        // The fast path: decode straight from the buffer. For an event that starts a line, the text up to the next
        // newline (the API server writes one event per line); otherwise, once the buffer holds as many bytes as the
        // previous event had, a window proportional to that size.
        if frame.try_fast {
            let nl = self.next_newline();
            let available = self.buf.pending().len();
            let end = match nl {
                Some(nl) if frame.line_start => Some(nl),
                _ if self.hint.probably_complete(available) => Some(self.hint.window()),
                _ => None,
            };
            if let Some(end) = end {
                frame.try_fast = false;
                if let Some((ev, n)) = try_decode(self.buf.pending(), end.min(self.limit)) {
                    return Ok(Some(self.complete(ev, n)));
                }
                // Otherwise (an event over several lines, bad UTF-8, a decode error, a window too small): the scanner
                // decides where the event ends, and decoding exactly those bytes gives the canonical result.
            }
        }

        let data = self.buf.pending();
        match frame.scan.advance(data) {
            Some(n) if n > self.limit => Err(self.too_large()),
            Some(n) => {
                let text = utf8(offset, &data[..n])?;
                let ev = serde_json::from_str(text).map_err(|e| json_error(offset, text.as_bytes(), &e))?;
                Ok(Some(self.complete(ev, n)))
            }
            None if data.len() > self.limit => Err(self.too_large()),
            None => {
                self.frame = Some(frame);
                Ok(None)
            }
        }
    }

    /// Consumes a decoded event's `n` bytes.
    fn complete(&mut self, ev: WatchEvent<K>, n: usize) -> WatchEvent<K> {
        self.buf.consume(n);
        self.hint.record(n);
        ev
    }

    /// Index in the pending bytes of the first newline, searching each byte of the stream at most once.
    fn next_newline(&mut self) -> Option<usize> {
        let offset = self.buf.offset();
        if let Some(nl) = self.nl_next {
            if nl >= offset {
                return Some((nl - offset) as usize);
            }
            self.nl_next = None;
        }
        let from = self.nl_searched.max(offset);
        let data = self.buf.pending();
        let skip = (from - offset) as usize;
        match memchr(b'\n', &data[skip..]) {
            Some(k) => {
                let nl = skip + k;
                self.nl_next = Some(offset + nl as u64);
                self.nl_searched = offset + nl as u64 + 1;
                Some(nl)
            }
            None => {
                self.nl_searched = self.buf.end();
                None
            }
        }
    }

    fn too_large(&self) -> DecodeError {
        DecodeError {
            offset: self.buf.offset(),
            kind: DecodeErrorKind::TooLarge { limit: self.limit },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::DynamicObject;

    #[test]
    fn scan_state_survives_pushes_so_no_byte_is_scanned_twice() {
        let body = format!(
            r#"{{"type":"ADDED","object":{{"metadata":{{"name":"x"}},"data":{{"k":"{}"}}}}}}"#,
            "z".repeat(100_000)
        );
        let mut dec = WatchDecoder::<DynamicObject>::new();
        for (i, chunk) in body.as_bytes().chunks(1000).enumerate() {
            dec.push(chunk);
            if (i + 1) * 1000 < body.len() {
                assert!(dec.next_event().is_none());
                let f = dec.frame.as_ref().unwrap();
                // Everything received has been scanned, once (the fast path gave up on the first read).
                assert!(!f.try_fast);
                assert_eq!(f.scan.scanned(), dec.buffered());
            }
        }
        assert!(matches!(dec.next_event(), Some(Ok(WatchEvent::Added(_)))));
        assert!(dec.frame.is_none());
    }

    #[test]
    fn each_byte_is_searched_for_a_newline_once() {
        let ev = r#"{"type":"ADDED","object":{"metadata":{"name":"x"}}}"#;
        let mut dec = WatchDecoder::<DynamicObject>::new();
        dec.push(format!("{ev}{ev}{ev}").as_bytes());
        for _ in 0..3 {
            assert!(matches!(dec.next_event(), Some(Ok(_))));
            assert_eq!((dec.nl_next, dec.nl_searched), (None, 3 * ev.len() as u64));
        }
        dec.push(b"  \n");
        assert!(dec.next_event().is_none());
        assert!(dec.at_line_start);
        dec.finish().unwrap();
    }
}
