//! `textDocument/formatting` and `textDocument/rangeFormatting`: `fmt`'s
//! output as edits. A `.star` document is formatted whole; in a
//! Composition only the inline scripts change. A document that does not
//! parse gets no edits (its diagnostics already say why).

use serde_json::{Value, json};

/// The formatted text of the document at `uri`, `None` when it does not
/// parse.
fn formatted(uri: &str, text: &str) -> Option<String> {
    let path = std::path::Path::new(uri.split(['?', '#']).next().unwrap_or(uri));
    crate::format::format_file_text(path, text).ok()
}

/// One edit replacing lines `from..to` of the document with `lines`.
fn edit(from: usize, to: usize, lines: &[&str]) -> Value {
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    json!({
        "range": {
            "start": {"line": from, "character": 0},
            "end": {"line": to, "character": 0},
        },
        "newText": text,
    })
}

/// The edits formatting the document; with `range`, those of the changed
/// lines around the range's lines (statements are formatted whole), none
/// when nothing there changes.
pub fn edits(uri: &str, text: &str, range: Option<(usize, usize)>) -> Value {
    let Some(new) = formatted(uri, text) else {
        return json!([]);
    };
    if new == text {
        return json!([]);
    }
    let old_lines: Vec<&str> = text
        .split_inclusive('\n')
        .map(|l| l.trim_end_matches('\n'))
        .collect();
    let new_lines: Vec<&str> = new
        .split_inclusive('\n')
        .map(|l| l.trim_end_matches('\n'))
        .collect();
    let Some((first, last)) = range else {
        return json!([edit(0, old_lines.len() + 1, &new_lines)]);
    };
    // The changed block: what differs between the common first and last
    // lines.
    let prefix = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = old_lines[prefix..]
        .iter()
        .rev()
        .zip(new_lines[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (start, old_end, new_end) = (prefix, old_lines.len() - suffix, new_lines.len() - suffix);
    if old_end <= first || start > last {
        return json!([]);
    }
    json!([edit(start, old_end, &new_lines[start..new_end])])
}

/// The range's first and last line from request parameters.
pub fn lines_of(params: &Value) -> Option<(usize, usize)> {
    let line = |p: &Value| p.as_u64().and_then(|n| usize::try_from(n).ok());
    Some((
        line(&params["range"]["start"]["line"])?,
        line(&params["range"]["end"]["line"])?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_formatted_whole_and_a_range_where_it_changes() {
        let text = "x=1\ny = 2\nz=3\n";
        let whole = edits("file:///a.star", text, None);
        assert_eq!(whole[0]["newText"], "x = 1\ny = 2\nz = 3\n");
        assert_eq!(whole[0]["range"]["end"]["line"], 4);
        // Lines 0 to 2 change: a range on line 1 reaches them.
        let ranged = edits("file:///a.star", text, Some((1, 1)));
        assert_eq!(ranged[0]["range"]["start"]["line"], 0);
        assert_eq!(ranged[0]["range"]["end"]["line"], 3);
        let formatted = "x = 1\n\ny = 2\n";
        assert_eq!(edits("file:///a.star", formatted, None), json!([]));
        assert_eq!(edits("file:///a.star", "x = (\n", None), json!([]));
    }
}
