//! `function-starlark dap`: a debugger for renders, speaking the Debug
//! Adapter Protocol on stdin and stdout. A `launch` names a Composition and
//! an XR (and optionally what `render` also takes); the render runs as
//! `render` would, stopping at breakpoints in `.star` files, in inline
//! modules and in a Composition's inline source at its YAML lines. While
//! stopped, the client steps (in, over, out), reads the call stack, the
//! frame's locals, the request's globals (`oxr`, `observed`, ...) and what
//! the script has composed so far, and evaluates expressions. What scripts
//! print is console output; the rendered YAML is sent as output, as
//! `render` prints it.
//!
//! [`wire`] frames messages, [`places`] maps the runner's script names to
//! the user's files and lines, [`session`] answers requests and watches
//! runs, [`composed`] is the global the "Composed" scope reads.

pub mod composed;
pub mod places;
pub mod session;
pub mod wire;

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use starlark::debug::StepKind;

use crate::render::{Options, RenderArgs};
use places::Places;
use session::{Session, THREAD, Watch};
use wire::Out;

/// How long a script run may take while debugged: stopped at a breakpoint,
/// it waits for the person at the editor.
const DEBUG_TIMEOUT: Duration = Duration::from_hours(24);

/// Serves one debug session on stdin and stdout; the exit status.
pub fn main(options: Options) -> ExitCode {
    let out = Arc::new(Out::new(Box::new(std::io::stdout())));
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut state = State {
        out: out.clone(),
        options: Some(options),
        launch: None,
        session: None,
        handles: Vec::new(),
    };
    loop {
        let request = match wire::read(&mut input) {
            Ok(Some(request)) => request,
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("function-starlark: error: cannot read a debug request: {e}");
                return ExitCode::FAILURE;
            }
        };
        if request["type"] != "request" {
            continue;
        }
        let command = request["command"].as_str().unwrap_or_default().to_owned();
        let answer = state.answer(&command, &request["arguments"]);
        out.respond(&request, answer);
        match command.as_str() {
            "initialize" => out.event("initialized", json!({})),
            "disconnect" | "terminate" => return ExitCode::SUCCESS,
            _ => {}
        }
    }
}

/// The session's state on the main thread.
struct State {
    out: Arc<Out>,
    /// The render's settings, until the render starts.
    options: Option<Options>,
    /// What `launch` asked to render.
    launch: Option<RenderArgs>,
    session: Option<Arc<Session>>,
    /// What `variablesReference`s stand for, until the render resumes.
    handles: Vec<session::Handle>,
}

impl State {
    fn session(&self) -> Result<&Arc<Session>, String> {
        self.session
            .as_ref()
            .ok_or_else(|| "launch a render first".to_owned())
    }

    fn answer(&mut self, command: &str, args: &Value) -> Result<Value, String> {
        match command {
            "initialize" => {
                serde_json::to_value(starlark::debug::dap_capabilities()).map_err(|e| e.to_string())
            }
            "launch" => self.launch(args),
            "setBreakpoints" => self.session()?.set_breakpoints(args),
            "configurationDone" => self.start(),
            "threads" => Ok(json!({"threads": [{"id": THREAD, "name": "render"}]})),
            "stackTrace" => self.session()?.stack_trace(args),
            "scopes" => {
                let session = self.session()?.clone();
                session.scopes(args, &mut self.handles)
            }
            "variables" => {
                let session = self.session()?.clone();
                session.variables(args, &mut self.handles)
            }
            "evaluate" => {
                let session = self.session()?.clone();
                session.evaluate(args, &mut self.handles)
            }
            "continue" | "next" | "stepIn" | "stepOut" => {
                self.handles.clear();
                self.session()?.resume(match command {
                    "next" => Some(StepKind::Over),
                    "stepIn" => Some(StepKind::Into),
                    "stepOut" => Some(StepKind::Out),
                    _ => None,
                })
            }
            "setExceptionBreakpoints" | "disconnect" | "terminate" => Ok(json!({})),
            other => Err(format!(
                "{other} is not supported by function-starlark's debugger"
            )),
        }
    }

    /// `launch`: what to render. `composition` and `xr` are paths, as are
    /// the optional `functions`, `observedResources`, `requiredResources`,
    /// `functionCredentials` and `scriptsDir` (where `scriptConfigRef`
    /// scripts are, as `--scripts-dir`); relative ones are found from
    /// `cwd`.
    fn launch(&mut self, args: &Value) -> Result<Value, String> {
        let cwd = args["cwd"].as_str().map_or_else(
            || std::env::current_dir().unwrap_or_default(),
            PathBuf::from,
        );
        let path = |key: &str| -> Option<PathBuf> {
            args[key]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(|p| cwd.join(p))
        };
        let (Some(composition), Some(xr)) = (path("composition"), path("xr")) else {
            return Err(
                "a launch needs \"composition\" and \"xr\": the paths of the Composition and of the XR to render"
                    .to_owned(),
            );
        };
        let text = std::fs::read_to_string(&composition)
            .map_err(|e| format!("cannot read the Composition {}: {e}", composition.display()))?;
        let composition = absolute(&composition);
        let base = composition
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let places = Places::new(composition.clone(), &text, base);
        self.session = Some(Arc::new(Session::new(self.out.clone(), places)));
        if let (Some(dir), Some(options)) = (path("scriptsDir"), self.options.as_mut()) {
            options.scripts_dir = dir;
        }
        self.launch = Some(RenderArgs {
            composite_resource: xr,
            composition: Some(composition),
            functions: path("functions"),
            watched_resource: None,
            context_files: Vec::new(),
            context_values: Vec::new(),
            include_function_results: args["includeFunctionResults"].as_bool().unwrap_or(false),
            include_full_xr: false,
            include_context: false,
            observed_resources: path("observedResources"),
            required_resources: path("requiredResources"),
            extra_resources: None,
            function_credentials: path("functionCredentials"),
        });
        Ok(json!({}))
    }

    /// `configurationDone`: the breakpoints are set; the render starts.
    fn start(&mut self) -> Result<Value, String> {
        let (Some(args), Some(session), Some(mut options)) = (
            self.launch.clone(),
            self.session.clone(),
            self.options.take(),
        ) else {
            return Err("launch a render first".to_owned());
        };
        options.limits.timeout = DEBUG_TIMEOUT;
        options.debugger = Some(Arc::new(Watch(session)));
        let out = self.out.clone();
        std::thread::spawn(move || {
            let code = match render(&args, options) {
                Ok(text) => {
                    out.event("output", json!({"category": "stdout", "output": text}));
                    0
                }
                Err(text) => {
                    out.event(
                        "output",
                        json!({"category": "stderr", "output": format!("{text}\n")}),
                    );
                    1
                }
            };
            out.event("exited", json!({"exitCode": code}));
            out.event("terminated", json!({}));
        });
        Ok(json!({}))
    }
}

/// Renders as `render` does: the output text, or the error it prints.
fn render(args: &RenderArgs, options: Options) -> Result<String, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(16 << 20)
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime
        .block_on(crate::render::render(args, options))
        .map_err(|(what, e)| format!("function-starlark: error: cannot render {what}: {e}"))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
