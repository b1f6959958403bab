//! The printer: buildifier's layout for `.bzl` files. Sequences keep the
//! line breaks they were written with (one element a line, a trailing
//! comma, the closing bracket on its own line) or are printed on one line;
//! blank lines between statements are kept (at most one), and added around
//! `def`s and between `load`s and the rest.

use super::quote::{is_correct_escaping, quote, unquote};
use super::tree::{Comment, End, Kind, Node, Pos};

const NESTED_INDENTATION: usize = 4;
const LIST_INDENTATION: usize = 4;
const DEF_INDENTATION: usize = 8;

// Operator precedences, low to high.
const PREC_LOW: u8 = 0;
const PREC_ASSIGN: u8 = 1;
const PREC_COLON: u8 = 2;
const PREC_IF_ELSE: u8 = 3;
const PREC_UNARY: u8 = 13;
const PREC_SUFFIX: u8 = 14;

fn op_prec(op: &str) -> u8 {
    match op {
        "or" => 4,
        "and" => 5,
        "in" | "not in" | "<" | ">" | "==" | "!=" | "<=" | ">=" => 6,
        "|" => 7,
        "^" => 8,
        "&" => 9,
        "<<" | ">>" => 10,
        "+" | "-" => 11,
        _ => 12,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Call,
    List,
    Tuple,
    Paren,
    Dict,
    Seq,
    Def,
    Load,
}

#[derive(Default)]
pub struct Printer {
    out: String,
    comment: Vec<Comment>,
    margin: usize,
    depth: usize,
    level: usize,
    needs_newline: bool,
}

fn different_lines(a: Pos, b: Pos) -> bool {
    a.line != 0 && b.line != 0 && a.line != b.line
}

impl Printer {
    pub fn finish(self) -> String {
        self.out
    }

    fn spaces(&mut self, n: usize) {
        self.out.extend(std::iter::repeat_n(' ', n));
    }

    /// The column on the current line, in bytes.
    fn indent(&self) -> usize {
        self.out.len() - self.out.rfind('\n').map_or(0, |i| i + 1)
    }

    fn trim(&mut self) {
        let kept = self.out.trim_end_matches(' ').len();
        self.out.truncate(kept);
    }

    fn newline(&mut self) {
        self.needs_newline = false;
        if !self.comment.is_empty() {
            self.out.push_str("  ");
            let comments = std::mem::take(&mut self.comment);
            for (i, c) in comments.iter().enumerate() {
                if i > 0 {
                    self.trim();
                    self.out.push('\n');
                    self.spaces(self.margin);
                }
                self.out.push_str(c.text.trim());
            }
        }
        self.trim();
        self.out.push('\n');
        self.spaces(self.margin);
    }

    fn soft_newline(&mut self) {
        self.needs_newline = true;
    }

    fn newline_if_needed(&mut self) {
        if self.needs_newline {
            self.newline();
        }
    }

    fn breakline(&mut self) {
        if self.depth == 0 {
            self.out.push_str(" \\\n");
            self.spaces(self.margin);
            return;
        }
        self.newline();
    }

    /// A whole file: its statements between the comments left for its
    /// start and end.
    pub fn file(&mut self, before: &[Comment], stmts: &[Node], after: &[Comment]) {
        for c in before {
            self.out.push_str(c.text.trim());
            self.newline();
        }
        self.statements(stmts);
        for c in after {
            self.out.push_str(c.text.trim());
            self.newline();
        }
        self.newline_if_needed();
    }

    fn nested_statements(&mut self, stmts: &[Node]) {
        self.margin += NESTED_INDENTATION;
        self.level += 1;
        self.newline();
        self.statements(stmts);
        self.margin -= NESTED_INDENTATION;
        self.level -= 1;
    }

    fn statements(&mut self, stmts: &[Node]) {
        for (i, stmt) in stmts.iter().enumerate() {
            self.expr(stmt, PREC_LOW);
            if !stmt.is_comment_block() {
                self.soft_newline();
            }
            for c in &stmt.com.after {
                self.newline_if_needed();
                self.out.push_str(c.text.trim());
                self.soft_newline();
            }
            if i + 1 < stmts.len() {
                self.newline();
                if !compact_stmt(stmt, &stmts[i + 1]) {
                    self.newline();
                }
            }
        }
    }

    fn preceding_comments(&mut self, v: &Node) {
        self.newline_if_needed();
        if v.com.before.is_empty() {
            return;
        }
        self.trim();
        if self.indent() > 0 {
            self.out.push('\n');
        }
        self.spaces(self.margin);
        for c in &v.com.before {
            self.out.push_str(c.text.trim());
            self.newline();
        }
    }

    fn queue_comments(&mut self, v: &Node) {
        self.comment.extend(v.com.suffix.iter().cloned());
    }

    #[allow(clippy::too_many_lines)]
    fn expr(&mut self, v: &Node, outer: u8) {
        self.preceding_comments(v);
        let mut parenthesized = false;
        let mut add_paren = |p: &mut Printer, prec: u8| {
            if prec < outer {
                p.out.push('(');
                p.depth += 1;
                parenthesized = true;
            }
        };
        match &v.kind {
            Kind::CommentBlock { .. } => {}
            Kind::Literal { token, .. }
            | Kind::Ident { name: token, .. }
            | Kind::Branch { token, .. } => self.out.push_str(token),
            Kind::Str {
                token,
                value,
                triple,
                ..
            } => self.string(token, value, *triple),
            Kind::Dot { x, name, name_pos } => {
                add_paren(self, PREC_SUFFIX);
                self.expr(x, PREC_SUFFIX);
                let multi_line = different_lines(*name_pos, x.span().1);
                if multi_line {
                    self.margin += LIST_INDENTATION;
                    self.breakline();
                }
                self.out.push('.');
                self.out.push_str(name);
                if multi_line {
                    self.margin -= LIST_INDENTATION;
                }
            }
            Kind::Index { x, y, .. } => {
                add_paren(self, PREC_SUFFIX);
                self.expr(x, PREC_SUFFIX);
                self.out.push('[');
                self.expr(y, PREC_LOW);
                self.out.push(']');
            }
            Kind::KeyValue { key, value } => {
                self.expr(key, PREC_LOW);
                self.out.push_str(": ");
                self.expr(value, PREC_LOW);
            }
            Kind::Slice {
                x,
                from,
                to,
                step,
                second_colon,
                ..
            } => {
                add_paren(self, PREC_SUFFIX);
                self.expr(x, PREC_SUFFIX);
                self.out.push('[');
                if let Some(from) = from {
                    self.expr(from, PREC_LOW);
                }
                self.out.push(':');
                if let Some(to) = to {
                    self.expr(to, PREC_LOW);
                }
                if *second_colon {
                    self.out.push(':');
                    if let Some(step) = step {
                        self.expr(step, PREC_LOW);
                    }
                }
                self.out.push(']');
            }
            Kind::Unary { op, x, .. } => {
                add_paren(self, PREC_UNARY);
                if op == "not" {
                    self.out.push_str("not ");
                } else {
                    self.out.push_str(op);
                }
                if let Some(x) = x {
                    self.expr(x, PREC_SUFFIX);
                }
            }
            Kind::Lambda { params, body, .. } => {
                add_paren(self, PREC_COLON);
                self.out.push_str("lambda");
                for (i, p) in params.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.out.push(' ');
                    self.expr(p, PREC_LOW);
                }
                self.out.push_str(": ");
                self.expr(body, PREC_LOW);
            }
            Kind::Binary {
                x,
                op,
                y,
                line_break,
            } => {
                let prec = op_prec(op);
                add_paren(self, prec);
                let m = self.margin;
                if *line_break {
                    self.margin = self.indent();
                }
                self.expr(x, prec);
                self.out.push(' ');
                self.out.push_str(op);
                if *line_break {
                    self.breakline();
                } else {
                    self.out.push(' ');
                }
                self.expr(y, prec + 1);
                self.margin = m;
            }
            Kind::Assign {
                lhs,
                op,
                rhs,
                line_break,
            } => {
                add_paren(self, PREC_ASSIGN);
                let m = self.margin;
                if *line_break {
                    self.margin = self.indent() + LIST_INDENTATION;
                }
                self.expr(lhs, PREC_ASSIGN);
                self.out.push(' ');
                self.out.push_str(op);
                if *line_break {
                    self.breakline();
                } else {
                    self.out.push(' ');
                }
                self.expr(rhs, PREC_ASSIGN + 1);
                self.margin = m;
            }
            Kind::Paren { start, x, end } => {
                self.seq(
                    "()",
                    *start,
                    std::slice::from_ref(x.as_ref()),
                    Some(end),
                    Mode::Paren,
                    false,
                );
            }
            Kind::Call {
                x,
                start,
                list,
                end,
            } => {
                add_paren(self, PREC_SUFFIX);
                self.expr(x, PREC_SUFFIX);
                self.seq("()", *start, list, Some(end), Mode::Call, false);
            }
            Kind::Load {
                start,
                module,
                args,
                end,
                compact,
            } => {
                add_paren(self, PREC_SUFFIX);
                self.out.push_str("load");
                let mut list = vec![module.as_ref().clone()];
                for (to, from) in args {
                    list.push(load_argument(to, from));
                }
                self.seq("()", *start, &list, Some(end), Mode::Load, *compact);
            }
            Kind::List { start, list, end } => {
                self.seq("[]", *start, list, Some(end), Mode::List, false);
            }
            Kind::Dict { start, list, end } => {
                self.seq("{}", *start, list, Some(end), Mode::Dict, false);
            }
            Kind::Tuple {
                start,
                list,
                end,
                brackets,
            } => {
                let mode = if *brackets { Mode::Tuple } else { Mode::Seq };
                self.seq("()", *start, list, Some(end), mode, true);
            }
            Kind::Comprehension {
                curly,
                body,
                clauses,
                end,
                multi_line,
                ..
            } => self.comprehension(*curly, body, clauses, end, *multi_line),
            Kind::ForClause { vars, x, .. } => {
                self.out.push_str("for ");
                self.expr(vars, PREC_LOW);
                self.out.push_str(" in ");
                self.expr(x, PREC_LOW);
            }
            Kind::IfClause { cond, .. } => {
                self.out.push_str("if ");
                self.expr(cond, PREC_LOW);
            }
            Kind::Conditional {
                then,
                test,
                otherwise,
            } => {
                add_paren(self, PREC_SUFFIX);
                self.expr(then, PREC_IF_ELSE);
                self.out.push_str(" if ");
                self.expr(test, PREC_IF_ELSE);
                self.out.push_str(" else ");
                self.expr(otherwise, PREC_IF_ELSE);
            }
            Kind::Return { result, .. } => {
                self.out.push_str("return");
                if let Some(r) = result {
                    self.out.push(' ');
                    self.expr(r, PREC_LOW);
                }
            }
            Kind::Def {
                start,
                name,
                params,
                params_end,
                colon,
                body,
            } => {
                self.out.push_str("def ");
                self.out.push_str(name);
                self.seq("()", *start, params, Some(params_end), Mode::Def, false);
                self.out.push(':');
                self.comment.extend(colon.com.suffix.iter().cloned());
                self.nested_statements(body);
            }
            Kind::For { vars, x, body, .. } => {
                self.out.push_str("for ");
                self.expr(vars, PREC_LOW);
                self.out.push_str(" in ");
                self.expr(x, PREC_LOW);
                self.out.push(':');
                self.nested_statements(body);
            }
            Kind::While { cond, body, .. } => {
                self.out.push_str("while ");
                self.expr(cond, PREC_LOW);
                self.out.push(':');
                self.nested_statements(body);
            }
            Kind::If { .. } => self.if_chain(v),
        }
        if parenthesized {
            self.depth -= 1;
            self.out.push(')');
        }
        self.queue_comments(v);
    }

    fn if_chain(&mut self, v: &Node) {
        let mut block = v;
        let mut first = true;
        let mut needs_empty_line = false;
        loop {
            let Kind::If {
                cond,
                then,
                else_pos,
                otherwise,
                ..
            } = &block.kind
            else {
                return;
            };
            self.newline_if_needed();
            if !first {
                if needs_empty_line {
                    self.newline();
                }
                self.out.push_str("el");
            }
            self.out.push_str("if ");
            self.expr(cond, PREC_LOW);
            self.out.push(':');
            self.nested_statements(then);
            first = false;
            let end = then.last().map_or(Pos::default(), |s| s.span().1);
            needs_empty_line = else_pos.pos.line.saturating_sub(end.line) > 1;
            if otherwise.len() == 1
                && matches!(otherwise[0].kind, Kind::If { .. })
                && else_pos.com.suffix.is_empty()
                && otherwise[0].com.before.is_empty()
            {
                block = &otherwise[0];
                continue;
            }
            if !otherwise.is_empty() {
                self.newline_if_needed();
                if needs_empty_line {
                    self.newline();
                }
                self.out.push_str("else:");
                self.comment.extend(else_pos.com.suffix.iter().cloned());
                self.nested_statements(otherwise);
            }
            return;
        }
    }

    fn string(&mut self, token: &str, value: &[u8], triple: bool) {
        if let Ok((v, t)) = unquote(token)
            && v == value
            && t == triple
        {
            if token.starts_with('r') {
                let mut token = token.to_owned();
                if token.ends_with('\'') && !value.contains(&b'"') {
                    if token.ends_with("'''") {
                        token = format!("r\"\"\"{}\"\"\"", &token[4..token.len() - 3]);
                    } else {
                        token = format!("r\"{}\"", &token[2..token.len() - 1]);
                    }
                }
                self.out.push_str(&token);
                return;
            }
            if (token.starts_with('"') || value.contains(&b'"')) && is_correct_escaping(token) {
                self.out.push_str(token);
                return;
            }
        }
        self.out.push_str(&quote(value, triple));
    }

    fn use_compact_mode(
        start: Pos,
        list: &[Node],
        end: Option<&End>,
        mode: Mode,
        force_compact: bool,
    ) -> bool {
        if list
            .iter()
            .any(|x| !x.com.before.is_empty() || (!x.com.suffix.is_empty() && mode != Mode::Def))
        {
            return false;
        }
        if end.is_some_and(|e| !e.com.before.is_empty()) {
            return false;
        }
        if mode == Mode::Seq {
            return true;
        }
        if mode == Mode::Call && list.is_empty() {
            return true;
        }
        if mode != Mode::Load {
            let mut previous_end = start;
            for x in list {
                let (s, e) = x.span();
                if different_lines(s, previous_end) {
                    return false;
                }
                if e.line != 0 {
                    previous_end = e;
                }
            }
            if let Some(end) = end
                && mode != Mode::Def
                && different_lines(previous_end, end.pos)
            {
                return false;
            }
            return true;
        }
        force_compact || list.len() <= 1
    }

    fn seq(
        &mut self,
        brackets: &str,
        start: Pos,
        list: &[Node],
        end: Option<&End>,
        mode: Mode,
        force_compact: bool,
    ) {
        if mode != Mode::Seq {
            self.out.push_str(&brackets[..1]);
        }
        self.depth += 1;
        if Self::use_compact_mode(start, list, end, mode, force_compact) {
            for (i, x) in list.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.expr(x, PREC_LOW);
            }
            if list.len() == 1 && mode == Mode::Tuple {
                self.out.push(',');
            }
        } else {
            let indentation = if mode == Mode::Def {
                DEF_INDENTATION
            } else {
                LIST_INDENTATION
            };
            self.margin += indentation;
            for (i, x) in list.iter().enumerate() {
                if i == 0 && !self.comment.is_empty() {
                    self.out.push('\n');
                    self.spaces(self.margin - 2);
                }
                self.newline();
                self.expr(x, PREC_LOW);
                if i + 1 < list.len() || needs_trailing_comma(mode, x) {
                    self.out.push(',');
                }
            }
            let mut final_comments = false;
            if let Some(end) = end {
                for c in &end.com.before {
                    self.newline();
                    self.out.push_str(c.text.trim());
                    final_comments = true;
                }
            }
            self.margin -= indentation;
            if mode != Mode::Def || final_comments {
                self.newline();
            }
        }
        self.depth -= 1;
        if mode != Mode::Seq {
            self.out.push_str(&brackets[1..]);
        }
    }

    fn comprehension(
        &mut self,
        curly: bool,
        body: &Node,
        clauses: &[Node],
        end: &End,
        multi_line: bool,
    ) {
        let multi_line = multi_line || !end.com.before.is_empty();
        let (open, close) = if curly { ("{", "}") } else { ("[", "]") };
        self.depth += 1;
        self.out.push_str(open);
        if multi_line {
            self.margin += LIST_INDENTATION;
            self.newline();
        }
        self.expr(body, PREC_LOW);
        for c in clauses {
            if multi_line {
                self.breakline();
            } else {
                self.out.push(' ');
            }
            self.expr(c, PREC_LOW);
        }
        if multi_line {
            for c in &end.com.before {
                self.newline();
                self.out.push_str(c.text.trim());
            }
            self.margin -= LIST_INDENTATION;
            self.newline();
        }
        self.out.push_str(close);
        self.depth -= 1;
    }
}

fn needs_trailing_comma(mode: Mode, v: &Node) -> bool {
    match mode {
        Mode::Def | Mode::Paren => false,
        Mode::Call => !matches!(&v.kind, Kind::Unary { op, .. } if op == "*" || op == "**"),
        _ => true,
    }
}

/// A load's argument as printed: `"name"` or `local = "name"`.
fn load_argument(to: &Node, from: &Node) -> Node {
    let (Kind::Ident { name: to_name, .. }, Kind::Ident { name, start }) = (&to.kind, &from.kind)
    else {
        unreachable!("load arguments are names");
    };
    let string = Node {
        kind: Kind::Str {
            token: String::new(),
            value: name.as_bytes().to_vec(),
            triple: false,
            start: *start,
            end: start.after(name),
        },
        com: from.com.clone(),
    };
    if to_name == name {
        let mut s = string;
        s.com.before.clone_from(&to.com.before);
        return s;
    }
    Node::new(Kind::Assign {
        lhs: Box::new(to.clone()),
        op: "=".to_owned(),
        rhs: Box::new(string),
        line_break: false,
    })
}

/// Whether two statements are printed without a blank line between.
fn compact_stmt(s1: &Node, s2: &Node) -> bool {
    if !s2.com.before.is_empty() || !s1.com.after.is_empty() {
        return false;
    }
    if s1.is_load() && s2.is_load() {
        return true;
    }
    if s1.is_load() || s2.is_load() {
        return false;
    }
    if s1.is_comment_block() || s2.is_comment_block() {
        return false;
    }
    if matches!(s1.kind, Kind::Def { .. }) || matches!(s2.kind, Kind::Def { .. }) {
        return false;
    }
    s2.span().0.line.saturating_sub(s1.span().1.line) <= 1
}
