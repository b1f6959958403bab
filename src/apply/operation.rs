//! Writing an Operation's run into the response. Crossplane's Operation
//! controller applies each desired resource as it is, all at once, after
//! the pipeline; records each step's `output` in the Operation's status;
//! turns results into events; and has no composite, so nothing the
//! composite carries (its body, status, conditions, connection details,
//! readiness, the Usages that order deletions) reaches anything. What a
//! script sets of those is reported by a Warning naming why, rather than
//! dropped without a word.

use std::collections::BTreeMap;

use function_sdk_rust::proto::v1::RunFunctionResponse;
use function_sdk_rust::response;
use pbjson_types::Struct;
use pbjson_types::value::Kind;

use super::{
    Applied, EncodedBodies, Written, emit_resources, merge_context, push_events, push_requirements,
};
use crate::effects::{Effects, Emitted};
use crate::error::Error;

/// Why a composite's feature does nothing in an Operation.
const NO_COMPOSITE: &str = "an Operation has no composite resource";

/// The success path of an Operation's run.
pub fn apply(
    rsp: &mut RunFunctionResponse,
    bodies: &mut EncodedBodies,
    effects: &Effects,
    written: Written,
) -> Result<Applied, Error> {
    let resources = std::mem::take(&mut *effects.resources.borrow_mut());
    if let Some(name) = unnamed(&resources) {
        return Err(Error::Operation(format!(
            "Resource {name:?} has no metadata.name: an Operation applies its resources as they are, \
             without the names Crossplane generates for a composite's; give it a name"
        )));
    }
    let emitted = resources.len();
    emit_resources(rsp, bodies, resources);
    let dxr = written.dxr.map_err(Error::Dxr)?;
    let context = written.context.map_err(Error::Context)?;
    let output = written.output.map_err(Error::Output)?;
    merge_context(rsp, context);
    if !output.fields.is_empty() {
        rsp.output = Some(output);
    }
    push_events(rsp, effects, None);
    for warning in ignored(effects, &dxr) {
        response::warning(rsp, warning);
    }
    push_requirements(rsp, effects);
    response::normal(rsp, super::SUCCESS_MESSAGE);
    Ok(Applied {
        emitted,
        deferred: 0,
    })
}

/// The first resource without a `metadata.name`, by name.
fn unnamed(resources: &BTreeMap<String, Emitted>) -> Option<&str> {
    resources.iter().find_map(|(name, r)| {
        let body = r.body.to_struct();
        let named = match body.fields.get("metadata").and_then(|m| m.kind.as_ref()) {
            Some(Kind::StructValue(metadata)) => matches!(
                metadata.fields.get("name").and_then(|n| n.kind.as_ref()),
                Some(Kind::StringValue(s)) if !s.is_empty()
            ),
            _ => false,
        };
        (!named).then_some(name.as_str())
    })
}

/// A Warning for each composite feature the script used, naming what
/// Crossplane does instead.
fn ignored(effects: &Effects, dxr: &Struct) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut note = |what: &str, instead: &str| {
        warnings.push(format!("{what} has no effect: {NO_COMPOSITE}; {instead}"));
    };
    if !dxr.fields.is_empty() {
        note(
            "dxr (and set_xr_status)",
            "put what the Operation should report in output",
        );
    }
    if !effects.conditions.borrow().is_empty() {
        note(
            "set_condition",
            "Crossplane sets the Operation's conditions itself; put what the script found in output",
        );
    }
    if !effects.xr_connection_details.borrow().is_empty() {
        note(
            "set_connection_details",
            "write a Secret with Resource() instead",
        );
    }
    if !effects.dependencies.borrow().is_empty() {
        note(
            "depends_on",
            "Crossplane applies an Operation's resources once, together, without Usages",
        );
    }
    if effects.ready_override.borrow().is_some() {
        note(
            "set_composite_ready",
            "the Operation's Succeeded condition says how it went",
        );
    }
    if effects.response_ttl.get().is_some() {
        note(
            "set_response_ttl",
            "an Operation runs once; a CronOperation's schedule runs it again",
        );
    }
    warnings
}
