//! `int()` and `float()` as go.starlark.net has them: which strings they
//! accept (no whitespace; `_` in floats only between digits; `0x`/`0o`/`0b`
//! prefixes in ints only with base 0 or the matching base) and Go's
//! messages. They replace starlark-rust's own, which accept more and word
//! their errors differently.

use anyhow::anyhow;
use num_bigint::{BigInt, BigUint};
use num_traits::{FromPrimitive, ToPrimitive};
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::dict::DictRef;
use starlark::values::float::StarlarkFloat;
use starlark::values::tuple::UnpackTuple;
use starlark::values::{Heap, UnpackValue, Value, ValueLike};

use crate::go::args::GoArgs;
use crate::go::types::go_type;
use crate::values::text::int_of;

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// Converts a number, bool or string to an int, as go.starlark.net does.
    ///
    /// `int(x)` truncates a float towards zero and reads a string as a
    /// decimal literal with an optional sign. `int(s, base)` reads `s` in
    /// `base` (2 to 36); base 0 takes the base from a `0x`, `0o` or `0b`
    /// prefix and rejects other leading zeros.
    ///
    /// # Example
    /// ```python
    /// int("42"), int(-1.9), int("ff", 16), int("0x1f", 0)  # 42, -1, 255, 31
    /// ```
    fn int<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let call = GoArgs::new("int", args, kwargs);
        let bound = call.bind(&["x", "base?"], true, |_, _| Ok(()))?;
        let x = bound[0].unwrap_or_else(|| heap.alloc(0));
        let base = bound[1];
        if let Some(s) = x.unpack_str() {
            let base = match base {
                None => 10,
                Some(b) => {
                    let b = i32::unpack_value(b)
                        .ok()
                        .flatten()
                        .filter(|_| b.get_type() == "int")
                        .ok_or_else(|| anyhow!("int: for base, got {}, want int", go_type(b)))?;
                    if b != 0 && !(2..=36).contains(&b) {
                        return Err(anyhow!("int: base must be an integer >= 2 && <= 36"));
                    }
                    b.unsigned_abs()
                }
            };
            return parse_int(s, base)
                .map(|i| heap.alloc(i))
                .ok_or_else(|| anyhow!("int: invalid literal with base {base}: {s}"));
        }
        if base.is_some() {
            return Err(anyhow!("int: can't convert non-string with explicit base"));
        }
        if let Some(b) = x.unpack_bool() {
            return Ok(heap.alloc(i32::from(b)));
        }
        if int_of(x).is_some() {
            return Ok(x);
        }
        if let Some(f) = x.downcast_ref::<StarlarkFloat>() {
            return float_to_int(f.0).map(|i| heap.alloc(i));
        }
        Err(anyhow!("int: cannot convert {} to int", go_type(x)))
    }

    /// Converts a number, bool or string to a float, as go.starlark.net
    /// does.
    ///
    /// Strings are Go float literals (`1.5`, `1e3`, `1_000.5`, `0x1p-2`) or
    /// `inf`, `infinity` and `nan` with an optional sign, in any case. An
    /// int too large for a float, or a literal beyond the float range, is an
    /// error. `float()` is `0.0`.
    ///
    /// # Example
    /// ```python
    /// float("1.5"), float(2), float("-inf")  # 1.5, 2.0, float("-inf")
    /// ```
    fn float<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
    ) -> anyhow::Result<StarlarkFloat> {
        if !kwargs.is_empty() {
            return Err(anyhow!("float does not accept keyword arguments"));
        }
        let x = match args.items.as_slice() {
            [] => return Ok(StarlarkFloat(0.0)),
            [x] => *x,
            more => return Err(anyhow!("float got {} arguments, wants 1", more.len())),
        };
        if let Some(b) = x.unpack_bool() {
            return Ok(StarlarkFloat(if b { 1.0 } else { 0.0 }));
        }
        if let Some(i) = int_of(x) {
            return match i.to_f64() {
                Some(f) if f.is_finite() => Ok(StarlarkFloat(f)),
                _ => Err(anyhow!("int too large to convert to float")),
            };
        }
        if let Some(f) = x.downcast_ref::<StarlarkFloat>() {
            return Ok(StarlarkFloat(f.0));
        }
        let Some(s) = x.unpack_str() else {
            return Err(anyhow!("float got {}, want number or string", go_type(x)));
        };
        if s.is_empty() {
            return Err(anyhow!("float: empty string"));
        }
        if let Some(f) = special_float(s) {
            return Ok(StarlarkFloat(f));
        }
        match parse_float(s) {
            Some(f) if f.is_infinite() => Err(anyhow!("floating-point number too large")),
            Some(f) => Ok(StarlarkFloat(f)),
            None => Err(anyhow!("invalid float literal: {s}")),
        }
    }
}

/// A finite float truncated towards zero; Go's errors for the others.
fn float_to_int(f: f64) -> anyhow::Result<BigInt> {
    if f.is_nan() {
        return Err(anyhow!("int: cannot convert float NaN to integer"));
    }
    if f.is_infinite() {
        return Err(anyhow!("int: cannot convert float infinity to integer"));
    }
    // Every float this large is a whole number, exactly an int.
    let whole = f.trunc();
    Ok(BigInt::from_f64(whole).unwrap_or_default())
}

/// go.starlark.net's `parseInt`: an optional sign, an optional base prefix
/// (taken when `base` is 0 or matches it), then digits of the base.
fn parse_int(s: &str, base: u32) -> Option<BigInt> {
    let (negative, mut digits) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let mut base = base;
    let bytes = digits.as_bytes();
    if bytes.len() > 1 && bytes[0] == b'0' {
        let prefix = match bytes.get(1) {
            Some(b'o' | b'O') if bytes.len() > 2 => 8,
            Some(b'x' | b'X') if bytes.len() > 2 => 16,
            Some(b'b' | b'B') if bytes.len() > 2 => 2,
            _ => 0,
        };
        if prefix != 0 {
            if base == 0 || base == prefix {
                base = prefix;
                digits = &digits[2..];
            }
        } else if base == 0 {
            // With the base taken from the text, a leading zero must be
            // followed by zeros only.
            return bytes[1..].iter().all(|&b| b == b'0').then(BigInt::default);
        }
    }
    if base == 0 {
        base = 10;
    }
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(base)) {
        return None;
    }
    let magnitude = BigUint::parse_bytes(digits.as_bytes(), base)?;
    let value = BigInt::from(magnitude);
    Some(if negative { -value } else { value })
}

/// `inf`, `infinity` and `nan` with an optional sign (`-nan` is NaN), in
/// any case.
fn special_float(s: &str) -> Option<f64> {
    let (sign, word) = match s.as_bytes().first() {
        Some(b'+') => (1.0, &s[1..]),
        Some(b'-') => (-1.0, &s[1..]),
        _ => (1.0, s),
    };
    if word.eq_ignore_ascii_case("inf") || word.eq_ignore_ascii_case("infinity") {
        Some(sign * f64::INFINITY)
    } else if word.eq_ignore_ascii_case("nan") {
        Some(f64::NAN)
    } else {
        None
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for finite literals: decimal with an
/// optional exponent, or hexadecimal with a `p` exponent; `_` only between
/// digits (or after a base prefix). Out-of-range values come back infinite.
fn parse_float(s: &str) -> Option<f64> {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let hex = body.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x"));
    if body.contains('_') && !underscores_ok(body, hex) {
        return None;
    }
    let body = body.replace('_', "");
    let magnitude = if hex {
        parse_hex_float(&body[2..])?
    } else {
        let valid = {
            let (mantissa, exponent) = match body.find(['e', 'E']) {
                Some(at) => (&body[..at], Some(&body[at + 1..])),
                None => (body.as_str(), None),
            };
            let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
            let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
            (!int.is_empty() || !frac.is_empty())
                && digits(int)
                && digits(frac)
                && exponent.is_none_or(|e| {
                    let e = e.strip_prefix(['+', '-']).unwrap_or(e);
                    !e.is_empty() && digits(e)
                })
        };
        if !valid {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// Go's rule for `_` in a number literal: each one sits between two
/// digits, or between the base prefix and a digit.
fn underscores_ok(body: &str, hex: bool) -> bool {
    let bytes = body.as_bytes();
    let start = if hex { 2 } else { 0 };
    let is_digit = |b: u8| {
        if hex {
            b.is_ascii_hexdigit()
        } else {
            b.is_ascii_digit()
        }
    };
    bytes.iter().enumerate().skip(start).all(|(i, &b)| {
        if b != b'_' {
            return true;
        }
        let before_ok = if i == start {
            hex
        } else {
            is_digit(bytes[i - 1])
        };
        before_ok && bytes.get(i + 1).is_some_and(|&next| is_digit(next))
    })
}

/// The magnitude of a hexadecimal float after `0x`: hex digits with an
/// optional point, then a required binary exponent `p±n`.
fn parse_hex_float(text: &str) -> Option<f64> {
    let at = text.find(['p', 'P'])?;
    let (mantissa, exponent) = (&text[..at], &text[at + 1..]);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let digits = format!("{int}{frac}");
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let exponent: i64 = {
        let e = exponent.strip_prefix('+').unwrap_or(exponent);
        if e.trim_start_matches('-').is_empty()
            || !e
                .trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        e.parse().unwrap_or(if e.starts_with('-') {
            i64::MIN / 2
        } else {
            i64::MAX / 2
        })
    };
    let mantissa = BigUint::parse_bytes(digits.as_bytes(), 16)?.to_f64()?;
    // mantissa * 2^shift, in steps that stay within the float range.
    let mut shift = exponent.saturating_sub(4 * i64::try_from(frac.len()).ok()?);
    let mut value = mantissa;
    while shift != 0 && value != 0.0 && value.is_finite() {
        let step = shift.clamp(-1000, 1000);
        value *= 2f64.powi(i32::try_from(step).ok()?);
        shift -= step;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{parse_float, parse_int, special_float};
    use crate::testing::replay_go_vectors;

    proptest! {
        /// `int()` passes base 0 or 2 to 36; any text, ASCII or not, is
        /// answered without a panic.
        #[test]
        fn parsing_never_panics(s in "[-+0-9a-fA-FxXoObBpPeE_. \u{2028}é]{0,12}", base in prop_oneof![Just(0u32), 2u32..=36]) {
            let _ = parse_int(&s, base);
            let _ = parse_float(&s);
            let _ = special_float(&s);
        }
    }

    /// The calls of `tests/compat/conversions.txt` give what go.starlark.net
    /// gave (recorded by `tools/gostarlark cases`), errors word for word.
    #[test]
    fn conversions_match_the_recorded_go_results() {
        let (total, wrong) = replay_go_vectors("conversions.txt");
        assert!(
            wrong.is_empty(),
            "{} of {total} calls differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}
