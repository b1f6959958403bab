//! One debug session: the client's requests, answered on the main thread,
//! and the render, run on a thread of its own. Each script run the render
//! makes gets a fresh adapter from `starlark::debug`; the breakpoints the
//! client set are placed on every script as it is compiled.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use debugserver_types::SetBreakpointsArguments;
use serde_json::{Value, json};
use starlark::codemap::{FileSpanRef, Span};
use starlark::debug::{
    DapAdapter, DapAdapterClient, DapAdapterEvalHook, PathSegment, StepKind, VariablePath,
    prepare_dap_adapter, resolve_breakpoints,
};
use starlark::eval::{BeforeStmtFunc, BeforeStmtFuncDyn, Evaluator};
use starlark::syntax::AstModule;
use starlark::syntax::ast::StmtP;

use super::places::Places;
use super::wire::Out;
use crate::runner::compiled::Compiled;
use crate::runner::debugging::Debugger;
use crate::syntax::line_map::LineMap;

/// A breakpoint the client asked for: its 0-based line and condition.
#[derive(Debug, Clone)]
struct Wanted {
    line: usize,
    condition: Option<String>,
}

/// A compiled script: where its statements are and how its lines map to
/// the user's.
struct Script {
    ast: AstModule,
    map: LineMap,
    /// Where its top-level statements are.
    top_level: Vec<Span>,
}

/// What the client's requests and the render's runs share.
pub struct Session {
    out: Arc<Out>,
    places: Places,
    /// Breakpoints by the user's file.
    wanted: Mutex<HashMap<PathBuf, Vec<Wanted>>>,
    /// Every script compiled so far, by the runner's name for it.
    scripts: Mutex<HashMap<String, Script>>,
    /// The adapter of the script run in progress.
    adapter: Mutex<Option<Arc<dyn DapAdapter + Sync>>>,
    /// What the client last asked the render to do: a step, or continue.
    resumed: Mutex<Option<StepKind>>,
    /// Whether the statement about to run was announced just before.
    repeated: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Tells the client the render stopped.
#[derive(Debug)]
struct Stopped(Arc<Session>);

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Session")
    }
}

impl DapAdapterClient for Stopped {
    fn event_stopped(&self) -> starlark::Result<()> {
        let session = &self.0;
        let resumed = *lock(&session.resumed);
        if session.repeated.load(Ordering::SeqCst)
            && let Some(adapter) = lock(&session.adapter).clone()
        {
            // From another thread: the adapter waits for this one to take
            // the request.
            std::thread::spawn(move || match resumed {
                Some(kind) => adapter.step(kind),
                None => adapter.continue_(),
            });
            return Ok(());
        }
        let reason = if resumed.is_some() {
            "step"
        } else {
            "breakpoint"
        };
        self.0.out.event(
            "stopped",
            json!({"reason": reason, "threadId": THREAD, "allThreadsStopped": true}),
        );
        Ok(())
    }
}

/// The one thread a render is to the client.
pub const THREAD: i64 = 1;

/// The session's handle on runs: [`Session`] behind an `Arc`, so that a
/// run's adapter can reach it.
pub struct Watch(pub Arc<Session>);

impl Debugger for Watch {
    fn compiled(&self, compiled: &Compiled) {
        let session = &self.0;
        let text = compiled
            .ast
            .stmt_locations()
            .first()
            .map(|s| s.file.source().to_owned())
            .unwrap_or_default();
        session.places.compiled(&compiled.filename, &text);
        lock(&session.scripts).insert(
            compiled.filename.clone(),
            Script {
                ast: compiled.ast.clone(),
                map: compiled.map.clone(),
                top_level: top_level(&compiled.ast),
            },
        );
        let adapter = lock(&session.adapter).clone();
        if let Some(adapter) = adapter {
            session.place(adapter.as_ref(), &compiled.filename);
        }
    }

    fn attach(&self, eval: &mut Evaluator<'_, '_, '_>) {
        let session = &self.0;
        let (adapter, hook) = prepare_dap_adapter(Box::new(Stopped(session.clone())));
        let names: Vec<String> = lock(&session.scripts).keys().cloned().collect();
        for name in &names {
            session.place(&adapter, name);
        }
        *lock(&session.adapter) = Some(Arc::new(adapter));
        // Ahead of the adapter's hook, so that it knows the statement when
        // the adapter stops.
        eval.before_stmt_for_dap(BeforeStmtFunc::from_dyn(Box::new(Repeats {
            session: session.clone(),
            last: None,
        })));
        Box::new(hook).add_dap_hooks(eval);
    }

    fn globals(&self, builder: &mut starlark::environment::GlobalsBuilder) {
        super::composed::register(builder);
    }

    fn print(&self, text: &str) {
        self.0.out.event(
            "output",
            json!({"category": "console", "output": format!("{text}\n")}),
        );
    }
}

/// Notes when a top-level statement is announced twice in a row.
/// starlark-rust runs each top-level statement of a module as code of its
/// own, and that code announces its statement twice, so a step or a
/// continue from one stops on it again. The second stop is not shown: the
/// session repeats what the client last asked for instead.
struct Repeats {
    session: Arc<Session>,
    /// The statement announced last, and the call depth it was at.
    last: Option<(String, Span, usize)>,
}

impl<'e> BeforeStmtFuncDyn<'e> for Repeats {
    fn call<'v>(
        &mut self,
        at: FileSpanRef,
        continued: bool,
        eval: &mut Evaluator<'v, '_, 'e>,
    ) -> starlark::Result<()> {
        let here =
            (!continued).then(|| (at.filename().to_owned(), at.span, eval.call_stack_count()));
        let repeated = here.is_some()
            && here == self.last
            && lock(&self.session.scripts)
                .get(at.filename())
                .is_some_and(|s| s.top_level.contains(&at.span));
        self.session.repeated.store(repeated, Ordering::SeqCst);
        self.last = here;
        Ok(())
    }
}

/// What a `variablesReference` stands for.
#[derive(Clone)]
pub enum Handle {
    /// The locals of a frame.
    Locals(usize),
    /// The request's globals: `oxr`, `observed` and the rest.
    Request,
    /// A value's children, at a frame.
    Children(usize, VariablePath),
}

impl Session {
    pub fn new(out: Arc<Out>, places: Places) -> Self {
        Session {
            out,
            places,
            wanted: Mutex::default(),
            scripts: Mutex::default(),
            adapter: Mutex::default(),
            resumed: Mutex::new(None),
            repeated: AtomicBool::new(false),
        }
    }

    /// Places the breakpoints wanted in the script the runner names
    /// `name` on `adapter`.
    fn place(&self, adapter: &dyn DapAdapter, name: &str) {
        let scripts = lock(&self.scripts);
        let Some(script) = scripts.get(name) else {
            return;
        };
        let mut lines = Vec::new();
        for (path, wanted) in lock(&self.wanted).iter() {
            for w in wanted {
                if let Some(line) = self.places.script_line(path, w.line, name)
                    && let Some(at) = compiled_line(script, line)
                {
                    lines.push(json!({"line": at + 1, "condition": w.condition}));
                }
            }
        }
        let args: SetBreakpointsArguments = serde_json::from_value(json!({
            "source": {"path": name},
            "breakpoints": lines,
        }))
        .expect("well-formed breakpoint arguments");
        if let Ok(resolved) = resolve_breakpoints(&args, &script.ast) {
            let _ = adapter.set_breakpoints(name, &resolved);
        }
    }

    /// `setBreakpoints`: kept for every script compiled from now on and
    /// placed in those compiled already; verified where a statement starts.
    pub fn set_breakpoints(&self, args: &Value) -> Result<Value, String> {
        let path = PathBuf::from(args["source"]["path"].as_str().unwrap_or_default());
        let wanted: Vec<Wanted> = args["breakpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| Wanted {
                line: usize::try_from(b["line"].as_i64().unwrap_or(1) - 1).unwrap_or(0),
                condition: b["condition"].as_str().map(str::to_owned),
            })
            .collect();
        let starts = statement_lines(&path, &self.places);
        let verdicts: Vec<Value> = wanted
            .iter()
            .map(|w| {
                let verified = starts.contains(&w.line);
                let mut b = json!({"verified": verified, "line": w.line + 1});
                if !verified {
                    b["message"] = json!("no statement starts on this line");
                }
                b
            })
            .collect();
        lock(&self.wanted).insert(path, wanted);
        let adapter = lock(&self.adapter).clone();
        if let Some(adapter) = adapter {
            let names: Vec<String> = lock(&self.scripts).keys().cloned().collect();
            for name in &names {
                self.place(adapter.as_ref(), name);
            }
        }
        Ok(json!({"breakpoints": verdicts}))
    }

    fn adapter(&self) -> Result<Arc<dyn DapAdapter + Sync>, String> {
        lock(&self.adapter)
            .clone()
            .ok_or_else(|| "the render is not running a script".to_owned())
    }

    /// `stackTrace`: the frames, at the user's lines.
    pub fn stack_trace(&self, args: &Value) -> Result<Value, String> {
        let body = self
            .adapter()?
            .stack_trace(serde_json::from_value(args.clone()).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let mut body = serde_json::to_value(body).map_err(|e| e.to_string())?;
        for frame in body["stackFrames"].as_array_mut().into_iter().flatten() {
            self.relocate(frame);
        }
        Ok(body)
    }

    /// Moves a frame from the runner's script to the user's file.
    fn relocate(&self, frame: &mut Value) {
        let Some(name) = frame["source"]["path"].as_str().map(str::to_owned) else {
            return;
        };
        let (line, column) = (
            number(&frame["line"]).saturating_sub(1),
            number(&frame["column"]).saturating_sub(1),
        );
        let (line, column) = match lock(&self.scripts).get(&name) {
            Some(script) => script.map.original(line, column),
            None => (line, column),
        };
        let place = self.places.of(&name);
        frame["source"] = json!({
            "name": place.path.file_name().map(|n| n.to_string_lossy().into_owned()),
            "path": place.path,
        });
        frame["line"] = json!(place.line + line + 1);
        frame["column"] = json!(place.column + column + 1);
        frame
            .as_object_mut()
            .map(|f| (f.remove("endLine"), f.remove("endColumn")));
    }

    /// `scopes`: the frame's locals, the request's globals and what the
    /// script has composed so far.
    pub fn scopes(&self, args: &Value, handles: &mut Vec<Handle>) -> Result<Value, String> {
        let frame = frame_of(args);
        let mut scope = |name: &str, handle: Handle, hint: Option<&str>| {
            handles.push(handle);
            let mut s =
                json!({"name": name, "variablesReference": handles.len(), "expensive": false});
            if let Some(hint) = hint {
                s["presentationHint"] = json!(hint);
            }
            s
        };
        Ok(json!({"scopes": [
            scope("Locals", Handle::Locals(frame), Some("locals")),
            scope("Request", Handle::Request, None),
            scope(
                "Composed",
                Handle::Children(0, VariablePath::new_expression(format!("{}()", super::composed::NAME))),
                None,
            ),
        ]}))
    }

    /// `variables`: the children of a handle.
    pub fn variables(&self, args: &Value, handles: &mut Vec<Handle>) -> Result<Value, String> {
        let reference = number(&args["variablesReference"]);
        let handle = reference
            .checked_sub(1)
            .and_then(|i| handles.get(i))
            .cloned()
            .ok_or_else(|| format!("no variables are known by reference {reference}"))?;
        let adapter = self.adapter()?;
        let mut variables = Vec::new();
        let mut add = |name: String, value: String, type_: String, children: Option<Handle>| {
            let reference = children.map_or(0, |h| {
                handles.push(h);
                handles.len()
            });
            variables.push(json!({"name": name, "value": value, "type": type_, "variablesReference": reference}));
        };
        match handle {
            Handle::Locals(frame) => {
                for v in adapter.variables(frame).map_err(|e| e.to_string())?.locals {
                    let name = v.name.to_string();
                    let children = v
                        .has_children
                        .then(|| children(&name, &v.type_, frame, true));
                    add(name, v.value, v.type_, children);
                }
            }
            Handle::Request => {
                for name in crate::bindings::REQUEST_GLOBALS {
                    let Ok(v) = adapter.evaluate(name) else {
                        continue;
                    };
                    let children = v.has_children.then(|| children(name, &v.type_, 0, false));
                    add(name.to_owned(), v.result, v.type_, children);
                }
            }
            Handle::Children(frame, path) => {
                let info = adapter
                    .inspect_variable(frame, path.clone())
                    .map_err(|e| e.to_string())?;
                for v in info.sub_values {
                    let name = match &v.name {
                        PathSegment::Key(k) => format!("{k:?}"),
                        other => other.to_string(),
                    };
                    let children = v
                        .has_children
                        .then(|| Handle::Children(frame, path.make_child(v.name.clone())));
                    add(name, v.value, v.type_, children);
                }
            }
        }
        Ok(json!({"variables": variables}))
    }

    /// `evaluate`: an expression in the innermost frame.
    pub fn evaluate(&self, args: &Value, handles: &mut Vec<Handle>) -> Result<Value, String> {
        let expression = args["expression"].as_str().unwrap_or_default();
        let info = self
            .adapter()?
            .evaluate(expression)
            .map_err(|e| format!("{e:#}"))?;
        let reference = if info.has_children {
            handles.push(children(expression, &info.type_, 0, false));
            handles.len()
        } else {
            0
        };
        Ok(json!({"result": info.result, "type": info.type_, "variablesReference": reference}))
    }

    /// `continue`, `next`, `stepIn` and `stepOut`.
    pub fn resume(&self, step: Option<StepKind>) -> Result<Value, String> {
        let adapter = self.adapter()?;
        *lock(&self.resumed) = step;
        match step {
            None => adapter.continue_(),
            Some(kind) => adapter.step(kind),
        }
        .map_err(|e| e.to_string())?;
        Ok(json!({"allThreadsContinued": true}))
    }
}

/// The handle on the children of `name` (a local of `frame`, else an
/// expression). The request's dicts (`oxr` and what is read from it) are
/// the function's own type, which the adapter cannot open: in the innermost
/// frame they are read as the plain dicts their JSON makes.
fn children(name: &str, type_: &str, frame: usize, local: bool) -> Handle {
    if type_ == "dict" && frame == 0 {
        return Handle::Children(
            0,
            VariablePath::new_expression(format!("json.decode(json.encode({name}))")),
        );
    }
    if local {
        Handle::Children(frame, VariablePath::new_local(name))
    } else {
        Handle::Children(frame, VariablePath::new_expression(name))
    }
}

/// The spans of a module's top-level statements.
fn top_level(ast: &AstModule) -> Vec<Span> {
    match &ast.statement().node {
        StmtP::Statements(stmts) => stmts.iter().map(|s| s.span).collect(),
        _ => vec![ast.statement().span],
    }
}

/// The frame a request names (0: the innermost).
fn frame_of(args: &Value) -> usize {
    number(&args["frameId"])
}

/// A non-negative number of the protocol's, 0 when it is not one.
fn number(v: &Value) -> usize {
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
}

/// The line of `script` (0-based, as compiled) where the statement at
/// the user's `line` starts.
fn compiled_line(script: &Script, line: usize) -> Option<usize> {
    script
        .ast
        .stmt_locations()
        .iter()
        .map(|s| s.resolve_span().begin)
        .find(|at| script.map.original(at.line, at.column).0 == line)
        .map(|at| at.line)
}

/// The 0-based lines of `path` on which a statement starts: of its own
/// script for a `.star` file, of its inline scripts for the Composition.
fn statement_lines(path: &Path, places: &Places) -> Vec<usize> {
    let dialect = crate::syntax::dialect();
    let starts = |name: &str, text: &str| -> Vec<usize> {
        let Ok(pre) = crate::syntax::prepass::prepass(text) else {
            return Vec::new();
        };
        AstModule::parse(name, pre.text, &dialect)
            .map(|ast| {
                ast.stmt_locations()
                    .iter()
                    .map(|s| s.resolve_span().begin)
                    .map(|at| pre.map.original(at.line, at.column).0)
                    .collect()
            })
            .unwrap_or_default()
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    if places.in_composition(path, 0).is_none() {
        return starts(&path.display().to_string(), &text);
    }
    crate::check::inline_scripts(&text)
        .into_iter()
        .flat_map(|(name, script, (line, _))| {
            starts(&name, &script).into_iter().map(move |l| l + line)
        })
        .collect()
}
