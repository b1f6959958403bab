//! `json.indent`: Go's `json.Indent`, over the scanner.

use super::scanner::{Op, Scanner};

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
