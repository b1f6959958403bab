//! The syntax tree the formatter prints: every expression and statement
//! with where it was written and the comments that belong to it, as
//! buildifier's parser builds them (its layout decisions read the original
//! line numbers).

/// A position in the source: 1-based line and character column, and the
/// byte offset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
    pub byte: usize,
}

impl Pos {
    /// The position after `text` written from here.
    #[must_use]
    pub fn after(self, text: &str) -> Pos {
        let mut p = self;
        for c in text.chars() {
            if c == '\n' {
                p.line += 1;
                p.col = 1;
            } else {
                p.col += 1;
            }
            p.byte += c.len_utf8();
        }
        p
    }
}

/// A comment: its text (from `#`, or empty for a blank line kept inside
/// brackets) and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    pub start: Pos,
    pub text: String,
}

/// The comments of a node: whole-line ones before it, end-of-line ones
/// after it, and (statements only) whole-line ones after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comments {
    pub before: Vec<Comment>,
    pub suffix: Vec<Comment>,
    pub after: Vec<Comment>,
}

/// A closing bracket: where comments before it are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct End {
    pub pos: Pos,
    pub com: Comments,
}

/// An expression or statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: Kind,
    pub com: Comments,
}

/// The kinds of node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Comments standing alone between statements.
    CommentBlock {
        start: Pos,
    },
    /// A number, as written.
    Literal {
        token: String,
        start: Pos,
    },
    Ident {
        name: String,
        start: Pos,
    },
    /// A string: its token as written and its value's bytes.
    Str {
        token: String,
        value: Vec<u8>,
        triple: bool,
        start: Pos,
        end: Pos,
    },
    Dot {
        x: Box<Node>,
        name: String,
        name_pos: Pos,
    },
    Index {
        x: Box<Node>,
        y: Box<Node>,
        end: Pos,
    },
    Slice {
        x: Box<Node>,
        from: Option<Box<Node>>,
        to: Option<Box<Node>>,
        step: Option<Box<Node>>,
        second_colon: bool,
        end: Pos,
    },
    KeyValue {
        key: Box<Node>,
        value: Box<Node>,
    },
    /// `not x`, `-x`, `*args`, `**kwargs`, or a lone `*` parameter.
    Unary {
        op: String,
        x: Option<Box<Node>>,
        start: Pos,
    },
    Binary {
        x: Box<Node>,
        op: String,
        y: Box<Node>,
        line_break: bool,
    },
    /// `=`, augmented assignments and keyword arguments.
    Assign {
        lhs: Box<Node>,
        op: String,
        rhs: Box<Node>,
        line_break: bool,
    },
    Paren {
        start: Pos,
        x: Box<Node>,
        end: End,
    },
    Call {
        x: Box<Node>,
        start: Pos,
        list: Vec<Node>,
        end: End,
    },
    /// `load(module, ...)`: each argument as (local name, exported name).
    Load {
        start: Pos,
        module: Box<Node>,
        args: Vec<(Node, Node)>,
        end: End,
        compact: bool,
    },
    List {
        start: Pos,
        list: Vec<Node>,
        end: End,
    },
    Tuple {
        start: Pos,
        list: Vec<Node>,
        end: End,
        brackets: bool,
    },
    Dict {
        start: Pos,
        list: Vec<Node>,
        end: End,
    },
    Comprehension {
        curly: bool,
        start: Pos,
        body: Box<Node>,
        clauses: Vec<Node>,
        end: End,
        multi_line: bool,
    },
    ForClause {
        start: Pos,
        vars: Box<Node>,
        x: Box<Node>,
    },
    IfClause {
        start: Pos,
        cond: Box<Node>,
    },
    Conditional {
        then: Box<Node>,
        test: Box<Node>,
        otherwise: Box<Node>,
    },
    Lambda {
        start: Pos,
        params: Vec<Node>,
        body: Box<Node>,
    },
    Return {
        start: Pos,
        result: Option<Box<Node>>,
    },
    /// `pass`, `break` or `continue`.
    Branch {
        token: String,
        start: Pos,
    },
    Def {
        start: Pos,
        name: String,
        params: Vec<Node>,
        params_end: End,
        colon: End,
        body: Vec<Node>,
    },
    For {
        start: Pos,
        vars: Box<Node>,
        x: Box<Node>,
        body: Vec<Node>,
    },
    /// The Go dialect's `while` (buildifier has none).
    While {
        start: Pos,
        cond: Box<Node>,
        body: Vec<Node>,
    },
    /// `if`; an `elif` is an `if` alone in the else branch.
    If {
        start: Pos,
        cond: Box<Node>,
        then: Vec<Node>,
        else_pos: End,
        otherwise: Vec<Node>,
    },
}

impl Node {
    pub fn new(kind: Kind) -> Node {
        Node {
            kind,
            com: Comments::default(),
        }
    }

    /// Where the node starts and ends in the source.
    pub fn span(&self) -> (Pos, Pos) {
        match &self.kind {
            Kind::CommentBlock { start } => (*start, *start),
            Kind::Literal { token, start }
            | Kind::Ident { name: token, start }
            | Kind::Branch { token, start } => (*start, start.after(token)),
            Kind::Str { start, end, .. } => (*start, *end),
            Kind::Dot { x, name, name_pos } => (x.span().0, name_pos.after(name)),
            Kind::Index { x, end, .. } | Kind::Slice { x, end, .. } => (x.span().0, end.after("]")),
            Kind::KeyValue { key, value } => (key.span().0, value.span().1),
            Kind::Unary { x, start, .. } => (*start, x.as_ref().map_or(*start, |x| x.span().1)),
            Kind::Binary { x, y, .. } => (x.span().0, y.span().1),
            Kind::Assign { lhs, rhs, .. } => (lhs.span().0, rhs.span().1),
            Kind::Paren { start, end, .. }
            | Kind::List { start, end, .. }
            | Kind::Dict { start, end, .. }
            | Kind::Load { start, end, .. }
            | Kind::Comprehension { start, end, .. } => (*start, end.pos.after(")")),
            Kind::Tuple {
                start,
                list,
                end,
                brackets,
            } => {
                if *brackets || list.is_empty() {
                    (*start, end.pos.after(")"))
                } else {
                    (list[0].span().0, list[list.len() - 1].span().1)
                }
            }
            Kind::Call { x, end, .. } => (x.span().0, end.pos.after(")")),
            Kind::ForClause { start, x, .. } => (*start, x.span().1),
            Kind::IfClause { start, cond } => (*start, cond.span().1),
            Kind::Conditional {
                then, otherwise, ..
            } => (then.span().0, otherwise.span().1),
            Kind::Lambda { start, body, .. } => (*start, body.span().1),
            Kind::Return { start, result } => (
                *start,
                result
                    .as_ref()
                    .map_or(start.after("return"), |r| r.span().1),
            ),
            Kind::Def { start, body, .. }
            | Kind::For { start, body, .. }
            | Kind::While { start, body, .. } => (*start, stmts_end(body, *start)),
            Kind::If {
                start,
                then,
                otherwise,
                ..
            } => {
                let body = if otherwise.is_empty() {
                    then
                } else {
                    otherwise
                };
                (*start, stmts_end(body, *start))
            }
        }
    }

    /// Whether the node is a `load` statement.
    pub fn is_load(&self) -> bool {
        matches!(self.kind, Kind::Load { .. })
    }

    /// Whether the node is a comment block.
    pub fn is_comment_block(&self) -> bool {
        matches!(self.kind, Kind::CommentBlock { .. })
    }
}

/// Where a block's statements end.
pub fn stmts_end(body: &[Node], otherwise: Pos) -> Pos {
    body.last().map_or(otherwise, |s| s.span().1)
}
