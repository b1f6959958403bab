//! Crossplane's Operations running the installed package: an Operation
//! applies what its script composes and records the step's output, a
//! WatchOperation (examples/watch-secret-stamp) runs when a watched Secret
//! appears, and a failing script fails the Operation with its position.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::cluster::{Cluster, Step, condition, wait_for};

const NAMESPACE: &str = "e2e";

fn operation(name: &str, source: &str) -> String {
    let mut indented = String::new();
    for line in source.lines() {
        indented.push_str("              ");
        indented.push_str(line);
        indented.push('\n');
    }
    format!(
        "apiVersion: ops.crossplane.io/v1alpha1
kind: Operation
metadata:
  name: {name}
spec:
  mode: Pipeline
  retryLimit: 1
  pipeline:
    - step: run
      functionRef: {{name: function-starlark}}
      input:
        apiVersion: starlark.fn.crossplane.io/v1alpha1
        kind: StarlarkInput
        spec:
          source: |
{indented}"
    )
}

/// Waits for the Operation `name` to have the condition `kind` with
/// `status`, and returns it.
fn wait_condition(cluster: &Cluster, name: &str, kind: &str, status: &str) -> Step<Value> {
    wait_for(
        &format!("Operation {name} {kind}={status}"),
        Duration::from_mins(1),
        || {
            let object = cluster.json(&["get", "operations.ops.crossplane.io", name])?;
            if condition(&object, kind).is_some_and(|c| c["status"] == status) {
                Ok(Some(object))
            } else {
                Err(format!("status {}", object["status"]))
            }
        },
    )
}

fn configmap(cluster: &Cluster, name: &str) -> Step<Option<Value>> {
    let text = cluster.kubectl(&[
        "get",
        "configmap",
        name,
        "-n",
        NAMESPACE,
        "--ignore-not-found",
        "-o",
        "json",
    ])?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| e.to_string())
}

pub fn operations_run_through_the_installed_package(cluster: &Cluster) -> Step<String> {
    // Once: the script's resource is applied and its output recorded.
    cluster.apply(&operation(
        "e2e-once",
        &format!(
            "Resource(\"report\", {{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\",
    \"metadata\": {{\"name\": \"op-report\", \"namespace\": \"{NAMESPACE}\"}},
    \"data\": {{\"from\": \"operation\"}}}})
output[\"wrote\"] = \"{NAMESPACE}/op-report\""
        ),
    ))?;
    let done = wait_condition(cluster, "e2e-once", "Succeeded", "True")?;
    let step = &done["status"]["pipeline"][0];
    if step["step"] != "run" || step["output"]["wrote"] != format!("{NAMESPACE}/op-report") {
        return Err(format!("the step's output: {}", done["status"]));
    }
    let report = configmap(cluster, "op-report")?.ok_or("no ConfigMap op-report")?;
    if report["data"]["from"] != "operation" {
        return Err(format!("op-report holds {}", report["data"]));
    }

    // A failing script: Synced=False with the script's position.
    cluster.apply(&operation("e2e-broken", "x = 1\ny = {}[\"missing\"]\n"))?;
    let failed = wait_condition(cluster, "e2e-broken", "Synced", "False")?;
    let message = condition(&failed, "Synced")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_owned();
    if !(message.contains("pipeline step \"run\" returned a fatal result")
        && message.contains("composition.star:2:"))
    {
        return Err(format!("Synced=False without the position: {message}"));
    }

    // The WatchOperation example: a Secret labelled for rotation appears.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/watch-secret-stamp");
    let watch = std::fs::read_to_string(example.join("operation.yaml"))
        .map_err(|e| format!("the example: {e}"))?;
    cluster.apply(&watch)?;
    cluster.apply(&format!(
        "apiVersion: v1
kind: Secret
metadata:
  name: rotated
  namespace: {NAMESPACE}
  labels: {{rotate: \"true\"}}
stringData: {{password: hunter2}}
"
    ))?;
    let stamp = wait_for(
        "the WatchOperation's ConfigMap rotated-rotation",
        Duration::from_mins(1),
        || configmap(cluster, "rotated-rotation"),
    )?;
    if stamp["data"]["secret"] != "rotated" {
        return Err(format!("rotated-rotation holds {}", stamp["data"]));
    }
    let runs = cluster.json(&[
        "get",
        "operations.ops.crossplane.io",
        "-l",
        "ops.crossplane.io/watchoperation=stamp-rotated-secrets",
    ])?;
    let stamped = runs["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|op| op["status"]["pipeline"][0]["output"]["stamped"].as_str())
        .any(|s| s == format!("{NAMESPACE}/rotated"));
    if !stamped {
        return Err(format!("no Operation recorded the stamp: {runs}"));
    }

    for args in [
        &[
            "delete",
            "watchoperations.ops.crossplane.io",
            "stamp-rotated-secrets",
            "--wait=false",
        ][..],
        &[
            "delete",
            "operations.ops.crossplane.io",
            "--all",
            "--wait=false",
        ],
        &[
            "delete",
            "secret",
            "rotated",
            "-n",
            NAMESPACE,
            "--wait=false",
        ],
        &[
            "delete",
            "configmap",
            "op-report",
            "rotated-rotation",
            "-n",
            NAMESPACE,
            "--wait=false",
        ],
    ] {
        cluster.kubectl(args)?;
    }
    let first_line = message.lines().next().unwrap_or_default();
    Ok(format!(
        "an Operation applied op-report and recorded its output; a WatchOperation stamped a new Secret; a failing one is Synced=False: {first_line}"
    ))
}
