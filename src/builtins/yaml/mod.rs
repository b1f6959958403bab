//! The `yaml` module: `encode`, `decode` and `decode_stream`, byte for byte
//! as the reference, which goes through sigs.k8s.io/yaml over go-yaml v2:
//!
//! - `encode` turns the value into JSON, reads that JSON back with YAML 1.1
//!   scalar resolution and writes it with go-yaml's emitter (a port of
//!   libyaml's). The emitter is ported here: its scalar-style choices,
//!   quoting, line wrapping at 80 columns and key order decide the text.
//! - `decode` reads the first document with YAML 1.1 resolution (go-yaml
//!   v2's), turns it into JSON (keys stringified and sorted, Go's number
//!   text) and decodes that JSON as `json.decode` does.

use std::collections::HashMap;
use std::fmt::Write as _;

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::dict::DictRef;
use starlark::values::float::StarlarkFloat;
use starlark::values::list::{AllocList, ListRef};
use starlark::values::tuple::{TupleRef, UnpackTuple};
use starlark::values::{Heap, Value, ValueLike};

use crate::builtins::json::{
    GoArgs, MAX_DEPTH, decode_value, dict_like_entries, go_type, quote_json_string, want_string,
};
use crate::gofmt::format_g;

mod parse;

use parse::{YNode, parse_first_document};

/// Registers the `yaml` module.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    crate::values::module::register(builder, "yaml", yaml_members, None);
}

/// Most documents `decode_stream` accepts.
const MAX_STREAM_DOCUMENTS: usize = 256;

// ---------------------------------------------------------------------------
// Go's number text.

/// Go's `encoding/json` text of a finite float: fixed notation with the
/// shortest digits, or exponent notation (`1e-7`, `1e+21`) below 1e-6 or
/// from 1e21 on.
pub(crate) fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let (negative, digits, exp) = crate::gofmt::shortest_digits(f);
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if !(1e-6..1e21).contains(&abs) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let magnitude = exp.unsigned_abs();
        if magnitude < 10 && exp >= 0 {
            out.push('0');
        }
        out.push_str(&magnitude.to_string());
        return out;
    }
    if exp >= 0 {
        let int_len = usize::try_from(exp).unwrap_or(0) + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', int_len - digits.len()));
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    } else {
        out.push_str("0.");
        out.extend(std::iter::repeat_n(
            '0',
            usize::try_from(-exp - 1).unwrap_or(0),
        ));
        out.push_str(&digits);
    }
    out
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, which sigs.k8s.io/yaml uses
/// for float map keys, with go-yaml's names for the non-finite values.
fn format_g32(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.to_owned();
    }
    #[allow(clippy::cast_possible_truncation)]
    let x = f as f32;
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let (negative, digits, exp) = crate::gofmt::shortest_digits_f32(x);
    crate::gofmt::layout_g(negative, &digits, exp)
}

// ---------------------------------------------------------------------------
// YAML 1.1 scalar resolution (go-yaml v2's `resolve`).

/// What a plain scalar means under go-yaml v2's YAML 1.1 rules.
#[derive(Debug, Clone, PartialEq)]
enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str,
    /// Looks like a timestamp; decoded as the original text.
    Timestamp,
}

const STR_TAG: &str = "tag:yaml.org,2002:str";
const BOOL_TAG: &str = "tag:yaml.org,2002:bool";
const INT_TAG: &str = "tag:yaml.org,2002:int";
const FLOAT_TAG: &str = "tag:yaml.org,2002:float";
const NULL_TAG: &str = "tag:yaml.org,2002:null";
const TIMESTAMP_TAG: &str = "tag:yaml.org,2002:timestamp";
const BINARY_TAG: &str = "tag:yaml.org,2002:binary";
const MERGE_TAG: &str = "tag:yaml.org,2002:merge";

fn resolved_tag(r: &Resolved) -> &'static str {
    match r {
        Resolved::Null => NULL_TAG,
        Resolved::Bool(_) => BOOL_TAG,
        Resolved::Int(_) | Resolved::Uint(_) => INT_TAG,
        Resolved::Float(_) => FLOAT_TAG,
        Resolved::Str => STR_TAG,
        Resolved::Timestamp => TIMESTAMP_TAG,
    }
}

fn short_tag(tag: &str) -> String {
    match tag.strip_prefix("tag:yaml.org,2002:") {
        Some(rest) => format!("!!{rest}"),
        None => tag.to_owned(),
    }
}

/// The YAML 1.1 words go-yaml v2 knows.
fn resolve_word(s: &str) -> Option<Resolved> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Resolved::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Resolved::Bool(false)
        }
        "" | "~" | "null" | "Null" | "NULL" => Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Resolved::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Resolved::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// go-yaml v2's `resolve("", s)` for an untagged plain scalar.
fn resolve_plain(s: &str) -> Resolved {
    resolve(s, true)
}

/// go-yaml v2's `resolve`, which reads timestamps only in untagged plain
/// scalars and ones tagged `!!timestamp`.
fn resolve(s: &str, timestamps: bool) -> Resolved {
    let hint = match s.as_bytes().first() {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        Some(_) => return Resolved::Str,
    };
    if let Some(r) = resolve_word(s) {
        return r;
    }
    match hint {
        b'.' => {
            if let Some(f) = go_parse_float(s) {
                return Resolved::Float(f);
            }
        }
        b'D' | b'S' => {
            if timestamps && is_timestamp(s) {
                return Resolved::Timestamp;
            }
            let plain = s.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return Resolved::Int(i);
            }
            if let Some(u) = go_parse_uint(&plain) {
                return Resolved::Uint(u);
            }
            if is_yaml_style_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return Resolved::Float(f);
            }
            if let Some(bin) = plain.strip_prefix("0b") {
                if let Some(i) = parse_radix_i64(bin, 2) {
                    return Resolved::Int(i);
                }
                if let Some(u) = parse_radix_u64(bin, 2) {
                    return Resolved::Uint(u);
                }
            } else if let Some(bin) = plain.strip_prefix("-0b")
                && let Some(i) = parse_radix_i64(&format!("-{bin}"), 2)
            {
                return Resolved::Int(i);
            }
        }
        _ => {}
    }
    Resolved::Str
}

fn parse_radix_u64(s: &str, radix: u32) -> Option<u64> {
    if s.is_empty() || s.starts_with(['+', '-']) {
        return None;
    }
    u64::from_str_radix(s, radix).ok()
}

fn parse_radix_i64(s: &str, radix: u32) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = parse_radix_u64(digits, radix)?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
            .or((magnitude == 1 << 63).then_some(i64::MIN))
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` (no underscores reach it here).
fn go_parse_uint(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    if b[0] == b'0' {
        if b.len() >= 3 {
            match b[1].to_ascii_lowercase() {
                b'b' => return parse_radix_u64(&s[2..], 2),
                b'o' => return parse_radix_u64(&s[2..], 8),
                b'x' => return parse_radix_u64(&s[2..], 16),
                _ => {}
            }
        }
        let rest = &s[1..];
        return if rest.is_empty() {
            Some(0)
        } else {
            parse_radix_u64(rest, 8)
        };
    }
    parse_radix_u64(s, 10)
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = go_parse_uint(rest)?;
    if negative {
        if magnitude == 1 << 63 {
            return Some(i64::MIN);
        }
        i64::try_from(magnitude).ok().map(|m| -m)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// go-yaml's `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` for decimal text (underscores between
/// digits allowed, as Go allows them); `None` on a syntax error or an
/// overflow.
fn go_parse_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let mut saw_digits = false;
    let mut saw_dot = false;
    let mut underscores = false;
    while i < b.len() {
        match b[i] {
            b'_' => underscores = true,
            b'.' if !saw_dot => saw_dot = true,
            b'0'..=b'9' => saw_digits = true,
            _ => break,
        }
        i += 1;
    }
    if !saw_digits {
        return None;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        i += 1;
        if i < b.len() && matches!(b[i], b'+' | b'-') {
            i += 1;
        }
        if i >= b.len() || !b[i].is_ascii_digit() {
            return None;
        }
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            underscores |= b[i] == b'_';
            i += 1;
        }
    }
    if i != b.len() || (underscores && !underscore_ok(s)) {
        return None;
    }
    // Normalise to what Rust's parser takes: no `_`, no `+`, digits on
    // both sides of the point.
    let mut text: String = s.chars().filter(|c| *c != '_').collect();
    if let Some(rest) = text.strip_prefix('+') {
        text = rest.to_owned();
    }
    if let Some(p) = text.find('.') {
        let after = text.as_bytes().get(p + 1).copied();
        if !after.is_some_and(|c| c.is_ascii_digit()) {
            text.insert(p + 1, '0');
        }
        if !text[..p].ends_with(|c: char| c.is_ascii_digit()) {
            text.insert(p, '0');
        }
    }
    let f: f64 = text.parse().ok()?;
    f.is_finite().then_some(f)
}

/// Go's `underscoreOK` for decimal text.
fn underscore_ok(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mut saw = b'^';
    for &c in s.as_bytes() {
        if c.is_ascii_digit() {
            saw = b'0';
            continue;
        }
        if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
            continue;
        }
        if saw == b'_' {
            return false;
        }
        saw = b'!';
    }
    saw != b'_'
}

/// go-yaml's `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&c) = b.first() else {
        return false;
    };
    if !(c == b'+' || c == b'-' || c.is_ascii_digit()) || !s.contains(':') {
        return false;
    }
    let mut i = usize::from(c == b'+' || c == b'-');
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        // `[0-5]?[0-9]`: one or two digits, the first of two at most 5.
        match (b.get(i), b.get(i + 1)) {
            (Some(d1), Some(d2)) if (b'0'..=b'5').contains(d1) && d2.is_ascii_digit() => i += 2,
            (Some(d1), _) if d1.is_ascii_digit() => i += 1,
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// One or two digits at `*i`, as Go's `time.Parse` reads non-padded fields.
fn num(b: &[u8], i: &mut usize) -> Option<u32> {
    let d1 = *b.get(*i)?;
    if !d1.is_ascii_digit() {
        return None;
    }
    *i += 1;
    let mut n = u32::from(d1 - b'0');
    if let Some(&d2) = b.get(*i)
        && d2.is_ascii_digit()
    {
        *i += 1;
        n = n * 10 + u32::from(d2 - b'0');
    }
    Some(n)
}

/// Whether Go's `time.Parse` accepts `s` in one of go-yaml v2's timestamp
/// layouts: `2006-1-2T15:4:5.999999999Z07:00` (also with `t`),
/// `2006-1-2 15:4:5.999999999` and `2006-1-2`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let year_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if year_digits != 4 || b.get(4) != Some(&b'-') {
        return false;
    }
    let parse = || -> Option<bool> {
        let year: u32 = s[..4].parse().ok()?;
        let mut i = 5;
        let month = num(b, &mut i)?;
        if !(1..=12).contains(&month) || b.get(i) != Some(&b'-') {
            return None;
        }
        i += 1;
        let day = num(b, &mut i)?;
        let leap =
            year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
        let days = match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        if !(1..=days).contains(&day) {
            return None;
        }
        if i == b.len() {
            return Some(true);
        }
        // The time: `T`, `t`, or spaces (then no zone).
        let zoned = match b[i] {
            b'T' | b't' => {
                i += 1;
                true
            }
            b' ' => {
                while b.get(i) == Some(&b' ') {
                    i += 1;
                }
                false
            }
            _ => return None,
        };
        let hour = num(b, &mut i)?;
        if hour >= 24 || b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        let minute = num(b, &mut i)?;
        if minute >= 60 || b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        let second = num(b, &mut i)?;
        if second >= 60 {
            return None;
        }
        if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        if zoned {
            match b.get(i) {
                Some(b'Z') => i += 1,
                Some(b'+' | b'-') => {
                    let zone = b.get(i..i + 6)?;
                    if zone[3] != b':'
                        || !zone[1].is_ascii_digit()
                        || !zone[2].is_ascii_digit()
                        || !zone[4].is_ascii_digit()
                        || !zone[5].is_ascii_digit()
                    {
                        return None;
                    }
                    let hh = u32::from(zone[1] - b'0') * 10 + u32::from(zone[2] - b'0');
                    let mm = u32::from(zone[4] - b'0') * 10 + u32::from(zone[5] - b'0');
                    if hh > 24 || mm > 60 {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            }
        }
        Some(i == b.len())
    };
    parse() == Some(true)
}

// ---------------------------------------------------------------------------
// yaml.encode: Starlark value → tree.

/// A value on its way to YAML, as the JSON the reference goes through.
enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

fn to_node<'v>(v: Value<'v>, heap: Heap<'v>, depth: usize) -> Result<Node, String> {
    if depth > MAX_DEPTH {
        return Err(format!("nesting depth exceeds {MAX_DEPTH}"));
    }
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

/// The text go-yaml writes for a float that came through JSON: integral
/// values that fit 64 bits as integers, others in `%g` form.
fn yaml_float_text(f: f64) -> String {
    let json = go_json_float(f);
    if let Ok(i) = json.parse::<i64>() {
        return i.to_string();
    }
    if let Ok(u) = json.parse::<u64>() {
        return u.to_string();
    }
    format_g(f)
}

// ---------------------------------------------------------------------------
// go-yaml v2's key order.

/// go-yaml v2's `keyList.Less` for two string keys: natural order.
fn natural_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let is_letter = |c: char| c.is_alphabetic();
    let is_digit = |c: char| c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric());
    let digit_value = |c: char| i64::from(u32::from(c)) - i64::from(u32::from('0'));
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = is_letter(ar[i]);
        let bl = is_letter(br[i]);
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && is_digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && is_digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(digit_value(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && is_digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(digit_value(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// A stable merge sort by `less` that never panics, whatever `less` does.
fn sort_by_less<T>(items: Vec<T>, less: &impl Fn(&T, &T) -> bool) -> Vec<T> {
    if items.len() <= 1 {
        return items;
    }
    let mut left = items;
    let right = left.split_off(left.len() / 2);
    let left = sort_by_less(left, less);
    let right = sort_by_less(right, less);
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut l = left.into_iter().peekable();
    let mut r = right.into_iter().peekable();
    loop {
        match (l.peek(), r.peek()) {
            (Some(a), Some(b)) => {
                if less(b, a) {
                    out.extend(r.next());
                } else {
                    out.extend(l.next());
                }
            }
            (Some(_), None) => out.extend(l.by_ref()),
            (None, Some(_)) => out.extend(r.by_ref()),
            (None, None) => break,
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The emitter: go-yaml v2's port of libyaml's, for the events its encoder
// produces (block collections, implicit plain/quoted/literal scalars).

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// libyaml's scalar analysis (its flags, as it keeps them).
#[derive(Clone, Copy)]
#[allow(clippy::struct_excessive_bools)]
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn byte_at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn width(c: u8) -> usize {
    if c & 0x80 == 0 {
        1
    } else if c & 0xE0 == 0xC0 {
        2
    } else if c & 0xF0 == 0xE0 {
        3
    } else if c & 0xF8 == 0xF0 {
        4
    } else {
        1
    }
}

fn is_printable(b: &[u8], i: usize) -> bool {
    let c = byte_at(b, i);
    let c1 = byte_at(b, i + 1);
    let c2 = byte_at(b, i + 2);
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (c == 0xC2 && c1 >= 0xA0)
        || (c > 0xC2 && c < 0xED)
        || (c == 0xED && c1 < 0xA0)
        || c == 0xEE
        || (c == 0xEF && !(c1 == 0xBB && c2 == 0xBF) && !(c1 == 0xBF && (c2 == 0xBE || c2 == 0xBF)))
}

fn is_space(b: &[u8], i: usize) -> bool {
    byte_at(b, i) == b' '
}

fn is_blank(b: &[u8], i: usize) -> bool {
    matches!(byte_at(b, i), b' ' | b'\t')
}

fn is_break(b: &[u8], i: usize) -> bool {
    let c = byte_at(b, i);
    let c1 = byte_at(b, i + 1);
    let c2 = byte_at(b, i + 2);
    c == b'\r'
        || c == b'\n'
        || (c == 0xC2 && c1 == 0x85)
        || (c == 0xE2 && c1 == 0x80 && (c2 == 0xA8 || c2 == 0xA9))
}

fn is_blankz(b: &[u8], i: usize) -> bool {
    is_blank(b, i) || is_break(b, i) || byte_at(b, i) == 0
}

fn analyze_scalar(value: &str) -> Analysis {
    let b = value.as_bytes();
    if b.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    // libyaml also tracks flow indicators; they only matter inside flow
    // collections, which hold no scalars here.
    let mut block_indicators = false;
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;

    if b.starts_with(b"---") || b.starts_with(b"...") {
        block_indicators = true;
    }
    let mut preceded_by_whitespace = true;
    let mut i = 0;
    while i < b.len() {
        let w = width(b[i]);
        let followed_by_whitespace = i + w >= b.len() || is_blank(b, i + w);
        let indicator = if i == 0 {
            match b[i] {
                b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>'
                | b'\'' | b'"' | b'%' | b'@' | b'`' => true,
                b'?' | b':' | b'-' => followed_by_whitespace,
                _ => false,
            }
        } else {
            match b[i] {
                b':' => followed_by_whitespace,
                b'#' => preceded_by_whitespace,
                _ => false,
            }
        };
        block_indicators |= indicator;
        if !is_printable(b, i) {
            special_characters = true;
        }
        if is_space(b, i) {
            if i == 0 {
                leading_space = true;
            }
            if i + w == b.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(b, i) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + w == b.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(b, i);
        i += w;
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks {
        a.block_plain_allowed = false;
    }
    if block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// A scalar as go-yaml's encoder hands it to the emitter.
struct Scalar {
    value: String,
    style: Style,
}

/// go-yaml's `stringv`: the style it asks for.
fn string_scalar(s: &str) -> Scalar {
    let can_use_plain = resolve_plain(s) == Resolved::Str && !is_base60_float(s);
    let style = if s.contains('\n') {
        Style::Literal
    } else if can_use_plain {
        Style::Plain
    } else {
        Style::DoubleQuoted
    };
    Scalar {
        value: s.to_owned(),
        style,
    }
}

fn node_scalar(n: &Node) -> Option<Scalar> {
    let plain = |value: String| Scalar {
        value,
        style: Style::Plain,
    };
    Some(match n {
        Node::Null => plain("null".to_owned()),
        Node::Bool(b) => plain(b.to_string()),
        Node::Int(i) => plain(i.to_string()),
        Node::Float(f) => plain(yaml_float_text(*f)),
        Node::Str(s) => string_scalar(s),
        Node::Seq(_) | Node::Map(_) => return None,
    })
}

const BEST_INDENT: i64 = 2;
const BEST_WIDTH: usize = 80;

/// libyaml's emitter state, flags included.
#[allow(clippy::struct_excessive_bools)]
struct Emitter {
    out: String,
    column: usize,
    indent: i64,
    indents: Vec<i64>,
    whitespace: bool,
    indention: bool,
    mapping_context: bool,
    simple_key_context: bool,
}

impl Emitter {
    fn new() -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
            mapping_context: false,
            simple_key_context: false,
        }
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Copies the character at `*i` of `b` and advances.
    fn write(&mut self, b: &[u8], i: &mut usize) {
        let w = width(b[*i]).min(b.len() - *i);
        self.out
            .push_str(std::str::from_utf8(&b[*i..*i + w]).unwrap_or("\u{fffd}"));
        self.column += 1;
        *i += w;
    }

    fn write_all(&mut self, s: &str) {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            self.write(b, &mut i);
        }
    }

    fn write_break(&mut self, b: &[u8], i: &mut usize) {
        if b[*i] == b'\n' {
            self.put_break();
            *i += 1;
        } else {
            self.write(b, i);
            self.column = 0;
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent.max(0)).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        self.write_all(indicator);
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn emit_node(&mut self, n: &Node, mapping: bool, simple_key: bool) {
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;
        match n {
            Node::Seq(items) if items.is_empty() => self.emit_empty("[", "]"),
            Node::Map(entries) if entries.is_empty() => self.emit_empty("{", "}"),
            Node::Seq(items) => self.emit_block_sequence(items),
            Node::Map(entries) => self.emit_block_mapping(entries),
            scalar => {
                if let Some(s) = node_scalar(scalar) {
                    self.emit_scalar(&s, analyze_scalar(&s.value));
                }
            }
        }
    }

    fn emit_empty(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.pop_indent();
        self.write_indicator(close, false, false, false);
    }

    fn emit_block_sequence(&mut self, items: &[Node]) {
        let indentless = self.mapping_context && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.emit_node(item, false, false);
        }
        self.pop_indent();
    }

    fn emit_block_mapping(&mut self, entries: &[(String, Node)]) {
        self.increase_indent(false, false);
        let sorted = sort_by_less(
            entries.iter().collect(),
            &|a: &&(String, Node), b: &&(String, Node)| natural_less(&a.0, &b.0),
        );
        for (key, value) in sorted {
            self.write_indent();
            let key_scalar = string_scalar(key);
            let analysis = analyze_scalar(&key_scalar.value);
            let simple = !analysis.multiline && key_scalar.value.len() <= 128;
            if simple {
                self.mapping_context = true;
                self.simple_key_context = true;
                self.emit_scalar(&key_scalar, analysis);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.mapping_context = true;
                self.simple_key_context = false;
                self.emit_scalar(&key_scalar, analysis);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.emit_node(value, true, false);
        }
        self.pop_indent();
    }

    fn select_style(&self, s: &Scalar, a: Analysis) -> Style {
        let mut style = s.style;
        if self.simple_key_context && a.multiline {
            style = Style::DoubleQuoted;
        }
        // Only empty collections are written in flow style, so every
        // scalar is in block context (libyaml's `flow_level == 0`).
        if style == Style::Plain {
            if !a.block_plain_allowed {
                style = Style::SingleQuoted;
            }
            if s.value.is_empty() && self.simple_key_context {
                style = Style::SingleQuoted;
            }
        }
        if style == Style::SingleQuoted && !a.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!a.block_allowed || self.simple_key_context) {
            style = Style::DoubleQuoted;
        }
        style
    }

    fn emit_scalar(&mut self, s: &Scalar, a: Analysis) {
        let style = self.select_style(s, a);
        self.increase_indent(true, false);
        let allow_breaks = !self.simple_key_context;
        let value = s.value.as_bytes();
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, b: &[u8], allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < b.len() {
            if is_space(b, i) {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !is_space(b, i + 1) {
                    self.write_indent();
                    i += width(b[i]);
                } else {
                    self.write(b, &mut i);
                }
                spaces = true;
            } else if is_break(b, i) {
                if !breaks && b[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(b, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(b, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, b: &[u8], allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < b.len() {
            if is_space(b, i) {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < b.len() - 1
                    && !is_space(b, i + 1)
                {
                    self.write_indent();
                    i += width(b[i]);
                } else {
                    self.write(b, &mut i);
                }
                spaces = true;
            } else if is_break(b, i) {
                if !breaks && b[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(b, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if b[i] == b'\'' {
                    self.put('\'');
                }
                self.write(b, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, b: &[u8], allow_breaks: bool) {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        // libyaml's `is_bom` looks at the start of the value, whatever the
        // position: a value starting with U+FEFF is escaped throughout.
        let bom = b.starts_with(&[0xEF, 0xBB, 0xBF]);
        let mut spaces = false;
        self.write_indicator("\"", true, false, false);
        let mut i = 0;
        while i < b.len() {
            if !is_printable(b, i) || bom || is_break(b, i) || b[i] == b'"' || b[i] == b'\\' {
                let w = width(b[i]).min(b.len() - i);
                let v = std::str::from_utf8(&b[i..i + w])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .map_or(0xFFFD, u32::from);
                i += w;
                self.put('\\');
                match v {
                    0x00 => self.put('0'),
                    0x07 => self.put('a'),
                    0x08 => self.put('b'),
                    0x09 => self.put('t'),
                    0x0A => self.put('n'),
                    0x0B => self.put('v'),
                    0x0C => self.put('f'),
                    0x0D => self.put('r'),
                    0x1B => self.put('e'),
                    0x22 => self.put('"'),
                    0x5C => self.put('\\'),
                    0x85 => self.put('N'),
                    0xA0 => self.put('_'),
                    0x2028 => self.put('L'),
                    0x2029 => self.put('P'),
                    _ => {
                        let (letter, digits) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(letter);
                        for k in (0..digits).rev() {
                            self.put(char::from(HEX[((v >> (k * 4)) & 0xF) as usize]));
                        }
                    }
                }
                spaces = false;
            } else if is_space(b, i) {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i < b.len() - 1 {
                    self.write_indent();
                    if is_space(b, i + 1) {
                        self.put('\\');
                    }
                    i += width(b[i]);
                } else {
                    self.write(b, &mut i);
                }
                spaces = true;
            } else {
                self.write(b, &mut i);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_block_scalar_hints(&mut self, b: &[u8]) {
        if is_space(b, 0) || is_break(b, 0) {
            self.write_indicator("2", false, false, false);
        }
        let mut chomp = None;
        if b.is_empty() {
            chomp = Some("-");
        } else {
            let mut i = b.len() - 1;
            while i > 0 && b[i] & 0xC0 == 0x80 {
                i -= 1;
            }
            if !is_break(b, i) {
                chomp = Some("-");
            } else if i == 0 {
                chomp = Some("+");
            } else {
                i -= 1;
                while i > 0 && b[i] & 0xC0 == 0x80 {
                    i -= 1;
                }
                if is_break(b, i) {
                    chomp = Some("+");
                }
            }
        }
        if let Some(c) = chomp {
            self.write_indicator(c, false, false, false);
        }
    }

    fn write_literal(&mut self, b: &[u8]) {
        self.write_indicator("|", true, false, false);
        self.write_block_scalar_hints(b);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < b.len() {
            if is_break(b, i) {
                self.write_break(b, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(b, &mut i);
                self.indention = false;
                breaks = false;
            }
        }
    }

    /// The whole document: the root node, then the document end's indent.
    fn document(mut self, root: &Node) -> String {
        self.emit_node(root, false, false);
        self.write_indent();
        self.out
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
fn json_text_len(s: &str) -> usize {
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
pub(crate) fn encode_yaml<'v>(v: Value<'v>, heap: Heap<'v>) -> Result<String, String> {
    // The reference strips every trailing newline, even those of a `|+`
    // block's content.
    emit_yaml(v, heap).map(|text| text.trim_end_matches('\n').to_owned())
}

/// The emitter's whole text for `v`, final newlines included.
fn emit_yaml<'v>(v: Value<'v>, heap: Heap<'v>) -> Result<String, String> {
    let node = to_node(v, heap, 0)?;
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

// ---------------------------------------------------------------------------
// yaml.decode: node tree → Go values (go-yaml v2's decoder into interface{}).

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
        GoValue::Str(s) => crate::builtins::json::go_quote(&go_lossy(s)),
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
/// error is the message after `yaml.decode: `.
pub(crate) fn yaml_to_json(source: &str) -> Result<String, String> {
    let Some((nodes, root)) = parse_first_document(source)? else {
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

/// `yaml.decode` of `s` into new Starlark values.
fn decode_yaml<'v>(s: &str, heap: Heap<'v>) -> anyhow::Result<Value<'v>> {
    let json = yaml_to_json(s).map_err(|e| anyhow!("yaml.decode: {e}"))?;
    decode_value(&json, heap).map_err(|e| anyhow!("yaml.decode: json.decode: {e}"))
}

/// The documents `decode_stream` splits `s` into: lines that are `---`
/// (trailing spaces and tabs ignored) separate them; empty ones are dropped.
fn split_stream(s: &str) -> Vec<String> {
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

// ---------------------------------------------------------------------------
// The module.

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
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let call = GoArgs::new("yaml.decode", args, kwargs);
        let s = string_param(&call)?;
        decode_yaml(s, heap)
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
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
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
            docs.push(decode_yaml(chunk, heap)?);
        }
        Ok(heap.alloc(AllocList(docs)))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;
    use starlark::environment::Module;
    use starlark::values::dict::AllocDict;
    use starlark::values::list::AllocList;
    use starlark::values::{Heap, Value};

    use super::{emit_yaml, encode_yaml, natural_less, yaml_to_json};
    use crate::builtins::json::decode_value;
    use crate::testing::{assert_eval, eval, literal, run};

    /// The string `expr` evaluates to.
    #[track_caller]
    fn text(expr: &str) -> String {
        match eval(expr) {
            Ok(serde_json::Value::String(s)) => s,
            other => panic!("{expr}: {other:?}"),
        }
    }

    /// `yaml.encode(lit)`.
    #[track_caller]
    fn enc(lit: &str) -> String {
        text(&format!("yaml.encode({lit})"))
    }

    /// `json.encode(yaml.decode(src))`, the decoded value as JSON text.
    #[track_caller]
    fn dec(src: &str) -> String {
        text(&format!("json.encode(yaml.decode({}))", literal(src)))
    }

    /// Asserts that evaluating `expr` fails with exactly `message`.
    #[track_caller]
    fn fails(expr: &str, message: &str) {
        match run(&format!("x = {expr}\n")) {
            Ok(_) => panic!("{expr}: expected the error {message:?}"),
            Err(e) => assert!(e.ends_with(&format!("Error: {message}")), "{expr}: {e}"),
        }
    }

    #[test]
    fn yaml_is_a_go_style_module() {
        assert_eval("type(yaml)", json!("module"));
        assert_eval("str(yaml)", json!("<module \"yaml\">"));
        assert_eval("dir(yaml)", json!(["decode", "decode_stream", "encode"]));
    }

    #[test]
    fn encode_writes_the_documented_examples() {
        assert_eq!(enc("None"), "null");
        assert_eq!(enc("42"), "42");
        assert_eq!(enc("3.14"), "3.14");
        assert_eq!(enc("True"), "true");
        assert_eq!(enc("{}"), "{}");
        assert_eq!(enc("[]"), "[]");
        assert_eq!(enc("[1, 2]"), "- 1\n- 2");
        assert_eq!(
            enc(r#"{"kind": "Secret", "apiVersion": "v1", "data": {"k": "v"}}"#),
            "apiVersion: v1\ndata:\n  k: v\nkind: Secret"
        );
    }

    #[test]
    fn encode_writes_block_style_with_unindented_sequences_under_keys() {
        assert_eq!(
            enc(
                r#"{"a": [1, 2], "b": [{"x": 1, "y": 2}, {"z": [3]}], "c": [[1, 2], []], "d": {}}"#
            ),
            "a:\n- 1\n- 2\nb:\n- x: 1\n  \"y\": 2\n- z:\n  - 3\nc:\n- - 1\n  - 2\n- []\nd: {}"
        );
        assert_eq!(
            enc(r#"[[1, [2, 3]], {"a": {"b": 1}}, [], {}]"#),
            "- - 1\n  - - 2\n    - 3\n- a:\n    b: 1\n- []\n- {}"
        );
        assert_eq!(enc(r#"[{"a": [{"b": []}]}]"#), "- a:\n  - b: []");
        assert_eq!(enc(r#"(1, "a")"#), "- 1\n- a");
    }

    #[test]
    fn encode_quotes_strings_that_would_read_back_as_something_else() {
        for (s, want) in [
            ("", r#""""#),
            ("true", r#""true""#),
            ("yes", r#""yes""#),
            ("on", r#""on""#),
            ("y", r#""y""#),
            ("Off", r#""Off""#),
            ("null", r#""null""#),
            ("~", r#""~""#),
            ("123", r#""123""#),
            ("1.5", r#""1.5""#),
            ("0x1F", r#""0x1F""#),
            ("017", r#""017""#),
            ("08", r#""08""#),
            ("1e3", r#""1e3""#),
            (".5", r#"".5""#),
            ("1_000", r#""1_000""#),
            ("1:20", r#""1:20""#),
            ("2001-12-14", r#""2001-12-14""#),
            ("2001-12-14T21:59:43.10Z", r#""2001-12-14T21:59:43.10Z""#),
            ("2001-12-14 21:59:43.10", r#""2001-12-14 21:59:43.10""#),
            (".nan", r#"".nan""#),
            // Plain, as they read back as strings.
            ("hello", "hello"),
            ("2001-02-30", "2001-02-30"),
            ("2001-13-01", "2001-13-01"),
            ("1e400", "1e400"),
            ("1.2.3", "1.2.3"),
            ("1:60", "1:60"),
            ("<<", "<<"),
            ("a:b", "a:b"),
            ("a#b", "a#b"),
            ("-foo", "-foo"),
            ("?x", "?x"),
            ("it's", "it's"),
            ("é ü 日本語", "é ü 日本語"),
            (":foo", ":foo"),
        ] {
            assert_eq!(enc(&literal(s)), want, "{s:?}");
        }
    }

    #[test]
    fn encode_single_quotes_strings_plain_style_cannot_hold() {
        for (s, want) in [
            ("- foo", "'- foo'"),
            ("? x", "'? x'"),
            ("[a]", "'[a]'"),
            ("{a}", "'{a}'"),
            ("#x", "'#x'"),
            ("&a", "'&a'"),
            ("*a", "'*a'"),
            ("!a", "'!a'"),
            ("|a", "'|a'"),
            (">a", "'>a'"),
            ("'a", "'''a'"),
            ("\"a", "'\"a'"),
            ("%a", "'%a'"),
            ("@a", "'@a'"),
            ("`a", "'`a'"),
            ("a: b", "'a: b'"),
            ("a #b", "'a #b'"),
            (" a", "' a'"),
            ("a ", "'a '"),
            ("---", "'---'"),
            ("'it's'", "'''it''s'''"),
        ] {
            assert_eq!(enc(&literal(s)), want, "{s:?}");
        }
    }

    #[test]
    fn encode_double_quotes_strings_with_control_characters() {
        assert_eq!(enc(r#""a\tb""#), r#""a\tb""#);
        assert_eq!(enc(r#""a\x01b""#), r#""a\x01b""#);
        assert_eq!(enc(r#""a\r\nb""#), r#""a\r\nb""#);
        assert_eq!(enc(r#""\u00a0x""#), "\u{a0}x");
        // libyaml counts four-byte characters as unprintable.
        assert_eq!(enc(r#""é ü 日本語 😀""#), r#""é ü 日本語 \U0001F600""#);
        // libyaml's BOM test looks at the start of the value: all of a
        // value that starts with one is escaped.
        assert_eq!(enc(r#""\ufeffx""#), r#""\uFEFF\x78""#);
        // LS is printable to libyaml, and a line break.
        assert_eq!(enc(r#""x\u2028y""#), "'x\u{2028}  y'");
        assert_eq!(enc(r#""a\\b""#), r"a\b");
    }

    #[test]
    fn encode_writes_multi_line_strings_as_literal_blocks() {
        assert_eq!(enc(r#""a\nb""#), "|-\n  a\n  b");
        assert_eq!(enc(r#"{"k": "a\nb\n"}"#), "k: |\n  a\n  b");
        assert_eq!(enc(r#"{"k": "a\nb\n\n"}"#), "k: |+\n  a\n  b");
        assert_eq!(enc(r#"{"k": ["a\nb", "c"]}"#), "k:\n- |-\n  a\n  b\n- c");
        assert_eq!(enc(r#"{"k": "  leading\nx"}"#), "k: |2-\n    leading\n  x");
        assert_eq!(enc(r#"{"k": "a\n\nb"}"#), "k: |-\n  a\n\n  b");
        // Blocks cannot hold these; double quotes can.
        assert_eq!(enc(r#""a \nb""#), r#""a \nb""#);
        assert_eq!(enc(r#"{"k": "a  \nb"}"#), r#"k: "a  \nb""#);
        assert_eq!(enc(r#"{"a\nb": 1}"#), "? |-\n  a\n  b\n: 1");
    }

    #[test]
    fn encode_wraps_long_strings_near_eighty_columns() {
        let words = r#"" ".join(["lorem ipsum dolor"] * 10)"#;
        assert_eq!(
            enc(&format!(r#"{{"description": {words}}}"#)),
            "description: lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor\n  lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum\n  dolor lorem ipsum dolor"
        );
        assert_eq!(
            enc(&format!(r#"{{"a": {{"b": {{"c": {words}}}}}}}"#)),
            "a:\n  b:\n    c: lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem\n      ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum\n      dolor lorem ipsum dolor"
        );
        assert_eq!(
            enc(&format!(r#"{{"k": "'" + {words}}}"#)),
            "k: '''lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem\n  ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor lorem ipsum dolor\n  lorem ipsum dolor'"
        );
        assert_eq!(
            enc(r#"{"k": "\t" + "  ".join(["lorem ipsum dolor"] * 10)}"#),
            "k: \"\\tlorem ipsum dolor  lorem ipsum dolor  lorem ipsum dolor  lorem ipsum dolor  lorem\n  ipsum dolor  lorem ipsum dolor  lorem ipsum dolor  lorem ipsum dolor  lorem ipsum\n  dolor  lorem ipsum dolor\""
        );
        // No space, no wrap.
        assert_eq!(enc(r#""a" * 100"#), "a".repeat(100));
    }

    #[test]
    fn encode_orders_keys_naturally_and_limits_simple_keys() {
        assert_eq!(
            enc(
                r#"{"a10": 1, "a2": 2, "a1": 3, "B": 4, "b": 5, "_x": 6, "1": 7, "10": 8, "9": 9, "a01": 10, "a0": 12, "-": 13, "Z": 14}"#
            ),
            "'-': 13\n_x: 6\n\"1\": 7\n\"9\": 9\n\"10\": 8\nB: 4\nZ: 14\na0: 12\na1: 3\na01: 10\na2: 2\na10: 1\nb: 5"
        );
        assert_eq!(enc(r#"{"x" * 128: 1}"#), format!("{}: 1", "x".repeat(128)));
        assert_eq!(
            enc(r#"{"x" * 129: {"y": 1}}"#),
            format!("? {}\n: \"y\": 1", "x".repeat(129))
        );
        assert!(natural_less("a2", "a10"));
        assert!(!natural_less("a10", "a2"));
        assert!(natural_less("a", "ab"));
    }

    #[test]
    fn encode_writes_numbers_as_they_come_back_from_json() {
        for (lit, want) in [
            ("2.0", "2"),
            ("0.0", "0"),
            ("-0.0", "0"),
            ("1e-06", "1e-06"),
            ("1e-7", "1e-07"),
            ("1234567.5", "1.2345675e+06"),
            ("123456789.0", "123456789"),
            ("0.1", "0.1"),
            ("1e19", "10000000000000000000"),
            // Go's JSON writes the shortest digits, padded with zeros.
            ("float(1 << 63)", "9223372036854776000"),
            ("-float(1 << 63)", "-9.223372036854776e+18"),
            ("float(1 << 64)", "1.8446744073709552e+19"),
            ("1e20", "1e+20"),
            ("1e21", "1e+21"),
            ("(1 << 63) - 1", "9223372036854775807"),
            ("-(1 << 63)", "-9223372036854775808"),
        ] {
            assert_eq!(enc(lit), want, "{lit}");
        }
    }

    #[test]
    fn encode_reports_unsupported_values() {
        fails(
            r#"yaml.encode(float("nan"))"#,
            "yaml.encode: error marshaling into JSON: json: unsupported value: NaN",
        );
        fails(
            r#"yaml.encode({"b": float("-inf"), "a": [float("inf")]})"#,
            "yaml.encode: error marshaling into JSON: json: unsupported value: +Inf",
        );
        fails(
            "yaml.encode(1 << 63)",
            "yaml.encode: integer overflow: 9223372036854775808",
        );
        fails("yaml.encode(set([1]))", "yaml.encode: unsupported type set");
        fails(
            "yaml.encode(struct(a = 1))",
            "yaml.encode: unsupported type struct",
        );
        fails(
            "yaml.encode(len)",
            "yaml.encode: unsupported type builtin_function_or_method",
        );
        fails(
            "yaml.encode({1: 2})",
            "yaml.encode: dict key is int, want string",
        );
        fails(
            r#"yaml.encode([{"a": set()}])"#,
            "yaml.encode: unsupported type set",
        );
        fails(
            r#"yaml.encode("a\x7fb")"#,
            "yaml.encode: yaml: control characters are not allowed",
        );
    }

    #[test]
    fn encode_binds_one_parameter_named_value() {
        assert_eq!(text("yaml.encode(value = 5)"), "5");
        fails("yaml.encode()", "yaml.encode: missing argument for value");
        fails(
            "yaml.encode(1, 2)",
            "yaml.encode: got 2 arguments, want at most 1",
        );
        fails(
            "yaml.encode(valu = 5)",
            r#"yaml.encode: unexpected keyword argument "valu" (did you mean value?)"#,
        );
    }

    #[test]
    fn encode_writes_resource_dicts_like_plain_dicts() {
        let dxr = run(
            "dxr[\"spec\"] = {\"b\": 1, \"a\": [\"x\"]}\ndxr[\"kind\"] = \"X\"\ns = yaml.encode(dxr)\ndxr.clear()\ndxr[\"out\"] = s\n",
        )
        .unwrap();
        let out = function_sdk_rust::resource::struct_to_json(&dxr)["out"].clone();
        assert_eq!(out, json!("kind: X\nspec:\n  a:\n  - x\n  b: 1"));
        assert_eq!(enc("oxr"), "{}");
    }

    #[test]
    fn encode_reproduces_what_reading_its_json_back_does_to_nel() {
        // The reference's JSON step leaves U+0085 raw, and YAML reads it as
        // a line break inside the quoted string.
        assert_eq!(enc(r#""x\u0085y""#), "x y");
        assert_eq!(enc(r#""x \u0085  y""#), "x y");
        assert_eq!(enc(r#""x\u0085\u0085y""#), "|-\n  x\n  y");
        assert_eq!(enc(r#""\u0085x""#), "' x'");
        fails(
            r#"yaml.encode("x\u0085--- y")"#,
            "yaml.encode: yaml: line 2: found unexpected document indicator",
        );
        fails(
            r#"yaml.encode({"a\u0085b": 1})"#,
            "yaml.encode: yaml: line 1: did not find expected ',' or '}'",
        );
        // Keys whose JSON text is longer than 1024 characters are not simple
        // keys to the YAML reader either.
        assert_eq!(
            enc(r#"{"x" * 1022: 1}"#),
            format!("? {}\n: 1", "x".repeat(1022))
        );
        fails(
            r#"yaml.encode({"a": {"x" * 1023: 1}})"#,
            "yaml.encode: yaml: did not find expected ',' or '}'",
        );
    }

    #[test]
    fn decode_reads_yaml_1_1_scalars() {
        assert_eq!(dec("b: 1\na: yes\nc: 1.0"), r#"{"a":true,"b":1,"c":1}"#);
        assert_eq!(
            dec(
                "[y, Y, yes, Yes, YES, n, N, no, No, NO, true, True, TRUE, false, False, FALSE, on, On, ON, off, Off, OFF, yEs]"
            ),
            "[true,true,true,true,true,false,false,false,false,false,true,true,true,false,false,false,true,true,true,false,false,false,\"yEs\"]"
        );
        assert_eq!(
            dec("[~, null, Null, NULL, nULL, '', \"\", '~']"),
            r#"[null,null,null,null,"nULL","","","~"]"#
        );
        assert_eq!(
            dec(
                "[1, -1, +1, 1_000, 0x1F, 0o17, 017, 0b101, -0b101, 08, 09.5, 1.0, 2e3, 1e21, 1e20, 1.5, -0.0, .5, -.5, +.5, 1e400, 12345678901234567890, 123456789012345678901234]"
            ),
            "[1,-1,1,1000,31,15,15,5,-5,8,9.5,1,2000,1e+21,100000000000000000000,1.5,0,0.5,-0.5,0.5,\"1e400\",12345678901234567890,1.2345678901234569e+23]"
        );
        assert_eq!(
            dec("[2001-12-14, 2001-12-14T21:59:43.10Z, 1:20, 190:20:30, '123', \"true\"]"),
            r#"["2001-12-14","2001-12-14T21:59:43.10Z","1:20","190:20:30","123","true"]"#
        );
        assert_eq!(text(r#"type(yaml.decode("a: 1.5")["a"])"#), "float");
        assert_eq!(text(r#"type(yaml.decode("a: 1.0")["a"])"#), "int");
    }

    #[test]
    fn decode_sorts_keys_and_stringifies_non_string_ones() {
        assert_eq!(
            text(r#"str(yaml.decode("b: 1\na: 2\nB: 3\n_: 4\n"))"#),
            r#"{"B": 3, "_": 4, "a": 2, "b": 1}"#
        );
        assert_eq!(
            dec("{1: a, 2.5: b, true: c, 0.1: d, 3.14159265358979: e, 1e30: f}"),
            r#"{"0.1":"d","1":"a","1e+30":"f","2.5":"b","3.1415927":"e","true":"c"}"#
        );
        assert_eq!(dec("a: 1\na: 2\n"), r#"{"a":2}"#);
    }

    #[test]
    fn decode_reads_only_the_first_document_and_empty_input_as_none() {
        assert_eq!(dec(""), "null");
        assert_eq!(dec("   \n  "), "null");
        assert_eq!(dec("# just a comment\n"), "null");
        assert_eq!(dec("---\n"), "null");
        assert_eq!(dec("a: 1\n---\nb: 2\n"), r#"{"a":1}"#);
        assert_eq!(dec("a: 1\n---\nb: [\n"), r#"{"a":1}"#);
        assert_eq!(dec("42"), "42");
    }

    #[test]
    fn decode_resolves_anchors_aliases_and_merge_keys() {
        assert_eq!(
            dec("a: &x {b: 1, c: 2}\nd: *x\ne:\n  <<: *x\n  c: 3\n"),
            r#"{"a":{"b":1,"c":2},"d":{"b":1,"c":2},"e":{"b":1,"c":3}}"#
        );
        assert_eq!(
            dec("base: &b {a: 1, b: 2}\nover: &o {b: 3, c: 4}\nm:\n  <<: [*b, *o]\n  d: 5\n"),
            r#"{"base":{"a":1,"b":2},"m":{"a":1,"b":2,"c":4,"d":5},"over":{"b":3,"c":4}}"#
        );
        // go-yaml v2 lets a later merge overwrite an earlier key.
        assert_eq!(dec("m:\n  a: 0\n  <<: {a: 1}\n"), r#"{"m":{"a":1}}"#);
        assert_eq!(dec("m:\n  <<: {a: 1}\n  a: 2\n"), r#"{"m":{"a":2}}"#);
    }

    #[test]
    fn decode_reads_block_scalars_quoting_and_tags() {
        assert_eq!(
            dec("a: |\n  line1\n  line2\nb: >\n  folded\n  text\nc: |-\n  x\nd: |+\n  y\n\ne: x\n"),
            r#"{"a":"line1\nline2\n","b":"folded text\n","c":"x","d":"y\n\n","e":"x"}"#
        );
        assert_eq!(
            dec("a: 'it''s'\nb: \"\\u00e9\\t\"\nc: plain multi\n  line\n"),
            r#"{"a":"it's","b":"é\t","c":"plain multi line"}"#
        );
        assert_eq!(
            dec("a: !!int 12\nb: !!str 12\nc: !!float 1\nd: !foo bar\ne: ! 12\nf: !!bool yes"),
            r#"{"a":12,"b":"12","c":1,"d":"bar","e":"12","f":true}"#
        );
        assert_eq!(dec("a: !!binary aGVsbG8="), r#"{"a":"hello"}"#);
    }

    #[test]
    fn decode_gives_block_scalars_at_the_end_of_input_no_extra_line_break() {
        for (src, want) in [
            ("a: |\n  x", r#"{"a":"x"}"#),
            ("a: |+\n  x", r#"{"a":"x"}"#),
            ("a: >\n  x\n  y", r#"{"a":"x y"}"#),
            ("a: |\n  x  ", r#"{"a":"x  "}"#),
            ("a: |\n  x\n  ", r#"{"a":"x\n"}"#),
            ("a: |+\n  x\n\n  ", r#"{"a":"x\n\n"}"#),
            ("- |+\n  two", r#"["two"]"#),
            ("a: |\n  x\n", r#"{"a":"x\n"}"#),
            ("a: |\n  x\n# c", r#"{"a":"x\n"}"#),
            ("a: |\n  x\nb: 1", r#"{"a":"x\n","b":1}"#),
        ] {
            assert_eq!(dec(src), want, "{src:?}");
        }
    }

    #[test]
    fn decode_reports_errors_as_the_reference() {
        for (src, message) in [
            (
                "a: b: c",
                "yaml: mapping values are not allowed in this context",
            ),
            (
                "a: 1\nb: c: d\n",
                "yaml: line 2: mapping values are not allowed in this context",
            ),
            (
                "a: 'unterminated\n",
                "yaml: line 2: found unexpected end of stream",
            ),
            ("a: *x\n", "yaml: unknown anchor 'x' referenced"),
            ("a: &x [1, *x]\n", "yaml: anchor 'x' value contains itself"),
            (
                "m:\n  <<: 1\n",
                "yaml: map merge requires map or sequence of maps as the value",
            ),
            ("a: !!int foo", "yaml: cannot decode !!str `foo` as a !!int"),
            ("a: .nan", "json: unsupported value: NaN"),
            ("[.inf]", "json: unsupported value: +Inf"),
            (
                "{~: a}",
                "unsupported map key of type: %!s(<nil>), key: <nil>, value: \"a\"",
            ),
        ] {
            fails(
                &format!("yaml.decode({})", literal(src)),
                &format!("yaml.decode: {message}"),
            );
        }
        fails(
            "yaml.decode(42)",
            "yaml.decode: for parameter s: got int, want string",
        );
        fails("yaml.decode()", "yaml.decode: missing argument for s");
    }

    #[test]
    fn decode_returns_new_mutable_values() {
        let dxr = run(
            "d = yaml.decode(\"a: [1]\")\nd[\"a\"].append(2)\nd[\"b\"] = 3\ndxr[\"out\"] = d\n",
        )
        .unwrap();
        let out = function_sdk_rust::resource::struct_to_json(&dxr)["out"].clone();
        assert_eq!(out, json!({"a": [1, 2], "b": 3}));
    }

    #[test]
    fn decode_stream_splits_on_separator_lines() {
        assert_eq!(
            text(r#"json.encode(yaml.decode_stream("a: 1\n---\nb: 2\n"))"#),
            r#"[{"a":1},{"b":2}]"#
        );
        assert_eq!(text(r#"json.encode(yaml.decode_stream(""))"#), "[]");
        assert_eq!(text(r#"json.encode(yaml.decode_stream("  \n "))"#), "[]");
        assert_eq!(
            text(r#"json.encode(yaml.decode_stream("---\na: 1\n---\n"))"#),
            r#"[{"a":1}]"#
        );
        assert_eq!(
            text(
                r#"json.encode(yaml.decode_stream("a: 1\n--- \t\nb: 2\n---\n# only comment\n---\n   \n---\nc: 3"))"#
            ),
            r#"[{"a":1},{"b":2},null,{"c":3}]"#
        );
        // Not separators: trailing content, CRLF.
        assert_eq!(
            text(r#"json.encode(yaml.decode_stream("a: 1\n--- # c\nb: 2\n"))"#),
            r#"[{"a":1}]"#
        );
        assert_eq!(
            text(r#"json.encode(yaml.decode_stream("a: 1\r\n---\r\nb: 2\r\n"))"#),
            r#"[{"a":1}]"#
        );
    }

    #[test]
    fn decode_stream_accepts_at_most_256_documents() {
        assert_eq!(
            eval(r#"len(yaml.decode_stream("---\na: 1\n" * 256))"#).unwrap(),
            json!(256)
        );
        fails(
            r#"yaml.decode_stream("---\na: 1\n" * 257)"#,
            "yaml.decode_stream: input contains 257 documents, maximum is 256",
        );
        fails(
            r#"yaml.decode_stream("a: 1\n---\nb: c: d\n")"#,
            "yaml.decode: yaml: mapping values are not allowed in this context",
        );
        fails(
            "yaml.decode_stream(1)",
            "yaml.decode_stream: for parameter s: got int, want string",
        );
    }

    /// A value `yaml.encode` accepts, for property tests.
    #[derive(Debug, Clone)]
    enum Tree {
        Null,
        Bool(bool),
        Int(i64),
        Float(f64),
        Str(String),
        List(Vec<Tree>),
        Dict(Vec<(String, Tree)>),
    }

    /// Text without the characters only YAML 1.1 reads as line breaks
    /// (NEL, LS, PS) and those its reader rejects; the round trip through
    /// the YAML 1.2 parser would differ there by design.
    fn yaml_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ -~\\t\\n]{0,40}",
            "[a-z :#'\"\\-?\\[\\]{}&*!|>%@`.,0-9]{0,30}",
            any::<String>(),
            Just("yes".to_owned()),
            Just("1.5".to_owned()),
            Just("2001-12-14".to_owned()),
        ]
        .prop_map(|s| {
            s.chars()
                .filter(|c| {
                    !matches!(
                        u32::from(*c),
                        0x7f..=0x9f | 0x2028 | 0x2029 | 0xfffe | 0xffff | 0xfeff
                    ) && (*c >= ' ' || matches!(*c, '\t' | '\n'))
                })
                .collect()
        })
    }

    fn tree() -> impl Strategy<Value = Tree> {
        let leaf = prop_oneof![
            Just(Tree::Null),
            any::<bool>().prop_map(Tree::Bool),
            any::<i64>().prop_map(Tree::Int),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Tree::Float),
            yaml_text().prop_map(Tree::Str),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Tree::List),
                prop::collection::vec((yaml_text(), inner), 0..6).prop_map(Tree::Dict),
            ]
        })
    }

    fn alloc<'v>(t: &Tree, heap: Heap<'v>) -> Value<'v> {
        match t {
            Tree::Null => Value::new_none(),
            Tree::Bool(b) => Value::new_bool(*b),
            Tree::Int(i) => heap.alloc(*i),
            Tree::Float(f) => heap.alloc(*f),
            Tree::Str(s) => heap.alloc_str(s).to_value(),
            Tree::List(items) => {
                let items: Vec<Value> = items.iter().map(|i| alloc(i, heap)).collect();
                heap.alloc(AllocList(items))
            }
            Tree::Dict(entries) => {
                let entries: Vec<(Value, Value)> = entries
                    .iter()
                    .map(|(k, v)| (heap.alloc_str(k).to_value(), alloc(v, heap)))
                    .collect();
                heap.alloc(AllocDict(entries))
            }
        }
    }

    fn long_key(t: &Tree) -> bool {
        match t {
            Tree::List(items) => items.iter().any(long_key),
            Tree::Dict(entries) => entries
                .iter()
                .any(|(k, v)| super::json_text_len(k) > 1024 || long_key(v)),
            _ => false,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn decoding_encoded_yaml_gives_the_value_back(t in tree()) {
            prop_assume!(!long_key(&t));
            Module::with_temp_heap(|module| {
                let heap = module.heap();
                let v = alloc(&t, heap);
                let text = encode_yaml(v, heap).unwrap();
                prop_assert!(!text.ends_with('\n'));
                // What the emitter wrote (before `encode` strips the final
                // newlines) reads back as the same value; floats that are
                // whole numbers come back as equal ints.
                let full = emit_yaml(v, heap).unwrap();
                prop_assert_eq!(full.trim_end_matches('\n'), text.as_str());
                let json = yaml_to_json(&full).unwrap();
                let back = decode_value(&json, heap).unwrap();
                prop_assert!(back.equals(v).unwrap(), "{:?}\n{}\n{}", t, full, json);
                // Encoding is canonical: the decoded value encodes the same
                // (unless a huge whole float came back as an int that no
                // longer fits 64 bits, as in the reference).
                if let Ok(again) = encode_yaml(back, heap) {
                    prop_assert_eq!(again, text.clone());
                }
                Ok(())
            })?;
        }

        #[test]
        fn decode_never_panics_on_arbitrary_text(s in any::<String>()) {
            let _ = yaml_to_json(&s);
        }

        /// Text glued from pieces of YAML syntax reaches far more of the
        /// scanner than arbitrary text; it must never panic either (the
        /// parser underneath does at some inputs that end without a line
        /// break, which `parse` steers around).
        #[test]
        fn decode_never_panics_on_yaml_like_text(
            pieces in proptest::collection::vec(proptest::sample::select(YAML_PIECES), 1..16)
        ) {
            let _ = yaml_to_json(&pieces.concat());
        }
    }

    /// Pieces of YAML syntax, for generated inputs.
    pub(super) const YAML_PIECES: &[&str] = &[
        "a",
        "b: ",
        "- ",
        "-",
        ":",
        ": ",
        "? ",
        "?",
        ",",
        "[",
        "]",
        "{",
        "}",
        "\n",
        "\n",
        "\n  ",
        "\n    ",
        "  ",
        " ",
        "\t",
        "\r\n",
        "\r",
        "#c",
        " # n",
        "\"",
        "\"q\"",
        "\"a\nb\"",
        "\"\\",
        "'",
        "'s'",
        "'a\n\n b'",
        "|",
        "|-",
        "|+",
        ">",
        ">-",
        "|2",
        "|1-",
        ">+9",
        "&a ",
        "*a",
        "<<: ",
        "!!str ",
        "!!binary ",
        "!t ",
        "!",
        "!<x> ",
        "1",
        "0x1F",
        "1e3",
        ".inf",
        "yes",
        "~",
        "---",
        "...",
        "%YAML 1.1\n",
        "%TAG !e! t:\n",
        "\u{85}",
        "\u{2028}",
        "\u{2029}",
        "\u{feff}",
        "x:y",
        "é",
        "\u{e000}",
    ];

    /// Every input in `tests/yaml/vectors.jsonl` decodes to the JSON text, or
    /// fails with the message, that the reference's sigs.k8s.io/yaml gave
    /// (recorded by `tools/goyaml`), but for the inputs listed in
    /// `tests/yaml/departures.jsonl`, which must still differ.
    #[test]
    fn decode_matches_the_recorded_reference_results() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/yaml/");
        let read = |name: &str| std::fs::read_to_string(format!("{dir}{name}")).unwrap();
        let departures: std::collections::HashSet<String> = read("departures.jsonl")
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let (mut total, mut departed) = (0, 0);
        let mut wrong = Vec::new();
        for line in read("vectors.jsonl").lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let input = v["yaml"].as_str().unwrap();
            let want = match (v["json"].as_str(), v["error"].as_str()) {
                (Some(json), _) => Ok(json.to_owned()),
                (None, Some(error)) => Err(error.to_owned()),
                _ => panic!("vector without a result: {line}"),
            };
            // Go's encoding/json escapes <, > and & and writes U+FFFD as an
            // escape; the decoded values are the same either way.
            let got = yaml_to_json(input).map(|json| {
                json.replace('<', "\\u003c")
                    .replace('>', "\\u003e")
                    .replace('&', "\\u0026")
                    .replace('\u{fffd}', "\\ufffd")
            });
            total += 1;
            let listed = departures.contains(input);
            departed += usize::from(listed);
            if (got == want) == listed {
                let quoted = serde_json::to_string(input).unwrap();
                let what = if listed { "now matches" } else { "differs" };
                wrong.push(format!("{quoted} {what}\n  want {want:?}\n  got  {got:?}"));
            }
        }
        assert_eq!(
            departed,
            departures.len(),
            "a listed departure has no vector"
        );
        assert!(
            wrong.is_empty(),
            "of {total} vectors:\n{}",
            wrong.join("\n")
        );
    }

    /// The value of every vector in `tests/yaml/encode.jsonl`, given as the
    /// JSON text Go writes for it, encodes to the YAML text (or fails with
    /// the message) that the reference's sigs.k8s.io/yaml gave (recorded by
    /// `tools/goyaml`).
    #[test]
    fn encode_matches_the_recorded_reference_results() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/yaml/encode.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let mut total = 0;
        let mut wrong = Vec::new();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let json = v["json"].as_str().unwrap();
            let want = match (v["yaml"].as_str(), v["error"].as_str()) {
                (Some(yaml), _) => Ok(yaml.to_owned()),
                (None, Some(error)) => Err(error.to_owned()),
                _ => panic!("vector without a result: {line}"),
            };
            let got = Module::with_temp_heap(|module| {
                let heap = module.heap();
                encode_yaml(decode_value(json, heap).unwrap(), heap)
            });
            total += 1;
            if got != want {
                wrong.push(format!("{json}\n  want {want:?}\n  got  {got:?}"));
            }
        }
        assert!(
            wrong.is_empty(),
            "{} of {total} vectors differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}
