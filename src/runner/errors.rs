//! Turning the interpreter's errors into the reference's message shapes,
//! with positions mapped back to the user's original lines.

use std::fmt::Write as _;

use starlark::ErrorKind;
use starlark::codemap::FileSpan;

use super::compiled::Compiled;
use crate::error::Error;
use crate::syntax::line_map::LineMap;
use crate::wire::codec::{MAX_MESSAGE_BYTES, TRUNCATED_END, truncate_to};

/// starlark-rust's tick-limit error text starts with this; the type itself
/// is private to the crate.
pub(crate) const TICK_LIMIT_PREFIX: &str = "Execution duration limit of";

/// `file:line:col` of a span, 1-based, in the user's original text.
fn position(span: &FileSpan, map: &LineMap) -> String {
    let begin = span.resolve_span().begin;
    let (line, column) = map.original(begin.line, begin.column);
    format!("{}:{}:{}", span.filename(), line + 1, column + 1)
}

/// `file:line:col` where go.starlark.net places the expression at `span`
/// (a call at its `(`, an operation at its operator); positions in other
/// files than the compiled script's are given as they are.
fn go_position(span: &FileSpan, compiled: &Compiled) -> String {
    if span.filename() != compiled.filename {
        return position(span, &compiled.map);
    }
    let Some((offset, shift)) = super::go_position::offset(&compiled.ast, span) else {
        return position(span, &compiled.map);
    };
    let moved = super::go_position::moved(span, offset);
    let begin = moved.resolve_span().begin;
    let (line, column) = compiled.map.original(begin.line, begin.column);
    let column = column.saturating_add_signed(shift);
    format!("{}:{}:{}", span.filename(), line + 1, column + 1)
}

/// The interpreter's own message, without its source snippet, in Go's
/// words where they differ only in wording. A message longer than half
/// of what a result carries (a script can `fail()` with 100 MB) is cut
/// here, before it is copied, saying so.
fn message(e: &starlark::Error) -> String {
    let mut text = e.without_diagnostic().to_string();
    let most = MAX_MESSAGE_BYTES / 2;
    if text.len() > most {
        truncate_to(&mut text, most);
        return text;
    }
    let text = crate::go::wording::go_wording(&crate::go::names::unreserve_in_text(&text));
    // An attribute read from a body that could not be converted fails as
    // a missing attribute; the conversion error is what went wrong.
    text.strip_prefix("dict has no .")
        .and_then(|rest| rest.strip_suffix(" field or method"))
        .and_then(crate::values::attr_dict::take_broken_attribute)
        .unwrap_or(text)
}

/// `file:line:col: message` of a compile error.
pub fn position_and_message(e: &starlark::Error, map: &LineMap) -> String {
    match e.span() {
        Some(span) => format!("{}: {}", position(span, map), message(e)),
        None => message(e),
    }
}

pub use crate::effects::Stopped;

/// ` at file:line:col` of the innermost frame of `e`, else of the
/// statement the run was at, or nothing.
fn at(e: &starlark::Error, compiled: &Compiled, statement: Option<&FileSpan>) -> String {
    e.span()
        .or(statement)
        .map(|span| format!(" at {}", position(span, &compiled.map)))
        .unwrap_or_default()
}

/// The Fatal text of a failed evaluation.
pub fn execution_error(
    e: &starlark::Error,
    compiled: &Compiled,
    stopped: Option<Stopped>,
    statement: Option<FileSpan>,
) -> Error {
    if e.without_diagnostic()
        .to_string()
        .starts_with(TICK_LIMIT_PREFIX)
    {
        return Error::StepLimit;
    }
    match stopped {
        Some(Stopped::Time(limit)) => {
            return Error::TimeLimit {
                seconds: limit.as_secs(),
                at: at(e, compiled, statement.as_ref()),
            };
        }
        Some(Stopped::Memory(limit)) => {
            return Error::MemoryLimit {
                mib: limit >> 20,
                at: at(e, compiled, statement.as_ref()),
            };
        }
        None => {}
    }
    // Names that cannot be resolved are compile errors in the reference.
    if matches!(e.kind(), ErrorKind::Parser(_) | ErrorKind::Scope(_)) && e.call_stack().is_empty() {
        return Error::Compile(position_and_message(e, &compiled.map));
    }
    let (traceback, text) = traceback(e, compiled);
    // The Go implementation writes go.starlark.net's backtrace, then the
    // message once more. A message cut for length is not repeated.
    if text.ends_with(TRUNCATED_END) {
        Error::Runtime(traceback)
    } else {
        Error::Runtime(format!("{traceback}: {text}"))
    }
}

/// go.starlark.net's backtrace of a run-time error, without its first
/// line: a `  FILE:LINE:COL: in FUNCTION` line per frame, then `Error in
/// BUILTIN: MESSAGE` (or `Error: MESSAGE`); and the message alone.
pub fn traceback(e: &starlark::Error, compiled: &Compiled) -> (String, String) {
    let text = message(e);
    let (mut out, function) = frames(&e.call_stack().frames, compiled);
    let builtin = failed_builtin(e, &text);
    let text = builtin
        .as_deref()
        .and_then(|name| crate::go::wording::builtin_wording(name, &text))
        .unwrap_or(text);
    if builtin.is_none()
        && let Some(span) = e.span()
    {
        let _ = writeln!(out, "  {}: in {function}", go_position(span, compiled));
    }
    match builtin {
        Some(name) => {
            let _ = write!(out, "Error in {name}: {text}");
        }
        None => {
            let _ = write!(out, "Error: {text}");
        }
    }
    (out, text)
}

/// What a run-time error says, as go.starlark.net says it (a builtin's
/// error in that builtin's words), without where it happened.
pub fn error_text(e: &starlark::Error) -> String {
    let text = message(e);
    failed_builtin(e, &text)
        .and_then(|name| crate::go::wording::builtin_wording(&name, &text))
        .unwrap_or(text)
}

/// The `  FILE:LINE:COL: in FUNCTION` lines of a call stack, outermost
/// first, and the innermost function's name. starlark-rust names each
/// frame after the function called at its location; Go names the
/// function the location is in: shifted by one.
pub fn frames(stack: &[starlark::errors::Frame], compiled: &Compiled) -> (String, String) {
    let mut out = String::new();
    let mut function = "<toplevel>";
    // Operator redirections are no calls in Go; a method call (`x.pop()`,
    // `s.union(t)`, ...) is.
    let calls = stack.iter().filter(|f| {
        f.name
            .strip_prefix(crate::go::names::RESERVED_PREFIX)
            .is_none_or(|m| crate::go::names::GO_METHODS.contains(&m))
    });
    for frame in calls {
        if let Some(location) = &frame.location {
            let _ = writeln!(out, "  {}: in {function}", go_position(location, compiled));
        }
        function = &frame.name;
    }
    (out, function.to_owned())
}

/// The error message of a run-time failure's text (`MSG` of its last line,
/// `Error: MSG: MSG` or `Error in NAME: MSG: MSG`), if it has one.
pub fn error_message(fatal: &str) -> Option<&str> {
    let (_, last) = fatal.rsplit_once("\nError")?;
    let doubled = match last.strip_prefix(" in ") {
        Some(rest) => rest.split_once(": ")?.1,
        None => last.strip_prefix(": ")?,
    };
    let half = doubled.len().saturating_sub(2) / 2;
    match (
        doubled.get(..half),
        doubled.get(half..half + 2),
        doubled.get(half + 2..),
    ) {
        (Some(a), Some(": "), Some(b)) if a == b => Some(a),
        _ => Some(doubled),
    }
}

/// The name go.starlark.net gives the builtin whose call failed with
/// `text`, when the error came from a builtin (the innermost frame is a
/// native call at the error's own position) rather than from Starlark code
/// or an operator. Builtins of a namespace are named as their messages
/// name them (`json.decode`).
fn failed_builtin(e: &starlark::Error, text: &str) -> Option<String> {
    let stack = e.call_stack();
    let innermost = stack.frames.last()?;
    let native_call = innermost.location.is_some() && innermost.location.as_ref() == e.span();
    let name = match innermost
        .name
        .strip_prefix(crate::go::names::RESERVED_PREFIX)
    {
        // The pre-pass's `receiver.pop(...)` and the like; the others are
        // operators.
        Some(method) if crate::go::names::GO_METHODS.contains(&method) => method,
        None if native_call => &innermost.name,
        _ => return None,
    };
    let qualified = text
        .split_once(": ")
        .map(|(head, _)| head)
        .filter(|head| *head == name || head.strip_suffix(name).is_some_and(|h| h.ends_with('.')));
    Some(qualified.unwrap_or(name).to_owned())
}
