//! How deep a source nests, bounded before anything parses it.

use super::lexer::{Kind, Token};
use super::source_error::PrepassError;

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
pub(crate) fn check_nesting(tokens: &[Token], src: &str) -> Result<(), PrepassError> {
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
