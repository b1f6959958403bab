//! Walking a parsed script: every expression once, depth first, for the
//! static readings of `check`, the typed-schema judge and the editor.

use std::collections::HashSet;

use starlark::syntax::ast::{AstExpr, AstStmt};

/// Every expression of `stmt` once, depth first.
pub fn each_expr<'a>(stmt: &'a AstStmt, f: &mut impl FnMut(&'a AstExpr)) {
    let mut seen = HashSet::new();
    each_expr_of(stmt, &mut |e: &'a AstExpr| {
        if seen.insert((e.span.begin(), e.span.end())) {
            f(e);
        }
    });
}

fn each_expr_of<'a>(stmt: &'a AstStmt, f: &mut impl FnMut(&'a AstExpr)) {
    stmt.node.visit_expr(|e| each_expr_in(e, f));
    stmt.node.visit_stmt(|s| each_expr_of(s, f));
}

fn each_expr_in<'a>(expr: &'a AstExpr, f: &mut impl FnMut(&'a AstExpr)) {
    f(expr);
    expr.node.visit_expr(|e| each_expr_in(e, f));
}
