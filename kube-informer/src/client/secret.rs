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

/// Standard base64 with padding, as Go's `base64.StdEncoding` writes it (basic auth, exec plugins' cluster CA).
pub(crate) fn base64_encode(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Decodes a kubeconfig `*-data` field: standard or URL-safe base64, padded or not, whitespace (the line breaks of a
/// hand-edited file) ignored. The error names the problem and its offset, never the content (it may be a key).
pub(crate) fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let standard: String = text
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    LENIENT.decode(standard).map_err(|e| match e {
        base64::DecodeError::InvalidByte(at, _) => format!("not valid base64: unexpected character at byte {at}"),
        base64::DecodeError::InvalidPadding => "not valid base64: bad padding".to_owned(),
        _ => "not valid base64: truncated input".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_rfc4648_vectors_in_either_alphabet() {
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
            assert_eq!(base64_decode(encoded.trim_end_matches('=')).unwrap(), plain.as_bytes());
        }
        assert_eq!(base64_decode("Zm9v\nYmE").unwrap(), b"fooba");
        assert_eq!(base64_decode("-_8").unwrap(), [0xfb, 0xff]);
        assert_eq!(base64_decode("+/8=").unwrap(), [0xfb, 0xff]);
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(base64_decode(&base64_encode(&all)).unwrap(), all);
    }

    #[test]
    fn base64_garbage_is_refused_without_echoing_it() {
        let err = base64_decode("c2VjcmV0*").unwrap_err();
        assert!(
            err.contains("unexpected character at byte 8") && !err.contains('*'),
            "{err}"
        );
        for bad in ["Zg==Zg", "Z", "ab!c", "Zg==="] {
            assert!(base64_decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secret_debug_is_redacted() {
        let s = Secret::from("top-secret-token");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(s.expose_str(), Some("top-secret-token"));
    }
}
