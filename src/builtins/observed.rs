//! Read helpers: safe lookups into the XR, observed resources and extra
//! resources.

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::dict::{AllocDict, DictRef};
use starlark::values::list::{AllocList, ListRef};
use starlark::values::{Heap, Value};

use crate::effects::Originals;
use crate::values::attr_dict::{Entries, conversion_error};

/// What a lookup of one key in a value found.
enum Lookup<'v> {
    /// The value is not a mapping.
    NotMapping,
    /// The key is absent.
    Missing,
    /// The value under the key (possibly `None`).
    Found(Value<'v>),
    /// The value is a body that could not be converted, for this reason.
    Unconverted(&'v str),
}

/// Looks `key` up in any dict-like value.
fn lookup<'v>(v: Value<'v>, key: &str) -> Lookup<'v> {
    let v = crate::values::schema::inner_dict(v).unwrap_or(v);
    if let Some(error) = conversion_error(v) {
        return Lookup::Unconverted(error);
    }
    if let Some(e) = Entries::of(v) {
        return e.get(key).map_or(Lookup::Missing, Lookup::Found);
    }
    if let Some(d) = DictRef::from_value(v) {
        return d.get_str(key).map_or(Lookup::Missing, Lookup::Found);
    }
    Lookup::NotMapping
}

/// The key list of a `get`-style path: a string split on dots, or a list
/// of strings.
fn path_keys(fn_name: &str, path: Value) -> anyhow::Result<Vec<String>> {
    if let Some(s) = path.unpack_str() {
        return Ok(s.split('.').map(str::to_owned).collect());
    }
    let Some(list) = ListRef::from_value(path) else {
        return Err(anyhow!(
            "{fn_name}: path must be string or list, got {}",
            path.get_type()
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, k)| {
            k.unpack_str().map(str::to_owned).ok_or_else(|| {
                anyhow!(
                    "{fn_name}: path list element {i} is {}, want string",
                    k.get_type()
                )
            })
        })
        .collect()
}

/// Walks `keys` from `obj`; `None` when a step is not a mapping, missing,
/// or `None`. A step into a body that could not be converted fails: the
/// readers of observed and required resources say why (`get_observed`,
/// `get_extra_resource(s)`, `get_condition`); the general ones (`get`,
/// `get_label`, `get_annotation`) give their default, as in Go.
fn walk<'v>(obj: Value<'v>, keys: &[String]) -> anyhow::Result<Option<Value<'v>>> {
    let mut current = obj;
    for key in keys {
        match lookup(current, key) {
            Lookup::Found(v) if !v.is_none() => current = v,
            Lookup::Unconverted(error) => return Err(anyhow!("{error}")),
            _ => return Ok(None),
        }
    }
    Ok(Some(current))
}

/// The original request globals of the running module.
fn originals<'v>(eval: &Evaluator<'v, '_, '_>) -> anyhow::Result<Originals<'v>> {
    Originals::of(eval.module())
        .ok_or_else(|| anyhow!("the request globals are not available here"))
}

/// The original `dxr`.
pub(crate) fn original_dxr<'v>(eval: &Evaluator<'v, '_, '_>) -> anyhow::Result<Value<'v>> {
    Ok(originals(eval)?.dxr)
}

fn non_empty(fn_name: &str, what: &str, s: &str) -> anyhow::Result<()> {
    if s.is_empty() {
        return Err(anyhow!("{fn_name}: {what} must not be empty"));
    }
    Ok(())
}

fn metadata_entry<'v>(res: Value<'v>, section: &str, key: &str) -> Option<Value<'v>> {
    let Lookup::Found(metadata) = lookup(res, "metadata") else {
        return None;
    };
    let Lookup::Found(entries) = lookup(metadata, section) else {
        return None;
    };
    match lookup(entries, key) {
        Lookup::Found(v) => Some(v),
        _ => None,
    }
}

/// The list of bodies under `name` in `extra_resources`, if any.
fn extra_list<'v>(
    eval: &Evaluator<'v, '_, '_>,
    name: &str,
) -> anyhow::Result<Option<Vec<Value<'v>>>> {
    let extra = originals(eval)?.extra_resources;
    Ok(match lookup(extra, name) {
        Lookup::Found(v) => ListRef::from_value(v).map(|l| l.iter().collect()),
        _ => None,
    })
}

fn empty_list(heap: Heap<'_>) -> Value<'_> {
    heap.alloc(AllocList::EMPTY)
}

/// `get`, which test files see too, then the readers of the request.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    register_get(builder);
    register_readers(builder);
}

#[starlark_module]
pub(crate) fn register_get(builder: &mut GlobalsBuilder) {
    /// Looks up a nested value by dot path (`"spec.parameters.size"`) or key
    /// list (`["metadata", "annotations", "example.org/team"]`); returns
    /// `default` when any step is missing, `None`, or not a dict.
    ///
    /// # Example
    /// ```python
    /// size = get(oxr, "spec.parameters.size", "small")
    /// ```
    fn get<'v>(
        obj: Value<'v>,
        path: Value<'v>,
        default: Option<Value<'v>>,
    ) -> anyhow::Result<Value<'v>> {
        let keys = path_keys("get", path)?;
        Ok(walk(obj, &keys)
            .ok()
            .flatten()
            .unwrap_or_else(|| default.unwrap_or_else(Value::new_none)))
    }
}

#[starlark_module]
fn register_readers(builder: &mut GlobalsBuilder) {
    /// A label of a resource by exact key, or `default`.
    ///
    /// # Example
    /// ```python
    /// team = get_label(oxr, "example.org/team", "platform")
    /// ```
    fn get_label<'v>(
        res: Value<'v>,
        key: &str,
        default: Option<Value<'v>>,
    ) -> anyhow::Result<Value<'v>> {
        non_empty("get_label", "key", key)?;
        Ok(metadata_entry(res, "labels", key)
            .unwrap_or_else(|| default.unwrap_or_else(Value::new_none)))
    }

    /// An annotation of a resource by exact key, or `default`.
    ///
    /// # Example
    /// ```python
    /// ext = get_annotation(oxr, "crossplane.io/external-name", "")
    /// ```
    fn get_annotation<'v>(
        res: Value<'v>,
        key: &str,
        default: Option<Value<'v>>,
    ) -> anyhow::Result<Value<'v>> {
        non_empty("get_annotation", "key", key)?;
        Ok(metadata_entry(res, "annotations", key)
            .unwrap_or_else(|| default.unwrap_or_else(Value::new_none)))
    }

    /// A value inside an observed composed resource, or `default`.
    ///
    /// # Example
    /// ```python
    /// endpoint = get_observed("db", "status.atProvider.endpoint", "")
    /// ```
    fn get_observed<'v>(
        name: &str,
        path: Value<'v>,
        default: Option<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        non_empty("get_observed", "name", name)?;
        let keys = path_keys("get", path)?;
        if keys.is_empty() || keys == [""] {
            return Err(anyhow!("get_observed: path must not be empty"));
        }
        let default = default.unwrap_or_else(Value::new_none);
        let observed = originals(eval)?.observed;
        Ok(match lookup(observed, name) {
            Lookup::Found(body) => walk(body, &keys)?.unwrap_or(default),
            _ => default,
        })
    }

    /// Whether a composed resource has been observed.
    ///
    /// # Example
    /// ```python
    /// if is_observed("db"):
    ///     emit_event("Normal", "database exists")
    /// ```
    fn is_observed<'v>(name: &str, eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<bool> {
        non_empty("is_observed", "name", name)?;
        Ok(matches!(
            lookup(originals(eval)?.observed, name),
            Lookup::Found(_)
        ))
    }

    /// The observed body of a composed resource (frozen), or `default`.
    ///
    /// # Example
    /// ```python
    /// body = observed_body("db", {})
    /// ```
    fn observed_body<'v>(
        name: &str,
        default: Option<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        non_empty("observed_body", "name", name)?;
        Ok(match lookup(originals(eval)?.observed, name) {
            Lookup::Found(body) => body,
            _ => default.unwrap_or_else(Value::new_none),
        })
    }

    /// A copy of one status condition of an observed resource, as a dict
    /// with `status`, `reason`, `message` and `lastTransitionTime`; `None`
    /// when there is no such condition.
    ///
    /// # Example
    /// ```python
    /// c = get_condition("db", "Ready")
    /// ready = c != None and c["status"] == "True"
    /// ```
    fn get_condition<'v>(
        name: &str,
        r#type: &str,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        non_empty("get_condition", "name", name)?;
        non_empty("get_condition", "type", r#type)?;
        let heap = eval.heap();
        let observed = originals(eval)?.observed;
        let Some(conditions) = walk(
            observed,
            &[
                name.to_owned(),
                "status".to_owned(),
                "conditions".to_owned(),
            ],
        )?
        else {
            return Ok(Value::new_none());
        };
        let Some(list) = ListRef::from_value(conditions) else {
            return Ok(Value::new_none());
        };
        for c in list.iter() {
            let is_match =
                matches!(lookup(c, "type"), Lookup::Found(t) if t.unpack_str() == Some(r#type));
            if !is_match {
                continue;
            }
            let field = |k: &str| match lookup(c, k) {
                Lookup::Found(v) if !v.is_none() => v,
                _ => heap.alloc(""),
            };
            return Ok(heap.alloc(AllocDict([
                ("status", field("status")),
                ("reason", field("reason")),
                ("message", field("message")),
                ("lastTransitionTime", field("lastTransitionTime")),
            ])));
        }
        Ok(Value::new_none())
    }

    /// The first fetched extra resource under `name` (or a value in it at
    /// `path`), or `default`.
    ///
    /// # Example
    /// ```python
    /// region = get_extra_resource("netcfg", "spec.region", "eu-west-1")
    /// ```
    fn get_extra_resource<'v>(
        name: &str,
        path: Option<Value<'v>>,
        default: Option<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        non_empty("get_extra_resource", "name", name)?;
        let default = default.unwrap_or_else(Value::new_none);
        let Some(first) = extra_list(eval, name)?.and_then(|l| l.first().copied()) else {
            return Ok(default);
        };
        let Some(path) = path.filter(|p| !p.is_none()) else {
            return Ok(first);
        };
        if path.unpack_str() == Some("") {
            return Err(anyhow!("get_extra_resource: path must not be empty"));
        }
        let keys = path_keys("get", path)?;
        Ok(walk(first, &keys)?.unwrap_or(default))
    }

    /// Every fetched extra resource under `name` (or the values at `path`
    /// in each, skipping those without it), or `default`.
    ///
    /// # Example
    /// ```python
    /// ids = get_extra_resources("subnets", "status.atProvider.id")
    /// ```
    fn get_extra_resources<'v>(
        name: &str,
        path: Option<Value<'v>>,
        default: Option<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        non_empty("get_extra_resources", "name", name)?;
        let heap = eval.heap();
        let Some(items) = extra_list(eval, name)? else {
            return Ok(default.unwrap_or_else(|| empty_list(heap)));
        };
        let Some(path) = path.filter(|p| !p.is_none()) else {
            return Ok(heap.alloc(AllocList(items)));
        };
        let keys = path_keys("get", path)?;
        let mut found: Vec<Value> = Vec::with_capacity(items.len());
        for body in items {
            found.extend(walk(body, &keys)?);
        }
        Ok(heap.alloc(AllocList(found)))
    }
}
