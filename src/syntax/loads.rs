//! The targets of a source's top-level `load` statements, read off its
//! tokens.

use std::sync::{Arc, Mutex, OnceLock};

use super::lexer::{Kind, Token, lex, string_contents};
use crate::cache::{Bounded, Weight};

/// A source's load targets, as kept by [`load_targets_of`].
#[derive(Clone)]
struct Targets(Arc<[String]>);

impl Weight for Targets {
    fn weight(&self) -> usize {
        self.0.iter().map(|t| t.len() + 24).sum()
    }
}

/// Sources kept with their targets: a composition sends the same script
/// and modules on every reconcile, and lexing a 5 KB source costs tens of
/// microseconds, more than the rest of the server's share of a call.
const KEPT_SOURCES: usize = 512;
/// Their total weight (sources included), in bytes.
const KEPT_BYTES: usize = 16 << 20;

/// [`load_targets`] of `source`, lexed once per distinct text.
pub fn load_targets_of(source: &str) -> Arc<[String]> {
    static KEPT: OnceLock<Mutex<Bounded<Targets>>> = OnceLock::new();
    if !source.contains("load") {
        return Arc::from([]);
    }
    let kept = KEPT.get_or_init(|| Mutex::new(Bounded::new(KEPT_SOURCES, KEPT_BYTES)));
    if let Some(Targets(found)) = kept.lock().ok().and_then(|mut k| k.get(source)) {
        return found;
    }
    let found: Arc<[String]> = load_targets(source).into();
    if let Ok(mut kept) = kept.lock() {
        kept.insert(source.to_owned(), Targets(Arc::clone(&found)));
    }
    found
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_lexed_once_for_its_targets() {
        let source = "load(\"kept.star\", \"x\")\nload(\"@stdlib:v1/naming.star\", \"y\")\nz = x\n";
        let first = load_targets_of(source);
        assert_eq!(&*first, ["kept.star", "@stdlib:v1/naming.star"]);
        let copy = String::from(source);
        let again = load_targets_of(&copy);
        assert!(
            Arc::ptr_eq(&first, &again),
            "the second call reuses the first one's targets"
        );
        assert!(load_targets_of("x = 1\n").is_empty());
        let other = load_targets_of("load(\"other.star\", \"x\")\n");
        assert_eq!(&*other, ["other.star"]);
    }
}
