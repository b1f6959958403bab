//! The signatures of the builtins that bind their arguments by hand.
//!
//! These builtins take `*args, **kwargs` in Rust so that a wrong call fails
//! with go.starlark.net's words ([`crate::go::args`]); what they accept is
//! written here, Python-style (`/` ends the positional-only parameters, `*`
//! starts the keyword-only ones), for the generated reference. A test calls
//! every builtin below against its line: each named parameter is accepted
//! by name, an unknown name, one argument too many and a missing required
//! argument are refused.

/// `(builtin, its parameters)`, for every builtin whose Rust signature is
/// `*args, **kwargs`.
pub const SIGNATURES: &[(&str, &str)] = &[
    ("dict.compact", "d"),
    ("dict.deep_merge", "d1, d2, /, *more"),
    ("dict.dig", "d, path, default=None"),
    ("dict.has_path", "d, path"),
    ("dict.merge", "d1, d2, /, *more"),
    ("dict.omit", "d, keys"),
    ("dict.pick", "d, keys"),
    (
        "field",
        "type=None, required=False, default=None, enum=None, doc=\"\", items=None",
    ),
    ("float", "x=0.0, /"),
    ("int", "x, base=10"),
    ("json.decode", "x, /, default=<unset>"),
    ("json.encode", "x, /"),
    ("json.encode_indent", "x, /, *, prefix=\"\", indent=\"\\t\""),
    ("json.indent", "s, /, *, prefix=\"\", indent=\"\\t\""),
    ("mutable_struct", "*, schema=None, **fields"),
    ("range", "start_or_stop, stop=<unset>, step=1, /"),
    ("schema", "name, /, *, doc=\"\", **fields"),
    ("struct", "**fields"),
    ("yaml.decode", "s"),
    ("yaml.decode_stream", "s"),
    ("yaml.encode", "value"),
    ("When", "condition, reason, keep_if_exists, optional=False"),
    ("zip", "*iterables"),
];

/// The parameters of the hand-bound builtin `name`, if it is one.
pub fn of(name: &str) -> Option<&'static str> {
    SIGNATURES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, params)| *params)
}
