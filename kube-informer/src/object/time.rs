//! RFC 3339 timestamps, as Kubernetes writes them (`2024-01-02T03:04:05Z`, `…05.123456Z` for MicroTime).
//!
//! Timestamps are kept as strings in [`ObjectMeta`](super::ObjectMeta); these helpers convert when arithmetic is
//! needed (exec credential expiry, lease renewal, event timestamps) without pulling in a date crate.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Formats a time as RFC 3339 UTC with whole seconds (`metav1.Time`).
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use kube_informer::object::time::format_rfc3339;
///
/// assert_eq!(format_rfc3339(UNIX_EPOCH + Duration::from_secs(1_700_000_000)), "2023-11-14T22:13:20Z");
/// ```
pub fn format_rfc3339(t: SystemTime) -> String {
    let (date, secs_of_day, _) = split(t);
    format!("{date}T{}Z", hms(secs_of_day))
}

/// Formats a time as RFC 3339 UTC with microseconds (`metav1.MicroTime`, used by Leases and Events).
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use kube_informer::object::time::format_rfc3339_micros;
///
/// let t = UNIX_EPOCH + Duration::from_micros(1_700_000_000_000_042);
/// assert_eq!(format_rfc3339_micros(t), "2023-11-14T22:13:20.000042Z");
/// ```
pub fn format_rfc3339_micros(t: SystemTime) -> String {
    let (date, secs_of_day, micros) = split(t);
    format!("{date}T{}.{micros:06}Z", hms(secs_of_day))
}

fn split(t: SystemTime) -> (String, u64, u32) {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = (secs / 86_400) as i64;
    let (y, m, dd) = civil_from_days(days);
    (format!("{y:04}-{m:02}-{dd:02}"), secs % 86_400, d.subsec_micros())
}

fn hms(s: u64) -> String {
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Parses an RFC 3339 timestamp (`Z` or `±hh:mm` offset, optional fraction).
///
/// Returns `None` for anything else; times before 1970 clamp to the epoch.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use kube_informer::object::time::parse_rfc3339;
///
/// assert_eq!(parse_rfc3339("2023-11-14T22:13:20Z"), Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
/// assert_eq!(parse_rfc3339("2023-11-14T23:13:20.5+01:00"),
///            Some(UNIX_EPOCH + Duration::from_millis(1_700_000_000_500)));
/// assert_eq!(parse_rfc3339("yesterday"), None);
/// ```
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut nanos: u64 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 9 {
                nanos = nanos * 10 + u64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start).min(9)..9 {
            nanos *= 10;
        }
    }
    let offset_secs: i64 = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let off = oh * 3600 + om * 60;
            if *sign == b'+' { off } else { -off }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_secs;
    if secs < 0 {
        return Some(UNIX_EPOCH);
    }
    Some(UNIX_EPOCH + Duration::from_secs(secs as u64) + Duration::from_nanos(nanos))
}

// Howard Hinnant's algorithms (public domain), proleptic Gregorian calendar.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp as i64 + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day counted from 1970-01-01.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_across_leap_years_and_centuries() {
        for secs in [0u64, 951_782_400, 1_709_164_800, 4_107_456_000, 253_402_300_799] {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            assert_eq!(parse_rfc3339(&format_rfc3339(t)), Some(t), "{secs}");
        }
        let t = UNIX_EPOCH + Duration::from_micros(1_234_567_890_123_456);
        assert_eq!(parse_rfc3339(&format_rfc3339_micros(t)), Some(t));
    }

    #[test]
    fn rejects_malformed_timestamps() {
        for bad in [
            "",
            "2024-13-01T00:00:00Z",
            "2024-01-01 00:00:00",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T25:00:00Z",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00Zjunk",
            "20a4-01-01T00:00:00Z",
            "2024-01-01T00:00:00€",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
