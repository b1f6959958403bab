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
use starlark::values::tuple::TupleRef;
use starlark::values::{Value, ValueLike};

use crate::builtins::context;
use crate::convert::{
    Edits, ToPb, dict_entries, dict_get, encode_resource_body, is_dict_like, value_to_pb,
};
use crate::effects::{Body, Context, Dependency, DependencyKind, Emitted};
use crate::values::attr_dict::is_attr_dict;
use crate::values::refs::{ResourceRef, SkippedRef};

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

const BODY_NONE_REASON: &str = "body is None. If this resource exists, it will be removed from desired state. Set preserve_observed=True to re-emit the observed body when body is None.";

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// Declares one desired composed resource, or skips or preserves it.
    ///
    /// # Arguments
    /// * `name`: the composition resource name.
    /// * `body`: the resource as a dict, or `None` to skip it.
    /// * `ready`: `True`/`False` to declare readiness, `None` to let Crossplane decide.
    /// * `labels`: extra labels (`None` opts out of the auto-injected ones).
    /// * `connection_details`: a dict of strings for this resource.
    /// * `depends_on`: refs, names, `(ref, "field.path")` tuples or `None`s.
    /// * `external_name`: sets the `crossplane.io/external-name` annotation.
    /// * `when`: `False` skips the resource (needs `skip_reason`).
    /// * `skip_reason`: why it is skipped.
    /// * `preserve_observed`: re-emit the observed body instead of skipping.
    /// * `optional`: a skip that does not hold the XR's readiness back.
    ///
    /// # Returns
    /// A `ResourceRef` when emitted, a falsy `SkippedRef` when skipped.
    ///
    /// # Example
    /// ```python
    /// db = Resource("db", {"apiVersion": "v1", "kind": "ConfigMap"}, ready=True)
    /// ```
    #[allow(
        non_snake_case,
        clippy::too_many_arguments,
        clippy::fn_params_excessive_bools
    )]
    fn Resource<'v>(
        name: &str,
        body: Value<'v>,
        ready: Option<Value<'v>>,
        labels: Option<Value<'v>>,
        connection_details: Option<Value<'v>>,
        depends_on: Option<Value<'v>>,
        external_name: Option<Value<'v>>,
        when: Option<Value<'v>>,
        #[starlark(default = "")] skip_reason: &str,
        preserve_observed: Option<Value<'v>>,
        #[starlark(default = false)] optional: bool,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let ctx = context(eval)?;
        let heap = eval.heap();
        let args = ResourceArgs {
            name,
            body,
            ready: ready.filter(|v| !v.is_none()),
            labels,
            connection_details: none_is_omitted(connection_details),
            depends_on: none_is_omitted(depends_on),
            external_name: none_is_omitted(external_name),
            when,
            skip_reason,
            preserve_observed,
            optional,
        };
        Ok(match resource(ctx, &args)? {
            Outcome::Emitted => heap.alloc(ResourceRef {
                name: name.to_owned(),
            }),
            Outcome::Skipped => heap.alloc(SkippedRef {
                name: name.to_owned(),
                optional,
            }),
        })
    }

    /// Announces that a resource is deliberately not emitted.
    ///
    /// Records a Warning event `Skipping resource "NAME": REASON` once per
    /// name; it removes nothing from desired state and never holds the XR's
    /// readiness back.
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
        ctx.effects.skip(name, reason, false);
        Ok(NoneType)
    }
}

fn none_is_omitted(v: Option<Value>) -> Option<Value> {
    v.filter(|v| !v.is_none())
}

struct ResourceArgs<'a, 'v> {
    name: &'a str,
    body: Value<'v>,
    ready: Option<Value<'v>>,
    labels: Option<Value<'v>>,
    connection_details: Option<Value<'v>>,
    depends_on: Option<Value<'v>>,
    external_name: Option<Value<'v>>,
    when: Option<Value<'v>>,
    skip_reason: &'a str,
    preserve_observed: Option<Value<'v>>,
    optional: bool,
}

enum Outcome {
    Emitted,
    Skipped,
}

/// The decision procedure of `Resource()`, in the reference's order.
fn resource(ctx: &Context, a: &ResourceArgs) -> anyhow::Result<Outcome> {
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
    let when = strict_bool(a.when, "when").map_err(fail)?;
    let preserve =
        strict_bool(a.preserve_observed, "preserve_observed").map_err(fail)? == Some(true);
    let gated = when == Some(false);
    let skip = |reason: &str| {
        ctx.effects.skip(name, reason, !a.optional);
        Ok(Outcome::Skipped)
    };

    if gated && !preserve {
        if a.skip_reason.is_empty() {
            return Err(fail("skip_reason is required when when=False".to_owned()));
        }
        return skip(a.skip_reason);
    }
    if gated {
        return match ctx.observed(name) {
            Some(body) => Ok(preserve_observed(
                ctx,
                name,
                &body,
                "observed body emitted, gated by when=False",
            )),
            None if a.skip_reason.is_empty() => {
                skip("gated by when=False, not found in observed state (preserve_observed=True)")
            }
            None => skip(a.skip_reason),
        };
    }
    if a.body.is_none() {
        if !preserve {
            return skip(BODY_NONE_REASON);
        }
        return match ctx.observed(name) {
            Some(body) => Ok(preserve_observed(
                ctx,
                name,
                &body,
                "body=None, emitting observed body",
            )),
            None => skip("not found in observed state"),
        };
    }
    if let Some(upstream) = skipped_upstream(a.depends_on) {
        return skip(&format!("depends on skipped {upstream:?}"));
    }

    // The normal path.
    if is_attr_dict(a.body) || !is_dict_like(a.body) {
        return Err(fail(format!(
            "body must be dict, got {}",
            a.body.get_type()
        )));
    }
    // The body is encoded with the labels and annotation set on it; its
    // own mistakes are reported before those of the other arguments.
    let external_name = a
        .external_name
        .map(|v| external_name_edit(name, a.body, v))
        .transpose();
    let (labels, label_warnings) = match label_edits(ctx, name, a.body, a.labels) {
        Ok((labels, warnings)) => (labels, Ok(warnings)),
        Err(e) => (Vec::new(), Err(e)),
    };
    let edits = Edits {
        labels,
        annotations: match &external_name {
            Ok(Some((entry, _))) => vec![entry.clone()],
            _ => Vec::new(),
        },
    };
    let body = encode_resource_body(a.body, &edits).map_err(|e| fail(e.to_string()))?;
    let external_name = external_name.map_err(fail)?;
    let label_warnings = label_warnings.map_err(fail)?;
    if let Some((_, Some(warning))) = external_name {
        ctx.effects.warn(warning);
    }
    for warning in label_warnings {
        ctx.effects.warn(warning);
    }
    let connection_details = match a.connection_details {
        Some(cd) => string_map(cd, "connection_details").map_err(fail)?,
        None => BTreeMap::new(),
    };
    if let Some(depends_on) = a.depends_on {
        record_dependencies(ctx, name, depends_on).map_err(fail)?;
    }
    let ready = match a.ready.map(|v| (v, v.unpack_bool())) {
        None => Ready::Unspecified,
        Some((_, Some(true))) => Ready::True,
        Some((_, Some(false))) => Ready::False,
        Some((v, None)) => {
            return Err(fail(format!(
                "ready must be True, False, or None, got {}",
                v.get_type()
            )));
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
    Ok(Outcome::Emitted)
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

/// The first non-optional skipped reference among `depends_on`, bare or as
/// the first element of a pair.
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
            .filter(|s| !s.optional)
            .map(|s| s.name.clone())
    })
}

fn preserve_observed(ctx: &Context, name: &str, observed: &Struct, why: &str) -> Outcome {
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
    Outcome::Emitted
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

/// The labels `Resource()` sets on the body (the auto-injected ones, then
/// the `labels=` ones, then the resource name; a later one of a key
/// wins), and the warnings about those that replace others.
fn label_edits(
    ctx: &Context,
    name: &str,
    body: Value,
    labels: Option<Value>,
) -> Result<(Labels, Vec<String>), String> {
    let mut set: Vec<(String, String)> = Vec::new();
    let mut warnings = Vec::new();
    let put = |set: &mut Vec<(String, String)>, key: &str, value: &str| match set
        .iter_mut()
        .find(|(k, _)| k == key)
    {
        Some(entry) => value.clone_into(&mut entry.1),
        None => set.push((key.to_owned(), value.to_owned())),
    };
    let user = match labels {
        Some(v) if v.is_none() => None,
        None => Some(None),
        Some(v) => {
            if DictRef::from_value(v).is_none() && !is_attr_dict(v) {
                return Err(format!("labels must be dict or None, got {}", v.get_type()));
            }
            Some(Some(string_map(v, "labels")?))
        }
    };
    // `labels=None` opts out of everything but the resource name.
    if let Some(user) = user {
        let auto = &ctx.crossplane_labels;
        for (key, value) in auto {
            if let Some(old) = body_entry(body, "labels", key) {
                warnings.push(format!(
                    "Resource {name:?}: body label {key:?}={:?} overridden by auto-injected {value:?}",
                    display(old)
                ));
            }
            put(&mut set, key, value);
        }
        for (key, value) in user.unwrap_or_default() {
            put(&mut set, &key, &value);
            if let Some((_, injected)) = auto.iter().find(|(k, _)| *k == key) {
                warnings.push(format!(
                    "Resource {name:?}: labels= kwarg {key:?}={value:?} overrides auto-injected {injected:?}"
                ));
            }
        }
    }
    put(&mut set, RESOURCE_NAME_LABEL, name);
    Ok((set, warnings))
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
    if v.downcast_ref::<SkippedRef>().is_some() {
        return Some(Named::Ignored);
    }
    v.unpack_str()
        .map(|s| Named::Resource(s.to_owned(), DependencyKind::Name))
}
