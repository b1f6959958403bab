//! The `expect:` checks of a composition test, each failure saying where,
//! what was expected and what came out.

use serde_json::Value;

use crate::render::{Outcome, RESOURCE_NAME_ANNOTATION};

/// The value at a dotted path (`spec.forProvider.region`, `items.0.name`).
fn at<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(object, |v, key| match v {
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => v.get(key),
    })
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "nothing".to_owned(), Value::to_string)
}

/// The composed resource named `name` (by its composition-resource-name).
/// The composed (or, in an Operation, applied) resource the steps named
/// `name`: Crossplane annotates a composite's with it, and this function
/// labels every resource it emits with it.
fn composed<'d>(documents: &'d [Value], name: &str) -> Option<&'d Value> {
    documents.iter().skip(1).find(|d| {
        at(d, "metadata.annotations")
            .and_then(|a| a.get(RESOURCE_NAME_ANNOTATION))
            .or_else(|| at(d, "metadata.labels").and_then(|l| l.get(RESOURCE_NAME_LABEL)))
            .and_then(Value::as_str)
            == Some(name)
    })
}

/// The label this function puts on every resource it emits, naming it.
const RESOURCE_NAME_LABEL: &str = "function-starlark.crossplane.io/resource-name";

/// Whether two values are equal, numbers by value: a number that went
/// through a protobuf `Struct` (an Operation's output) is a double, and
/// `2` in a test file means `2.0` there.
fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        _ => got == want,
    }
}

/// `fields`, `matches`, `labels` and `annotations` of one object.
fn check_object(what: &str, object: &Value, expect: &Value, failures: &mut Vec<String>) {
    for (path, want) in expect
        .get("fields")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let got = at(object, path);
        if !got.is_some_and(|got| same(got, want)) {
            failures.push(format!("{what}: {path}: want {want}, got {}", show(got)));
        }
    }
    for (path, pattern) in expect
        .get("matches")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let pattern = pattern.as_str().unwrap_or_default();
        let got = at(object, path);
        let text = got.map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        match regex::Regex::new(pattern) {
            Err(e) => failures.push(format!("{what}: {path}: bad pattern {pattern:?}: {e}")),
            Ok(re) if !text.as_deref().is_some_and(|t| re.is_match(t)) => failures.push(format!(
                "{what}: {path}: want a match of {pattern:?}, got {}",
                show(got)
            )),
            Ok(_) => {}
        }
    }
    for key in ["labels", "annotations"] {
        for (k, want) in expect
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let got = at(object, &format!("metadata.{key}")).and_then(|m| m.get(k));
            if got != Some(want) {
                failures.push(format!(
                    "{what}: metadata.{key}[{k:?}]: want {want}, got {}",
                    show(got)
                ));
            }
        }
    }
}

/// Every check of `expect` against a render's documents and outcome.
pub fn check(expect: &Value, documents: &[Value], outcome: &Outcome, failures: &mut Vec<String>) {
    let resources: Vec<&Value> = documents
        .iter()
        .skip(1)
        .filter(|d| d.get("kind").and_then(Value::as_str) != Some("Result"))
        .collect();
    if let Some(want) = expect.get("count").and_then(Value::as_u64)
        && resources.len() as u64 != want
    {
        let names: Vec<String> = outcome.desired.resources.keys().cloned().collect();
        failures.push(format!(
            "count: want {want} composed resources, got {} ({})",
            resources.len(),
            names.join(", ")
        ));
    }
    for (name, want) in expect
        .get("resources")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let what = format!("resources.{name}");
        let found = composed(documents, name);
        if want.as_str() == Some("absent") {
            if found.is_some() {
                failures.push(format!("{what}: want absent, got the resource"));
            }
            continue;
        }
        let Some(object) = found else {
            failures.push(format!("{what}: want the resource, got none"));
            continue;
        };
        check_object(&what, object, want, failures);
        if let Some(ready) = want.get("ready").and_then(Value::as_bool) {
            let got = outcome
                .desired
                .resources
                .get(name)
                .is_some_and(|r| r.ready == function_sdk_rust::proto::v1::Ready::True as i32);
            if got != ready {
                failures.push(format!("{what}: ready: want {ready}, got {got}"));
            }
        }
    }
    // The first document: the XR, or the Operation.
    if let Some(want) = expect.get("xr") {
        check_object("xr", &documents[0], want, failures);
    }
    if let Some(want) = expect.get("operation") {
        check_object("operation", &documents[0], want, failures);
    }
    let conditions = at(&documents[0], "status.conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for want in expect
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let matches = |c: &Value| {
            want.as_object()
                .is_some_and(|w| w.iter().all(|(k, v)| c.get(k) == Some(v)))
        };
        if !conditions.iter().any(matches) {
            failures.push(format!(
                "conditions: want one with {want}, got {}",
                Value::Array(conditions.clone())
            ));
        }
    }
    let results: Vec<&Value> = documents
        .iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("Result"))
        .collect();
    for want in expect
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        // An event's type, Normal or Warning; `SEVERITY_NORMAL` and
        // `normal` say the same.
        let severity = want.get("severity").and_then(Value::as_str).map(|s| {
            let s = s
                .strip_prefix("SEVERITY_")
                .unwrap_or(s)
                .to_ascii_lowercase();
            let mut chars = s.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        });
        let pattern = want
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Ok(re) = regex::Regex::new(pattern) else {
            failures.push(format!("results: bad message pattern {pattern:?}"));
            continue;
        };
        let found = results.iter().any(|r| {
            severity
                .as_deref()
                .is_none_or(|s| r.get("severity").and_then(Value::as_str) == Some(s))
                && re.is_match(r.get("message").and_then(Value::as_str).unwrap_or_default())
        });
        if !found {
            let got: Vec<String> = results
                .iter()
                .map(|r| format!("{} {}", show(r.get("severity")), show(r.get("message"))))
                .collect();
            failures.push(format!(
                "results: want one like {want}, got [{}]",
                got.join("; ")
            ));
        }
    }
}
