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

pub(crate) use crate::base64::{decode as base64_decode, encode_std as base64_encode};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_is_redacted() {
        let s = Secret::from("top-secret-token");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(s.expose_str(), Some("top-secret-token"));
    }
}
