//! Durations and timestamps as CEL reads and writes them (cel-go's `common/types/duration.go` and `timestamp.go`):
//! Go duration strings and RFC 3339, in nanoseconds.

use kube_informer::unstable::time::{Fraction, Timestamp};

use crate::api::duration::parse_go_duration;

/// Nanoseconds in a second: durations and timestamps are counted in nanoseconds.
pub(crate) const NANOS: i128 = 1_000_000_000;

/// A Go duration string (`1h30m`, `-1.5s`, `300ms`) in nanoseconds, as cel-go reads it (`time.ParseDuration`:
/// [`parse_go_duration`]).
pub(crate) fn parse_duration(s: &str) -> Option<i128> {
    parse_go_duration(s).ok().map(i128::from)
}

/// A duration as CEL's `string()` writes it (seconds with a fraction: `90s`, `1.5s`).
pub(crate) fn format_duration(d: i128) -> String {
    let secs = d / NANOS;
    let frac = (d % NANOS).abs();
    if frac == 0 {
        format!("{secs}s")
    } else {
        let f = format!("{frac:09}");
        let sign = if d < 0 && secs == 0 { "-" } else { "" };
        format!("{sign}{secs}.{}s", f.trim_end_matches('0'))
    }
}

/// An RFC 3339 timestamp (a `date` alone too: midnight UTC) in nanoseconds since the epoch; `T` (not a space)
/// between date and time, at most nine digits of fraction.
pub(crate) fn parse_timestamp(s: &str) -> Option<i128> {
    let p = Timestamp::parse(s).filter(|p| !p.space_separated && p.fraction_digits <= 9)?;
    Some(i128::from(p.at.secs) * NANOS + i128::from(p.at.nanos))
}

/// A timestamp as RFC 3339 in UTC (fraction only when there is one).
pub(crate) fn format_timestamp(t: i128) -> String {
    Timestamp {
        secs: t.div_euclid(NANOS) as i64,
        nanos: t.rem_euclid(NANOS) as u32,
    }
    .format(Fraction::Nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::strconv::format_float_g;

    #[test]
    fn durations_and_timestamps_parse_as_go_does() {
        assert_eq!(parse_duration("1h30m"), Some(5400 * NANOS));
        assert_eq!(parse_duration("-1.5s"), Some(-1_500_000_000));
        assert_eq!(parse_duration("1x"), None);
        // Go's parser, to the nanosecond and within an int64 (its own cases are `api::duration`'s).
        assert_eq!(parse_duration("9007199254740993ns"), Some((1 << 53) + 1));
        assert_eq!(parse_duration("9223372036854775808ns"), None);
        assert_eq!(format_duration(90 * NANOS), "90s");
        let t = parse_timestamp("2023-01-02T03:04:05.5+01:00").unwrap();
        assert_eq!(format_timestamp(t), "2023-01-02T02:04:05.5Z");
        // `strconv.FormatFloat(d, 'g', -1, 64)`, whose own cases are `api::strconv`'s.
        assert_eq!(format_float_g(1.5), "1.5");
        assert_eq!(format_float_g(1e21), "1e+21");
    }

    #[test]
    fn timestamps_read_dates_alone_but_no_space_and_no_tenth_digit() {
        // The calendar's own cases are the library's (`unstable::time`); here, what CEL makes of them.
        assert_eq!(parse_timestamp("2024-01-02"), Some(1_704_153_600 * NANOS));
        assert_eq!(parse_timestamp("2024-01-02 00:00:00Z"), None);
        assert_eq!(
            parse_timestamp("1969-12-31T23:59:59.123456789Z"),
            Some(-NANOS + 123_456_789)
        );
        assert_eq!(parse_timestamp("1969-12-31T23:59:59.1234567891Z"), None);
        assert_eq!(format_timestamp(-NANOS + 123_456_789), "1969-12-31T23:59:59.123456789Z");
        assert_eq!(format_timestamp(0), "1970-01-01T00:00:00Z");
    }
}
