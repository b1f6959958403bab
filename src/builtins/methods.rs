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
use starlark::values::Value;

use crate::go::names::GO_METHODS;
use crate::go::types::go_type;
use crate::values::receiver_fn::{MethodCall, ReceiverFn};
use crate::values::string_iter::{Codepoints, Elems};

/// Registers `_sl_NAME` for every method of `GO_METHODS` but `pop` (see
/// `pop.rs`).
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    for name in GO_METHODS.iter().filter(|name| **name != "pop") {
        let builtin = ReceiverFn::new(name, call);
        builder.set(&builtin.global_name(), builtin);
    }
}

/// What the builtin of a method does: Go's method where the receiver's
/// type has one that differs, the receiver's own method otherwise.
fn call<'v>(
    call: MethodCall<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let text = call.receiver.unpack_str();
    match call.name {
        "union" | "update" if call.receiver.get_type() == "set" => set_method(call, eval),
        "codepoints" | "codepoint_ords" | "elems" | "elem_ords" if text.is_some() => {
            string_iterable(call, text.unwrap_or_default(), eval)
        }
        "strip" | "lstrip" | "rstrip" if text.is_some() => strip(call, eval),
        "split" | "rsplit" if text.is_some() => split(call, eval),
        _ => own_method(call, eval),
    }
}

/// Calls the receiver's own method, or fails as Go does when it has no
/// such method.
pub(crate) fn own_method<'v>(
    call: MethodCall<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let Some(method) = call.receiver.get_attr(call.name, eval.heap())? else {
        let (name, receiver) = (call.name, go_type(call.receiver));
        return Err(anyhow!("{receiver} has no .{name} field or method").into());
    };
    eval.eval_function(method, call.args, call.named)
}

/// A set's `union` (into a copy) or `update` (in place) of any number of
/// iterables, failing as Go's does on a value that is not iterable.
fn set_method<'v>(
    call: MethodCall<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let name = call.name;
    if !call.named.is_empty() {
        return Err(anyhow!("{name}: does not accept keyword arguments").into());
    }
    for (i, &arg) in call.args.iter().enumerate() {
        if arg.iterate(eval.heap()).is_err() {
            return Err(anyhow!(
                "{name}: argument #{} is not iterable: {}",
                i + 1,
                go_type(arg)
            )
            .into());
        }
    }
    let heap = eval.heap();
    let (target, result) = if name == "update" {
        (call.receiver, Value::new_none())
    } else {
        // A copy made by the set's own one-iterable union.
        let union = call.receiver.get_attr_error("union", heap)?;
        let empty = heap.alloc(Vec::<Value>::new());
        let copy = eval.eval_function(union, &[empty], &[])?;
        (copy, copy)
    };
    let update = target.get_attr_error("update", eval.heap())?;
    for &arg in call.args {
        eval.eval_function(update, &[arg], &[])?;
    }
    Ok(result)
}

/// A string's `codepoints`, `codepoint_ords`, `elems` or `elem_ords`: Go's
/// iterables, which take no arguments.
fn string_iterable<'v>(
    call: MethodCall<'v, '_>,
    text: &str,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let name = call.name;
    if !call.named.is_empty() {
        return Err(anyhow!("{name}: unexpected keyword arguments").into());
    }
    if !call.args.is_empty() {
        return Err(anyhow!("{name}: got {} arguments, want 0", call.args.len()).into());
    }
    let heap = eval.heap();
    Ok(match name {
        "codepoints" => heap.alloc_simple(Codepoints::new(text, false)),
        "codepoint_ords" => heap.alloc_simple(Codepoints::new(text, true)),
        "elems" => heap.alloc_simple(Elems::new(text, false)),
        _ => heap.alloc_simple(Elems::new(text, true)),
    })
}

/// A string's `strip`, `lstrip` or `rstrip`, reading `""` as no argument.
fn strip<'v>(
    call: MethodCall<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let blank = matches!(call.args, [only] if only.unpack_str() == Some(""));
    if blank && call.named.is_empty() {
        return own_method(MethodCall { args: &[], ..call }, eval);
    }
    own_method(call, eval)
}

/// A string's `split` or `rsplit`, refusing the separator `""`.
fn split<'v>(
    call: MethodCall<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let sep = call.args.first().copied().or_else(|| {
        call.named
            .iter()
            .find(|(k, _)| *k == "sep")
            .map(|(_, v)| *v)
    });
    if sep.and_then(Value::unpack_str) == Some("") {
        // Go's rsplit shares split's message.
        return Err(anyhow!("split: empty separator").into());
    }
    own_method(call, eval)
}
