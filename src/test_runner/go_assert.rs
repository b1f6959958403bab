//! `load("assert.star", "assert", "freeze")` in a Go-format test file: the
//! assertions of go.starlark.net's `starlarktest` module, which the Go
//! implementation's test runner gives its test files. A failed assertion
//! is reported (with the call stack, for the test's report) and the test
//! goes on; only an error stops it.
//!
//! | member | fails when | reports |
//! |---|---|---|
//! | `eq(x, y)` | `x != y` (a float and a number within one ulp are equal) | `X != Y`, `floats: X != Y (delta > 1 ulp)` |
//! | `ne(x, y)` | `x == y` | `X == Y` |
//! | `true(cond, msg="assertion failed")` | `cond` is falsy | `msg` |
//! | `lt(x, y)` | `not (x < y)` | `x is not less than y` |
//! | `contains(x, y)` | `y not in x` | `x does not contain y` |
//! | `fails(f, pattern)` | `f()` succeeds, or fails otherwise | `evaluation succeeded unexpectedly (want error matching P)`, `regular expression (P) did not match error (E)` |
//! | `fail(msg)` | always | `msg` |
//!
//! `freeze(x)` returns `x` as it is: starlark-rust freezes whole modules,
//! not single values (docs/testing.md).

use std::sync::LazyLock;

use anyhow::anyhow;
use starlark::environment::{FrozenModule, GlobalsBuilder, Module};
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::float::StarlarkFloat;
use starlark::values::none::NoneType;
use starlark::values::tuple::UnpackTuple;
use starlark::values::{Value, ValueLike};

use crate::effects::Context;
use crate::go::names::RENAMED_ASSERT;
use crate::values::text::repr;

/// The name a test file loads the module by.
pub const MODULE: &str = crate::go::names::ASSERT_MODULE;

/// The module a test file's `load("assert.star", ...)` gets: `assert`
/// (under the name the pre-pass gives it) and `freeze`.
pub fn module() -> FrozenModule {
    static MODULE: LazyLock<FrozenModule> = LazyLock::new(|| {
        let globals = GlobalsBuilder::new()
            .with(|b| {
                crate::values::module::register(b, RENAMED_ASSERT, members, None);
                top_level(b);
            })
            .build();
        Module::with_temp_heap(|module| {
            // The builtins live on the globals' heap, kept by the module.
            module.frozen_heap().add_reference(globals.heap());
            for (name, value) in globals.iter() {
                module.set(name, value.to_value());
            }
            module.freeze().expect("a module of builtins freezes")
        })
    });
    MODULE.clone()
}

/// Records a failed assertion with where it was made.
fn report(eval: &Evaluator, message: String) -> anyhow::Result<NoneType> {
    let ctx = eval
        .extra
        .and_then(|extra| extra.downcast_ref::<Context>())
        .ok_or_else(|| anyhow!("assertions are only available in tests"))?;
    ctx.reports.borrow_mut().push((message, eval.call_stack()));
    Ok(NoneType)
}

/// `str(v)`: a string as itself, anything else as its repr.
fn text(v: Value) -> String {
    v.unpack_str().map_or_else(|| repr(v), str::to_owned)
}

/// A float and an int or float that differ by at most one unit in the
/// last place of the larger.
fn within_one_ulp(x: Value, y: Value) -> bool {
    let number = |v: Value| -> Option<f64> {
        if let Some(f) = v.downcast_ref::<StarlarkFloat>() {
            return Some(f.0);
        }
        v.unpack_i32()
            .map(f64::from)
            .or_else(|| v.to_str().parse().ok())
    };
    let is_float = |v: Value| v.get_type() == "float";
    let is_number = |v: Value| matches!(v.get_type(), "float" | "int");
    if !((is_float(x) && is_number(y)) || (is_float(y) && is_number(x))) {
        return false;
    }
    let (Some(a), Some(b)) = (number(x), number(y)) else {
        return false;
    };
    let larger = a.abs().max(b.abs());
    let ulp = f64::from_bits(larger.to_bits() + 1) - larger;
    (a - b).abs() <= ulp
}

#[starlark_module]
fn top_level(builder: &mut GlobalsBuilder) {
    /// Returns `x` (values are frozen with the module that made them).
    fn freeze<'v>(#[starlark(require = pos)] x: Value<'v>) -> anyhow::Result<Value<'v>> {
        Ok(x)
    }
}

#[starlark_module]
fn members(builder: &mut GlobalsBuilder) {
    /// Reports `msg` (any value, as `str()` writes it).
    fn fail<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        let [msg] = args.items[..] else {
            return Err(anyhow!("error: got {} arguments, want 1", args.items.len()));
        };
        report(eval, text(msg))
    }

    /// Reports unless `x == y`.
    fn eq<'v>(
        #[starlark(require = pos)] x: Value<'v>,
        #[starlark(require = pos)] y: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        if x.equals(y).map_err(starlark::Error::into_anyhow)? {
            return Ok(NoneType);
        }
        let numbers = matches!(x.get_type(), "float" | "int")
            && matches!(y.get_type(), "float" | "int")
            && (x.get_type() == "float" || y.get_type() == "float");
        if numbers {
            if within_one_ulp(x, y) {
                return Ok(NoneType);
            }
            return report(
                eval,
                format!("floats: {} != {} (delta > 1 ulp)", repr(x), repr(y)),
            );
        }
        report(eval, format!("{} != {}", repr(x), repr(y)))
    }

    /// Reports when `x == y`.
    fn ne<'v>(
        #[starlark(require = pos)] x: Value<'v>,
        #[starlark(require = pos)] y: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        if x.equals(y).map_err(starlark::Error::into_anyhow)? {
            return report(eval, format!("{} == {}", repr(x), repr(y)));
        }
        Ok(NoneType)
    }

    /// Reports `msg` unless `cond` is truthy.
    fn r#true<'v>(
        #[starlark(require = pos)] cond: Value<'v>,
        #[starlark(require = pos)] msg: Option<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        if cond.to_bool() {
            return Ok(NoneType);
        }
        let message = msg.map_or_else(|| "assertion failed".to_owned(), text);
        report(eval, message)
    }

    /// Reports unless `x < y`.
    fn lt<'v>(
        #[starlark(require = pos)] x: Value<'v>,
        #[starlark(require = pos)] y: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        let less = x.compare(y).map_err(starlark::Error::into_anyhow)?.is_lt();
        if less {
            return Ok(NoneType);
        }
        report(eval, format!("{} is not less than {}", text(x), text(y)))
    }

    /// Reports unless `y in x`.
    fn contains<'v>(
        #[starlark(require = pos)] x: Value<'v>,
        #[starlark(require = pos)] y: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        if x.is_in(y).map_err(starlark::Error::into_anyhow)? {
            return Ok(NoneType);
        }
        report(eval, format!("{} does not contain {}", text(x), text(y)))
    }

    /// Calls `f()`; reports unless it fails with an error the Go regular
    /// expression `pattern` finds in its message.
    fn fails<'v>(
        #[starlark(require = pos)] f: Value<'v>,
        #[starlark(require = pos)] pattern: &str,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        let error = match eval.eval_function(f, &[], &[]) {
            Ok(_) => {
                return report(
                    eval,
                    format!(
                        "evaluation succeeded unexpectedly (want error matching {})",
                        crate::go::quote::go_quote(pattern)
                    ),
                );
            }
            Err(e) => crate::runner::errors::error_text(&e),
        };
        if crate::builtins::regex::is_match("assert.fails", pattern, &error)? {
            return Ok(NoneType);
        }
        report(
            eval,
            format!("regular expression ({pattern}) did not match error ({error})"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_one_ulp_apart_are_equal_to_eq() {
        Module::with_temp_heap(|module| {
            let heap = module.heap();
            let a = heap.alloc(0.1_f64 + 0.2_f64);
            let b = heap.alloc(0.3_f64);
            assert!(within_one_ulp(a, b));
            let c = heap.alloc(0.31_f64);
            assert!(!within_one_ulp(a, c));
            assert!(within_one_ulp(heap.alloc(2.0_f64), heap.alloc(2)));
            assert!(!within_one_ulp(heap.alloc(2), heap.alloc(2)));
        });
    }
}
