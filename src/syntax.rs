//! The Go dialect front end: what scripts written for go.starlark.net are
//! made into before starlark-rust parses them, and what is read off a
//! source without parsing it. Used by the loader (load targets), the
//! engine (everything before a parse) and, to come, `check`.
//!
//! - [`lexer`]: tokens covering every byte, strings and comments known;
//! - [`prepass`]: the rewrites (`while`, tabs, `assert`, augmented
//!   assignments) and their [`line_map::LineMap`] back to the user's lines;
//! - [`nesting`]: the nesting bound, checked on tokens;
//! - [`loads`]: the targets of `load` statements, read off tokens;
//! - [`static_check`]: the Go dialect's rules the parser does not enforce
//!   (no global rebound at top level);
//! - [`visit`]: every expression of a parsed script, for static readings;
//! - [`dialect`]: the dialect starlark-rust parses.

use starlark::syntax::{Dialect, DialectTypes};

pub mod lexer;
pub mod line_map;
pub mod loads;
pub mod nesting;
pub mod prepass;
pub mod source_error;
pub mod static_check;
pub mod visit;

/// `source` pre-passed and parsed as `file`, with the map back to the
/// user's lines; `None` when either step fails (for readers that leave the
/// error to compilation, which reports it).
pub fn parse_quietly(
    file: &str,
    source: &str,
) -> Option<(starlark::syntax::AstModule, line_map::LineMap)> {
    let pre = prepass::prepass(source).ok()?;
    let ast = starlark::syntax::AstModule::parse(file, pre.text, &dialect()).ok()?;
    Some((ast, pre.map))
}

/// A double-quoted Starlark string literal for `s`: JSON's escapes, which
/// Starlark reads the same way.
pub fn string_literal(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// The Go dialect the scripts were written for, field by field: top-level
/// statements, keyword-only parameters, file-local loads; no types, no
/// f-strings, no positional-only parameters.
pub fn dialect() -> Dialect {
    Dialect {
        enable_def: true,
        enable_lambda: true,
        enable_load: true,
        enable_keyword_only_arguments: true,
        enable_positional_only_arguments: false,
        enable_types: DialectTypes::Disable,
        enable_load_reexport: false,
        enable_top_level_stmt: true,
        enable_f_strings: false,
        ..Dialect::Standard
    }
}
