//! The method calls the pre-pass hands to go.starlark.net's behaviour:
//! `RECEIVER.NAME(ARGS)` for a NAME of [`GO_METHODS`] becomes
//! `_sl_NAME(RECEIVER, ARGS)`.

use std::collections::{HashMap, HashSet};

use super::{KEYWORDS, ends_operand};
use crate::go::names::GO_METHODS;
use crate::syntax::lexer::{Kind, Token};

/// The calls `RECEIVER.NAME(...)` of a source whose method is one of
/// [`GO_METHODS`], by token index.
#[derive(Default)]
pub(super) struct MethodCalls {
    /// Where a receiver starts, and the methods of the calls that start
    /// there, innermost first (`a.pop().union()` has `pop` then `union`).
    pub(super) opens: HashMap<usize, Vec<&'static str>>,
    /// The `.` of each call: its `(` token, and whether an argument
    /// follows.
    pub(super) dots: HashMap<usize, (usize, bool)>,
    /// The `(` of each call, which the rewrite drops.
    pub(super) parens: HashSet<usize>,
}

/// Finds every `RECEIVER.NAME(` of `tokens`: the receiver is the postfix
/// chain before the `.` (names, literals and bracketed groups joined by
/// `.name`, calls and indexes), which in Starlark binds tighter than any
/// operator, so the rewrite keeps the expression's meaning.
pub(super) fn method_calls(tokens: &[Token], src: &str) -> MethodCalls {
    let text = |i: usize| &src[tokens[i].start..tokens[i].end];
    let meaningful = |i: usize| !tokens[i].kind.is_trivia();
    let next = |mut i: usize| {
        i += 1;
        while i < tokens.len() && !meaningful(i) {
            i += 1;
        }
        (i < tokens.len()).then_some(i)
    };
    let prev = |mut i: usize| loop {
        i = i.checked_sub(1)?;
        if meaningful(i) {
            return Some(i);
        }
    };
    let is_punct = |i: usize, p: &str| tokens[i].kind == Kind::Punct && text(i) == p;
    let opener = |close: usize| {
        let (open, shut) = match text(close) {
            ")" => ("(", ")"),
            "]" => ("[", "]"),
            _ => ("{", "}"),
        };
        let mut depth = 0usize;
        let mut i = close;
        loop {
            if is_punct(i, shut) {
                depth += 1;
            } else if is_punct(i, open) {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            i = i.checked_sub(1)?;
        }
    };
    let receiver_start = |dot: usize| -> Option<usize> {
        let mut j = prev(dot)?;
        loop {
            let token = tokens[j];
            match token.kind {
                Kind::Punct if matches!(text(j), ")" | "]" | "}") => {
                    let open = opener(j)?;
                    let before = prev(open);
                    let postfix =
                        text(j) != "}" && before.is_some_and(|b| ends_operand(tokens, src, b));
                    match before {
                        Some(b) if postfix => j = b,
                        _ => return Some(open),
                    }
                }
                Kind::Name if KEYWORDS.contains(&text(j)) => return None,
                Kind::Name | Kind::Number | Kind::Str => match prev(j) {
                    Some(p) if is_punct(p, ".") => j = prev(p)?,
                    _ => return Some(j),
                },
                _ => return None,
            }
        }
    };
    let mut calls = MethodCalls::default();
    for dot in 0..tokens.len() {
        if !is_punct(dot, ".") {
            continue;
        }
        let Some((name, method)) = next(dot).and_then(|n| {
            let method = GO_METHODS.iter().find(|m| **m == text(n))?;
            (tokens[n].kind == Kind::Name).then_some((n, *method))
        }) else {
            continue;
        };
        let Some(paren) = next(name).filter(|&p| is_punct(p, "(")) else {
            continue;
        };
        let Some(start) = receiver_start(dot) else {
            continue;
        };
        let argument = next(paren).is_some_and(|a| !is_punct(a, ")"));
        calls.opens.entry(start).or_default().push(method);
        calls.dots.insert(dot, (paren, argument));
        calls.parens.insert(paren);
    }
    calls
}
