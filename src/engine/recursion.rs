//! Recursion, rejected as go.starlark.net rejects it: a Starlark function
//! that calls itself, directly or through others, fails with
//! `function NAME called recursively` when the second call starts.
//!
//! starlark-rust allows recursion up to its call-stack limit, so the run
//! installs a statement hook that looks at the call stack whenever it grew
//! since the last statement. A function is known by its name and the file
//! its body is in (the location of the frame above it, or of the statement
//! about to run for the top one), so two files' functions of one name are
//! told apart. Lambdas are anonymous to the stack and are not checked.
//!
//! The hook is starlark-rust's `before_stmt_for_dap`, public but hidden
//! from its docs (the debugger's); the crate's version is pinned.

use starlark::codemap::FileSpanRef;
use starlark::eval::{BeforeStmtFunc, BeforeStmtFuncDyn, Evaluator};

/// go.starlark.net's message.
pub(crate) fn message(name: &str) -> String {
    format!("function {name} called recursively")
}

/// The statement hook: remembers the stack depth of the last statement.
#[derive(Default)]
struct Guard {
    depth: usize,
}

impl<'e> BeforeStmtFuncDyn<'e> for Guard {
    fn call<'v>(
        &mut self,
        span: FileSpanRef,
        _continued: bool,
        eval: &mut Evaluator<'v, '_, 'e>,
    ) -> starlark::Result<()> {
        let depth = eval.call_stack_count();
        let grew = depth > self.depth;
        self.depth = depth;
        if !grew || depth < 2 {
            return Ok(());
        }
        let frames = eval.call_stack().frames;
        // The file each frame's function body is in: where its callee was
        // called from, or for the top frame the statement about to run.
        let body_file = |i: usize| -> Option<String> {
            match frames.get(i + 1) {
                Some(next) => next.location.as_ref().map(|l| l.filename().to_owned()),
                None => Some(span.file.filename().to_owned()),
            }
        };
        let Some(top) = frames.last() else {
            return Ok(());
        };
        if top.name == "lambda" || top.location.is_none() {
            return Ok(());
        }
        let top_file = body_file(frames.len() - 1);
        let again = frames[..frames.len() - 1]
            .iter()
            .enumerate()
            .any(|(i, f)| f.name == top.name && f.location.is_some() && body_file(i) == top_file);
        if again {
            return Err(starlark::Error::new_other(anyhow::anyhow!(message(
                &top.name
            ))));
        }
        Ok(())
    }
}

/// Makes `eval` reject recursion.
pub(crate) fn reject(eval: &mut Evaluator<'_, '_, '_>) {
    eval.before_stmt_for_dap(BeforeStmtFunc::from_dyn(Box::new(Guard::default())));
}
