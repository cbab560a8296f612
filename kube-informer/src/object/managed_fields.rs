//! `ManagedFields`: `metadata.managedFields`, with what repeats across objects shared.
//!
//! Server-side apply's bookkeeping is often the largest part of an object's metadata, and most of it repeats: a
//! controller writes the same entry (manager, operation, API version, the set of fields it owns) on every object it
//! manages, the kubelet the same status fields on every pod. Each entry is held as three parts: its `time`, its
//! `fieldsV1` set, and the rest of its JSON text. Decoded in a cache ([`interner`]), the time and
//! the rest are interned, and the set is coded against the last one of the same manager, operation, version and
//! subresource: a controller's entry on a ReplicaSet's pods, which differs from pod to pod only by the name of the
//! pod's token volume, costs each pod those few bytes; the kubelet's, which differs by the pod's IP, the same.

use std::borrow::Cow;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::interner::{self, SharedText};
use super::lending;

/// `metadata.managedFields`: the entries of server-side apply's field managers, in the order received.
///
/// Read an entry's fields with [`ManagedFieldsEntry`]'s accessors; the whole list serialises back to the JSON it was
/// read from, each entry's keys in alphabetical order (`time` after `apiVersion`, as Kubernetes writes it). Cloning
/// clones a few `Arc`s per entry.
///
/// ```
/// use kube_informer::object::ObjectMeta;
///
/// let meta: ObjectMeta = serde_json::from_str(r#"{"name":"a","managedFields":[{"manager":"helm",
///     "operation":"Update","apiVersion":"v1","time":"2024-05-06T07:08:09Z","fieldsType":"FieldsV1",
///     "fieldsV1":{"f:data":{"f:a":{}}}}]}"#).unwrap();
/// let managed = meta.managed_fields.as_ref().unwrap();
/// let entry = managed.iter().next().unwrap();
/// assert_eq!((entry.manager().as_deref(), entry.operation().as_deref()), (Some("helm"), Some("Update")));
/// assert_eq!(entry.time(), Some("2024-05-06T07:08:09Z"));
/// assert_eq!(entry.fields_v1().unwrap(), r#"{"f:data":{"f:a":{}}}"#);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ManagedFields {
    /// Invariant: not empty (no entries is `None` in [`ObjectMeta`](super::ObjectMeta)). Shared by the objects of
    /// a cache whose entries are all the same (one controller's, written in the same second).
    entries: Arc<[ManagedFieldsEntry]>,
}

/// One entry of [`ManagedFields`]: a field manager's operation and the fields it owns.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ManagedFieldsEntry {
    /// `time`, when present (shared: entries written in the same second have the same).
    time: Option<Arc<str>>,
    /// The entry's keys and values but `time` and `fieldsV1`, as a JSON object's text, keys sorted (interned: the
    /// same for every entry of one manager, operation, version and subresource).
    rest: Arc<str>,
    /// `fieldsV1`, as its JSON text coded against the last one of the same `rest` (see the module docs).
    fields_v1: Option<SharedText>,
}

/// The keys of an entry a reader asks for, read from its text.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct View<'a> {
    #[serde(borrow, default)]
    manager: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    operation: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    fields_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    subresource: Option<Cow<'a, str>>,
}

impl ManagedFieldsEntry {
    /// The entry's keys but `time` and `fieldsV1` (a field that is not a string reads as absent).
    fn view(&self) -> View<'_> {
        serde_json::from_str(&self.rest).unwrap_or_default()
    }

    /// `manager`: who made the change (`kube-controller-manager`, `kubectl`, `helm`).
    pub fn manager(&self) -> Option<Cow<'_, str>> {
        self.view().manager
    }

    /// `operation`: `Apply` or `Update`.
    pub fn operation(&self) -> Option<Cow<'_, str>> {
        self.view().operation
    }

    /// `apiVersion` of the fields' schema.
    pub fn api_version(&self) -> Option<Cow<'_, str>> {
        self.view().api_version
    }

    /// `time` of the last change, RFC 3339.
    pub fn time(&self) -> Option<&str> {
        self.time.as_deref()
    }

    /// `fieldsType` (`FieldsV1`).
    pub fn fields_type(&self) -> Option<Cow<'_, str>> {
        self.view().fields_type
    }

    /// `subresource` the change was made through (`status`, `scale`), when not the main resource.
    pub fn subresource(&self) -> Option<Cow<'_, str>> {
        self.view().subresource
    }

    /// `fieldsV1`: the set of fields owned, as its JSON text (put together from its shared parts).
    pub fn fields_v1(&self) -> Option<Cow<'_, str>> {
        self.fields_v1.as_ref().map(SharedText::get)
    }
}

impl ManagedFields {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always false: an object without entries has no `ManagedFields` (`None`).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, ManagedFieldsEntry> {
        self.entries.iter()
    }

    /// The entries as JSON text: what the server sent, each entry's keys in alphabetical order (`time` after
    /// `apiVersion`).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl<'a> IntoIterator for &'a ManagedFields {
    type Item = &'a ManagedFieldsEntry;
    type IntoIter = std::slice::Iter<'a, ManagedFieldsEntry>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

impl fmt::Debug for ManagedFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.entries.iter()).finish()
    }
}

impl fmt::Debug for ManagedFieldsEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedFieldsEntry")
            .field("manager", &self.manager())
            .field("operation", &self.operation())
            .field("time", &self.time())
            .finish_non_exhaustive()
    }
}

impl Serialize for ManagedFieldsEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // `rest` is JSON this crate wrote: an error here is a bug, reported rather than written as a smaller entry.
        let members = serde_json::from_str::<OrderedMembers<'_>>(&self.rest)
            .map_err(serde::ser::Error::custom)?
            .0;
        let fields = self.fields_v1.as_ref().map(SharedText::get);
        let fields = match fields.as_deref().map(serde_json::from_str::<&RawValue>) {
            Some(Ok(raw)) => Some(raw),
            Some(Err(e)) => return Err(serde::ser::Error::custom(e)),
            None => None,
        };
        let n = members.len() + usize::from(self.time.is_some()) + usize::from(fields.is_some());
        let mut map = s.serialize_map(Some(n))?;
        let (mut time, mut fields) = (self.time.as_deref(), fields);
        for (k, v) in members {
            let k = &*k;
            map.serialize_entry(k, v)?;
            if k == "apiVersion"
                && let Some(t) = time.take()
            {
                map.serialize_entry("time", t)?;
            }
            if k == "fieldsType"
                && let Some(f) = fields.take()
            {
                map.serialize_entry("fieldsV1", f)?;
            }
        }
        if let Some(t) = time {
            map.serialize_entry("time", t)?;
        }
        if let Some(f) = fields {
            map.serialize_entry("fieldsV1", f)?;
        }
        map.end()
    }
}

impl Serialize for ManagedFields {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.entries.len()))?;
        for e in self.entries.iter() {
            seq.serialize_element(e)?;
        }
        seq.end()
    }
}

/// The members of a JSON object in their order, borrowed (a key with an escape, which cannot be, copied).
struct OrderedMembers<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for OrderedMembers<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedMembers<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key_seed(CowStr)? {
                    out.push((k, map.next_value::<&'de RawValue>()?));
                }
                Ok(OrderedMembers(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// True when `s` has no byte JSON escapes (a control character, `"` or `\\`): checked 8 bytes at a time (the
/// bytes one at a time cost a tenth of an entry's decoding).
fn needs_no_escape(s: &str) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte of `w` below `n` (n <= 0x80), as the high bit of that byte: exact for bytes below 0x80, and bytes from
    // 0x80 up have their own high bit masked out by `!w`.
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGHS;
    let zero = |w: u64| below(w, 1);
    let clean =
        |w: u64| (below(w, 0x20) | zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\')))) == 0;
    let mut chunks = s.as_bytes().chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0; 8];
        w.copy_from_slice(c);
        if !clean(u64::from_le_bytes(w)) {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\')
}

/// Writes a JSON string (quoted and escaped) to `out`.
fn push_json_str(out: &mut String, s: &str) {
    if needs_no_escape(s) {
        // Nothing to escape (every key and value Kubernetes writes here).
        out.push('"');
        out.push_str(s);
        out.push('"');
        return;
    }
    // Writing a `str` to a `String` through serde_json cannot fail.
    let mut buf = std::mem::take(out).into_bytes();
    let _ = serde_json::to_writer(&mut buf, s);
    *out = String::from_utf8(buf).unwrap_or_default();
}

/// The members of the entry being decoded, back to back, where each is (`(start, key end, end)`), and the object
/// they make, sorted.
type Members = (String, Vec<(usize, usize, usize)>, String);

thread_local! {
    /// The members of the entry being decoded (reused by every decode on this thread).
    static SCRATCH: std::cell::RefCell<Members> =
        const { std::cell::RefCell::new((String::new(), Vec::new(), String::new())) };
}

/// Writes into `out` the JSON object of `members` (found in `text`) sorted by key, so that entries of the same keys
/// and values have the same text in whatever order they came (a later duplicate key wins, as in
/// `serde_json::Value`).
fn canonical(text: &str, members: &mut [(usize, usize, usize)], out: &mut String) {
    let key = |m: &(usize, usize, usize)| &text[m.0..m.1];
    members.sort_by(|a, b| key(a).cmp(key(b)));
    out.clear();
    out.push('{');
    for (i, m) in members.iter().enumerate() {
        if members.get(i + 1).is_some_and(|next| key(next) == key(m)) {
            continue;
        }
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&text[m.0..m.2]);
    }
    out.push('}');
}

/// Decodes one entry: `time` apart, the other members written back to back into one text, both shared.
struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = ManagedFieldsEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a managedFields entry")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ManagedFieldsEntry, A::Error> {
        // `try_with`: in a thread's destructors, where the scratch is gone, fresh buffers do the same job.
        let (mut rest, mut members, mut sorted) = SCRATCH
            .try_with(|s| std::mem::take(&mut *s.borrow_mut()))
            .unwrap_or_default();
        rest.clear();
        members.clear();
        let (mut time, mut fields) = (None, None);
        let result = (|| {
            while let Some(key) = map.next_key_seed(CowStr)? {
                match &*key {
                    "time" if time.is_some() => return Err(de::Error::duplicate_field("time")),
                    "time" => time = Some(map.next_value_seed(SharedStr)?),
                    "fieldsV1" if fields.is_some() => return Err(de::Error::duplicate_field("fieldsV1")),
                    // `null` is kept as absent.
                    "fieldsV1" => fields = Some(map.next_value::<Option<Box<RawValue>>>()?),
                    _ => {
                        let start = rest.len();
                        push_json_str(&mut rest, &key);
                        let key_end = rest.len();
                        rest.push(':');
                        if matches!(
                            &*key,
                            "manager" | "operation" | "apiVersion" | "fieldsType" | "subresource"
                        ) {
                            // Strings (as Kubernetes defines them): read without an allocation.
                            let v = map.next_value_seed(CowStr)?;
                            push_json_str(&mut rest, &v);
                        } else {
                            map.next_value_seed(RawInto(&mut rest))?;
                        }
                        members.push((start, key_end, rest.len()));
                    }
                }
            }
            canonical(&rest, &mut members, &mut sorted);
            let rest = interner::intern(&sorted);
            let fields_v1 = fields.flatten().map(|f| interner::shared_text(&rest, f.get()));
            Ok(ManagedFieldsEntry {
                time: time.flatten(),
                rest,
                fields_v1,
            })
        })();
        if rest.capacity() <= 64 * 1024 && members.capacity() <= 1024 {
            let _ = SCRATCH.try_with(|s| *s.borrow_mut() = (rest, members, sorted));
        }
        result
    }
}

/// Reads a string, borrowed from the input when the deserializer can lend it (serde's own `Cow<str>` always copies:
/// an allocation per key and value of every entry).
struct CowStr;

impl<'de> DeserializeSeed<'de> for CowStr {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for CowStr {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// Reads a string (or `null`) as a shared `Arc<str>`.
pub(crate) struct SharedStr;

impl<'de> DeserializeSeed<'de> for SharedStr {
    type Value = Option<Arc<str>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for SharedStr {
    type Value = Option<Arc<str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(interner::intern(v)))
    }
}

/// Appends a JSON value's text to a string.
struct RawInto<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for RawInto<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        // `Box<RawValue>` reads from any serde_json deserializer (from text or from a `serde_json::Value`).
        let raw = Box::<RawValue>::deserialize(d)?;
        self.0.push_str(raw.get());
        Ok(())
    }
}

/// A list of entries as the interner compares them: by the identity of their shared parts, which decoding in one
/// scope makes identical for equal entries (the bytes of a coded `fieldsV1`'s own run are compared).
#[derive(Clone)]
pub(crate) struct SameEntries(pub(crate) Arc<[ManagedFieldsEntry]>);

impl PartialEq for SameEntries {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().zip(other.0.iter()).all(|(a, b)| {
                Arc::ptr_eq(&a.rest, &b.rest)
                    && match (&a.time, &b.time) {
                        (Some(x), Some(y)) => Arc::ptr_eq(x, y),
                        (None, None) => true,
                        _ => false,
                    }
                    && match (&a.fields_v1, &b.fields_v1) {
                        (Some(x), Some(y)) => x.same_parts(y),
                        (None, None) => true,
                        _ => false,
                    }
            })
    }
}

impl Eq for SameEntries {}

impl std::hash::Hash for SameEntries {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        for e in self.0.iter() {
            std::ptr::hash(Arc::as_ptr(&e.rest), h);
            e.time.as_ref().map(Arc::as_ptr).hash(h);
            if let Some(f) = &e.fields_v1 {
                f.hash_parts(h);
            }
        }
    }
}

/// Reads the array of entries; `null` and `[]` are none. `raw` is the array's JSON text, when it was read whole
/// first (see [`OptionalManagedFields`]).
struct ListVisitor<'t> {
    raw: Option<&'t str>,
}

impl<'de> Visitor<'de> for ListVisitor<'_> {
    type Value = Option<ManagedFields>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of managedFields entries")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(e) = seq.next_element_seed(EntrySeed)? {
            entries.push(e);
        }
        // A list with a set coded against another (a pod's own token volume or IP) is the object's own: interned, it
        // would only fill the table.
        let shareable = entries
            .iter()
            .all(|e| e.fields_v1.as_ref().is_none_or(SharedText::is_whole));
        let entries: Arc<[ManagedFieldsEntry]> = entries.into();
        Ok((!entries.is_empty()).then(|| ManagedFields {
            entries: if shareable {
                interner::intern_list(SameEntries(entries), self.raw).0
            } else {
                entries
            },
        }))
    }
}

struct EntrySeed;

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = ManagedFieldsEntry;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ManagedFieldsEntry, D::Error> {
        d.deserialize_map(EntryVisitor)
    }
}

impl<'de> Deserialize<'de> for ManagedFieldsEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EntryVisitor)
    }
}

/// Reads `managedFields` as [`ObjectMeta`](super::ObjectMeta) keeps it: `null` and `[]` are `None`.
///
/// The list is read whole first, as JSON text (one scan, nothing decoded): in a cache, a list whose text was decoded
/// before — one controller's entries, written in the same second on every object of a release — is the list decoded
/// then, found by its text without decoding it again. Any other list is then decoded from that text. Decoded
/// outside a cache, the list takes the same path, so that both give the same errors. In this crate's decoders the
/// text is borrowed from the input; elsewhere it is copied (see [`lending`]).
pub(crate) struct OptionalManagedFields;

impl<'de> DeserializeSeed<'de> for OptionalManagedFields {
    type Value = Option<ManagedFields>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        // `null` is none. Borrowed from the text in this crate's decoders (see `lending`); elsewhere copied:
        // `Box<RawValue>` reads from any serde_json deserializer (text, a reader, a `serde_json::Value`).
        let raw: Cow<'de, RawValue> = if lending::lends() {
            match Option::<&'de RawValue>::deserialize(d) {
                Ok(Some(raw)) => Cow::Borrowed(raw),
                Ok(None) => return Ok(None),
                Err(e) => {
                    lending::refuse();
                    return Err(e);
                }
            }
        } else {
            match copied(d)? {
                Some(raw) => Cow::Owned(raw),
                None => return Ok(None),
            }
        };
        let text = raw.get();
        if let Some(found) = interner::find_list(text) {
            return Ok(Some(ManagedFields { entries: found.0 }));
        }
        let mut de = serde_json::Deserializer::from_str(text);
        de.deserialize_option(ListVisitor { raw: Some(text) })
            .and_then(|list| de.end().map(|()| list))
            .map_err(|e| {
                // The error's own position is in the list's text: the deserializer of the whole document adds its.
                let message = e.to_string();
                let at = format!(" at line {} column {}", e.line(), e.column());
                de::Error::custom(message.strip_suffix(&at).unwrap_or(&message))
            })
    }
}

/// `managedFields`' text copied (out of line: this crate's decoders borrow it).
#[cold]
fn copied<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Option::<Box<RawValue>>::deserialize(d)
}

impl<'de> Deserialize<'de> for ManagedFields {
    /// Reads a JSON array of entries (at least one).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(ListVisitor { raw: None })?
            .ok_or_else(|| de::Error::invalid_length(0, &"at least one managedFields entry"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::interner::Interner;

    const TWO: &str = r#"[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2024-05-06T07:08:09Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}},{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2024-05-06T07:08:31Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:phase":{}}},"subresource":"status"}]"#;

    #[test]
    fn round_trips_and_reads_each_field() {
        let m: ManagedFields = serde_json::from_str(TWO).unwrap();
        assert_eq!(m.len(), 2);
        let kubelet = m.iter().nth(1).unwrap();
        assert_eq!(kubelet.manager().as_deref(), Some("kubelet"));
        assert_eq!(kubelet.subresource().as_deref(), Some("status"));
        assert_eq!(kubelet.api_version().as_deref(), Some("v1"));
        assert_eq!(kubelet.fields_type().as_deref(), Some("FieldsV1"));
        assert_eq!(kubelet.fields_v1().unwrap(), r#"{"f:status":{"f:phase":{}}}"#);
        let value = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
        assert_eq!(value(&m.to_json()), value(TWO));
        let from_value: ManagedFields = serde_json::from_value(serde_json::from_str(TWO).unwrap()).unwrap();
        assert_eq!(from_value, m);
    }

    /// Found by the `shared_objects` fuzz target: a key with an escape (which serde cannot lend) made the entry
    /// serialise without its members, so `manager` was lost on the way back.
    #[test]
    fn an_unknown_key_with_an_escape_round_trips_with_the_rest() {
        let text = r#"[{"apiVersion":"v1","manager":"helm","time9p\"}":"Update","time":"2024-05-06T07:08:09Z"}]"#;
        let m: ManagedFields = serde_json::from_str(text).unwrap();
        let back: ManagedFields = serde_json::from_str(&m.to_json()).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.iter().next().unwrap().manager().as_deref(), Some("helm"));
        let value = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
        assert_eq!(value(&m.to_json()), value(text));
    }

    #[test]
    fn entries_differing_by_time_or_locally_share_their_parts_in_a_scope() {
        let other = TWO.replace("07:08:09Z", "09:00:00Z").replace("f:phase", "f:phasf");
        let (a, b): (ManagedFields, ManagedFields) = (
            serde_json::from_str(TWO).unwrap(),
            serde_json::from_str(&other).unwrap(),
        );
        assert!(!Arc::ptr_eq(&a.entries[0].rest, &b.entries[0].rest));
        let _scope = Interner::enter();
        let (a, b): (ManagedFields, ManagedFields) = (
            serde_json::from_str(TWO).unwrap(),
            serde_json::from_str(&other).unwrap(),
        );
        assert!(Arc::ptr_eq(&a.entries[0].rest, &b.entries[0].rest));
        assert!(Arc::ptr_eq(&a.entries[1].rest, &b.entries[1].rest));
        assert!(Arc::ptr_eq(
            a.entries[1].time.as_ref().unwrap(),
            b.entries[1].time.as_ref().unwrap()
        ));
        let base = |m: &ManagedFields, i: usize| m.entries[i].fields_v1.as_ref().unwrap().base().clone();
        assert!(Arc::ptr_eq(&base(&a, 0), &base(&b, 0)), "the same set");
        assert!(
            Arc::ptr_eq(&base(&a, 1), &base(&b, 1)),
            "a set differing by one byte, coded against the first"
        );
        assert_ne!(a, b);
        let again: ManagedFields = serde_json::from_str(TWO).unwrap();
        assert!(Arc::ptr_eq(&a.entries, &again.entries), "the same entries: one list");
        let coded: ManagedFields = serde_json::from_str(&other).unwrap();
        assert!(
            !Arc::ptr_eq(&b.entries, &coded.entries),
            "a list with a coded set is not interned"
        );
        let value = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
        assert_eq!(value(&b.to_json()), value(&other));
        assert_eq!(value(&a.to_json()), value(TWO));
    }

    /// Metadata decoded in a cache, as the reflector decodes it.
    fn meta(list: &str) -> crate::object::ObjectMeta {
        serde_json::from_str(&format!(r#"{{"name":"a","managedFields":{list}}}"#)).unwrap()
    }

    #[test]
    fn a_list_sent_again_byte_for_byte_is_found_by_its_text() {
        use crate::object::interner::raw_lists_len;
        let _scope = Interner::enter();
        let first = meta(TWO).managed_fields.unwrap();
        assert_eq!(raw_lists_len(), 0, "a list seen once keeps no copy of its text");
        let second = meta(TWO).managed_fields.unwrap();
        assert!(Arc::ptr_eq(&first.entries, &second.entries));
        assert_eq!(raw_lists_len(), 1, "a list seen twice is remembered by its text");
        let third = meta(TWO).managed_fields.unwrap();
        assert!(Arc::ptr_eq(&first.entries, &third.entries));
        // The same entries written otherwise (a space): decoded, and the same list.
        let spaced = TWO.replace("\"manager\":", "\"manager\" :");
        let fourth = meta(&spaced).managed_fields.unwrap();
        assert!(Arc::ptr_eq(&first.entries, &fourth.entries));
        assert_eq!(raw_lists_len(), 2);
        let value = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
        assert_eq!(value(&third.to_json()), value(TWO));
        // A list with a set of its own is never remembered.
        let other = TWO.replace("f:phase", "f:phasf");
        for _ in 0..3 {
            let _ = meta(&other);
        }
        assert_eq!(raw_lists_len(), 2);
    }

    #[test]
    fn lists_read_whole_first_give_the_same_errors_in_a_cache_or_not() {
        let bad = [
            r#"[{"time":5}]"#,
            r#"[1]"#,
            r#"[{"manager":"a","manager":5}]"#,
            r#"[{"time":"a","time":"b"}]"#,
            r#"{"manager":"x"}"#,
            r#"[{"manager":"a"},]"#,
        ];
        let decode = |list: &str| {
            serde_json::from_str::<crate::object::ObjectMeta>(&format!(r#"{{"name":"a","managedFields":{list}}}"#))
                .map(|m| m.managed_fields)
                .map_err(|e| e.to_string())
        };
        let plain: Vec<_> = bad.iter().map(|l| decode(l)).collect();
        let _scope = Interner::enter();
        for (list, p) in bad.iter().zip(&plain) {
            let e = p.as_ref().unwrap_err();
            assert_eq!(e.matches(" at line ").count(), 1, "one position, the document's: {e}");
            assert_eq!(&decode(list), p, "{list}");
            assert_eq!(&decode(list), p, "{list}");
        }
        assert!(
            plain[0].as_ref().unwrap_err().starts_with("invalid type: integer `5`"),
            "{plain:?}"
        );
        assert_eq!(decode("null"), Ok(None));
        assert_eq!(decode("[]"), Ok(None));
    }

    #[test]
    fn texts_of_lists_nobody_holds_are_swept() {
        use crate::object::interner::raw_lists_len;
        let _scope = Interner::enter();
        let kept = meta(TWO).managed_fields.unwrap();
        let _again = meta(TWO);
        for i in 0..4 * crate::object::interner::SWEEP_MIN {
            let list = format!(r#"[{{"manager":"m{i}"}}]"#);
            drop((meta(&list), meta(&list)));
            assert!(
                raw_lists_len() <= 2 * crate::object::interner::SWEEP_MIN,
                "{}",
                raw_lists_len()
            );
        }
        assert!(
            Arc::ptr_eq(&kept.entries, &meta(TWO).managed_fields.unwrap().entries),
            "alive: kept"
        );
    }

    #[test]
    fn many_lists_alive_and_few_strings_sweep_rarely() {
        // Lists outnumbering the strings (every object's entries differ by their time): the sweeps stay
        // logarithmic in what is interned, never one per list.
        let _scope = Interner::enter();
        let n = 4 * crate::object::interner::SWEEP_MIN;
        let alive: Vec<ManagedFields> = (0..n)
            .map(|i| {
                let text = format!(r#"[{{"manager":"m","time":"{i}","fieldsV1":{{"f:a":{{}}}}}}]"#);
                serde_json::from_str(&text).unwrap()
            })
            .collect();
        assert_eq!(alive.len(), n);
        assert!(
            crate::object::interner::sweeps() <= 5,
            "{}",
            crate::object::interner::sweeps()
        );
    }

    #[test]
    fn the_escape_check_a_word_at_a_time_agrees_with_one_byte_at_a_time() {
        let naive = |s: &str| s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
        for b in 0u8..=0x7f {
            for at in 0..17 {
                let mut text: Vec<u8> = b"kube-controller-manager".to_vec();
                text.truncate(17);
                text[at] = b;
                let text = String::from_utf8(text).unwrap();
                assert_eq!(needs_no_escape(&text), naive(&text), "{b:#x} at {at}");
            }
        }
        for text in [
            "",
            "\u{e9}t\u{e9} \u{1f600}",
            "\u{7f}\u{80}\u{ff}",
            "a\"b",
            "12345678\u{1}",
        ] {
            assert_eq!(needs_no_escape(text), naive(text), "{text:?}");
        }
    }

    #[test]
    fn keys_and_values_are_read_alike_borrowed_or_copied() {
        // From text (borrowed where nothing is escaped), from a reader (always copied) and from a `Value`.
        let text = r#"[{"manager":"kube\u0041","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]"#;
        let from_str: ManagedFields = serde_json::from_str(text).unwrap();
        let from_reader: ManagedFields = serde_json::from_reader(text.as_bytes()).unwrap();
        let from_value: ManagedFields = serde_json::from_value(serde_json::from_str(text).unwrap()).unwrap();
        assert_eq!(from_str, from_reader);
        assert_eq!(from_str, from_value);
        let e = from_str.iter().next().unwrap();
        assert_eq!(e.manager().as_deref(), Some("kubeA"));
        assert_eq!(e.operation().as_deref(), Some("Update"));
    }

    #[test]
    fn keeps_unknown_keys_and_refuses_what_is_not_a_list_of_objects() {
        let text = r#"[{"manager":"x","future":[1,{"a":null}],"time":null,"manager":"y"}]"#;
        let m: ManagedFields = serde_json::from_str(text).unwrap();
        assert_eq!(m.to_json(), r#"[{"future":[1,{"a":null}],"manager":"y"}]"#);
        assert!(serde_json::from_str::<ManagedFields>("[]").is_err());
        assert!(serde_json::from_str::<ManagedFields>("[1]").is_err());
        assert!(serde_json::from_str::<ManagedFields>(r#"[{"time":5}]"#).is_err());
        assert!(serde_json::from_str::<ManagedFields>(r#"[{"manager":5}]"#).is_err());
        let escaped: ManagedFields = serde_json::from_str(r#"[{"manager":"a\"b\\c\u0001"}]"#).unwrap();
        assert_eq!(
            escaped.iter().next().unwrap().manager().as_deref(),
            Some("a\"b\\c\u{1}")
        );
        assert!(serde_json::from_str::<ManagedFields>(r#"[{"time":"a","time":"b"}]"#).is_err());
        assert!(serde_json::from_str::<ManagedFields>(r#"{"manager":"x"}"#).is_err());
    }
}
