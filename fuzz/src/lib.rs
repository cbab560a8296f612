//! Helpers shared by the fuzz targets: reading a recipe out of the fuzzer's bytes, splitting a stream, generating
//! awkward strings.

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
