//! Tokens as buildifier's lexer makes them. Outside brackets, every newline
//! is a token (blank lines separate statements) and so is a comment alone
//! on its line; indentation changes are tokens. Comments inside a statement
//! are set aside, whole-line or end-of-line, for the comment pass.

use super::tree::{Comment, Pos};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tk {
    Newline,
    /// A whole-line comment outside brackets.
    Comment,
    Indent,
    Dedent,
    Eof,
    Name,
    Number,
    Str,
    /// Punctuation and operators, by their text.
    Op,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tk: Tk,
    pub text: String,
    pub pos: Pos,
}

/// A source's tokens and the comments found inside statements.
pub struct Lexed {
    pub tokens: Vec<Token>,
    /// Whole-line comments inside brackets (an empty one marks a blank
    /// line before a comment).
    pub line_comments: Vec<Comment>,
    /// End-of-line comments inside statements.
    pub suffix_comments: Vec<Comment>,
}

/// Why a source cannot be formatted: where, and what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {message}")]
pub struct SyntaxError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

pub fn error(pos: Pos, message: impl Into<String>) -> SyntaxError {
    SyntaxError {
        line: pos.line,
        col: pos.col,
        message: message.into(),
    }
}

const OPS3: [&str; 3] = ["//=", "<<=", ">>="];
const OPS2: [&str; 19] = [
    "**", "->", "//", "<<", ">>", "<=", ">=", "==", "!=", "+=", "-=", "*=", "/=", "%=", "|=", "&=",
    "^=", "..", "::",
];

struct Lexer<'a> {
    src: &'a str,
    pos: Pos,
    depth: usize,
    indents: Vec<usize>,
    indent: usize,
    clean_line: bool,
    out: Lexed,
}

pub fn lex(src: &str) -> Result<Lexed, SyntaxError> {
    let mut l = Lexer {
        src,
        pos: Pos {
            line: 1,
            col: 1,
            byte: 0,
        },
        depth: 0,
        indents: Vec::new(),
        indent: 0,
        clean_line: true,
        out: Lexed {
            tokens: Vec::new(),
            line_comments: Vec::new(),
            suffix_comments: Vec::new(),
        },
    };
    l.run()?;
    Ok(l.out)
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        &self.src[self.pos.byte..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos = self.pos.after(&c.to_string());
        Some(c)
    }

    fn push(&mut self, tk: Tk, text: &str, pos: Pos) {
        self.out.tokens.push(Token {
            tk,
            text: text.to_owned(),
            pos,
        });
    }

    fn run(&mut self) -> Result<(), SyntaxError> {
        loop {
            let mut newlines = 0;
            // Spaces, newlines, comments.
            while let Some(c) = self.peek() {
                match c {
                    '\n' => {
                        self.indent = 0;
                        self.clean_line = true;
                        if self.depth == 0 {
                            let at = self.pos;
                            self.bump();
                            self.push(Tk::Newline, "\n", at);
                            continue;
                        }
                        newlines += 1;
                        self.bump();
                    }
                    ' ' | '\t' | '\r' => {
                        // A tab indents to the next multiple of 8, as in
                        // the Go dialect; buildifier refuses tabs.
                        if self.clean_line {
                            match c {
                                ' ' => self.indent += 1,
                                '\t' => self.indent = (self.indent / 8 + 1) * 8,
                                _ => {}
                            }
                        }
                        self.bump();
                    }
                    '#' => {
                        self.indent = 0;
                        let whole_line = self.clean_line;
                        self.clean_line = true;
                        let line_start = self.src[..self.pos.byte].rfind('\n').map_or(0, |i| i + 1);
                        let prefix: String = self.src[line_start..self.pos.byte]
                            .chars()
                            .filter(|c| !c.is_whitespace())
                            .collect();
                        let suffix = !(prefix.is_empty()
                            || prefix == "):"
                            || prefix.ends_with(['[', '(', '{']));
                        let at = self.pos;
                        let end = self.rest().find('\n').unwrap_or(self.rest().len());
                        let text = self.rest()[..end].to_owned();
                        self.pos = self.pos.after(&text);
                        if self.depth == 0 && whole_line {
                            self.push(Tk::Comment, &text, at);
                            continue;
                        }
                        if newlines > 1 {
                            self.out.line_comments.push(Comment {
                                start: at,
                                text: String::new(),
                            });
                        }
                        let comment = Comment { start: at, text };
                        if suffix {
                            self.out.suffix_comments.push(comment);
                        } else {
                            self.out.line_comments.push(comment);
                        }
                        newlines = 0;
                    }
                    '\\' if self.rest()[1..].starts_with('\n') => {
                        self.bump();
                        self.bump();
                    }
                    _ => break,
                }
            }
            // Indentation.
            if self.depth == 0 && self.clean_line && self.peek().is_some() {
                let current = self.indents.last().copied().unwrap_or(0);
                if self.indent > current {
                    self.indents.push(self.indent);
                    self.clean_line = false;
                    let at = self.pos;
                    self.push(Tk::Indent, "", at);
                    continue;
                }
                if self.indent < current {
                    self.indents.pop();
                    if self.indent > self.indents.last().copied().unwrap_or(0) {
                        return Err(error(self.pos, "unexpected indentation"));
                    }
                    let at = self.pos;
                    self.push(Tk::Dedent, "", at);
                    continue;
                }
            }
            self.clean_line = false;
            let at = self.pos;
            let Some(c) = self.peek() else {
                while self.indents.pop().is_some() {
                    self.push(Tk::Dedent, "", at);
                }
                self.push(Tk::Eof, "", at);
                return Ok(());
            };
            match c {
                '(' | '[' | '{' => {
                    self.depth += 1;
                    self.bump();
                    self.push(Tk::Op, &c.to_string(), at);
                }
                ')' | ']' | '}' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.bump();
                    self.push(Tk::Op, &c.to_string(), at);
                }
                '"' | '\'' => self.string(at, "")?,
                'r' | 'b' if self.rest()[1..].starts_with(['"', '\'']) => {
                    let prefix = c.to_string();
                    self.bump();
                    self.string(at, &prefix)?;
                }
                c if c.is_ascii_digit()
                    || (c == '.' && self.rest()[1..].starts_with(|d: char| d.is_ascii_digit())) =>
                {
                    let mut text = String::new();
                    while let Some(c) = self.peek() {
                        let exponent_sign = (c == '+' || c == '-')
                            && text.ends_with(['e', 'E'])
                            && !text.starts_with("0x")
                            && !text.starts_with("0X");
                        if !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || exponent_sign) {
                            break;
                        }
                        text.push(c);
                        self.bump();
                    }
                    self.push(Tk::Number, &text, at);
                }
                c if c.is_alphabetic() || c == '_' || !c.is_ascii() => {
                    let mut text = String::new();
                    while let Some(c) = self.peek() {
                        if !(c.is_alphanumeric() || c == '_' || !c.is_ascii()) {
                            break;
                        }
                        text.push(c);
                        self.bump();
                    }
                    self.push(Tk::Name, &text, at);
                }
                _ => {
                    let rest = self.rest();
                    let op = OPS3
                        .iter()
                        .chain(OPS2.iter())
                        .find(|op| rest.starts_with(**op) && **op != "::" && **op != "..")
                        .map_or_else(|| c.to_string(), |op| (*op).to_owned());
                    if !"+-*/%<>=!|&^~.,:;@".contains(c) {
                        return Err(error(at, format!("unexpected input character {c:?}")));
                    }
                    self.pos = self.pos.after(&op);
                    self.push(Tk::Op, &op, at);
                }
            }
        }
    }

    fn string(&mut self, at: Pos, prefix: &str) -> Result<(), SyntaxError> {
        let quote = self.peek().unwrap_or('"');
        let triple: String = std::iter::repeat_n(quote, 3).collect();
        let start = self.pos.byte;
        if self.rest().starts_with(&triple) {
            self.pos = self.pos.after(&triple);
            loop {
                if self.rest().starts_with(&triple) {
                    self.pos = self.pos.after(&triple);
                    break;
                }
                match self.bump() {
                    None => return Err(error(at, "unexpected EOF in string")),
                    Some('\\') => {
                        self.bump();
                    }
                    Some(_) => {}
                }
            }
        } else {
            self.bump();
            loop {
                match self.bump() {
                    None => return Err(error(at, "unexpected EOF in string")),
                    Some('\n') => return Err(error(at, "unexpected newline in string")),
                    Some('\\') => {
                        if self.bump().is_none() {
                            return Err(error(at, "unexpected EOF in string"));
                        }
                    }
                    Some(c) if c == quote => break,
                    Some(_) => {}
                }
            }
        }
        let text = format!("{prefix}{}", &self.src[start..self.pos.byte]);
        self.push(Tk::Str, &text, at);
        Ok(())
    }
}
