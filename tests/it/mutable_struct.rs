//! `mutable_struct`, as `shared/spec/go-0.11.1.md` section 4 describes the
//! Go function's: construction, fields set and validated, `+`, `==`, its
//! text, freezing, and its use as a body, a labels value and a `dict`,
//! `json` and `yaml` argument. Each case states the Go function's answer.

use serde_json::{Value, json};

use crate::common;

/// The response of `source` on an empty request, as JSON.
fn run(source: &str) -> Value {
    common::json(&common::run(source, "{}"))
}

/// The Fatal message of `source`, or an empty string.
fn error(source: &str) -> String {
    common::fatal(&run(source)).unwrap_or_default()
}

/// What `source` left in `dxr["status"]`.
fn status(source: &str) -> Value {
    let rsp = run(source);
    assert!(common::fatal(&rsp).is_none(), "{rsp:#}");
    rsp["desired"]["composite"]["resource"]["status"].clone()
}

const SPEC: &str = r#"
Spec = schema("Spec",
    region = field(type = "string", required = True),
    sku = field(type = "string", default = "Standard", enum = ["Standard", "Premium"]),
    tags = field(type = "dict"),
)
"#;

#[test]
fn fields_are_set_added_and_read() {
    let got = status(
        r#"
spec = mutable_struct(region = "eastus", sku = "Standard")
spec.region = "eu-west-1"
spec.tags = {"env": "prod"}
spec.gone = None
dxr["status"] = {
    "region": spec.region, "tags": spec.tags, "gone": spec.gone,
    "type": type(spec), "truth": [bool(spec), bool(mutable_struct())],
    "has": [hasattr(spec, "sku"), hasattr(spec, "nope")],
    "default": getattr(spec, "nope", "d"),
}
"#,
    );
    assert_eq!(
        got,
        json!({
            "region": "eu-west-1", "tags": {"env": "prod"}, "gone": null,
            "type": "mutable_struct", "truth": [true, true],
            "has": [true, false], "default": "d",
        })
    );
    assert!(
        error("s = mutable_struct(a = 1)\nx = s.b").contains("mutable_struct has no .b attribute"),
        "{}",
        error("s = mutable_struct(a = 1)\nx = s.b")
    );
}

#[test]
fn it_prints_as_the_go_function_prints_it() {
    let got = status(&format!(
        r#"{SPEC}
dxr["status"] = {{
    "plain": str(mutable_struct(b = 2, a = 1)),
    "items": str(mutable_struct(items = [], name = "test")),
    "empty": str(mutable_struct()),
    "typed": str(mutable_struct(schema = Spec, sku = "Premium", region = "x")),
    "dir": dir(mutable_struct(z = 1, a = 2, m = 3)),
    "dir_typed": dir(mutable_struct(schema = Spec, region = "x")),
    "nested": repr([mutable_struct(a = "s")]),
}}
"#
    ));
    assert_eq!(
        got,
        json!({
            "plain": "mutable_struct(a = 1, b = 2)",
            "items": "mutable_struct(items = [], name = \"test\")",
            "empty": "mutable_struct()",
            "typed": "Spec(region = \"x\", sku = \"Premium\")",
            "dir": ["a", "m", "z"],
            "dir_typed": ["region", "sku", "tags"],
            "nested": "[mutable_struct(a = \"s\")]",
        })
    );
    // A struct that holds itself prints without end in Go; here it stops.
    let got = status("s = mutable_struct(a = 1)\ns.me = s\ndxr['status'] = {'s': str(s)}");
    assert_eq!(got["s"], "mutable_struct(a = 1, me = mutable_struct(...))");
}

#[test]
fn a_schema_validates_construction_all_errors_at_once() {
    let cases = [
        (
            "mutable_struct(schema = Spec, region = 123)",
            "Spec: 1 validation error:\n- region: expected string, got int (123)",
        ),
        (
            "mutable_struct(schema = Spec)",
            "Spec: 1 validation error:\n- region: required field missing",
        ),
        (
            "mutable_struct(schema = Spec, regoin = 'x')",
            "Spec: 2 validation errors:\n- regoin: unknown field (did you mean \"region\"?)\n- region: required field missing",
        ),
        (
            "mutable_struct(schema = Spec, region = 'x', zzz = 1)",
            "Spec: 1 validation error:\n- zzz: unknown field; valid fields: region, sku, tags",
        ),
        (
            "mutable_struct(schema = Spec, region = 'x', sku = 'bad')",
            "Spec: 1 validation error:\n- sku: value \"bad\" not in enum [\"Standard\", \"Premium\"]",
        ),
        (
            "mutable_struct(1)",
            "mutable_struct: unexpected positional arguments",
        ),
        (
            "mutable_struct(schema = 1)",
            "mutable_struct: schema= must be a schema(), got int",
        ),
        (
            "mutable_struct(schema = None)",
            "mutable_struct: schema= must be a schema(), got NoneType",
        ),
    ];
    for (call, want) in cases {
        let msg = error(&format!("{SPEC}\nx = {call}"));
        assert!(msg.contains(want), "{call}: {msg}");
    }
    let got = status(&format!(
        "{SPEC}\ntyped = mutable_struct(schema = Spec, region = 'eastus')\ndxr['status'] = {{'sku': typed.sku, 'has_tags': hasattr(typed, 'tags')}}"
    ));
    assert_eq!(got, json!({"sku": "Standard", "has_tags": false}));
}

#[test]
fn a_schema_validates_every_assignment() {
    let cases = [
        (
            "typed.region = 1",
            "Spec.region: expected string, got int (1)",
        ),
        (
            "typed.regoin = 'x'",
            "Spec: regoin: unknown field (did you mean \"region\"?)",
        ),
        (
            "typed.zzz = 'x'",
            "Spec: zzz: unknown field; valid fields: region, sku, tags",
        ),
        (
            "typed.region = None",
            "Spec.region: required field cannot be set to None",
        ),
        (
            "typed.sku = 'Basic'",
            "Spec.sku: value \"Basic\" not in enum [\"Standard\", \"Premium\"]",
        ),
        (
            "typed.tags = mutable_struct()",
            "Spec.tags: expected dict, got mutable_struct",
        ),
    ];
    for (assignment, want) in cases {
        let msg = error(&format!(
            "{SPEC}\ntyped = mutable_struct(schema = Spec, region = 'eastus')\n{assignment}"
        ));
        assert!(msg.contains(want), "{assignment}: {msg}");
    }
    let got = status(&format!(
        r#"{SPEC}
typed = mutable_struct(schema = Spec, region = "eastus", tags = {{"a": "b"}})
typed.sku = "Premium"
premium = typed.sku
typed.sku = None
typed.tags = None
dxr["status"] = {{"premium": premium, "sku": typed.sku, "tags": hasattr(typed, "tags"), "text": str(typed)}}
"#
    ));
    assert_eq!(
        got,
        json!({"premium": "Premium", "sku": "Standard", "tags": false, "text": "Spec(region = \"eastus\", sku = \"Standard\")"})
    );
}

#[test]
fn nested_schemas_validate_assigned_dicts_and_structs() {
    let outer = r#"
Inner = schema("Inner", value = field(type = "string", required = True))
Outer = schema("Outer", inner = field(type = Inner), items = field(type = "list", items = Inner))
o = mutable_struct(schema = Outer)
"#;
    let got = status(&format!(
        "{outer}\no.inner = {{'value': 'a'}}\nfirst = str(o.inner)\no.inner = mutable_struct(value = 'b')\no.items = [{{'value': 'c'}}, Inner(value = 'd')]\ndxr['status'] = {{'first': first, 'then': str(o.inner), 'items': str(o.items)}}"
    ));
    assert_eq!(
        got,
        json!({
            "first": "Inner({\"value\": \"a\"})",
            "then": "Inner({\"value\": \"b\"})",
            "items": "[Inner({\"value\": \"c\"}), Inner({\"value\": \"d\"})]",
        })
    );
    for (assignment, want) in [
        ("o.inner = {}", "Outer.inner.value: required field missing"),
        (
            "o.inner = 3",
            "Outer.inner: expected Inner or dict, got int",
        ),
        ("o.items = 3", "Outer.items: expected list, got int"),
        (
            "o.items = [3]",
            "Outer.items[0]: expected Inner or dict, got int",
        ),
        (
            "o.items = [{}]",
            "Outer.items[0].value: required field missing",
        ),
    ] {
        let msg = error(&format!("{outer}\n{assignment}"));
        assert!(msg.contains(want), "{assignment}: {msg}");
    }
    // At construction a nested struct is not taken for a dict.
    let msg = error(&format!(
        "{outer}\nx = mutable_struct(schema = Outer, inner = mutable_struct(value = 'x'))"
    ));
    assert!(
        msg.contains("inner: expected Inner or dict, got mutable_struct"),
        "{msg}"
    );
}

#[test]
fn plus_merges_and_the_right_side_wins() {
    let got = status(
        r#"
DefSpec = schema("DefSpec", name = field(type = "string"), tier = field(type = "string", default = "free"))
merged = mutable_struct(apiVersion = "v1", kind = "ConfigMap") + mutable_struct(metadata = {"name": "merged"}, kind = "Secret")
d3 = mutable_struct(schema = DefSpec, name = "test", tier = "premium") + mutable_struct(tier = None)
d4 = mutable_struct(name = "x") + mutable_struct(schema = DefSpec, tier = "gold")
dxr["status"] = {"merged": str(merged), "tier": d3.tier, "d4": str(d4)}
"#,
    );
    assert_eq!(
        got,
        json!({
            "merged": "mutable_struct(apiVersion = \"v1\", kind = \"Secret\", metadata = {\"name\": \"merged\"})",
            "tier": "free",
            "d4": "DefSpec(name = \"x\", tier = \"gold\")",
        })
    );
    let msg = error(
        "A = schema('A', x = field())\nB = schema('B', x = field())\ny = mutable_struct(schema = A) + mutable_struct(schema = B)",
    );
    assert!(
        msg.contains("cannot merge mutable_struct: schemas differ (A vs B)"),
        "{msg}"
    );
    let msg = error("y = mutable_struct() + 1");
    assert!(
        msg.contains("unknown binary op: mutable_struct + int"),
        "{msg}"
    );
    let msg = error(&format!(
        "{SPEC}\ny = mutable_struct(schema = Spec, region = 'x') + mutable_struct(region = 1)"
    ));
    assert!(
        msg.contains("Spec.region: expected string, got int (1)"),
        "{msg}"
    );
}

#[test]
fn equality_compares_fields_not_schemas() {
    let got = status(&format!(
        r#"{SPEC}
Other = schema("Other", region = field(type = "string"), sku = field(type = "string"))
dxr["status"] = {{
    "same": mutable_struct(a = 1, b = [2]) == mutable_struct(b = [2], a = 1),
    "differ": mutable_struct(a = 1) != mutable_struct(a = 2),
    "fewer": mutable_struct(a = 1) == mutable_struct(a = 1, b = 2),
    "schemas": mutable_struct(schema = Spec, region = "x", sku = "Standard") == mutable_struct(schema = Other, region = "x", sku = "Standard"),
    "dict": mutable_struct(a = 1) == {{"a": 1}},
}}
"#
    ));
    assert_eq!(
        got,
        json!({"same": true, "differ": true, "fewer": false, "schemas": true, "dict": false})
    );
    let msg = error("x = mutable_struct() < mutable_struct()");
    assert!(
        msg.contains("mutable_struct < mutable_struct not implemented"),
        "{msg}"
    );
    let msg = error("x = {mutable_struct(): 1}");
    assert!(msg.contains("unhashable type: mutable_struct"), "{msg}");
}

#[test]
fn a_frozen_struct_refuses_assignment_after_its_schema_is_heard() {
    let rsp = common::json(&common::run_input(
        "load('lib.star', 'cfg', 'typed')\ncfg.x = 1\n",
        json!({"lib.star": "cfg = mutable_struct(a = 1)\nSpec = schema('Spec', a = field(type = 'int'), b = field(type = 'int'))\ntyped = mutable_struct(schema = Spec, a = 1, b = 2)\n"}),
    ));
    let msg = common::fatal(&rsp).unwrap_or_default();
    assert!(
        msg.contains("cannot insert into frozen hash table"),
        "{msg}"
    );
    for (assignment, want) in [
        ("typed.a = 'x'", "Spec.a: expected int, got string (\"x\")"),
        ("typed.b = None", "cannot delete from frozen hash table"),
        ("typed.a = 3", "cannot insert into frozen hash table"),
    ] {
        let rsp = common::json(&common::run_input(
            &format!("load('lib.star', 'typed')\n{assignment}\n"),
            json!({"lib.star": "Spec = schema('Spec', a = field(type = 'int'), b = field(type = 'int'))\ntyped = mutable_struct(schema = Spec, a = 1, b = 2)\n"}),
        ));
        let msg = common::fatal(&rsp).unwrap_or_default();
        assert!(msg.contains(want), "{assignment}: {msg}");
    }
}

#[test]
fn a_struct_composes_like_a_dict() {
    let rsp = run(r#"
labels = mutable_struct(team = "platform")
Resource("ms-basic", mutable_struct(apiVersion = "v1", kind = "ConfigMap", data = {"a": "1"}), labels = labels)
Resource("ms-compact", dict.compact(mutable_struct(apiVersion = "v1", kind = "ConfigMap", extra = None)))
Resource("ms-nested", {"apiVersion": "v1", "kind": "ConfigMap", "data": mutable_struct(b = "2", none = None)})
dxr["status"] = {"spec": mutable_struct(region = "eu")}
dxr["status"]["dict"] = {
    "merge": dict.merge(mutable_struct(a = 1), {"b": 2}),
    "deep": dict.deep_merge({"n": {"a": 1}}, {"n": mutable_struct(b = 2)}),
    "pick": dict.pick(mutable_struct(a = 1, b = 2), ["a"]),
    "omit": dict.omit(mutable_struct(a = 1, b = 2), ["a"]),
    "dig": dict.dig(mutable_struct(n = mutable_struct(x = 5)), "n.x"),
    "has": dict.has_path(mutable_struct(n = {"x": 5}), "n.x"),
    "type": type(dict.merge(mutable_struct(a = 1), {})),
}
dxr["status"]["json"] = [
    json.encode(mutable_struct(a = 1, b = "hello")) == json.encode({"a": 1, "b": "hello"}),
    json.encode(mutable_struct()),
    json.encode({"s": mutable_struct(z = [1], y = None)}),
]
dxr["status"]["yaml"] = [
    yaml.encode(mutable_struct(b = 1, a = {"c": mutable_struct(d = True)})),
    yaml.encode(mutable_struct(b = 1)) == yaml.encode({"b": 1}),
]
"#);
    assert!(common::fatal(&rsp).is_none(), "{rsp:#}");
    let resources = &rsp["desired"]["resources"];
    assert_eq!(
        resources["ms-basic"]["resource"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}, "metadata": {"labels": {"team": "platform", "function-starlark.crossplane.io/resource-name": "ms-basic"}}})
    );
    assert_eq!(
        resources["ms-compact"]["resource"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"function-starlark.crossplane.io/resource-name": "ms-compact"}}})
    );
    assert_eq!(
        resources["ms-nested"]["resource"]["data"],
        json!({"b": "2"})
    );
    let status = &rsp["desired"]["composite"]["resource"]["status"];
    assert_eq!(status["spec"], json!({"region": "eu"}));
    assert_eq!(
        status["dict"],
        json!({
            "merge": {"a": 1.0, "b": 2.0},
            "deep": {"n": {"a": 1.0, "b": 2.0}},
            "pick": {"a": 1.0},
            "omit": {"b": 2.0},
            "dig": 5.0,
            "has": true,
            "type": "dict",
        })
    );
    assert_eq!(
        status["json"],
        json!([true, "{}", "{\"s\":{\"y\":null,\"z\":[1]}}"])
    );
    assert_eq!(status["yaml"], json!(["a:\n  c:\n    d: true\nb: 1", true]));
}

#[test]
fn json_of_a_schema_struct_with_an_unset_field_fails_as_in_go() {
    let msg = error(&format!(
        "{SPEC}\nx = json.encode(mutable_struct(schema = Spec, region = 'x'))"
    ));
    assert!(
        msg.contains(
            "cannot access attribute mutable_struct.tags: mutable_struct has no .tags attribute"
        ),
        "{msg}"
    );
    // field(type="dict") does not take a struct for a dict.
    let msg = error(&format!(
        "{SPEC}\nx = Spec(region = 'x', tags = mutable_struct())"
    ));
    assert!(
        msg.contains("tags: expected dict, got mutable_struct"),
        "{msg}"
    );
}

/// The Go function's end-to-end case for `mutable_struct`, condensed as
/// the spec gives it: every check calls `fatal()` on a mismatch.
#[test]
fn the_go_end_to_end_case_passes() {
    let rsp = run(r#"
def check(ok, what):
    if not ok:
        fatal("mismatch: " + what)

region = "eastus"
spec = mutable_struct(region = region, sku = "Standard")
spec.region = "eu-west-1"
spec.tags = {"env": "prod"}
check(spec.region == "eu-west-1", "region")
merged = mutable_struct(apiVersion = "nop.crossplane.io/v1alpha1", kind = "NopResource") + mutable_struct(metadata = {"name": "merged"})
check(merged.metadata["name"] == "merged", "merged")
check(str(mutable_struct(b = 2, a = 1)) == "mutable_struct(a = 1, b = 2)", "str")
check(dir(mutable_struct(z = 1, a = 2, m = 3)) == ["a", "m", "z"], "dir")
Spec = schema("Spec", region = field(type = "string", required = True),
              sku = field(type = "string", default = "Standard", enum = ["Standard", "Premium"]), tags = field(type = "dict"))
typed = mutable_struct(schema = Spec, region = "eastus")
check(typed.sku == "Standard", "default")
typed.sku = "Premium"
check(typed.sku == "Premium", "set")
typed.sku = None
check(typed.sku == "Standard", "reset")
DefSpec = schema("DefSpec", name = field(type = "string"), tier = field(type = "string", default = "free"))
d3 = mutable_struct(schema = DefSpec, name = "test", tier = "premium") + mutable_struct(tier = None)
check(d3.tier == "free", "merge default")
Resource("ms-basic", mutable_struct(apiVersion = "nop.crossplane.io/v1alpha1", kind = "NopResource", spec = {"forProvider": {"conditionAfter": []}}))
Resource("ms-compact", dict.compact(mutable_struct(apiVersion = "nop.crossplane.io/v1alpha1", kind = "NopResource", extra = None)))
"#);
    assert!(common::fatal(&rsp).is_none(), "{rsp:#}");
    let names: Vec<&str> = rsp["desired"]["resources"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(names, ["ms-basic", "ms-compact"]);
}
