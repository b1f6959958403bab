//! The Go dialect's `print`, `fail`, `str`, `repr`, `hash`, `zip` and `struct`,
//! which replace or add to starlark-rust's universe. Values are written as
//! go.starlark.net writes them ([`crate::values::text`]).

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::bytes::StarlarkBytes;
use starlark::values::list::AllocList;
use starlark::values::none::NoneType;
use starlark::values::tuple::AllocTuple;
use starlark::values::tuple::UnpackTuple;
use starlark::values::{Heap, Value, ValueLike};

use crate::values::structs::Record;
use crate::values::text::{self, Renderer, TooLong};

/// `print`/`fail` text: strings bare (and, for `print`, bytes as text),
/// everything else as its repr.
fn join<'v>(
    renderer: &Renderer<'v>,
    args: &[Value<'v>],
    sep: &str,
    bare_bytes: bool,
) -> Result<String, TooLong> {
    let mut out = String::new();
    for (i, v) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        if v.unpack_str().is_some() || (bare_bytes && v.downcast_ref::<StarlarkBytes>().is_some()) {
            out.push_str(&renderer.str_of(*v)?);
        } else {
            renderer.repr_into(*v, &mut out)?;
        }
    }
    Ok(out)
}

/// go.starlark.net's string hash: Java's `String.hashCode`, except that a
/// character beyond U+FFFF counts as one unit, its code point.
fn java_string_hash(s: &str) -> i32 {
    s.chars().fold(0i32, |h, c| {
        h.wrapping_mul(31)
            .wrapping_add(i32::try_from(u32::from(c)).unwrap_or(0))
    })
}

/// 32-bit FNV-1a, go.starlark.net's hash of bytes.
fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// How much one run may `print`, in bytes.
pub const PRINT_BUDGET: usize = 1 << 20;

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// Writes its arguments to the function's debug log (never to the
    /// response), at most 1 MiB per run.
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
        let msg = join(&text::renderer(eval), &args.items, sep, true)
            .map_err(|TooLong| text::too_long(eval, "print"))?;
        let ctx = crate::builtins::context(eval)?;
        let printed = ctx.printed.get().saturating_add(msg.len());
        if printed > PRINT_BUDGET {
            return Err(anyhow::anyhow!(
                "print: the script printed more than {} MiB in this run, the most one run may write to the log; print less",
                PRINT_BUDGET >> 20
            ));
        }
        ctx.printed.set(printed);
        ctx.prints.borrow_mut().push((script, msg));
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
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        let msg = join(&text::renderer(eval), &args.items, sep, false)
            .map_err(|TooLong| text::too_long(eval, "fail"))?;
        Err(anyhow!("fail: {msg}"))
    }

    /// The text of a value: a string as itself, bytes decoded as UTF-8 (each
    /// invalid byte becomes U+FFFD), anything else as its `repr`.
    ///
    /// # Arguments
    /// * `x`: any value.
    ///
    /// # Example
    /// ```python
    /// str(123456789.0)  # "1.23456789e+08"
    /// str(["é", 1.0])   # '["é", 1.0]'
    /// ```
    fn str<'v>(
        #[starlark(require = pos)] x: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        if x.unpack_str().is_some() {
            return Ok(x);
        }
        let s = text::renderer(eval)
            .str_of(x)
            .map_err(|TooLong| text::too_long(eval, "str"))?;
        Ok(eval.heap().alloc(s))
    }

    /// A value written as Starlark source, as go.starlark.net writes it:
    /// strings quoted (printable non-ASCII characters kept), floats in the
    /// shortest form that reads back exactly, containers element by element.
    ///
    /// # Arguments
    /// * `x`: any value.
    ///
    /// # Example
    /// ```python
    /// repr("é")    # '"é"'
    /// repr(1e-5)   # "1e-05"
    /// ```
    fn repr<'v>(
        #[starlark(require = pos)] x: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let s = text::renderer(eval)
            .repr(x)
            .map_err(|TooLong| text::too_long(eval, "repr"))?;
        Ok(eval.heap().alloc(s))
    }

    /// A hash of a string or bytes that is the same on every run and every
    /// platform: for strings Java's `String.hashCode` as go.starlark.net
    /// computes it (a character beyond U+FFFF counts once, as its code
    /// point), for bytes 32-bit FNV-1a.
    ///
    /// # Arguments
    /// * `x`: a string or bytes.
    ///
    /// # Example
    /// ```python
    /// hash("abc")   # 96354
    /// hash(b"abc")  # 440920331
    /// ```
    fn hash<'v>(#[starlark(require = pos)] x: Value<'v>) -> anyhow::Result<i64> {
        if let Some(s) = x.unpack_str() {
            return Ok(i64::from(java_string_hash(s)));
        }
        if let Some(b) = x.downcast_ref::<StarlarkBytes>() {
            return Ok(i64::from(fnv32a(b.as_bytes())));
        }
        Err(anyhow!(
            "hash: got {}, want string or bytes",
            crate::go::types::go_type(x)
        ))
    }

    /// The list of tuples whose `i`-th holds the `i`-th element of each
    /// argument, as long as the shortest argument.
    ///
    /// # Example
    /// ```python
    /// zip([1, 2, 3], ["a", "b"])  # [(1, "a"), (2, "b")]
    /// ```
    fn zip<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: starlark::values::dict::DictRef<'v>,
        heap: Heap<'v>,
    ) -> starlark::Result<Value<'v>> {
        if !kwargs.is_empty() {
            return Err(anyhow!("zip does not accept keyword arguments").into());
        }
        let mut columns = Vec::with_capacity(args.items.len());
        for (i, v) in args.items.iter().enumerate() {
            let column = v.iterate(heap).map_err(|_| {
                anyhow!(
                    "zip: argument #{} is not iterable: {}",
                    i + 1,
                    crate::go::types::go_type(*v)
                )
            })?;
            columns.push(column);
        }
        let mut rows = Vec::new();
        if !columns.is_empty() {
            'rows: loop {
                let mut row = Vec::with_capacity(columns.len());
                for column in &mut columns {
                    match column.next() {
                        Some(x) => row.push(x),
                        None => break 'rows,
                    }
                }
                rows.push(heap.alloc(AllocTuple(row)));
            }
        }
        Ok(heap.alloc(AllocList(rows)))
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
