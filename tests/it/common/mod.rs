//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod framed;
pub mod lsp_client;
pub mod registry;

use std::sync::Arc;

use function_sdk_rust::proto::v1::{RunFunctionRequest, RunFunctionResponse};
use function_starlark::function::StarlarkFunction;
use function_starlark::input::Settings;
use function_starlark::limits::Limits;
use function_starlark::metrics::Metrics;
use function_starlark::runner::Runtime;

/// A request from YAML in protojson form (`observed`, `desired`, `context`, ...).
pub fn request(yaml: &str) -> RunFunctionRequest {
    let value: serde_json::Value = serde_yaml::from_str(yaml).expect("request YAML parses");
    serde_json::from_value(value).expect("request matches RunFunctionRequest")
}

/// `request` with an input whose `spec.source` is `source`.
pub fn with_source(mut request: RunFunctionRequest, source: &str) -> RunFunctionRequest {
    let input = serde_json::json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": {"source": source},
    });
    request.input = Some(to_struct(&input));
    request
}

/// A protobuf struct from a JSON object.
pub fn to_struct(v: &serde_json::Value) -> pbjson_types::Struct {
    let serde_json::Value::Object(m) = v else {
        panic!("an object is needed")
    };
    function_sdk_rust::resource::json_to_struct(m)
}

/// The response as JSON, for assertions and golden files.
pub fn json(rsp: &RunFunctionResponse) -> serde_json::Value {
    serde_json::to_value(rsp).expect("responses serialize")
}

/// A function with default limits and no mounted scripts.
pub fn function() -> StarlarkFunction {
    function_with(Limits::default(), Metrics::default())
}

/// A function with the given limits and metrics.
pub fn function_with(limits: Limits, metrics: Metrics) -> StarlarkFunction {
    let settings = Settings {
        scripts_dir: "/scripts".into(),
        env: Box::new(|_| None),
    };
    StarlarkFunction::new(Arc::new(Runtime::new(limits, 64)), settings, metrics)
}

/// Runs `source` against `request` in-process.
pub fn run(source: &str, request_yaml: &str) -> RunFunctionResponse {
    handle(&function(), with_source(request(request_yaml), source))
}

/// Runs `source` with the inline `modules` (name to source) on an empty
/// request, in-process.
pub fn run_input(source: &str, modules: serde_json::Value) -> RunFunctionResponse {
    let mut req = request("{}");
    let input = serde_json::json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": {"source": source, "modules": modules},
    });
    req.input = Some(to_struct(&input));
    handle(&function(), req)
}

/// `function`'s answer to `req`, on a runtime of its own.
pub fn handle(function: &StarlarkFunction, req: RunFunctionRequest) -> RunFunctionResponse {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(function.handle(req))
}

/// A runtime with two worker threads, for tests that drive servers or
/// pools from async code.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The folders of `examples/` that hold a composition, sorted.
pub fn example_dirs() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .expect("examples/ exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.join("composition.yaml").exists())
        .collect();
    cases.sort();
    cases
}

/// The message of the Fatal result of a response (as JSON), if it has one.
pub fn fatal(rsp: &serde_json::Value) -> Option<String> {
    rsp["results"]
        .as_array()?
        .iter()
        .find(|r| r["severity"] == "SEVERITY_FATAL")
        .and_then(|r| r["message"].as_str())
        .map(str::to_owned)
}

/// A JSON value as YAML. Numbers are converted explicitly: a dependency
/// turns on serde_json's arbitrary precision, whose numbers serde_yaml
/// cannot render.
pub fn yaml(v: &serde_json::Value) -> serde_yaml::Value {
    use serde_json::Value as J;
    use serde_yaml::Value as Y;
    match v {
        J::Null => Y::Null,
        J::Bool(b) => Y::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Y::Number(i.into()),
            None => Y::Number(n.as_f64().unwrap_or(f64::NAN).into()),
        },
        J::String(s) => Y::String(s.clone()),
        J::Array(items) => Y::Sequence(items.iter().map(yaml).collect()),
        J::Object(m) => Y::Mapping(
            m.iter()
                .map(|(k, v)| (Y::String(k.clone()), yaml(v)))
                .collect(),
        ),
    }
}

/// Compares `actual` with the YAML golden file at `path` (relative to the
/// crate root). `UPDATE_GOLDEN=1` writes the file instead.
pub fn assert_golden(path: &str, actual: &serde_json::Value) {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let actual = yaml(actual);
    let rendered = serde_yaml::to_string(&actual).expect("values render as YAML");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        if let Some(dir) = full.parent() {
            std::fs::create_dir_all(dir).expect("the golden directory");
        }
        std::fs::write(&full, rendered).expect("the golden file is writable");
        return;
    }
    let expected = std::fs::read_to_string(&full)
        .unwrap_or_else(|e| panic!("{path}: {e}; run with UPDATE_GOLDEN=1 to create it"));
    let expected: serde_yaml::Value = serde_yaml::from_str(&expected).expect("golden YAML parses");
    assert!(
        expected == actual,
        "{path} differs (UPDATE_GOLDEN=1 regenerates it)\n--- expected\n{}\n--- actual\n{rendered}",
        serde_yaml::to_string(&expected).unwrap_or_default()
    );
}

/// Every YAML document in `text`, skipping empty ones.
pub fn documents(text: &str) -> Vec<serde_json::Value> {
    serde_yaml::Deserializer::from_str(text)
        .filter_map(|d| {
            let v: serde_json::Value = serde::Deserialize::deserialize(d).expect("YAML parses");
            (!v.is_null()).then_some(v)
        })
        .collect()
}
