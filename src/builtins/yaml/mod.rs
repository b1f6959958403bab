//! The `yaml` module: `encode`, `decode` and `decode_stream`, byte for byte
//! as the reference, which goes through sigs.k8s.io/yaml over go-yaml v2:
//!
//! - `encode` turns the value into JSON, reads that JSON back with YAML 1.1
//!   scalar resolution and writes it with go-yaml's emitter (`encode.rs`,
//!   `emit.rs`): its scalar-style choices, quoting, line wrapping at 80
//!   columns and key order decide the text.
//! - `decode` parses the first document with libyaml's scanner and parser
//!   (`parse.rs`), resolves plain scalars by YAML 1.1 (`resolve.rs`), turns
//!   the tree into JSON (keys stringified and sorted, Go's number text) and
//!   decodes that JSON as `json.decode` does (`decode.rs`).
//!
//! `tests/yaml/` holds what the reference's own library gives for thousands
//! of inputs and values, recorded by `tools/goyaml`.

use std::time::Instant;

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::dict::DictRef;
use starlark::values::list::AllocList;
use starlark::values::tuple::UnpackTuple;
use starlark::values::{Heap, Value};

use crate::go::args::GoArgs;
use crate::go::args::want_string;

mod decode;
mod emit;
mod encode;
mod node;
mod numbers;
mod parse;
mod resolve;

pub(crate) use decode::yaml_to_json;
use decode::{decode_yaml, split_stream};
use encode::encode_yaml;
pub(crate) use node::{natural_less, sort_by_less};

/// The documents of a YAML stream as JSON values, read as `yaml.decode`
/// reads each (go-yaml v2, then sigs.k8s.io/yaml's JSON): for the files
/// the CLI reads.
pub fn documents_as_json(s: &str) -> Result<Vec<serde_json::Value>, String> {
    split_stream(s)
        .iter()
        .map(|doc| {
            let json = decode::yaml_to_json(doc, None)?;
            serde_json::from_str(&json).map_err(|e| e.to_string())
        })
        .collect()
}

/// `value` as YAML text the way Kubernetes tooling writes it (sorted keys,
/// sigs.k8s.io/yaml's quoting), ending in a newline: for the CLI's output.
pub fn json_as_yaml(value: &serde_json::Value) -> Result<String, String> {
    encode::emit_json(value)
}

/// Registers the `yaml` module.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    crate::values::module::register(builder, "yaml", yaml_members, None);
}

/// Most documents `decode_stream` accepts.
const MAX_STREAM_DOCUMENTS: usize = 256;

// ---------------------------------------------------------------------------
// The module.

/// When the run must stop (none outside a run).
fn deadline(eval: &Evaluator) -> Option<Instant> {
    crate::builtins::context(eval)
        .ok()
        .and_then(|context| context.deadline.get())
}

/// The one string parameter `s` of `decode` and `decode_stream`.
fn string_param<'v>(call: &GoArgs<'v>) -> anyhow::Result<&'v str> {
    let bound = call.bind(&["s"], true, |_, v| want_string(v))?;
    Ok(bound[0].and_then(Value::unpack_str).unwrap_or_default())
}

#[starlark_module]
fn yaml_members(builder: &mut GlobalsBuilder) {
    /// Encodes a value as YAML text, as Kubernetes tooling writes it.
    ///
    /// `yaml.encode(value)` accepts `None`, booleans, ints (64-bit), floats,
    /// strings, lists and tuples (sequences) and dicts with string keys,
    /// including `oxr` and other resource dicts (mappings). Mapping keys are
    /// sorted; strings that would read back as another type (`"yes"`,
    /// `"123"`, `""`) are quoted; multi-line strings use literal blocks;
    /// trailing newlines are removed.
    ///
    /// # Example
    /// ```python
    /// yaml.encode({"kind": "Secret", "apiVersion": "v1", "data": {"k": "v"}})
    /// # 'apiVersion: v1\ndata:\n  k: v\nkind: Secret'
    /// ```
    fn encode<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<String> {
        let call = GoArgs::new("yaml.encode", args, kwargs);
        let bound = call.bind(&["value"], true, |_, _| Ok(()))?;
        let value = bound[0].unwrap_or_else(Value::new_none);
        encode_yaml(value, heap).map_err(|e| anyhow!("yaml.encode: {e}"))
    }

    /// Decodes the first YAML document of a string into new Starlark values.
    ///
    /// `yaml.decode(s)` uses YAML 1.1 rules, as Kubernetes tooling does:
    /// `yes`/`no`/`on`/`off`/`y`/`n` are booleans, `~` and empty values are
    /// `None`, integral numbers (`1.0`, `2e3`) become ints. Mappings become
    /// dicts with **sorted** keys (non-string keys are turned into strings);
    /// anchors, aliases and `<<` merges are resolved. Empty or comment-only
    /// text gives `None`.
    ///
    /// # Example
    /// ```python
    /// yaml.decode("b: 1\na: yes\nc: 1.0")  # {"a": True, "b": 1, "c": 1}
    /// ```
    fn decode<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let call = GoArgs::new("yaml.decode", args, kwargs);
        let s = string_param(&call)?;
        decode_yaml(s, eval.heap(), deadline(eval))
    }

    /// Decodes every document of a multi-document YAML string into a list.
    ///
    /// `yaml.decode_stream(s)` splits `s` at lines that are exactly `---`
    /// (trailing spaces allowed) and decodes each non-blank document as
    /// `yaml.decode` does (a comment-only document gives `None`). At most
    /// 256 documents are accepted.
    ///
    /// # Example
    /// ```python
    /// docs = yaml.decode_stream("a: 1\n---\nb: 2\n")  # [{"a": 1}, {"b": 2}]
    /// ```
    fn decode_stream<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let heap = eval.heap();
        let deadline = deadline(eval);
        let call = GoArgs::new("yaml.decode_stream", args, kwargs);
        let s = string_param(&call)?;
        if s.trim().is_empty() {
            return Ok(heap.alloc(AllocList::EMPTY));
        }
        let chunks = split_stream(s);
        if chunks.len() > MAX_STREAM_DOCUMENTS {
            return Err(anyhow!(
                "yaml.decode_stream: input contains {} documents, maximum is {MAX_STREAM_DOCUMENTS}",
                chunks.len()
            ));
        }
        let mut docs = Vec::with_capacity(chunks.len());
        for chunk in chunks.iter().filter(|c| !c.trim().is_empty()) {
            docs.push(decode_yaml(chunk, heap, deadline)?);
        }
        Ok(heap.alloc(AllocList(docs)))
    }
}

#[cfg(test)]
mod tests;
