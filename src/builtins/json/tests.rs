//! The json module against go.starlark.net's answers.

use proptest::prelude::*;
use serde_json::json;
use starlark::environment::Module;

use super::{decode_value, encode_value, indent_json};
use crate::testing::{Tree, assert_error, assert_eval, assert_fails, eval_text, run};

/// Runs `script`, which leaves its result in `out`.
#[track_caller]
fn out(script: &str) -> serde_json::Value {
    let dxr = run(&format!("{script}\ndxr.clear()\ndxr[\"out\"] = out\n"))
        .unwrap_or_else(|e| panic!("{script}: {e}"));
    function_sdk_rust::resource::struct_to_json(&dxr)["out"].clone()
}

#[test]
fn json_is_a_go_style_module() {
    assert_eval("type(json)", json!("module"));
    assert_eval("str(json)", json!("<module \"json\">"));
    assert_eval(
        "dir(json)",
        json!(["decode", "encode", "encode_indent", "indent"]),
    );
    assert_fails("x = json.nope\n", "nope");
}

#[test]
fn encode_sorts_keys_and_writes_compact_text() {
    assert_eq!(
        eval_text(r#"json.encode({"b": [1, 2.5], "a": None})"#),
        r#"{"a":null,"b":[1,2.5]}"#
    );
    assert_eq!(
        eval_text(r#"json.encode({"b": 1, "a": 2})"#),
        r#"{"a":2,"b":1}"#
    );
    assert_eq!(
        eval_text(r#"json.encode({"b": 2, "a": {"z": 1, "y": 2}, "é": 3, "Z": 4, "": 5})"#),
        r#"{"":5,"Z":4,"a":{"y":2,"z":1},"b":2,"é":3}"#
    );
    assert_eq!(eval_text("json.encode({})"), "{}");
    assert_eq!(eval_text("json.encode([])"), "[]");
    assert_eq!(eval_text("json.encode(None)"), "null");
    assert_eq!(eval_text("json.encode(True)"), "true");
    assert_eq!(eval_text("json.encode(False)"), "false");
}

#[test]
fn encode_writes_floats_in_go_shortest_form_with_a_point() {
    for (expr, want) in [
        ("1.0", "1.0"),
        ("1.5", "1.5"),
        ("100.0", "100.0"),
        ("-0.0", "-0.0"),
        ("0.0001", "0.0001"),
        ("0.00001", "1e-05"),
        ("1e6", "1e+06"),
        ("123456789.0", "1.23456789e+08"),
        ("-1e-7", "-1e-07"),
        ("1e21", "1e+21"),
        ("1e100", "1e+100"),
    ] {
        assert_eq!(eval_text(&format!("json.encode({expr})")), want, "{expr}");
    }
}

#[test]
fn encode_rejects_non_finite_floats() {
    assert_error(
        r#"json.encode(float("nan"))"#,
        "json.encode: cannot encode non-finite float nan",
    );
    assert_error(
        r#"json.encode(float("inf"))"#,
        "json.encode: cannot encode non-finite float +inf",
    );
    assert_error(
        r#"json.encode(-float("inf"))"#,
        "json.encode: cannot encode non-finite float -inf",
    );
}

#[test]
fn encode_writes_ints_of_any_size() {
    assert_eq!(eval_text("json.encode(1 << 70)"), "1180591620717411303424");
    assert_eq!(
        eval_text("json.encode(-(1 << 70))"),
        "-1180591620717411303424"
    );
    assert_eq!(eval_text("json.encode([0, -1, 42])"), "[0,-1,42]");
}

#[test]
fn encode_escapes_strings_as_go_does() {
    // Printable ASCII: only `"` and `\` escaped, DEL as Go's `\x7f`.
    assert_eq!(eval_text(r#"json.encode("q\"b\\s")"#), r#""q\"b\\s""#);
    assert_eq!(eval_text(r#"json.encode("<>&")"#), r#""<>&""#);
    assert_eq!(eval_text(r#"json.encode("a\x7fb")"#), r#""a\x7fb""#);
    // Anything else: Go's JSON escaping, `<>&` included.
    assert_eq!(
        eval_text(r#"json.encode("é\u2028<>&\x01")"#),
        r#""é\u2028\u003c\u003e\u0026\u0001""#
    );
    assert_eq!(
        eval_text(r#"json.encode("\x08\x0c\x00\x1f\t\n\r")"#),
        r#""\b\f\u0000\u001f\t\n\r""#
    );
    assert_eq!(eval_text(r#"json.encode("a\x7fb\n")"#), "\"a\u{7f}b\\n\"");
    assert_eq!(
        eval_text(r#"json.encode("\U0001F600 日本")"#),
        "\"😀 日本\""
    );
}

#[test]
fn encode_turns_other_iterables_into_arrays() {
    assert_eq!(eval_text("json.encode((1, 2))"), "[1,2]");
    assert_eq!(eval_text("json.encode(set([1]))"), "[1]");
    assert_eq!(eval_text("json.encode(range(3))"), "[0,1,2]");
    assert_eq!(
        eval_text(r#"json.encode([1, [2, {"x": (3,)}]])"#),
        r#"[1,[2,{"x":[3]}]]"#
    );
}

#[test]
fn encode_writes_structs_as_objects_with_sorted_fields() {
    assert_eq!(
        eval_text("json.encode(struct(b = 1, a = 2))"),
        r#"{"a":2,"b":1}"#
    );
    assert_eq!(eval_text("json.encode(struct())"), "{}");
    assert_eq!(
        eval_text("json.encode([struct(a = None, n = struct(x = [1]))])"),
        r#"[{"a":null,"n":{"x":[1]}}]"#
    );
}

#[test]
fn encode_writes_resource_dicts_as_objects_not_key_arrays() {
    // The reference emits `["b","a"]` for its resource dicts; a script
    // means the object, so these encode as dicts do.
    assert_eq!(eval_text("json.encode(oxr)"), "{}");
    let v = out(
        "dxr[\"b\"] = 1\ndxr[\"a\"] = {\"y\": [True]}\ndxr.spec = {\"z\": 2.5}\nout = json.encode(dxr)",
    );
    assert_eq!(v, json!(r#"{"a":{"y":[true]},"b":1,"spec":{"z":2.5}}"#));
}

#[test]
fn encode_writes_resource_refs_as_objects() {
    let v = out(
        "r = Resource(\"db\", {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"})\n\
         s = Resource(\"gone\", {\"kind\": \"X\"}, when = False, skip_reason = \"off\", optional = True)\n\
         out = json.encode([r, s])",
    );
    assert_eq!(
        v,
        json!(r#"[{"name":"db"},{"name":"gone","optional":true}]"#)
    );
}

#[test]
fn encode_errors_name_the_path_to_the_bad_value() {
    assert_error(
        "json.encode({1: 2})",
        "json.encode: dict has int key, want string",
    );
    assert_error(
        r#"json.encode({"a": len})"#,
        r#"json.encode: in dict key "a": cannot encode builtin_function_or_method as JSON"#,
    );
    assert_error(
        r#"json.encode({"a": [1, 2, float("nan")]})"#,
        r#"json.encode: in dict key "a": at list index 2: cannot encode non-finite float nan"#,
    );
    assert_error(
        r#"json.encode({"é\n": len})"#,
        r#"json.encode: in dict key "é\n": cannot encode builtin_function_or_method as JSON"#,
    );
    assert_error(
        "json.encode(struct(x = struct(y = len)))",
        "json.encode: in field .x: in field .y: cannot encode builtin_function_or_method as JSON",
    );
    assert_error(
        "json.encode(json)",
        "json.encode: in field .decode: cannot encode builtin_function_or_method as JSON",
    );
    assert_error(
        "json.encode(lambda: 1)",
        "json.encode: cannot encode function as JSON",
    );
}

#[test]
fn encode_reports_cycles_and_accepts_shared_values() {
    assert_fails(
        "x = [1]\nx.append(x)\ny = json.encode(x)\n",
        "json.encode: at list index 1: cycle in JSON structure",
    );
    assert_fails(
        "x = {}\nx[\"a\"] = x\ny = json.encode(x)\n",
        r#"json.encode: in dict key "a": cycle in JSON structure"#,
    );
    assert_eq!(
        out("x = [1]\nout = json.encode([x, x])"),
        json!("[[1],[1]]")
    );
}

#[test]
fn encode_takes_exactly_one_positional_argument() {
    assert_error("json.encode()", "json.encode: got 0 arguments, want 1");
    assert_error("json.encode(1, 2)", "json.encode: got 2 arguments, want 1");
    assert_error(
        "json.encode(x = 1)",
        "json.encode: unexpected keyword arguments",
    );
}

#[test]
fn decode_returns_new_plain_values_in_document_order() {
    assert_eq!(
        eval_text(r#"json.encode(json.decode('{"a":1.0,"b":[1,2,null,true]}'))"#),
        r#"{"a":1.0,"b":[1,2,null,true]}"#
    );
    assert_eq!(
        eval_text(r#"str(json.decode('{"b":1,"a":2}'))"#),
        r#"{"b": 1, "a": 2}"#
    );
    assert_eq!(
        eval_text(r#"str(json.decode('{"a":1,"b":2,"a":3}'))"#),
        r#"{"a": 3, "b": 2}"#
    );
    assert_eq!(eval_text(r#"type(json.decode("{}"))"#), "dict");
    assert_eq!(eval_text(r#"type(json.decode("[]"))"#), "list");
    assert_eq!(
        out(
            "x = json.decode('[1]')\nx.append(2)\ny = json.decode('{}')\ny[\"k\"] = x\nout = json.encode(y)"
        ),
        json!(r#"{"k":[1,2]}"#)
    );
    assert_eq!(eval_text(r#"str(json.decode("null"))"#), "None");
    assert_eq!(
        eval_text(r#"str(json.decode(" \t\r\n[ true , false ] "))"#),
        "[True, False]"
    );
}

#[test]
fn decode_reads_ints_of_any_size_and_floats_by_their_spelling() {
    for (src, want, kind) in [
        ("42", "42", "int"),
        ("-7", "-7", "int"),
        ("-0", "0", "int"),
        ("12345678901234567890", "12345678901234567890", "int"),
        ("42.0", "42.0", "float"),
        ("1e2", "100.0", "float"),
        ("0.1", "0.1", "float"),
        ("1E+2", "100.0", "float"),
        ("-.5", "-0.5", "float"),
        ("1.", "1.0", "float"),
        ("1e-400", "0.0", "float"),
    ] {
        assert_eq!(
            eval_text(&format!("str(json.decode({src:?}))")),
            want,
            "{src}"
        );
        assert_eq!(
            eval_text(&format!("type(json.decode({src:?}))")),
            kind,
            "{src}"
        );
    }
}

#[test]
fn decode_reports_syntax_errors_with_their_offset() {
    for (src, message) in [
        ("1e400", "at offset 5, invalid number: 1e400"),
        ("01", "at offset 2, invalid number: 01"),
        ("-", "at offset 1, invalid number: -"),
        ("-01", "at offset 3, invalid number: -01"),
        ("1e", "at offset 2, invalid number: 1e"),
        ("1.5.5", "at offset 5, invalid number: 1.5.5"),
        ("[1,", "at offset 3, unexpected end of file"),
        ("", "at offset 0, unexpected end of file"),
        ("NaN", "at offset 0, unexpected character 'N'"),
        (".5", "at offset 0, unexpected character '.'"),
        ("nul", "at offset 0, unexpected character 'n'"),
        ("[1] x", "at offset 4, unexpected character 'x' after value"),
        ("{'a': 1}", r"at offset 1, unexpected character '\''"),
        ("[1 2]", "at offset 3, got '2', want ',' or ']'"),
        (
            r#"{"a" 1}"#,
            "at offset 5, after object key, got '1', want ':' ",
        ),
        (
            r#"{"a": 1 2}"#,
            "at offset 8, in object, got '2', want ',' or '}'",
        ),
        ("{1: 2}", "at offset 2, got int for object key, want string"),
        (
            "{null: 2}",
            "at offset 5, got NoneType for object key, want string",
        ),
        (r#""abc"#, "at offset 0, unclosed string literal"),
        (
            r#""a\qb""#,
            "at offset 6, invalid character 'q' in string escape code",
        ),
        (
            r#""a\u00zzb""#,
            r"at offset 10, invalid character 'z' in \u hexadecimal character escape",
        ),
    ] {
        assert_error(
            &format!("json.decode({src:?})"),
            &format!("json.decode: {message}"),
        );
    }
    assert_error(
        r#"json.decode("\"é\x01\"")"#,
        r"json.decode: at offset 5, invalid character '\x01' in string literal",
    );
}

#[test]
fn decode_unescapes_strings_as_go_does() {
    assert_eq!(eval_text(r#"json.decode('"\\ud83d\\ude00"')"#), "😀");
    assert_eq!(eval_text(r#"json.decode('"\\u00e9"')"#), "é");
    assert_eq!(eval_text(r#"json.decode('"\\ud83d"')"#), "\u{fffd}");
    assert_eq!(eval_text(r#"json.decode('"\\ud83d\\u0041"')"#), "\u{fffd}A");
    assert_eq!(
        eval_text(r#"json.decode('"\\/\\b\\f\\n\\r\\t\\"\\\\"')"#),
        "/\u{8}\u{c}\n\r\t\"\\"
    );
    // Strings of plain ASCII are taken verbatim, raw control
    // characters included, as the reference does.
    assert_eq!(eval_text(r#"json.decode('"a\x01"')"#), "a\u{1}");
}

#[test]
fn decode_default_replaces_only_syntax_failures() {
    assert_eq!(
        eval_text(r#"str(json.decode("[1]", default = None))"#),
        "[1]"
    );
    assert_eq!(eval_text(r#"str(json.decode("x", default = 7))"#), "7");
    assert_eq!(eval_text(r#"str(json.decode("x", None))"#), "None");
    assert_eq!(
        eval_text(r#"str(json.decode("1e400", default = "big"))"#),
        "big"
    );
    assert_error(
        "json.decode(None, default = 3)",
        "json.decode: for parameter x: got NoneType, want string",
    );
}

#[test]
fn decode_binds_its_arguments_as_go_does() {
    assert_error(
        "json.decode(1)",
        "json.decode: for parameter x: got int, want string",
    );
    assert_error(
        r#"json.decode(x = "1")"#,
        "json.decode: unexpected keyword argument x",
    );
    assert_error(
        r#"json.decode("1", x = "1")"#,
        r#"json.decode: got multiple values for keyword argument "x""#,
    );
    assert_error("json.decode()", "json.decode: missing argument for x");
    assert_error(
        r#"json.decode("1", 2, 3)"#,
        "json.decode: got 3 arguments, want at most 2",
    );
    assert_error(
        r#"json.decode("1", defualt = 3)"#,
        r#"json.decode: unexpected keyword argument "defualt""#,
    );
    assert_error(
        r#"json.decode("x", 2, default = 3)"#,
        r#"json.decode: got multiple values for keyword argument "default""#,
    );
}

#[test]
fn indent_lays_out_json_text_without_re_encoding_it() {
    assert_eq!(
        eval_text(r#"json.indent('{"b":1,"a":[]}', indent = "  ")"#),
        "{\n  \"b\": 1,\n  \"a\": []\n}"
    );
    assert_eq!(
        eval_text(r#"json.indent('{"a":1,"b":[1,2]}')"#),
        "{\n\t\"a\": 1,\n\t\"b\": [\n\t\t1,\n\t\t2\n\t]\n}"
    );
    assert_eq!(
        eval_text(r#"json.indent('{"a":1}', prefix = "> ", indent = "\t")"#),
        "{\n> \t\"a\": 1\n> }"
    );
    assert_eq!(
        eval_text(r#"json.indent('  [ 1 , { } , [ ] , {"a" : [ ]} ]  ')"#),
        "[\n\t1,\n\t{},\n\t[],\n\t{\n\t\t\"a\": []\n\t}\n]  "
    );
    assert_eq!(
        eval_text(r#"json.indent('{"a":"x,y:{z}[]","n":1e5,"m":-0.0}')"#),
        "{\n\t\"a\": \"x,y:{z}[]\",\n\t\"n\": 1e5,\n\t\"m\": -0.0\n}"
    );
    assert_eq!(eval_text(r#"json.indent("1")"#), "1");
}

#[test]
fn indent_reports_go_scanner_errors() {
    for (src, message) in [
        ("", "unexpected end of JSON input"),
        ("{", "unexpected end of JSON input"),
        ("x", "invalid character 'x' looking for beginning of value"),
        (r#"{"a" 1}"#, "invalid character '1' after object key"),
        (
            "[1,]",
            "invalid character ']' looking for beginning of value",
        ),
        ("[1 2]", "invalid character '2' after array element"),
        (
            r#"{"a":1,}"#,
            "invalid character '}' looking for beginning of object key string",
        ),
        (
            r#"{"a":1 "b"}"#,
            "invalid character '\"' after object key:value pair",
        ),
        (r#""a\x""#, "invalid character 'x' in string escape code"),
        (
            r#""\u12g4""#,
            r"invalid character 'g' in \u hexadecimal character escape",
        ),
        (
            "tx",
            "invalid character 'x' in literal true (expecting 'r')",
        ),
        (
            "fals",
            "invalid character ' ' in literal false (expecting 'e')",
        ),
        (
            "nulx",
            "invalid character 'x' in literal null (expecting 'l')",
        ),
        ("-a", "invalid character 'a' in numeric literal"),
        (
            "1.a",
            "invalid character 'a' after decimal point in numeric literal",
        ),
        (
            "1ea",
            "invalid character 'a' in exponent of numeric literal",
        ),
        ("1 2", "invalid character '2' after top-level value"),
        ("é", "invalid character 'Ã' looking for beginning of value"),
        (
            "'",
            r"invalid character '\'' looking for beginning of value",
        ),
    ] {
        assert_error(
            &format!("json.indent({src:?})"),
            &format!("json.indent: {message}"),
        );
    }
    assert_error(
        r#"json.indent("\"\x01\"")"#,
        r"json.indent: invalid character '\x01' in string literal",
    );
}

#[test]
fn indent_options_are_keyword_only_strings() {
    assert_error(
        r#"json.indent('[1]', "x")"#,
        "json.indent: got 2 arguments, want 1",
    );
    assert_error("json.indent()", "json.indent: got 0 arguments, want 1");
    assert_error(
        "json.indent(1)",
        "json.indent: for parameter 1: got int, want string",
    );
    assert_error(
        "json.indent('[1]', prefix = 1)",
        r#"json.indent: for parameter "prefix": got int, want string"#,
    );
    assert_error(
        "json.indent('[1]', indent = None)",
        r#"json.indent: for parameter "indent": got NoneType, want string"#,
    );
    assert_error(
        r#"json.indent('[1]', prefx = "")"#,
        r#"json.indent: unexpected keyword argument "prefx" (did you mean prefix?)"#,
    );
    assert_error(
        r#"json.indent('[1]', indnt = "")"#,
        r#"json.indent: unexpected keyword argument "indnt""#,
    );
}

#[test]
fn encode_indent_is_indent_of_encode() {
    assert_eq!(
        eval_text(r#"json.encode_indent({"a": [1]}, indent = "  ")"#),
        "{\n  \"a\": [\n    1\n  ]\n}"
    );
    assert_eq!(
        eval_text(r#"json.encode_indent({"a": [1]})"#),
        "{\n\t\"a\": [\n\t\t1\n\t]\n}"
    );
    assert_eq!(eval_text(r#"json.encode_indent([], prefix = ">")"#), "[]");
    assert_eq!(
        eval_text(
            r##"json.encode_indent({"b": {"c": [1, {"d": None}]}, "a": {}}, prefix = "#", indent = "..")"##
        ),
        "{\n#..\"a\": {},\n#..\"b\": {\n#....\"c\": [\n#......1,\n#......{\n#........\"d\": null\n#......}\n#....]\n#..}\n#}"
    );
    assert_error(
        "json.encode_indent(1, 2)",
        "json.encode_indent: got 2 arguments, want 1",
    );
    assert_error(
        "json.encode_indent(1, foo = 2)",
        r#"json.encode_indent: unexpected keyword argument "foo""#,
    );
    assert_error(
        r#"json.encode_indent({"a": float("nan")})"#,
        r#"json.encode_indent: in dict key "a": cannot encode non-finite float nan"#,
    );
    // The DEL quirk of `encode` makes text `indent` rejects.
    assert_error(
        r#"json.encode_indent("\x7f")"#,
        "json.encode_indent: invalid character 'x' in string escape code",
    );
}

#[test]
fn deeply_nested_input_is_an_error_not_a_crash() {
    // Scripts run on a large dedicated stack; so does this test.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            let deep = "[".repeat(20_000);
            Module::with_temp_heap(|module| {
                let err = decode_value(&deep, module.heap()).unwrap_err();
                assert!(err.contains("nesting depth exceeds 10000"), "{err}");
            });
            let err = indent_json(&deep, "", "\t").unwrap_err();
            assert_eq!(err, "invalid character '[' exceeded max depth");
        })
        .unwrap()
        .join()
        .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn decoding_encoded_values_gives_them_back(t in Tree::strategy(any::<String>())) {
        Module::with_temp_heap(|module| {
            let heap = module.heap();
            let v = t.alloc(heap);
            let text = encode_value(v, heap).unwrap();
            let back = decode_value(&text, heap).unwrap();
            prop_assert!(back.equals(v).unwrap(), "{text}");
            // Encoding is deterministic and canonical: sorted keys, so
            // the text of the decoded value is the same text.
            prop_assert_eq!(encode_value(back, heap).unwrap(), text.clone());
            // Indenting keeps the value.
            let indented = indent_json(&text, ">", "  ").unwrap();
            let again = decode_value(&indented.replace("\n>", "\n"), heap).unwrap();
            prop_assert!(again.equals(v).unwrap(), "{indented}");
            Ok(())
        })?;
    }

    #[test]
    fn decode_never_panics_on_arbitrary_text(s in any::<String>()) {
        Module::with_temp_heap(|module| {
            let _ = decode_value(&s, module.heap());
        });
        let _ = indent_json(&s, "", "\t");
    }
}

/// Each call of `tests/compat/json.txt` gives what go.starlark.net's
/// json module gave (recorded by `tools/gostarlark`): the same repr, or
/// an error with the same message.
#[test]
fn calls_match_the_recorded_go_results() {
    let (total, wrong) = crate::testing::replay_go_vectors("json.txt");
    assert!(
        wrong.is_empty(),
        "{} of {total} calls differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
