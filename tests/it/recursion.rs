//! Recursion is rejected as the Go implementation rejects it, unless the
//! server allows it (`--allow-recursion`). The expected texts are what the
//! Go implementation answered for the same scripts.

use crate::common;

use function_starlark::limits::Limits;
use function_starlark::metrics::Metrics;
use serde_json::{Value, json};

/// The response to `spec` (inline source and modules), with `limits`.
fn run(spec: Value, limits: Limits) -> Value {
    let mut req = common::request("{}");
    let input = json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": spec,
    });
    req.input = Some(common::to_struct(&input));
    let function = common::function_with(limits, Metrics::default());
    common::json(&common::handle(&function, req))
}

fn rejected(source: &str) -> String {
    common::fatal(&run(json!({"source": source}), Limits::default())).unwrap_or_default()
}

const FACTORIAL: &str = "def f(n):\n    if n == 0:\n        return 1\n    return n * f(n - 1)\nx = f(3)\ndxr['status'] = {'x': x}\n";

#[test]
fn a_function_calling_itself_fails_with_the_go_message() {
    let message = rejected(FACTORIAL);
    assert!(
        message.starts_with("starlark execution failed: starlark execution error: Traceback")
            && message
                .ends_with("\nError: function f called recursively: function f called recursively"),
        "{message}"
    );
}

#[test]
fn mutual_recursion_is_recursion() {
    let source = "def even(n):\n    if n == 0:\n        return True\n    return odd(n - 1)\ndef odd(n):\n    if n == 0:\n        return False\n    return even(n - 1)\nx = even(4)\n";
    let message = rejected(source);
    assert!(
        message.ends_with(
            "\nError: function even called recursively: function even called recursively"
        ),
        "{message}"
    );
}

#[test]
fn calls_that_do_not_recurse_run() {
    // A recursive function whose base case holds at once, helpers calling
    // helpers, the same helper through a builtin's callback, and two
    // modules' functions of one name calling each other.
    let source = "load('a.star', 'render')\ndef f(n):\n    if n == 0:\n        return 0\n    return f(n - 1)\ndef g(x):\n    return x + 1\ndef h(x):\n    return g(x) + g(x)\nz = sorted([3, 1, 2], key = lambda v: g(v))\ndxr['status'] = {'f': f(0), 'h': [h(i) for i in range(3)], 'z': z, 'r': render(2)}\n";
    let modules = json!({
        "a.star": "load('b.star', inner = 'render')\ndef render(n):\n    return inner(n) + 1\n",
        "b.star": "def render(n):\n    return n * 10\n",
    });
    let rsp = run(
        json!({"source": source, "modules": modules}),
        Limits::default(),
    );
    assert_eq!(common::fatal(&rsp), None);
    assert_eq!(
        rsp["desired"]["composite"]["resource"]["status"],
        json!({"f": 0.0, "h": [2.0, 4.0, 6.0], "z": [1.0, 2.0, 3.0], "r": 21.0})
    );
}

#[test]
fn the_server_can_allow_recursion() {
    let limits = Limits {
        allow_recursion: true,
        ..Limits::default()
    };
    let rsp = run(json!({"source": FACTORIAL}), limits);
    assert_eq!(common::fatal(&rsp), None);
    assert_eq!(
        rsp["desired"]["composite"]["resource"]["status"],
        json!({"x": 6.0})
    );
}
