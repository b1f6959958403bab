//! Composition tests: a `*_test.yaml` file lists cases, each rendering a
//! Composition in-process (as `function-starlark render` does) and checking
//! what came out. Paths are relative to the test file.
//!
//! ```yaml
//! tests:
//!   - name: renders a bucket and a topic
//!     xr: xr.yaml                  # a file, or the object inline
//!     composition: composition.yaml
//!     functions: functions.yaml    # optional
//!     observed: observed.yaml      # optional: a file, a directory or a list
//!     requiredResources: required.yaml   # optional, likewise
//!     context: {key: value}        # optional
//!     reconciles: 2                # optional: run again on what was composed
//!     assumeReady: true            # optional: ... observed Ready
//!     expect:
//!       output: expected.yaml      # the whole render output (-r); --update writes it
//!       count: 2                   # how many composed resources
//!       resources:
//!         bucket:
//!           fields: {spec.forProvider.region: eu-west-1}
//!           matches: {metadata.generateName: "^photos-"}
//!           labels: {team: media}
//!           ready: false
//!         queue: absent
//!       xr:
//!         fields: {status.bucketName: photos}
//!       conditions:                # each must be on the XR (fields compared)
//!         - {type: Ready, status: "False", reason: Creating}
//!       results:                   # each must match a result (message: a regex)
//!         - {severity: Normal, message: "rendered"}
//!   - name: stamps the rotated Secret  # an Operation's case
//!     operation: operation.yaml    # an Operation, CronOperation or WatchOperation
//!     watchedResource: watched.yaml  # optional: what a WatchOperation watched
//!     expect:                      # as above; `resources` by the script's names,
//!       operation:                 # `operation` checks the Operation document
//!         fields: {status.pipeline.0.output.stamped: shop/db-password}
//! ```

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Case;
use crate::function::StarlarkFunction;
use crate::render::Inputs;
use crate::render::load::{object, objects, string_at};

/// The cases of one test file (a file that cannot be read is one failing
/// case).
pub fn cases(path: &Path) -> Vec<Case> {
    match read(path) {
        Ok(tests) => tests
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let name = t
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("case {}", i + 1), str::to_owned);
                Case::composition(path, name, Ok(t))
            })
            .collect(),
        Err(why) => vec![Case::composition(path, "(file)".to_owned(), Err(why))],
    }
}

fn read(path: &Path) -> Result<Vec<Value>, String> {
    let doc = object(path).map_err(|e| e.to_string())?;
    doc.get("tests")
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| format!("{}: no `tests:` list", path.display()))
}

/// A file path or inline value of a case.
fn resolve(dir: &Path, v: &Value) -> Result<Vec<Value>, String> {
    match v {
        Value::String(file) => objects(&dir.join(file)).map_err(|e| e.to_string()),
        Value::Array(items) => Ok(items.clone()),
        Value::Object(_) => Ok(vec![v.clone()]),
        _ => Ok(Vec::new()),
    }
}

fn one(dir: &Path, case: &Value, key: &str) -> Result<Value, String> {
    let v = case
        .get(key)
        .ok_or_else(|| format!("the case has no `{key}`"))?;
    resolve(dir, v)?
        .into_iter()
        .next()
        .ok_or_else(|| format!("`{key}` holds no object"))
}

fn inputs(dir: &Path, case: &Value) -> Result<Inputs, String> {
    let xr = one(dir, case, "xr")?;
    let composition = one(dir, case, "composition")?;
    crate::render::check_types(&xr, &composition).map_err(|e| e.to_string())?;
    rest(dir, case, xr, composition)
}

/// The inputs beyond the XR and the Composition.
fn rest(dir: &Path, case: &Value, xr: Value, composition: Value) -> Result<Inputs, String> {
    let many = |key: &str| case.get(key).map_or(Ok(Vec::new()), |v| resolve(dir, v));
    let starlark_functions = match case.get("functions") {
        None => None,
        Some(v) => Some(
            resolve(dir, v)?
                .iter()
                .filter(|f| string_at(f, "spec.package").contains("function-starlark"))
                .map(|f| string_at(f, "metadata.name").to_owned())
                .collect(),
        ),
    };
    Ok(Inputs {
        xr,
        composition,
        observed: many("observed")?,
        required: many("requiredResources")?,
        secrets: many("credentials")?,
        context: case
            .get("context")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        starlark_functions,
    })
}

/// The inputs of the next reconcile: the composed resources just rendered,
/// with the names Crossplane gave them, are now observed, Ready when the
/// script marked them ready or, with `assumeReady`, all of them; the XR
/// keeps the status it was given.
fn next_reconcile(
    inputs: &mut Inputs,
    documents: &[Value],
    outcome: &crate::render::Outcome,
    assume_ready: bool,
) {
    use function_sdk_rust::proto::v1::Ready;
    let mut observed = Vec::new();
    for doc in documents.iter().skip(1) {
        if doc.get("kind").and_then(Value::as_str) == Some("Result") {
            continue;
        }
        let mut doc = doc.clone();
        let name = doc
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(crate::render::RESOURCE_NAME_ANNOTATION))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let marked = outcome
            .desired
            .resources
            .get(&name)
            .is_some_and(|r| r.ready == Ready::True as i32);
        if assume_ready || marked {
            doc["status"]["conditions"] = serde_json::json!([
                {"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2024-01-01T00:00:00Z"},
                {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "2024-01-01T00:00:00Z"},
            ]);
        }
        observed.push(doc);
    }
    if let Some(status) = documents.first().and_then(|xr| xr.get("status")) {
        inputs.xr["status"] = status.clone();
    }
    inputs.observed = observed;
}

/// Runs `case` of the file at `path`; `update` rewrites its
/// `expect.output` file.
pub async fn run(
    function: &StarlarkFunction,
    path: &Path,
    case: &Value,
    update: bool,
) -> Result<(), String> {
    let dir: PathBuf = path.parent().map(Path::to_path_buf).unwrap_or_default();
    if case.get("operation").is_some() {
        return run_operation(function, &dir, case, update).await;
    }
    let mut inputs = inputs(&dir, case)?;
    let reconciles = case
        .get("reconciles")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1);
    let assume_ready = case
        .get("assumeReady")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut outcome = crate::render::pipeline(function, &inputs)
        .await
        .map_err(|e| e.to_string())?;
    let mut documents = outcome.documents(&inputs, false, true, false);
    for pass in 2..=reconciles {
        next_reconcile(&mut inputs, &documents, &outcome, assume_ready);
        outcome = crate::render::pipeline(function, &inputs)
            .await
            .map_err(|e| format!("reconcile {pass}: {e}"))?;
        documents = outcome.documents(&inputs, false, true, false);
    }
    verdict(&dir, case, &documents, &outcome, update)
}

/// Runs an Operation's case: `operation` (an Operation, CronOperation or
/// WatchOperation), `watchedResource`, and the rest as for a composite.
async fn run_operation(
    function: &StarlarkFunction,
    dir: &Path,
    case: &Value,
    update: bool,
) -> Result<(), String> {
    use crate::render::operation;
    let mut op =
        operation::operation_of(&one(dir, case, "operation")?).map_err(|e| e.to_string())?;
    let mut inputs = rest(dir, case, Value::Null, Value::Null)?;
    if case.get("watchedResource").is_some() {
        let watched = one(dir, case, "watchedResource")?;
        operation::inject_watched(&mut op, &watched);
        inputs.required.push(watched);
    }
    inputs.xr = op;
    let outcome = operation::pipeline(function, &inputs)
        .await
        .map_err(|e| e.to_string())?;
    let documents = operation::documents(&inputs.xr, &outcome, true, false);
    let applied = crate::render::Outcome {
        desired: outcome.desired.clone(),
        ..crate::render::Outcome::default()
    };
    verdict(dir, case, &documents, &applied, update)
}

/// Checks `documents` against the case's `expect`; with `update`, writes
/// its `output` file instead of comparing it.
fn verdict(
    dir: &Path,
    case: &Value,
    documents: &[Value],
    outcome: &crate::render::Outcome,
    update: bool,
) -> Result<(), String> {
    let expect = case.get("expect").cloned().unwrap_or_default();
    let mut failures = Vec::new();
    if let Some(file) = expect.get("output").and_then(Value::as_str) {
        let text = crate::render::output::text(documents).map_err(|e| e.to_string())?;
        let file = dir.join(file);
        if update {
            std::fs::write(&file, &text).map_err(|e| format!("{}: {e}", file.display()))?;
        } else {
            let want = std::fs::read_to_string(&file)
                .map_err(|e| format!("{}: {e} (run with --update to record it)", file.display()))?;
            if let Some(diff) = super::diff::first_difference(&want, &text) {
                failures.push(format!("output differs from {}:\n{diff}", file.display()));
            }
        }
    }
    super::expect::check(&expect, documents, outcome, &mut failures);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}
