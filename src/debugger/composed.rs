//! `__composed__()`: the resources the running script has composed so
//! far, by name, for the debugger's "Composed" scope. Registered only in
//! runtimes a debugger watches, so scripts never see it otherwise.

use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::Value;
use starlark::values::dict::AllocDict;

use crate::convert::{Flavor, struct_to_value};

/// The global's name: a dunder, so that no script's name collides.
pub const NAME: &str = "__composed__";

#[starlark_module]
fn register_composed(builder: &mut GlobalsBuilder) {
    /// The bodies of the resources composed so far, by name.
    fn __composed__<'v>(eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<Value<'v>> {
        let heap = eval.heap();
        let ctx = crate::builtins::context(eval)?;
        let mut entries = Vec::new();
        for (name, emitted) in ctx.effects.resources.borrow().iter() {
            let body = struct_to_value(heap, &emitted.body.to_struct(), Flavor::Plain)
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            entries.push((name.clone(), body));
        }
        Ok(heap.alloc(AllocDict(entries)))
    }
}

/// Adds `__composed__()` to `builder`.
pub fn register(builder: &mut GlobalsBuilder) {
    register_composed(builder);
}
