//! `function-starlark dap` spoken to as an editor's debugger client does:
//! breakpoints in a Composition's inline source, in an inline module and in
//! a mounted `.star` file stop the render there; the stack, the request's
//! globals, locals and what was composed are read; steps go in, over and
//! out; the render ends with what `render` prints.

use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

const COMPOSITION: &str = r#"apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: debugged
spec:
  compositeTypeRef:
    apiVersion: example.org/v1
    kind: XThing
  mode: Pipeline
  pipeline:
    - step: inline
      functionRef:
        name: function-starlark
      input:
        apiVersion: starlark.fn.crossplane.io/v1alpha1
        kind: StarlarkInput
        spec:
          source: |
            load("names.star", "name_of")
            size = oxr.spec.size
            name = name_of(size)
            Resource("a", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"n": name}})
            Resource("b", {"apiVersion": "v1", "kind": "ConfigMap"})
            print("composed", name)
          modules:
            names.star: |
              def name_of(n):
                  x = "thing-" + str(n)
                  return x
    - step: mounted
      functionRef:
        name: function-starlark
      input:
        apiVersion: starlark.fn.crossplane.io/v1alpha1
        kind: StarlarkInput
        spec:
          scriptConfigRef:
            name: scripts
            key: main.star
"#;

/// The YAML lines (1-based) of the statements the test stops at.
const NAME_LINE: i64 = 21;
const FIRST_RESOURCE_LINE: i64 = 22;
const SECOND_RESOURCE_LINE: i64 = 23;
const MODULE_FIRST_LINE: i64 = 28;

const MAIN_STAR: &str = r#"def label(n):
    value = "size-" + str(n)
    return value

Resource("c", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": label(oxr.spec.size)}})
"#;

const XR: &str = "apiVersion: example.org/v1
kind: XThing
metadata:
  name: t
spec:
  size: 3
";

/// A debugger client on the adapter's stdio.
struct Client {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    seq: i64,
    /// Events seen while waiting for something else.
    events: Vec<Value>,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
            .arg("dap")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the adapter starts");
        let stdin = child.stdin.take().expect("stdin");
        let messages = crate::common::framed::reader(child.stdout.take().expect("stdout"));
        Client {
            child,
            stdin,
            messages,
            seq: 0,
            events: Vec::new(),
        }
    }

    fn next(&mut self) -> Value {
        self.messages
            .recv_timeout(Duration::from_mins(1))
            .expect("the adapter answers within a minute")
    }

    /// Sends a request; its whole response.
    fn call(&mut self, command: &str, arguments: Value) -> Value {
        self.seq += 1;
        let request =
            json!({"seq": self.seq, "type": "request", "command": command, "arguments": arguments});
        crate::common::framed::write(&mut self.stdin, &request);
        loop {
            let m = self.next();
            if m["type"] == "response" && m["request_seq"] == self.seq {
                assert_eq!(m["command"], command, "{m}");
                return m;
            }
            self.events.push(m);
        }
    }

    /// A request that must succeed; its body.
    fn ok(&mut self, command: &str, arguments: Value) -> Value {
        let m = self.call(command, arguments);
        assert_eq!(m["success"], true, "{command}: {m}");
        m["body"].clone()
    }

    /// The next event `name`, after those already seen.
    fn event(&mut self, name: &str) -> Value {
        if let Some(at) = self.events.iter().position(|e| e["event"] == name) {
            return self.events.remove(at);
        }
        loop {
            let m = self.next();
            if m["event"] == name {
                return m;
            }
            assert_ne!(
                m["event"], "terminated",
                "the render ended before {name}: {:?}",
                self.events
            );
            self.events.push(m);
        }
    }

    /// Resumes with `command`; the top frame where it stopped next.
    fn resume(&mut self, command: &str, reason: &str) -> Value {
        self.ok(command, json!({"threadId": 1}));
        let stopped = self.event("stopped");
        assert_eq!(stopped["body"]["reason"], reason, "{stopped}");
        self.top()
    }

    fn frames(&mut self) -> Vec<Value> {
        let trace = self.ok("stackTrace", json!({"threadId": 1}));
        trace["stackFrames"].as_array().cloned().unwrap_or_default()
    }

    fn top(&mut self) -> Value {
        self.frames().first().cloned().expect("a frame")
    }

    /// The variables of a reference, by name.
    fn variables(&mut self, reference: &Value) -> Vec<Value> {
        let body = self.ok("variables", json!({"variablesReference": reference}));
        body["variables"].as_array().cloned().unwrap_or_default()
    }

    /// The scope `name` of the top frame.
    fn scope(&mut self, name: &str) -> Vec<Value> {
        let scopes = self.ok("scopes", json!({"frameId": 0}));
        let reference = scopes["scopes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == name)
            .map_or_else(
                || panic!("a {name} scope: {scopes}"),
                |s| s["variablesReference"].clone(),
            );
        self.variables(&reference)
    }
}

fn named<'a>(variables: &'a [Value], name: &str) -> &'a Value {
    variables
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("{name} among {variables:?}"))
}

fn write_fixture(dir: &Path) {
    std::fs::write(dir.join("composition.yaml"), COMPOSITION).expect("the Composition");
    std::fs::write(dir.join("xr.yaml"), XR).expect("the XR");
    std::fs::create_dir_all(dir.join("scripts/scripts")).expect("the scripts' folder");
    std::fs::write(dir.join("scripts/scripts/main.star"), MAIN_STAR).expect("the script");
}

#[test]
fn a_render_stops_at_breakpoints_steps_and_ends_as_render_does() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    write_fixture(d);
    let composition = d.join("composition.yaml");
    let star = d.join("scripts/scripts/main.star");
    let mut c = Client::start();
    let capabilities = c.ok("initialize", json!({"adapterID": "function-starlark"}));
    assert_eq!(capabilities["supportsConfigurationDoneRequest"], true);
    c.event("initialized");
    c.ok(
        "launch",
        json!({"composition": "composition.yaml", "xr": "xr.yaml", "scriptsDir": "scripts", "cwd": d}),
    );
    // A statement's line is verified; a line of YAML is not.
    let set = c.ok(
        "setBreakpoints",
        json!({"source": {"path": composition}, "breakpoints": [{"line": NAME_LINE}, {"line": 2}]}),
    );
    assert_eq!(set["breakpoints"][0]["verified"], true, "{set}");
    assert_eq!(set["breakpoints"][1]["verified"], false, "{set}");
    let set = c.ok(
        "setBreakpoints",
        json!({"source": {"path": star}, "breakpoints": [{"line": 2}]}),
    );
    assert_eq!(set["breakpoints"][0]["verified"], true, "{set}");
    c.ok("configurationDone", json!({}));

    // Stopped in the inline source, at its YAML line.
    let stopped = c.event("stopped");
    assert_eq!(stopped["body"]["reason"], "breakpoint");
    let top = c.top();
    assert_eq!(top["line"], NAME_LINE, "{top}");
    assert_eq!(top["source"]["path"], composition.display().to_string());
    // The request's globals: oxr's spec holds the XR's size.
    let request = c.scope("Request");
    let oxr = named(&request, "oxr").clone();
    assert_ne!(oxr["variablesReference"], 0, "oxr can be opened: {oxr}");
    let fields = c.variables(&oxr["variablesReference"]);
    let spec = named(&fields, "\"spec\"").clone();
    let spec = c.variables(&spec["variablesReference"]);
    assert_eq!(named(&spec, "\"size\"")["value"], "3", "{spec:?}");
    assert_eq!(named(&c.scope("Locals"), "size")["value"], "3");
    let evaluated = c.ok("evaluate", json!({"expression": "size * 2", "frameId": 0}));
    assert_eq!(evaluated["result"], "6");

    // In, over and out of the inline module's function.
    let inside = c.resume("stepIn", "step");
    assert_eq!(inside["name"], "name_of", "{inside}");
    assert_eq!(inside["line"], MODULE_FIRST_LINE, "{inside}");
    assert_eq!(inside["source"]["path"], composition.display().to_string());
    assert_eq!(
        c.frames().len(),
        2,
        "the call stack: name_of over the script"
    );
    assert_eq!(named(&c.scope("Locals"), "n")["value"], "3");
    let over = c.resume("next", "step");
    assert_eq!(over["line"], MODULE_FIRST_LINE + 1, "{over}");
    let out = c.resume("stepOut", "step");
    assert_eq!(out["line"], FIRST_RESOURCE_LINE, "{out}");
    assert!(c.scope("Composed").is_empty(), "nothing composed yet");
    let over = c.resume("next", "step");
    assert_eq!(over["line"], SECOND_RESOURCE_LINE, "{over}");
    let composed = c.scope("Composed");
    assert_eq!(composed.len(), 1, "{composed:?}");
    named(&composed, "\"a\"");

    // The mounted script of the next step: its own file and line.
    let there = c.resume("continue", "breakpoint");
    assert_eq!(
        there["source"]["path"],
        star.display().to_string(),
        "{there}"
    );
    assert_eq!(there["line"], 2, "{there}");
    assert_eq!(named(&c.scope("Locals"), "n")["value"], "3");

    c.ok("continue", json!({"threadId": 1}));
    // What the script printed reaches the debug console.
    let printed = c.event("output");
    assert_eq!(printed["body"]["category"], "console", "{printed}");
    assert_eq!(printed["body"]["output"], "composed thing-3\n");
    let output = c.event("output");
    let exited = c.event("exited");
    c.event("terminated");
    assert_eq!(exited["body"]["exitCode"], 0, "{output}");
    let rendered = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .arg("--scripts-dir")
        .arg(d.join("scripts"))
        .args(["render", "xr.yaml", "composition.yaml"])
        .current_dir(d)
        .output()
        .expect("render runs");
    assert!(rendered.status.success(), "{rendered:?}");
    assert_eq!(
        output["body"]["output"],
        String::from_utf8_lossy(&rendered.stdout).as_ref(),
        "the debugged render prints what render prints"
    );
    c.ok("disconnect", json!({}));
    let status = c.child.wait().expect("the adapter exits");
    assert!(status.success());
}

#[test]
fn requests_out_of_turn_are_answered_with_what_to_do() {
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    let early = c.call("stackTrace", json!({"threadId": 1}));
    assert_eq!(early["success"], false);
    assert!(
        early["message"]
            .as_str()
            .is_some_and(|m| m.contains("launch")),
        "{early}"
    );
    let bad = c.call("launch", json!({"xr": "xr.yaml"}));
    assert_eq!(bad["success"], false);
    assert!(
        bad["message"]
            .as_str()
            .is_some_and(|m| m.contains("\"composition\" and \"xr\"")),
        "{bad}"
    );
    let missing = c.call(
        "launch",
        json!({"composition": "/nonexistent/c.yaml", "xr": "xr.yaml"}),
    );
    assert!(
        missing["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot read the Composition /nonexistent/c.yaml")),
        "{missing}"
    );
    let unknown = c.call("restartFrame", json!({}));
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|m| m.contains("not supported")),
        "{unknown}"
    );
    c.ok("disconnect", json!({}));
    assert!(c.child.wait().expect("the adapter exits").success());
}

#[test]
fn a_failing_render_ends_the_session_with_the_error() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    write_fixture(d);
    std::fs::write(
        d.join("composition.yaml"),
        COMPOSITION.replace("size = oxr.spec.size", "size = fail(\"nope\")"),
    )
    .expect("the Composition");
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    c.ok(
        "launch",
        json!({"composition": "composition.yaml", "xr": "xr.yaml", "scriptsDir": "scripts", "cwd": d}),
    );
    c.ok("configurationDone", json!({}));
    let output = c.event("output");
    assert_eq!(output["body"]["category"], "stderr");
    assert!(
        output["body"]["output"]
            .as_str()
            .is_some_and(|o| o.contains("nope")),
        "{output}"
    );
    assert_eq!(c.event("exited")["body"]["exitCode"], 1);
    c.ok("disconnect", json!({}));
}

#[test]
fn a_conditional_breakpoint_stops_only_when_its_condition_holds() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    write_fixture(d);
    let star = d.join("scripts/scripts/main.star");
    let mut c = Client::start();
    c.ok("initialize", json!({}));
    c.ok(
        "launch",
        json!({"composition": "composition.yaml", "xr": "xr.yaml", "scriptsDir": "scripts", "cwd": d}),
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": d.join("composition.yaml")}, "breakpoints": [{"line": MODULE_FIRST_LINE, "condition": "n == 4"}]}),
    );
    c.ok(
        "setBreakpoints",
        json!({"source": {"path": star}, "breakpoints": [{"line": 2, "condition": "n == 3"}]}),
    );
    c.ok("configurationDone", json!({}));
    c.event("stopped");
    let top = c.top();
    assert_eq!(top["source"]["path"], star.display().to_string(), "{top}");
    c.ok("continue", json!({"threadId": 1}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 0);
    c.ok("disconnect", json!({}));
}
