//! `json.encode`: go.starlark.net's encoder, with Go's float text and
//! string escaping and its error texts.

use starlark::values::float::StarlarkFloat;
use starlark::values::list::ListRef;
use starlark::values::tuple::TupleRef;
use starlark::values::{Heap, Value, ValueIdentity, ValueLike};

use super::{MAX_DEPTH, dict_like_entries};
use crate::go::float::format_g;
use crate::go::names::unreserve;
use crate::go::quote::go_quote;
use crate::go::types::go_type;
use crate::values::mutable_struct::View as MutableView;
use crate::values::structs::Record;

/// Go's `strconv.Quote` of printable ASCII text, or Go's `json.Marshal` of
/// any other text, as go.starlark.net quotes JSON strings.
pub(crate) fn quote_json_string(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if s.bytes().all(|b| (0x20..0x80).contains(&b)) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                '\x7f' => out.push_str("\\x7f"),
                c => out.push(c),
            }
        }
        out.push('"');
        return;
    }
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' || c == '<' || c == '>' || c == '&' => {
                let b = u8::try_from(u32::from(c)).unwrap_or(0);
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// go.starlark.net's float text: `%g` shortest digits, with `.0` added when
/// there is neither a point nor an exponent.
pub(super) fn float_text(f: f64) -> String {
    let mut s = format_g(f);
    if !s.contains(['e', '.']) {
        s.push_str(".0");
    }
    s
}

/// Encodes `x` as compact JSON; the error is the message without the
/// builtin's name.
pub(crate) fn encode_value<'v>(x: Value<'v>, heap: Heap<'v>) -> Result<String, String> {
    let mut e = Encoder {
        out: String::new(),
        path: Vec::new(),
        heap,
    };
    e.emit(x)?;
    Ok(e.out)
}

pub(super) struct Encoder<'v> {
    out: String,
    /// The containers being encoded, outermost first, for cycle detection.
    path: Vec<ValueIdentity<'v>>,
    heap: Heap<'v>,
}

impl<'v> Encoder<'v> {
    fn emit(&mut self, x: Value<'v>) -> Result<(), String> {
        if x.is_none() {
            self.out.push_str("null");
            return Ok(());
        }
        if let Some(b) = x.unpack_bool() {
            self.out.push_str(if b { "true" } else { "false" });
            return Ok(());
        }
        if x.get_type() == "int" {
            self.out.push_str(&x.to_str());
            return Ok(());
        }
        if let Some(f) = x.downcast_ref::<StarlarkFloat>() {
            let f = f.0;
            if !f.is_finite() {
                let text = if f.is_nan() {
                    "nan"
                } else if f > 0.0 {
                    "+inf"
                } else {
                    "-inf"
                };
                return Err(format!("cannot encode non-finite float {text}"));
            }
            self.out.push_str(&float_text(f));
            return Ok(());
        }
        if let Some(s) = x.unpack_str() {
            quote_json_string(s, &mut self.out);
            return Ok(());
        }
        let id = x.identity();
        if self.path.contains(&id) {
            return Err("cycle in JSON structure".to_owned());
        }
        if self.path.len() >= MAX_DEPTH {
            return Err(format!("nesting depth exceeds {MAX_DEPTH}"));
        }
        self.path.push(id);
        let r = self.emit_container(x);
        self.path.pop();
        r
    }

    fn emit_container(&mut self, x: Value<'v>) -> Result<(), String> {
        if let Some(items) = dict_like_entries(x, self.heap) {
            return self.emit_mapping(x, items);
        }
        if let Some(items) = iterable_items(x, self.heap) {
            let kind = go_type(x);
            self.out.push('[');
            for (i, item) in items.into_iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.emit(item)
                    .map_err(|e| format!("at {kind} index {i}: {e}"))?;
            }
            self.out.push(']');
            return Ok(());
        }
        if x.get_type() == "bytes" {
            // Go's bytes are not iterable; their one attribute is a method.
            return Err(
                "in field .elems: cannot encode builtin_function_or_method as JSON".to_owned(),
            );
        }
        if MutableView::of(x).is_some() {
            return self.emit_mutable_struct(x);
        }
        if let Some(fields) = attributes(x, self.heap) {
            self.out.push('{');
            for (i, (name, v)) in fields.into_iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                quote_json_string(&name, &mut self.out);
                self.out.push(':');
                self.emit(v).map_err(|e| format!("in field .{name}: {e}"))?;
            }
            self.out.push('}');
            return Ok(());
        }
        Err(format!("cannot encode {} as JSON", go_type(x)))
    }

    /// A mutable struct, as go.starlark.net encodes any value with
    /// attributes: every name `dir()` lists, sorted, so that a schema's
    /// field left unset fails (it is listed, and has no value).
    fn emit_mutable_struct(&mut self, x: Value<'v>) -> Result<(), String> {
        self.out.push('{');
        for (i, name) in x.dir_attr().into_iter().enumerate() {
            let Ok(Some(v)) = x.get_attr(&name, self.heap) else {
                return Err(format!(
                    "cannot access attribute mutable_struct.{name}: mutable_struct has no .{name} attribute"
                ));
            };
            if i > 0 {
                self.out.push(',');
            }
            quote_json_string(&name, &mut self.out);
            self.out.push(':');
            self.emit(v).map_err(|e| format!("in field .{name}: {e}"))?;
        }
        self.out.push('}');
        Ok(())
    }

    fn emit_mapping(
        &mut self,
        x: Value<'v>,
        items: Vec<(Value<'v>, Value<'v>)>,
    ) -> Result<(), String> {
        let kind = go_type(x);
        let mut keyed = Vec::with_capacity(items.len());
        for (k, v) in items {
            match k.unpack_str() {
                Some(s) => keyed.push((s, v)),
                None => return Err(format!("{kind} has {} key, want string", go_type(k))),
            }
        }
        keyed.sort_by(|a, b| a.0.cmp(b.0));
        self.out.push('{');
        for (i, (k, v)) in keyed.into_iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            quote_json_string(k, &mut self.out);
            self.out.push(':');
            self.emit(v)
                .map_err(|e| format!("in {kind} key {}: {e}", go_quote(k)))?;
        }
        self.out.push('}');
        Ok(())
    }
}

/// The elements of an iterable that is not a mapping or string (list,
/// tuple, set, range, ...), or `None`.
pub(super) fn iterable_items<'v>(x: Value<'v>, heap: Heap<'v>) -> Option<Vec<Value<'v>>> {
    if let Some(l) = ListRef::from_value(x) {
        return Some(l.content().to_vec());
    }
    if let Some(t) = TupleRef::from_value(x) {
        return Some(t.content().to_vec());
    }
    if x.get_type() == "bytes" {
        return None;
    }
    x.iterate(heap).ok().map(Iterator::collect)
}

/// The attributes of a value that has them (struct, module, refs, schema
/// constructors, field descriptors), sorted by name, or `None`.
pub(super) fn attributes<'v>(x: Value<'v>, heap: Heap<'v>) -> Option<Vec<(String, Value<'v>)>> {
    let mut fields: Vec<(String, Value<'v>)> = if let Some(r) = Record::from_value(x) {
        r.fields()
            .map(|(k, v)| (unreserve(k).to_owned(), v))
            .collect()
    } else {
        let names = x.dir_attr();
        if names.is_empty() || x.get_type() == "function" {
            return None;
        }
        names
            .into_iter()
            .filter_map(|n| match x.get_attr(&n, heap) {
                Ok(Some(v)) => Some((n, v)),
                _ => None,
            })
            .collect()
    };
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    Some(fields)
}
