//! Helpers for unit tests of builtins: run a snippet with the project's
//! globals, as a script would, and look at what it computed.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::input::Script;
use crate::limits::Limits;
use crate::loader::Sources;
use crate::runner::{Outcome, Run, Runtime};

thread_local! {
    static RUNTIME: Runtime = Runtime::new(Limits::default(), 64);
}

/// Runs `source` as a script against an empty request. `Err` carries the
/// Fatal message.
pub fn run(source: &str) -> Result<pbjson_types::Struct, String> {
    RUNTIME.with(|runtime| run_on(runtime, source))
}

/// [`run`] on a given runtime (with its own limits, say).
pub fn run_on(runtime: &Runtime, source: &str) -> Result<pbjson_types::Struct, String> {
    match run_script(runtime, source, &Sources::default()).outcome {
        Outcome::Completed { dxr, .. } => dxr,
        Outcome::Failed(e) => Err(e.to_string()),
    }
}

/// The whole run of `source` on `runtime` against an empty request, with
/// `sources` for `load()`: what it recorded as well as how it ended.
pub fn run_script(runtime: &Runtime, source: &str, sources: &Sources) -> Run {
    let script = Script {
        filename: "test.star".to_owned(),
        source: source.to_owned(),
    };
    runtime.run_blocking(&script, sources, Arc::default(), &AtomicBool::new(false))
}

/// The value of a Starlark expression, as JSON (it must be convertible:
/// wrap tuples, bytes and the like in `str()` or `list()`).
pub fn eval(expr: &str) -> Result<serde_json::Value, String> {
    let dxr = run(&format!("dxr[\"v\"] = [{expr}]\n"))?;
    let json = function_sdk_rust::resource::struct_to_json(&dxr);
    Ok(json["v"][0].clone())
}

/// Asserts that `expr` evaluates to `expected`.
#[track_caller]
pub fn assert_eval(expr: &str, expected: serde_json::Value) {
    match eval(expr) {
        Ok(v) => assert_eq!(v, expected, "{expr}"),
        Err(e) => panic!("{expr}: {e}"),
    }
}

/// Asserts that running `source` fails with a message containing `fragment`.
#[track_caller]
pub fn assert_fails(source: &str, fragment: &str) {
    match run(source) {
        Ok(_) => panic!("{source}: expected an error containing {fragment:?}"),
        Err(e) => assert!(e.contains(fragment), "{source}: {e}"),
    }
}

/// The string `expr` evaluates to.
#[track_caller]
pub fn eval_text(expr: &str) -> String {
    match eval(expr) {
        Ok(serde_json::Value::String(s)) => s,
        other => panic!("{expr}: {other:?}"),
    }
}

/// Asserts that evaluating `expr` fails with exactly `message` as its
/// error (the last line of the traceback, said once).
#[track_caller]
pub fn assert_error(expr: &str, message: &str) {
    match run(&format!("x = {expr}\n")) {
        Ok(_) => panic!("{expr}: expected the error {message:?}"),
        Err(e) => assert_eq!(
            crate::runner::errors::error_message(&e),
            Some(message),
            "{expr}: {e}"
        ),
    }
}

/// A Starlark string literal for `s`.
pub fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Replays the go.starlark.net vectors in the file `name` of `tests/compat/`
/// (lines of `EXPRESSION<TAB>RESULT`, recorded by `tools/gostarlark`) and
/// returns the number of vectors and a description of each that differs:
/// the expression's repr must equal RESULT, or, for `ERR: MESSAGE`, the
/// expression must fail with an error containing MESSAGE.
pub fn replay_go_vectors(name: &str) -> (usize, Vec<String>) {
    let path = format!("{}/tests/compat/{name}", env!("CARGO_MANIFEST_DIR"));
    let file = std::fs::read_to_string(path).unwrap();
    let mut total = 0;
    let mut wrong = Vec::new();
    for line in file.lines() {
        let (expr, want) = line.split_once('\t').unwrap();
        total += 1;
        let got = run(&format!("dxr[\"v\"] = repr((lambda: {expr})())\n")).map(|dxr| {
            function_sdk_rust::resource::struct_to_json(&dxr)["v"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        });
        let matches = match (want.strip_prefix("ERR: "), &got) {
            (Some(message), Err(e)) => e.contains(message),
            (None, Ok(repr)) => repr == want,
            _ => false,
        };
        if !matches {
            wrong.push(format!("{expr}\n  want {want}\n  got  {got:?}"));
        }
    }
    (total, wrong)
}

/// Calls `check` with every line of the JSON-lines file `path` (relative to
/// the crate) and panics listing each line it rejects, with its reason.
#[track_caller]
pub fn check_json_lines(
    path: &str,
    mut check: impl FnMut(&serde_json::Value) -> Result<(), String>,
) {
    let file = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut total = 0;
    let mut wrong = Vec::new();
    for line in file.lines() {
        let vector: serde_json::Value = serde_json::from_str(line).unwrap();
        total += 1;
        if let Err(why) = check(&vector) {
            wrong.push(format!("{line}\n  {why}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {total} vectors of {path} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A JSON-like value for property tests of the encoders and decoders.
#[derive(Debug, Clone)]
pub enum Tree {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Tree>),
    Dict(Vec<(String, Tree)>),
}

impl Tree {
    /// Trees up to four levels deep of finite numbers and of strings (values
    /// and keys alike) drawn from `text`.
    pub fn strategy(
        text: impl proptest::strategy::Strategy<Value = String> + Clone + 'static,
    ) -> impl proptest::strategy::Strategy<Value = Tree> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Tree::Null),
            any::<bool>().prop_map(Tree::Bool),
            any::<i64>().prop_map(Tree::Int),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Tree::Float),
            text.clone().prop_map(Tree::Str),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Tree::List),
                prop::collection::vec((text.clone(), inner), 0..6).prop_map(Tree::Dict),
            ]
        })
    }

    /// The tree as new Starlark values on `heap`.
    pub fn alloc<'v>(&self, heap: starlark::values::Heap<'v>) -> starlark::values::Value<'v> {
        use starlark::values::Value;
        use starlark::values::dict::AllocDict;
        use starlark::values::list::AllocList;
        match self {
            Tree::Null => Value::new_none(),
            Tree::Bool(b) => Value::new_bool(*b),
            Tree::Int(i) => heap.alloc(*i),
            Tree::Float(f) => heap.alloc(*f),
            Tree::Str(s) => heap.alloc_str(s).to_value(),
            Tree::List(items) => {
                let items: Vec<Value> = items.iter().map(|i| i.alloc(heap)).collect();
                heap.alloc(AllocList(items))
            }
            Tree::Dict(entries) => {
                let entries: Vec<(Value, Value)> = entries
                    .iter()
                    .map(|(k, v)| (heap.alloc_str(k).to_value(), v.alloc(heap)))
                    .collect();
                heap.alloc(AllocDict(entries))
            }
        }
    }
}
