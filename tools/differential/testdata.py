#!/usr/bin/env python3
"""Runs go.starlark.net's own test data on two function binaries and counts
how often they agree.

    python3 testdata.py GO_BINARY THIS_BINARY [TESTDATA_DIR] [--show N]

TESTDATA_DIR defaults to the starlark/testdata folder of the go.starlark.net
module in the Go module cache (present once tools/gostarlark is built). The
files are read there; none is copied into this repository.

Each file is split into its `---` chunks, and each chunk into one script per
unit: a top-level `assert.*(...)` statement, or a top-level call of a
function the chunk defines (such as `checkhash()`, whose assertions run
inside it). A unit's script is the chunk's statements before it other than
assertions, then the unit. As in go.starlark.net's own test runner, a failed
assertion reports and lets the script go on (so a failed assertion inside an
earlier call does not fail the units after it); a unit fails when an
assertion failed within it or evaluation stopped with an error. `assert`
and `freeze` are defined in Starlark at the top of every script (`eq` with
Go's one-ulp tolerance for floats, `ne`, `true`, `lt`, `contains`, `fails`,
`fail`; `freeze` does nothing), so both binaries run the same assertions. A
chunk with a `### "pattern"` line is one script that must fail with that
pattern.

An assertion "passes" when its script succeeds, or for `assert.fails` (and
`###` chunks) when it fails with a message matching the pattern. Counted
over the units that pass on the first binary (Go): how many also pass
on the second, ignoring the message of an expected failure (same outcome),
and how many pass with the message too.
"""
import ast
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as rpc  # noqa: E402

PRELUDE = '''
_errors = []

def _report(msg):
    _errors.append(msg)

def _floateq(x, y):
    x, y = float(x), float(y)
    if x == y:
        return True
    return abs(x - y) <= max(abs(x), abs(y)) * 2.220446049250313e-16

def _eq(x, y, msg = ""):
    if x != y:
        if type(x) == "float" and type(y) in ("float", "int") or type(y) == "float" and type(x) in ("float", "int"):
            if not _floateq(x, y):
                _report("assert.eq: floats: %r != %r %s" % (x, y, msg))
        else:
            _report("assert.eq: %r != %r %s" % (x, y, msg))

def _ne(x, y, msg = ""):
    if x == y:
        _report("assert.ne: %r == %r %s" % (x, y, msg))

def _true(cond, msg = "assertion failed"):
    if not cond:
        _report("assert.true: " + msg)

def _lt(x, y, msg = ""):
    if not (x < y):
        _report("assert.lt: %r >= %r %s" % (x, y, msg))

def _contains(x, y, msg = ""):
    if y not in x:
        _report("assert.contains: %r does not contain %r %s" % (x, y, msg))

def _fails(f, pattern):
    f()
    _report("assert.fails: evaluation succeeded unexpectedly (want error matching %r)" % pattern)

def _fail(msg):
    _report("assert.fail: " + msg)

def freeze(x):
    pass

def _count():
    return len(_errors)

def _check(mark):
    if len(_errors) > mark:
        fail(_errors[mark])

assert = struct(eq = _eq, ne = _ne, true = _true, lt = _lt, contains = _contains, fails = _fails, fail = _fail)
'''


def default_dir():
    out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip()
    found = sorted(glob.glob(os.path.join(out or os.path.expanduser("~/go/pkg/mod"), "go.starlark.net@*", "starlark", "testdata")))
    return found[-1] if found else None


def statements(chunk):
    """(first line, last line, kind, pattern) of each top-level statement;
    None when Python cannot read the chunk."""
    text = re.sub(r"\bassert\.", "assert_.", chunk)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    out = []
    # A call of a function the chunk defines is a unit when its assertions
    # all report and go on; one with `assert.fails` needs the runner's
    # `catch`, which Starlark lacks here, so a call of it is left out.
    defined = {node.name: "assert_.fails" in ast.unparse(node) for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in tree.body:
        kind, pattern = None, None
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "assert_":
                kind = f.attr
                if kind == "fails" and len(node.value.args) > 1 and isinstance(node.value.args[1], ast.Constant):
                    pattern = node.value.args[1].value
            elif isinstance(f, ast.Name) and f.id in defined:
                kind = "skip" if defined[f.id] else "call"
        out.append((node.lineno, node.end_lineno, kind, pattern))
    return out


# A load of `assert` (and `freeze`) from assert.star, which the prelude
# replaces; other loads from it (chunks that test load errors) stay and reach
# the stand-in module below.
LOAD_ASSERT = re.compile(r"""(?m)^load\((["'])assert\.star\1, *(["'])assert\2(, *(["'])freeze\4)?\)[ \t]*$""")
ASSERT_MODULE = "assert = None\nfreeze = None\n"


def scripts(path):
    """(name, source, expected error pattern or None) of every assertion."""
    text = open(path, encoding="utf-8").read()
    name = os.path.basename(path)
    for number, chunk in enumerate(re.split(r"(?m)^---$", text)):
        marked = re.search(r'###\s*"(.*)"', chunk)
        if marked:
            yield "%s#%d" % (name, number), LOAD_ASSERT.sub("", PRELUDE + chunk + "\n_check(0)\n"), marked.group(1)
            continue
        found = statements(chunk)
        if found is None:
            continue
        lines = chunk.split("\n")
        for i, (first, last, kind, pattern) in enumerate(found):
            if kind in (None, "skip"):
                continue
            before = ["\n".join(lines[f - 1:l]) for (f, l, k, _) in found[:i] if k is None]
            unit = "\n".join(lines[first - 1:last])
            source = "\n".join([PRELUDE] + before + ["_mark = _count()", unit, "_check(_mark)"]) + "\n"
            source = LOAD_ASSERT.sub("", source)
            yield "%s#%d:%d" % (name, number, first), source, pattern if kind == "fails" else None


def outcome(answer):
    """None when the script succeeded, else its error message."""
    if "error" in answer:
        return answer["error"]
    for severity, message in answer["results"]:
        if severity == 1:
            last = message.rsplit("\nError", 1)[-1]
            last = re.sub(r"^( in [^:]+)?: ", "", last)
            half = (len(last) - 2) // 2
            if len(last) > 2 and last[:half] == last[half + 2:] and last[half:half + 2] == ": ":
                last = last[:half]
            return last
    return None


def passes(result, pattern, expect_error):
    if not expect_error:
        return result is None, result is None
    if result is None:
        return False, False
    try:
        return True, re.search(pattern, result) is not None
    except re.error:
        return True, pattern in result


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show = int(sys.argv[sys.argv.index("--show") + 1]) if "--show" in sys.argv else 0
    go_binary, this_binary = args[0], args[1]
    directory = args[2] if len(args) > 2 and not args[2].isdigit() else default_dir()
    servers = [rpc.start(go_binary), rpc.start(this_binary)]
    totals = {"assertions": 0, "go_passes": 0, "same": 0, "same_message": 0, "errors_expected": 0, "errors_same_message": 0}
    differences = []
    try:
        for path in sorted(glob.glob(os.path.join(directory, "*.star"))):
            for name, source, pattern in scripts(path):
                expect_error = pattern is not None
                spec = {"source": source, "modules": {"assert.star": ASSERT_MODULE}}
                go_res, this_res = (outcome(rpc.run_spec(call, spec)) for _, call in servers)
                totals["assertions"] += 1
                go_ok, go_msg = passes(go_res, pattern, expect_error)
                if not (go_ok and go_msg):
                    continue
                totals["go_passes"] += 1
                ok, msg = passes(this_res, pattern, expect_error)
                totals["same"] += ok
                totals["same_message"] += ok and msg
                if expect_error:
                    totals["errors_expected"] += 1
                    totals["errors_same_message"] += ok and msg
                if not (ok and msg):
                    differences.append((name, pattern, this_res))
    finally:
        for proc, _ in servers:
            proc.kill()
    g = max(totals["go_passes"], 1)
    e = max(totals["errors_expected"], 1)
    print("assertions: %d; passing on Go: %d" % (totals["assertions"], totals["go_passes"]))
    print("same outcome (ignoring wording): %d (%.1f%%)" % (totals["same"], 100.0 * totals["same"] / g))
    print("same outcome with Go's message: %d (%.1f%%)" % (totals["same_message"], 100.0 * totals["same_message"] / g))
    print("expected errors matching Go's pattern: %d of %d (%.1f%%)" % (totals["errors_same_message"], totals["errors_expected"], 100.0 * totals["errors_same_message"] / e))
    for name, pattern, result in differences[:show]:
        print("  %s  want %r  got %r" % (name, pattern, (result or "success")[:160]))


if __name__ == "__main__":
    main()
