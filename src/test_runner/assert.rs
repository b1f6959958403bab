//! The `assert` module `*_test.star` files see (only under
//! `function-starlark test`): `eq`, `ne`, `true`, `contains` and `fails`.
//! A failed assertion stops the test with `assert.NAME: what was expected,
//! what came`, at the assertion's line.

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::none::NoneType;
use starlark::values::{Value, ValueLike};

use crate::go::names::RENAMED_ASSERT;

/// Registers `assert` (under the name the pre-pass gives it).
pub fn register(builder: &mut GlobalsBuilder) {
    crate::values::module::register(builder, RENAMED_ASSERT, members, None);
}

fn with_message(text: String, msg: Option<&str>) -> anyhow::Error {
    match msg {
        Some(m) if !m.is_empty() => anyhow!("{text} ({m})"),
        _ => anyhow!("{text}"),
    }
}

#[starlark_module]
fn members(builder: &mut GlobalsBuilder) {
    /// Fails unless `got == want`.
    fn eq<'v>(
        #[starlark(require = pos)] got: Value<'v>,
        #[starlark(require = pos)] want: Value<'v>,
        msg: Option<&str>,
    ) -> anyhow::Result<NoneType> {
        if got.equals(want).map_err(starlark::Error::into_anyhow)? {
            return Ok(NoneType);
        }
        Err(with_message(
            format!(
                "assert.eq: got {}, want {}",
                crate::values::text::repr(got),
                crate::values::text::repr(want)
            ),
            msg,
        ))
    }

    /// Fails when `got == unwanted`.
    fn ne<'v>(
        #[starlark(require = pos)] got: Value<'v>,
        #[starlark(require = pos)] unwanted: Value<'v>,
        msg: Option<&str>,
    ) -> anyhow::Result<NoneType> {
        if !got.equals(unwanted).map_err(starlark::Error::into_anyhow)? {
            return Ok(NoneType);
        }
        Err(with_message(
            format!(
                "assert.ne: got {}, want anything else",
                crate::values::text::repr(got)
            ),
            msg,
        ))
    }

    /// Fails unless `cond` is true (truthy).
    fn r#true<'v>(
        #[starlark(require = pos)] cond: Value<'v>,
        msg: Option<&str>,
    ) -> anyhow::Result<NoneType> {
        if cond.to_bool() {
            return Ok(NoneType);
        }
        Err(with_message(
            format!("assert.true: got {}", crate::values::text::repr(cond)),
            msg,
        ))
    }

    /// Fails unless `item in container`.
    fn contains<'v>(
        #[starlark(require = pos)] container: Value<'v>,
        #[starlark(require = pos)] item: Value<'v>,
        msg: Option<&str>,
    ) -> anyhow::Result<NoneType> {
        if container
            .is_in(item)
            .map_err(starlark::Error::into_anyhow)?
        {
            return Ok(NoneType);
        }
        Err(with_message(
            format!(
                "assert.contains: {} is not in {}",
                crate::values::text::repr(item),
                crate::values::text::repr(container)
            ),
            msg,
        ))
    }

    /// Calls `f()` and fails unless it fails with a message matching the
    /// regular expression `pattern`.
    fn fails<'v>(
        #[starlark(require = pos)] f: Value<'v>,
        #[starlark(require = pos)] pattern: &str,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        let re = regex::Regex::new(pattern)
            .map_err(|e| anyhow!("assert.fails: bad pattern {pattern:?}: {e}"))?;
        match eval.eval_function(f, &[], &[]) {
            Ok(v) => Err(anyhow!(
                "assert.fails: the call succeeded (returned {}), want an error matching {pattern:?}",
                crate::values::text::repr(v.to_value())
            )),
            Err(e) => {
                let message = crate::go::wording::go_wording(&e.without_diagnostic().to_string());
                if re.is_match(&message) {
                    Ok(NoneType)
                } else {
                    Err(anyhow!(
                        "assert.fails: the error {message:?} does not match {pattern:?}"
                    ))
                }
            }
        }
    }
}
