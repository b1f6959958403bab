//! Operator redirections. The compiler rewrites `a * b` and `a + b` into
//! calls of these functions (names scripts cannot spell: the pre-pass
//! refuses the `_sl_` prefix), so that repeats and concatenations that
//! would exhaust memory fail with Go's error instead of aborting the
//! process. starlark-rust checks its heap limit only every 1000 ticks,
//! which a handful of doublings outruns.

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::{Heap, Value};

/// The largest sequence a repeat or concatenation may produce: Go's cap.
const MAX_ELEMENTS: i64 = 1 << 30;

/// The binary operators redirected, and the functions they call.
pub const REDIRECTS: [(&str, &str); 2] = [("*", "_sl_mul"), ("+", "_sl_add")];

fn sequence_len(v: Value) -> Option<i64> {
    match v.get_type() {
        "string" | "bytes" | "list" | "tuple" => v.length().ok().map(i64::from),
        _ => None,
    }
}

fn int_of(v: Value) -> Option<i64> {
    if v.get_type() == "int" {
        Some(v.to_str().parse().unwrap_or(i64::MAX))
    } else {
        None
    }
}

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// `a * b`, refusing repeats of more than 2^30 elements.
    fn _sl_mul<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        heap: Heap<'v>,
    ) -> starlark::Result<Value<'v>> {
        let repeat = match (sequence_len(a), int_of(b), int_of(a), sequence_len(b)) {
            (Some(len), Some(n), _, _) | (_, _, Some(n), Some(len)) => Some((len, n)),
            _ => None,
        };
        if let Some((len, n)) = repeat
            && n > 0
            && len.saturating_mul(n) > MAX_ELEMENTS
        {
            return Err(starlark::Error::new_other(anyhow!(
                "excessive repeat ({len} * {n} elements)"
            )));
        }
        a.mul(b, heap)
    }

    /// `a + b`, refusing concatenations of more than 2^30 elements.
    fn _sl_add<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        heap: Heap<'v>,
    ) -> starlark::Result<Value<'v>> {
        if let (Some(x), Some(y)) = (sequence_len(a), sequence_len(b))
            && x + y > MAX_ELEMENTS
        {
            return Err(starlark::Error::new_other(anyhow!(
                "excessive concatenation ({x} + {y} elements)"
            )));
        }
        a.add(b, heap)
    }
}
