//! Go's text for numbers, where the reference's messages and values show it.

/// Formats `f` as Go's `strconv.FormatFloat(f, 'g', -1, 64)` (and so `%v`):
/// the shortest digits that round-trip, in exponent form when the decimal
/// exponent is below -4 or at least 6, with a two-digit minimum exponent.
pub fn format_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // Rust's `{:e}` prints the shortest round-tripping digits, like Go's -1.
    let (negative, digits, exp) = shortest_digits(&format!("{f:e}"));
    layout_g(negative, &digits, exp)
}

/// The sign, digits and decimal exponent of Rust's `{:e}` text of a float
/// (the shortest digits that round-trip): `(false, "15", 0)` for 1.5.
pub fn shortest_digits(sci: &str) -> (bool, String, i32) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (negative, digits, exp.parse().unwrap_or(0))
}

/// Lays out shortest `digits` with decimal exponent `exp` as Go's `%g` with
/// precision -1: exponent form when `exp` is below -4 or at least 6, with a
/// two-digit minimum exponent; fixed notation otherwise.
pub fn layout_g(negative: bool, digits: &str, exp: i32) -> String {
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let magnitude = exp.unsigned_abs();
        if magnitude < 10 {
            out.push('0');
        }
        out.push_str(&magnitude.to_string());
    } else if exp >= 0 {
        let int_len = usize::try_from(exp).expect("exp is in 0..6") + 1;
        if digits.len() <= int_len {
            out.push_str(digits);
            out.extend(std::iter::repeat_n('0', int_len - digits.len()));
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    } else {
        out.push_str("0.");
        let zeros = usize::try_from(-exp - 1).expect("exp is in -4..0");
        out.extend(std::iter::repeat_n('0', zeros));
        out.push_str(digits);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn floats_render_like_go_percent_v() {
        let cases = [
            (1e19, "1e+19"),
            (1.5, "1.5"),
            (100.0, "100"),
            (123_456.0, "123456"),
            (1_000_000.0, "1e+06"),
            (123_456_789.0, "1.23456789e+08"),
            (1.999_999_99e7, "1.99999999e+07"),
            (0.0001, "0.0001"),
            (0.000_01, "1e-05"),
            (0.001_25, "0.00125"),
            (-2.5, "-2.5"),
            (5e-324, "5e-324"),
            (1e300, "1e+300"),
            (-0.0, "-0"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (f, want) in cases {
            assert_eq!(format_g(f), want, "{f:e}");
        }
    }
}
