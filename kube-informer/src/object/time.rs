//! RFC 3339 timestamps, as Kubernetes writes them (`2024-01-02T03:04:05Z`, `…05.123456Z` for MicroTime).
//!
//! Timestamps are kept as strings in [`ObjectMeta`](super::ObjectMeta); these helpers convert when arithmetic is
//! needed (exec credential expiry, lease renewal, event timestamps) without pulling in a date crate.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) mod calendar;

use calendar::{Fraction, Timestamp};

/// Formats a time as RFC 3339 UTC with whole seconds (`metav1.Time`).
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use kube_informer::object::time::format_rfc3339;
///
/// assert_eq!(format_rfc3339(UNIX_EPOCH + Duration::from_secs(1_700_000_000)), "2023-11-14T22:13:20Z");
/// ```
pub fn format_rfc3339(t: SystemTime) -> String {
    timestamp(t).format(Fraction::None)
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
    timestamp(t).format(Fraction::Micros)
}

/// `t` as a [`Timestamp`]; times before 1970 as the epoch.
fn timestamp(t: SystemTime) -> Timestamp {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    Timestamp {
        secs: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: d.subsec_nanos(),
    }
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
    let at = Timestamp::parse(s).filter(|p| !p.date_only)?.at;
    let Ok(secs) = u64::try_from(at.secs) else {
        return Some(UNIX_EPOCH);
    };
    Some(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_nanos(u64::from(at.nanos)))
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
    fn reads_what_metav1_time_accepts_and_clamps_to_the_epoch() {
        // The calendar's own cases are in `calendar`; here, what this reader makes of them.
        let epoch_plus = |secs, nanos| Some(UNIX_EPOCH + Duration::new(secs, nanos));
        assert_eq!(parse_rfc3339("2024-01-02 00:00:00Z"), epoch_plus(1_704_153_600, 0));
        assert_eq!(
            parse_rfc3339("2024-01-02T00:00:00.1234567891Z"),
            epoch_plus(1_704_153_600, 123_456_789)
        );
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59.5Z"), Some(UNIX_EPOCH));
        assert_eq!(parse_rfc3339("0001-01-01T00:00:00Z"), Some(UNIX_EPOCH));
        assert_eq!(
            format_rfc3339(UNIX_EPOCH - Duration::from_secs(1)),
            "1970-01-01T00:00:00Z"
        );
        for bad in ["2024-01-02", "2024-01-01T00:00:00", "2024-13-01T00:00:00Z", "yesterday"] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
