//! A parser building [`Node`]s as buildifier's grammar does: the same
//! nodes, positions and statement-level comment placement, so that the
//! printer can make buildifier's layout decisions. It also takes the Go
//! dialect's `while`.

use super::lex::{SyntaxError, Tk, Token, error};
use super::tree::{Comments, End, Kind, Node, Pos};

pub struct Parser {
    pub(super) tokens: Vec<Token>,
    pub(super) at: usize,
    /// How deep the tree being built is, bounded by [`MAX_DEPTH`].
    pub(super) depth: usize,
}

/// How deep a formatted tree may nest (brackets, blocks and chains of
/// operators, calls and attributes): the formatter recurses once a level.
pub const MAX_DEPTH: usize = 1_000;

pub(super) type Result<T> = std::result::Result<T, SyntaxError>;

pub(super) fn boxed(n: Node) -> Box<Node> {
    Box::new(n)
}

const KEYWORDS: [&str; 16] = [
    "and", "for", "if", "else", "elif", "in", "lambda", "not", "or", "def", "return", "pass",
    "break", "continue", "while", "load",
];

pub(super) const AUGMENTED: [&str; 11] = [
    "+=", "-=", "*=", "/=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>=",
];

impl Parser {
    pub fn new(tokens: Vec<Token>) -> Parser {
        Parser {
            tokens,
            at: 0,
            depth: 0,
        }
    }

    /// One level deeper, or an error past [`MAX_DEPTH`].
    pub(super) fn deeper(&mut self, levels: usize) -> Result<()> {
        self.depth += levels;
        if self.depth > MAX_DEPTH {
            return Err(error(
                self.peek().pos,
                format!("nested more than {MAX_DEPTH} levels deep; split the expression"),
            ));
        }
        Ok(())
    }

    pub(super) fn peek(&self) -> &Token {
        &self.tokens[self.at.min(self.tokens.len() - 1)]
    }

    pub(super) fn peek_at(&self, n: usize) -> &Token {
        &self.tokens[(self.at + n).min(self.tokens.len() - 1)]
    }

    pub(super) fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.at < self.tokens.len() {
            self.at += 1;
        }
        t
    }

    /// Whether the next token is the operator or keyword `text`.
    pub(super) fn is(&self, text: &str) -> bool {
        let t = self.peek();
        matches!(t.tk, Tk::Op | Tk::Name) && t.text == text
    }

    pub(super) fn eat(&mut self, text: &str) -> Option<Pos> {
        self.is(text).then(|| self.next().pos)
    }

    pub(super) fn expect(&mut self, text: &str) -> Result<Pos> {
        self.eat(text).ok_or_else(|| self.unexpected())
    }

    pub(super) fn unexpected(&self) -> SyntaxError {
        let t = self.peek();
        let near = match t.tk {
            Tk::Newline => "newline".to_owned(),
            Tk::Eof => "end of file".to_owned(),
            Tk::Indent | Tk::Dedent => "indentation".to_owned(),
            _ => t.text.clone(),
        };
        error(t.pos, format!("syntax error near {near}"))
    }

    pub(super) fn loop_vars(&mut self) -> Result<Node> {
        let first = self.primary()?;
        if !self.is(",") {
            return Ok(first);
        }
        let start = first.span().0;
        let mut list = vec![first];
        while self.eat(",").is_some() {
            if self.is("in") {
                break;
            }
            list.push(self.primary()?);
        }
        Ok(Node::new(Kind::Tuple {
            start,
            list,
            end: End::default(),
            brackets: false,
        }))
    }

    pub(super) fn parameter(&mut self) -> Result<Node> {
        let t = self.peek().clone();
        if t.tk == Tk::Op && (t.text == "*" || t.text == "**") {
            self.next();
            let x = if self.peek().tk == Tk::Name {
                Some(boxed(self.ident()?))
            } else {
                None
            };
            return Ok(Node::new(Kind::Unary {
                op: t.text,
                x,
                start: t.pos,
            }));
        }
        let name = self.ident()?;
        if self.eat("=").is_some() {
            let value = self.test()?;
            return Ok(assign(name, "=", value));
        }
        Ok(name)
    }

    pub(super) fn ident(&mut self) -> Result<Node> {
        let t = self.peek().clone();
        if t.tk != Tk::Name || KEYWORDS.contains(&t.text.as_str()) {
            return Err(self.unexpected());
        }
        self.next();
        Ok(Node::new(Kind::Ident {
            name: t.text,
            start: t.pos,
        }))
    }

    /// `test (, test)*`: a tuple without brackets when there are several.
    pub(super) fn expr(&mut self) -> Result<Node> {
        let first = self.test()?;
        if !self.is(",") {
            return Ok(first);
        }
        let start = first.span().0;
        let mut list = vec![first];
        while self.is(",") && self.starts_test_after_comma() {
            self.next();
            list.push(self.test()?);
        }
        Ok(Node::new(Kind::Tuple {
            start,
            list,
            end: End::default(),
            brackets: false,
        }))
    }

    fn starts_test_after_comma(&self) -> bool {
        let t = self.peek_at(1);
        match t.tk {
            Tk::Name => !matches!(t.text.as_str(), "in" | "for" | "if" | "else"),
            Tk::Number | Tk::Str => true,
            Tk::Op => matches!(t.text.as_str(), "(" | "[" | "{" | "-" | "+" | "~"),
            _ => false,
        }
    }

    /// A conditional, a lambda, or an operator expression.
    pub(super) fn test(&mut self) -> Result<Node> {
        self.deeper(1)?;
        let node = self.test_inner();
        self.depth -= 1;
        node
    }

    fn test_inner(&mut self) -> Result<Node> {
        if self.is("lambda") {
            let start = self.next().pos;
            let mut params = Vec::new();
            while !self.is(":") {
                params.push(self.parameter()?);
                if self.eat(",").is_none() {
                    break;
                }
            }
            self.expect(":")?;
            let body = self.expr()?;
            return Ok(Node::new(Kind::Lambda {
                start,
                params,
                body: boxed(body),
            }));
        }
        let then = self.binary(0)?;
        if self.is("if") {
            self.next();
            let test = self.binary(0)?;
            self.expect("else")?;
            let otherwise = self.test()?;
            return Ok(Node::new(Kind::Conditional {
                then: boxed(then),
                test: boxed(test),
                otherwise: boxed(otherwise),
            }));
        }
        Ok(then)
    }

    /// The binary operator at the next token with at least `min` precedence.
    fn operator(&self, min: u8) -> Option<(String, u8, usize)> {
        let t = self.peek();
        let (op, tokens) = match (&t.tk, t.text.as_str()) {
            (Tk::Name, "not") if self.peek_at(1).text == "in" => ("not in".to_owned(), 2),
            (Tk::Name, "or" | "and" | "in") | (Tk::Op, _) => (t.text.clone(), 1),
            _ => return None,
        };
        let prec = match op.as_str() {
            "or" => 1,
            "and" => 2,
            "<" | ">" | "==" | "!=" | "<=" | ">=" | "in" | "not in" => 3,
            "|" => 4,
            "^" => 5,
            "&" => 6,
            "<<" | ">>" => 7,
            "+" | "-" => 8,
            "*" | "/" | "//" | "%" => 9,
            _ => return None,
        };
        (prec >= min.max(1)).then_some((op, prec, tokens))
    }

    pub(super) fn binary(&mut self, min: u8) -> Result<Node> {
        let mut x = self.unary()?;
        let entered = self.depth;
        while let Some((op, prec, tokens)) = self.operator(min) {
            for _ in 0..tokens {
                self.next();
            }
            if let Err(e) = self.deeper(1) {
                self.depth = entered;
                return Err(e);
            }
            let y = self.binary(prec + 1)?;
            let line_break = x.span().1.line < y.span().0.line;
            x = Node::new(Kind::Binary {
                x: boxed(x),
                op,
                y: boxed(y),
                line_break,
            });
        }
        self.depth = entered;
        Ok(x)
    }

    fn unary(&mut self) -> Result<Node> {
        let t = self.peek().clone();
        let is_unary = (t.tk == Tk::Name && t.text == "not")
            || (t.tk == Tk::Op && matches!(t.text.as_str(), "-" | "+" | "~"));
        if is_unary {
            self.next();
            self.deeper(1)?;
            let x = self.unary();
            self.depth -= 1;
            let x = x?;
            return Ok(Node::new(Kind::Unary {
                op: t.text,
                x: Some(boxed(x)),
                start: t.pos,
            }));
        }
        self.primary()
    }

    pub(super) fn primary(&mut self) -> Result<Node> {
        let entered = self.depth;
        let x = self.suffixes();
        self.depth = entered;
        x
    }

    /// An atom and its `.name`, `(...)` and `[...]` suffixes.
    fn suffixes(&mut self) -> Result<Node> {
        let mut x = self.atom()?;
        loop {
            self.deeper(1)?;
            if self.is(".") {
                self.next();
                let name = self.next();
                if name.tk != Tk::Name {
                    return Err(error(name.pos, "syntax error near ."));
                }
                x = Node::new(Kind::Dot {
                    x: boxed(x),
                    name: name.text,
                    name_pos: name.pos,
                });
            } else if self.is("(") {
                let start = self.next().pos;
                let list = self.arguments()?;
                let end = self.expect(")")?;
                x = Node::new(Kind::Call {
                    x: boxed(x),
                    start,
                    list,
                    end: End {
                        pos: end,
                        com: Comments::default(),
                    },
                });
            } else if self.is("[") {
                self.next();
                x = self.subscript(x)?;
            } else {
                return Ok(x);
            }
        }
    }

    fn subscript(&mut self, x: Node) -> Result<Node> {
        let from = if self.is(":") {
            None
        } else {
            Some(self.expr()?)
        };
        if let Some(y) = &from
            && self.is("]")
        {
            let end = self.next().pos;
            return Ok(Node::new(Kind::Index {
                x: boxed(x),
                y: boxed(y.clone()),
                end,
            }));
        }
        self.expect(":")?;
        let to = if self.is(":") || self.is("]") {
            None
        } else {
            Some(boxed(self.test()?))
        };
        let mut step = None;
        let second_colon = self.eat(":").is_some();
        if second_colon && !self.is("]") {
            step = Some(boxed(self.test()?));
        }
        let end = self.expect("]")?;
        Ok(Node::new(Kind::Slice {
            x: boxed(x),
            from: from.map(boxed),
            to,
            step,
            second_colon,
            end,
        }))
    }

    fn arguments(&mut self) -> Result<Vec<Node>> {
        let mut list = Vec::new();
        while self.is(",") {
            self.next();
        }
        while !self.is(")") {
            let t = self.peek().clone();
            let arg = if t.tk == Tk::Op && (t.text == "*" || t.text == "**") {
                self.next();
                let x = self.test()?;
                Node::new(Kind::Unary {
                    op: t.text,
                    x: Some(boxed(x)),
                    start: t.pos,
                })
            } else if t.tk == Tk::Name
                && self.peek_at(1).text == "="
                && self.peek_at(1).tk == Tk::Op
            {
                let name = self.ident()?;
                self.next();
                let value = self.test()?;
                assign(name, "=", value)
            } else {
                self.test()?
            };
            list.push(arg);
            if self.eat(",").is_none() {
                break;
            }
            while self.is(",") {
                self.next();
            }
        }
        Ok(list)
    }

    pub(super) fn atom(&mut self) -> Result<Node> {
        let t = self.peek().clone();
        match t.tk {
            Tk::Number => {
                self.next();
                Ok(Node::new(Kind::Literal {
                    token: t.text,
                    start: t.pos,
                }))
            }
            Tk::Str => {
                self.next();
                let (value, triple) = super::quote::unquote(&t.text)
                    .map_err(|e| error(t.pos, format!("invalid string: {e}")))?;
                Ok(Node::new(Kind::Str {
                    end: t.pos.after(&t.text),
                    token: t.text,
                    value,
                    triple,
                    start: t.pos,
                }))
            }
            Tk::Name if t.text == "load" && self.peek_at(1).text == "(" => self.load(),
            Tk::Name => self.ident(),
            Tk::Op if t.text == "[" => self.list(),
            Tk::Op if t.text == "{" => self.dict(),
            Tk::Op if t.text == "(" => self.paren(),
            _ => Err(self.unexpected()),
        }
    }

    fn load(&mut self) -> Result<Node> {
        let start = self.next().pos;
        let open = self.expect("(")?;
        while self.eat(",").is_some() {}
        let module = self.atom()?;
        if !matches!(module.kind, Kind::Str { .. }) {
            return Err(error(module.span().0, "load() needs a module string"));
        }
        let mut args = Vec::new();
        while self.eat(",").is_some() {
            while self.eat(",").is_some() {}
            if self.is(")") {
                break;
            }
            let t = self.peek().clone();
            if t.tk == Tk::Str {
                let s = self.atom()?;
                let name = string_ident(&s);
                args.push((name.clone(), name));
            } else {
                let to = self.ident()?;
                self.expect("=")?;
                let s = self.atom()?;
                if !matches!(s.kind, Kind::Str { .. }) {
                    return Err(error(s.span().0, "load() aliases name a string"));
                }
                args.push((to, string_ident(&s)));
            }
        }
        let end = self.expect(")")?;
        Ok(Node::new(Kind::Load {
            start,
            module: boxed(module),
            args,
            end: End {
                pos: end,
                com: Comments::default(),
            },
            compact: open.line == end.line,
        }))
    }

    /// `[...]`: a list or a comprehension.
    fn list(&mut self) -> Result<Node> {
        let start = self.next().pos;
        if self.is("]") {
            let end = self.next().pos;
            return Ok(list_node(start, Vec::new(), end));
        }
        let first = self.test()?;
        if self.is("for") {
            return self.comprehension(false, start, first, "]");
        }
        let mut list = vec![first];
        while self.eat(",").is_some() {
            while self.eat(",").is_some() {}
            if self.is("]") {
                break;
            }
            list.push(self.test()?);
        }
        let end = self.expect("]")?;
        Ok(list_node(start, list, end))
    }

    fn comprehension(&mut self, curly: bool, start: Pos, body: Node, close: &str) -> Result<Node> {
        let mut clauses = Vec::new();
        loop {
            if self.is("for") {
                let at = self.next().pos;
                let vars = self.loop_vars()?;
                self.expect("in")?;
                let x = self.binary(0)?;
                clauses.push(Node::new(Kind::ForClause {
                    start: at,
                    vars: boxed(vars),
                    x: boxed(x),
                }));
            } else if self.is("if") {
                let at = self.next().pos;
                let cond = self.binary(0)?;
                clauses.push(Node::new(Kind::IfClause {
                    start: at,
                    cond: boxed(cond),
                }));
            } else {
                break;
            }
        }
        let end = self.expect(close)?;
        let mut previous = body.span().1;
        let mut multi_line = start.line != body.span().0.line;
        for c in &clauses {
            let (s, e) = c.span();
            multi_line |= previous.line != s.line;
            previous = e;
        }
        multi_line |= previous.line != end.line;
        Ok(Node::new(Kind::Comprehension {
            curly,
            start,
            body: boxed(body),
            clauses,
            end: End {
                pos: end,
                com: Comments::default(),
            },
            multi_line,
        }))
    }

    /// `{...}`: a dict or a dict comprehension.
    fn dict(&mut self) -> Result<Node> {
        let start = self.next().pos;
        let mut list = Vec::new();
        if !self.is("}") {
            let key = self.test()?;
            self.expect(":")?;
            let value = self.test()?;
            let first = Node::new(Kind::KeyValue {
                key: boxed(key),
                value: boxed(value),
            });
            if self.is("for") {
                return self.comprehension(true, start, first, "}");
            }
            list.push(first);
            while self.eat(",").is_some() {
                while self.eat(",").is_some() {}
                if self.is("}") {
                    break;
                }
                let key = self.test()?;
                self.expect(":")?;
                let value = self.test()?;
                list.push(Node::new(Kind::KeyValue {
                    key: boxed(key),
                    value: boxed(value),
                }));
            }
        }
        let end = self.expect("}")?;
        Ok(Node::new(Kind::Dict {
            start,
            list,
            end: End {
                pos: end,
                com: Comments::default(),
            },
        }))
    }

    /// `(...)`: a parenthesized expression or a tuple.
    fn paren(&mut self) -> Result<Node> {
        let start = self.next().pos;
        let mut list = Vec::new();
        let mut comma = false;
        while !self.is(")") {
            list.push(self.test()?);
            if self.eat(",").is_none() {
                break;
            }
            comma = true;
            while self.eat(",").is_some() {}
        }
        let end = End {
            pos: self.expect(")")?,
            com: Comments::default(),
        };
        if list.len() == 1 && !comma {
            let x = list.pop().expect("one element");
            return Ok(Node::new(Kind::Paren {
                start,
                x: boxed(x),
                end,
            }));
        }
        Ok(Node::new(Kind::Tuple {
            start,
            list,
            end,
            brackets: true,
        }))
    }
}

fn list_node(start: Pos, list: Vec<Node>, end: Pos) -> Node {
    Node::new(Kind::List {
        start,
        list,
        end: End {
            pos: end,
            com: Comments::default(),
        },
    })
}

pub(super) fn assign(lhs: Node, op: &str, rhs: Node) -> Node {
    let line_break = lhs.span().1.line < rhs.span().0.line;
    Node::new(Kind::Assign {
        lhs: boxed(lhs),
        op: op.to_owned(),
        rhs: boxed(rhs),
        line_break,
    })
}

/// A load's string argument as the name it binds, placed inside its quotes.
fn string_ident(s: &Node) -> Node {
    let Kind::Str {
        value,
        triple,
        start,
        ..
    } = &s.kind
    else {
        unreachable!("load arguments are strings");
    };
    let skip = if *triple { "'''" } else { "'" };
    Node {
        kind: Kind::Ident {
            name: String::from_utf8_lossy(value).into_owned(),
            start: start.after(skip),
        },
        com: s.com.clone(),
    }
}
