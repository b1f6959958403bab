//! Ordered comparisons. The compiler rewrites `a < b`, `a <= b`, `a > b`
//! and `a >= b` into calls of these functions (see `operators::REDIRECTS`).
//! Two sets compare as go.starlark.net compares them, by inclusion (`<=`
//! is "subset of", `<` "proper subset of"), which starlark-rust does not
//! support; any other pair compares as the interpreter compares it, and a
//! failure names its operator as Go's does. The redirection costs a
//! native call per comparison (about 18 ns): a loop doing nothing but
//! comparisons notices it, the benchmark workloads do not (within 2%).

use std::cmp::Ordering;

use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::{Heap, Value};

use crate::go::wording::comparison_wording;

/// Whether every element of set `a` is in set `b`.
fn subset<'v>(a: Value<'v>, b: Value<'v>, heap: Heap<'v>) -> starlark::Result<bool> {
    if a.length()? > b.length()? {
        return Ok(false);
    }
    for x in a.iterate(heap)? {
        if !b.is_in(x)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `a OP b` where `OP` is given by `on_sets` (for two sets, from whether
/// `a` is a subset of `b` and their lengths) and by `on_order` (for
/// anything else, from the interpreter's ordering).
/// A failure to compare is worded as Go words it, with `op`.
fn compare<'v>(
    a: Value<'v>,
    b: Value<'v>,
    heap: Heap<'v>,
    op: &str,
    on_sets: fn(Value<'v>, Value<'v>, Heap<'v>) -> starlark::Result<bool>,
    on_order: fn(Ordering) -> bool,
) -> starlark::Result<bool> {
    if a.get_type() == "set" && b.get_type() == "set" {
        return on_sets(a, b, heap);
    }
    match a.compare(b) {
        Ok(order) => Ok(on_order(order)),
        Err(e) => {
            let text = e.without_diagnostic().to_string();
            match comparison_wording(&text, op) {
                Some(go) => Err(starlark::Error::new_other(anyhow::anyhow!(go))),
                None => Err(e),
            }
        }
    }
}

fn proper_subset<'v>(a: Value<'v>, b: Value<'v>, heap: Heap<'v>) -> starlark::Result<bool> {
    Ok(a.length()? < b.length()? && subset(a, b, heap)?)
}

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// `a < b`.
    fn _sl_lt<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        heap: Heap<'v>,
    ) -> starlark::Result<bool> {
        compare(a, b, heap, "<", proper_subset, |o| o == Ordering::Less)
    }

    /// `a <= b`.
    fn _sl_le<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        heap: Heap<'v>,
    ) -> starlark::Result<bool> {
        compare(a, b, heap, "<=", subset, |o| o != Ordering::Greater)
    }

    /// `a > b`.
    fn _sl_gt<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        heap: Heap<'v>,
    ) -> starlark::Result<bool> {
        compare(
            a,
            b,
            heap,
            ">",
            |a, b, h| proper_subset(b, a, h),
            |o| o == Ordering::Greater,
        )
    }

    /// `a >= b`.
    fn _sl_ge<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        heap: Heap<'v>,
    ) -> starlark::Result<bool> {
        compare(
            a,
            b,
            heap,
            ">=",
            |a, b, h| subset(b, a, h),
            |o| o != Ordering::Less,
        )
    }
}
