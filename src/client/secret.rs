//! Secret values (tokens, passwords, private keys) and the base64 they travel in.
//!
//! A [`Secret`] prints as `<redacted>` in `{:?}` and has no `Display`, so a token can only reach a log line or an
//! error message through an explicit [`Secret::expose`] call — which the crate makes only to build an
//! `Authorization` header or hand key bytes to rustls.

use std::fmt;

/// A secret string or byte string: a bearer token, a password, a private key.
///
/// `Debug` never shows the value:
///
/// ```
/// use kube_informer::client::Secret;
///
/// let s = Secret::new("hunter2");
/// assert_eq!(format!("{s:?}"), "<redacted>");
/// assert_eq!(s.expose(), b"hunter2");
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<Vec<u8>>) -> Self {
        Secret(value.into())
    }

    /// The secret bytes. Never log them.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The secret as text, when it is UTF-8. Never log it.
    pub fn expose_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// True when the secret is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret(s.into_bytes())
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret(s.as_bytes().to_vec())
    }
}

impl From<Vec<u8>> for Secret {
    fn from(v: Vec<u8>) -> Self {
        Secret(v)
    }
}

/// Reads a secret from a string (kubeconfig `token`, `password`, `client-key-data`).
impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret::from)
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648 §4), as Go's `base64.StdEncoding` writes it.
pub(crate) fn base64_encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64. Whitespace (line breaks in hand-edited kubeconfigs) is ignored and padding is optional;
/// anything else outside the alphabet is an error. The error message names the problem, never the content.
pub(crate) fn base64_decode(input: &str) -> Result<Vec<u8>, String> {
    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let mut out = Vec::with_capacity(input.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0u32;
    let mut padding = 0usize;
    for (i, c) in input.bytes().enumerate() {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == b'=' {
            padding += 1;
            continue;
        }
        if padding > 0 {
            return Err(format!("not valid base64: data after padding at byte {i}"));
        }
        let Some(v) = value(c) else {
            return Err(format!("not valid base64: unexpected character at byte {i}"));
        };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if bits >= 6 || padding > 2 {
        return Err("not valid base64: truncated input".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_rfc4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(plain.as_bytes()), encoded);
            assert_eq!(base64_decode(encoded).unwrap(), plain.as_bytes());
        }
        assert_eq!(base64_decode("Zm9v\nYmE").unwrap(), b"fooba");
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(base64_decode(&base64_encode(&all)).unwrap(), all);
    }

    #[test]
    fn base64_rejects_garbage_without_echoing_it() {
        let err = base64_decode("c2VjcmV0*").unwrap_err();
        assert!(
            err.contains("unexpected character at byte 8") && !err.contains('*'),
            "{err}"
        );
        assert!(base64_decode("Zg==Zg").is_err());
        assert!(base64_decode("Z").is_err());
    }

    #[test]
    fn secret_debug_is_redacted() {
        let s = Secret::from("top-secret-token");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(s.expose_str(), Some("top-secret-token"));
    }
}
