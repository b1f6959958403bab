//! go.starlark.net's words for the run-time errors starlark-rust words
//! differently, where the interpreter's message carries all Go's does.
//!
//! | starlark-rust | go.starlark.net |
//! |---|---|
//! | ``Operation `+` not supported for types `int` and `string` `` | `unknown binary op: int + string` |
//! | ``Object of type `list` has no attribute `nope` `` | `list has no .nope field or method` |
//! | ``Object of type `struct` has no attribute `b` `` | `struct has no .b attribute` |
//! | ``Key `"b"` was not found`` | `key "b" not in dict` |
//! | ``Value of type `list` is not hashable`` | `unhashable type: list` |
//! | ``Operation `len()` not supported on type `int` `` | `len: value of type int has no len` |
//! | `Unpacked 1 values but expected 2` | `too few values to unpack (got 1, want 2)` |
//! | ``Local variable `x` referenced before assignment`` | `local variable x referenced before assignment` |
//! | ``Operation `in` not supported for types `float` and `int` `` | `unknown binary op: float in int` |
//! | ``Operation `-` not supported on type `string` `` | `unknown unary op: - string` |
//! | ``Operation `(iter)` not supported on type `int` `` | `int value is not iterable` |
//! | ``Operation `[]` not supported for types `float` and `int` `` | `unhandled index operation float[int]` |
//! | ``Operation `[::]` not supported on type `int` `` | `invalid slice operand int` |
//!
//! A failed comparison's message does not say which operator failed: the
//! comparison builtins, which know it, word it with [`comparison_wording`].

/// The binary operators whose failure Go words `unknown binary op`.
const BINARY: [&str; 12] = [
    "+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "in",
];

/// The unary operators whose failure Go words `unknown unary op`.
const UNARY: [&str; 3] = ["-", "+", "~"];

/// Go's words for a failed comparison `a OP b` whose interpreter message is
/// `text` (``Operation `compare` not supported for types `A` and `B` ``,
/// also spelled `cmp()` and `<>`), naming the types that did not compare.
pub fn comparison_wording(text: &str, op: &str) -> Option<String> {
    let (a, b) = uncomparable(text)?;
    Some(format!("{a} {op} {b} not implemented"))
}

/// The two types of a failed comparison's interpreter message, in its
/// order.
fn uncomparable(text: &str) -> Option<(&str, &str)> {
    let f = fields(
        text,
        &["Operation ", " not supported for types ", " and ", ""],
    )?;
    ["compare", "cmp()", "<>"]
        .contains(&f[0])
        .then(|| (f[1], f[2]))
}

/// The fields between backticks of `text`, when `text` is exactly
/// `parts[0] `f1` parts[1] `f2` ...`.
fn fields<'a>(text: &'a str, parts: &[&str]) -> Option<Vec<&'a str>> {
    let mut rest = text.strip_prefix(parts.first()?)?;
    let mut out = Vec::new();
    for part in &parts[1..] {
        let rest_after_tick = rest.strip_prefix('`')?;
        let close = rest_after_tick.find(&format!("`{part}"))?;
        out.push(&rest_after_tick[..close]);
        rest = &rest_after_tick[close + 1 + part.len()..];
    }
    rest.is_empty().then_some(out)
}

/// Whether `key` is a value's repr (a dict key), not a bare name (which
/// `str.format` reports the same way).
fn is_repr(key: &str) -> bool {
    key.starts_with(['"', '(', '-'])
        || key.starts_with(|c: char| c.is_ascii_digit())
        || ["None", "True", "False"].contains(&key)
}

/// Go's words for the failure `text` of the builtin `builtin`, where Go
/// words it per builtin and the interpreter's message carries all Go's
/// does: a value it cannot iterate, an argument of the wrong type, a
/// failed comparison in `min`/`max`, an empty sequence or separator, a
/// missing substring or attribute.
pub fn builtin_wording(builtin: &str, text: &str) -> Option<String> {
    not_iterable(builtin, text)
        .or_else(|| wrong_argument(builtin, text))
        .or_else(|| min_max(builtin, text))
        .or_else(|| match (builtin, text) {
            ("index" | "rindex", _) if text.starts_with("Substring ") => {
                Some(format!("{builtin}: substring not found"))
            }
            ("partition" | "rpartition", "Empty separator cannot be used for partitioning") => {
                Some(format!("{builtin}: empty separator"))
            }
            ("getattr", _) => {
                let f = fields(text, &["Operation ", " not supported on type ", ""])?;
                let attribute = f[0].strip_prefix('.')?;
                Some(format!("getattr: {}", no_attribute(f[1], attribute)))
            }
            _ => None,
        })
}

/// A builtin given a value it cannot iterate (`text` is `T value is not
/// iterable`). `zip` says which argument, which the message does not
/// carry: the project has a `zip` of its own for that.
fn not_iterable(builtin: &str, text: &str) -> Option<String> {
    let kind = text.strip_suffix(" value is not iterable")?;
    match builtin {
        "reversed" | "set" | "tuple" | "list" | "any" | "all" | "enumerate" | "join" | "extend" => {
            Some(format!(
                "{builtin}: for parameter 1: got {kind}, want iterable"
            ))
        }
        "sorted" => Some(format!(
            "sorted: for parameter iterable: got {kind}, want iterable"
        )),
        "dict" => Some(format!("dict: got {kind}, want iterable")),
        "min" | "max" => Some(format!("{builtin}: {kind} value is not iterable")),
        _ => None,
    }
}

/// An argument of the wrong type, by the parameter's name in the
/// interpreter's signature: Go numbers its parameters and names its types.
fn wrong_argument(builtin: &str, text: &str) -> Option<String> {
    let f = fields(
        text,
        &[
            "Type of parameter ",
            " doesn't match, expected ",
            ", actual ",
            "",
        ],
    )?;
    let actual = type_only(f[2]);
    match (builtin, f[0]) {
        ("getattr" | "hasattr", "attr") => Some(format!(
            "{builtin}: for parameter 2: got {actual}, want string"
        )),
        ("abs", "x") => Some(format!("got {actual}, want int or float")),
        ("find" | "rfind" | "index" | "rindex" | "count", "needle") => Some(format!(
            "{builtin}: for parameter 1: got {actual}, want string"
        )),
        ("join", "to_join") => Some(format!("join: in list, want string, got {actual}")),
        ("startswith" | "endswith", "prefix" | "suffix") => Some(format!(
            "{builtin}: got {actual}, want string or tuple of string"
        )),
        _ => None,
    }
}

/// `min` and `max`: Go compares each element with the best so far (the
/// interpreter names the two the other way round), and words an empty
/// sequence its own way.
fn min_max(builtin: &str, text: &str) -> Option<String> {
    let op = match builtin {
        "min" => "<",
        "max" => ">",
        _ => return None,
    };
    if text.starts_with("Argument is an empty iterable") {
        return Some(format!("{builtin}: argument is an empty sequence"));
    }
    let (best, element) = uncomparable(text)?;
    Some(format!("{builtin}: {element} {op} {best} not implemented"))
}

/// The type of an interpreter's `T (repr: ...)`.
fn type_only(actual: &str) -> &str {
    actual
        .split_once(" (repr: ")
        .map_or(actual, |(kind, _)| kind)
}

/// Go's words for a value of type `kind` without `attribute`.
fn no_attribute(kind: &str, attribute: &str) -> String {
    if kind == "struct" || kind == "mutable_struct" {
        format!("{kind} has no .{attribute} attribute")
    } else {
        format!("{kind} has no .{attribute} field or method")
    }
}

/// Go's words for the interpreter's message `text`, or `text` itself.
pub fn go_wording(text: &str) -> String {
    if let Some((names, function)) = text
        .strip_prefix("Found `")
        .and_then(|rest| rest.split_once("` extra named parameter(s) for call to "))
    {
        let first = names.split("` `").next().unwrap_or(names);
        return format!(
            "{function}: unexpected keyword argument {}",
            crate::go::quote::go_quote(first)
        );
    }
    if let Some(f) = fields(text, &["Variable ", " not found, did you mean ", "?"]) {
        return format!("undefined: {} (did you mean {}?)", f[0], f[1]);
    }
    if let Some(f) = fields(text, &["Variable ", " not found"]) {
        return format!("undefined: {}", f[0]);
    }
    if let Some(f) = fields(
        text,
        &["Operation ", " not supported for types ", " and ", ""],
    ) && BINARY.contains(&f[0])
    {
        return format!("unknown binary op: {} {} {}", f[1], f[0], f[2]);
    }
    if let Some(f) = fields(text, &["Operation ", " not supported on type ", ""]) {
        match f[0] {
            op if UNARY.contains(&op) => return format!("unknown unary op: {op} {}", f[1]),
            "(iter)" => return format!("{} value is not iterable", f[1]),
            "[::]" => return format!("invalid slice operand {}", f[1]),
            _ => {}
        }
    }
    if let Some(f) = fields(
        text,
        &["Operation `[]` not supported for types ", " and ", ""],
    ) {
        return format!("unhandled index operation {}[{}]", f[0], f[1]);
    }
    let attribute = fields(text, &["Object of type ", " has no attribute ", ""]).or_else(|| {
        text.split_once(", did you mean `")
            .and_then(|(head, _)| fields(head, &["Object of type ", " has no attribute ", ""]))
    });
    if let Some(f) = attribute {
        return no_attribute(f[0], f[1]);
    }
    if let Some(f) = fields(text, &["Key ", " was not found"])
        && is_repr(f[0])
    {
        return format!("key {} not in dict", f[0]);
    }
    // The one unpacking without a parameter name that expects a string:
    // the left operand of `in` on a string.
    if let Some(f) = fields(
        text,
        &["Type of parameters mismatch, expected ", ", actual ", ""],
    ) && f[0] == "str"
    {
        return format!(
            "'in <string>' requires string as left operand, not {}",
            type_only(f[1])
        );
    }
    if let Some(f) = fields(text, &["Value of type ", " is not hashable"]) {
        return format!("unhashable type: {}", f[0]);
    }
    if let Some(f) = fields(text, &["Operation `len()` not supported on type ", ""]) {
        return format!("len: value of type {} has no len", f[0]);
    }
    if let Some(f) = fields(text, &["Local variable ", " referenced before assignment"]) {
        return format!("local variable {} referenced before assignment", f[0]);
    }
    if let Some((got, want)) = text
        .strip_prefix("Unpacked ")
        .and_then(|rest| rest.split_once(" values but expected "))
        && let (Ok(got), Ok(want)) = (got.parse::<u64>(), want.parse::<u64>())
    {
        let which = if got < want { "few" } else { "many" };
        return format!("too {which} values to unpack (got {got}, want {want})");
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::go_wording;

    #[test]
    fn interpreter_messages_get_go_words() {
        let cases = [
            (
                "Operation `+` not supported for types `string` and `int`",
                "unknown binary op: string + int",
            ),
            (
                "Operation `compare` not supported for types `int` and `string`",
                "Operation `compare` not supported for types `int` and `string`",
            ),
            (
                "Object of type `list` has no attribute `nope`, did you mean `pop`?",
                "list has no .nope field or method",
            ),
            (
                "Object of type `struct` has no attribute `b`",
                "struct has no .b attribute",
            ),
            ("Key `\"b\"` was not found", "key \"b\" not in dict"),
            ("Key `x` was not found", "Key `x` was not found"),
            ("Key `3` was not found", "key 3 not in dict"),
            (
                "Value of type `list` is not hashable",
                "unhashable type: list",
            ),
            (
                "Operation `len()` not supported on type `int`",
                "len: value of type int has no len",
            ),
            (
                "Unpacked 1 values but expected 2",
                "too few values to unpack (got 1, want 2)",
            ),
            (
                "Unpacked 3 values but expected 2",
                "too many values to unpack (got 3, want 2)",
            ),
            (
                "Local variable `x` referenced before assignment",
                "local variable x referenced before assignment",
            ),
            (
                "Operation `in` not supported for types `float` and `int`",
                "unknown binary op: float in int",
            ),
            (
                "Operation `-` not supported on type `NoneType`",
                "unknown unary op: - NoneType",
            ),
            (
                "Operation `(iter)` not supported on type `bool`",
                "bool value is not iterable",
            ),
            (
                "Operation `[]` not supported for types `float` and `int`",
                "unhandled index operation float[int]",
            ),
            (
                "Operation `[::]` not supported on type `int`",
                "invalid slice operand int",
            ),
            (
                // 1 in "abc"
                "Type of parameters mismatch, expected `str`, actual `int (repr: 1)`",
                "'in <string>' requires string as left operand, not int",
            ),
            ("anything else", "anything else"),
        ];
        for (interpreter, go) in cases {
            assert_eq!(go_wording(interpreter), go, "{interpreter}");
        }
    }

    #[test]
    fn a_builtin_given_a_non_iterable_is_worded_per_builtin() {
        use super::builtin_wording as not_iterable;
        let text = "int value is not iterable";
        assert_eq!(
            not_iterable("list", text).as_deref(),
            Some("list: for parameter 1: got int, want iterable")
        );
        assert_eq!(
            not_iterable("sorted", text).as_deref(),
            Some("sorted: for parameter iterable: got int, want iterable")
        );
        assert_eq!(
            not_iterable("min", text).as_deref(),
            Some("min: int value is not iterable")
        );
        assert_eq!(
            not_iterable("dict", text).as_deref(),
            Some("dict: got int, want iterable")
        );
        assert_eq!(not_iterable("zip", text), None);
        assert_eq!(not_iterable("list", "something else"), None);
    }

    /// Each expected text is go.starlark.net's answer to the call named.
    #[test]
    fn builtin_failures_get_go_words_per_builtin() {
        use super::builtin_wording;
        let cases = [
            // getattr(1, 2)
            (
                "getattr",
                "Type of parameter `attr` doesn't match, expected `str`, actual `int (repr: 2)`",
                "getattr: for parameter 2: got int, want string",
            ),
            // abs("x")
            (
                "abs",
                "Type of parameter `x` doesn't match, expected `float | int`, actual `string (repr: \"x\")`",
                "got string, want int or float",
            ),
            // "abc".find(1)
            (
                "find",
                "Type of parameter `needle` doesn't match, expected `str`, actual `int (repr: 1)`",
                "find: for parameter 1: got int, want string",
            ),
            // "abc".startswith(1)
            (
                "startswith",
                "Type of parameter `prefix` doesn't match, expected `str | tuple[str, ...]`, actual `int (repr: 1)`",
                "startswith: got int, want string or tuple of string",
            ),
            // "a".join([1])
            (
                "join",
                "Type of parameter `to_join` doesn't match, expected `str`, actual `int (repr: 1)`",
                "join: in list, want string, got int",
            ),
            // min(1, "a"): Go compares the new element with the best so far.
            (
                "min",
                "Operation `compare` not supported for types `int` and `string`",
                "min: string < int not implemented",
            ),
            // max([1, "a"])
            (
                "max",
                "Operation `compare` not supported for types `int` and `string`",
                "max: string > int not implemented",
            ),
            // min([])
            (
                "min",
                "Argument is an empty iterable, max() expect a non empty iterable",
                "min: argument is an empty sequence",
            ),
            // "abc".rindex("z")
            (
                "rindex",
                "Substring 'z' not found in 'abc'",
                "rindex: substring not found",
            ),
            // "abc".rpartition("")
            (
                "rpartition",
                "Empty separator cannot be used for partitioning",
                "rpartition: empty separator",
            ),
            // getattr("abc", "nope"), getattr(struct(a=1), "x")
            (
                "getattr",
                "Operation `.nope` not supported on type `string`",
                "getattr: string has no .nope field or method",
            ),
            (
                "getattr",
                "Operation `.x` not supported on type `struct`",
                "getattr: struct has no .x attribute",
            ),
        ];
        for (builtin, interpreter, go) in cases {
            assert_eq!(
                builtin_wording(builtin, interpreter).as_deref(),
                Some(go),
                "{builtin}: {interpreter}"
            );
        }
        assert_eq!(
            builtin_wording("len", "Substring 'z' not found in 'abc'"),
            None
        );
    }

    #[test]
    fn a_failed_comparison_names_its_operator() {
        let text = "Operation `cmp()` not supported for types `string` and `int`";
        assert_eq!(
            super::comparison_wording(text, "<=").as_deref(),
            Some("string <= int not implemented")
        );
        assert_eq!(super::comparison_wording("other", "<"), None);
    }
}
