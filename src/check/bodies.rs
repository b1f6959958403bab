//! `check --crds` on scripts and modules: the parts of a `Resource()` body
//! written as literals (dicts, lists, the keywords of `struct`,
//! `mutable_struct` and `schema()` constructors, a top-level name bound to
//! such a literal) are judged against their kind's schema without running
//! anything, and each problem is reported at the field it names. A
//! constructor's `apiVersion`/`kind` presets (a `gen`erated kind's) name
//! the schema. What is computed is left to the run-time checks.

use std::collections::HashMap;

use serde_json::{Map, Value};
use starlark::codemap::Span;
use starlark::syntax::AstModule;
use starlark::syntax::ast::{ArgumentP, AssignTargetP, AstExpr, AstLiteral, ExprP, StmtP};

use super::rules::{Tree, each_expr};
use super::{Finding, Severity};
use crate::openapi::Schemas;

/// How deep a name bound to a literal is followed (`a = {...}; b = {"x": a}`).
const NAME_DEPTH: usize = 4;

/// The literal part of a body, and where each of its fields was written.
struct Literal<'a> {
    /// Top-level `name = <expr>` bindings of the script.
    bindings: HashMap<&'a str, &'a AstExpr>,
    /// Field path (as [`crate::openapi::validate`] prints it) to the span of its key.
    spans: HashMap<String, Span>,
    /// The `schema()` constructors in scope and what each presets.
    constructors: HashMap<String, Preset>,
}

/// The `(field, value)`s a constructor presets with a one-value enum
/// default (a generated kind's `apiVersion` and `kind`).
type Preset = Vec<(String, String)>;

/// The top-level `Name = schema("Name", ...)` constructors of a module.
fn constructors_in(ast: &AstModule) -> HashMap<String, Preset> {
    let mut out = HashMap::new();
    let top: Vec<_> = match &ast.statement().node {
        StmtP::Statements(list) => list.iter().collect(),
        _ => vec![ast.statement()],
    };
    for stmt in top {
        let StmtP::Assign(assign) = &stmt.node else {
            continue;
        };
        let (AssignTargetP::Identifier(id), ExprP::Call(f, call)) =
            (&assign.lhs.node, &assign.rhs.node)
        else {
            continue;
        };
        if !matches!(&f.node, ExprP::Identifier(i) if i.node.ident == "schema") {
            continue;
        }
        let mut preset = Vec::new();
        for arg in &call.args {
            if let ArgumentP::Named(key, value) = &arg.node
                && let ExprP::Call(g, field) = &value.node
                && matches!(&g.node, ExprP::Identifier(i) if i.node.ident == "field")
                && let Some(default) = field.args.iter().find_map(|a| match &a.node {
                    ArgumentP::Named(k, v) if k.node == "default" => match &v.node {
                        ExprP::Literal(AstLiteral::String(s)) => Some(s.node.clone()),
                        _ => None,
                    },
                    _ => None,
                })
                && (key.node == "apiVersion" || key.node == "kind")
            {
                preset.push((key.node.clone(), default));
            }
        }
        out.insert(id.node.ident.clone(), preset);
    }
    out
}

/// The constructors a script sees: its own and those it loads (by name,
/// or all public ones with `"*"`) from modules `module_text` can read.
fn constructors(
    tree: &Tree,
    module_text: &dyn Fn(&str) -> Option<String>,
) -> HashMap<String, Preset> {
    let mut out = constructors_in(tree.ast);
    for load in tree.ast.loads() {
        let Some(text) = module_text(load.module_id) else {
            continue;
        };
        let Some((module, _)) = crate::syntax::parse_quietly("module.star", &text) else {
            continue;
        };
        let theirs = constructors_in(&module);
        for (local, their) in &load.symbols {
            if *their == "*" && *local == "*" {
                out.extend(
                    theirs
                        .iter()
                        .filter(|(n, _)| !n.starts_with('_'))
                        .map(|(n, p)| (n.clone(), p.clone())),
                );
            } else if let Some(preset) = theirs.get(*their) {
                out.insert((*local).to_owned(), preset.clone());
            }
        }
    }
    out
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
            ExprP::Call(f, call) => self.call(f, &call.args, path, depth),
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

    /// A call that builds an object from its keywords: `struct`,
    /// `mutable_struct`, or a `schema()` constructor (which presets what it
    /// presets, as generated kinds do `apiVersion` and `kind`).
    fn call(
        &mut self,
        f: &'a AstExpr,
        args: &'a [starlark::syntax::ast::AstArgument],
        path: &str,
        depth: usize,
    ) -> Option<Value> {
        let ExprP::Identifier(id) = &f.node else {
            return None;
        };
        let name = id.node.ident.as_str();
        let preset = match name {
            "struct" | "mutable_struct" => Vec::new(),
            _ => self.constructors.get(name)?.clone(),
        };
        let mut map = Map::new();
        for arg in args {
            match &arg.node {
                ArgumentP::Named(key, value)
                    if !(name == "mutable_struct" && key.node == "schema") =>
                {
                    self.field(&mut map, &key.node, arg.span, value, path, depth);
                }
                ArgumentP::Named(..) => {}
                // `**fields` or positional arguments: not a literal object.
                _ => return None,
            }
        }
        for (key, value) in preset {
            map.entry(key).or_insert(Value::String(value));
        }
        Some(Value::Object(map))
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

/// Every schema finding of the literal `Resource()` bodies of one script;
/// `module_text` reads the modules it loads.
pub fn check(
    tree: &Tree,
    schemas: &Schemas,
    module_text: &dyn Fn(&str) -> Option<String>,
    out: &mut Vec<Finding>,
) {
    let bindings = bindings(tree);
    let constructors = constructors(tree, module_text);
    each_expr(tree.ast.statement(), &mut |expr| {
        let Some((body, name)) = resource_body(expr) else {
            return;
        };
        let mut literal = Literal {
            bindings: bindings.clone(),
            spans: HashMap::new(),
            constructors: constructors.clone(),
        };
        let Some(value) = literal.value(body, "", NAME_DEPTH) else {
            return;
        };
        let text = |key: &str| value.get(key).and_then(Value::as_str);
        if text("apiVersion").is_none() || text("kind").is_none() {
            return;
        }
        let problems = match super::crds::judge(schemas, &name, &value) {
            Ok(problems) => problems,
            Err(info) => {
                out.push(tree.finding(expr.span, Severity::Info, info, "schema"));
                return;
            }
        };
        // What is left out of a literal may well be set elsewhere.
        for p in problems
            .into_iter()
            .filter(|p| p.problem != crate::openapi::MISSING)
        {
            let span = literal.spans.get(&p.path).copied().unwrap_or(expr.span);
            out.push(tree.finding(span, Severity::Error, p.message, "schema"));
        }
    });
}
