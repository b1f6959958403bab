//! The Go dialect's `print`, `fail` and `struct`, which replace or add to
//! starlark-rust's universe.

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::Value;
use starlark::values::none::NoneType;
use starlark::values::tuple::UnpackTuple;

use crate::values::structs::Record;

/// `print`/`fail` text: strings bare, everything else as its repr.
fn join(args: &[Value], sep: &str) -> String {
    let mut out = String::new();
    for (i, v) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        match v.unpack_str() {
            Some(s) => out.push_str(s),
            None => out.push_str(&v.to_repr()),
        }
    }
    out
}

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// Writes its arguments to the function's debug log (never to the response).
    ///
    /// # Example
    /// ```python
    /// print("region is", "eu-west-1", sep=" ")
    /// ```
    fn print<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(require = named, default = " ")] sep: &str,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        let script = eval
            .call_stack_top_location()
            .map(|l| l.file.filename().to_owned())
            .unwrap_or_default();
        tracing::debug!(script, msg = %join(&args.items, sep), "starlark print");
        Ok(NoneType)
    }

    /// Stops the script with an error `fail: <args joined by sep>`.
    ///
    /// # Example
    /// ```python
    /// fail("unsupported size", "xl")
    /// ```
    fn fail<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(require = named, default = " ")] sep: &str,
    ) -> anyhow::Result<NoneType> {
        Err(anyhow!("fail: {}", join(&args.items, sep)))
    }

    /// Builds an immutable record from keyword arguments; fields are sorted
    /// by name.
    ///
    /// # Example
    /// ```python
    /// s = struct(name = "db", size = 10)
    /// s.name  # "db"
    /// ```
    fn r#struct<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: starlark::values::dict::DictRef<'v>,
    ) -> anyhow::Result<Record<'v>> {
        if !args.items.is_empty() {
            return Err(anyhow!("struct: unexpected positional arguments"));
        }
        let fields = kwargs
            .iter()
            .map(|(k, v)| (k.unpack_str().unwrap_or_default().to_owned(), v))
            .collect();
        Ok(Record::new(fields))
    }
}
