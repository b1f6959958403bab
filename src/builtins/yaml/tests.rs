//! The yaml module's tests.

use proptest::prelude::*;
use serde_json::json;
use starlark::environment::Module;

use super::decode::yaml_to_json;
use super::encode::{emit_yaml, encode_yaml, json_text_len};
use super::node::natural_less;
use crate::builtins::json::decode_value;
use crate::testing::{Tree, assert_error, assert_eval, eval, eval_text, literal, run};

/// What `yaml.decode` reads `s` as, as JSON text, with no deadline.
fn to_json(s: &str) -> Result<String, String> {
    yaml_to_json(s, None)
}

/// `yaml.encode(lit)`.
#[track_caller]
fn enc(lit: &str) -> String {
    eval_text(&format!("yaml.encode({lit})"))
}

/// `json.encode(yaml.decode(src))`, the decoded value as JSON text.
#[track_caller]
fn dec(src: &str) -> String {
    eval_text(&format!("json.encode(yaml.decode({}))", literal(src)))
}

#[test]
fn yaml_is_a_go_style_module() {
    assert_eval("type(yaml)", json!("module"));
    assert_eval("str(yaml)", json!("<module \"yaml\">"));
    assert_eval("dir(yaml)", json!(["decode", "decode_stream", "encode"]));
}

#[test]
fn encode_writes_the_documented_examples() {
    assert_eq!(enc("None"), "null");
    assert_eq!(enc("42"), "42");
    assert_eq!(enc("3.14"), "3.14");
    assert_eq!(enc("True"), "true");
    assert_eq!(enc("{}"), "{}");
    assert_eq!(enc("[]"), "[]");
    assert_eq!(enc("[1, 2]"), "- 1\n- 2");
    assert_eq!(
        enc(r#"{"kind": "Secret", "apiVersion": "v1", "data": {"k": "v"}}"#),
        "apiVersion: v1\ndata:\n  k: v\nkind: Secret"
    );
}

#[test]
fn encode_writes_block_style_with_unindented_sequences_under_keys() {
    assert_eq!(
        enc(r#"{"a": [1, 2], "b": [{"x": 1, "y": 2}, {"z": [3]}], "c": [[1, 2], []], "d": {}}"#),
        "a:\n- 1\n- 2\nb:\n- x: 1\n  \"y\": 2\n- z:\n  - 3\nc:\n- - 1\n  - 2\n- []\nd: {}"
    );
    assert_eq!(
        enc(r#"[[1, [2, 3]], {"a": {"b": 1}}, [], {}]"#),
        "- - 1\n  - - 2\n    - 3\n- a:\n    b: 1\n- []\n- {}"
    );
    assert_eq!(enc(r#"[{"a": [{"b": []}]}]"#), "- a:\n  - b: []");
    assert_eq!(enc(r#"(1, "a")"#), "- 1\n- a");
}

#[test]
fn encode_quotes_strings_that_would_read_back_as_something_else() {
    for (s, want) in [
        ("", r#""""#),
        ("true", r#""true""#),
        ("yes", r#""yes""#),
        ("on", r#""on""#),
        ("y", r#""y""#),
        ("Off", r#""Off""#),
        ("null", r#""null""#),
        ("~", r#""~""#),
        ("123", r#""123""#),
        ("1.5", r#""1.5""#),
        ("0x1F", r#""0x1F""#),
        ("017", r#""017""#),
        ("08", r#""08""#),
        ("1e3", r#""1e3""#),
        (".5", r#"".5""#),
        ("1_000", r#""1_000""#),
        ("1:20", r#""1:20""#),
        ("2001-12-14", r#""2001-12-14""#),
        ("2001-12-14T21:59:43.10Z", r#""2001-12-14T21:59:43.10Z""#),
        ("2001-12-14 21:59:43.10", r#""2001-12-14 21:59:43.10""#),
        (".nan", r#"".nan""#),
        // Plain, as they read back as strings.
        ("hello", "hello"),
        ("2001-02-30", "2001-02-30"),
        ("2001-13-01", "2001-13-01"),
        ("1e400", "1e400"),
        ("1.2.3", "1.2.3"),
        ("1:60", "1:60"),
        ("<<", "<<"),
        ("a:b", "a:b"),
        ("a#b", "a#b"),
        ("-foo", "-foo"),
        ("?x", "?x"),
        ("it's", "it's"),
        ("é ü 日本語", "é ü 日本語"),
        (":foo", ":foo"),
    ] {
        assert_eq!(enc(&literal(s)), want, "{s:?}");
    }
}

#[test]
fn encode_single_quotes_strings_plain_style_cannot_hold() {
    for (s, want) in [
        ("- foo", "'- foo'"),
        ("? x", "'? x'"),
        ("[a]", "'[a]'"),
        ("{a}", "'{a}'"),
        ("#x", "'#x'"),
        ("&a", "'&a'"),
        ("*a", "'*a'"),
        ("!a", "'!a'"),
        ("|a", "'|a'"),
        (">a", "'>a'"),
        ("'a", "'''a'"),
        ("\"a", "'\"a'"),
        ("%a", "'%a'"),
        ("@a", "'@a'"),
        ("`a", "'`a'"),
        ("a: b", "'a: b'"),
        ("a #b", "'a #b'"),
        (" a", "' a'"),
        ("a ", "'a '"),
        ("---", "'---'"),
        ("'it's'", "'''it''s'''"),
    ] {
        assert_eq!(enc(&literal(s)), want, "{s:?}");
    }
}

#[test]
fn encode_double_quotes_strings_with_control_characters() {
    assert_eq!(enc(r#""a\tb""#), r#""a\tb""#);
    assert_eq!(enc(r#""a\x01b""#), r#""a\x01b""#);
    assert_eq!(enc(r#""a\r\nb""#), r#""a\r\nb""#);
    assert_eq!(enc(r#""\u00a0x""#), "\u{a0}x");
    // libyaml counts four-byte characters as unprintable.
    assert_eq!(enc(r#""é ü 日本語 😀""#), r#""é ü 日本語 \U0001F600""#);
    // libyaml's BOM test looks at the start of the value: all of a
    // value that starts with one is escaped.
    assert_eq!(enc(r#""\ufeffx""#), r#""\uFEFF\x78""#);
    // LS is printable to libyaml, and a line break.
    assert_eq!(enc(r#""x\u2028y""#), "'x\u{2028}  y'");
    assert_eq!(enc(r#""a\\b""#), r"a\b");
}

#[test]
fn encode_writes_multi_line_strings_as_literal_blocks() {
    assert_eq!(enc(r#""a\nb""#), "|-\n  a\n  b");
    assert_eq!(enc(r#"{"k": "a\nb\n"}"#), "k: |\n  a\n  b");
    assert_eq!(enc(r#"{"k": "a\nb\n\n"}"#), "k: |+\n  a\n  b");
    assert_eq!(enc(r#"{"k": ["a\nb", "c"]}"#), "k:\n- |-\n  a\n  b\n- c");
    assert_eq!(enc(r#"{"k": "  leading\nx"}"#), "k: |2-\n    leading\n  x");
    assert_eq!(enc(r#"{"k": "a\n\nb"}"#), "k: |-\n  a\n\n  b");
    // Blocks cannot hold these; double quotes can.
    assert_eq!(enc(r#""a \nb""#), r#""a \nb""#);
    assert_eq!(enc(r#"{"k": "a  \nb"}"#), r#"k: "a  \nb""#);
    assert_eq!(enc(r#"{"a\nb": 1}"#), "? |-\n  a\n  b\n: 1");
}

#[test]
fn encode_wraps_long_strings_near_eighty_columns() {
    let words = r#"" ".join(["lorem ipsum dolor"] * 10)"#;
    assert_eq!(
        enc(&format!(r#"{{"description": {words}}}"#)),
        "description: lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor\n  lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum\n  dolor lorem ipsum dolor"
    );
    assert_eq!(
        enc(&format!(r#"{{"a": {{"b": {{"c": {words}}}}}}}"#)),
        "a:\n  b:\n    c: lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem\n      ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum\n      dolor lorem ipsum dolor"
    );
    assert_eq!(
        enc(&format!(r#"{{"k": "'" + {words}}}"#)),
        "k: '''lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem\n  ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor\n  lorem ipsum dolor'"
    );
    assert_eq!(
        enc(r#"{"k": "\t" + "  ".join(["lorem ipsum dolor"] * 10)}"#),
        "k: \"\\tlorem ipsum dolor  lorem ipsum dolor  lorem ipsum dolor  lorem ipsum dolor  lorem\n  ipsum dolor  lorem ipsum dolor  lorem ipsum dolor  lorem ipsum dolor  lorem ipsum\n  dolor  lorem ipsum dolor\""
    );
    // No space, no wrap.
    assert_eq!(enc(r#""a" * 100"#), "a".repeat(100));
}

#[test]
fn encode_orders_keys_naturally_and_limits_simple_keys() {
    assert_eq!(
        enc(
            r#"{"a10": 1, "a2": 2, "a1": 3, "B": 4, "b": 5, "_x": 6, "1": 7, "10": 8, "9": 9, "a01": 10, "a0": 12, "-": 13, "Z": 14}"#
        ),
        "'-': 13\n_x: 6\n\"1\": 7\n\"9\": 9\n\"10\": 8\nB: 4\nZ: 14\na0: 12\na1: 3\na01: 10\na2: 2\na10: 1\nb: 5"
    );
    assert_eq!(enc(r#"{"x" * 128: 1}"#), format!("{}: 1", "x".repeat(128)));
    assert_eq!(
        enc(r#"{"x" * 129: {"y": 1}}"#),
        format!("? {}\n: \"y\": 1", "x".repeat(129))
    );
    assert!(natural_less("a2", "a10"));
    assert!(!natural_less("a10", "a2"));
    assert!(natural_less("a", "ab"));
}

#[test]
fn encode_writes_numbers_as_they_come_back_from_json() {
    for (lit, want) in [
        ("2.0", "2"),
        ("0.0", "0"),
        ("-0.0", "0"),
        ("1e-06", "1e-06"),
        ("1e-7", "1e-07"),
        ("1234567.5", "1.2345675e+06"),
        ("123456789.0", "123456789"),
        ("0.1", "0.1"),
        ("1e19", "10000000000000000000"),
        // Go's JSON writes the shortest digits, padded with zeros.
        ("float(1 << 63)", "9223372036854776000"),
        ("-float(1 << 63)", "-9.223372036854776e+18"),
        ("float(1 << 64)", "1.8446744073709552e+19"),
        ("1e20", "1e+20"),
        ("1e21", "1e+21"),
        ("(1 << 63) - 1", "9223372036854775807"),
        ("-(1 << 63)", "-9223372036854775808"),
    ] {
        assert_eq!(enc(lit), want, "{lit}");
    }
}

#[test]
fn encode_reports_unsupported_values() {
    assert_error(
        r#"yaml.encode(float("nan"))"#,
        "yaml.encode: error marshaling into JSON: json: unsupported value: NaN",
    );
    assert_error(
        r#"yaml.encode({"b": float("-inf"), "a": [float("inf")]})"#,
        "yaml.encode: error marshaling into JSON: json: unsupported value: +Inf",
    );
    assert_error(
        "yaml.encode(1 << 63)",
        "yaml.encode: integer overflow: 9223372036854775808",
    );
    assert_error("yaml.encode(set([1]))", "yaml.encode: unsupported type set");
    assert_error(
        "yaml.encode(struct(a = 1))",
        "yaml.encode: unsupported type struct",
    );
    assert_error(
        "yaml.encode(len)",
        "yaml.encode: unsupported type builtin_function_or_method",
    );
    assert_error(
        "yaml.encode({1: 2})",
        "yaml.encode: dict key is int, want string",
    );
    assert_error(
        r#"yaml.encode([{"a": set()}])"#,
        "yaml.encode: unsupported type set",
    );
    assert_error(
        r#"yaml.encode("a\x7fb")"#,
        "yaml.encode: yaml: control characters are not allowed",
    );
}

#[test]
fn encode_binds_one_parameter_named_value() {
    assert_eq!(eval_text("yaml.encode(value = 5)"), "5");
    assert_error("yaml.encode()", "yaml.encode: missing argument for value");
    assert_error(
        "yaml.encode(1, 2)",
        "yaml.encode: got 2 arguments, want at most 1",
    );
    assert_error(
        "yaml.encode(valu = 5)",
        r#"yaml.encode: unexpected keyword argument "valu" (did you mean value?)"#,
    );
}

#[test]
fn encode_writes_resource_dicts_like_plain_dicts() {
    let dxr = run(
        "dxr[\"spec\"] = {\"b\": 1, \"a\": [\"x\"]}\ndxr[\"kind\"] = \"X\"\ns = yaml.encode(dxr)\ndxr.clear()\ndxr[\"out\"] = s\n",
    )
    .unwrap();
    let out = function_sdk_rust::resource::struct_to_json(&dxr)["out"].clone();
    assert_eq!(out, json!("kind: X\nspec:\n  a:\n  - x\n  b: 1"));
    assert_eq!(enc("oxr"), "{}");
}

#[test]
fn encode_reproduces_what_reading_its_json_back_does_to_nel() {
    // The reference's JSON step leaves U+0085 raw, and YAML reads it as
    // a line break inside the quoted string.
    assert_eq!(enc(r#""x\u0085y""#), "x y");
    assert_eq!(enc(r#""x \u0085  y""#), "x y");
    assert_eq!(enc(r#""x\u0085\u0085y""#), "|-\n  x\n  y");
    assert_eq!(enc(r#""\u0085x""#), "' x'");
    assert_error(
        r#"yaml.encode("x\u0085--- y")"#,
        "yaml.encode: yaml: line 2: found unexpected document indicator",
    );
    assert_error(
        r#"yaml.encode({"a\u0085b": 1})"#,
        "yaml.encode: yaml: line 1: did not find expected ',' or '}'",
    );
    // Keys whose JSON text is longer than 1024 characters are not simple
    // keys to the YAML reader either.
    assert_eq!(
        enc(r#"{"x" * 1022: 1}"#),
        format!("? {}\n: 1", "x".repeat(1022))
    );
    assert_error(
        r#"yaml.encode({"a": {"x" * 1023: 1}})"#,
        "yaml.encode: yaml: did not find expected ',' or '}'",
    );
}

#[test]
fn decode_reads_yaml_1_1_scalars() {
    assert_eq!(dec("b: 1\na: yes\nc: 1.0"), r#"{"a":true,"b":1,"c":1}"#);
    assert_eq!(
        dec(
            "[y, Y, yes, Yes, YES, n, N, no, No, NO, true, True, TRUE, false, False, FALSE, on, On, ON, off, Off, OFF, yEs]"
        ),
        "[true,true,true,true,true,false,false,false,false,false,true,true,true,false,false,false,true,true,true,false,false,false,\"yEs\"]"
    );
    assert_eq!(
        dec("[~, null, Null, NULL, nULL, '', \"\", '~']"),
        r#"[null,null,null,null,"nULL","","","~"]"#
    );
    assert_eq!(
        dec(
            "[1, -1, +1, 1_000, 0x1F, 0o17, 017, 0b101, -0b101, 08, 09.5, 1.0, 2e3, 1e21, 1e20, 1.5, -0.0, .5, -.5, +.5, 1e400, 12345678901234567890, 123456789012345678901234]"
        ),
        "[1,-1,1,1000,31,15,15,5,-5,8,9.5,1,2000,1e+21,100000000000000000000,1.5,0,0.5,-0.5,0.5,\"1e400\",12345678901234567890,1.2345678901234569e+23]"
    );
    assert_eq!(
        dec("[2001-12-14, 2001-12-14T21:59:43.10Z, 1:20, 190:20:30, '123', \"true\"]"),
        r#"["2001-12-14","2001-12-14T21:59:43.10Z","1:20","190:20:30","123","true"]"#
    );
    assert_eq!(eval_text(r#"type(yaml.decode("a: 1.5")["a"])"#), "float");
    assert_eq!(eval_text(r#"type(yaml.decode("a: 1.0")["a"])"#), "int");
}

#[test]
fn decode_sorts_keys_and_stringifies_non_string_ones() {
    assert_eq!(
        eval_text(r#"str(yaml.decode("b: 1\na: 2\nB: 3\n_: 4\n"))"#),
        r#"{"B": 3, "_": 4, "a": 2, "b": 1}"#
    );
    assert_eq!(
        dec("{1: a, 2.5: b, true: c, 0.1: d, 3.14159265358979: e, 1e30: f}"),
        r#"{"0.1":"d","1":"a","1e+30":"f","2.5":"b","3.1415927":"e","true":"c"}"#
    );
    assert_eq!(dec("a: 1\na: 2\n"), r#"{"a":2}"#);
}

#[test]
fn decode_reads_only_the_first_document_and_empty_input_as_none() {
    assert_eq!(dec(""), "null");
    assert_eq!(dec("   \n  "), "null");
    assert_eq!(dec("# just a comment\n"), "null");
    assert_eq!(dec("---\n"), "null");
    assert_eq!(dec("a: 1\n---\nb: 2\n"), r#"{"a":1}"#);
    assert_eq!(dec("a: 1\n---\nb: [\n"), r#"{"a":1}"#);
    assert_eq!(dec("42"), "42");
}

#[test]
fn decode_resolves_anchors_aliases_and_merge_keys() {
    assert_eq!(
        dec("a: &x {b: 1, c: 2}\nd: *x\ne:\n  <<: *x\n  c: 3\n"),
        r#"{"a":{"b":1,"c":2},"d":{"b":1,"c":2},"e":{"b":1,"c":3}}"#
    );
    assert_eq!(
        dec("base: &b {a: 1, b: 2}\nover: &o {b: 3, c: 4}\nm:\n  <<: [*b, *o]\n  d: 5\n"),
        r#"{"base":{"a":1,"b":2},"m":{"a":1,"b":2,"c":4,"d":5},"over":{"b":3,"c":4}}"#
    );
    // go-yaml v2 lets a later merge overwrite an earlier key.
    assert_eq!(dec("m:\n  a: 0\n  <<: {a: 1}\n"), r#"{"m":{"a":1}}"#);
    assert_eq!(dec("m:\n  <<: {a: 1}\n  a: 2\n"), r#"{"m":{"a":2}}"#);
}

#[test]
fn decode_reads_block_scalars_quoting_and_tags() {
    assert_eq!(
        dec("a: |\n  line1\n  line2\nb: >\n  folded\n  text\nc: |-\n  x\nd: |+\n  y\n\ne: x\n"),
        r#"{"a":"line1\nline2\n","b":"folded text\n","c":"x","d":"y\n\n","e":"x"}"#
    );
    assert_eq!(
        dec("a: 'it''s'\nb: \"\\u00e9\\t\"\nc: plain multi\n  line\n"),
        r#"{"a":"it's","b":"é\t","c":"plain multi line"}"#
    );
    assert_eq!(
        dec("a: !!int 12\nb: !!str 12\nc: !!float 1\nd: !foo bar\ne: ! 12\nf: !!bool yes"),
        r#"{"a":12,"b":"12","c":1,"d":"bar","e":"12","f":true}"#
    );
    assert_eq!(dec("a: !!binary aGVsbG8="), r#"{"a":"hello"}"#);
}

#[test]
fn decode_gives_block_scalars_at_the_end_of_input_no_extra_line_break() {
    for (src, want) in [
        ("a: |\n  x", r#"{"a":"x"}"#),
        ("a: |+\n  x", r#"{"a":"x"}"#),
        ("a: >\n  x\n  y", r#"{"a":"x y"}"#),
        ("a: |\n  x  ", r#"{"a":"x  "}"#),
        ("a: |\n  x\n  ", r#"{"a":"x\n"}"#),
        ("a: |+\n  x\n\n  ", r#"{"a":"x\n\n"}"#),
        ("- |+\n  two", r#"["two"]"#),
        ("a: |\n  x\n", r#"{"a":"x\n"}"#),
        ("a: |\n  x\n# c", r#"{"a":"x\n"}"#),
        ("a: |\n  x\nb: 1", r#"{"a":"x\n","b":1}"#),
    ] {
        assert_eq!(dec(src), want, "{src:?}");
    }
}

#[test]
fn decode_reports_errors_as_the_reference() {
    for (src, message) in [
        (
            "a: b: c",
            "yaml: mapping values are not allowed in this context",
        ),
        (
            "a: 1\nb: c: d\n",
            "yaml: line 2: mapping values are not allowed in this context",
        ),
        (
            "a: 'unterminated\n",
            "yaml: line 2: found unexpected end of stream",
        ),
        ("a: *x\n", "yaml: unknown anchor 'x' referenced"),
        ("a: &x [1, *x]\n", "yaml: anchor 'x' value contains itself"),
        (
            "m:\n  <<: 1\n",
            "yaml: map merge requires map or sequence of maps as the value",
        ),
        ("a: !!int foo", "yaml: cannot decode !!str `foo` as a !!int"),
        ("a: .nan", "json: unsupported value: NaN"),
        ("[.inf]", "json: unsupported value: +Inf"),
        (
            "{~: a}",
            "unsupported map key of type: %!s(<nil>), key: <nil>, value: \"a\"",
        ),
    ] {
        assert_error(
            &format!("yaml.decode({})", literal(src)),
            &format!("yaml.decode: {message}"),
        );
    }
    assert_error(
        "yaml.decode(42)",
        "yaml.decode: for parameter s: got int, want string",
    );
    assert_error("yaml.decode()", "yaml.decode: missing argument for s");
}

#[test]
fn decode_returns_new_mutable_values() {
    let dxr =
        run("d = yaml.decode(\"a: [1]\")\nd[\"a\"].append(2)\nd[\"b\"] = 3\ndxr[\"out\"] = d\n")
            .unwrap();
    let out = function_sdk_rust::resource::struct_to_json(&dxr)["out"].clone();
    assert_eq!(out, json!({"a": [1, 2], "b": 3}));
}

#[test]
fn decode_stream_splits_on_separator_lines() {
    assert_eq!(
        eval_text(r#"json.encode(yaml.decode_stream("a: 1\n---\nb: 2\n"))"#),
        r#"[{"a":1},{"b":2}]"#
    );
    assert_eq!(eval_text(r#"json.encode(yaml.decode_stream(""))"#), "[]");
    assert_eq!(
        eval_text(r#"json.encode(yaml.decode_stream("  \n "))"#),
        "[]"
    );
    assert_eq!(
        eval_text(r#"json.encode(yaml.decode_stream("---\na: 1\n---\n"))"#),
        r#"[{"a":1}]"#
    );
    assert_eq!(
        eval_text(
            r#"json.encode(yaml.decode_stream("a: 1\n--- \t\nb: 2\n---\n# only comment\n---\n   \n---\nc: 3"))"#
        ),
        r#"[{"a":1},{"b":2},null,{"c":3}]"#
    );
    // Not separators: trailing content, CRLF.
    assert_eq!(
        eval_text(r#"json.encode(yaml.decode_stream("a: 1\n--- # c\nb: 2\n"))"#),
        r#"[{"a":1}]"#
    );
    assert_eq!(
        eval_text(r#"json.encode(yaml.decode_stream("a: 1\r\n---\r\nb: 2\r\n"))"#),
        r#"[{"a":1}]"#
    );
}

#[test]
fn decode_stream_accepts_at_most_256_documents() {
    assert_eq!(
        eval(r#"len(yaml.decode_stream("---\na: 1\n" * 256))"#).unwrap(),
        json!(256)
    );
    assert_error(
        r#"yaml.decode_stream("---\na: 1\n" * 257)"#,
        "yaml.decode_stream: input contains 257 documents, maximum is 256",
    );
    assert_error(
        r#"yaml.decode_stream("a: 1\n---\nb: c: d\n")"#,
        "yaml.decode: yaml: mapping values are not allowed in this context",
    );
    assert_error(
        "yaml.decode_stream(1)",
        "yaml.decode_stream: for parameter s: got int, want string",
    );
}

/// Text without the characters only YAML 1.1 reads as line breaks (NEL,
/// LS, PS) and those its reader rejects: the round trip differs there by
/// design, in the reference too.
fn yaml_text() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        "[ -~\\t\\n]{0,40}",
        "[a-z :#'\"\\-?\\[\\]{}&*!|>%@`.,0-9]{0,30}",
        any::<String>(),
        Just("yes".to_owned()),
        Just("1.5".to_owned()),
        Just("2001-12-14".to_owned()),
    ]
    .prop_map(|s| {
        s.chars()
            .filter(|c| {
                !matches!(
                    u32::from(*c),
                    0x7f..=0x9f | 0x2028 | 0x2029 | 0xfffe | 0xffff | 0xfeff
                ) && (*c >= ' ' || matches!(*c, '\t' | '\n'))
            })
            .collect()
    })
}

fn long_key(t: &Tree) -> bool {
    match t {
        Tree::List(items) => items.iter().any(long_key),
        Tree::Dict(entries) => entries
            .iter()
            .any(|(k, v)| json_text_len(k) > 1024 || long_key(v)),
        _ => false,
    }
}

/// Whether `t` has a `<<` key: written plainly, it reads back as a merge
/// key, as it does in go-yaml (merging a mapping, failing on anything
/// else), so the value does not come back.
fn bad_merge_key(t: &Tree) -> bool {
    match t {
        Tree::List(items) => items.iter().any(bad_merge_key),
        Tree::Dict(entries) => entries.iter().any(|(k, v)| k == "<<" || bad_merge_key(v)),
        _ => false,
    }
}

/// Whether natural order is transitive on the keys of every mapping in
/// `t`, so that sorting them gives one order whatever order they come in.
fn keys_ordered(t: &Tree) -> bool {
    match t {
        Tree::List(items) => items.iter().all(keys_ordered),
        Tree::Dict(entries) => {
            let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
            let transitive = keys.iter().all(|a| {
                keys.iter().all(|b| {
                    keys.iter()
                        .all(|c| !(natural_less(a, b) && natural_less(b, c)) || natural_less(a, c))
                })
            });
            transitive && entries.iter().all(|(_, v)| keys_ordered(v))
        }
        _ => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn decoding_encoded_yaml_gives_the_value_back(t in Tree::strategy(yaml_text())) {
        prop_assume!(!long_key(&t) && !bad_merge_key(&t));
        Module::with_temp_heap(|module| {
            let heap = module.heap();
            let v = t.alloc(heap);
            let text = encode_yaml(v, heap).unwrap();
            prop_assert!(!text.ends_with('\n'));
            // What the emitter wrote (before `encode` strips the final
            // newlines) reads back as the same value; floats that are
            // whole numbers come back as equal ints.
            let full = emit_yaml(v, heap).unwrap();
            prop_assert_eq!(full.trim_end_matches('\n'), text.as_str());
            let json = to_json(&full).unwrap();
            let back = decode_value(&json, heap).unwrap();
            prop_assert!(back.equals(v).unwrap(), "{:?}\n{}\n{}", t, full, json);
            // Encoding is canonical: the decoded value encodes the same
            // (unless a huge whole float came back as an int that no
            // longer fits 64 bits, as in the reference). go-yaml's natural
            // key order is not transitive for some key sets ("1.5", "3",
            // "2001-12-14", "2a"): there the reference itself writes one of
            // several orders (three in 200 runs), so no text is canonical.
            if keys_ordered(&t)
                && let Ok(again) = encode_yaml(back, heap)
            {
                prop_assert_eq!(again, text.clone());
            }
            Ok(())
        })?;
    }

    #[test]
    fn decode_never_panics_on_arbitrary_text(s in any::<String>()) {
        let _ = to_json(&s);
    }

    /// Text glued from pieces of YAML syntax reaches far more of the
    /// scanner than arbitrary text; it must never panic either (the
    /// parser underneath does at some inputs that end without a line
    /// break, which `parse` steers around).
    #[test]
    fn decode_never_panics_on_yaml_like_text(
        pieces in proptest::collection::vec(proptest::sample::select(YAML_PIECES), 1..16)
    ) {
        let _ = to_json(&pieces.concat());
    }
}

/// Pieces of YAML syntax, for generated inputs.
pub(super) const YAML_PIECES: &[&str] = &[
    "a",
    "b: ",
    "- ",
    "-",
    ":",
    ": ",
    "? ",
    "?",
    ",",
    "[",
    "]",
    "{",
    "}",
    "\n",
    "\n",
    "\n  ",
    "\n    ",
    "  ",
    " ",
    "\t",
    "\r\n",
    "\r",
    "#c",
    " # n",
    "\"",
    "\"q\"",
    "\"a\nb\"",
    "\"\\",
    "'",
    "'s'",
    "'a\n\n b'",
    "|",
    "|-",
    "|+",
    ">",
    ">-",
    "|2",
    "|1-",
    ">+9",
    "&a ",
    "*a",
    "<<: ",
    "!!str ",
    "!!binary ",
    "!t ",
    "!",
    "!<x> ",
    "1",
    "0x1F",
    "1e3",
    ".inf",
    "yes",
    "~",
    "---",
    "...",
    "%YAML 1.1\n",
    "%TAG !e! t:\n",
    "\u{85}",
    "\u{2028}",
    "\u{2029}",
    "\u{feff}",
    "x:y",
    "é",
    "\u{e000}",
];

/// Every input in `tests/yaml/vectors.jsonl` decodes to the JSON text, or
/// fails with the message, that the reference's sigs.k8s.io/yaml gave
/// (recorded by `tools/goyaml`), but for the inputs listed in
/// `tests/yaml/departures.jsonl`, which must still differ.
#[test]
fn decode_matches_the_recorded_reference_results() {
    let read = |name: &str| {
        std::fs::read_to_string(format!("{}/tests/yaml/{name}", env!("CARGO_MANIFEST_DIR")))
            .unwrap()
    };
    let departures: std::collections::HashSet<String> = read("departures.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut departed = 0;
    crate::testing::check_json_lines("tests/yaml/vectors.jsonl", |v| {
        let input = v["yaml"].as_str().unwrap();
        let want = match (v["json"].as_str(), v["error"].as_str()) {
            (Some(json), _) => Ok(json.to_owned()),
            (None, Some(error)) => Err(error.to_owned()),
            _ => return Err("a vector without a result".to_owned()),
        };
        // Go's encoding/json escapes <, > and & and writes U+FFFD as an
        // escape; the decoded values are the same either way.
        let got = to_json(input).map(|json| {
            json.replace('<', "\\u003c")
                .replace('>', "\\u003e")
                .replace('&', "\\u0026")
                .replace('\u{fffd}', "\\ufffd")
        });
        let listed = departures.contains(input);
        departed += usize::from(listed);
        match (got == want, listed) {
            (false, false) => Err(format!("differs: got {got:?}")),
            (true, true) => Err("now matches: take it off departures.jsonl".to_owned()),
            _ => Ok(()),
        }
    });
    assert_eq!(
        departed,
        departures.len(),
        "a listed departure has no vector"
    );
}

/// The value of every vector in `tests/yaml/encode.jsonl`, given as the
/// JSON text Go writes for it, encodes to the YAML text (or fails with
/// the message) that the reference's sigs.k8s.io/yaml gave (recorded by
/// `tools/goyaml`).
#[test]
fn encode_matches_the_recorded_reference_results() {
    crate::testing::check_json_lines("tests/yaml/encode.jsonl", |v| {
        let json = v["json"].as_str().unwrap();
        let want = match (v["yaml"].as_str(), v["error"].as_str()) {
            (Some(yaml), _) => Ok(yaml.to_owned()),
            (None, Some(error)) => Err(error.to_owned()),
            _ => return Err("a vector without a result".to_owned()),
        };
        let got = Module::with_temp_heap(|module| {
            let heap = module.heap();
            encode_yaml(decode_value(json, heap).unwrap(), heap)
        });
        if got == want {
            Ok(())
        } else {
            Err(format!("got {got:?}"))
        }
    });
}

#[test]
fn decode_stops_reading_at_the_deadline() {
    // libyaml's scanner takes time with the square of the flow depth: this
    // would read for a minute.
    let deep = "[".repeat(200_000);
    let past = Some(std::time::Instant::now());
    let error = yaml_to_json(&deep, past).unwrap_err();
    assert!(error.contains("time limit ran out"), "{error}");
    // Before the deadline it reads on, and a shallow document is fine.
    let later = Some(std::time::Instant::now() + std::time::Duration::from_mins(1));
    assert_eq!(
        yaml_to_json("a: [1, {b: 2}]", later).unwrap(),
        r#"{"a":[1,{"b":2}]}"#
    );
}

#[test]
fn a_script_decoding_a_slow_document_stops_at_its_time_limit() {
    use crate::limits::Limits;
    use crate::runner::Runtime;

    let limits = Limits {
        timeout: std::time::Duration::from_millis(300),
        ..Limits::default()
    };
    let runtime = Runtime::new(limits, 4);
    let error = crate::testing::run_on(&runtime, "x = yaml.decode(\"[\" * 200000)\n")
        .expect_err("the run must fail");
    // The run reports its own timeout.
    assert!(error.contains("wall-clock limit"), "{error}");
}

#[test]
fn natural_key_order_is_not_transitive_for_every_key_set() {
    let dict =
        |keys: &[&str]| Tree::Dict(keys.iter().map(|k| ((*k).to_owned(), Tree::Null)).collect());
    assert!(!keys_ordered(&dict(&["1.5", "3", "2001-12-14", "2a"])));
    assert!(keys_ordered(&dict(&["a", "a2", "a10", "b"])));
}

#[test]
fn float_keys_past_f32s_range_are_infinities_as_in_go() {
    // sigs.k8s.io/yaml writes a float key in 32 bits: 1e302 is +Inf there.
    assert_eq!(
        to_json("{1e302: a, -1e39: b, 1e-50: c}").as_deref(),
        Ok(r#"{"-.inf":"b",".inf":"a","0":"c"}"#)
    );
}
