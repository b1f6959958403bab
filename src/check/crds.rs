//! `check --crds DIR`: each Composition is rendered in-process against an
//! example XR (`--xr`, an `xr.yaml` beside the Composition, or one made from
//! the XRD's schema), and every composed resource is validated against the
//! schema of its kind; reads of `oxr` fields the XRD does not declare are
//! reported too.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};
use starlark::syntax::AstModule;

use crate::syntax::line_map::LineMap;
use starlark::syntax::ast::{ArgumentP, AstExpr, AstLiteral, ExprP};

use super::{Finding, Severity};
use crate::openapi::{Schemas, example, validate};
use crate::render::load::{object, objects, string_at};

/// A Composition to render, and where its scripts are.
pub struct Target<'a> {
    pub file: &'a Path,
    pub composition: &'a Value,
    /// Each inline source and the YAML line/column it starts at.
    pub sources: Vec<(String, (usize, usize))>,
}

/// The XR to render with: `--xr`, `xr.yaml` beside the Composition, or an
/// example made from the XRD.
fn xr_for(target: &Target, given: Option<&Path>, schemas: &Schemas) -> Result<Value, String> {
    if let Some(path) = given {
        return object(path).map_err(|e| e.to_string());
    }
    let beside = target.file.with_file_name("xr.yaml");
    if beside.exists() {
        return object(&beside).map_err(|e| e.to_string());
    }
    let api = string_at(target.composition, "spec.compositeTypeRef.apiVersion");
    let kind = string_at(target.composition, "spec.compositeTypeRef.kind");
    let schema = schemas
        .of(api, kind)
        .ok_or_else(|| format!("no XR: give --xr, put an xr.yaml beside the Composition, or an XRD for {api} {kind} in --crds"))?;
    let spec = schema
        .pointer("/properties/spec")
        .map_or_else(|| json!({}), example);
    Ok(json!({"apiVersion": api, "kind": kind, "metadata": {"name": "example"}, "spec": spec}))
}

/// A Composition's inline script, parsed once for both scans below: its
/// tree, the map back to its text, and where that text starts in the YAML.
type Parsed = (AstModule, LineMap, (usize, usize));

fn parse_all(target: &Target) -> Vec<Parsed> {
    target
        .sources
        .iter()
        .filter_map(|(source, at)| {
            crate::syntax::parse_quietly("s.star", source).map(|(ast, map)| (ast, map, *at))
        })
        .collect()
}

/// The line and column of each `Resource("name", ...)` call of the
/// Composition's scripts, in the YAML file.
fn resource_positions(scripts: &[Parsed]) -> HashMap<String, (usize, usize)> {
    let mut out = HashMap::new();
    for (ast, map, (line0, col0)) in scripts {
        let mut visit = |e: &AstExpr| {
            if let ExprP::Call(f, call) = &e.node
                && matches!(&f.node, ExprP::Identifier(i) if i.node.ident == "Resource")
                && let Some(ArgumentP::Positional(first)) = call.args.first().map(|a| &a.node)
                && let ExprP::Literal(AstLiteral::String(name)) = &first.node
            {
                let begin = ast.file_span(e.span).resolve_span().begin;
                let (l, c) = map.original(begin.line, begin.column);
                out.entry(name.node.clone())
                    .or_insert((l + 1 + line0, c + 1 + col0));
            }
        };
        super::rules::each_expr(ast.statement(), &mut visit);
    }
    out
}

/// The `oxr` paths a script reads: `oxr.a.b` chains and the string path
/// of `get(oxr, "a.b")`, with their positions.
fn oxr_reads(scripts: &[Parsed]) -> Vec<(String, (usize, usize))> {
    fn chain(e: &AstExpr) -> Option<Vec<String>> {
        match &e.node {
            ExprP::Identifier(i) if i.node.ident == "oxr" => Some(Vec::new()),
            ExprP::Dot(inner, attr) => {
                let mut path = chain(inner)?;
                path.push(attr.node.clone());
                Some(path)
            }
            _ => None,
        }
    }
    let mut out = Vec::new();
    for (ast, map, (line0, col0)) in scripts {
        let mut found: Vec<(Vec<String>, starlark::codemap::Span)> = Vec::new();
        // `oxr.spec.name.upper()` reads `spec.name`: a called chain ends in
        // a method.
        let mut callees = std::collections::HashSet::new();
        super::rules::each_expr(ast.statement(), &mut |e: &AstExpr| {
            if let ExprP::Call(f, _) = &e.node {
                callees.insert((f.span.begin(), f.span.end()));
            }
        });
        let mut visit = |e: &AstExpr| {
            if let Some(path) = chain(e).filter(|p| !p.is_empty())
                && !callees.contains(&(e.span.begin(), e.span.end()))
            {
                found.push((path, e.span));
            }
            if let ExprP::Call(f, call) = &e.node
                && matches!(&f.node, ExprP::Identifier(i) if i.node.ident == "get")
                && let [first, second, ..] = call.args.as_slice()
                && let ArgumentP::Positional(obj) = &first.node
                && matches!(&obj.node, ExprP::Identifier(i) if i.node.ident == "oxr")
                && let ArgumentP::Positional(p) = &second.node
                && let ExprP::Literal(AstLiteral::String(s)) = &p.node
            {
                found.push((s.node.split('.').map(str::to_owned).collect(), e.span));
            }
        };
        super::rules::each_expr(ast.statement(), &mut visit);
        // The longest chain at a place stands for its prefixes.
        found.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        let mut kept: Vec<(Vec<String>, starlark::codemap::Span)> = Vec::new();
        for (path, span) in found {
            if !kept
                .iter()
                .any(|(p, s)| s.begin() == span.begin() && p.starts_with(&path))
            {
                kept.push((path, span));
            }
        }
        for (path, span) in kept {
            let begin = ast.file_span(span).resolve_span().begin;
            let (l, c) = map.original(begin.line, begin.column);
            out.push((path.join("."), (l + 1 + line0, c + 1 + col0)));
        }
    }
    out
}

/// Whether `path` names a field `schema` declares (or lets be).
fn declared(schema: &Value, path: &[&str]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return true;
    };
    if schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return true;
    }
    if let Some(sub) = schema.pointer(&format!("/properties/{first}")) {
        return declared(sub, rest);
    }
    match schema.get("additionalProperties") {
        Some(Value::Object(_)) => declared(&schema["additionalProperties"], rest),
        Some(Value::Bool(true)) => true,
        _ => {
            schema.get("properties").is_none()
                && schema.get("type").and_then(Value::as_str) != Some("string")
        }
    }
}

/// Every schema finding of one Composition.
pub async fn check(
    target: &Target<'_>,
    schemas: &Schemas,
    xr: Option<&Path>,
    function: &crate::function::StarlarkFunction,
) -> Vec<Finding> {
    let file = target.file.display().to_string();
    let finding = |at: (usize, usize), severity, message: String, rule| {
        Finding::at(&file, at, severity, message, rule)
    };
    let scripts = parse_all(target);
    let xr = match xr_for(target, xr, schemas) {
        Ok(xr) => xr,
        Err(message) => return vec![finding((1, 1), Severity::Info, message, "schema")],
    };
    let mut out = Vec::new();
    let xr_schema = schemas.of(string_at(&xr, "apiVersion"), string_at(&xr, "kind"));
    if let Some(schema) = xr_schema {
        for (path, at) in oxr_reads(&scripts) {
            let parts: Vec<&str> = path.split('.').collect();
            if parts.first() == Some(&"metadata") {
                continue;
            }
            if !declared(schema, &parts) {
                out.push(finding(
                    at,
                    Severity::Warning,
                    format!(
                        "oxr.{path} is not declared by the XRD of {}",
                        string_at(&xr, "kind")
                    ),
                    "xr-field",
                ));
            }
        }
    }
    let dir = target.file.parent().unwrap_or(Path::new("."));
    let beside = |name: &str| objects(&dir.join(name)).unwrap_or_default();
    let inputs = crate::render::Inputs {
        xr,
        composition: target.composition.clone(),
        observed: Vec::new(),
        required: beside("required-resources.yaml"),
        secrets: Vec::new(),
        context: serde_json::Map::new(),
        starlark_functions: None,
    };
    let outcome = match crate::render::pipeline(function, &inputs).await {
        Ok(o) => o,
        Err(e) => {
            out.push(finding(
                (1, 1),
                Severity::Error,
                format!("cannot render with the example XR: {e}"),
                "schema",
            ));
            return out;
        }
    };
    let positions = resource_positions(&scripts);
    let mut names: Vec<&String> = outcome.desired.resources.keys().collect();
    names.sort();
    for name in names {
        let body = crate::render::from_struct(outcome.desired.resources[name].resource.as_ref());
        let at = positions.get(name.as_str()).copied().unwrap_or((1, 1));
        match judge(schemas, &format!("Resource {name:?}"), &body) {
            Err(info) => out.push(finding(at, Severity::Info, info, "schema")),
            Ok(problems) => out.extend(
                problems
                    .into_iter()
                    .map(|p| finding(at, Severity::Error, p.message, "schema")),
            ),
        }
    }
    out
}

/// One problem of a body against its kind's schema.
pub struct Judged {
    /// The field's path, as [`validate`] prints it.
    pub path: String,
    /// What is wrong with it.
    pub problem: String,
    /// The finding's message, naming the call and the kind.
    pub message: String,
}

/// `body` (the body of the call `label` names) against the schema of its
/// `apiVersion` and `kind`: its problems, or, when `schemas` has no CRD
/// for the kind, the info saying so.
pub fn judge(schemas: &Schemas, label: &str, body: &Value) -> Result<Vec<Judged>, String> {
    let (api, kind) = (string_at(body, "apiVersion"), string_at(body, "kind"));
    let schema = schemas
        .of(api, kind)
        .ok_or_else(|| format!("{label}: no CRD for {api} {kind} in --crds"))?;
    Ok(validate(body, schema)
        .into_iter()
        .map(|(path, problem)| Judged {
            message: format!("{label} ({kind}): {path}: {problem}"),
            path,
            problem,
        })
        .collect())
}
