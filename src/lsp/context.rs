//! What starlark_lsp asks of the project: a document's tree and its
//! diagnostics (every `check` finding), where a `load()` leads (files
//! beside the script, the embedded standard library), and the documented
//! names every script sees (the runtime's registry, never a second list).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lsp_types::{
    CompletionItemKind, Diagnostic, DiagnosticSeverity, NumberOrString, Position, Range,
};
use starlark::docs::{DocItem, DocMember, DocModule, DocProperty, DocString};
use starlark::syntax::AstModule;
use starlark::typing::Ty;
use starlark_lsp::completion::{StringCompletionResult, StringCompletionType};
use starlark_lsp::server::{LspContext, LspEvalResult, LspUri, StringLiteralResult};

use super::documents::Documents;
use super::inline;
use crate::check::{Checker, Finding, Severity};
use crate::openapi::Schemas;

/// What each request global holds, shown on hover and in completion.
const REQUEST_GLOBAL_DOCS: [(&str, &str); 8] = [
    ("oxr", "The observed composite resource (XR), frozen."),
    (
        "dxr",
        "The desired composite resource: set `dxr[\"status\"]` fields here.",
    ),
    (
        "observed",
        "The observed composed resources by name, frozen.",
    ),
    (
        "context",
        "The pipeline context: read what earlier steps wrote, write for later ones.",
    ),
    (
        "environment",
        "The EnvironmentConfig data of the pipeline context, frozen.",
    ),
    (
        "extra_resources",
        "The required (extra) resources by requirement name, frozen.",
    ),
    (
        "output",
        "An Operation's output: a dict written to the Operation's status.",
    ),
    ("watched", "A WatchOperation's watched resource, or None."),
];

/// The project's answers to starlark_lsp.
pub struct Context {
    pub documents: Arc<Documents>,
    checker: Checker,
    schemas: Option<Schemas>,
    environment: DocModule,
    /// Where the embedded standard library is written for editors to open.
    stdlib_dir: PathBuf,
}

impl Context {
    /// A context for `documents`, judging bodies against the CRDs under
    /// `crds` when given.
    pub fn new(documents: Arc<Documents>, crds: Option<&Path>) -> Context {
        let mut environment = crate::docs::environment();
        for (name, doc) in REQUEST_GLOBAL_DOCS {
            environment.members.insert(
                name.to_owned(),
                DocItem::Member(DocMember::Property(DocProperty {
                    docs: Some(DocString {
                        summary: doc.to_owned(),
                        details: None,
                        examples: None,
                    }),
                    typ: Ty::any(),
                })),
            );
        }
        Context {
            documents,
            checker: Checker::default(),
            schemas: crds.map(crate::check::schemas_in),
            environment,
            stdlib_dir: write_stdlib(),
        }
    }

    /// Every name a script sees without binding it.
    pub fn global_names(&self) -> Vec<String> {
        self.environment.members.keys().cloned().collect()
    }

    /// The embedded module a `starlark-stdlib:` target names, as a file.
    fn stdlib_file(&self, target: &str) -> Option<PathBuf> {
        let key = crate::loader::stdlib::resolve(target)?;
        let (tag, file) = key.split_once(':')?.1.split_once('/')?;
        let path = self.stdlib_dir.join(tag).join(file);
        path.is_file().then_some(path)
    }

    /// Every finding of a document, as diagnostics.
    pub fn diagnostics(&self, path: &Path, text: &str) -> Vec<Diagnostic> {
        let findings = self
            .checker
            .findings(path, text.to_owned(), self.schemas.as_ref());
        let lines: Vec<&str> = text.lines().collect();
        findings
            .iter()
            .map(|f| diagnostic(f, lines.get(f.line.wrapping_sub(1)).copied()))
            .collect()
    }
}

/// The Composition file a script belongs to: a YAML file itself, or the
/// file of an inline module.
fn composition_of(uri: &LspUri) -> Option<PathBuf> {
    match uri {
        LspUri::File(path) if super::documents::is_yaml(&path.display().to_string()) => {
            Some(path.clone())
        }
        LspUri::Starlark(path) => inline::split(path).map(|(yaml, _)| yaml),
        LspUri::Other(_) | LspUri::File(_) => None,
    }
}

/// Writes the embedded standard library where an editor can open it:
/// `<temp>/function-starlark-<version>/stdlib/<tag>/<file>`.
fn write_stdlib() -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("function-starlark-{}", crate::VERSION))
        .join("stdlib");
    for tag in crate::loader::stdlib::TAGS {
        let _ = std::fs::create_dir_all(dir.join(tag));
        for (name, text) in crate::loader::stdlib::FILES {
            let path = dir.join(tag).join(name);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
                let _ = std::fs::write(&path, text);
            }
        }
    }
    dir
}

/// The diagnostic of a finding on `line` (its text): the range covers the
/// word or call it starts at.
fn diagnostic(f: &Finding, line: Option<&str>) -> Diagnostic {
    let (row, column) = (f.line.saturating_sub(1), f.column.saturating_sub(1));
    // The token at fault: where the finding says it ends, else the word
    // that starts there.
    let end = match f.end {
        Some((end_line, end_column)) if end_line == f.line && end_column > f.column => {
            end_column - 1
        }
        _ => {
            column
                + line.and_then(|l| l.get(column..)).map_or(1, |rest| {
                    rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                        .unwrap_or(rest.len())
                        .max(1)
                })
        }
    };
    let position = |c: usize| Position::new(to_u32(row), to_u32(c));
    Diagnostic {
        range: Range::new(position(column), position(end)),
        severity: Some(match f.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Info => DiagnosticSeverity::INFORMATION,
        }),
        code: Some(NumberOrString::String(f.rule.to_owned())),
        source: Some("function-starlark".to_owned()),
        message: f.message.clone(),
        data: f
            .fix
            .as_ref()
            .and_then(|fix| serde_json::to_value(fix).ok()),
        ..Diagnostic::default()
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn file_path(uri: &LspUri) -> PathBuf {
    uri.path().to_path_buf()
}

impl LspContext for Context {
    fn parse_file_with_contents(&self, uri: &LspUri, content: String) -> LspEvalResult {
        let path = file_path(uri);
        let shown = path.display().to_string();
        // A Composition's diagnostics are judged on the YAML the editor holds.
        let real = match super::documents::editor_uri(uri).and_then(|u| self.documents.get(&u)) {
            Some(doc) => doc.text,
            None => content.clone(),
        };
        // A fault in a check costs the file its diagnostics, not the server.
        let diagnostics =
            crate::panics::quietly(|| self.diagnostics(&path, &real)).unwrap_or_else(|e| {
                vec![Diagnostic {
                    message: format!("function-starlark could not check this file: {e}"),
                    severity: Some(DiagnosticSeverity::WARNING),
                    source: Some("function-starlark".to_owned()),
                    ..Diagnostic::default()
                }]
            });
        // The pre-pass refuses what nests too deep for the parser's stack.
        let ast = crate::syntax::prepass::prepass(&content)
            .ok()
            .and_then(|_| AstModule::parse(&shown, content, &crate::syntax::dialect()).ok());
        LspEvalResult { diagnostics, ast }
    }

    fn resolve_load(
        &self,
        path: &str,
        current_file: &LspUri,
        _workspace_root: Option<&Path>,
    ) -> Result<LspUri, String> {
        if let Some(file) = self.stdlib_file(path) {
            return Ok(LspUri::File(file));
        }
        if let Some(yaml) = composition_of(current_file)
            && let Some(text) = inline::yaml_text(&self.documents, &yaml)
            && crate::check::inline_module_keys(&text)
                .iter()
                .any(|k| k == path)
        {
            return Ok(inline::uri(&yaml, path));
        }
        if path.contains(':') {
            return Err(format!(
                "{path:?} is not a file or a module of the embedded standard library"
            ));
        }
        let dir = file_path(current_file)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok(LspUri::File(dir.join(path.trim_start_matches("./"))))
    }

    fn render_as_load(
        &self,
        target: &LspUri,
        current_file: &LspUri,
        _workspace_root: Option<&Path>,
    ) -> Result<String, String> {
        if let LspUri::Starlark(path) = target
            && let Some((_, key)) = inline::split(path)
        {
            return Ok(key);
        }
        let (target, current) = (file_path(target), file_path(current_file));
        if let Ok(rest) = target.strip_prefix(&self.stdlib_dir) {
            let shown = rest.display().to_string();
            return Ok(format!("{}:{shown}", crate::loader::stdlib::PACKAGE));
        }
        match target.strip_prefix(current.parent().unwrap_or(Path::new("/"))) {
            Ok(rest) => Ok(rest.display().to_string()),
            Err(_) => Err(format!(
                "{} is not beside {}",
                target.display(),
                current.display()
            )),
        }
    }

    fn resolve_string_literal(
        &self,
        _literal: &str,
        _current_file: &LspUri,
        _workspace_root: Option<&Path>,
    ) -> Result<Option<StringLiteralResult>, String> {
        Ok(None)
    }

    fn get_load_contents(&self, uri: &LspUri) -> Result<Option<String>, String> {
        match uri {
            LspUri::File(path) => Ok(std::fs::read_to_string(path).ok()),
            LspUri::Starlark(path) => Ok(inline::split(path)
                .and_then(|(yaml, key)| inline::module(&self.documents, &yaml, &key))
                .map(|(text, _)| text)),
            LspUri::Other(_) => Ok(None),
        }
    }

    fn get_environment(&self, _uri: &LspUri) -> DocModule {
        self.environment.clone()
    }

    fn get_uri_for_global_symbol(
        &self,
        _current_file: &LspUri,
        _symbol: &str,
    ) -> Result<Option<LspUri>, String> {
        Ok(None)
    }

    fn get_string_completion_options(
        &self,
        document_uri: &LspUri,
        kind: StringCompletionType,
        _current_value: &str,
        _workspace_root: Option<&Path>,
    ) -> Result<Vec<StringCompletionResult>, String> {
        if kind != StringCompletionType::LoadPath {
            return Ok(Vec::new());
        }
        let current = file_path(document_uri);
        let mut out: Vec<StringCompletionResult> = Vec::new();
        let entry = |value: String| StringCompletionResult {
            value,
            insert_text: None,
            insert_text_offset: 0,
            kind: CompletionItemKind::FILE,
        };
        if let Some(dir) = current.parent()
            && let Ok(entries) = std::fs::read_dir(dir)
        {
            let mut names: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| {
                    Path::new(n).extension().is_some_and(|e| e == "star")
                        && Some(n.as_str()) != current.file_name().and_then(|f| f.to_str())
                })
                .collect();
            names.sort();
            out.extend(names.into_iter().map(entry));
        }
        // A Composition's inline modules, by key.
        if let Some(doc) =
            super::documents::editor_uri(document_uri).and_then(|u| self.documents.get(&u))
            && doc.yaml
        {
            out.extend(
                crate::check::inline_module_keys(&doc.text)
                    .into_iter()
                    .map(entry),
            );
        }
        for tag in crate::loader::stdlib::TAGS {
            for (name, _) in crate::loader::stdlib::FILES {
                out.push(entry(format!(
                    "{}:{tag}/{name}",
                    crate::loader::stdlib::PACKAGE
                )));
            }
        }
        Ok(out)
    }
}
