//! Evaluating loaded modules: once per request, from the sources gathered
//! before evaluation, each in its own evaluator with its own step budget,
//! seeing the request's globals. Also the expansion of star and namespace
//! imports, which needs a module's exports before its importer compiles.
//!
//! A module that cannot see the request is evaluated once per distinct
//! content and kept by the runtime: one that names no request global and
//! none of the builtins that read them ([`crate::builtins::MODULE_READERS`]),
//! loads only such modules and has no star import, and whose top level
//! never reached the request context (no `Resource`, `print`, ... while it
//! ran). Such a module runs without the request globals bound, so its
//! values hold nothing of the request. Its fingerprint covers its own
//! source and, in order, those of everything it loads.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::anyhow;
use starlark::environment::{FrozenModule, Module};
use starlark::eval::{Evaluator, FileLoader};

use super::errors;
use super::runtime::Runtime;
use crate::bindings::{REQUEST_GLOBALS, Shared};
use crate::effects::Context;
use crate::error::{Error, STEP_LIMIT_MESSAGE};
use crate::go::names::unreserve;
use crate::input::Script;
use crate::loader::Sources;
use crate::loader::target::{NO_DIRECTORY_ADVICE, NOT_FLAT_DETAIL};

/// The state of loading for one request.
pub(crate) struct RequestLoader<'a> {
    pub runtime: &'a Runtime,
    pub shared: &'a Shared,
    pub ctx: &'a Context,
    pub sources: &'a Sources,
    pub cancel: &'a AtomicBool,
    pub deadline: Instant,
    results: RefCell<HashMap<String, Result<FrozenModule, String>>>,
    in_progress: RefCell<HashSet<String>>,
    /// Each module's [`RequestLoader::pure_fingerprint`], once worked out.
    fingerprints: RefCell<HashMap<String, Option<[u8; 32]>>>,
    /// Whether modules see the request's globals (not in Go-format tests).
    binds_request: bool,
    /// Modules given by name, answered before any lookup (`assert.star`
    /// in Go-format tests).
    given: HashMap<String, FrozenModule>,
}

impl<'a> RequestLoader<'a> {
    pub fn new(
        runtime: &'a Runtime,
        shared: &'a Shared,
        ctx: &'a Context,
        sources: &'a Sources,
        cancel: &'a AtomicBool,
        deadline: Instant,
    ) -> Self {
        RequestLoader {
            runtime,
            shared,
            ctx,
            sources,
            cancel,
            deadline,
            results: RefCell::default(),
            in_progress: RefCell::default(),
            fingerprints: RefCell::default(),
            binds_request: true,
            given: HashMap::new(),
        }
    }

    /// The loader of a Go-format test file: its modules do not see a
    /// request, and `given` answers loads of those exact names.
    pub fn for_tests(mut self, given: HashMap<String, FrozenModule>) -> Self {
        self.binds_request = false;
        self.given = given;
        self
    }

    /// The loader the evaluator of `caller` asks.
    pub fn for_caller(&'a self, caller: &str) -> CallerLoader<'a> {
        CallerLoader {
            request: self,
            caller: caller.to_owned(),
        }
    }

    /// Loads `raw` as written in `caller`: executed once per request, its
    /// result (or failure) shared by every importer.
    pub fn load(&self, raw: &str, caller: &str) -> Result<FrozenModule, String> {
        if let Some(module) = self.given.get(raw) {
            return Ok(module.clone());
        }
        let target = self.sources.classify(raw, caller)?;
        let key = target.key().to_owned();
        if let Some(result) = self.results.borrow().get(&key) {
            return result.clone();
        }
        if !self.in_progress.borrow_mut().insert(key.clone()) {
            return Err(format!("cycle in load graph: {key}"));
        }
        let result = self.execute(&key);
        self.in_progress.borrow_mut().remove(&key);
        self.results.borrow_mut().insert(key, result.clone());
        result
    }

    /// The fingerprint of `key` if it is a module that cannot see the
    /// request (see the module documentation), with what it loads.
    fn pure_fingerprint(&self, key: &str, visiting: &mut Vec<String>) -> Option<[u8; 32]> {
        if let Some(known) = self.fingerprints.borrow().get(key) {
            return *known;
        }
        if visiting.iter().any(|k| k == key) {
            return None;
        }
        let fingerprint = self.work_out_fingerprint(key, visiting);
        self.fingerprints
            .borrow_mut()
            .insert(key.to_owned(), fingerprint);
        fingerprint
    }

    fn work_out_fingerprint(&self, key: &str, visiting: &mut Vec<String>) -> Option<[u8; 32]> {
        let source = self.sources.get(key).ok()?;
        if has_star_import(source) || names_the_request(source) {
            return None;
        }
        let (compiled, _) = self
            .runtime
            .compile(&Script {
                filename: key.to_owned(),
                source: source.to_owned(),
            })
            .ok()?;
        let mut hasher = blake3::Hasher::new();
        hasher.update(key.as_bytes());
        hasher.update(&[0]);
        hasher.update(source.as_bytes());
        visiting.push(key.to_owned());
        let dependencies: Option<Vec<[u8; 32]>> = compiled
            .ast
            .loads()
            .iter()
            .map(|load| {
                let target = self.sources.classify(load.module_id, key).ok()?;
                self.pure_fingerprint(target.key(), visiting)
            })
            .collect();
        visiting.pop();
        for dependency in dependencies? {
            hasher.update(&dependency);
        }
        Some(*hasher.finalize().as_bytes())
    }

    fn execute(&self, key: &str) -> Result<FrozenModule, String> {
        let pure = self.pure_fingerprint(key, &mut Vec::new());
        if let Some(fingerprint) = &pure
            && let Some(module) = self.runtime.pure_module(fingerprint)
        {
            self.ctx
                .compilations
                .borrow_mut()
                .push((key.to_owned(), true));
            return Ok(module);
        }
        let source = self.sources.get(key)?;
        let source = self
            .expand_stars(key, source)
            .map_err(|e| format!("expanding star imports in module {key}: {e}"))?;
        let compiled = self
            .runtime
            .compile_for(
                self.ctx,
                &Script {
                    filename: key.to_owned(),
                    source,
                },
            )
            .map_err(|e| format!("compiling module {key}: {e}"))?;
        let fatal_before = self.ctx.effects.fatal.borrow().is_some();
        let touched = self.ctx.touched.get();
        Module::with_temp_heap(|module| {
            if pure.is_none() && self.binds_request {
                self.shared.bind_module(&module);
            }
            let caller = self.for_caller(key);
            let result = {
                let mut eval = Evaluator::new(&module);
                eval.extra = Some(self.ctx);
                self.runtime
                    .limit(&mut eval, self.deadline, self.cancel, self.ctx)
                    .map_err(|e| e.to_string())?;
                eval.set_loader(&caller);
                eval.eval_module(compiled.ast.clone(), &self.runtime.globals)
            };
            if let Err(e) = result {
                // fatal() at a module's top level is an ordinary load failure.
                if !fatal_before {
                    self.ctx.effects.fatal.borrow_mut().take();
                }
                if let Some(stopped) = self.ctx.stopped.get() {
                    let budget = errors::execution_error(
                        &e,
                        &compiled,
                        Some(stopped),
                        super::recursion::last_statement(),
                    );
                    return Err(budget.to_string());
                }
                let text = e.without_diagnostic().to_string();
                if text.starts_with(errors::TICK_LIMIT_PREFIX) {
                    return Err(format!(
                        "module {key} {}",
                        STEP_LIMIT_MESSAGE.trim_start_matches("starlark script ")
                    ));
                }
                return Err(match errors::execution_error(&e, &compiled, None, None) {
                    Error::Compile(compile) => format!("compiling module {key}: {compile}"),
                    Error::Runtime(traceback) => format!(
                        "error in module {key}: Traceback (most recent call last):\n{traceback}"
                    ),
                    other => other.to_string(),
                });
            }
            let frozen = module
                .freeze()
                .map_err(|e| format!("error in module {key}: {e:?}"))?;
            if let Some(fingerprint) = pure
                && self.ctx.touched.get() == touched
            {
                self.runtime.keep_pure_module(fingerprint, frozen.clone());
            }
            Ok(frozen)
        })
    }

    /// Rewrites the star (`"*"`) and namespace (`ns="*"`) imports of `file`
    /// into explicit ones, loading each target to learn its exports. The
    /// rewritten statement keeps its lines, so positions stay true.
    pub fn expand_stars(&self, file: &str, source: &str) -> Result<String, String> {
        if !has_star_import(source) {
            return Ok(source.to_owned());
        }
        let Some((ast, map)) = crate::syntax::parse_quietly(file, source) else {
            // A file that does not parse is left as it is; compiling it
            // reports the syntax error.
            return Ok(source.to_owned());
        };
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        for load in ast.loads() {
            if !load.symbols.values().any(|their| *their == "*") {
                continue;
            }
            let raw = load.module_id;
            let resolved = self.sources.classify(raw, file).map_err(|e| {
                // Star imports word the refusals of relative loads shorter.
                let short = e
                    .replace(NO_DIRECTORY_ADVICE, "")
                    .replace(NOT_FLAT_DETAIL, "");
                format!("resolving star import from {raw:?}: {short}")
            })?;
            let module = self
                .load(raw, file)
                .map_err(|e| format!("resolving star import from {:?}: {e}", resolved.key()))?;
            let exports = exports(&module);
            let explicit: Vec<(&str, &str)> = load
                .symbols
                .iter()
                .filter(|(_, their)| **their != "*")
                .map(|(local, their)| (*local, *their))
                .collect();
            let mut args = String::new();
            for (local, their) in &explicit {
                let _ = write!(
                    args,
                    ", {}={}",
                    unreserve(local),
                    crate::syntax::string_literal(unreserve(their))
                );
            }
            if load.symbols.contains_key("*") {
                for name in &exports {
                    if !explicit.iter().any(|(local, _)| unreserve(local) == name) {
                        let _ = write!(args, ", {}", crate::syntax::string_literal(name));
                    }
                }
            }
            let aliases: Vec<&str> = load
                .symbols
                .iter()
                .filter(|(local, their)| **their == "*" && **local != "*")
                .map(|(local, _)| *local)
                .collect();
            for alias in &aliases {
                for name in &exports {
                    let _ = write!(
                        args,
                        ", _ns_{alias}__{name}={}",
                        crate::syntax::string_literal(name)
                    );
                }
            }
            // A star that binds nothing leaves no load at all (the module
            // already ran to reveal that it exports nothing).
            let mut statements = Vec::new();
            if !args.is_empty() {
                statements.push(format!(
                    "load({}{args})",
                    crate::syntax::string_literal(raw)
                ));
            }
            for alias in &aliases {
                let fields: Vec<String> = exports
                    .iter()
                    .map(|name| format!("{name} = _ns_{alias}__{name}"))
                    .collect();
                statements.push(format!("{alias} = struct({})", fields.join(", ")));
            }
            if statements.is_empty() {
                statements.push("pass".to_owned());
            }
            let statement = statements.join("; ");
            // The span covers the module string; the statement is found
            // around it, in the original text.
            let span = load.span.resolve_span();
            let at = offset(source, map.original(span.begin.line, span.begin.column));
            if let Some((from, to)) = statement_bounds(source, at) {
                edits.push((from, to, statement));
            }
        }
        Ok(apply_edits(source, &edits))
    }
}

/// Whether `source` may hold a star or namespace import (`"*"`).
fn has_star_import(source: &str) -> bool {
    source.contains("\"*\"") || source.contains("'*'")
}

/// Whether `source` names a request global or a builtin that reads them,
/// as a whole word anywhere (in a comment or string too, which only makes
/// the answer cautious).
fn names_the_request(source: &str) -> bool {
    REQUEST_GLOBALS
        .iter()
        .chain(crate::builtins::MODULE_READERS.iter())
        .any(|name| {
            source.match_indices(name).any(|(at, _)| {
                let word = |c: char| c.is_alphanumeric() || c == '_';
                !source[..at].ends_with(word) && !source[at + name.len()..].starts_with(word)
            })
        })
}

/// A module's exports: its public globals, without the request globals
/// every module is given.
fn exports(module: &FrozenModule) -> Vec<String> {
    let mut names: Vec<String> = module
        .names()
        .map(|n| unreserve(n.as_str()).to_owned())
        .filter(|n| !n.starts_with('_') && !REQUEST_GLOBALS.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

/// The byte offset of a 0-based (line, column in characters) position.
fn offset(source: &str, (line, column): (usize, usize)) -> usize {
    let mut start = 0;
    for (i, l) in source.split_inclusive('\n').enumerate() {
        if i == line {
            return start + l.char_indices().nth(column).map_or(l.len(), |(i, _)| i);
        }
        start += l.len();
    }
    source.len()
}

/// The byte range of the `load(...)` statement whose module string starts
/// at `at`: back to the `load` keyword, forward to the closing parenthesis
/// (skipping string literals, which may contain parentheses).
fn statement_bounds(source: &str, at: usize) -> Option<(usize, usize)> {
    let before = source.get(..at)?;
    let open = before.rfind('(')?;
    let start = before[..open]
        .trim_end()
        .strip_suffix("load")
        .map(str::len)?;
    let bytes = source.as_bytes();
    let mut i = at;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            // Inside a string a backslash skips the next byte.
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            None if c == b'"' || c == b'\'' => quote = Some(c),
            None if c == b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            None if c == b')' => return Some((start, i + 1)),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Replaces each byte range with its text, padding with newlines so that
/// every line after the edit keeps its number.
fn apply_edits(source: &str, edits: &[(usize, usize, String)]) -> String {
    let mut out = String::with_capacity(source.len());
    let mut cursor = 0;
    for (from, to, text) in edits {
        if *from < cursor || to < from {
            continue;
        }
        out.push_str(&source[cursor..*from]);
        out.push_str(text);
        out.extend(std::iter::repeat_n(
            '\n',
            source[*from..*to].matches('\n').count(),
        ));
        cursor = *to;
    }
    out.push_str(&source[cursor..]);
    out
}

/// What one file's evaluator asks when it runs a `load` statement.
pub(crate) struct CallerLoader<'a> {
    request: &'a RequestLoader<'a>,
    caller: String,
}

impl FileLoader for CallerLoader<'_> {
    fn load(&self, path: &str) -> starlark::Result<FrozenModule> {
        self.request.load(path, &self.caller).map_err(|e| {
            self.request.ctx.load_failed.set(true);
            starlark::Error::new_other(anyhow!("cannot load {path}: {e}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::{Script, apply_edits, names_the_request, statement_bounds};

    #[test]
    fn edits_keep_the_line_numbers_of_what_follows() {
        let source = "load(\n  \"m.star\",\n  \"*\",\n)\nx = 1\n";
        let at = source.find("\"m.star").unwrap();
        let (from, to) = statement_bounds(source, at).unwrap();
        assert_eq!((from, to), (0, source.find(')').unwrap() + 1));
        let out = apply_edits(source, &[(from, to, "load(\"m.star\", \"a\")".to_owned())]);
        assert_eq!(out, "load(\"m.star\", \"a\")\n\n\n\nx = 1\n");
    }

    #[test]
    fn statement_bounds_skip_parentheses_in_strings() {
        let source = "x = 1; load('m(1).star', a = '*')  # )\n";
        let at = source.find("'m(").unwrap();
        let (from, to) = statement_bounds(source, at).unwrap();
        assert_eq!(&source[from..to], "load('m(1).star', a = '*')");
    }

    /// Runs `main` with inline `modules` on `runtime`; how many modules the
    /// runtime keeps afterwards.
    fn kept_after(runtime: &super::Runtime, main: &str, modules: &[(&str, &str)]) -> usize {
        let sources = crate::loader::Sources::inline(
            modules
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        let script = Script {
            filename: "main.star".to_owned(),
            source: main.to_owned(),
        };
        let run = runtime.run_blocking(
            &script,
            &sources,
            std::sync::Arc::default(),
            &AtomicBool::new(false),
        );
        assert!(
            matches!(run.outcome, super::super::run::Outcome::Completed { .. }),
            "the script runs"
        );
        runtime
            .pure_modules
            .lock()
            .expect("module cache lock poisoned")
            .len()
    }

    #[test]
    fn only_modules_that_cannot_see_the_request_are_kept() {
        use super::super::runtime::Runtime;
        use crate::limits::Limits;
        let runtime = Runtime::new(Limits::default(), 8);
        let main = "load('pure.star', 'f')\nload('reader.star', 'g')\nload('effect.star', 'h')\nload('above.star', 'k')\nx = f(1) + g() + h() + k()\n";
        let modules = [
            ("pure.star", "N = 2\ndef f(x):\n    return x * N\n"),
            ("reader.star", "def g():\n    return len(observed)\n"),
            ("effect.star", "print('loaded')\ndef h():\n    return 1\n"),
            (
                "above.star",
                "load('reader.star', 'g')\ndef k():\n    return g()\n",
            ),
        ];
        assert_eq!(kept_after(&runtime, main, &modules), 1, "only pure.star");
        // Kept, not evaluated again: the same one entry after a second run.
        assert_eq!(kept_after(&runtime, main, &modules), 1);
        // Another content is another module.
        let changed = [("pure.star", "N = 3\ndef f(x):\n    return x * N\n")];
        assert_eq!(
            kept_after(&runtime, "load('pure.star', 'f')\nx = f(1)\n", &changed),
            2
        );
    }

    #[test]
    fn a_request_name_anywhere_makes_a_module_request_dependent() {
        assert!(names_the_request("x = oxr.spec\n"));
        assert!(names_the_request(
            "def f():\n    return get_observed('a')\n"
        ));
        assert!(names_the_request("# reads context\n"));
        assert!(!names_the_request("oxr_name = 1\nmy_context = 2\n"));
        assert!(!names_the_request("def f(x):\n    return x\n"));
    }
}
