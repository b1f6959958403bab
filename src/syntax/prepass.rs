//! Source pre-pass that adapts scripts written for the Go Starlark dialect
//! (with `while`, top-level control flow and sets enabled) to what the
//! `starlark` crate accepts.
//!
//! The pass is lexer-aware: text inside string literals and comments is never
//! rewritten (except that tabs in comments become spaces), and bracket depth
//! and indentation are tracked. The rewrites are:
//!
//! * tabs outside strings are expanded (8-column stops in leading indentation,
//!   a single space elsewhere);
//! * `while COND:` becomes a bounded `for` loop whose first body statement is
//!   `if not (COND): break`;
//! * the identifier `assert` is renamed to `sl__assert` (also inside the
//!   symbol strings of `load` statements);
//! * a subscript holding a tuple without parentheses, `x[1, 2]`, becomes
//!   `x[(1, 2)]` (go.starlark.net reads it so; starlark-rust's parser
//!   would not take it as an assignment target);
//! * `RECEIVER.NAME(ARGS)`, for the few methods whose go.starlark.net
//!   behaviour starlark-rust lacks ([`GO_METHODS`]: `pop`, `union`,
//!   `update`, `codepoints`, `strip`, ...), becomes `_sl_NAME(RECEIVER,
//!   ARGS)`, a builtin that behaves as Go's method (negative list indices,
//!   several iterables, Go's messages) and otherwise calls the receiver's
//!   own method (see [`methods::method_calls`]);
//! * `name %= x`, `name <<= x`, `name *= x`, `name /= x`, `name //= x`
//!   and `name >>= x` become `name = name % (x)` (and so on), so that the
//!   operator redirections apply to them.
//!
//! Every rewrite is recorded in a [`LineMap`] so that positions reported for
//! the rewritten text can be mapped back to the user's source.

use std::collections::{HashMap, HashSet};

use super::lexer::{Kind, Token, lex, string_contents};
use super::line_map::{LineMap, Segment};
use super::nesting::check_nesting;
pub use super::source_error::PrepassError;

use crate::go::names::{ASSERT_PREFIX, GO_METHODS, RENAMED_ASSERT};
pub use crate::go::names::{RESERVED_PREFIX, unreserve, unreserve_in_text};
use methods::{MethodCalls, method_calls};

/// The augmented assignments rewritten to plain ones when their target is a
/// name, so that the redirected operators (`%`, `<<`, `*`, `/`, `//`, `>>`)
/// apply to them. `+=` stays: on a list it updates in place.
const REWRITTEN_AUGMENTED: [&str; 6] = ["%", "<<", "*", "/", "//", ">>"];

/// Upper bound on the number of iterations of a rewritten `while` loop.
const WHILE_BOUND: &str = "0x7fffffff";

/// The rewritten source and how to map its positions back to the user's text.

#[derive(Debug, Clone)]
pub struct Prepassed {
    /// The rewritten source, ready for the `starlark` parser.
    pub text: String,
    /// Maps positions in `text` back to the original source.
    pub map: LineMap,
}

/// Rewrites `source` for the `starlark` parser.
///
/// # Errors
///
/// Returns an error for an unterminated string literal, a `while` statement
/// whose `:` cannot be found, or an identifier using [`RESERVED_PREFIX`].
pub fn prepass(source: &str) -> Result<Prepassed, PrepassError> {
    // A source that does not lex is left to the parser, which reports it
    // in its own words and builds nothing deep from it.
    let lexed = lex(source);
    if let Ok(tokens) = &lexed {
        check_nesting(tokens, source)?;
    }
    let needs_work = source.contains('\t')
        || (source.contains(',') && source.contains('['))
        || source.contains("while")
        || source.contains("assert")
        || GO_METHODS.iter().any(|m| source.contains(m))
        || source.contains("%=")
        || source.contains("*=")
        || source.contains("<<=")
        || source.contains("/=")
        || source.contains(">>=")
        || source.contains(RESERVED_PREFIX);
    if !needs_work {
        return Ok(identity(source));
    }
    let tokens = lexed?;
    let mut rewriter = Rewriter {
        src: source,
        tokens,
        out: Emitter::default(),
        while_count: 0,
        renamed_strings: HashSet::new(),
        methods: MethodCalls::default(),
        tuple_subscripts: HashMap::new(),
    };
    rewriter.methods = method_calls(&rewriter.tokens, source);
    rewriter.tuple_subscripts = tuple_subscripts(&rewriter.tokens, source);
    rewriter.run()?;
    let (text, lines) = rewriter.out.finish();
    if text == source {
        return Ok(identity(source));
    }
    Ok(Prepassed {
        text,
        map: LineMap {
            lines,
            last_line: source.split('\n').count() - 1,
        },
    })
}

fn identity(source: &str) -> Prepassed {
    Prepassed {
        text: source.to_owned(),
        map: LineMap::default(),
    }
}

/// Builds the rewritten text together with its line map.
#[derive(Default)]
struct Emitter {
    text: String,
    /// Segments of the finished output lines.
    lines: Vec<Vec<Segment>>,
    /// Segments of the current output line.
    current: Vec<Segment>,
    /// Character column of the end of the current output line.
    col: usize,
    /// Byte offset in `text` where the current output line starts.
    line_start: usize,
    /// The current output line holds only whitespace so far.
    not_blank: bool,
}

impl Emitter {
    fn segment(&mut self, line: usize, col: usize, fixed: bool) {
        let new = Segment {
            out_col: self.col,
            line,
            col,
            fixed,
        };
        if let Some(last) = self.current.last_mut() {
            if last.out_col == self.col {
                *last = new;
                return;
            }
            let continues = !fixed
                && !last.fixed
                && last.line == line
                && last.col + (self.col - last.out_col) == col;
            if continues {
                return;
            }
        }
        self.current.push(new);
    }

    fn append(&mut self, piece: &str) {
        self.text.push_str(piece);
        self.col += piece.chars().count();
        if piece.chars().any(|c| !c.is_whitespace()) {
            self.not_blank = true;
        }
    }

    /// Starts a new output line.
    fn newline(&mut self) {
        self.text.push('\n');
        self.lines.push(std::mem::take(&mut self.current));
        self.col = 0;
        self.line_start = self.text.len();
        self.not_blank = false;
    }

    /// Appends text copied from the original source at (`line`, `col`).
    fn original(&mut self, text: &str, mut line: usize, mut col: usize) {
        for (index, piece) in text.split('\n').enumerate() {
            if index > 0 {
                self.newline();
                line += 1;
                col = 0;
            }
            self.segment(line, col, false);
            self.append(piece);
            col += piece.chars().count();
        }
    }

    /// Appends synthetic text (without newlines) standing for (`line`, `col`).
    fn synthetic(&mut self, text: &str, line: usize, col: usize) {
        debug_assert!(!text.contains('\n'), "synthetic text must stay on one line");
        self.segment(line, col, true);
        self.append(text);
    }

    fn is_blank(&self) -> bool {
        !self.not_blank
    }

    /// Number of leading spaces on the current output line.
    fn indent(&self) -> usize {
        self.text[self.line_start..]
            .chars()
            .take_while(|c| *c == ' ')
            .count()
    }

    fn finish(mut self) -> (String, Vec<Vec<Segment>>) {
        self.lines.push(self.current);
        (self.text, self.lines)
    }
}

struct Rewriter<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    out: Emitter,
    while_count: usize,
    /// Indices of `load` symbol strings whose contents are renamed.
    renamed_strings: HashSet<usize>,
    /// The `.NAME(` calls to rewrite.
    methods: MethodCalls,
    /// The `[` and `]` of subscripts holding a bare tuple, both ways.
    tuple_subscripts: HashMap<usize, bool>,
}

/// Words that end an operand (and a receiver scanned back from a method
/// call).
pub(super) const KEYWORDS: [&str; 20] = [
    "and", "break", "continue", "def", "elif", "else", "for", "if", "in", "is", "lambda", "load",
    "not", "or", "pass", "return", "while", "yield", "with", "assert",
];

/// Whether the token at `i` can end an operand, so that a `[` or `(`
/// right after it subscripts or calls it: a name other than a keyword, a
/// string, or a closing bracket.
pub(super) fn ends_operand(tokens: &[Token], src: &str, i: usize) -> bool {
    let token = tokens[i];
    let text = &src[token.start..token.end];
    match token.kind {
        Kind::Name => !KEYWORDS.contains(&text),
        Kind::Str => true,
        Kind::Punct => matches!(text, ")" | "]" | "}"),
        _ => false,
    }
}

/// The brackets of every subscript `x[a, b]` whose contents are a tuple
/// without parentheses: `[` maps to `true`, its `]` to `false`.
fn tuple_subscripts(tokens: &[Token], src: &str) -> HashMap<usize, bool> {
    let text = |i: usize| &src[tokens[i].start..tokens[i].end];
    let punct = |i: usize, p: &str| tokens[i].kind == Kind::Punct && text(i) == p;
    let mut out = HashMap::new();
    let mut previous: Option<usize> = None;
    // Bracket depth: a line break outside brackets ends the statement, so a
    // `[` starting the next line (`[a, b] = x`) is a list, not a subscript.
    let mut nesting = 0usize;
    for open in 0..tokens.len() {
        if tokens[open].kind == Kind::Newline && nesting == 0 {
            previous = None;
        }
        if tokens[open].kind.is_trivia() {
            continue;
        }
        match text(open) {
            "(" | "[" | "{" if tokens[open].kind == Kind::Punct => nesting += 1,
            ")" | "]" | "}" if tokens[open].kind == Kind::Punct => {
                nesting = nesting.saturating_sub(1);
            }
            _ => {}
        }
        let subscript = punct(open, "[") && previous.is_some_and(|p| ends_operand(tokens, src, p));
        previous = Some(open);
        if !subscript {
            continue;
        }
        let mut depth = 0usize;
        let mut comma = false;
        for (i, token) in tokens.iter().enumerate().skip(open) {
            if token.kind != Kind::Punct {
                continue;
            }
            match text(i) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth -= 1;
                    if depth == 0 {
                        if comma {
                            out.insert(open, true);
                            out.insert(i, false);
                        }
                        break;
                    }
                }
                "," if depth == 1 => comma = true,
                _ => {}
            }
        }
    }
    out
}

fn reserved_error(token: Token, name: &str) -> PrepassError {
    PrepassError::at(
        token.line,
        token.col,
        if name == RENAMED_ASSERT {
            format!("reserved identifier \"{name}\": the name is reserved by function-starlark")
        } else {
            format!(
                "reserved identifier \"{name}\": names starting with \"{RESERVED_PREFIX}\" are reserved by function-starlark"
            )
        },
    )
}

impl Rewriter<'_> {
    fn text(&self, token: Token) -> &str {
        &self.src[token.start..token.end]
    }

    fn is(&self, index: usize, kind: Kind, text: &str) -> bool {
        self.tokens
            .get(index)
            .is_some_and(|t| t.kind == kind && self.text(*t) == text)
    }

    /// Index of the first token at or after `index` that is not a space or tab.
    fn skip_spaces(&self, mut index: usize) -> usize {
        while self
            .tokens
            .get(index)
            .is_some_and(|t| matches!(t.kind, Kind::Space | Kind::Tab))
        {
            index += 1;
        }
        index
    }

    fn run(&mut self) -> Result<(), PrepassError> {
        let mut index = 0;
        let mut depth = 0usize;
        let mut statement_start = true;
        // Where a simple statement may begin: a statement start, or after a
        // `;` or a compound header's `:` on the same line.
        let mut simple_start = true;
        while let Some(&token) = self.tokens.get(index) {
            let at_start = statement_start && depth == 0;
            match token.kind {
                Kind::Newline => {
                    if depth == 0 {
                        statement_start = true;
                        simple_start = true;
                    }
                    index = self.emit(index)?;
                }
                kind if kind.is_trivia() => index = self.emit(index)?,
                Kind::Name if at_start && self.text(token) == "while" => {
                    (index, statement_start) = self.rewrite_while(index)?;
                    simple_start = true;
                }
                Kind::Name if simple_start && depth == 0 && self.augmented(index).is_some() => {
                    index = self.rewrite_augmented(index)?;
                    statement_start = false;
                    simple_start = false;
                }
                _ => {
                    if at_start && token.kind == Kind::Name && self.text(token) == "load" {
                        self.mark_load_symbols(index)?;
                    }
                    statement_start = false;
                    simple_start = false;
                    if token.kind == Kind::Punct {
                        match self.text(token) {
                            "(" | "[" | "{" => depth += 1,
                            ")" | "]" | "}" => depth = depth.saturating_sub(1),
                            ";" | ":" if depth == 0 => simple_start = true,
                            _ => {}
                        }
                    }
                    index = self.emit(index)?;
                }
            }
        }
        Ok(())
    }

    /// For `NAME OP= EXPR` with `OP` one of [`REWRITTEN_AUGMENTED`] and the
    /// name at `index`: the operator's first token, the `=` token and the
    /// last token of `EXPR`.
    fn augmented(&self, index: usize) -> Option<(usize, usize, usize)> {
        let op = self.skip_spaces(index + 1);
        let adjacent = |a: usize, b: usize| self.tokens[a].end == self.tokens[b].start;
        let mut eq = op;
        let mut spelled = String::new();
        while let Some(t) = self.tokens.get(eq).filter(|t| t.kind == Kind::Punct) {
            if eq > op && !adjacent(eq - 1, eq) {
                return None;
            }
            spelled.push_str(self.text(*t));
            if spelled.ends_with('=') || spelled.len() > 3 {
                break;
            }
            eq += 1;
        }
        let operator = spelled.strip_suffix('=')?;
        if !REWRITTEN_AUGMENTED.contains(&operator) {
            return None;
        }
        let mut depth = 0usize;
        let mut last = None;
        for (at, t) in self.tokens.iter().enumerate().skip(eq + 1) {
            match (t.kind, self.text(*t)) {
                (Kind::Newline | Kind::Comment, _) | (Kind::Punct, ";") if depth == 0 => break,
                (Kind::Punct, "(" | "[" | "{") => depth += 1,
                (Kind::Punct, ")" | "]" | "}") => depth = depth.saturating_sub(1),
                _ => {}
            }
            if !t.kind.is_trivia() {
                last = Some(at);
            }
        }
        Some((op, eq, last?))
    }

    /// Rewrites `NAME OP= EXPR` (the name at `index`) as
    /// `NAME = NAME OP (EXPR)`, which is what Go defines it as, so that the
    /// operator redirections reach it. Returns the index of the next token.
    fn rewrite_augmented(&mut self, index: usize) -> Result<usize, PrepassError> {
        let Some((op, eq, last)) = self.augmented(index) else {
            return self.emit(index);
        };
        let name = self.tokens[index];
        let operator = self.src[self.tokens[op].start..self.tokens[eq].start].to_owned();
        let spelled = if self.text(name) == "assert" {
            RENAMED_ASSERT.to_owned()
        } else {
            self.text(name).to_owned()
        };
        for at in index..op {
            self.emit_one(at)?;
        }
        let op_token = self.tokens[op];
        self.out.synthetic(
            &format!("= {spelled} {operator} ("),
            op_token.line,
            op_token.col,
        );
        let mut at = self.skip_spaces(eq + 1);
        while at <= last {
            at = self.emit(at)?;
        }
        let end = self.tokens[last];
        self.out.synthetic(")", end.line, end.col);
        Ok(at)
    }

    /// Emits the token at `index` (for a method call's `.`, the call's
    /// rewrite up to its `(`) and returns the index of the next token to
    /// process.
    fn emit(&mut self, index: usize) -> Result<usize, PrepassError> {
        let token = self.tokens[index];
        if let Some(names) = self.methods.opens.get(&index) {
            let mut opening = String::new();
            for name in names.iter().rev() {
                opening.push_str(RESERVED_PREFIX);
                opening.push_str(name);
                opening.push('(');
            }
            self.out.synthetic(&opening, token.line, token.col);
        }
        if let Some(&(paren, argument)) = self.methods.dots.get(&index) {
            if argument {
                self.out.synthetic(", ", token.line, token.col);
            }
            // The `(` is left to the caller, which tracks brackets; it is
            // dropped when emitted.
            return Ok(paren);
        }
        if self.methods.parens.contains(&index) {
            return Ok(index + 1);
        }
        match self.tuple_subscripts.get(&index) {
            Some(true) => {
                self.emit_one(index)?;
                self.out.synthetic("(", token.line, token.col);
            }
            Some(false) => {
                self.out.synthetic(")", token.line, token.col);
                self.emit_one(index)?;
            }
            None => self.emit_one(index)?,
        }
        Ok(index + 1)
    }

    fn emit_one(&mut self, index: usize) -> Result<(), PrepassError> {
        let Some(&token) = self.tokens.get(index) else {
            return Ok(());
        };
        let text = &self.src[token.start..token.end];
        match token.kind {
            Kind::Tab if self.out.is_blank() => {
                let width = 8 - self.out.col % 8;
                self.out
                    .synthetic(&" ".repeat(width), token.line, token.col);
            }
            Kind::Tab => self.out.original(" ", token.line, token.col),
            Kind::Comment => self
                .out
                .original(&text.replace('\t', " "), token.line, token.col),
            Kind::Name if text.starts_with(RESERVED_PREFIX) || text == RENAMED_ASSERT => {
                return Err(reserved_error(token, text));
            }
            Kind::Name if text == "assert" => {
                self.out.synthetic(ASSERT_PREFIX, token.line, token.col);
                self.out.original(text, token.line, token.col);
            }
            Kind::Str if self.renamed_strings.contains(&index) => {
                // Only strings whose contents are exactly `assert` are marked.
                let (start, _) = string_contents(text).unwrap_or((0, 0));
                self.out.original(&text[..start], token.line, token.col);
                self.out
                    .synthetic(ASSERT_PREFIX, token.line, token.col + start);
                self.out
                    .original(&text[start..], token.line, token.col + start);
            }
            _ => self.out.original(text, token.line, token.col),
        }
        Ok(())
    }

    /// For `load(...)` starting at the name token `index`, marks the symbol
    /// strings equal to `assert` for renaming and rejects reserved names.
    fn mark_load_symbols(&mut self, index: usize) -> Result<(), PrepassError> {
        let mut at = index + 1;
        while self.tokens.get(at).is_some_and(|t| t.kind.is_trivia()) {
            at += 1;
        }
        if !self.is(at, Kind::Punct, "(") {
            return Ok(());
        }
        let mut depth = 0usize;
        let mut seen_module = false;
        for (offset, token) in self.tokens[at..].iter().enumerate() {
            match (token.kind, &self.src[token.start..token.end]) {
                (Kind::Punct, "(" | "[" | "{") => depth += 1,
                (Kind::Punct, ")" | "]" | "}") => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                (Kind::Str, text) if depth == 1 => {
                    if !seen_module {
                        seen_module = true;
                        continue;
                    }
                    let contents = string_contents(text).map_or("", |(s, e)| &text[s..e]);
                    if contents == "assert" {
                        self.renamed_strings.insert(at + offset);
                    } else if contents.starts_with(RESERVED_PREFIX) || contents == RENAMED_ASSERT {
                        return Err(reserved_error(*token, contents));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Index of the `:` ending the `while` header at `index`.
    fn find_while_colon(&self, index: usize) -> Result<usize, PrepassError> {
        let keyword = self.tokens[index];
        let missing = || {
            PrepassError::at(
                keyword.line,
                keyword.col,
                "expected ':' after the condition of this while loop",
            )
        };
        let mut depth = 0usize;
        for (offset, token) in self.tokens[index + 1..].iter().enumerate() {
            match (token.kind, self.text(*token)) {
                (Kind::Punct, "(" | "[" | "{") => depth += 1,
                (Kind::Punct, ")" | "]" | "}") => depth = depth.saturating_sub(1),
                (Kind::Punct, ":") if depth == 0 => return Ok(index + 1 + offset),
                (Kind::Newline, _) if depth == 0 => return Err(missing()),
                _ => {}
            }
        }
        Err(missing())
    }

    /// Indentation width (after tab expansion) of the first line at or after
    /// token `index` that holds a statement, if any.
    fn body_indent(&self, index: usize) -> Option<usize> {
        let mut indent = 0;
        for token in self.tokens.get(index..)? {
            match token.kind {
                Kind::Newline => indent = 0,
                Kind::Space => indent += self.text(*token).chars().count(),
                Kind::Tab => indent = (indent / 8 + 1) * 8,
                Kind::Comment | Kind::Continuation => {}
                _ => return Some(indent),
            }
        }
        None
    }

    /// Rewrites the `while` statement whose keyword is at `index`. Returns the
    /// index of the next token to process and whether it starts a statement.
    fn rewrite_while(&mut self, index: usize) -> Result<(usize, bool), PrepassError> {
        let keyword = self.tokens[index];
        let colon_index = self.find_while_colon(index)?;
        let indent = self.out.indent();
        let number = self.while_count;
        self.while_count += 1;

        self.out.synthetic(
            &format!("for {RESERVED_PREFIX}w{number} in range({WHILE_BOUND})"),
            keyword.line,
            keyword.col,
        );
        self.emit_one(colon_index)?;

        let mut after = colon_index + 1;
        while self
            .tokens
            .get(after)
            .is_some_and(|t| matches!(t.kind, Kind::Space | Kind::Tab | Kind::Continuation))
        {
            after += 1;
        }
        let same_line_body = self
            .tokens
            .get(after)
            .filter(|t| !matches!(t.kind, Kind::Newline | Kind::Comment))
            .copied();

        if let Some(body) = same_line_body {
            let body_indent = " ".repeat(indent + 4);
            self.out.newline();
            self.emit_guard(&body_indent, index, colon_index)?;
            self.out.newline();
            self.out.synthetic(&body_indent, body.line, body.col);
            return Ok((after, false));
        }

        // The body starts on a following line: keep the trailing comment on the
        // header line and put the guard right after it.
        let mut next = colon_index + 1;
        while self
            .tokens
            .get(next)
            .is_some_and(|t| t.kind != Kind::Newline)
        {
            self.emit_one(next)?;
            next += 1;
        }
        if self.tokens.get(next).is_some() {
            self.emit_one(next)?;
            next += 1;
        } else {
            self.out.newline();
        }
        // Without a body, keep the guard at the header's indentation so the
        // parser still reports the missing block.
        let body_indent = " ".repeat(self.body_indent(next).unwrap_or(indent));
        self.emit_guard(&body_indent, index, colon_index)?;
        self.out.newline();
        Ok((next, true))
    }

    /// Emits `<indent>if not (COND): break` (without the newline) for the
    /// `while` at `keyword_index` whose header ends at `colon_index`.
    fn emit_guard(
        &mut self,
        indent: &str,
        keyword_index: usize,
        colon_index: usize,
    ) -> Result<(), PrepassError> {
        let keyword = self.tokens[keyword_index];
        let colon = self.tokens[colon_index];
        self.out
            .synthetic(&format!("{indent}if not ("), keyword.line, keyword.col);

        let mut start = keyword_index + 1;
        let mut end = colon_index;
        while start < end && self.tokens[start].kind.is_trivia() {
            start += 1;
        }
        while end > start && self.tokens[end - 1].kind.is_trivia() {
            end -= 1;
        }
        let mut at = start;
        while at < end {
            let token = self.tokens[at];
            if !token.kind.is_trivia() {
                at = self.emit(at)?;
                continue;
            }
            let run_start = at;
            let mut crosses_lines = false;
            while at < end && self.tokens[at].kind.is_trivia() {
                crosses_lines |= matches!(
                    self.tokens[at].kind,
                    Kind::Newline | Kind::Continuation | Kind::Comment
                );
                at += 1;
            }
            if crosses_lines {
                // Join the condition's physical lines with a single space.
                self.out.synthetic(" ", token.line, token.col);
            } else {
                for inner in run_start..at {
                    self.emit_one(inner)?;
                }
            }
        }
        self.out.synthetic("): break", colon.line, colon.col);
        Ok(())
    }
}

mod methods;
#[cfg(test)]
mod tests;
