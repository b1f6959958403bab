//! Go's own libraries as oracles: the `tools/go*` programs in their `serve`
//! mode, one process per tool for the life of the fuzzing process, asked
//! one input at a time. Each request and answer is a JSON document preceded
//! by its length (4 bytes, big-endian); `tools/*/serve.go` is the other end.
//!
//! A tool is built (`go build`, quick from Go's build cache) when a process
//! first asks it, into `FUZZ_ORACLE_DIR` or a folder under the temporary
//! directory. Without `go`, or with `FUZZ_ORACLES=off`, [`ask`] answers
//! `None` and the targets check their own properties only.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{LazyLock, Mutex, PoisonError};

use serde_json::Value;

/// Where the tools' sources are.
const TOOLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tools");

/// A running tool.
struct Oracle {
    // Kept so that the process is a child of this one until it exits (it
    // does when its stdin closes, with this process).
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

/// The tools started so far; `None` for one that could not start.
static ORACLES: LazyLock<Mutex<HashMap<&'static str, Option<Oracle>>>> =
    LazyLock::new(Mutex::default);

/// Go's answer from `tools/<tool>` to `request`, or `None` when the tool
/// cannot run here. Panics when a running tool fails to answer.
pub fn ask(tool: &'static str, request: &Value) -> Option<Value> {
    let mut oracles = ORACLES.lock().unwrap_or_else(PoisonError::into_inner);
    let oracle = oracles
        .entry(tool)
        .or_insert_with(|| start(tool))
        .as_mut()?;
    Some(
        oracle
            .ask(request)
            .unwrap_or_else(|e| panic!("the Go oracle {tool} did not answer: {e}")),
    )
}

/// Whether `tools/<tool>` runs here (it is started if it was not).
pub fn available(tool: &'static str) -> bool {
    let mut oracles = ORACLES.lock().unwrap_or_else(PoisonError::into_inner);
    oracles.entry(tool).or_insert_with(|| start(tool)).is_some()
}

fn start(tool: &str) -> Option<Oracle> {
    match spawn(tool) {
        Ok(oracle) => Some(oracle),
        Err(e) => {
            eprintln!("fuzzing: no Go oracle {tool}, comparing with nothing: {e}");
            None
        }
    }
}

fn spawn(tool: &str) -> Result<Oracle, String> {
    if std::env::var_os("FUZZ_ORACLES").is_some_and(|v| v == "off") {
        return Err("FUZZ_ORACLES=off".to_owned());
    }
    let dir = std::env::var_os("FUZZ_ORACLE_DIR").map_or_else(
        || std::env::temp_dir().join("function-starlark-oracles"),
        PathBuf::from,
    );
    let binary = dir.join(tool);
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(format!("{TOOLS}/{tool}"))
        .status()
        .map_err(|e| format!("cannot run go: {e}"))?;
    if !built.success() {
        return Err(format!("go build of tools/{tool} failed: {built}"));
    }
    let mut child = Command::new(&binary)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let input = child.stdin.take().expect("stdin was piped");
    let output = BufReader::new(child.stdout.take().expect("stdout was piped"));
    Ok(Oracle {
        _child: child,
        input,
        output,
    })
}

impl Oracle {
    fn ask(&mut self, request: &Value) -> std::io::Result<Value> {
        let body = serde_json::to_vec(request)?;
        let size = u32::try_from(body.len()).map_err(std::io::Error::other)?;
        self.input.write_all(&size.to_be_bytes())?;
        self.input.write_all(&body)?;
        self.input.flush()?;
        let mut size = [0; 4];
        self.output.read_exact(&mut size)?;
        let mut answer = vec![0; u32::from_be_bytes(size) as usize];
        self.output.read_exact(&mut answer)?;
        Ok(serde_json::from_slice(&answer)?)
    }
}
