//! Statements, parsed as buildifier's grammar parses them: blank lines
//! sever a statement from the comments after it, comments before a
//! statement belong to it, and comments written left of a block's
//! indentation at its end are taken out of it.

use super::lex::{Tk, error};
use super::parse::{AUGMENTED, Parser, Result, assign, boxed};
use super::tree::{Comment, Comments, End, Kind, Node, Pos};

impl Parser {
    /// The whole file's statements.
    pub fn file(&mut self) -> Result<Vec<Node>> {
        let (stmts, _) = self.stmts()?;
        if self.peek().tk != Tk::Eof {
            return Err(self.unexpected());
        }
        Ok(stmts)
    }

    /// Statements up to a dedent or the end, with comments placed as
    /// buildifier places them, and whether the last one still takes the
    /// comments that follow (no blank line came after it).
    pub(super) fn stmts(&mut self) -> Result<(Vec<Node>, bool)> {
        let mut out: Vec<Node> = Vec::new();
        // The statement later comments attach to, when there is one.
        let mut last: Option<usize> = None;
        loop {
            match self.peek().tk {
                Tk::Eof | Tk::Dedent => return Ok((out, last.is_some())),
                Tk::Newline => {
                    self.next();
                    last = None;
                }
                Tk::Comment => {
                    let t = self.next();
                    if self.peek().tk == Tk::Newline {
                        self.next();
                    }
                    let target = match last {
                        Some(i) if !is_block(&out[i]) => i,
                        _ => {
                            out.push(Node::new(Kind::CommentBlock { start: t.pos }));
                            out.len() - 1
                        }
                    };
                    out[target].com.after.push(Comment {
                        start: t.pos,
                        text: t.text,
                    });
                    last = Some(target);
                }
                Tk::Indent => return Err(error(self.peek().pos, "unexpected indentation")),
                _ => {
                    let (mut new, new_last) = self.stmt()?;
                    match last {
                        Some(i) if out[i].is_comment_block() => {
                            let cb = out.remove(i);
                            new[0].com.before = cb.com.after;
                        }
                        Some(i) => {
                            new[0].com.before = std::mem::take(&mut out[i].com.after);
                        }
                        None => {}
                    }
                    let base = out.len();
                    out.extend(new);
                    last = new_last.map(|j| base + j);
                }
            }
        }
    }

    /// One statement, or several (`a; b`, a block and the comments moved out
    /// of it), and which of them later comments attach to.
    fn stmt(&mut self) -> Result<(Vec<Node>, Option<usize>)> {
        let t = self.peek().clone();
        if t.tk == Tk::Name && matches!(t.text.as_str(), "def" | "for" | "if" | "while") {
            self.deeper(1)?;
            let block = self.block();
            self.depth -= 1;
            let (mut block, inner_last) = block?;
            let extracted = extract_trailing_comments(&mut block);
            let mut out = vec![block];
            if extracted.is_empty() {
                return Ok((out, Some(0)));
            }
            out.extend(extracted);
            let last = inner_last.then_some(out.len() - 1);
            return Ok((out, last));
        }
        let stmts = self.simple_stmt()?;
        let last = stmts.len() - 1;
        Ok((stmts, Some(last)))
    }

    /// `small (; small)* ;? NEWLINE`.
    fn simple_stmt(&mut self) -> Result<Vec<Node>> {
        let mut out = vec![self.small_stmt()?];
        while self.eat(";").is_some() {
            if matches!(self.peek().tk, Tk::Newline | Tk::Eof) {
                break;
            }
            out.push(self.small_stmt()?);
        }
        match self.peek().tk {
            Tk::Newline => {
                self.next();
            }
            Tk::Eof | Tk::Dedent => {}
            _ => return Err(self.unexpected()),
        }
        Ok(out)
    }

    fn small_stmt(&mut self) -> Result<Node> {
        let t = self.peek().clone();
        if t.tk == Tk::Name {
            match t.text.as_str() {
                "return" => {
                    self.next();
                    let result = if matches!(self.peek().tk, Tk::Newline | Tk::Eof | Tk::Dedent)
                        || self.is(";")
                    {
                        None
                    } else {
                        Some(boxed(self.expr()?))
                    };
                    return Ok(Node::new(Kind::Return {
                        start: t.pos,
                        result,
                    }));
                }
                "pass" | "break" | "continue" => {
                    self.next();
                    return Ok(Node::new(Kind::Branch {
                        token: t.text,
                        start: t.pos,
                    }));
                }
                _ => {}
            }
        }
        let lhs = self.expr()?;
        let op = self.peek().text.clone();
        if self.peek().tk == Tk::Op && (op == "=" || AUGMENTED.contains(&op.as_str())) {
            self.next();
            let rhs = self.expr()?;
            return Ok(assign(lhs, &op, rhs));
        }
        Ok(lhs)
    }

    /// A `def`, `for`, `while` or `if` block, and whether its last inner
    /// statement takes later comments.
    fn block(&mut self) -> Result<(Node, bool)> {
        let t = self.next();
        match t.text.as_str() {
            "def" => {
                let name = self.next();
                if name.tk != Tk::Name {
                    return Err(error(name.pos, "syntax error near def"));
                }
                self.expect("(")?;
                let mut params = Vec::new();
                while !self.is(")") {
                    params.push(self.parameter()?);
                    if self.eat(",").is_none() {
                        break;
                    }
                }
                let close = self.expect(")")?;
                let colon = self.expect(":")?;
                let (body, last) = self.suite()?;
                Ok((
                    Node::new(Kind::Def {
                        start: t.pos,
                        name: name.text,
                        params,
                        params_end: End {
                            pos: close,
                            com: Comments::default(),
                        },
                        colon: End {
                            pos: colon,
                            com: Comments::default(),
                        },
                        body,
                    }),
                    last,
                ))
            }
            "for" => {
                let vars = self.loop_vars()?;
                self.expect("in")?;
                let x = self.expr()?;
                self.expect(":")?;
                let (body, last) = self.suite()?;
                Ok((
                    Node::new(Kind::For {
                        start: t.pos,
                        vars: boxed(vars),
                        x: boxed(x),
                        body,
                    }),
                    last,
                ))
            }
            "while" => {
                let cond = self.expr()?;
                self.expect(":")?;
                let (body, last) = self.suite()?;
                Ok((
                    Node::new(Kind::While {
                        start: t.pos,
                        cond: boxed(cond),
                        body,
                    }),
                    last,
                ))
            }
            _ => self.if_chain(t.pos),
        }
    }

    /// `if` and its `elif`s and `else`; each `elif` an `if` alone in the
    /// previous one's else branch.
    fn if_chain(&mut self, start: Pos) -> Result<(Node, bool)> {
        let cond = self.expr()?;
        self.expect(":")?;
        let (then, mut last) = self.suite()?;
        let mut node = Node::new(Kind::If {
            start,
            cond: boxed(cond),
            then,
            else_pos: End::default(),
            otherwise: Vec::new(),
        });
        let elif = if self.is("elif") {
            Some(self.next().pos)
        } else if self.is("else") && self.peek_at(1).text == "if" {
            let pos = self.next().pos;
            self.next();
            Some(pos)
        } else {
            None
        };
        if let Some(pos) = elif {
            let (inner, inner_last) = self.if_chain(pos)?;
            last = inner_last;
            if let Kind::If {
                else_pos,
                otherwise,
                ..
            } = &mut node.kind
            {
                else_pos.pos = pos;
                *otherwise = vec![inner];
            }
        } else if self.is("else") {
            let pos = self.next().pos;
            self.expect(":")?;
            let (body, body_last) = self.suite()?;
            last = body_last;
            if let Kind::If {
                else_pos,
                otherwise,
                ..
            } = &mut node.kind
            {
                else_pos.pos = pos;
                *otherwise = body;
            }
        }
        Ok((node, last))
    }

    /// A block's body: a simple statement on the same line, or an indented
    /// block (with the comments before its first statement).
    fn suite(&mut self) -> Result<(Vec<Node>, bool)> {
        if self.peek().tk != Tk::Newline {
            let stmts = self.simple_stmt()?;
            while self.peek().tk == Tk::Newline {
                self.next();
            }
            return Ok((stmts, true));
        }
        self.next();
        // Comments before the first statement.
        let mut comments: Vec<Node> = Vec::new();
        let mut open = false;
        loop {
            match self.peek().tk {
                Tk::Comment => {
                    let t = self.next();
                    if self.peek().tk == Tk::Newline {
                        self.next();
                    }
                    if !open {
                        comments.push(Node::new(Kind::CommentBlock { start: t.pos }));
                        open = true;
                    }
                    if let Some(cb) = comments.last_mut() {
                        cb.com.after.push(Comment {
                            start: t.pos,
                            text: t.text,
                        });
                    }
                }
                Tk::Newline => {
                    self.next();
                    open = false;
                }
                _ => break,
            }
        }
        if self.peek().tk != Tk::Indent {
            return Err(self.unexpected());
        }
        self.next();
        let (mut stmts, last) = self.stmts()?;
        if stmts.is_empty() || stmts[0].is_comment_block() {
            return Err(self.unexpected());
        }
        if self.peek().tk == Tk::Dedent {
            self.next();
        }
        if let Some(cb) = comments.last()
            && let Some(last_comment) = cb.com.after.last()
            && stmts[0].span().0.line == last_comment.start.line + 1
        {
            let cb = comments.pop().expect("a comment block");
            stmts[0].com.before = cb.com.after;
        }
        comments.extend(stmts);
        Ok((comments, last))
    }
}

fn is_block(n: &Node) -> bool {
    matches!(
        n.kind,
        Kind::Def { .. } | Kind::For { .. } | Kind::If { .. } | Kind::While { .. }
    )
}

/// The last body of a block (of an if chain, its last branch).
fn last_body(n: &mut Node) -> Option<&mut Vec<Node>> {
    match &mut n.kind {
        Kind::Def { body, .. } | Kind::For { body, .. } | Kind::While { body, .. } => Some(body),
        Kind::If {
            then, otherwise, ..
        } => {
            if otherwise.is_empty() {
                Some(then)
            } else if otherwise.len() == 1 && matches!(otherwise[0].kind, Kind::If { .. }) {
                last_body(&mut otherwise[0])
            } else {
                Some(otherwise)
            }
        }
        _ => None,
    }
}

/// The comments at the end of a block written left of its indentation,
/// taken out of it as comment blocks of their own.
fn extract_trailing_comments(block: &mut Node) -> Vec<Node> {
    let Some(body) = last_body(block) else {
        return Vec::new();
    };
    let Some(first) = body.first() else {
        return Vec::new();
    };
    let indentation = first.span().0.col;
    let Some(last_stmt) = body.iter().rposition(|s| !s.is_comment_block()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut i = last_stmt;
    while i < body.len() {
        let after = &body[i].com.after;
        if let Some(k) = after
            .iter()
            .position(|c| c.start.col > 0 && c.start.col < indentation)
        {
            let moved: Vec<Comment> = body[i].com.after.split_off(k);
            let mut cb = Node::new(Kind::CommentBlock {
                start: moved[0].start,
            });
            cb.com.after = moved;
            out.push(cb);
            out.extend(body.drain(i + 1..));
            if i > last_stmt && body[i].com.after.is_empty() {
                body.truncate(i);
            }
            break;
        }
        i += 1;
    }
    out
}
