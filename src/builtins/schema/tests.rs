//! `schema()` and `field()`, as scripts use them.

use serde_json::{Value as Json, json};

use crate::limits::Limits;
use crate::loader::Sources;
use crate::runner::{Outcome, Runtime};
use crate::testing::{assert_eval, assert_fails, run, run_script};

/// The value a script leaves in `dxr["v"]`.
fn script(source: &str) -> Json {
    let dxr = run(source).unwrap_or_else(|e| panic!("{source}: {e}"));
    function_sdk_rust::resource::struct_to_json(&dxr)["v"].clone()
}

/// The interpreter's error text of a failing script (after `Error: `).
fn error(source: &str) -> String {
    let e = run(source).expect_err(source);
    crate::runner::errors::error_message(&e).map_or_else(|| e.clone(), str::to_owned)
}

/// The bodies of the resources a script emitted, by name.
fn emitted(source: &str) -> Json {
    let runtime = Runtime::new(Limits::default(), 4);
    let run = run_script(&runtime, source, &Sources::default());
    if let Outcome::Failed(e) = &run.outcome {
        panic!("{source}: {e}");
    }
    let resources = run.context.effects.resources.borrow();
    Json::Object(
        resources
            .iter()
            .map(|(name, r)| {
                let mut body = function_sdk_rust::resource::struct_to_json(&r.body.to_struct());
                body.as_object_mut().unwrap().remove("metadata");
                (name.clone(), body)
            })
            .collect(),
    )
}

const BUCKET: &str = r#"Bucket = schema("Bucket", doc = "An S3 bucket",
region = field(type = "string", required = True),
acl = field(type = "string", default = "private", enum = ["private", "public-read"]),
tags = field(type = "dict"),
)
"#;

// --- schema() ---

#[test]
fn schema_takes_exactly_one_positional_name() {
    assert_fails(
        "schema()",
        "schema: requires exactly 1 positional argument (name), got 0",
    );
    assert_fails(
        r#"schema(name = "X")"#,
        "schema: requires exactly 1 positional argument (name), got 0",
    );
    assert_fails(
        r#"schema("A", "B")"#,
        "schema: requires exactly 1 positional argument (name), got 2",
    );
    assert_fails("schema(1)", "schema: name must be a string, got int");
    assert_eval(r#"str(schema(""))"#, json!("<schema >"));
}

#[test]
fn schema_doc_must_be_a_string_and_defaults_to_empty() {
    assert_fails(
        r#"schema("X", doc = None)"#,
        "schema: doc must be a string, got NoneType",
    );
    assert_eval(r#"schema("X").doc"#, json!(""));
    assert_eval(r#"schema("X", doc = "d").doc"#, json!("d"));
}

#[test]
fn schema_fields_must_be_field_descriptors_and_the_first_bad_one_aborts() {
    assert_fails(
        r#"schema("X", a = field(), b = 1, c = "s")"#,
        r#"schema: field "b" value must be a field(), got int"#,
    );
}

#[test]
fn a_schema_is_a_named_unhashable_constructor_with_three_attributes() {
    let v = script(&format!(
        "{BUCKET}dxr[\"v\"] = [type(Bucket), str(Bucket), repr(Bucket), bool(Bucket), Bucket.name, Bucket.doc, list(Bucket.fields.keys()), dir(Bucket), str(Bucket.fields[\"region\"])]\n"
    ));
    assert_eq!(
        v,
        json!([
            "schema",
            "<schema Bucket>",
            "<schema Bucket>",
            true,
            "Bucket",
            "An S3 bucket",
            ["region", "acl", "tags"],
            ["doc", "fields", "name"],
            "<field type=string required>"
        ])
    );
    assert_fails(&format!("{BUCKET}{{Bucket: 1}}"), "unhashable type: schema");
    assert_fails(&format!("{BUCKET}Bucket.nope"), "nope");
}

#[test]
fn schema_fields_is_a_new_dict_on_every_access() {
    let v = script(&format!(
        "{BUCKET}f = Bucket.fields\nf.pop(\"region\")\ndxr[\"v\"] = [len(f), len(Bucket.fields), Bucket(region = \"eu\").region]\n"
    ));
    assert_eq!(v, json!([2, 3, "eu"]));
}

#[test]
fn a_schema_without_fields_is_valid() {
    assert_eval(r#"str(schema("Empty")())"#, json!("Empty({})"));
    assert_eq!(
        error(r#"schema("Empty")(x = 1)"#),
        "Empty: 1 validation error:\n- x: unknown field; valid fields: "
    );
}

// --- field() ---

#[test]
fn field_type_is_a_primitive_name_or_a_schema() {
    assert_fails(
        r#"field(type = "str")"#,
        r#"field: for parameter type: invalid type "str"; valid types: bool, dict, float, int, list, string"#,
    );
    assert_fails(
        "field(type = None)",
        "field: for parameter type: type= must be a string or schema, got NoneType",
    );
    assert_fails(
        "field(type = 1)",
        "field: for parameter type: type= must be a string or schema, got int",
    );
    assert_eval(
        r#"[field(type = t).type for t in ["", "string", "int", "float", "bool", "list", "dict"]]"#,
        json!(["", "string", "int", "float", "bool", "list", "dict"]),
    );
    assert_eval(r#"field(type = schema("Net")).type"#, json!("Net"));
}

#[test]
fn field_required_and_doc_are_strictly_typed() {
    // Go's binding quotes a parameter named by keyword.
    assert_fails(
        "field(required = 1)",
        r#"field: for parameter "required": got int, want bool"#,
    );
    assert_fails(
        r#"field("", 1)"#,
        "field: for parameter required: got int, want bool",
    );
    assert_fails(
        "field(required = None)",
        r#"field: for parameter "required": got NoneType, want bool"#,
    );
    assert_fails(
        "field(doc = None)",
        r#"field: for parameter "doc": got NoneType, want string"#,
    );
    assert_fails(
        r#"field("", False, None, None, 1)"#,
        "field: for parameter doc: got int, want string",
    );
}

#[test]
fn field_checks_items_then_enum_then_required_with_default() {
    assert_fails(
        r#"field(type = "list", items = "Rule", enum = 1)"#,
        "field: items= must be a schema, got string",
    );
    assert_fails(
        r#"field(items = schema("Rule"), enum = 1)"#,
        r#"field: items= is only valid when type="list""#,
    );
    assert_fails(
        r#"field(type = schema("S"), items = schema("Rule"))"#,
        r#"field: items= is only valid when type="list""#,
    );
    assert_fails(
        "field(enum = (1,), required = True, default = 1)",
        "field: enum must be a list, got tuple",
    );
    assert_fails(
        "field(required = True, default = 1)",
        "field: required and default are mutually exclusive",
    );
    assert_eval(
        "field(required = True, default = None).required",
        json!(true),
    );
    assert_eval("field(items = None, enum = None).enum", json!(null));
}

#[test]
fn field_binds_arguments_like_go() {
    assert_fails(
        "field(kind = 1)",
        r#"field: unexpected keyword argument "kind""#,
    );
    assert_fails(
        r#"field("int", type = "int")"#,
        r#"field: got multiple values for keyword argument "type""#,
    );
    assert_fails(
        "field(1, 2, 3, 4, 5, 6, 7)",
        "field: got 7 arguments, want at most 6",
    );
}

#[test]
fn field_arguments_may_be_positional() {
    assert_eval(
        r#"str(field("int", False, 3, [1, 3], "doc"))"#,
        json!("<field type=int default=3 enum=[1, 3]>"),
    );
}

#[test]
fn a_field_prints_what_is_notable_about_it() {
    let v = script(
        "Rule = schema(\"Rule\")\ndxr[\"v\"] = [str(f) for f in [field(), field(type = \"string\", required = True), field(type = \"list\", items = Rule), field(type = \"int\", default = 3), field(enum = [\"a\"]), field(type = Rule, doc = \"x\"), field(default = \"s\")]]\n",
    );
    assert_eq!(
        v,
        json!([
            "<field>",
            "<field type=string required>",
            "<field type=list items=Rule>",
            "<field type=int default=3>",
            "<field enum=[\"a\"]>",
            "<field type=Rule>",
            "<field default=\"s\">"
        ])
    );
}

#[test]
fn a_field_exposes_five_attributes_and_is_unhashable() {
    let v = script(
        "f = field(type = \"int\", default = 2, enum = [1, 2], doc = \"n\")\ng = field()\ndxr[\"v\"] = [type(f), bool(g), f.type, f.required, f.default, f.enum, f.doc, dir(f), g.type, g.required, g.default, g.enum, g.doc, hasattr(f, \"items\")]\n",
    );
    assert_eq!(
        v,
        json!([
            "field",
            true,
            "int",
            false,
            2,
            [1, 2],
            "n",
            ["default", "doc", "enum", "required", "type"],
            "",
            false,
            null,
            null,
            "",
            false
        ])
    );
    assert_fails("{field(): 1}", "unhashable type: field");
    assert_fails("field().items", "items");
}

// --- calling a schema ---

#[test]
fn a_constructor_takes_keywords_only() {
    assert_fails(
        &format!("{BUCKET}Bucket(\"eu\")"),
        "Bucket: unexpected positional arguments",
    );
}

#[test]
fn a_constructor_fills_defaults_and_keeps_given_order_then_declaration_order() {
    let v = script(&format!(
        "{BUCKET}b = Bucket(tags = {{\"a\": \"b\"}}, region = \"eu\")\ndxr[\"v\"] = [str(b), list(b.keys()), type(b)]\n"
    ));
    assert_eq!(
        v,
        json!([
            r#"Bucket({"tags": {"a": "b"}, "region": "eu", "acl": "private"})"#,
            ["tags", "region", "acl"],
            "dict"
        ])
    );
}

#[test]
fn none_counts_as_omitted() {
    let v = script(&format!(
        "{BUCKET}b = Bucket(acl = None, region = \"eu\", tags = None)\ndxr[\"v\"] = [list(b.keys()), b.acl]\n"
    ));
    assert_eq!(v, json!([["acl", "region"], "private"]));
    assert_eq!(
        error(&format!("{BUCKET}Bucket(region = None)")),
        "Bucket: 1 validation error:\n- region: required field missing"
    );
}

#[test]
fn unknown_fields_get_a_suggestion_or_the_list_of_valid_fields() {
    assert_eq!(
        error(r#"schema("Loc", name = field(), location = field())(locaiton = "x", zzz = 1)"#),
        "Loc: 2 validation errors:\n- locaiton: unknown field (did you mean \"location\"?)\n- zzz: unknown field; valid fields: name, location"
    );
    assert_eq!(
        error(r#"schema("S", ab = field(), cd = field())(a = 1)"#),
        "S: 1 validation error:\n- a: unknown field (did you mean \"ab\"?)"
    );
    assert_eq!(
        error(r#"schema("S", sku_name = field())(sku = 1)"#),
        "S: 1 validation error:\n- sku: unknown field; valid fields: sku_name"
    );
}

#[test]
fn primitive_types_are_strict() {
    let cases = [
        (
            r#"field(type = "string")"#,
            "1",
            "expected string, got int (1)",
        ),
        (
            r#"field(type = "int")"#,
            r#""abc""#,
            r#"expected int, got string ("abc")"#,
        ),
        (
            r#"field(type = "int")"#,
            "True",
            "expected int, got bool (True)",
        ),
        (
            r#"field(type = "float")"#,
            "1",
            "expected float, got int (1)",
        ),
        (r#"field(type = "bool")"#, "0", "expected bool, got int (0)"),
        (
            r#"field(type = "list")"#,
            "(1,)",
            "expected list, got tuple ((1,))",
        ),
        (
            r#"field(type = "dict")"#,
            "[]",
            "expected dict, got list ([])",
        ),
    ];
    for (f, value, message) in cases {
        assert_eq!(
            error(&format!(r#"schema("T", x = {f})(x = {value})"#)),
            format!("T: 1 validation error:\n- x: {message}")
        );
    }
    let v = script(
        "T = schema(\"T\", s = field(type = \"string\"), i = field(type = \"int\"), f = field(type = \"float\"), b = field(type = \"bool\"), l = field(type = \"list\"), d = field(type = \"dict\"), a = field())\nset_xr_status(\"x\", 1)\nt = T(s = \"\", i = 2, f = 1.5, b = False, l = [], d = dxr.status, a = (1, 2))\nT(d = T())\ndxr[\"v\"] = [t.i, t.f, t.d.x, str(t.a)]\n",
    );
    assert_eq!(v, json!([2, 1.5, 1, "(1, 2)"]));
}

#[test]
fn enums_compare_by_starlark_equality() {
    assert_eq!(
        error(r#"schema("T", sku = field(type = "string", enum = ["A", "B"]))(sku = "X")"#),
        "T: 1 validation error:\n- sku: value \"X\" not in enum [\"A\", \"B\"]"
    );
    assert_eval(
        r#"schema("T", n = field(enum = [1.0, 2]))(n = 1).n"#,
        json!(1),
    );
    // A type error is reported instead of the enum error.
    assert_eq!(
        error(r#"schema("T", n = field(type = "int", enum = [1]))(n = "1")"#),
        "T: 1 validation error:\n- n: expected int, got string (\"1\")"
    );
}

#[test]
fn defaults_are_neither_validated_nor_copied() {
    let v = script(
        "T = schema(\"T\", n = field(type = \"int\", default = \"x\", enum = [1]), l = field(default = []))\na = T()\nb = T()\na[\"l\"].append(1)\ndxr[\"v\"] = [a.n, b.l]\n",
    );
    assert_eq!(v, json!(["x", [1]]));
}

#[test]
fn given_values_are_stored_as_is() {
    let v = script(
        "T = schema(\"T\", l = field(type = \"list\"))\nl = [1]\nt = T(l = l)\nl.append(2)\ndxr[\"v\"] = t.l\n",
    );
    assert_eq!(v, json!([1, 2]));
}

const NESTED: &str = r#"Net = schema("Net", cidr = field(type = "string", required = True), public = field(type = "bool", default = False))
Rule = schema("Rule", port = field(type = "int", required = True), action = field(enum = ["allow", "deny"]))
Acct = schema("Acct", net = field(type = Net), rules = field(type = "list", items = Rule), name = field(type = "string"))
"#;

#[test]
fn nested_plain_dicts_are_validated_and_wrapped_as_schema_dicts() {
    let v = script(&format!(
        "{NESTED}a = Acct(net = {{\"cidr\": \"10.0.0.0/16\"}}, rules = [{{\"port\": 80}}, Rule(port = 443)])\ndxr[\"v\"] = [str(a), a.net.public, type(a.rules[0])]\n"
    ));
    assert_eq!(
        v,
        json!([
            r#"Acct({"net": Net({"cidr": "10.0.0.0/16", "public": False}), "rules": [Rule({"port": 80}), Rule({"port": 443})]})"#,
            false,
            "dict"
        ])
    );
}

#[test]
fn nested_schema_dicts_are_accepted_without_revalidation_whatever_their_schema() {
    let v = script(&format!(
        "{NESTED}a = Acct(net = Rule(port = 1), rules = [Net(cidr = \"x\")])\ndxr[\"v\"] = str(a)\n"
    ));
    assert_eq!(
        v,
        json!(
            r#"Acct({"net": Rule({"port": 1}), "rules": [Net({"cidr": "x", "public": False})]})"#
        )
    );
}

#[test]
fn nested_fields_reject_other_values_including_attribute_dicts() {
    assert_eq!(
        error(&format!(
            "{NESTED}set_xr_status(\"cidr\", \"x\")\nAcct(net = dxr.status, rules = (1,), name = 1)"
        )),
        "Acct: 3 validation errors:\n- net: expected Net or dict, got dict\n- rules: expected list, got tuple\n- name: expected string, got int (1)"
    );
    assert_eq!(
        error(&format!(
            "{NESTED}Acct(rules = [1, {{\"port\": \"80\"}}, Rule(port = 1), {{}}], net = 2)"
        )),
        "Acct: 4 validation errors:\n- rules[0]: expected Rule or dict, got int\n- rules[1].port: expected int, got string (\"80\")\n- rules[3].port: required field missing\n- net: expected Net or dict, got int"
    );
}

#[test]
fn nested_lists_are_new_lists() {
    let v = script(&format!(
        "{NESTED}l = [{{\"port\": 1}}]\na = Acct(rules = l)\nl.append(2)\ndxr[\"v\"] = [len(a.rules), len(l)]\n"
    ));
    assert_eq!(v, json!([1, 2]));
}

#[test]
fn validation_errors_are_aggregated_with_full_paths_in_order() {
    let source = r#"Container = schema("Container", name = field(type = "string", required = True), image = field(type = "string"))
Spec = schema("Spec", containers = field(type = "list", items = Container))
Template = schema("Template", spec = field(type = Spec))
Deploy = schema("Deploy", template = field(type = Template))
Deploy(template = {"spec": {"containers": [{"nme": "web"}]}})
"#;
    assert_eq!(
        error(source),
        "Deploy: 2 validation errors:\n- template.spec.containers[0].nme: unknown field (did you mean \"name\"?)\n- template.spec.containers[0].name: required field missing"
    );
    // Phase 1 in call order (nested errors in place), then phase 2.
    assert_eq!(
        error(&format!(
            "{NESTED}Two = schema(\"Two\", a = field(type = Net), b = field(required = True), c = field(required = True))\nTwo(c = None, a = {{\"public\": 1}}, zzz = 1)"
        )),
        "Two: 5 validation errors:\n- c: required field missing\n- a.public: expected bool, got int (1)\n- a.cidr: required field missing\n- zzz: unknown field; valid fields: a, b, c\n- b: required field missing"
    );
}

// --- SchemaDict ---

#[test]
fn a_schema_dict_behaves_like_a_dict() {
    let v = script(&format!(
        "{BUCKET}b = Bucket(region = \"eu\")\ne = Bucket.fields\ndxr[\"v\"] = [type(b), repr(b), len(b), \"region\" in b, \"x\" in b, [k for k in b], sorted(b), b[\"region\"], b.region, b.tags, bool(b), b.get(\"acl\"), b.get(\"x\", 1), [list(i) for i in b.items()], b.values(), \"update\" in dir(b), \"region\" in dir(b), hasattr(b, \"anything\")]\n"
    ));
    assert_eq!(
        v,
        json!([
            "dict",
            r#"Bucket({"region": "eu", "acl": "private"})"#,
            2,
            true,
            false,
            ["region", "acl"],
            ["acl", "region"],
            "eu",
            "eu",
            null,
            true,
            "private",
            1,
            [["region", "eu"], ["acl", "private"]],
            ["eu", "private"],
            true,
            true,
            true
        ])
    );
    assert_eval(r#"bool(schema("E")())"#, json!(false));
    assert_fails(
        &format!("{BUCKET}Bucket(region = \"eu\")[\"x\"]"),
        r#"key "x" not in dict"#,
    );
    assert_fails(
        &format!("{BUCKET}{{Bucket(region = \"eu\"): 1}}"),
        "unhashable type: dict",
    );
}

#[test]
fn methods_shadow_keys_on_dot_access() {
    assert_eval(
        r#"schema("S", keys = field())(keys = 1).keys()"#,
        json!(["keys"]),
    );
    assert_eval(r#"schema("S", keys = field())(keys = 1)["keys"]"#, json!(1));
}

#[test]
fn every_insertion_into_a_schema_dict_is_validated() {
    let cases = [
        (
            r#"b["regoin"] = "x""#,
            r#"Bucket: regoin: unknown field (did you mean "region"?)"#,
        ),
        (
            "b.zzz = 1",
            "Bucket: zzz: unknown field; valid fields: region, acl, tags",
        ),
        (
            "b.region = 1",
            "Bucket.region: expected string, got int (1)",
        ),
        (
            r#"b["acl"] = "open""#,
            r#"Bucket.acl: value "open" not in enum ["private", "public-read"]"#,
        ),
        (
            r#"b.update({"acl": "public-read", "region": 2})"#,
            "Bucket.region: expected string, got int (2)",
        ),
        (
            r#"b.setdefault("tags", [])"#,
            "Bucket.tags: expected dict, got list ([])",
        ),
        (
            r#"b.setdefault("nope")"#,
            "Bucket: nope: unknown field; valid fields: region, acl, tags",
        ),
    ];
    for (statement, message) in cases {
        assert_eq!(
            error(&format!(
                "{BUCKET}b = Bucket(region = \"eu\")\n{statement}\n"
            )),
            message,
            "{statement}"
        );
    }
}

#[test]
fn valid_insertions_none_and_non_string_keys_are_stored() {
    let v = script(&format!(
        "{BUCKET}b = Bucket(region = \"eu\")\nb.region = None\nb[\"acl\"] = \"public-read\"\nb[1] = 2\nb.setdefault(\"tags\", {{\"t\": \"1\"}})\nr = b.setdefault(\"acl\", \"private\")\ndxr[\"v\"] = [str(b), r]\n"
    ));
    assert_eq!(
        v,
        json!([
            r#"Bucket({"region": None, "acl": "public-read", 1: 2, "tags": {"t": "1"}})"#,
            "public-read"
        ])
    );
}

#[test]
fn update_applies_entries_until_the_first_invalid_one() {
    let v = script(&format!(
        "{BUCKET}b = Bucket(region = \"eu\")\nb.update(Bucket(region = \"us\", acl = \"public-read\"))\ndxr[\"v\"] = str(b)\n"
    ));
    assert_eq!(
        v,
        json!(r#"Bucket({"region": "us", "acl": "public-read"})"#)
    );
    assert_fails(
        &format!(
            "{BUCKET}b = Bucket(region = \"eu\")\ndef f():\n    b.update({{\"region\": \"us\", \"x\": 1}})\nf()\n"
        ),
        "Bucket: x: unknown field",
    );
    let v = script(&format!(
        "{BUCKET}b = Bucket(region = \"eu\")\ndef f():\n    b.update({{\"region\": \"us\", \"x\": 1}})\ndxr[\"v\"] = [b.region]\n"
    ));
    assert_eq!(v, json!(["eu"]));
    assert_fails(
        &format!("{BUCKET}Bucket(region = \"eu\").update(dxr)"),
        "update: unsupported argument type dict",
    );
    assert_fails(
        &format!("{BUCKET}Bucket(region = \"eu\").update([(\"acl\", \"private\")])"),
        "update: unsupported argument type list",
    );
}

#[test]
fn nested_insertions_report_the_first_error_and_store_plain_dicts() {
    let cases = [
        (
            r#"a.rules = [{"port": 1}, {"action": "X"}]"#,
            r#"Acct.rules[1].action: value "X" not in enum ["allow", "deny"]"#,
        ),
        (
            r#"a.rules = [{"port": 1}, {}]"#,
            "Acct.rules[1].port: required field missing",
        ),
        (
            r#"a.net = {"cidr": 1, "public": 1}"#,
            "Acct.net.cidr: expected string, got int (1)",
        ),
        ("a.net = 1", "Acct.net: expected Net or dict, got int"),
        ("a.rules = {}", "Acct.rules: expected list, got dict"),
        (
            "a.rules = [1]",
            "Acct.rules[0]: expected Rule or dict, got int",
        ),
    ];
    for (statement, message) in cases {
        assert_eq!(
            error(&format!("{NESTED}a = Acct()\n{statement}\n")),
            message,
            "{statement}"
        );
    }
    let v = script(&format!(
        "{NESTED}a = Acct()\na.net = {{\"cidr\": \"x\"}}\na.rules = [{{\"port\": 1}}, Rule(port = 2)]\ndxr[\"v\"] = str(a)\n"
    ));
    assert_eq!(
        v,
        json!(r#"Acct({"net": {"cidr": "x"}, "rules": [{"port": 1}, Rule({"port": 2})]})"#)
    );
}

#[test]
fn pop_and_clear_are_unrestricted() {
    let v = script(&format!(
        "{BUCKET}b = Bucket(region = \"eu\")\np = b.pop(\"region\")\nq = b.pop(\"x\", 5)\nc = Bucket(region = \"us\")\nc.clear()\ndxr[\"v\"] = [p, q, str(b), str(c)]\n"
    ));
    assert_eq!(
        v,
        json!(["eu", 5, r#"Bucket({"acl": "private"})"#, "Bucket({})"])
    );
    assert_fails(
        &format!("{BUCKET}Bucket(region = \"eu\").pop(\"x\")"),
        r#"pop: key "x" not found"#,
    );
}

#[test]
fn schema_dicts_compare_by_content() {
    let v = script(&format!(
        "{BUCKET}A = schema(\"A\", region = field(), acl = field())\nb = Bucket(region = \"eu\")\ndxr[\"v\"] = [b == A(region = \"eu\", acl = \"private\"), b == {{\"region\": \"eu\", \"acl\": \"private\"}}, b == {{\"region\": \"eu\"}}, b != Bucket(region = \"us\"), b == Bucket(region = \"eu\")]\n"
    ));
    assert_eq!(v, json!([true, true, false, true, true]));
}

#[test]
fn schema_dicts_work_with_dict_like_builtins() {
    let v = script(&format!(
        "{NESTED}a = Acct(net = {{\"cidr\": \"x\"}}, name = \"n\")\ndxr[\"v\"] = [get(a, \"net.cidr\"), get(a, [\"name\"]), dict.dig(a, \"net.public\"), dict.merge(a, {{}})[\"name\"]]\n"
    ));
    assert_eq!(v, json!(["x", "n", false, "n"]));
}

#[test]
fn schema_dicts_convert_like_dicts_in_dxr_and_context() {
    let v = script(&format!(
        "{NESTED}dxr[\"v\"] = Acct(net = {{\"cidr\": \"x\"}}, rules = [{{\"port\": 1}}])\n"
    ));
    assert_eq!(
        v,
        json!({"net": {"cidr": "x", "public": false}, "rules": [{"port": 1}]})
    );
    assert_fails(
        &format!("{NESTED}a = Acct()\na[1] = 2\ndxr[\"v\"] = a\n"),
        "dict key 1 (int) is not a string",
    );
}

#[test]
fn schema_dicts_are_resource_bodies_with_none_entries_compacted() {
    let bodies = emitted(
        r#"Obj = schema("Obj", apiVersion = field(type = "string", default = "v1"), kind = field(type = "string", required = True), data = field(type = "dict"), spec = field())
Spec = schema("Spec", replicas = field(type = "int"), note = field())
o = Obj(kind = "ConfigMap", data = {"a": "b", "n": None})
o.spec = Spec(replicas = 2, note = None)
Resource("cm", o)
Resource("plain", {"apiVersion": "v1", "kind": "X", "spec": Spec(replicas = 1)})
"#,
    );
    assert_eq!(
        bodies,
        json!({
            "cm": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}, "spec": {"replicas": 2}},
            "plain": {"apiVersion": "v1", "kind": "X", "spec": {"replicas": 1}}
        })
    );
}

#[test]
fn json_encode_renders_schema_dicts_as_objects() {
    // The reference renders an array of keys; this port treats every
    // dict kind as a mapping.
    let v = script(&format!(
        "{NESTED}dxr[\"v\"] = json.encode(Acct(name = \"n\", net = {{\"cidr\": \"x\"}}))\n"
    ));
    assert_eq!(
        v,
        json!(r#"{"name":"n","net":{"cidr":"x","public":false}}"#)
    );
}

#[test]
fn schema_dicts_are_not_label_dicts() {
    assert_fails(
        r#"L = schema("L", team = field())
Resource("cm", {"apiVersion": "v1", "kind": "ConfigMap"}, labels = L(team = "a"))
"#,
        r#"Resource("cm"): labels must be dict or None, got dict"#,
    );
}

#[test]
fn set_xr_status_validates_writes_into_a_schema_dict() {
    let source = r#"Status = schema("Status", arn = field(type = "string"), region = field(type = "string"))
dxr["status"] = {"atProvider": Status(region = "eu")}
set_xr_status("atProvider.arn", "arn:1")
dxr["v"] = [str(dxr["status"]["atProvider"])]
"#;
    assert_eq!(
        script(source),
        json!([r#"Status({"region": "eu", "arn": "arn:1"})"#])
    );
    assert_fails(
        r#"Status = schema("Status", arn = field(type = "string"))
dxr["status"] = {"atProvider": Status()}
set_xr_status("atProvider.arn", 1)
"#,
        "Status.arn: expected string, got int (1)",
    );
    assert_fails(
        r#"Status = schema("Status", arn = field(type = "string"))
dxr["status"] = {"atProvider": Status()}
set_xr_status("atProvider.nested.x", 1)
"#,
        "Status: nested: unknown field",
    );
}

/// Runs `main` with an inline module `lib.star`; the `dxr["v"]` it
/// leaves, or the error text.
fn with_module(lib: &str, main: &str) -> Result<Json, String> {
    let runtime = Runtime::new(Limits::default(), 4);
    let sources = Sources::inline([("lib.star".to_owned(), lib.to_owned())].into());
    match run_script(&runtime, main, &sources).outcome {
        Outcome::Completed { dxr, .. } => {
            Ok(function_sdk_rust::resource::struct_to_json(&dxr?)["v"].clone())
        }
        Outcome::Failed(e) => Err(e.to_string()),
    }
}

const LIB: &str = r#"Net = schema("Net", cidr = field(type = "string"))
M = schema("M", n = field(type = "int", default = 1), l = field(default = [1]), net = field(type = Net), e = field(enum = ["a"]))
made = M(n = 2, net = {"cidr": "x"})
"#;

#[test]
fn frozen_schemas_keep_constructing_mutable_schema_dicts() {
    let v = with_module(
        LIB,
        "load(\"lib.star\", \"M\", \"made\")\nm = M(net = {\"cidr\": \"y\"}, e = \"a\")\nm.n = 5\nm.net.cidr = \"z\"\ndxr[\"v\"] = [str(m), str(made), made.net.cidr, M.fields[\"l\"].default, str(M.fields[\"e\"]), type(made)]\n",
    )
    .unwrap();
    assert_eq!(
        v,
        json!([
            r#"M({"net": Net({"cidr": "z"}), "e": "a", "n": 5, "l": [1]})"#,
            r#"M({"n": 2, "net": Net({"cidr": "x"}), "l": [1]})"#,
            "x",
            [1],
            r#"<field enum=["a"]>"#,
            "dict"
        ])
    );
}

#[test]
fn frozen_schema_dicts_defaults_and_enums_reject_mutation() {
    for statement in [
        "made.n = 3",
        "made[\"n\"] = 3",
        "made.clear()",
        "made.pop(\"n\")",
        "made.update({})",
        "made.setdefault(\"e\", \"a\")",
        "made.net.cidr = \"y\"",
        "M().l.append(2)",
        "M.fields[\"e\"].enum.append(\"b\")",
    ] {
        let e = with_module(
            LIB,
            &format!("load(\"lib.star\", \"M\", \"made\")\n{statement}\n"),
        )
        .expect_err(statement);
        assert!(
            e.contains("frozen") || e.contains("mmutable"),
            "{statement}: {e}"
        );
    }
}
