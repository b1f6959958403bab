//! The runtime: globals built once and shared, a cache of compiled
//! scripts, and the evaluation of one script on a dedicated thread with
//! step, stack, heap and wall-clock limits.

use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pbjson_types::Struct;
use starlark::environment::{FrozenModule, Globals, GlobalsBuilder, Module};
use starlark::eval::Evaluator;
use starlark::syntax::{AstModule, Dialect};

use crate::builtins;
use crate::cache::Bounded;
use crate::error::Error;
use crate::input::Script;
use crate::loader::Sources;
use crate::meter::Meter;
use crate::request::Request;

use super::errors::{self, Stopped};
use super::loading::RequestLoader;
use crate::bindings;
use crate::effects::Context;
use crate::syntax::line_map::LineMap;

/// Limits of one script run. The defaults are documented in the README
/// ("Limits") and docs/limits.md.
#[derive(Debug, Clone)]
pub struct Limits {
    /// starlark-rust ticks: loop iterations and calls, native calls
    /// included, so each redirected operator (`+`, `*`, `%`, `<<`, `/`, `//`,
    /// `>>` and the ordered comparisons) costs one.
    /// 500,000 ticks stop no script within the reference's 1,000,000 steps:
    /// every Go instruction sequence behind a tick is at least two steps (a
    /// chain of additions is the tightest measured case, 2.55 steps per
    /// tick).
    pub max_ticks: u64,
    /// Deepest Starlark call stack. starlark-rust's default of 50 is far
    /// below what the reference allows.
    pub max_call_stack: usize,
    /// Whether a function may call itself (go.starlark.net forbids it).
    pub allow_recursion: bool,
    /// Best-effort Starlark heap limit, in bytes.
    pub max_heap_bytes: usize,
    /// Wall-clock time one run may take.
    pub timeout: Duration,
    /// Native stack of an evaluation thread, in bytes: reserved address
    /// space, of which only the pages a run touches take memory. It holds
    /// the deepest nesting sources and requests may have (see
    /// `prepass::MAX_NESTING` and `engine::depth`), debug builds included.
    pub stack_bytes: usize,
    /// Runs started at once; more requests wait their turn. Worker
    /// processes add a slow lane of twice as many for runs past 100 ms.
    pub concurrency: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_ticks: 500_000,
            max_call_stack: 1000,
            allow_recursion: false,
            max_heap_bytes: 256 << 20,
            timeout: Duration::from_secs(10),
            stack_bytes: 256 << 20,
            concurrency: std::thread::available_parallelism()
                .map_or(2, NonZeroUsize::get)
                .max(2),
        }
    }
}

pub use crate::error::STEP_LIMIT_MESSAGE;

/// The memory compiled scripts may take in one cache, roughly: a parsed
/// script takes about 40 times its source.
pub const MAX_CACHED_SCRIPT_BYTES: usize = 64 << 20;

/// What a source byte becomes once parsed: 36 for the 8.5 KB script of
/// Resource() calls we measured with the memory meter, rounded up.
const AST_BYTES_PER_SOURCE_BYTE: usize = 40;

/// A parsed script, ready to evaluate any number of times.
pub struct Compiled {
    /// The file name used in positions.
    pub filename: String,
    /// The length of its source.
    source_len: usize,
    pub(crate) ast: AstModule,
    pub(crate) map: LineMap,
}

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
    },
    /// It failed: globals could not be built, it did not compile, it raised
    /// an error, or it called `fatal()` (`Error::Fatal`).
    Failed(Error),
}

impl crate::cache::Weight for Arc<Compiled> {
    fn weight(&self) -> usize {
        self.source_len.saturating_mul(AST_BYTES_PER_SOURCE_BYTE)
    }
}

/// How many request-independent modules a runtime keeps evaluated.
const PURE_MODULES: usize = 64;

/// The shared runtime: one per process.
pub struct Runtime {
    pub(crate) globals: Globals,
    dialect: Dialect,
    cache: Mutex<Bounded<Arc<Compiled>>>,
    /// Loaded modules that cannot see the request, evaluated once per
    /// distinct content (with what they load); see `loading`.
    pub(crate) pure_modules: Mutex<lru::LruCache<[u8; 32], FrozenModule>>,
    limits: Limits,
}

// Requests are served from many tasks; the runtime must be shareable.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Runtime>();
};

impl Runtime {
    /// A runtime with the given limits and a compiled-script cache of
    /// `cache_entries` scripts.
    pub fn new(limits: Limits, cache_entries: usize) -> Self {
        Self::with_globals(limits, cache_entries, |_| {})
    }

    /// A runtime whose scripts also see what `extra` registers (the test
    /// runner's `assert`).
    pub fn with_globals(
        limits: Limits,
        cache_entries: usize,
        extra: impl FnOnce(&mut GlobalsBuilder),
    ) -> Self {
        let mut builder = GlobalsBuilder::extended_by(builtins::EXTENSIONS);
        builtins::register(&mut builder);
        extra(&mut builder);
        Runtime {
            globals: builder.build(),
            dialect: crate::syntax::dialect(),
            cache: Mutex::new(Bounded::new(cache_entries.max(1), MAX_CACHED_SCRIPT_BYTES)),
            pure_modules: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(PURE_MODULES).expect("a positive size"),
            )),
            limits,
        }
    }

    /// A runtime for Go-format Starlark tests: the test builtins only
    /// ([`builtins::register_for_tests`]), and the test dialect, where a
    /// test file's top-level names are bound once.
    pub fn for_tests(limits: Limits) -> Self {
        let mut builder = GlobalsBuilder::extended_by(builtins::EXTENSIONS);
        builtins::register_for_tests(&mut builder);
        Runtime {
            globals: builder.build(),
            dialect: crate::syntax::dialect(),
            cache: Mutex::new(Bounded::new(64, MAX_CACHED_SCRIPT_BYTES)),
            pure_modules: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(PURE_MODULES).expect("a positive size"),
            )),
            limits,
        }
    }

    /// The evaluated request-independent module of this fingerprint.
    pub(crate) fn pure_module(&self, fingerprint: &[u8; 32]) -> Option<FrozenModule> {
        self.pure_modules
            .lock()
            .expect("module cache lock poisoned")
            .get(fingerprint)
            .cloned()
    }

    /// Keeps an evaluated request-independent module.
    pub(crate) fn keep_pure_module(&self, fingerprint: [u8; 32], module: FrozenModule) {
        self.pure_modules
            .lock()
            .expect("module cache lock poisoned")
            .put(fingerprint, module);
    }

    /// The limits every run has.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The names scripts see, beyond the Starlark universe, in order.
    pub fn global_names(&self) -> Vec<String> {
        self.globals
            .names()
            .map(|n| n.as_str().to_owned())
            .collect()
    }

    /// Compiles `script`, or finds it in the cache. Returns whether it was
    /// a cache hit.
    pub fn compile(&self, script: &Script) -> Result<(Arc<Compiled>, bool), Error> {
        let mut hasher = blake3::Hasher::new();
        hasher.update(script.filename.as_bytes());
        hasher.update(&[0]);
        hasher.update(script.source.as_bytes());
        let key = hasher.finalize().to_hex().to_string();
        if let Some(hit) = self.cache.lock().expect("cache lock poisoned").get(&key) {
            return Ok((hit, true));
        }
        let compiled = Arc::new(self.parse(script)?);
        self.cache
            .lock()
            .expect("cache lock poisoned")
            .insert(key, compiled.clone());
        Ok((compiled, false))
    }

    fn parse(&self, script: &Script) -> Result<Compiled, Error> {
        let pre = crate::syntax::prepass::prepass(&script.source)
            .map_err(|e| Error::Compile(format!("{}:{e}", script.filename)))?;
        let mut ast = AstModule::parse(&script.filename, pre.text, &self.dialect)
            .map_err(|e| Error::Compile(errors::position_and_message(&e, &pre.map)))?;
        let redirects = builtins::operators::REDIRECTS
            .iter()
            .map(|(op, f)| ((*op).to_owned(), (*f).to_owned()))
            .collect();
        ast.replace_binary_operators(&redirects);
        Ok(Compiled {
            filename: script.filename.clone(),
            source_len: script.source.len(),
            ast,
            map: pre.map,
        })
    }

    /// Runs `script` on the current thread with the limits' timeout, for
    /// benches and tests; the engine runs jobs with [`Runtime::run_until`].
    pub fn run_blocking(
        &self,
        script: &Script,
        sources: &Sources,
        request: Arc<Request>,
        cancel: &AtomicBool,
    ) -> Run {
        let _meter = Meter::start(self.limits.max_heap_bytes, false);
        self.run_until(
            script,
            sources,
            request,
            cancel,
            Instant::now() + self.limits.timeout,
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
        let context = Context::new(request, self.limits.max_heap_bytes);
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
            }
        })
    }

    /// Compiles `script` (from the cache when possible) and records the
    /// compilation for the cache metrics.
    pub(crate) fn compile_for(
        &self,
        ctx: &Context,
        script: &Script,
    ) -> Result<Arc<Compiled>, String> {
        let (compiled, hit) = self.compile(script).map_err(|e| match e {
            Error::Compile(text) => text,
            other => other.to_string(),
        })?;
        ctx.compilations
            .borrow_mut()
            .push((script.filename.clone(), hit));
        Ok(compiled)
    }

    /// Applies the run limits to an evaluator. Why a run was stopped is
    /// noted in `ctx.stopped` for the error message.
    pub(crate) fn limit<'e>(
        &self,
        eval: &mut Evaluator<'_, 'e, '_>,
        deadline: Instant,
        cancel: &'e AtomicBool,
        ctx: &'e Context,
    ) -> anyhow::Result<()> {
        eval.set_max_tick_count(self.limits.max_ticks)?;
        eval.set_max_callstack_size(self.limits.max_call_stack)?;
        super::recursion::install(eval, !self.limits.allow_recursion);
        // Memory is the meter's (crate::meter), which counts what the run
        // holds; starlark-rust's own limit counts the garbage it cannot
        // collect inside functions.
        let (heap, timeout) = (self.limits.max_heap_bytes, self.limits.timeout);
        eval.set_check_cancelled(Box::new(move || {
            let stopped = if Meter::over() {
                Some(Stopped::Memory(heap))
            } else if Instant::now() >= deadline || cancel.load(Ordering::Relaxed) {
                Some(Stopped::Time(timeout))
            } else {
                None
            };
            if stopped.is_some() && ctx.stopped.get().is_none() {
                ctx.stopped.set(stopped);
            }
            stopped.is_some()
        }));
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(source: &str) -> u64 {
        let runtime = Runtime::new(Limits::default(), 4);
        let script = Script {
            filename: "calibration.star".to_owned(),
            source: source.to_owned(),
        };
        let run = runtime.run_blocking(
            &script,
            &Sources::default(),
            Arc::default(),
            &AtomicBool::new(false),
        );
        assert!(
            matches!(run.outcome, Outcome::Completed { .. }),
            "the workload must complete"
        );
        run.ticks
    }

    /// The step budget rests on every workload costing the Go interpreter at
    /// least 2 steps per starlark-rust tick. These workloads' Go step counts
    /// were measured with go.starlark.net (`tools/gosteps`); a crate upgrade
    /// or a rewrite that adds ticks (the `while` pre-pass, the operator
    /// redirections, which cost a tick each) shows up here.
    #[test]
    fn the_tick_budget_never_stops_what_go_accepts() {
        let workloads: [(&str, &str, u64); 14] = [
            (
                "additions",
                "def g():\n    for i in range(10000):\n        x = i + 1\n\ng()\n",
                100_016,
            ),
            (
                "chain of ten additions",
                "def g():\n    for i in range(10000):\n        x = i + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1\n\ng()\n",
                280_016,
            ),
            (
                "multiply and add",
                "def g():\n    for i in range(10000):\n        x = i * 2 + 1\n\ng()\n",
                120_016,
            ),
            (
                "while loop",
                "def g():\n    i = 0\n    while i < 10000:\n        i = i + 1\n\ng()\n",
                90_019,
            ),
            (
                "append",
                "def g():\n    l = []\n    for i in range(10000):\n        l.append(i)\n\ng()\n",
                110_018,
            ),
            (
                "native call",
                "def g():\n    for i in range(10000):\n        x = abs(i)\n\ng()\n",
                100_016,
            ),
            ("empty loop", "for i in range(100000):\n    pass\n", 600_008),
            ("comprehension", "x = [0 for i in range(100000)]\n", 900_010),
            (
                "zero-argument calls",
                "def f0():\n    return 0\n\ndef g():\n    for i in range(10000):\n        f0(); f0(); f0(); f0(); f0(); f0(); f0(); f0(); f0(); f0()\n\ng()\n",
                560_019,
            ),
            (
                "nested lambda calls",
                "f = lambda x: x\ndef g():\n    for i in range(10000):\n        f(f(f(f(f(f(f(f(f(f(i))))))))))\n\ng()\n",
                480_019,
            ),
            (
                "interpolation",
                "def g():\n    for i in range(10000):\n        x = \"%d\" % i\n\ng()\n",
                100_016,
            ),
            (
                "augmented interpolation",
                "def g():\n    for i in range(10000):\n        s = \"%d-%s\"\n        s %= (i, \"a\")\n\ng()\n",
                140_016,
            ),
            (
                "left shift",
                "def g():\n    for i in range(10000):\n        x = i << 1\n\ng()\n",
                100_016,
            ),
            (
                "augmented add",
                "def g():\n    t = 0\n    for i in range(10000):\n        t += i\n\ng()\n",
                100_018,
            ),
        ];
        let budget = Limits::default().max_ticks;
        for (name, source, go_steps) in workloads {
            let used = ticks(source);
            assert!(
                go_steps * budget >= used * 1_000_000,
                "{name}: {used} ticks for {go_steps} Go steps; a script at Go's limit would need more than {budget} ticks"
            );
        }
    }

    /// How `while True: pass` ends under `limits`.
    fn endless_loop(limits: Limits) -> Error {
        let runtime = Runtime::new(limits, 4);
        let script = Script {
            filename: "loop.star".to_owned(),
            source: "while True:\n    pass\n".to_owned(),
        };
        let run = runtime.run_blocking(
            &script,
            &Sources::default(),
            Arc::default(),
            &AtomicBool::new(false),
        );
        let Outcome::Failed(e) = run.outcome else {
            panic!("the loop must fail")
        };
        e
    }

    #[test]
    fn an_infinite_loop_is_stopped_with_the_reference_message() {
        let e = endless_loop(Limits::default());
        assert_eq!(
            e.to_string(),
            format!("starlark execution failed: {STEP_LIMIT_MESSAGE}")
        );
    }

    #[test]
    fn a_run_past_its_deadline_is_cancelled() {
        let limits = Limits {
            timeout: Duration::from_millis(50),
            max_ticks: u64::MAX,
            ..Limits::default()
        };
        let e = endless_loop(limits);
        assert!(e.to_string().contains("wall-clock limit"), "{e}");
    }
}
