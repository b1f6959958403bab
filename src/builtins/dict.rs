//! The `dict` module: helpers over dict-like values (plain dicts,
//! attribute-dicts such as `oxr`, schema dicts). Calling `dict(...)` itself
//! is the ordinary dict constructor.
//!
//! Every member returns a new plain dict and never mutates its inputs;
//! nested values that are not rebuilt are shared with the inputs.

use anyhow::anyhow;
use starlark::collections::{Hashed, SmallMap};
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::dict::{Dict, DictRef};
use starlark::values::list::{AllocList, ListRef};
use starlark::values::tuple::UnpackTuple;
use starlark::values::{Heap, Value};

use crate::go::args::GoArgs;
use crate::go::args::want_string;
use crate::go::quote::go_quote;
use crate::go::types::go_type;
use crate::values::mapping::{Lookup, entries, is_mapping, lookup};
use crate::values::mutable_struct::backing_dict;

/// How deep `deep_merge` and `compact` descend.
const MAX_DEPTH: usize = 32;

type Entries<'v> = Vec<(Hashed<Value<'v>>, Value<'v>)>;

/// Registers the `dict` module, callable as the universe's `dict()`.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    crate::values::module::register(builder, "dict", dict_members, Some("dict"));
}

/// The entries of a dict-like argument, or `FN: got T, want dict`.
fn dict_arg<'v>(fn_name: &str, v: Value<'v>, heap: Heap<'v>) -> anyhow::Result<Entries<'v>> {
    entries(fields(v), heap).ok_or_else(|| anyhow!("{fn_name}: got {}, want dict", go_type(v)))
}

/// A mutable struct is read as the dict of its fields by every member
/// of this module; any other value as it is.
fn fields(v: Value<'_>) -> Value<'_> {
    backing_dict(v).unwrap_or(v)
}

/// Binds a call the way go.starlark.net's `UnpackArgs` does (`?` marks the
/// first optional parameter), checking the `keys` parameter is a list and
/// the `path` parameter a str.
fn bind<'v, const N: usize>(
    fn_name: &'static str,
    args: UnpackTuple<Value<'v>>,
    kwargs: DictRef<'v>,
    params: [&str; N],
) -> anyhow::Result<[Option<Value<'v>>; N]> {
    let bound = GoArgs::new(fn_name, args, kwargs).bind(&params, true, |i, v| {
        match params[i].trim_end_matches('?') {
            "keys" if ListRef::from_value(v).is_none() => {
                Err(format!("got {}, want list", go_type(v)))
            }
            "path" => want_string(v),
            _ => Ok(()),
        }
    })?;
    Ok(std::array::from_fn(|i| bound.get(i).copied().flatten()))
}

/// The value of a required parameter `bind` has checked is present.
fn required(v: Option<Value<'_>>) -> Value<'_> {
    v.unwrap_or_else(Value::new_none)
}

/// The positional-only, at-least-two arguments of `merge`/`deep_merge`.
fn at_least_two<'a, 'v>(
    fn_name: &str,
    args: &'a UnpackTuple<Value<'v>>,
    kwargs: &DictRef<'v>,
) -> anyhow::Result<&'a [Value<'v>]> {
    if !kwargs.is_empty() {
        return Err(anyhow!("{fn_name}: unexpected keyword arguments"));
    }
    if args.items.len() < 2 {
        return Err(anyhow!(
            "{fn_name}: requires at least 2 arguments, got {}",
            args.items.len()
        ));
    }
    Ok(&args.items)
}

fn new_dict(entries: Entries<'_>) -> Dict<'_> {
    let mut dict = Dict::new(SmallMap::with_capacity(entries.len()));
    for (k, v) in entries {
        dict.insert_hashed(k, v);
    }
    dict
}

/// The two-way deep merge of `base` and `over` at `depth`.
fn deep_merge_two<'v>(
    base: Entries<'v>,
    over: Entries<'v>,
    depth: usize,
    heap: Heap<'v>,
) -> anyhow::Result<Dict<'v>> {
    if depth > MAX_DEPTH {
        return Err(anyhow!(
            "dict.deep_merge: recursion depth exceeds maximum ({MAX_DEPTH})"
        ));
    }
    let mut out = new_dict(base);
    for (k, v) in over {
        let merged = match out.get_hashed(k) {
            Some(existing) if is_mapping(fields(existing)) && is_mapping(fields(v)) => {
                let base = entries(fields(existing), heap).unwrap_or_default();
                let over = entries(fields(v), heap).unwrap_or_default();
                heap.alloc(deep_merge_two(base, over, depth + 1, heap)?)
            }
            _ => v,
        };
        out.insert_hashed(k, merged);
    }
    Ok(out)
}

fn compact_depth_error() -> anyhow::Error {
    anyhow!("dict.compact: recursion depth exceeds maximum ({MAX_DEPTH})")
}

/// `entries` without `None` values, compacted beneath, with whether
/// anything changed.
fn compact_entries<'v>(
    entries: Entries<'v>,
    depth: usize,
    heap: Heap<'v>,
) -> anyhow::Result<(Dict<'v>, bool)> {
    let mut changed = false;
    let mut out = Dict::new(SmallMap::with_capacity(entries.len()));
    for (k, v) in entries {
        if v.is_none() {
            changed = true;
            continue;
        }
        let (v, rebuilt) = compact_value(v, depth, heap)?;
        changed |= rebuilt;
        out.insert_hashed(k, v);
    }
    Ok((out, changed))
}

/// A non-`None` value at `depth`, compacted: the same object when nothing
/// beneath it changed (plain dicts and lists), a new plain dict for the
/// other dict kinds.
fn compact_value<'v>(
    v: Value<'v>,
    depth: usize,
    heap: Heap<'v>,
) -> anyhow::Result<(Value<'v>, bool)> {
    if depth > MAX_DEPTH {
        return Err(compact_depth_error());
    }
    if let Some(d) = DictRef::from_value(v) {
        let items: Entries<'v> = d.iter_hashed().collect();
        drop(d);
        let (out, changed) = compact_entries(items, depth + 1, heap)?;
        return Ok(if changed {
            (heap.alloc(out), true)
        } else {
            (v, false)
        });
    }
    if let Some(items) = entries(fields(v), heap) {
        let (out, _) = compact_entries(items, depth + 1, heap)?;
        return Ok((heap.alloc(out), true));
    }
    if let Some(list) = ListRef::from_value(v) {
        let items: Vec<Value<'v>> = list.iter().collect();
        let mut changed = false;
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            if item.is_none() {
                out.push(item);
                continue;
            }
            let (item, rebuilt) = compact_value(item, depth + 1, heap)?;
            changed |= rebuilt;
            out.push(item);
        }
        return Ok(if changed {
            (heap.alloc(AllocList(out)), true)
        } else {
            (v, false)
        });
    }
    Ok((v, false))
}

/// The elements of a `keys` argument (a list, checked at binding).
fn key_list(keys: Value<'_>) -> Vec<Value<'_>> {
    ListRef::from_value(keys).map_or_else(Vec::new, |l| l.iter().collect())
}

fn check_key_strings(fn_name: &str, keys: &[Value]) -> anyhow::Result<()> {
    match keys.iter().find(|k| k.unpack_str().is_none()) {
        Some(k) => Err(anyhow!(
            "{fn_name}: key list element is {}, want string",
            go_type(*k)
        )),
        None => Ok(()),
    }
}

/// The segments of a `dig`/`has_path` path (a str, checked at binding),
/// validated.
fn path_segments<'v>(fn_name: &str, path: Value<'v>) -> anyhow::Result<Vec<&'v str>> {
    let p = path.unpack_str().unwrap_or_default();
    if p.is_empty() {
        return Err(anyhow!("{fn_name}: path must not be empty"));
    }
    let segments: Vec<&str> = p.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(anyhow!("{fn_name}: malformed path {}", go_quote(p)));
    }
    Ok(segments)
}

#[starlark_module]
fn dict_members(builder: &mut GlobalsBuilder) {
    /// Shallow merge: a new dict with the entries of every argument, later
    /// values overwriting earlier ones (a key keeps its first position).
    ///
    /// `dict.merge(d1, d2, *more)`: two or more positional dict-like values
    /// (plain dicts, resource dicts such as `oxr`, schema dicts).
    ///
    /// # Example
    /// ```python
    /// dict.merge({"a": 1, "b": 2}, {"b": 3, "c": 4})   # {"a": 1, "b": 3, "c": 4}
    /// ```
    fn merge<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Dict<'v>> {
        const FN: &str = "dict.merge";
        let mut out = Dict::new(SmallMap::new());
        for &arg in at_least_two(FN, &args, &kwargs)? {
            for (k, v) in dict_arg(FN, arg, heap)? {
                out.insert_hashed(k, v);
            }
        }
        Ok(out)
    }

    /// Recursive merge, left to right: where both sides hold a dict under
    /// the same key the two are merged; otherwise the later value replaces
    /// the earlier one (lists are replaced whole). Nests at most 32 deep.
    ///
    /// `dict.deep_merge(d1, d2, *more)`: two or more positional dict-like
    /// values.
    ///
    /// # Example
    /// ```python
    /// dict.deep_merge({"spec": {"a": 1, "b": [1]}}, {"spec": {"b": [2], "c": 3}})
    /// # {"spec": {"a": 1, "b": [2], "c": 3}}
    /// ```
    fn deep_merge<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Dict<'v>> {
        const FN: &str = "dict.deep_merge";
        let args = at_least_two(FN, &args, &kwargs)?;
        let mut acc = dict_arg(FN, args[0], heap)?;
        for &arg in &args[1..] {
            let over = dict_arg(FN, arg, heap)?;
            acc = deep_merge_two(acc, over, 0, heap)?.iter_hashed().collect();
        }
        Ok(new_dict(acc))
    }

    /// A new dict with only the listed keys that `d` has, in the order of
    /// `keys`.
    ///
    /// `dict.pick(d, keys)`: `d` is dict-like; `keys` a list of strings.
    ///
    /// # Example
    /// ```python
    /// dict.pick({"a": 1, "b": 2, "c": 3}, ["c", "a", "z"])   # {"c": 3, "a": 1}
    /// ```
    fn pick<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
    ) -> anyhow::Result<Dict<'v>> {
        const FN: &str = "dict.pick";
        let [d, keys] = bind(FN, args, kwargs, ["d", "keys"])?;
        let (d, keys) = (required(d), key_list(required(keys)));
        if !is_mapping(fields(d)) {
            return Err(anyhow!("{FN}: got {}, want dict", go_type(d)));
        }
        let d = fields(d);
        check_key_strings(FN, &keys)?;
        let mut out = Dict::new(SmallMap::with_capacity(keys.len()));
        for key in keys {
            if let Lookup::Found(v) = lookup(d, key.unpack_str().unwrap_or_default()) {
                out.insert_hashed(key.get_hashed().map_err(starlark::Error::into_anyhow)?, v);
            }
        }
        Ok(out)
    }

    /// A new dict with `d`'s entries, in `d`'s order, except the listed keys.
    ///
    /// `dict.omit(d, keys)`: `d` is dict-like (entries whose key is not a
    /// string are dropped); `keys` a list of strings.
    ///
    /// # Example
    /// ```python
    /// dict.omit({"a": 1, "b": 2, "c": 3}, ["b"])   # {"a": 1, "c": 3}
    /// ```
    fn omit<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Dict<'v>> {
        const FN: &str = "dict.omit";
        let [d, keys] = bind(FN, args, kwargs, ["d", "keys"])?;
        let (d, keys) = (required(d), key_list(required(keys)));
        check_key_strings(FN, &keys)?;
        let omitted: Vec<&str> = keys.iter().filter_map(|k| k.unpack_str()).collect();
        let kept = dict_arg(FN, d, heap)?
            .into_iter()
            .filter(|(k, _)| k.key().unpack_str().is_some_and(|k| !omitted.contains(&k)))
            .collect();
        Ok(new_dict(kept))
    }

    /// A new dict without `None`-valued entries, at any depth. Lists keep
    /// their length (and their `None` elements); empty strings, lists and
    /// dicts are kept. Nests at most 32 deep.
    ///
    /// `dict.compact(d)`: `d` is dict-like; nested resource dicts and schema
    /// dicts come back as plain dicts.
    ///
    /// # Example
    /// ```python
    /// dict.compact({"a": None, "b": {"c": None, "d": []}, "e": [None, {"f": None}]})
    /// # {"b": {"d": []}, "e": [None, {}]}
    /// ```
    fn compact<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Dict<'v>> {
        const FN: &str = "dict.compact";
        let [d] = bind(FN, args, kwargs, ["d"])?;
        let items = dict_arg(FN, required(d), heap)?;
        Ok(compact_entries(items, 0, heap)?.0)
    }

    /// The value at a dot path (`"spec.forProvider.region"`), or `default`
    /// when a key is missing or a step is not a dict. A `None` stored at the
    /// end is returned as `None`.
    ///
    /// `dict.dig(d, path, default=None)`: `d` is any value (a non-dict gives
    /// `default`); `path` a non-empty str without empty segments.
    ///
    /// # Example
    /// ```python
    /// dict.dig(oxr, "spec.parameters.size", "small")
    /// ```
    fn dig<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
    ) -> anyhow::Result<Value<'v>> {
        const FN: &str = "dict.dig";
        let [d, path, default] = bind(FN, args, kwargs, ["d", "path", "default?"])?;
        let segments = path_segments(FN, required(path))?;
        let default = default.unwrap_or_else(Value::new_none);
        let mut current = required(d);
        for segment in segments {
            match lookup(fields(current), segment) {
                Lookup::Found(v) => current = v,
                Lookup::Missing | Lookup::NotMapping => return Ok(default),
            }
        }
        Ok(current)
    }

    /// Whether every key of a dot path exists (the final value may be `None`).
    ///
    /// `dict.has_path(d, path)`: `d` is any value (a non-dict gives `False`);
    /// `path` a non-empty str without empty segments.
    ///
    /// # Example
    /// ```python
    /// dict.has_path({"spec": {"replicas": None}}, "spec.replicas")   # True
    /// ```
    fn has_path<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
    ) -> anyhow::Result<bool> {
        const FN: &str = "dict.has_path";
        let [d, path] = bind(FN, args, kwargs, ["d", "path"])?;
        let segments = path_segments(FN, required(path))?;
        let mut current = required(d);
        for segment in segments {
            match lookup(fields(current), segment) {
                Lookup::Found(v) => current = v,
                Lookup::Missing | Lookup::NotMapping => return Ok(false),
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value as Json, json};

    use crate::testing::{assert_eval, assert_fails, eval, run};

    /// `def nest(n)`: `n` dicts nested under "a", the innermost holding a scalar.
    const NEST: &str = "def nest(n):\n    d = {\"leaf\": 1}\n    for _ in range(n - 1):\n        d = {\"a\": d}\n    return d\n";

    /// The value a script leaves in `dxr["v"]`.
    fn script(source: &str) -> Json {
        let dxr = run(source).unwrap_or_else(|e| panic!("{source}: {e}"));
        function_sdk_rust::resource::struct_to_json(&dxr)["v"].clone()
    }

    #[test]
    fn merge_overwrites_later_values_keeping_the_first_position() {
        assert_eval(
            r#"dict.merge({"a": 1, "b": 2}, {"b": 3, "c": 4})"#,
            json!({"a": 1, "b": 3, "c": 4}),
        );
        assert_eval(
            r#"[[k, v] for k, v in dict.merge({"a": 1, "b": 2}, {"b": 3, "c": 4}, {"a": 5}).items()]"#,
            json!([["a", 5], ["b", 3], ["c", 4]]),
        );
    }

    #[test]
    fn merge_returns_a_new_plain_dict_and_leaves_its_inputs_alone() {
        let v = script(
            "a = {\"x\": 1}\nb = {\"y\": 2}\nm = dict.merge(a, b)\nm[\"z\"] = 3\ndxr[\"v\"] = [a, b, m]\n",
        );
        assert_eq!(v, json!([{"x": 1}, {"y": 2}, {"x": 1, "y": 2, "z": 3}]));
        assert_eval(
            r#"str(dict.merge(schema("S", x = field())(x = 1), {}))"#,
            json!(r#"{"x": 1}"#),
        );
    }

    #[test]
    fn merge_is_shallow() {
        assert_eval(
            r#"dict.merge({"a": {"x": 1}}, {"a": {"y": 2}})"#,
            json!({"a": {"y": 2}}),
        );
    }

    #[test]
    fn merge_accepts_attribute_dicts_and_schema_dicts() {
        let v = script(
            "set_xr_status(\"a.b\", 1)\nS = schema(\"S\", s = field())\ndxr[\"v\"] = dict.merge(dxr.status, S(s = 2), {\"c\": 3})\n",
        );
        assert_eq!(v, json!({"a": {"b": 1}, "s": 2, "c": 3}));
    }

    #[test]
    fn merge_rejects_keywords_too_few_arguments_and_non_dicts() {
        assert_fails(
            "dict.merge({}, {}, x = 1)",
            "dict.merge: unexpected keyword arguments",
        );
        assert_fails(
            "dict.merge({})",
            "dict.merge: requires at least 2 arguments, got 1",
        );
        assert_fails(
            "dict.merge()",
            "dict.merge: requires at least 2 arguments, got 0",
        );
        assert_fails("dict.merge({}, 1, [])", "dict.merge: got int, want dict");
        assert_fails("dict.merge([], {})", "dict.merge: got list, want dict");
    }

    #[test]
    fn deep_merge_merges_nested_dicts_and_replaces_everything_else() {
        assert_eval(
            r#"dict.deep_merge({"spec": {"a": 1, "b": [1]}}, {"spec": {"b": [2], "c": 3}})"#,
            json!({"spec": {"a": 1, "b": [2], "c": 3}}),
        );
        assert_eval(
            r#"dict.deep_merge({"a": {"x": 1}, "b": 1, "c": {"y": 1}}, {"a": None, "b": {"z": 1}}, {"c": {"y": 2}})"#,
            json!({"a": null, "b": {"z": 1}, "c": {"y": 2}}),
        );
        assert_eval(
            r#"[[k, v] for k, v in dict.deep_merge({"a": 1, "b": {"x": 1, "y": 2}}, {"b": {"y": 3, "w": 4}, "a": 2}).items()]"#,
            json!([["a", 2], ["b", {"x": 1, "y": 3, "w": 4}]]),
        );
    }

    #[test]
    fn deep_merge_leaves_inputs_alone_and_shares_one_sided_values() {
        let v = script(
            "a = {\"x\": {\"y\": 1}, \"k\": {\"n\": 1}}\nm = dict.deep_merge(a, {\"x\": {\"z\": 2}})\nm[\"k\"][\"n\"] = 5\ndxr[\"v\"] = [a, m]\n",
        );
        assert_eq!(
            v,
            json!([{"x": {"y": 1}, "k": {"n": 5}}, {"x": {"y": 1, "z": 2}, "k": {"n": 5}}])
        );
    }

    #[test]
    fn deep_merge_descends_into_attribute_dicts_and_schema_dicts() {
        let v = script(
            "set_xr_status(\"a.b\", 1)\nS = schema(\"S\", b = field(), c = field())\ndxr[\"v\"] = dict.deep_merge(dxr.status, {\"a\": S(c = 2)})\n",
        );
        assert_eq!(v, json!({"a": {"b": 1, "c": 2}}));
    }

    #[test]
    fn deep_merge_allows_thirty_three_nested_dicts_and_no_more() {
        let v = script(&format!(
            "{NEST}dxr[\"v\"] = dict.deep_merge(nest(33), nest(33)) == nest(33)\n"
        ));
        assert_eq!(v, json!(true));
        assert_fails(
            &format!("{NEST}dict.deep_merge(nest(34), nest(34))\n"),
            "dict.deep_merge: recursion depth exceeds maximum (32)",
        );
        // Only paths where both sides hold dicts consume depth.
        let v = script(&format!(
            "{NEST}dxr[\"v\"] = dict.deep_merge(nest(40), {{\"a\": 1}})\n"
        ));
        assert_eq!(v, json!({"a": 1}));
    }

    #[test]
    fn deep_merge_rejects_keywords_too_few_arguments_and_non_dicts() {
        assert_fails(
            "dict.deep_merge({}, {}, x = 1)",
            "dict.deep_merge: unexpected keyword arguments",
        );
        assert_fails(
            "dict.deep_merge({})",
            "dict.deep_merge: requires at least 2 arguments, got 1",
        );
        assert_fails(
            "dict.deep_merge({}, None)",
            "dict.deep_merge: got NoneType, want dict",
        );
    }

    #[test]
    fn pick_keeps_existing_listed_keys_in_the_order_of_keys_once() {
        assert_eval(
            r#"[[k, v] for k, v in dict.pick({"a": 1, "b": 2, "c": 3}, ["c", "a", "z", "c"]).items()]"#,
            json!([["c", 3], ["a", 1]]),
        );
        assert_eval(r#"dict.pick({"a": 1}, [])"#, json!({}));
        let v = script(
            "set_xr_status(\"a\", 1)\nset_xr_status(\"b\", 2)\ndxr[\"v\"] = dict.pick(dxr.status, [\"b\"])\n",
        );
        assert_eq!(v, json!({"b": 2}));
    }

    #[test]
    fn pick_checks_the_key_list_then_the_dict_then_each_key() {
        assert_fails(
            r#"dict.pick({"a": 1}, ("a",))"#,
            "dict.pick: for parameter keys: got tuple, want list",
        );
        assert_fails("dict.pick([], [1])", "dict.pick: got list, want dict");
        assert_fails(
            r#"dict.pick({}, ["a", 1])"#,
            "dict.pick: key list element is int, want string",
        );
    }

    #[test]
    fn omit_drops_listed_keys_and_non_string_keys_in_dict_order() {
        assert_eval(
            r#"[[k, v] for k, v in dict.omit({"a": 1, "b": 2, "c": 3}, ["b", "z"]).items()]"#,
            json!([["a", 1], ["c", 3]]),
        );
        assert_eval(r#"dict.omit({1: "x", "a": 1}, [])"#, json!({"a": 1}));
        assert_eval(
            r#"dict.omit(schema("S", a = field(), b = field())(a = 1, b = 2), ["a"])"#,
            json!({"b": 2}),
        );
    }

    #[test]
    fn omit_checks_the_key_list_then_each_key_then_the_dict() {
        assert_fails(
            r#"dict.omit({}, ("a",))"#,
            "dict.omit: for parameter keys: got tuple, want list",
        );
        assert_fails(
            "dict.omit([], [1])",
            "dict.omit: key list element is int, want string",
        );
        assert_fails(r#"dict.omit([], ["a"])"#, "dict.omit: got list, want dict");
    }

    #[test]
    fn compact_removes_none_entries_at_any_depth_but_keeps_list_elements() {
        assert_eval(
            r#"dict.compact({"a": None, "b": {"c": None, "d": []}, "e": [None, {"f": None}]})"#,
            json!({"b": {"d": []}, "e": [null, {}]}),
        );
        assert_eval(
            r#"dict.compact({"s": "", "l": [], "d": {}, "z": 0, "f": False, "n": {"x": None}})"#,
            json!({"s": "", "l": [], "d": {}, "z": 0, "f": false, "n": {}}),
        );
    }

    #[test]
    fn compact_does_not_descend_into_tuples() {
        assert_eval(
            r#"str(dict.compact({"t": (None, {"a": None})}))"#,
            json!(r#"{"t": (None, {"a": None})}"#),
        );
    }

    #[test]
    fn compact_reuses_unchanged_containers_and_rebuilds_changed_ones() {
        let v = script(
            "same = {\"x\": 1}\nsame_list = [1, {\"y\": 2}]\nchanged = {\"x\": None, \"y\": 1}\nd = {\"s\": same, \"l\": same_list, \"c\": changed}\nr = dict.compact(d)\nr[\"s\"][\"x\"] = 2\nr[\"l\"].append(3)\nr[\"c\"][\"z\"] = 3\nr[\"new\"] = 1\ndxr[\"v\"] = [d, r]\n",
        );
        assert_eq!(
            v,
            json!([
                {"s": {"x": 2}, "l": [1, {"y": 2}, 3], "c": {"x": null, "y": 1}},
                {"s": {"x": 2}, "l": [1, {"y": 2}, 3], "c": {"y": 1, "z": 3}, "new": 1}
            ])
        );
    }

    #[test]
    fn compact_copies_attribute_dicts_and_schema_dicts_to_plain_dicts() {
        let v = script(
            "set_xr_status(\"a.b\", None)\nset_xr_status(\"a.c\", 1)\nr = dict.compact(dxr.status)\nr[\"a\"][\"d\"] = 2\ndxr[\"v\"] = [r, \"d\" in dxr.status.a]\n",
        );
        assert_eq!(v, json!([{"a": {"c": 1, "d": 2}}, false]));
        assert_eval(
            r#"str(dict.compact({"s": schema("S", x = field())(x = 1)}))"#,
            json!(r#"{"s": {"x": 1}}"#),
        );
        assert_eval(
            r#"str(dict.compact(schema("S", x = field(), y = field())(x = 1)))"#,
            json!(r#"{"x": 1}"#),
        );
    }

    #[test]
    fn compact_allows_thirty_three_nested_dicts_and_no_more() {
        let v = script(&format!(
            "{NEST}dxr[\"v\"] = dict.compact(nest(33)) == nest(33)\n"
        ));
        assert_eq!(v, json!(true));
        assert_fails(
            &format!("{NEST}dict.compact(nest(34))\n"),
            "dict.compact: recursion depth exceeds maximum (32)",
        );
        // Lists are levels too.
        assert_fails(
            &format!("{NEST}dict.compact({{\"l\": [nest(33)]}})\n"),
            "dict.compact: recursion depth exceeds maximum (32)",
        );
        // An empty innermost dict holds nothing to visit: 34 dicts pass.
        let v = script(
            "def wrap(n):\n    e = {}\n    for _ in range(n - 1):\n        e = {\"a\": e}\n    return e\ndxr[\"v\"] = dict.compact(wrap(34)) == wrap(34)\n",
        );
        assert_eq!(v, json!(true));
    }

    #[test]
    fn compact_rejects_non_dicts() {
        assert_fails("dict.compact([])", "dict.compact: got list, want dict");
    }

    #[test]
    fn dig_walks_a_dot_path_and_falls_back_to_the_default() {
        let d = r#"{"a": {"b": {"c": 1, "n": None}, "l": [1]}, "m": None}"#;
        assert_eval(&format!(r#"dict.dig({d}, "a.b.c")"#), json!(1));
        assert_eval(&format!(r#"dict.dig({d}, "a.b.x", "dflt")"#), json!("dflt"));
        assert_eval(&format!(r#"dict.dig({d}, "a.b.x")"#), json!(null));
        assert_eval(&format!(r#"dict.dig({d}, "a.b.n", "dflt")"#), json!(null));
        assert_eval(&format!(r#"dict.dig({d}, "m.x", "dflt")"#), json!("dflt"));
        assert_eval(&format!(r#"dict.dig({d}, "a.l.x", "dflt")"#), json!("dflt"));
        assert_eval(r#"dict.dig("text", "a", 7)"#, json!(7));
        assert_eval(r#"dict.dig(None, "a", default = 7)"#, json!(7));
        let v = script(
            "set_xr_status(\"a.b\", 1)\nS = schema(\"S\", s = field())\ndxr[\"v\"] = [dict.dig(dxr, \"status.a.b\"), dict.dig({\"x\": S(s = 2)}, \"x.s\")]\n",
        );
        assert_eq!(v, json!([1, 2]));
    }

    #[test]
    fn dig_and_has_path_reject_empty_malformed_and_non_string_paths() {
        for f in ["dig", "has_path"] {
            assert_fails(
                &format!(r#"dict.{f}({{}}, "")"#),
                &format!("dict.{f}: path must not be empty"),
            );
            for p in [".a", "a.", "a..b"] {
                assert_fails(
                    &format!(r#"dict.{f}({{}}, "{p}")"#),
                    &format!(r#"dict.{f}: malformed path "{p}""#),
                );
            }
            assert_fails(
                &format!(r#"dict.{f}({{}}, ["a"])"#),
                &format!("dict.{f}: for parameter path: got list, want string"),
            );
        }
    }

    #[test]
    fn has_path_is_true_when_every_segment_exists_even_holding_none() {
        let d = r#"{"a": {"b": None, "l": [1]}}"#;
        assert_eval(&format!(r#"dict.has_path({d}, "a.b")"#), json!(true));
        assert_eval(&format!(r#"dict.has_path({d}, "a")"#), json!(true));
        assert_eval(&format!(r#"dict.has_path({d}, "a.c")"#), json!(false));
        assert_eval(&format!(r#"dict.has_path({d}, "a.b.c")"#), json!(false));
        assert_eval(&format!(r#"dict.has_path({d}, "a.l.x")"#), json!(false));
        assert_eval(r#"dict.has_path(1, "a")"#, json!(false));
        assert_eval(
            r#"dict.has_path(schema("S", x = field())(x = None), "x")"#,
            json!(false),
        );
        assert_eval(
            r#"dict.has_path(schema("S", x = field())(x = 0), "x")"#,
            json!(true),
        );
    }

    #[test]
    fn members_bind_arguments_like_go() {
        assert_fails("dict.pick({})", "dict.pick: missing argument for keys");
        assert_fails(
            r#"dict.dig({}, "a", 1, 2)"#,
            "dict.dig: got 4 arguments, want at most 3",
        );
        assert_fails(
            "dict.compact(x = {})",
            r#"dict.compact: unexpected keyword argument "x""#,
        );
        assert_fails(
            r#"dict.omit({}, keys = ("a",))"#,
            r#"dict.omit: for parameter "keys": got tuple, want list"#,
        );
        assert_fails(
            r#"dict.has_path({}, "a", path = "b")"#,
            r#"dict.has_path: got multiple values for keyword argument "path""#,
        );
        assert_eval(
            r#"dict.dig(d = {"a": {"b": 2}}, path = "a.b", default = 0)"#,
            json!(2),
        );
        assert_eval(r#"dict.compact(d = {"a": None})"#, json!({}));
        assert_eval(r#"dict.pick(keys = ["a"], d = {"a": 1})"#, json!({"a": 1}));
    }

    #[test]
    fn dict_is_a_module_and_still_the_constructor() {
        assert_eval("type(dict)", json!("module"));
        assert_eval("str(dict)", json!("<module \"dict\">"));
        assert_eval(
            "dir(dict)",
            json!([
                "compact",
                "deep_merge",
                "dig",
                "has_path",
                "merge",
                "omit",
                "pick"
            ]),
        );
        assert_eval("dict()", json!({}));
        assert_eval(r#"dict({"a": 1})"#, json!({"a": 1}));
        assert_eval(r#"dict([("a", 1)], b = 2)"#, json!({"a": 1, "b": 2}));
        assert_eval("dict(a = 1)", json!({"a": 1}));
        assert_eval("type(dict(a = 1))", json!("dict"));
        assert_fails("dict.nope", "nope");
    }

    /// JSON-like values: small ints, strings, bools, None, lists and dicts
    /// over a few shared keys, so that merges overlap.
    fn json_value() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            (-5i64..5).prop_map(Json::from),
            "[a-c]{0,2}".prop_map(Json::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
                prop::collection::btree_map("[a-d]", inner, 0..4)
                    .prop_map(|m| Json::Object(m.into_iter().collect())),
            ]
        })
    }

    fn json_dict() -> impl Strategy<Value = Json> {
        prop::collection::btree_map("[a-d]", json_value(), 0..5)
            .prop_map(|m| Json::Object(m.into_iter().collect()))
    }

    /// A JSON value as a Starlark literal.
    fn literal(v: &Json) -> String {
        match v {
            Json::Null => "None".to_owned(),
            Json::Bool(true) => "True".to_owned(),
            Json::Bool(false) => "False".to_owned(),
            Json::Number(_) | Json::String(_) => v.to_string(),
            Json::Array(items) => {
                format!(
                    "[{}]",
                    items.iter().map(literal).collect::<Vec<_>>().join(", ")
                )
            }
            Json::Object(m) => format!(
                "{{{}}}",
                m.iter()
                    .map(|(k, v)| format!("{}: {}", Json::from(k.as_str()), literal(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The reference two-way deep merge, on JSON.
    fn model_deep_merge(base: &Json, over: &Json) -> Json {
        let (Json::Object(b), Json::Object(o)) = (base, over) else {
            return over.clone();
        };
        let mut out = b.clone();
        for (k, v) in o {
            let merged = match out.get(k) {
                Some(existing @ Json::Object(_)) if v.is_object() => model_deep_merge(existing, v),
                _ => v.clone(),
            };
            out.insert(k.clone(), merged);
        }
        Json::Object(out)
    }

    /// The reference compaction, on JSON.
    fn model_compact(v: &Json) -> Json {
        match v {
            Json::Object(m) => Json::Object(
                m.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), model_compact(v)))
                    .collect(),
            ),
            Json::Array(items) => Json::Array(items.iter().map(model_compact).collect()),
            other => other.clone(),
        }
    }

    fn has_none_entry(v: &Json) -> bool {
        match v {
            Json::Object(m) => m.values().any(|v| v.is_null() || has_none_entry(v)),
            Json::Array(items) => items.iter().any(has_none_entry),
            _ => false,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn deep_merge_matches_the_model_and_has_identities(a in json_dict(), b in json_dict(), c in json_dict()) {
            let (la, lb, lc) = (literal(&a), literal(&b), literal(&c));
            let v = eval(&format!(
                "[dict.deep_merge({la}, {{}}) == {la}, dict.deep_merge({{}}, {la}) == {la}, \
                 dict.deep_merge({la}, {la}) == {la}, dict.deep_merge({la}, {lb}), \
                 dict.deep_merge({la}, {lb}, {lc}) == dict.deep_merge(dict.deep_merge({la}, {lb}), {lc})]"
            ))
            .unwrap();
            prop_assert_eq!(&v[0], &json!(true));
            prop_assert_eq!(&v[1], &json!(true));
            prop_assert_eq!(&v[2], &json!(true));
            prop_assert_eq!(&v[3], &model_deep_merge(&a, &b));
            prop_assert_eq!(&v[4], &json!(true));
        }

        #[test]
        fn compact_matches_the_model_is_idempotent_and_leaves_no_none_entry(a in json_dict()) {
            let la = literal(&a);
            let v = eval(&format!(
                "[dict.compact({la}), dict.compact(dict.compact({la})) == dict.compact({la}), {la}]"
            ))
            .unwrap();
            prop_assert_eq!(&v[0], &model_compact(&a));
            prop_assert!(!has_none_entry(&v[0]));
            prop_assert_eq!(&v[1], &json!(true));
            // The input is untouched.
            prop_assert_eq!(&v[2], &a);
        }
    }
}
