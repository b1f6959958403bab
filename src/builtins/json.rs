//! The `json` module: `encode`, `decode`, `encode_indent` and `indent`, with
//! the behaviour of go.starlark.net's `lib/json` that scripts were written
//! against: sorted object keys, Go's float text, Go's string escaping,
//! `decode(x, default)` and the Go error texts.

use crate::go::args::GoArgs;
use crate::go::args::want_string;
use crate::go::quote::go_quote;
use crate::go::quote::go_quote_byte;
use crate::go::types::go_type;

use anyhow::anyhow;
use num_bigint::BigInt;
use starlark::collections::SmallMap;
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::dict::{Dict, DictRef};
use starlark::values::float::StarlarkFloat;
use starlark::values::list::{AllocList, ListRef};
use starlark::values::tuple::{TupleRef, UnpackTuple};
use starlark::values::{Heap, Value, ValueIdentity, ValueLike};

use crate::go::float::format_g;
use crate::go::names::unreserve;
use crate::values::structs::Record;

/// Deepest nesting the encoders and decoders follow. Go's own JSON scanner
/// stops at the same depth; it keeps a hostile value from exhausting the
/// native stack.
pub(crate) const MAX_DEPTH: usize = 10_000;

/// Registers the `json` module.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    crate::values::module::register(builder, "json", json_members, None);
}

// ---------------------------------------------------------------------------
// Dict-likes.

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

// ---------------------------------------------------------------------------
// json.encode

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
fn float_text(f: f64) -> String {
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

struct Encoder<'v> {
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
fn iterable_items<'v>(x: Value<'v>, heap: Heap<'v>) -> Option<Vec<Value<'v>>> {
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
fn attributes<'v>(x: Value<'v>, heap: Heap<'v>) -> Option<Vec<(String, Value<'v>)>> {
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

// ---------------------------------------------------------------------------
// json.decode

/// A decoding failure: the offset reached and the message.
struct Failure {
    offset: usize,
    message: String,
}

struct Decoder<'s, 'v> {
    s: &'s [u8],
    i: usize,
    depth: usize,
    heap: Heap<'v>,
}

/// Decodes `s` as go.starlark.net's `json.decode` does; the error is the
/// message after `json.decode: `.
pub(crate) fn decode_value<'v>(s: &str, heap: Heap<'v>) -> Result<Value<'v>, String> {
    let mut d = Decoder {
        s: s.as_bytes(),
        i: 0,
        depth: 0,
        heap,
    };
    let r = d.parse().and_then(|v| {
        if d.skip_space() {
            Err(d.fail(format!(
                "unexpected character {} after value",
                go_quote_byte(d.s[d.i])
            )))
        } else {
            Ok(v)
        }
    });
    r.map_err(|f| format!("at offset {}, {}", f.offset, f.message))
}

impl<'v> Decoder<'_, 'v> {
    fn fail(&self, message: String) -> Failure {
        Failure {
            offset: self.i,
            message,
        }
    }

    /// Consumes spaces; true when input remains.
    fn skip_space(&mut self) -> bool {
        while self.i < self.s.len() {
            if !matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
                return true;
            }
            self.i += 1;
        }
        false
    }

    /// The next non-space byte, not consumed.
    fn next(&mut self) -> Result<u8, Failure> {
        if self.skip_space() {
            Ok(self.s[self.i])
        } else {
            Err(self.fail("unexpected end of file".to_owned()))
        }
    }

    fn parse(&mut self) -> Result<Value<'v>, Failure> {
        let b = self.next()?;
        match b {
            b'"' => return self.string(),
            b'n' if self.s[self.i..].starts_with(b"null") => {
                self.i += 4;
                return Ok(Value::new_none());
            }
            b't' if self.s[self.i..].starts_with(b"true") => {
                self.i += 4;
                return Ok(Value::new_bool(true));
            }
            b'f' if self.s[self.i..].starts_with(b"false") => {
                self.i += 5;
                return Ok(Value::new_bool(false));
            }
            b'[' | b'{' => {
                if self.depth >= MAX_DEPTH {
                    return Err(self.fail(format!("nesting depth exceeds {MAX_DEPTH}")));
                }
                self.depth += 1;
                let r = if b == b'[' {
                    self.array()
                } else {
                    self.object()
                };
                self.depth -= 1;
                return r;
            }
            b'0'..=b'9' | b'-' => return self.number(),
            _ => {}
        }
        Err(self.fail(format!("unexpected character {}", go_quote_byte(b))))
    }

    fn string(&mut self) -> Result<Value<'v>, Failure> {
        let s = self.s;
        let mut safe = true;
        let mut closed = false;
        let mut j = self.i + 1;
        while j < s.len() {
            let b = s[j];
            if b == b'\\' {
                safe = false;
                j += 1;
            } else if b == b'"' {
                closed = true;
                j += 1;
                break;
            } else if b >= 0x80 {
                safe = false;
            }
            j += 1;
        }
        if !closed {
            return Err(self.fail("unclosed string literal".to_owned()));
        }
        let start = self.i;
        self.i = j;
        let literal = &s[start..j];
        let text = if safe {
            String::from_utf8_lossy(&literal[1..literal.len() - 1]).into_owned()
        } else {
            unquote(literal).map_err(|m| self.fail(m))?
        };
        Ok(self.heap.alloc_str(&text).to_value())
    }

    fn array(&mut self) -> Result<Value<'v>, Failure> {
        let mut elems = Vec::new();
        self.i += 1;
        let mut b = self.next()?;
        if b != b']' {
            loop {
                elems.push(self.parse()?);
                b = self.next()?;
                if b != b',' {
                    if b != b']' {
                        return Err(self.fail(format!("got {}, want ',' or ']'", go_quote_byte(b))));
                    }
                    break;
                }
                self.i += 1;
            }
        }
        self.i += 1;
        Ok(self.heap.alloc(AllocList(elems)))
    }

    fn object(&mut self) -> Result<Value<'v>, Failure> {
        let mut map: SmallMap<Value<'v>, Value<'v>> = SmallMap::new();
        self.i += 1;
        let mut b = self.next()?;
        if b != b'}' {
            loop {
                let key = self.parse()?;
                if key.unpack_str().is_none() {
                    return Err(
                        self.fail(format!("got {} for object key, want string", go_type(key)))
                    );
                }
                b = self.next()?;
                if b != b':' {
                    return Err(self.fail(format!(
                        "after object key, got {}, want ':' ",
                        go_quote_byte(b)
                    )));
                }
                self.i += 1;
                let value = self.parse()?;
                let hashed = key.get_hashed().map_err(|e| self.fail(e.to_string()))?;
                map.insert_hashed(hashed, value);
                b = self.next()?;
                if b != b',' {
                    if b != b'}' {
                        return Err(self.fail(format!(
                            "in object, got {}, want ',' or '}}'",
                            go_quote_byte(b)
                        )));
                    }
                    break;
                }
                self.i += 1;
            }
        }
        self.i += 1;
        Ok(self.heap.alloc(Dict::new(map)))
    }

    fn number(&mut self) -> Result<Value<'v>, Failure> {
        let s = self.s;
        let mut float = false;
        let mut j = self.i + 1;
        while j < s.len() {
            match s[j] {
                b'0'..=b'9' => {}
                b'.' | b'e' | b'E' | b'+' | b'-' => float = true,
                _ => break,
            }
            j += 1;
        }
        let num = std::str::from_utf8(&s[self.i..j]).unwrap_or_default();
        self.i = j;
        let invalid = || format!("invalid number: {num}");
        let digits = num.strip_prefix('-').unwrap_or(num);
        let db = digits.as_bytes();
        if db.is_empty() || (db[0] == b'0' && db.len() > 1 && db[1].is_ascii_digit()) {
            return Err(self.fail(invalid()));
        }
        if float {
            return match parse_go_float(num) {
                Some(f) => Ok(self.heap.alloc(f)),
                None => Err(self.fail(invalid())),
            };
        }
        if let Ok(i) = num.parse::<i64>() {
            return Ok(self.heap.alloc(i));
        }
        match num.parse::<BigInt>() {
            Ok(big) => Ok(self.heap.alloc(big)),
            Err(_) => Err(self.fail(invalid())),
        }
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for text made of `[0-9.eE+-]`:
/// `None` for a syntax error or an overflow to infinity.
fn parse_go_float(s: &str) -> Option<f64> {
    // Go accepts a mantissa with digits on either side of the point (or
    // both), then an optional exponent with at least one digit.
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let mut digits = 0;
    let mut dot = false;
    while i < b.len() {
        match b[i] {
            b'0'..=b'9' => digits += 1,
            b'.' if !dot => dot = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        i += 1;
        if i < b.len() && matches!(b[i], b'+' | b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    // Rust's parser wants a digit before an exponent or after a sign.
    let mut text = s.to_owned();
    if let Some(p) = text.find('.')
        && !text[..p].ends_with(|c: char| c.is_ascii_digit())
    {
        text.insert(p, '0');
    }
    let f: f64 = text
        .replace(".e", ".0e")
        .replace(".E", ".0E")
        .parse()
        .ok()?;
    f.is_finite().then_some(f)
}

/// Go's `json.Unmarshal` of one string literal (quotes included): the
/// scanner's validation, then unescaping with surrogate pairs combined and
/// bad surrogates replaced by U+FFFD.
fn unquote(literal: &[u8]) -> Result<String, String> {
    let mut scan = Scanner::new();
    for &c in literal {
        scan.bytes += 1;
        if scan.step(c) == Op::Error {
            return Err(scan.err.unwrap_or_default());
        }
    }
    if scan.eof() == Op::Error {
        return Err(scan.err.unwrap_or_default());
    }
    let body = &literal[1..literal.len() - 1];
    let mut out: Vec<u8> = Vec::with_capacity(body.len());
    let mut r = 0;
    while r < body.len() {
        let c = body[r];
        if c != b'\\' {
            out.push(c);
            r += 1;
            continue;
        }
        r += 1;
        let e = body.get(r).copied().unwrap_or(0);
        match e {
            b'"' | b'\\' | b'/' | b'\'' => {
                out.push(e);
                r += 1;
            }
            b'b' | b'f' | b'n' | b'r' | b't' => {
                out.push(match e {
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    _ => b'\t',
                });
                r += 1;
            }
            b'u' => {
                let first = hex4(&body[r + 1..]).unwrap_or(0);
                r += 5;
                let mut c = char::from_u32(first);
                if (0xd800..0xe000).contains(&first) {
                    c = None;
                    if body[r..].starts_with(b"\\u")
                        && let Some(second) = hex4(&body[r + 2..])
                        && (0xd800..0xdc00).contains(&first)
                        && (0xdc00..0xe000).contains(&second)
                    {
                        c = char::from_u32(0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00));
                        r += 6;
                    }
                }
                let c = c.unwrap_or('\u{fffd}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            _ => r += 1,
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn hex4(b: &[u8]) -> Option<u32> {
    let digits = b.get(..4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}

// ---------------------------------------------------------------------------
// Go's encoding/json scanner, for json.indent's validation and messages.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Continue,
    BeginLiteral,
    BeginObject,
    ObjectKey,
    ObjectValue,
    EndObject,
    BeginArray,
    ArrayValue,
    EndArray,
    SkipSpace,
    End,
    Error,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits read.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside the literal `word`, expecting its byte at `at`.
    Literal(&'static str, usize),
    Error,
}

struct Scanner {
    state: State,
    end_top: bool,
    parse: Vec<Parse>,
    err: Option<String>,
    bytes: usize,
}

impl Scanner {
    fn new() -> Self {
        Scanner {
            state: State::BeginValue,
            end_top: false,
            parse: Vec::new(),
            err: None,
            bytes: 0,
        }
    }

    fn eof(&mut self) -> Op {
        if self.err.is_some() {
            return Op::Error;
        }
        if self.end_top {
            return Op::End;
        }
        self.step(b' ');
        if self.end_top {
            return Op::End;
        }
        if self.err.is_none() {
            self.err = Some("unexpected end of JSON input".to_owned());
        }
        Op::Error
    }

    fn error(&mut self, c: u8, context: &str) -> Op {
        self.state = State::Error;
        self.err = Some(format!("invalid character {} {context}", go_quote_byte(c)));
        Op::Error
    }

    fn push(&mut self, c: u8, p: Parse, success: Op) -> Op {
        self.parse.push(p);
        if self.parse.len() <= MAX_DEPTH {
            return success;
        }
        self.error(c, "exceeded max depth")
    }

    fn pop(&mut self) {
        self.parse.pop();
        if self.parse.is_empty() {
            self.state = State::EndTop;
            self.end_top = true;
        } else {
            self.state = State::EndValue;
        }
    }

    fn step(&mut self, c: u8) -> Op {
        let is_space = matches!(c, b' ' | b'\t' | b'\r' | b'\n');
        match self.state {
            State::BeginValueOrEmpty => {
                if is_space {
                    return Op::SkipSpace;
                }
                if c == b']' {
                    return self.end_value(c);
                }
                self.begin_value(c)
            }
            State::BeginValue => self.begin_value(c),
            State::BeginStringOrEmpty => {
                if is_space {
                    return Op::SkipSpace;
                }
                if c == b'}' {
                    if let Some(last) = self.parse.last_mut() {
                        *last = Parse::ObjectValue;
                    }
                    return self.end_value(c);
                }
                self.begin_string(c)
            }
            State::BeginString => self.begin_string(c),
            State::EndValue => self.end_value(c),
            State::EndTop => self.end_top(c),
            State::InString => {
                if c == b'"' {
                    self.state = State::EndValue;
                    return Op::Continue;
                }
                if c == b'\\' {
                    self.state = State::InStringEsc;
                    return Op::Continue;
                }
                if c < 0x20 {
                    return self.error(c, "in string literal");
                }
                Op::Continue
            }
            State::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.state = State::InString;
                    Op::Continue
                }
                b'u' => {
                    self.state = State::InStringEscU(0);
                    Op::Continue
                }
                _ => self.error(c, "in string escape code"),
            },
            State::InStringEscU(n) => {
                if c.is_ascii_hexdigit() {
                    self.state = if n == 3 {
                        State::InString
                    } else {
                        State::InStringEscU(n + 1)
                    };
                    return Op::Continue;
                }
                self.error(c, "in \\u hexadecimal character escape")
            }
            State::Neg => {
                if c == b'0' {
                    self.state = State::Zero;
                    return Op::Continue;
                }
                if (b'1'..=b'9').contains(&c) {
                    self.state = State::One;
                    return Op::Continue;
                }
                self.error(c, "in numeric literal")
            }
            State::One => {
                if c.is_ascii_digit() {
                    return Op::Continue;
                }
                self.zero(c)
            }
            State::Zero => self.zero(c),
            State::Dot => {
                if c.is_ascii_digit() {
                    self.state = State::Dot0;
                    return Op::Continue;
                }
                self.error(c, "after decimal point in numeric literal")
            }
            State::Dot0 => {
                if c.is_ascii_digit() {
                    return Op::Continue;
                }
                if c == b'e' || c == b'E' {
                    self.state = State::E;
                    return Op::Continue;
                }
                self.end_value(c)
            }
            State::E => {
                if c == b'+' || c == b'-' {
                    self.state = State::ESign;
                    return Op::Continue;
                }
                self.e_sign(c)
            }
            State::ESign => self.e_sign(c),
            State::E0 => {
                if c.is_ascii_digit() {
                    return Op::Continue;
                }
                self.end_value(c)
            }
            State::Literal(word, at) => {
                let want = word.as_bytes()[at];
                if c == want {
                    self.state = if at + 1 == word.len() {
                        State::EndValue
                    } else {
                        State::Literal(word, at + 1)
                    };
                    return Op::Continue;
                }
                let context = format!("in literal {word} (expecting '{}')", char::from(want));
                self.error(c, &context)
            }
            State::Error => Op::Error,
        }
    }

    fn begin_value(&mut self, c: u8) -> Op {
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => Op::SkipSpace,
            b'{' => {
                self.state = State::BeginStringOrEmpty;
                self.push(c, Parse::ObjectKey, Op::BeginObject)
            }
            b'[' => {
                self.state = State::BeginValueOrEmpty;
                self.push(c, Parse::ArrayValue, Op::BeginArray)
            }
            b'"' => {
                self.state = State::InString;
                Op::BeginLiteral
            }
            b'-' => {
                self.state = State::Neg;
                Op::BeginLiteral
            }
            b'0' => {
                self.state = State::Zero;
                Op::BeginLiteral
            }
            b't' => {
                self.state = State::Literal("true", 1);
                Op::BeginLiteral
            }
            b'f' => {
                self.state = State::Literal("false", 1);
                Op::BeginLiteral
            }
            b'n' => {
                self.state = State::Literal("null", 1);
                Op::BeginLiteral
            }
            b'1'..=b'9' => {
                self.state = State::One;
                Op::BeginLiteral
            }
            _ => self.error(c, "looking for beginning of value"),
        }
    }

    fn begin_string(&mut self, c: u8) -> Op {
        if matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            return Op::SkipSpace;
        }
        if c == b'"' {
            self.state = State::InString;
            return Op::BeginLiteral;
        }
        self.error(c, "looking for beginning of object key string")
    }

    fn end_value(&mut self, c: u8) -> Op {
        let Some(&ps) = self.parse.last() else {
            self.state = State::EndTop;
            self.end_top = true;
            return self.end_top(c);
        };
        if matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            self.state = State::EndValue;
            return Op::SkipSpace;
        }
        match ps {
            Parse::ObjectKey => {
                if c == b':' {
                    if let Some(last) = self.parse.last_mut() {
                        *last = Parse::ObjectValue;
                    }
                    self.state = State::BeginValue;
                    return Op::ObjectKey;
                }
                self.error(c, "after object key")
            }
            Parse::ObjectValue => {
                if c == b',' {
                    if let Some(last) = self.parse.last_mut() {
                        *last = Parse::ObjectKey;
                    }
                    self.state = State::BeginString;
                    return Op::ObjectValue;
                }
                if c == b'}' {
                    self.pop();
                    return Op::EndObject;
                }
                self.error(c, "after object key:value pair")
            }
            Parse::ArrayValue => {
                if c == b',' {
                    self.state = State::BeginValue;
                    return Op::ArrayValue;
                }
                if c == b']' {
                    self.pop();
                    return Op::EndArray;
                }
                self.error(c, "after array element")
            }
        }
    }

    fn end_top(&mut self, c: u8) -> Op {
        if !matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            self.error(c, "after top-level value");
        }
        Op::End
    }

    fn zero(&mut self, c: u8) -> Op {
        if c == b'.' {
            self.state = State::Dot;
            return Op::Continue;
        }
        if c == b'e' || c == b'E' {
            self.state = State::E;
            return Op::Continue;
        }
        self.end_value(c)
    }

    fn e_sign(&mut self, c: u8) -> Op {
        if c.is_ascii_digit() {
            self.state = State::E0;
            return Op::Continue;
        }
        self.error(c, "in exponent of numeric literal")
    }
}

/// Go's `json.Indent`: re-lays out valid JSON text; the error is the
/// scanner's message.
pub(crate) fn indent_json(src: &str, prefix: &str, indent: &str) -> Result<String, String> {
    fn newline(dst: &mut Vec<u8>, prefix: &str, indent: &str, depth: usize) {
        dst.push(b'\n');
        dst.extend_from_slice(prefix.as_bytes());
        for _ in 0..depth {
            dst.extend_from_slice(indent.as_bytes());
        }
    }
    let mut scan = Scanner::new();
    let mut dst: Vec<u8> = Vec::with_capacity(src.len() * 2);
    let mut need_indent = false;
    let mut depth = 0usize;
    for &c in src.as_bytes() {
        scan.bytes += 1;
        let v = scan.step(c);
        if v == Op::SkipSpace {
            continue;
        }
        if v == Op::Error {
            break;
        }
        if need_indent && v != Op::EndObject && v != Op::EndArray {
            need_indent = false;
            depth += 1;
            newline(&mut dst, prefix, indent, depth);
        }
        if v == Op::Continue {
            dst.push(c);
            continue;
        }
        match c {
            b'{' | b'[' => {
                need_indent = true;
                dst.push(c);
            }
            b',' => {
                dst.push(c);
                newline(&mut dst, prefix, indent, depth);
            }
            b':' => dst.extend_from_slice(b": "),
            b'}' | b']' => {
                if need_indent {
                    need_indent = false;
                } else {
                    depth = depth.saturating_sub(1);
                    newline(&mut dst, prefix, indent, depth);
                }
                dst.push(c);
            }
            _ => dst.push(c),
        }
    }
    if scan.eof() == Op::Error {
        return Err(scan.err.unwrap_or_default());
    }
    // Only whole characters are moved, so the text stays valid UTF-8.
    Ok(String::from_utf8_lossy(&dst).into_owned())
}

// ---------------------------------------------------------------------------
// The module.

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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;
    use starlark::environment::Module;

    use super::{decode_value, encode_value, indent_json};
    use crate::testing::{Tree, assert_eval, assert_fails, eval, run};

    /// The string `expr` evaluates to.
    #[track_caller]
    fn text(expr: &str) -> String {
        match eval(expr) {
            Ok(serde_json::Value::String(s)) => s,
            other => panic!("{expr}: {other:?}"),
        }
    }

    /// Asserts that evaluating `expr` fails with exactly `message` as the
    /// builtin's error.
    #[track_caller]
    fn fails(expr: &str, message: &str) {
        match run(&format!("x = {expr}\n")) {
            Ok(_) => panic!("{expr}: expected the error {message:?}"),
            Err(e) => assert!(e.ends_with(&format!("Error: {message}")), "{expr}: {e}"),
        }
    }

    /// Runs `script`, which leaves its result in `out`.
    #[track_caller]
    fn out(script: &str) -> serde_json::Value {
        let dxr = run(&format!("{script}\ndxr.clear()\ndxr[\"out\"] = out\n"))
            .unwrap_or_else(|e| panic!("{script}: {e}"));
        function_sdk_rust::resource::struct_to_json(&dxr)["out"].clone()
    }

    #[test]
    fn json_is_a_go_style_module() {
        assert_eval("type(json)", json!("module"));
        assert_eval("str(json)", json!("<module \"json\">"));
        assert_eval(
            "dir(json)",
            json!(["decode", "encode", "encode_indent", "indent"]),
        );
        assert_fails("x = json.nope\n", "nope");
    }

    #[test]
    fn encode_sorts_keys_and_writes_compact_text() {
        assert_eq!(
            text(r#"json.encode({"b": [1, 2.5], "a": None})"#),
            r#"{"a":null,"b":[1,2.5]}"#
        );
        assert_eq!(text(r#"json.encode({"b": 1, "a": 2})"#), r#"{"a":2,"b":1}"#);
        assert_eq!(
            text(r#"json.encode({"b": 2, "a": {"z": 1, "y": 2}, "é": 3, "Z": 4, "": 5})"#),
            r#"{"":5,"Z":4,"a":{"y":2,"z":1},"b":2,"é":3}"#
        );
        assert_eq!(text("json.encode({})"), "{}");
        assert_eq!(text("json.encode([])"), "[]");
        assert_eq!(text("json.encode(None)"), "null");
        assert_eq!(text("json.encode(True)"), "true");
        assert_eq!(text("json.encode(False)"), "false");
    }

    #[test]
    fn encode_writes_floats_in_go_shortest_form_with_a_point() {
        for (expr, want) in [
            ("1.0", "1.0"),
            ("1.5", "1.5"),
            ("100.0", "100.0"),
            ("-0.0", "-0.0"),
            ("0.0001", "0.0001"),
            ("0.00001", "1e-05"),
            ("1e6", "1e+06"),
            ("123456789.0", "1.23456789e+08"),
            ("-1e-7", "-1e-07"),
            ("1e21", "1e+21"),
            ("1e100", "1e+100"),
        ] {
            assert_eq!(text(&format!("json.encode({expr})")), want, "{expr}");
        }
    }

    #[test]
    fn encode_rejects_non_finite_floats() {
        fails(
            r#"json.encode(float("nan"))"#,
            "json.encode: cannot encode non-finite float nan",
        );
        fails(
            r#"json.encode(float("inf"))"#,
            "json.encode: cannot encode non-finite float +inf",
        );
        fails(
            r#"json.encode(-float("inf"))"#,
            "json.encode: cannot encode non-finite float -inf",
        );
    }

    #[test]
    fn encode_writes_ints_of_any_size() {
        assert_eq!(text("json.encode(1 << 70)"), "1180591620717411303424");
        assert_eq!(text("json.encode(-(1 << 70))"), "-1180591620717411303424");
        assert_eq!(text("json.encode([0, -1, 42])"), "[0,-1,42]");
    }

    #[test]
    fn encode_escapes_strings_as_go_does() {
        // Printable ASCII: only `"` and `\` escaped, DEL as Go's `\x7f`.
        assert_eq!(text(r#"json.encode("q\"b\\s")"#), r#""q\"b\\s""#);
        assert_eq!(text(r#"json.encode("<>&")"#), r#""<>&""#);
        assert_eq!(text(r#"json.encode("a\x7fb")"#), r#""a\x7fb""#);
        // Anything else: Go's JSON escaping, `<>&` included.
        assert_eq!(
            text(r#"json.encode("é\u2028<>&\x01")"#),
            r#""é\u2028\u003c\u003e\u0026\u0001""#
        );
        assert_eq!(
            text(r#"json.encode("\x08\x0c\x00\x1f\t\n\r")"#),
            r#""\b\f\u0000\u001f\t\n\r""#
        );
        assert_eq!(text(r#"json.encode("a\x7fb\n")"#), "\"a\u{7f}b\\n\"");
        assert_eq!(text(r#"json.encode("\U0001F600 日本")"#), "\"😀 日本\"");
    }

    #[test]
    fn encode_turns_other_iterables_into_arrays() {
        assert_eq!(text("json.encode((1, 2))"), "[1,2]");
        assert_eq!(text("json.encode(set([1]))"), "[1]");
        assert_eq!(text("json.encode(range(3))"), "[0,1,2]");
        assert_eq!(
            text(r#"json.encode([1, [2, {"x": (3,)}]])"#),
            r#"[1,[2,{"x":[3]}]]"#
        );
    }

    #[test]
    fn encode_writes_structs_as_objects_with_sorted_fields() {
        assert_eq!(
            text("json.encode(struct(b = 1, a = 2))"),
            r#"{"a":2,"b":1}"#
        );
        assert_eq!(text("json.encode(struct())"), "{}");
        assert_eq!(
            text("json.encode([struct(a = None, n = struct(x = [1]))])"),
            r#"[{"a":null,"n":{"x":[1]}}]"#
        );
    }

    #[test]
    fn encode_writes_resource_dicts_as_objects_not_key_arrays() {
        // The reference emits `["b","a"]` for its resource dicts; a script
        // means the object, so these encode as dicts do.
        assert_eq!(text("json.encode(oxr)"), "{}");
        let v = out(
            "dxr[\"b\"] = 1\ndxr[\"a\"] = {\"y\": [True]}\ndxr.spec = {\"z\": 2.5}\nout = json.encode(dxr)",
        );
        assert_eq!(v, json!(r#"{"a":{"y":[true]},"b":1,"spec":{"z":2.5}}"#));
    }

    #[test]
    fn encode_writes_resource_refs_as_objects() {
        let v = out(
            "r = Resource(\"db\", {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"})\n\
             s = Resource(\"gone\", {\"kind\": \"X\"}, when = False, skip_reason = \"off\", optional = True)\n\
             out = json.encode([r, s])",
        );
        assert_eq!(
            v,
            json!(r#"[{"name":"db"},{"name":"gone","optional":true}]"#)
        );
    }

    #[test]
    fn encode_errors_name_the_path_to_the_bad_value() {
        fails(
            "json.encode({1: 2})",
            "json.encode: dict has int key, want string",
        );
        fails(
            r#"json.encode({"a": len})"#,
            r#"json.encode: in dict key "a": cannot encode builtin_function_or_method as JSON"#,
        );
        fails(
            r#"json.encode({"a": [1, 2, float("nan")]})"#,
            r#"json.encode: in dict key "a": at list index 2: cannot encode non-finite float nan"#,
        );
        fails(
            r#"json.encode({"é\n": len})"#,
            r#"json.encode: in dict key "é\n": cannot encode builtin_function_or_method as JSON"#,
        );
        fails(
            "json.encode(struct(x = struct(y = len)))",
            "json.encode: in field .x: in field .y: cannot encode builtin_function_or_method as JSON",
        );
        fails(
            "json.encode(json)",
            "json.encode: in field .decode: cannot encode builtin_function_or_method as JSON",
        );
        fails(
            "json.encode(lambda: 1)",
            "json.encode: cannot encode function as JSON",
        );
    }

    #[test]
    fn encode_reports_cycles_and_accepts_shared_values() {
        assert_fails(
            "x = [1]\nx.append(x)\ny = json.encode(x)\n",
            "json.encode: at list index 1: cycle in JSON structure",
        );
        assert_fails(
            "x = {}\nx[\"a\"] = x\ny = json.encode(x)\n",
            r#"json.encode: in dict key "a": cycle in JSON structure"#,
        );
        assert_eq!(
            out("x = [1]\nout = json.encode([x, x])"),
            json!("[[1],[1]]")
        );
    }

    #[test]
    fn encode_takes_exactly_one_positional_argument() {
        fails("json.encode()", "json.encode: got 0 arguments, want 1");
        fails("json.encode(1, 2)", "json.encode: got 2 arguments, want 1");
        fails(
            "json.encode(x = 1)",
            "json.encode: unexpected keyword arguments",
        );
    }

    #[test]
    fn decode_returns_new_plain_values_in_document_order() {
        assert_eq!(
            text(r#"json.encode(json.decode('{"a":1.0,"b":[1,2,null,true]}'))"#),
            r#"{"a":1.0,"b":[1,2,null,true]}"#
        );
        assert_eq!(
            text(r#"str(json.decode('{"b":1,"a":2}'))"#),
            r#"{"b": 1, "a": 2}"#
        );
        assert_eq!(
            text(r#"str(json.decode('{"a":1,"b":2,"a":3}'))"#),
            r#"{"a": 3, "b": 2}"#
        );
        assert_eq!(text(r#"type(json.decode("{}"))"#), "dict");
        assert_eq!(text(r#"type(json.decode("[]"))"#), "list");
        assert_eq!(
            out(
                "x = json.decode('[1]')\nx.append(2)\ny = json.decode('{}')\ny[\"k\"] = x\nout = json.encode(y)"
            ),
            json!(r#"{"k":[1,2]}"#)
        );
        assert_eq!(text(r#"str(json.decode("null"))"#), "None");
        assert_eq!(
            text(r#"str(json.decode(" \t\r\n[ true , false ] "))"#),
            "[True, False]"
        );
    }

    #[test]
    fn decode_reads_ints_of_any_size_and_floats_by_their_spelling() {
        for (src, want, kind) in [
            ("42", "42", "int"),
            ("-7", "-7", "int"),
            ("-0", "0", "int"),
            ("12345678901234567890", "12345678901234567890", "int"),
            ("42.0", "42.0", "float"),
            ("1e2", "100.0", "float"),
            ("0.1", "0.1", "float"),
            ("1E+2", "100.0", "float"),
            ("-.5", "-0.5", "float"),
            ("1.", "1.0", "float"),
            ("1e-400", "0.0", "float"),
        ] {
            assert_eq!(text(&format!("str(json.decode({src:?}))")), want, "{src}");
            assert_eq!(text(&format!("type(json.decode({src:?}))")), kind, "{src}");
        }
    }

    #[test]
    fn decode_reports_syntax_errors_with_their_offset() {
        for (src, message) in [
            ("1e400", "at offset 5, invalid number: 1e400"),
            ("01", "at offset 2, invalid number: 01"),
            ("-", "at offset 1, invalid number: -"),
            ("-01", "at offset 3, invalid number: -01"),
            ("1e", "at offset 2, invalid number: 1e"),
            ("1.5.5", "at offset 5, invalid number: 1.5.5"),
            ("[1,", "at offset 3, unexpected end of file"),
            ("", "at offset 0, unexpected end of file"),
            ("NaN", "at offset 0, unexpected character 'N'"),
            (".5", "at offset 0, unexpected character '.'"),
            ("nul", "at offset 0, unexpected character 'n'"),
            ("[1] x", "at offset 4, unexpected character 'x' after value"),
            ("{'a': 1}", r"at offset 1, unexpected character '\''"),
            ("[1 2]", "at offset 3, got '2', want ',' or ']'"),
            (
                r#"{"a" 1}"#,
                "at offset 5, after object key, got '1', want ':' ",
            ),
            (
                r#"{"a": 1 2}"#,
                "at offset 8, in object, got '2', want ',' or '}'",
            ),
            ("{1: 2}", "at offset 2, got int for object key, want string"),
            (
                "{null: 2}",
                "at offset 5, got NoneType for object key, want string",
            ),
            (r#""abc"#, "at offset 0, unclosed string literal"),
            (
                r#""a\qb""#,
                "at offset 6, invalid character 'q' in string escape code",
            ),
            (
                r#""a\u00zzb""#,
                r"at offset 10, invalid character 'z' in \u hexadecimal character escape",
            ),
        ] {
            fails(
                &format!("json.decode({src:?})"),
                &format!("json.decode: {message}"),
            );
        }
        fails(
            r#"json.decode("\"é\x01\"")"#,
            r"json.decode: at offset 5, invalid character '\x01' in string literal",
        );
    }

    #[test]
    fn decode_unescapes_strings_as_go_does() {
        assert_eq!(text(r#"json.decode('"\\ud83d\\ude00"')"#), "😀");
        assert_eq!(text(r#"json.decode('"\\u00e9"')"#), "é");
        assert_eq!(text(r#"json.decode('"\\ud83d"')"#), "\u{fffd}");
        assert_eq!(text(r#"json.decode('"\\ud83d\\u0041"')"#), "\u{fffd}A");
        assert_eq!(
            text(r#"json.decode('"\\/\\b\\f\\n\\r\\t\\"\\\\"')"#),
            "/\u{8}\u{c}\n\r\t\"\\"
        );
        // Strings of plain ASCII are taken verbatim, raw control
        // characters included, as the reference does.
        assert_eq!(text(r#"json.decode('"a\x01"')"#), "a\u{1}");
    }

    #[test]
    fn decode_default_replaces_only_syntax_failures() {
        assert_eq!(text(r#"str(json.decode("[1]", default = None))"#), "[1]");
        assert_eq!(text(r#"str(json.decode("x", default = 7))"#), "7");
        assert_eq!(text(r#"str(json.decode("x", None))"#), "None");
        assert_eq!(text(r#"str(json.decode("1e400", default = "big"))"#), "big");
        fails(
            "json.decode(None, default = 3)",
            "json.decode: for parameter x: got NoneType, want string",
        );
    }

    #[test]
    fn decode_binds_its_arguments_as_go_does() {
        fails(
            "json.decode(1)",
            "json.decode: for parameter x: got int, want string",
        );
        fails(
            r#"json.decode(x = "1")"#,
            "json.decode: unexpected keyword argument x",
        );
        fails(
            r#"json.decode("1", x = "1")"#,
            r#"json.decode: got multiple values for keyword argument "x""#,
        );
        fails("json.decode()", "json.decode: missing argument for x");
        fails(
            r#"json.decode("1", 2, 3)"#,
            "json.decode: got 3 arguments, want at most 2",
        );
        fails(
            r#"json.decode("1", defualt = 3)"#,
            r#"json.decode: unexpected keyword argument "defualt""#,
        );
        fails(
            r#"json.decode("x", 2, default = 3)"#,
            r#"json.decode: got multiple values for keyword argument "default""#,
        );
    }

    #[test]
    fn indent_lays_out_json_text_without_re_encoding_it() {
        assert_eq!(
            text(r#"json.indent('{"b":1,"a":[]}', indent = "  ")"#),
            "{\n  \"b\": 1,\n  \"a\": []\n}"
        );
        assert_eq!(
            text(r#"json.indent('{"a":1,"b":[1,2]}')"#),
            "{\n\t\"a\": 1,\n\t\"b\": [\n\t\t1,\n\t\t2\n\t]\n}"
        );
        assert_eq!(
            text(r#"json.indent('{"a":1}', prefix = "> ", indent = "\t")"#),
            "{\n> \t\"a\": 1\n> }"
        );
        assert_eq!(
            text(r#"json.indent('  [ 1 , { } , [ ] , {"a" : [ ]} ]  ')"#),
            "[\n\t1,\n\t{},\n\t[],\n\t{\n\t\t\"a\": []\n\t}\n]  "
        );
        assert_eq!(
            text(r#"json.indent('{"a":"x,y:{z}[]","n":1e5,"m":-0.0}')"#),
            "{\n\t\"a\": \"x,y:{z}[]\",\n\t\"n\": 1e5,\n\t\"m\": -0.0\n}"
        );
        assert_eq!(text(r#"json.indent("1")"#), "1");
    }

    #[test]
    fn indent_reports_go_scanner_errors() {
        for (src, message) in [
            ("", "unexpected end of JSON input"),
            ("{", "unexpected end of JSON input"),
            ("x", "invalid character 'x' looking for beginning of value"),
            (r#"{"a" 1}"#, "invalid character '1' after object key"),
            (
                "[1,]",
                "invalid character ']' looking for beginning of value",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            (
                r#"{"a":1,}"#,
                "invalid character '}' looking for beginning of object key string",
            ),
            (
                r#"{"a":1 "b"}"#,
                "invalid character '\"' after object key:value pair",
            ),
            (r#""a\x""#, "invalid character 'x' in string escape code"),
            (
                r#""\u12g4""#,
                r"invalid character 'g' in \u hexadecimal character escape",
            ),
            (
                "tx",
                "invalid character 'x' in literal true (expecting 'r')",
            ),
            (
                "fals",
                "invalid character ' ' in literal false (expecting 'e')",
            ),
            (
                "nulx",
                "invalid character 'x' in literal null (expecting 'l')",
            ),
            ("-a", "invalid character 'a' in numeric literal"),
            (
                "1.a",
                "invalid character 'a' after decimal point in numeric literal",
            ),
            (
                "1ea",
                "invalid character 'a' in exponent of numeric literal",
            ),
            ("1 2", "invalid character '2' after top-level value"),
            ("é", "invalid character 'Ã' looking for beginning of value"),
            (
                "'",
                r"invalid character '\'' looking for beginning of value",
            ),
        ] {
            fails(
                &format!("json.indent({src:?})"),
                &format!("json.indent: {message}"),
            );
        }
        fails(
            r#"json.indent("\"\x01\"")"#,
            r"json.indent: invalid character '\x01' in string literal",
        );
    }

    #[test]
    fn indent_options_are_keyword_only_strings() {
        fails(
            r#"json.indent('[1]', "x")"#,
            "json.indent: got 2 arguments, want 1",
        );
        fails("json.indent()", "json.indent: got 0 arguments, want 1");
        fails(
            "json.indent(1)",
            "json.indent: for parameter 1: got int, want string",
        );
        fails(
            "json.indent('[1]', prefix = 1)",
            r#"json.indent: for parameter "prefix": got int, want string"#,
        );
        fails(
            "json.indent('[1]', indent = None)",
            r#"json.indent: for parameter "indent": got NoneType, want string"#,
        );
        fails(
            r#"json.indent('[1]', prefx = "")"#,
            r#"json.indent: unexpected keyword argument "prefx" (did you mean prefix?)"#,
        );
        fails(
            r#"json.indent('[1]', indnt = "")"#,
            r#"json.indent: unexpected keyword argument "indnt""#,
        );
    }

    #[test]
    fn encode_indent_is_indent_of_encode() {
        assert_eq!(
            text(r#"json.encode_indent({"a": [1]}, indent = "  ")"#),
            "{\n  \"a\": [\n    1\n  ]\n}"
        );
        assert_eq!(
            text(r#"json.encode_indent({"a": [1]})"#),
            "{\n\t\"a\": [\n\t\t1\n\t]\n}"
        );
        assert_eq!(text(r#"json.encode_indent([], prefix = ">")"#), "[]");
        assert_eq!(
            text(
                r##"json.encode_indent({"b": {"c": [1, {"d": None}]}, "a": {}}, prefix = "#", indent = "..")"##
            ),
            "{\n#..\"a\": {},\n#..\"b\": {\n#....\"c\": [\n#......1,\n#......{\n#........\"d\": null\n#......}\n#....]\n#..}\n#}"
        );
        fails(
            "json.encode_indent(1, 2)",
            "json.encode_indent: got 2 arguments, want 1",
        );
        fails(
            "json.encode_indent(1, foo = 2)",
            r#"json.encode_indent: unexpected keyword argument "foo""#,
        );
        fails(
            r#"json.encode_indent({"a": float("nan")})"#,
            r#"json.encode_indent: in dict key "a": cannot encode non-finite float nan"#,
        );
        // The DEL quirk of `encode` makes text `indent` rejects.
        fails(
            r#"json.encode_indent("\x7f")"#,
            "json.encode_indent: invalid character 'x' in string escape code",
        );
    }

    #[test]
    fn deeply_nested_input_is_an_error_not_a_crash() {
        // Scripts run on a large dedicated stack; so does this test.
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(|| {
                let deep = "[".repeat(20_000);
                Module::with_temp_heap(|module| {
                    let err = decode_value(&deep, module.heap()).unwrap_err();
                    assert!(err.contains("nesting depth exceeds 10000"), "{err}");
                });
                let err = indent_json(&deep, "", "\t").unwrap_err();
                assert_eq!(err, "invalid character '[' exceeded max depth");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn decoding_encoded_values_gives_them_back(t in Tree::strategy(any::<String>())) {
            Module::with_temp_heap(|module| {
                let heap = module.heap();
                let v = t.alloc(heap);
                let text = encode_value(v, heap).unwrap();
                let back = decode_value(&text, heap).unwrap();
                prop_assert!(back.equals(v).unwrap(), "{text}");
                // Encoding is deterministic and canonical: sorted keys, so
                // the text of the decoded value is the same text.
                prop_assert_eq!(encode_value(back, heap).unwrap(), text.clone());
                // Indenting keeps the value.
                let indented = indent_json(&text, ">", "  ").unwrap();
                let again = decode_value(&indented.replace("\n>", "\n"), heap).unwrap();
                prop_assert!(again.equals(v).unwrap(), "{indented}");
                Ok(())
            })?;
        }

        #[test]
        fn decode_never_panics_on_arbitrary_text(s in any::<String>()) {
            Module::with_temp_heap(|module| {
                let _ = decode_value(&s, module.heap());
            });
            let _ = indent_json(&s, "", "\t");
        }
    }

    /// Each call of `tests/compat/json.txt` gives what go.starlark.net's
    /// json module gave (recorded by `tools/gostarlark`): the same repr, or
    /// an error with the same message.
    #[test]
    fn calls_match_the_recorded_go_results() {
        let (total, wrong) = crate::testing::replay_go_vectors("json.txt");
        assert!(
            wrong.is_empty(),
            "{} of {total} calls differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}
