//! The workspace's one calendar: RFC 3339 text to and from seconds since 1970-01-01T00:00:00Z, over the proleptic
//! Gregorian calendar (Howard Hinnant's algorithms, public domain) and the whole range of `i64` seconds.
//!
//! [`object::time`](crate::object::time) reads and writes `SystemTime`s through it; the API server reaches it through
//! [`unstable::time`](crate::unstable::time) for what `SystemTime` cannot hold: CEL timestamps and protobuf times,
//! which reach before 1970 and past 9999 as Go's `time.Time` does.

/// Days from 1970-01-01 to the date `y-m-d` (negative before it).
///
/// `m` is 1 to 12; a day past the end of its month counts on into the next (February 30 is a day of March). `y` is
/// any year of [`civil_from_days`]'s range.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * i64::from(mp) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month 1 to 12, day 1 to 31) of day `z` counted from 1970-01-01, for any `z` of the days of `i64` seconds
/// (`i64::MIN / 86_400 ..= i64::MAX / 86_400`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
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

/// A moment in UTC: seconds from 1970-01-01T00:00:00Z (negative before it) and nanoseconds into that second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Seconds from the epoch.
    pub secs: i64,
    /// Nanoseconds into the second: below 1,000,000,000.
    pub nanos: u32,
}

/// The fraction of a second [`Timestamp::format`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fraction {
    /// Whole seconds (`metav1.Time`): the fraction is dropped.
    None,
    /// Six digits, always (`metav1.MicroTime`).
    Micros,
    /// As many digits as needed, none for a whole second (Go's `time.RFC3339Nano`).
    Nanos,
}

/// An RFC 3339 text read by [`Timestamp::parse`], and how it was written where its readers differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The moment, its offset applied.
    pub at: Timestamp,
    /// A `full-date` alone (`2024-01-02`): midnight UTC.
    pub date_only: bool,
    /// A space between date and time (`2024-01-02 03:04:05Z`, which RFC 3339 allows in a note), not `T`.
    pub space_separated: bool,
    /// How many digits the fraction of a second has (0 without one); past nine they are read as truncated.
    pub fraction_digits: usize,
}

impl Timestamp {
    /// RFC 3339 in UTC (`2024-01-02T03:04:05Z`), the year as Go writes it outside 0 to 9999: a sign and at least
    /// four digits (`-0001`, `10000`).
    pub fn format(self, fraction: Fraction) -> String {
        let days = self.secs.div_euclid(86_400);
        let s = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let year = if y < 0 {
            format!("-{:04}", y.unsigned_abs())
        } else {
            format!("{y:04}")
        };
        let frac = match fraction {
            Fraction::None => String::new(),
            Fraction::Micros => format!(".{:06}", self.nanos / 1000),
            Fraction::Nanos if self.nanos == 0 => String::new(),
            Fraction::Nanos => format!(".{}", format!("{:09}", self.nanos).trim_end_matches('0')),
        };
        format!(
            "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}{frac}Z",
            s / 3600,
            s / 60 % 60,
            s % 60
        )
    }

    /// Reads RFC 3339: `yyyy-mm-dd`, then `T` (or `t` or a space), `hh:mm:ss`, an optional fraction and `Z` (or `z`)
    /// or `±hh:mm`; or the date alone. `None` for anything else: a month outside 1 to 12, a day outside 1 to 31, an
    /// hour past 23, a minute past 59, a second past 60 (a leap second counts as the next), a fraction without a
    /// digit, an offset without its colon. What each reader accepts of the rest is in [`Parsed`].
    pub fn parse(s: &str) -> Option<Parsed> {
        let b = s.as_bytes();
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            let part = s.get(r)?;
            if part.bytes().all(|c| c.is_ascii_digit()) {
                part.parse().ok()
            } else {
                None
            }
        };
        if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
            return None;
        }
        let days = days_from_civil(y, mo as u32, d as u32);
        if b.len() == 10 {
            return Some(Parsed {
                at: Timestamp {
                    secs: days * 86_400,
                    nanos: 0,
                },
                date_only: true,
                space_separated: false,
                fraction_digits: 0,
            });
        }
        if b.len() < 20 || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
            return None;
        }
        let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if h > 23 || mi > 59 || sec > 60 {
            return None;
        }
        let mut i = 19;
        let mut nanos: u32 = 0;
        let mut fraction_digits = 0;
        if b[i] == b'.' {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                if i - start < 9 {
                    nanos = nanos * 10 + u32::from(b[i] - b'0');
                }
                i += 1;
            }
            fraction_digits = i - start;
            if fraction_digits == 0 {
                return None;
            }
            for _ in fraction_digits.min(9)..9 {
                nanos *= 10;
            }
        }
        let offset: i64 = match b.get(i)? {
            b'Z' | b'z' if i + 1 == b.len() => 0,
            sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
                let off = num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60;
                if *sign == b'+' { off } else { -off }
            }
            _ => return None,
        };
        Some(Parsed {
            at: Timestamp {
                secs: days * 86_400 + h * 3600 + mi * 60 + sec - offset,
                nanos,
            },
            date_only: false,
            space_separated: b[10] == b' ',
            fraction_digits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64, nanos: u32) -> Timestamp {
        Timestamp { secs, nanos }
    }

    fn parsed(s: &str) -> Option<Timestamp> {
        Timestamp::parse(s).map(|p| p.at)
    }

    #[test]
    fn days_and_dates_agree_across_leap_years_centuries_and_eras() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        // 2000 is a leap year (divisible by 400), 1900 and 2100 are not (by 100), 2024 is (by 4).
        assert_eq!(civil_from_days(days_from_civil(2000, 2, 28) + 1), (2000, 2, 29));
        assert_eq!(civil_from_days(days_from_civil(1900, 2, 28) + 1), (1900, 3, 1));
        assert_eq!(civil_from_days(days_from_civil(2100, 2, 28) + 1), (2100, 3, 1));
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 28) + 1), (2024, 2, 29));
        // A day past the month's end counts on.
        assert_eq!(days_from_civil(2023, 2, 29), days_from_civil(2023, 3, 1));
        // Go's zero time and the last day of year 9999.
        assert_eq!(days_from_civil(1, 1, 1), -719_162);
        assert_eq!(days_from_civil(9999, 12, 31), 2_932_896);
        // Every day from year -1 to 2401 (eras and their boundaries) round-trips, one day after another.
        let mut previous = civil_from_days(days_from_civil(-1, 1, 1) - 1);
        for z in days_from_civil(-1, 1, 1)..days_from_civil(2401, 1, 1) {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
            assert!((y, m, d) > previous, "{z}");
            previous = (y, m, d);
        }
        // The ends of the range of `i64` seconds do not overflow.
        for secs in [i64::MIN, i64::MAX] {
            let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
            assert_eq!(days_from_civil(y, m, d), secs.div_euclid(86_400));
        }
    }

    #[test]
    fn formats_as_go_writes_rfc_3339() {
        assert_eq!(at(0, 0).format(Fraction::None), "1970-01-01T00:00:00Z");
        assert_eq!(at(1_700_000_000, 0).format(Fraction::None), "2023-11-14T22:13:20Z");
        assert_eq!(at(951_782_400, 0).format(Fraction::None), "2000-02-29T00:00:00Z");
        assert_eq!(
            at(-1, 999_999_000).format(Fraction::Micros),
            "1969-12-31T23:59:59.999999Z"
        );
        // Year 1 (Go's zero time) and 9999, and past them: a sign and at least four digits.
        assert_eq!(
            at(-62_135_596_800, 1000).format(Fraction::Micros),
            "0001-01-01T00:00:00.000001Z"
        );
        assert_eq!(at(253_402_300_799, 0).format(Fraction::None), "9999-12-31T23:59:59Z");
        assert_eq!(at(-62_135_596_801, 0).format(Fraction::None), "0000-12-31T23:59:59Z");
        assert_eq!(at(-62_198_755_200, 0).format(Fraction::None), "-0001-01-01T00:00:00Z");
        assert_eq!(at(253_402_300_800, 0).format(Fraction::None), "10000-01-01T00:00:00Z");
        // Fractions: dropped, six digits, or as many as needed.
        let t = at(1_700_000_000, 42_500);
        assert_eq!(t.format(Fraction::None), "2023-11-14T22:13:20Z");
        assert_eq!(t.format(Fraction::Micros), "2023-11-14T22:13:20.000042Z");
        assert_eq!(t.format(Fraction::Nanos), "2023-11-14T22:13:20.0000425Z");
        assert_eq!(at(5, 500_000_000).format(Fraction::Nanos), "1970-01-01T00:00:05.5Z");
        assert_eq!(at(5, 0).format(Fraction::Nanos), "1970-01-01T00:00:05Z");
        assert_eq!(at(5, 0).format(Fraction::Micros), "1970-01-01T00:00:05.000000Z");
        // Never panics at the ends of the range.
        for secs in [i64::MIN, i64::MAX] {
            assert!(at(secs, 999_999_999).format(Fraction::Nanos).ends_with('Z'));
        }
    }

    #[test]
    fn parses_offsets_fractions_and_the_bounds_of_four_digit_years() {
        assert_eq!(parsed("1970-01-01T00:00:00Z"), Some(at(0, 0)));
        assert_eq!(parsed("2023-11-14T22:13:20z"), Some(at(1_700_000_000, 0)));
        assert_eq!(parsed("2000-02-29T00:00:00Z"), Some(at(951_782_400, 0)));
        assert_eq!(parsed("0001-01-01T00:00:00Z"), Some(at(-62_135_596_800, 0)));
        assert_eq!(parsed("0000-12-31T23:59:59Z"), Some(at(-62_135_596_801, 0)));
        assert_eq!(
            parsed("9999-12-31T23:59:59.999999999Z"),
            Some(at(253_402_300_799, 999_999_999))
        );
        // Offsets east and west of UTC.
        assert_eq!(parsed("2023-11-14T23:13:20+01:00"), Some(at(1_700_000_000, 0)));
        assert_eq!(parsed("2023-11-14T16:43:20-05:30"), Some(at(1_700_000_000, 0)));
        assert_eq!(parsed("1970-01-01T00:00:00+00:01"), Some(at(-60, 0)));
        // A leap second counts as the next second.
        assert_eq!(parsed("2016-12-31T23:59:60Z"), parsed("2017-01-01T00:00:00Z"));
        // Fractions: any number of digits, read to the nanosecond (truncated past nine), and counted.
        let p = Timestamp::parse("2023-11-14T22:13:20.5Z").unwrap();
        assert_eq!((p.at, p.fraction_digits), (at(1_700_000_000, 500_000_000), 1));
        let p = Timestamp::parse("2023-11-14T22:13:20.0000425Z").unwrap();
        assert_eq!((p.at, p.fraction_digits), (at(1_700_000_000, 42_500), 7));
        let p = Timestamp::parse("2023-11-14T22:13:20.1234567891Z").unwrap();
        assert_eq!((p.at, p.fraction_digits), (at(1_700_000_000, 123_456_789), 10));
        // How it was written, where readers differ.
        let p = Timestamp::parse("2024-01-02").unwrap();
        assert_eq!(
            (p.at, p.date_only, p.space_separated),
            (at(1_704_153_600, 0), true, false)
        );
        let p = Timestamp::parse("2024-01-02 00:00:00Z").unwrap();
        assert_eq!(
            (p.at, p.date_only, p.space_separated),
            (at(1_704_153_600, 0), false, true)
        );
        assert!(!Timestamp::parse("2024-01-02T00:00:00Z").unwrap().space_separated);
    }

    #[test]
    fn rejects_what_is_not_rfc_3339() {
        for bad in [
            "",
            "2024-1-02",
            "2024-01-02T",
            "2024-01-02T00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-00-01T00:00:00Z",
            "2024-01-32T00:00:00Z",
            "2024-01-00T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:60:00Z",
            "2024-01-01T00:00:61Z",
            "2024-01-01 00:00:00",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00+01:0",
            "2024-01-01T00:00:00++1:00",
            "2024-01-01T00:00:00Zjunk",
            "2024-01-01X00:00:00Z",
            "20a4-01-01T00:00:00Z",
            "+024-01-01T00:00:00Z",
            "2024-01-01T00:00:00€",
            "2024-01-01T00:00:00+€:00",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad}");
        }
    }
}
