//! YAML 1.1 scalar resolution, as go-yaml v2's `resolve` does it: which
//! plain scalars read as null, booleans, numbers or timestamps.

/// What a plain scalar means under go-yaml v2's YAML 1.1 rules.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str,
    /// Looks like a timestamp; decoded as the original text.
    Timestamp,
}

pub(super) const STR_TAG: &str = "tag:yaml.org,2002:str";
pub(super) const BOOL_TAG: &str = "tag:yaml.org,2002:bool";
pub(super) const INT_TAG: &str = "tag:yaml.org,2002:int";
pub(super) const FLOAT_TAG: &str = "tag:yaml.org,2002:float";
pub(super) const NULL_TAG: &str = "tag:yaml.org,2002:null";
pub(super) const TIMESTAMP_TAG: &str = "tag:yaml.org,2002:timestamp";
pub(super) const BINARY_TAG: &str = "tag:yaml.org,2002:binary";
pub(super) const MERGE_TAG: &str = "tag:yaml.org,2002:merge";

pub(super) fn resolved_tag(r: &Resolved) -> &'static str {
    match r {
        Resolved::Null => NULL_TAG,
        Resolved::Bool(_) => BOOL_TAG,
        Resolved::Int(_) | Resolved::Uint(_) => INT_TAG,
        Resolved::Float(_) => FLOAT_TAG,
        Resolved::Str => STR_TAG,
        Resolved::Timestamp => TIMESTAMP_TAG,
    }
}

pub(super) fn short_tag(tag: &str) -> String {
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
pub(super) fn resolve_plain(s: &str) -> Resolved {
    resolve(s, true)
}

/// go-yaml v2's `resolve`, which reads timestamps only in untagged plain
/// scalars and ones tagged `!!timestamp`.
pub(super) fn resolve(s: &str, timestamps: bool) -> Resolved {
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
pub(super) fn is_base60_float(s: &str) -> bool {
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
