//! The names the Go dialect pre-pass introduces, and how to show the user
//! the names they wrote instead.

/// Prefix of every identifier introduced by the pre-pass. User code may not
/// use identifiers starting with it.
pub const RESERVED_PREFIX: &str = "_sl_";

/// What the pre-pass writes before `assert`, which `starlark` reserves.
/// Not the reserved prefix: a name starting with `_` is private to its
/// module, and a module may export `assert`.
pub const ASSERT_PREFIX: &str = "sl__";

/// The module a test file written for the Go function's test runner loads
/// its assertions from: `load("assert.star", "assert")`.
pub const ASSERT_MODULE: &str = "assert.star";

/// The name `assert` is renamed to (user code may not use it).
pub const RENAMED_ASSERT: &str = "sl__assert";

/// Maps a name produced by the pre-pass back to the name the user wrote
/// (`sl__assert` becomes `assert`); other names are returned unchanged.
#[must_use]
pub fn unreserve(name: &str) -> &str {
    if name == RENAMED_ASSERT {
        "assert"
    } else {
        name
    }
}

/// Replaces reserved spellings in a message (an interpreter error that
/// names a renamed identifier) with what the user wrote.
pub fn unreserve_in_text(text: &str) -> String {
    text.replace(RENAMED_ASSERT, "assert")
}

/// The methods whose calls `RECEIVER.NAME(ARGS)` the pre-pass writes as
/// `_sl_NAME(RECEIVER, ARGS)`: builtins of those names behave as
/// go.starlark.net's methods do where starlark-rust's differ, and call the
/// receiver's own method otherwise.
pub const GO_METHODS: [&str; 12] = [
    "pop",
    "union",
    "update",
    "codepoints",
    "codepoint_ords",
    "elem_ords",
    "elems",
    "strip",
    "lstrip",
    "rstrip",
    "split",
    "rsplit",
];
