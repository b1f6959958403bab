//! The `json` module: `encode`, `decode`, `encode_indent` and `indent`, with
//! the behaviour of go.starlark.net's `lib/json` that scripts were written
//! against: sorted object keys, Go's float text, Go's string escaping,
//! `decode(x, default)` and the Go error texts.

use crate::go::args::GoArgs;
use crate::go::args::want_string;
use crate::go::types::go_type;

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::dict::DictRef;
use starlark::values::tuple::UnpackTuple;
use starlark::values::{Heap, Value};

mod decode;
mod encode;
mod indent;
mod scanner;
#[cfg(test)]
mod tests;

pub(crate) use decode::decode_value;
pub(crate) use encode::{encode_value, quote_json_string};
pub(crate) use indent::indent_json;

/// Deepest nesting the encoders and decoders follow. Go's own JSON scanner
/// stops at the same depth; it keeps a hostile value from exhausting the
/// native stack.
pub(crate) const MAX_DEPTH: usize = 10_000;

/// Registers the `json` module.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    crate::values::module::register(builder, "json", json_members, None);
}

/// The entries of a dict-like value (plain dict, attribute-dict or schema
/// dict), keys as values, in the dict's order; `None` when `v` is not
/// dict-like. Both `json.encode` and `yaml.encode` recognise mappings here
/// (through [`crate::values::mapping`], which knows every dict flavour).
pub(crate) fn dict_like_entries<'v>(
    v: Value<'v>,
    heap: Heap<'v>,
) -> Option<Vec<(Value<'v>, Value<'v>)>> {
    crate::values::mapping::entries(v, heap)
        .map(|entries| entries.into_iter().map(|(k, v)| (*k.key(), v)).collect())
}

/// The arguments of `indent` and `encode_indent`: the one positional value
/// and the keyword-only strings `prefix` and `indent` (checked first, as in
/// Go).
fn indent_options<'v>(call: &GoArgs<'v>) -> anyhow::Result<(Value<'v>, &'v str, &'v str)> {
    let bound = call.bind(&["prefix?", "indent?"], false, |_, v| want_string(v))?;
    let prefix = bound[0].and_then(Value::unpack_str).unwrap_or("");
    let indent = bound[1].and_then(Value::unpack_str).unwrap_or("\t");
    // The keywords are bound; the value is the one positional argument.
    let value = call.positional_only().positional(1, 1)?[0];
    Ok((value, prefix, indent))
}

#[starlark_module]
fn json_members(builder: &mut GlobalsBuilder) {
    /// Encodes a value as compact JSON text.
    ///
    /// `json.encode(x)` takes exactly one positional argument. `None`,
    /// booleans, ints (any size), floats (Go's shortest `%g` text, `1.0`,
    /// `1e+06`) and strings encode as themselves; dicts (including `oxr`,
    /// `observed` and other resource dicts) become objects with **sorted
    /// keys**, which must be strings; lists, tuples, sets and ranges become
    /// arrays; structs and other values with attributes become objects of
    /// their attributes. NaN and infinities, functions and cycles are
    /// errors.
    ///
    /// # Example
    /// ```python
    /// json.encode({"b": [1, 2.5], "a": None})  # '{"a":null,"b":[1,2.5]}'
    /// ```
    fn encode<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<String> {
        let call = GoArgs::new("json.encode", args, kwargs);
        let x = call.positional(1, 1)?[0];
        encode_value(x, heap).map_err(|e| anyhow!("json.encode: {e}"))
    }

    /// Decodes JSON text into new, mutable Starlark values.
    ///
    /// `json.decode(x, default=<unset>)`: `x` is a positional string.
    /// Objects become dicts in document order (a repeated key keeps its
    /// first position and its last value), arrays become lists, numbers with
    /// a `.`, `e` or sign after the first character become floats and other
    /// numbers ints of any size. When the text is not valid JSON, `default`
    /// is returned if it was given, otherwise the call fails with
    /// `json.decode: at offset N, ...`.
    ///
    /// # Example
    /// ```python
    /// cfg = json.decode(oxr.spec.parameters.config, default = {})
    /// json.decode('{"b": 1, "a": [2.0]}')  # {"b": 1, "a": [2.0]}
    /// ```
    fn decode<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let call = GoArgs::new("json.decode", args, kwargs);
        let bound = call.bind(&["x", "default?"], true, |i, v| {
            if i == 0 { want_string(v) } else { Ok(()) }
        })?;
        if call.positional_len() < 1 {
            return Err(anyhow!("json.decode: unexpected keyword argument x"));
        }
        let x = bound[0].and_then(Value::unpack_str).unwrap_or_default();
        match (decode_value(x, heap), bound[1]) {
            (Ok(v), _) => Ok(v),
            (Err(_), Some(default)) => Ok(default),
            (Err(e), None) => Err(anyhow!("json.decode: {e}")),
        }
    }

    /// Encodes a value as indented JSON text.
    ///
    /// `json.encode_indent(x, *, prefix="", indent="\t")` equals
    /// `json.indent(json.encode(x), prefix=prefix, indent=indent)`; `prefix`
    /// and `indent` are keyword-only.
    ///
    /// # Example
    /// ```python
    /// json.encode_indent({"a": [1]}, indent = "  ")  # '{\n  "a": [\n    1\n  ]\n}'
    /// ```
    fn encode_indent<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<String> {
        let call = GoArgs::new("json.encode_indent", args, kwargs);
        let (x, prefix, indent) = indent_options(&call)?;
        let text = encode_value(x, heap).map_err(|e| anyhow!("json.encode_indent: {e}"))?;
        indent_json(&text, prefix, indent).map_err(|e| anyhow!("json.encode_indent: {e}"))
    }

    /// Re-formats valid JSON text with one element per line.
    ///
    /// `json.indent(s, *, prefix="", indent="\t")`: key order and number
    /// spellings are kept; every line after the first starts with `prefix`
    /// followed by `indent` once per nesting level; empty `{}` and `[]` stay
    /// compact; no trailing newline is added.
    ///
    /// # Example
    /// ```python
    /// json.indent('{"b":1,"a":[]}', indent = "  ")  # '{\n  "b": 1,\n  "a": []\n}'
    /// ```
    fn indent<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
    ) -> anyhow::Result<String> {
        let call = GoArgs::new("json.indent", args, kwargs);
        let (s, prefix, indent) = indent_options(&call)?;
        let s = s.unpack_str().ok_or_else(|| {
            anyhow!(
                "json.indent: for parameter 1: got {}, want string",
                go_type(s)
            )
        })?;
        indent_json(s, prefix, indent).map_err(|e| anyhow!("json.indent: {e}"))
    }
}
