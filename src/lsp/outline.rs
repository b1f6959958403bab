//! The outline of a document (`textDocument/documentSymbol`): its
//! top-level functions, `schema()` constructors and other bindings, and
//! every `Resource()` it declares, by the name it gives. A Composition's
//! is its inline script's, on the YAML's lines.

use serde_json::{Value, json};
use starlark::codemap::Span;
use starlark::syntax::ast::{ArgumentP, AssignTargetP, AstLiteral, ExprP, StmtP};

use super::documents::Document;

/// LSP symbol kinds used here.
const CLASS: u32 = 5;
const FUNCTION: u32 = 12;
const VARIABLE: u32 = 13;
const OBJECT: u32 = 19;

/// Every symbol of `doc`, in the order written.
pub fn symbols(doc: &Document) -> Vec<Value> {
    let text = doc.starlark();
    let Some((ast, map)) = crate::syntax::parse_quietly("outline.star", &text) else {
        return Vec::new();
    };
    let indent = doc.block.map_or(0, |b| b.indent);
    let range = |span: Span| {
        let r = ast.file_span(span).resolve_span();
        let (bl, bc) = map.original(r.begin.line, r.begin.column);
        let (el, ec) = map.original(r.end.line, r.end.column);
        json!({
            "start": {"line": bl, "character": bc + indent},
            "end": {"line": el, "character": ec + indent},
        })
    };
    let symbol = |name: String, kind: u32, whole: Span, selection: Span, detail: Option<String>| {
        let mut s = json!({
            "name": name, "kind": kind,
            "range": range(whole), "selectionRange": range(selection),
        });
        // VS Code's client refuses a `null` detail: it is left out instead.
        if let Some(detail) = detail {
            s["detail"] = Value::String(detail);
        }
        s
    };
    let mut out = Vec::new();
    let top: Vec<_> = match &ast.statement().node {
        StmtP::Statements(list) => list.iter().collect(),
        _ => vec![ast.statement()],
    };
    for stmt in top {
        match &stmt.node {
            StmtP::Def(def) => out.push(symbol(
                def.name.node.ident.clone(),
                FUNCTION,
                stmt.span,
                def.name.span,
                Some("def".to_owned()),
            )),
            StmtP::Assign(assign) => {
                if let AssignTargetP::Identifier(id) = &assign.lhs.node {
                    let constructor = matches!(&assign.rhs.node,
                        ExprP::Call(f, _) if matches!(&f.node, ExprP::Identifier(i) if i.node.ident == "schema"));
                    let (kind, detail) = if constructor {
                        (CLASS, "schema")
                    } else {
                        (VARIABLE, "")
                    };
                    out.push(symbol(
                        id.node.ident.clone(),
                        kind,
                        stmt.span,
                        id.span,
                        (!detail.is_empty()).then(|| detail.to_owned()),
                    ));
                }
            }
            _ => {}
        }
    }
    let mut resources = Vec::new();
    crate::syntax::visit::each_expr(ast.statement(), &mut |e| {
        let ExprP::Call(f, call) = &e.node else {
            return;
        };
        if !matches!(&f.node, ExprP::Identifier(i) if i.node.ident == "Resource") {
            return;
        }
        let name = call.args.iter().find_map(|a| match &a.node {
            ArgumentP::Positional(p) => Some(p),
            ArgumentP::Named(k, p) if k.node == "name" => Some(p),
            _ => None,
        });
        let label = match name.map(|n| &n.node) {
            Some(ExprP::Literal(AstLiteral::String(s))) => format!("Resource {:?}", s.node),
            _ => "Resource".to_owned(),
        };
        resources.push(symbol(label, OBJECT, e.span, f.span, None));
    });
    out.extend(resources);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_constructors_and_resources_are_listed() {
        let doc = Document::new(
            "file:///x.star",
            "Spec = schema(\"Spec\")\nregion = \"eu\"\ndef make(n):\n    return Resource(n, {})\nResource(\"bucket\", {})\n".to_owned(),
        );
        let symbols = symbols(&doc);
        let names: Vec<(&str, u64)> = symbols
            .iter()
            .map(|s| (s["name"].as_str().unwrap(), s["kind"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("Spec", 5),
                ("region", 13),
                ("make", 12),
                ("Resource", 19),
                ("Resource \"bucket\"", 19)
            ]
        );
        assert_eq!(
            symbols[4]["range"]["start"],
            json!({"line": 4, "character": 0})
        );
    }
}
