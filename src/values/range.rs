//! `range`, as go.starlark.net has it: bounds and step are 64-bit ints
//! (starlark-rust's are 32-bit, so `range(1 << 40)` failed to unpack its
//! argument), the sequence is computed, never stored, and its errors are
//! worded as Go words them.

use std::fmt;

use allocative::Allocative;
use starlark::starlark_simple_value;
use starlark::values::float::StarlarkFloat;
use starlark::values::{
    Heap, NoSerialize, ProvidesStaticType, StarlarkValue, Value, ValueLike, starlark_value,
};

/// An arithmetic sequence of ints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ProvidesStaticType, NoSerialize, Allocative)]
pub struct GoRange {
    start: i64,
    stop: i64,
    step: i64,
}

starlark_simple_value!(GoRange);

impl fmt::Display for GoRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.step != 1 {
            write!(f, "range({}, {}, {})", self.start, self.stop, self.step)
        } else if self.start != 0 {
            write!(f, "range({}, {})", self.start, self.stop)
        } else {
            write!(f, "range({})", self.stop)
        }
    }
}

impl GoRange {
    /// `range(start, stop, step)`; the step must not be zero.
    pub fn new(start: i64, stop: i64, by: i64) -> GoRange {
        debug_assert_ne!(by, 0, "the caller checks the step");
        GoRange {
            start,
            stop,
            step: by,
        }
    }

    /// How many ints the range holds.
    pub fn len(&self) -> u128 {
        let (first, end, by) = (
            i128::from(self.start),
            i128::from(self.stop),
            i128::from(self.step),
        );
        let span = if by > 0 { end - first } else { first - end };
        if span <= 0 {
            return 0;
        }
        (span.unsigned_abs() - 1) / by.unsigned_abs() + 1
    }

    /// Whether the range holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The int at `index` (`index` < `len`).
    fn nth(&self, index: u128) -> i128 {
        i128::from(self.start) + i128::try_from(index).unwrap_or(i128::MAX) * i128::from(self.step)
    }
}

fn error(message: String) -> starlark::Error {
    starlark::Error::new_other(anyhow::anyhow!(message))
}

/// An int value as an `i128`, if it fits.
fn as_i128(v: Value) -> Option<i128> {
    if v.get_type() != "int" {
        return None;
    }
    if let Some(i) = v.unpack_i32() {
        return Some(i128::from(i));
    }
    crate::values::text::int_of(v).and_then(|big| i128::try_from(&big).ok())
}

/// A slice index: absent, or an int that fits 32 bits (Go's rule).
fn slice_index(v: Option<Value>, what: &str) -> starlark::Result<Option<i128>> {
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if v.get_type() != "int" {
        return Err(error(format!(
            "invalid {what} index: got {}, want int",
            v.get_type()
        )));
    }
    match as_i128(v).filter(|i| i32::try_from(*i).is_ok()) {
        Some(i) => Ok(Some(i)),
        None => Err(error(format!(
            "invalid {what} index: {} out of range",
            v.to_str()
        ))),
    }
}

#[starlark_value(type = "range")]
impl<'v> StarlarkValue<'v> for GoRange {
    fn to_bool(&self) -> bool {
        !self.is_empty()
    }

    fn length(&self) -> starlark::Result<i32> {
        let len = self.len();
        if len > i64::MAX as u128 {
            return Err(error("len: value of type range has no len".to_owned()));
        }
        i32::try_from(len).map_err(|_| {
            error(format!(
                "len: a range of {len} ints is longer than this function counts (at most {})",
                i32::MAX
            ))
        })
    }

    fn at(&self, index: Value, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        let len = i128::try_from(self.len()).unwrap_or(i128::MAX);
        let Some(i) = as_i128(index) else {
            return Err(error(format!(
                "range index: got {}, want int",
                index.get_type()
            )));
        };
        let at = if i < 0 { i + len } else { i };
        if at < 0 || at >= len {
            return Err(error(format!(
                "range index {i} out of range [{}:{}]",
                -len,
                len - 1
            )));
        }
        let n = self.nth(at.unsigned_abs());
        Ok(heap.alloc(i64::try_from(n).expect("an element lies between start and stop")))
    }

    fn equals(&self, other: Value) -> starlark::Result<bool> {
        let Some(other) = other.downcast_ref::<GoRange>() else {
            return Ok(false);
        };
        let (a, b) = (self.len(), other.len());
        Ok(
            a == b
                && (a == 0 || (self.start == other.start && (a == 1 || self.step == other.step))),
        )
    }

    fn slice(
        &self,
        start: Option<Value>,
        stop: Option<Value>,
        stride: Option<Value>,
        heap: Heap<'v>,
    ) -> starlark::Result<Value<'v>> {
        let by = slice_index(stride, "step")?.unwrap_or(1);
        if by == 0 {
            return Err(error("zero is not a valid slice step".to_owned()));
        }
        let len = i128::try_from(self.len()).unwrap_or(i128::MAX);
        let clamp = |i: Option<i128>, default: i128| -> i128 {
            let Some(i) = i else { return default };
            let i = if i < 0 { i + len } else { i };
            if by > 0 {
                i.clamp(0, len)
            } else {
                i.clamp(-1, len - 1)
            }
        };
        let (from, to) = if by > 0 {
            (
                clamp(slice_index(start, "start")?, 0),
                clamp(slice_index(stop, "end")?, len),
            )
        } else {
            (
                clamp(slice_index(start, "start")?, len - 1),
                clamp(slice_index(stop, "end")?, -1),
            )
        };
        let first = i128::from(self.start) + from * i128::from(self.step);
        let last = i128::from(self.start) + to * i128::from(self.step);
        let stride = by * i128::from(self.step);
        match (
            i64::try_from(first),
            i64::try_from(last),
            i64::try_from(stride),
        ) {
            (Ok(first), Ok(last), Ok(stride)) => {
                Ok(heap.alloc_simple(GoRange::new(first, last, stride)))
            }
            _ => Err(error("range slice out of the 64-bit range".to_owned())),
        }
    }

    #[allow(unsafe_code)]
    unsafe fn iterate(&self, me: Value<'v>, _heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        Ok(me)
    }

    #[allow(unsafe_code)]
    unsafe fn iter_next(&self, index: usize, heap: Heap<'v>) -> Option<Value<'v>> {
        let index = index as u128;
        (index < self.len()).then(|| {
            heap.alloc(
                i64::try_from(self.nth(index)).expect("an element lies between start and stop"),
            )
        })
    }

    #[allow(unsafe_code)]
    unsafe fn iter_size_hint(&self, index: usize) -> (usize, Option<usize>) {
        let left = self.len().saturating_sub(index as u128);
        match usize::try_from(left) {
            Ok(left) => (left, Some(left)),
            Err(_) => (usize::MAX, None),
        }
    }

    #[allow(unsafe_code)]
    unsafe fn iter_stop(&self) {}

    fn is_in(&self, other: Value) -> starlark::Result<bool> {
        let x = match other.get_type() {
            "int" => match as_i128(other) {
                Some(x) => x,
                None => return Ok(false),
            },
            "float" => {
                let f = other
                    .downcast_ref::<StarlarkFloat>()
                    .map_or(f64::NAN, |f| f.0);
                if f.fract() != 0.0 || !f.is_finite() || f.abs() > 1e38 {
                    return Ok(false);
                }
                #[allow(clippy::cast_possible_truncation)]
                let x = f as i128;
                x
            }
            other => {
                return Err(error(format!(
                    "'in <range>' requires integer as left operand, not {other}"
                )));
            }
        };
        let (start, step) = (i128::from(self.start), i128::from(self.step));
        let offset = x - start;
        if offset % step != 0 || offset / step < 0 {
            return Ok(false);
        }
        Ok(((offset / step).unsigned_abs()) < self.len())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{assert_eval, assert_fails};

    /// Cases and messages go.starlark.net gives (asked of the Go
    /// implementation over RunFunction).
    #[test]
    fn ranges_behave_as_in_go() {
        assert_eval("str(range(1 << 62)[5])", json!("5"));
        assert_eval(
            "str(range(-(1 << 63), 0))",
            json!("range(-9223372036854775808, 0)"),
        );
        assert_eval("list(range(3, 10, 2))", json!([3, 5, 7, 9]));
        assert_eval("list(range(5, 0, -2))", json!([5, 3, 1]));
        assert_eval("list(range(0, 10, 1 << 40))", json!([0]));
        assert_eval("range(10)[-1]", json!(9));
        assert_eval("str(range(10)[1:5])", json!("range(1, 5)"));
        assert_eval("str(range(10)[::3])", json!("range(0, 10, 3)"));
        assert_eval("str(range(10)[::-1])", json!("range(9, -1, -1)"));
        assert_eval("list(range(10)[8:2:-2])", json!([8, 6, 4]));
        assert_eval("repr(range(5))", json!("range(5)"));
        assert_eval("repr(range(0, 10, 2))", json!("range(0, 10, 2)"));
        assert_eval("range(0, 10, 2) == range(0, 9, 2)", json!(true));
        assert_eval("range(0) == range(5, 5)", json!(true));
        assert_eval(
            "[5 in range(10), 2.0 in range(3), 7 in range(0, 10, 2)]",
            json!([true, true, false]),
        );
        assert_eval(
            "[bool(range(0)), len(range(10, 0)), type(range(1))]",
            json!([false, 0, "range"]),
        );
        assert_eval("len(range(0, 1 << 62, 1 << 40))", json!(4_194_304));
        for (expr, message) in [
            ("range(0, 10, 0)", "range: step argument must not be zero"),
            ("range(1.5)", "range: for parameter 1: got float, want int"),
            (
                "range(None)",
                "range: for parameter 1: got NoneType, want int",
            ),
            ("range()", "range: got 0 arguments, want at least 1"),
            (
                "range(1, 2, 3, 4)",
                "range: got 4 arguments, want at most 3",
            ),
            ("range(stop=3)", "range: unexpected keyword arguments"),
            (
                "range(1 << 64)",
                "range: for parameter 1: 18446744073709551616 out of range (want value in signed 64-bit range)",
            ),
            ("range(3)[5]", "range index 5 out of range [-3:2]"),
            (
                "range(1 << 62)[1 << 40:]",
                "invalid start index: 1099511627776 out of range",
            ),
            (
                "'a' in range(3)",
                "'in <range>' requires integer as left operand, not string",
            ),
            (
                "len(range(1 << 62, -(1 << 62), -1))",
                "len: value of type range has no len",
            ),
        ] {
            assert_fails(&format!("x = {expr}\n"), message);
        }
    }
}
