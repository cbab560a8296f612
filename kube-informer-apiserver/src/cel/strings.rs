//! cel-go's strings extension at version 2 beyond what [`library`](super::library) has: `format` (version 1) and
//! `strings.quote` (version 1), as the CEL spec's `string_ext` conformance cases define them: `%s`, `%d`, `%f`,
//! `%e`, `%b`, `%x`, `%X`, `%o` and `%%`, precision for `%f` and `%e`, cel-go's error texts.

use super::conversions::convert;
use super::errors::NO_OVERLOAD;
use super::value::Value;

/// `strings.quote`: the string in double quotes with CEL's escapes (`\a \b \f \n \r \t \v \\ \"`).
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `<string>.format(<list>)`.
pub(crate) fn format(pattern: &str, args: &[Value]) -> Result<String, String> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut next = 0usize;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut precision: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut digits = String::new();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                digits.push(*d);
                chars.next();
            }
            precision =
                Some(digits.parse().map_err(
                    |_| "could not parse formatting clause: unable to convert precision specifier to integer",
                )?);
        }
        let verb = chars
            .next()
            .ok_or("could not parse formatting clause: unexpected end of string")?;
        if !"sdfebxXo".contains(verb) {
            return Err(format!(
                "could not parse formatting clause: unrecognized formatting clause \"{verb}\""
            ));
        }
        let arg = args.get(next).ok_or_else(|| format!("index {next} out of range"))?;
        next += 1;
        let text = clause(verb, precision, arg).map_err(|e| format!("error during formatting: {e}"))?;
        out.push_str(&text);
    }
    Ok(out)
}

fn special(d: f64) -> Option<&'static str> {
    if d.is_nan() {
        Some("NaN")
    } else if d == f64::INFINITY {
        Some("Infinity")
    } else if d == f64::NEG_INFINITY {
        Some("-Infinity")
    } else {
        None
    }
}

fn clause(verb: char, precision: Option<usize>, arg: &Value) -> Result<String, String> {
    let given = arg.type_name();
    match verb {
        's' => string_clause(arg),
        'd' => match arg {
            Value::Int(i) => Ok(i.to_string()),
            Value::Uint(u) => Ok(u.to_string()),
            Value::Double(d) if special(*d).is_some() => Ok(special(*d).unwrap_or_default().to_owned()),
            _ => Err(format!(
                "decimal clause can only be used on integers, was given {given}"
            )),
        },
        'f' | 'e' => {
            let d = match arg {
                Value::Double(d) => *d,
                Value::Int(i) => *i as f64,
                Value::Uint(u) => *u as f64,
                _ if verb == 'f' => {
                    return Err(format!(
                        "fixed-point clause can only be used on doubles, was given {given}"
                    ));
                }
                _ => {
                    return Err(format!(
                        "scientific clause can only be used on doubles, was given {given}"
                    ));
                }
            };
            if let Some(s) = special(d) {
                return Ok(s.to_owned());
            }
            let p = precision.unwrap_or(6);
            if verb == 'f' {
                return Ok(format!("{d:.p$}"));
            }
            // Go writes the exponent signed, at least two digits.
            let s = format!("{d:.p$e}");
            let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
            let e: i32 = e.parse().unwrap_or(0);
            Ok(format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()))
        }
        'b' => match arg {
            Value::Int(i) if *i < 0 => Ok(format!("-{:b}", i.unsigned_abs())),
            Value::Int(i) => Ok(format!("{i:b}")),
            Value::Uint(u) => Ok(format!("{u:b}")),
            Value::Bool(b) => Ok(if *b { "1" } else { "0" }.to_owned()),
            _ => Err(format!(
                "only integers and bools can be formatted as binary, was given {given}"
            )),
        },
        'o' => match arg {
            Value::Int(i) if *i < 0 => Ok(format!("-{:o}", i.unsigned_abs())),
            Value::Int(i) => Ok(format!("{i:o}")),
            Value::Uint(u) => Ok(format!("{u:o}")),
            _ => Err(format!("octal clause can only be used on integers, was given {given}")),
        },
        _ => {
            let hex = match arg {
                Value::Int(i) if *i < 0 => format!("-{:x}", i.unsigned_abs()),
                Value::Int(i) => format!("{i:x}"),
                Value::Uint(u) => format!("{u:x}"),
                Value::String(s) => s.bytes().map(|b| format!("{b:02x}")).collect(),
                Value::Bytes(b) => b.iter().map(|b| format!("{b:02x}")).collect(),
                _ => {
                    return Err(format!(
                        "only integers, byte buffers, and strings can be formatted as hex, was given {given}"
                    ));
                }
            };
            Ok(if verb == 'X' { hex.to_uppercase() } else { hex })
        }
    }
}

/// `%s`: a value as text, lists and maps (keys sorted) with their items as `%s` writes them.
fn string_clause(arg: &Value) -> Result<String, String> {
    Ok(match arg {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => match special(*d) {
            Some(s) => s.to_owned(),
            None => to_string(arg)?,
        },
        Value::String(s) => s.to_string(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Type(t) => t.to_string(),
        Value::Duration(_) | Value::Timestamp(_) => to_string(arg)?,
        Value::List(l) => {
            let items: Result<Vec<String>, String> = l.iter().map(string_clause).collect();
            format!("[{}]", items?.join(", "))
        }
        Value::Map(m) => {
            let mut entries = Vec::with_capacity(m.len());
            for (k, v) in m.iter() {
                entries.push((string_clause(&k.to_value())?, string_clause(v)?));
            }
            entries.sort();
            let items: Vec<String> = entries.into_iter().map(|(k, v)| format!("{k}: {v}")).collect();
            format!("{{{}}}", items.join(", "))
        }
        other => {
            return Err(format!(
                "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {}",
                other.type_name()
            ));
        }
    })
}

fn to_string(v: &Value) -> Result<String, String> {
    match convert("string", v)? {
        Value::String(s) => Ok(s.to_string()),
        _ => Err(NO_OVERLOAD.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_and_quote_as_the_string_ext_cases() {
        let f = |p: &str, a: Vec<Value>| format(p, &a);
        assert_eq!(f("%o", vec![Value::Int(11)]).unwrap(), "13");
        assert_eq!(f("%.3f", vec![Value::Double(1.2345)]).unwrap(), "1.234");
        assert_eq!(f("%.6e", vec![Value::Double(1052.032911275)]).unwrap(), "1.052033e+03");
        assert_eq!(f("%e", vec![Value::Int(2)]).unwrap(), "2.000000e+00");
        assert_eq!(
            f("%x", vec![Value::str("Hello world!")]).unwrap(),
            "48656c6c6f20776f726c6421"
        );
        assert_eq!(f("%%%s%%", vec![Value::str("text")]).unwrap(), "%text%");
        assert_eq!(
            f("%d %d %d", vec![Value::Int(0), Value::Int(1)]).unwrap_err(),
            "index 2 out of range"
        );
        assert_eq!(
            f("%a", vec![Value::Int(1)]).unwrap_err(),
            "could not parse formatting clause: unrecognized formatting clause \"a\""
        );
        assert_eq!(quote("two escape sequences \u{7}\n"), "\"two escape sequences \\a\\n\"");
    }
}
