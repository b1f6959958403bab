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
    let (negative, digits, exp) = shortest_digits(f);
    layout_g(negative, &digits, exp)
}

/// The sign, the shortest digits that read back as `f`, and the decimal
/// exponent of the first digit, as Go's strconv finds them: `(false, "15",
/// 0)` for 1.5.
///
/// Rust's `{:e}` finds the same digits, but when two candidates are equally
/// close to `f` it takes the larger one, where Go takes the even one
/// (-1011982295353819.25 is `...819.2` to Go and `...819.3` to Rust). The
/// even one must still read back as `f`: below a power of two the floats
/// are twice as dense, and the lower candidate can belong to the float
/// beneath (2^-24 is `5.960464477539063e-08`, not `...062e-08`).
pub fn shortest_digits(f: f64) -> (bool, String, i32) {
    let (negative, mut digits, exp) = split_exponent(&format!("{f:e}"));
    if let Some(lower) = even_neighbour(&digits)
        && is_midpoint(f.abs(), &digits, exp)
        && scientific(&lower, exp).parse::<f64>() == Ok(f.abs())
    {
        digits = lower;
    }
    (negative, digits, exp)
}

/// [`shortest_digits`] of a 32-bit float.
pub fn shortest_digits_f32(f: f32) -> (bool, String, i32) {
    let (negative, mut digits, exp) = split_exponent(&format!("{f:e}"));
    if let Some(lower) = even_neighbour(&digits)
        && is_midpoint(f64::from(f.abs()), &digits, exp)
        && scientific(&lower, exp).parse::<f32>() == Ok(f.abs())
    {
        digits = lower;
    }
    (negative, digits, exp)
}

/// `digits` with its first digit at 10^`exp`, as text Rust parses.
fn scientific(digits: &str, exp: i32) -> String {
    format!("{}.{}e{exp}", &digits[..1], &digits[1..])
}

/// The sign, digits and exponent of Rust's `{:e}` text.
fn split_exponent(sci: &str) -> (bool, String, i32) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (negative, digits, exp.parse().unwrap_or(0))
}

/// `digits` with its last digit one lower, when that digit is odd: the even
/// candidate a tie would go to. Ties need all the precision there is, so
/// shorter digit strings are left alone.
fn even_neighbour(digits: &str) -> Option<String> {
    let last = *digits.as_bytes().last()?;
    if digits.len() < 15 || last % 2 == 0 {
        return None;
    }
    let mut lower = digits[..digits.len() - 1].to_owned();
    lower.push(char::from(last - 1));
    Some(lower)
}

/// Whether the finite `value` is exactly halfway between `digits` (the
/// first at 10^`exp`) and the number one unit lower in the last digit.
fn is_midpoint(value: f64, digits: &str, exp: i32) -> bool {
    use num_bigint::BigUint;
    let Ok(upper) = digits.parse::<BigUint>() else {
        return false;
    };
    // value = mantissa * 2^two_exp exactly, and the midpoint is
    // (2 * upper - 1) * 10^unit_exp / 2.
    let bits = value.to_bits();
    let biased = i32::try_from((bits >> 52) & 0x7ff).unwrap_or(0);
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, two_exp) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased - 1075)
    };
    let unit_exp = exp - i32::try_from(digits.len()).unwrap_or(0) + 1;
    // Both sides times 2^max(-two_exp, 0) * 10^max(-unit_exp, 0), so that
    // both are integers.
    let twos = u32::try_from(-two_exp).unwrap_or(0);
    let tens = u32::try_from(-unit_exp).unwrap_or(0);
    let ten = BigUint::from(10u8);
    let doubled = (BigUint::from(mantissa) << (1 + two_exp.max(0).unsigned_abs())) * ten.pow(tens);
    let midpoint = ((upper * 2u8 - 1u8) * ten.pow(unit_exp.max(0).unsigned_abs())) << twos;
    doubled == midpoint
}

/// Lays out shortest `digits` with decimal exponent `exp` as Go's `%g` with
/// precision -1: exponent form when `exp` is below -4 or at least 6, with a
/// two-digit minimum exponent; fixed notation otherwise.
pub fn layout_g(negative: bool, digits: &str, exp: i32) -> String {
    let exponent = (!(-4..6).contains(&exp)).then_some(ExponentDigits::AtLeastTwo);
    layout(negative, digits, exp, exponent)
}

/// How many digits an exponent is written with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ExponentDigits {
    /// At least two (`1e+06`, `1e-07`), as `strconv`'s `g` format.
    AtLeastTwo,
    /// At least two when positive, as few as needed when negative (`1e+21`,
    /// `1e-7`), as `encoding/json` writes floats.
    AtLeastTwoWhenPositive,
}

/// Lays out shortest `digits` with decimal exponent `exp`: in exponent form
/// (`d.ddde±XX`) when `exponent` says how, in fixed notation otherwise.
pub fn layout(negative: bool, digits: &str, exp: i32, exponent: Option<ExponentDigits>) -> String {
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if let Some(exponent_digits) = exponent {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let magnitude = exp.unsigned_abs();
        if magnitude < 10 && (exp >= 0 || exponent_digits == ExponentDigits::AtLeastTwo) {
            out.push('0');
        }
        out.push_str(&magnitude.to_string());
    } else if exp >= 0 {
        let int_len = usize::try_from(exp).unwrap_or(0) + 1;
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
        out.extend(std::iter::repeat_n(
            '0',
            usize::try_from(-exp - 1).unwrap_or(0),
        ));
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
            // Halfway between two shortest candidates: Go takes the even one.
            (-1_011_982_295_353_819.2, "-1.0119822953538192e+15"),
            // ... unless the even one reads back as the float below, as at
            // a power of two (found by the float fuzz target).
            (
                f64::from_bits(0x3E70_0000_0000_0000),
                "5.960464477539063e-08",
            ),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (f, want) in cases {
            assert_eq!(format_g(f), want, "{f:e}");
        }
    }

    /// Go's text for each float of `tests/compat/floats.txt` (recorded by
    /// `tools/gofloat`), ties between shortest candidates included.
    #[test]
    fn floats_render_like_the_recorded_go_results() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/compat/floats.txt");
        let text = std::fs::read_to_string(path).unwrap();
        let mut wrong = Vec::new();
        for line in text.lines() {
            let (bits, want) = line.split_once(' ').unwrap();
            let f = f64::from_bits(u64::from_str_radix(bits, 16).unwrap());
            let got = format_g(f);
            if got != want {
                wrong.push(format!("{bits}: want {want}, got {got}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
