//! `WatchDecoder`: turns the bytes of a watch response, as they arrive, into [`WatchEvent`]s.

use std::fmt;
use std::io::{self, Read};

use memchr::memchr;
use serde::de::DeserializeOwned;

use super::WatchEvent;
use super::event::EventSeed;
use super::framer::{
    SizeHint, StreamBuf, ValueScan, decode_exact, describe, is_ws, json_error, syntax_error, try_decode,
    try_decode_line, utf8,
};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::object::lending::Lending;
use crate::watch::spares::SpareObjects;

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
    /// An object given back by [`recycle`](WatchDecoder::recycle), which the next object event is decoded over.
    spare: Option<K>,
    /// Whether events are decoded with `managedFields` borrowed from the buffer.
    lending: Lending,
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
            buf: StreamBuf::new(super::framer::WATCH_READ_SIZE),
            limit,
            frame: None,
            at_line_start: true,
            nl_next: None,
            nl_searched: 0,
            hint: SizeHint::default(),
            error: None,
            spare: None,
            lending: Lending::default(),
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

    /// Gives the decoder an object to decode the next ADDED, MODIFIED or DELETED event's object into, so that the
    /// decode reuses that object's allocations instead of making new ones (and the old object is not freed either).
    ///
    /// The decoded event is exactly what it would have been without this: what the spare held is overwritten or
    /// reset, never mixed in. How much is reused depends on `K`'s `Deserialize::deserialize_in_place` — the
    /// strings and maps of this crate's [`ObjectMeta`](crate::object::ObjectMeta),
    /// [`ConfigMap`](crate::object::core::ConfigMap) and [`DynamicObject`](crate::object::DynamicObject); for a type
    /// without it (serde's default), the spare is simply dropped when the next object is decoded. The informer
    /// hands the decoder the objects its cache let go of. A second call before the spare is used replaces it.
    ///
    /// The spare is used for an event that starts a line and whose line was whole when decoded (as API servers send
    /// events, and as they arrive in a burst); any other event is decoded fresh and the spare kept for the next.
    ///
    /// ```
    /// use kube_informer::object::core::ConfigMap;
    /// use kube_informer::watch::{WatchDecoder, WatchEvent};
    ///
    /// let mut dec = WatchDecoder::<ConfigMap>::new();
    /// dec.push(br#"{"type":"ADDED","object":{"metadata":{"name":"a"},"data":{"k":"v"}}}"#);
    /// dec.push(b"\n");
    /// let Some(Ok(WatchEvent::Added(old))) = dec.next_event() else { panic!() };
    /// dec.recycle(old);
    /// dec.push(br#"{"type":"MODIFIED","object":{"metadata":{"name":"b"}}}"#);
    /// dec.push(b"\n");
    /// let Some(Ok(WatchEvent::Modified(cm))) = dec.next_event() else { panic!() };
    /// assert_eq!(cm.metadata.name.as_deref(), Some("b"));
    /// assert!(cm.data.is_empty()); // nothing of the recycled object shows through
    /// ```
    pub fn recycle(&mut self, obj: K) {
        self.spare = Some(obj);
    }

    // Reached from outside through `crate::unstable::RecycleFrom`.
    /// Takes an object from `spares` to decode the next object event into, unless the decoder still holds one (see
    /// [`recycle`](WatchDecoder::recycle)); call it before each [`next_event`](WatchDecoder::next_event).
    pub(crate) fn recycle_from(&mut self, spares: &dyn SpareObjects<K>) {
        if self.spare.is_none() {
            self.spare = spares.take();
        }
    }

    // Reached from outside through `crate::unstable::RecycleFrom`.
    /// True when the decoder holds an object given by [`recycle`](WatchDecoder::recycle) that is not used yet.
    pub(crate) fn has_spare(&self) -> bool {
        self.spare.is_some()
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
                let decoded = match nl {
                    // A whole line: decoded with the seed that reuses a recycled object.
                    Some(nl) if frame.line_start => {
                        let seed = EventSeed { spare: &mut self.spare };
                        let lent = self.lending.enter();
                        match try_decode_line(self.buf.pending(), nl.min(self.limit), seed) {
                            // Not lent: the exact decode follows.
                            _ if lent.refused() => None,
                            Ok(decoded) => Some(decoded),
                            Err(first) => {
                                // More than this event on the line: keep its object as the spare for the exact
                                // decode that follows.
                                if let Some(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) =
                                    first
                                {
                                    self.spare = Some(o);
                                }
                                None
                            }
                        }
                    }
                    _ => {
                        let lent = self.lending.enter();
                        try_decode(self.buf.pending(), end.min(self.limit)).filter(|_| !lent.refused())
                    }
                };
                if let Some((ev, n)) = decoded {
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
                let spare = &mut self.spare;
                let ev = self
                    .lending
                    .decode(|| decode_exact(text, EventSeed { spare: &mut *spare }))
                    .map_err(|e| json_error(offset, text.as_bytes(), &e))?;
                Ok(Some(self.complete(ev, n)))
            }
            None if data.len() > self.limit => Err(self.too_large()),
            None => {
                self.frame = Some(frame);
                Ok(None)
            }
        }
    }

    #[cfg(test)]
    fn lending_on(&self) -> bool {
        self.lending.is_on()
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
    use crate::object::core::ConfigMap;

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

    /// Decodes `stream` fed in `chunk`-byte pieces; with `recycle`, every decoded object goes back to the decoder.
    /// Returns the events and how many objects were decoded into the one given back before them.
    fn decode_all(stream: &[u8], chunk: usize, recycle: bool) -> (Vec<WatchEvent<ConfigMap>>, usize) {
        let mut dec = WatchDecoder::<ConfigMap>::new();
        let (mut out, mut reused) = (Vec::new(), 0);
        // Address of the name of the object last given back.
        let mut spare_name: Option<*const u8> = None;
        for piece in stream.chunks(chunk) {
            dec.push(piece);
            while let Some(ev) = dec.next_event() {
                let ev = ev.unwrap();
                out.push(ev.clone());
                if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) = ev {
                    let name = o.metadata.name.as_ref().map(|n| n.as_ptr());
                    if name.is_some() && name == spare_name.take() {
                        reused += 1;
                    }
                    if recycle {
                        spare_name = name;
                        dec.recycle(o);
                    }
                }
            }
        }
        dec.finish().unwrap();
        (out, reused)
    }

    #[test]
    fn recycled_objects_are_decoded_into_and_events_are_unchanged() {
        // Object events of every kind and length, in both key orders, between bookmarks, errors and blank lines.
        let stream = concat!(
            r#"{"type":"ADDED","object":{"metadata":{"name":"a-long-name","labels":{"x":"1"}},"data":{"k":"v"}}}"#,
            "\n",
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"b-long-name"},"immutable":true}}"#,
            "\n",
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}"#,
            "\n\n",
            r#"{"object":{"metadata":{"name":"c-long-name","namespace":"ns"}},"type":"MODIFIED"}"#,
            "\r\n",
            r#"{"type":"DELETED","object":{"metadata":{"name":"d-long-name"},"binaryData":{"b":"AA=="}}}"#,
            " ",
            r#"{"type":"ADDED","object":{"metadata":{"name":"e"}}}"#,
            "\n",
            r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}"#,
            "\n",
        )
        .as_bytes();
        for chunk in [1, 7, 64, stream.len()] {
            let (plain, _) = decode_all(stream, chunk, false);
            let (recycled, reused) = decode_all(stream, chunk, true);
            assert_eq!(plain.len(), 7);
            assert_eq!(recycled, plain, "chunks of {chunk}");
            if chunk == stream.len() {
                // Every object event on a line of its own after the first decodes into the object before it (the
                // last one does not start a line: it is decoded fresh, the spare kept).
                assert_eq!(reused, 3);
            }
        }
    }

    /// A `ConfigMap` read through a `serde_json::Value`: a deserializer that cannot lend its text.
    #[derive(Clone, Debug, PartialEq)]
    struct ViaValue(ConfigMap);

    impl<'de> serde::Deserialize<'de> for ViaValue {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let v = serde_json::Value::deserialize(d)?;
            serde_json::from_value(v)
                .map(ViaValue)
                .map_err(serde::de::Error::custom)
        }
    }

    /// Three `expected` from a decoder of `ViaValue` and one of `ConfigMap`; only the first stopped lending.
    fn same_three<T: PartialEq + fmt::Debug>(via: &[T], direct: &[T], expected: &T, lends: (bool, bool), chunk: usize) {
        assert_eq!(via.len(), 3, "chunks of {chunk}");
        assert!(via.iter().all(|v| v == expected), "chunks of {chunk}");
        assert_eq!(direct, via, "chunks of {chunk}");
        assert_eq!(lends, (false, true), "a type that cannot borrow: lending stopped");
    }

    #[test]
    fn managed_fields_are_lent_and_an_object_type_that_cannot_borrow_decodes_as_without() {
        let ev = r#"{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}]},"data":{"k":"v"}}}"#;
        let stream = format!("{ev}\n{ev}\n{ev}");
        let expected: WatchEvent<ConfigMap> = serde_json::from_str(ev).unwrap();
        assert!(matches!(&expected, WatchEvent::Added(cm) if cm.metadata.managed_fields.is_some()));
        for chunk in [1, 7, stream.len()] {
            let mut dec = WatchDecoder::<ViaValue>::new();
            let mut lent = WatchDecoder::<ConfigMap>::new();
            let (mut via, mut direct) = (Vec::new(), Vec::new());
            for piece in stream.as_bytes().chunks(chunk) {
                dec.push(piece);
                lent.push(piece);
                while let Some(e) = dec.next_event() {
                    let WatchEvent::Added(ViaValue(cm)) = e.unwrap() else {
                        panic!()
                    };
                    via.push(WatchEvent::Added(cm));
                }
                while let Some(e) = lent.next_event() {
                    direct.push(e.unwrap());
                }
            }
            same_three(&via, &direct, &expected, (dec.lending_on(), lent.lending_on()), chunk);
        }
        // A malformed list: the error of a decode without lending.
        let bad = r#"{"type":"ADDED","object":{"metadata":{"managedFields":[{"manager":5}]}}}"#;
        let plain = serde_json::from_str::<WatchEvent<ConfigMap>>(bad)
            .unwrap_err()
            .to_string();
        let mut dec = WatchDecoder::<ConfigMap>::new();
        dec.push(format!("{bad}\n").as_bytes());
        let e = dec.next_event().unwrap().unwrap_err();
        let DecodeErrorKind::Json(msg) = &e.kind else {
            panic!("{e:?}")
        };
        assert!(
            plain.starts_with(&format!("{msg} at line 1 column ")),
            "{msg} / {plain}"
        );
        assert!(dec.lending_on());
    }

    #[test]
    fn list_items_lend_managed_fields_and_a_type_that_cannot_borrow_decodes_as_without() {
        let item =
            r#"{"metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}]},"data":{"k":"v"}}"#;
        let body = format!(
            r#"{{"kind":"ConfigMapList","metadata":{{"resourceVersion":"5"}},"items":[{item},{item},{item}]}}"#
        );
        let expected: ConfigMap = serde_json::from_str(item).unwrap();
        for chunk in [1, 7, body.len()] {
            let mut dec = crate::watch::ListDecoder::<ViaValue>::new();
            let mut lent = crate::watch::ListDecoder::<ConfigMap>::new();
            let (mut via, mut direct) = (Vec::new(), Vec::new());
            for piece in body.as_bytes().chunks(chunk) {
                dec.push(piece);
                lent.push(piece);
                while let Some(item) = dec.next_item() {
                    via.push(item.unwrap().0);
                }
                while let Some(item) = lent.next_item() {
                    direct.push(item.unwrap());
                }
            }
            same_three(&via, &direct, &expected, (dec.lending_on(), lent.lending_on()), chunk);
            assert_eq!(dec.finish().unwrap().resource_version.as_deref(), Some("5"));
        }
    }

    #[test]
    fn a_spare_waits_for_the_next_object_event() {
        let mut dec = WatchDecoder::<ConfigMap>::new();
        dec.recycle(ConfigMap::new(crate::object::ObjectMeta::named("spare")));
        dec.push(b"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}\n");
        assert!(matches!(dec.next_event(), Some(Ok(WatchEvent::Bookmark(_)))));
        assert!(dec.has_spare(), "a bookmark does not use the spare");
        dec.push(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n");
        let Some(Ok(WatchEvent::Added(cm))) = dec.next_event() else {
            panic!()
        };
        assert_eq!(cm, ConfigMap::new(crate::object::ObjectMeta::named("a")));
        assert!(!dec.has_spare());
    }
}
