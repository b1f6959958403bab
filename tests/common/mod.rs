//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use function_sdk_rust::proto::v1::{RunFunctionRequest, RunFunctionResponse};
use function_starlark::function::StarlarkFunction;
use function_starlark::input::Settings;
use function_starlark::metrics::Metrics;
use function_starlark::runtime::{Limits, Runtime};

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
    let req = with_source(request(request_yaml), source);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(function().handle(req))
}
