//! `function-starlark render OPERATION [FUNCTIONS]`: what `crossplane
//! operation render` (CLI v2.5.0, running Crossplane v2.3.4's Operation
//! reconciler) prints for an Operation, CronOperation or WatchOperation
//! whose steps are all this function.
//!
//! A CronOperation or WatchOperation stands for the Operation its template
//! makes, named as itself; with `--watched-resource` every step requires
//! the watched resource as `ops.crossplane.io/watched-resource`, as the
//! WatchOperation controller arranges. Each step gets no observed state,
//! the previous step's desired resources and context, its input,
//! credentials and required resources, and runs again while what it
//! requires changes. The output is the Operation with its status (the
//! resources applied, the steps' outputs, its conditions), then each
//! applied resource as the steps desired it, then with `-r` the events.

use function_sdk_rust::proto::v1::{Severity, State};
use serde_json::{Value, json};

use super::load::string_at;
use super::{
    Inputs, RenderError, from_struct, output, run_step, starlark_step, step_request, to_struct,
};
use crate::function::StarlarkFunction;

/// The group of Crossplane's Operation kinds.
const OPS_GROUP: &str = "ops.crossplane.io/";

/// The required resource under which a WatchOperation's steps get the
/// resource that changed.
const WATCHED_RESOURCE: &str = "ops.crossplane.io/watched-resource";

/// Whether `object` is an Operation, CronOperation or WatchOperation.
pub fn is_operation(object: &Value) -> bool {
    string_at(object, "apiVersion").starts_with(OPS_GROUP)
        && matches!(
            string_at(object, "kind"),
            "Operation" | "CronOperation" | "WatchOperation"
        )
}

/// The Operation `object` stands for: itself, or the one a CronOperation's
/// or WatchOperation's template makes, named as its parent.
pub fn operation_of(object: &Value) -> Result<Value, RenderError> {
    match string_at(object, "kind") {
        "Operation" => Ok(object.clone()),
        "CronOperation" | "WatchOperation" => {
            let template = object.pointer("/spec/operationTemplate").ok_or_else(|| {
                RenderError::Invalid(format!(
                    "{} {:?} has no spec.operationTemplate",
                    string_at(object, "kind"),
                    string_at(object, "metadata.name")
                ))
            })?;
            let mut metadata = template.get("metadata").cloned().unwrap_or(json!({}));
            metadata["name"] = Value::String(string_at(object, "metadata.name").to_owned());
            Ok(json!({
                "apiVersion": string_at(object, "apiVersion"),
                "kind": "Operation",
                "metadata": metadata,
                "spec": template.get("spec").cloned().unwrap_or(json!({})),
            }))
        }
        kind => Err(RenderError::Invalid(format!(
            "not an operation type: {kind}"
        ))),
    }
}

/// Adds the watched resource to every step's required resources.
pub fn inject_watched(operation: &mut Value, watched: &Value) {
    let mut selector = json!({
        "requirementName": WATCHED_RESOURCE,
        "apiVersion": string_at(watched, "apiVersion"),
        "kind": string_at(watched, "kind"),
        "name": string_at(watched, "metadata.name"),
    });
    let namespace = string_at(watched, "metadata.namespace");
    if !namespace.is_empty() {
        selector["namespace"] = Value::String(namespace.to_owned());
    }
    let Some(steps) = operation
        .pointer_mut("/spec/pipeline")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for step in steps {
        let requirements = &mut step["requirements"];
        if !requirements.is_object() {
            *requirements = json!({});
        }
        let list = &mut requirements["requiredResources"];
        if !list.is_array() {
            *list = json!([]);
        }
        if let Some(list) = list.as_array_mut() {
            list.push(selector.clone());
        }
    }
}

/// What an Operation's pipeline ends with.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The last step's desired state: the resources Crossplane applies.
    pub desired: State,
    /// Each step's output, by step, in order.
    pub outputs: Vec<(String, Value)>,
    /// The steps' results as events.
    pub events: Vec<Value>,
    /// The last step's context.
    pub context: Option<pbjson_types::Struct>,
}

/// Runs the Operation's pipeline; `inputs.xr` is the Operation.
pub async fn pipeline(
    function: &StarlarkFunction,
    inputs: &Inputs,
) -> Result<Outcome, RenderError> {
    let operation = &inputs.xr;
    let mut outcome = Outcome {
        context: Some(to_struct(&Value::Object(inputs.context.clone()))),
        ..Outcome::default()
    };
    let steps = operation
        .pointer("/spec/pipeline")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for step in &steps {
        let name = starlark_step(step, inputs)?;
        let request = step_request(step, inputs, &outcome.desired, outcome.context.as_ref())?;
        let response = run_step(function, name, request, &inputs.required).await?;
        for r in &response.results {
            if r.severity == Severity::Fatal as i32 {
                return Err(RenderError::Fatal {
                    step: name.to_owned(),
                    message: r.message.clone(),
                });
            }
            // The Operation controller's reason for every step's events.
            outcome
                .events
                .push(output::step_event(name, r, "RunPipelineStep"));
        }
        outcome.desired = response.desired.clone().unwrap_or_default();
        outcome.context.clone_from(&response.context);
        if let Some(step_output) = &response.output {
            outcome
                .outputs
                .retain(|(existing, _)| existing.as_str() != name);
            outcome
                .outputs
                .push((name.to_owned(), from_struct(Some(step_output))));
        }
    }
    Ok(outcome)
}

/// The output documents: the Operation, the applied resources (by name;
/// Crossplane's order is a map's), the events and the context.
pub fn documents(operation: &Value, outcome: &Outcome, results: bool, context: bool) -> Vec<Value> {
    let mut names: Vec<&String> = outcome.desired.resources.keys().collect();
    names.sort();
    let applied: Vec<Value> = names
        .iter()
        .map(|name| from_struct(outcome.desired.resources[*name].resource.as_ref()))
        .collect();
    let mut documents = vec![operation_status(operation, outcome, &applied)];
    documents.extend(applied);
    if results {
        documents.extend(outcome.events.iter().cloned());
    }
    if context {
        documents.push(json!({
            "apiVersion": "render.crossplane.io/v1beta1",
            "kind": "Context",
            "fields": from_struct(outcome.context.as_ref()),
        }));
    }
    documents
}

/// The Operation as the reconciler leaves it: its spec, and a status
/// naming what it applied, each step's output and its conditions. The
/// conditions carry crossplane render's fixed time where Crossplane's CLI
/// prints the current one.
fn operation_status(operation: &Value, outcome: &Outcome, applied: &[Value]) -> Value {
    let mut metadata = serde_json::Map::new();
    for key in ["name", "namespace", "labels", "annotations"] {
        if let Some(value) = operation.pointer(&format!("/metadata/{key}")) {
            metadata.insert(key.to_owned(), value.clone());
        }
    }
    metadata.insert("resourceVersion".to_owned(), json!("999"));
    let mut spec = operation.get("spec").cloned().unwrap_or(json!({}));
    if spec.get("mode").is_none() {
        spec["mode"] = json!("");
    }
    let mut refs: Vec<(String, Value)> = applied
        .iter()
        .map(|r| {
            let (api_version, kind) = (string_at(r, "apiVersion"), string_at(r, "kind"));
            let (namespace, name) = (
                string_at(r, "metadata.namespace"),
                string_at(r, "metadata.name"),
            );
            let mut reference = json!({"apiVersion": api_version, "kind": kind, "name": name});
            if !namespace.is_empty() {
                reference["namespace"] = json!(namespace);
            }
            (format!("{api_version}{kind}{namespace}{name}"), reference)
        })
        .collect();
    refs.sort_by(|a, b| a.0.cmp(&b.0));
    refs.dedup_by(|a, b| a.0 == b.0);
    let mut status = json!({
        "conditions": [
            output::condition("Succeeded", "True", "PipelineSuccess", ""),
            output::condition("ValidPipeline", "True", "ValidPipeline", ""),
            output::condition("Synced", "True", "ReconcileSuccess", ""),
        ],
    });
    if !refs.is_empty() {
        status["appliedResourceRefs"] = Value::Array(refs.into_iter().map(|(_, r)| r).collect());
    }
    if !outcome.outputs.is_empty() {
        status["pipeline"] = outcome
            .outputs
            .iter()
            .map(|(step, output)| json!({"step": step, "output": output}))
            .collect();
    }
    json!({
        "apiVersion": string_at(operation, "apiVersion"),
        "kind": "Operation",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}
