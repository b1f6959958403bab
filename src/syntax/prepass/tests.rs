//! The pre-pass, the nesting bound and the load-target scan.

use super::*;
use crate::syntax::loads::load_targets;

fn rewrite(source: &str) -> String {
    match prepass(source) {
        Ok(p) => p.text,
        Err(e) => panic!("prepass failed: {e}"),
    }
}

fn rewrite_with_map(source: &str) -> Prepassed {
    match prepass(source) {
        Ok(p) => p,
        Err(e) => panic!("prepass failed: {e}"),
    }
}

fn error(source: &str) -> PrepassError {
    match prepass(source) {
        Ok(p) => panic!("expected an error, got {:?}", p.text),
        Err(e) => e,
    }
}

// --- identity ---------------------------------------------------------

#[test]
fn source_without_trigger_words_takes_the_identity_fast_path() {
    let source = "x = 1\ndef f(y):\n    return y + x\n";
    let p = rewrite_with_map(source);
    assert_eq!(p.text, source);
    assert!(p.map.is_identity());
    assert_eq!(p.map.original(2, 11), (2, 11));
}

#[test]
fn trigger_words_only_inside_strings_and_comments_leave_an_identity_map() {
    let source = "s = \"while assert x.pop(-1)\"  # while assert\n";
    let p = rewrite_with_map(source);
    assert_eq!(p.text, source);
    assert!(p.map.is_identity());
}

#[test]
fn default_line_map_is_the_identity() {
    let map = LineMap::default();
    assert!(map.is_identity());
    assert_eq!(map.original(4, 2), (4, 2));
}

// --- tabs ---------------------------------------------------------------

#[test]
fn tabs_in_indentation_expand_to_eight_column_stops() {
    let source = "def f():\n\tx = 1\n\tif x:\n\t\ty = 2\n  \tz = 3\n";
    let expected = "def f():\n        x = 1\n        if x:\n                y = 2\n        z = 3\n";
    let p = rewrite_with_map(source);
    assert_eq!(p.text, expected);
    assert_eq!(p.map.original(1, 8), (1, 1));
    assert_eq!(p.map.original(3, 16), (3, 2));
    assert_eq!(p.map.original(3, 20), (3, 6));
    assert_eq!(p.map.original(4, 8), (4, 3));
}

#[test]
fn tab_between_tokens_becomes_one_space() {
    let p = rewrite_with_map("x =\t1\t+\t2\n");
    assert_eq!(p.text, "x = 1 + 2\n");
    assert_eq!(p.map.original(0, 8), (0, 8));
    assert!(!p.map.is_identity());
}

#[test]
fn tab_inside_string_is_kept() {
    let source = "x = \"a\tb\"\ny = '''c\n\td'''\n";
    assert_eq!(rewrite(source), source);
}

#[test]
fn tab_inside_comment_becomes_a_space() {
    assert_eq!(rewrite("x = 1  #\tnote\n"), "x = 1  # note\n");
}

// --- while ------------------------------------------------------------

#[test]
fn while_with_indented_body_becomes_bounded_for() {
    let source = "i = 0\nwhile i < 3:\n    i += 1\nprint(i)\n";
    let expected = "i = 0\nfor _sl_w0 in range(0x7fffffff):\n    if not (i < 3): break\n    i += 1\nprint(i)\n";
    assert_eq!(rewrite(source), expected);
}

#[test]
fn nested_while_loops_get_distinct_counters() {
    let source = "while a:\n    while b:\n        f()\n    g()\nwhile c:\n    h()\n";
    let expected = "for _sl_w0 in range(0x7fffffff):\n    if not (a): break\n    for _sl_w1 in range(0x7fffffff):\n        if not (b): break\n        f()\n    g()\nfor _sl_w2 in range(0x7fffffff):\n    if not (c): break\n    h()\n";
    assert_eq!(rewrite(source), expected);
}

#[test]
fn while_inside_def_uses_the_body_indentation() {
    let source = "def f(n):\n    while n > 0:\n      n -= 1\n    return n\n";
    let expected = "def f(n):\n    for _sl_w0 in range(0x7fffffff):\n      if not (n > 0): break\n      n -= 1\n    return n\n";
    assert_eq!(rewrite(source), expected);
}

#[test]
fn tab_indented_while_uses_expanded_indentation() {
    let source = "def f():\n\twhile x:\n\t\ty()\n";
    let expected = "def f():\n        for _sl_w0 in range(0x7fffffff):\n                if not (x): break\n                y()\n";
    assert_eq!(rewrite(source), expected);
}

#[test]
fn while_with_same_line_body_becomes_bounded_for() {
    let source = "def f():\n    while x: f(); g()  # c\n    y()\n";
    let expected = "def f():\n    for _sl_w0 in range(0x7fffffff):\n        if not (x): break\n        f(); g()  # c\n    y()\n";
    let p = rewrite_with_map(source);
    assert_eq!(p.text, expected);
    assert_eq!(p.map.original(2, 0), (1, 4));
    assert_eq!(p.map.original(3, 8), (1, 13));
    assert_eq!(p.map.original(3, 11), (1, 16));
    assert_eq!(p.map.original(4, 4), (2, 4));
}

#[test]
fn while_with_multi_line_bracketed_condition_is_joined_onto_the_guard() {
    let source = "while (a and # first\n       b):\n    f()\nz()\n";
    let expected =
        "for _sl_w0 in range(0x7fffffff):\n    if not ((a and b)): break\n    f()\nz()\n";
    let p = rewrite_with_map(source);
    assert_eq!(p.text, expected);
    // `for` header and guard map to the `while` line.
    assert_eq!(p.map.original(0, 0), (0, 0));
    assert_eq!(p.map.original(1, 0), (0, 0));
    // `a` and `b` inside the guard map to their own original lines.
    assert_eq!(p.map.original(1, 13), (0, 7));
    assert_eq!(p.map.original(1, 19), (1, 7));
    // Lines after the header keep their original numbers.
    assert_eq!(p.map.original(2, 4), (2, 4));
    assert_eq!(p.map.original(3, 0), (3, 0));
}

#[test]
fn while_inside_strings_and_comments_is_untouched() {
    let source = "s = 'while x: y'\n# while x:\nt = \"\"\"\nwhile y:\n\"\"\"\n";
    assert_eq!(rewrite(source), source);
}

#[test]
fn identifiers_containing_while_are_untouched() {
    let source = "while_x = 1\nx.while_y = 2\ny = x.while\n";
    assert_eq!(rewrite(source), source);
}

#[test]
fn while_body_keeps_break_and_continue() {
    let source = "while True:\n    if a:\n        continue\n    break\n";
    let expected = "for _sl_w0 in range(0x7fffffff):\n    if not (True): break\n    if a:\n        continue\n    break\n";
    assert_eq!(rewrite(source), expected);
}

#[test]
fn comment_after_while_colon_stays_on_the_header_line() {
    let source = "while x:  # loop\n\n    # body\n    f()\n";
    let expected =
        "for _sl_w0 in range(0x7fffffff):  # loop\n    if not (x): break\n\n    # body\n    f()\n";
    assert_eq!(rewrite(source), expected);
}

#[test]
fn while_at_end_of_file_without_newline_is_rewritten() {
    assert_eq!(
        rewrite("while x:\n    f()"),
        "for _sl_w0 in range(0x7fffffff):\n    if not (x): break\n    f()"
    );
    assert_eq!(
        rewrite("while x: f()"),
        "for _sl_w0 in range(0x7fffffff):\n    if not (x): break\n    f()"
    );
}

#[test]
fn while_condition_with_slices_and_dicts_finds_the_right_colon() {
    let source = "while l[1:2] and {1: 2}:\n    f()\n";
    let expected =
        "for _sl_w0 in range(0x7fffffff):\n    if not (l[1:2] and {1: 2}): break\n    f()\n";
    assert_eq!(rewrite(source), expected);
}

#[test]
fn while_without_colon_is_an_error() {
    let e = error("x = 1\n  while x\n    f()\n");
    assert_eq!((e.line, e.column), (2, 3));
    assert!(e.message.contains("':'"), "{}", e.message);
}

#[test]
fn crlf_line_endings_are_preserved_around_a_while_rewrite() {
    let source = "while x:\r\n    f()\r\n";
    let expected = "for _sl_w0 in range(0x7fffffff):\r\n    if not (x): break\n    f()\r\n";
    assert_eq!(rewrite(source), expected);
}

// --- assert -------------------------------------------------------------

#[test]
fn assert_is_renamed_as_a_variable() {
    assert_eq!(
        rewrite("assert = 1\nprint(assert)\n"),
        "sl__assert = 1\nprint(sl__assert)\n"
    );
}

#[test]
fn assert_is_renamed_as_a_keyword_argument_name() {
    assert_eq!(
        rewrite("s = struct(assert = 1)\n"),
        "s = struct(sl__assert = 1)\n"
    );
}

#[test]
fn assert_is_renamed_as_an_attribute() {
    assert_eq!(rewrite("x.assert.eq(1, 1)\n"), "x.sl__assert.eq(1, 1)\n");
}

#[test]
fn assert_in_load_symbol_strings_is_renamed() {
    let source = "load(\"assert.star\", \"assert\", a = 'assert', assert = \"x\", \"other\")\n";
    let expected =
        "load(\"assert.star\", \"sl__assert\", a = 'sl__assert', sl__assert = \"x\", \"other\")\n";
    assert_eq!(rewrite(source), expected);
}

#[test]
fn assert_inside_other_strings_is_untouched() {
    let source = "f(\"assert\")\nx = {'assert': assert}\n";
    assert_eq!(
        rewrite(source),
        "f(\"assert\")\nx = {'assert': sl__assert}\n"
    );
}

#[test]
fn identifiers_containing_assert_are_untouched() {
    let source = "assert_eq(1, 1)\nmy_assert = 2\n";
    assert_eq!(rewrite(source), source);
}

#[test]
fn renamed_identifier_columns_map_back_by_the_length_difference() {
    let p = rewrite_with_map("assert.eq(a, b)\n");
    assert_eq!(p.text, "sl__assert.eq(a, b)\n");
    assert_eq!(p.map.original(0, 0), (0, 0));
    assert_eq!(p.map.original(0, 4), (0, 0));
    assert_eq!(p.map.original(0, 7), (0, 3));
    assert_eq!(p.map.original(0, 14), (0, 10));
}

#[test]
fn reserved_prefix_identifier_is_rejected_with_its_position() {
    let e = error("x = 1\ny = _sl_foo\n");
    assert_eq!((e.line, e.column), (2, 5));
    assert_eq!(
        e.message,
        "reserved identifier \"_sl_foo\": names starting with \"_sl_\" are reserved by function-starlark"
    );
    let e = error("sl__assert = 1\n");
    assert_eq!((e.line, e.column), (1, 1));
    assert_eq!(error("x._sl_y\n").column, 3);
}

#[test]
fn reserved_prefix_in_load_symbol_is_rejected() {
    let e = error("load(\"m.star\", \"_sl_x\")\n");
    assert_eq!((e.line, e.column), (1, 16));
}

#[test]
fn reserved_prefix_inside_strings_is_allowed() {
    let source = "x = '_sl_foo'\n";
    assert_eq!(rewrite(source), source);
}

#[test]
fn unreserve_maps_renamed_assert_back() {
    assert_eq!(unreserve("sl__assert"), "assert");
    assert_eq!(unreserve("assert"), "assert");
    assert_eq!(unreserve("other"), "other");
}

// --- pop ---------------------------------------------------------------

#[test]
fn pop_calls_become_calls_of_the_go_pop() {
    let p = rewrite_with_map("x.pop(-1)\ny = s.pop( - 1 ) + 1\n");
    assert_eq!(p.text, "_sl_pop(x, -1)\ny = _sl_pop(s,  - 1 ) + 1\n");
}

#[test]
fn a_pop_receiver_is_the_whole_postfix_chain() {
    let cases = [
        ("x.pop()\n", "_sl_pop(x)\n"),
        ("a.b[0].pop(n)\n", "_sl_pop(a.b[0], n)\n"),
        ("f(1)[k].pop()\n", "_sl_pop(f(1)[k])\n"),
        ("[1, 2].pop(0)\n", "_sl_pop([1, 2], 0)\n"),
        ("y = -x.pop()\n", "y = -_sl_pop(x)\n"),
        ("return (a + b).pop()\n", "return _sl_pop((a + b))\n"),
        (
            "v = d[\"k\"].pop(\"a\", None)\n",
            "v = _sl_pop(d[\"k\"], \"a\", None)\n",
        ),
        ("a.pop().pop()\n", "_sl_pop(_sl_pop(a))\n"),
        ("f(x.pop(), y.pop(1))\n", "f(_sl_pop(x), _sl_pop(y, 1))\n"),
        ("z = not l.pop()\n", "z = not _sl_pop(l)\n"),
    ];
    for (source, expected) in cases {
        assert_eq!(rewrite(source), expected, "{source}");
    }
}

#[test]
fn the_other_go_methods_are_rewritten_as_pop_is() {
    let cases = [
        ("s.union(a, b)\n", "_sl_union(s, a, b)\n"),
        (
            "t.strip().split(\",\")\n",
            "_sl_split(_sl_strip(t), \",\")\n",
        ),
        ("n = len(x.elem_ords())\n", "n = len(_sl_elem_ords(x))\n"),
        ("d.update(a = 1)\n", "_sl_update(d, a = 1)\n"),
    ];
    for (source, expected) in cases {
        assert_eq!(rewrite(source), expected, "{source}");
    }
    // Methods outside the list, and names that only start like one, stay.
    let source = "x.upper()\ny.splitlines()\nz = w.updated(1)\n";
    assert_eq!(rewrite(source), source);
}

#[test]
fn what_is_not_a_pop_call_is_untouched() {
    let source = "pop(-1)\nm = x.pop\ns = \"x.pop(-1)\"  # y.pop(1)\nx.popitem()\n";
    assert_eq!(rewrite(source), source);
}

#[test]
fn pop_positions_map_back_to_the_source() {
    let p = rewrite_with_map("y = s.pop(n)\n");
    assert_eq!(p.text, "y = _sl_pop(s, n)\n");
    // `s` and `n` keep their columns in the user's source.
    assert_eq!(p.map.original(0, 12), (0, 4));
    assert_eq!(p.map.original(0, 15), (0, 10));
}

#[test]
fn pop_inside_a_while_condition_is_rewritten() {
    let source = "while s.pop(-1):\n    pass\n";
    let expected =
        "for _sl_w0 in range(0x7fffffff):\n    if not (_sl_pop(s, -1)): break\n    pass\n";
    assert_eq!(rewrite(source), expected);
}

// --- augmented assignment -----------------------------------------------

#[test]
fn redirected_augmented_assignments_to_a_name_become_plain_assignments() {
    assert_eq!(
        rewrite("s %= (1, 2)\nx <<= n + 1\nl *= 3\n"),
        "s = s % ((1, 2))\nx = x << (n + 1)\nl = l * (3)\n"
    );
}

#[test]
fn augmented_assignment_columns_map_back_to_the_original() {
    let p = rewrite_with_map("  x %= y  # note\n");
    assert_eq!(p.text, "  x = x % (y)  # note\n");
    assert_eq!(p.map.original(0, 2), (0, 2));
    // The synthetic `= x % (` stands for the operator.
    assert_eq!(p.map.original(0, 4), (0, 4));
    assert_eq!(p.map.original(0, 8), (0, 4));
    assert_eq!(p.map.original(0, 11), (0, 7));
    // `)` stands for the end of the expression; the comment is original.
    assert_eq!(p.map.original(0, 12), (0, 7));
    assert_eq!(p.map.original(0, 13), (0, 8));
    assert_eq!(p.map.original(0, 15), (0, 10));
}

#[test]
fn augmented_assignment_after_a_colon_or_semicolon_and_over_lines() {
    assert_eq!(
        rewrite("if c: x %= 2\na = 1; b *= [\n    1,\n]\n"),
        "if c: x = x % (2)\na = 1; b = b * ([\n    1,\n])\n"
    );
    assert_eq!(
        rewrite("while c: x <<= 1\n"),
        "for _sl_w0 in range(0x7fffffff):\n    if not (c): break\n    x = x << (1)\n"
    );
}

#[test]
fn other_augmented_assignments_and_targets_are_untouched() {
    let source = "x += [1]\nx -= 1\nx[0] %= 2\nx.y *= 2\nx[0] //= 2\nf(a *= 2)\nx % = 1\n";
    assert_eq!(rewrite(source), source);
}

#[test]
fn augmented_division_and_shifts_are_rewritten() {
    assert_eq!(
        rewrite("x /= 2\nx //= 2\nx >>= 1\n"),
        "x = x / (2)\nx = x // (2)\nx = x >> (1)\n"
    );
}

#[test]
fn augmented_assignment_keeps_the_other_rewrites() {
    assert_eq!(
        rewrite("assert %= l.pop(-1)\n"),
        "sl__assert = sl__assert % (_sl_pop(l, -1))\n"
    );
    assert_eq!(error("_sl_x %= 1\n").column, 1);
}

// --- line map -----------------------------------------------------------

#[test]
fn line_after_an_inserted_guard_maps_to_the_original_line() {
    let source = "x = 1\nwhile x:\n    y = 2\nz = 3\n";
    let p = rewrite_with_map(source);
    assert_eq!(
        p.text,
        "x = 1\nfor _sl_w0 in range(0x7fffffff):\n    if not (x): break\n    y = 2\nz = 3\n"
    );
    assert_eq!(p.map.original(0, 2), (0, 2));
    assert_eq!(p.map.original(1, 0), (1, 0));
    assert_eq!(p.map.original(1, 31), (1, 7));
    assert_eq!(p.map.original(2, 0), (1, 0));
    assert_eq!(p.map.original(2, 12), (1, 6));
    assert_eq!(p.map.original(3, 8), (2, 8));
    assert_eq!(p.map.original(4, 4), (3, 4));
    assert_eq!(p.map.original(5, 0), (4, 0));
    assert_eq!(p.map.original(9, 3), (8, 3));
}

#[test]
fn columns_past_the_end_of_an_unchanged_line_still_map_exactly() {
    let p = rewrite_with_map("assert = 1\nfoo(\n");
    assert_eq!(p.map.original(1, 4), (1, 4));
    assert_eq!(p.map.original(0, 20), (0, 16));
}

// --- lexing -------------------------------------------------------------

#[test]
fn raw_and_bytes_strings_are_lexed_as_strings() {
    let source = "a = r\"while\\\" assert\"\nb = b'assert'\nc = rb\"x\" + Br'assert'\n";
    assert_eq!(rewrite(source), source);
}

#[test]
fn unterminated_string_is_reported_at_its_opening_quote() {
    let e = error("assert = 1\ny = 'abc\nz = 2\n");
    assert_eq!(
        e,
        PrepassError {
            line: 2,
            column: 5,
            message: "unterminated string literal".into()
        }
    );
    let e = error("assert = 1\ny = \"abc\\\"");
    assert_eq!((e.line, e.column), (2, 5));
}

#[test]
fn unterminated_triple_quoted_string_is_reported_at_its_opening_quote() {
    let e = error("assert = '''abc\n\ndef");
    assert_eq!((e.line, e.column), (1, 10));
    assert_eq!(e.message, "unterminated triple-quoted string literal");
}

#[test]
fn error_display_is_line_colon_column_message() {
    let e = PrepassError {
        line: 3,
        column: 7,
        message: "boom".into(),
    };
    assert_eq!(e.to_string(), "3:7: boom");
}

#[test]
fn unicode_text_uses_character_columns() {
    let p = rewrite_with_map("s = \"é\"; assert = 1\n");
    assert_eq!(p.text, "s = \"é\"; sl__assert = 1\n");
    assert_eq!(p.map.original(0, 13), (0, 9));
    assert_eq!(p.map.original(0, 21), (0, 17));
}

#[test]
fn nesting_as_deep_as_go_sources_have_passes() {
    let brackets = format!("x = {}{}\n", "[".repeat(5000), "]".repeat(5000));
    assert!(prepass(&brackets).is_ok());
    let dicts = format!("x = {}1{}\n", "{\"a\": ".repeat(5000), "}".repeat(5000));
    assert!(prepass(&dicts).is_ok());
    // Long flat literals and many statements do not add up.
    let flat = format!("x = [{}]\n", "1 + 1, ".repeat(50_000));
    assert!(prepass(&flat).is_ok());
    let lines = "x = 1 + 2 + 3\n".repeat(10_000);
    assert!(prepass(&lines).is_ok());
}

#[test]
fn deeper_nesting_fails_at_the_line_it_passes_the_limit() {
    let brackets = format!("x = 1\ny = {}{}\n", "(".repeat(20_000), ")".repeat(20_000));
    let e = prepass(&brackets).unwrap_err();
    assert_eq!(e.line, 2, "{e:?}");
    assert!(e.message.contains("nests more than 10000 levels"), "{e:?}");
    let chain = format!("x = 1{}\n", " + 1".repeat(1_000_000));
    assert!(
        prepass(&chain)
            .unwrap_err()
            .message
            .contains("nests more than")
    );
    let calls = format!("x = f{}\n", "()".repeat(20_000));
    assert!(prepass(&calls).is_err());
    let lambdas = format!("f = {}1\n", "lambda: ".repeat(20_000));
    assert!(prepass(&lambdas).is_err());
    let attributes = format!("x = a{}\n", ".b".repeat(20_000));
    assert!(prepass(&attributes).is_err());
}

#[test]
fn load_targets_are_read_from_tokens() {
    let source = "load(\"a.star\", \"x\")\nload('b.star', y = 'z'); load(r\"c.star\", \"w\")\nx = 1\n  load(\"indented.star\")\ns = \"load('no.star')\"\n# load(\"comment.star\")\n";
    assert_eq!(load_targets(source), vec!["a.star", "b.star", "c.star"]);
    assert!(load_targets("x = (").is_empty());
    let deep = format!(
        "load(\"m.star\", \"f\")\nx = {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert_eq!(load_targets(&deep), vec!["m.star"]);
}

// --- tuple subscripts ------------------------------------------------------

#[test]
fn a_bare_tuple_subscript_gets_its_parentheses() {
    let cases = [
        ("x[1, 2] = 3\n", "x[(1, 2)] = 3\n"),
        ("y = d[a, b][0]\n", "y = d[(a, b)][0]\n"),
        ("y = d[1,]\n", "y = d[(1,)]\n"),
        ("y = f(x)[g(1, 2), 3]\n", "y = f(x)[(g(1, 2), 3)]\n"),
    ];
    for (source, expected) in cases {
        assert_eq!(rewrite(source), expected, "{source}");
    }
    // List literals, comprehensions and single subscripts are left alone.
    let source = "l = [1, 2]\nfor i in [1, 2]:\n    x[i] = [i, i]\ny = x[f(1, 2)]\nz = x[1:2]\n";
    assert_eq!(rewrite(source), source);
    // A list target starting a line is not a subscript of the line before;
    // inside brackets a line break does not end the operand.
    let source = "out = []\n[a, b,] = [1, 2]\n[c, d] = 3, 4\n";
    assert_eq!(rewrite(source), source);
    assert_eq!(rewrite("y = (x\n[1, 2])\n"), "y = (x\n[(1, 2)])\n");
}

/// Found by the syntax fuzz target: the empty last line after a `while`
/// without a body mapped to its own number, one past the source's end.
#[test]
fn the_end_after_a_bodiless_while_maps_to_the_sources_last_line() {
    let source = "n = 0\nwhile n < 2:\n";
    let pre = rewrite_with_map(source);
    let last = pre.text.split('\n').count() - 1;
    assert_eq!(pre.map.original(last, 0), (2, 0));
    // Without a final newline, the end is on the `while` line itself.
    let pre = rewrite_with_map("n = 0\nwhile n < 2:");
    let last = pre.text.split('\n').count() - 1;
    assert_eq!(pre.map.original(last, 0), (1, 0));
}
