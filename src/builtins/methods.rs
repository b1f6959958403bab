//! `_sl_NAME(receiver, args...)`: what the pre-pass turns
//! `receiver.NAME(args)` into for the methods of `GO_METHODS` other than
//! `pop` (see `pop.rs`); scripts cannot spell the names.
//!
//! Where the receiver is of the type whose method go.starlark.net defines
//! differently, the builtin does what Go's method does:
//! * a set's `union` and `update` take any number of iterables;
//! * a string's `codepoints`, `codepoint_ords`, `elems` and `elem_ords`
//!   return Go's `string.codepoints` and `string.elems` iterables (see
//!   `values::string_iter`);
//! * a string's `strip`, `lstrip` and `rstrip` read `""` as "whitespace",
//!   as they read no argument;
//! * a string's `split` and `rsplit` refuse an empty separator.
//!
//! Any other receiver has its own method called with the same arguments.

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::dict::DictRef;
use starlark::values::tuple::UnpackTuple;
use starlark::values::{Heap, Value};

use crate::go::types::go_type;
use crate::values::string_iter::{Codepoints, Elems};

/// Calls `receiver.name(args, kwargs)`, or fails as Go does when the
/// receiver has no such method.
pub(crate) fn own_method<'v>(
    receiver: Value<'v>,
    name: &str,
    args: &[Value<'v>],
    kwargs: DictRef<'v>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let Some(method) = receiver.get_attr(name, eval.heap())? else {
        return Err(anyhow!("{} has no .{name} field or method", go_type(receiver)).into());
    };
    let named: Vec<(&str, Value<'v>)> = kwargs
        .iter()
        .map(|(k, v)| (k.unpack_str().unwrap_or_default(), v))
        .collect();
    eval.eval_function(method, args, &named)
}

/// Whether `v` can be iterated.
fn iterable<'v>(v: Value<'v>, heap: Heap<'v>) -> bool {
    v.iterate(heap).is_ok()
}

/// Adds every element of every iterable of `args` to `set` with its own
/// `update`, failing as Go's `NAME` does on a value that is not iterable.
fn add_all<'v>(
    name: &str,
    set: Value<'v>,
    args: &[Value<'v>],
    kwargs: DictRef<'v>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<()> {
    if !kwargs.is_empty() {
        return Err(anyhow!("{name}: does not accept keyword arguments").into());
    }
    for (i, &arg) in args.iter().enumerate() {
        if !iterable(arg, eval.heap()) {
            return Err(anyhow!(
                "{name}: argument #{} is not iterable: {}",
                i + 1,
                go_type(arg)
            )
            .into());
        }
    }
    let update = set.get_attr_error("update", eval.heap())?;
    for &arg in args {
        eval.eval_function(update, &[arg], &[])?;
    }
    Ok(())
}

/// Fails unless a string method that takes nothing was given nothing.
fn no_arguments(name: &str, args: &[Value], kwargs: DictRef) -> anyhow::Result<()> {
    if !kwargs.is_empty() {
        return Err(anyhow!("{name}: unexpected keyword arguments"));
    }
    if !args.is_empty() {
        return Err(anyhow!("{name}: got {} arguments, want 0", args.len()));
    }
    Ok(())
}

/// `receiver.NAME()` for a string NAME of the iterables, else the receiver's
/// own method.
fn string_iterable<'v>(
    name: &str,
    receiver: Value<'v>,
    args: &[Value<'v>],
    kwargs: DictRef<'v>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let Some(text) = receiver.unpack_str() else {
        return own_method(receiver, name, args, kwargs, eval);
    };
    no_arguments(name, args, kwargs)?;
    let heap = eval.heap();
    Ok(match name {
        "codepoints" => heap.alloc_simple(Codepoints::new(text, false)),
        "codepoint_ords" => heap.alloc_simple(Codepoints::new(text, true)),
        "elems" => heap.alloc_simple(Elems::new(text, false)),
        _ => heap.alloc_simple(Elems::new(text, true)),
    })
}

/// `receiver.NAME(chars)`, where a string reads `""` as no argument.
fn strip<'v>(
    name: &str,
    receiver: Value<'v>,
    args: &[Value<'v>],
    kwargs: DictRef<'v>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let blank = matches!(args, [only] if only.unpack_str() == Some(""));
    if receiver.unpack_str().is_some() && blank && kwargs.is_empty() {
        return own_method(receiver, name, &[], kwargs, eval);
    }
    own_method(receiver, name, args, kwargs, eval)
}

/// `receiver.NAME(sep, ...)`, where a string refuses `sep` `""`.
fn split<'v>(
    name: &str,
    receiver: Value<'v>,
    args: &[Value<'v>],
    kwargs: DictRef<'v>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let sep = args.first().copied().or_else(|| kwargs.get_str("sep"));
    if receiver.unpack_str().is_some() && sep.and_then(Value::unpack_str) == Some("") {
        // Go's rsplit shares split's message.
        return Err(anyhow!("split: empty separator").into());
    }
    own_method(receiver, name, args, kwargs, eval)
}

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// `receiver.union(iterables...)`: a set's union takes any number.
    fn _sl_union<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        if receiver.get_type() != "set" {
            return own_method(receiver, "union", &args.items, kwargs, eval);
        }
        // A copy made by the set's own one-iterable union.
        let empty = eval.heap().alloc(Vec::<Value>::new());
        let union = receiver.get_attr_error("union", eval.heap())?;
        let copy = eval.eval_function(union, &[empty], &[])?;
        add_all("union", copy, &args.items, kwargs, eval)?;
        Ok(copy)
    }

    /// `receiver.update(iterables...)`: a set's update takes any number.
    fn _sl_update<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        if receiver.get_type() != "set" {
            return own_method(receiver, "update", &args.items, kwargs, eval);
        }
        add_all("update", receiver, &args.items, kwargs, eval)?;
        Ok(Value::new_none())
    }

    /// `receiver.codepoints()`: a string's is Go's `string.codepoints`.
    fn _sl_codepoints<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        string_iterable("codepoints", receiver, &args.items, kwargs, eval)
    }

    /// `receiver.codepoint_ords()`: a string's is Go's `string.codepoints`
    /// of ints.
    fn _sl_codepoint_ords<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        string_iterable("codepoint_ords", receiver, &args.items, kwargs, eval)
    }

    /// `receiver.elems()`: a string's is Go's `string.elems`.
    fn _sl_elems<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        string_iterable("elems", receiver, &args.items, kwargs, eval)
    }

    /// `receiver.elem_ords()`: a string's is Go's `string.elems` of the
    /// UTF-8 bytes.
    fn _sl_elem_ords<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        string_iterable("elem_ords", receiver, &args.items, kwargs, eval)
    }

    /// `receiver.strip(chars)`, with Go's reading of `""`.
    fn _sl_strip<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        strip("strip", receiver, &args.items, kwargs, eval)
    }

    /// `receiver.lstrip(chars)`, with Go's reading of `""`.
    fn _sl_lstrip<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        strip("lstrip", receiver, &args.items, kwargs, eval)
    }

    /// `receiver.rstrip(chars)`, with Go's reading of `""`.
    fn _sl_rstrip<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        strip("rstrip", receiver, &args.items, kwargs, eval)
    }

    /// `receiver.split(sep, maxsplit)`, refusing Go's empty separator.
    fn _sl_split<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        split("split", receiver, &args.items, kwargs, eval)
    }

    /// `receiver.rsplit(sep, maxsplit)`, refusing Go's empty separator.
    fn _sl_rsplit<'v>(
        #[starlark(require = pos)] receiver: Value<'v>,
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        split("rsplit", receiver, &args.items, kwargs, eval)
    }
}
