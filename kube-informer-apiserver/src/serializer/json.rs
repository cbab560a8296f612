//! JSON as kube-apiserver writes it (apimachinery's `runtime/serializer/json`, which hands every object to Go's
//! `encoding/json`), so that a body is byte for byte what a cluster sends:
//!
//! * a built-in kind is a Go struct: `kind` and `apiVersion` first (the inlined `TypeMeta`), then its fields in
//!   the struct's declaration order — `metadata` in `ObjectMeta`'s order, `spec`, `status`, a list's `metadata`
//!   then `items` — nested structs (`PodSpec`, `Container`, …) likewise. The order is the field table of
//!   [`crate::protobuf`] (`messages.txt` lists each struct's fields in declaration order, which protobuf numbers do
//!   not always follow: `PodSpec.initContainers` is field 20, declared second). A built-in kind the table does not
//!   describe gets `kind`, `apiVersion`, `metadata` in `ObjectMeta`'s order, then its other fields sorted;
//! * maps (`labels`, `data`), custom resources (`unstructured.Unstructured`, a `map[string]interface{}`) and every
//!   value whose Go type writes itself (`RawExtension`, `FieldsV1`) have their keys sorted, as Go sorts map keys;
//!   so have keys a struct does not declare (Go would not keep them; the server keeps what it stored);
//! * strings escaped as `encoding/json` escapes them: `<`, `>`, `&`, U+2028 and U+2029 as `\u003c`… (its HTML
//!   escaping, on by default in `json.Encoder` and `json.Marshal`), control characters as `\n`, `\b`… or `\u001f`;
//! * numbers: integers as they are; a fractional number as Go writes a `float64` (`1` for `1.0`, `1e+21`, `1e-7`).
//!
//! The values written are already in memory (parsed by serde_json, whose recursion limit bounds their depth), and
//! the walk follows their nesting: no input reaches it that a parser has not bounded first.

use std::io::Write as _;
use std::sync::OnceLock;

use kube_informer::object::Status;
use serde_json::{Map, Number, Value};

use crate::api::strconv::exponent_form;
use crate::protobuf::schema::{Schema, Shape, Special, Type};

/// A built-in object (or list) as kube-apiserver writes it: its Go type's order, found by its `apiVersion` and
/// `kind`.
pub(crate) fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    write_object(&mut out, value);
    out
}

/// Appends [`to_vec`]'s bytes to `out`.
pub(crate) fn write_object(out: &mut Vec<u8>, value: &Value) {
    let layouts = Layouts::get();
    match value {
        Value::Object(o) => {
            let message = match (o.get("apiVersion"), o.get("kind")) {
                (Some(Value::String(a)), Some(Value::String(k))) => layouts
                    .schema
                    .kind(a, k)
                    .or_else(|| meta_kind(a, k).and_then(|m| layouts.schema.message(m))),
                _ => None,
            };
            let layout = message.map_or(&layouts.unknown_kind, |m| &layouts.structs[m]);
            layouts.strukt(out, o, layout, true, &mut Vec::with_capacity(32));
        }
        other => any(out, other),
    }
}

impl Slot {
    fn new(name: &'static str, ty: Ty, each: bool) -> Slot {
        let mut quoted = Vec::with_capacity(name.len() + 3);
        key(&mut quoted, name, 0);
        Slot {
            name,
            quoted: quoted.into_boxed_slice(),
            ty,
            each,
        }
    }
}

/// The message of a kind of `meta/v1`, whose types every group serves.
fn meta_kind(api_version: &str, kind: &str) -> Option<&'static str> {
    Some(match (api_version, kind) {
        ("v1" | "meta.k8s.io/v1", "Status") => "meta.v1.Status",
        ("meta.k8s.io/v1" | "meta.k8s.io/v1beta1", "PartialObjectMetadata") => "meta.v1.PartialObjectMetadata",
        ("meta.k8s.io/v1" | "meta.k8s.io/v1beta1", "PartialObjectMetadataList") => "meta.v1.PartialObjectMetadataList",
        _ => return None,
    })
}

/// Whether an embedded object is of a kind the table describes (a custom resource is a map in Go: keys sorted).
fn built_in(o: &Map<String, Value>) -> bool {
    match (o.get("apiVersion"), o.get("kind")) {
        (Some(Value::String(a)), Some(Value::String(k))) => {
            Layouts::get().schema.kind(a, k).is_some() || meta_kind(a, k).is_some()
        }
        _ => false,
    }
}

/// A custom resource (or any value Go holds as `map[string]interface{}`): every object's keys sorted.
pub(crate) fn to_vec_unstructured(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    any(&mut out, value);
    out
}

/// A value of the Go struct `message` (`meta.v1.ListMeta`), in its order; keys sorted if the table lacks it.
pub(crate) fn to_vec_as(value: &Value, message: &str) -> Vec<u8> {
    let layouts = Layouts::get();
    let mut out = Vec::with_capacity(128);
    match (value, layouts.schema.message(message)) {
        (Value::Object(o), Some(m)) => {
            layouts.strukt(&mut out, o, &layouts.structs[m], false, &mut Vec::with_capacity(32))
        }
        _ => any(&mut out, value),
    }
    out
}

/// A `Status` body: `meta/v1 Status`'s order (`kind`, `apiVersion`, `metadata`, `status`, `message`, `reason`,
/// `details`, `code`), its `omitempty` fields left out when empty as Go leaves them out.
pub(crate) fn status_to_vec(status: &Status) -> Vec<u8> {
    let mut value = serde_json::to_value(status).unwrap_or(Value::Null);
    if let Value::Object(o) = &mut value {
        o.retain(|k, v| match k.as_str() {
            "status" | "message" | "reason" => v.as_str().is_none_or(|s| !s.is_empty()),
            "code" => v.as_u64() != Some(0),
            _ => true,
        });
    }
    let layouts = Layouts::get();
    let mut out = Vec::with_capacity(256);
    match (&value, layouts.schema.message("meta.v1.Status")) {
        (Value::Object(o), Some(m)) => {
            layouts.strukt(&mut out, o, &layouts.structs[m], true, &mut Vec::with_capacity(32))
        }
        _ => any(&mut out, &value),
    }
    out
}

/// How a field's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    /// Keys sorted (a map, a scalar, a type that writes itself).
    Any,
    /// A Go struct: index of its message.
    Struct(usize),
    /// An embedded object (a Table row's `RawExtension` holding a typed object): its own kind's order.
    Object,
}

/// A field of a struct, embedded structs' fields flattened into their parent's.
#[derive(Clone, Debug)]
struct Slot {
    name: &'static str,
    /// `"name":` as [`key`] writes it, written in one copy.
    quoted: Box<[u8]>,
    ty: Ty,
    /// A slice or map: `ty` is each element's (each value's) type.
    each: bool,
}

/// A struct's fields in Go's order, and where each name goes, so that writing an object costs what the object
/// holds, not what its struct declares (a `PodSpec` declares ~40 fields and usually sets a few).
#[derive(Debug, Default)]
struct Layout {
    slots: Vec<Slot>,
    /// `(name, index into slots)`, sorted by name as the object's keys are (byte-wise).
    by_name: Vec<(&'static str, u32)>,
}

impl Layout {
    fn new(slots: Vec<Slot>) -> Layout {
        let mut by_name: Vec<(&'static str, u32)> = (0u32..).zip(&slots).map(|(i, s)| (s.name, i)).collect();
        by_name.sort_unstable();
        Layout { slots, by_name }
    }
}

/// A key of the object being written, with its place: 0 and 1 for `kind` and `apiVersion` (a kind's
/// `TypeMeta`), `FIRST_SLOT + i` for the struct's `i`th field, after those the keys it does not declare in their
/// (sorted) map order.
#[derive(Clone, Copy)]
struct Placed<'a> {
    rank: u32,
    key: &'a str,
    value: &'a Value,
}

/// The rank of a struct's first declared field (after `kind` and `apiVersion`).
const FIRST_SLOT: u32 = 2;

/// Each struct message's fields in Go's order, computed once from the table.
struct Layouts {
    schema: &'static Schema,
    /// By message index; empty for messages that are not structs.
    structs: Vec<Layout>,
    /// Whether a message is a kind's (embeds `TypeMeta`: `kind` and `apiVersion` come first).
    kinds: Vec<bool>,
    /// A built-in kind the table does not describe: its `metadata` is still an `ObjectMeta`.
    unknown_kind: Layout,
}

impl Layouts {
    fn get() -> &'static Layouts {
        static LAYOUTS: OnceLock<Layouts> = OnceLock::new();
        LAYOUTS.get_or_init(|| {
            let schema = Schema::get();
            let structs = (0..schema.messages.len())
                .map(|m| {
                    let mut out = Vec::new();
                    flatten(schema, m, &mut out);
                    Layout::new(out)
                })
                .collect();
            let mut kinds = vec![false; schema.messages.len()];
            let meta_kinds = [
                "meta.v1.Status",
                "meta.v1.PartialObjectMetadata",
                "meta.v1.PartialObjectMetadataList",
            ];
            for m in schema
                .kind_messages()
                .chain(meta_kinds.iter().filter_map(|m| schema.message(m)))
            {
                kinds[m] = true;
            }
            let unknown_kind = Layout::new(
                schema
                    .message("meta.v1.ObjectMeta")
                    .map(|m| Slot::new("metadata", Ty::Struct(m), false))
                    .into_iter()
                    .collect(),
            );
            Layouts {
                schema,
                structs,
                kinds,
                unknown_kind,
            }
        })
    }

    /// Writes `o` as a struct laid out as `layout` (after `kind` and `apiVersion` when `type_meta`), then any key
    /// the struct does not declare, sorted. Each present key is placed by its rank (the struct's sorted names
    /// searched from where the previous key was found, the keys coming sorted too: the next name first, then a
    /// binary search) and the few present are sorted by it; `scratch` holds them, its tail this struct's, nested
    /// structs' past it.
    fn strukt<'a>(
        &self,
        out: &mut Vec<u8>,
        o: &'a Map<String, Value>,
        layout: &Layout,
        type_meta: bool,
        scratch: &mut Vec<Placed<'a>>,
    ) {
        let base = scratch.len();
        let mut undeclared = FIRST_SLOT + layout.slots.len() as u32;
        let (mut from, mut in_order, mut last) = (0, true, 0);
        for (k, value) in o {
            let rank = match k.as_str() {
                "kind" if type_meta => 0,
                "apiVersion" if type_meta => 1,
                k => match next_or_search(&layout.by_name[from..], k) {
                    Ok(i) => {
                        from += i + 1;
                        FIRST_SLOT + layout.by_name[from - 1].1
                    }
                    Err(i) => {
                        from += i;
                        undeclared += 1;
                        undeclared - 1
                    }
                },
            };
            in_order &= rank >= last;
            last = rank;
            scratch.push(Placed { rank, key: k, value });
        }
        if !in_order {
            scratch[base..].sort_unstable_by_key(|p| p.rank);
        }
        out.push(b'{');
        for i in base..scratch.len() {
            let p = scratch[i];
            if i > base {
                out.push(b',');
            }
            match p.rank {
                0 => out.extend_from_slice(b"\"kind\":"),
                1 => out.extend_from_slice(b"\"apiVersion\":"),
                r => match layout.slots.get((r - FIRST_SLOT) as usize) {
                    Some(s) => {
                        out.extend_from_slice(&s.quoted);
                        self.field(out, p.value, s, scratch);
                        continue;
                    }
                    None => key(out, p.key, 0),
                },
            }
            any(out, p.value);
        }
        scratch.truncate(base);
        out.push(b'}');
    }

    fn field<'a>(&self, out: &mut Vec<u8>, v: &'a Value, s: &Slot, scratch: &mut Vec<Placed<'a>>) {
        if !s.each {
            return self.value(out, v, s.ty, scratch);
        }
        match v {
            Value::Array(a) => {
                out.push(b'[');
                for (i, e) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.value(out, e, s.ty, scratch);
                }
                out.push(b']');
            }
            Value::Object(o) => {
                out.push(b'{');
                for (i, (k, e)) in o.iter().enumerate() {
                    key(out, k, i);
                    self.value(out, e, s.ty, scratch);
                }
                out.push(b'}');
            }
            other => any(out, other),
        }
    }

    fn value<'a>(&self, out: &mut Vec<u8>, v: &'a Value, ty: Ty, scratch: &mut Vec<Placed<'a>>) {
        match (ty, v) {
            (Ty::Struct(m), Value::Object(o)) => self.strukt(out, o, &self.structs[m], self.kinds[m], scratch),
            (Ty::Object, Value::Object(o)) if built_in(o) => write_object(out, v),
            _ => any(out, v),
        }
    }
}

/// Where `k` is in `names` (sorted): where most fields are set, the first name is `k` itself (one comparison),
/// else a binary search, which compares first bytes before whole names (the byte-wise order either way).
fn next_or_search(names: &[(&'static str, u32)], k: &str) -> Result<usize, usize> {
    match names.first() {
        Some(&(n, _)) if n == k => Ok(0),
        _ => names.binary_search_by(|&(n, _)| n.as_bytes().first().cmp(&k.as_bytes().first()).then_with(|| n.cmp(k))),
    }
}

/// The fields of message `m` in declaration order, inlined structs' fields in their place (the first of two
/// fields with one JSON name wins: the table has no such pair).
fn flatten(schema: &Schema, m: usize, out: &mut Vec<Slot>) {
    let message = &schema.messages[m];
    let Shape::Struct(fields) = &message.shape else {
        return;
    };
    for &i in &message.order {
        let f = &fields[i];
        let ty = match f.ty {
            Type::Message(n) if matches!(schema.messages[n].shape, Shape::Struct(_)) => Ty::Struct(n),
            Type::Message(n) => match schema.messages[n].shape {
                // apiextensions' JSONSchemaPropsOr*: a schema in JSONSchemaProps' order; a bool or an array as is.
                Shape::Special(Special::StructOr(of, _)) => Ty::Struct(of),
                Shape::Special(Special::Object) => Ty::Object,
                _ => Ty::Any,
            },
            _ => Ty::Any,
        };
        match ty {
            // The table is the crate's own (finite, acyclic through inlining): this recursion is bounded by it.
            Ty::Struct(n) if f.inline => flatten(schema, n, out),
            _ if out.iter().any(|s| s.name == f.json) => {}
            _ => out.push(Slot::new(f.json, ty, f.repeated || f.map_key.is_some())),
        }
    }
}

/// Writes `"k":` after a comma unless it is the first key.
fn key(out: &mut Vec<u8>, k: &str, written: usize) {
    if written > 0 {
        out.push(b',');
    }
    string(out, k);
    out.push(b':');
}

/// Any value, object keys in their (sorted) map order.
fn any(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => number(out, n),
        Value::String(s) => string(out, s),
        Value::Array(a) => {
            out.push(b'[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                any(out, e);
            }
            out.push(b']');
        }
        Value::Object(o) => {
            // serde_json's map is a BTreeMap (no `preserve_order`): keys come sorted byte-wise, as Go's
            // `sort.Strings` sorts a map's keys.
            out.push(b'{');
            for (i, (k, e)) in o.iter().enumerate() {
                key(out, k, i);
                any(out, e);
            }
            out.push(b'}');
        }
    }
}

/// An integer as it is; a fractional number as Go's `encoding/json` writes a `float64`: the shortest digits that
/// read back the same, in exponent form (`1e+21`, `1e-7`) below 1e-6 or from 1e21 on.
fn number(out: &mut Vec<u8>, n: &Number) {
    if let Some(u) = n.as_u64() {
        out.extend_from_slice(itoa::Buffer::new().format(u).as_bytes());
    } else if let Some(i) = n.as_i64() {
        out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
    } else if let Some(f) = n.as_f64() {
        let abs = f.abs();
        if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
            out.extend_from_slice(exponent_form(f, 1).as_bytes());
        } else {
            let _ = write!(out, "{f}");
        }
    }
}

/// What a byte needs in a string: 0 nothing, `u` a `\u00XX` escape, `E` a look at U+2028/U+2029 (`E2 80 A8/A9`),
/// other bytes the letter of a two-character escape.
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x0c] = b'f';
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'<' as usize] = b'u';
    t[b'>' as usize] = b'u';
    t[b'&' as usize] = b'u';
    t[0xE2] = b'E';
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A JSON string, escaped as Go's `encoding/json` escapes it (with its HTML escaping): runs of bytes that need no
/// escape are found eight at a time ([`plain_word`]) and copied in one piece.
fn string(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let (mut start, mut i) = (0, 0);
    loop {
        i += plain_run(&b[i..]);
        let Some(&c) = b.get(i) else { break };
        let e = ESCAPE[usize::from(c)];
        if e == b'E' {
            match b.get(i + 1..i + 3) {
                Some([0x80, last @ (0xA8 | 0xA9)]) => {
                    out.extend_from_slice(&b[start..i]);
                    out.extend_from_slice(if *last == 0xA8 { b"\\u2028" } else { b"\\u2029" });
                    i += 3;
                    start = i;
                }
                _ => i += 1,
            }
            continue;
        }
        out.extend_from_slice(&b[start..i]);
        if e == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(c >> 4)]);
            out.push(HEX[usize::from(c & 0xf)]);
        } else {
            out.push(b'\\');
            out.push(e);
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// How many bytes at the start of `b` need no escape ([`ESCAPE`] 0): eight at a time while a whole word is plain,
/// then byte by byte.
fn plain_run(b: &[u8]) -> usize {
    let mut i = 0;
    while let Some(word) = b.get(i..i + 8) {
        let word = u64::from_le_bytes([word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7]]);
        if !plain_word(word) {
            break;
        }
        i += 8;
    }
    i + b[i..]
        .iter()
        .position(|&c| ESCAPE[usize::from(c)] != 0)
        .unwrap_or(b.len() - i)
}

/// Whether none of a word's eight bytes is one [`ESCAPE`] marks: below 0x20, `"` or `&` (`0x22 | 4 == 0x26 | 4`),
/// `<` or `>` (`0x3c | 2 == 0x3e | 2`), `\`, or `E2` (U+2028/U+2029's first byte). A word holds one of those
/// exactly when a byte of a test below is zero (or, for the first, less than 0x20): the classic "has a zero byte"
/// test, `(x - 0x01…) & !x & 0x80…`, is exact about whether there is one.
fn plain_word(w: u64) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    (below_space
        | zero((w | (ONES * 0x04)) ^ (ONES * 0x26))
        | zero((w | (ONES * 0x02)) ^ (ONES * 0x3e))
        | zero(w ^ (ONES * u64::from(b'\\')))
        | zero(w ^ (ONES * 0xe2)))
        == 0
}

#[cfg(test)]
mod tests;
