//! A run: one script evaluated on the current thread, with the request's
//! globals bound and its modules loaded as it goes, under the runtime's
//! budgets; what it left behind is a [`Run`].

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use pbjson_types::Struct;
use starlark::environment::Module;
use starlark::eval::Evaluator;

use super::errors;
use super::loading::RequestLoader;
use super::runtime::Runtime;
use crate::bindings;
use crate::effects::Context;
use crate::error::Error;
use crate::input::Script;
use crate::loader::Sources;
use crate::meter::Meter;
use crate::request::Request;

/// What one run of a script left behind.
pub struct Run {
    /// What builtins recorded, and the request they saw.
    pub context: Context,
    /// How the script ended.
    pub outcome: Outcome,
    /// starlark-rust ticks the script used.
    pub ticks: u64,
    /// Compile (or cache lookup) plus evaluation time.
    pub elapsed: Duration,
}

/// How a script ended.
pub enum Outcome {
    /// It ran to the end. `dxr` and `context` as they are now, each
    /// converted, or the conversion's complaint.
    Completed {
        /// The desired composite body.
        dxr: Result<Struct, String>,
        /// The pipeline context.
        context: Result<Struct, String>,
        /// An Operation step's output.
        output: Result<Struct, String>,
    },
    /// It failed: globals could not be built, it did not compile, it raised
    /// an error, or it called `fatal()` (`Error::Fatal`).
    Failed(Error),
}

impl Runtime {
    /// Runs `script` on the current thread with the limits' timeout, for
    /// benches and tests; the engine runs jobs with [`Runtime::run_until`].
    pub fn run_blocking(
        &self,
        script: &Script,
        sources: &Sources,
        request: Arc<Request>,
        cancel: &AtomicBool,
    ) -> Run {
        let _meter = Meter::start(self.limits().max_heap_bytes, false);
        self.run_until(
            script,
            sources,
            request,
            cancel,
            Instant::now() + self.limits().timeout,
        )
    }

    /// Runs `script` on the current thread until `deadline`. The caller has
    /// started the thread's memory [`Meter`].
    pub fn run_until(
        &self,
        script: &Script,
        sources: &Sources,
        request: Arc<Request>,
        cancel: &AtomicBool,
        deadline: Instant,
    ) -> Run {
        let started = Instant::now();
        let context = Context::new(request, self.limits().max_heap_bytes);
        let mut ticks = 0;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.evaluate(script, sources, &context, cancel, deadline, &mut ticks)
        }))
        .unwrap_or_else(|payload| Outcome::Failed(panicked(&script.filename, &*payload)));
        Run {
            context,
            outcome,
            ticks,
            elapsed: started.elapsed(),
        }
    }

    fn evaluate(
        &self,
        script: &Script,
        sources: &Sources,
        ctx: &Context,
        cancel: &AtomicBool,
        deadline: Instant,
        ticks: &mut u64,
    ) -> Outcome {
        Module::with_temp_heap(|module| {
            let shared = match bindings::Shared::build(&ctx.request) {
                Ok(shared) => shared,
                Err(e) => return Outcome::Failed(e),
            };
            shared.bind_main(&module, &ctx.request);
            ctx.deadline.set(Some(deadline));
            let loader = RequestLoader::new(self, &shared, ctx, sources, cancel, deadline);
            let source = match loader.expand_stars(&script.filename, &script.source) {
                Ok(source) => source,
                Err(e) => {
                    return Outcome::Failed(Error::Modules(format!("resolving star imports: {e}")));
                }
            };
            let compiled = match self.compile_for(
                ctx,
                &Script {
                    filename: script.filename.clone(),
                    source,
                },
            ) {
                Ok(compiled) => compiled,
                Err(e) => {
                    return Outcome::Failed(Error::Compile(e));
                }
            };
            let caller = loader.for_caller(&script.filename);
            let result = {
                let mut eval = Evaluator::new(&module);
                eval.extra = Some(ctx);
                if let Err(e) = self.limit(&mut eval, deadline, cancel, ctx) {
                    return Outcome::Failed(Error::Internal(e.to_string()));
                }
                eval.set_loader(&caller);
                self.attach_debugger(&mut eval);
                let result = eval.eval_module(compiled.ast.clone(), &self.globals);
                *ticks = eval.get_total_tick_count();
                result
            };
            if let Err(e) = result {
                if let Some(message) = ctx.effects.fatal.borrow().clone() {
                    return Outcome::Failed(Error::Fatal(message));
                }
                return Outcome::Failed(errors::execution_error(
                    &e,
                    &compiled,
                    ctx.stopped.get(),
                    super::recursion::last_statement(),
                ));
            }
            // Read back after evaluation: collection may have moved them.
            let Some(originals) = crate::effects::Originals::of(&module) else {
                return Outcome::Failed(Error::Internal(
                    "the request globals were lost".to_owned(),
                ));
            };
            Outcome::Completed {
                dxr: originals.dxr_struct(),
                context: originals.context_struct(),
                output: originals.output_struct(),
            }
        })
    }
}

/// The error of a run the interpreter gave up on with a panic. Those a
/// script can cause by asking for too much (a collection past what memory
/// can address) are the memory budget's; any other is reported with the
/// interpreter's words.
fn panicked(filename: &str, payload: &(dyn std::any::Any + Send)) -> Error {
    let text = crate::panics::message(payload);
    // "AlignedSize must not exceed u32::MAX": starlark-rust's largest value.
    if ["capacity overflow", "allocat", "must not exceed"]
        .iter()
        .any(|t| text.contains(t))
        || Meter::over()
    {
        return Error::MemoryLimit {
            mib: Meter::limit().unwrap_or(0) >> 20,
            at: String::new(),
        };
    }
    Error::Internal(format!(
        "the interpreter failed while running {filename} ({text}); the script was stopped"
    ))
}
