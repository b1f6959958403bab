//! A faithful port of Go's `time.ParseDuration`.
//!
//! Results and error message texts match Go's `time` package exactly,
//! because users of the Go implementation of this function see those texts.
//! The algorithm mirrors `ParseDuration`, `leadingInt`, `leadingFraction` and
//! `quote` from Go's `time/format.go`, including its unsigned 64-bit
//! arithmetic, its float64 handling of fractions and its overflow checks.

use std::fmt;
use std::fmt::Write as _;

/// An error from [`parse_go_duration`]; the message is identical to Go's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError(pub String);

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DurationError {}

/// 1<<63 as an unsigned value, the magnitude of the most negative duration.
const ONE_SHL_63: u64 = 1 << 63;

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// Go's `unitMap`.
fn unit_nanos(unit: &str) -> Option<u64> {
    match unit {
        "ns" => Some(NANOSECOND),
        // `us`, the micro sign and the Greek small letter mu.
        "us" | "\u{00B5}s" | "\u{03BC}s" => Some(MICROSECOND),
        "ms" => Some(MILLISECOND),
        "s" => Some(SECOND),
        "m" => Some(MINUTE),
        "h" => Some(HOUR),
        _ => None,
    }
}

/// Go's `time.quote`: double quotes, `"` and `\` backslash-escaped, and every
/// byte of a non-ASCII or control (< 0x20) character written as `\xNN`.
/// (This is what the `time` package really does; it is not `strconv.Quote`.)
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if (c as u32) >= 0x80 || c < ' ' {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "\\x{b:02x}");
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

fn invalid(orig: &str) -> DurationError {
    DurationError(format!("time: invalid duration {}", quote(orig)))
}

/// Go's `leadingInt`: consumes leading ASCII digits. Returns `None` on
/// overflow (value above 1<<63), otherwise the value and the remainder.
fn leading_int(s: &[u8]) -> Option<(u64, &[u8])> {
    let mut x: u64 = 0;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if !c.is_ascii_digit() {
            break;
        }
        if x > ONE_SHL_63 / 10 {
            return None;
        }
        // x <= (1<<63)/10, so x*10 + 9 cannot overflow u64.
        x = x * 10 + u64::from(c - b'0');
        if x > ONE_SHL_63 {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Go's `leadingFraction`: consumes leading ASCII digits; once the value
/// would overflow it stops accumulating precision but keeps consuming digits.
#[allow(clippy::many_single_char_names, clippy::cast_precision_loss)]
fn leading_fraction(s: &[u8]) -> (u64, f64, &[u8]) {
    let mut x: u64 = 0;
    let mut scale: f64 = 1.0;
    let mut overflow = false;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if !c.is_ascii_digit() {
            break;
        }
        i += 1;
        if overflow {
            continue;
        }
        if x > (ONE_SHL_63 - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > ONE_SHL_63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[i..])
}

/// Parses a Go duration string (`"90s"`, `"1h30m"`, `"1.5h"`, `"-250ms"`, `"0"`) into signed nanoseconds.
///
/// Accepts `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with units `ns`, `us`, `µs`
/// (U+00B5), `μs` (U+03BC), `ms`, `s`, `m`, `h`, exactly like Go's
/// `time.ParseDuration`, and returns Go's error texts on failure.
// The arithmetic mirrors Go's uint64/float64 steps bit for bit, casts included.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::cast_possible_wrap,
    clippy::many_single_char_names
)]
pub fn parse_go_duration(s: &str) -> Result<i64, DurationError> {
    let orig = s;
    let mut s = s.as_bytes();
    let mut d: u64 = 0;
    let mut neg = false;

    // Consume [-+]?
    if let Some(&c) = s.first()
        && (c == b'-' || c == b'+')
    {
        neg = c == b'-';
        s = &s[1..];
    }
    // Special case: if all that is left is "0", this is zero.
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid(orig));
    }
    while let Some(&first) = s.first() {
        let mut f: u64 = 0; // digits after the decimal point
        let mut scale: f64 = 1.0; // value = v + f/scale

        // The next character must be [0-9.]
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid(orig));
        }
        // Consume [0-9]*
        let pl = s.len();
        let (mut v, rest) = leading_int(s).ok_or_else(|| invalid(orig))?;
        s = rest;
        let pre = pl != s.len(); // whether we consumed anything before a period

        // Consume (\.[0-9]*)?
        let mut post = false;
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let pl = s.len();
            let (fx, fscale, rest) = leading_fraction(s);
            f = fx;
            scale = fscale;
            s = rest;
            post = pl != s.len();
        }
        if !pre && !post {
            // no digits (e.g. ".s" or "-.s")
            return Err(invalid(orig));
        }

        // Consume unit: everything up to the next '.' or digit.
        let i = s
            .iter()
            .position(|&c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if i == 0 {
            return Err(DurationError(format!(
                "time: missing unit in duration {}",
                quote(orig)
            )));
        }
        let (u_bytes, rest) = s.split_at(i);
        s = rest;
        // The unit ends at an ASCII byte or at the end of the input, so it is
        // always valid UTF-8; fall back to lossy conversion just in case.
        let u = String::from_utf8_lossy(u_bytes);
        let Some(unit) = unit_nanos(&u) else {
            return Err(DurationError(format!(
                "time: unknown unit {} in duration {}",
                quote(&u),
                quote(orig)
            )));
        };
        if v > ONE_SHL_63 / unit {
            return Err(invalid(orig));
        }
        v *= unit;
        if f > 0 {
            // float64 is needed to be nanosecond accurate for fractions of hours.
            // The product is at most 3.6e12 (ns per hour), so the truncating
            // conversion is in range and v (<= 1<<63) cannot overflow u64.
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > ONE_SHL_63 {
                return Err(invalid(orig));
            }
        }
        // Go adds in uint64 with wrap-around (d, v <= 1<<63, so only
        // 1<<63 + 1<<63 wraps, to 0); reproduce that exactly.
        d = d.wrapping_add(v);
        if d > ONE_SHL_63 {
            return Err(invalid(orig));
        }
    }
    if neg {
        // -Duration(d) in Go; d <= 1<<63, so this yields i64::MIN at most.
        return Ok((d as i64).wrapping_neg());
    }
    if d > ONE_SHL_63 - 1 {
        return Err(invalid(orig));
    }
    Ok(d as i64)
}

/// Converts signed nanoseconds to a protobuf-style (seconds, nanos) pair with the sign on both (like Go's durationpb: nanos has the same sign as seconds).
pub fn to_seconds_nanos(nanos: i64) -> (i64, i32) {
    const NANOS_PER_SECOND: i64 = 1_000_000_000;
    let secs = nanos / NANOS_PER_SECOND;
    let rem = nanos % NANOS_PER_SECOND; // truncated: same sign as `nanos`, |rem| < 1e9
    (secs, rem as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> i64 {
        match parse_go_duration(s) {
            Ok(v) => v,
            Err(e) => panic!("expected {s:?} to parse, got error: {e}"),
        }
    }

    fn err(s: &str) -> String {
        match parse_go_duration(s) {
            Ok(v) => panic!("expected {s:?} to fail, got {v}"),
            Err(e) => e.to_string(),
        }
    }

    const S: i64 = 1_000_000_000;
    const MIN: i64 = 60 * S;
    const H: i64 = 60 * MIN;

    #[test]
    fn a_bare_zero_is_zero() {
        assert_eq!(ok("0"), 0);
    }

    #[test]
    fn a_signed_zero_is_zero() {
        assert_eq!(ok("+0"), 0);
        assert_eq!(ok("-0"), 0);
    }

    #[test]
    fn zero_with_a_unit_is_zero() {
        assert_eq!(ok("0s"), 0);
        assert_eq!(ok("-0h"), 0);
    }

    #[test]
    fn seconds_parse() {
        assert_eq!(ok("5s"), 5 * S);
        assert_eq!(ok("90s"), 90 * S);
    }

    #[test]
    fn milliseconds_parse() {
        assert_eq!(ok("300ms"), 300_000_000);
        assert_eq!(ok("-250ms"), -250_000_000);
    }

    #[test]
    fn a_negative_fractional_hour_parses() {
        assert_eq!(ok("-1.5h"), -(H + 30 * MIN));
        assert_eq!(ok("1.5h"), 5_400_000_000_000);
    }

    #[test]
    fn multiple_components_add_up() {
        assert_eq!(ok("1h30m"), H + 30 * MIN);
        assert_eq!(ok("2h45m30.5s"), 2 * H + 45 * MIN + 30 * S + 500_000_000);
        assert_eq!(ok("1s1s"), 2 * S);
    }

    #[test]
    fn all_three_microsecond_spellings_parse() {
        assert_eq!(ok("1\u{00B5}s"), 1_000);
        assert_eq!(ok("1\u{03BC}s"), 1_000);
        assert_eq!(ok("1us"), 1_000);
    }

    #[test]
    fn nanoseconds_parse() {
        assert_eq!(ok("100ns"), 100);
    }

    #[test]
    fn a_leading_dot_fraction_parses() {
        assert_eq!(ok(".5s"), 500_000_000);
    }

    #[test]
    fn a_trailing_dot_without_fraction_digits_parses() {
        assert_eq!(ok("1.s"), S);
        assert_eq!(ok("1.h"), H);
    }

    #[test]
    fn a_number_without_a_unit_is_missing_its_unit() {
        assert_eq!(err("10"), r#"time: missing unit in duration "10""#);
    }

    #[test]
    fn a_trailing_number_without_a_unit_quotes_the_whole_input() {
        assert_eq!(err("1h10"), r#"time: missing unit in duration "1h10""#);
        assert_eq!(err("-1.5"), r#"time: missing unit in duration "-1.5""#);
    }

    #[test]
    fn an_unknown_unit_is_reported_with_the_input() {
        assert_eq!(err("10x"), r#"time: unknown unit "x" in duration "10x""#);
        assert_eq!(err("1d"), r#"time: unknown unit "d" in duration "1d""#);
        assert_eq!(err("1 s"), r#"time: unknown unit " s" in duration "1 s""#);
    }

    #[test]
    fn an_empty_string_is_invalid() {
        assert_eq!(err(""), r#"time: invalid duration """#);
    }

    #[test]
    fn letters_alone_are_invalid() {
        assert_eq!(err("abc"), r#"time: invalid duration "abc""#);
    }

    #[test]
    fn a_dot_without_digits_is_invalid() {
        assert_eq!(err(".s"), r#"time: invalid duration ".s""#);
        assert_eq!(err("-.s"), r#"time: invalid duration "-.s""#);
        assert_eq!(err("."), r#"time: invalid duration ".""#);
    }

    #[test]
    fn a_lone_sign_is_invalid() {
        assert_eq!(err("-"), r#"time: invalid duration "-""#);
        assert_eq!(err("+"), r#"time: invalid duration "+""#);
    }

    #[test]
    fn a_doubled_sign_is_invalid() {
        assert_eq!(err("++1s"), r#"time: invalid duration "++1s""#);
        assert_eq!(err("-+1s"), r#"time: invalid duration "-+1s""#);
    }

    #[test]
    fn surrounding_whitespace_is_invalid() {
        assert_eq!(err(" 1s"), r#"time: invalid duration " 1s""#);
        assert_eq!(err("1s "), r#"time: unknown unit "s " in duration "1s ""#);
    }

    #[test]
    fn the_largest_positive_value_parses() {
        assert_eq!(ok("9223372036854775807ns"), i64::MAX);
    }

    #[test]
    fn one_past_the_largest_positive_value_is_invalid() {
        assert_eq!(
            err("9223372036854775808ns"),
            r#"time: invalid duration "9223372036854775808ns""#
        );
    }

    #[test]
    fn the_most_negative_value_parses() {
        assert_eq!(ok("-9223372036854775808ns"), i64::MIN);
    }

    #[test]
    fn one_past_the_most_negative_value_is_invalid() {
        assert_eq!(
            err("-9223372036854775809ns"),
            r#"time: invalid duration "-9223372036854775809ns""#
        );
    }

    #[test]
    fn too_many_integer_digits_are_invalid() {
        assert_eq!(
            err("100000000000000000000ns"),
            r#"time: invalid duration "100000000000000000000ns""#
        );
    }

    #[test]
    fn the_largest_whole_hour_count_parses() {
        assert_eq!(ok("2562047h"), 2_562_047 * H);
    }

    #[test]
    fn one_more_hour_overflows() {
        assert_eq!(err("2562048h"), r#"time: invalid duration "2562048h""#);
    }

    #[test]
    fn overflow_across_components_is_invalid() {
        assert_eq!(
            err("9223372036854775807ns1ns"),
            r#"time: invalid duration "9223372036854775807ns1ns""#
        );
        assert_eq!(ok("-9223372036854775807ns1ns"), i64::MIN);
    }

    #[test]
    fn go_wraparound_when_two_components_are_each_two_to_the_63_is_reproduced() {
        // Go's uint64 sum wraps to 0 here and Go returns 0 without an error.
        assert_eq!(ok("9223372036854775808ns9223372036854775808ns"), 0);
    }

    #[test]
    fn fractions_below_one_nanosecond_are_truncated() {
        assert_eq!(ok("1.0000000001s"), S);
        assert_eq!(ok("1.9999999999ns"), 1);
        assert_eq!(ok("-1.9999999999ns"), -1);
    }

    #[test]
    fn fractional_hours_use_go_float_arithmetic() {
        // uint64(float64(3333333333333333333) * (3.6e12 / 1e19)) in Go rounds
        // up to a whole 1/3 hour rather than truncating to ...999.
        assert_eq!(ok("0.3333333333333333333h"), 1_200_000_000_000);
        assert_eq!(ok("0.333333333h"), 1_199_999_998_800);
        assert_eq!(ok("0.1h"), 360_000_000_000);
    }

    #[test]
    fn excess_fraction_digits_are_ignored() {
        assert_eq!(ok("0.12345678901234567890123456789s"), 123_456_789);
        // Only 19 fraction digits are kept; float64(9999999999999999999) is
        // 1e19, so Go's arithmetic turns the fraction into a whole nanosecond.
        assert_eq!(ok("1.99999999999999999999999999999ns"), 2);
    }

    #[test]
    fn quoting_escapes_quotes_backslashes_and_non_ascii_like_go() {
        assert_eq!(err("\"1s"), r#"time: invalid duration "\"1s""#);
        assert_eq!(err("1\\"), r#"time: unknown unit "\\" in duration "1\\""#);
        assert_eq!(
            err("1\u{00e9}"),
            r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#
        );
        assert_eq!(err("\t1s"), r#"time: invalid duration "\x091s""#);
    }

    #[test]
    fn the_error_type_displays_its_message() {
        let e = DurationError("time: invalid duration \"x\"".to_string());
        assert_eq!(format!("{e}"), "time: invalid duration \"x\"");
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert_eq!(boxed.to_string(), "time: invalid duration \"x\"");
    }

    #[test]
    fn positive_nanoseconds_split_into_seconds_and_nanos() {
        assert_eq!(to_seconds_nanos(1_500_000_000), (1, 500_000_000));
        assert_eq!(to_seconds_nanos(ok("90s")), (90, 0));
        assert_eq!(to_seconds_nanos(999_999_999), (0, 999_999_999));
    }

    #[test]
    fn negative_nanoseconds_carry_the_sign_on_both_parts() {
        assert_eq!(to_seconds_nanos(ok("-1.5s")), (-1, -500_000_000));
        assert_eq!(to_seconds_nanos(-1), (0, -1));
    }

    #[test]
    fn zero_nanoseconds_split_into_zeros() {
        assert_eq!(to_seconds_nanos(0), (0, 0));
    }

    #[test]
    fn the_extreme_values_split_without_overflow() {
        assert_eq!(to_seconds_nanos(i64::MAX), (9_223_372_036, 854_775_807));
        assert_eq!(to_seconds_nanos(i64::MIN), (-9_223_372_036, -854_775_808));
    }
}
