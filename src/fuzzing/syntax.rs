//! The Go-dialect front end: the lexer, the pre-pass with its line map, the
//! load-target scan, and starlark-rust's parser on what the pre-pass gives.
//!
//! For each UTF-8 input: the tokens cover every byte, in order, on
//! character boundaries; every line of the rewritten text maps back to a
//! line of the input; and an identity map means an unchanged text.

use starlark::syntax::AstModule;

use crate::syntax::lexer::lex;
use crate::syntax::prepass::prepass;

/// The target's body.
pub fn syntax(data: &[u8]) {
    let Some(source) = super::text(data) else {
        return;
    };
    if let Ok(tokens) = lex(source) {
        let mut at = 0;
        for token in &tokens {
            assert_eq!(token.start, at, "a gap or overlap before {token:?}");
            assert!(
                token.end > token.start && source.is_char_boundary(token.end),
                "{token:?} is empty or ends inside a character"
            );
            at = token.end;
        }
        assert_eq!(at, source.len(), "the tokens stop before the end");
    }
    let _ = crate::loader::load_targets(source);
    let Ok(pre) = prepass(source) else {
        return;
    };
    if pre.map.is_identity() {
        assert_eq!(pre.text, source, "an identity map for a rewritten text");
    }
    let lines = source.split('\n').count();
    for (line, text) in pre.text.split('\n').enumerate() {
        for column in [0, text.chars().count()] {
            let (original, _) = pre.map.original(line, column);
            assert!(
                original < lines,
                "line {line}, column {column} of the rewritten text maps to line {original}, past the source's {lines}"
            );
        }
    }
    let _ = AstModule::parse("fuzz.star", pre.text, &crate::syntax::dialect());
}
