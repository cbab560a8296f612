//! `StringMap`: a map of strings to strings in two shared texts (labels, annotations, ConfigMap data).
//!
//! A `BTreeMap<String, String>` costs a 544-byte node per 11 entries plus two allocations per entry: a ConfigMap's
//! labels, annotations and data took about 1.6 KB of tree nodes and 32 small allocations, more than the JSON they came
//! from. A `StringMap` holds the same entries sorted by key in two texts: its keys (with their offsets), and its values
//! (with theirs). Objects of one kind repeat their keys (the labels of one application, the files of ConfigMaps made
//! from one template) and often their whole label sets: decoded in a cache, both texts are interned
//! ([`interner`]), so a map whose keys repeat costs only its values, and one that repeats whole
//! costs nothing but two pointers.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::{Index, Range};
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::interner;

/// Width of one number of the headers, in characters (base 64, six bits each).
const DIGITS: usize = 4;
/// Largest number a header field holds: the entry count, and every offset into the keys or the values.
const MAX_FIELD: usize = (1 << (6 * DIGITS)) - 1;
/// Longest values text interned (the values of label and annotation sets, which repeat whole); longer ones (a
/// ConfigMap's data) are kept as texts of their own.
const SHARED_VALUES_MAX: usize = 512;

/// A map of strings to strings, sorted by key, stored in two texts shared between the objects of a cache; what this
/// crate uses for labels, annotations and ConfigMap data.
///
/// It reads like a `BTreeMap<String, String>` (`get`, `iter` in key order, `insert`, `remove`, indexing, equality with
/// a `BTreeMap`), except that lookups return `&str`. Reading is cheap (a binary search over the keys); each change
/// rebuilds the map, which suits objects that are decoded once and then read. The keys together, and the values
/// together, hold at most 16 MiB of text each (the API server limits a whole object to about 1.5 MiB); decoding more
/// is an error, and building more panics. Cloning a map clones two `Arc`s.
///
/// ```
/// use std::collections::BTreeMap;
/// use kube_informer::object::StringMap;
///
/// let mut labels: StringMap = [("app", "web"), ("tier", "front")].into_iter().collect();
/// assert_eq!(labels.get("app"), Some("web"));
/// assert_eq!(&labels["tier"], "front");
/// labels.insert("env".into(), "prod".into());
/// assert_eq!(labels.keys().collect::<Vec<_>>(), ["app", "env", "tier"]);
/// assert_eq!(labels.remove("tier").as_deref(), Some("front"));
///
/// let text = serde_json::to_string(&labels).unwrap();
/// assert_eq!(text, r#"{"app":"web","env":"prod"}"#);
/// let back: StringMap = serde_json::from_str(&text).unwrap();
/// assert_eq!(back, labels);
/// assert_eq!(back, BTreeMap::from([("app".to_string(), "web".to_string()), ("env".into(), "prod".into())]));
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StringMap {
    /// `None` when empty; otherwise the entry count `n`, the end of each key as an offset into the keys, then the
    /// keys: key 0, key 1, … Every number is written in `DIGITS` base-64 ASCII characters.
    ///
    /// Invariants: keys are strictly increasing (so the texts of a map are canonical and equality is text equality);
    /// offsets are non-decreasing, fall on character boundaries, and the last one is the length of the keys.
    keys: Option<Arc<str>>,
    /// `None` exactly when `keys` is; otherwise the end of each value (offsets into the values), then the values in
    /// the order of their keys. Same invariants on the offsets.
    values: Option<Arc<str>>,
}

fn put_field(out: &mut String, v: usize) {
    debug_assert!(v <= MAX_FIELD);
    for i in (0..DIGITS).rev() {
        out.push(char::from(b'0' + ((v >> (6 * i)) & 63) as u8));
    }
}

/// `v` as a header writes it.
fn digits(v: usize) -> [u8; DIGITS] {
    let mut d = [0; DIGITS];
    for (i, c) in d.iter_mut().enumerate() {
        *c = b'0' + ((v >> (6 * (DIGITS - 1 - i))) & 63) as u8;
    }
    d
}

fn field(bytes: &[u8], at: usize) -> usize {
    bytes[at..at + DIGITS]
        .iter()
        .fold(0, |acc, &b| (acc << 6) | usize::from(b - b'0'))
}

impl StringMap {
    /// An empty map (allocates nothing).
    pub fn new() -> Self {
        StringMap {
            keys: None,
            values: None,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.keys.as_deref().map_or(0, |k| field(k.as_bytes(), 0))
    }

    /// True when the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.keys.is_none()
    }

    fn key_text(&self) -> &str {
        self.keys.as_deref().unwrap_or_default()
    }

    fn value_text(&self) -> &str {
        self.values.as_deref().unwrap_or_default()
    }

    /// The byte range of item `i` in `text`, whose offsets start at `header` and whose items start at `base`.
    fn range(text: &str, header: usize, base: usize, i: usize) -> Range<usize> {
        let b = text.as_bytes();
        let start = if i == 0 { 0 } else { field(b, header + DIGITS * (i - 1)) };
        base + start..base + field(b, header + DIGITS * i)
    }

    fn key_at(&self, i: usize) -> &str {
        let (k, n) = (self.key_text(), self.len());
        &k[Self::range(k, DIGITS, DIGITS * (1 + n), i)]
    }

    fn value_at(&self, i: usize) -> &str {
        let (v, n) = (self.value_text(), self.len());
        &v[Self::range(v, 0, DIGITS * n, i)]
    }

    fn entry_at(&self, i: usize) -> (&str, &str) {
        (self.key_at(i), self.value_at(i))
    }

    /// Index of `key`, or where it would go.
    fn find(&self, key: &str) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key_at(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key).ok().map(|i| self.entry_at(i).1)
    }

    /// The stored key and value for `key`.
    pub fn get_key_value(&self, key: &str) -> Option<(&str, &str)> {
        self.find(key).ok().map(|i| self.entry_at(i))
    }

    /// True when `key` has a value.
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            map: self,
            front: 0,
            back: self.len(),
        }
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in the order of their keys.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// Sets `key` to `value`, returning the previous value (the map is rebuilt: O(size)).
    ///
    /// # Panics
    /// When the map would hold more than 16 MiB of text.
    pub fn insert(&mut self, key: String, value: String) -> Option<String> {
        let mut b = Builder::with_capacity(
            self.key_text().len() + key.len(),
            self.value_text().len() + value.len(),
            self.len() + 1,
        );
        let mut old = None;
        let mut pending = Some((key, value));
        for (k, v) in self.iter() {
            if let Some((nk, nv)) = pending.take_if(|(nk, _)| nk.as_str() <= k) {
                b.push(&nk, &nv);
                if nk == k {
                    old = Some(v.to_owned());
                    continue;
                }
            }
            b.push(k, v);
        }
        if let Some((nk, nv)) = pending {
            b.push(&nk, &nv);
        }
        *self = b.finish().unwrap_or_else(|e| panic!("{e}"));
        old
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.find(key).ok()?;
        let old = self.entry_at(i).1.to_owned();
        self.retain(|k, _| k != key);
        Some(old)
    }

    /// Keeps only the entries for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        let mut b = Builder::with_capacity(self.key_text().len(), self.value_text().len(), self.len());
        for (k, v) in self.iter() {
            if keep(k, v) {
                b.push(k, v);
            }
        }
        *self = b.finish().expect("a subset of a valid map is valid");
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        *self = StringMap::new();
    }

    /// The entries as a `BTreeMap`.
    pub fn to_btree_map(&self) -> BTreeMap<String, String> {
        self.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
    }

    /// Bytes of text this map refers to (its keys and values, each with 4 bytes of offsets per entry; shared with
    /// the other maps of a cache that have the same keys or the same values).
    pub fn heap_size(&self) -> usize {
        self.key_text().len() + self.value_text().len()
    }
}

/// Builds a `StringMap` from entries in any order: appends them, then sorts only when they did not come sorted
/// (Kubernetes sends map keys sorted). A later duplicate key replaces an earlier one, as with `BTreeMap::insert`.
struct Builder {
    /// The keys, concatenated in arrival order (the keys of a sorted map, as its keys text holds them).
    keys: String,
    /// The values, concatenated in arrival order.
    values: String,
    /// `(key_end, value_end)` per entry: offsets into `keys` and `values`, each entry's key and value starting where
    /// the previous entry's end.
    ends: Vec<(u32, u32)>,
    /// The keys so far are strictly increasing.
    sorted: bool,
    /// `keys` and `values` grew past what a map may hold: `finish` fails (and `ends` stopped being recorded).
    overflow: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::with_capacity(0, 0, 0)
    }
}

impl Builder {
    fn with_capacity(keys: usize, values: usize, entries: usize) -> Self {
        Builder {
            keys: String::with_capacity(keys),
            values: String::with_capacity(values),
            ends: Vec::with_capacity(entries),
            sorted: true,
            overflow: false,
        }
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.values.clear();
        self.ends.clear();
        self.sorted = true;
        self.overflow = false;
    }

    /// Byte ranges of entry `i`'s key in `keys` and value in `values`.
    fn entry(&self, i: usize) -> (Range<usize>, Range<usize>) {
        let (k, v) = if i == 0 { (0, 0) } else { self.ends[i - 1] };
        let (ke, ve) = self.ends[i];
        (k as usize..ke as usize, v as usize..ve as usize)
    }

    /// Records the entry whose key and value were just appended to `keys` and `values`.
    fn close_entry(&mut self) {
        if self.overflow || self.keys.len() + self.values.len() > MAX_FIELD {
            self.overflow = true;
            return;
        }
        let n = self.ends.len();
        if n > 0 && self.sorted {
            // As bytes: the same order as `str`'s, without the character-boundary checks of slicing a `str`.
            let k = self.keys.as_bytes();
            let prev = self.entry(n - 1).0;
            if k[prev.clone()] >= k[prev.end..] {
                self.sorted = false;
            }
        }
        // Both fit: they are at most `MAX_FIELD`.
        self.ends.push((self.keys.len() as u32, self.values.len() as u32));
    }

    fn push(&mut self, key: &str, value: &str) {
        self.keys.push_str(key);
        self.values.push_str(value);
        self.close_entry();
    }

    /// The map: its keys and its values, in key order (already so when `sorted`).
    fn finish(&self) -> Result<StringMap, String> {
        let (mut keys, mut values) = (String::new(), String::new());
        self.finish_with(&mut keys, &mut values)
    }

    /// [`finish`](Self::finish), writing the two texts into `keys` and `values` first (scratch buffers, reused):
    /// the map then shares them through the interner entered on this thread, or copies them.
    fn finish_with(&self, keys: &mut String, values: &mut String) -> Result<StringMap, String> {
        if self.overflow || self.ends.len() > MAX_FIELD {
            return Err(format!(
                "a string map holds at most {MAX_FIELD} bytes of keys and values (got {} or more)",
                self.keys.len() + self.values.len()
            ));
        }
        if self.ends.is_empty() {
            return Ok(StringMap::new());
        }
        keys.clear();
        values.clear();
        if self.sorted {
            // The common case (Kubernetes sorts map keys): the headers straight from `ends`, then the keys and the
            // values as they came. The keys text is the one of a map decoded just before, more often than not
            // (objects of one template, decoded in turn): found from the parts, it is neither written nor hashed.
            let n = self.ends.len();
            // Room for each text up front (scratch buffers: the spare room is kept for the next map), so that
            // writing the headers a digit at a time never grows them.
            values.reserve(DIGITS * n + self.values.len());
            for &(_, v) in &self.ends {
                put_field(values, v as usize);
            }
            values.push_str(&self.values);
            let len = DIGITS * (1 + n) + self.keys.len();
            let keys = interner::intern_recent(
                |text| self.is_keys_text(text),
                move || {
                    keys.reserve(len);
                    put_field(keys, n);
                    for &(k, _) in &self.ends {
                        put_field(keys, k as usize);
                    }
                    keys.push_str(&self.keys);
                    keys.as_str()
                },
            );
            return Ok(StringMap {
                keys: Some(keys),
                values: Some(share_values(values)),
            });
        }
        // Unsorted: the key and value ranges of each entry to keep, in key order: a stable sort, then the last of
        // each run of equal keys wins.
        let mut order: Vec<(Range<usize>, Range<usize>)> = (0..self.ends.len()).map(|i| self.entry(i)).collect();
        let key = |e: &(Range<usize>, Range<usize>)| &self.keys[e.0.clone()];
        order.sort_by(|a, b| key(a).cmp(key(b)));
        let mut kept: Vec<(Range<usize>, Range<usize>)> = Vec::with_capacity(order.len());
        for e in order {
            match kept.last_mut() {
                Some(last) if key(last) == key(&e) => *last = e,
                _ => kept.push(e),
            }
        }
        put_field(keys, kept.len());
        let (mut key_len, mut value_len) = (0, 0);
        for (k, v) in &kept {
            key_len += k.len();
            value_len += v.len();
            put_field(keys, key_len);
            put_field(values, value_len);
        }
        for (k, v) in kept {
            keys.push_str(&self.keys[k]);
            values.push_str(&self.values[v]);
        }
        Ok(StringMap {
            keys: Some(interner::intern(keys)),
            values: Some(share_values(values)),
        })
    }

    /// True when `text` is the keys text of these entries (sorted): the same length, the same keys, cut at the same
    /// places.
    fn is_keys_text(&self, text: &str) -> bool {
        let (b, n) = (text.as_bytes(), self.ends.len());
        let at = DIGITS * (1 + n);
        b.len() == at + self.keys.len()
            && b[at..] == *self.keys.as_bytes()
            && b[..DIGITS] == digits(n)
            && b[DIGITS..at]
                .chunks_exact(DIGITS)
                .zip(&self.ends)
                .all(|(d, &(k, _))| *d == digits(k as usize))
    }
}

/// A map's values text, shared through the interner entered on this thread when short enough to repeat whole.
fn share_values(values: &str) -> Arc<str> {
    if values.len() <= SHARED_VALUES_MAX {
        interner::intern(values)
    } else {
        Arc::from(values)
    }
}

/// Iterator over a [`StringMap`]'s entries in key order.
#[derive(Clone)]
pub struct Iter<'a> {
    map: &'a StringMap,
    /// Invariant: `front <= back <= map.len()`; entries `front..back` are still to come.
    front: usize,
    back: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        (self.front < self.back).then(|| {
            self.front += 1;
            self.map.entry_at(self.front - 1)
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.back - self.front, Some(self.back - self.front))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        (self.front < self.back).then(|| {
            self.back -= 1;
            self.map.entry_at(self.back)
        })
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl std::iter::FusedIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a StringMap {
    type Item = (&'a str, &'a str);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for StringMap {
    type Item = (String, String);
    type IntoIter = std::vec::IntoIter<(String, String)>;

    /// The entries as owned strings, in key order.
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect::<Vec<_>>()
            .into_iter()
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for StringMap {
    /// Collects entries; a later duplicate key wins.
    ///
    /// # Panics
    /// Past 16 MiB of text.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut b = Builder::default();
        for (k, v) in iter {
            b.push(k.as_ref(), v.as_ref());
        }
        b.finish().unwrap_or_else(|e| panic!("{e}"))
    }
}

impl<K: AsRef<str>, V: AsRef<str>> Extend<(K, V)> for StringMap {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        let mut b = Builder::with_capacity(self.key_text().len(), self.value_text().len(), self.len());
        for (k, v) in self.iter() {
            b.push(k, v);
        }
        for (k, v) in iter {
            b.push(k.as_ref(), v.as_ref());
        }
        *self = b.finish().unwrap_or_else(|e| panic!("{e}"));
    }
}

impl<K: AsRef<str>, V: AsRef<str>, const N: usize> From<[(K, V); N]> for StringMap {
    fn from(entries: [(K, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl From<BTreeMap<String, String>> for StringMap {
    fn from(map: BTreeMap<String, String>) -> Self {
        map.iter().collect()
    }
}

impl From<&BTreeMap<String, String>> for StringMap {
    fn from(map: &BTreeMap<String, String>) -> Self {
        map.iter().collect()
    }
}

impl From<StringMap> for BTreeMap<String, String> {
    fn from(map: StringMap) -> Self {
        map.to_btree_map()
    }
}

impl From<&StringMap> for BTreeMap<String, String> {
    fn from(map: &StringMap) -> Self {
        map.to_btree_map()
    }
}

impl PartialEq<BTreeMap<String, String>> for StringMap {
    fn eq(&self, other: &BTreeMap<String, String>) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|((a, b), (c, d))| a == c && b == d)
    }
}

impl PartialEq<StringMap> for BTreeMap<String, String> {
    fn eq(&self, other: &StringMap) -> bool {
        other == self
    }
}

impl Index<&str> for StringMap {
    type Output = str;

    /// The value of `key`.
    ///
    /// # Panics
    /// When `key` is absent.
    fn index(&self, key: &str) -> &str {
        self.get(key).expect("no entry found for key")
    }
}

impl fmt::Debug for StringMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for StringMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        for (k, v) in self {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[cfg(test)]
impl StringMap {
    /// Address of the map's keys, to tell whether two maps share them.
    pub(crate) fn keys_ptr(&self) -> *const u8 {
        self.key_text().as_ptr()
    }

    /// Address of the map's values, to tell whether two maps share them.
    pub(crate) fn values_ptr(&self) -> *const u8 {
        self.value_text().as_ptr()
    }
}

/// Scratch of the decodes on one thread: the entries as they arrive, and the two texts of the map being built.
#[derive(Default)]
struct Scratch {
    builder: Builder,
    keys: String,
    values: String,
}

thread_local! {
    /// Reused by every decode on this thread, so decoding a map allocates at most its two texts (and nothing when
    /// an interner entered on this thread holds them already).
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Scratch capacity kept between decodes; a larger one (after a huge map) is given back.
const SCRATCH_KEEP: usize = 64 * 1024;

/// Appends one JSON string to the builder's entries.
struct Append<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for Append<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Append<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.push_str(v);
        Ok(())
    }
}

/// Reads a map.
struct MapVisitor;

impl<'de> Visitor<'de> for MapVisitor {
    type Value = StringMap;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of strings to strings")
    }

    fn visit_unit<E: de::Error>(self) -> Result<StringMap, E> {
        Ok(StringMap::new())
    }

    fn visit_none<E: de::Error>(self) -> Result<StringMap, E> {
        Ok(StringMap::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<StringMap, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StringMap, A::Error> {
        let mut read = |sc: &mut Scratch| {
            sc.builder.clear();
            let b = &mut sc.builder;
            while map.next_key_seed(Append(&mut b.keys))?.is_some() {
                map.next_value_seed(Append(&mut b.values))?;
                b.close_entry();
            }
            b.finish_with(&mut sc.keys, &mut sc.values).map_err(de::Error::custom)
        };
        // The thread's scratch, borrowed in place for the duration; a fresh one where it is borrowed already (a
        // nested decode) or gone (in a thread's destructors).
        let shared = SCRATCH.try_with(|s| {
            s.try_borrow_mut().ok().map(|mut sc| {
                let result = read(&mut sc);
                if sc.builder.keys.capacity() > SCRATCH_KEEP
                    || sc.builder.values.capacity() > SCRATCH_KEEP
                    || sc.builder.ends.capacity() > SCRATCH_KEEP / 8
                    || sc.keys.capacity() > SCRATCH_KEEP
                    || sc.values.capacity() > SCRATCH_KEEP
                {
                    *sc = Scratch::default();
                }
                result
            })
        });
        match shared {
            Ok(Some(result)) => result,
            _ => read(&mut Scratch::default()),
        }
    }
}

impl<'de> Deserialize<'de> for StringMap {
    /// Reads a JSON object of strings; `null` is an empty map. Decoded where an interner is entered (an informer's
    /// reflector thread), the keys, and values that repeat, are shared with the cache's other maps.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_option(MapVisitor)
    }
}

/// Read and write access to a map of strings to strings, whichever type holds it: what
/// [`MetaAccessor::labels`](super::MetaAccessor::labels) returns, and what selectors match against.
///
/// Implemented by [`StringMap`] (this crate's objects), `BTreeMap<String, String>` (k8s-openapi's) and
/// `HashMap<String, String>`.
///
/// ```
/// use std::collections::BTreeMap;
/// use kube_informer::object::{StrMap, StringMap};
///
/// fn app(labels: &dyn StrMap) -> Option<&str> {
///     labels.get("app")
/// }
/// let tree = BTreeMap::from([("app".to_string(), "web".to_string())]);
/// let compact = StringMap::from([("app", "web")]);
/// assert_eq!(app(&tree), app(&compact));
/// ```
///
/// The methods are named as the maps' own, which take precedence when called on a concrete map: through this trait
/// (`&dyn StrMap`) `get` returns `Option<&str>` whatever the map type.
pub trait StrMap {
    /// The value of `key`.
    fn get(&self, key: &str) -> Option<&str>;
    /// Number of entries.
    fn len(&self) -> usize;
    /// True when there is no entry.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// True when `key` has a value.
    fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    /// The entries, in the map's order.
    fn iter(&self) -> Box<dyn Iterator<Item = (&str, &str)> + '_>;
    /// Sets `key` to `value`, returning the previous value.
    fn insert(&mut self, key: String, value: String) -> Option<String>;
    /// Removes `key`, returning its value.
    fn remove(&mut self, key: &str) -> Option<String>;
}

impl StrMap for StringMap {
    fn get(&self, key: &str) -> Option<&str> {
        StringMap::get(self, key)
    }
    fn len(&self) -> usize {
        StringMap::len(self)
    }
    fn iter(&self) -> Box<dyn Iterator<Item = (&str, &str)> + '_> {
        Box::new(StringMap::iter(self))
    }
    fn insert(&mut self, key: String, value: String) -> Option<String> {
        StringMap::insert(self, key, value)
    }
    fn remove(&mut self, key: &str) -> Option<String> {
        StringMap::remove(self, key)
    }
}

impl StrMap for BTreeMap<String, String> {
    fn get(&self, key: &str) -> Option<&str> {
        Self::get(self, key).map(String::as_str)
    }
    fn len(&self) -> usize {
        Self::len(self)
    }
    fn iter(&self) -> Box<dyn Iterator<Item = (&str, &str)> + '_> {
        Box::new(Self::iter(self).map(|(k, v)| (k.as_str(), v.as_str())))
    }
    fn insert(&mut self, key: String, value: String) -> Option<String> {
        Self::insert(self, key, value)
    }
    fn remove(&mut self, key: &str) -> Option<String> {
        Self::remove(self, key)
    }
}

impl<S: std::hash::BuildHasher> StrMap for HashMap<String, String, S> {
    fn get(&self, key: &str) -> Option<&str> {
        Self::get(self, key).map(String::as_str)
    }
    fn len(&self) -> usize {
        Self::len(self)
    }
    fn iter(&self) -> Box<dyn Iterator<Item = (&str, &str)> + '_> {
        Box::new(Self::iter(self).map(|(k, v)| (k.as_str(), v.as_str())))
    }
    fn insert(&mut self, key: String, value: String) -> Option<String> {
        Self::insert(self, key, value)
    }
    fn remove(&mut self, key: &str) -> Option<String> {
        Self::remove(self, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(map: &StringMap) -> BTreeMap<String, String> {
        map.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
    }

    #[test]
    fn empty_maps_allocate_nothing_and_read_as_empty() {
        let m = StringMap::new();
        assert!(m.is_empty() && m.heap_size() == 0);
        assert_eq!(m.len(), 0);
        assert_eq!(m.get("a"), None);
        assert_eq!(m.iter().count(), 0);
        assert_eq!(serde_json::to_string(&m).unwrap(), "{}");
        assert_eq!(serde_json::from_str::<StringMap>("{}").unwrap(), m);
        assert_eq!(serde_json::from_str::<StringMap>("null").unwrap(), m);
        assert_eq!(StringMap::from([("a", "1")]).into_iter().count(), 1);
        let mut one = StringMap::from([("a", "1")]);
        one.remove("a");
        assert_eq!(one, m, "removing the last entry gives the canonical empty map");
    }

    #[test]
    fn decodes_unsorted_and_duplicate_keys_as_btreemap_does() {
        let text = r#"{"b":"2","a":"1","b":"3","c\u00e9":"x\ny","":""}"#;
        let m: StringMap = serde_json::from_str(text).unwrap();
        let tree: BTreeMap<String, String> = serde_json::from_str(text).unwrap();
        assert_eq!(m, tree);
        assert_eq!(m.keys().collect::<Vec<_>>(), ["", "a", "b", "cé"]);
        assert_eq!(m.get("b"), Some("3"));
        assert_eq!(m.get("cé"), Some("x\ny"));
        assert_eq!(m.get(""), Some(""));
        // Written back sorted, exactly as the BTreeMap writes itself.
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            serde_json::to_string(&tree).unwrap()
        );
    }

    #[test]
    fn maps_decoded_in_turn_reuse_only_equal_keys_texts() {
        let _scope = interner::Interner::enter();
        let decode = |t: &str| serde_json::from_str::<StringMap>(t).unwrap();
        // Decoded in turn, as a cache decodes objects: each map is read right whatever the keys of the maps before
        // it, whose keys texts are remembered.
        let texts = [
            r#"{"a":"1","bc":"2"}"#,
            r#"{"ab":"1","c":"2"}"#,
            r#"{"a":"1","bd":"2"}"#,
            r#"{"a":"3","bc":"4"}"#,
            r#"{"a":"1","bc":"2","d":"5"}"#,
            r#"{"a":"1"}"#,
            r#"{"abc":""}"#,
            r#"{"0008abcd":"x"}"#,
            r#"{"ab":"1","cd":"2"}"#,
            r#"{"bc":"2","a":"1"}"#,
            r#"{"a":"1","bc":"2","bc":"3"}"#,
        ];
        let mut first = Vec::new();
        for round in 0..3 {
            for (i, t) in texts.iter().enumerate() {
                let (m, again) = (decode(t), decode(t));
                assert_eq!(m, serde_json::from_str::<BTreeMap<String, String>>(t).unwrap(), "{t}");
                assert!(again == m && again.keys_ptr() == m.keys_ptr(), "{t}");
                if round == 0 {
                    first.push(m);
                } else {
                    assert_eq!(m.keys_ptr(), first[i].keys_ptr(), "{t}: the keys text shared");
                }
            }
        }
        assert!(
            interner::recent_hits() >= 3 * 9,
            "keys decoded in turn are found without the table"
        );
        let same_keys = [0, 3, 9, 10].map(|i| first[i].keys_ptr());
        assert!(
            same_keys.iter().all(|&p| p == same_keys[0]),
            "one keys text for equal keys"
        );
        assert_ne!(first[0].keys_ptr(), first[1].keys_ptr());
        assert_ne!(first[0].keys_ptr(), first[2].keys_ptr());
    }

    #[test]
    fn a_map_decoded_while_another_is_read_has_a_scratch_of_its_own() {
        use serde::de::IntoDeserializer;
        use serde::de::value::Error;
        /// Reads one entry, and decodes another map whenever asked for a key (the thread's scratch is in use).
        struct Nesting(bool);
        impl<'de> MapAccess<'de> for Nesting {
            type Error = Error;
            fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
                let inner: StringMap = serde_json::from_str(r#"{"inner":"x","j":"y"}"#).unwrap();
                assert_eq!(inner.to_btree_map(), StringMap::from([("inner", "x"), ("j", "y")]));
                std::mem::take(&mut self.0)
                    .then(|| seed.deserialize("k".into_deserializer()))
                    .transpose()
            }
            fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
                seed.deserialize("v".into_deserializer())
            }
        }
        assert_eq!(
            MapVisitor.visit_map(Nesting(true)).unwrap(),
            StringMap::from([("k", "v")])
        );
    }

    #[test]
    fn rejects_what_is_not_a_map_of_strings() {
        assert!(serde_json::from_str::<StringMap>(r#"{"a":1}"#).is_err());
        assert!(serde_json::from_str::<StringMap>(r#"{"a":null}"#).is_err());
        assert!(serde_json::from_str::<StringMap>(r#"["a"]"#).is_err());
        assert!(serde_json::from_str::<StringMap>(r#""a""#).is_err());
        // The scratch buffer is left usable after an error.
        assert_eq!(serde_json::from_str::<StringMap>(r#"{"k":"v"}"#).unwrap()["k"], *"v");
    }

    #[test]
    fn refuses_more_than_16_mib_of_text() {
        let big = "x".repeat(MAX_FIELD);
        let text = format!(r#"{{"a":"{big}"}}"#);
        let err = serde_json::from_str::<StringMap>(&text).unwrap_err();
        assert!(err.to_string().contains("at most"), "{err}");
        let fits = format!(r#"{{"a":"{}"}}"#, &big[1..]);
        assert_eq!(
            serde_json::from_str::<StringMap>(&fits).unwrap()["a"].len(),
            MAX_FIELD - 1
        );
    }

    #[test]
    fn behaves_like_a_btreemap_under_random_edits() {
        // A small deterministic generator (xorshift) so failures reproduce.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut m = StringMap::new();
        let mut tree: BTreeMap<String, String> = BTreeMap::new();
        for step in 0..3000 {
            let key = format!("k{}", next(40));
            // Values of every size, so offsets need every digit of the header.
            let value = "v".repeat(next(5000) as usize) + &step.to_string();
            match next(4) {
                0 => assert_eq!(m.remove(&key), tree.remove(&key)),
                1 => {
                    let keep = next(40);
                    m.retain(|k, _| k.len() as u64 % 3 != keep % 3);
                    tree.retain(|k, _| k.len() as u64 % 3 != keep % 3);
                }
                _ => assert_eq!(m.insert(key.clone(), value.clone()), tree.insert(key, value)),
            }
            assert_eq!(m.len(), tree.len());
            assert_eq!(model(&m), tree);
            let probe = format!("k{}", next(45));
            assert_eq!(m.get(&probe), tree.get(&probe).map(String::as_str));
            assert_eq!(m.contains_key(&probe), tree.contains_key(&probe));
        }
        let rebuilt: StringMap = tree.iter().rev().collect();
        assert_eq!(rebuilt, m, "the same entries in any order give an identical map");
        let back: StringMap = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        assert_eq!(
            m.iter().rev().map(|(k, _)| k.to_owned()).collect::<Vec<_>>(),
            tree.keys().rev().cloned().collect::<Vec<_>>()
        );
    }

    #[test]
    fn extends_and_converts() {
        let mut m = StringMap::from([("b", "2")]);
        m.extend([("a", "1"), ("b", "3")]);
        assert_eq!(format!("{m:?}"), r#"{"a": "1", "b": "3"}"#);
        let tree: BTreeMap<String, String> = m.clone().into();
        assert_eq!(StringMap::from(tree.clone()), m);
        assert_eq!(tree, m);
        m.clear();
        assert!(m.is_empty());
    }

    #[test]
    #[should_panic(expected = "no entry found for key")]
    fn indexing_a_missing_key_panics() {
        let _ = &StringMap::new()["a"];
    }

    #[test]
    fn str_map_reads_every_map_type_alike() {
        let compact = StringMap::from([("a", "1"), ("b", "2")]);
        let tree = compact.to_btree_map();
        let hash: HashMap<String, String> = tree.clone().into_iter().collect();
        for m in [&compact as &dyn StrMap, &tree, &hash] {
            assert_eq!(m.get("a"), Some("1"));
            assert_eq!(m.len(), 2);
            assert!(!m.is_empty() && m.contains_key("b") && !m.contains_key("c"));
            let mut all: Vec<_> = m.iter().collect();
            all.sort();
            assert_eq!(all, [("a", "1"), ("b", "2")]);
        }
        let mut compact = compact;
        let mut tree = tree;
        for m in [&mut compact as &mut dyn StrMap, &mut tree] {
            assert_eq!(m.insert("c".into(), "3".into()), None);
            assert_eq!(m.remove("a").as_deref(), Some("1"));
        }
        assert_eq!(compact, tree);
    }
}
