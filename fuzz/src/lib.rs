//! Helpers shared by the fuzz targets: reading a recipe out of the fuzzer's bytes, splitting a stream, generating
//! awkward strings, and driving the stream decoders.

use kube_informer::DecodeError;
use kube_informer::object::{DynamicObject, ListMeta};
use kube_informer::watch::{ListDecoder, WatchDecoder, WatchEvent};

/// A cursor over the fuzzer's input; reads past the end give zeros.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    /// The next byte (0 once the input is exhausted).
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.byte() as usize % n
    }

    /// The next `n` bytes (fewer at the end).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.data.split_at(n.min(self.data.len()));
        self.data = b;
        a
    }

    /// Everything left.
    pub fn rest(self) -> &'a [u8] {
        self.data
    }

    /// A short string made of fragments that stress JSON encoding and UTF-8 splitting.
    pub fn string(&mut self) -> String {
        const PIECES: [&str; 16] = [
            "a", "web-1", "é", "日本", "🦀", "\"", "\\", "{", "}", "[", "]", "\n", "\u{0}", " ", "\u{7f}", "\u{2028}",
        ];
        let n = self.below(6);
        (0..n).map(|_| PIECES[self.below(PIECES.len())]).collect()
    }
}

/// Offsets at which to cut a stream of `len` bytes, derived from `seed`: many small chunks (1–16 bytes), some
/// medium ones, a few large ones. No cuts when `seed` is empty.
pub fn cuts(seed: &[u8], len: usize) -> Vec<usize> {
    let mut cuts = Vec::new();
    if seed.is_empty() {
        return cuts;
    }
    let mut at = 0;
    for i in 0.. {
        let b = seed[i % seed.len()] as usize;
        at += match b {
            0..=127 => b % 16 + 1,
            128..=239 => (b - 127) * 37,
            _ => 4096 * (b - 239),
        };
        if at >= len {
            break;
        }
        cuts.push(at);
    }
    cuts
}

/// The chunks of `stream` between `cuts` (sorted offsets), then the rest.
pub fn chunks<'a>(stream: &'a [u8], cuts: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let ends = cuts.iter().copied().chain(std::iter::once(stream.len()));
    let mut from = 0;
    ends.map(move |to| {
        let c = &stream[from..to];
        from = to;
        c
    })
}

/// A streaming decoder as the decoder targets drive it: bytes in, items out, a result at the end.
pub trait ChunkDecoder {
    /// What it decodes: watch events or list items.
    type Item: std::fmt::Debug + PartialEq;
    /// What `finish` reports: nothing for a watch, the list's metadata for a list.
    type End: std::fmt::Debug + PartialEq;
    /// A decoder holding at most `limit` bytes per object.
    fn with_limit(limit: usize) -> Self;
    /// Appends received bytes.
    fn push(&mut self, bytes: &[u8]);
    /// The next complete item, `None` when more bytes are needed.
    fn next(&mut self) -> Option<Result<Self::Item, DecodeError>>;
    /// Bytes held.
    fn buffered(&self) -> usize;
    /// The end of the input.
    fn finish(self) -> Result<Self::End, DecodeError>;
}

/// A watch decoder given back a copy of every object it decodes, to decode the next object event into
/// (`WatchDecoder::recycle`, as the informer does with what its cache lets go of). It must decode exactly what a
/// plain decoder decodes.
pub struct Recycling(WatchDecoder<DynamicObject>);

impl ChunkDecoder for Recycling {
    type Item = WatchEvent<DynamicObject>;
    type End = ();
    fn with_limit(limit: usize) -> Self {
        Recycling(WatchDecoder::with_max_object_size(limit))
    }
    fn push(&mut self, bytes: &[u8]) {
        self.0.push(bytes);
    }
    fn next(&mut self) -> Option<Result<Self::Item, DecodeError>> {
        let item = self.0.next_event();
        if let Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o))) = &item {
            self.0.recycle(o.clone());
        }
        item
    }
    fn buffered(&self) -> usize {
        self.0.buffered()
    }
    fn finish(self) -> Result<(), DecodeError> {
        self.0.finish()
    }
}

impl ChunkDecoder for WatchDecoder<DynamicObject> {
    type Item = WatchEvent<DynamicObject>;
    type End = ();
    fn with_limit(limit: usize) -> Self {
        WatchDecoder::with_max_object_size(limit)
    }
    fn push(&mut self, bytes: &[u8]) {
        WatchDecoder::push(self, bytes);
    }
    fn next(&mut self) -> Option<Result<Self::Item, DecodeError>> {
        self.next_event()
    }
    fn buffered(&self) -> usize {
        WatchDecoder::buffered(self)
    }
    fn finish(self) -> Result<(), DecodeError> {
        WatchDecoder::finish(&self)
    }
}

impl ChunkDecoder for ListDecoder<DynamicObject> {
    type Item = DynamicObject;
    type End = ListMeta;
    fn with_limit(limit: usize) -> Self {
        ListDecoder::with_max_object_size(limit)
    }
    fn push(&mut self, bytes: &[u8]) {
        ListDecoder::push(self, bytes);
    }
    fn next(&mut self) -> Option<Result<Self::Item, DecodeError>> {
        self.next_item()
    }
    fn buffered(&self) -> usize {
        ListDecoder::buffered(self)
    }
    fn finish(self) -> Result<ListMeta, DecodeError> {
        ListDecoder::finish(self)
    }
}

/// What decoding one input gave: every item (up to and including the first error) and the end result.
#[derive(Debug, PartialEq)]
pub struct Run<I, E> {
    /// Items and the first error, in order.
    pub items: Vec<Result<I, DecodeError>>,
    /// What `finish` said.
    pub finish: Result<E, DecodeError>,
}

/// Decodes `stream` cut at `cuts` with a `D` holding at most `limit` bytes per object, checking the memory bound and
/// the stickiness of errors on the way.
pub fn run<D: ChunkDecoder>(limit: usize, stream: &[u8], cuts: &[usize]) -> Run<D::Item, D::End> {
    let mut dec = D::with_limit(limit);
    let mut items = Vec::new();
    'chunks: for chunk in chunks(stream, cuts) {
        dec.push(chunk);
        assert!(
            dec.buffered() <= limit + chunk.len(),
            "{} > {limit} + {}",
            dec.buffered(),
            chunk.len()
        );
        while let Some(r) = dec.next() {
            if let Err(e) = &r {
                assert_eq!(
                    dec.next().as_ref().map(|r| r.as_ref().err()),
                    Some(Some(e)),
                    "errors are sticky"
                );
                assert_eq!(dec.buffered(), 0);
                items.push(r);
                break 'chunks;
            }
            items.push(r);
        }
        assert!(dec.buffered() <= limit, "{} > {limit} after draining", dec.buffered());
    }
    Run {
        items,
        finish: dec.finish(),
    }
}

/// Arbitrary bytes under an arbitrary limit and chunking decode as they do in one piece.
pub fn arbitrary_bytes<D: ChunkDecoder>(mut input: Input<'_>) -> Split<'_, D> {
    let limit = 16 + input.byte() as usize * 8;
    let n = input.below(8) + 1;
    let seed = input.take(n);
    let stream = input.rest();
    let whole = run::<D>(limit, stream, &[]);
    let cuts = cuts(seed, stream.len());
    let split = run::<D>(limit, stream, &cuts);
    assert_eq!(whole, split);
    Split {
        limit,
        stream,
        cuts,
        run: split,
    }
}

/// What [`arbitrary_bytes`] decoded, for a target to decode again another way.
pub struct Split<'a, D: ChunkDecoder> {
    /// The decoder's object size limit.
    pub limit: usize,
    /// The stream.
    pub stream: &'a [u8],
    /// Where it was split.
    pub cuts: Vec<usize>,
    /// What the decoder made of it.
    pub run: Run<D::Item, D::End>,
}
