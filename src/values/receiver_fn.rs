//! A builtin that takes its receiver first: what `_sl_NAME(RECEIVER, ARGS)`
//! calls, after the pre-pass rewrote `RECEIVER.NAME(ARGS)` for a method of
//! `GO_METHODS`. One value type serves every such name; the builtins give
//! it the name and the code that does the method.

use std::fmt;

use allocative::Allocative;
use anyhow::anyhow;
use starlark::eval::{Arguments, Evaluator};
use starlark::starlark_simple_value;
use starlark::values::{NoSerialize, ProvidesStaticType, StarlarkValue, Value, starlark_value};

use crate::go::names::RESERVED_PREFIX;

/// One call of a receiver-first builtin: `receiver.name(args, named)` as
/// the script wrote it.
#[derive(Clone, Copy)]
pub struct MethodCall<'v, 'a> {
    /// The method's name.
    pub name: &'static str,
    /// What the method was called on.
    pub receiver: Value<'v>,
    /// The positional arguments after the receiver.
    pub args: &'a [Value<'v>],
    /// The named arguments, in the order given.
    pub named: &'a [(&'v str, Value<'v>)],
}

/// What a receiver-first builtin does with a call.
pub type ReceiverCall =
    for<'v> fn(MethodCall<'v, '_>, &mut Evaluator<'v, '_, '_>) -> starlark::Result<Value<'v>>;

/// The builtin `_sl_NAME`.
#[derive(ProvidesStaticType, NoSerialize, Allocative)]
pub struct ReceiverFn {
    name: &'static str,
    #[allocative(skip)]
    call: ReceiverCall,
}

impl ReceiverFn {
    /// The builtin of method `name`, done by `call`.
    pub fn new(name: &'static str, call: ReceiverCall) -> Self {
        ReceiverFn { name, call }
    }

    /// Its global name, as the pre-pass writes it.
    pub fn global_name(&self) -> String {
        format!("{RESERVED_PREFIX}{}", self.name)
    }
}

impl fmt::Debug for ReceiverFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReceiverFn")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for ReceiverFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<built-in function {}>", self.global_name())
    }
}

starlark_simple_value!(ReceiverFn);

#[starlark_value(type = "builtin_function_or_method")]
impl<'v> StarlarkValue<'v> for ReceiverFn {
    fn invoke(
        &self,
        _me: Value<'v>,
        args: &Arguments<'v, '_>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        let mut positional = args.positions(eval.heap())?;
        let Some(receiver) = positional.next() else {
            return Err(anyhow!("{}: missing the receiver", self.global_name()).into());
        };
        let rest: Vec<Value<'v>> = positional.collect();
        let named: Vec<(&'v str, Value<'v>)> = args
            .names_map()?
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        let call = MethodCall {
            name: self.name,
            receiver,
            args: &rest,
            named: &named,
        };
        (self.call)(call, eval)
    }

    fn name_for_call_stack(&self, _me: Value<'v>) -> String {
        self.global_name()
    }
}
