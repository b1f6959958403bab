//! The runtime: what every run of a process shares. The globals, built
//! once; a cache of compiled scripts; the request-independent modules; and
//! the limits, applied to each evaluator a run makes.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use starlark::environment::{FrozenModule, Globals, GlobalsBuilder};
use starlark::eval::Evaluator;
use starlark::syntax::{AstModule, Dialect};

use super::compiled::Compiled;
use super::debugging::Debugger;
use super::errors;
use crate::builtins;
use crate::cache::Bounded;
use crate::effects::{Context, Stopped};
use crate::error::Error;
use crate::input::Script;
use crate::limits::Limits;
use crate::meter::Meter;

pub use crate::error::STEP_LIMIT_MESSAGE;

/// The memory compiled scripts may take in one cache, roughly: a parsed
/// script takes about 40 times its source.
pub const MAX_CACHED_SCRIPT_BYTES: usize = 64 << 20;

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
    /// The debugger watching runs, when one is (`function-starlark dap`).
    debugger: Option<Arc<dyn Debugger>>,
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
            debugger: None,
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
            debugger: None,
        }
    }

    /// This runtime with `debugger` watching its runs.
    #[must_use]
    pub fn with_debugger(mut self, debugger: Option<Arc<dyn Debugger>>) -> Self {
        self.debugger = debugger;
        self
    }

    /// Lets the debugger, if any, stop the script run starting on `eval`.
    pub(crate) fn attach_debugger(&self, eval: &mut Evaluator<'_, '_, '_>) {
        if let Some(debugger) = &self.debugger {
            debugger.attach(eval);
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
        if let Some(debugger) = &self.debugger {
            debugger.compiled(&compiled);
        }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::loader::Sources;
    use crate::runner::Outcome;

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
