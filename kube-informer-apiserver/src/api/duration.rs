//! Go's duration strings as `time.ParseDuration` reads them, signed, in nanoseconds of an `int64`: the one parser
//! behind the public [`parse_duration`](crate::parse_duration) (which refuses negatives) and CEL's `duration()`.

use std::fmt;

/// Why a string is not a Go duration (the words the public parser has always used after `invalid duration "…": `).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DurationError {
    /// Nothing, or a sign alone.
    Empty,
    /// A unit, a dot or anything else where a number should be.
    ExpectedNumber,
    /// A number with no unit after it (`0` alone is the one exception).
    MissingUnit,
    /// A unit that is not `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m` or `h`.
    UnknownUnit(String),
    /// A number's whole part beyond 2^63.
    NumberTooLarge,
    /// A total beyond an `int64` of nanoseconds (about 292 years either way).
    TooLarge,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty"),
            Self::ExpectedNumber => f.write_str("expected a number"),
            Self::MissingUnit => f.write_str("missing unit (ns, us, ms, s, m, h)"),
            Self::UnknownUnit(unit) => write!(f, "unknown unit {unit:?}"),
            Self::NumberTooLarge => f.write_str("number too large"),
            Self::TooLarge => f.write_str("too large"),
        }
    }
}

/// 2^63: the largest magnitude before the sign is applied (only `-` reaches it).
const LIMIT: u64 = 1 << 63;

/// Parses a Go duration string: an optional sign, then one or more decimal numbers each with a unit (`1h30m`,
/// `-1.5s`, `.5us`, `5.s`); `0` alone needs no unit. The result is exactly Go's, fraction digits included: the whole
/// part is counted in integers, the fraction scaled through a float and truncated, as Go does.
pub(crate) fn parse_go_duration(text: &str) -> Result<i64, DurationError> {
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(DurationError::Empty);
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let (whole, after_whole, has_whole) = leading_int(rest)?;
        let (fraction, scale, after_fraction, has_fraction) = match after_whole.strip_prefix('.') {
            Some(after_dot) => leading_fraction(after_dot),
            None => (0, 1.0, after_whole, false),
        };
        if !has_whole && !has_fraction {
            return Err(DurationError::ExpectedNumber);
        }
        let unit_len = after_fraction
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(after_fraction.len());
        let (unit, tail) = after_fraction.split_at(unit_len);
        let nanos_per: u64 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(DurationError::MissingUnit),
            _ => return Err(DurationError::UnknownUnit(unit.to_owned())),
        };
        if whole > LIMIT / nanos_per {
            return Err(DurationError::TooLarge);
        }
        let mut part = whole * nanos_per;
        if fraction > 0 {
            // Go's own step: the float product truncated; it cannot exceed one unit.
            part += (fraction as f64 * (nanos_per as f64 / scale)) as u64;
            if part > LIMIT {
                return Err(DurationError::TooLarge);
            }
        }
        total = total
            .checked_add(part)
            .filter(|t| *t <= LIMIT)
            .ok_or(DurationError::TooLarge)?;
        rest = tail;
    }
    if negative {
        // total ≤ 2^63, so its negation fits.
        return Ok((-i128::from(total)) as i64);
    }
    i64::try_from(total).map_err(|_| DurationError::TooLarge)
}

/// The leading decimal digits of `s` as an integer (at most 2^63), the rest, and whether there were any digits.
fn leading_int(s: &str) -> Result<(u64, &str, bool), DurationError> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut x: u64 = 0;
    for digit in s.bytes().take(digits) {
        x = x
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(digit - b'0')))
            .filter(|x| *x <= LIMIT)
            .ok_or(DurationError::NumberTooLarge)?;
    }
    Ok((x, &s[digits..], digits > 0))
}

/// The digits after a dot as an integer and its scale (`"25"` is 25 and 100.0), the rest, and whether there were any
/// digits. Digits past what an `i64` holds are read and dropped, as Go drops them.
fn leading_fraction(s: &str) -> (u64, f64, &str, bool) {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (mut x, mut scale, mut full) = (0u64, 1.0f64, false);
    for digit in s.bytes().take(digits) {
        if full {
            continue;
        }
        match x
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(digit - b'0')))
            .filter(|y| x <= (LIMIT - 1) / 10 && *y <= LIMIT)
        {
            Some(y) => {
                x = y;
                scale *= 10.0;
            }
            None => full = true,
        }
    }
    (x, scale, &s[digits..], digits > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: i64 = 1;
    const US: i64 = 1_000;
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    /// Go's `TestParseDuration` table (src/time/time_test.go).
    #[test]
    fn parses_what_go_parses_to_the_nanosecond() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            ("10ns", 10 * NS),
            ("11us", 11 * US),
            ("12\u{b5}s", 12 * US),
            ("12\u{3bc}s", 12 * US),
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * M),
            ("16h", 16 * H),
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * M),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("2562047h47m16.854775807s", i64::MAX),
            ("0.100000000000000000000h", 6 * M),
            ("0.830103483285477580700h", 49 * M + 48 * S + 372_539_827),
            // Beyond Go's table: the brief's own.
            ("1.5h", 90 * M),
            ("-1.5h", -90 * M),
            ("1h30m", 90 * M),
        ];
        for &(text, want) in cases {
            assert_eq!(parse_go_duration(text), Ok(want), "{text:?}");
        }
    }

    /// Go's `TestParseDurationErrors` table, with the reason each gets here.
    #[test]
    fn refuses_what_go_refuses() {
        use DurationError::*;
        let cases: &[(&str, DurationError)] = &[
            ("", Empty),
            ("3", MissingUnit),
            ("-", Empty),
            ("s", ExpectedNumber),
            (".", ExpectedNumber),
            ("-.", ExpectedNumber),
            (".s", ExpectedNumber),
            ("+.s", ExpectedNumber),
            ("1d", UnknownUnit("d".to_owned())),
            ("\u{85}\u{85}", ExpectedNumber),
            ("\u{fffd}", ExpectedNumber),
            ("\u{fffd} hello \u{fffd} world", ExpectedNumber),
            ("9223372036854775810ns", NumberTooLarge),
            ("9223372036854775808ns", TooLarge),
            ("-9223372036854775809ns", NumberTooLarge),
            ("9223372036854776us", TooLarge),
            ("3000000h", TooLarge),
            ("9223372036854775.808us", TooLarge),
            ("9223372036854ms775us808ns", TooLarge),
            ("1..2s", MissingUnit),
            ("1s 2s", UnknownUnit("s ".to_owned())),
            ("--1s", ExpectedNumber),
            ("1x", UnknownUnit("x".to_owned())),
        ];
        for (text, want) in cases {
            assert_eq!(parse_go_duration(text).as_ref(), Err(want), "{text:?}");
        }
    }
}
