//! Every `examples/<case>/` evaluated in-process with the request
//! `crossplane render` would send (observed XR, observed resources,
//! required resources answered from `required-resources.yaml` until the
//! requirements settle), compared with `expected-response.yaml`.
//! `tests/render.rs` renders the same cases with the real CLI.

use crate::common;

use std::path::Path;

use function_sdk_rust::proto::v1::{
    Resource, Resources, RunFunctionRequest, RunFunctionResponse, State, resource_selector,
};
use serde_json::{Value, json};

const RESOURCE_NAME_ANNOTATION: &str = "crossplane.io/composition-resource-name";

fn read_documents(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).map_or_else(|_| Vec::new(), |t| common::documents(&t))
}

fn function_input(composition: &Value) -> Value {
    composition["spec"]["pipeline"]
        .as_array()
        .and_then(|steps| {
            steps
                .iter()
                .find(|s| s["functionRef"]["name"] == "function-starlark")
        })
        .map(|s| s["input"].clone())
        .expect("the composition has a function-starlark step")
}

fn resource(v: &Value) -> Resource {
    Resource {
        resource: Some(common::to_struct(v)),
        ..Resource::default()
    }
}

/// The resources of `pool` a requirement selects.
fn select(pool: &[Value], selector: &function_sdk_rust::proto::v1::ResourceSelector) -> Resources {
    let items = pool
        .iter()
        .filter(|r| {
            r["apiVersion"] == selector.api_version.as_str() && r["kind"] == selector.kind.as_str()
        })
        .filter(|r| match &selector.r#match {
            Some(resource_selector::Match::MatchName(n)) => r["metadata"]["name"] == n.as_str(),
            Some(resource_selector::Match::MatchLabels(l)) => l
                .labels
                .iter()
                .all(|(k, v)| r["metadata"]["labels"][k] == v.as_str()),
            None => true,
        })
        .map(resource)
        .collect();
    Resources { items }
}

/// The first request `crossplane render` sends for the composite example in
/// `dir`: its XR and observed resources, the function-starlark step's input.
pub fn request(dir: &Path) -> RunFunctionRequest {
    let xr = read_documents(&dir.join("xr.yaml")).remove(0);
    let composition = read_documents(&dir.join("composition.yaml")).remove(0);
    let observed = read_documents(&dir.join("observed.yaml"));
    let mut request = RunFunctionRequest {
        input: Some(common::to_struct(&function_input(&composition))),
        observed: Some(State {
            composite: Some(resource(&xr)),
            resources: observed
                .iter()
                .map(|o| {
                    let name = o["metadata"]["annotations"][RESOURCE_NAME_ANNOTATION]
                        .as_str()
                        .expect("observed resources carry their composition resource name");
                    (name.to_owned(), resource(o))
                })
                .collect(),
        }),
        ..RunFunctionRequest::default()
    };
    request.meta = Some(function_sdk_rust::proto::v1::RequestMeta {
        tag: "example".to_owned(),
        ..Default::default()
    });
    request
}

fn render(dir: &Path) -> RunFunctionResponse {
    let mut request = request(dir);
    let pool = read_documents(&dir.join("required-resources.yaml"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let function = common::function();
    let mut rsp = runtime.block_on(function.handle(request.clone()));
    for _ in 0..5 {
        let Some(requirements) = rsp
            .requirements
            .as_ref()
            .filter(|r| !r.resources.is_empty())
        else {
            break;
        };
        let answered = requirements
            .resources
            .iter()
            .map(|(name, selector)| (name.clone(), select(&pool, selector)))
            .collect();
        if request.required_resources == answered {
            break;
        }
        request.required_resources = answered;
        rsp = runtime.block_on(function.handle(request.clone()));
    }
    rsp
}

#[test]
fn every_example_renders_its_expected_response() {
    let cases = common::example_dirs();
    assert!(cases.len() >= 3, "at least three examples");
    for dir in cases {
        let rsp = render(&dir);
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 name");
        let json = common::json(&rsp);
        let fatal = json["results"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["severity"] == json!("SEVERITY_FATAL"));
        assert!(fatal.is_none(), "{name}: {fatal:?}");
        common::assert_golden(&format!("examples/{name}/expected-response.yaml"), &json);
    }
}
