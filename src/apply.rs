//! Writing what a run recorded into the response, stage by stage in the
//! Go implementation's order. A stage that fails returns the error with
//! everything before it already applied, which is exactly what the Go
//! implementation leaves in the response for that failure.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use function_sdk_rust::proto::v1::{
    self as pb, MatchLabels, Ready, Requirements, ResourceSelector, RunFunctionResponse,
    Severity as PbSeverity, Status, resource_selector,
};
use function_sdk_rust::response;
use pbjson_types::Struct;

use crate::builtins::conditions::COMPOSED_RESOURCES_READY;
use crate::effects::{Body, Condition, Effects, Emitted, Event, Match, Severity, Target};
use crate::error::Error;
use crate::go::duration::to_seconds_nanos;
use crate::input::UsageApi;
use crate::request::Request;
use sequencing::Sequencing;

mod operation;
mod schemas;
mod sequencing;

/// The Normal result that closes a successful run.
pub const SUCCESS_MESSAGE: &str = "function-starlark: executed successfully";

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
    if let Some(warning) = effects.legacy_gating_warning() {
        response::warning(rsp, warning);
    }
    for condition in effects.conditions.borrow().iter() {
        push_condition(rsp, condition);
    }
    apply_requirements(rsp, effects);
}

/// What the script left in its writable globals, each converted for the
/// response, or the conversion's complaint.
pub struct Written {
    /// The desired composite body.
    pub dxr: Result<Struct, String>,
    /// The pipeline context.
    pub context: Result<Struct, String>,
    /// An Operation step's output.
    pub output: Result<Struct, String>,
}

/// Bodies of composed resources already encoded, by resource name: the
/// response holds their other fields, and its encoding takes the body from
/// here (see `wire::response`).
pub type EncodedBodies = BTreeMap<String, bytes::Bytes>;

/// The success path: each stage below writes its part of the response, in
/// the order the response is built. Encoded bodies go to `bodies`.
pub fn apply_success(
    rsp: &mut RunFunctionResponse,
    bodies: &mut EncodedBodies,
    request: &Request,
    effects: &Effects,
    written: Written,
    settings: &DependencySettings,
) -> Result<Applied, Error> {
    if request.is_operation() {
        return operation::apply(rsp, bodies, effects, written);
    }
    let Written { dxr, context, .. } = written;
    // Applying is the last use of what the run emitted: take it rather than copy.
    let mut resources = std::mem::take(&mut *effects.resources.borrow_mut());
    let sequencing = sequencing::sequence(rsp, request, effects, &mut resources, settings)?;
    // The script's own TTL beats sequencing's.
    if let Some(nanos) = effects.response_ttl.get() {
        set_ttl(rsp, (nanos != 0).then(|| duration_from_nanos(nanos)));
    }
    let emitted = resources.len();
    emit_resources(rsp, bodies, resources);
    let readiness = readiness(effects, &sequencing);
    set_composite(rsp, dxr.map_err(Error::Dxr)?, readiness.ready);
    merge_context(rsp, context.map_err(Error::Context)?);
    set_connection_details(rsp, effects);
    push_conditions(rsp, effects, readiness.condition);
    push_events(rsp, effects, sequencing.event);
    push_requirements(rsp, effects);
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
fn set_composite(rsp: &mut RunFunctionResponse, dxr: Struct, ready: Option<bool>) {
    let composite = response::desired_composite(rsp);
    composite.resource = Some(dxr);
    if let Some(ready) = ready {
        composite.ready = if ready { Ready::True } else { Ready::False } as i32;
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

/// The script's events, the Warning about 0.11.0's gating keywords, then
/// the sequencing summary.
fn push_events(rsp: &mut RunFunctionResponse, effects: &Effects, sequencing: Option<String>) {
    for event in effects.events.borrow().iter() {
        push_event(rsp, event);
    }
    if let Some(warning) = effects.legacy_gating_warning() {
        response::warning(rsp, warning);
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

/// What the run decides of the XR's readiness.
#[derive(Default)]
struct Readiness {
    /// Ready or not; unspecified (Crossplane decides) when `None`.
    ready: Option<bool>,
    /// The `ComposedResourcesReady` condition that says why.
    condition: Option<Condition>,
}

/// The XR's readiness: `set_composite_ready()` wins; then gating skips
/// and deferred resources hold it back; once sequencing has nothing left
/// to hold back, a `True` condition replaces the `WaitingForDependencies`
/// an earlier call set (Crossplane keeps a condition until it is replaced).
fn readiness(effects: &Effects, sequencing: &Sequencing) -> Readiness {
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
        return Readiness {
            ready: Some(o.ready),
            condition: gate,
        };
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
    let defers = &sequencing.defers;
    let (reason, message) = match (skips.is_empty(), defers.is_empty()) {
        (true, true) if sequencing.converged => {
            return Readiness {
                ready: None,
                condition: Some(condition(
                    "True",
                    "AllReady",
                    "All sequenced dependencies are ready".to_owned(),
                )),
            };
        }
        (true, true) => return Readiness::default(),
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
    Readiness {
        ready: Some(false),
        condition: Some(condition("False", reason, message)),
    }
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

/// The requirements, then a Warning for each the script asked for badly.
fn push_requirements(rsp: &mut RunFunctionResponse, effects: &Effects) {
    apply_requirements(rsp, effects);
    for warning in effects.requirement_warnings.borrow().iter() {
        response::warning(rsp, warning.clone());
    }
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
                    namespace: r.namespace.clone(),
                },
            )
        })
        .collect();
    let target = rsp.requirements.get_or_insert_with(Requirements::default);
    target.extra_resources.extend(selectors.clone());
    target.resources.extend(selectors);
}
