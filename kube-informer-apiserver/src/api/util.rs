//! Small helpers the server needs and the crate has no dependency for: random identifiers; and base64 as Go's
//! encodings write and read it (the `base64` crate, in the tree through ureq).

use std::hash::{BuildHasher, DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

/// The instant `wait` from now, saturating: a caller's `Duration::MAX` is a deadline a century away, not a panic.
pub(crate) fn deadline_after(wait: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    let now = Instant::now();
    now.checked_add(wait)
        .or_else(|| now.checked_add(CENTURY))
        .unwrap_or(now)
}

/// Standard base64 with padding, as Go's `base64.StdEncoding` writes `[]byte` fields.
pub(crate) fn base64_std(data: &[u8]) -> String {
    STANDARD.encode(data)
}

/// Decodes standard, padded base64 as Go's `base64.StdEncoding` does (`None` when it would refuse it).
pub(crate) fn base64_std_decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

/// URL-safe base64 without padding (Go's `base64.RawURLEncoding`), as kube-apiserver writes continue tokens.
pub(crate) fn base64_url(data: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(data)
}

/// Decodes what [`base64_url`] writes (`None` otherwise).
pub(crate) fn base64_url_decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text).ok()
}

/// Decodes a query string into `(key, value)` pairs as Go's `url.ParseQuery` reads one for kube-apiserver: `+` is a
/// space, `%XX` a byte (malformed escapes are kept verbatim, invalid UTF-8 replaced), a key without `=` has an empty
/// value.
pub(crate) fn parse_query(q: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let spaced = s.replace('+', " ");
        percent_encoding::percent_decode_str(&spaced)
            .decode_utf8_lossy()
            .into_owned()
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
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

/// Parses a duration as Go's `time.ParseDuration` writes them, which kube-apiserver's flags take: a sequence of
/// decimal numbers, each with a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), such as `300ms`, `1.5s` or `1h30m`;
/// `0` alone needs no unit; at most Go's limit, 2562047h47m16.854775807s. Negative durations are refused (`-0s`
/// is zero, as in Go).
///
/// ```
/// use std::time::Duration;
/// use kube_informer_apiserver::parse_duration;
///
/// assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
/// assert!(parse_duration("10").is_err(), "a number needs a unit");
/// ```
///
/// # Errors
/// A message saying what is wrong with `text`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let nanos =
        super::duration::parse_go_duration(text.trim()).map_err(|why| format!("invalid duration {text:?}: {why}"))?;
    let nanos = u64::try_from(nanos).map_err(|_| format!("invalid duration {text:?}: negative"))?;
    Ok(Duration::from_nanos(nanos))
}

/// Writes a duration as [`parse_duration`] reads it: `2s`, `250ms`, `1500us`, `7ns` (the largest unit that
/// divides it exactly, up to seconds).
pub(crate) fn format_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        "0s".to_owned()
    } else if nanos.is_multiple_of(1_000_000_000) {
        format!("{}s", nanos / 1_000_000_000)
    } else if nanos.is_multiple_of(1_000_000) {
        format!("{}ms", nanos / 1_000_000)
    } else if nanos.is_multiple_of(1_000) {
        format!("{}us", nanos / 1_000)
    } else {
        format!("{nanos}ns")
    }
}

/// A 128-bit content hash in upper-case hex (kube-apiserver uses SHA-512; clients only compare the values).
pub(crate) fn hash_hex(data: &[u8]) -> String {
    let mut out = String::with_capacity(32);
    for seed in [0x6b75_6265u64, 0x6f70_656e] {
        let mut h = DefaultHasher::new();
        seed.hash(&mut h);
        data.hash(&mut h);
        out.push_str(&format!("{:016X}", h.finish()));
    }
    out
}

/// The Kubernetes version the server claims (`/version`, the OpenAPI documents' `info.version`).
pub(crate) const MAJOR: &str = "1";
/// Minor version.
pub(crate) const MINOR: &str = "34";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_after_any_duration_is_an_instant_not_a_panic() {
        let now = Instant::now();
        assert!(deadline_after(Duration::MAX) > now);
        assert!(deadline_after(Duration::from_secs(1)) > now);
    }

    #[test]
    fn parses_queries_as_go_does() {
        assert_eq!(
            parse_query("a=1&labelSelector=app%3Dweb&flag&b=x+y&c=%2B&&d=100%&e=%zz%4"),
            [
                ("a", "1"),
                ("labelSelector", "app=web"),
                ("flag", ""),
                ("b", "x y"),
                ("c", "+"),
                ("d", "100%"),
                ("e", "%zz%4")
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
    }

    #[test]
    fn durations_parse_as_go_writes_them() {
        let ok = [
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            ("5s", Duration::from_secs(5)),
            ("1.5s", Duration::from_millis(1500)),
            (".5s", Duration::from_millis(500)),
            ("1h2m3s", Duration::from_secs(3723)),
            ("250ms", Duration::from_millis(250)),
            ("10us", Duration::from_micros(10)),
            ("10µs", Duration::from_micros(10)),
            ("3ns", Duration::from_nanos(3)),
            ("+2m", Duration::from_secs(120)),
            ("1.0000000001s", Duration::new(1, 0)),
            ("+0", Duration::ZERO),
            ("-0s", Duration::ZERO),
            ("2562047h47m16.854775807s", Duration::from_nanos(i64::MAX as u64)),
        ];
        for (text, want) in ok {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
            assert_eq!(parse_duration(&format_duration(want)), Ok(want), "{text} round trip");
        }
        for bad in [
            "",
            "10",
            "s",
            "1x",
            "-1s",
            "1..2s",
            "1.2.3s",
            ".s",
            "99999999999999999999999h",
            "1s 2s",
            "-",
            "3000000h",
            "9223372036854775808ns",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(
            parse_duration(" -1s"),
            Err("invalid duration \" -1s\": negative".to_owned())
        );
        assert_eq!(
            parse_duration("3"),
            Err("invalid duration \"3\": missing unit (ns, us, ms, s, m, h)".to_owned())
        );
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
