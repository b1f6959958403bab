//! Type names as go.starlark.net reports them.

use starlark::values::Value;

/// The type name go.starlark.net reports for `v`: as starlark-rust's, except
/// that native functions and methods are `builtin_function_or_method`.
pub fn go_type(v: Value) -> &'static str {
    let t = v.get_type();
    // A `def` or `lambda` displays as its qualified name, `file.star.f`; a
    // native function or bound method displays as its bare name.
    if t == "function" && !v.to_str().contains('.') {
        return "builtin_function_or_method";
    }
    t
}
