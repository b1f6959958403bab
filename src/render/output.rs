//! What `render` prints, as `crossplane composition render` (CLI v2.5.0,
//! running Crossplane v2.3.4's reconciler) prints it: the XR as the
//! reconciler leaves it (its name, the references to what it composed and
//! its status), the composed resources with the names and metadata
//! Crossplane gives them (sorted by composition resource name), then the
//! events of the reconcile and the context when asked for, each document
//! after a `---` line.

use function_sdk_rust::proto::v1::{
    Condition, Ready, Result as StepResult, Severity, State, Status,
};
use serde_json::{Map, Value, json};
use sha1::Sha1;
use sha2::{Digest, Sha256};

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

/// Condition types only Crossplane sets: a function's are ignored.
const SYSTEM_CONDITIONS: [&str; 5] = ["Ready", "Synced", "Healthy", "UpToDate", "Responsive"];

/// The reason of the events a pipeline's results become, unless a result
/// names its own.
const REASON_COMPOSE: &str = "ComposeResources";

/// How many unready resources the Ready condition names.
const FIRST_N: usize = 3;

/// The event a step's result becomes, as a `Result` object: Crossplane
/// prefixes the message with the step and records Normal and Warning
/// results as events of those types (a result of no severity as a
/// Warning saying so).
pub fn result_object(step: &str, r: &StepResult) -> Value {
    let reason = r
        .reason
        .as_deref()
        .filter(|reason| !reason.is_empty())
        .unwrap_or(REASON_COMPOSE);
    step_event(step, r, reason)
}

/// A step's result as the event Crossplane records, with `reason`: a
/// composite's reconciler and an Operation's word them alike.
pub(super) fn step_event(step: &str, r: &StepResult, reason: &str) -> Value {
    let severity = Severity::try_from(r.severity).unwrap_or(Severity::Unspecified);
    let (kind, message) = match severity {
        Severity::Normal => ("Normal", format!("Pipeline step {step:?}: {}", r.message)),
        Severity::Warning | Severity::Fatal => {
            ("Warning", format!("Pipeline step {step:?}: {}", r.message))
        }
        Severity::Unspecified => (
            "Warning",
            format!(
                "Pipeline step {step:?} returned a result of unknown severity (assuming warning): {}",
                r.message
            ),
        ),
    };
    event(kind, reason, &message)
}

/// An event of the reconcile as crossplane render prints it.
fn event(kind: &str, reason: &str, message: &str) -> Value {
    json!({
        "apiVersion": "render.crossplane.io/v1beta1",
        "kind": "Result",
        "severity": kind,
        "reason": reason,
        "message": message,
    })
}

/// The outcome of a pipeline, ready to print.
pub struct Rendered<'a> {
    pub xr: &'a Value,
    /// The Composition's name.
    pub composition: &'a str,
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

pub(super) fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
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
    /// The XR's uid: its own, or the one crossplane render makes up for it
    /// (a UUID, version 5, of its kind, namespace and name).
    fn uid(&self) -> String {
        let own = string_at(self.xr, "metadata.uid");
        if !own.is_empty() {
            return own.to_owned();
        }
        let api_version = string_at(self.xr, "apiVersion");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let kind = string_at(self.xr, "kind");
        let namespace = string_at(self.xr, "metadata.namespace");
        let name = string_at(self.xr, "metadata.name");
        uuid_v5_nil(&format!(
            "{group}/{version}, Kind={kind}\0{namespace}\0{name}"
        ))
    }

    /// The XR as the reconciler leaves it: named, the references to what it
    /// composed, and the status the steps desired with its conditions.
    fn composite(&self, composed: &[(String, Value)], full: bool) -> Value {
        let desired = from_struct(
            self.desired
                .composite
                .as_ref()
                .and_then(|c| c.resource.as_ref()),
        );
        let mut xr = json!({
            "apiVersion": string_at(self.xr, "apiVersion"),
            "kind": string_at(self.xr, "kind"),
            "metadata": {},
            "spec": {"crossplane": {"resourceRefs": resource_refs(self.xr, composed)}},
        });
        set_meta(&mut xr, "name", string_at(self.xr, "metadata.name"));
        set_meta(
            &mut xr,
            "namespace",
            string_at(self.xr, "metadata.namespace"),
        );
        if let Some(status) = desired.get("status").filter(|s| s.is_object()) {
            xr["status"] = status.clone();
        }
        // The XR's own conditions, then Responsive, merged into those the
        // steps desired; then the steps' conditions, Synced and Ready.
        let own = self
            .xr
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for c in own {
            set_condition(&mut xr, c);
        }
        set_condition(
            &mut xr,
            condition("Responsive", "True", "WatchCircuitClosed", ""),
        );
        for c in self.conditions {
            if SYSTEM_CONDITIONS.contains(&c.r#type.as_str()) {
                continue;
            }
            let message = c.message.clone().unwrap_or_default();
            set_condition(
                &mut xr,
                condition(&c.r#type, status_text(c.status), &c.reason, &message),
            );
        }
        set_condition(&mut xr, condition("Synced", "True", "ReconcileSuccess", ""));
        let unready = self.unready();
        let ready = match self.desired.composite.as_ref().map(|c| c.ready) {
            Some(r) if r == Ready::True as i32 => condition("Ready", "True", "Available", ""),
            Some(r) if r == Ready::False as i32 => condition("Ready", "False", "Creating", ""),
            _ if unready.is_empty() => condition("Ready", "True", "Available", ""),
            _ => condition(
                "Ready",
                "False",
                "Creating",
                &format!("Unready resources: {}", some_names(unready)),
            ),
        };
        set_condition(&mut xr, ready);
        if full {
            let mut whole = self.xr.clone();
            merge_over(&mut whole, xr);
            return whole;
        }
        xr
    }

    /// The composed resources the steps desired that are not ready, by name.
    fn unready(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .desired
            .resources
            .iter()
            .filter(|(_, r)| r.ready != Ready::True as i32)
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }

    /// The desired composed resources with Crossplane's metadata, by
    /// composition resource name.
    fn composed(&self) -> Vec<(String, Value)> {
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
        let uid = self.uid();
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
                if !claim.is_empty() && !claim_namespace.is_empty() {
                    l.insert(
                        CLAIM_NAMESPACE_LABEL.to_owned(),
                        Value::String(claim_namespace.to_owned()),
                    );
                    l.insert(CLAIM_NAME_LABEL.to_owned(), Value::String(claim.to_owned()));
                }
            }
            let owner = json!({
                "apiVersion": string_at(self.xr, "apiVersion"),
                "kind": string_at(self.xr, "kind"),
                "name": string_at(self.xr, "metadata.name"),
                "uid": uid,
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
            if string_at(&cd, "metadata.name").is_empty() {
                let generated = child_name(string_at(&cd, "metadata.generateName"), &uid, name);
                set_meta(&mut cd, "name", &generated);
            }
            out.push((name.clone(), cd));
        }
        out
    }

    /// The reconcile's events: the Composition selected (unless the XR
    /// named it already), the steps' results, a Warning for each resource
    /// a namespaced XR's steps put in another namespace, and each composed
    /// resource not yet ready (by name; Crossplane's order is a map's).
    fn events(&self) -> Vec<Value> {
        let mut events = Vec::new();
        let selected = self
            .xr
            .pointer("/spec/crossplane/compositionRef/name")
            .and_then(Value::as_str);
        if selected != Some(self.composition) {
            events.push(event(
                "Normal",
                "SelectComposition",
                &format!("Successfully selected composition: {}", self.composition),
            ));
        }
        events.extend(self.results.iter().cloned());
        let xr_namespace = string_at(self.xr, "metadata.namespace");
        if !xr_namespace.is_empty() {
            let mut names: Vec<&String> = self.desired.resources.keys().collect();
            names.sort();
            for name in names {
                let body = from_struct(self.desired.resources[name].resource.as_ref());
                let namespace = string_at(&body, "metadata.namespace");
                if !namespace.is_empty() && namespace != xr_namespace {
                    events.push(event(
                        "Warning",
                        "NamespaceOverridden",
                        &format!(
                            "cannot create composed resource {name:?} in namespace {namespace:?}, using XR namespace {xr_namespace:?} instead"
                        ),
                    ));
                }
            }
        }
        for name in self.unready() {
            events.push(event(
                "Normal",
                REASON_COMPOSE,
                &format!("Composed resource {name:?} is not yet ready"),
            ));
        }
        events
    }

    /// The output documents.
    pub fn documents(&self, full_xr: bool, results: bool, context: bool) -> Vec<Value> {
        let composed = self.composed();
        let mut documents = vec![self.composite(&composed, full_xr)];
        documents.extend(composed.into_iter().map(|(_, cd)| cd));
        if results {
            documents.extend(self.events());
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

/// References to the composed resources, sorted as Crossplane sorts them;
/// a namespaced XR's carry no namespace (its resources are in its own).
fn resource_refs(xr: &Value, composed: &[(String, Value)]) -> Value {
    let namespaced = !string_at(xr, "metadata.namespace").is_empty();
    let mut refs: Vec<(String, Value)> = composed
        .iter()
        .map(|(_, cd)| {
            let api_version = string_at(cd, "apiVersion");
            let kind = string_at(cd, "kind");
            let name = string_at(cd, "metadata.name");
            let namespace = if namespaced {
                ""
            } else {
                string_at(cd, "metadata.namespace")
            };
            let mut reference = json!({"apiVersion": api_version, "kind": kind, "name": name});
            if !namespace.is_empty() {
                reference["namespace"] = Value::String(namespace.to_owned());
            }
            (format!("{api_version}{kind}{name}{namespace}"), reference)
        })
        .collect();
    refs.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Array(refs.into_iter().map(|(_, r)| r).collect())
}

/// Crossplane's name for a composed resource: the name prefix, then 12 hex
/// digits of the SHA-256 of the owner's uid and the resource's name in its
/// Composition, within Kubernetes' 63 characters.
fn child_name(parent: &str, uid: &str, child: &str) -> String {
    const MAX: usize = 63;
    const HASH: usize = 12;
    let digest = Sha256::digest(format!("{uid}{child}").as_bytes());
    let suffix = &hex(&digest)[..HASH];
    let mut parent = parent.to_owned();
    if !parent.is_empty() && !parent.ends_with('-') {
        parent.push('-');
    }
    if parent.len() + HASH <= MAX {
        return parent + suffix;
    }
    let mut keep = MAX - HASH;
    while !parent.is_char_boundary(keep) {
        keep -= 1;
    }
    let mut truncated = parent[..keep].to_owned();
    if !truncated.ends_with('-') {
        truncated.pop();
        truncated.push('-');
    }
    truncated + suffix
}

/// Lowercase hexadecimal digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .map(|n| char::from_digit(u32::from(n), 16).expect("a hex digit"))
        .collect()
}

/// The UUID, version 5 (RFC 9562: SHA-1 of a namespace and a name), of
/// `name` in the nil namespace, as Go's `uuid.NewSHA1(uuid.Nil, name)`.
fn uuid_v5_nil(name: &str) -> String {
    let mut hasher = Sha1::new();
    hasher.update([0u8; 16]);
    hasher.update(name.as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x50;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex(&bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// `over` merged into `base` as crossplane render merges its output into
/// the input XR for `--include-full-xr`: maps key by key, anything else
/// replaced unless `over`'s is empty.
fn merge_over(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(existing) => merge_over(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => {
            let empty = match &over {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => o.is_empty(),
                Value::Bool(b) => !b,
                Value::Number(n) => n.as_f64() == Some(0.0),
            };
            if !empty {
                *base = over;
            }
        }
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
    use super::{child_name, some_names, uuid_v5_nil};

    #[test]
    fn the_xr_uid_and_composed_names_are_crossplane_renders() {
        // What crossplane render v2.5.0 printed for examples/bucket-topic.
        let uid = uuid_v5_nil("example.crossplane.io/v1, Kind=XNotifiedBucket\0\0photos");
        assert_eq!(uid, "fbbe4d6d-3b24-5323-bc69-ee3978de0ea3");
        assert_eq!(child_name("photos-", &uid, "bucket"), "photos-356e9f89ea27");
        assert_eq!(child_name("photos", &uid, "topic"), "photos-850a410c2e16");
        let long = "a".repeat(60);
        let name = child_name(&long, &uid, "bucket");
        assert_eq!(name.len(), 63);
        assert_eq!(&name[50..], "-356e9f89ea27");
    }

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
