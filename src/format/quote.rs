//! String literals as buildifier reads and writes them: the value of a
//! token, whether a token's escapes are ones it keeps, and the
//! double-quoted spelling it writes otherwise.

/// The value (bytes) of a string token and whether it is triple-quoted.
pub fn unquote(token: &str) -> Result<(Vec<u8>, bool), String> {
    let raw = token.starts_with(['r', 'b']) && token[1..].starts_with(['"', '\'']);
    let quoted = if raw || token.starts_with('b') {
        &token[1..]
    } else {
        token
    };
    let raw = token.starts_with('r');
    let delims = quoted.as_bytes();
    let len = delims.len();
    if len < 2 || delims[0] != delims[len - 1] || !matches!(delims[0], b'"' | b'\'') {
        return Err("a string literal needs matching quotes".to_owned());
    }
    let triple = len >= 6
        && delims[1] == delims[0]
        && delims[2] == delims[0]
        && delims[..3] == delims[len - 3..];
    let body = if triple {
        &quoted[3..quoted.len() - 3]
    } else {
        &quoted[1..quoted.len() - 1]
    };
    if raw || !body.contains('\\') {
        return Ok((body.as_bytes().to_vec(), triple));
    }
    let bytes = body.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let Some(&c) = bytes.get(i + 1) else {
            return Err("a truncated escape sequence \\".to_owned());
        };
        match c {
            b'\n' => i += 2,
            b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'\\' | b'\'' | b'"' => {
                out.push(match c {
                    b'a' => 7,
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 11,
                    other => other,
                });
                i += 2;
            }
            b'0'..=b'7' => {
                let mut n = u32::from(c - b'0');
                i += 2;
                for _ in 1..3 {
                    match bytes.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            n = n * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(u8::try_from(n).map_err(|_| format!("an invalid escape \\{n:03o}"))?);
            }
            b'x' | b'u' | b'U' => {
                let digits = match c {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let hex = body
                    .get(i + 2..i + 2 + digits)
                    .ok_or_else(|| "a truncated escape sequence".to_owned())?;
                let n = u32::from_str_radix(hex, 16)
                    .map_err(|_| format!("an invalid escape sequence \\{}{hex}", c as char))?;
                if c == b'x' {
                    out.push(u8::try_from(n).unwrap_or(0));
                } else {
                    let ch = char::from_u32(n)
                        .ok_or_else(|| format!("an invalid code point \\{}{hex}", c as char))?;
                    out.extend_from_slice(ch.to_string().as_bytes());
                }
                i += 2 + digits;
            }
            _ => {
                out.extend_from_slice(&bytes[i..i + 2]);
                i += 2;
            }
        }
    }
    Ok((out, triple))
}

/// Whether every escape in `token` is one buildifier keeps as written.
pub fn is_correct_escaping(token: &str) -> bool {
    let mut escaped = false;
    for c in token.chars() {
        if !escaped {
            escaped = c == '\\';
            continue;
        }
        if !matches!(
            c,
            '\n' | 'a'
                | 'b'
                | 'f'
                | 'n'
                | 'r'
                | 't'
                | 'u'
                | 'U'
                | 'v'
                | 'x'
                | '\''
                | '\\'
                | '"'
                | '0'..='9'
        ) {
            return false;
        }
        escaped = false;
    }
    true
}

/// `value` as buildifier writes it: double quotes, escapes for control
/// and non-ASCII bytes (octal).
pub fn quote(value: &[u8], triple: bool) -> String {
    let q = if triple { "\"\"\"" } else { "\"" };
    let mut out = String::from(q);
    let mut i = 0;
    while i < value.len() {
        let c = value[i];
        if c == b'"'
            && triple
            && (i + 1 < value.len() && value[i + 1] != b'"'
                || i + 2 < value.len() && value[i + 2] != b'"')
        {
            out.push('"');
            if i + 1 < value.len() && value[i + 1] == b'"' {
                out.push('"');
                i += 1;
            }
            i += 1;
            continue;
        }
        match c {
            b'\n' if triple => out.push('\n'),
            b'\'' => out.push('\''),
            b'\\' => out.push_str("\\\\"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            12 => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            11 => out.push_str("\\v"),
            b'"' => out.push_str("\\\""),
            c if !(0x20..0x80).contains(&c) => {
                out.push('\\');
                out.push(char::from(b'0' + (c >> 6)));
                out.push(char::from(b'0' + ((c >> 3) & 7)));
                out.push(char::from(b'0' + (c & 7)));
            }
            c => out.push(char::from(c)),
        }
        i += 1;
    }
    out.push_str(q);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_spellings_are_buildifiers() {
        assert_eq!(unquote("'a\\nb'").unwrap(), (b"a\nb".to_vec(), false));
        assert_eq!(unquote("r'a\\n'").unwrap(), (b"a\\n".to_vec(), false));
        assert_eq!(unquote("\"\"\"x\"\"\"").unwrap(), (b"x".to_vec(), true));
        assert_eq!(unquote("'\\x41\\101\\u00e9'").unwrap().0, "AAé".as_bytes());
        assert_eq!(quote(b"it's \"q\"", false), "\"it's \\\"q\\\"\"");
        assert_eq!(quote("é".as_bytes(), false), "\"\\303\\251\"");
        assert!(is_correct_escaping("\"a\\n\""));
        assert!(!is_correct_escaping("\"a\\d\""));
    }
}
