//! A message turned into the JSON kube-apiserver would write for it: the Go value gogo-protobuf's `Unmarshal`
//! builds from the bytes, written by Go's `encoding/json` with the types' tags.
//!
//! What that means, field by field (Go's rules, which protobuf's presence does not give):
//! - Kubernetes' Go encoder writes every non-pointer field, zero or not, so presence on the wire says nothing;
//!   a missing scalar is its zero value. `omitempty` leaves out `false`, `0`, `""`, nil pointers and empty
//!   slices or maps, never a struct (`"strategy": {}`, `"creationTimestamp": null`).
//! - A pointer field is nil when absent and set when present, even to a zero value (`"replicas": 0`); nil
//!   without `omitempty` is `null`.
//! - A slice or map with no element decodes to nil: left out with `omitempty`, `null` without.
//! - A repeated message field's occurrences merge (protobuf concatenation), except the types whose `Unmarshal`
//!   replaces the value (`Time`, `MicroTime`, `Quantity`): the last one counts. A scalar's last occurrence counts.
//! - `bytes` are standard base64; strings that are not UTF-8 have each invalid byte replaced by U+FFFD, as Go's
//!   encoder does; int64 stays a JSON number.
//! - `Time` keeps seconds only (its `Unmarshal` drops nanoseconds) and is RFC 3339 in UTC; `MicroTime` keeps
//!   microseconds; the zero time is `null`. `IntOrString` is a number or a string. `Quantity` is its string, as
//!   sent (kube-apiserver would also canonicalise it; Go clients send canonical strings). `FieldsV1` and
//!   `RawExtension` hold JSON, written as is.

use kube_informer::unstable::time::{Fraction, Timestamp};
use serde_json::{Map, Number, Value};

use super::schema::{Field, Or, Scalar, Schema, Shape, Special, Type};
use super::wire::{self, FIXED32, FIXED64, LEN, Raw, Reader, VARINT, WireError};

/// Nesting deeper than this is refused (Kubernetes' types nest a dozen levels at most).
const MAX_DEPTH: usize = 64;

/// The JSON of message `msg` encoded in `data`.
pub(crate) fn message(schema: &Schema, msg: usize, data: &[u8]) -> Result<Value, WireError> {
    Converter { schema }.message(msg, data, 0)
}

struct Converter<'s> {
    schema: &'s Schema,
}

/// The wire types a field accepts.
fn accepts(f: &Field, wire_type: u8) -> bool {
    if f.map_key.is_some() {
        return wire_type == LEN;
    }
    let packed = f.repeated && wire_type == LEN;
    match f.ty {
        Type::Message(_) | Type::Scalar(Scalar::String | Scalar::Bytes) => wire_type == LEN,
        Type::Scalar(Scalar::Double) => wire_type == FIXED64 || packed,
        Type::Scalar(Scalar::Float) => wire_type == FIXED32 || packed,
        Type::Scalar(_) => wire_type == VARINT || packed,
    }
}

impl Converter<'_> {
    fn message(&self, msg: usize, data: &[u8], depth: usize) -> Result<Value, WireError> {
        if depth > MAX_DEPTH {
            return Err(WireError::Other("proto: message nested too deeply".into()));
        }
        let m = &self.schema.messages[msg];
        match &m.shape {
            Shape::Special(Special::StructOr(of, or)) => self.struct_or(m.short_name(), *of, *or, data, depth),
            Shape::Special(s) => self.special(*s, data),
            Shape::List(item) => {
                let f = Field {
                    number: 1,
                    json: "items",
                    ty: Type::Scalar(*item),
                    map_key: None,
                    repeated: true,
                    ptr: false,
                    omit: false,
                    inline: false,
                };
                let occ = self.occurrences(m.short_name(), std::slice::from_ref(&f), data)?;
                Ok(self.field(&f, &occ[0], depth)?.unwrap_or(Value::Null))
            }
            Shape::Struct(fields) => {
                let occ = self.occurrences(m.short_name(), fields, data)?;
                let mut obj = Map::new();
                for (f, occ) in fields.iter().zip(&occ) {
                    match self.field(f, occ, depth)? {
                        Some(Value::Object(inner)) if f.inline => {
                            // Go promotes an embedded struct's fields; the outer struct's own fields win.
                            for (k, v) in inner {
                                obj.entry(k).or_insert(v);
                            }
                        }
                        Some(_) | None if f.inline => {}
                        Some(v) => {
                            obj.insert(f.json.to_owned(), v);
                        }
                        None => {}
                    }
                }
                Ok(Value::Object(obj))
            }
        }
    }

    /// Each field's occurrences, in wire order; unknown fields are skipped, a known one with the wrong wire type
    /// is an error.
    fn occurrences<'a>(
        &self,
        message: &'static str,
        fields: &[Field],
        data: &'a [u8],
    ) -> Result<Vec<Vec<Raw<'a>>>, WireError> {
        let mut occ = vec![Vec::new(); fields.len()];
        let mut r = Reader::new(data, message);
        while let Some((number, wire_type, raw)) = r.next()? {
            if let Ok(i) = fields.binary_search_by_key(&number, |f| f.number) {
                let f = &fields[i];
                if !accepts(f, wire_type) {
                    return Err(WireError::WrongWireType {
                        field: if f.json.is_empty() { message } else { f.json },
                        wire_type,
                    });
                }
                occ[i].push(raw);
            }
        }
        Ok(occ)
    }

    /// A field's JSON, or `None` when Go leaves it out.
    fn field(&self, f: &Field, occ: &[Raw<'_>], depth: usize) -> Result<Option<Value>, WireError> {
        // nil (a pointer, slice or map): left out with omitempty, else null.
        let nil = || if f.omit { None } else { Some(Value::Null) };
        if let Some(key) = f.map_key {
            if occ.is_empty() {
                return Ok(nil());
            }
            let mut map = Map::new();
            for raw in occ {
                let (k, v) = self.map_entry(key, f.ty, payload(raw), depth)?;
                map.insert(k, v);
            }
            return Ok(Some(Value::Object(map)));
        }
        if f.repeated {
            let mut items = Vec::new();
            for raw in occ {
                match (f.ty, raw) {
                    (Type::Message(m), Raw::Bytes(b)) => items.push(self.message(m, b, depth + 1)?),
                    (Type::Scalar(s @ (Scalar::String | Scalar::Bytes)), raw) => items.push(scalar(s, *raw)?),
                    (Type::Scalar(s), Raw::Bytes(b)) => {
                        for v in packed(s, b)? {
                            items.push(scalar(s, Raw::Number(v))?);
                        }
                    }
                    (Type::Scalar(s), raw) => items.push(scalar(s, *raw)?),
                    (Type::Message(_), Raw::Number(_)) => unreachable!("wire type checked"),
                }
            }
            // gogo-protobuf leaves a slice nil until an element arrives (an empty packed field adds none).
            return Ok(if items.is_empty() {
                nil()
            } else {
                Some(Value::Array(items))
            });
        }
        match f.ty {
            Type::Scalar(Scalar::Bytes) => match occ.last() {
                // A []byte is nil until present; present and empty is "" (omitempty leaves out both).
                None => Ok(nil()),
                Some(raw) => {
                    let b = payload(raw);
                    Ok((!(f.omit && b.is_empty())).then(|| Value::String(crate::api::util::base64_std(b))))
                }
            },
            Type::Scalar(s) => match occ.last() {
                None if f.ptr => Ok(nil()),
                last => {
                    let v = match last {
                        Some(raw) => scalar(s, *raw)?,
                        None => zero(s),
                    };
                    Ok((f.ptr || !f.omit || !is_zero(&v)).then_some(v))
                }
            },
            Type::Message(m) => {
                if occ.is_empty() && f.ptr {
                    return Ok(nil());
                }
                let replaces = matches!(
                    self.schema.messages[m].shape,
                    Shape::Special(Special::Time | Special::MicroTime | Special::Quantity)
                );
                let merged: Vec<u8>;
                let data: &[u8] = match occ {
                    [] => &[],
                    [one] => payload(one),
                    [.., last] if replaces => payload(last),
                    many => {
                        merged = many.iter().flat_map(|r| payload(r).iter().copied()).collect();
                        &merged
                    }
                };
                let v = self.message(m, data, depth + 1)?;
                // A named slice type is a slice: omitempty leaves it out when empty (it is then nil, null).
                let is_list = matches!(self.schema.messages[m].shape, Shape::List(_));
                Ok(if is_list && v.is_null() { nil() } else { Some(v) })
            }
        }
    }

    /// One map entry (key field 1, value field 2); a missing key or value is its zero value.
    fn map_entry(&self, key: Scalar, ty: Type, data: &[u8], depth: usize) -> Result<(String, Value), WireError> {
        let mut r = Reader::new(data, "MapEntry");
        let (mut k, mut v) = (None, None);
        while let Some((number, wire_type, raw)) = r.next()? {
            let want = |s: Scalar| match s {
                Scalar::String | Scalar::Bytes => LEN,
                Scalar::Double => FIXED64,
                Scalar::Float => FIXED32,
                _ => VARINT,
            };
            let expected = match (number, ty) {
                (1, _) => want(key),
                (2, Type::Scalar(s)) => want(s),
                (2, Type::Message(_)) => LEN,
                _ => continue,
            };
            if wire_type != expected {
                let field = if number == 1 { "key" } else { "value" };
                return Err(WireError::WrongWireType { field, wire_type });
            }
            if number == 1 { k = Some(raw) } else { v = Some(raw) }
        }
        let k = match k.map(|raw| scalar(key, raw)).transpose()?.unwrap_or_else(|| zero(key)) {
            Value::String(s) => s,
            // Go writes integer and bool keys as strings.
            other => other.to_string(),
        };
        let v = match (ty, v) {
            (Type::Message(m), raw) => self.message(m, raw.as_ref().map_or(&[][..], payload), depth + 1)?,
            (Type::Scalar(s), Some(raw)) => scalar(s, raw)?,
            // gogo-protobuf starts a map's []byte value as []byte{}: "".
            (Type::Scalar(Scalar::Bytes), None) => Value::String(String::new()),
            (Type::Scalar(s), None) => zero(s),
        };
        Ok((k, v))
    }

    /// apiextensions' `JSONSchemaPropsOr…` (marshal.go's MarshalJSON): the struct `of` when its field is set and the
    /// alternative is not, else the alternative (`Or::Bool`'s bool; an array; `null` when neither is set).
    fn struct_or(
        &self,
        message: &'static str,
        of: usize,
        or: Or,
        data: &[u8],
        depth: usize,
    ) -> Result<Value, WireError> {
        if depth > MAX_DEPTH {
            return Err(WireError::Other("proto: message nested too deeply".into()));
        }
        let (schema_field, other): (u32, (u32, u8, &'static str)) = match or {
            Or::Bool => (2, (1, VARINT, "Allows")),
            Or::Array => (1, (2, LEN, "JSONSchemas")),
            Or::Strings => (1, (2, LEN, "Property")),
        };
        let fields = fields_of(data, message, &[(schema_field, LEN, "Schema"), other])?;
        let schemas: Vec<&[u8]> = fields
            .iter()
            .filter(|(n, _)| *n == schema_field)
            .map(|(_, raw)| payload(raw))
            .collect();
        // A message field's occurrences merge (one value, as gogo-protobuf's Unmarshal builds it).
        let schema = |schemas: &[&[u8]]| -> Result<Value, WireError> {
            let merged: Vec<u8> = schemas.concat();
            self.message(of, &merged, depth + 1)
        };
        let mut others = fields.iter().filter(|(n, _)| *n == other.0).map(|(_, raw)| raw);
        match or {
            Or::Bool if !schemas.is_empty() => schema(&schemas),
            // A scalar's last occurrence counts.
            Or::Bool => Ok(Value::Bool(
                others
                    .next_back()
                    .is_some_and(|raw| matches!(raw, Raw::Number(n) if *n != 0)),
            )),
            Or::Array | Or::Strings => {
                let items = others
                    .map(|raw| match or {
                        Or::Array => self.message(of, payload(raw), depth + 1),
                        _ => Ok(Value::String(go_string(payload(raw)))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if !items.is_empty() {
                    Ok(Value::Array(items))
                } else if !schemas.is_empty() {
                    schema(&schemas)
                } else {
                    Ok(Value::Null)
                }
            }
        }
    }

    fn special(&self, s: Special, data: &[u8]) -> Result<Value, WireError> {
        let (message, expect): (&'static str, &[(u32, u8, &'static str)]) = match s {
            Special::Time | Special::MicroTime => ("Timestamp", &[(1, VARINT, "Seconds"), (2, VARINT, "Nanos")]),
            Special::RawJson => ("RawExtension", &[(1, LEN, "Raw")]),
            Special::IntOrString => (
                "IntOrString",
                &[(1, VARINT, "Type"), (2, VARINT, "IntVal"), (3, LEN, "StrVal")],
            ),
            Special::Quantity => ("Quantity", &[(1, LEN, "String_")]),
            // Decoded by `struct_or`, which `message` calls for it.
            Special::StructOr(..) => return Err(WireError::Other("an either-or value out of place".into())),
            // Only fields numbered 0 (Go-only structs) have it: no wire field reaches it.
            Special::Object => return Err(WireError::Other("an embedded object: not decoded from protobuf".into())),
        };
        let fields = fields_of(data, message, expect)?;
        let num = |n: u32| {
            fields.iter().rev().find_map(|(f, raw)| match raw {
                Raw::Number(v) if *f == n => Some(*v),
                _ => None,
            })
        };
        let bytes = |n: u32| {
            fields.iter().rev().find_map(|(f, raw)| match raw {
                Raw::Bytes(b) if *f == n => Some(*b),
                _ => None,
            })
        };
        match s {
            // An empty message is the zero time (Unmarshal of no bytes), which Go writes as null.
            Special::Time | Special::MicroTime if data.is_empty() => Ok(Value::Null),
            Special::Time => {
                let secs = num(1).unwrap_or(0) as i64;
                Ok(time_json(secs, None))
            }
            Special::MicroTime => {
                let secs = num(1).unwrap_or(0) as i64;
                let nanos = i64::from(num(2).unwrap_or(0) as u32 as i32);
                // time.Duration(nanos).Truncate(time.Microsecond), then time.Unix's normalisation.
                let nanos = nanos - nanos % 1000;
                let secs = secs.wrapping_add(nanos.div_euclid(1_000_000_000));
                let micros = (nanos.rem_euclid(1_000_000_000) / 1000) as u32;
                Ok(time_json(secs, Some(micros)))
            }
            Special::RawJson => match bytes(1) {
                None => Ok(Value::Null),
                Some(raw) => serde_json::from_slice(raw)
                    .map_err(|e| WireError::Other(format!("json: error calling MarshalJSON: {e}"))),
            },
            Special::IntOrString => match num(1).unwrap_or(0) {
                0 => Ok(Value::from(num(2).unwrap_or(0) as u32 as i32)),
                1 => Ok(Value::String(go_string(bytes(3).unwrap_or_default()))),
                _ => Err(WireError::Other("impossible IntOrString.Type".into())),
            },
            Special::Quantity => Ok(Value::String(match bytes(1) {
                Some(b) => go_string(b),
                None => "0".to_owned(),
            })),
            Special::StructOr(..) | Special::Object => Ok(Value::Null),
        }
    }
}

/// Every field of a small fixed message (the special types'), checking the wire types of the known ones
/// (number, wire type, Go field name).
fn fields_of<'a>(
    data: &'a [u8],
    message: &'static str,
    expect: &[(u32, u8, &'static str)],
) -> Result<Vec<(u32, Raw<'a>)>, WireError> {
    let mut r = Reader::new(data, message);
    let mut out = Vec::new();
    while let Some((number, wire_type, raw)) = r.next()? {
        if let Some((_, want, field)) = expect.iter().find(|(n, _, _)| *n == number) {
            if wire_type != *want {
                return Err(WireError::WrongWireType { field, wire_type });
            }
            out.push((number, raw));
        }
    }
    Ok(out)
}

fn payload<'a>(raw: &Raw<'a>) -> &'a [u8] {
    match raw {
        Raw::Bytes(b) => b,
        Raw::Number(_) => &[],
    }
}

fn packed(s: Scalar, data: &[u8]) -> Result<Vec<u64>, WireError> {
    match s {
        Scalar::Double | Scalar::Float => {
            let n = if s == Scalar::Double { 8 } else { 4 };
            if !data.len().is_multiple_of(n) {
                return Err(WireError::UnexpectedEof);
            }
            Ok(data
                .chunks(n)
                .map(|c| c.iter().rev().fold(0u64, |v, b| v << 8 | u64::from(*b)))
                .collect())
        }
        _ => wire::packed_varints(data),
    }
}

/// A scalar's JSON, as Go writes the value gogo-protobuf decodes.
fn scalar(s: Scalar, raw: Raw<'_>) -> Result<Value, WireError> {
    let n = match raw {
        Raw::Number(n) => n,
        Raw::Bytes(b) => {
            return Ok(Value::String(match s {
                Scalar::Bytes => crate::api::util::base64_std(b),
                _ => go_string(b),
            }));
        }
    };
    let float = |f: f64| {
        Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| WireError::Other(format!("json: unsupported value: {f}")))
    };
    Ok(match s {
        Scalar::Bool => Value::Bool(n != 0),
        // Go accumulates an int32 varint in 32 bits: the low half counts.
        Scalar::Int32 => Value::from(n as u32 as i32),
        Scalar::Int64 => Value::from(n as i64),
        Scalar::Uint32 => Value::from(n as u32),
        Scalar::Uint64 => Value::from(n),
        Scalar::Double => float(f64::from_bits(n))?,
        Scalar::Float => float(f64::from(f32::from_bits(n as u32)))?,
        Scalar::String | Scalar::Bytes => Value::String(String::new()),
    })
}

fn zero(s: Scalar) -> Value {
    match s {
        Scalar::String | Scalar::Bytes => Value::String(String::new()),
        Scalar::Bool => Value::Bool(false),
        Scalar::Double | Scalar::Float => Value::from(0.0),
        _ => Value::from(0),
    }
}

/// Go's omitempty test for a scalar.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Bytes as Go's JSON encoder writes a string: each byte that does not start valid UTF-8 becomes U+FFFD.
pub(crate) fn go_string(mut b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    loop {
        match std::str::from_utf8(b) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, rest) = b.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                out.push('\u{FFFD}');
                b = &rest[1..];
            }
        }
    }
}

/// `metav1.Time` (`micros: None`) or `MicroTime` as JSON: RFC 3339 in UTC, `null` for Go's zero time (January 1
/// of year 1). Years outside 0..=9999 are written as Go writes them (a sign, at least four digits).
fn time_json(secs: i64, micros: Option<u32>) -> Value {
    // Seconds from year 1 to 1970.
    const UNIX_TO_INTERNAL: i64 = 62_135_596_800;
    if secs.wrapping_add(UNIX_TO_INTERNAL) == 0 && micros.unwrap_or(0) == 0 {
        return Value::Null;
    }
    let (nanos, fraction) = match micros {
        Some(us) => (us.saturating_mul(1000), Fraction::Micros),
        None => (0, Fraction::None),
    };
    Value::String(Timestamp { secs, nanos }.format(fraction))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_go_writes_them() {
        // The calendar and Go's years outside 0..=9999 are the library's (`unstable::time`): here, the two forms and
        // the zero time.
        assert_eq!(time_json(1_700_000_000, None), "2023-11-14T22:13:20Z");
        assert_eq!(time_json(-1, Some(999_999)), "1969-12-31T23:59:59.999999Z");
        assert_eq!(time_json(0, Some(0)), "1970-01-01T00:00:00.000000Z");
        assert_eq!(time_json(-62_135_596_800, None), Value::Null);
        assert_eq!(time_json(-62_135_596_800, Some(0)), Value::Null);
        assert_eq!(time_json(-62_135_596_800, Some(1)), "0001-01-01T00:00:00.000001Z");
        // Never panics at the ends of the range.
        for s in [i64::MIN, i64::MAX] {
            assert!(time_json(s, Some(0)).is_string());
        }
    }

    #[test]
    fn invalid_utf8_becomes_one_replacement_per_byte() {
        assert_eq!(go_string(b"ok"), "ok");
        assert_eq!(go_string(b"a\xffb"), "a\u{FFFD}b");
        // A truncated three-byte sequence: Go replaces each byte, not the whole sequence.
        assert_eq!(go_string(b"\xe2\x82"), "\u{FFFD}\u{FFFD}");
        assert_eq!(go_string("é".as_bytes()), "é");
    }
}
