//! A Go-format Starlark test file, run as the Go implementation's test
//! runner runs one: its top level once, in the test dialect (no request
//! globals, each top-level name bound once), its globals frozen, then each
//! `test_*` function it defines called with no arguments, in definition
//! order. What the `assert` module reports is collected per test instead
//! of stopping it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use starlark::environment::{FrozenModule, Module};
use starlark::eval::Evaluator;
use starlark::syntax::AstModule;
use starlark::syntax::ast::{AssignTargetP, AstStmt, ExprP, StmtP};

use super::compiled::Compiled;
use super::errors;
use super::loading::RequestLoader;
use super::runtime::Runtime;
use crate::bindings::Shared;
use crate::effects::Context;
use crate::error::Error;
use crate::input::Script;
use crate::loader::Sources;
use crate::meter::Meter;
use crate::request::Request;

/// How a test file went.
pub enum FileOutcome {
    /// Its top level failed (a syntax error, a failed load, an error): why.
    Failed(String),
    /// Its tests, in definition order.
    Tests(Vec<TestOutcome>),
}

/// How one `test_*` function went.
pub struct TestOutcome {
    /// The function's name.
    pub name: String,
    /// It takes parameters, so it was not called.
    pub skipped: bool,
    /// Why it failed: the error that stopped it, or what its assertions
    /// reported, each as a traceback.
    pub failures: Vec<String>,
    /// How long the call took.
    pub seconds: f64,
    /// What it printed.
    pub printed: Vec<String>,
}

/// A `test_*` function the file defines at top level, and how many
/// parameters it takes.
struct Defined {
    name: String,
    parameters: usize,
}

impl Runtime {
    /// Runs the test file `script` (named by its absolute path, which its
    /// `./` loads start from), its loads answered from `sources` and, for
    /// the names in `given`, by those modules; of its tests, those whose
    /// names `select` takes.
    pub fn run_test_file(
        &self,
        script: &Script,
        sources: &Sources,
        given: HashMap<String, FrozenModule>,
        select: &dyn Fn(&str) -> bool,
    ) -> FileOutcome {
        let _meter = Meter::start(self.limits().max_heap_bytes, false);
        let ctx = Context::new(Arc::new(Request::default()), self.limits().max_heap_bytes);
        let cancel = AtomicBool::new(false);
        let shared = match Shared::build(&ctx.request) {
            Ok(shared) => shared,
            Err(e) => return FileOutcome::Failed(e.to_string()),
        };
        let deadline = Instant::now() + self.limits().timeout;
        ctx.deadline.set(Some(deadline));
        let loader =
            RequestLoader::new(self, &shared, &ctx, sources, &cancel, deadline).for_tests(given);
        let (compiled, frozen) = match self.load_test_file(script, &loader, &ctx, deadline) {
            Ok(file) => file,
            Err(why) => return FileOutcome::Failed(why),
        };
        let tests = defined_tests(&compiled.ast)
            .into_iter()
            .filter(|t| select(&t.name))
            .filter(|t| {
                frozen
                    .get(&t.name)
                    .is_ok_and(|v| v.value().get_type() == "function")
            })
            .map(|t| self.call_test(&t, &frozen, &compiled, &loader, &ctx, &cancel))
            .collect();
        FileOutcome::Tests(tests)
    }

    /// Evaluates the file's top level and freezes it.
    fn load_test_file(
        &self,
        script: &Script,
        loader: &RequestLoader,
        ctx: &Context,
        deadline: Instant,
    ) -> Result<(Arc<Compiled>, FrozenModule), String> {
        let source = loader
            .expand_stars(&script.filename, &script.source)
            .map_err(|e| format!("resolving star imports: {e}"))?;
        let compiled = self.compile_for(
            ctx,
            &Script {
                filename: script.filename.clone(),
                source,
            },
        )?;
        crate::syntax::static_check::check_global_reassignment(&compiled.ast, &compiled.map)
            .map_err(|e| format!("{}:{e}", script.filename))?;
        let caller = loader.for_caller(&script.filename);
        Module::with_temp_heap(|module| {
            let result = {
                let mut eval = Evaluator::new(&module);
                eval.extra = Some(ctx);
                self.limit(&mut eval, deadline, loader.cancel, ctx)
                    .map_err(|e| e.to_string())?;
                eval.set_loader(&caller);
                eval.eval_module(compiled.ast.clone(), &self.globals)
            };
            if let Err(e) = result {
                return Err(
                    match errors::execution_error(&e, &compiled, ctx.stopped.get(), None) {
                        Error::Runtime(_) => errors::traceback(&e, &compiled).1,
                        Error::Compile(text) => text,
                        other => other.to_string(),
                    },
                );
            }
            let frozen = module.freeze().map_err(|e| format!("{e:?}"))?;
            Ok((compiled.clone(), frozen))
        })
    }

    /// Calls one test function with no arguments.
    fn call_test(
        &self,
        test: &Defined,
        frozen: &FrozenModule,
        compiled: &Compiled,
        loader: &RequestLoader,
        ctx: &Context,
        cancel: &AtomicBool,
    ) -> TestOutcome {
        let mut outcome = TestOutcome {
            name: test.name.clone(),
            skipped: test.parameters > 0,
            failures: Vec::new(),
            seconds: 0.0,
            printed: Vec::new(),
        };
        if outcome.skipped {
            return outcome;
        }
        ctx.reports.borrow_mut().clear();
        ctx.stopped.set(None);
        let deadline = Instant::now() + self.limits().timeout;
        ctx.deadline.set(Some(deadline));
        let started = Instant::now();
        let caller = loader.for_caller(&compiled.filename);
        let function = match frozen.get(&test.name) {
            Ok(function) => function,
            Err(e) => {
                outcome.failures.push(e.to_string());
                return outcome;
            }
        };
        let error = Module::with_temp_heap(|module| {
            module.frozen_heap().add_reference(frozen.frozen_heap());
            let mut eval = Evaluator::new(&module);
            eval.extra = Some(ctx);
            self.limit(&mut eval, deadline, cancel, ctx)
                .map_err(|e| e.to_string())?;
            eval.set_loader(&caller);
            // The function is a value of the frozen test module, which
            // stays alive (and is referenced by this module) for the call.
            let mut result = None;
            function.map(|value| {
                result = Some(eval.eval_function(value.to_value(), &[], &[]).map(|_| ()));
                value
            });
            match result.expect("the call ran") {
                Ok(()) => Ok(()),
                Err(e) => Err(
                    match errors::execution_error(&e, compiled, ctx.stopped.get(), None) {
                        Error::Runtime(_) => format!(
                            "Traceback (most recent call last):\n{}",
                            errors::traceback(&e, compiled).0
                        ),
                        other => other.to_string(),
                    },
                ),
            }
        });
        outcome.seconds = started.elapsed().as_secs_f64();
        match error {
            Err(e) => outcome.failures.push(e),
            Ok(()) => {
                for (message, stack) in ctx.reports.borrow_mut().drain(..) {
                    let (frames, _) = errors::frames(&stack.frames, compiled);
                    outcome.failures.push(format!(
                        "Traceback (most recent call last):\n{frames}Error: {message}"
                    ));
                }
            }
        }
        outcome.printed = ctx
            .prints
            .borrow_mut()
            .drain(..)
            .map(|(_, text)| text)
            .collect();
        outcome
    }
}

/// The `test_*` functions a file defines at top level (`def` and lambdas
/// bound to a name, in its top-level `if` and `for` bodies too), in
/// definition order.
fn defined_tests(ast: &AstModule) -> Vec<Defined> {
    fn walk(stmt: &AstStmt, out: &mut Vec<Defined>) {
        match &stmt.node {
            StmtP::Statements(stmts) => {
                for s in stmts {
                    walk(s, out);
                }
            }
            StmtP::If(_, body) => walk(body, out),
            StmtP::IfElse(_, branches) => {
                walk(&branches.0, out);
                walk(&branches.1, out);
            }
            StmtP::For(f) => walk(&f.body, out),
            StmtP::Def(def) if def.name.ident.starts_with("test_") => out.push(Defined {
                name: def.name.ident.clone(),
                parameters: def.params.len(),
            }),
            StmtP::Assign(assign) => {
                if let (AssignTargetP::Identifier(name), ExprP::Lambda(lambda)) =
                    (&assign.lhs.node, &assign.rhs.node)
                    && name.ident.starts_with("test_")
                {
                    out.push(Defined {
                        name: name.ident.clone(),
                        parameters: lambda.params.len(),
                    });
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(ast.statement(), &mut out);
    out
}
