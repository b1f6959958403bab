//! Go's text for numbers, as the reference's JSON and YAML steps write them.

use crate::go::float::ExponentDigits;

/// Go's `encoding/json` text of a finite float: fixed notation with the
/// shortest digits, or exponent notation (`1e-7`, `1e+21`) below 1e-6 or
/// from 1e21 on.
pub(super) fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let (negative, digits, exp) = crate::go::float::shortest_digits(f);
    let exponent = (!(1e-6..1e21).contains(&abs)).then_some(ExponentDigits::AtLeastTwoWhenPositive);
    crate::go::float::layout(negative, &digits, exp, exponent)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, which sigs.k8s.io/yaml uses
/// for float map keys, with go-yaml's names for the non-finite values.
pub(super) fn format_g32(f: f64) -> String {
    // As Go does, in 32 bits first: past f32's range a finite key is an
    // infinity too.
    #[allow(clippy::cast_possible_truncation)]
    let x = f as f32;
    if x.is_nan() {
        return ".nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { ".inf" } else { "-.inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let (negative, digits, exp) = crate::go::float::shortest_digits_f32(x);
    crate::go::float::layout_g(negative, &digits, exp)
}
