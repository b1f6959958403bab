//! The checks that read the syntax tree: builtin calls against their
//! signatures, and the `Resource()` calls (duplicate names, `depends_on`
//! cycles among literal references, `when=` and the gating keywords of
//! 0.11.0).

use std::collections::{BTreeMap, HashMap, HashSet};

use starlark::codemap::Span;
use starlark::syntax::AstModule;
use starlark::syntax::ast::{ArgumentP, AssignTargetP, AstExpr, AstLiteral, AstStmt, ExprP, StmtP};

use super::signatures::Params;
use super::{Finding, Severity};
use crate::syntax::line_map::LineMap;

/// A script's tree with what maps its positions back to the user's text.
pub struct Tree<'a> {
    pub ast: &'a AstModule,
    pub map: &'a LineMap,
    pub file: &'a str,
}

impl Tree<'_> {
    /// A finding at `span`, which ends where the span does.
    pub fn finding(
        &self,
        span: Span,
        severity: Severity,
        message: String,
        rule: &'static str,
    ) -> Finding {
        let resolved = self.ast.file_span(span).resolve_span();
        let (line, column) = self
            .map
            .original(resolved.begin.line, resolved.begin.column);
        let (end_line, end_column) = self.map.original(resolved.end.line, resolved.end.column);
        let mut f = Finding::at(self.file, (line + 1, column + 1), severity, message, rule);
        f.end = Some((end_line + 1, end_column + 1));
        f
    }
}

pub use crate::syntax::visit::each_expr;

/// The names a script binds at top level (defs, assignments, loads):
/// they shadow builtins of the same name.
pub fn top_level_names(ast: &AstModule) -> HashSet<String> {
    let mut out = HashSet::new();
    top_level_walk(ast.statement(), &mut out);
    out
}

fn top_level_walk(stmt: &AstStmt, out: &mut HashSet<String>) {
    let mut target = |t: &starlark::syntax::ast::AstAssignTarget| {
        t.node.visit_lvalue(|ident| {
            out.insert(ident.node.ident.clone());
        });
    };
    match &stmt.node {
        StmtP::Assign(a) => target(&a.lhs),
        StmtP::For(f) => target(&f.var),
        StmtP::Def(def) => {
            out.insert(def.name.node.ident.clone());
        }
        StmtP::Load(load) => {
            for arg in &load.args {
                out.insert(arg.local.node.ident.clone());
            }
        }
        StmtP::Statements(list) => list.iter().for_each(|s| top_level_walk(s, out)),
        StmtP::If(_, body) => top_level_walk(body, out),
        StmtP::IfElse(_, branches) => {
            top_level_walk(&branches.0, out);
            top_level_walk(&branches.1, out);
        }
        _ => {}
    }
}

/// The builtin a call names (`Resource`, `dict.merge`), unless a
/// top-level binding shadows it.
fn callee(expr: &AstExpr, shadowed: &HashSet<String>) -> Option<String> {
    match &expr.node {
        ExprP::Identifier(id) if !shadowed.contains(&id.node.ident) => Some(id.node.ident.clone()),
        ExprP::Dot(object, attr) => match &object.node {
            ExprP::Identifier(id) if !shadowed.contains(&id.node.ident) => {
                Some(format!("{}.{}", id.node.ident, attr.node))
            }
            _ => None,
        },
        _ => None,
    }
}

fn string_literal(expr: &AstExpr) -> Option<&str> {
    match &expr.node {
        ExprP::Literal(AstLiteral::String(s)) => Some(s.node.as_str()),
        _ => None,
    }
}

/// A `Resource(...)` call: its literal name, and where.
struct ResourceCall<'a> {
    name: Option<&'a str>,
    expr: &'a AstExpr,
    args: &'a [starlark::syntax::ast::AstArgument],
}

impl<'a> ResourceCall<'a> {
    fn named(&self, key: &str) -> Option<&'a AstExpr> {
        self.args.iter().find_map(|a| match &a.node {
            ArgumentP::Named(name, value) if name.node == key => Some(value),
            _ => None,
        })
    }
}

/// Every check of this module on one script.
pub fn check(tree: &Tree, signatures: &HashMap<String, Params>, out: &mut Vec<Finding>) {
    let shadowed = top_level_names(tree.ast);
    let mut resources: Vec<ResourceCall> = Vec::new();
    each_expr(tree.ast.statement(), &mut |expr| {
        let ExprP::Call(f, call) = &expr.node else {
            return;
        };
        let Some(name) = callee(f, &shadowed) else {
            return;
        };
        if name == "Resource" {
            resources.push(ResourceCall {
                name: call.args.first().and_then(|a| match &a.node {
                    ArgumentP::Positional(e) => string_literal(e),
                    _ => None,
                }),
                expr,
                args: &call.args,
            });
        }
        let Some(params) = signatures.get(&name) else {
            return;
        };
        let spread = call
            .args
            .iter()
            .any(|a| matches!(a.node, ArgumentP::Args(_) | ArgumentP::KwArgs(_)));
        if spread {
            return;
        }
        let positional = call
            .args
            .iter()
            .filter(|a| matches!(a.node, ArgumentP::Positional(_)))
            .count();
        let named: Vec<&str> = call
            .args
            .iter()
            .filter_map(|a| match &a.node {
                ArgumentP::Named(n, _) => Some(n.node.as_str()),
                _ => None,
            })
            .collect();
        if let Some((message, rule)) = params.problem(&name, positional, &named) {
            // At the token at fault: the keyword it does not take, the
            // first positional argument too many, else the callee's name.
            let keyword = call.args.iter().find_map(|a| match &a.node {
                ArgumentP::Named(n, _)
                    if rule == "unknown-keyword"
                        && message.ends_with(&format!("parameter {:?}", n.node)) =>
                {
                    Some(n.span)
                }
                _ => None,
            });
            let extra = (rule == "arity" && message.contains("positional argument"))
                .then(|| {
                    call.args
                        .iter()
                        .filter(|a| matches!(a.node, ArgumentP::Positional(_)))
                        .nth(params.positional.len())
                        .map(|a| a.span)
                })
                .flatten();
            let span = keyword.or(extra).unwrap_or(f.span);
            out.push(tree.finding(span, Severity::Error, message, rule));
        }
    });
    resource_checks(tree, &resources, out);
}

/// The top-level variables bound to a `Resource("name", ...)` call.
fn resource_variables(ast: &AstModule) -> HashMap<String, String> {
    let mut out = HashMap::new();
    each_stmt(ast.statement(), &mut |stmt| {
        if let StmtP::Assign(a) = &stmt.node
            && let AssignTargetP::Identifier(id) = &a.lhs.node
            && let ExprP::Call(f, call) = &a.rhs.node
            && matches!(&f.node, ExprP::Identifier(i) if i.node.ident == "Resource")
            && let Some(ArgumentP::Positional(first)) = call.args.first().map(|a| &a.node)
            && let Some(name) = string_literal(first)
        {
            out.insert(id.node.ident.clone(), name.to_owned());
        }
    });
    out
}

fn each_stmt<'a>(stmt: &'a AstStmt, f: &mut impl FnMut(&'a AstStmt)) {
    f(stmt);
    stmt.node.visit_stmt(|s| each_stmt(s, f));
}

/// `when=` takes a `When(...)`; the gating keywords of 0.11.0 (a bool
/// `when`, `skip_reason`, `preserve_observed`, `optional`) still run, with
/// a Warning, except `when = False` alone, which the run refuses.
fn gating_checks(tree: &Tree, r: &ResourceCall, name: &str, out: &mut Vec<Finding>) {
    let when_bool = r.named("when").and_then(|when| match &when.node {
        ExprP::Identifier(i) if i.node.ident == "False" || i.node.ident == "True" => {
            Some((when, i.node.ident == "True"))
        }
        _ => None,
    });
    let keywords: Vec<&AstExpr> = ["skip_reason", "preserve_observed", "optional"]
        .into_iter()
        .filter_map(|k| r.named(k))
        .collect();
    if let Some((when, false)) = when_bool
        && r.named("skip_reason").is_none()
        && r.named("preserve_observed").is_none()
    {
        out.push(tree.finding(
            when.span,
            Severity::Error,
            format!("Resource {name:?}: when takes a When() value, e.g. when = When(False, \"reason\", keep_if_exists = False)"),
            "when-value",
        ));
        return;
    }
    if let Some(first) = when_bool.map(|(w, _)| w).or(keywords.first().copied()) {
        out.push(tree.finding(
            first.span,
            Severity::Warning,
            format!("Resource {name:?} gates with the keywords of function-starlark 0.11.0: write when = When(condition, \"reason\", keep_if_exists = ..., optional = ...) instead"),
            "legacy-gating",
        ));
    }
}

fn resource_checks(tree: &Tree, resources: &[ResourceCall], out: &mut Vec<Finding>) {
    let mut seen: HashMap<&str, &AstExpr> = HashMap::new();
    for r in resources {
        let Some(name) = r.name else { continue };
        if seen.contains_key(name) {
            out.push(tree.finding(
                r.expr.span,
                Severity::Error,
                format!("Resource {name:?} is declared again: the last declaration replaces the earlier ones"),
                "duplicate-resource",
            ));
        } else {
            seen.insert(name, r.expr);
        }
        gating_checks(tree, r, name, out);
    }
    // depends_on edges among literal references.
    let variables = resource_variables(tree.ast);
    let mut edges: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut at: HashMap<&str, &AstExpr> = HashMap::new();
    for r in resources {
        let Some(name) = r.name else { continue };
        at.entry(name).or_insert(r.expr);
        let Some(deps) = r.named("depends_on") else {
            continue;
        };
        let (ExprP::List(items) | ExprP::Tuple(items)) = &deps.node else {
            continue;
        };
        for item in items {
            let target = match &item.node {
                ExprP::Identifier(id) => variables.get(&id.node.ident).cloned(),
                _ => string_literal(item).map(str::to_owned),
            };
            if let Some(t) = target {
                edges.entry(name).or_default().push(t);
            }
        }
    }
    let mut reported: HashSet<String> = HashSet::new();
    for start in edges.keys() {
        if let Some(cycle) = find_cycle(start, &edges)
            && !cycle.iter().any(|n| reported.contains(n))
        {
            reported.extend(cycle.iter().cloned());
            if let Some(expr) = at.get(start) {
                out.push(tree.finding(
                    expr.span,
                    Severity::Error,
                    format!("depends_on cycle: {}", cycle.join(" -> ")),
                    "depends-on-cycle",
                ));
            }
        }
    }
}

/// A path from `start` back to itself, if there is one.
fn find_cycle(start: &str, edges: &BTreeMap<&str, Vec<String>>) -> Option<Vec<String>> {
    fn go(
        node: &str,
        start: &str,
        edges: &BTreeMap<&str, Vec<String>>,
        path: &mut Vec<String>,
        seen: &mut HashSet<String>,
    ) -> bool {
        for next in edges.get(node).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if go(next, start, edges, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_owned()];
    let mut seen = HashSet::new();
    go(start, start, edges, &mut path, &mut seen).then_some(path)
}
