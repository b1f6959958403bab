#!/usr/bin/env python3
"""Random-expression differential: evaluates random Starlark expressions on
two function binaries and counts how often they print the same thing.

    python3 random_exprs.py BINARY_A BINARY_B [--count N] [--seed S] [--show N]

Each expression is built from a small grammar of literals (ints, big ints,
floats, strings with non-ASCII text, lists, tuples, dicts, None, bools),
operators (arithmetic, comparison, membership, boolean, unary), indexing and
slicing, conditional expressions, comprehensions, universe builtins and
string, list and dict methods. A script `fail("=" + repr(EXPR))` runs on
both binaries; an expression "prints identically" when both give the same
repr, or both fail (counted again when the error message is the same too).
The seed fixes the expressions, so two runs compare like with like.
"""
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as rpc  # noqa: E402
from testdata import outcome  # noqa: E402

STRINGS = ['"abc"', '"Hello, World"', '""', '"a,b,,c"', '"  pad  "', '"ÀÉÎ"', '"世界"', '"x\\ty"', '"123"', '"aBc"']
BINARY = ["+", "-", "*", "/", "//", "%", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "and", "or", "|", "&", "^"]
BUILTINS1 = ["len", "str", "repr", "bool", "type", "list", "tuple", "sorted", "reversed", "int", "float", "abs", "hash", "dict", "enumerate", "any", "all", "min", "max"]
STRING_METHODS = [
    ("upper", 0), ("lower", 0), ("title", 0), ("capitalize", 0), ("strip", 0), ("split", 1), ("split", 0),
    ("replace", 2), ("find", 1), ("index", 1), ("count", 1), ("startswith", 1), ("endswith", 1),
    ("join", 1), ("partition", 1), ("rsplit", 1), ("splitlines", 0), ("isdigit", 0), ("isalpha", 0),
    ("format", 1), ("lstrip", 1), ("removeprefix", 1), ("removesuffix", 1),
]


def small_int(r):
    return str(r.choice([0, 1, 2, 3, -1, -2, 7, 10, 100, 2 ** 31, 2 ** 40, 10 ** 20, -(2 ** 63)]))


def number(r):
    return r.choice([small_int(r), small_int(r), repr(r.choice([0.0, 0.5, 1.5, -2.25, 1e10, 1e100, 3.0, 1e-7]))])


def leaf(r):
    kind = r.randrange(8)
    if kind < 3:
        return number(r)
    if kind < 6:
        return r.choice(STRINGS)
    return r.choice(["None", "True", "False"])


def expr(r, depth):
    if depth <= 0:
        return leaf(r)
    d = depth - 1
    kind = r.randrange(15)
    if kind == 0:
        return "[%s]" % ", ".join(expr(r, d) for _ in range(r.randrange(4)))
    if kind == 1:
        items = [expr(r, d) for _ in range(r.randrange(4))]
        return "(%s)" % (items[0] + "," if len(items) == 1 else ", ".join(items))
    if kind == 2:
        return "{%s}" % ", ".join("%s: %s" % (leaf(r), expr(r, d)) for _ in range(r.randrange(3)))
    if kind in (3, 4, 5):
        return "(%s %s %s)" % (expr(r, d), r.choice(BINARY), expr(r, d))
    if kind == 6:
        return "(%s%s)" % (r.choice(["-", "not ", "~", "+"]), expr(r, d))
    if kind == 7:
        return "%s(%s)" % (r.choice(BUILTINS1), expr(r, d))
    if kind == 8:
        name, arity = r.choice(STRING_METHODS)
        args = ", ".join(r.choice(STRINGS) if name != "format" else expr(r, d) for _ in range(arity))
        return "%s.%s(%s)" % (r.choice(STRINGS), name, args)
    if kind == 9:
        return "%s[%s]" % (expr(r, d), r.choice(["0", "1", "-1", "5", "1:", ":2", "::-1", "1:3"]))
    if kind == 10:
        return "(%s if %s else %s)" % (expr(r, d), expr(r, d), expr(r, d))
    if kind == 11:
        return "[x for x in %s]" % expr(r, d)
    if kind == 12:
        return "%s %% %s" % (r.choice(['"%d"', '"%s"', '"%r"', '"%x"', '"%5.2f"', '"%s-%s"']), expr(r, d))
    if kind == 13:
        return "%s(%s, %s)" % (r.choice(["min", "max", "range", "zip", "getattr", "hasattr"]), expr(r, d), expr(r, d))
    return leaf(r)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opt = lambda name, default: int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default  # noqa: E731
    count, seed, show = opt("--count", 3000), opt("--seed", 1), opt("--show", 0)
    # Values given to options are not positional arguments.
    args = [a for a in args if not a.isdigit()]
    r = random.Random(seed)
    exprs = [expr(r, r.randrange(1, 4)) for _ in range(count)]
    servers = [rpc.start(args[0]), rpc.start(args[1])]
    same = same_message = 0
    differences = []
    try:
        for e in exprs:
            source = 'fail("=" + repr(%s))\n' % e
            a, b = (outcome(rpc.run(call, source)) for _, call in servers)
            a_value = a.startswith("fail: =") if a else False
            b_value = b.startswith("fail: =") if b else False
            if a == b:
                same += 1
                same_message += 1
            elif not a_value and not b_value:
                same += 1
                differences.append((1, e, a, b))
            else:
                differences.append((0, e, a, b))
    finally:
        for proc, _ in servers:
            proc.kill()
    print("expressions: %d (seed %d)" % (count, seed))
    print("print identically (a value, or an error on both sides): %d (%.1f%%)" % (same, 100.0 * same / count))
    print("identical including error messages: %d (%.1f%%)" % (same_message, 100.0 * same_message / count))
    # Different values (or a value on one side only) first.
    for _, e, a, b in sorted(differences, key=lambda d: d[0])[:show]:
        print("  %s\n    A: %s\n    B: %s" % (e, re.sub(r"\s+", " ", a or "")[:150], re.sub(r"\s+", " ", b or "")[:150]))


if __name__ == "__main__":
    main()
