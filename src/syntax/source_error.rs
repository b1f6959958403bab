//! The one error of reading a source before it parses: where, and what.
//! The lexer, the nesting check and the pre-pass all report it.

use std::fmt;

/// A problem found while rewriting; positions are 1-based and refer to the
/// original source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepassError {
    /// 1-based line number in the original source.
    pub line: usize,
    /// 1-based column (in characters) in the original source.
    pub column: usize,
    /// Human readable description of the problem.
    pub message: String,
}

impl PrepassError {
    /// Builds an error from a 0-based position.
    pub(crate) fn at(line: usize, col: usize, message: impl Into<String>) -> Self {
        Self {
            line: line + 1,
            column: col + 1,
            message: message.into(),
        }
    }
}

impl fmt::Display for PrepassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for PrepassError {}
