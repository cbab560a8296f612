//! Literal formats Go's types read from JSON strings, with Go's words when a string is not one: RFC 3339 times as
//! `time.Parse` reads them for `metav1.Time` and `metav1.MicroTime`, and standard base64 as `encoding/base64` reads it
//! for `[]byte` fields.

/// `metav1.Time`'s layout (`time.RFC3339`).
pub(crate) const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
/// `metav1.MicroTime`'s layout (`metav1.RFC3339Micro`): exactly six fraction digits.
pub(crate) const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// Go's `time.quote`: `"` and `\` escaped, bytes outside printable ASCII as `\xNN`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// A `time.ParseError`'s text: `cannot parse <rest> as <element>`, or a message (`: month out of range`).
fn parse_error(layout: &str, value: &str, layout_elem: &str, value_elem: &str, message: &str) -> String {
    if message.is_empty() {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(value),
            quote(layout),
            quote(value_elem),
            quote(layout_elem)
        )
    } else {
        format!("parsing time {}{message}", quote(value))
    }
}

/// Go's `getnum`: one or two digits (`fixed`: exactly two).
fn getnum(s: &str, fixed: bool) -> Option<(u32, &str)> {
    let b = s.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    if !b.get(1).is_some_and(u8::is_ascii_digit) {
        if fixed {
            return None;
        }
        return Some((u32::from(b[0] - b'0'), &s[1..]));
    }
    Some((u32::from(b[0] - b'0') * 10 + u32::from(b[1] - b'0'), &s[2..]))
}

fn days_in(month: u32, year: i64) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Checks `value` against `layout` ([`RFC3339`] or [`RFC3339_MICRO`]) as Go's `time.Parse` does: `Err` with its
/// message.
pub(crate) fn check_time(layout: &str, value: &str) -> Result<(), String> {
    let micro = layout == RFC3339_MICRO;
    let err = |elem: &str, rest: &str| parse_error(layout, value, elem, rest, "");
    let range = |what: &str, rest: &str| parse_error(layout, value, "", rest, &format!(": {what} out of range"));
    let mut rest = value;
    // 2006
    if rest.len() < 4 || !rest.as_bytes()[..4].iter().all(u8::is_ascii_digit) {
        return Err(err("2006", rest));
    }
    let year: i64 = rest[..4].parse().map_err(|_| err("2006", rest))?;
    rest = &rest[4..];
    let mut fields = [0u32; 5];
    for (i, (prefix, elem, fixed)) in [
        ("-", "01", true),
        ("-", "02", true),
        ("T", "15", false),
        (":", "04", true),
        (":", "05", true),
    ]
    .into_iter()
    .enumerate()
    {
        rest = rest.strip_prefix(prefix).ok_or_else(|| err(prefix, rest))?;
        let hold = rest;
        let (n, after) = getnum(rest, fixed).ok_or_else(|| err(elem, hold))?;
        rest = after;
        let out_of_range = match i {
            0 => (n == 0 || n > 12).then_some("month"),
            2 => (n >= 24).then_some("hour"),
            3 => (n >= 60).then_some("minute"),
            4 => (n >= 60).then_some("second"),
            _ => None,
        };
        if let Some(what) = out_of_range {
            return Err(range(what, rest));
        }
        fields[i] = n;
    }
    // The fraction: exactly six digits for MicroTime; any number after the seconds otherwise.
    if micro {
        let b = rest.as_bytes();
        if b.len() < 7 || !matches!(b[0], b'.' | b',') {
            return Err(err(".000000", rest));
        }
        if !b[1..7].iter().all(u8::is_ascii_digit) {
            return Err(err(".000000", rest));
        }
        rest = &rest[7..];
    } else if rest.len() >= 2 && matches!(rest.as_bytes()[0], b'.' | b',') && rest.as_bytes()[1].is_ascii_digit() {
        let n = 1 + rest[1..].bytes().take_while(u8::is_ascii_digit).count();
        rest = &rest[n..];
    }
    // Z07:00
    if let Some(after) = rest.strip_prefix('Z') {
        rest = after;
    } else {
        let b = rest.as_bytes();
        if b.len() < 6 || b[3] != b':' || !matches!(b[0], b'+' | b'-') {
            return Err(err("Z07:00", rest));
        }
        let (Some((hh, _)), Some((mm, _))) = (getnum(&rest[1..3], true), getnum(&rest[4..6], true)) else {
            return Err(err("Z07:00", rest));
        };
        if hh > 24 {
            return Err(range("time zone offset hour", &rest[6..]));
        }
        if mm > 60 {
            return Err(range("time zone offset minute", &rest[6..]));
        }
        rest = &rest[6..];
    }
    if !rest.is_empty() {
        return Err(parse_error(
            layout,
            value,
            "",
            rest,
            &format!(": extra text: {}", quote(rest)),
        ));
    }
    let (month, day) = (fields[0], fields[1]);
    if day < 1 || day > days_in(month, year) {
        return Err(range("day", rest));
    }
    Ok(())
}

/// Checks `s` as Go's `base64.StdEncoding.Decode` reads it (padding required; `\r` and `\n` skipped): `Err` with its
/// `illegal base64 data at input byte N`.
pub(crate) fn check_base64(s: &str) -> Result<(), String> {
    let src = s.as_bytes();
    let corrupt = |at: usize| Err(format!("illegal base64 data at input byte {at}"));
    let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut si = 0;
    loop {
        // One quantum of four.
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                return match j {
                    0 => Ok(()),
                    // Padding is required: an incomplete quantum is corrupt at its start.
                    _ => corrupt(si - j),
                };
            }
            let c = src[si];
            si += 1;
            if valid(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' {
                return corrupt(si - 1);
            }
            // Padding.
            match j {
                0 | 1 => return corrupt(si - 1),
                2 => {
                    while si < src.len() && newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return corrupt(src.len());
                    }
                    if src[si] != b'=' {
                        return corrupt(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                return corrupt(si);
            }
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_as_go_parses_them() {
        for ok in [
            "2024-02-29T23:59:59Z",
            "2024-01-02T03:04:05.123456789+07:00",
            "2024-01-02T3:04:05Z",
            "2024-01-02T03:04:05,5-01:30",
        ] {
            assert_eq!(check_time(RFC3339, ok), Ok(()), "{ok}");
        }
        assert_eq!(check_time(RFC3339_MICRO, "2024-01-02T03:04:05.000000Z"), Ok(()));
        for (layout, bad, want) in [
            (
                RFC3339,
                "yes",
                r#"parsing time "yes" as "2006-01-02T15:04:05Z07:00": cannot parse "yes" as "2006""#,
            ),
            (
                RFC3339,
                "2024-1-02T00:00:00Z",
                r#"parsing time "2024-1-02T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-02T00:00:00Z" as "01""#,
            ),
            (
                RFC3339,
                "2024-13-02T00:00:00Z",
                r#"parsing time "2024-13-02T00:00:00Z": month out of range"#,
            ),
            (
                RFC3339,
                "2023-02-29T00:00:00Z",
                r#"parsing time "2023-02-29T00:00:00Z": day out of range"#,
            ),
            (
                RFC3339,
                "2024-01-02",
                r#"parsing time "2024-01-02" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T""#,
            ),
            (
                RFC3339,
                "2024-01-02T00:00:00",
                r#"parsing time "2024-01-02T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#,
            ),
            (
                RFC3339,
                "2024-01-02T00:00:00Zjunk",
                r#"parsing time "2024-01-02T00:00:00Zjunk": extra text: "junk""#,
            ),
            (
                RFC3339_MICRO,
                "2024-01-02T00:00:00Z",
                r#"parsing time "2024-01-02T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#,
            ),
        ] {
            assert_eq!(check_time(layout, bad).unwrap_err(), want, "{bad}");
        }
    }

    #[test]
    fn base64_is_read_as_gos_standard_encoding() {
        for ok in ["", "aGVsbG8=", "aGVsbA==", "aGVs", "aGVs\nbG8=\r\n"] {
            assert_eq!(check_base64(ok), Ok(()), "{ok:?}");
        }
        for (bad, at) in [
            ("aGVsbG8", 4),
            ("a", 0),
            ("aGV$", 3),
            ("aG=", 3),
            ("a===", 1),
            ("aGVsbG8=x", 8),
            ("aGVsbA=x", 6),
        ] {
            assert_eq!(
                check_base64(bad).unwrap_err(),
                format!("illegal base64 data at input byte {at}"),
                "{bad:?}"
            );
        }
    }
}
