//! In-process time of one RunFunction call: `cargo bench`.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use function_sdk_rust::proto::v1::{Resource, RunFunctionRequest, State};
use function_starlark::function::StarlarkFunction;
use function_starlark::input::Settings;
use function_starlark::limits::Limits;
use function_starlark::metrics::Metrics;
use function_starlark::runner::Runtime;
use serde_json::json;

const TEN_RESOURCES: &str = r#"
region = get(oxr, "spec.region", "us-east-1")
for i in range(10):
    Resource("bucket-%d" % i, {
        "apiVersion": "s3.aws.upbound.io/v1beta1",
        "kind": "Bucket",
        "metadata": {"annotations": {"example.org/index": str(i)}},
        "spec": {"forProvider": {"region": region, "tags": {"team": oxr.spec.team, "index": str(i)}}},
    }, labels={"team": oxr.spec.team})
set_condition("Rendered", "True", "Available", "10 buckets")
dxr["status"] = {"buckets": 10}
"#;

fn to_struct(v: &serde_json::Value) -> pbjson_types::Struct {
    let serde_json::Value::Object(m) = v else {
        unreachable!("literal objects")
    };
    function_sdk_rust::resource::json_to_struct(m)
}

fn request() -> RunFunctionRequest {
    RunFunctionRequest {
        input: Some(to_struct(&json!({"spec": {"source": TEN_RESOURCES}}))),
        observed: Some(State {
            composite: Some(Resource {
                resource: Some(to_struct(&json!({
                    "apiVersion": "example.org/v1",
                    "kind": "XBuckets",
                    "metadata": {"name": "bench", "labels": {"crossplane.io/claim-name": "bench"}},
                    "spec": {"region": "eu-west-1", "team": "platform"},
                }))),
                ..Resource::default()
            }),
            ..State::default()
        }),
        ..RunFunctionRequest::default()
    }
}

fn run_function(c: &mut Criterion) {
    let function = StarlarkFunction::new(
        Arc::new(Runtime::new(Limits::default(), 16)),
        Settings {
            scripts_dir: "/scripts".into(),
            env: Box::new(|_| None),
        },
        Metrics::default(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let req = request();
    let rsp = runtime.block_on(function.handle(req.clone()));
    assert_eq!(rsp.desired.map(|d| d.resources.len()), Some(10));
    c.bench_function("run_function_10_resources", |b| {
        b.iter(|| runtime.block_on(function.handle(req.clone())));
    });
}

criterion_group!(benches, run_function);
criterion_main!(benches);
