//! `Resource()` and `skip_resource()`: declaring composed resources.

use std::collections::BTreeMap;

use anyhow::anyhow;
use function_sdk_rust::proto::v1::Ready;
use pbjson_types::value::Kind;
use pbjson_types::{Struct, Value as PbValue};
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::dict::DictRef;
use starlark::values::list::ListRef;
use starlark::values::none::NoneType;
use starlark::values::tuple::{TupleRef, UnpackTuple};
use starlark::values::{Value, ValueLike};

use crate::builtins::context;
use crate::convert::{
    Edits, ToPb, dict_entries, dict_get, encode_resource_body, is_dict_like, value_to_pb,
};
use crate::effects::{Body, Context, Dependency, DependencyKind, Emitted, Originals, Skip};
use crate::go::args::{GoArgs, want_string};
use crate::go::types::go_type;
use crate::values::attr_dict::{conversion_error, is_attr_dict};
use crate::values::mapping::Lookup;
use crate::values::refs::{ResourceRef, SkippedRef};
use crate::values::when::When;

mod legacy;

/// The label every emitted resource carries, and Usage selectors match.
pub const RESOURCE_NAME_LABEL: &str = "function-starlark.crossplane.io/resource-name";

/// Observed metadata that must not be sent back as desired state.
const SERVER_SET_METADATA: [&str; 5] = [
    "managedFields",
    "resourceVersion",
    "uid",
    "generation",
    "creationTimestamp",
];

/// Why a resource whose body is `None` is skipped.
const BODY_NONE_REASON: &str = "body is None. If this resource exists, it will be removed from desired state. Use When() with keep_if_exists=True to re-emit the observed body.";

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// Declares one desired composed resource, or skips or preserves it.
    ///
    /// # Arguments
    /// * `name`: the composition resource name.
    /// * `body`: the resource as a dict (or a `schema()` value or a
    ///   `mutable_struct`), or `None` to skip it.
    /// * `ready`: `True`/`False` to declare readiness, `None` to let Crossplane decide.
    /// * `labels`: labels merged into the body's (the argument wins); the
    ///   `function-starlark.crossplane.io/resource-name` label is always set.
    /// * `connection_details`: a dict of strings for this resource.
    /// * `depends_on`: refs, names, `(ref, "field.path")` tuples or `None`s;
    ///   a `SkippedRef` among them skips this resource too.
    /// * `external_name`: sets the `crossplane.io/external-name` annotation.
    /// * `when`: a `When()` gate: a false condition skips the resource, or
    ///   re-emits its observed body with `keep_if_exists=True`.
    /// * `skip_reason`, `preserve_observed`, `optional`: the gating keywords
    ///   of 0.11.0, with a bool `when`; they still work, with a Warning
    ///   naming the `When()` that replaces them.
    ///
    /// # Returns
    /// A `ResourceRef` when emitted, a falsy `SkippedRef` when skipped.
    ///
    /// # Example
    /// ```python
    /// db = Resource("db", {"apiVersion": "v1", "kind": "ConfigMap"}, ready=True)
    /// Resource("replica", {"apiVersion": "v1", "kind": "ConfigMap"},
    ///     when=When(False, "waiting for the primary", keep_if_exists=False))
    /// ```
    #[allow(non_snake_case, clippy::too_many_arguments)]
    fn Resource<'v>(
        name: &str,
        body: Value<'v>,
        ready: Option<Value<'v>>,
        labels: Option<Value<'v>>,
        connection_details: Option<Value<'v>>,
        depends_on: Option<Value<'v>>,
        external_name: Option<Value<'v>>,
        when: Option<Value<'v>>,
        skip_reason: Option<&str>,
        preserve_observed: Option<Value<'v>>,
        optional: Option<bool>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let ctx = context(eval)?;
        let heap = eval.heap();
        let args = ResourceArgs {
            name,
            body,
            observed: Originals::of(eval.module()).map(|o| o.observed),
            ready: ready.filter(|v| !v.is_none()),
            labels: none_is_omitted(labels),
            connection_details: none_is_omitted(connection_details),
            depends_on: none_is_omitted(depends_on),
            external_name: none_is_omitted(external_name),
            when,
        };
        let legacy = legacy::Keywords {
            when,
            skip_reason,
            preserve_observed,
            optional,
        };
        Ok(match resource(ctx, &args, &legacy)? {
            Outcome::Emitted => heap.alloc(ResourceRef {
                name: name.to_owned(),
            }),
            Outcome::Skipped(legacy_optional) => heap.alloc(SkippedRef {
                name: name.to_owned(),
                legacy_optional,
            }),
        })
    }

    /// The gate of `Resource(..., when=...)`.
    ///
    /// # Arguments
    /// * `condition`: `True` emits the resource; `False` does not.
    /// * `reason`: why it is not emitted, for the skip event and the XR's
    ///   `ComposedResourcesReady` condition; must not be empty.
    /// * `keep_if_exists`: when not emitted, re-emit the observed body if
    ///   the resource exists already, so that it is not deleted.
    /// * `optional`: when not emitted, do not hold the XR's readiness back
    ///   (the skip event is then Normal, not a Warning).
    ///
    /// Every argument but `reason` must be a bool.
    ///
    /// # Returns
    /// A `When` value: truthy as its condition, with the four arguments
    /// as attributes.
    ///
    /// # Example
    /// ```python
    /// w = When(False, "backups disabled", keep_if_exists=False, optional=True)
    /// w.reason  # "backups disabled"
    /// bool(w)  # False
    /// ```
    #[allow(non_snake_case)]
    fn When<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
    ) -> anyhow::Result<When> {
        let bound = GoArgs::new("When", args, kwargs).bind(
            &["condition", "reason", "keep_if_exists", "optional?"],
            true,
            |i, v| if i == 1 { want_string(v) } else { Ok(()) },
        )?;
        let strict = |i: usize, what: &str| match bound[i] {
            None => Ok(false),
            Some(v) => v
                .unpack_bool()
                .ok_or_else(|| anyhow!("when: {what} must be bool, got {}", go_type(v))),
        };
        let condition = strict(0, "condition")?;
        let keep_if_exists = strict(2, "keep_if_exists")?;
        let optional = strict(3, "optional")?;
        let reason = bound[1].and_then(Value::unpack_str).unwrap_or_default();
        if reason.is_empty() {
            return Err(anyhow!("when: reason must not be empty"));
        }
        Ok(When {
            condition,
            reason: reason.to_owned(),
            keep_if_exists,
            optional,
        })
    }

    /// Announces that a resource is deliberately not emitted.
    ///
    /// Records a Normal event `Skipping optional resource "NAME": REASON`
    /// once per name; it removes nothing from desired state and never
    /// holds the XR's readiness back (gate with `when=When(...)` for that).
    ///
    /// # Example
    /// ```python
    /// skip_resource("legacy-bucket", "migrated to the new bucket")
    /// ```
    fn skip_resource(name: &str, reason: &str, eval: &mut Evaluator) -> anyhow::Result<NoneType> {
        let ctx = context(eval)?;
        if ctx.effects.resources.borrow().contains_key(name) {
            return Err(anyhow!("resource {name:?} already emitted, cannot skip"));
        }
        ctx.effects.skip(name, reason, Skip::Optional);
        Ok(NoneType)
    }
}

fn none_is_omitted(v: Option<Value>) -> Option<Value> {
    v.filter(|v| !v.is_none())
}

struct ResourceArgs<'a, 'v> {
    name: &'a str,
    body: Value<'v>,
    /// The request's `observed`, whose bodies a gate may re-emit.
    observed: Option<Value<'v>>,
    ready: Option<Value<'v>>,
    labels: Option<Value<'v>>,
    connection_details: Option<Value<'v>>,
    depends_on: Option<Value<'v>>,
    external_name: Option<Value<'v>>,
    when: Option<Value<'v>>,
}

/// What became of a `Resource()` call.
enum Outcome {
    /// Emitted, or its observed body preserved.
    Emitted,
    /// Skipped; for a skip of the 0.11.0 keywords, its `optional=`.
    Skipped(Option<bool>),
}

/// The decision procedure of `Resource()`, in the reference's order: the
/// arguments bound, then the gate (before the body's type is looked at),
/// then the body emitted.
fn resource(ctx: &Context, a: &ResourceArgs, legacy: &legacy::Keywords) -> anyhow::Result<Outcome> {
    let name = a.name;
    let fail = |msg: String| anyhow!("Resource({name:?}): {msg}");

    // Binding-time type checks of the reference.
    if let Some(cd) = a.connection_details
        && DictRef::from_value(cd).is_none()
    {
        return Err(anyhow!(
            "Resource: for parameter connection_details: got {}, want dict",
            cd.get_type()
        ));
    }
    if let Some(d) = a.depends_on
        && ListRef::from_value(d).is_none()
    {
        return Err(anyhow!(
            "Resource: for parameter depends_on: got {}, want list",
            d.get_type()
        ));
    }
    let gate = match legacy.usage() {
        legacy::Usage::None => gate(ctx, a, None).map_err(fail)?,
        legacy::Usage::OptionalBesideWhen(optional) => {
            legacy::record_optional_beside_when(ctx, name, a.when, optional);
            gate(ctx, a, Some(optional)).map_err(fail)?
        }
        legacy::Usage::Keywords => {
            legacy::gate(ctx, name, a.body, a.depends_on, legacy).map_err(fail)?
        }
    };
    match gate {
        Gate::Open => emit(ctx, a).map_err(fail).map(|()| Outcome::Emitted),
        Gate::Closed(outcome) => Ok(outcome),
    }
}

/// Whether the body is emitted, or what happened instead.
enum Gate {
    /// Emit the body.
    Open,
    /// Skipped or preserved already.
    Closed(Outcome),
}

/// The gate of a call: `when=When(...)` (its `optional` replaced by
/// `optional`, when given), a `None` body, a skipped dependency.
fn gate(ctx: &Context, a: &ResourceArgs, optional: Option<bool>) -> Result<Gate, String> {
    let name = a.name;
    let when = match a.when {
        None => None,
        Some(v) => Some(v.downcast_ref::<When>().ok_or_else(|| {
            format!(
                "when must be a When() value, e.g. When(True, \"reason\", keep_if_exists=False), got {}",
                v.get_type()
            )
        })?),
    };
    let skip = |reason: &str, gating: bool| {
        let kind = if gating { Skip::Gating } else { Skip::Optional };
        ctx.effects.skip(name, reason, kind);
        Ok(Gate::Closed(Outcome::Skipped(None)))
    };
    if let Some(w) = when.filter(|w| !w.condition) {
        if w.keep_if_exists
            && let Some(error) = a.observed.and_then(|o| unconverted(o, name))
        {
            return Err(format!("observed lookup {name:?}: {error}"));
        }
        if w.keep_if_exists
            && let Some(body) = ctx.observed(name)
        {
            preserve_observed(
                ctx,
                name,
                &body,
                "observed body emitted, gated by when=False",
            );
            return Ok(Gate::Closed(Outcome::Emitted));
        }
        return skip(&w.reason, !optional.unwrap_or(w.optional));
    }
    if a.body.is_none() {
        return skip(BODY_NONE_REASON, true);
    }
    if let Some(upstream) = skipped_upstream(a.depends_on) {
        return skip(&format!("depends on skipped {upstream:?}"), true);
    }
    Ok(Gate::Open)
}

/// Why the observed body of `name` could not be converted, if it could not.
fn unconverted<'v>(observed: Value<'v>, name: &str) -> Option<&'v str> {
    match crate::values::mapping::lookup(observed, name) {
        Lookup::Found(body) => conversion_error(body),
        _ => None,
    }
}

/// The normal path: the body encoded with its labels and annotation, the
/// connection details, dependencies and readiness recorded.
fn emit(ctx: &Context, a: &ResourceArgs) -> Result<(), String> {
    let name = a.name;
    if is_attr_dict(a.body) || !is_dict_like(a.body) {
        return Err(format!("body must be dict, got {}", a.body.get_type()));
    }
    // The body is encoded with the labels and annotation set on it; its
    // own mistakes are reported before those of the other arguments.
    let external_name = a
        .external_name
        .map(|v| external_name_edit(name, a.body, v))
        .transpose();
    let labels = label_edits(name, a.labels);
    let edits = Edits {
        labels: labels.as_ref().map_or_else(|_| Vec::new(), Clone::clone),
        annotations: match &external_name {
            Ok(Some((entry, _))) => vec![entry.clone()],
            _ => Vec::new(),
        },
    };
    let body = encode_resource_body(a.body, &edits).map_err(|e| e.to_string())?;
    let external_name = external_name?;
    labels?;
    if let Some((_, Some(warning))) = external_name {
        ctx.effects.warn(warning);
    }
    let connection_details = match a.connection_details {
        Some(cd) => string_map(cd, "connection_details")?,
        None => BTreeMap::new(),
    };
    if let Some(depends_on) = a.depends_on {
        record_dependencies(ctx, name, depends_on)?;
    }
    let ready = match a.ready.map(|v| (v, v.unpack_bool())) {
        None => Ready::Unspecified,
        Some((_, Some(true))) => Ready::True,
        Some((_, Some(false))) => Ready::False,
        Some((v, None)) => {
            return Err(format!(
                "ready must be True, False, or None, got {}",
                v.get_type()
            ));
        }
    };
    ctx.effects.resources.borrow_mut().insert(
        name.to_owned(),
        Emitted {
            body: Body::Encoded(body),
            ready,
            connection_details: connection_details
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes()))
                .collect(),
        },
    );
    Ok(())
}

/// The first skipped reference among `depends_on` that skips its
/// dependents, bare or as the first element of a pair.
fn skipped_upstream(depends_on: Option<Value>) -> Option<String> {
    let list = ListRef::from_value(depends_on?)?;
    list.iter().find_map(|item| {
        let target = match TupleRef::from_value(item) {
            Some(t) if t.len() == 2 => t.content()[0],
            Some(_) => return None,
            None => item,
        };
        target
            .downcast_ref::<SkippedRef>()
            .filter(|s| s.propagates())
            .map(|s| s.name.clone())
    })
}

/// Emits the observed body of `name` again, without what the server sets.
fn preserve_observed(ctx: &Context, name: &str, observed: &Struct, why: &str) {
    let mut body = observed.clone();
    body.fields.remove("status");
    if let Some(PbValue {
        kind: Some(Kind::StructValue(metadata)),
    }) = body.fields.get_mut("metadata")
    {
        for field in SERVER_SET_METADATA {
            metadata.fields.remove(field);
        }
    }
    ctx.effects.resources.borrow_mut().insert(
        name.to_owned(),
        Emitted {
            body: Body::Struct(body),
            ready: Ready::Unspecified,
            connection_details: BTreeMap::new(),
        },
    );
    ctx.effects
        .warn(format!("Preserving resource {name:?}: {why}"));
}

/// The annotation `external_name` sets, and the warning when it replaces
/// one of the body's.
fn external_name_edit(
    name: &str,
    body: Value,
    external_name: Value,
) -> Result<((String, String), Option<String>), String> {
    let Some(new) = external_name.unpack_str() else {
        return Err(format!(
            "external_name must be string, got {}",
            external_name.get_type()
        ));
    };
    if new.is_empty() {
        return Err("external_name must not be empty".to_owned());
    }
    let warning = body_entry(body, "annotations", EXTERNAL_NAME_ANNOTATION).map(|old| {
        format!(
            "Resource {name:?}: external_name kwarg {new:?} overrides annotation {:?}",
            display(old)
        )
    });
    Ok((
        (EXTERNAL_NAME_ANNOTATION.to_owned(), new.to_owned()),
        warning,
    ))
}

/// The annotation `external_name` sets.
const EXTERNAL_NAME_ANNOTATION: &str = "crossplane.io/external-name";

/// The body's entry `key` of `metadata.<map>`, when the body has one (and
/// it is not `None`, which a body drops).
fn body_entry<'v>(body: Value<'v>, map: &str, key: &str) -> Option<Value<'v>> {
    let metadata = dict_get(body, "metadata")?;
    dict_get(dict_get(metadata, map)?, key)
}

/// A label or annotation value as the reference prints it in warnings:
/// a string as it is, anything else as the JSON of its protobuf value.
fn display(v: Value) -> String {
    match v.unpack_str() {
        Some(s) => s.to_owned(),
        None => value_to_pb(v, ToPb::RESOURCE_BODY)
            .map(|pb| function_sdk_rust::resource::pb_to_json(&pb).to_string())
            .unwrap_or_default(),
    }
}

/// Labels to set, in order, each key once.
type Labels = Vec<(String, String)>;

/// The labels `Resource()` sets on the body: those of `labels=`, then the
/// resource name. Crossplane sets its own (`crossplane.io/composite` and
/// the claim's) on every composed resource, so this function sets neither.
fn label_edits(name: &str, labels: Option<Value>) -> Result<Labels, String> {
    let mut set: Labels = Vec::new();
    if let Some(v) = labels {
        let plain = crate::values::mutable_struct::backing_dict(v).unwrap_or(v);
        if DictRef::from_value(plain).is_none() && !is_attr_dict(plain) {
            return Err(format!("labels must be dict or None, got {}", v.get_type()));
        }
        set.extend(string_map(v, "labels")?);
    }
    match set.iter_mut().find(|(k, _)| k == RESOURCE_NAME_LABEL) {
        Some(entry) => name.clone_into(&mut entry.1),
        None => set.push((RESOURCE_NAME_LABEL.to_owned(), name.to_owned())),
    }
    Ok(set)
}

/// A dict of strings to strings, checked entry by entry.
fn string_map(v: Value, what: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let entries: Vec<(Value, Value)> = match DictRef::from_value(v) {
        Some(d) => d.iter().collect(),
        None => match dict_entries(v) {
            Some(Ok(entries)) => {
                return entries
                    .into_iter()
                    .map(|(k, v)| match v.unpack_str() {
                        Some(s) => Ok((k, s.to_owned())),
                        None => Err(format!("{what} value must be string, got {}", v.get_type())),
                    })
                    .collect();
            }
            Some(Err(e)) => return Err(e.to_string()),
            None => return Err(format!("{what} must be dict, got {}", v.get_type())),
        },
    };
    for (k, val) in entries {
        let Some(k) = k.unpack_str() else {
            return Err(format!("{what} key must be string, got {}", k.get_type()));
        };
        let Some(val) = val.unpack_str() else {
            return Err(format!(
                "{what} value must be string, got {}",
                val.get_type()
            ));
        };
        out.insert(k.to_owned(), val.to_owned());
    }
    Ok(out)
}

fn record_dependencies(ctx: &Context, name: &str, depends_on: Value) -> Result<(), String> {
    let list = ListRef::from_value(depends_on).expect("depends_on was checked to be a list");
    for (i, item) in list.iter().enumerate() {
        let (target, field_path) = match TupleRef::from_value(item) {
            Some(t) => {
                if t.len() != 2 {
                    return Err(format!(
                        "depends_on[{i}] tuple must have exactly 2 elements, got {}",
                        t.len()
                    ));
                }
                let [first, path] = [t.content()[0], t.content()[1]];
                let target = match dependency_target(first) {
                    Some(Named::Resource(name, kind)) => (name, kind),
                    Some(Named::Ignored) => continue,
                    None => {
                        return Err(format!(
                            "depends_on[{i}] tuple first element must be ResourceRef, SkippedRef, or string, got {}",
                            first.get_type()
                        ));
                    }
                };
                let Some(path) = path.unpack_str() else {
                    return Err(format!(
                        "depends_on[{i}] tuple second element must be string, got {}",
                        path.get_type()
                    ));
                };
                if path.is_empty() {
                    return Err(format!(
                        "depends_on[{i}] tuple field path must not be empty"
                    ));
                }
                (target, Some(path.to_owned()))
            }
            None if item.is_none() => continue,
            None => match dependency_target(item) {
                Some(Named::Resource(name, kind)) => ((name, kind), None),
                Some(Named::Ignored) => continue,
                None => {
                    return Err(format!(
                        "depends_on[{i}] must be ResourceRef, SkippedRef, string, tuple, or None, got {}",
                        item.get_type()
                    ));
                }
            },
        };
        ctx.effects.dependencies.borrow_mut().push(Dependency {
            dependent: name.to_owned(),
            dependency: target.0,
            kind: target.1,
            field_path,
        });
    }
    Ok(())
}

/// What a dependency element names.
enum Named {
    /// A resource, and how it was named.
    Resource(String, DependencyKind),
    /// An (optional) skipped reference, which is ignored.
    Ignored,
}

/// What `v` names as a dependency; `None` when it cannot name one.
fn dependency_target(v: Value) -> Option<Named> {
    if let Some(r) = v.downcast_ref::<ResourceRef>() {
        return Some(Named::Resource(r.name.clone(), DependencyKind::Ref));
    }
    // A skipped reference that reaches here skips nothing (a 0.11.0
    // optional skip): it is dropped.
    if v.downcast_ref::<SkippedRef>().is_some() {
        return Some(Named::Ignored);
    }
    v.unpack_str()
        .map(|s| Named::Resource(s.to_owned(), DependencyKind::Name))
}
