//! The response checklist: one test per behaviour of a RunFunction response,
//! grouped by topic (input, desired state, conversions, globals,
//! requirements, conditions and events, failures, labels, conditional
//! resources, dependencies, readiness, `skip_resource`, ConfigMap scripts,
//! metrics).

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use function_starlark::function::StarlarkFunction;
use function_starlark::input::Settings;
use function_starlark::limits::Limits;
use function_starlark::metrics::Metrics;
use function_starlark::runner::Runtime;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};

const SUCCESS: &str = "function-starlark: executed successfully";
const PASSTHROUGH: &str = "function-starlark: input parsed successfully (passthrough mode)";
const SOURCE_REQUIRED: &str = "spec.source or spec.scriptConfigRef is required";
const NAME_LABEL: &str = "function-starlark.crossplane.io/resource-name";
const EXECUTION_FAILED: &str = "starlark execution failed: ";

/// An observed XR named `xr-abc` that belongs to a claim.
const XR_WITH_CLAIM: &str = r"
observed:
  composite:
    resource:
      apiVersion: example.org/v1
      kind: XBucket
      metadata:
        name: xr-abc
        labels:
          crossplane.io/claim-name: my-claim
          crossplane.io/claim-namespace: default
";

/// `app` depends on `db`.
const DB_APP: &str = r"
db = Resource('db', {'apiVersion': 'v1', 'kind': 'Database'})
Resource('app', {'apiVersion': 'v1', 'kind': 'App'}, depends_on=[db])
";

// ---------------------------------------------------------------------------
// Helpers

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// Runs an inline `source` against a YAML (or JSON) request.
fn run(source: &str, request_yaml: &str) -> Value {
    common::json(&common::run(source, request_yaml))
}

/// Runs an inline `source` against a request given as JSON.
fn run_json(source: &str, request: &Value) -> Value {
    run(source, &request.to_string())
}

/// Runs `function` on a request with a raw `input` (or none).
fn handle(function: &StarlarkFunction, request_yaml: &str, input: Option<Value>) -> Value {
    let mut req = common::request(request_yaml);
    req.input = input.map(|i| common::to_struct(&i));
    common::json(&block_on(function.handle(req)))
}

/// Runs the default function on a request with a raw `input` (or none).
fn run_input(request_yaml: &str, input: Option<Value>) -> Value {
    handle(&common::function(), request_yaml, input)
}

/// A `StarlarkInput` with the given `spec`.
fn input(spec: Value) -> Value {
    json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": spec,
    })
}

/// A function with its own scripts directory, environment and metrics.
fn function_with(
    scripts_dir: impl Into<PathBuf>,
    env: &'static [(&'static str, &'static str)],
    metrics: Metrics,
) -> StarlarkFunction {
    let settings = Settings {
        scripts_dir: scripts_dir.into(),
        env: Box::new(move |k| {
            env.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        }),
    };
    StarlarkFunction::new(
        Arc::new(Runtime::new(Limits::default(), 64)),
        settings,
        metrics,
    )
}

/// The request as protojson, to compare with what the response carries.
fn request_json(request_yaml: &str) -> Value {
    serde_json::to_value(common::request(request_yaml)).expect("requests serialize")
}

fn results(rsp: &Value) -> Vec<Value> {
    rsp["results"].as_array().cloned().unwrap_or_default()
}

/// (severity, message) of every result.
fn result_pairs(rsp: &Value) -> Vec<(String, String)> {
    results(rsp)
        .iter()
        .map(|r| {
            (
                r["severity"].as_str().unwrap_or_default().to_owned(),
                r["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn messages(rsp: &Value, severity: &str) -> Vec<String> {
    result_pairs(rsp)
        .into_iter()
        .filter(|(s, _)| s == severity)
        .map(|(_, m)| m)
        .collect()
}

fn warnings(rsp: &Value) -> Vec<String> {
    messages(rsp, "SEVERITY_WARNING")
}

/// The message of the one and only result, which must be a Fatal one.
fn only_fatal(rsp: &Value) -> String {
    let rs = results(rsp);
    assert_eq!(rs.len(), 1, "exactly one result expected: {rsp:#}");
    assert_eq!(rs[0]["severity"], "SEVERITY_FATAL", "{rsp:#}");
    assert_eq!(rs[0]["target"], "TARGET_COMPOSITE", "{rsp:#}");
    rs[0]["message"].as_str().unwrap_or_default().to_owned()
}

/// The message of the one Fatal result of a failed script.
fn script_error(rsp: &Value) -> String {
    let msg = only_fatal(rsp);
    assert!(msg.starts_with(EXECUTION_FAILED), "{msg}");
    msg
}

/// Asserts the call succeeded and returns the response.
fn ok(rsp: Value) -> Value {
    let pairs = result_pairs(&rsp);
    assert!(
        !pairs.iter().any(|(s, _)| s == "SEVERITY_FATAL"),
        "unexpected fatal: {rsp:#}"
    );
    assert_eq!(
        pairs.last(),
        Some(&("SEVERITY_NORMAL".to_owned(), SUCCESS.to_owned())),
        "{rsp:#}"
    );
    rsp
}

fn resources(rsp: &Value) -> serde_json::Map<String, Value> {
    rsp["desired"]["resources"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

fn names(rsp: &Value) -> Vec<String> {
    resources(rsp).keys().cloned().collect()
}

fn has(rsp: &Value, name: &str) -> bool {
    resources(rsp).contains_key(name)
}

fn body<'a>(rsp: &'a Value, name: &str) -> &'a Value {
    let b = &rsp["desired"]["resources"][name]["resource"];
    assert!(b.is_object(), "no desired resource {name}: {rsp:#}");
    b
}

fn labels<'a>(rsp: &'a Value, name: &str) -> &'a Value {
    &body(rsp, name)["metadata"]["labels"]
}

/// Protojson omits the zero enum value.
fn ready_of(entry: &Value) -> &str {
    entry["ready"].as_str().unwrap_or("READY_UNSPECIFIED")
}

fn resource_ready<'a>(rsp: &'a Value, name: &str) -> &'a str {
    ready_of(&rsp["desired"]["resources"][name])
}

fn composite_ready(rsp: &Value) -> &str {
    ready_of(&rsp["desired"]["composite"])
}

fn conditions(rsp: &Value) -> Vec<Value> {
    rsp["conditions"].as_array().cloned().unwrap_or_default()
}

fn readiness_conditions(rsp: &Value) -> Vec<Value> {
    conditions(rsp)
        .into_iter()
        .filter(|c| c["type"] == "ComposedResourcesReady")
        .collect()
}

fn usages(rsp: &Value) -> Vec<String> {
    names(rsp)
        .into_iter()
        .filter(|n| n.starts_with("usage-"))
        .collect()
}

fn ttl(rsp: &Value) -> Option<&str> {
    rsp["meta"]["ttl"].as_str()
}

fn status(rsp: &Value) -> &Value {
    &rsp["desired"]["composite"]["resource"]["status"]
}

/// An observed resource entry with Ready=True and Synced=True.
fn ready_synced(kind: &str) -> Value {
    json!({"resource": {
        "apiVersion": "v1",
        "kind": kind,
        "status": {"conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "Synced", "status": "True"},
        ]},
    }})
}

/// A request observing `resources` (name → entry).
fn observing(resources: Value) -> Value {
    json!({"observed": {"resources": resources}})
}

/// The value of `name{script="<script>"}` in a text exposition.
fn metric(text: &str, name: &str, script: &str) -> Option<f64> {
    let prefix = format!("{name}{{script=\"{script}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().parse().expect("a number"))
}

fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).expect("metrics encode");
    text
}

// ---------------------------------------------------------------------------
// Input

/// A request without input gets one Fatal result (a source is required) and the
/// default TTL; desired state and context go back as received, with no
/// conditions or requirements.
#[test]
fn a_request_without_input_is_fatal_and_leaves_the_rest_as_received() {
    let yaml = r"
meta: {tag: t1}
desired:
  composite: {resource: {apiVersion: example.org/v1, kind: XR}}
  resources: {prior: {resource: {apiVersion: v1, kind: Prior}}}
context: {my-key: my-value}
";
    let rsp = run_input(yaml, None);
    assert_eq!(only_fatal(&rsp), SOURCE_REQUIRED);
    assert_eq!(ttl(&rsp), Some("60s"));
    let req = request_json(yaml);
    assert_eq!(rsp["desired"], req["desired"]);
    assert_eq!(rsp["context"], req["context"]);
    assert!(rsp.get("conditions").is_none());
    assert!(rsp.get("requirements").is_none());
}

/// An input whose spec is empty fails: a source or a `scriptConfigRef` is
/// required.
#[test]
fn an_input_with_an_empty_spec_needs_a_source() {
    let rsp = run_input("{}", Some(json!({"spec": {}})));
    assert_eq!(only_fatal(&rsp), SOURCE_REQUIRED);
}

/// An input whose spec is a string cannot be decoded.
#[test]
fn an_input_whose_spec_is_a_string_cannot_be_decoded() {
    let rsp = run_input("{}", Some(json!({"spec": "x = 1"})));
    let msg = only_fatal(&rsp);
    assert!(msg.starts_with("cannot get Function input: "), "{msg}");
}

/// An input whose spec has an unknown member cannot be decoded.
#[test]
fn an_input_with_an_unknown_member_cannot_be_decoded() {
    let rsp = run_input("{}", Some(json!({"spec": {"source": "x = 1", "foo": 1}})));
    let msg = only_fatal(&rsp);
    assert!(msg.starts_with("cannot get Function input: "), "{msg}");
}

/// The input's `apiVersion` and `kind` are not checked: any values run the
/// script.
#[test]
fn the_input_api_version_and_kind_are_not_checked() {
    let rsp = run_input(
        "{}",
        Some(json!({"apiVersion": "other/v9", "kind": "Whatever", "spec": {"source": "x = 1"}})),
    );
    assert_eq!(
        result_pairs(&rsp),
        vec![("SEVERITY_NORMAL".to_owned(), SUCCESS.to_owned())]
    );
}

/// The response carries the request's tag after success, a compile error,
/// `fatal()`, a run-time error, a missing input and an undecodable input.
#[test]
fn every_response_carries_the_request_tag() {
    let yaml = "meta: {tag: my-tag-42}";
    for source in ["x = 1", "x = (", "fatal('stop')", "x = {}['k']"] {
        let rsp = run(source, yaml);
        assert_eq!(rsp["meta"]["tag"], "my-tag-42", "{source}: {rsp:#}");
    }
    assert_eq!(run_input(yaml, None)["meta"]["tag"], "my-tag-42");
    assert_eq!(
        run_input(yaml, Some(json!({"spec": "bad"})))["meta"]["tag"],
        "my-tag-42"
    );
}

// ---------------------------------------------------------------------------
// Base response and desired state

/// A trivial script on an empty request gives one Normal success result
/// targeting the composite, an empty context and desired composite, no
/// resources and the default TTL.
#[test]
fn a_trivial_script_on_an_empty_request_yields_the_base_response() {
    let rsp = run("x = 1 + 2", "{}");
    assert_eq!(
        result_pairs(&rsp),
        vec![("SEVERITY_NORMAL".to_owned(), SUCCESS.to_owned())]
    );
    assert_eq!(results(&rsp)[0]["target"], "TARGET_COMPOSITE");
    assert_eq!(rsp["context"], json!({}));
    assert_eq!(rsp["desired"]["composite"]["resource"], json!({}));
    assert!(resources(&rsp).is_empty());
    assert_eq!(ttl(&rsp), Some("60s"));
}

/// Desired resources from earlier steps are returned unchanged; no
/// resource-name label is added to them.
#[test]
fn prior_desired_resources_are_returned_unchanged() {
    let yaml = r"
desired:
  resources:
    bucket: {resource: {apiVersion: s3/v1, kind: Bucket, spec: {region: eu}}, ready: READY_TRUE}
    policy: {resource: {apiVersion: iam/v1, kind: Policy, metadata: {labels: {a: b}}}}
    role: {resource: {apiVersion: iam/v1, kind: Role}}
";
    let rsp = ok(run("x = 1", yaml));
    assert_eq!(
        rsp["desired"]["resources"],
        request_json(yaml)["desired"]["resources"]
    );
    for name in ["bucket", "policy", "role"] {
        assert!(labels(&rsp, name).get(NAME_LABEL).is_none());
    }
}

/// The desired composite from earlier steps is returned as received.
#[test]
fn the_prior_desired_composite_round_trips() {
    let rsp = ok(run(
        "x = 1",
        "desired: {composite: {resource: {apiVersion: example.crossplane.io/v1, kind: XBucket}}}",
    ));
    assert_eq!(
        rsp["desired"]["composite"]["resource"],
        json!({"apiVersion": "example.crossplane.io/v1", "kind": "XBucket"})
    );
}

/// `Resource()` adds the resource-name label to the body and leaves readiness
/// unspecified.
#[test]
fn a_resource_gets_the_resource_name_label_and_unspecified_readiness() {
    let rsp = ok(run("Resource('b', {'apiVersion':'v1','kind':'B'})", "{}"));
    assert_eq!(
        body(&rsp, "b"),
        &json!({"apiVersion": "v1", "kind": "B", "metadata": {"labels": {NAME_LABEL: "b"}}})
    );
    assert_eq!(resource_ready(&rsp, "b"), "READY_UNSPECIFIED");
}

/// `ready=True` and `ready=False` map to `READY_TRUE` and `READY_FALSE`; any
/// other value is a script error.
#[test]
fn the_ready_argument_maps_to_the_ready_enum_and_rejects_other_values() {
    let rsp = ok(run(
        "Resource('t', {'kind':'T'}, ready=True)\nResource('f', {'kind':'F'}, ready=False)",
        "{}",
    ));
    assert_eq!(resource_ready(&rsp, "t"), "READY_TRUE");
    assert_eq!(resource_ready(&rsp, "f"), "READY_FALSE");
    let msg = script_error(&run("Resource('y', {'kind':'Y'}, ready='yes')", "{}"));
    assert!(msg.contains("ready must be True, False, or None"), "{msg}");
}

/// Of several `Resource()` calls with one name, the last one wins.
#[test]
fn the_last_resource_call_with_a_name_wins() {
    let rsp = ok(run(
        "Resource('x', {'kind':'First'})\nResource('x', {'kind':'Second'})",
        "{}",
    ));
    assert_eq!(body(&rsp, "x")["kind"], "Second");
}

/// `Resource()` replaces an earlier step's entry of the same name whole: body,
/// readiness and connection details.
#[test]
fn a_resource_replaces_a_prior_step_entry_completely() {
    let yaml = r"
desired:
  resources:
    x:
      resource: {apiVersion: v1, kind: Old, spec: {old: true}}
      ready: READY_TRUE
      connectionDetails: {k: YS12YWx1ZQ==}
";
    let rsp = ok(run("Resource('x', {'apiVersion':'v1','kind':'New'})", yaml));
    assert_eq!(
        body(&rsp, "x"),
        &json!({"apiVersion": "v1", "kind": "New", "metadata": {"labels": {NAME_LABEL: "x"}}})
    );
    assert_eq!(resource_ready(&rsp, "x"), "READY_UNSPECIFIED");
    let details = &rsp["desired"]["resources"]["x"]["connectionDetails"];
    assert!(
        details.is_null() || details == &json!({}),
        "old connection details kept: {details}"
    );
}

/// `connection_details` values are sent as bytes (base64 in protojson).
#[test]
fn resource_connection_details_are_stored_as_bytes() {
    let rsp = ok(run(
        "Resource('db', {'kind':'DB'}, connection_details={'username':'admin','password':'secret'})",
        "{}",
    ));
    assert_eq!(
        rsp["desired"]["resources"]["db"]["connectionDetails"],
        json!({"username": "YWRtaW4=", "password": "c2VjcmV0"})
    );
}

/// A `connection_details` value that is not a string is a script error.
#[test]
fn resource_connection_details_values_must_be_strings() {
    let msg = script_error(&run(
        "Resource('db', {'kind':'DB'}, connection_details={'port': 5432})",
        "{}",
    ));
    assert!(
        msg.contains("connection_details value must be string"),
        "{msg}"
    );
}

/// `set_connection_details()` writes the desired composite's connection
/// details, not those of the resources.
#[test]
fn xr_connection_details_go_to_the_desired_composite_only() {
    let rsp = ok(run(
        "Resource('db', {'kind':'DB'})\nset_connection_details({'endpoint':'db.example.com','port':'5432'})",
        "{}",
    ));
    let details = &rsp["desired"]["composite"]["connectionDetails"];
    assert_eq!(details["endpoint"], "ZGIuZXhhbXBsZS5jb20=");
    assert_eq!(details["port"], "NTQzMg==");
    let per_resource = &rsp["desired"]["resources"]["db"]["connectionDetails"];
    assert!(
        per_resource.is_null() || per_resource == &json!({}),
        "{per_resource}"
    );
}

/// `set_connection_details()` merges with the composite connection details of
/// earlier steps.
#[test]
fn xr_connection_details_merge_with_those_of_earlier_steps() {
    let rsp = ok(run(
        "set_connection_details({'b':'b-value'})",
        "desired: {composite: {resource: {kind: XR}, connectionDetails: {a: YS12YWx1ZQ==}}}",
    ));
    assert_eq!(
        rsp["desired"]["composite"]["connectionDetails"],
        json!({"a": "YS12YWx1ZQ==", "b": "Yi12YWx1ZQ=="})
    );
}

// ---------------------------------------------------------------------------
// Conversions

/// `None` values in the dicts of a resource body are dropped.
#[test]
fn none_values_are_pruned_from_resource_bodies() {
    let rsp = ok(run(
        "Resource('r', {'apiVersion':'v1','kind':'K','spec':{'x': None, 'y': 1}})",
        "{}",
    ));
    assert_eq!(body(&rsp, "r")["spec"], json!({"y": 1.0}));
}

/// `None` elements of a list are kept, while `None` values of dicts inside
/// lists are dropped.
#[test]
fn none_pruning_keeps_list_elements_and_descends_into_dicts_in_lists() {
    let rsp = ok(run(
        "Resource('r', {'kind':'K','spec':{'items': [None, {'a': None, 'b': 2}]}})",
        "{}",
    ));
    assert_eq!(body(&rsp, "r")["spec"]["items"], json!([null, {"b": 2.0}]));
}

/// A tuple in a resource body is a conversion error.
#[test]
fn a_tuple_in_a_body_cannot_be_converted() {
    let msg = script_error(&run(
        "Resource('r', {'kind':'K','spec':{'t': (1, 2)}})",
        "{}",
    ));
    assert!(
        msg.contains("unsupported starlark type for protobuf conversion: tuple"),
        "{msg}"
    );
}

/// An int above 2^53 in a resource body is a conversion error; 2^53 itself
/// converts. Starlark has no `**`, so both numbers are written out.
#[test]
fn integers_above_two_to_the_53_cannot_be_converted() {
    let msg = script_error(&run(
        "Resource('r', {'kind':'K','n': 9007199254740993})",
        "{}",
    ));
    assert!(
        msg.contains("integer too large for protobuf number"),
        "{msg}"
    );
    let rsp = ok(run(
        "Resource('r', {'kind':'K','n': 9007199254740992})",
        "{}",
    ));
    assert_eq!(body(&rsp, "r")["n"].as_f64(), Some(9_007_199_254_740_992.0));
}

/// A number in the observed XR beyond the int64 range is Fatal while `oxr` is
/// built.
#[test]
fn an_observed_xr_number_beyond_int64_is_fatal() {
    let req = json!({"observed": {"composite": {"resource": {"spec": {"n": 1e19}}}}});
    let msg = only_fatal(&run_json("x = 1", &req));
    assert!(
        msg.starts_with("building Starlark globals: building oxr: "),
        "{msg}"
    );
    assert!(msg.contains("exceeds int64 range"), "{msg}");
}

/// An observed XR whose body is not a valid `Struct` (here a string that is
/// not UTF-8) is Fatal naming `oxr`; what earlier steps desired stays.
#[test]
fn an_observed_xr_body_that_does_not_decode_is_fatal() {
    use prost::Message;
    use prost::encoding::bytes::encode;
    let req = common::with_source(
        common::request(r#"{"desired": {"resources": {"kept": {"resource": {"kind": "K"}}}}}"#),
        "x = 1",
    );
    let mut bytes = req.encode_to_vec();
    // observed { composite { resource { fields { "k": string_value "\xff" } } } }
    let mut value = Vec::new();
    encode(3, &vec![0xff], &mut value);
    let mut entry = Vec::new();
    encode(1, &b"k".to_vec(), &mut entry);
    encode(2, &value, &mut entry);
    let mut message = entry;
    for tag in [1, 1, 1, 2] {
        let mut outer = Vec::new();
        encode(tag, &message, &mut outer);
        message = outer;
    }
    bytes.extend(message);
    let rsp = block_on(common::function().handle_bytes(bytes.into())).expect("an answer");
    let rsp = common::json(
        &function_sdk_rust::proto::v1::RunFunctionResponse::decode(rsp).expect("a response"),
    );
    let msg = only_fatal(&rsp);
    assert!(
        msg.starts_with("building Starlark globals: building oxr: "),
        "{msg}"
    );
    assert!(msg.contains("UTF-8"), "{msg}");
    assert_eq!(body(&rsp, "kept"), &json!({"kind": "K"}));
}

/// A body of an observed (or required) resource that cannot be converted
/// (a whole number beyond int64) does not fail the run: reading from it
/// raises the conversion error, through `[key]`, `in`, attribute access,
/// `.get()`/`.keys()`/`.values()`/`.items()` and the readers of observed
/// and required resources; `len`, iteration and `str` see an empty dict,
/// and `get`, `get_label` and `get_annotation` give their default.
#[test]
fn an_unconvertible_observed_body_fails_only_where_it_is_read() {
    let mut req = observing(json!({"db": {"resource": {"spec": {"n": 1e19}}}}));
    req["requiredResources"] = json!({"cfg": {"items": [{"resource": {"data": {"n": 1e19}}}]}});
    let rsp = ok(run_json(
        r#"
db = observed["db"]
dxr["status"] = {
    "len": len(db), "str": str(db), "truth": bool(db), "keys": [k for k in db],
    "get": get(db, "spec.n", "d"), "label": get_label(db, "x", "d"),
    "first": type(get_extra_resource("cfg")),
}
"#,
        &req,
    ));
    assert_eq!(
        status(&rsp),
        &json!({"len": 0.0, "str": "{}", "truth": false, "keys": [], "get": "d", "label": "d", "first": "dict"})
    );
    for read in [
        "x = observed['db']['spec']",
        "x = observed['db'].spec",
        "x = 'spec' in observed['db']",
        "x = observed['db'].keys()",
        "x = observed['db'].values()",
        "x = observed['db'].items()",
        "x = observed['db'].get('spec')",
        "x = get_observed('db', 'spec.n')",
        "x = get_condition('db', 'Ready')",
        "x = get_extra_resource('cfg', 'data.n')",
        "x = get_extra_resources('cfg', 'data.n')",
    ] {
        let msg = script_error(&run_json(read, &req));
        assert!(msg.contains("exceeds int64 range"), "{read}: {msg}");
    }
    let msg = script_error(&run_json(
        "Resource('db', {'kind': 'K'}, when=When(False, 'r', keep_if_exists=True))",
        &req,
    ));
    assert!(
        msg.contains("Resource(\"db\"): observed lookup \"db\": ")
            && msg.contains("exceeds int64 range"),
        "{msg}"
    );
    // A missing key of a plain dict is not taken for one.
    let msg = script_error(&run_json("x = observed['db']\ny = {}.spec", &req));
    assert!(msg.contains("dict has no .spec field or method"), "{msg}");
}

/// Numbers read through `oxr` are ints when whole and within ±2^53 (65535),
/// and floats otherwise (3.5, 2^54).
#[test]
fn struct_numbers_become_ints_or_floats() {
    let req = json!({"observed": {"composite": {"resource": {"spec": {
        "port": 65535,
        "ratio": 3.5,
        "big": 18_014_398_509_481_984.0_f64,
    }}}}});
    let rsp = ok(run_json(
        "dxr['status'] = {'port': type(oxr.spec.port), 'ratio': type(oxr.spec.ratio), 'big': type(oxr.spec.big)}",
        &req,
    ));
    assert_eq!(
        status(&rsp),
        &json!({"port": "int", "ratio": "float", "big": "float"})
    );
}

// ---------------------------------------------------------------------------
// Globals

/// A missing attribute of `oxr` reads as `None`; a missing key is an error.
#[test]
fn a_missing_attribute_is_none_but_a_missing_key_is_an_error() {
    let yaml = "observed: {composite: {resource: {spec: {a: 1}}}}";
    let rsp = ok(run(
        "dxr['status'] = {'missing': oxr.spec.missing == None}",
        yaml,
    ));
    assert_eq!(status(&rsp)["missing"], true);
    script_error(&run("x = oxr['spec']['missing']", yaml));
}

/// `oxr` cannot be written; `dxr` can, and what is written reaches the desired
/// composite.
#[test]
fn oxr_is_frozen_and_dxr_is_mutable() {
    let yaml = "observed: {composite: {resource: {spec: {a: 1}}}}";
    script_error(&run("oxr['x'] = 1", yaml));
    let rsp = ok(run("dxr['status'] = {'a': 1}", yaml));
    assert_eq!(status(&rsp)["a"], 1.0);
}

/// `None` written into `dxr` is sent as null.
#[test]
fn none_in_dxr_becomes_null() {
    let rsp = ok(run("dxr['status'] = {'a': None}", "{}"));
    assert_eq!(status(&rsp), &json!({"a": null}));
}

/// Observed resources are read by name with attribute access and cannot be
/// written.
#[test]
fn observed_resources_are_readable_by_name_and_frozen() {
    let yaml = "observed: {resources: {bucket: {resource: {spec: {region: eu-west-1}}}}}";
    let rsp = ok(run(
        "dxr['status'] = {'region': observed.bucket.spec.region}",
        yaml,
    ));
    assert_eq!(status(&rsp)["region"], "eu-west-1");
    script_error(&run("observed.bucket.spec['region'] = 'us'", yaml));
}

/// Keys the script adds to `context` are returned together with the request's
/// keys.
#[test]
fn context_keys_added_by_the_script_are_merged() {
    let rsp = ok(run(
        "context['new-key'] = 'new-value'",
        "context: {my-key: my-value}",
    ));
    assert_eq!(
        rsp["context"],
        json!({"my-key": "my-value", "new-key": "new-value"})
    );
}

/// A key the script removes from `context` is still in the response.
#[test]
fn context_keys_removed_by_the_script_stay_in_the_response() {
    let rsp = ok(run("context.pop('my-key')", "context: {my-key: v}"));
    assert_eq!(rsp["context"]["my-key"], "v");
}

/// `environment` reads the environment context key with attribute access;
/// `context` is a plain dict, without attribute access.
#[test]
fn the_environment_is_an_attribute_dict_and_context_a_plain_dict() {
    let yaml = r"
context:
  apiextensions.crossplane.io/environment:
    data: {region: eu-west-1}
";
    let rsp = ok(run(
        "dxr['status'] = {'env': environment.data.region, 'ctx': context['apiextensions.crossplane.io/environment']['data']['region']}",
        yaml,
    ));
    assert_eq!(
        status(&rsp),
        &json!({"env": "eu-west-1", "ctx": "eu-west-1"})
    );
    script_error(&run(
        "x = context['apiextensions.crossplane.io/environment'].data",
        yaml,
    ));
}

/// `environment` is an empty dict when the context has no environment key or
/// its value is not a struct.
#[test]
fn the_environment_is_empty_when_missing_or_not_a_struct() {
    let source = "dxr['status'] = {'n': len(environment), 't': type(environment)}";
    for yaml in [
        "{}",
        "context: {other: 1}",
        "context: {apiextensions.crossplane.io/environment: just-a-string}",
    ] {
        let rsp = ok(run(source, yaml));
        assert_eq!(status(&rsp), &json!({"n": 0.0, "t": "dict"}), "{yaml}");
    }
}

/// `extra_resources` reads required resources by name, and their lists cannot
/// be changed.
#[test]
fn required_resources_are_readable_and_frozen() {
    let yaml = r"
requiredResources:
  my-db: {items: [{resource: {apiVersion: v1, kind: DB, metadata: {name: db-one}}}]}
";
    let rsp = ok(run(
        "dxr['status'] = {'name': extra_resources['my-db'][0].metadata.name}",
        yaml,
    ));
    assert_eq!(status(&rsp)["name"], "db-one");
    script_error(&run("extra_resources['my-db'].append({})", yaml));
}

/// A required resource with no items reads as `None`.
#[test]
fn a_required_resource_without_items_is_none() {
    let rsp = ok(run(
        "dxr['status'] = {'none': extra_resources['x'] == None}",
        "requiredResources: {x: {items: []}}",
    ));
    assert_eq!(status(&rsp)["none"], true);
}

/// The deprecated `extraResources` are read only when the request has no
/// `requiredResources`.
#[test]
fn deprecated_extra_resources_are_used_only_without_required_resources() {
    let source = "dxr['status'] = {'y': len(extra_resources['y']) if 'y' in extra_resources else -1, 'x': 'x' in extra_resources}";
    let rsp = ok(run(
        source,
        "extraResources: {y: {items: [{resource: {kind: Y}}]}}",
    ));
    assert_eq!(status(&rsp), &json!({"y": 1.0, "x": false}));
    let rsp = ok(run(
        source,
        "requiredResources: {x: {items: [{resource: {kind: X}}]}}\nextraResources: {y: {items: [{resource: {kind: Y}}]}}",
    ));
    assert_eq!(status(&rsp), &json!({"y": -1.0, "x": true}));
}

/// `set_xr_status` checks its path first, writes nothing for `None` and
/// says whether it wrote; falsy values are written.
#[test]
fn set_xr_status_skips_none_and_says_whether_it_wrote() {
    let rsp = ok(run(
        r#"
dxr["status"] = {"keep": 1}
results = [set_xr_status("x", None), set_xr_status("a.b", 0), set_xr_status("c", ""), set_xr_status("d.e", None)]
dxr["status"]["results"] = results
"#,
        "{}",
    ));
    assert_eq!(
        status(&rsp),
        &json!({"keep": 1.0, "a": {"b": 0.0}, "c": "", "results": [false, true, true, false]})
    );
    for (path, want) in [
        ("", "set_xr_status: path must not be empty"),
        ("a..b", r#"set_xr_status: malformed path "a..b""#),
    ] {
        let msg = script_error(&run(&format!("set_xr_status({path:?}, None)"), "{}"));
        assert!(msg.contains(want), "{path:?}: {msg}");
    }
}

/// Top-level names may be bound again, in scripts as in the modules they
/// load (the Go function's dialect since 0.11.1).
#[test]
fn top_level_names_may_be_rebound() {
    let rsp = ok(run_input(
        "{}",
        Some(input(json!({
            "source": "load('m.star', 'total')\nx = 1\nx = 2\nx += 1\nfor i in [1]:\n    pass\nfor i in [2]:\n    pass\ndxr['status'] = {'x': x, 'i': i, 'total': total}\n",
            "modules": {"m.star": "total = 1\ntotal += 41\n"},
        }))),
    ));
    assert_eq!(status(&rsp), &json!({"x": 3.0, "i": 2.0, "total": 42.0}));
}

// ---------------------------------------------------------------------------
// Requirements

/// `require_extra_resource()` with `match_name` fills both
/// `requirements.resources` and the deprecated `requirements.extraResources`.
#[test]
fn a_named_requirement_fills_both_requirement_maps() {
    let rsp = ok(run(
        "require_extra_resource('my-db','rds.aws.upbound.io/v1beta1','Instance', match_name='my-database')",
        "{}",
    ));
    let expected = json!({"my-db": {
        "apiVersion": "rds.aws.upbound.io/v1beta1",
        "kind": "Instance",
        "matchName": "my-database",
    }});
    assert_eq!(rsp["requirements"]["resources"], expected);
    assert_eq!(rsp["requirements"]["extraResources"], expected);
}

/// `require_extra_resources()` with `match_labels` selects by labels.
#[test]
fn a_label_requirement_selects_by_labels() {
    let rsp = ok(run(
        "require_extra_resources('subnets','v1','Subnet', match_labels={'net':'main'})",
        "{}",
    ));
    assert_eq!(
        rsp["requirements"]["resources"]["subnets"],
        json!({"apiVersion": "v1", "kind": "Subnet", "matchLabels": {"labels": {"net": "main"}}})
    );
}

/// Given both, `match_name` is used and a warning says that `match_labels` is
/// ignored.
#[test]
fn match_name_takes_precedence_over_match_labels_with_a_warning() {
    let rsp = ok(run(
        "require_extra_resource('db','v1','DB', match_name='main', match_labels={'a':'b'})",
        "{}",
    ));
    assert_eq!(
        rsp["requirements"]["resources"]["db"],
        json!({"apiVersion": "v1", "kind": "DB", "matchName": "main"})
    );
    assert_eq!(
        result_pairs(&rsp),
        vec![
            (
                "SEVERITY_WARNING".to_owned(),
                "require_extra_resource(\"db\"): match_name \"main\" takes precedence; match_labels ignored"
                    .to_owned()
            ),
            ("SEVERITY_NORMAL".to_owned(), SUCCESS.to_owned()),
        ]
    );
}

/// `namespace=` selects in one namespace, in both requirement maps, by name
/// or by labels; an empty one is no namespace, and the selector is as
/// before; `None` is refused as Go refuses it.
#[test]
fn a_namespace_narrows_a_requirement() {
    let rsp = ok(run(
        "require_extra_resource('cm','v1','ConfigMap', match_name='e2e-extra-cm', namespace='e2e-extra-ns-a')\nrequire_extra_resources('cms','v1','ConfigMap', match_labels={'e2e':'true'}, namespace='e2e-extra-ns-a')",
        "{}",
    ));
    for map in ["resources", "extraResources"] {
        assert_eq!(
            rsp["requirements"][map],
            json!({
                "cm": {"apiVersion": "v1", "kind": "ConfigMap", "matchName": "e2e-extra-cm", "namespace": "e2e-extra-ns-a"},
                "cms": {"apiVersion": "v1", "kind": "ConfigMap", "matchLabels": {"labels": {"e2e": "true"}}, "namespace": "e2e-extra-ns-a"},
            }),
            "{map}"
        );
    }
    let plain = ok(run(
        "require_extra_resource('cm','v1','ConfigMap', match_name='x')",
        "{}",
    ));
    let empty = ok(run(
        "require_extra_resource('cm','v1','ConfigMap', match_name='x', namespace='')",
        "{}",
    ));
    assert_eq!(plain, empty);
    for builtin in ["require_extra_resource", "require_extra_resources"] {
        let msg = script_error(&run(
            &format!("{builtin}('cm','v1','ConfigMap', match_labels={{}}, namespace=None)"),
            "{}",
        ));
        assert!(
            msg.contains(&format!(
                "{builtin}: for parameter namespace: got NoneType, want string"
            )),
            "{msg}"
        );
    }
}

/// Without requirements, the response has no `requirements` field.
#[test]
fn without_requirements_the_requirements_field_is_absent() {
    let rsp = ok(run("x = 1", "{}"));
    assert!(rsp.get("requirements").is_none(), "{rsp:#}");
}

// ---------------------------------------------------------------------------
// Conditions and events

/// `set_condition()` emits one condition, targeting the composite.
#[test]
fn set_condition_emits_a_condition() {
    let rsp = ok(run(
        "set_condition('DatabaseReady','True','Available','All databases healthy')",
        "{}",
    ));
    assert_eq!(
        conditions(&rsp),
        vec![json!({
            "type": "DatabaseReady",
            "status": "STATUS_CONDITION_TRUE",
            "reason": "Available",
            "message": "All databases healthy",
            "target": "TARGET_COMPOSITE",
        })]
    );
}

/// Condition status `False` maps to false and an unknown status to unknown; an
/// empty message is omitted.
#[test]
fn condition_status_maps_and_an_empty_message_is_omitted() {
    let rsp = ok(run(
        "set_condition('T','False','R','')\nset_condition('U','Maybe','R','m')",
        "{}",
    ));
    let cs = conditions(&rsp);
    assert_eq!(cs[0]["status"], "STATUS_CONDITION_FALSE");
    assert!(cs[0].get("message").is_none(), "{:#}", cs[0]);
    assert_eq!(cs[1]["status"], "STATUS_CONDITION_UNKNOWN");
}

/// Condition target `CompositeAndClaim` is kept; any other target means the
/// composite.
#[test]
fn condition_targets_other_than_composite_and_claim_mean_composite() {
    let rsp = ok(run(
        "set_condition('A','True','R','m', target='CompositeAndClaim')\nset_condition('B','True','R','m', target='some-resource')",
        "{}",
    ));
    let cs = conditions(&rsp);
    assert_eq!(cs[0]["target"], "TARGET_COMPOSITE_AND_CLAIM");
    assert_eq!(cs[1]["target"], "TARGET_COMPOSITE");
}

/// A script cannot set the `ComposedResourcesReady` condition: the type is
/// reserved for readiness gating.
#[test]
fn the_composed_resources_ready_condition_type_is_reserved() {
    let msg = script_error(&run(
        "set_condition('ComposedResourcesReady','True','R','m')",
        "{}",
    ));
    assert!(
        msg.contains("is reserved for composite-ready gating"),
        "{msg}"
    );
}

/// `emit_event()` results come before the success result.
#[test]
fn events_come_before_the_success_result() {
    let rsp = run(
        "emit_event('Normal','Resource reconciled successfully')",
        "{}",
    );
    assert_eq!(
        result_pairs(&rsp),
        vec![
            (
                "SEVERITY_NORMAL".to_owned(),
                "Resource reconciled successfully".to_owned()
            ),
            ("SEVERITY_NORMAL".to_owned(), SUCCESS.to_owned()),
        ]
    );
}

/// A warning event keeps its target; an unknown severity is a script error.
#[test]
fn warning_events_honour_the_target_and_unknown_severities_fail() {
    let rsp = ok(run(
        "emit_event('Warning','x', target='CompositeAndClaim')",
        "{}",
    ));
    let warning = &results(&rsp)[0];
    assert_eq!(warning["severity"], "SEVERITY_WARNING");
    assert_eq!(warning["message"], "x");
    assert_eq!(warning["target"], "TARGET_COMPOSITE_AND_CLAIM");
    script_error(&run("emit_event('Error','x')", "{}"));
}

// ---------------------------------------------------------------------------
// Failure paths

/// `fatal()` gives one Fatal result with its message and no success result;
/// conditions set before it are kept, while desired state, context and TTL stay
/// as received.
#[test]
fn fatal_keeps_conditions_but_applies_nothing_else() {
    let yaml = r"
desired:
  composite: {resource: {apiVersion: example.org/v1, kind: XR}}
  resources: {prior: {resource: {kind: Prior}}}
context: {my-key: my-value}
";
    let rsp = run(
        r"
set_condition('DatabaseReady','False','Failed','DB check failed')
context['new'] = 'x'
dxr['status'] = {'a': 1}
fatal('cannot proceed: database unavailable')
",
        yaml,
    );
    let rs = results(&rsp);
    assert_eq!(rs[0]["severity"], "SEVERITY_FATAL");
    assert_eq!(rs[0]["message"], "cannot proceed: database unavailable");
    assert!(!result_pairs(&rsp).iter().any(|(_, m)| m == SUCCESS));
    let cs = conditions(&rsp);
    assert!(
        cs.iter().any(|c| c["type"] == "DatabaseReady"
            && c["status"] == "STATUS_CONDITION_FALSE"
            && c["reason"] == "Failed"
            && c["message"] == "DB check failed"),
        "{rsp:#}"
    );
    let req = request_json(yaml);
    assert_eq!(rsp["desired"], req["desired"]);
    assert_eq!(rsp["context"], req["context"]);
    assert_eq!(ttl(&rsp), Some("60s"));
}

/// After `fatal()`, events and requirements are kept, but resources and the TTL
/// the script set are not.
#[test]
fn fatal_keeps_events_and_requirements_but_not_resources_or_ttl() {
    let rsp = run(
        r"
Resource('r', {'kind':'K'})
emit_event('Normal','e')
require_extra_resource('db','v1','DB', match_name='main')
set_response_ttl('5m')
fatal('stop')
",
        "{}",
    );
    assert_eq!(
        result_pairs(&rsp),
        vec![
            ("SEVERITY_FATAL".to_owned(), "stop".to_owned()),
            ("SEVERITY_NORMAL".to_owned(), "e".to_owned()),
        ]
    );
    assert!(
        rsp["requirements"]["resources"].get("db").is_some(),
        "{rsp:#}"
    );
    assert!(
        rsp["requirements"]["extraResources"].get("db").is_some(),
        "{rsp:#}"
    );
    assert!(!has(&rsp, "r"));
    assert_eq!(ttl(&rsp), Some("60s"));
}

/// A compile error is one Fatal result with the compilation-error prefix,
/// naming `composition.star`.
#[test]
fn a_compile_error_is_one_fatal_naming_the_file() {
    let msg = only_fatal(&run("x = (", "{}"));
    assert!(
        msg.starts_with("starlark execution failed: starlark compilation error: "),
        "{msg}"
    );
    assert!(msg.contains("composition.star"), "{msg}");
}

/// A run-time error is one Fatal result with the execution-error prefix;
/// conditions and events set before it are discarded.
#[test]
fn a_runtime_error_is_one_fatal_and_discards_conditions_and_events() {
    let rsp = run(
        "set_condition('A','True','R','m')\nemit_event('Normal','e')\nx = {}['missing_key']",
        "{}",
    );
    let msg = only_fatal(&rsp);
    assert!(
        msg.starts_with("starlark execution failed: starlark execution error: "),
        "{msg}"
    );
    assert!(conditions(&rsp).is_empty(), "{rsp:#}");
}

/// An infinite loop is stopped by the execution limit.
#[test]
fn an_infinite_loop_hits_the_execution_limit() {
    let msg = script_error(&run("while True:\n    pass\n", "{}"));
    assert!(msg.contains("exceeded execution limit"), "{msg}");
}

// ---------------------------------------------------------------------------
// Labels and external names

/// Crossplane sets its own labels on composed resources (the composite's
/// name, the claim's); `Resource()` adds only the resource-name label.
#[test]
fn only_the_resource_name_label_is_added() {
    let rsp = ok(run("Resource('bucket', {'kind':'Bucket'})", XR_WITH_CLAIM));
    assert_eq!(labels(&rsp, "bucket"), &json!({NAME_LABEL: "bucket"}));
    assert!(warnings(&rsp).is_empty(), "{rsp:#}");
}

/// `labels=` is merged into the body's labels, the argument winning, with
/// no warning; a Crossplane label key is a label like any other.
#[test]
fn user_labels_merge_into_the_body_labels() {
    let rsp = ok(run(
        "Resource('bucket', {'kind':'Bucket','metadata':{'labels':{'team':'old','x':'y'}}}, labels={'team':'platform','crossplane.io/composite':'custom'})",
        XR_WITH_CLAIM,
    ));
    assert_eq!(
        labels(&rsp, "bucket"),
        &json!({
            "crossplane.io/composite": "custom",
            "team": "platform",
            "x": "y",
            NAME_LABEL: "bucket",
        })
    );
    assert!(warnings(&rsp).is_empty(), "{rsp:#}");
}

/// `labels={}` and `labels=None` give the same response as no `labels=`.
#[test]
fn empty_and_none_labels_behave_like_omitted_labels() {
    let omitted = ok(run(
        "Resource('bucket', {'kind':'Bucket','metadata':{'labels':{'x':'y'}}})",
        XR_WITH_CLAIM,
    ));
    for labels in ["{}", "None"] {
        let given = run(
            &format!(
                "Resource('bucket', {{'kind':'Bucket','metadata':{{'labels':{{'x':'y'}}}}}}, labels={labels})"
            ),
            XR_WITH_CLAIM,
        );
        assert_eq!(omitted, ok(given), "labels={labels}");
    }
}

/// A label key that is not a string is a script error naming its type.
#[test]
fn label_keys_must_be_strings() {
    let msg = script_error(&run(
        "Resource('bucket', {'kind':'Bucket'}, labels={42:'val'})",
        XR_WITH_CLAIM,
    ));
    assert!(msg.contains("labels key must be string"), "{msg}");
    assert!(msg.contains("int"), "{msg}");
}

/// `external_name=` sets the `crossplane.io/external-name` annotation and warns
/// when it replaces the body's; an empty `external_name` is an error.
#[test]
fn external_name_sets_the_annotation_and_warns_on_override() {
    let rsp = ok(run(
        "Resource('bucket', {'kind':'Bucket','metadata':{'annotations':{'crossplane.io/external-name':'old'}}}, external_name='new')",
        "{}",
    ));
    assert_eq!(
        body(&rsp, "bucket")["metadata"]["annotations"]["crossplane.io/external-name"],
        "new"
    );
    assert_eq!(
        warnings(&rsp),
        vec![r#"Resource "bucket": external_name kwarg "new" overrides annotation "old""#]
    );
    let rsp = ok(run(
        "Resource('bucket', {'kind':'Bucket'}, external_name='new')",
        "{}",
    ));
    assert_eq!(
        body(&rsp, "bucket")["metadata"]["annotations"]["crossplane.io/external-name"],
        "new"
    );
    assert!(warnings(&rsp).is_empty());
    let msg = script_error(&run(
        "Resource('bucket', {'kind':'Bucket'}, external_name='')",
        "{}",
    ));
    assert!(msg.contains("external_name must not be empty"), "{msg}");
}

// ---------------------------------------------------------------------------
// Conditional resources: `when=When(...)`

/// `When(False, ..., keep_if_exists=False)` skips the resource: no desired
/// entry, the composite not ready, a `ComposedResourcesReady` False
/// condition (`PendingConditionalResources`) carrying the reason, and a
/// Warning.
#[test]
fn when_false_skips_and_gates_readiness() {
    let rsp = ok(run(
        "Resource('db-replica', {'kind':'K'}, when=When(False, 'cluster not ready', keep_if_exists=False))",
        "{}",
    ));
    assert!(!has(&rsp, "db-replica"));
    assert_eq!(composite_ready(&rsp), "READY_FALSE");
    assert_eq!(
        conditions(&rsp),
        vec![json!({
            "type": "ComposedResourcesReady",
            "status": "STATUS_CONDITION_FALSE",
            "reason": "PendingConditionalResources",
            "message": "Pending resources: \"db-replica\" (cluster not ready)",
            "target": "TARGET_COMPOSITE_AND_CLAIM",
        })]
    );
    assert_eq!(
        warnings(&rsp),
        vec![r#"Skipping resource "db-replica": cluster not ready"#]
    );
}

/// `When(True, ...)` emits the resource as if there were no gate.
#[test]
fn when_true_emits() {
    let gated = ok(run(
        "Resource('x', {'kind':'K'}, when=When(True, 'r', keep_if_exists=False))",
        "{}",
    ));
    assert_eq!(gated, ok(run("Resource('x', {'kind':'K'})", "{}")));
}

/// An optional skip is announced with a Normal event and holds nothing
/// back.
#[test]
fn an_optional_skip_does_not_gate_readiness() {
    let rsp = ok(run(
        "Resource('backup', {'kind':'K'}, when=When(False, 'backups disabled by spec', keep_if_exists=False, optional=True))",
        "{}",
    ));
    assert!(!has(&rsp, "backup"));
    assert_eq!(composite_ready(&rsp), "READY_UNSPECIFIED");
    assert!(readiness_conditions(&rsp).is_empty(), "{rsp:#}");
    assert_eq!(
        result_pairs(&rsp),
        vec![
            (
                "SEVERITY_NORMAL".to_owned(),
                r#"Skipping optional resource "backup": backups disabled by spec"#.to_owned()
            ),
            ("SEVERITY_NORMAL".to_owned(), SUCCESS.to_owned()),
        ]
    );
}

/// `when=` takes only a `When()`: a bool without the 0.11.0 keywords, a
/// number, a string or `None` is an error that shows the form.
#[test]
fn when_must_be_a_when_value() {
    for (when, ty) in [
        ("False", "bool"),
        ("1", "int"),
        ("'yes'", "string"),
        ("None", "NoneType"),
    ] {
        let msg = script_error(&run(
            &format!("Resource('x', {{'kind':'K'}}, when={when})"),
            "{}",
        ));
        let want = format!(
            r#"Resource("x"): when must be a When() value, e.g. When(True, "reason", keep_if_exists=False), got {ty}"#
        );
        assert!(msg.contains(&want), "when={when}: {msg}");
    }
}

/// `When()` checks its arguments in Go's order, with Go's words.
#[test]
fn when_arguments_are_checked() {
    let cases = [
        (
            "When(1, 'r', keep_if_exists=False)",
            "when: condition must be bool, got int",
        ),
        (
            "When(True, 'r', keep_if_exists=None)",
            "when: keep_if_exists must be bool, got NoneType",
        ),
        (
            "When(True, 'r', False, optional='yes')",
            "when: optional must be bool, got string",
        ),
        (
            "When(True, '', keep_if_exists=False)",
            "when: reason must not be empty",
        ),
        (
            "When(True, 'r')",
            "When: missing argument for keep_if_exists",
        ),
        (
            "When(True, 3, False)",
            "When: for parameter reason: got int, want string",
        ),
        (
            "When(1, '', keep_if_exists=2)",
            "when: condition must be bool, got int",
        ),
    ];
    for (call, want) in cases {
        let msg = script_error(&run(&format!("w = {call}"), "{}"));
        assert!(msg.contains(want), "{call}: {msg}");
    }
}

/// A `When` prints as Go prints it, shows its four arguments, is truthy as
/// its condition and cannot be hashed.
#[test]
fn a_when_value_behaves_as_in_go() {
    let rsp = ok(run(
        r#"
w = When(False, "no users", keep_if_exists=True, optional=True)
dxr["status"] = {
    "str": str(w),
    "type": type(w),
    "dir": dir(w),
    "attrs": [w.condition, w.reason, w.keep_if_exists, w.optional],
    "truth": [bool(w), bool(When(True, "r", False))],
}
"#,
        "{}",
    ));
    assert_eq!(
        rsp["desired"]["composite"]["resource"]["status"],
        json!({
            "str": r#"When(False, "no users", keep_if_exists=True, optional=True)"#,
            "type": "When",
            "dir": ["condition", "keep_if_exists", "optional", "reason"],
            "attrs": [false, "no users", true, true],
            "truth": [false, true],
        })
    );
    let msg = script_error(&run("d = {When(True, 'r', False): 1}", "{}"));
    assert!(msg.contains("unhashable type: When"), "{msg}");
}

/// A `None` body skips the resource with a Warning that points to
/// `keep_if_exists`, and gates readiness.
#[test]
fn a_none_body_skips_and_gates() {
    let rsp = ok(run("Resource('db', None)", "{}"));
    assert!(!has(&rsp, "db"));
    assert_eq!(
        warnings(&rsp),
        vec![
            "Skipping resource \"db\": body is None. If this resource exists, it will be removed from desired state. Use When() with keep_if_exists=True to re-emit the observed body."
        ]
    );
    assert_eq!(composite_ready(&rsp), "READY_FALSE");
    assert_eq!(readiness_conditions(&rsp).len(), 1);
}

/// An observed `db` with server-side metadata and a status.
fn observed_db() -> Value {
    json!({
        "observed": {
            "composite": {"resource": {"metadata": {"name": "xr-abc"}}},
            "resources": {"db": {"resource": {
                "apiVersion": "rds/v1",
                "kind": "Instance",
                "metadata": {
                    "name": "db-1",
                    "namespace": "ns",
                    "labels": {"app": "x"},
                    "annotations": {"note": "y"},
                    "managedFields": [{"manager": "m"}],
                    "resourceVersion": "123",
                    "uid": "u-1",
                    "generation": 4,
                    "creationTimestamp": "2024-01-01T00:00:00Z",
                },
                "spec": {"size": "large"},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            }}},
        }
    })
}

fn preserved_db_body() -> Value {
    json!({
        "apiVersion": "rds/v1",
        "kind": "Instance",
        "metadata": {
            "name": "db-1",
            "namespace": "ns",
            "labels": {"app": "x"},
            "annotations": {"note": "y"},
        },
        "spec": {"size": "large"},
    })
}

/// `keep_if_exists=True` re-emits the observed body instead of the given
/// one, without server-side metadata and status, with unspecified
/// readiness, a Warning and no gating.
#[test]
fn keep_if_exists_re_emits_the_cleaned_observed_body() {
    let rsp = ok(run_json(
        "Resource('db', {'kind':'Ignored'}, when=When(False, 'config unavailable', keep_if_exists=True))",
        &observed_db(),
    ));
    assert_eq!(body(&rsp, "db"), &preserved_db_body());
    assert_eq!(resource_ready(&rsp, "db"), "READY_UNSPECIFIED");
    assert_eq!(
        warnings(&rsp),
        vec![r#"Preserving resource "db": observed body emitted, gated by when=False"#]
    );
    assert!(conditions(&rsp).is_empty(), "{rsp:#}");
    assert_eq!(composite_ready(&rsp), "READY_UNSPECIFIED");
}

/// `keep_if_exists=True` with nothing observed skips with the gate's
/// reason: gating, or optional when the gate says so.
#[test]
fn keep_if_exists_without_an_observed_body_skips() {
    let rsp = ok(run(
        "Resource('db', None, when=When(False, 'config unavailable', keep_if_exists=True))",
        "{}",
    ));
    assert!(!has(&rsp, "db"));
    assert_eq!(
        warnings(&rsp),
        vec![r#"Skipping resource "db": config unavailable"#]
    );
    assert_eq!(composite_ready(&rsp), "READY_FALSE");
    let rsp = ok(run(
        "Resource('db', None, when=When(False, 'config unavailable', keep_if_exists=True, optional=True))",
        "{}",
    ));
    assert_eq!(composite_ready(&rsp), "READY_UNSPECIFIED");
    assert!(warnings(&rsp).is_empty(), "{rsp:#}");
}

/// The spec's transitive skip: `app` depends on `db`, which waits for the
/// cluster; both are pending, in one condition.
#[test]
fn depending_on_a_skipped_resource_skips_transitively() {
    let rsp = ok(run(
        r#"
cluster_ready = False
body = {"apiVersion": "v1", "kind": "ConfigMap"}
db = Resource("db", body, when=When(cluster_ready, "cluster pending", keep_if_exists=False))
Resource("app", body, depends_on=[db])
"#,
        "{}",
    ));
    assert!(!has(&rsp, "app") && !has(&rsp, "db"), "{rsp:#}");
    assert_eq!(composite_ready(&rsp), "READY_FALSE");
    let cs = readiness_conditions(&rsp);
    assert_eq!(cs.len(), 1, "{rsp:#}");
    assert_eq!(cs[0]["reason"], "PendingConditionalResources");
    assert_eq!(
        cs[0]["message"],
        r#"Pending resources: "db" (cluster pending); "app" (depends on skipped "db")"#
    );
    assert!(usages(&rsp).is_empty());
}

/// Every skip propagates, an optional one too, bare or in a field-path
/// pair; the dependent's skip holds the XR back. `None` is still ignored.
#[test]
fn an_optional_skip_skips_its_dependents_too() {
    for dependency in ["up", "(up, 'status.id')"] {
        let rsp = ok(run(
            &format!(
                "up = Resource('up', {{'kind':'U'}}, when=When(False, 'off', keep_if_exists=False, optional=True))\nResource('down', {{'kind':'D'}}, depends_on=[{dependency}, None])"
            ),
            "{}",
        ));
        assert!(!has(&rsp, "down"), "{dependency}: {rsp:#}");
        assert_eq!(composite_ready(&rsp), "READY_FALSE", "{dependency}");
        assert_eq!(
            readiness_conditions(&rsp)[0]["message"],
            r#"Pending resources: "down" (depends on skipped "up")"#
        );
    }
}

/// A `SkippedRef` of a `When()` skip has only a name, and is falsy.
#[test]
fn a_skipped_ref_has_a_name_only() {
    let rsp = ok(run(
        "s = Resource('gone', None)\ndxr['status'] = {'dir': dir(s), 'name': s.name, 'truth': bool(s), 'type': type(s)}",
        "{}",
    ));
    assert_eq!(
        rsp["desired"]["composite"]["resource"]["status"],
        json!({"dir": ["name"], "name": "gone", "truth": false, "type": "SkippedRef"})
    );
}

// ---------------------------------------------------------------------------
// Conditional resources: the 0.11.0 keywords still work, with one Warning

/// The Warning a script written with the 0.11.0 gating keywords gets.
fn legacy(name: &str, keywords: &str, replacement: &str) -> String {
    format!(
        "Resource({name:?}) gates with the keywords of function-starlark 0.11.0 ({keywords}): {replacement}"
    )
}

/// `when=False, skip_reason=` skips and gates as in 0.11.0, plus the
/// Warning naming the `When()` that replaces it.
#[test]
fn a_legacy_when_false_skips_and_gates_readiness() {
    let rsp = ok(run(
        "Resource('db-replica', None, when=False, skip_reason='cluster not ready')",
        "{}",
    ));
    assert!(!has(&rsp, "db-replica"));
    assert_eq!(composite_ready(&rsp), "READY_FALSE");
    assert_eq!(
        readiness_conditions(&rsp)[0]["message"],
        "Pending resources: \"db-replica\" (cluster not ready)"
    );
    assert_eq!(
        warnings(&rsp),
        vec![
            r#"Skipping resource "db-replica": cluster not ready"#.to_owned(),
            legacy(
                "db-replica",
                "when=False, skip_reason=",
                r#"write when=When(False, "cluster not ready", keep_if_exists=False) instead"#
            ),
        ]
    );
}

/// A legacy `optional=True` skip warns as 0.11.0 did, does not gate, and
/// holds no dependent back; its `SkippedRef` still has `.optional`.
#[test]
fn a_legacy_optional_skip_does_not_gate_readiness_or_dependents() {
    let rsp = ok(run(
        "up = Resource('up', None, when=False, skip_reason='off', optional=True)\nResource('down', {'kind':'D'}, depends_on=[up, None])\ndxr['status'] = {'optional': up.optional, 'dir': dir(up)}",
        "{}",
    ));
    assert!(has(&rsp, "down"));
    assert!(usages(&rsp).is_empty(), "{rsp:#}");
    assert!(conditions(&rsp).is_empty(), "{rsp:#}");
    assert_eq!(composite_ready(&rsp), "READY_UNSPECIFIED");
    assert_eq!(
        rsp["desired"]["composite"]["resource"]["status"],
        json!({"optional": true, "dir": ["name", "optional"]})
    );
    assert_eq!(
        warnings(&rsp),
        vec![
            r#"Skipping resource "up": off"#.to_owned(),
            legacy(
                "up",
                "when=False, skip_reason=, optional=",
                r#"write when=When(False, "off", keep_if_exists=False, optional=True) instead"#
            ),
        ]
    );
}

/// The one Warning counts the calls after the first.
#[test]
fn the_legacy_warning_is_one_for_the_whole_script() {
    let rsp = ok(run(
        "Resource('a', None, when=False, skip_reason='r')\nResource('b', None, when=False, skip_reason='r')\nResource('c', {'kind':'K'}, when=True)",
        "{}",
    ));
    let ws = warnings(&rsp);
    assert_eq!(ws.len(), 3, "{ws:?}");
    assert_eq!(
        ws[2],
        legacy(
            "a",
            "when=False, skip_reason=",
            r#"write when=When(False, "r", keep_if_exists=False) instead; 2 more Resource() calls in this script use those keywords"#
        )
    );
    assert!(has(&rsp, "c"));
}

/// A legacy bool `when` must still be a bool next to the keywords.
#[test]
fn a_legacy_when_must_be_a_bool() {
    for when in ["1", "'yes'", "None"] {
        let msg = script_error(&run(
            &format!("Resource('x', {{'kind':'K'}}, when={when}, skip_reason='r')"),
            "{}",
        ));
        assert!(msg.contains("when must be bool"), "when={when}: {msg}");
    }
}

/// `skip_reason` without `when` is accepted and ignored, as in 0.11.0:
/// the resource is emitted; the Warning says to drop it.
#[test]
fn a_skip_reason_without_when_is_accepted_and_ignored() {
    let rsp = ok(run("Resource('x', {'kind':'K'}, skip_reason='r')", "{}"));
    assert!(has(&rsp, "x"));
    assert_eq!(
        warnings(&rsp),
        vec![legacy(
            "x",
            "skip_reason=",
            "drop them: without when=False and with a body they change nothing"
        )]
    );
}

/// A `None` body with `preserve_observed=True` re-emits the observed body
/// as 0.11.0 did.
#[test]
fn preserve_observed_re_emits_the_cleaned_observed_body() {
    let rsp = ok(run_json(
        "Resource('db', None, preserve_observed=True)",
        &observed_db(),
    ));
    assert_eq!(body(&rsp, "db"), &preserved_db_body());
    assert_eq!(resource_ready(&rsp, "db"), "READY_UNSPECIFIED");
    assert_eq!(
        warnings(&rsp),
        vec![
            r#"Preserving resource "db": body=None, emitting observed body"#.to_owned(),
            legacy(
                "db",
                "preserve_observed=",
                r#"write when=When(body != None, "why it is skipped", keep_if_exists=True) instead"#
            ),
        ]
    );
    assert!(conditions(&rsp).is_empty(), "{rsp:#}");
    assert_eq!(composite_ready(&rsp), "READY_UNSPECIFIED");
}

/// `preserve_observed=True` with nothing observed skips the resource with a
/// warning and gates readiness.
#[test]
fn preserve_observed_without_an_observed_body_skips_and_gates() {
    let rsp = ok(run("Resource('db', None, preserve_observed=True)", "{}"));
    assert!(!has(&rsp, "db"));
    assert_eq!(
        warnings(&rsp)[0],
        r#"Skipping resource "db": not found in observed state"#
    );
    assert_eq!(composite_ready(&rsp), "READY_FALSE");
    assert_eq!(
        readiness_conditions(&rsp)[0]["message"],
        "Pending resources: \"db\" (not found in observed state)"
    );
}

/// `when=False` with `preserve_observed=True` emits the observed body
/// instead of the given one; with nothing observed it skips, saying why
/// or giving the `skip_reason`.
#[test]
fn when_false_with_preserve_observed() {
    let rsp = ok(run_json(
        "Resource('db', {'kind':'Ignored'}, when=False, preserve_observed=True)",
        &observed_db(),
    ));
    assert_eq!(body(&rsp, "db"), &preserved_db_body());
    assert_eq!(
        warnings(&rsp)[0],
        r#"Preserving resource "db": observed body emitted, gated by when=False"#
    );
    let rsp = ok(run(
        "Resource('db', {'kind':'K'}, when=False, preserve_observed=True)",
        "{}",
    ));
    assert!(!has(&rsp, "db"));
    assert_eq!(
        warnings(&rsp)[0],
        r#"Skipping resource "db": gated by when=False, not found in observed state (preserve_observed=True)"#
    );
    let rsp = ok(run(
        "Resource('db', {'kind':'K'}, when=False, preserve_observed=True, skip_reason='feature disabled')",
        "{}",
    ));
    assert_eq!(
        warnings(&rsp)[0],
        r#"Skipping resource "db": feature disabled"#
    );
}

/// `skip_reason=` and `preserve_observed=` do not mix with `When()`: both
/// generations refuse such a call.
#[test]
fn when_and_the_legacy_keywords_do_not_mix() {
    for keyword in ["skip_reason='r'", "preserve_observed=True"] {
        let msg = script_error(&run(
            &format!(
                "Resource('x', {{'kind':'K'}}, when=When(False, 'r', keep_if_exists=False), {keyword})"
            ),
            "{}",
        ));
        assert!(
            msg.contains(r#"Resource("x"): when=When(...) replaces skip_reason=, preserve_observed= and optional=: drop them (optional= goes into When())"#),
            "{keyword}: {msg}"
        );
    }
}

/// An unknown keyword is refused as go.starlark.net refuses it.
#[test]
fn an_unknown_keyword_is_refused_in_gos_words() {
    let msg = script_error(&run("Resource('x', {'kind':'K'}, bogus=1)", "{}"));
    assert!(
        msg.contains(r#"Resource: unexpected keyword argument "bogus""#),
        "{msg}"
    );
}

/// `optional=` beside `when=When(...)`, which the Go function accepted
/// while `When()` had no `optional`, is the gate's: the skip is optional
/// (and, as every skip now, holds its dependents back), with the one
/// Warning naming the `When()` that says it.
#[test]
fn optional_beside_when_is_the_gates() {
    let rsp = ok(run(
        "up = Resource('up', {'kind':'U'}, when=When(False, 'off', keep_if_exists=False), optional=True)\nResource('down', {'kind':'D'}, depends_on=[up])",
        "{}",
    ));
    assert!(!has(&rsp, "up") && !has(&rsp, "down"), "{rsp:#}");
    assert_eq!(
        result_pairs(&rsp),
        vec![
            (
                "SEVERITY_NORMAL".to_owned(),
                r#"Skipping optional resource "up": off"#.to_owned()
            ),
            (
                "SEVERITY_WARNING".to_owned(),
                r#"Skipping resource "down": depends on skipped "up""#.to_owned()
            ),
            (
                "SEVERITY_WARNING".to_owned(),
                legacy(
                    "up",
                    "optional=",
                    r#"write when=When(False, "off", keep_if_exists=False, optional=True) instead"#
                )
            ),
            ("SEVERITY_NORMAL".to_owned(), SUCCESS.to_owned()),
        ]
    );
    assert_eq!(
        readiness_conditions(&rsp)[0]["message"],
        r#"Pending resources: "down" (depends on skipped "up")"#
    );
}

// ---------------------------------------------------------------------------
// Dependencies

/// Malformed `depends_on` elements are errors: a tuple whose first element is
/// not a reference, a number, a one-element tuple, an empty field path.
#[test]
fn malformed_depends_on_elements_are_rejected() {
    let cases = [
        (
            "Resource('x', {'kind':'K'}, depends_on=[(None, 'x.y')])",
            "tuple first element must be ResourceRef, SkippedRef, or string",
        ),
        (
            "Resource('x', {'kind':'K'}, depends_on=[42])",
            "depends_on[0]",
        ),
        (
            "ref = Resource('up', {'kind':'U'})\nResource('x', {'kind':'K'}, depends_on=[(ref,)])",
            "exactly 2 elements",
        ),
        (
            "ref = Resource('up', {'kind':'U'})\nResource('x', {'kind':'K'}, depends_on=[(ref, '')])",
            "field path must not be empty",
        ),
    ];
    for (source, fragment) in cases {
        let msg = script_error(&run(source, "{}"));
        assert!(msg.contains(fragment), "{source}: {msg}");
    }
}

/// An empty `depends_on` records nothing: only the success result, no Usage,
/// the default TTL.
#[test]
fn an_empty_depends_on_records_nothing() {
    let rsp = run("Resource('x', {'kind':'K'}, depends_on=[])", "{}");
    assert_eq!(
        result_pairs(&rsp),
        vec![("SEVERITY_NORMAL".to_owned(), SUCCESS.to_owned())]
    );
    assert!(usages(&rsp).is_empty());
    assert_eq!(ttl(&rsp), Some("60s"));
}

/// The Usage protecting `db` while `app` exists. It has no `metadata`:
/// Crossplane names it after the composite.
fn usage_body(api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "spec": {
            "replayDeletion": true,
            "of": {
                "apiVersion": "v1",
                "kind": "Database",
                "resourceSelector": {"matchControllerRef": true, "matchLabels": {NAME_LABEL: "db"}},
            },
            "by": {
                "apiVersion": "v1",
                "kind": "App",
                "resourceSelector": {"matchControllerRef": true, "matchLabels": {NAME_LABEL: "app"}},
            },
        },
    })
}

/// A dependency observed Ready and Synced lets both resources through with a
/// ready Usage (`protection.crossplane.io/v1beta1`), no TTL and no sequencing
/// warning.
#[test]
fn a_satisfied_dependency_emits_both_resources_and_a_usage() {
    let rsp = ok(run_json(
        DB_APP,
        &observing(json!({"db": ready_synced("Database")})),
    ));
    assert!(has(&rsp, "db") && has(&rsp, "app"), "{rsp:#}");
    assert_eq!(
        body(&rsp, "usage-c2727553"),
        &usage_body("protection.crossplane.io/v1beta1", "ClusterUsage")
    );
    assert_eq!(resource_ready(&rsp, "usage-c2727553"), "READY_TRUE");
    assert_eq!(ttl(&rsp), None);
    assert!(
        !warnings(&rsp)
            .iter()
            .any(|w| w.starts_with("Creation sequencing")),
        "{rsp:#}"
    );
}

/// The Usage `apiVersion` follows `usageAPIVersion` (`v1` gives
/// `apiextensions.crossplane.io/v1beta1`, an unknown value the default
/// `protection.crossplane.io/v1beta1`) and, when that is empty,
/// `STARLARK_USAGE_API_VERSION`.
#[test]
fn the_usage_api_version_follows_the_spec_then_the_environment() {
    let req = observing(json!({"db": ready_synced("Database")})).to_string();
    let env_v1: &'static [(&str, &str)] = &[("STARLARK_USAGE_API_VERSION", "v1")];
    let f = function_with("/scripts", env_v1, Metrics::default());
    let plain = common::function();
    let cases = [
        (&plain, "v1", "apiextensions.crossplane.io/v1beta1", "Usage"),
        (
            &f,
            "garbage",
            "protection.crossplane.io/v1beta1",
            "ClusterUsage",
        ),
        (&f, "", "apiextensions.crossplane.io/v1beta1", "Usage"),
    ];
    for (function, selector, want, kind) in cases {
        let rsp = ok(handle(
            function,
            &req,
            Some(input(
                json!({"source": DB_APP, "usageAPIVersion": selector}),
            )),
        ));
        assert_eq!(
            body(&rsp, "usage-c2727553"),
            &usage_body(want, kind),
            "usageAPIVersion={selector:?}"
        );
    }
}

/// On the v2 API a namespaced composite's resources are protected by a
/// `Usage`, a cluster-scoped one's by a `ClusterUsage`; the v1 API has one
/// kind.
#[test]
fn the_usage_kind_follows_the_composites_scope() {
    let mut req = observing(json!({"db": ready_synced("Database")}));
    req["observed"]["composite"] =
        json!({"resource": {"metadata": {"name": "x", "namespace": "team-a"}}});
    for (selector, want, kind) in [
        ("v2", "protection.crossplane.io/v1beta1", "Usage"),
        ("v1", "apiextensions.crossplane.io/v1beta1", "Usage"),
    ] {
        let rsp = ok(handle(
            &common::function(),
            &req.to_string(),
            Some(input(
                json!({"source": DB_APP, "usageAPIVersion": selector}),
            )),
        ));
        assert_eq!(
            body(&rsp, "usage-c2727553"),
            &usage_body(want, kind),
            "usageAPIVersion={selector:?}"
        );
    }
}

/// A dependency not observed yet defers the dependent: the dependency and the
/// Usage are emitted, the dependent is not; a sequencing warning, a 10s TTL,
/// the composite not ready with a `WaitingForDependencies` condition, and no
/// `Synced` condition.
#[test]
fn an_unobserved_dependency_defers_the_dependent() {
    let rsp = ok(run(DB_APP, "{}"));
    assert!(has(&rsp, "db") && has(&rsp, "usage-c2727553"), "{rsp:#}");
    assert!(!has(&rsp, "app"));
    assert_eq!(
        warnings(&rsp),
        vec!["Creation sequencing: 1 resource(s) deferred: app"]
    );
    assert_eq!(ttl(&rsp), Some("10s"));
    assert_eq!(composite_ready(&rsp), "READY_FALSE");
    assert_eq!(
        conditions(&rsp),
        vec![json!({
            "type": "ComposedResourcesReady",
            "status": "STATUS_CONDITION_FALSE",
            "reason": "WaitingForDependencies",
            "message": "Waiting on dependencies: \"app\" (\"db\" to be observed)",
            "target": "TARGET_COMPOSITE_AND_CLAIM",
        })]
    );
    assert!(!conditions(&rsp).iter().any(|c| c["type"] == "Synced"));
}

/// A dependency observed without Ready and Synced conditions still defers the
/// dependent; the condition says what it waits for.
#[test]
fn an_observed_dependency_without_conditions_still_defers() {
    let rsp = ok(run_json(
        DB_APP,
        &observing(json!({"db": {"resource": {"kind": "Database"}}})),
    ));
    assert!(!has(&rsp, "app"));
    let msg = readiness_conditions(&rsp)[0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        msg.contains(r#""db" to have Ready=True; "db" to have Synced=True"#),
        "{msg}"
    );
}

/// A dependent that is already observed is never deferred.
#[test]
fn an_already_observed_dependent_is_never_deferred() {
    let rsp = ok(run_json(
        DB_APP,
        &observing(json!({"app": {"resource": {"kind": "App"}}})),
    ));
    assert!(has(&rsp, "app") && has(&rsp, "db"), "{rsp:#}");
    assert!(
        !warnings(&rsp)
            .iter()
            .any(|w| w.starts_with("Creation sequencing")),
        "{rsp:#}"
    );
    assert_eq!(
        readiness_conditions(&rsp),
        vec![json!({
            "type": "ComposedResourcesReady",
            "status": "STATUS_CONDITION_TRUE",
            "reason": "AllReady",
            "message": "All sequenced dependencies are ready",
            "target": "TARGET_COMPOSITE_AND_CLAIM",
        })]
    );
    assert_eq!(composite_ready(&rsp), "READY_UNSPECIFIED");
}

/// A provider-kubernetes `Object` is ready when every condition of the
/// object it manages is `True`; while that object reports none, the
/// `Object`'s own `Ready` and `Synced` decide.
#[test]
fn a_kubernetes_object_dependency_waits_for_its_manifests_conditions() {
    let source = "cfg = Resource('cfg', {'apiVersion': 'kubernetes.crossplane.io/v1alpha2', 'kind': 'Object'})\nResource('app', {'apiVersion': 'v1', 'kind': 'App'}, depends_on=[cfg])";
    let object = |nested: Value| {
        observing(json!({"cfg": {"resource": {
            "apiVersion": "kubernetes.crossplane.io/v1alpha2",
            "kind": "Object",
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "True"}],
                "atProvider": {"manifest": {"status": {"conditions": nested}}},
            },
        }}}))
    };
    let all_true =
        json!([{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}]);
    let rsp = ok(run_json(source, &object(all_true)));
    assert!(has(&rsp, "app"), "{rsp:#}");
    let one_false = json!([{"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}]);
    let rsp = ok(run_json(source, &object(one_false)));
    assert!(!has(&rsp, "app"), "{rsp:#}");
    assert_eq!(
        readiness_conditions(&rsp)[0]["message"],
        r#"Waiting on dependencies: "app" ("cfg" nested resource conditions not all True)"#
    );
    let not_a_dict = json!(["True"]);
    assert!(!has(&ok(run_json(source, &object(not_a_dict))), "app"));
    // No nested conditions: the Object's own Ready=True and Synced=True.
    let rsp = ok(run_json(source, &object(json!([]))));
    assert!(has(&rsp, "app"), "{rsp:#}");
}

/// `sequencingTTL` sets the TTL while resources are deferred.
#[test]
fn the_sequencing_ttl_applies_to_deferrals() {
    let rsp = ok(run_input(
        "{}",
        Some(input(json!({"source": DB_APP, "sequencingTTL": "30s"}))),
    ));
    assert!(!has(&rsp, "app"));
    assert_eq!(ttl(&rsp), Some("30s"));
}

/// An invalid `sequencingTTL` is Fatal only when the script has dependencies
/// (the Usage stays in the desired resources, no conditions, the default TTL);
/// without dependencies the script runs normally.
#[test]
fn an_invalid_sequencing_ttl_fails_only_with_dependencies() {
    let rsp = run_input(
        "{}",
        Some(input(json!({"source": DB_APP, "sequencingTTL": "invalid"}))),
    );
    let fatals = messages(&rsp, "SEVERITY_FATAL");
    assert!(
        fatals
            .iter()
            .any(|m| m.contains("invalid spec.sequencingTTL")),
        "{rsp:#}"
    );
    assert!(has(&rsp, "usage-c2727553"), "{rsp:#}");
    assert!(conditions(&rsp).is_empty(), "{rsp:#}");
    assert_eq!(ttl(&rsp), Some("60s"));
    ok(run_input(
        "{}",
        Some(input(
            json!({"source": "Resource('x', {'kind':'K'})", "sequencingTTL": "invalid"}),
        )),
    ));
}

/// A chain of dependencies lets one more level through per reconciliation, as
/// each level becomes ready; once all are emitted no TTL is set.
#[test]
fn a_dependency_chain_resolves_one_level_per_reconciliation() {
    let source = r"
a = Resource('a', {'kind':'A'})
b = Resource('b', {'kind':'B'}, depends_on=[a])
Resource('c', {'kind':'C'}, depends_on=[b])
";
    let emitted = |rsp: &Value| -> Vec<String> {
        ["a", "b", "c"]
            .into_iter()
            .filter(|n| has(rsp, n))
            .map(str::to_owned)
            .collect()
    };
    let rsp = ok(run(source, "{}"));
    assert_eq!(emitted(&rsp), ["a"]);
    let rsp = ok(run_json(
        source,
        &observing(json!({"a": ready_synced("A")})),
    ));
    assert_eq!(emitted(&rsp), ["a", "b"]);
    let rsp = ok(run_json(
        source,
        &observing(json!({"a": ready_synced("A"), "b": ready_synced("B")})),
    ));
    assert_eq!(emitted(&rsp), ["a", "b", "c"]);
    assert_eq!(ttl(&rsp), None);
}

/// A field-path dependency waits until the field is truthy: an empty string, 0,
/// false, null or a missing field defers the dependent with a condition naming
/// the field; a string, a number, true, `{}` or `[]` lets it through.
#[test]
fn a_field_path_dependency_waits_for_a_truthy_field() {
    let source = r"
group = Resource('group', {'kind':'Group'})
Resource('app', {'kind':'App'}, depends_on=[(group, 'status.atProvider.id')])
";
    let observed_with = |id: Option<Value>| {
        let at_provider = match id {
            Some(v) => json!({"id": v}),
            None => json!({}),
        };
        observing(json!({"group": {"resource": {
            "kind": "Group",
            "status": {"atProvider": at_provider},
        }}}))
    };
    let falsy = [
        Some(json!("")),
        Some(json!(0)),
        Some(json!(false)),
        Some(Value::Null),
        None,
    ];
    for id in falsy {
        let rsp = ok(run_json(source, &observed_with(id.clone())));
        assert!(!has(&rsp, "app"), "id={id:?}: {rsp:#}");
        let msg = readiness_conditions(&rsp)[0]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            msg.contains(r#""group" field "status.atProvider.id" to be ready"#),
            "id={id:?}: {msg}"
        );
    }
    for id in [json!("abc"), json!(42), json!(true), json!({}), json!([])] {
        let rsp = ok(run_json(source, &observed_with(Some(id.clone()))));
        assert!(has(&rsp, "app"), "id={id}: {rsp:#}");
    }
}

/// A string dependency that names no resource of the script warns, makes a
/// Usage that selects by the resource-name label alone, and defers the
/// dependent until a resource of that name is observed ready.
#[test]
fn an_unmatched_string_dependency_warns_and_waits_for_the_name() {
    let source = "Resource('app', {'apiVersion':'v1','kind':'App'}, depends_on=['external-vpc'])";
    let rsp = ok(run(source, "{}"));
    let ws = warnings(&rsp);
    assert!(
        ws.iter().any(|w| w.contains("external-vpc")
            && w.contains("string ref")
            && w.contains("does not match")),
        "{ws:?}"
    );
    let of = &body(&rsp, "usage-76593d19")["spec"]["of"];
    assert!(
        of.get("apiVersion").is_none() && of.get("kind").is_none(),
        "{of}"
    );
    assert_eq!(
        of["resourceSelector"]["matchLabels"][NAME_LABEL],
        "external-vpc"
    );
    assert!(!has(&rsp, "app"));
    let rsp = ok(run_json(
        source,
        &observing(json!({"external-vpc": ready_synced("VPC")})),
    ));
    assert!(has(&rsp, "app"), "{rsp:#}");
}

/// Circular dependencies are Fatal, naming the cycle.
#[test]
fn circular_dependencies_are_fatal() {
    let msg = only_fatal(&run(
        "Resource('a', {'kind':'A'}, depends_on=['b'])\nResource('b', {'kind':'B'}, depends_on=['a'])",
        "{}",
    ));
    for fragment in [
        "dependency validation failed",
        "circular dependency detected",
        "a -> b -> a",
    ] {
        assert!(msg.contains(fragment), "{msg}");
    }
}

// ---------------------------------------------------------------------------
// Readiness

/// Skips and deferrals together give one `ComposedResourcesReady` condition
/// (`CompositeNotReady`) that lists both.
#[test]
fn skips_and_deferrals_together_give_one_composite_not_ready_condition() {
    let source = format!("Resource('s', None, when=False, skip_reason='off'){DB_APP}");
    let rsp = ok(run(&source, "{}"));
    assert_eq!(
        readiness_conditions(&rsp),
        vec![json!({
            "type": "ComposedResourcesReady",
            "status": "STATUS_CONDITION_FALSE",
            "reason": "CompositeNotReady",
            "message": "Pending resources: \"s\" (off); Waiting on dependencies: \"app\" (\"db\" to be observed)",
            "target": "TARGET_COMPOSITE_AND_CLAIM",
        })]
    );
}

/// `set_composite_ready(True)` overrides skips and deferrals: the composite is
/// ready and there is no readiness condition.
#[test]
fn an_explicit_ready_override_beats_skips_and_deferrals() {
    let source = format!(
        "Resource('s', None, when=False, skip_reason='off'){DB_APP}set_composite_ready(True)\n"
    );
    let rsp = ok(run(&source, "{}"));
    assert!(!has(&rsp, "app"), "a deferral is expected: {rsp:#}");
    assert_eq!(composite_ready(&rsp), "READY_TRUE");
    assert!(readiness_conditions(&rsp).is_empty(), "{rsp:#}");
}

/// `set_composite_ready(False)` adds a condition only when given a reason; a
/// later `set_composite_ready(True)` removes it.
#[test]
fn set_composite_ready_false_adds_a_condition_only_with_a_reason() {
    let rsp = ok(run(
        "set_composite_ready(False, reason='WaitingForCluster', message='cluster still provisioning')",
        "{}",
    ));
    assert_eq!(composite_ready(&rsp), "READY_FALSE");
    assert_eq!(
        conditions(&rsp),
        vec![json!({
            "type": "ComposedResourcesReady",
            "status": "STATUS_CONDITION_FALSE",
            "reason": "WaitingForCluster",
            "message": "cluster still provisioning",
            "target": "TARGET_COMPOSITE_AND_CLAIM",
        })]
    );
    for source in [
        "set_composite_ready(False)",
        "set_composite_ready(False, message='m')",
    ] {
        let rsp = ok(run(source, "{}"));
        assert_eq!(composite_ready(&rsp), "READY_FALSE", "{source}");
        assert!(conditions(&rsp).is_empty(), "{source}: {rsp:#}");
    }
    let rsp = ok(run(
        "set_composite_ready(False, reason='R')\nset_composite_ready(True)",
        "{}",
    ));
    assert_eq!(composite_ready(&rsp), "READY_TRUE");
    assert!(conditions(&rsp).is_empty(), "{rsp:#}");
}

/// The readiness condition comes after the conditions the script set.
#[test]
fn the_readiness_condition_comes_after_script_conditions() {
    let rsp = ok(run(
        "set_condition('A','True','R','m')\nResource('s', None, when=False, skip_reason='off')\nset_condition('B','True','R','m')",
        "{}",
    ));
    let types: Vec<Value> = conditions(&rsp).iter().map(|c| c["type"].clone()).collect();
    assert_eq!(types, vec!["A", "B", "ComposedResourcesReady"]);
}

/// `set_response_ttl()` sets the TTL (a duration or seconds) or clears it with
/// zero; the last call wins, and it overrides the sequencing TTL.
#[test]
fn set_response_ttl_sets_or_clears_the_ttl_and_beats_sequencing() {
    let rsp = ok(run(&format!("{DB_APP}set_response_ttl('5m')\n"), "{}"));
    assert!(!has(&rsp, "app"), "a deferral is expected: {rsp:#}");
    assert_eq!(ttl(&rsp), Some("300s"));
    let cases = [
        ("set_response_ttl(0)", None),
        ("set_response_ttl('0s')", None),
        ("set_response_ttl(45)", Some("45s")),
        ("set_response_ttl('5m')\nset_response_ttl(45)", Some("45s")),
        ("set_response_ttl(45)\nset_response_ttl('5m')", Some("300s")),
    ];
    for (source, want) in cases {
        assert_eq!(ttl(&ok(run(source, "{}"))), want, "{source}");
    }
}

// ---------------------------------------------------------------------------
// skip_resource

/// `skip_resource()` records a Normal event without gating readiness or
/// removing an earlier step's desired entry.
#[test]
fn skip_resource_announces_without_gating_or_removing() {
    let yaml = "desired: {resources: {old: {resource: {apiVersion: v1, kind: Old}}}}";
    let rsp = ok(run("skip_resource('old', 'migrated')", yaml));
    assert!(warnings(&rsp).is_empty(), "{rsp:#}");
    assert_eq!(
        messages(&rsp, "SEVERITY_NORMAL")[0],
        r#"Skipping optional resource "old": migrated"#
    );
    assert_eq!(composite_ready(&rsp), "READY_UNSPECIFIED");
    assert!(conditions(&rsp).is_empty(), "{rsp:#}");
    assert_eq!(
        body(&rsp, "old"),
        &json!({"apiVersion": "v1", "kind": "Old"})
    );
}

/// `skip_resource()` of a name already emitted is an error; skipping the same
/// name twice warns once.
#[test]
fn skip_resource_refuses_emitted_names_and_deduplicates() {
    let msg = script_error(&run(
        "Resource('db', {'kind':'DB'})\nskip_resource('db', 'x')",
        "{}",
    ));
    assert!(msg.contains("already emitted, cannot skip"), "{msg}");
    let rsp = ok(run(
        "skip_resource('x','r1')\nskip_resource('x','r1')",
        "{}",
    ));
    assert_eq!(
        messages(&rsp, "SEVERITY_NORMAL"),
        vec![r#"Skipping optional resource "x": r1"#, SUCCESS]
    );
}

/// A gating skip of a name already skipped by `skip_resource()` adds no
/// event and no gating.
#[test]
fn a_later_gating_skip_of_an_already_skipped_name_does_nothing() {
    let rsp = ok(run(
        "skip_resource('x', 'r')\nResource('x', None, when=When(False, 's', keep_if_exists=False))",
        "{}",
    ));
    assert!(warnings(&rsp).is_empty(), "{rsp:#}");
    assert!(conditions(&rsp).is_empty(), "{rsp:#}");
    assert_eq!(composite_ready(&rsp), "READY_UNSPECIFIED");
}

/// Results come in this order: `depends_on` warnings, script events, the
/// sequencing warning, requirement warnings, the success result.
#[test]
fn results_come_in_the_documented_order() {
    let rsp = ok(run(
        r"
db = Resource('db', {'apiVersion':'v1','kind':'Database'})
Resource('app', {'apiVersion':'v1','kind':'App'}, depends_on=[db, 'external-vpc'])
emit_event('Normal', 'script event')
require_extra_resource('r', 'v1', 'K', match_name='m', match_labels={'a':'b'})
",
        "{}",
    ));
    let pairs = result_pairs(&rsp);
    assert_eq!(pairs.len(), 5, "{rsp:#}");
    assert_eq!(pairs[0].0, "SEVERITY_WARNING");
    assert!(
        pairs[0].1.starts_with("depends_on: \"external-vpc\""),
        "{pairs:?}"
    );
    assert_eq!(
        pairs[1],
        ("SEVERITY_NORMAL".to_owned(), "script event".to_owned())
    );
    assert_eq!(
        pairs[2],
        (
            "SEVERITY_WARNING".to_owned(),
            "Creation sequencing: 1 resource(s) deferred: app".to_owned()
        )
    );
    assert_eq!(pairs[3].0, "SEVERITY_WARNING");
    assert!(
        pairs[3].1.starts_with("require_extra_resource(\"r\")"),
        "{pairs:?}"
    );
    assert_eq!(pairs[4], ("SEVERITY_NORMAL".to_owned(), SUCCESS.to_owned()));
}

/// A resource reference gives its name through `.name` but cannot be put in a
/// body itself; a skipped reference is falsy and reports `optional`.
#[test]
fn resource_refs_expose_names_and_skipped_refs_are_falsy() {
    let rsp = ok(run(
        "ref = Resource('db', {'kind':'DB'})\nResource('app', {'kind':'App','spec':{'dbRef': ref.name}})",
        "{}",
    ));
    assert_eq!(body(&rsp, "app")["spec"]["dbRef"], "db");
    let msg = script_error(&run(
        "ref = Resource('db', {'kind':'DB'})\nResource('app', {'kind':'App','spec':{'dbRef': ref}})",
        "{}",
    ));
    assert!(
        msg.contains("unsupported starlark type for protobuf conversion"),
        "{msg}"
    );
    let rsp = ok(run(
        r"
s1 = Resource('s1', None, when=False, skip_reason='r')
s2 = Resource('s2', None, when=False, skip_reason='r', optional=True)
dxr['status'] = {'truthy': bool(s1), 'o1': s1.optional, 'o2': s2.optional}
",
        "{}",
    ));
    assert_eq!(
        status(&rsp),
        &json!({"truthy": false, "o1": false, "o2": true})
    );
}

// ---------------------------------------------------------------------------
// Scripts from ConfigMaps

/// A `scriptConfigRef` to a ConfigMap that is not mounted is Fatal, naming the
/// path expected.
#[test]
fn a_missing_configmap_script_is_fatal() {
    let rsp = run_input(
        "{}",
        Some(input(
            json!({"scriptConfigRef": {"name": "my-script", "key": "main.star"}}),
        )),
    );
    assert_eq!(
        only_fatal(&rsp),
        "loading script from ConfigMap: script file \"/scripts/my-script/main.star\" not found; ensure the ConfigMap \"my-script\" is mounted via DeploymentRuntimeConfig"
    );
}

/// ConfigMap names and keys that would leave the scripts directory (`..`, an
/// absolute path, an empty name) are refused as path traversal.
#[test]
fn configmap_names_and_keys_must_not_escape() {
    let refs = [
        json!({"name": "../escape"}),
        json!({"name": "/etc/x"}),
        json!({"name": ""}),
        json!({"name": "my-script", "key": "../../x"}),
    ];
    for r in refs {
        let msg = only_fatal(&run_input(
            "{}",
            Some(input(json!({"scriptConfigRef": r.clone()}))),
        ));
        assert!(
            msg.starts_with("loading script from ConfigMap: ") && msg.contains("path traversal"),
            "{r}: {msg}"
        );
    }
}

/// A mounted ConfigMap script runs under the default key `main.star`, and its
/// metrics carry its path (`SCRIPTS/NAME/main.star`) as the script label.
#[test]
fn a_mounted_script_runs_with_the_default_key_and_its_label() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::create_dir(dir.path().join("my-scripts")).expect("mkdir");
    std::fs::write(
        dir.path().join("my-scripts/main.star"),
        "Resource('from-file', {'kind':'K'})\n",
    )
    .expect("write");
    let mut registry = Registry::default();
    let f = function_with(dir.path(), &[], Metrics::register(&mut registry));
    let rsp = ok(handle(
        &f,
        "{}",
        Some(input(json!({"scriptConfigRef": {"name": "my-scripts"}}))),
    ));
    assert!(has(&rsp, "from-file"));
    let text = encode(&registry);
    let path = dir
        .path()
        .join("my-scripts/main.star")
        .display()
        .to_string();
    assert_eq!(
        metric(&text, "function_starlark_reconciliations_total", &path),
        Some(1.0),
        "{text}"
    );
}

/// The same input twice is answered the same; a mounted script edited
/// between two calls with the same input runs as it is now (its ConfigMap
/// changed), while an inline one is the input's own.
#[test]
fn a_mounted_script_is_read_again_under_the_same_input() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::create_dir(dir.path().join("edited")).expect("mkdir");
    let script = dir.path().join("edited/main.star");
    std::fs::write(&script, "Resource('first', {'kind':'K'})\n").expect("write");
    let f = function_with(dir.path(), &[], Metrics::default());
    let mounted = || Some(input(json!({"scriptConfigRef": {"name": "edited"}})));
    assert!(has(&ok(handle(&f, "{}", mounted())), "first"));
    std::fs::write(&script, "Resource('second', {'kind':'K'})\n").expect("write");
    let rsp = ok(handle(&f, "{}", mounted()));
    assert!(has(&rsp, "second") && !has(&rsp, "first"), "{rsp}");
    let inline = || {
        Some(input(
            json!({"source": "Resource('inline', {'kind':'K'})\n"}),
        ))
    };
    for _ in 0..2 {
        assert!(has(&ok(handle(&f, "{}", inline())), "inline"));
    }
}

/// An empty mounted script is a passthrough: one Normal passthrough result,
/// desired state and context as received, the default TTL, no conditions or
/// requirements.
#[test]
fn an_empty_mounted_script_is_a_passthrough() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::create_dir(dir.path().join("empty")).expect("mkdir");
    std::fs::write(dir.path().join("empty/main.star"), "").expect("write");
    let f = function_with(dir.path(), &[], Metrics::default());
    let yaml = r"
meta: {tag: t1}
desired:
  composite: {resource: {apiVersion: example.org/v1, kind: XR}}
  resources: {prior: {resource: {kind: Prior}}}
context: {my-key: my-value}
";
    let rsp = handle(
        &f,
        yaml,
        Some(input(json!({"scriptConfigRef": {"name": "empty"}}))),
    );
    assert_eq!(
        result_pairs(&rsp),
        vec![("SEVERITY_NORMAL".to_owned(), PASSTHROUGH.to_owned())]
    );
    let req = request_json(yaml);
    assert_eq!(rsp["desired"], req["desired"]);
    assert_eq!(rsp["context"], req["context"]);
    assert_eq!(ttl(&rsp), Some("60s"));
    assert!(rsp.get("conditions").is_none() && rsp.get("requirements").is_none());
}

// ---------------------------------------------------------------------------
// Metrics and capabilities

/// A successful call records reconciliation, emitted, skipped, duration and
/// cache-miss metrics; running the same source again is a cache hit.
#[test]
fn a_successful_call_records_its_metrics_and_the_cache_hits_on_rerun() {
    let mut registry = Registry::default();
    let f = function_with("/scripts", &[], Metrics::register(&mut registry));
    let source = "Resource('kept', {'kind':'K'})\nskip_resource('gone', 'metrics test 99')";
    let spec = Some(input(json!({"source": source})));
    ok(handle(&f, "{}", spec.clone()));
    let text = encode(&registry);
    let m = |name: &str| metric(&text, name, "composition.star");
    assert_eq!(
        m("function_starlark_reconciliations_total"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        m("function_starlark_resources_emitted_total"),
        Some(1.0),
        "{text}"
    );
    // Skips are counted by the composite's kind too (none here).
    let skipped = "function_starlark_resources_skipped_total{script=\"composition.star\",composite_kind=\"\"} 1";
    assert!(text.contains(skipped), "{text}");
    assert_eq!(
        m("function_starlark_execution_duration_seconds_count"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        m("function_starlark_reconciliation_duration_seconds_count"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        m("function_starlark_cache_misses_total"),
        Some(1.0),
        "{text}"
    );
    assert!(m("function_starlark_cache_hits_total").is_none_or(|v| v == 0.0));
    ok(handle(&f, "{}", spec));
    let text = encode(&registry);
    let m = |name: &str| metric(&text, name, "composition.star");
    assert_eq!(m("function_starlark_cache_hits_total"), Some(1.0), "{text}");
    assert_eq!(
        m("function_starlark_cache_misses_total"),
        Some(1.0),
        "{text}"
    );
}

/// A deferred resource counts as deferred, not as skipped.
#[test]
fn a_deferral_counts_as_deferred_not_skipped() {
    let mut registry = Registry::default();
    let f = function_with("/scripts", &[], Metrics::register(&mut registry));
    let rsp = ok(handle(&f, "{}", Some(input(json!({"source": DB_APP})))));
    assert!(!has(&rsp, "app"));
    let text = encode(&registry);
    let m = |name: &str| metric(&text, name, "composition.star");
    assert_eq!(
        m("function_starlark_resources_deferred_total"),
        Some(1.0),
        "{text}"
    );
    assert!(
        !text.contains("function_starlark_resources_skipped_total{"),
        "{text}"
    );
}

/// A request without input counts as an input error, and every series it
/// records has the script label `(unresolved)`.
#[test]
fn a_request_without_input_counts_as_an_input_error_under_no_script_name() {
    let mut registry = Registry::default();
    let f = function_with("/scripts", &[], Metrics::register(&mut registry));
    only_fatal(&handle(&f, "{}", None));
    let text = encode(&registry);
    let scripts: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split("script=\"").nth(1)?.split('"').next())
        .collect();
    assert!(scripts.iter().all(|s| *s == "(unresolved)"), "{text}");
    assert!(
        text.contains("function_starlark_results_total{outcome=\"input_error\"} 1"),
        "{text}"
    );
}

/// The capabilities the request declares do not change the response.
#[test]
fn capabilities_do_not_change_the_response() {
    let source = r"
set_condition('A','True','R','m')
require_extra_resource('db','v1','DB', match_name='main')
Resource('x', {'kind':'K'})
dxr['status'] = {'n': len(extra_resources)}
";
    let data = r"
observed: {composite: {resource: {metadata: {name: xr-abc}}}}
requiredResources: {db: {items: [{resource: {kind: DB}}]}}
";
    let none = run(source, &format!("meta: {{tag: t}}{data}"));
    let all = run(
        source,
        &format!(
            "meta:\n  tag: t\n  capabilities: [CAPABILITY_CAPABILITIES, CAPABILITY_REQUIRED_RESOURCES, CAPABILITY_CREDENTIALS, CAPABILITY_CONDITIONS, CAPABILITY_REQUIRED_SCHEMAS]{data}"
        ),
    );
    assert_eq!(ok(none), ok(all));
}
