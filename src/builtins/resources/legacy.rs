//! The gating keywords of function-starlark 0.11.0 (`when=` as a bool,
//! `skip_reason=`, `preserve_observed=`, `optional=`), which `When()`
//! replaced. Scripts written for 0.11.0 keep their result: a call that
//! uses them is decided as 0.11.0 decided it, and the run gets one
//! Warning naming the `when=When(...)` that replaces them.

use starlark::values::{Value, ValueLike};

use super::{Gate, Outcome, preserve_observed, skipped_upstream};
use crate::effects::{Context, Skip};
use crate::go::quote::go_quote;
use crate::values::when::When;

/// Why 0.11.0 skipped a resource whose body is `None`.
const BODY_NONE_REASON: &str = "body is None. If this resource exists, it will be removed from desired state. Set preserve_observed=True to re-emit the observed body when body is None.";

/// The keywords as the call passed them (`None`: not passed).
pub(super) struct Keywords<'a, 'v> {
    pub when: Option<Value<'v>>,
    pub skip_reason: Option<&'a str>,
    pub preserve_observed: Option<Value<'v>>,
    pub optional: Option<bool>,
}

/// How a call uses the keywords `When()` replaced.
pub(super) enum Usage {
    /// Not at all.
    None,
    /// `optional=` beside `when=When(...)`, as the Go function accepted
    /// for a while before `When()` took `optional`: it is the gate's.
    OptionalBesideWhen(bool),
    /// The 0.11.0 way: a bool `when`, or any of the keywords.
    Keywords,
}

impl Keywords<'_, '_> {
    /// How the call uses the keywords.
    pub fn usage(&self) -> Usage {
        let when_value = self
            .when
            .is_some_and(|w| w.downcast_ref::<When>().is_some());
        match self.optional {
            Some(optional)
                if when_value && self.skip_reason.is_none() && self.preserve_observed.is_none() =>
            {
                Usage::OptionalBesideWhen(optional)
            }
            _ if self.skip_reason.is_some()
                || self.preserve_observed.is_some()
                || self.optional.is_some()
                || self.when.is_some_and(|w| w.unpack_bool().is_some()) =>
            {
                Usage::Keywords
            }
            _ => Usage::None,
        }
    }

    /// The keywords passed, as the Warning lists them.
    fn names(&self) -> String {
        let mut names = Vec::new();
        if let Some(when) = self.when.and_then(Value::unpack_bool) {
            names.push(format!("when={}", if when { "True" } else { "False" }));
        }
        for (name, given) in [
            ("skip_reason=", self.skip_reason.is_some()),
            ("preserve_observed=", self.preserve_observed.is_some()),
            ("optional=", self.optional.is_some()),
        ] {
            if given {
                names.push(name.to_owned());
            }
        }
        names.join(", ")
    }

    /// The `when=When(...)` that says the same, or what to do instead.
    fn replacement(&self, body_is_none: bool, preserve: bool) -> String {
        let condition = match self.when.and_then(Value::unpack_bool) {
            Some(true) => "True",
            Some(false) => "False",
            // Without `when`, the keywords only ever acted on a `None` body.
            None if body_is_none => "body != None",
            None => {
                return "drop them: without when=False and with a body they change nothing"
                    .to_owned();
            }
        };
        let reason = match self.skip_reason {
            Some(r) if !r.is_empty() => go_quote(r),
            _ => "\"why it is skipped\"".to_owned(),
        };
        let keep = if preserve { "True" } else { "False" };
        let optional = if self.optional == Some(true) {
            ", optional=True"
        } else {
            ""
        };
        format!("write when=When({condition}, {reason}, keep_if_exists={keep}{optional}) instead")
    }
}

/// The gate of a call written the 0.11.0 way, decided as 0.11.0 decided it.
pub(super) fn gate(
    ctx: &Context,
    name: &str,
    body: Value,
    depends_on: Option<Value>,
    k: &Keywords,
) -> Result<Gate, String> {
    if k.when.is_some_and(|w| w.downcast_ref::<When>().is_some()) {
        return Err("when=When(...) replaces skip_reason=, preserve_observed= and optional=: drop them (optional= goes into When())".to_owned());
    }
    let when = strict_bool(k.when, "when")?;
    let preserve = strict_bool(k.preserve_observed, "preserve_observed")? == Some(true);
    let optional = k.optional.unwrap_or(false);
    let reason = k.skip_reason.unwrap_or_default();
    let gated = when == Some(false);
    // 0.11.0 refused this with "skip_reason is required"; the current
    // function refuses a bool `when` altogether: point at the new form.
    if gated && !preserve && reason.is_empty() {
        return Err(
            "when must be a When() value, e.g. When(True, \"reason\", keep_if_exists=False), got bool"
                .to_owned(),
        );
    }
    record(ctx, name, k, body.is_none(), preserve);
    let skip = |reason: &str| {
        ctx.effects
            .skip(name, reason, Skip::Legacy { gate: !optional });
        Ok(Gate::Closed(Outcome::Skipped(Some(optional))))
    };
    let preserved = |observed, why| {
        preserve_observed(ctx, name, &observed, why);
        Ok(Gate::Closed(Outcome::Emitted))
    };
    if gated && !preserve {
        return skip(reason);
    }
    if gated {
        return match ctx.observed(name) {
            Some(observed) => preserved(observed, "observed body emitted, gated by when=False"),
            None if reason.is_empty() => {
                skip("gated by when=False, not found in observed state (preserve_observed=True)")
            }
            None => skip(reason),
        };
    }
    if body.is_none() {
        if !preserve {
            return skip(BODY_NONE_REASON);
        }
        return match ctx.observed(name) {
            Some(observed) => preserved(observed, "body=None, emitting observed body"),
            None => skip("not found in observed state"),
        };
    }
    if let Some(upstream) = skipped_upstream(depends_on) {
        return skip(&format!("depends on skipped {upstream:?}"));
    }
    Ok(Gate::Open)
}

/// Counts a call with `optional=` beside `when=When(...)` for the run's
/// one Warning.
pub(super) fn record_optional_beside_when(
    ctx: &Context,
    name: &str,
    when: Option<Value>,
    optional: bool,
) {
    let Some(w) = when.and_then(ValueLike::downcast_ref::<When>) else {
        return;
    };
    let with = When {
        optional,
        ..w.clone()
    };
    count(ctx, || {
        format!(
            "Resource({name:?}) gates with the keywords of function-starlark 0.11.0 (optional=): write when={with} instead"
        )
    });
}

/// Counts the call for the run's one Warning, which names the first.
fn record(ctx: &Context, name: &str, k: &Keywords, body_is_none: bool, preserve: bool) {
    count(ctx, || {
        format!(
            "Resource({name:?}) gates with the keywords of function-starlark 0.11.0 ({}): {}",
            k.names(),
            k.replacement(body_is_none, preserve)
        )
    });
}

/// Counts a call for the run's one Warning, whose text is the first one's.
fn count(ctx: &Context, first: impl FnOnce() -> String) {
    let mut legacy = ctx.effects.legacy_gating.borrow_mut();
    if let Some((_, count)) = legacy.as_mut() {
        *count += 1;
    } else {
        *legacy = Some((first(), 1));
    }
}

fn strict_bool(v: Option<Value>, what: &str) -> Result<Option<bool>, String> {
    match v {
        None => Ok(None),
        Some(v) => v
            .unpack_bool()
            .map(Some)
            .ok_or_else(|| format!("{what} must be bool, got {}", v.get_type())),
    }
}
