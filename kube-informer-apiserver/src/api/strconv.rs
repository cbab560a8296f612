//! Go's `strconv` float formats: `FormatFloat(f, 'g', -1, 64)` as `%v` and `%g` write a float64 (values in field
//! errors, CEL's `string(double)`), and the exponent form beside it that `encoding/json` cleans to fewer digits.

/// `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest digits that read back as `f`, plain for decimal exponents
/// from -4 to 5 (`0.0001`, `999999.5`), in exponent form with at least two exponent digits outside them (`1e-05`,
/// `1.234567e+06`, `1e+21`), and `NaN`, `+Inf`, `-Inf`.
pub(crate) fn format_float_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    // Go decides on the shortest digits' exponent (`exp < -4 || exp >= 6`); comparing `f` itself with the two
    // bounds gives the same answer, since both bounds are the shortest digits of the float64 they read as.
    let abs = f.abs();
    if abs == 0.0 || (1e-4..1e6).contains(&abs) {
        format!("{f}")
    } else {
        exponent_form(f, 2)
    }
}

/// A finite `f` as `strconv` writes its `%e` form with the shortest digits: the mantissa, `e`, the exponent's sign
/// always and at least `min_digits` of its digits (`1.5e+06` with 2, as `strconv` writes it; `1.5e+6` with 1, as
/// `encoding/json` cleans it).
pub(crate) fn exponent_form(f: f64, min_digits: usize) -> String {
    let text = format!("{f:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:0min_digits$}", exponent.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go 1.25's own answers (`strconv.FormatFloat(f, 'g', -1, 64)`).
    #[test]
    fn g_format_is_plain_from_exponent_minus_4_to_5() {
        let cases = [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.5, "1.5"),
            (-7.0, "-7"),
            (100000.0, "100000"),
            (999999.0, "999999"),
            (999999.5, "999999.5"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (608863452348.1149, "6.088634523481149e+11"),
            (1e21, "1e+21"),
            (-1.25e300, "-1.25e+300"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (-2.5e-7, "-2.5e-07"),
            (5e-324, "5e-324"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ];
        for (f, go) in cases {
            assert_eq!(format_float_g(f), go, "{f:e}");
        }
    }

    #[test]
    fn exponent_form_pads_the_exponent_to_the_digits_asked_for() {
        assert_eq!(exponent_form(1e21, 1), "1e+21");
        assert_eq!(exponent_form(1e-7, 1), "1e-7");
        assert_eq!(exponent_form(1e-7, 2), "1e-07");
        assert_eq!(exponent_form(-1.5e300, 2), "-1.5e+300");
    }
}
