//! `resource.Quantity` as kube-apiserver decodes, defaults and writes it: parsed exactly (no floating point), rounded
//! away from zero to nano, `SetDefaults_ResourceList` rounds it up to milli, and it is written in canonical form in
//! the format it was given in (`1000m` → `1`, `0.5` → `500m`, `1024Mi` → `1Gi`, `1.5Gi` → `1536Mi`, `12e6` stays,
//! `0.1Ki` → `103m`). A value this cannot represent exactly (more than 38 digits) is left as it was sent.

use std::cmp::Ordering;

use serde_json::{Map, Value};

type Object = Map<String, Value>;

/// How a quantity is written: kept from its suffix when parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// `12M`, `1500m`, `5`.
    DecimalSi,
    /// `12Mi`.
    BinarySi,
    /// `12e6`.
    DecimalExponent,
}

/// An exact quantity: `value × 10^exp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Quantity {
    value: i128,
    exp: i32,
    format: Format,
    /// The text as given, when apimachinery's parser already found it canonical and keeps it (its `s` field).
    kept: Option<String>,
}

const NANO: i32 = -9;
const MILLI: i32 = -3;
/// A binary-suffixed quantity is capped here, silently, as apimachinery does.
const MAX_BINARY: i128 = i64::MAX as i128;

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// The parts of a quantity's text (apimachinery's `parseQuantityString`): sign, the number as written, the digits
/// before and after the point, and the suffix.
struct Parts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn split(s: &str) -> Option<Parts<'_>> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    let zero = Parts {
        positive,
        num: "0",
        denom: "",
        suffix: "",
    };
    if pos >= end {
        return Some(zero);
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    let mut denom = "";
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let d = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[d..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return None;
    }
    Some(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// `(base, exponent, format)` of a suffix (apimachinery's `suffixHandler.interpret`).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = match suffix {
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "" => Some(0),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = decimal {
        return Some((10, e, Format::DecimalSi));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(e) = binary {
        return Some((2, e, Format::BinarySi));
    }
    let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
    // Go parses an int64 and keeps its low 32 bits.
    let e: i64 = rest.parse().ok()?;
    Some((10, e as i32, Format::DecimalExponent))
}

/// Divides `value` (≠ 0) by `10^k`, rounding away from zero.
fn div_round_up(value: i128, k: u32) -> i128 {
    let Some(d) = pow10(k) else {
        return value.signum();
    };
    let q = value / d;
    if value % d == 0 { q } else { q + value.signum() }
}

impl Quantity {
    /// Parses a quantity's text as `resource.ParseQuantity` does; `None` when it is not one (kube-apiserver answers
    /// 400) or cannot be represented here.
    pub(crate) fn parse(s: &str) -> Option<Quantity> {
        if s.is_empty() {
            return None;
        }
        if s == "0" {
            return Some(Quantity {
                value: 0,
                exp: 0,
                format: Format::DecimalSi,
                kept: Some(s.to_owned()),
            });
        }
        let p = split(s)?;
        let (base, exponent, mut format) = interpret(p.suffix)?;
        let digits = format!("{}{}", p.num, p.denom);
        // apimachinery's int64 fast path keeps the text when it is already canonical.
        let kept = kept_as_written(s, &p, &digits, base, exponent);
        let mut value: i128 = if digits.len() > 38 {
            return None;
        } else {
            digits.parse().ok()?
        };
        if !p.positive {
            value = -value;
        }
        let mut exp = -(p.denom.len() as i32);
        if base == 10 {
            exp = exp.checked_add(exponent)?;
        } else {
            value = value.checked_mul(1i128.checked_shl(exponent as u32)?)?;
        }
        let mut q = Quantity {
            value,
            exp,
            format,
            kept: None,
        };
        if q.exp < NANO && q.value != 0 {
            q.value = div_round_up(q.value, (NANO - q.exp) as u32);
            q.exp = NANO;
        }
        if format == Format::BinarySi {
            if q.cmp_value(&Quantity::int(MAX_BINARY)) == Ordering::Greater {
                q = Quantity::int(MAX_BINARY);
            } else if q.cmp_value(&Quantity::int(-MAX_BINARY)) == Ordering::Less {
                q = Quantity::int(-MAX_BINARY);
            }
            let magnitude = Quantity {
                value: q.value.abs(),
                ..q.clone()
            };
            if q.value != 0 && magnitude.cmp_value(&Quantity::int(1)) == Ordering::Less {
                format = Format::DecimalSi;
            }
        }
        q.format = format;
        q.kept = kept;
        Some(q)
    }

    fn int(value: i128) -> Quantity {
        Quantity {
            value,
            exp: 0,
            format: Format::DecimalSi,
            kept: None,
        }
    }

    /// The two values at a common exponent; `None` when that overflows.
    fn aligned(&self, other: &Quantity) -> Option<(i128, i128, i32)> {
        let exp = self.exp.min(other.exp);
        let scale = |q: &Quantity| q.value.checked_mul(pow10((q.exp - exp) as u32)?);
        Some((scale(self)?, scale(other)?, exp))
    }

    /// Compares values (the format does not matter).
    pub(crate) fn cmp_value(&self, other: &Quantity) -> Ordering {
        match self.aligned(other) {
            Some((a, b, _)) => a.cmp(&b),
            // Only a huge exponent overflows: the one with more magnitude wins, by sign.
            None => {
                let bigger = if self.exp > other.exp { self } else { other };
                let sign = bigger.value.signum();
                let ord = if sign >= 0 { Ordering::Greater } else { Ordering::Less };
                if std::ptr::eq(bigger, self) { ord } else { ord.reverse() }
            }
        }
    }

    /// The sum (in the left operand's format); `None` when it overflows.
    pub(crate) fn add(&self, other: &Quantity) -> Option<Quantity> {
        let (a, b, exp) = self.aligned(other)?;
        Some(Quantity {
            value: a.checked_add(b)?,
            exp,
            format: self.format,
            kept: None,
        })
    }

    #[cfg(feature = "cel")]
    /// The opposite value (CEL's quantity library subtracts with it).
    pub(crate) fn negated(&self) -> Quantity {
        Quantity {
            value: -self.value,
            kept: None,
            ..self.clone()
        }
    }

    #[cfg(feature = "cel")]
    /// -1, 0 or 1.
    pub(crate) fn sign(&self) -> i64 {
        self.value.signum() as i64
    }

    #[cfg(feature = "cel")]
    /// The nearest float (`AsApproximateFloat64`).
    pub(crate) fn approximate(&self) -> f64 {
        self.value as f64 * 10f64.powi(self.exp)
    }

    /// `RoundUp(scale)`: away from zero, to `10^scale`.
    fn round_up(&mut self, scale: i32) {
        if self.exp >= scale {
            return;
        }
        self.kept = None;
        self.value = div_round_up(self.value, (scale - self.exp) as u32);
        self.exp = scale;
    }

    /// The text Go's `MarshalJSON` writes.
    pub(crate) fn canonical(&self) -> String {
        if let Some(k) = &self.kept {
            return k.clone();
        }
        if self.value == 0 {
            return "0".to_owned();
        }
        let mut format = self.format;
        if format == Format::BinarySi {
            let small = self.cmp_value(&Quantity::int(-1024)) == Ordering::Greater
                && self.cmp_value(&Quantity::int(1024)) == Ordering::Less;
            if small || self.integer().is_none() {
                format = Format::DecimalSi;
            }
        }
        match format {
            Format::BinarySi => {
                let mut v = self.integer().unwrap_or_default();
                let mut e = 0;
                while v % 1024 == 0 && e < 6 {
                    v /= 1024;
                    e += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][e];
                format!("{v}{suffix}")
            }
            Format::DecimalSi | Format::DecimalExponent => {
                let (mut v, mut e) = (self.value, self.exp);
                while v % 10 == 0 {
                    v /= 10;
                    e += 1;
                }
                // Down to a multiple of 3 (Go's `%` keeps the sign, as Rust's does).
                let down = match e % 3 {
                    1 | -2 => 1,
                    2 | -1 => 2,
                    _ => 0,
                };
                match pow10(down).and_then(|f| v.checked_mul(f)) {
                    Some(m) => (v, e) = (m, e - down as i32),
                    // Past i128: the same value, not in canonical form.
                    None => return format!("{v}e{e}"),
                }
                let si = match e {
                    -9 => Some("n"),
                    -6 => Some("u"),
                    -3 => Some("m"),
                    0 => Some(""),
                    3 => Some("k"),
                    6 => Some("M"),
                    9 => Some("G"),
                    12 => Some("T"),
                    15 => Some("P"),
                    18 => Some("E"),
                    _ => None,
                };
                match (format, si) {
                    (Format::DecimalSi, Some(s)) => format!("{v}{s}"),
                    (_, _) if e == 0 => format!("{v}"),
                    _ => format!("{v}e{e}"),
                }
            }
        }
    }

    /// The value as an integer, when it is one.
    pub(crate) fn integer(&self) -> Option<i128> {
        if self.exp >= 0 {
            return self.value.checked_mul(pow10(self.exp as u32)?);
        }
        let d = pow10((-self.exp) as u32)?;
        (self.value % d == 0).then_some(self.value / d)
    }
}

/// A quantity from JSON: a string, or a number (Go's `UnmarshalJSON` parses a bare number's text too).
pub(crate) fn from_json(v: &Value) -> Option<Quantity> {
    match v {
        Value::String(s) => Quantity::parse(s.trim()),
        Value::Number(n) => Quantity::parse(&n.to_string()),
        _ => None,
    }
}

/// `SetDefaults_ResourceList` on the map at `key`: every quantity rounded up to milli and written canonically.
/// Values that are not quantities are left as they are (kube-apiserver would have refused the body).
pub(crate) fn default_resource_list(m: &mut Object, key: &str) {
    let Some(list) = m.get_mut(key).and_then(Value::as_object_mut) else {
        return;
    };
    for v in list.values_mut() {
        if let Some(mut q) = from_json(v) {
            q.round_up(MILLI);
            *v = Value::String(q.canonical());
        }
    }
}

/// The quantity at `key` written canonically (Go's `MarshalJSON` of any `Quantity`), without rounding; absent stays
/// absent.
pub(crate) fn canonical_field(m: &mut Object, key: &str) {
    if let Some(v) = m.get_mut(key)
        && let Some(q) = from_json(v)
    {
        *v = Value::String(q.canonical());
    }
}

/// Canonical form of one quantity's text after parsing (no rounding to milli), for tests.
#[cfg(test)]
pub(crate) fn canonical(s: &str) -> Option<String> {
    Quantity::parse(s).map(|q| q.canonical())
}

/// True when apimachinery's int64 fast path accepts `s` and finds it canonical, so that it keeps the text.
fn kept_as_written(s: &str, p: &Parts<'_>, digits: &str, base: u32, exponent: i32) -> Option<String> {
    const MAX_INT64_FACTORS: usize = 18;
    let (scale, canonical) = match base {
        10 => {
            if digits.len() > MAX_INT64_FACTORS {
                return None;
            }
            let scale = exponent - p.denom.len() as i32;
            let canonical = scale % 3 == 0 && !digits.ends_with("000") && !digits.starts_with('0');
            (scale, canonical)
        }
        _ => {
            if !p.denom.is_empty() || exponent < 0 {
                return None;
            }
            let precision = 15 - p.num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
            if precision < 0 {
                return None;
            }
            let value: i64 = p.num.parse().ok()?;
            value.checked_mul(1i64.checked_shl(exponent as u32)?)?;
            (0, exponent % 10 == 0 && value & 0x07 != 0)
        }
    };
    (scale >= NANO && canonical).then(|| s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_forms_match_apimachinery() {
        // TestQuantityString's alternates and TestQuantityParseEmit.
        for (input, want) in [
            ("1024Mi", "1Gi"),
            ("307200Ki", "300Mi"),
            ("1025024Mi", "1001Gi"),
            ("1024Gi", "1Ti"),
            ("5000m", "5"),
            ("0.5", "500m"),
            ("1000M", "1G"),
            ("0.001T", "1G"),
            ("1000u", "1m"),
            ("1.08", "1080m"),
            ("1080000000n", "1080m"),
            ("0.001e12", "1e9"),
            (".001e12", "1e9"),
            ("0.001e0", "1e-3"),
            ("1000e-12", "1e-9"),
            ("00", "0"),
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1Gi", "1Gi"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
            ("1.5Gi", "1536Mi"),
            ("0.5Gi", "512Mi"),
            ("100.035Ki", "102435840m"),
            ("12e6", "12e6"),
            ("1.2e3", "1200"),
            ("3.001n", "4n"),
            ("0.00000012345", "124n"),
            ("9Ei", "9223372036854775807"),
            ("12E", "12E"),
            ("1000E", "1e21"),
            ("-1.5", "-1500m"),
            ("-1024Mi", "-1Gi"),
            ("0Mi", "0"),
            // Text apimachinery's fast path finds canonical is kept as written, quirks included.
            ("1.", "1."),
            ("1.G", "1.G"),
            ("+1", "+1"),
            ("+1u", "+1u"),
        ] {
            assert_eq!(canonical(input).as_deref(), Some(want), "{input}");
        }
    }

    #[test]
    fn invalid_quantities_are_refused() {
        for bad in [
            "", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ",
        ] {
            assert_eq!(Quantity::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn resource_lists_round_up_to_milli() {
        let mut m = json!({"r": {
            "cpu": "0.0001", "memory": "128974848", "big": "129e6", "mem": "123Mi", "half": 0.5, "two": 2,
            "n": "+1n", "kept": "100m", "junk": "lots", "odd": true,
        }})
        .as_object()
        .unwrap()
        .clone();
        default_resource_list(&mut m, "r");
        assert_eq!(
            m["r"],
            json!({
                "cpu": "1m", "memory": "128974848", "big": "129e6", "mem": "123Mi", "half": "500m", "two": "2",
                "n": "1m", "kept": "100m", "junk": "lots", "odd": true,
            })
        );
    }

    #[test]
    fn values_compare_and_add_across_formats() {
        let q = |s: &str| Quantity::parse(s).unwrap();
        assert!(q("100m").cmp_value(&q("50m")).is_gt());
        assert!(q("10000T").cmp_value(&q("100Gi")).is_gt());
        assert!(q("1").cmp_value(&q("1000m")).is_eq());
        assert!(q("1Ki").cmp_value(&q("1024")).is_eq());
        assert_eq!(q("10").add(&q("1e1")).unwrap().canonical(), "20");
        assert_eq!(q("1Gi").add(&q("512Mi")).unwrap().canonical(), "1536Mi");
    }
}
