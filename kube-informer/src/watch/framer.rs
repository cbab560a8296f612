//! The byte-level half of the stream decoders: a buffer that keeps stream offsets ([`StreamBuf`]) and an incremental
//! scanner that finds where one JSON value ends ([`ValueScan`]).
//!
//! Neither parses JSON: the scanner only tracks nesting depth and whether it is inside a string, enough to know
//! where a value ends. The complete value is then handed to serde_json, which checks everything else.

use std::io::{self, Read};

use memchr::memchr2;
use serde::de::{DeserializeOwned, DeserializeSeed};

use crate::error::{DecodeError, DecodeErrorKind};

/// How much free room [`StreamBuf::read_from`] offers a watch stream: as much as ureq's input buffer holds (128 KiB
/// by default), so that one read takes what one receive from the socket brought. Half of it costs a busy watch twice
/// the wake-ups of the informer's processing thread (one per read), ~10% more CPU per event.
pub(crate) const WATCH_READ_SIZE: usize = 128 * 1024;

/// How much free room [`StreamBuf::read_from`] offers a list: a list's items are queued as one replace whatever
/// the reads, and larger reads measured no faster.
pub(crate) const LIST_READ_SIZE: usize = 64 * 1024;

/// A growable byte buffer over a stream: bytes arrive at the end, decoded bytes are consumed from the front.
///
/// Consumed bytes are dropped lazily (when they are at least as many as the pending ones, or when room is needed),
/// so each byte is moved at most a bounded number of times and the buffer holds at most the largest pending value
/// plus one read.
pub(crate) struct StreamBuf {
    /// `buf[start..filled]` is pending data; `buf[filled..]` is initialised free room for `read_from`.
    buf: Vec<u8>,
    /// Invariant: `start <= filled <= buf.len()`. Bytes before `start` are consumed.
    start: usize,
    /// End of the data.
    filled: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Free room each [`read_from`](StreamBuf::read_from) offers; a buffer above 4× this capacity that is mostly
    /// empty gives memory back after a large object.
    read_size: usize,
}

impl StreamBuf {
    /// An empty buffer whose reads offer `read_size` bytes of room.
    pub(crate) fn new(read_size: usize) -> Self {
        StreamBuf {
            buf: Vec::new(),
            start: 0,
            filled: 0,
            base: 0,
            read_size,
        }
    }

    /// The pending (unconsumed) bytes.
    pub(crate) fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.filled]
    }

    /// Stream offset of the first pending byte (= bytes consumed so far).
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Stream offset just past the last byte received.
    pub(crate) fn end(&self) -> u64 {
        self.base + self.filled as u64
    }

    /// Marks the first `n` pending bytes consumed.
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.filled - self.start);
        self.start += n;
    }

    /// Drops every pending byte (used once a decoder is poisoned: nothing more will be decoded).
    pub(crate) fn discard(&mut self) {
        self.base += self.filled as u64;
        self.start = 0;
        self.filled = 0;
        self.buf = Vec::new();
    }

    /// Appends bytes.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.make_room(bytes.len());
        let end = self.filled + bytes.len();
        if end <= self.buf.len() {
            self.buf[self.filled..end].copy_from_slice(bytes);
        } else {
            self.buf.truncate(self.filled);
            self.buf.extend_from_slice(bytes);
        }
        self.filled = end;
    }

    /// Reads once from `r` straight into the buffer's free room. `Ok(0)` means end of stream.
    pub(crate) fn read_from<R: Read + ?Sized>(&mut self, r: &mut R) -> io::Result<usize> {
        self.make_room(self.read_size);
        if self.buf.len() < self.filled + self.read_size {
            self.buf.resize(self.filled + self.read_size, 0);
        }
        loop {
            match r.read(&mut self.buf[self.filled..]) {
                Ok(n) => {
                    self.filled += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Drops consumed bytes when that is cheap (they are at least as many as the pending ones) or when it saves a
    /// reallocation, and gives back memory after an unusually large object.
    fn make_room(&mut self, need: usize) {
        let pending = self.filled - self.start;
        if pending == 0 {
            self.base += self.filled as u64;
            self.start = 0;
            self.filled = 0;
        } else if self.start > 0 && (self.start >= pending || self.buf.len() - self.filled < need) {
            self.buf.copy_within(self.start..self.filled, 0);
            self.base += self.start as u64;
            self.start = 0;
            self.filled = pending;
        }
        let want = (self.filled + need).max(self.read_size);
        if self.buf.capacity() > 4 * self.read_size && self.buf.capacity() / 4 > want {
            self.buf.truncate(want);
            self.buf.shrink_to(want);
        }
    }
}

/// Whitespace as JSON defines it.
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Bytes that may continue a number or a literal (`true`, `false`, `null`); anything else ends one.
fn is_scalar_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

/// Bytes that may start a JSON value.
pub(crate) fn starts_value(b: u8) -> bool {
    matches!(b, b'{' | b'[' | b'"') || is_scalar_byte(b)
}

/// Incremental search for the end of one JSON value, resumable across reads.
///
/// The value starts at offset 0 of the slice given to [`ValueScan::advance`]; every call passes the same value's
/// bytes, grown by whatever arrived since, and only the new bytes are examined. Objects and arrays end at the
/// bracket that brings the depth back to zero, strings at their closing quote, numbers and literals before the first
/// byte that cannot continue them. Brackets inside strings do not count; `memchr2` jumps over string contents.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ValueScan {
    /// Bytes before `pos` have been examined. When a read ended right after a backslash inside a string, `pos` is
    /// that backslash, which is examined again with its escaped byte (this is how the escape state is kept).
    pos: usize,
    /// Open `{` and `[` not yet closed (outside strings).
    depth: u32,
    /// Inside a string.
    in_string: bool,
    /// The value is a number or a literal.
    scalar: bool,
}

impl ValueScan {
    /// Starts scanning a value whose first byte is `first` (any byte for which [`starts_value`] is true).
    pub(crate) fn new(first: u8) -> Self {
        let (depth, in_string, scalar) = match first {
            b'{' | b'[' => (1, false, false),
            b'"' => (0, true, false),
            _ => (0, false, true),
        };
        ValueScan {
            pos: 1,
            depth,
            in_string,
            scalar,
        }
    }

    /// Bytes examined so far.
    #[cfg(test)]
    pub(crate) fn scanned(&self) -> usize {
        self.pos
    }

    /// Continues the scan over `data` (the value's bytes from its first byte). Returns the value's length once its
    /// end is in `data`, `None` when more bytes are needed.
    pub(crate) fn advance(&mut self, data: &[u8]) -> Option<usize> {
        let n = data.len();
        let mut i = self.pos;
        if self.scalar {
            while i < n {
                if !is_scalar_byte(data[i]) {
                    return Some(i);
                }
                i += 1;
            }
            self.pos = i;
            return None;
        }
        while i < n {
            if self.in_string {
                match memchr2(b'"', b'\\', &data[i..]) {
                    None => i = n,
                    Some(k) => {
                        let j = i + k;
                        if data[j] == b'"' {
                            self.in_string = false;
                            i = j + 1;
                            if self.depth == 0 {
                                return Some(i);
                            }
                        } else if j + 1 < n {
                            i = j + 2;
                        } else {
                            self.pos = j;
                            return None;
                        }
                    }
                }
            } else {
                let b = data[i];
                i += 1;
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth -= 1;
                        if self.depth == 0 {
                            return Some(i);
                        }
                    }
                    _ => {}
                }
            }
        }
        self.pos = i;
        None
    }
}

/// Sizes the optimistic decode attempts from the size of the previous value: values in one stream are alike.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SizeHint {
    /// Length of the previous value.
    last: usize,
}

impl SizeHint {
    /// Slack over twice the previous size, so that a slightly larger value still fits its window.
    const SLACK: usize = 512;

    /// Records a value's length.
    pub(crate) fn record(&mut self, len: usize) {
        self.last = len;
    }

    /// Whether `available` bytes probably hold a complete value (at least as many as the previous one had).
    pub(crate) fn probably_complete(&self, available: usize) -> bool {
        available >= self.last
    }

    /// How many bytes an attempt should look at: proportional to the previous value, so that a stream of small
    /// values never validates a whole large buffer once per value.
    pub(crate) fn window(&self) -> usize {
        self.last.saturating_mul(2).saturating_add(Self::SLACK)
    }
}

/// The optimistic path: decodes one `T` straight from the start of `data[..end]`, without scanning first.
///
/// Returns the value and its length when `data[..end]` starts with a complete, valid value; `None` otherwise
/// (incomplete, malformed, not UTF-8, wrong shape), in which case the caller frames the value with [`ValueScan`] and
/// decodes exactly its bytes, which gives the canonical result or error. A success is always what that slow path
/// would have produced: the same bytes, decoded by the same code. `end` is moved back off a UTF-8 sequence it
/// would cut.
pub(crate) fn try_decode<T: DeserializeOwned>(data: &[u8], end: usize) -> Option<(T, usize)> {
    let mut end = end.min(data.len());
    for _ in 0..3 {
        if end < data.len() && end > 0 && data[end] & 0xC0 == 0x80 {
            end -= 1;
        }
    }
    let text = std::str::from_utf8(&data[..end]).ok()?;
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<T>();
    match values.next() {
        Some(Ok(v)) => Some((v, values.byte_offset())),
        _ => None,
    }
}

/// [`try_decode`] for a value that ends a line: decodes `data[..end]` (`end` being the index of a newline) with
/// `seed` as one value followed by nothing but whitespace, and returns it with `end`. Taking a seed, it can decode
/// into a recycled object. Fails as `try_decode` does, which includes a line holding more than one value: then the
/// first value, decoded, comes back with the failure (for the caller to take back what the seed put in it).
pub(crate) fn try_decode_line<'a, S: DeserializeSeed<'a>>(
    data: &'a [u8],
    end: usize,
    seed: S,
) -> Result<(S::Value, usize), Option<S::Value>> {
    let text = data.get(..end).and_then(|d| std::str::from_utf8(d).ok()).ok_or(None)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let v = seed.deserialize(&mut de).map_err(|_| None)?;
    match de.end() {
        Ok(()) => Ok((v, end)),
        Err(_) => Err(Some(v)),
    }
}

/// What `serde_json::from_str` does, with a seed: exactly one value in `text`, whitespace around it allowed.
pub(crate) fn decode_exact<'a, S: DeserializeSeed<'a>>(text: &'a str, seed: S) -> serde_json::Result<S::Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// A [`DecodeError`] for a serde_json error in `text`, which starts at stream offset `offset`.
///
/// serde_json reports a line and column inside `text`; they are turned back into a stream offset (of the byte where
/// serde_json stopped), and dropped from the message.
pub(crate) fn json_error(offset: u64, text: &[u8], e: &serde_json::Error) -> DecodeError {
    let (line, column) = (e.line(), e.column());
    let line_start = if line > 1 {
        memchr::memchr_iter(b'\n', text)
            .nth(line - 2)
            .map_or(text.len(), |p| p + 1)
    } else {
        0
    };
    // Columns count from 1; column 0 is serde_json's "at the start of the line" (it stopped just after a newline).
    let at = (line_start + column.saturating_sub(1)).min(text.len());
    let mut msg = e.to_string();
    let suffix = format!(" at line {line} column {column}");
    if msg.ends_with(&suffix) {
        msg.truncate(msg.len() - suffix.len());
    }
    DecodeError {
        offset: offset + at as u64,
        kind: DecodeErrorKind::Json(msg),
    }
}

/// A [`DecodeError`] with a message of our own.
pub(crate) fn syntax_error(offset: u64, msg: impl Into<String>) -> DecodeError {
    DecodeError {
        offset,
        kind: DecodeErrorKind::Json(msg.into()),
    }
}

/// Describes a byte for an error message.
pub(crate) fn describe(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Validates a complete value as UTF-8; the error names the offset of the first bad byte.
pub(crate) fn utf8(offset: u64, bytes: &[u8]) -> Result<&str, DecodeError> {
    std::str::from_utf8(bytes).map_err(|e| DecodeError {
        offset: offset + e.valid_up_to() as u64,
        kind: DecodeErrorKind::InvalidUtf8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scans `text` fed one byte at a time and all at once; both must agree.
    fn end_of(text: &str) -> Option<usize> {
        let bytes = text.as_bytes();
        let whole = ValueScan::new(bytes[0]).advance(bytes);
        let mut scan = ValueScan::new(bytes[0]);
        let mut split = None;
        for i in 1..=bytes.len() {
            if let Some(n) = scan.advance(&bytes[..i]) {
                split = Some(n);
                break;
            }
        }
        assert_eq!(whole, split, "{text}");
        whole
    }

    #[test]
    fn finds_the_end_of_each_kind_of_value() {
        assert_eq!(end_of(r#"{"a":{"b":[1,2,{}]}} {"#), Some(20));
        assert_eq!(end_of(r#"[1,[2],"]"]x"#), Some(11));
        assert_eq!(end_of(r#""a\"b\\"x"#), Some(8));
        assert_eq!(end_of("12.5e+3,"), Some(7));
        assert_eq!(end_of("true}"), Some(4));
        assert_eq!(end_of(r#"{"a":"}"#), None);
        assert_eq!(end_of("123"), None);
    }

    #[test]
    fn braces_inside_strings_and_escapes_do_not_count() {
        assert_eq!(end_of(r#"{"k":"{{[[\"}}\\"}"#), Some(18));
        assert_eq!(end_of(r#"{"\\":"\\\""}"#), Some(13));
    }

    #[test]
    fn never_rescans() {
        let text = format!(r#"{{"a":"{}"}}"#, "x".repeat(100));
        let bytes = text.as_bytes();
        let mut scan = ValueScan::new(b'{');
        assert_eq!(scan.advance(&bytes[..50]), None);
        assert_eq!(scan.scanned(), 50);
        assert_eq!(scan.advance(bytes), Some(bytes.len()));
    }

    #[test]
    fn escape_split_across_reads_is_kept() {
        let bytes = br#"{"a":"\"}"}"#;
        let mut scan = ValueScan::new(b'{');
        assert_eq!(scan.advance(&bytes[..7]), None); // ends on the backslash
        assert_eq!(scan.scanned(), 6);
        assert_eq!(scan.advance(&bytes[..9]), None); // `\"` then `}` inside the string
        assert_eq!(scan.advance(bytes), Some(bytes.len()));
    }

    #[test]
    fn buffer_keeps_offsets_and_compacts() {
        let mut b = StreamBuf::new(WATCH_READ_SIZE);
        b.push(b"hello ");
        b.consume(6);
        b.push(b"world");
        assert_eq!(b.offset(), 6);
        assert_eq!(b.pending(), b"world");
        assert_eq!(b.end(), 11);
        b.consume(2);
        let mut r: &[u8] = b"!!";
        assert_eq!(b.read_from(&mut r).unwrap(), 2);
        assert_eq!(b.pending(), b"rld!!");
        assert_eq!(b.offset(), 8);
        assert_eq!(b.read_from(&mut r).unwrap(), 0);
        b.discard();
        assert_eq!((b.offset(), b.pending()), (13, &b""[..]));
    }

    #[test]
    fn buffer_gives_memory_back_after_a_large_value() {
        let mut b = StreamBuf::new(LIST_READ_SIZE);
        b.push(&vec![b'x'; 10 * LIST_READ_SIZE]);
        b.consume(10 * LIST_READ_SIZE);
        b.push(b"y");
        assert!(b.buf.capacity() <= 4 * LIST_READ_SIZE, "{}", b.buf.capacity());
        assert_eq!(b.pending(), b"y");
    }

    #[test]
    fn json_errors_point_into_the_stream() {
        let text = "{\"a\":\n  tru}";
        let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        let d = json_error(100, text.as_bytes(), &e);
        assert_eq!(d.offset, 100 + text.find('}').unwrap() as u64, "{d:?}");
        assert!(
            matches!(&d.kind, DecodeErrorKind::Json(m) if !m.contains("line")),
            "{d:?}"
        );
    }
}
