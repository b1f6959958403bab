//! The targets of a source's top-level `load` statements, read off its
//! tokens.

use super::lexer::{Kind, Token, lex, string_contents};

/// The module strings of a source's top-level `load` statements, read off
/// its tokens: no parse, so no recursion however deep the source nests
/// (the server reads them before a worker runs the script). A source that
/// does not lex has none; its error is reported when it runs.
pub fn load_targets(source: &str) -> Vec<String> {
    if !source.contains("load") {
        return Vec::new();
    }
    let Ok(tokens) = lex(source) else {
        return Vec::new();
    };
    let meaningful: Vec<&Token> = tokens.iter().filter(|t| !t.kind.is_trivia()).collect();
    let text = |t: &Token| &source[t.start..t.end];
    let mut targets = Vec::new();
    for (i, token) in meaningful.iter().enumerate() {
        // `load` at the start of a line, unindented, then `(` and a string.
        let top_level = token.col == 0
            || source[..token.start]
                .trim_end_matches([' ', '\t'])
                .ends_with(';');
        if token.kind == Kind::Name
            && text(token) == "load"
            && top_level
            && let (Some(open), Some(module)) = (meaningful.get(i + 1), meaningful.get(i + 2))
            && text(open) == "("
            && module.kind == Kind::Str
            && let Some(value) = string_value(text(module))
        {
            targets.push(value);
        }
    }
    targets
}

/// The value of a simple string literal token: quotes removed, the common
/// escapes resolved. `None` for anything else (bytes, an unknown escape).
fn string_value(token: &str) -> Option<String> {
    let raw = token.starts_with(['r', 'R']);
    let body = token.trim_start_matches(['r', 'R']);
    if body.starts_with(['b', 'B']) {
        return None;
    }
    let (start, end) = string_contents(body)?;
    let inner = &body[start..end];
    if raw {
        return Some(inner.to_owned());
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            c @ ('\\' | '"' | '\'') => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}
