//! Quick fixes for the findings that have an obvious one: an unknown
//! keyword becomes the nearest parameter, an undefined name the nearest
//! name in scope, and a name the standard library or a schema module of
//! the workspace exports gets its load; a constructor's unknown field
//! becomes the nearest declared one, a value outside its enum the nearest
//! allowed one, and missing required fields are added with placeholders.

use std::collections::{BTreeMap, HashMap};

use lsp_types::{
    CodeAction, CodeActionKind, Diagnostic, NumberOrString, Position, Range, TextEdit, Uri,
    WorkspaceEdit,
};

use super::documents::Document;
use super::signature::parameters;
use crate::check::Remedy;
use crate::docs::FunctionDoc;
use crate::go::spell::nearest;

/// What the fixes draw names from.
pub struct Names<'a> {
    pub functions: &'a HashMap<String, FunctionDoc>,
    /// Every name a script sees without binding it.
    pub globals: &'a [String],
    /// The workspace's `schema()` constructors and the modules defining them.
    pub constructors: &'a BTreeMap<String, Vec<std::path::PathBuf>>,
}

/// The text between two quote characters in `message` after `marker`.
fn quoted<'m>(message: &'m str, marker: &str, quote: char) -> Option<&'m str> {
    let rest = &message[message.find(marker)? + marker.len()..];
    let rest = rest.strip_prefix(quote)?;
    rest.split(quote).next()
}

// `Uri` caches its parse inside; it is never changed while a key here.
#[allow(clippy::mutable_key_type)]
fn fix(title: String, uri: &Uri, diagnostic: &Diagnostic, edit: TextEdit) -> CodeAction {
    let mut changes = HashMap::new();
    changes.insert(uri.clone(), vec![edit]);
    CodeAction {
        title,
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic.clone()]),
        edit: Some(WorkspaceEdit {
            changes: Some(changes),
            ..WorkspaceEdit::default()
        }),
        is_preferred: Some(true),
        ..CodeAction::default()
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Where `keyword =` is written at or after `from` in `text`.
fn keyword_range(text: &str, from: Position, keyword: &str) -> Option<Range> {
    for (row, line) in text.lines().enumerate().skip(from.line as usize) {
        let start = if row == from.line as usize {
            from.character as usize
        } else {
            0
        };
        let mut search = start.min(line.len());
        while let Some(i) = line.get(search..).and_then(|l| l.find(keyword)) {
            let at = search + i;
            let before_ok =
                at == 0 || !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
            let after = line[at + keyword.len()..].trim_start();
            if before_ok && after.starts_with('=') && !after.starts_with("==") {
                let pos = |c: usize| Position::new(to_u32(row), to_u32(c));
                return Some(Range::new(pos(at), pos(at + keyword.len())));
            }
            search = at + keyword.len();
        }
    }
    None
}

/// The embedded standard library's exports: name -> the module to load.
fn stdlib_exports() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (file, text) in crate::loader::stdlib::FILES {
        if let Some((ast, _)) = crate::syntax::parse_quietly(file, text) {
            for name in crate::check::top_level_names(&ast) {
                if !name.starts_with('_') {
                    out.entry(name)
                        .or_insert_with(|| format!("{}:v1/{file}", crate::loader::stdlib::PACKAGE));
                }
            }
        }
    }
    out
}

/// The quick fixes for `diagnostics` in `doc`.
pub fn quick_fixes(
    uri: &Uri,
    doc: &Document,
    diagnostics: &[Diagnostic],
    names: &Names,
) -> Vec<CodeAction> {
    let mut out = Vec::new();
    for d in diagnostics {
        let Some(NumberOrString::String(rule)) = &d.code else {
            continue;
        };
        match rule.as_str() {
            "unknown-keyword" => {
                let Some(callee) = d.message.split("()").next() else {
                    continue;
                };
                let Some(keyword) = quoted(&d.message, "has no parameter ", '"') else {
                    continue;
                };
                let Some(f) = names.functions.get(callee) else {
                    continue;
                };
                let params = parameters(&f.params);
                let candidates: Vec<&str> = params
                    .iter()
                    .filter(|p| !p.starts_with('*') && *p != "/")
                    .map(|p| p.split('=').next().unwrap_or_default().trim())
                    .collect();
                if let Some(best) = nearest(keyword, &candidates)
                    && let Some(range) = keyword_range(&doc.text, d.range.start, keyword)
                {
                    out.push(fix(
                        format!("Change {keyword} to {best}"),
                        uri,
                        d,
                        TextEdit::new(range, best),
                    ));
                }
            }
            "undefined" => {
                let Some(name) = quoted(&d.message, "undefined variable ", '`') else {
                    continue;
                };
                let mut candidates: Vec<&str> = names.globals.iter().map(String::as_str).collect();
                let local = doc.bound_names();
                candidates.extend(local.iter().map(String::as_str));
                if let Some(best) = nearest(name, &candidates) {
                    out.push(fix(
                        format!("Change {name} to {best}"),
                        uri,
                        d,
                        TextEdit::new(d.range, best),
                    ));
                }
                // A constructor a module of the workspace defines, loaded
                // by its path below a script's own directory.
                let dir = uri
                    .as_str()
                    .strip_prefix("file://")
                    .filter(|_| !doc.yaml)
                    .and_then(|p| {
                        std::path::Path::new(p)
                            .parent()
                            .map(std::path::Path::to_path_buf)
                    });
                for module in names.constructors.get(name).into_iter().flatten() {
                    let Some(target) = dir
                        .as_deref()
                        .and_then(|d| super::index::load_target(d, module))
                    else {
                        continue;
                    };
                    let at = Position::new(0, 0);
                    out.push(fix(
                        format!("Load {name} from {target}"),
                        uri,
                        d,
                        TextEdit::new(Range::new(at, at), format!("load({target:?}, {name:?})\n")),
                    ));
                }
                if let Some(module) = stdlib_exports().get(name) {
                    let (line, indent) = doc.block.map_or((0, 0), |b| (b.first, b.indent));
                    let at = Position::new(to_u32(line), 0);
                    out.push(fix(
                        format!("Load {name} from {module}"),
                        uri,
                        d,
                        TextEdit::new(
                            Range::new(at, at),
                            format!("{}load({module:?}, {name:?})\n", " ".repeat(indent)),
                        ),
                    ));
                }
            }
            "unknown-field" | "field-enum" | "missing-field" => {
                let Some(remedy) = d
                    .data
                    .clone()
                    .and_then(|data| serde_json::from_value::<Remedy>(data).ok())
                else {
                    continue;
                };
                out.push(remedy_fix(uri, d, &remedy));
            }
            _ => {}
        }
    }
    out
}

/// The quick fix a constructor finding's remedy describes.
fn remedy_fix(uri: &Uri, d: &Diagnostic, remedy: &Remedy) -> CodeAction {
    match remedy {
        Remedy::Replace(text) => fix(
            format!("Change to {text}"),
            uri,
            d,
            TextEdit::new(d.range, text.clone()),
        ),
        Remedy::Insert { entries, at, first } => {
            let mut text = entries.join(", ");
            if !first {
                text.insert_str(0, ", ");
            }
            let names: Vec<&str> = entries
                .iter()
                .map(|e| {
                    e.split([' ', ':'])
                        .next()
                        .unwrap_or_default()
                        .trim_matches('"')
                })
                .collect();
            let position = Position::new(
                to_u32(at.0.saturating_sub(1)),
                to_u32(at.1.saturating_sub(1)),
            );
            fix(
                format!("Add the required {}", names.join(", ")),
                uri,
                d,
                TextEdit::new(Range::new(position, position), text),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use lsp_types::Position;

    use super::{keyword_range, quoted};

    #[test]
    fn the_keyword_is_found_after_the_call() {
        let text = "x = 1\nResource(\"a\", {}, depnds_on = [b],\n  depnds = 1)\n";
        let r = keyword_range(text, Position::new(1, 0), "depnds_on").expect("found");
        assert_eq!(
            (r.start.line, r.start.character, r.end.character),
            (1, 18, 27)
        );
        let r = keyword_range(text, Position::new(1, 0), "depnds").expect("found");
        assert_eq!((r.start.line, r.start.character), (2, 2));
        assert_eq!(
            quoted(
                "Resource() has no parameter \"depnds_on\"",
                "has no parameter ",
                '"'
            ),
            Some("depnds_on")
        );
    }
}
