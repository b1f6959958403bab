//! Turning the interpreter's errors into the reference's message shapes,
//! with positions mapped back to the user's original lines.

use std::fmt::Write as _;

use starlark::ErrorKind;
use starlark::codemap::FileSpan;

use super::runtime::Compiled;
use crate::error::Error;
use crate::syntax::line_map::LineMap;

/// starlark-rust's tick-limit error text starts with this; the type itself
/// is private to the crate.
pub(crate) const TICK_LIMIT_PREFIX: &str = "Execution duration limit of";

/// `file:line:col` of a span, 1-based, in the user's original text.
fn position(span: &FileSpan, map: &LineMap) -> String {
    let begin = span.resolve_span().begin;
    let (line, column) = map.original(begin.line, begin.column);
    format!("{}:{}:{}", span.filename(), line + 1, column + 1)
}

/// The interpreter's own message, without its source snippet.
fn message(e: &starlark::Error) -> String {
    let text = e.without_diagnostic().to_string();
    crate::go::names::unreserve_in_text(&text)
}

/// `file:line:col: message` of a compile error.
pub fn position_and_message(e: &starlark::Error, map: &LineMap) -> String {
    match e.span() {
        Some(span) => format!("{}: {}", position(span, map), message(e)),
        None => message(e),
    }
}

pub use crate::effects::Stopped;

/// ` at file:line:col` of the innermost frame of `e`, or nothing.
fn at(e: &starlark::Error, compiled: &Compiled) -> String {
    e.span()
        .map(|span| format!(" at {}", position(span, &compiled.map)))
        .unwrap_or_default()
}

/// The Fatal text of a failed evaluation.
pub fn execution_error(
    e: &starlark::Error,
    compiled: &Compiled,
    stopped: Option<Stopped>,
) -> Error {
    let text = message(e);
    if text.starts_with(TICK_LIMIT_PREFIX) {
        return Error::StepLimit;
    }
    match stopped {
        Some(Stopped::Time(limit)) => {
            return Error::TimeLimit {
                seconds: limit.as_secs(),
                at: at(e, compiled),
            };
        }
        Some(Stopped::Memory(limit)) => {
            return Error::MemoryLimit {
                mib: limit >> 20,
                at: at(e, compiled),
            };
        }
        None => {}
    }
    // Names that cannot be resolved are compile errors in the reference.
    if matches!(e.kind(), ErrorKind::Parser(_) | ErrorKind::Scope(_)) && e.call_stack().is_empty() {
        return Error::Compile(position_and_message(e, &compiled.map));
    }
    // starlark-rust names each frame after the function called at its
    // location; Go names the function the location is in. Shift by one.
    let frames: Vec<_> = e
        .call_stack()
        .frames
        .iter()
        .filter(|f| !f.name.starts_with(crate::go::names::RESERVED_PREFIX))
        .collect();
    let mut out = String::new();
    let mut function = "<toplevel>";
    for frame in &frames {
        if let Some(location) = &frame.location {
            let _ = writeln!(
                out,
                "  {}: in {function}",
                position(location, &compiled.map)
            );
        }
        function = &frame.name;
    }
    if let Some(span) = e.span() {
        let _ = writeln!(out, "  {}: in {function}", position(span, &compiled.map));
    }
    out.push_str("Error: ");
    out.push_str(&text);
    Error::Runtime(out)
}
