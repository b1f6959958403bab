//! The run's statement hook: where the run is (for the messages of the
//! budgets that stop it), and recursion, rejected as go.starlark.net
//! rejects it: a Starlark function
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

use std::cell::RefCell;

use starlark::codemap::FileSpan;

thread_local! {
    /// The statement this thread's run started last. The hook cannot
    /// borrow the run's context (starlark-rust wants it `'static`), and a
    /// run stays on one thread.
    static STATEMENT: RefCell<Option<FileSpan>> = const { RefCell::new(None) };
}

/// The statement the run on this thread started last, taken.
pub(crate) fn last_statement() -> Option<FileSpan> {
    STATEMENT.with(RefCell::take)
}

/// go.starlark.net's message.
pub(crate) fn message(name: &str) -> String {
    format!("function {name} called recursively")
}

/// The statement hook: notes each statement in the run's context (where a
/// budget that stops the run is reported) and, unless recursion is
/// allowed, checks the stack whenever it grew since the last statement.
struct Guard {
    reject: bool,
    depth: usize,
}

impl<'e> BeforeStmtFuncDyn<'e> for Guard {
    fn call<'v>(
        &mut self,
        span: FileSpanRef,
        _continued: bool,
        eval: &mut Evaluator<'v, '_, 'e>,
    ) -> starlark::Result<()> {
        STATEMENT.with(|last| {
            let mut last = last.borrow_mut();
            match &mut *last {
                Some(at) if at.file.id() == span.file.id() => at.span = span.span,
                _ => *last = Some(span.to_file_span()),
            }
        });
        if !self.reject {
            return Ok(());
        }
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

/// Installs the statement hook on `eval`, rejecting recursion when
/// `reject`.
pub(crate) fn install(eval: &mut Evaluator<'_, '_, '_>, reject: bool) {
    STATEMENT.with(RefCell::take);
    eval.before_stmt_for_dap(BeforeStmtFunc::from_dyn(Box::new(Guard {
        reject,
        depth: 0,
    })));
}
