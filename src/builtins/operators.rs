//! Operator redirections. The compiler rewrites `a * b` and `a + b` into
//! calls of these functions (names scripts cannot spell: the pre-pass
//! refuses the `_sl_` prefix), so that repeats and concatenations that
//! would exhaust memory fail with an error instead of aborting the
//! process. starlark-rust checks its own heap limit only every 1000 ticks,
//! which a handful of doublings outruns; here the projected size of the
//! result is checked before it is allocated.

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::Value;

use crate::builtins::context;

/// The most elements a repeat may produce: Go's cap.
const MAX_ELEMENTS: u64 = 1 << 30;

/// The binary operators redirected, and the functions they call.
pub const REDIRECTS: [(&str, &str); 2] = [("*", "_sl_mul"), ("+", "_sl_add")];

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

fn int_of(v: Value) -> Option<i64> {
    (v.get_type() == "int").then(|| v.to_str().parse().unwrap_or(i64::MAX))
}

/// Fails when a result of `bytes` would take the run past its heap limit.
fn check_heap(eval: &Evaluator, bytes: u64, what: impl FnOnce() -> String) -> anyhow::Result<()> {
    let limit = context(eval)?.max_heap_bytes as u64;
    let used = eval.heap().allocated_bytes() as u64;
    if used.saturating_add(bytes) > limit {
        return Err(anyhow!(
            "{} would exceed the script's memory limit ({} MiB)",
            what(),
            limit >> 20
        ));
    }
    Ok(())
}

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// `a * b`, refusing repeats beyond Go's cap or the memory limit.
    fn _sl_mul<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        #[starlark(require = pos)] b: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        let repeat = match (sequence(a), int_of(b), int_of(a), sequence(b)) {
            (Some(seq), Some(n), _, _) | (_, _, Some(n), Some(seq)) => Some((seq, n)),
            _ => None,
        };
        if let Some(((len, per), n)) = repeat
            && n > 0
        {
            let n = n.unsigned_abs();
            let elements = len.saturating_mul(n);
            if elements > MAX_ELEMENTS {
                return Err(starlark::Error::new_other(anyhow!(
                    "excessive repeat ({len} * {n} elements)"
                )));
            }
            check_heap(eval, elements.saturating_mul(per), || {
                format!("repeat ({len} * {n} elements)")
            })
            .map_err(starlark::Error::new_other)?;
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
            check_heap(eval, (x + y).saturating_mul(per), || {
                format!("concatenation ({x} + {y} elements)")
            })
            .map_err(starlark::Error::new_other)?;
        }
        a.add(b, eval.heap())
    }
}
