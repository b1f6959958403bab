//! The go.starlark.net vs starlark-rust vectors measured on both
//! interpreters, recorded in `tests/compat/vectors.txt` and run through the
//! real function, request in and response out.
//!
//! Each vector has a status (the file's header explains the format):
//!
//! * `same`: both interpreters agreed when measured; the project must still
//!   give the go.starlark.net result.
//! * `go`: the interpreters differed and a mitigation now gives exactly the
//!   go.starlark.net result.
//! * `wording`: both reject; only the message differs. The project must
//!   still fail.
//! * `dep`, `opt`: a documented departure (optional mitigation not built);
//!   the project result is pinned when the file gives one.
//!
//! A vector that starts matching Go while it is classified otherwise fails
//! too, so that its classification (and docs/departures.md) is kept
//! honest. `COMPAT_VECTORS_RECORD=path` writes every actual result to `path`
//! (JSON) instead of checking.

#[path = "it/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const VECTORS: &str = include_str!("compat/vectors.txt");

/// The helper modules the load vectors use, as in the measurements.
const MODULES: [(&str, &str); 2] = [
    ("lib.star", "L = [1, 2]\n_private = 1\n"),
    ("reexp.star", "load(\"lib.star\", \"L\")\n"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Same,
    Go,
    Wording,
    Departure,
    Optional,
}

impl Status {
    fn parse(s: &str) -> Self {
        match s {
            "same" => Status::Same,
            "go" => Status::Go,
            "wording" => Status::Wording,
            "dep" => Status::Departure,
            "opt" => Status::Optional,
            other => panic!("unknown status {other:?}"),
        }
    }
}

/// One vector: an expression (evaluated as `repr(EXPR)`) or a whole script.
#[derive(Debug)]
struct Vector {
    line: usize,
    section: String,
    status: Status,
    reference: String,
    /// The expression, or the snippet's file name.
    label: String,
    source: String,
    /// What go.starlark.net printed (an expression's repr, one line per
    /// `print`, then `ERR: msg` or `STATIC ERROR: msg` if it failed).
    go: Vec<String>,
    /// The project's pinned result, for departures.
    project: Option<Vec<String>>,
}

fn unescape(s: &str) -> String {
    s.replace("⟨TAB⟩", "\t")
        .replace("⟨BOM⟩", "\u{feff}")
        .replace("⟨CR⟩", "\r")
}

fn head(tokens: &[&str]) -> (Status, String) {
    let status = Status::parse(tokens[0]);
    let reference = tokens.get(1).copied().unwrap_or_default().to_owned();
    (status, reference)
}

fn parse(text: &str) -> Vec<Vector> {
    let mut vectors: Vec<Vector> = Vec::new();
    let mut section = String::new();
    let mut snippet: Option<Vector> = None;
    let mut source: Vec<String> = Vec::new();
    let finish = |snippet: &mut Option<Vector>, source: &mut Vec<String>, out: &mut Vec<Vector>| {
        if let Some(mut v) = snippet.take() {
            let mut text = source.join("\n");
            if !source.is_empty() {
                text.push('\n');
            }
            if let Some(stripped) = text.strip_suffix("⟨NOEOL⟩\n") {
                text = stripped.to_owned();
            }
            v.source = unescape(&text);
            out.push(v);
            source.clear();
        }
    };
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(v) = snippet.as_mut() {
            if let Some(rest) = line.strip_prefix('|') {
                source.push(rest.strip_prefix(' ').unwrap_or(rest).to_owned());
                continue;
            }
            if let Some(rest) = line.strip_prefix("=>") {
                v.go.push(unescape(rest.strip_prefix(' ').unwrap_or(rest)));
                continue;
            }
            if let Some(rest) = line.strip_prefix("~>") {
                let project = v.project.get_or_insert_with(Vec::new);
                let rest = rest.strip_prefix(' ').unwrap_or(rest);
                if rest != "⟨NO OUTPUT⟩" {
                    project.push(unescape(rest));
                }
                continue;
            }
            finish(&mut snippet, &mut source, &mut vectors);
        }
        if line.is_empty() || line.starts_with('#') && !line.starts_with("## ") {
            continue;
        }
        if let Some(title) = line.strip_prefix("## ") {
            title.clone_into(&mut section);
            continue;
        }
        if let Some(rest) = line.strip_prefix("snippet ") {
            let tokens: Vec<&str> = rest.split(' ').collect();
            let (name, status_tokens) = tokens.split_last().expect("a snippet has a name");
            let (status, reference) = head(status_tokens);
            snippet = Some(Vector {
                line: number,
                section: section.clone(),
                status,
                reference,
                label: (*name).to_owned(),
                source: String::new(),
                go: Vec::new(),
                project: None,
            });
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        assert!(
            fields.len() == 3 || fields.len() == 4,
            "vectors.txt:{number}: want STATUS<TAB>EXPR<TAB>GO[<TAB>PROJECT]"
        );
        let (status, reference) = head(&fields[0].split(' ').collect::<Vec<_>>());
        vectors.push(Vector {
            line: number,
            section: section.clone(),
            status,
            reference,
            label: fields[1].to_owned(),
            source: format!("print(repr((lambda: {})()))\n", fields[1]),
            go: vec![fields[2].to_owned()],
            project: fields.get(3).map(|p| vec![(*p).to_owned()]),
        });
    }
    finish(&mut snippet, &mut source, &mut vectors);
    vectors
}

// ---------------------------------------------------------------------------
// What scripts print: the function logs each `print` as a debug event.

#[derive(Default)]
struct Prints(Mutex<Vec<String>>);

struct Capture(Arc<Prints>);

struct PrintVisitor {
    message: bool,
    msg: Option<String>,
}

impl Visit for PrintVisitor {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}") == "starlark print",
            "msg" => self.msg = Some(format!("{value:?}")),
            _ => {}
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "msg" {
            self.msg = Some(value.to_owned());
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut visitor = PrintVisitor {
            message: false,
            msg: None,
        };
        event.record(&mut visitor);
        if let (true, Some(msg)) = (visitor.message, visitor.msg) {
            self.0.0.lock().expect("prints lock").push(msg);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn prints() -> &'static Arc<Prints> {
    static PRINTS: OnceLock<Arc<Prints>> = OnceLock::new();
    PRINTS.get_or_init(|| {
        let prints = Arc::new(Prints::default());
        tracing::subscriber::set_global_default(Capture(prints.clone()))
            .expect("no other global subscriber in this test binary");
        prints
    })
}

// ---------------------------------------------------------------------------
// Running a vector.

/// The error line of a failed run, in the vectors' notation: `ERR: msg` for
/// a run-time error, `STATIC ERROR: msg` for a compile error (positions
/// and tracebacks dropped; the file name is the vector's).
fn error_line(message: &str, name: &str) -> String {
    let message = message.replace("composition.star", name);
    let message = message
        .strip_prefix("starlark execution failed: ")
        .unwrap_or(&message);
    if let Some(rest) = message.strip_prefix("starlark compilation error: ") {
        // `FILE:LINE:COL: msg`
        let mut parts = rest.splitn(4, ':');
        let (file, line, col, msg) = (parts.next(), parts.next(), parts.next(), parts.next());
        let positioned = file.is_some()
            && line.is_some_and(|l| l.parse::<u32>().is_ok())
            && col.is_some_and(|c| c.parse::<u32>().is_ok());
        let msg = match msg {
            Some(m) if positioned => m.trim_start(),
            _ => rest,
        };
        return format!("STATIC ERROR: {msg}");
    }
    match function_starlark::runner::errors::error_message(message) {
        Some(msg) => format!("ERR: {msg}"),
        None => format!("ERR: {message}"),
    }
}

fn run(
    function: &function_starlark::function::StarlarkFunction,
    tokio: &tokio::runtime::Runtime,
    vector: &Vector,
) -> Vec<String> {
    let modules: BTreeMap<&str, &str> = MODULES.into_iter().collect();
    let input = serde_json::json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": {"source": vector.source, "modules": modules},
    });
    let mut request = common::request("meta: {tag: compat}");
    request.input = Some(common::to_struct(&input));
    let prints = prints();
    prints.0.lock().expect("prints lock").clear();
    let response = common::json(&tokio.block_on(function.handle(request)));
    let printed = std::mem::take(&mut *prints.0.lock().expect("prints lock"));
    let expression = vector.source.starts_with("print(repr((lambda: ");
    let name = if expression {
        "t.star"
    } else {
        vector.label.as_str()
    };
    let fatal = response["results"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["severity"] == "SEVERITY_FATAL")
        .map(|r| error_line(r["message"].as_str().unwrap_or_default(), name));
    if expression {
        // An expression: its repr, the last line printed, or the error.
        return vec![
            fatal
                .or_else(|| printed.last().cloned())
                .unwrap_or_default(),
        ];
    }
    printed
        .iter()
        .chain(fatal.as_ref())
        .flat_map(|m| m.split('\n'))
        .map(str::to_owned)
        .collect()
}

fn is_error(lines: &[String]) -> bool {
    lines
        .last()
        .is_some_and(|l| l.starts_with("ERR: ") || l.starts_with("STATIC ERROR: "))
}

#[test]
fn every_vector_keeps_its_classification() {
    let vectors = parse(VECTORS);
    assert!(vectors.len() > 700, "{} vectors", vectors.len());
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let function = common::function();
    let record = std::env::var_os("COMPAT_VECTORS_RECORD");
    let mut recorded = Vec::new();
    let mut failures = Vec::new();
    for v in &vectors {
        let actual = run(&function, &tokio, v);
        if record.is_some() {
            recorded.push(serde_json::json!({"line": v.line, "actual": actual}));
            continue;
        }
        let problem = match v.status {
            Status::Same | Status::Go if actual != v.go => Some("does not give the Go result"),
            Status::Wording if actual == v.go => {
                Some("now gives exactly the Go result: classify it as `go`")
            }
            Status::Wording if !is_error(&actual) => {
                Some("no longer fails, where both interpreters reject it")
            }
            Status::Departure | Status::Optional if actual == v.go => {
                Some("now gives the Go result: classify it as `go` and update docs/departures.md")
            }
            Status::Departure | Status::Optional
                if v.project.as_ref().is_some_and(|p| *p != actual) =>
            {
                Some("no longer gives the pinned project result")
            }
            _ => None,
        };
        if let Some(problem) = problem {
            failures.push(format!(
                "vectors.txt:{} [{}] {} ({}): {problem}\n    go:      {:?}\n    project: {:?}\n    actual:  {:?}",
                v.line, v.section, v.label, v.reference, v.go, v.project, actual
            ));
        }
    }
    if let Some(path) = record {
        std::fs::write(path, serde_json::to_string_pretty(&recorded).expect("JSON"))
            .expect("the record file is writable");
        return;
    }
    let count = |s: &[Status]| vectors.iter().filter(|v| s.contains(&v.status)).count();
    let differing = count(&[
        Status::Go,
        Status::Wording,
        Status::Departure,
        Status::Optional,
    ]);
    println!(
        "{} vectors: {} identical in both interpreters; of the {differing} that differed, {} now give exactly the Go result, {} still fail as Go does with other wording, {} are departures ({} optional)",
        vectors.len(),
        count(&[Status::Same]),
        count(&[Status::Go]),
        count(&[Status::Wording]),
        count(&[Status::Departure, Status::Optional]),
        count(&[Status::Optional]),
    );
    assert!(
        failures.is_empty(),
        "{} vectors changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
