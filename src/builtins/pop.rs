//! `_sl_pop(receiver, args...)`: what the pre-pass turns `receiver.pop(args)`
//! into (scripts cannot spell the name).
//!
//! A list pops as go.starlark.net's does: a negative index counts from the
//! end, and a bad call fails in Go's words. A dict without the key and
//! without a default fails with Go's `pop: missing key`. A set pops its
//! first element, as Go's does. Anything else calls the receiver's own
//! `pop`.

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::values::Value;
use starlark::values::dict::DictRef;
use starlark::values::list::ListRef;

use super::methods::own_method;
use crate::go::types::go_type;
use crate::values::receiver_fn::{MethodCall, ReceiverFn};
use crate::values::text::int_of;

/// The index a Go list pop takes: `index` (or the last) counted from the
/// end when negative, or Go's out-of-range error.
fn list_index(len: usize, index: Option<i64>) -> anyhow::Result<usize> {
    let n = i64::try_from(len).unwrap_or(i64::MAX);
    let given = index.unwrap_or(n - 1);
    let at = if given < 0 { given + n } else { given };
    if at < 0 || at >= n {
        return Err(if n == 0 {
            anyhow!("pop: index {given} out of range: empty list")
        } else {
            anyhow!("pop: list index {given} out of range [{}:{}]", -n, n - 1)
        });
    }
    Ok(usize::try_from(at).unwrap_or(0))
}

/// `receiver.pop(args...)` with go.starlark.net's list, dict and set pop.
fn pop<'v>(
    call: MethodCall<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let MethodCall {
        receiver,
        args,
        named,
        ..
    } = call;
    let heap = eval.heap();
    if let Some(list) = ListRef::from_value(receiver) {
        if !named.is_empty() {
            return Err(anyhow!("pop: unexpected keyword arguments").into());
        }
        if args.len() > 1 {
            return Err(anyhow!("pop: got {} arguments, want at most 1", args.len()).into());
        }
        let index = match args.first() {
            None => None,
            Some(&i) => {
                let Some(int) = int_of(i).filter(|_| i.get_type() == "int") else {
                    return Err(
                        anyhow!("pop: for parameter 1: got {}, want int", go_type(i)).into(),
                    );
                };
                // Past 64 bits is out of range in Go's words too.
                Some(i64::try_from(&int).unwrap_or(i64::MAX))
            }
        };
        let at = list_index(list.len(), index)?;
        let method = receiver.get_attr_error("pop", heap)?;
        return eval.eval_function(method, &[heap.alloc(at)], &[]);
    }
    if receiver.get_type() == "dict"
        && named.is_empty()
        && let [key] = args
        && let Some(dict) = DictRef::from_value(receiver)
        && matches!(dict.get(*key), Ok(None))
    {
        return Err(anyhow!("pop: missing key").into());
    }
    if receiver.get_type() == "set" && args.is_empty() && named.is_empty() {
        // Go's set pops its first element.
        let Some(first) = receiver.iterate(heap)?.next() else {
            return Err(anyhow!("pop: empty set").into());
        };
        let remove = receiver.get_attr_error("remove", heap)?;
        eval.eval_function(remove, &[first], &[])?;
        return Ok(first);
    }
    own_method(call, eval)
}

/// Registers `_sl_pop`.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    let builtin = ReceiverFn::new("pop", pop);
    builder.set(&builtin.global_name(), builtin);
}

#[cfg(test)]
mod tests {
    use super::list_index;

    #[test]
    fn list_indices_count_from_the_end_in_go_words() {
        assert_eq!(list_index(3, None).unwrap(), 2);
        assert_eq!(list_index(3, Some(-3)).unwrap(), 0);
        assert_eq!(list_index(3, Some(1)).unwrap(), 1);
        assert_eq!(
            list_index(3, Some(5)).unwrap_err().to_string(),
            "pop: list index 5 out of range [-3:2]"
        );
        assert_eq!(
            list_index(3, Some(-4)).unwrap_err().to_string(),
            "pop: list index -4 out of range [-3:2]"
        );
        assert_eq!(
            list_index(0, None).unwrap_err().to_string(),
            "pop: index -1 out of range: empty list"
        );
    }
}
