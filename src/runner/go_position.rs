//! Where go.starlark.net places a run-time error or a call in a traceback:
//! at a call's `(`, an index's `[` or a binary operation's operator, where
//! starlark-rust gives the span of the whole expression. The expression is
//! found in the compiled AST by its span, and the token looked for in the
//! compiled text after its first part.

use starlark::codemap::{FileSpan, Pos, Span};
use starlark::syntax::AstModule;
use starlark::syntax::ast::{ArgumentP, AstExpr, AstStmt, ExprP};

/// The byte offset go.starlark.net reports for `span` of `ast`, when the
/// span is a call, an index or a binary operation of it, and the columns
/// to add once that offset is mapped back to the user's source (the
/// pre-pass writes `receiver.pop(` as `_sl_pop(receiver, `, and so for
/// the other methods of `GO_METHODS`).
pub(crate) fn offset(ast: &AstModule, span: &FileSpan) -> Option<(u32, isize)> {
    let text = span.file.source();
    let expr = find(ast.statement(), span.span)?;
    let after = |e: &AstExpr, wanted: &dyn Fn(char) -> bool| -> Option<u32> {
        let from = usize::try_from(e.span.end().get()).ok()?;
        let rest = text.get(from..)?;
        let skip = rest
            .char_indices()
            .find(|&(_, c)| !(c.is_whitespace() || c == ')' || c == '\\'))?;
        wanted(skip.1).then(|| e.span.end().get() + u32::try_from(skip.0).unwrap_or(0))
    };
    match &expr.node {
        ExprP::Call(callee, args) => {
            let name = match &callee.node {
                ExprP::Identifier(id) => id.node.ident.as_str(),
                _ => "",
            };
            let first = args.args.first().map(|a| match &a.node {
                ArgumentP::Positional(e)
                | ArgumentP::Named(_, e)
                | ArgumentP::Args(e)
                | ArgumentP::KwArgs(e) => e,
            });
            match name.strip_prefix(crate::go::names::RESERVED_PREFIX) {
                Some(method) if crate::go::names::GO_METHODS.contains(&method) => {
                    // After the receiver: the `, ` that stands for
                    // `.NAME(` (its `(` is the name's length and one after
                    // the `.`), or the call's own `)` (its `(` is just
                    // before).
                    let end = first?.span.end().get();
                    let next = text.get(usize::try_from(end).ok()?..)?.chars().next()?;
                    let width = isize::try_from(method.len() + 1).unwrap_or(0);
                    Some((end, if next == ',' { width } else { -1 }))
                }
                // A redirected binary operator.
                Some(_) => after(first?, &|c| !c.is_alphanumeric()).map(|p| (p, 0)),
                None => after(callee, &|c| c == '(').map(|p| (p, 0)),
            }
        }
        ExprP::Index(pair) => after(&pair.0, &|c| c == '[').map(|p| (p, 0)),
        ExprP::Op(lhs, _, _) => after(lhs, &|c| !c.is_alphanumeric()).map(|p| (p, 0)),
        _ => None,
    }
}

/// The expression of `stmt` whose span is `span`.
fn find(stmt: &AstStmt, span: Span) -> Option<&AstExpr> {
    let mut found = None;
    visit_stmt(stmt, span, &mut found);
    found
}

fn visit_stmt<'a>(stmt: &'a AstStmt, span: Span, found: &mut Option<&'a AstExpr>) {
    if found.is_some() || !covers(stmt.span, span) {
        return;
    }
    stmt.node.visit_expr(|e| visit_expr(e, span, found));
    stmt.node.visit_stmt(|s| visit_stmt(s, span, found));
}

fn visit_expr<'a>(expr: &'a AstExpr, span: Span, found: &mut Option<&'a AstExpr>) {
    if found.is_some() || !covers(expr.span, span) {
        return;
    }
    if expr.span == span {
        *found = Some(expr);
        return;
    }
    expr.node.visit_expr(|e| visit_expr(e, span, found));
}

fn covers(outer: Span, inner: Span) -> bool {
    outer.begin() <= inner.begin() && inner.end() <= outer.end()
}

/// `span` moved to start at `offset`.
pub(crate) fn moved(span: &FileSpan, offset: u32) -> FileSpan {
    FileSpan {
        file: span.file.clone(),
        span: Span::new(Pos::new(offset), Pos::new(offset)),
    }
}
