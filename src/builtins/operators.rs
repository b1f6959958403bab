//! Operator redirections. The compiler rewrites `a * b`, `a + b`, `a % b`,
//! `a << b`, `a / b`, `a // b` and `a >> b` into calls of these functions
//! (names scripts cannot spell: the pre-pass refuses the `_sl_` prefix).
//!
//! * `*` and `+`: repeats and concatenations that would exhaust memory fail
//!   with an error instead of aborting the process. starlark-rust checks its
//!   own heap limit only every 1000 ticks, which a handful of doublings
//!   outruns; here the projected size of the result is checked before it is
//!   allocated.
//! * `%` with a string on the left interpolates as go.starlark.net does
//!   (`%c`, `%i`, `%(key)s`, Go's float and string text).
//! * `<<` shifts ints with arbitrary precision and Go's limits, where
//!   starlark-rust 0.14.2 wraps at 32 bits.
//! * `/`, `//` and `>>` are the interpreter's, but fail in Go's words on a
//!   zero divisor and on a negative or out-of-range shift count (where
//!   starlark-rust shifts by any count).

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::float::StarlarkFloat;
use starlark::values::{Value, ValueLike};

use crate::go::types::go_type;
use crate::meter::Meter;
use crate::values::text::{self, FormatError};

/// The most elements a repeat may produce: Go's cap.
const MAX_ELEMENTS: u64 = 1 << 30;

/// The binary operators redirected, and the functions they call.
/// The ordered comparisons are in `compare.rs`.
pub const REDIRECTS: [(&str, &str); 11] = [
    ("*", "_sl_mul"),
    ("+", "_sl_add"),
    ("%", "_sl_mod"),
    ("<<", "_sl_shl"),
    ("/", "_sl_div"),
    ("//", "_sl_floordiv"),
    (">>", "_sl_shr"),
    ("<", "_sl_lt"),
    ("<=", "_sl_le"),
    (">", "_sl_gt"),
    (">=", "_sl_ge"),
];

/// Go's largest left-shift count, plus one.
const MAX_SHIFT: u32 = 512;

/// A sequence's element count and the bytes one element takes.
fn sequence(v: Value) -> Option<(u64, u64)> {
    match v.get_type() {
        "string" => v.unpack_str().map(|s| (s.len() as u64, 1)),
        "bytes" | "list" | "tuple" => {
            let per = if v.get_type() == "bytes" { 1 } else { 8 };
            v.length()
                .ok()
                .map(|n| (u64::try_from(n).unwrap_or(0), per))
        }
        _ => None,
    }
}

/// Fails when a result of `bytes` would take the run past its heap limit.
fn check_heap(bytes: u64, what: impl FnOnce() -> String) -> anyhow::Result<()> {
    Meter::reserve(usize::try_from(bytes).unwrap_or(usize::MAX)).map_err(|over| {
        anyhow!(
            "{} would exceed the script's memory budget ({} MiB); raise --max-heap-mib (STARLARK_MAX_HEAP_MIB) if it needs more",
            what(),
            over.limit >> 20
        )
    })
}

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// `a * b`, refusing repeats beyond Go's cap or the memory limit.
    fn _sl_mul<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        // Only a sequence and an int repeat; the count is looked at then.
        let repeat = match (sequence(a), sequence(b)) {
            (Some(seq), _) => text::int_of(b).map(|n| (a, seq, n)),
            (None, Some(seq)) => text::int_of(a).map(|n| (b, seq, n)),
            (None, None) => None,
        };
        // A product of big ints takes as many bits as both factors.
        if repeat.is_none()
            && a.get_type() == "int"
            && b.get_type() == "int"
            && (a.unpack_i32().is_none() || b.unpack_i32().is_none())
            && let (Some(x), Some(y)) = (text::int_of(a), text::int_of(b))
        {
            let bits = x.bits().saturating_add(y.bits());
            check_heap(bits / 8, || format!("an int of {bits} bits"))
                .map_err(starlark::Error::new_other)?;
        }
        // Go's checks, in its order: an empty sequence repeats to an empty
        // one whatever the count, the count must fit 32 bits, the result
        // 2^30 elements.
        if let Some((empty, (0, _), _)) = repeat {
            return empty.mul(eval.heap().alloc(0), eval.heap());
        }
        if let Some((_, (len, per), n)) = repeat {
            let Ok(n) = i32::try_from(&n) else {
                return Err(starlark::Error::new_other(anyhow!(
                    "repeat count {n} too large"
                )));
            };
            if n > 0 {
                let n = u64::from(n.unsigned_abs());
                let elements = len.saturating_mul(n);
                if elements >= MAX_ELEMENTS {
                    return Err(starlark::Error::new_other(anyhow!(
                        "excessive repeat ({len} * {n} elements)"
                    )));
                }
                check_heap(elements.saturating_mul(per), || {
                    format!("repeat ({len} * {n} elements)")
                })
                .map_err(starlark::Error::new_other)?;
            }
        }
        a.mul(b, eval.heap())
    }

    /// `a + b`, refusing concatenations beyond the memory limit.
    fn _sl_add<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        if let (Some((x, per)), Some((y, _))) = (sequence(a), sequence(b)) {
            check_heap((x + y).saturating_mul(per), || {
                format!("concatenation ({x} + {y} elements)")
            })
            .map_err(starlark::Error::new_other)?;
        }
        a.add(b, eval.heap())
    }

    /// `a % b`: Go's string interpolation when `a` is a string, and Go's
    /// float remainder (which keeps the sign of zero) when a number is a
    /// float.
    fn _sl_mod<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        let Some(format) = a.unpack_str() else {
            if let Some(remainder) = float_remainder(a, b) {
                return remainder
                    .map(|r| eval.heap().alloc(StarlarkFloat(r)))
                    .map_err(|e| starlark::Error::new_other(anyhow!(e)));
            }
            return a.percent(b, eval.heap());
        };
        match text::interpolate(format, b, &text::renderer(eval)) {
            Ok(s) => Ok(eval.heap().alloc(s)),
            Err(FormatError::Go(message)) => Err(starlark::Error::new_other(anyhow!(message))),
            Err(FormatError::TooLong) => Err(starlark::Error::new_other(text::too_long(
                eval,
                "string interpolation",
            ))),
        }
    }

    /// `a << b`: ints shift with arbitrary precision; Go refuses a negative
    /// count and a count of 512 or more.
    fn _sl_shl<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        let (Some(x), Some(count)) = (text::int_of(a), text::int_of(b)) else {
            return a.left_shift(b, eval.heap());
        };
        let fail = |message: String| Err(starlark::Error::new_other(anyhow!(message)));
        let Ok(count) = i32::try_from(&count) else {
            return fail(format!("{count} out of range"));
        };
        if count < 0 {
            return fail(format!("negative shift count: {count}"));
        }
        let count = count.unsigned_abs();
        if count >= MAX_SHIFT {
            return fail(format!("shift count too large: {count}"));
        }
        let shifted = x << count;
        Ok(match i64::try_from(&shifted) {
            Ok(small) => eval.heap().alloc(small),
            Err(_) => eval.heap().alloc(shifted),
        })
    }

    /// `a / b`: the interpreter's division, failing in Go's words when a
    /// number is divided by zero.
    fn _sl_div<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        if !is_number(a) || !is_number(b) {
            return Err(unknown_op(a, "/", b));
        }
        if is_zero(b) {
            return Err(starlark::Error::new_other(anyhow!(
                "floating-point division by zero"
            )));
        }
        a.div(b, eval.heap())
    }

    /// `a // b`: the interpreter's floored division, failing in Go's words
    /// when a number is divided by zero.
    fn _sl_floordiv<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        if !is_number(a) || !is_number(b) {
            return Err(unknown_op(a, "//", b));
        }
        if is_zero(b) {
            return Err(starlark::Error::new_other(anyhow!(
                "floored division by zero"
            )));
        }
        a.floor_div(b, eval.heap())
    }

    /// `a >> b`: the interpreter's right shift of ints, with Go's checks of
    /// the count (a 32-bit, non-negative int).
    fn _sl_shr<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        if a.get_type() != "int" || b.get_type() != "int" {
            return Err(unknown_op(a, ">>", b));
        }
        let fail = |message: String| Err(starlark::Error::new_other(anyhow!(message)));
        match b.unpack_i32() {
            None => fail(format!("{} out of range", b.to_str())),
            Some(n) if n < 0 => fail(format!("negative shift count: {n}")),
            Some(_) => a.right_shift(b, eval.heap()),
        }
    }
}

/// go.starlark.net's error for operands an operator does not take.
fn unknown_op(a: Value, op: &str, b: Value) -> starlark::Error {
    starlark::Error::new_other(anyhow!(
        "unknown binary op: {} {op} {}",
        go_type(a),
        go_type(b)
    ))
}

/// Whether `v` is an int or a float.
fn is_number(v: Value) -> bool {
    matches!(v.get_type(), "int" | "float")
}

/// Whether `v` is the int 0 or a float zero.
fn is_zero(v: Value) -> bool {
    match v.get_type() {
        "int" => v.unpack_i32() == Some(0),
        "float" => v
            .downcast_ref::<StarlarkFloat>()
            .is_some_and(|f| f.0 == 0.0),
        _ => false,
    }
}

/// go.starlark.net's `x % y` when one of two numbers is a float: `fmod`,
/// moved into the divisor's sign unless it is zero. `None` when `a % b` is
/// something else.
fn float_remainder(a: Value, b: Value) -> Option<Result<f64, &'static str>> {
    let is_float = |v: Value| v.downcast_ref::<StarlarkFloat>().is_some();
    if !is_float(a) && !is_float(b) {
        return None;
    }
    let (dividend, divisor) = (text::as_float(a)?, text::as_float(b)?);
    if divisor == 0.0 {
        return Some(Err("floating-point modulo by zero"));
    }
    let mut remainder = dividend % divisor;
    if remainder != 0.0 && (remainder < 0.0) != (divisor < 0.0) {
        remainder += divisor;
    }
    Some(Ok(remainder))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{assert_fails, run};

    /// `x /= y`, `x //= y` and `x >>= y` on a name go through the same
    /// redirections as the operators.
    #[test]
    fn augmented_division_and_shift_use_go_rules() {
        let dxr = run(concat!(
            "def f():\n",
            "    x = 7\n    x //= 2\n    y = 1.0\n    y /= 4\n    z = -9\n    z >>= 1\n",
            "    return [x, y, z]\n",
            "dxr[\"v\"] = f()\n",
        ))
        .unwrap();
        let json = function_sdk_rust::resource::struct_to_json(&dxr);
        assert_eq!(json["v"], json!([3, 0.25, -5]));
        for (statement, error) in [
            ("x /= 0", "floating-point division by zero"),
            ("x //= 0.0", "floored division by zero"),
            ("x >>= -2", "negative shift count: -2"),
        ] {
            assert_fails(
                &format!("def f():\n    x = 1\n    {statement}\nf()\n"),
                error,
            );
        }
    }
    /// The divisions and shifts of `tests/compat/arithmetic.txt` give what
    /// go.starlark.net gave (recorded by `tools/gostarlark cases`).
    #[test]
    fn arithmetic_matches_the_recorded_go_results() {
        let (total, wrong) = crate::testing::replay_go_vectors("arithmetic.txt");
        assert!(
            wrong.is_empty(),
            "{} of {total} expressions differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}
