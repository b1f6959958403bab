//! What `render` prints, as crossplane render prints it: the XR with its
//! conditions, the composed resources with Crossplane's metadata (sorted by
//! name), then the results and the context when asked for, each document
//! after a `---` line.

use function_sdk_rust::proto::v1::{
    Condition, Ready, Result as StepResult, Severity, State, Status,
};
use serde_json::{Map, Value, json};

use super::load::string_at;
use super::{RESOURCE_NAME_ANNOTATION, RenderError, from_struct};

/// The label Crossplane sets on a composed resource naming its composite.
const COMPOSITE_LABEL: &str = "crossplane.io/composite";

/// The label of a composite (and its composed resources) naming its claim.
const CLAIM_NAME_LABEL: &str = "crossplane.io/claim-name";

/// The label of a composite (and its composed resources) naming its claim's
/// namespace.
const CLAIM_NAMESPACE_LABEL: &str = "crossplane.io/claim-namespace";

/// The time crossplane render gives every condition.
const CONDITION_TIME: &str = "2024-01-01T00:00:00Z";

/// How many unready resources the Ready condition names.
const FIRST_N: usize = 3;

/// A step's result as a `Result` object.
pub fn result_object(step: &str, r: &StepResult) -> Value {
    let severity = Severity::try_from(r.severity).unwrap_or(Severity::Unspecified);
    json!({
        "apiVersion": "render.crossplane.io/v1beta1",
        "kind": "Result",
        "step": step,
        "severity": severity.as_str_name(),
        "message": r.message,
    })
}

/// The outcome of a pipeline, ready to print.
pub struct Rendered<'a> {
    pub xr: &'a Value,
    pub observed: &'a [Value],
    pub desired: &'a State,
    pub conditions: &'a [Condition],
    pub results: &'a [Value],
    pub context: Option<&'a pbjson_types::Struct>,
}

/// `object`'s map at `key`, created when missing.
fn map_at<'v>(object: &'v mut Value, key: &str) -> &'v mut Map<String, Value> {
    if !object.get(key).is_some_and(Value::is_object) {
        object[key] = Value::Object(Map::new());
    }
    object[key].as_object_mut().expect("just made an object")
}

/// Sets `metadata.<key>` to `value`, or removes it when `value` is empty
/// (as Kubernetes' unstructured setters do).
fn set_meta(object: &mut Value, key: &str, value: &str) {
    let meta = map_at(object, "metadata");
    if value.is_empty() {
        meta.remove(key);
    } else {
        meta.insert(key.to_owned(), Value::String(value.to_owned()));
    }
}

/// crossplane-runtime's `StableNAndSomeMore`: sorted, the first three, and
/// how many more.
fn some_names(mut names: Vec<String>) -> String {
    names.sort();
    match names.len().cmp(&FIRST_N) {
        std::cmp::Ordering::Greater => format!(
            "{}, and {} more",
            names[..FIRST_N].join(", "),
            names.len() - FIRST_N
        ),
        std::cmp::Ordering::Equal => format!(
            "{}, and {}",
            names[..FIRST_N - 1].join(", "),
            names[FIRST_N - 1]
        ),
        std::cmp::Ordering::Less => names.join(", "),
    }
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    let mut c = json!({
        "type": kind,
        "status": status,
        "reason": reason,
        "lastTransitionTime": CONDITION_TIME,
    });
    if !message.is_empty() {
        c["message"] = Value::String(message.to_owned());
    }
    c
}

/// crossplane-runtime's `SetConditions`: a condition replaces the one of its
/// type unless they are equal, or is appended.
fn set_condition(object: &mut Value, c: Value) {
    let status = map_at(object, "status");
    let list = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let list = list.as_array_mut().expect("just made an array");
    let same = |a: &Value, b: &Value, key: &str| a.get(key) == b.get(key);
    let mut found = false;
    for existing in list.iter_mut() {
        if !same(existing, &c, "type") {
            continue;
        }
        found = true;
        if !(same(existing, &c, "status")
            && same(existing, &c, "reason")
            && same(existing, &c, "message"))
        {
            *existing = c.clone();
        }
    }
    if !found {
        list.push(c);
    }
}

fn status_text(status: i32) -> &'static str {
    match Status::try_from(status) {
        Ok(Status::ConditionTrue) => "True",
        Ok(Status::ConditionFalse) => "False",
        _ => "Unknown",
    }
}

impl Rendered<'_> {
    /// The desired XR: what the steps set, named after the input XR, with
    /// the Ready condition and the steps' other conditions.
    fn composite(&self, full: bool) -> Value {
        let composite = self.desired.composite.as_ref();
        let mut xr = from_struct(composite.and_then(|c| c.resource.as_ref()));
        xr["apiVersion"] = Value::String(string_at(self.xr, "apiVersion").to_owned());
        xr["kind"] = Value::String(string_at(self.xr, "kind").to_owned());
        set_meta(&mut xr, "name", string_at(self.xr, "metadata.name"));
        set_meta(
            &mut xr,
            "namespace",
            string_at(self.xr, "metadata.namespace"),
        );
        let unready: Vec<String> = self
            .desired
            .resources
            .iter()
            .filter(|(_, r)| r.ready != Ready::True as i32)
            .map(|(name, _)| name.clone())
            .collect();
        let ready = composite.map_or(Ready::Unspecified as i32, |c| c.ready);
        let cond = if ready == Ready::False as i32 {
            condition("Ready", "False", "Creating", "")
        } else if ready == Ready::Unspecified as i32 && !unready.is_empty() {
            let message = format!("Unready resources: {}", some_names(unready));
            condition("Ready", "False", "Creating", &message)
        } else {
            condition("Ready", "True", "Available", "")
        };
        set_condition(&mut xr, cond);
        for c in self.conditions {
            if matches!(c.r#type.as_str(), "Ready" | "Synced" | "Healthy") {
                continue;
            }
            let message = c.message.clone().unwrap_or_default();
            set_condition(
                &mut xr,
                condition(&c.r#type, status_text(c.status), &c.reason, &message),
            );
        }
        if full {
            for key in ["spec", "metadata"] {
                if let Some(v) = self.xr.get(key) {
                    xr[key] = v.clone();
                }
            }
        }
        xr
    }

    /// The desired composed resources with Crossplane's metadata, by name.
    fn composed(&self) -> Vec<Value> {
        let xr_labels = self.xr.pointer("/metadata/labels");
        let label = |key: &str| {
            xr_labels
                .and_then(|l| l.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let prefix = match label(COMPOSITE_LABEL) {
            "" => string_at(self.xr, "metadata.name"),
            composite => composite,
        };
        let mut names: Vec<&String> = self.desired.resources.keys().collect();
        names.sort();
        let mut out = Vec::new();
        for name in names {
            let mut cd = from_struct(self.desired.resources[name].resource.as_ref());
            let observed = self.observed.iter().find(|o| {
                o.pointer("/metadata/annotations")
                    .and_then(|a| a.get(RESOURCE_NAME_ANNOTATION))
                    .and_then(Value::as_str)
                    == Some(name.as_str())
            });
            if let Some(o) = observed {
                for key in ["namespace", "name", "generateName"] {
                    set_meta(&mut cd, key, string_at(o, &format!("metadata.{key}")));
                }
            }
            if string_at(&cd, "metadata.name").is_empty()
                && string_at(&cd, "metadata.generateName").is_empty()
            {
                set_meta(&mut cd, "generateName", &format!("{prefix}-"));
            }
            let xr_namespace = string_at(self.xr, "metadata.namespace");
            if !xr_namespace.is_empty() {
                set_meta(&mut cd, "namespace", xr_namespace);
            }
            let meta = map_at(&mut cd, "metadata");
            let annotations = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(
                    RESOURCE_NAME_ANNOTATION.to_owned(),
                    Value::String(name.clone()),
                );
            }
            let labels = meta
                .entry("labels")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(l) = labels.as_object_mut() {
                l.insert(COMPOSITE_LABEL.to_owned(), Value::String(prefix.to_owned()));
                let (claim, claim_namespace) =
                    (label(CLAIM_NAME_LABEL), label(CLAIM_NAMESPACE_LABEL));
                let reference = self.xr.pointer("/spec/claimRef");
                if !claim.is_empty() && !claim_namespace.is_empty() {
                    l.insert(
                        CLAIM_NAMESPACE_LABEL.to_owned(),
                        Value::String(claim_namespace.to_owned()),
                    );
                    l.insert(CLAIM_NAME_LABEL.to_owned(), Value::String(claim.to_owned()));
                } else if let Some(r) = reference {
                    l.insert(
                        CLAIM_NAMESPACE_LABEL.to_owned(),
                        Value::String(string_at(r, "namespace").to_owned()),
                    );
                    l.insert(
                        CLAIM_NAME_LABEL.to_owned(),
                        Value::String(string_at(r, "name").to_owned()),
                    );
                }
            }
            let owner = json!({
                "apiVersion": string_at(self.xr, "apiVersion"),
                "kind": string_at(self.xr, "kind"),
                "name": string_at(self.xr, "metadata.name"),
                "uid": string_at(self.xr, "metadata.uid"),
                "controller": true,
                "blockOwnerDeletion": true,
            });
            let refs = meta
                .entry("ownerReferences")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Some(refs) = refs.as_array_mut() {
                match refs.iter_mut().find(|r| r.get("uid") == owner.get("uid")) {
                    Some(existing) => *existing = owner,
                    None => refs.push(owner),
                }
            }
            out.push(cd);
        }
        out
    }

    /// The output documents.
    pub fn documents(&self, full_xr: bool, results: bool, context: bool) -> Vec<Value> {
        let mut documents = vec![self.composite(full_xr)];
        documents.extend(self.composed());
        if results {
            documents.extend(self.results.iter().cloned());
        }
        if context {
            documents.push(json!({
                "apiVersion": "render.crossplane.io/v1beta1",
                "kind": "Context",
                "fields": from_struct(self.context),
            }));
        }
        documents
    }
}

/// The YAML stream of `documents`, each after a `---` line.
pub fn text(documents: &[Value]) -> Result<String, RenderError> {
    let mut out = String::new();
    for doc in documents {
        out.push_str("---\n");
        let text = crate::builtins::yaml::json_as_yaml(doc)
            .map_err(|e| RenderError::Invalid(format!("cannot write the output as YAML: {e}")))?;
        out.push_str(&text);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::some_names;

    #[test]
    fn the_ready_message_names_three_and_counts_the_rest() {
        let names = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(some_names(names(&["b", "a"])), "a, b");
        assert_eq!(some_names(names(&["c", "a", "b"])), "a, b, and c");
        assert_eq!(
            some_names(names(&["d", "c", "a", "b", "e"])),
            "a, b, c, and 2 more"
        );
    }
}
