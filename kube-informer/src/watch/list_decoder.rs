//! `ListDecoder`: decodes a LIST response item by item while it streams.

use std::fmt;
use std::io::{self, Read};
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::value::RawValue;

use super::decoder::DEFAULT_MAX_OBJECT_SIZE;
use super::framer::{
    SizeHint, StreamBuf, ValueScan, describe, is_ws, json_error, starts_value, syntax_error, try_decode, utf8,
};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::object::lending::Lending;
use crate::object::{ListMeta, Status};

/// Incremental decoder of a LIST response body: `{"kind":"…List","apiVersion":"v1","metadata":{…},"items":[…]}`.
///
/// A `resourceVersion=0` list is served from the API server's watch cache, which ignores `limit`: the body can be
/// hundreds of megabytes. This decoder never holds it whole: each element of `items` is decoded as soon as its last
/// byte arrives and its bytes are dropped, so memory stays bounded by the largest item plus one read.
///
/// * [`next_item`](ListDecoder::next_item) yields items in order; `None` means more bytes are needed.
/// * [`finish`](ListDecoder::finish), at the end of the body, returns the list's [`ListMeta`] (`metadata` may come
///   before or after `items`).
/// * `kind`, `apiVersion` and unknown top-level keys are checked as JSON and otherwise skipped; `"items": null`
///   is an empty list.
/// * A body that is not an object, has no `items`, ends early (`Truncated`), has an item over the size limit
///   (`TooLarge`), or is malformed anywhere gives a [`DecodeError`] with the byte offset; errors are sticky as with
///   [`WatchDecoder`](super::WatchDecoder).
/// * **A `Status` body** (`"kind":"Status"`, which a server may send where a list was expected) makes `finish`
///   return a [`DecodeErrorKind::Status`] error carrying the decoded [`Status`]; converting it with `?` into
///   [`crate::Error`] gives [`Error::Api`](crate::Error::Api), exactly as if the HTTP status had said so.
///
/// ```
/// use kube_informer::object::core::ConfigMap;
/// use kube_informer::watch::ListDecoder;
///
/// let body = br#"{"kind":"ConfigMapList","apiVersion":"v1","items":[{"metadata":{"name":"a"}},
///   {"metadata":{"name":"b"},"data":{"k":"v"}}],"metadata":{"resourceVersion":"7","continue":"tok"}}"#;
/// let mut dec = ListDecoder::<ConfigMap>::new();
/// let mut names = Vec::new();
/// for chunk in body.chunks(10) {
///     dec.push(chunk);
///     while let Some(item) = dec.next_item() {
///         names.push(item.unwrap().metadata.name.unwrap());
///     }
/// }
/// let meta = dec.finish().unwrap();
/// assert_eq!(names, ["a", "b"]);
/// assert_eq!((meta.resource_version.as_deref(), meta.continue_token.as_deref()), (Some("7"), Some("tok")));
/// ```
pub struct ListDecoder<K> {
    buf: StreamBuf,
    /// Largest accepted item (and top-level value), in bytes.
    limit: usize,
    /// Where the parser is in the body. Invariant: in `State::Value`, the value starts at the first pending byte.
    state: State,
    /// The key whose value comes next (set by each key, read by `State::ValueStart` and `State::Value`).
    key: Key,
    /// What the top-level values other than `items` said.
    top: TopLevel,
    /// `items` was present (as an array or `null`).
    seen_items: bool,
    /// Sizes the optimistic decode windows for items.
    hint: SizeHint,
    /// Set by the first error; returned by every later call.
    error: Option<DecodeError>,
    /// Whether items are decoded with `managedFields` borrowed from the buffer.
    lending: Lending,
    _k: PhantomData<fn() -> K>,
}

/// The top-level values other than `items`.
#[derive(Default)]
struct TopLevel {
    /// `kind`.
    kind: Option<String>,
    /// `metadata`.
    metadata: Option<ListMeta>,
    /// `apiVersion`, `status`, `message`, `reason`, `details`, `code` (with their stream offsets), kept verbatim
    /// in case the body is a `Status`. Invariant: at most one entry per key.
    status_fields: Vec<(Key, u64, Box<RawValue>)>,
}

/// Positions of the parser in `{ "key" : value , … }` and in `items: [ {…} , … ]`.
#[derive(Clone, Copy, Debug)]
enum State {
    /// Before the body's `{`.
    Start,
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,`: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After `:`: the first byte of a value.
    ValueStart,
    /// Framing a value (key, item, field) that starts at the first pending byte.
    Value(ValueScan, Slot),
    /// After `"items":[`: an item or `]`.
    FirstItemOrEnd,
    /// After an item: `,` or `]`.
    AfterItem,
    /// After `,` in items: an item.
    Item,
    /// After a top-level value: `,` or `}`.
    AfterValue,
    /// After the body's `}`: only whitespace may follow.
    Done,
}

/// What a framed value is.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Key,
    Item,
    /// `"items": null`.
    NullItems,
    Field,
}

/// The top-level keys that matter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Kind,
    Metadata,
    Items,
    ApiVersion,
    Status,
    Message,
    Reason,
    Details,
    Code,
    Other,
}

impl Key {
    fn of(name: &str) -> Key {
        match name {
            "kind" => Key::Kind,
            "metadata" => Key::Metadata,
            "items" => Key::Items,
            "apiVersion" => Key::ApiVersion,
            "status" => Key::Status,
            "message" => Key::Message,
            "reason" => Key::Reason,
            "details" => Key::Details,
            "code" => Key::Code,
            _ => Key::Other,
        }
    }
}

impl<K> fmt::Debug for ListDecoder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListDecoder")
            .field("consumed", &self.buf.offset())
            .field("buffered", &self.buf.pending().len())
            .field("state", &self.state)
            .field("limit", &self.limit)
            .field("error", &self.error)
            .finish()
    }
}

impl<K: DeserializeOwned> Default for ListDecoder<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: DeserializeOwned> ListDecoder<K> {
    /// A decoder accepting items up to [`DEFAULT_MAX_OBJECT_SIZE`] (64 MiB) each.
    pub fn new() -> Self {
        Self::with_max_object_size(DEFAULT_MAX_OBJECT_SIZE)
    }

    #[cfg(test)]
    pub(crate) fn lending_on(&self) -> bool {
        self.lending.is_on()
    }

    /// A decoder accepting items (and other top-level values) up to `limit` bytes each; the body as a whole has no
    /// limit.
    pub fn with_max_object_size(limit: usize) -> Self {
        ListDecoder {
            buf: StreamBuf::new(super::framer::LIST_READ_SIZE),
            limit,
            state: State::Start,
            key: Key::Other,
            top: TopLevel::default(),
            seen_items: false,
            hint: SizeHint::default(),
            error: None,
            lending: Lending::default(),
            _k: PhantomData,
        }
    }

    /// Appends bytes received from the body.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.error.is_none() {
            self.buf.push(bytes);
        }
    }

    /// Reads once from `r` straight into the decoder's buffer. Returns the number of bytes read; `Ok(0)` is the end
    /// of the body. `Interrupted` errors are retried.
    pub fn read_from<R: Read>(&mut self, r: &mut R) -> io::Result<usize> {
        let n = self.buf.read_from(r)?;
        if self.error.is_some() {
            self.buf.discard();
        }
        Ok(n)
    }

    /// The next complete item, `None` when more bytes are needed (or the list is over), or the decoder's error
    /// (sticky).
    pub fn next_item(&mut self) -> Option<Result<K, DecodeError>> {
        if let Some(e) = &self.error {
            return Some(Err(e.clone()));
        }
        match self.step() {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => None,
            Err(e) => {
                self.error = Some(e.clone());
                self.buf.discard();
                Some(Err(e))
            }
        }
    }

    /// Call at the end of the body, after [`next_item`](ListDecoder::next_item) returned `None`. Returns the list
    /// metadata; or `Truncated` when the body ended early, a `Json` error when it has no `items` or trailing bytes,
    /// [`DecodeErrorKind::Status`] when the body is a `Status`, or the decoder's earlier error.
    pub fn finish(self) -> Result<ListMeta, DecodeError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let pending = self.buf.pending();
        if !matches!(self.state, State::Done) {
            return Err(DecodeError {
                offset: self.buf.end(),
                kind: DecodeErrorKind::Truncated,
            });
        }
        if let Some(i) = pending.iter().position(|&b| !is_ws(b)) {
            return Err(trailing(self.buf.offset() + i as u64, pending[i]));
        }
        if self.top.kind.as_deref() == Some("Status") {
            return Err(DecodeError {
                offset: 0,
                kind: DecodeErrorKind::Status(Box::new(self.top.status()?)),
            });
        }
        if !self.seen_items {
            return Err(syntax_error(self.buf.end(), "the list body has no \"items\""));
        }
        Ok(self.top.metadata.unwrap_or_default())
    }

    /// Bytes of the body fully decoded so far.
    pub fn bytes_consumed(&self) -> u64 {
        self.buf.offset()
    }

    /// Bytes received but not yet decoded (the partial item held in memory).
    pub fn buffered(&self) -> usize {
        self.buf.pending().len()
    }

    /// Runs the parser over the buffered bytes until it produces an item or needs more bytes.
    fn step(&mut self) -> Result<Option<K>, DecodeError> {
        loop {
            if let State::Value(scan, slot) = &mut self.state {
                let slot = *slot;
                let offset = self.buf.offset();
                let data = self.buf.pending();
                let n = match scan.advance(data) {
                    Some(n) if n <= self.limit => n,
                    Some(_) => return Err(self.too_large()),
                    None if data.len() > self.limit => return Err(self.too_large()),
                    None => return Ok(None),
                };
                let text = utf8(offset, &data[..n])?;
                let item = match slot {
                    Slot::Item => {
                        self.hint.record(n);
                        let item = self.lending.decode(|| serde_json::from_str::<K>(text));
                        Some(item.map_err(|e| json_error(offset, text.as_bytes(), &e))?)
                    }
                    Slot::Key => {
                        let name: String =
                            serde_json::from_str(text).map_err(|e| json_error(offset, text.as_bytes(), &e))?;
                        self.key = Key::of(&name);
                        None
                    }
                    Slot::NullItems if text == "null" => None,
                    Slot::NullItems => {
                        return Err(syntax_error(offset, "\"items\" must be an array or null"));
                    }
                    Slot::Field => {
                        self.top.field(self.key, offset, text)?;
                        None
                    }
                };
                self.buf.consume(n);
                self.state = match slot {
                    Slot::Item => State::AfterItem,
                    Slot::Key => State::Colon,
                    Slot::NullItems | Slot::Field => State::AfterValue,
                };
                match item {
                    Some(item) => return Ok(Some(item)),
                    None => continue,
                }
            }

            // Structural bytes: skip whitespace, look at one byte.
            let data = self.buf.pending();
            let Some(i) = data.iter().position(|&b| !is_ws(b)) else {
                let n = data.len();
                self.buf.consume(n);
                return Ok(None);
            };
            let b = data[i];
            self.buf.consume(i);
            let at = self.buf.offset();
            let unexpected = |what: &str| syntax_error(at, format!("expected {what}, found {}", describe(b)));
            // `Some(state)`: the byte is consumed and the parser moves on; a framed value keeps its first byte.
            let next = match (self.state, b) {
                (State::Start, b'{') => State::KeyOrEnd,
                (State::Start, _) => return Err(unexpected("a list object '{'")),
                (State::KeyOrEnd | State::Key, b'"') => {
                    self.state = State::Value(ValueScan::new(b), Slot::Key);
                    continue;
                }
                (State::KeyOrEnd, b'}') => State::Done,
                (State::KeyOrEnd, _) => return Err(unexpected("a key or '}'")),
                (State::Key, _) => return Err(unexpected("a key")),
                (State::Colon, b':') => State::ValueStart,
                (State::Colon, _) => return Err(unexpected("':'")),
                (State::ValueStart, _) if self.key == Key::Items => {
                    if self.seen_items {
                        return Err(syntax_error(at, "duplicate \"items\""));
                    }
                    self.seen_items = true;
                    match b {
                        b'[' => State::FirstItemOrEnd,
                        b'n' => {
                            self.state = State::Value(ValueScan::new(b), Slot::NullItems);
                            continue;
                        }
                        _ => return Err(unexpected("an array of items")),
                    }
                }
                (State::ValueStart, _) if starts_value(b) => {
                    self.state = State::Value(ValueScan::new(b), Slot::Field);
                    continue;
                }
                (State::ValueStart, _) => return Err(unexpected("a value")),
                (State::FirstItemOrEnd | State::Item, b'{') => {
                    // The fast path: once the buffer holds as many bytes as the previous item had, decode straight
                    // from it. Otherwise (or if that fails) the scanner frames the item and it is decoded from
                    // exactly its bytes, which gives the same item, or the canonical error.
                    let data = self.buf.pending();
                    let lent = self.lending.enter();
                    if self.hint.probably_complete(data.len())
                        && let Some((item, n)) = try_decode::<K>(data, self.hint.window().min(self.limit))
                        && !lent.refused()
                    {
                        self.buf.consume(n);
                        self.hint.record(n);
                        self.state = State::AfterItem;
                        return Ok(Some(item));
                    }
                    self.state = State::Value(ValueScan::new(b), Slot::Item);
                    continue;
                }
                (State::FirstItemOrEnd, b']') => State::AfterValue,
                (State::FirstItemOrEnd | State::Item, _) => return Err(unexpected("an object in \"items\"")),
                (State::AfterItem, b',') => State::Item,
                (State::AfterItem, b']') => State::AfterValue,
                (State::AfterItem, _) => return Err(unexpected("',' or ']' in \"items\"")),
                (State::AfterValue, b',') => State::Key,
                (State::AfterValue, b'}') => State::Done,
                (State::AfterValue, _) => return Err(unexpected("',' or '}'")),
                (State::Done, _) => return Err(trailing(at, b)),
                (State::Value(..), _) => unreachable!("handled above"),
            };
            self.buf.consume(1);
            self.state = next;
        }
    }

    fn too_large(&self) -> DecodeError {
        DecodeError {
            offset: self.buf.offset(),
            kind: DecodeErrorKind::TooLarge { limit: self.limit },
        }
    }
}

impl TopLevel {
    /// A complete top-level value other than `items`.
    fn field(&mut self, key: Key, offset: u64, text: &str) -> Result<(), DecodeError> {
        let err = |e: serde_json::Error| json_error(offset, text.as_bytes(), &e);
        match key {
            Key::Kind => self.kind = Some(serde_json::from_str(text).map_err(err)?),
            Key::Metadata => self.metadata = Some(serde_json::from_str(text).map_err(err)?),
            Key::Other | Key::Items => {
                serde_json::from_str::<IgnoredAny>(text).map_err(err)?;
            }
            key => {
                let raw: Box<RawValue> = serde_json::from_str(text).map_err(err)?;
                self.status_fields.retain(|(k, _, _)| *k != key);
                self.status_fields.push((key, offset, raw));
            }
        }
        Ok(())
    }

    /// The body as a `Status` (when its kind says so).
    fn status(&self) -> Result<Status, DecodeError> {
        let mut st = Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: self.metadata.clone().unwrap_or_default(),
            ..Status::default()
        };
        for (key, offset, raw) in &self.status_fields {
            let text = raw.get();
            let err = |e: serde_json::Error| json_error(*offset, text.as_bytes(), &e);
            match key {
                Key::ApiVersion => st.api_version = serde_json::from_str(text).map_err(err)?,
                Key::Status => st.status = serde_json::from_str(text).map_err(err)?,
                Key::Message => st.message = serde_json::from_str(text).map_err(err)?,
                Key::Reason => st.reason = serde_json::from_str(text).map_err(err)?,
                Key::Details => st.details = serde_json::from_str(text).map_err(err)?,
                Key::Code => st.code = serde_json::from_str(text).map_err(err)?,
                _ => {}
            }
        }
        Ok(st)
    }
}

fn trailing(at: u64, b: u8) -> DecodeError {
    syntax_error(at, format!("unexpected {} after the end of the list", describe(b)))
}
