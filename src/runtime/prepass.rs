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
//! * the identifier `assert` is renamed to `_sl_assert` (also inside the
//!   symbol strings of `load` statements);
//! * `.pop(-1)` becomes `.pop()`;
//! * `name %= x`, `name <<= x`, `name *= x`, `name /= x`, `name //= x`
//!   and `name >>= x` become `name = name % (x)` (and so on), so that the
//!   operator redirections apply to them.
//!
//! Every rewrite is recorded in a [`LineMap`] so that positions reported for
//! the rewritten text can be mapped back to the user's source.

use std::collections::HashSet;
use std::fmt;

use crate::go::names::RENAMED_ASSERT;
pub use crate::go::names::{RESERVED_PREFIX, unreserve, unreserve_in_text};

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

/// A problem found while rewriting; positions are 1-based and refer to the
/// original source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepassError {
    /// 1-based line number in the original source.
    pub line: usize,
    /// 1-based column (in characters) in the original source.
    pub column: usize,
    /// Human readable description of the problem.
    pub message: String,
}

impl PrepassError {
    /// Builds an error from a 0-based position.
    fn at(line: usize, col: usize, message: impl Into<String>) -> Self {
        Self {
            line: line + 1,
            column: col + 1,
            message: message.into(),
        }
    }
}

impl fmt::Display for PrepassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for PrepassError {}

/// One piece of an output line: output columns from `out_col` on come from
/// the original position (`line`, `col`). A `fixed` segment is synthetic text
/// and all of its columns map to that single original position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    out_col: usize,
    line: usize,
    col: usize,
    fixed: bool,
}

/// Maps positions in the rewritten text back to the original source.
///
/// Lines and columns are 0-based; columns count characters (Unicode scalar
/// values). An empty map (the default) is the identity.
#[derive(Debug, Clone, Default)]
pub struct LineMap {
    /// Segments of every output line, sorted by output column. Empty for the
    /// identity map.
    lines: Vec<Vec<Segment>>,
}

impl LineMap {
    /// Maps a 0-based (line, column) in the rewritten text to the 0-based
    /// (line, column) in the original source.
    ///
    /// Inserted lines map to the line of the `while` they came from. Columns
    /// are exact for unchanged text, for text after tab expansion and for
    /// text after renamed identifiers; synthetic text maps to the position of
    /// the construct it replaced.
    #[must_use]
    pub fn original(&self, line: usize, column: usize) -> (usize, usize) {
        let Some(last_index) = self.lines.len().checked_sub(1) else {
            return (line, column);
        };
        let Some(segments) = self.lines.get(line) else {
            // Past the end of the rewritten text: extrapolate from the last line.
            let (last_line, _) = self.original(last_index, 0);
            return (last_line + (line - last_index), column);
        };
        let after = segments.partition_point(|s| s.out_col <= column);
        let segment = match after.checked_sub(1) {
            Some(index) => segments.get(index),
            None => segments.first(),
        };
        match segment {
            None => (line, column),
            Some(s) if s.fixed => (s.line, s.col),
            Some(s) => (s.line, s.col + column.saturating_sub(s.out_col)),
        }
    }

    /// True when the source needed no rewriting at all (then `text == source`).
    #[must_use]
    pub fn is_identity(&self) -> bool {
        self.lines.is_empty()
    }
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
        || source.contains("while")
        || source.contains("assert")
        || source.contains("pop")
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
    };
    rewriter.run()?;
    let (text, lines) = rewriter.out.finish();
    if text == source {
        return Ok(identity(source));
    }
    Ok(Prepassed {
        text,
        map: LineMap { lines },
    })
}

fn identity(source: &str) -> Prepassed {
    Prepassed {
        text: source.to_owned(),
        map: LineMap::default(),
    }
}

// ---------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Spaces, form feeds and lone carriage returns.
    Space,
    /// A single tab character.
    Tab,
    /// `\n` or `\r\n`.
    Newline,
    /// A backslash followed by a newline.
    Continuation,
    /// `#` up to (not including) the end of the line.
    Comment,
    Name,
    Number,
    Str,
    /// Any other single character.
    Punct,
}

impl Kind {
    /// Tokens that carry no meaning for the rewrites.
    fn is_trivia(self) -> bool {
        matches!(
            self,
            Kind::Space | Kind::Tab | Kind::Newline | Kind::Continuation | Kind::Comment
        )
    }
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    /// Byte range in the source.
    start: usize,
    end: usize,
    /// 0-based line and character column of the first character.
    line: usize,
    col: usize,
}

struct Cursor<'a> {
    src: &'a str,
    pos: usize,
    line: usize,
    col: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_nth(&self, n: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(n)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.col = 0;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn bump_while(&mut self, mut keep: impl FnMut(char) -> bool) {
        while self.peek().is_some_and(&mut keep) {
            self.bump();
        }
    }

    fn at_newline(&self) -> bool {
        let rest = &self.src[self.pos..];
        rest.starts_with('\n') || rest.starts_with("\r\n")
    }
}

fn is_name_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_name_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn is_string_prefix(name: &str) -> bool {
    matches!(name.to_ascii_lowercase().as_str(), "r" | "b" | "rb" | "br")
}

/// Splits the source into tokens covering every byte of it.
fn lex(src: &str) -> Result<Vec<Token>, PrepassError> {
    let mut cur = Cursor {
        src,
        pos: 0,
        line: 0,
        col: 0,
    };
    let mut tokens = Vec::new();
    while let Some(c) = cur.peek() {
        let (start, line, col) = (cur.pos, cur.line, cur.col);
        let kind = match c {
            '\n' => {
                cur.bump();
                Kind::Newline
            }
            '\r' if cur.at_newline() => {
                cur.bump();
                cur.bump();
                Kind::Newline
            }
            ' ' | '\x0c' | '\r' => {
                cur.bump();
                cur.bump_while(|c| c == ' ' || c == '\x0c');
                Kind::Space
            }
            '\t' => {
                cur.bump();
                Kind::Tab
            }
            '\\' => {
                cur.bump();
                if cur.at_newline() {
                    if cur.peek() == Some('\r') {
                        cur.bump();
                    }
                    cur.bump();
                    Kind::Continuation
                } else {
                    Kind::Punct
                }
            }
            '#' => {
                cur.bump_while(|c| c != '\n');
                Kind::Comment
            }
            '"' | '\'' => {
                lex_string(&mut cur)?;
                Kind::Str
            }
            c if is_name_start(c) => {
                cur.bump_while(is_name_continue);
                let quote_next = matches!(cur.peek(), Some('"' | '\''));
                if quote_next && is_string_prefix(&src[start..cur.pos]) {
                    lex_string(&mut cur)?;
                    Kind::Str
                } else {
                    Kind::Name
                }
            }
            c if c.is_ascii_digit()
                || (c == '.' && cur.peek_nth(1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                cur.bump_while(|c| c == '.' || is_name_continue(c));
                Kind::Number
            }
            _ => {
                cur.bump();
                Kind::Punct
            }
        };
        tokens.push(Token {
            kind,
            start,
            end: cur.pos,
            line,
            col,
        });
    }
    Ok(tokens)
}

/// Consumes a string literal whose opening quote is at the cursor.
fn lex_string(cur: &mut Cursor<'_>) -> Result<(), PrepassError> {
    let (line, col) = (cur.line, cur.col);
    let Some(quote) = cur.bump() else {
        return Err(PrepassError::at(line, col, "unterminated string literal"));
    };
    let triple = cur.peek() == Some(quote) && cur.peek_nth(1) == Some(quote);
    if triple {
        cur.bump();
        cur.bump();
    }
    let error = || {
        let what = if triple {
            "unterminated triple-quoted string literal"
        } else {
            "unterminated string literal"
        };
        PrepassError::at(line, col, what)
    };
    loop {
        match cur.bump() {
            None => return Err(error()),
            Some('\\') => {
                if cur.bump().is_none() {
                    return Err(error());
                }
            }
            Some('\n') if !triple => return Err(error()),
            Some(c) if c == quote => {
                if !triple {
                    return Ok(());
                }
                if cur.peek() == Some(quote) && cur.peek_nth(1) == Some(quote) {
                    cur.bump();
                    cur.bump();
                    return Ok(());
                }
            }
            Some(_) => {}
        }
    }
}

/// Byte range of the contents of a string literal token (between the quotes).
fn string_contents(text: &str) -> Option<(usize, usize)> {
    let quote_at = text.find(['"', '\''])?;
    let quote = &text[quote_at..=quote_at];
    let quote_len = if text[quote_at..].starts_with(&quote.repeat(3)) && text.len() >= quote_at + 6
    {
        3
    } else {
        1
    };
    let end = text.len().checked_sub(quote_len)?;
    let start = quote_at + quote_len;
    (start <= end).then_some((start, end))
}

// ---------------------------------------------------------------------------
// Load targets
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Nesting
// ---------------------------------------------------------------------------

/// How deep a source may nest: blocks, brackets, and operators chained in
/// one expression all count. The parser, the compiler and the value of an
/// expression's tree recurse once per level, on a stack sized for this
/// (a few KiB a level). Go accepts any depth its 1 GB goroutine stacks
/// hold; 5,000 nested brackets, as deep as any generated source we have
/// seen, pass here with room to spare.
pub const MAX_NESTING: usize = 10_000;

/// Fails at the first token past [`MAX_NESTING`] levels. The count is an
/// upper bound of the syntax tree's depth: within a bracket (or a
/// statement), every operator since the last `,`, `=` or entry `:` adds a
/// level, as chains of `a + b + ...`, `a.b.c` and `f()()` nest.
fn check_nesting(tokens: &[Token], src: &str) -> Result<(), PrepassError> {
    let mut depth = Depth::default();
    let mut line_start = true;
    // Whether the previous token ends an operand: a bracket after it is a
    // call or an index, which nests.
    let mut after_operand = false;
    for token in tokens
        .iter()
        .filter(|t| !t.kind.is_trivia() || t.kind == Kind::Newline)
    {
        let text = &src[token.start..token.end];
        if token.kind == Kind::Newline {
            if depth.frames.is_empty() {
                depth.top = 0;
                line_start = true;
                after_operand = false;
            }
            continue;
        }
        if line_start {
            line_start = false;
            while depth
                .blocks
                .last()
                .is_some_and(|&indent| indent >= token.col)
            {
                depth.blocks.pop();
            }
            depth.blocks.push(token.col);
        }
        let operand = match (token.kind, text) {
            (Kind::Punct, "(" | "[" | "{") => {
                if after_operand {
                    depth.operator();
                }
                depth.frames.push((text.as_bytes()[0], 0));
                false
            }
            (Kind::Punct, ")" | "]" | "}") => {
                if let Some((_, ops)) = depth.frames.pop() {
                    depth.inner -= ops;
                }
                true
            }
            (Kind::Punct, "," | "=" | ";") => {
                depth.separator();
                false
            }
            (Kind::Punct, ":") => {
                // In a dict or a slice a colon separates; elsewhere it
                // belongs to a lambda or a block header.
                if matches!(depth.frames.last(), Some((b'{' | b'[', _))) {
                    depth.separator();
                }
                false
            }
            (Kind::Punct, _)
            | (Kind::Name, "and" | "or" | "not" | "in" | "is" | "if" | "else" | "lambda" | "for") =>
            {
                depth.operator();
                false
            }
            _ => true,
        };
        after_operand = operand;
        if depth.levels() > MAX_NESTING {
            return Err(PrepassError::at(
                token.line,
                token.col,
                format!(
                    "the code nests more than {MAX_NESTING} levels deep here (blocks, brackets and chained operators each count one); split the expression into smaller ones"
                ),
            ));
        }
    }
    Ok(())
}

/// The nesting counted so far by [`check_nesting`].
#[derive(Default)]
struct Depth {
    /// Per open bracket: its opening character and the operators counted
    /// in it since its last separator.
    frames: Vec<(u8, usize)>,
    /// Operators counted in all open brackets.
    inner: usize,
    /// Operators of the statement outside any bracket.
    top: usize,
    /// The indentation of the enclosing blocks.
    blocks: Vec<usize>,
}

impl Depth {
    fn operator(&mut self) {
        match self.frames.last_mut() {
            Some((_, ops)) => {
                *ops += 1;
                self.inner += 1;
            }
            None => self.top += 1,
        }
    }

    fn separator(&mut self) {
        match self.frames.last_mut() {
            Some((_, ops)) => self.inner -= std::mem::take(ops),
            None => self.top = 0,
        }
    }

    fn levels(&self) -> usize {
        self.blocks.len() + self.frames.len() + self.inner + self.top
    }
}

// ---------------------------------------------------------------------------
// Emitter
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Rewriter
// ---------------------------------------------------------------------------

struct Rewriter<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    out: Emitter,
    while_count: usize,
    /// Indices of `load` symbol strings whose contents are renamed.
    renamed_strings: HashSet<usize>,
}

fn reserved_error(token: Token, name: &str) -> PrepassError {
    PrepassError::at(
        token.line,
        token.col,
        format!(
            "reserved identifier \"{name}\": names starting with \"{RESERVED_PREFIX}\" are reserved by function-starlark"
        ),
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

    /// Emits the token at `index` (or a `.pop(-1)` sequence starting there)
    /// and returns the index of the next token to process.
    fn emit(&mut self, index: usize) -> Result<usize, PrepassError> {
        if let Some((open, close)) = self.match_pop_minus_one(index) {
            for inner in index..=open {
                self.emit_one(inner)?;
            }
            self.emit_one(close)?;
            return Ok(close + 1);
        }
        self.emit_one(index)?;
        Ok(index + 1)
    }

    /// Matches `.` `pop` `(` `-` `1` `)` (spaces allowed between tokens) at
    /// `index`, returning the indices of the parentheses.
    fn match_pop_minus_one(&self, index: usize) -> Option<(usize, usize)> {
        if !self.is(index, Kind::Punct, ".") {
            return None;
        }
        let expected = [
            (Kind::Name, "pop"),
            (Kind::Punct, "("),
            (Kind::Punct, "-"),
            (Kind::Number, "1"),
            (Kind::Punct, ")"),
        ];
        let mut found = [0usize; 5];
        let mut at = index;
        for (slot, (kind, text)) in found.iter_mut().zip(expected) {
            at = self.skip_spaces(at + 1);
            if !self.is(at, kind, text) {
                return None;
            }
            *slot = at;
        }
        Some((found[1], found[4]))
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
            Kind::Name if text.starts_with(RESERVED_PREFIX) => {
                return Err(reserved_error(token, text));
            }
            Kind::Name if text == "assert" => {
                self.out.synthetic(RESERVED_PREFIX, token.line, token.col);
                self.out.original(text, token.line, token.col);
            }
            Kind::Str if self.renamed_strings.contains(&index) => {
                // Only strings whose contents are exactly `assert` are marked.
                let (start, _) = string_contents(text).unwrap_or((0, 0));
                self.out.original(&text[..start], token.line, token.col);
                self.out
                    .synthetic(RESERVED_PREFIX, token.line, token.col + start);
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
                    } else if contents.starts_with(RESERVED_PREFIX) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(source: &str) -> String {
        match prepass(source) {
            Ok(p) => p.text,
            Err(e) => panic!("prepass failed: {e}"),
        }
    }

    fn rewrite_with_map(source: &str) -> Prepassed {
        match prepass(source) {
            Ok(p) => p,
            Err(e) => panic!("prepass failed: {e}"),
        }
    }

    fn error(source: &str) -> PrepassError {
        match prepass(source) {
            Ok(p) => panic!("expected an error, got {:?}", p.text),
            Err(e) => e,
        }
    }

    // --- identity ---------------------------------------------------------

    #[test]
    fn source_without_trigger_words_takes_the_identity_fast_path() {
        let source = "x = 1\ndef f(y):\n    return y + x\n";
        let p = rewrite_with_map(source);
        assert_eq!(p.text, source);
        assert!(p.map.is_identity());
        assert_eq!(p.map.original(2, 11), (2, 11));
    }

    #[test]
    fn trigger_words_only_inside_strings_and_comments_leave_an_identity_map() {
        let source = "s = \"while assert x.pop(-1)\"  # while assert\n";
        let p = rewrite_with_map(source);
        assert_eq!(p.text, source);
        assert!(p.map.is_identity());
    }

    #[test]
    fn default_line_map_is_the_identity() {
        let map = LineMap::default();
        assert!(map.is_identity());
        assert_eq!(map.original(4, 2), (4, 2));
    }

    // --- tabs ---------------------------------------------------------------

    #[test]
    fn tabs_in_indentation_expand_to_eight_column_stops() {
        let source = "def f():\n\tx = 1\n\tif x:\n\t\ty = 2\n  \tz = 3\n";
        let expected =
            "def f():\n        x = 1\n        if x:\n                y = 2\n        z = 3\n";
        let p = rewrite_with_map(source);
        assert_eq!(p.text, expected);
        assert_eq!(p.map.original(1, 8), (1, 1));
        assert_eq!(p.map.original(3, 16), (3, 2));
        assert_eq!(p.map.original(3, 20), (3, 6));
        assert_eq!(p.map.original(4, 8), (4, 3));
    }

    #[test]
    fn tab_between_tokens_becomes_one_space() {
        let p = rewrite_with_map("x =\t1\t+\t2\n");
        assert_eq!(p.text, "x = 1 + 2\n");
        assert_eq!(p.map.original(0, 8), (0, 8));
        assert!(!p.map.is_identity());
    }

    #[test]
    fn tab_inside_string_is_kept() {
        let source = "x = \"a\tb\"\ny = '''c\n\td'''\n";
        assert_eq!(rewrite(source), source);
    }

    #[test]
    fn tab_inside_comment_becomes_a_space() {
        assert_eq!(rewrite("x = 1  #\tnote\n"), "x = 1  # note\n");
    }

    // --- while ------------------------------------------------------------

    #[test]
    fn while_with_indented_body_becomes_bounded_for() {
        let source = "i = 0\nwhile i < 3:\n    i += 1\nprint(i)\n";
        let expected = "i = 0\nfor _sl_w0 in range(0x7fffffff):\n    if not (i < 3): break\n    i += 1\nprint(i)\n";
        assert_eq!(rewrite(source), expected);
    }

    #[test]
    fn nested_while_loops_get_distinct_counters() {
        let source = "while a:\n    while b:\n        f()\n    g()\nwhile c:\n    h()\n";
        let expected = "for _sl_w0 in range(0x7fffffff):\n    if not (a): break\n    for _sl_w1 in range(0x7fffffff):\n        if not (b): break\n        f()\n    g()\nfor _sl_w2 in range(0x7fffffff):\n    if not (c): break\n    h()\n";
        assert_eq!(rewrite(source), expected);
    }

    #[test]
    fn while_inside_def_uses_the_body_indentation() {
        let source = "def f(n):\n    while n > 0:\n      n -= 1\n    return n\n";
        let expected = "def f(n):\n    for _sl_w0 in range(0x7fffffff):\n      if not (n > 0): break\n      n -= 1\n    return n\n";
        assert_eq!(rewrite(source), expected);
    }

    #[test]
    fn tab_indented_while_uses_expanded_indentation() {
        let source = "def f():\n\twhile x:\n\t\ty()\n";
        let expected = "def f():\n        for _sl_w0 in range(0x7fffffff):\n                if not (x): break\n                y()\n";
        assert_eq!(rewrite(source), expected);
    }

    #[test]
    fn while_with_same_line_body_becomes_bounded_for() {
        let source = "def f():\n    while x: f(); g()  # c\n    y()\n";
        let expected = "def f():\n    for _sl_w0 in range(0x7fffffff):\n        if not (x): break\n        f(); g()  # c\n    y()\n";
        let p = rewrite_with_map(source);
        assert_eq!(p.text, expected);
        assert_eq!(p.map.original(2, 0), (1, 4));
        assert_eq!(p.map.original(3, 8), (1, 13));
        assert_eq!(p.map.original(3, 11), (1, 16));
        assert_eq!(p.map.original(4, 4), (2, 4));
    }

    #[test]
    fn while_with_multi_line_bracketed_condition_is_joined_onto_the_guard() {
        let source = "while (a and # first\n       b):\n    f()\nz()\n";
        let expected =
            "for _sl_w0 in range(0x7fffffff):\n    if not ((a and b)): break\n    f()\nz()\n";
        let p = rewrite_with_map(source);
        assert_eq!(p.text, expected);
        // `for` header and guard map to the `while` line.
        assert_eq!(p.map.original(0, 0), (0, 0));
        assert_eq!(p.map.original(1, 0), (0, 0));
        // `a` and `b` inside the guard map to their own original lines.
        assert_eq!(p.map.original(1, 13), (0, 7));
        assert_eq!(p.map.original(1, 19), (1, 7));
        // Lines after the header keep their original numbers.
        assert_eq!(p.map.original(2, 4), (2, 4));
        assert_eq!(p.map.original(3, 0), (3, 0));
    }

    #[test]
    fn while_inside_strings_and_comments_is_untouched() {
        let source = "s = 'while x: y'\n# while x:\nt = \"\"\"\nwhile y:\n\"\"\"\n";
        assert_eq!(rewrite(source), source);
    }

    #[test]
    fn identifiers_containing_while_are_untouched() {
        let source = "while_x = 1\nx.while_y = 2\ny = x.while\n";
        assert_eq!(rewrite(source), source);
    }

    #[test]
    fn while_body_keeps_break_and_continue() {
        let source = "while True:\n    if a:\n        continue\n    break\n";
        let expected = "for _sl_w0 in range(0x7fffffff):\n    if not (True): break\n    if a:\n        continue\n    break\n";
        assert_eq!(rewrite(source), expected);
    }

    #[test]
    fn comment_after_while_colon_stays_on_the_header_line() {
        let source = "while x:  # loop\n\n    # body\n    f()\n";
        let expected = "for _sl_w0 in range(0x7fffffff):  # loop\n    if not (x): break\n\n    # body\n    f()\n";
        assert_eq!(rewrite(source), expected);
    }

    #[test]
    fn while_at_end_of_file_without_newline_is_rewritten() {
        assert_eq!(
            rewrite("while x:\n    f()"),
            "for _sl_w0 in range(0x7fffffff):\n    if not (x): break\n    f()"
        );
        assert_eq!(
            rewrite("while x: f()"),
            "for _sl_w0 in range(0x7fffffff):\n    if not (x): break\n    f()"
        );
    }

    #[test]
    fn while_condition_with_slices_and_dicts_finds_the_right_colon() {
        let source = "while l[1:2] and {1: 2}:\n    f()\n";
        let expected =
            "for _sl_w0 in range(0x7fffffff):\n    if not (l[1:2] and {1: 2}): break\n    f()\n";
        assert_eq!(rewrite(source), expected);
    }

    #[test]
    fn while_without_colon_is_an_error() {
        let e = error("x = 1\n  while x\n    f()\n");
        assert_eq!((e.line, e.column), (2, 3));
        assert!(e.message.contains("':'"), "{}", e.message);
    }

    #[test]
    fn crlf_line_endings_are_preserved_around_a_while_rewrite() {
        let source = "while x:\r\n    f()\r\n";
        let expected = "for _sl_w0 in range(0x7fffffff):\r\n    if not (x): break\n    f()\r\n";
        assert_eq!(rewrite(source), expected);
    }

    // --- assert -------------------------------------------------------------

    #[test]
    fn assert_is_renamed_as_a_variable() {
        assert_eq!(
            rewrite("assert = 1\nprint(assert)\n"),
            "_sl_assert = 1\nprint(_sl_assert)\n"
        );
    }

    #[test]
    fn assert_is_renamed_as_a_keyword_argument_name() {
        assert_eq!(
            rewrite("s = struct(assert = 1)\n"),
            "s = struct(_sl_assert = 1)\n"
        );
    }

    #[test]
    fn assert_is_renamed_as_an_attribute() {
        assert_eq!(rewrite("x.assert.eq(1, 1)\n"), "x._sl_assert.eq(1, 1)\n");
    }

    #[test]
    fn assert_in_load_symbol_strings_is_renamed() {
        let source = "load(\"assert.star\", \"assert\", a = 'assert', assert = \"x\", \"other\")\n";
        let expected = "load(\"assert.star\", \"_sl_assert\", a = '_sl_assert', _sl_assert = \"x\", \"other\")\n";
        assert_eq!(rewrite(source), expected);
    }

    #[test]
    fn assert_inside_other_strings_is_untouched() {
        let source = "f(\"assert\")\nx = {'assert': assert}\n";
        assert_eq!(
            rewrite(source),
            "f(\"assert\")\nx = {'assert': _sl_assert}\n"
        );
    }

    #[test]
    fn identifiers_containing_assert_are_untouched() {
        let source = "assert_eq(1, 1)\nmy_assert = 2\n";
        assert_eq!(rewrite(source), source);
    }

    #[test]
    fn renamed_identifier_columns_map_back_by_the_length_difference() {
        let p = rewrite_with_map("assert.eq(a, b)\n");
        assert_eq!(p.text, "_sl_assert.eq(a, b)\n");
        assert_eq!(p.map.original(0, 0), (0, 0));
        assert_eq!(p.map.original(0, 4), (0, 0));
        assert_eq!(p.map.original(0, 7), (0, 3));
        assert_eq!(p.map.original(0, 14), (0, 10));
    }

    #[test]
    fn reserved_prefix_identifier_is_rejected_with_its_position() {
        let e = error("x = 1\ny = _sl_foo\n");
        assert_eq!((e.line, e.column), (2, 5));
        assert_eq!(
            e.message,
            "reserved identifier \"_sl_foo\": names starting with \"_sl_\" are reserved by function-starlark"
        );
        let e = error("_sl_assert = 1\n");
        assert_eq!((e.line, e.column), (1, 1));
        assert_eq!(error("x._sl_y\n").column, 3);
    }

    #[test]
    fn reserved_prefix_in_load_symbol_is_rejected() {
        let e = error("load(\"m.star\", \"_sl_x\")\n");
        assert_eq!((e.line, e.column), (1, 16));
    }

    #[test]
    fn reserved_prefix_inside_strings_is_allowed() {
        let source = "x = '_sl_foo'\n";
        assert_eq!(rewrite(source), source);
    }

    #[test]
    fn unreserve_maps_renamed_assert_back() {
        assert_eq!(unreserve("_sl_assert"), "assert");
        assert_eq!(unreserve("assert"), "assert");
        assert_eq!(unreserve("other"), "other");
    }

    // --- pop(-1) ------------------------------------------------------------

    #[test]
    fn pop_minus_one_is_rewritten_to_pop_without_arguments() {
        let p = rewrite_with_map("x.pop(-1)\ny = s.pop( - 1 ) + 1\n");
        assert_eq!(p.text, "x.pop()\ny = s.pop() + 1\n");
        assert_eq!(p.map.original(1, 10), (1, 15));
        assert_eq!(p.map.original(1, 12), (1, 17));
    }

    #[test]
    fn other_pop_calls_are_untouched() {
        let source = "x.pop(-2)\npop(-1)\nx.pop(1)\nx.pop(-1.5)\nx.pop(-1, 2)\n";
        assert_eq!(rewrite(source), source);
    }

    #[test]
    fn pop_minus_one_inside_a_while_condition_is_rewritten() {
        let source = "while s.pop(-1):\n    pass\n";
        let expected = "for _sl_w0 in range(0x7fffffff):\n    if not (s.pop()): break\n    pass\n";
        assert_eq!(rewrite(source), expected);
    }

    // --- augmented assignment -----------------------------------------------

    #[test]
    fn redirected_augmented_assignments_to_a_name_become_plain_assignments() {
        assert_eq!(
            rewrite("s %= (1, 2)\nx <<= n + 1\nl *= 3\n"),
            "s = s % ((1, 2))\nx = x << (n + 1)\nl = l * (3)\n"
        );
    }

    #[test]
    fn augmented_assignment_columns_map_back_to_the_original() {
        let p = rewrite_with_map("  x %= y  # note\n");
        assert_eq!(p.text, "  x = x % (y)  # note\n");
        assert_eq!(p.map.original(0, 2), (0, 2));
        // The synthetic `= x % (` stands for the operator.
        assert_eq!(p.map.original(0, 4), (0, 4));
        assert_eq!(p.map.original(0, 8), (0, 4));
        assert_eq!(p.map.original(0, 11), (0, 7));
        // `)` stands for the end of the expression; the comment is original.
        assert_eq!(p.map.original(0, 12), (0, 7));
        assert_eq!(p.map.original(0, 13), (0, 8));
        assert_eq!(p.map.original(0, 15), (0, 10));
    }

    #[test]
    fn augmented_assignment_after_a_colon_or_semicolon_and_over_lines() {
        assert_eq!(
            rewrite("if c: x %= 2\na = 1; b *= [\n    1,\n]\n"),
            "if c: x = x % (2)\na = 1; b = b * ([\n    1,\n])\n"
        );
        assert_eq!(
            rewrite("while c: x <<= 1\n"),
            "for _sl_w0 in range(0x7fffffff):\n    if not (c): break\n    x = x << (1)\n"
        );
    }

    #[test]
    fn other_augmented_assignments_and_targets_are_untouched() {
        let source = "x += [1]\nx -= 1\nx[0] %= 2\nx.y *= 2\nx[0] //= 2\nf(a *= 2)\nx % = 1\n";
        assert_eq!(rewrite(source), source);
    }

    #[test]
    fn augmented_division_and_shifts_are_rewritten() {
        assert_eq!(
            rewrite("x /= 2\nx //= 2\nx >>= 1\n"),
            "x = x / (2)\nx = x // (2)\nx = x >> (1)\n"
        );
    }

    #[test]
    fn augmented_assignment_keeps_the_other_rewrites() {
        assert_eq!(
            rewrite("assert %= l.pop(-1)\n"),
            "_sl_assert = _sl_assert % (l.pop())\n"
        );
        assert_eq!(error("_sl_x %= 1\n").column, 1);
    }

    // --- line map -----------------------------------------------------------

    #[test]
    fn line_after_an_inserted_guard_maps_to_the_original_line() {
        let source = "x = 1\nwhile x:\n    y = 2\nz = 3\n";
        let p = rewrite_with_map(source);
        assert_eq!(
            p.text,
            "x = 1\nfor _sl_w0 in range(0x7fffffff):\n    if not (x): break\n    y = 2\nz = 3\n"
        );
        assert_eq!(p.map.original(0, 2), (0, 2));
        assert_eq!(p.map.original(1, 0), (1, 0));
        assert_eq!(p.map.original(1, 31), (1, 7));
        assert_eq!(p.map.original(2, 0), (1, 0));
        assert_eq!(p.map.original(2, 12), (1, 6));
        assert_eq!(p.map.original(3, 8), (2, 8));
        assert_eq!(p.map.original(4, 4), (3, 4));
        assert_eq!(p.map.original(5, 0), (4, 0));
        assert_eq!(p.map.original(9, 3), (8, 3));
    }

    #[test]
    fn columns_past_the_end_of_an_unchanged_line_still_map_exactly() {
        let p = rewrite_with_map("assert = 1\nfoo(\n");
        assert_eq!(p.map.original(1, 4), (1, 4));
        assert_eq!(p.map.original(0, 20), (0, 16));
    }

    // --- lexing -------------------------------------------------------------

    #[test]
    fn raw_and_bytes_strings_are_lexed_as_strings() {
        let source = "a = r\"while\\\" assert\"\nb = b'assert'\nc = rb\"x\" + Br'assert'\n";
        assert_eq!(rewrite(source), source);
    }

    #[test]
    fn unterminated_string_is_reported_at_its_opening_quote() {
        let e = error("assert = 1\ny = 'abc\nz = 2\n");
        assert_eq!(
            e,
            PrepassError {
                line: 2,
                column: 5,
                message: "unterminated string literal".into()
            }
        );
        let e = error("assert = 1\ny = \"abc\\\"");
        assert_eq!((e.line, e.column), (2, 5));
    }

    #[test]
    fn unterminated_triple_quoted_string_is_reported_at_its_opening_quote() {
        let e = error("assert = '''abc\n\ndef");
        assert_eq!((e.line, e.column), (1, 10));
        assert_eq!(e.message, "unterminated triple-quoted string literal");
    }

    #[test]
    fn error_display_is_line_colon_column_message() {
        let e = PrepassError {
            line: 3,
            column: 7,
            message: "boom".into(),
        };
        assert_eq!(e.to_string(), "3:7: boom");
    }

    #[test]
    fn unicode_text_uses_character_columns() {
        let p = rewrite_with_map("s = \"é\"; assert = 1\n");
        assert_eq!(p.text, "s = \"é\"; _sl_assert = 1\n");
        assert_eq!(p.map.original(0, 13), (0, 9));
        assert_eq!(p.map.original(0, 21), (0, 17));
    }

    #[test]
    fn nesting_as_deep_as_go_sources_have_passes() {
        let brackets = format!("x = {}{}\n", "[".repeat(5000), "]".repeat(5000));
        assert!(prepass(&brackets).is_ok());
        let dicts = format!("x = {}1{}\n", "{\"a\": ".repeat(5000), "}".repeat(5000));
        assert!(prepass(&dicts).is_ok());
        // Long flat literals and many statements do not add up.
        let flat = format!("x = [{}]\n", "1 + 1, ".repeat(50_000));
        assert!(prepass(&flat).is_ok());
        let lines = "x = 1 + 2 + 3\n".repeat(10_000);
        assert!(prepass(&lines).is_ok());
    }

    #[test]
    fn deeper_nesting_fails_at_the_line_it_passes_the_limit() {
        let brackets = format!("x = 1\ny = {}{}\n", "(".repeat(20_000), ")".repeat(20_000));
        let e = prepass(&brackets).unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
        assert!(e.message.contains("nests more than 10000 levels"), "{e:?}");
        let chain = format!("x = 1{}\n", " + 1".repeat(1_000_000));
        assert!(
            prepass(&chain)
                .unwrap_err()
                .message
                .contains("nests more than")
        );
        let calls = format!("x = f{}\n", "()".repeat(20_000));
        assert!(prepass(&calls).is_err());
        let lambdas = format!("f = {}1\n", "lambda: ".repeat(20_000));
        assert!(prepass(&lambdas).is_err());
        let attributes = format!("x = a{}\n", ".b".repeat(20_000));
        assert!(prepass(&attributes).is_err());
    }

    #[test]
    fn load_targets_are_read_from_tokens() {
        let source = "load(\"a.star\", \"x\")\nload('b.star', y = 'z'); load(r\"c.star\", \"w\")\nx = 1\n  load(\"indented.star\")\ns = \"load('no.star')\"\n# load(\"comment.star\")\n";
        assert_eq!(load_targets(source), vec!["a.star", "b.star", "c.star"]);
        assert!(load_targets("x = (").is_empty());
        let deep = format!(
            "load(\"m.star\", \"f\")\nx = {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(load_targets(&deep), vec!["m.star"]);
    }
}
