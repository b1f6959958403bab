//! Writing what a run recorded into the response, stage by stage in the
//! Go implementation's order. A stage that fails returns the error with
//! everything before it already applied, which is exactly what the Go
//! implementation leaves in the response for that failure.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::time::Duration;

use function_sdk_rust::proto::v1::{
    self as pb, MatchLabels, Ready, Requirements, ResourceSelector, RunFunctionResponse,
    Severity as PbSeverity, Status, resource_selector,
};
use function_sdk_rust::response;
use pbjson_types::value::Kind;
use pbjson_types::{Struct, Value as PbValue};
use sha2::{Digest, Sha256};

use crate::builtins::conditions::COMPOSED_RESOURCES_READY;
use crate::builtins::resources::RESOURCE_NAME_LABEL;
use crate::effects::{
    Body, Condition, Dependency, DependencyKind, Effects, Emitted, Event, Match, Severity, Target,
};
use crate::error::Error;
use crate::go::duration::{parse_go_duration, to_seconds_nanos};
use crate::request::Request;

mod schemas;

/// Which Usage API generated Usage resources use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageApi {
    /// `apiextensions.crossplane.io/v1beta1` (Crossplane 1.x).
    V1,
    /// `protection.crossplane.io/v1beta1` (Crossplane 2.x), the default.
    V2,
}

impl UsageApi {
    /// The Usage resources' apiVersion.
    pub fn api_version(self) -> &'static str {
        match self {
            UsageApi::V1 => "apiextensions.crossplane.io/v1beta1",
            UsageApi::V2 => "protection.crossplane.io/v1beta1",
        }
    }
}

/// The Normal result that closes a successful run.
pub const SUCCESS_MESSAGE: &str = "function-starlark: executed successfully";

/// The response TTL while sequencing defers resources, unless the input
/// sets `sequencingTTL`.
const DEFAULT_SEQUENCING_TTL: Duration = Duration::from_secs(10);

/// Counts the metrics need from a successful application.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// Resources written to desired state (Usages excluded).
    pub emitted: usize,
    /// Resources held back by creation sequencing.
    pub deferred: usize,
}

/// What the input says about dependencies.
pub struct DependencySettings<'a> {
    /// Which Usage API to generate.
    pub usage_api: UsageApi,
    /// `spec.sequencingTTL` as given.
    pub sequencing_ttl: Option<&'a str>,
    /// `spec.validateSchemas`: require the composed kinds' schemas and warn
    /// of what does not fit them.
    pub validate_schemas: bool,
}

/// The `fatal()` path: the message first, then every event, plus the
/// conditions and requirements recorded so far. Nothing else.
pub fn apply_fatal(rsp: &mut RunFunctionResponse, effects: &Effects, message: String) {
    response::fatal(rsp, message);
    for event in effects.events.borrow().iter() {
        push_event(rsp, event);
    }
    for condition in effects.conditions.borrow().iter() {
        push_condition(rsp, condition);
    }
    apply_requirements(rsp, effects);
}

/// Bodies of composed resources already encoded, by resource name: the
/// response holds their other fields, and its encoding takes the body from
/// here (see `engine::wire`).
pub type EncodedBodies = BTreeMap<String, bytes::Bytes>;

/// The success path: each stage below writes its part of the response, in
/// the order the response is built. Encoded bodies go to `bodies`.
pub fn apply_success(
    rsp: &mut RunFunctionResponse,
    bodies: &mut EncodedBodies,
    request: &Request,
    effects: &Effects,
    dxr: Result<Struct, String>,
    context: Result<Struct, String>,
    settings: &DependencySettings,
) -> Result<Applied, Error> {
    // Applying is the last use of what the run emitted: take it rather than copy.
    let mut resources = std::mem::take(&mut *effects.resources.borrow_mut());
    let sequencing = sequence(rsp, request, effects, &mut resources, settings)?;
    // The script's own TTL beats sequencing's.
    if let Some(nanos) = effects.response_ttl.get() {
        set_ttl(rsp, (nanos != 0).then(|| duration_from_nanos(nanos)));
    }
    let emitted = resources.len();
    emit_resources(rsp, bodies, resources);
    let readiness = readiness(effects, &sequencing.defers);
    set_composite(rsp, dxr.map_err(Error::Dxr)?, readiness.as_ref());
    merge_context(rsp, context.map_err(Error::Context)?);
    set_connection_details(rsp, effects);
    push_conditions(rsp, effects, readiness.and_then(|(_, gating)| gating));
    push_events(rsp, effects, sequencing.event);
    apply_requirements(rsp, effects);
    for warning in effects.requirement_warnings.borrow().iter() {
        response::warning(rsp, warning.clone());
    }
    if settings.validate_schemas {
        // Validation reads the bodies as structs.
        for (name, body) in std::mem::take(bodies) {
            response::desired_composed(rsp, name).resource = Some(Body::Encoded(body).to_struct());
        }
        schemas::validate(rsp, request);
    }
    response::normal(rsp, SUCCESS_MESSAGE);
    Ok(Applied {
        emitted,
        deferred: sequencing.defers.len(),
    })
}

/// What creation sequencing decided.
#[derive(Default)]
struct Sequencing {
    /// The deferred resources and why each waits.
    defers: Vec<(String, String)>,
    /// The warning that names the deferred resources.
    event: Option<String>,
}

/// Creation sequencing: checks the declared dependencies, writes a Usage
/// for each, and holds back every resource whose dependencies are not
/// ready yet (asking to be called again after the sequencing TTL).
fn sequence(
    rsp: &mut RunFunctionResponse,
    request: &Request,
    effects: &Effects,
    resources: &mut BTreeMap<String, Emitted>,
    settings: &DependencySettings,
) -> Result<Sequencing, Error> {
    let dependencies = effects.dependencies.borrow();
    if dependencies.is_empty() {
        return Ok(Sequencing::default());
    }
    check_dependencies(rsp, &dependencies, resources)?;
    emit_usages(rsp, &dependencies, resources, settings.usage_api);
    let ttl = sequencing_ttl(settings.sequencing_ttl)?;
    let sequencing = defer_unready(request, &dependencies, resources);
    set_ttl(rsp, (!sequencing.defers.is_empty()).then_some(ttl));
    Ok(sequencing)
}

/// Refuses a `depends_on` naming a resource value this script did not
/// create and a dependency cycle; warns of a name that matches nothing.
fn check_dependencies(
    rsp: &mut RunFunctionResponse,
    dependencies: &[Dependency],
    resources: &BTreeMap<String, Emitted>,
) -> Result<(), Error> {
    let known: BTreeSet<&str> = resources.keys().map(String::as_str).collect();
    // Only a message needs the list, and most runs have none.
    let available = || {
        known
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for d in dependencies {
        if d.kind == DependencyKind::Ref && !known.contains(d.dependency.as_str()) {
            let available = available();
            return Err(Error::Dependency(format!(
                "Resource({:?}): depends_on references {:?} which was not created by this script; available resources: [{available}]",
                d.dependent, d.dependency
            )));
        }
    }
    let edges: Vec<(&str, &str)> = dependencies
        .iter()
        .map(|d| (d.dependent.as_str(), d.dependency.as_str()))
        .collect();
    if let Some(cycle) = find_cycle(&edges) {
        return Err(Error::Dependency(format!(
            "circular dependency detected: {}",
            cycle.join(" -> ")
        )));
    }
    for d in dependencies {
        if d.kind == DependencyKind::Name && !known.contains(d.dependency.as_str()) {
            let available = available();
            response::warning(
                rsp,
                format!(
                    "depends_on: {:?} (string ref in Resource({:?})) does not match any resource created by this script; available resources: [{available}]",
                    d.dependency, d.dependent
                ),
            );
        }
    }
    Ok(())
}

/// One ready Usage per distinct dependency edge, protecting the dependency
/// from deletion while its dependent exists.
fn emit_usages(
    rsp: &mut RunFunctionResponse,
    dependencies: &[Dependency],
    resources: &BTreeMap<String, Emitted>,
    api: UsageApi,
) {
    let mut seen = BTreeSet::new();
    for d in dependencies {
        if !seen.insert((d.dependent.as_str(), d.dependency.as_str())) {
            continue;
        }
        let (name, body) = usage(api, &d.dependent, &d.dependency, resources);
        *response::desired_composed(rsp, name) = pb::Resource {
            resource: Some(body),
            connection_details: HashMap::new(),
            ready: Ready::True as i32,
        };
    }
}

/// `spec.sequencingTTL`, or the default when it is not given.
fn sequencing_ttl(raw: Option<&str>) -> Result<Duration, Error> {
    let Some(raw) = raw else {
        return Ok(DEFAULT_SEQUENCING_TTL);
    };
    parse_go_duration(raw)
        .map(duration_from_nanos)
        .map_err(|e| Error::SequencingTtl {
            value: raw.to_owned(),
            detail: e.to_string(),
        })
}

/// Removes from `resources` every dependent that is not observed yet and
/// whose dependencies are not ready, with the reasons it waits.
fn defer_unready(
    request: &Request,
    dependencies: &[Dependency],
    resources: &mut BTreeMap<String, Emitted>,
) -> Sequencing {
    let observed = request.observed.as_ref().map(|o| &o.resources);
    let mut waiting: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for d in dependencies {
        let reasons = unmet(request, &d.dependency, d.field_path.as_deref());
        if !reasons.is_empty() {
            waiting
                .entry(d.dependent.as_str())
                .or_default()
                .extend(reasons);
        }
    }
    let deferred: Vec<(&str, Vec<String>)> = waiting
        .into_iter()
        .filter(|(dependent, _)| !observed.is_some_and(|o| o.contains_key(*dependent)))
        .collect();
    if deferred.is_empty() {
        return Sequencing::default();
    }
    let mut defers = Vec::with_capacity(deferred.len());
    for (name, reasons) in &deferred {
        resources.remove(*name);
        defers.push(((*name).to_owned(), reasons.join("; ")));
    }
    let names: Vec<&str> = deferred.iter().map(|(n, _)| *n).collect();
    Sequencing {
        defers,
        event: Some(format!(
            "Creation sequencing: {} resource(s) deferred: {}",
            names.len(),
            names.join(", ")
        )),
    }
}

/// The composed resources the script emitted (and sequencing kept).
fn emit_resources(
    rsp: &mut RunFunctionResponse,
    bodies: &mut EncodedBodies,
    resources: BTreeMap<String, Emitted>,
) {
    for (name, r) in resources {
        let resource = match r.body {
            Body::Struct(body) => Some(body),
            Body::Encoded(body) => {
                bodies.insert(name.clone(), body);
                None
            }
        };
        *response::desired_composed(rsp, name) = pb::Resource {
            resource,
            connection_details: r.connection_details.into_iter().collect(),
            ready: r.ready as i32,
        };
    }
}

/// The desired composite: its body is `dxr` as the script left it, its
/// readiness what the script or sequencing decided.
fn set_composite(
    rsp: &mut RunFunctionResponse,
    dxr: Struct,
    readiness: Option<&(bool, Option<Condition>)>,
) {
    let composite = response::desired_composite(rsp);
    composite.resource = Some(dxr);
    if let Some((ready, _)) = readiness {
        composite.ready = if *ready { Ready::True } else { Ready::False } as i32;
    }
}

/// The script's context keys overwrite the pipeline's; the others are kept.
fn merge_context(rsp: &mut RunFunctionResponse, context: Struct) {
    rsp.context
        .get_or_insert_default()
        .fields
        .extend(context.fields);
}

/// The XR's connection details the script set.
fn set_connection_details(rsp: &mut RunFunctionResponse, effects: &Effects) {
    let details = effects.xr_connection_details.borrow();
    if !details.is_empty() {
        let composite = response::desired_composite(rsp);
        for (k, v) in details.iter() {
            composite.connection_details.insert(k.clone(), v.clone());
        }
    }
}

/// The script's conditions, then the gating condition readiness adds.
fn push_conditions(rsp: &mut RunFunctionResponse, effects: &Effects, gating: Option<Condition>) {
    for condition in effects.conditions.borrow().iter() {
        push_condition(rsp, condition);
    }
    if let Some(condition) = &gating {
        push_condition(rsp, condition);
    }
}

/// The script's events, then the sequencing summary.
fn push_events(rsp: &mut RunFunctionResponse, effects: &Effects, sequencing: Option<String>) {
    for event in effects.events.borrow().iter() {
        push_event(rsp, event);
    }
    if let Some(message) = sequencing {
        response::warning(rsp, message);
    }
}

fn duration_from_nanos(nanos: i64) -> Duration {
    // Negative durations cannot be represented; treat them as zero.
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(0))
}

fn set_ttl(rsp: &mut RunFunctionResponse, ttl: Option<Duration>) {
    let meta = rsp.meta.get_or_insert_default();
    meta.ttl = ttl.map(|d| {
        let (seconds, nanos) = to_seconds_nanos(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        pbjson_types::Duration { seconds, nanos }
    });
}

/// The readiness the XR ends up with, and the gating condition if any.
fn readiness(effects: &Effects, defers: &[(String, String)]) -> Option<(bool, Option<Condition>)> {
    let condition = |status: &str, reason: &str, message: String| Condition {
        kind: COMPOSED_RESOURCES_READY.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message,
        target: Target::CompositeAndClaim,
    };
    if let Some(o) = effects.ready_override.borrow().as_ref() {
        let status = if o.ready { "True" } else { "False" };
        let gate = (!o.reason.is_empty()).then(|| condition(status, &o.reason, o.message.clone()));
        return Some((o.ready, gate));
    }
    let skips = effects.gating_skips.borrow();
    let render = |entries: &[(String, String)]| {
        entries
            .iter()
            .map(|(name, reason)| {
                if reason.is_empty() {
                    format!("{name:?}")
                } else {
                    format!("{name:?} ({reason})")
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let (reason, message) = match (skips.is_empty(), defers.is_empty()) {
        (true, true) => return None,
        (false, true) => (
            "PendingConditionalResources",
            format!("Pending resources: {}", render(&skips)),
        ),
        (true, false) => (
            "WaitingForDependencies",
            format!("Waiting on dependencies: {}", render(defers)),
        ),
        (false, false) => (
            "CompositeNotReady",
            format!(
                "Pending resources: {}; Waiting on dependencies: {}",
                render(&skips),
                render(defers)
            ),
        ),
    };
    Some((false, Some(condition("False", reason, message))))
}

fn push_condition(rsp: &mut RunFunctionResponse, c: &Condition) {
    let status = match c.status.as_str() {
        "True" => Status::ConditionTrue,
        "False" => Status::ConditionFalse,
        _ => Status::ConditionUnknown,
    };
    rsp.conditions.push(pb::Condition {
        r#type: c.kind.clone(),
        status: status as i32,
        reason: c.reason.clone(),
        message: (!c.message.is_empty()).then(|| c.message.clone()),
        target: Some(target(c.target) as i32),
    });
}

fn target(t: Target) -> pb::Target {
    match t {
        Target::Composite => pb::Target::Composite,
        Target::CompositeAndClaim => pb::Target::CompositeAndClaim,
    }
}

fn push_event(rsp: &mut RunFunctionResponse, e: &Event) {
    let severity = match e.severity {
        Severity::Normal => PbSeverity::Normal,
        Severity::Warning => PbSeverity::Warning,
    };
    rsp.results.push(pb::Result {
        severity: severity as i32,
        message: e.message.clone(),
        reason: None,
        target: Some(target(e.target) as i32),
    });
}

fn apply_requirements(rsp: &mut RunFunctionResponse, effects: &Effects) {
    let requirements = effects.requirements.borrow();
    if requirements.is_empty() {
        return;
    }
    let selectors: HashMap<String, ResourceSelector> = requirements
        .iter()
        .map(|(name, r)| {
            let matching = match &r.matching {
                Match::Name(n) => Some(resource_selector::Match::MatchName(n.clone())),
                Match::Labels(l) if l.is_empty() => None,
                Match::Labels(l) => Some(resource_selector::Match::MatchLabels(MatchLabels {
                    labels: l.clone().into_iter().collect(),
                })),
            };
            (
                name.clone(),
                ResourceSelector {
                    api_version: r.api_version.clone(),
                    kind: r.kind.clone(),
                    r#match: matching,
                    namespace: None,
                },
            )
        })
        .collect();
    let target = rsp.requirements.get_or_insert_with(Requirements::default);
    target.extra_resources.extend(selectors.clone());
    target.resources.extend(selectors);
}

/// The first cycle among `edges` (dependent → dependency): depth-first from
/// each node in sorted order, neighbours in recording order, reported from
/// the node the back edge points to back to itself.
fn find_cycle<'a>(edges: &[(&'a str, &'a str)]) -> Option<Vec<&'a str>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        OnStack,
        Done,
    }
    fn visit<'a>(
        node: &'a str,
        adjacency: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut HashMap<&'a str, State>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        state.insert(node, State::OnStack);
        stack.push(node);
        for next in &adjacency[node] {
            match state[next] {
                State::OnStack => {
                    let start = stack.iter().position(|n| n == next).expect("on the stack");
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next);
                    return Some(cycle);
                }
                State::New => {
                    if let Some(cycle) = visit(next, adjacency, state, stack) {
                        return Some(cycle);
                    }
                }
                State::Done => {}
            }
        }
        stack.pop();
        state.insert(node, State::Done);
        None
    }
    let mut adjacency: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges {
        adjacency.entry(from).or_default().push(to);
        adjacency.entry(to).or_default();
    }
    let mut state: HashMap<&str, State> = adjacency.keys().map(|k| (*k, State::New)).collect();
    let nodes: Vec<&str> = adjacency.keys().copied().collect();
    for node in nodes {
        if state[node] == State::New {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(node, &adjacency, &mut state, &mut stack) {
                return Some(cycle);
            }
        }
    }
    None
}

/// Why `dependency` is not met yet (empty when it is).
fn unmet(request: &Request, dependency: &str, field_path: Option<&str>) -> Vec<String> {
    let Some(body) = request.observed_struct(dependency) else {
        return vec![format!("{dependency:?} to be observed")];
    };
    if let Some(path) = field_path {
        return if truthy_at(&body, path) {
            Vec::new()
        } else {
            vec![format!("{dependency:?} field {path:?} to be ready")]
        };
    }
    let mut reasons = Vec::new();
    for kind in ["Ready", "Synced"] {
        if !condition_true(&body, kind) {
            reasons.push(format!("{dependency:?} to have {kind}=True"));
        }
    }
    reasons
}

fn struct_field<'a>(s: &'a Struct, key: &str) -> Option<&'a Kind> {
    s.fields.get(key)?.kind.as_ref()
}

fn condition_true(body: &Struct, kind: &str) -> bool {
    let Some(Kind::StructValue(status)) = struct_field(body, "status") else {
        return false;
    };
    let Some(Kind::ListValue(conditions)) = struct_field(status, "conditions") else {
        return false;
    };
    conditions.values.iter().any(|c| match &c.kind {
        Some(Kind::StructValue(c)) => {
            matches!(struct_field(c, "type"), Some(Kind::StringValue(t)) if t == kind)
                && matches!(struct_field(c, "status"), Some(Kind::StringValue(s)) if s == "True")
        }
        _ => false,
    })
}

fn truthy_at(body: &Struct, path: &str) -> bool {
    let segments: Vec<&str> = path.split('.').collect();
    match crate::convert::kind_at(body, &segments) {
        None | Some(Kind::NullValue(_)) => false,
        Some(Kind::StringValue(s)) => !s.is_empty(),
        Some(Kind::NumberValue(n)) => *n != 0.0,
        Some(Kind::BoolValue(b)) => *b,
        Some(Kind::StructValue(_) | Kind::ListValue(_)) => true,
    }
}

/// The Usage that protects `dependency` while `dependent` exists.
fn usage(
    api: UsageApi,
    dependent: &str,
    dependency: &str,
    resources: &BTreeMap<String, crate::effects::Emitted>,
) -> (String, Struct) {
    let digest = Sha256::digest(format!("{dependent}\0{dependency}").as_bytes());
    let mut name = String::from("usage-");
    for b in digest.iter().take(4) {
        let _ = write!(name, "{b:02x}");
    }
    let selector = |who: &str| {
        let mut fields = Vec::new();
        if let Some(r) = resources.get(who) {
            let body = r.body.to_struct();
            for key in ["apiVersion", "kind"] {
                let value = match struct_field(&body, key) {
                    Some(Kind::StringValue(s)) => s.clone(),
                    _ => String::new(),
                };
                fields.push((key, json_str(&value)));
            }
        }
        fields.push((
            "resourceSelector",
            object(vec![
                (
                    "matchControllerRef",
                    PbValue {
                        kind: Some(Kind::BoolValue(true)),
                    },
                ),
                (
                    "matchLabels",
                    object(vec![(RESOURCE_NAME_LABEL, json_str(who))]),
                ),
            ]),
        ));
        object(fields)
    };
    let body = Struct {
        fields: [
            ("apiVersion", json_str(api.api_version())),
            ("kind", json_str("Usage")),
            ("metadata", object(vec![("name", json_str(&name))])),
            (
                "spec",
                object(vec![
                    (
                        "replayDeletion",
                        PbValue {
                            kind: Some(Kind::BoolValue(true)),
                        },
                    ),
                    ("of", selector(dependency)),
                    ("by", selector(dependent)),
                ]),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect(),
    };
    (name, body)
}

fn json_str(s: &str) -> PbValue {
    PbValue {
        kind: Some(Kind::StringValue(s.to_owned())),
    }
}

fn object(fields: Vec<(&str, PbValue)>) -> PbValue {
    PbValue {
        kind: Some(Kind::StructValue(Struct {
            fields: fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_names_match_the_reference_vectors() {
        let empty = BTreeMap::new();
        for (dependent, dependency, want) in [
            ("app", "db", "usage-c2727553"),
            ("app", "external-vpc", "usage-76593d19"),
            ("db", "cache", "usage-543cc3c8"),
            ("notification-topic", "bucket-0", "usage-e8072ae8"),
        ] {
            assert_eq!(usage(UsageApi::V2, dependent, dependency, &empty).0, want);
        }
    }

    #[test]
    fn cycles_are_reported_from_the_node_the_back_edge_reaches() {
        assert_eq!(
            find_cycle(&[("a", "b"), ("b", "a")]),
            Some(vec!["a", "b", "a"])
        );
        assert_eq!(
            find_cycle(&[("a", "b"), ("b", "c"), ("c", "b")]),
            Some(vec!["b", "c", "b"])
        );
        assert_eq!(find_cycle(&[("a", "a")]), Some(vec!["a", "a"]));
        assert_eq!(find_cycle(&[("a", "b"), ("b", "c"), ("a", "c")]), None);
    }
}
