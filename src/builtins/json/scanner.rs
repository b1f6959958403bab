//! Go's `encoding/json` scanner, byte by byte: `json.decode` and
//! `json.indent` validate with it, and word their errors as it does.

use super::MAX_DEPTH;
use crate::go::quote::go_quote_byte;

/// What the scanner made of a byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Op {
    Continue,
    BeginLiteral,
    BeginObject,
    ObjectKey,
    ObjectValue,
    EndObject,
    BeginArray,
    ArrayValue,
    EndArray,
    SkipSpace,
    End,
    Error,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits read.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside the literal `word`, expecting its byte at `at`.
    Literal(&'static str, usize),
    Error,
}

pub(super) struct Scanner {
    pub(super) state: State,
    pub(super) end_top: bool,
    pub(super) parse: Vec<Parse>,
    pub(super) err: Option<String>,
    pub(super) bytes: usize,
}

impl Scanner {
    pub(super) fn new() -> Self {
        Scanner {
            state: State::BeginValue,
            end_top: false,
            parse: Vec::new(),
            err: None,
            bytes: 0,
        }
    }

    pub(super) fn eof(&mut self) -> Op {
        if self.err.is_some() {
            return Op::Error;
        }
        if self.end_top {
            return Op::End;
        }
        self.step(b' ');
        if self.end_top {
            return Op::End;
        }
        if self.err.is_none() {
            self.err = Some("unexpected end of JSON input".to_owned());
        }
        Op::Error
    }

    pub(super) fn error(&mut self, c: u8, context: &str) -> Op {
        self.state = State::Error;
        self.err = Some(format!("invalid character {} {context}", go_quote_byte(c)));
        Op::Error
    }

    pub(super) fn push(&mut self, c: u8, p: Parse, success: Op) -> Op {
        self.parse.push(p);
        if self.parse.len() <= MAX_DEPTH {
            return success;
        }
        self.error(c, "exceeded max depth")
    }

    pub(super) fn pop(&mut self) {
        self.parse.pop();
        if self.parse.is_empty() {
            self.state = State::EndTop;
            self.end_top = true;
        } else {
            self.state = State::EndValue;
        }
    }

    pub(super) fn step(&mut self, c: u8) -> Op {
        let is_space = matches!(c, b' ' | b'\t' | b'\r' | b'\n');
        match self.state {
            State::BeginValueOrEmpty => {
                if is_space {
                    return Op::SkipSpace;
                }
                if c == b']' {
                    return self.end_value(c);
                }
                self.begin_value(c)
            }
            State::BeginValue => self.begin_value(c),
            State::BeginStringOrEmpty => {
                if is_space {
                    return Op::SkipSpace;
                }
                if c == b'}' {
                    if let Some(last) = self.parse.last_mut() {
                        *last = Parse::ObjectValue;
                    }
                    return self.end_value(c);
                }
                self.begin_string(c)
            }
            State::BeginString => self.begin_string(c),
            State::EndValue => self.end_value(c),
            State::EndTop => self.end_top(c),
            State::InString => {
                if c == b'"' {
                    self.state = State::EndValue;
                    return Op::Continue;
                }
                if c == b'\\' {
                    self.state = State::InStringEsc;
                    return Op::Continue;
                }
                if c < 0x20 {
                    return self.error(c, "in string literal");
                }
                Op::Continue
            }
            State::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.state = State::InString;
                    Op::Continue
                }
                b'u' => {
                    self.state = State::InStringEscU(0);
                    Op::Continue
                }
                _ => self.error(c, "in string escape code"),
            },
            State::InStringEscU(n) => {
                if c.is_ascii_hexdigit() {
                    self.state = if n == 3 {
                        State::InString
                    } else {
                        State::InStringEscU(n + 1)
                    };
                    return Op::Continue;
                }
                self.error(c, "in \\u hexadecimal character escape")
            }
            State::Neg => {
                if c == b'0' {
                    self.state = State::Zero;
                    return Op::Continue;
                }
                if (b'1'..=b'9').contains(&c) {
                    self.state = State::One;
                    return Op::Continue;
                }
                self.error(c, "in numeric literal")
            }
            State::One => {
                if c.is_ascii_digit() {
                    return Op::Continue;
                }
                self.zero(c)
            }
            State::Zero => self.zero(c),
            State::Dot => {
                if c.is_ascii_digit() {
                    self.state = State::Dot0;
                    return Op::Continue;
                }
                self.error(c, "after decimal point in numeric literal")
            }
            State::Dot0 => {
                if c.is_ascii_digit() {
                    return Op::Continue;
                }
                if c == b'e' || c == b'E' {
                    self.state = State::E;
                    return Op::Continue;
                }
                self.end_value(c)
            }
            State::E => {
                if c == b'+' || c == b'-' {
                    self.state = State::ESign;
                    return Op::Continue;
                }
                self.e_sign(c)
            }
            State::ESign => self.e_sign(c),
            State::E0 => {
                if c.is_ascii_digit() {
                    return Op::Continue;
                }
                self.end_value(c)
            }
            State::Literal(word, at) => {
                let want = word.as_bytes()[at];
                if c == want {
                    self.state = if at + 1 == word.len() {
                        State::EndValue
                    } else {
                        State::Literal(word, at + 1)
                    };
                    return Op::Continue;
                }
                let context = format!("in literal {word} (expecting '{}')", char::from(want));
                self.error(c, &context)
            }
            State::Error => Op::Error,
        }
    }

    pub(super) fn begin_value(&mut self, c: u8) -> Op {
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => Op::SkipSpace,
            b'{' => {
                self.state = State::BeginStringOrEmpty;
                self.push(c, Parse::ObjectKey, Op::BeginObject)
            }
            b'[' => {
                self.state = State::BeginValueOrEmpty;
                self.push(c, Parse::ArrayValue, Op::BeginArray)
            }
            b'"' => {
                self.state = State::InString;
                Op::BeginLiteral
            }
            b'-' => {
                self.state = State::Neg;
                Op::BeginLiteral
            }
            b'0' => {
                self.state = State::Zero;
                Op::BeginLiteral
            }
            b't' => {
                self.state = State::Literal("true", 1);
                Op::BeginLiteral
            }
            b'f' => {
                self.state = State::Literal("false", 1);
                Op::BeginLiteral
            }
            b'n' => {
                self.state = State::Literal("null", 1);
                Op::BeginLiteral
            }
            b'1'..=b'9' => {
                self.state = State::One;
                Op::BeginLiteral
            }
            _ => self.error(c, "looking for beginning of value"),
        }
    }

    pub(super) fn begin_string(&mut self, c: u8) -> Op {
        if matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            return Op::SkipSpace;
        }
        if c == b'"' {
            self.state = State::InString;
            return Op::BeginLiteral;
        }
        self.error(c, "looking for beginning of object key string")
    }

    pub(super) fn end_value(&mut self, c: u8) -> Op {
        let Some(&ps) = self.parse.last() else {
            self.state = State::EndTop;
            self.end_top = true;
            return self.end_top(c);
        };
        if matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            self.state = State::EndValue;
            return Op::SkipSpace;
        }
        match ps {
            Parse::ObjectKey => {
                if c == b':' {
                    if let Some(last) = self.parse.last_mut() {
                        *last = Parse::ObjectValue;
                    }
                    self.state = State::BeginValue;
                    return Op::ObjectKey;
                }
                self.error(c, "after object key")
            }
            Parse::ObjectValue => {
                if c == b',' {
                    if let Some(last) = self.parse.last_mut() {
                        *last = Parse::ObjectKey;
                    }
                    self.state = State::BeginString;
                    return Op::ObjectValue;
                }
                if c == b'}' {
                    self.pop();
                    return Op::EndObject;
                }
                self.error(c, "after object key:value pair")
            }
            Parse::ArrayValue => {
                if c == b',' {
                    self.state = State::BeginValue;
                    return Op::ArrayValue;
                }
                if c == b']' {
                    self.pop();
                    return Op::EndArray;
                }
                self.error(c, "after array element")
            }
        }
    }

    pub(super) fn end_top(&mut self, c: u8) -> Op {
        if !matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            self.error(c, "after top-level value");
        }
        Op::End
    }

    pub(super) fn zero(&mut self, c: u8) -> Op {
        if c == b'.' {
            self.state = State::Dot;
            return Op::Continue;
        }
        if c == b'e' || c == b'E' {
            self.state = State::E;
            return Op::Continue;
        }
        self.end_value(c)
    }

    pub(super) fn e_sign(&mut self, c: u8) -> Op {
        if c.is_ascii_digit() {
            self.state = State::E0;
            return Op::Continue;
        }
        self.error(c, "in exponent of numeric literal")
    }
}
