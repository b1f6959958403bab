//! `yaml.decode` after parsing: the node tree → Go values (go-yaml v2's
//! decoder into `interface{}`) → JSON text (sigs.k8s.io/yaml, then
//! `json.Marshal`) → Starlark values (`json.decode`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

use anyhow::anyhow;
use starlark::values::{Heap, Value};

use super::numbers::{format_g32, go_json_float};
use super::parse::{YNode, parse_first_document};
use super::resolve::{
    BINARY_TAG, BOOL_TAG, FLOAT_TAG, INT_TAG, MERGE_TAG, NULL_TAG, Resolved, STR_TAG,
    TIMESTAMP_TAG, resolve, resolved_tag, short_tag,
};
use crate::builtins::json::{MAX_DEPTH, decode_value, quote_json_string};
use crate::go::float::format_g;

/// The Go value go-yaml v2 builds.
#[derive(Clone)]
enum GoValue {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    /// Bytes, not text: `!!binary` may decode to anything.
    Str(Vec<u8>),
    Seq(Vec<GoValue>),
    Map(Vec<(GoValue, GoValue)>),
}

/// A hashable identity of a map key, for "last value wins".
#[derive(Hash, PartialEq, Eq)]
enum KeyId {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(u64),
    Str(Vec<u8>),
}

fn key_id(v: &GoValue) -> Option<KeyId> {
    Some(match v {
        GoValue::Null => KeyId::Null,
        GoValue::Bool(b) => KeyId::Bool(*b),
        GoValue::Int(i) => KeyId::Int(*i),
        GoValue::Uint(u) => KeyId::Uint(*u),
        GoValue::Float(f) => KeyId::Float(f.to_bits()),
        GoValue::Str(s) => KeyId::Str(s.clone()),
        GoValue::Seq(_) | GoValue::Map(_) => return None,
    })
}

/// Go's `%#v` of a decoded value, for error messages.
fn go_sharp_v(v: &GoValue) -> String {
    match v {
        GoValue::Null => "<nil>".to_owned(),
        GoValue::Bool(b) => b.to_string(),
        GoValue::Int(i) => i.to_string(),
        GoValue::Uint(u) => format!("0x{u:x}"),
        GoValue::Float(f) => format_g(*f),
        GoValue::Str(s) => crate::go::quote::go_quote(&go_lossy(s)),
        GoValue::Seq(items) => {
            let parts: Vec<String> = items.iter().map(go_sharp_v_elem).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        GoValue::Map(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}:{}", go_sharp_v_elem(k), go_sharp_v_elem(v)))
                .collect();
            format!("map[interface {{}}]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// `%#v` of an element inside a collection (typed numbers show their type).
fn go_sharp_v_elem(v: &GoValue) -> String {
    match v {
        GoValue::Null => "interface {}(nil)".to_owned(),
        GoValue::Uint(u) => format!("0x{u:x}"),
        other => go_sharp_v(other),
    }
}

/// Go's `%s` of a value's dynamic type.
fn go_type_of(v: &GoValue) -> &'static str {
    match v {
        GoValue::Null => "%!s(<nil>)",
        GoValue::Bool(_) => "bool",
        GoValue::Int(_) => "int",
        GoValue::Uint(_) => "uint64",
        GoValue::Float(_) => "float64",
        GoValue::Str(_) => "string",
        GoValue::Seq(_) => "[]interface {}",
        GoValue::Map(_) => "map[interface {}]interface {}",
    }
}

/// Text from possibly invalid UTF-8, each bad byte replaced by U+FFFD as
/// Go's `encoding/json` does.
fn go_lossy(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    let mut rest = b;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push('\u{fffd}');
                rest = &bad[1..];
            }
        }
    }
    out
}

/// Go's `base64.StdEncoding.DecodeString`, which skips line breaks.
fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let cleaned: String = s.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
    );
    engine.decode(cleaned).ok()
}

struct Decoder<'n> {
    nodes: &'n [YNode],
    /// Alias nodes being expanded.
    expanding: Vec<usize>,
    decode_count: u64,
    alias_count: u64,
    alias_depth: u64,
}

/// go-yaml v2's allowed share of alias expansions.
#[allow(clippy::cast_precision_loss)]
fn allowed_alias_ratio(decode_count: u64) -> f64 {
    const LOW: u64 = 400_000;
    const HIGH: u64 = 4_000_000;
    if decode_count <= LOW {
        0.99
    } else if decode_count >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decode_count - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

impl Decoder<'_> {
    #[allow(clippy::cast_precision_loss)]
    fn unmarshal(&mut self, index: usize) -> Result<GoValue, String> {
        self.decode_count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
        }
        if self.alias_count > 100
            && self.decode_count > 1000
            && self.alias_count as f64 / self.decode_count as f64
                > allowed_alias_ratio(self.decode_count)
        {
            return Err("yaml: document contains excessive aliasing".to_owned());
        }
        if self.expanding.len() > MAX_DEPTH {
            return Err(format!("yaml: exceeded max depth of {MAX_DEPTH}"));
        }
        match &self.nodes[index] {
            YNode::Alias { target, name } => {
                if self.expanding.contains(&index) {
                    return Err(format!("yaml: anchor '{name}' value contains itself"));
                }
                let target = *target;
                self.expanding.push(index);
                self.alias_depth += 1;
                let r = self.unmarshal(target);
                self.alias_depth -= 1;
                self.expanding.pop();
                r
            }
            YNode::Scalar {
                value,
                tag,
                implicit,
            } => scalar_value(value, tag, *implicit),
            YNode::Seq(children) => {
                let children = children.clone();
                let mut items = Vec::with_capacity(children.len());
                for c in children {
                    self.expanding.push(usize::MAX);
                    let r = self.unmarshal(c);
                    self.expanding.pop();
                    items.push(r?);
                }
                Ok(GoValue::Seq(items))
            }
            YNode::Map(_) => {
                let mut entries: Vec<(GoValue, GoValue)> = Vec::new();
                let mut positions: HashMap<KeyId, usize> = HashMap::new();
                self.expanding.push(usize::MAX);
                let r = self.mapping_into(index, &mut entries, &mut positions);
                self.expanding.pop();
                r?;
                Ok(GoValue::Map(entries))
            }
        }
    }

    /// Decodes the mapping node `index` into `entries` (go-yaml v2's
    /// `d.mapping` with an existing map, which merges also use).
    fn mapping_into(
        &mut self,
        index: usize,
        entries: &mut Vec<(GoValue, GoValue)>,
        positions: &mut HashMap<KeyId, usize>,
    ) -> Result<(), String> {
        let YNode::Map(children) = &self.nodes[index] else {
            return Ok(());
        };
        let children = children.clone();
        for pair in children.chunks(2) {
            let [k, v] = pair else {
                continue;
            };
            if self.is_merge(*k) {
                self.merge(*v, entries, positions)?;
                continue;
            }
            let key = self.unmarshal(*k)?;
            let Some(id) = key_id(&key) else {
                return Err(format!("yaml: invalid map key: {}", go_sharp_v(&key)));
            };
            let value = self.unmarshal(*v)?;
            if let Some(&p) = positions.get(&id) {
                entries[p].1 = value;
            } else {
                positions.insert(id, entries.len());
                entries.push((key, value));
            }
        }
        Ok(())
    }

    fn is_merge(&self, index: usize) -> bool {
        matches!(&self.nodes[index],
            YNode::Scalar { value, tag, implicit } if value == "<<" && (*implicit || tag == MERGE_TAG))
    }

    fn merge(
        &mut self,
        index: usize,
        entries: &mut Vec<(GoValue, GoValue)>,
        positions: &mut HashMap<KeyId, usize>,
    ) -> Result<(), String> {
        const WANT_MAP: &str = "yaml: map merge requires map or sequence of maps as the value";
        let mapping_of = |i: usize| -> Option<usize> {
            match &self.nodes[i] {
                YNode::Map(_) => Some(i),
                YNode::Alias { target, .. } => {
                    matches!(self.nodes[*target], YNode::Map(_)).then_some(*target)
                }
                _ => None,
            }
        };
        match &self.nodes[index] {
            YNode::Map(_) | YNode::Alias { .. } => {
                let target = mapping_of(index).ok_or_else(|| WANT_MAP.to_owned())?;
                self.merge_one(index, target, entries, positions)
            }
            YNode::Seq(children) => {
                let children = children.clone();
                for &c in children.iter().rev() {
                    let target = mapping_of(c).ok_or_else(|| WANT_MAP.to_owned())?;
                    self.merge_one(c, target, entries, positions)?;
                }
                Ok(())
            }
            YNode::Scalar { .. } => Err(WANT_MAP.to_owned()),
        }
    }

    /// Merges the mapping `target` reached through node `via` (itself, or
    /// an alias of it), counting the decode steps as go-yaml does.
    #[allow(clippy::cast_precision_loss)]
    fn merge_one(
        &mut self,
        via: usize,
        target: usize,
        entries: &mut Vec<(GoValue, GoValue)>,
        positions: &mut HashMap<KeyId, usize>,
    ) -> Result<(), String> {
        let alias = via != target;
        if alias {
            if self.expanding.contains(&via) {
                let name = match &self.nodes[via] {
                    YNode::Alias { name, .. } => name.clone(),
                    _ => String::new(),
                };
                return Err(format!("yaml: anchor '{name}' value contains itself"));
            }
            self.decode_count += 1;
            if self.alias_depth > 0 {
                self.alias_count += 1;
            }
            self.expanding.push(via);
            self.alias_depth += 1;
        }
        self.decode_count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
        }
        let r = self.mapping_into(target, entries, positions);
        if alias {
            self.alias_depth -= 1;
            self.expanding.pop();
        }
        r
    }
}

/// go-yaml v2's decoding of one scalar into `interface{}`.
fn scalar_value(value: &str, tag: &str, implicit: bool) -> Result<GoValue, String> {
    if tag.is_empty() && !implicit {
        return Ok(GoValue::Str(value.as_bytes().to_vec()));
    }
    let resolvable = matches!(
        tag,
        "" | STR_TAG | BOOL_TAG | INT_TAG | FLOAT_TAG | NULL_TAG | TIMESTAMP_TAG
    );
    if !resolvable {
        if tag == BINARY_TAG {
            return decode_base64(value)
                .map(GoValue::Str)
                .ok_or_else(|| "yaml: !!binary value contains invalid base64 data".to_owned());
        }
        return Ok(GoValue::Str(value.as_bytes().to_vec()));
    }
    if tag == STR_TAG {
        return Ok(GoValue::Str(value.as_bytes().to_vec()));
    }
    let resolved = resolve(value, tag.is_empty() || tag == TIMESTAMP_TAG);
    let rtag = resolved_tag(&resolved);
    if !tag.is_empty() && tag != rtag {
        // An explicit tag must agree, except that an int may be a float.
        match (tag, &resolved) {
            (FLOAT_TAG, Resolved::Int(i)) => {
                #[allow(clippy::cast_precision_loss)]
                return Ok(GoValue::Float(*i as f64));
            }
            _ => {
                return Err(format!(
                    "yaml: cannot decode {} `{value}` as a {}",
                    short_tag(rtag),
                    short_tag(tag)
                ));
            }
        }
    }
    Ok(match resolved {
        Resolved::Null => GoValue::Null,
        Resolved::Bool(b) => GoValue::Bool(b),
        Resolved::Int(i) => GoValue::Int(i),
        Resolved::Uint(u) => GoValue::Uint(u),
        Resolved::Float(f) => GoValue::Float(f),
        Resolved::Str | Resolved::Timestamp => GoValue::Str(value.as_bytes().to_vec()),
    })
}

// ---------------------------------------------------------------------------
// yaml.decode: Go values → JSON text (sigs.k8s.io/yaml, then json.Marshal).

/// A value with string keys, as `convertToJSONableObject` leaves it.
enum JsonValue {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<JsonValue>),
    Map(Vec<(String, JsonValue)>),
}

fn jsonable(v: GoValue) -> Result<JsonValue, String> {
    Ok(match v {
        GoValue::Null => JsonValue::Null,
        GoValue::Bool(b) => JsonValue::Bool(b),
        GoValue::Int(i) => JsonValue::Int(i),
        GoValue::Uint(u) => JsonValue::Uint(u),
        GoValue::Float(f) => JsonValue::Float(f),
        GoValue::Str(s) => JsonValue::Str(go_lossy(&s)),
        GoValue::Seq(items) => {
            JsonValue::Seq(items.into_iter().map(jsonable).collect::<Result<_, _>>()?)
        }
        GoValue::Map(entries) => {
            let mut out: Vec<(String, JsonValue)> = Vec::with_capacity(entries.len());
            let mut positions: HashMap<String, usize> = HashMap::new();
            for (k, v) in entries {
                let key = match &k {
                    GoValue::Str(s) => go_lossy(s),
                    GoValue::Int(i) => i.to_string(),
                    GoValue::Float(f) => format_g32(*f),
                    GoValue::Bool(b) => b.to_string(),
                    other => {
                        return Err(format!(
                            "unsupported map key of type: {}, key: {}, value: {}",
                            go_type_of(other),
                            go_sharp_v(other),
                            go_sharp_v(&v)
                        ));
                    }
                };
                let value = jsonable(v)?;
                if let Some(&p) = positions.get(&key) {
                    out[p].1 = value;
                } else {
                    positions.insert(key.clone(), out.len());
                    out.push((key, value));
                }
            }
            JsonValue::Map(out)
        }
    })
}

/// `json.Marshal`: sorted keys, Go's float text, an error for NaN and
/// infinities.
fn marshal(v: &JsonValue, out: &mut String) -> Result<(), String> {
    match v {
        JsonValue::Null => out.push_str("null"),
        JsonValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsonValue::Int(i) => {
            let _ = write!(out, "{i}");
        }
        JsonValue::Uint(u) => {
            let _ = write!(out, "{u}");
        }
        JsonValue::Float(f) => {
            if !f.is_finite() {
                return Err(format!("json: unsupported value: {}", format_g(*f)));
            }
            out.push_str(&go_json_float(*f));
        }
        JsonValue::Str(s) => quote_json_string(s, out),
        JsonValue::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                marshal(item, out)?;
            }
            out.push(']');
        }
        JsonValue::Map(entries) => {
            let mut sorted: Vec<&(String, JsonValue)> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                quote_json_string(k, out);
                out.push(':');
                marshal(v, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// sigs.k8s.io/yaml's `YAMLToJSON` of the first document of `source`; the
/// error is the message after `yaml.decode: `. Reading fails once
/// `deadline` has passed.
pub(crate) fn yaml_to_json(source: &str, deadline: Option<Instant>) -> Result<String, String> {
    let Some((nodes, root)) = parse_first_document(source, deadline)? else {
        return Ok("null".to_owned());
    };
    let mut decoder = Decoder {
        nodes: &nodes,
        expanding: Vec::new(),
        decode_count: 0,
        alias_count: 0,
        alias_depth: 0,
    };
    let value = decoder.unmarshal(root)?;
    let value = jsonable(value)?;
    let mut out = String::new();
    marshal(&value, &mut out)?;
    Ok(out)
}

/// `yaml.decode` of `s` into new Starlark values, failing once `deadline`
/// has passed.
pub(super) fn decode_yaml<'v>(
    s: &str,
    heap: Heap<'v>,
    deadline: Option<Instant>,
) -> anyhow::Result<Value<'v>> {
    let json = yaml_to_json(s, deadline).map_err(|e| anyhow!("yaml.decode: {e}"))?;
    decode_value(&json, heap).map_err(|e| anyhow!("yaml.decode: json.decode: {e}"))
}

/// The documents `decode_stream` splits `s` into: lines that are `---`
/// (trailing spaces and tabs ignored) separate them; empty ones are dropped.
pub(super) fn split_stream(s: &str) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in s.split('\n') {
        if line.trim_end_matches([' ', '\t']) == "---" {
            chunks.push(current.join("\n"));
            current.clear();
        } else {
            current.push(line);
        }
    }
    chunks.push(current.join("\n"));
    chunks.retain(|c| !c.is_empty());
    chunks
}
