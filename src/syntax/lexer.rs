//! The Go dialect's tokens, as the pre-pass and the scanners need them:
//! every byte of a source covered, strings and comments recognised, so that
//! nothing inside them is ever taken for code.

use super::source_error::PrepassError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
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
    pub(crate) fn is_trivia(self) -> bool {
        matches!(
            self,
            Kind::Space | Kind::Tab | Kind::Newline | Kind::Continuation | Kind::Comment
        )
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    /// Byte range in the source.
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// 0-based line and character column of the first character.
    pub(crate) line: usize,
    pub(crate) col: usize,
}

pub(crate) struct Cursor<'a> {
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

pub(crate) fn is_name_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

pub(crate) fn is_name_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

pub(crate) fn is_string_prefix(name: &str) -> bool {
    matches!(name.to_ascii_lowercase().as_str(), "r" | "b" | "rb" | "br")
}

/// Splits the source into tokens covering every byte of it.
pub(crate) fn lex(src: &str) -> Result<Vec<Token>, PrepassError> {
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
pub(crate) fn lex_string(cur: &mut Cursor<'_>) -> Result<(), PrepassError> {
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
pub(crate) fn string_contents(text: &str) -> Option<(usize, usize)> {
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
