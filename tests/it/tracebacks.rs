//! A run-time error's traceback is the Go implementation's: frames at a
//! call's `(` and an operation's operator, `Error in NAME: MSG: MSG` when a
//! builtin failed (which adds no frame of its own), `Error: MSG: MSG`
//! otherwise. The expected texts are what the Go implementation answered
//! for the same scripts.

use crate::common;

fn fatal(source: &str) -> String {
    let rsp = common::run(source, "{}");
    rsp.results
        .iter()
        .find(|r| r.severity == 1)
        .map(|r| r.message.clone())
        .unwrap_or_default()
}

/// The frame lines and the error line of a traceback.
fn tail(message: &str) -> Vec<&str> {
    message.lines().skip(1).collect()
}

#[test]
fn a_failing_builtin_is_named_and_adds_no_frame() {
    let message = fatal("def f():\n    fail(\"boom\")\nx = f()\n");
    assert_eq!(
        tail(&message),
        [
            "  composition.star:3:6: in <toplevel>",
            "  composition.star:2:9: in f",
            "Error in fail: fail: boom: fail: boom",
        ],
        "{message}"
    );
    let message = fatal("x = json.decode(\"{\")\n");
    assert_eq!(tail(&message)[0], "  composition.star:1:16: in <toplevel>");
    assert_eq!(
        tail(&message).last().copied(),
        Some(
            "Error in json.decode: json.decode: at offset 1, unexpected end of file: json.decode: at offset 1, unexpected end of file"
        ),
        "{message}"
    );
    // Every method the function gives Go's behaviour has its frame too.
    let message = fatal("x = set([1])\ny = x.union(1)\n");
    assert_eq!(
        tail(&message),
        [
            "  composition.star:2:12: in <toplevel>",
            "Error in union: union: argument #1 is not iterable: int: union: argument #1 is not iterable: int",
        ],
        "{message}"
    );
    // A builtin given what it cannot iterate says so in its own words.
    let message = fatal("x = sorted(1)\n");
    assert_eq!(
        tail(&message).last().copied(),
        Some(
            "Error in sorted: sorted: for parameter iterable: got int, want iterable: sorted: for parameter iterable: got int, want iterable"
        ),
        "{message}"
    );
    let message = fatal("x = [1, 2, 3]\ny = x.pop(5)\n");
    assert_eq!(tail(&message)[0], "  composition.star:2:10: in <toplevel>");
    assert_eq!(
        tail(&message).last().copied(),
        Some(
            "Error in pop: pop: list index 5 out of range [-3:2]: pop: list index 5 out of range [-3:2]"
        ),
        "{message}"
    );
}

#[test]
fn an_error_of_starlark_code_is_not_attributed_to_a_builtin() {
    let message = fatal("def f():\n    return 1 // 0\nx = f()\n");
    assert_eq!(
        tail(&message),
        [
            "  composition.star:3:6: in <toplevel>",
            "  composition.star:2:14: in f",
            "Error: floored division by zero: floored division by zero",
        ],
        "{message}"
    );
}

#[test]
fn the_message_is_read_back_from_either_form() {
    use function_starlark::runner::errors::error_message;
    assert_eq!(
        error_message("T\nError in fail: fail: x: fail: x"),
        Some("fail: x")
    );
    assert_eq!(error_message("T\nError: a: b: a: b"), Some("a: b"));
    assert_eq!(error_message("no traceback"), None);
}

#[test]
fn a_memory_budget_error_names_the_budget_the_position_and_the_flag() {
    use function_starlark::limits::Limits;
    use function_starlark::metrics::Metrics;
    // The wall-clock limit is raised out of the way: on a slow machine a
    // debug build under the parallel tests' load took longer than the
    // default 10 s to fill the budget.
    let limits = Limits {
        max_heap_bytes: 32 << 20,
        timeout: std::time::Duration::from_mins(2),
        ..Limits::default()
    };
    let source = "l = []\nfor i in range(10000000):\n    l.append(str(i) * 100)\n";
    let req = common::with_source(common::request("{}"), source);
    let rsp = common::handle(&common::function_with(limits, Metrics::default()), req);
    let message = rsp
        .results
        .iter()
        .find(|r| r.severity == 1)
        .map(|r| r.message.clone())
        .unwrap_or_default();
    assert!(
        message.starts_with(
            "starlark execution failed: starlark script exceeded its memory budget of 32 MiB at composition.star:3:"
        ) && message.contains("raise --max-heap-mib"),
        "{message}"
    );
}
