//! Values as go.starlark.net writes them: the one renderer behind `str`,
//! `repr`, `print`, `fail`, the struct repr and `%` interpolation.
//!
//! Floats use Go's shortest round-tripping text (`1.23456789e+08`, `1e-05`,
//! `100.0`), strings keep printable non-ASCII characters (`"é"`), and lists,
//! tuples, dicts (every flavour), sets and structs are rendered element by
//! element with the same rules. Everything else is the interpreter's own
//! repr, which already matches Go's (ints, bools, `None`, ranges, ...).
//!
//! The renderer keeps its own work stack instead of recursing, so a deeply
//! nested value cannot exhaust the native stack, and it stops once the text
//! passes a byte limit (the run's remaining heap), so `str()` of a list
//! holding one huge string many times fails instead of aborting the process.

use std::collections::HashSet;
use std::fmt::{self, Write as _};

use num_bigint::BigInt;
use starlark::eval::Evaluator;
use starlark::values::bytes::StarlarkBytes;
use starlark::values::dict::DictRef;
use starlark::values::float::StarlarkFloat;
use starlark::values::list::ListRef;
use starlark::values::tuple::TupleRef;
use starlark::values::{Heap, Value, ValueIdentity, ValueLike};

use crate::go::float::format_g;
use crate::go::names::unreserve;
use crate::go::quote::go_quote;
use crate::go::types::go_type;
use crate::values::attr_dict::Entries;
use crate::values::mapping::{self, Lookup};
use crate::values::mutable_struct::{FrozenMutableStruct, MutableStruct, View as MutableView};
use crate::values::schema::SchemaDict;
use crate::values::structs::{Record, RecordGen};

/// The text would pass the byte limit it was rendered under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong;

/// go.starlark.net's text of a float under the conversion `conv` (`g`, `G`,
/// `e`, `E`, `f` or `F`): `+inf`, `-inf` and `nan` for non-finite values;
/// for `g`/`G` the shortest digits that round-trip, with `.0` added when
/// there is neither a point nor an exponent; six digits after the point
/// otherwise. `F` yields the text `%F`, as Go's `strconv` does.
pub fn float_text(f: f64, conv: u8) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+inf" } else { "-inf" }.to_owned();
    }
    match conv {
        b'g' | b'G' => {
            let mut s = format_g(f);
            if conv == b'G' {
                s = s.to_ascii_uppercase();
            }
            if !s.contains(['e', 'E', '.']) {
                s.push_str(".0");
            }
            s
        }
        b'e' | b'E' => {
            let sci = format!("{f:.6e}");
            let (mantissa, exp) = sci
                .split_once('e')
                .expect("`{:e}` output always has an exponent");
            let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
            let sign = if exp < 0 { '-' } else { '+' };
            let e = if conv == b'E' { 'E' } else { 'e' };
            format!("{mantissa}{e}{sign}{:02}", exp.unsigned_abs())
        }
        b'f' => format!("{f:.6}"),
        _ => format!("%{}", char::from(conv)),
    }
}

/// Go's `utf8Transcode`: valid text unchanged, each byte of an invalid
/// sequence replaced by U+FFFD.
fn transcode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(chunk.invalid().iter().map(|_| char::REPLACEMENT_CHARACTER));
    }
    out
}

/// go.starlark.net's bytes repr (`syntax.Quote(s, true)`): `b"..."` with
/// printable characters kept and each byte of an invalid sequence as `\xNN`.
fn quote_bytes(bytes: &[u8], out: &mut String) {
    out.push_str("b\"");
    for chunk in bytes.utf8_chunks() {
        let quoted = go_quote(chunk.valid());
        out.push_str(&quoted[1..quoted.len() - 1]);
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
}

/// Appends go.starlark.net's repr of the string `s`: printable ASCII text
/// (the common case) as it is, anything else through [`go_quote`].
fn quote_into(s: &str, out: &mut String) {
    let plain = s
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if plain {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&go_quote(s));
    }
}

/// One step of the renderer's work stack.
enum Step<'v> {
    /// Render this value.
    Value(Value<'v>),
    /// Write this text.
    Text(&'static str),
    /// Write this text.
    Owned(String),
    /// The container entered earlier is done: leave it.
    Leave(ValueIdentity<'v>),
}

/// Renders values as go.starlark.net does.
pub struct Renderer<'v> {
    heap: Option<Heap<'v>>,
    limit: usize,
}

impl<'v> Renderer<'v> {
    /// A renderer that may allocate on `heap` (needed for sets; without it
    /// a set falls back to the interpreter's repr) and fails once the text
    /// passes `limit` bytes.
    pub fn new(heap: Option<Heap<'v>>, limit: usize) -> Self {
        Renderer { heap, limit }
    }

    /// `str(v)`: a string as itself, bytes as text, anything else as its repr.
    pub fn str_of(&self, v: Value<'v>) -> Result<String, TooLong> {
        if let Some(s) = v.unpack_str() {
            return Ok(s.to_owned());
        }
        if let Some(b) = v.downcast_ref::<StarlarkBytes>() {
            return Ok(transcode(b.as_bytes()));
        }
        self.repr(v)
    }

    /// `repr(v)`.
    pub fn repr(&self, v: Value<'v>) -> Result<String, TooLong> {
        let mut out = String::new();
        self.repr_into(v, &mut out)?;
        Ok(out)
    }

    /// Appends `repr(v)` to `out`.
    pub fn repr_into(&self, v: Value<'v>, out: &mut String) -> Result<(), TooLong> {
        // The common scalar, without the work stack (`str(i)`, labels).
        if let Some(i) = v.unpack_i32() {
            let _ = write!(out, "{i}");
            return if out.len() > self.limit {
                Err(TooLong)
            } else {
                Ok(())
            };
        }
        let mut work = vec![Step::Value(v)];
        let mut path: HashSet<ValueIdentity<'v>> = HashSet::new();
        while let Some(step) = work.pop() {
            match step {
                Step::Text(t) => out.push_str(t),
                Step::Owned(s) => out.push_str(&s),
                Step::Leave(id) => {
                    path.remove(&id);
                }
                Step::Value(v) => {
                    let mut steps = Vec::new();
                    self.one(v, out, &mut steps, &mut path);
                    work.extend(steps.into_iter().rev());
                }
            }
            if out.len() > self.limit {
                return Err(TooLong);
            }
        }
        Ok(())
    }

    /// Writes the scalar `v` to `out`, or pushes (in order) the steps that
    /// render the container `v`.
    fn one(
        &self,
        v: Value<'v>,
        out: &mut String,
        steps: &mut Vec<Step<'v>>,
        path: &mut HashSet<ValueIdentity<'v>>,
    ) {
        if let Some(s) = v.unpack_str() {
            quote_into(s, out);
            return;
        }
        if let Some(f) = v.downcast_ref::<StarlarkFloat>() {
            out.push_str(&float_text(f.0, b'g'));
            return;
        }
        if let Some(b) = v.downcast_ref::<StarlarkBytes>() {
            quote_bytes(b.as_bytes(), out);
            return;
        }
        if let Some(t) = TupleRef::from_value(v) {
            let items = t.content();
            steps.push(Step::Text("("));
            sequence(items, steps);
            steps.push(Step::Text(if items.len() == 1 { ",)" } else { ")" }));
            return;
        }
        if let Some(r) = Record::from_value(v) {
            steps.push(Step::Text("struct("));
            for (i, (k, field)) in r.fields().enumerate() {
                let sep = if i > 0 { ", " } else { "" };
                steps.push(Step::Owned(format!("{sep}{} = ", unreserve(k))));
                steps.push(Step::Value(field));
            }
            steps.push(Step::Text(")"));
            return;
        }
        // Containers that can hold themselves from here on.
        let (open, close) = if ListRef::from_value(v).is_some() {
            ("[", "]")
        } else if let Some(view) = MutableView::of(v) {
            let id = v.identity();
            if !path.insert(id) {
                out.push_str(&view.opening());
                out.push_str("...)");
                return;
            }
            steps.push(Step::Owned(view.opening()));
            for (i, (k, field)) in view.printed_fields().into_iter().enumerate() {
                let sep = if i > 0 { ", " } else { "" };
                steps.push(Step::Owned(format!("{sep}{} = ", unreserve(&k))));
                steps.push(Step::Value(field));
            }
            steps.push(Step::Text(")"));
            steps.push(Step::Leave(id));
            return;
        } else if SchemaDict::from_value(v).is_some() {
            ("", "")
        } else if DictRef::from_value(v).is_some() || Entries::of(v).is_some() {
            ("{", "}")
        } else if v.get_type() == "set" && self.heap.is_some() {
            ("set([", "])")
        } else {
            out.push_str(&v.to_repr());
            return;
        };
        let id = v.identity();
        if !path.insert(id) {
            out.push_str(open);
            out.push_str("...");
            out.push_str(close);
            return;
        }
        steps.push(Step::Text(open));
        if let Some(l) = ListRef::from_value(v) {
            sequence(l.content(), steps);
        } else if let Some(s) = SchemaDict::from_value(v) {
            steps.push(Step::Owned(format!("{}(", s.schema_name())));
            if let Some(inner) = crate::values::schema::inner_dict(v) {
                steps.push(Step::Value(inner));
            }
            steps.push(Step::Text(")"));
        } else if let Some(d) = DictRef::from_value(v) {
            for (i, (k, item)) in d.iter().enumerate() {
                if i > 0 {
                    steps.push(Step::Text(", "));
                }
                steps.push(Step::Value(k));
                steps.push(Step::Text(": "));
                steps.push(Step::Value(item));
            }
        } else if let Some(e) = Entries::of(v) {
            e.with(|m| {
                for (i, (k, item)) in m.iter().enumerate() {
                    let sep = if i > 0 { ", " } else { "" };
                    let mut key = sep.to_owned();
                    quote_into(k, &mut key);
                    key.push_str(": ");
                    steps.push(Step::Owned(key));
                    steps.push(Step::Value(*item));
                }
            });
        } else if let Some(heap) = self.heap {
            let items: Vec<Value<'v>> = v.iterate(heap).map(Iterator::collect).unwrap_or_default();
            sequence(&items, steps);
        }
        steps.push(Step::Text(close));
        steps.push(Step::Leave(id));
    }
}

/// Pushes the steps of comma-separated `items`.
fn sequence<'v>(items: &[Value<'v>], steps: &mut Vec<Step<'v>>) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            steps.push(Step::Text(", "));
        }
        steps.push(Step::Value(*item));
    }
}

/// `repr(v)` without a heap or a limit, for `Display` implementations.
pub fn repr(v: Value) -> String {
    Renderer::new(None, usize::MAX).repr(v).unwrap_or_default()
}

// The struct types print their fields through this renderer, so their
// `Display` (which the interpreter uses for them) is written here.

/// A struct's repr with its fields written as go.starlark.net writes them,
/// wherever the interpreter itself shows a struct (`str.format`, error
/// messages).
impl<'v, V: ValueLike<'v>> fmt::Display for RecordGen<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct(")?;
        for (i, (k, v)) in self.fields().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} = {}", unreserve(k), repr(v))?;
        }
        f.write_str(")")
    }
}

/// Renders a mutable struct as the Go implementation prints it.
fn render_mutable(view: &MutableView, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(&view.opening())?;
    for (i, (name, value)) in view.printed_fields().iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{} = {}", unreserve(name), repr(*value))?;
    }
    f.write_str(")")
}

impl fmt::Display for MutableStruct<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        render_mutable(&self.view(), f)
    }
}

impl fmt::Display for FrozenMutableStruct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        render_mutable(&self.view(), f)
    }
}

/// Why `%` interpolation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// A script error, with go.starlark.net's message.
    Go(String),
    /// The text would pass the renderer's byte limit.
    TooLong,
}

impl From<TooLong> for FormatError {
    fn from(_: TooLong) -> Self {
        FormatError::TooLong
    }
}

fn go_error(message: String) -> FormatError {
    FormatError::Go(message)
}

/// go.starlark.net's `NumberToInt`: ints as they are, finite floats
/// truncated toward zero.
fn number_to_int(v: Value) -> Result<BigInt, String> {
    if let Some(f) = v.downcast_ref::<StarlarkFloat>() {
        let f = f.0;
        if f.is_infinite() {
            return Err("cannot convert float infinity to integer".to_owned());
        }
        if f.is_nan() {
            return Err("cannot convert float NaN to integer".to_owned());
        }
        // `{:.0}` of an integral float prints every digit exactly.
        return Ok(format!("{:.0}", f.trunc()).parse().unwrap_or_default());
    }
    int_of(v).ok_or_else(|| format!("cannot convert {} to int", go_type(v)))
}

/// The value of an int (not a bool).
pub(crate) fn int_of(v: Value) -> Option<BigInt> {
    use starlark::values::UnpackValue;
    if v.get_type() != "int" {
        return None;
    }
    BigInt::unpack_value(v).ok().flatten()
}

/// go.starlark.net's `AsFloat`: floats, and ints rounded to the nearest float.
pub(crate) fn as_float(v: Value) -> Option<f64> {
    if let Some(f) = v.downcast_ref::<StarlarkFloat>() {
        return Some(f.0);
    }
    int_of(v).map(|i| i.to_string().parse().unwrap_or(f64::NAN))
}

/// `format % x` for a string `format`, as go.starlark.net interpolates: the
/// conversions `%s %r %d %i %o %x %X %e %E %f %F %g %G %c %%`, `%(key)s`
/// with a mapping, no flags, width or precision, and Go's messages.
pub fn interpolate<'v>(
    format: &str,
    x: Value<'v>,
    renderer: &Renderer<'v>,
) -> Result<String, FormatError> {
    let tuple = TupleRef::from_value(x).map(TupleRef::content);
    let nargs = tuple.map_or(1, <[Value]>::len);
    let mut buf = String::with_capacity(format.len());
    let mut format = format;
    let mut index = 0;
    loop {
        if buf.len() > renderer.limit {
            return Err(FormatError::TooLong);
        }
        let Some(i) = format.find('%') else {
            buf.push_str(format);
            break;
        };
        buf.push_str(&format[..i]);
        format = &format[i + 1..];
        if let Some(rest) = format.strip_prefix('%') {
            buf.push('%');
            format = rest;
            continue;
        }
        let arg = if let Some(rest) = format.strip_prefix('(') {
            let Some(j) = rest.find(')') else {
                return Err(go_error("incomplete format key".to_owned()));
            };
            let key = &rest[..j];
            format = &rest[j + 1..];
            match mapping::lookup(x, key) {
                Lookup::NotMapping => return Err(go_error("format requires a mapping".to_owned())),
                Lookup::Missing => return Err(go_error(format!("key not found: {key}"))),
                Lookup::Found(v) => v,
            }
        } else {
            if index >= nargs {
                return Err(go_error(
                    "not enough arguments for format string".to_owned(),
                ));
            }
            tuple.map_or(x, |t| t[index])
        };
        let Some(&c) = format.as_bytes().first() else {
            return Err(go_error("incomplete format".to_owned()));
        };
        let conv = char::from(c);
        match c {
            b's' | b'r' => match arg.unpack_str() {
                Some(s) if c == b's' => buf.push_str(s),
                _ => renderer.repr_into(arg, &mut buf)?,
            },
            b'd' | b'i' if arg.unpack_i32().is_some() => {
                let _ = write!(buf, "{}", arg.unpack_i32().unwrap_or_default());
            }
            b'd' | b'i' | b'o' | b'x' | b'X' => {
                let i = number_to_int(arg)
                    .map_err(|e| go_error(format!("%{conv} format requires integer: {e}")))?;
                match c {
                    b'o' => buf.push_str(&i.to_str_radix(8)),
                    b'x' => buf.push_str(&i.to_str_radix(16)),
                    b'X' => buf.push_str(&i.to_str_radix(16).to_ascii_uppercase()),
                    _ => buf.push_str(&i.to_string()),
                }
            }
            b'e' | b'f' | b'g' | b'E' | b'F' | b'G' => {
                let f = as_float(arg).ok_or_else(|| {
                    go_error(format!(
                        "%{conv} format requires float, not {}",
                        go_type(arg)
                    ))
                })?;
                buf.push_str(&float_text(f, c));
            }
            b'c' => {
                if let Some(i) = int_of(arg) {
                    let code = i32::try_from(&i)
                        .ok()
                        .and_then(|r| u32::try_from(r).ok())
                        .filter(|r| *r <= 0x0010_ffff);
                    let Some(code) = code else {
                        return Err(go_error(format!(
                            "%c format requires a valid Unicode code point, got {i}"
                        )));
                    };
                    buf.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                } else if let Some(s) = arg.unpack_str() {
                    let mut chars = s.chars();
                    match (chars.next(), chars.next()) {
                        (Some(ch), None) => buf.push(ch),
                        _ => {
                            return Err(go_error(
                                "%c format requires a single-character string".to_owned(),
                            ));
                        }
                    }
                } else {
                    return Err(go_error(format!(
                        "%c format requires int or single-character string, not {}",
                        go_type(arg)
                    )));
                }
            }
            b'%' => buf.push('%'),
            // Go prints the byte as a character of its own (`%é` shows `%Ã`).
            _ => return Err(go_error(format!("unknown conversion %{conv}"))),
        }
        format = &format[1..];
        index += 1;
    }
    if index < nargs && !mapping::is_mapping(x) {
        return Err(go_error("too many arguments for format string".to_owned()));
    }
    Ok(buf)
}

/// A renderer for a builtin running in `eval`: it may use the heap, and
/// fails where the text would take the run past its memory limit.
pub(crate) fn renderer<'v>(eval: &Evaluator<'v, '_, '_>) -> Renderer<'v> {
    Renderer::new(Some(eval.heap()), crate::meter::Meter::room())
}

/// The error for text that would pass the memory limit: `what` names the
/// builtin or operator.
pub(crate) fn too_long(_eval: &Evaluator, what: &str) -> anyhow::Error {
    let limit = crate::meter::Meter::limit().unwrap_or(0);
    anyhow::anyhow!(
        "{what}: the text would exceed the script's memory budget ({} MiB); raise --max-heap-mib (STARLARK_MAX_HEAP_MIB) if it needs more",
        limit >> 20
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::float_text;
    use crate::testing::{assert_eval, assert_fails, run};

    /// `repr(expr)` against go.starlark.net's, recorded with its Go
    /// implementation (the version `tools/gosteps` pins).
    #[test]
    fn values_render_as_go_renders_them() {
        let cases = [
            (
                r#"[1.5e7, "é", (1,), {"k": set([1e-5])}]"#,
                r#"[1.5e+07, "é", (1,), {"k": set([1e-05])}]"#,
            ),
            (
                r#"struct(a = [1e-7], b = struct(c = "é"))"#,
                r#"struct(a = [1e-07], b = struct(c = "é"))"#,
            ),
            (r#"b"é\x01\xff""#, r#"b"é\x01\xff""#),
            (r#"str(b"a\xffb")"#, r#""a�b""#),
            (
                r#"[-0.0, float("-inf"), float("nan"), 1e22, 100.0, 1.0 / 3]"#,
                r"[-0.0, -inf, nan, 1e+22, 100.0, 0.3333333333333333]",
            ),
            (
                r#""%f %f" % (0.0078125, 0.0234375)"#,
                r#""0.007812 0.023438""#,
            ),
            (
                r#""%e %E" % (1.0078125, -0.0)"#,
                r#""1.007812e+00 -0.000000E+00""#,
            ),
            (r#""%d%%" % 50"#, r#""50%""#),
            (r#""%o %X" % (-8, 1 << 70)"#, r#""-10 400000000000000000""#),
            (r#""%r %s" % ("é\n", "é\n")"#, r#""\"é\\n\" é\n""#),
            (r#""%s|%r" % (b"a", 1.5e7)"#, r#""b\"a\"|1.5e+07""#),
            (r#""%c%c" % (0x1F600, "é")"#, r#""😀é""#),
            (r#""%g %G" % (1e-10, 1e100)"#, r#""1e-10 1E+100""#),
            (r#""%e" % 123456789"#, r#""1.234568e+08""#),
            (r#""%x" % 1e20"#, r#""56bc75e2d63100000""#),
            (
                r"[str(1e21), str(1e-4), str(123456.0), str(1234567.0)]",
                r#"["1e+21", "0.0001", "123456.0", "1.234567e+06"]"#,
            ),
            (
                r#"repr({1.0: "a", (1, "é"): [1e-5]})"#,
                r#""{1.0: \"a\", (1, \"é\"): [1e-05]}""#,
            ),
            (r"str(struct())", r#""struct()""#),
            (r#""%s" % [struct(a = 1e100)]"#, r#""[struct(a = 1e+100)]""#),
            (r#""a%%b%sc" % "d""#, r#""a%bdc""#),
            (r#""%(x)s %(x)d" % {"x": 3}"#, r#""3 3""#),
            (r#""%s" % {"a": 1}"#, r#""{\"a\": 1}""#),
            (r#""%s %s" % ("a", {"b": 2})"#, r#""a {\"b\": 2}""#),
            (r#""%s" % (1.5e7,)"#, r#""1.5e+07""#),
            (r#"hash("😀é")"#, r"3984105"),
            (r#"hash(b"abc\xff")"#, r"1396001564"),
            (
                r"str(1 << 511)",
                r#""6703903964971298549787012499102923063739682910296196688861780721860882015036773488400937149083451713845015929093243025426876941405973284973216824503042048""#,
            ),
            (r"-(1 << 100) << 3", r"-10141204801825835211973625643008"),
            (r"0 << 500", r"0"),
            (r"-1 << 63", r"-9223372036854775808"),
            (r"(1 << 62) << 1", r"9223372036854775808"),
            (r#""%i" % -3.9"#, r#""-3""#),
            (r#""%d" % -0.0"#, r#""0""#),
        ];
        for (expr, want) in cases {
            assert_eval(&format!("repr({expr})"), json!(want));
        }
    }

    #[test]
    fn interpolation_and_shift_errors_carry_go_messages() {
        let cases = [
            (
                r#""%c" % -1"#,
                "%c format requires a valid Unicode code point, got -1",
            ),
            (
                r#""%c" % 1.5"#,
                "%c format requires int or single-character string, not float",
            ),
            (
                r#""%d" % float("inf")"#,
                "%d format requires integer: cannot convert float infinity to integer",
            ),
            (
                r#""%d" % None"#,
                "%d format requires integer: cannot convert NoneType to int",
            ),
            (r#""%e" % "x""#, "%e format requires float, not string"),
            (r#""%(a)s" % [1]"#, "format requires a mapping"),
            (r#""%(b)s" % {"a": 1}"#, "key not found: b"),
            (r#""%(a" % {"a": 1}"#, "incomplete format key"),
            (r#""ab" % 1"#, "too many arguments for format string"),
            (
                r#""%s %s" % [1, 2]"#,
                "not enough arguments for format string",
            ),
            (r#""%é" % 1"#, "unknown conversion %Ã"),
            ("1 << (1 << 40)", "1099511627776 out of range"),
            ("1 << 512", "shift count too large: 512"),
            ("1 << -1", "negative shift count: -1"),
        ];
        for (expr, message) in cases {
            assert_fails(&format!("x = {expr}\n"), message);
        }
        assert_eval(r#""ab" % {"a": 1}"#, json!("ab"));
        assert_eval(r#""%(a)%" % {"a": 1}"#, json!("%"));
        assert_eval("1 << 511 == 2 * (1 << 510)", json!(true));
    }

    #[test]
    fn augmented_assignments_reach_the_redirections() {
        let dxr = run("def f():\n    s = \"%s-%d\"\n    s %= (\"a\", 1)\n    n = 4\n    n <<= 30\n    return [s, n]\ndxr[\"v\"] = f()\n")
            .expect("the script runs");
        let v = function_sdk_rust::resource::struct_to_json(&dxr);
        assert_eq!(v["v"], json!(["a-1", 4_294_967_296_i64]));
    }

    #[test]
    fn attribute_dicts_render_and_interpolate_as_dicts() {
        let dxr = run(
            "dxr[\"a\"] = 1.5e7\ndxr[\"s\"] = [repr(dxr), \"%(a)s\" % dxr, str(struct(d = dxr))]\n",
        )
        .expect("the script runs");
        let v = function_sdk_rust::resource::struct_to_json(&dxr);
        assert_eq!(
            v["s"],
            json!([
                r#"{"a": 1.5e+07}"#,
                "1.5e+07",
                r#"struct(d = {"a": 1.5e+07})"#
            ])
        );
    }

    #[test]
    fn containers_that_hold_themselves_render_with_an_ellipsis() {
        let dxr = run("l = [1]\nl.append(l)\nd = {}\nd[\"k\"] = d\ndxr[\"v\"] = [repr(l), repr(d), str([d, l])]\n")
            .expect("the script runs");
        let v = function_sdk_rust::resource::struct_to_json(&dxr);
        assert_eq!(
            v["v"],
            json!([
                "[1, [...]]",
                r#"{"k": {...}}"#,
                r#"[{"k": {...}}, [1, [...]]]"#
            ])
        );
    }

    #[test]
    fn deep_nesting_does_not_recurse_on_the_native_stack() {
        let dxr = run("def f():\n    l = []\n    for i in range(20000):\n        l = [l]\n    return repr(l)\ns = f()\ndxr[\"v\"] = [len(s), s[:3]]\n")
            .expect("the script runs");
        let v = function_sdk_rust::resource::struct_to_json(&dxr);
        assert_eq!(v["v"], json!([40002, "[[["]));
    }

    #[test]
    fn text_past_the_memory_limit_is_an_error() {
        use crate::limits::Limits;
        use crate::runner::{Outcome, Runtime};
        use crate::testing::run_script;

        let runtime = Runtime::new(
            Limits {
                max_heap_bytes: 16 << 20,
                ..Limits::default()
            },
            4,
        );
        let big = "s = \"x\" * (1 << 20)\nl = [s] * 40\n";
        let cases = [
            (
                "x = str(l)",
                "str: the text would exceed the script's memory budget (16 MiB)",
            ),
            ("x = repr([l])", "repr: the text would exceed"),
            (
                "x = \"%s\" * 40 % tuple(l)",
                "string interpolation: the text would exceed",
            ),
            ("print(l)", "print: the text would exceed"),
            ("fail(l)", "fail: the text would exceed"),
        ];
        for (line, message) in cases {
            let source = format!("{big}{line}\n");
            let run = run_script(&runtime, &source, &crate::loader::Sources::default());
            let Outcome::Failed(e) = run.outcome else {
                panic!("{line}: expected an error");
            };
            assert!(e.to_string().contains(message), "{line}: {e}");
        }
    }

    #[test]
    fn float_text_follows_go_for_every_conversion() {
        let cases = [
            (1.5, b'g', "1.5"),
            (1.0, b'G', "1.0"),
            (1e-10, b'G', "1E-10"),
            (1e6, b'g', "1e+06"),
            (1.5, b'e', "1.500000e+00"),
            (1.5, b'E', "1.500000E+00"),
            (1e-300, b'e', "1.000000e-300"),
            (1.5, b'f', "1.500000"),
            (1.5, b'F', "%F"),
            (f64::INFINITY, b'F', "+inf"),
            (f64::NEG_INFINITY, b'e', "-inf"),
            (f64::NAN, b'g', "nan"),
        ];
        for (f, conv, want) in cases {
            assert_eq!(float_text(f, conv), want, "{f} %{}", char::from(conv));
        }
    }

    /// `str`, `repr`, `%` and number text give, for each expression of
    /// `tests/compat/text.txt`, what go.starlark.net gave (recorded by
    /// `tools/gostarlark`): the same repr, or an error with the same
    /// message.
    #[test]
    fn text_matches_the_recorded_go_results() {
        let (total, wrong) = crate::testing::replay_go_vectors("text.txt");
        assert!(
            wrong.is_empty(),
            "{} of {total} expressions differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}
