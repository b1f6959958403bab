//! Conditions, events, readiness and `fatal()`: what a script says about
//! the XR.

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::none::NoneType;

use crate::builtins::context;
use crate::effects::{Condition, ReadyOverride, Severity, Target};

/// The condition type readiness gating owns.
pub const COMPOSED_RESOURCES_READY: &str = "ComposedResourcesReady";

/// The error `fatal()` stops the script with. The run notices the recorded
/// message, so the text of this error never reaches the response.
#[derive(Debug, thiserror::Error)]
#[error("fatal: {0}")]
pub struct FatalCalled(pub String);

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// Adds a status condition to the XR.
    ///
    /// # Arguments
    /// * `type`: the condition type (not `ComposedResourcesReady`).
    /// * `status`: `"True"`, `"False"`; anything else is Unknown.
    /// * `reason`: machine-readable reason.
    /// * `message`: human-readable message (omitted when empty).
    /// * `target`: `"CompositeAndClaim"` to show it on the claim too.
    ///
    /// # Example
    /// ```python
    /// set_condition("DatabaseReady", "True", "Available", "All databases healthy")
    /// ```
    fn set_condition(
        r#type: &str,
        status: &str,
        reason: &str,
        message: &str,
        #[starlark(default = "Composite")] target: &str,
        eval: &mut Evaluator,
    ) -> anyhow::Result<NoneType> {
        if r#type == COMPOSED_RESOURCES_READY {
            return Err(anyhow!(
                "set_condition: {COMPOSED_RESOURCES_READY:?} is reserved for composite-ready gating; use set_composite_ready() or Resource(..., when=False) instead"
            ));
        }
        context(eval)?
            .effects
            .conditions
            .borrow_mut()
            .push(Condition {
                kind: r#type.to_owned(),
                status: status.to_owned(),
                reason: reason.to_owned(),
                message: message.to_owned(),
                target: Target::parse(target),
            });
        Ok(NoneType)
    }

    /// Adds a Normal or Warning event (a function result).
    ///
    /// # Example
    /// ```python
    /// emit_event("Normal", "Resource reconciled successfully")
    /// ```
    fn emit_event(
        severity: &str,
        message: &str,
        #[starlark(default = "Composite")] target: &str,
        eval: &mut Evaluator,
    ) -> anyhow::Result<NoneType> {
        let severity = match severity {
            "Normal" => Severity::Normal,
            "Warning" => Severity::Warning,
            other => {
                return Err(anyhow!(
                    "emit_event: severity must be \"Normal\" or \"Warning\", got {other:?}"
                ));
            }
        };
        context(eval)?
            .effects
            .event(severity, message.to_owned(), Target::parse(target));
        Ok(NoneType)
    }

    /// Stops the script with a Fatal result whose message is exactly `message`.
    ///
    /// Conditions, events and requirements recorded so far are still sent;
    /// resources, `dxr` and `context` changes are not.
    ///
    /// # Example
    /// ```python
    /// fatal("cannot proceed: database unavailable")
    /// ```
    fn fatal(message: &str, eval: &mut Evaluator) -> anyhow::Result<NoneType> {
        let ctx = context(eval)?;
        ctx.effects
            .fatal
            .borrow_mut()
            .get_or_insert_with(|| message.to_owned());
        Err(FatalCalled(message.to_owned()).into())
    }

    /// Sets the XR's readiness explicitly, overriding gating.
    ///
    /// A non-empty `reason` also adds a `ComposedResourcesReady` condition.
    ///
    /// # Example
    /// ```python
    /// set_composite_ready(False, reason="WaitingForCluster", message="cluster still provisioning")
    /// ```
    fn set_composite_ready(
        ready: bool,
        #[starlark(default = "")] reason: &str,
        #[starlark(default = "")] message: &str,
        eval: &mut Evaluator,
    ) -> anyhow::Result<NoneType> {
        *context(eval)?.effects.ready_override.borrow_mut() = Some(ReadyOverride {
            ready,
            reason: reason.to_owned(),
            message: message.to_owned(),
        });
        Ok(NoneType)
    }
}
