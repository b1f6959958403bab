//! `json.decode`: go.starlark.net's decoder, with Go's number and
//! string rules and its error texts.

use num_bigint::BigInt;
use starlark::collections::SmallMap;
use starlark::values::dict::Dict;
use starlark::values::list::AllocList;
use starlark::values::{Heap, Value};

use super::MAX_DEPTH;
use super::scanner::{Op, Scanner};
use crate::go::quote::go_quote_byte;
use crate::go::types::go_type;

/// A decoding failure: the offset reached and the message.
pub(super) struct Failure {
    offset: usize,
    message: String,
}

pub(super) struct Decoder<'s, 'v> {
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
pub(super) fn parse_go_float(s: &str) -> Option<f64> {
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
pub(super) fn unquote(literal: &[u8]) -> Result<String, String> {
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

pub(super) fn hex4(b: &[u8]) -> Option<u32> {
    let digits = b.get(..4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}
