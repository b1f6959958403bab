//! Go's quoting of strings and bytes, as go.starlark.net's reprs and error
//! messages use it.

use std::fmt::Write as _;

use super::print::is_go_print;

/// go.starlark.net's string repr (`syntax.Quote`): double quotes, printable
/// characters kept, everything else escaped.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if is_go_print(c) => out.push(c),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if c < ' ' || c == '\x7f' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if u32::from(c) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// Go's `%q` of a byte (`strconv.QuoteRune(rune(b))`), as JSON error
/// messages print the offending character.
pub fn go_quote_byte(b: u8) -> String {
    let c = char::from(b);
    match c {
        '\'' => "'\\''".to_owned(),
        '\\' => "'\\\\'".to_owned(),
        c if is_go_print(c) => format!("'{c}'"),
        '\x07' => "'\\a'".to_owned(),
        '\x08' => "'\\b'".to_owned(),
        '\x0c' => "'\\f'".to_owned(),
        '\n' => "'\\n'".to_owned(),
        '\r' => "'\\r'".to_owned(),
        '\t' => "'\\t'".to_owned(),
        '\x0b' => "'\\v'".to_owned(),
        c if c < ' ' || c == '\x7f' => format!("'\\x{b:02x}'"),
        _ => format!("'\\u{:04x}'", u32::from(b)),
    }
}
