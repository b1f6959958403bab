//! The Starlark inside a Composition's YAML: the literal block scalars
//! (`source: |`, `<name>.star: |`) whose values are StarlarkInput scripts,
//! formatted where they are written, with their indentation; every other
//! line is left as it was.

use serde_json::Value;

/// A literal block scalar: the 0-based lines of its content (first and
/// one past the last non-blank line), its indentation, and its value.
struct Block {
    first: usize,
    end: usize,
    indent: usize,
    value: String,
}

/// The literal block scalars of `lines`.
fn blocks(lines: &[&str]) -> Vec<Block> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.split(" #").next().unwrap_or(line).trim_end();
        if !(code.ends_with(": |") || code.ends_with(": |-") || code.ends_with(": |+")) {
            continue;
        }
        let key_indent = line.len() - line.trim_start_matches([' ', '-']).len();
        let mut indent = None;
        let mut end = i + 1;
        let mut j = i + 1;
        while j < lines.len() {
            let l = lines[j];
            if l.trim().is_empty() {
                j += 1;
                continue;
            }
            let n = l.len() - l.trim_start_matches(' ').len();
            if n <= key_indent {
                break;
            }
            indent.get_or_insert(n);
            j += 1;
            end = j;
        }
        let Some(indent) = indent else {
            continue;
        };
        let value: Vec<&str> = lines[i + 1..end]
            .iter()
            .map(|l| l.get(indent..).unwrap_or(""))
            .collect();
        out.push(Block {
            first: i + 1,
            end,
            indent,
            value: format!("{}\n", value.join("\n")),
        });
    }
    out
}

/// The scripts of the Compositions' StarlarkInput steps in `text`.
fn scripts(text: &str) -> Vec<String> {
    let docs = crate::builtins::yaml::documents_as_json(text).unwrap_or_default();
    let mut out = Vec::new();
    for spec in docs.iter().flat_map(crate::input::pipeline_inputs) {
        if let Some(s) = spec.get("source").and_then(Value::as_str) {
            out.push(s.to_owned());
        }
        if let Some(modules) = spec.get("modules").and_then(Value::as_object) {
            out.extend(
                modules
                    .values()
                    .filter_map(Value::as_str)
                    .map(str::to_owned),
            );
        }
    }
    out
}

/// `text` with its inline scripts formatted, or the first script's syntax
/// error at its YAML line.
pub fn format_scripts(text: &str) -> Result<String, String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let wanted = scripts(text);
    let mut replaced: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for block in blocks(&lines) {
        if !wanted
            .iter()
            .any(|w| w.trim_end() == block.value.trim_end())
        {
            continue;
        }
        let formatted = super::format(&block.value).map_err(|e| {
            format!(
                "{}:{}: {}",
                block.first + e.line,
                block.indent + e.col,
                e.message
            )
        })?;
        let pad = " ".repeat(block.indent);
        let new: Vec<String> = formatted
            .trim_end_matches('\n')
            .split('\n')
            .map(|l| {
                if l.is_empty() {
                    String::new()
                } else {
                    format!("{pad}{l}")
                }
            })
            .collect();
        replaced.push((block.first, block.end, new));
    }
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    for (first, end, new) in replaced {
        out.extend(lines[i..first].iter().map(|l| (*l).to_owned()));
        out.extend(new);
        i = end;
    }
    out.extend(lines[i..].iter().map(|l| (*l).to_owned()));
    Ok(out.join("\n"))
}
