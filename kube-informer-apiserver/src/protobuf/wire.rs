//! The protobuf wire format, read as gogo-protobuf's generated `Unmarshal` methods read it (Kubernetes' Go types
//! are decoded by those): varints of at most ten bytes, lengths checked against what is left, unknown fields and
//! groups skipped, and the same error texts.

use std::fmt;

/// Why bytes are not a protobuf message; the text is gogo-protobuf's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum WireError {
    /// The message ends inside a field.
    UnexpectedEof,
    /// A length that does not fit in an `int`.
    NegativeLength,
    /// A varint of more than ten bytes.
    IntOverflow,
    /// Field number 0.
    IllegalTag {
        message: &'static str,
        number: i32,
        tag: u64,
    },
    /// An end-group marker outside a group.
    EndGroup { message: &'static str },
    /// Wire types 6 and 7.
    IllegalWireType(u8),
    /// A known field with the wrong wire type.
    WrongWireType { field: &'static str, wire_type: u8 },
    /// Anything else, worded by the caller (a value Go would refuse to decode or encode).
    Other(String),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::UnexpectedEof => f.write_str("unexpected EOF"),
            WireError::NegativeLength => f.write_str("proto: negative length found during unmarshaling"),
            WireError::IntOverflow => f.write_str("proto: integer overflow"),
            WireError::IllegalTag { message, number, tag } => {
                write!(f, "proto: {message}: illegal tag {number} (wire type {tag})")
            }
            WireError::EndGroup { message } => write!(f, "proto: {message}: wiretype end group for non-group"),
            WireError::IllegalWireType(w) => write!(f, "proto: illegal wireType {w}"),
            WireError::WrongWireType { field, wire_type } => {
                write!(f, "proto: wrong wireType = {wire_type} for field {field}")
            }
            WireError::Other(text) => f.write_str(text),
        }
    }
}

/// Wire type of a varint.
pub(crate) const VARINT: u8 = 0;
/// Wire type of a fixed 64-bit value.
pub(crate) const FIXED64: u8 = 1;
/// Wire type of a length-delimited value (strings, bytes, messages, packed repeated scalars).
pub(crate) const LEN: u8 = 2;
/// Wire type of a fixed 32-bit value.
pub(crate) const FIXED32: u8 = 5;

/// One field of a message as it appears on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Raw<'a> {
    /// A varint, or a fixed 32/64-bit value widened.
    Number(u64),
    /// A length-delimited payload.
    Bytes(&'a [u8]),
}

/// Reads a message's fields one by one.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    /// The message's name, for error texts.
    message: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8], message: &'static str) -> Self {
        Reader { data, at: 0, message }
    }

    fn byte(&mut self) -> Result<u8, WireError> {
        let b = *self.data.get(self.at).ok_or(WireError::UnexpectedEof)?;
        self.at += 1;
        Ok(b)
    }

    /// A varint: at most ten bytes, bits past the 64th dropped (as Go's `uint64(b&0x7F) << 63` drops them).
    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            if shift >= 64 {
                return Err(WireError::IntOverflow);
            }
            let b = self.byte()?;
            v |= u64::from(b & 0x7F) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// A length-delimited payload.
    fn len_delimited(&mut self) -> Result<&'a [u8], WireError> {
        let len = self.varint()?;
        // Go converts the length to int (64 bits): above i64::MAX it is negative.
        let len = i64::try_from(len).map_err(|_| WireError::NegativeLength)?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| self.at.checked_add(l))
            .ok_or(WireError::UnexpectedEof)?;
        let payload = self.data.get(self.at..end).ok_or(WireError::UnexpectedEof)?;
        self.at = end;
        Ok(payload)
    }

    fn fixed(&mut self, n: usize) -> Result<u64, WireError> {
        let end = self.at.checked_add(n).ok_or(WireError::UnexpectedEof)?;
        let bytes = self.data.get(self.at..end).ok_or(WireError::UnexpectedEof)?;
        self.at = end;
        Ok(bytes.iter().rev().fold(0u64, |v, b| v << 8 | u64::from(*b)))
    }

    /// The next field: its number, wire type and value; `None` at the end of the message. Groups (wire types 3
    /// and 4, which Kubernetes never writes) are skipped whole, as gogo-protobuf skips them in unknown fields.
    pub(crate) fn next(&mut self) -> Result<Option<(u32, u8, Raw<'a>)>, WireError> {
        loop {
            if self.at >= self.data.len() {
                return Ok(None);
            }
            let tag = self.varint()?;
            let wire_type = (tag & 7) as u8;
            // Go keeps the field number as an int32.
            let number = (tag >> 3) as u32 as i32;
            if wire_type == 4 {
                return Err(WireError::EndGroup { message: self.message });
            }
            if number <= 0 {
                return Err(WireError::IllegalTag {
                    message: self.message,
                    number,
                    tag,
                });
            }
            let raw = match wire_type {
                VARINT => Raw::Number(self.varint()?),
                FIXED64 => Raw::Number(self.fixed(8)?),
                LEN => Raw::Bytes(self.len_delimited()?),
                FIXED32 => Raw::Number(self.fixed(4)?),
                3 => {
                    self.skip_group()?;
                    continue;
                }
                w => return Err(WireError::IllegalWireType(w)),
            };
            return Ok(Some((number as u32, wire_type, raw)));
        }
    }

    /// Skips a group's fields up to its end marker (nested groups included).
    fn skip_group(&mut self) -> Result<(), WireError> {
        let mut depth = 1usize;
        while depth > 0 {
            let tag = self.varint()?;
            match (tag & 7) as u8 {
                VARINT => {
                    self.varint()?;
                }
                FIXED64 => {
                    self.fixed(8)?;
                }
                LEN => {
                    self.len_delimited()?;
                }
                3 => depth += 1,
                4 => depth -= 1,
                FIXED32 => {
                    self.fixed(4)?;
                }
                w => return Err(WireError::IllegalWireType(w)),
            }
        }
        Ok(())
    }
}

/// The varints packed in a payload (a packed repeated scalar field).
pub(crate) fn packed_varints(payload: &[u8]) -> Result<Vec<u64>, WireError> {
    let mut r = Reader::new(payload, "");
    let mut out = Vec::new();
    while r.at < payload.len() {
        out.push(r.varint()?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(data: &[u8]) -> Result<Vec<(u32, u8, Raw<'_>)>, WireError> {
        let mut r = Reader::new(data, "M");
        let mut out = Vec::new();
        while let Some(f) = r.next()? {
            out.push(f);
        }
        Ok(out)
    }

    #[test]
    fn reads_each_wire_type() {
        let data = [
            0x08, 0x96, 0x01, // 1: varint 150
            0x12, 0x02, b'h', b'i', // 2: "hi"
            0x19, 1, 0, 0, 0, 0, 0, 0, 0x80, // 3: fixed64
            0x25, 1, 0, 0, 0, // 4: fixed32
            0x2b, 0x08, 0x01, 0x2c, // 5: a group, skipped
            0x30, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, // 6: -1 as a ten-byte varint
        ];
        assert_eq!(
            fields(&data).unwrap(),
            vec![
                (1, VARINT, Raw::Number(150)),
                (2, LEN, Raw::Bytes(b"hi")),
                (3, FIXED64, Raw::Number(0x8000_0000_0000_0001)),
                (4, FIXED32, Raw::Number(1)),
                (6, VARINT, Raw::Number(u64::MAX)),
            ]
        );
    }

    #[test]
    fn errors_are_gogo_protobufs() {
        let text = |d: &[u8]| fields(d).unwrap_err().to_string();
        assert_eq!(text(&[0x12, 0x05, b'a']), "unexpected EOF");
        assert_eq!(text(&[0x08]), "unexpected EOF");
        assert_eq!(
            text(&[0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
            "proto: integer overflow"
        );
        assert_eq!(
            text(&[0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            "proto: negative length found during unmarshaling"
        );
        assert_eq!(
            text(&[0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
            "unexpected EOF"
        );
        assert_eq!(text(&[0x00]), "proto: M: illegal tag 0 (wire type 0)");
        assert_eq!(text(&[0x0c]), "proto: M: wiretype end group for non-group");
        assert_eq!(text(&[0x0e]), "proto: illegal wireType 6");
        assert_eq!(text(&[0x0b, 0x08]), "unexpected EOF");
        assert_eq!(packed_varints(&[0x01, 0x96, 0x01]).unwrap(), vec![1, 150]);
        assert_eq!(packed_varints(&[0x96]).unwrap_err(), WireError::UnexpectedEof);
    }
}
