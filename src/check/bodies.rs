//! `check --crds` on scripts and modules: the parts of a `Resource()` body
//! written as literals (dicts, lists, `struct`/`mutable_struct` keywords,
//! a top-level name bound to such a literal) are judged against their
//! kind's schema without running anything, and each problem is reported at
//! the field it names. What is computed is left to the run-time checks.

use std::collections::HashMap;

use serde_json::{Map, Value};
use starlark::codemap::Span;
use starlark::syntax::ast::{ArgumentP, AssignTargetP, AstExpr, AstLiteral, ExprP, StmtP};

use super::rules::{Tree, each_expr};
use super::{Finding, Severity};
use crate::openapi::{Schemas, validate};

/// How deep a name bound to a literal is followed (`a = {...}; b = {"x": a}`).
const NAME_DEPTH: usize = 4;

/// The literal part of a body, and where each of its fields was written.
struct Literal<'a> {
    /// Top-level `name = <expr>` bindings of the script.
    bindings: HashMap<&'a str, &'a AstExpr>,
    /// Field path (as [`validate`] prints it) to the span of its key.
    spans: HashMap<String, Span>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Literal<'a> {
    /// `expr` as JSON when it is a literal; fields that are not are left
    /// out of their object (a list with one such item is left out whole).
    fn value(&mut self, expr: &'a AstExpr, path: &str, depth: usize) -> Option<Value> {
        match &expr.node {
            ExprP::Dict(pairs) => {
                let mut map = Map::new();
                for (key, value) in pairs {
                    let ExprP::Literal(AstLiteral::String(key_text)) = &key.node else {
                        continue;
                    };
                    self.field(&mut map, &key_text.node, key.span, value, path, depth);
                }
                Some(Value::Object(map))
            }
            ExprP::Call(f, call)
                if matches!(&f.node, ExprP::Identifier(i)
                    if i.node.ident == "struct" || i.node.ident == "mutable_struct") =>
            {
                let mut map = Map::new();
                for arg in &call.args {
                    if let ArgumentP::Named(name, value) = &arg.node
                        && name.node != "schema"
                    {
                        self.field(&mut map, &name.node, arg.span, value, path, depth);
                    }
                }
                Some(Value::Object(map))
            }
            ExprP::List(items) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let at = format!("{path}[{i}]");
                    self.spans.insert(at.clone(), item.span);
                    out.push(self.value(item, &at, depth)?);
                }
                Some(Value::Array(out))
            }
            ExprP::Literal(AstLiteral::String(s)) => Some(Value::String(s.node.clone())),
            ExprP::Literal(AstLiteral::Int(i)) => {
                i.node.to_string().parse::<i64>().ok().map(Value::from)
            }
            ExprP::Literal(AstLiteral::Float(f)) => {
                serde_json::Number::from_f64(f.node).map(Value::Number)
            }
            ExprP::Identifier(id) => match id.node.ident.as_str() {
                "True" => Some(Value::Bool(true)),
                "False" => Some(Value::Bool(false)),
                "None" => Some(Value::Null),
                name if depth > 0 => {
                    let bound = *self.bindings.get(name)?;
                    self.value(bound, path, depth - 1)
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn field(
        &mut self,
        map: &mut Map<String, Value>,
        key: &str,
        span: Span,
        value: &'a AstExpr,
        path: &str,
        depth: usize,
    ) {
        let at = join(path, key);
        self.spans.insert(at.clone(), span);
        if let Some(v) = self.value(value, &at, depth) {
            map.insert(key.to_owned(), v);
        }
    }
}

/// The top-level `name = <expr>` bindings of a script (the last one wins).
fn bindings<'a>(tree: &Tree<'a>) -> HashMap<&'a str, &'a AstExpr> {
    let mut out = HashMap::new();
    let top: Vec<_> = match &tree.ast.statement().node {
        StmtP::Statements(list) => list.iter().collect(),
        _ => vec![tree.ast.statement()],
    };
    for stmt in top {
        if let StmtP::Assign(assign) = &stmt.node
            && let AssignTargetP::Identifier(id) = &assign.lhs.node
        {
            out.insert(id.node.ident.as_str(), &assign.rhs);
        }
    }
    out
}

/// The body argument of a `Resource(name, body, ...)` call, and how to
/// name the call in a finding.
fn resource_body(expr: &AstExpr) -> Option<(&AstExpr, String)> {
    let ExprP::Call(f, call) = &expr.node else {
        return None;
    };
    if !matches!(&f.node, ExprP::Identifier(i) if i.node.ident == "Resource") {
        return None;
    }
    let mut positional = call.args.iter().filter_map(|a| match &a.node {
        ArgumentP::Positional(e) => Some(e),
        _ => None,
    });
    let named = |key: &str| {
        call.args.iter().find_map(|a| match &a.node {
            ArgumentP::Named(n, e) if n.node == key => Some(e),
            _ => None,
        })
    };
    let name = positional.next().or_else(|| named("name"));
    let body = positional.next().or_else(|| named("body"))?;
    let name = match name.map(|n| &n.node) {
        Some(ExprP::Literal(AstLiteral::String(s))) => format!("Resource {:?}", s.node),
        _ => "Resource".to_owned(),
    };
    Some((body, name))
}

/// Every schema finding of the literal `Resource()` bodies of one script.
pub fn check(tree: &Tree, schemas: &Schemas, out: &mut Vec<Finding>) {
    let bindings = bindings(tree);
    each_expr(tree.ast.statement(), &mut |expr| {
        let Some((body, name)) = resource_body(expr) else {
            return;
        };
        let mut literal = Literal {
            bindings: bindings.clone(),
            spans: HashMap::new(),
        };
        let Some(value) = literal.value(body, "", NAME_DEPTH) else {
            return;
        };
        let text = |key: &str| value.get(key).and_then(Value::as_str);
        let (Some(api), Some(kind)) = (text("apiVersion"), text("kind")) else {
            return;
        };
        let Some(schema) = schemas.of(api, kind) else {
            out.push(tree.finding(
                expr.span,
                Severity::Info,
                format!("{name}: no CRD for {api} {kind} in --crds"),
                "schema",
            ));
            return;
        };
        for (path, problem) in validate(&value, schema) {
            // What is left out of a literal may well be set elsewhere.
            if problem == crate::openapi::MISSING {
                continue;
            }
            let span = literal.spans.get(&path).copied().unwrap_or(expr.span);
            out.push(tree.finding(
                span,
                Severity::Error,
                format!("{name} ({kind}): {path}: {problem}"),
                "schema",
            ));
        }
    });
}
