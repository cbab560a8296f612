//! Small helpers the server needs and the crate has no dependency for: base64, random identifiers.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

const STD_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Standard base64 with padding (kubeconfig `*-data` fields).
pub(crate) fn base64_std(data: &[u8]) -> String {
    encode(data, STD_ALPHABET, true)
}

/// URL-safe base64 without padding (continue tokens, as kube-apiserver encodes them).
pub(crate) fn base64_url(data: &[u8]) -> String {
    encode(data, URL_ALPHABET, false)
}

fn encode(data: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..4 {
            if i < chars {
                out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes URL-safe or standard base64, with or without padding. `None` on any invalid character or length.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A single leftover character (6 bits) cannot come from any input.
    if bits >= 6 {
        return None;
    }
    Some(out)
}

/// 64 random bits: std's per-process random hasher keys, mixed with a counter (good enough for UIDs and
/// generated names; not for secrets).
pub(crate) fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// A random version-4 UUID, as the API server gives `metadata.uid`.
pub(crate) fn new_uid() -> String {
    let (a, b) = (random_u64(), random_u64());
    let hi = (a & 0xffff_ffff_ffff_0fff) | 0x4000; // version 4
    let lo = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000; // variant 10
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// The 5-character random suffix of `generateName` (apiserver's `SimpleNameGenerator`: consonants and digits that
/// cannot spell words).
pub(crate) fn name_suffix() -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut r = random_u64();
    (0..5)
        .map(|_| {
            let c = ALPHANUMS[(r % ALPHANUMS.len() as u64) as usize] as char;
            r /= ALPHANUMS.len() as u64;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_std(plain.as_bytes()), enc);
            assert_eq!(base64_decode(enc).unwrap(), plain.as_bytes());
            assert_eq!(base64_url(plain.as_bytes()), enc.trim_end_matches('='));
        }
        assert_eq!(base64_url(&[0xfb, 0xff]), "-_8");
        assert_eq!(base64_decode("-_8").unwrap(), vec![0xfb, 0xff]);
        assert_eq!(base64_decode("a"), None);
        assert_eq!(base64_decode("ab!c"), None);
    }

    #[test]
    fn uids_look_like_uuid_v4_and_differ() {
        let (a, b) = (new_uid(), new_uid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(a.bytes().all(|c| c == b'-' || c.is_ascii_hexdigit()));
    }

    #[test]
    fn name_suffixes_use_the_safe_alphabet() {
        let s = name_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.bytes().all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c)));
    }
}
