//! Small helpers the server needs and the crate has no dependency for: random identifiers (and base64, shared with
//! the client).

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) use crate::base64::{encode_std as base64_std, encode_url as base64_url};

/// Decodes URL-safe or standard base64, with or without padding. `None` on any invalid character or length.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    crate::base64::decode(text).ok()
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
