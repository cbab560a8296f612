//! Signing and verifying the server's JWTs (`pkg/serviceaccount/jwt.go`): ES256 (ECDSA P-256 with SHA-256, the
//! algorithm kube-apiserver uses for an EC key) over `base64url(header).base64url(claims)`, the header naming the key
//! by kube's key id (the base64url SHA-256 of the public key's DER). A fresh key per server: tokens of one server
//! mean nothing to another.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// The issuer kubeadm clusters name (`--service-account-issuer`), also the API server's audience.
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The DER prefix of a P-256 public key's SubjectPublicKeyInfo, before its 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The server's signing key. Its `Debug` shows the key id only.
pub(crate) struct TokenIssuer {
    key: EcdsaKeyPair,
    rng: SystemRandom,
    key_id: String,
}

impl fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Why a token is not one of this server's valid JWTs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// Not a JWT, or one another issuer signed: another authenticator's business (none here), no error.
    NotOurs,
    /// Ours by its issuer, but the signature or the claims fail: the error a TokenReview reports.
    Invalid(String),
}

impl TokenIssuer {
    /// A fresh key.
    pub(crate) fn new() -> Result<TokenIssuer, String> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "cannot generate the service-account signing key".to_owned())?;
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| "cannot read the service-account signing key".to_owned())?;
        let mut der = P256_SPKI_PREFIX.to_vec();
        der.extend_from_slice(key.public_key().as_ref());
        let key_id = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &der));
        Ok(TokenIssuer { key, rng, key_id })
    }

    /// A signed JWT of `claims`.
    pub(crate) fn sign(&self, claims: &Value) -> Result<String, String> {
        let header = json!({"alg": "ES256", "kid": self.key_id});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| "failed to generate token: signing failed".to_owned())?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
    }

    /// The claims of `token` when it is a JWT of this server's issuer with a valid signature.
    pub(crate) fn verify(&self, token: &str) -> Result<Value, Rejection> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(sig), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Rejection::NotOurs);
        };
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).ok();
        let claims: Value = match decode(payload).and_then(|b| serde_json::from_slice(&b).ok()) {
            Some(v @ Value::Object(_)) => v,
            _ => return Err(Rejection::NotOurs),
        };
        if claims.get("iss").and_then(Value::as_str) != Some(ISSUER) {
            return Err(Rejection::NotOurs);
        }
        let header: Option<Value> = decode(header).and_then(|b| serde_json::from_slice(&b).ok());
        if header.as_ref().and_then(|h| h.get("alg")).and_then(Value::as_str) != Some("ES256") {
            return Err(Rejection::Invalid("unexpected signing algorithm".into()));
        }
        let signed = &token[..token.len() - sig.len() - 1];
        let public = signature::UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.key.public_key().as_ref());
        match decode(sig) {
            Some(s) if public.verify(signed.as_bytes(), &s).is_ok() => Ok(claims),
            _ => Err(Rejection::Invalid("invalid signature".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_with_the_signing_key() {
        let issuer = TokenIssuer::new().unwrap();
        let claims = json!({"iss": ISSUER, "sub": "system:serviceaccount:ns:sa"});
        let token = issuer.sign(&claims).unwrap();
        assert_eq!(issuer.verify(&token), Ok(claims.clone()));
        let other = TokenIssuer::new().unwrap();
        assert_eq!(
            other.verify(&token),
            Err(Rejection::Invalid("invalid signature".into()))
        );
        // A payload changed after signing.
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        parts[1] = URL_SAFE_NO_PAD.encode(json!({"iss": ISSUER, "sub": "system:serviceaccount:ns:admin"}).to_string());
        assert!(matches!(issuer.verify(&parts.join(".")), Err(Rejection::Invalid(_))));
        for not_ours in ["static-token", "a.b.c", "a.b", ""] {
            assert_eq!(issuer.verify(not_ours), Err(Rejection::NotOurs), "{not_ours}");
        }
        let foreign = issuer.sign(&json!({"iss": "https://elsewhere"})).unwrap();
        assert_eq!(issuer.verify(&foreign), Err(Rejection::NotOurs));
        let dbg = format!("{issuer:?}");
        assert!(dbg.contains("key_id") && !dbg.contains("pkcs8"));
    }
}
