//! `yaml.encode`: a Starlark value → a tree → what reading its JSON back
//! as YAML does to it → the emitter's text.

use starlark::values::float::StarlarkFloat;
use starlark::values::list::ListRef;
use starlark::values::tuple::TupleRef;
use starlark::values::{Heap, Value, ValueLike};

use super::emit::Emitter;
use super::node::Node;
use crate::builtins::json::{MAX_DEPTH, dict_like_entries};
use crate::go::types::go_type;
use crate::values::mutable_struct::backing_dict;

fn to_node<'v>(v: Value<'v>, heap: Heap<'v>, depth: usize) -> Result<Node, String> {
    if depth > MAX_DEPTH {
        return Err(format!("nesting depth exceeds {MAX_DEPTH}"));
    }
    // A mutable struct is written as the mapping of its fields.
    let v = backing_dict(v).unwrap_or(v);
    if v.is_none() {
        return Ok(Node::Null);
    }
    if let Some(b) = v.unpack_bool() {
        return Ok(Node::Bool(b));
    }
    if v.get_type() == "int" {
        return v
            .to_str()
            .parse::<i64>()
            .map(Node::Int)
            .map_err(|_| format!("integer overflow: {}", v.to_str()));
    }
    if let Some(f) = v.downcast_ref::<StarlarkFloat>() {
        return Ok(Node::Float(f.0));
    }
    if let Some(s) = v.unpack_str() {
        return Ok(Node::Str(s.to_owned()));
    }
    let items = ListRef::from_value(v)
        .map(|l| l.content().to_vec())
        .or_else(|| TupleRef::from_value(v).map(|t| t.content().to_vec()));
    if let Some(items) = items {
        return items
            .into_iter()
            .map(|item| to_node(item, heap, depth + 1))
            .collect::<Result<_, _>>()
            .map(Node::Seq);
    }
    if let Some(entries) = dict_like_entries(v, heap) {
        let mut map: Vec<(String, Node)> = Vec::with_capacity(entries.len());
        for (k, item) in entries {
            let Some(key) = k.unpack_str() else {
                return Err(format!("dict key is {}, want string", go_type(k)));
            };
            map.push((key.to_owned(), to_node(item, heap, depth + 1)?));
        }
        return Ok(Node::Map(map));
    }
    Err(format!("unsupported type {}", go_type(v)))
}

/// The first non-finite float in `json.Marshal`'s order (sorted keys).
fn first_non_finite(n: &Node) -> Option<f64> {
    match n {
        Node::Float(f) if !f.is_finite() => Some(*f),
        Node::Seq(items) => items.iter().find_map(first_non_finite),
        Node::Map(entries) => {
            let mut sorted: Vec<&(String, Node)> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            sorted.into_iter().find_map(|(_, v)| first_non_finite(v))
        }
        _ => None,
    }
}

/// What reading the JSON text back as YAML does to strings (the reference's
/// `JSONToYAML` step). Go's JSON leaves spaces and NEL (U+0085) raw, and
/// YAML reads a raw NEL inside a double-quoted scalar as a line break: it
/// folds like one, moves to a new line (so a key containing one is no
/// longer a simple key, and `---`/`...` after it is a document marker),
/// and characters YAML forbids stop the read. `line` counts the line
/// breaks read so far, for the error messages.
struct JsonReread {
    line: usize,
}

/// Characters go-yaml's reader rejects that Go's JSON leaves raw.
fn yaml_forbidden(c: char) -> bool {
    matches!(u32::from(c), 0x7f..=0x84 | 0x86..=0x9f | 0xfffe | 0xffff)
}

/// The length in characters of Go's `json.Marshal` text of `s`, quotes
/// included.
pub(super) fn json_text_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\x08' | '\x0c' => 2,
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
            c if c < ' ' => 6,
            _ => 1,
        })
        .sum::<usize>()
}

impl JsonReread {
    fn check_forbidden(n: &Node) -> Result<(), String> {
        let bad = |s: &str| s.chars().any(yaml_forbidden);
        let found = match n {
            Node::Str(s) => bad(s),
            Node::Seq(items) => return items.iter().try_for_each(Self::check_forbidden),
            Node::Map(entries) => {
                for (k, v) in entries {
                    if bad(k) {
                        return Err("yaml: control characters are not allowed".to_owned());
                    }
                    Self::check_forbidden(v)?;
                }
                false
            }
            _ => false,
        };
        if found {
            return Err("yaml: control characters are not allowed".to_owned());
        }
        Ok(())
    }

    /// Walks `n` in JSON text order, folding strings as YAML reads them.
    fn walk(&mut self, n: &mut Node) -> Result<(), String> {
        match n {
            Node::Str(s) => *s = self.fold(s)?,
            Node::Seq(items) => {
                for item in items {
                    self.walk(item)?;
                }
            }
            Node::Map(entries) => {
                let mut order: Vec<usize> = (0..entries.len()).collect();
                order.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0));
                for i in order {
                    let (key, value) = &mut entries[i];
                    let start = self.line;
                    self.fold(key)?;
                    if self.line > start || json_text_len(key) > 1024 {
                        // Not a simple key any more: the `:` after it is
                        // unexpected in the flow mapping.
                        return Err(if self.line == 0 {
                            "yaml: did not find expected ',' or '}'".to_owned()
                        } else {
                            format!(
                                "yaml: line {}: did not find expected ',' or '}}'",
                                self.line
                            )
                        });
                    }
                    self.walk(value)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// libyaml's double-quoted scalar scan over the raw spaces and NELs of
    /// `s` (everything else is either raw and non-blank, or escaped).
    fn fold(&mut self, s: &str) -> Result<String, String> {
        const NEL: char = '\u{85}';
        if !s.contains(NEL) {
            return Ok(s.to_owned());
        }
        let c: Vec<char> = s.chars().collect();
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        let mut column_zero = false;
        loop {
            if column_zero
                && c.len() >= i + 3
                && (c[i..i + 3] == ['-', '-', '-'] || c[i..i + 3] == ['.', '.', '.'])
                && matches!(c.get(i + 3), Some(&(' ' | NEL)))
            {
                return Err(format!(
                    "yaml: line {}: found unexpected document indicator",
                    self.line + 1
                ));
            }
            while i < c.len() && c[i] != ' ' && c[i] != NEL {
                out.push(c[i]);
                i += 1;
                column_zero = false;
            }
            if i == c.len() {
                break;
            }
            let mut whitespaces = 0;
            let mut leading_blanks = false;
            let mut trailing_breaks = 0;
            while i < c.len() && (c[i] == ' ' || c[i] == NEL) {
                if c[i] == ' ' {
                    if !leading_blanks {
                        whitespaces += 1;
                    }
                    column_zero = false;
                } else {
                    if leading_blanks {
                        trailing_breaks += 1;
                    } else {
                        whitespaces = 0;
                        leading_blanks = true;
                    }
                    self.line += 1;
                    column_zero = true;
                }
                i += 1;
            }
            if leading_blanks {
                if trailing_breaks == 0 {
                    out.push(' ');
                } else {
                    out.extend(std::iter::repeat_n('\n', trailing_breaks));
                }
            } else {
                out.extend(std::iter::repeat_n(' ', whitespaces));
            }
        }
        Ok(out)
    }
}

/// `yaml.encode`'s text for `v`; the error is the message after
/// `yaml.encode: `.
pub(super) fn encode_yaml<'v>(v: Value<'v>, heap: Heap<'v>) -> Result<String, String> {
    // The reference strips every trailing newline, even those of a `|+`
    // block's content.
    emit_yaml(v, heap).map(|text| text.trim_end_matches('\n').to_owned())
}

/// A JSON value as the tree; an integral number is an int, as Kubernetes'
/// JSON decoding makes it.
fn json_node(v: &serde_json::Value) -> Node {
    match v {
        serde_json::Value::Null => Node::Null,
        serde_json::Value::Bool(b) => Node::Bool(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Node::Int(i);
            }
            let f = n.as_f64().unwrap_or(f64::NAN);
            #[allow(clippy::cast_possible_truncation)]
            if f.fract() == 0.0 && f.abs() < 9.2e18 {
                Node::Int(f as i64)
            } else {
                Node::Float(f)
            }
        }
        serde_json::Value::String(s) => Node::Str(s.clone()),
        serde_json::Value::Array(items) => Node::Seq(items.iter().map(json_node).collect()),
        serde_json::Value::Object(map) => {
            Node::Map(map.iter().map(|(k, v)| (k.clone(), json_node(v))).collect())
        }
    }
}

/// The emitter's whole text for a JSON value, as for `yaml.encode`.
pub(super) fn emit_json(v: &serde_json::Value) -> Result<String, String> {
    emit_node(json_node(v))
}

/// The emitter's whole text for `v`, final newlines included.
pub(super) fn emit_yaml<'v>(v: Value<'v>, heap: Heap<'v>) -> Result<String, String> {
    emit_node(to_node(v, heap, 0)?)
}

fn emit_node(node: Node) -> Result<String, String> {
    if let Some(f) = first_non_finite(&node) {
        let text = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        };
        return Err(format!(
            "error marshaling into JSON: json: unsupported value: {text}"
        ));
    }
    JsonReread::check_forbidden(&node)?;
    let mut node = node;
    JsonReread { line: 0 }.walk(&mut node)?;
    Ok(Emitter::new().document(&node))
}
