//! Go's `regexp/syntax` rules, translated: a pattern is parsed the way Go
//! parses it, so the same patterns are accepted with the same error texts,
//! and rewritten into the `regex` crate's syntax (ASCII `\d`, `\w`, `\s`,
//! `\b`; `\Q...\E`; Go's literal brackets and braces; nested repeat caps).

use std::fmt::{self, Write as _};

/// Go's limit on `{n,m}` counts, also applied to nested counts multiplied.
const MAX_REPEAT: u64 = 1000;

// ---------------------------------------------------------------------------
// Go syntax to crate syntax.

/// A Go `regexp/syntax` error: its code and the part of the pattern quoted.
#[derive(Debug, PartialEq)]
pub(super) struct SyntaxError {
    code: &'static str,
    expr: String,
}

impl SyntaxError {
    pub(super) fn new(code: &'static str, expr: &str) -> Self {
        Self {
            code,
            expr: expr.to_owned(),
        }
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error parsing regexp: {}: `{}`", self.code, self.expr)
    }
}

const INVALID_CHAR_CLASS_RANGE: &str = "invalid character class range";
const INVALID_ESCAPE: &str = "invalid escape sequence";
const INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const MISSING_BRACKET: &str = "missing closing ]";
const MISSING_PAREN: &str = "missing closing )";
const MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const UNEXPECTED_PAREN: &str = "unexpected )";

/// A class that matches nothing, for Go literals and classes that cannot
/// occur in text (surrogate code points).
const NOTHING: &str = r"[^\x{0}-\x{10FFFF}]";

/// A class that matches any character.
const EVERYTHING: &str = r"[\x{0}-\x{10FFFF}]";

pub(super) struct Translation {
    /// The pattern in the crate's syntax.
    pub(super) rust: String,
    /// Go's group names by group number.
    pub(super) names: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A single unit of the crate's syntax: a literal, class, `.` or group.
    Atom,
    /// A repetition; wrapped in `(?:...)` before being repeated again.
    Repeat,
    /// An empty-width assertion; also wrapped before being repeated.
    Assertion,
    /// `|`: a repetition operator right after it has no argument.
    Bar,
    /// `(?flags)`: invisible to repetition, as in Go's parser.
    Flags,
}

/// One parsed element of a group, already in the crate's syntax.
struct Item {
    text: String,
    kind: Kind,
    /// The largest product of `{n,m}` counts nested in it (Go's
    /// `repeatIsValid` bound).
    product: u64,
}

impl Item {
    fn new(text: impl Into<String>, kind: Kind) -> Self {
        Self {
            text: text.into(),
            kind,
            product: 0,
        }
    }

    fn literal(c: u32) -> Self {
        Self::new(literal(c), Kind::Atom)
    }
}

/// An open group: its opening text in the crate's syntax, its items, and
/// the `U` flag to restore when it closes.
struct Frame {
    open: String,
    items: Vec<Item>,
    outer_ungreedy: bool,
}

/// A code point as the crate's syntax; surrogates (which Go accepts in
/// `\x{D800}` but which never occur in text) match nothing.
fn literal(c: u32) -> String {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_alphanumeric() || ch == '_' => ch.to_string(),
        Some(_) => format!(r"\x{{{c:X}}}"),
        None => NOTHING.to_owned(),
    }
}

/// A repetition operator: `*`, `+`, `?` or a `{min,max}` count (`max` -1
/// for none).
#[derive(Clone, Copy)]
enum RepeatOp {
    Star,
    Plus,
    Quest,
    Count(i64, i64),
}

struct Translator<'p> {
    pattern: &'p str,
    frames: Vec<Frame>,
    names: Vec<String>,
    /// Go's `U` flag here. Go fixes a repetition's greediness by the flag
    /// where the operator is, which can differ from where the operand is
    /// (`a(?U)*`), so the crate never sees `U`: each repetition is written
    /// greedy or lazy explicitly.
    ungreedy: bool,
}

pub(super) fn translate(pattern: &str) -> Result<Translation, SyntaxError> {
    let mut tr = Translator {
        pattern,
        frames: Vec::new(),
        names: vec![String::new()],
        ungreedy: false,
    };
    tr.open_group("");
    // Where the previous element started, when it was a repetition: Go
    // rejects `a**` and `a{2}{3}`.
    let mut last_repeat: Option<usize> = None;
    let mut i = 0;
    while i < pattern.len() {
        let t = &pattern[i..];
        let mut repeat = None;
        match t.as_bytes()[0] {
            b'(' if t.starts_with("(?") => i += tr.perl_flags(t)?,
            b'(' => {
                tr.names.push(String::new());
                tr.open_group("(");
                i += 1;
            }
            b'|' => {
                tr.push(Item::new("|", Kind::Bar));
                i += 1;
            }
            b')' => {
                tr.close_group()?;
                i += 1;
            }
            b'^' => {
                tr.push(Item::new("^", Kind::Assertion));
                i += 1;
            }
            b'$' => {
                tr.push(Item::new("$", Kind::Assertion));
                i += 1;
            }
            b'.' => {
                tr.push(Item::new(".", Kind::Atom));
                i += 1;
            }
            b'[' => {
                let (class, len) = parse_class(t)?;
                tr.push(Item::new(class, Kind::Atom));
                i += len;
            }
            op @ (b'*' | b'+' | b'?') => {
                let op = match op {
                    b'*' => RepeatOp::Star,
                    b'+' => RepeatOp::Plus,
                    _ => RepeatOp::Quest,
                };
                let start = i;
                i = tr.repeat(op, i, i + 1, last_repeat)?;
                repeat = Some(start);
            }
            b'{' => match parse_repeat(t) {
                None => {
                    tr.push(Item::literal(u32::from('{')));
                    i += 1;
                }
                Some((min, max, len)) => {
                    if !(0..=1000).contains(&min) || max > 1000 || (max >= 0 && min > max) {
                        return Err(SyntaxError::new(INVALID_REPEAT_SIZE, &t[..len]));
                    }
                    let start = i;
                    i = tr.repeat(RepeatOp::Count(min, max), i, i + len, last_repeat)?;
                    repeat = Some(start);
                }
            },
            b'\\' => i += tr.escape(t)?,
            _ => {
                let c = t.chars().next().expect("not at the end");
                tr.push(Item::literal(u32::from(c)));
                i += c.len_utf8();
            }
        }
        last_repeat = repeat;
    }
    if tr.frames.len() != 1 {
        return Err(SyntaxError::new(MISSING_PAREN, pattern));
    }
    let top = tr.frames.pop().expect("the top level frame");
    Ok(Translation {
        rust: top.items.iter().map(|item| item.text.as_str()).collect(),
        names: tr.names,
    })
}

impl Translator<'_> {
    fn open_group(&mut self, open: impl Into<String>) {
        self.frames.push(Frame {
            open: open.into(),
            items: Vec::new(),
            outer_ungreedy: self.ungreedy,
        });
    }

    fn push(&mut self, item: Item) {
        self.frames
            .last_mut()
            .expect("the top level frame is never closed")
            .items
            .push(item);
    }

    fn close_group(&mut self) -> Result<(), SyntaxError> {
        if self.frames.len() < 2 {
            return Err(SyntaxError::new(UNEXPECTED_PAREN, self.pattern));
        }
        let frame = self.frames.pop().expect("checked above");
        self.ungreedy = frame.outer_ungreedy;
        let product = frame.items.iter().map(|it| it.product).max().unwrap_or(0);
        let mut text = frame.open;
        text.extend(frame.items.iter().map(|it| it.text.as_str()));
        text.push(')');
        self.push(Item {
            text,
            kind: Kind::Atom,
            product,
        });
        Ok(())
    }

    /// Applies a repetition operator spanning `before..after` (plus a lazy
    /// `?`) to the previous element; returns where parsing continues.
    fn repeat(
        &mut self,
        op: RepeatOp,
        before: usize,
        mut after: usize,
        last_repeat: Option<usize>,
    ) -> Result<usize, SyntaxError> {
        let question = self.pattern[after..].starts_with('?');
        if question {
            after += 1;
        }
        let lazy = question != self.ungreedy;
        if let Some(last) = last_repeat {
            return Err(SyntaxError::new(
                INVALID_REPEAT_OP,
                &self.pattern[last..after],
            ));
        }
        let fragment = &self.pattern[before..after];
        let items = &mut self.frames.last_mut().expect("the top level frame").items;
        let Some(item) = items
            .iter_mut()
            .rev()
            .find(|it| it.kind != Kind::Flags)
            .filter(|it| it.kind != Kind::Bar)
        else {
            return Err(SyntaxError::new(MISSING_REPEAT_ARGUMENT, fragment));
        };
        let (mut text, product) = match op {
            RepeatOp::Star => ("*".to_owned(), item.product),
            RepeatOp::Plus => ("+".to_owned(), item.product),
            RepeatOp::Quest => ("?".to_owned(), item.product),
            RepeatOp::Count(min, max) => {
                let text = match max {
                    -1 => format!("{{{min},}}"),
                    _ if max == min => format!("{{{min}}}"),
                    _ => format!("{{{min},{max}}}"),
                };
                // Go's repeatIsValid: a count of 0 hides what it repeats;
                // `{0,}` multiplies by one.
                let count = if max == -1 { min } else { max };
                let count = u64::try_from(count).expect("counts are checked to be 0..=1000");
                let product = match (max, count) {
                    (0, _) => 0,
                    (_, 0) => item.product,
                    _ => count.saturating_mul(item.product.max(1)),
                };
                if (min >= 2 || max >= 2) && product > MAX_REPEAT {
                    return Err(SyntaxError::new(INVALID_REPEAT_SIZE, fragment));
                }
                (text, product)
            }
        };
        if lazy {
            text.push('?');
        }
        let operand = match item.kind {
            Kind::Atom => std::mem::take(&mut item.text),
            _ => format!("(?:{})", item.text),
        };
        *item = Item {
            text: operand + &text,
            kind: Kind::Repeat,
            product,
        };
        Ok(after)
    }

    /// `(?...`: a named group, a non-capturing group or a flag change.
    /// Returns the length consumed.
    fn perl_flags(&mut self, s: &str) -> Result<usize, SyntaxError> {
        let b = s.as_bytes();
        let starts_with_p = b.len() > 4 && b[2] == b'P' && b[3] == b'<';
        let starts_with_name = b.len() > 3 && b[2] == b'<';
        if starts_with_p || starts_with_name {
            let name_start = if starts_with_p { 4 } else { 3 };
            let Some(end) = s.find('>') else {
                return Err(SyntaxError::new(INVALID_NAMED_CAPTURE, s));
            };
            let name = &s[name_start..end];
            if name.is_empty() || !name.bytes().all(|c| c == b'_' || c.is_ascii_alphanumeric()) {
                return Err(SyntaxError::new(INVALID_NAMED_CAPTURE, &s[..=end]));
            }
            self.names.push(name.to_owned());
            self.open_group("(");
            return Ok(end + 1);
        }

        // The final setting of each flag, in the order `imsU`.
        let mut flags: [Option<bool>; 4] = [None; 4];
        let mut negated = false;
        let mut saw_flag = false;
        let mut k = 2;
        while let Some(c) = s[k..].chars().next() {
            k += c.len_utf8();
            let flag = match c {
                'i' => 0,
                'm' => 1,
                's' => 2,
                'U' => 3,
                '-' if !negated => {
                    negated = true;
                    saw_flag = false;
                    continue;
                }
                ':' | ')' if !negated || saw_flag => {
                    self.open_flags(flags, c == ':');
                    return Ok(k);
                }
                _ => break,
            };
            flags[flag] = Some(!negated);
            saw_flag = true;
        }
        Err(SyntaxError::new(INVALID_PERL_OP, &s[..k]))
    }

    /// Emits a flag change, as a group opening when `group`. `U` is only
    /// tracked (see [`Translator::ungreedy`]).
    fn open_flags(&mut self, flags: [Option<bool>; 4], group: bool) {
        let pick = |on: bool| -> String {
            "ims"
                .chars()
                .zip(flags)
                .filter(|(_, f)| *f == Some(on))
                .map(|(c, _)| c)
                .collect()
        };
        let (on, off) = (pick(true), pick(false));
        let mut text = format!("(?{on}");
        if !off.is_empty() {
            text.push('-');
            text.push_str(&off);
        }
        if group {
            text.push(':');
            self.open_group(text);
        } else if on.len() + off.len() > 0 {
            text.push(')');
            self.push(Item::new(text, Kind::Flags));
        }
        if let Some(ungreedy) = flags[3] {
            self.ungreedy = ungreedy;
        }
    }

    /// An escape outside a class. Returns the length consumed.
    fn escape(&mut self, t: &str) -> Result<usize, SyntaxError> {
        let assertion = match t.as_bytes().get(1) {
            Some(b'A') => Some(r"\A"),
            Some(b'z') => Some(r"\z"),
            // ASCII word boundaries, as Go's.
            Some(b'b') => Some(r"(?-u:\b)"),
            Some(b'B') => Some(r"(?-u:\B)"),
            Some(b'C') => return Err(SyntaxError::new(INVALID_ESCAPE, &t[..2])),
            Some(b'Q') => {
                let body = &t[2..];
                let (quoted, len) = match body.find(r"\E") {
                    Some(end) => (&body[..end], 2 + end + 2),
                    None => (body, t.len()),
                };
                for c in quoted.chars() {
                    self.push(Item::literal(u32::from(c)));
                }
                return Ok(len);
            }
            _ => None,
        };
        if let Some(text) = assertion {
            self.push(Item::new(text, Kind::Assertion));
            return Ok(2);
        }
        if let Some((class, len)) = unicode_class(t)? {
            self.push(Item::new(class, Kind::Atom));
            return Ok(len);
        }
        if let Some(class) = perl_class(t) {
            self.push(Item::new(class, Kind::Atom));
            return Ok(2);
        }
        let (c, len) = parse_escape(t)?;
        self.push(Item::literal(c));
        Ok(len)
    }
}

/// Go's `parseRepeat`: `{n}`, `{n,}` or `{n,m}` as (min, max or -1, length);
/// `None` when `t` is not of that form (then `{` is a literal). A number
/// too large is -1.
fn parse_repeat(t: &str) -> Option<(i64, i64, usize)> {
    let b = t.as_bytes();
    let mut k = 1;
    let min = parse_int(b, &mut k)?;
    let max = match b.get(k)? {
        b',' => {
            k += 1;
            if *b.get(k)? == b'}' {
                -1
            } else {
                match parse_int(b, &mut k)? {
                    -1 => return Some((-1, -1, close_brace(b, k)?)),
                    max => max,
                }
            }
        }
        _ => min,
    };
    Some((min, max, close_brace(b, k)?))
}

fn close_brace(b: &[u8], k: usize) -> Option<usize> {
    (b.get(k) == Some(&b'}')).then_some(k + 1)
}

/// Go's `parseInt`: digits without a leading zero; -1 when too large.
fn parse_int(b: &[u8], k: &mut usize) -> Option<i64> {
    let start = *k;
    if !b.get(start)?.is_ascii_digit() {
        return None;
    }
    if b[start] == b'0' && b.get(start + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    while b.get(*k).is_some_and(u8::is_ascii_digit) {
        *k += 1;
    }
    let mut n: i64 = 0;
    for &d in &b[start..*k] {
        if n >= 100_000_000 {
            return Some(-1);
        }
        n = n * 10 + i64::from(d - b'0');
    }
    Some(n)
}

/// `\d`, `\s`, `\w` and their negations: Go's ASCII classes.
fn perl_class(t: &str) -> Option<&'static str> {
    Some(match t.get(..2)? {
        r"\d" => "[0-9]",
        r"\D" => "[^0-9]",
        r"\s" => r"[\t\n\x0C\r ]",
        r"\S" => r"[^\t\n\x0C\r ]",
        r"\w" => "[0-9A-Za-z_]",
        r"\W" => "[^0-9A-Za-z_]",
        _ => return None,
    })
}

/// Go's `[:name:]` classes (ASCII), as crate classes.
fn posix_class(name: &str) -> Option<String> {
    let (negated, name) = match name.strip_prefix("[:^") {
        Some(rest) => (true, rest),
        None => (false, &name[2..]),
    };
    let ranges = match name.strip_suffix(":]")? {
        "alnum" => "0-9A-Za-z",
        "alpha" => "A-Za-z",
        "ascii" => r"\x00-\x7F",
        "blank" => r"\t ",
        "cntrl" => r"\x00-\x1F\x7F",
        "digit" => "0-9",
        "graph" => "!-~",
        "lower" => "a-z",
        "print" => " -~",
        "punct" => r"!-/:-@\[-`\{-~",
        "space" => r"\t-\r ",
        "upper" => "A-Z",
        "word" => "0-9A-Za-z_",
        "xdigit" => "0-9A-Fa-f",
        _ => return None,
    };
    Some(format!("[{}{ranges}]", if negated { "^" } else { "" }))
}

/// Go's `parseUnicodeClass`: `\pL`, `\p{Greek}`, `\P{...}`, `\p{^...}`.
/// `None` when `t` does not start with `\p` or `\P`.
fn unicode_class(t: &str) -> Result<Option<(String, usize)>, SyntaxError> {
    let mut negated = match t.as_bytes().get(..2) {
        Some(b"\\p") => false,
        Some(b"\\P") => true,
        _ => return Ok(None),
    };
    let (seq, name) = match t[2..].chars().next() {
        Some('{') => {
            let Some(end) = t.find('}') else {
                return Err(SyntaxError::new(INVALID_CHAR_CLASS_RANGE, t));
            };
            (&t[..=end], &t[3..end])
        }
        Some(c) => (&t[..2 + c.len_utf8()], &t[2..2 + c.len_utf8()]),
        None => (t, ""),
    };
    let name = match name.strip_prefix('^') {
        Some(rest) => {
            negated = !negated;
            rest
        }
        None => name,
    };
    let Some((property, inverted)) = unicode_property(name) else {
        return Err(SyntaxError::new(INVALID_CHAR_CLASS_RANGE, seq));
    };
    let positive = negated == inverted;
    let class = match property.as_str() {
        // Surrogates never occur in text, and the crate has no such class.
        "gc=Cs" if positive => NOTHING.to_owned(),
        "gc=Cs" => EVERYTHING.to_owned(),
        _ if positive => format!(r"\p{{{property}}}"),
        _ => format!(r"\P{{{property}}}"),
    };
    Ok(Some((class, seq.len())))
}

/// Go's `canonicalName`: first letter upper case, the rest lower case,
/// without `_`, `-` and spaces.
fn canonical_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '_' | '-' | ' ' => {}
            _ if out.is_empty() => out.push(c.to_ascii_uppercase()),
            _ => out.push(c.to_ascii_lowercase()),
        }
    }
    out
}

/// The crate's property for a Go class name, and whether it is inverted
/// (`Assigned` is "not unassigned"). Accepts the exact names of older Go
/// releases and the case- and separator-insensitive names of newer ones.
fn unicode_property(name: &str) -> Option<(String, bool)> {
    if GO_CATEGORIES.contains(&name) {
        return Some((format!("gc={name}"), false));
    }
    if is_go_script(name) {
        return Some((format!("sc={name}"), false));
    }
    let canonical = canonical_name(name);
    match canonical.as_str() {
        "Any" => return Some(("Any".to_owned(), false)),
        "Assigned" => return Some(("gc=Cn".to_owned(), true)),
        "Ascii" => return Some(("ASCII".to_owned(), false)),
        "Lc" => return Some(("gc=LC".to_owned(), false)),
        _ => {}
    }
    if GO_CATEGORIES.contains(&canonical.as_str()) {
        return Some((format!("gc={canonical}"), false));
    }
    if is_go_script(&canonical) {
        return Some((format!("sc={canonical}"), false));
    }
    GO_CATEGORY_ALIASES
        .iter()
        .find(|(alias, _)| canonical_name(alias) == canonical)
        .map(|(_, category)| (format!("gc={category}"), false))
}

fn is_go_script(name: &str) -> bool {
    GO_SCRIPTS.split_whitespace().any(|script| script == name)
}

/// Go's `parseEscape` for one escaped character: the code point and the
/// length consumed.
fn parse_escape(text: &str) -> Result<(u32, usize), SyntaxError> {
    let invalid = |len: usize| SyntaxError::new(INVALID_ESCAPE, &text[..len]);
    let Some(escaped) = text[1..].chars().next() else {
        return Err(SyntaxError::new(TRAILING_BACKSLASH, ""));
    };
    let mut len = 1 + escaped.len_utf8();
    let bytes = text.as_bytes();
    let octal_at = |i: usize| bytes.get(i).filter(|d| (b'0'..=b'7').contains(d));
    match escaped {
        // A single non-zero digit would be a backreference.
        '1'..='7' if octal_at(len).is_none() => Err(invalid(len)),
        '0'..='7' => {
            let mut code = u32::from(escaped) - u32::from('0');
            for _ in 0..2 {
                let Some(digit) = octal_at(len) else {
                    break;
                };
                code = code * 8 + u32::from(digit - b'0');
                len += 1;
            }
            Ok((code, len))
        }
        'x' => parse_hex_escape(text, len).map_err(invalid),
        'a' => Ok((0x07, len)),
        'f' => Ok((0x0C, len)),
        'n' => Ok((0x0A, len)),
        'r' => Ok((0x0D, len)),
        't' => Ok((0x09, len)),
        'v' => Ok((0x0B, len)),
        _ if escaped.is_ascii() && !escaped.is_ascii_alphanumeric() => {
            Ok((u32::from(escaped), len))
        }
        _ => Err(invalid(len)),
    }
}

/// The rest of `\xHH` or `\x{H...}` from `text[len..]`: the code point
/// and the length of the whole escape, or the length Go quotes as invalid.
fn parse_hex_escape(text: &str, mut len: usize) -> Result<(u32, usize), usize> {
    let mut chars = text[len..].chars();
    let first = chars.next().ok_or(len)?;
    len += first.len_utf8();
    if first != '{' {
        let second = chars.next();
        len += second.map_or(0, char::len_utf8);
        return match (first.to_digit(16), second.and_then(|c| c.to_digit(16))) {
            (Some(high), Some(low)) => Ok((high * 16 + low, len)),
            _ => Err(len),
        };
    }
    let mut code: u32 = 0;
    let mut digits = 0;
    loop {
        let next = chars.next().ok_or(len)?;
        len += next.len_utf8();
        if next == '}' {
            break;
        }
        code = code * 16 + next.to_digit(16).ok_or(len)?;
        if code > 0x0010_FFFF {
            return Err(len);
        }
        digits += 1;
    }
    if digits == 0 {
        return Err(len);
    }
    Ok((code, len))
}

/// Go's `parseClass` for `s` starting at `[`: the crate's class and the
/// length consumed.
fn parse_class(s: &str) -> Result<(String, usize), SyntaxError> {
    let mut t = &s[1..];
    let negated = t.starts_with('^');
    if negated {
        t = &t[1..];
    }
    let mut items = String::new();
    let mut first = true;
    while first || !t.starts_with(']') {
        first = false;
        if t.len() > 2
            && t.starts_with("[:")
            && let Some(end) = t[2..].find(":]")
        {
            let name = &t[..end + 4];
            let Some(class) = posix_class(name) else {
                return Err(SyntaxError::new(INVALID_CHAR_CLASS_RANGE, name));
            };
            items.push_str(&class);
            t = &t[name.len()..];
            continue;
        }
        if let Some((class, len)) = unicode_class(t)? {
            items.push_str(&class);
            t = &t[len..];
            continue;
        }
        if let Some(class) = perl_class(t) {
            items.push_str(class);
            t = &t[2..];
            continue;
        }
        let range_start = t;
        let lo = class_char(&mut t, s)?;
        let mut hi = lo;
        if t.len() >= 2 && t.starts_with('-') && !t[1..].starts_with(']') {
            t = &t[1..];
            hi = class_char(&mut t, s)?;
            if hi < lo {
                let range = &range_start[..range_start.len() - t.len()];
                return Err(SyntaxError::new(INVALID_CHAR_CLASS_RANGE, range));
            }
        }
        // Surrogates never occur in text: keep only the rest of the range.
        let lo = if (0xD800..0xE000).contains(&lo) {
            0xE000
        } else {
            lo
        };
        let hi = if (0xD800..0xE000).contains(&hi) {
            0xD7FF
        } else {
            hi
        };
        if lo <= hi {
            let _ = write!(items, r"\x{{{lo:X}}}");
            if hi > lo {
                let _ = write!(items, r"-\x{{{hi:X}}}");
            }
        }
    }
    let consumed = s.len() - t.len() + 1;
    let class = match (items.is_empty(), negated) {
        (true, false) => NOTHING.to_owned(),
        (true, true) => EVERYTHING.to_owned(),
        (false, _) => format!("[{}{items}]", if negated { "^" } else { "" }),
    };
    Ok((class, consumed))
}

/// One character of a class, plain or escaped; advances `t`.
fn class_char(t: &mut &str, whole_class: &str) -> Result<u32, SyntaxError> {
    let Some(c) = t.chars().next() else {
        return Err(SyntaxError::new(MISSING_BRACKET, whole_class));
    };
    if c == '\\' {
        let (r, len) = parse_escape(t)?;
        *t = &t[len..];
        return Ok(r);
    }
    *t = &t[c.len_utf8()..];
    Ok(u32::from(c))
}

/// The general categories Go's `unicode.Categories` knows.
pub(super) const GO_CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Cn", "Co", "Cs", "L", "LC", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me",
    "Mn", "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk",
    "Sm", "So", "Z", "Zl", "Zp", "Zs",
];

/// The scripts Go's `unicode.Scripts` knows (Unicode 15), space-separated.
pub(super) const GO_SCRIPTS: &str = "Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak \
     Bengali Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian \
     Caucasian_Albanian Chakma Cham Cherokee Chorasmian Common Coptic Cuneiform Cypriot \
     Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan \
     Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek \
     Gujarati Gunjala_Gondi Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew \
     Hiragana Imperial_Aramaic Inherited Inscriptional_Pahlavi Inscriptional_Parthian \
     Javanese Kaithi Kannada Katakana Kawi Kayah_Li Kharoshthi Khitan_Small_Script Khmer \
     Khojki Khudawadi Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani \
     Makasar Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek \
     Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani \
     Myanmar Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa Nko Nushu \
     Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian \
     Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Oriya Osage \
     Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang \
     Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sogdian \
     Sora_Sompeng Soyombo Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham \
     Tai_Viet Takri Tamil Tangsa Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Toto \
     Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi Zanabazar_Square";

/// Go's `unicode.CategoryAliases`, matched by canonical name.
pub(super) const GO_CATEGORY_ALIASES: &[(&str, &str)] = &[
    ("Cased_Letter", "LC"),
    ("Close_Punctuation", "Pe"),
    ("Combining_Mark", "M"),
    ("Connector_Punctuation", "Pc"),
    ("Control", "Cc"),
    ("Currency_Symbol", "Sc"),
    ("Dash_Punctuation", "Pd"),
    ("Decimal_Number", "Nd"),
    ("Enclosing_Mark", "Me"),
    ("Final_Punctuation", "Pf"),
    ("Format", "Cf"),
    ("Initial_Punctuation", "Pi"),
    ("Letter", "L"),
    ("Letter_Number", "Nl"),
    ("Line_Separator", "Zl"),
    ("Lowercase_Letter", "Ll"),
    ("Mark", "M"),
    ("Math_Symbol", "Sm"),
    ("Modifier_Letter", "Lm"),
    ("Modifier_Symbol", "Sk"),
    ("Nonspacing_Mark", "Mn"),
    ("Number", "N"),
    ("Open_Punctuation", "Ps"),
    ("Other", "C"),
    ("Other_Letter", "Lo"),
    ("Other_Number", "No"),
    ("Other_Punctuation", "Po"),
    ("Other_Symbol", "So"),
    ("Paragraph_Separator", "Zp"),
    ("Private_Use", "Co"),
    ("Punctuation", "P"),
    ("Separator", "Z"),
    ("Space_Separator", "Zs"),
    ("Spacing_Mark", "Mc"),
    ("Surrogate", "Cs"),
    ("Symbol", "S"),
    ("Titlecase_Letter", "Lt"),
    ("Unassigned", "Cn"),
    ("Uppercase_Letter", "Lu"),
    ("cntrl", "Cc"),
    ("digit", "Nd"),
    ("punct", "P"),
];
