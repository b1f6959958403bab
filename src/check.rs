//! `function-starlark check [PATH...]`: finds mistakes in scripts, modules
//! and the Starlark steps of Compositions before they are deployed, all at
//! once, each as `file:line:col: severity: message [rule]`.
//!
//! Rules: `syntax`, `rebound` (a top-level name bound twice), `undefined`
//! (a name neither builtin nor bound), `arity` and `unknown-keyword` (a
//! builtin called against its signature, from the runtime's registry),
//! `load` (a target that does not resolve: inline modules, files beside the
//! script, the embedded standard library; OCI targets are listed),
//! `unused-load`, `duplicate-key` (a dict literal repeating a key: a run
//! fails), `duplicate-resource`, `depends-on-cycle` (among literal
//! references) and `when-without-reason`; `unknown-field`,
//! `missing-field`, `field-type` and `field-enum` for calls of `schema()`
//! constructors ([`crate::typed`]). A comment `# check: ignore` on a
//! line silences its findings, `# check: ignore[rule, ...]` only those
//! rules.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;
use starlark::analysis::AstModuleLint;
use starlark::syntax::AstModule;

use crate::loader::Target;
use crate::openapi::Schemas;

mod bodies;
mod crds;
mod modules;
mod rules;
mod signatures;

use modules::{fetch_oci, module_text, pulled, typed_scope};
pub use modules::{fetch_oci_modules, typed_scope_of};

pub use rules::top_level_names;
pub use signatures::split_top_level;

/// `check`'s arguments and flags.
#[derive(clap::Args, Debug, Clone)]
pub struct CheckArgs {
    /// Scripts (`.star`), Compositions (`.yaml`) or directories holding
    /// them (default: the current directory).
    pub paths: Vec<PathBuf>,
    /// `text` (one finding per line) or `json` (a list of findings).
    #[arg(long, default_value = "text")]
    pub format: Format,
    /// A file or directory of CRDs and XRDs: render each Composition with an
    /// example XR and validate every composed resource against the schema
    /// of its kind, and `oxr` reads against the XRD; in scripts and
    /// modules, judge the literal `Resource()` bodies at each field's line.
    #[arg(long, value_name = "DIR")]
    pub crds: Option<PathBuf>,
    /// The XR to render with under --crds (default: `xr.yaml` beside the
    /// Composition, else one made from the XRD's schema).
    #[arg(long, value_name = "FILE")]
    pub xr: Option<PathBuf>,
    /// Fetch the OCI modules scripts load (with the server's OCI settings
    /// and Docker config), and report those that cannot be fetched.
    #[arg(long)]
    pub oci: bool,
}

/// How findings are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// How bad a finding is: errors fail the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub severity: Severity,
    pub message: String,
    pub rule: &'static str,
    /// The OCI module a `load` info is about, which `--oci` fetches.
    pub oci: Option<String>,
    /// Where the text at fault ends (1-based, exclusive), when known.
    pub end: Option<(usize, usize)>,
    /// What would fix a constructor call's problem.
    pub fix: Option<Remedy>,
}

/// What fixes a finding, for an editor's quick fix.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Remedy {
    /// Replace the text at fault with this.
    Replace(String),
    /// Insert entries (`name = placeholder`, or `"name": placeholder` in a
    /// dict) before the closing bracket at 1-based `(line, column)`;
    /// `first` when the call or dict has no entries yet.
    Insert {
        entries: Vec<String>,
        at: (usize, usize),
        first: bool,
    },
}

impl Finding {
    /// A finding at 1-based `(line, column)` of `file`.
    pub fn at(
        file: &str,
        (line, column): (usize, usize),
        severity: Severity,
        message: String,
        rule: &'static str,
    ) -> Finding {
        Finding {
            file: file.to_owned(),
            line,
            column,
            severity,
            message,
            rule,
            oci: None,
            end: None,
            fix: None,
        }
    }

    fn text(&self) -> String {
        format!(
            "{}:{}:{}: {}: {} [{}]",
            self.file,
            self.line,
            self.column,
            self.severity.as_str(),
            self.message,
            self.rule
        )
    }

    fn json(&self) -> Value {
        serde_json::json!({
            "file": self.file, "line": self.line, "column": self.column,
            "severity": self.severity.as_str(), "message": self.message, "rule": self.rule,
        })
    }
}

/// A script to check, and what its `load()` can reach.
struct Script {
    /// Shown in findings.
    file: String,
    text: String,
    /// Added to positions: where the script starts in its file (an inline
    /// source in a Composition), as (lines, columns).
    offset: (usize, usize),
    /// The directory its relative loads read.
    dir: PathBuf,
    /// Who it is to `load()`: its path for a file, `composition.star` for
    /// a Composition's source, the key of an inline module.
    caller: String,
    /// Inline modules beside it (a Composition step's `modules`).
    modules: BTreeMap<String, String>,
    /// The step's `ociDefaultRegistry`, which short OCI forms expand with.
    default_registry: Option<String>,
}

/// The line (0-based) and indentation where `script` starts inside the
/// YAML `text` (a literal block keeps the script's lines verbatim).
fn block_offset(text: &str, script: &str) -> (usize, usize) {
    let Some(first) = script.lines().find(|l| !l.trim().is_empty()) else {
        return (0, 0);
    };
    let skipped = script.lines().take_while(|l| l.trim().is_empty()).count();
    for (i, line) in text.lines().enumerate() {
        if let Some(indent) = line.find(first)
            && line[..indent].trim().is_empty()
            && line.len() == indent + first.len()
        {
            return (i.saturating_sub(skipped), indent);
        }
    }
    (0, 0)
}

/// The scripts of a file: itself, or a Composition's Starlark steps and
/// their inline modules.
fn scripts(path: &Path) -> Vec<Script> {
    match std::fs::read_to_string(path) {
        Ok(text) => scripts_in(path, text),
        Err(_) => Vec::new(),
    }
}

/// The scripts of `text`, the content of the file `path`.
fn scripts_in(path: &Path, text: String) -> Vec<Script> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let shown = path.display().to_string();
    if path.extension().is_some_and(|e| e == "star") {
        // A file's relative loads (`./x.star`) read beside it, wherever
        // `check` was started.
        let caller =
            std::path::absolute(path).map_or_else(|_| shown.clone(), |p| p.display().to_string());
        return vec![Script {
            caller,
            file: shown,
            text,
            offset: (0, 0),
            dir,
            modules: BTreeMap::new(),
            default_registry: None,
        }];
    }
    let docs = crate::builtins::yaml::documents_as_json(&text).unwrap_or_default();
    let mut out = Vec::new();
    for doc in docs
        .iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("Composition"))
    {
        for spec in crate::input::pipeline_inputs(doc) {
            let modules: BTreeMap<String, String> =
                crate::render::load::strings(spec.get("modules"));
            let default_registry = spec
                .get("ociDefaultRegistry")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let sources = spec
                .get("source")
                .and_then(Value::as_str)
                .map(|s| (crate::input::INLINE_FILENAME, s))
                .into_iter()
                .chain(modules.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            for (caller, source) in sources {
                out.push(Script {
                    caller: caller.to_owned(),
                    file: shown.clone(),
                    text: source.to_owned(),
                    offset: block_offset(&text, source),
                    dir: dir.clone(),
                    modules: modules.clone(),
                    default_registry: default_registry.clone(),
                });
            }
        }
    }
    out
}

/// The inline scripts of the Compositions in the YAML `text`: who each is
/// to `load()` (`composition.star` for a step's `source`, else its module
/// key), its text, and the line (0-based) and indentation it starts at.
pub fn inline_scripts(text: &str) -> Vec<(String, String, (usize, usize))> {
    scripts_in(Path::new("composition.yaml"), text.to_owned())
        .into_iter()
        .map(|s| (s.caller, s.text, s.offset))
        .collect()
}

/// The inline `source` of the first Starlark step of a Composition in the
/// YAML `text`, and the line (0-based) and indentation it starts at.
pub fn inline_source(text: &str) -> Option<(String, (usize, usize))> {
    inline_scripts(text)
        .into_iter()
        .find(|(caller, _, _)| caller == crate::input::INLINE_FILENAME)
        .map(|(_, text, offset)| (text, offset))
}

/// The keys of the inline `modules` of a Composition's Starlark steps.
pub fn inline_module_keys(text: &str) -> Vec<String> {
    let mut keys: Vec<String> = scripts_in(Path::new("composition.yaml"), text.to_owned())
        .into_iter()
        .flat_map(|s| s.modules.into_keys())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The names a script sees without binding them.
fn predeclared() -> HashSet<String> {
    let runtime = crate::runner::Runtime::new(crate::limits::Limits::default(), 1);
    let mut names: HashSet<String> = runtime.global_names().into_iter().collect();
    names.extend(
        crate::bindings::REQUEST_GLOBALS
            .iter()
            .map(|n| (*n).to_owned()),
    );
    names
}

/// What `load(target)` of `script` reaches, or why not (and the OCI URL
/// of an OCI target).
fn load_problem(script: &Script, target: &str) -> Option<(Severity, String, Option<String>)> {
    let error = |message: String| Some((Severity::Error, message, None));
    // The assertions of test files written for the Go function's runner.
    if target == crate::go::names::ASSERT_MODULE && script.file.ends_with("_test.star") {
        return None;
    }
    if target.starts_with("starlark-stdlib:")
        && script.default_registry.is_none()
        && crate::loader::stdlib::resolve(target).is_none()
    {
        return error(format!(
            "{target:?} is not a module of the embedded standard library"
        ));
    }
    let classified = crate::loader::classify(
        target,
        &script.caller,
        script.default_registry.as_deref(),
        &|key| script.modules.contains_key(key),
    );
    match classified {
        Err(e) => error(format!("cannot load {target:?}: {e}")),
        Ok(Target::Oci(url)) => match pulled(&url) {
            Some(Ok(_)) => None,
            Some(Err(e)) => Some((
                Severity::Error,
                format!("cannot fetch OCI module {url:?}: {e}"),
                None,
            )),
            None => Some((
                Severity::Info,
                format!("load of OCI module {url:?} is not fetched (--oci fetches it)"),
                Some(url),
            )),
        },
        Ok(Target::Stdlib(_)) => None,
        Ok(Target::Local(name)) if script.modules.contains_key(&name) => None,
        Ok(Target::Local(name)) if script.dir.join(&name).is_file() => None,
        Ok(Target::Local(_)) => error(format!(
            "cannot load {target:?}: no inline module, and no such file beside the script"
        )),
        Ok(Target::File(path)) if Path::new(&path).is_file() => None,
        Ok(Target::File(path)) => error(format!("cannot load {target:?}: no such file ({path})")),
    }
}

/// Every finding of one script.
fn check_script(
    script: &Script,
    names: &HashSet<String>,
    signatures: &std::collections::HashMap<String, signatures::Params>,
    schemas: Option<&Schemas>,
    every_body: bool,
) -> Vec<Finding> {
    let at = |line: usize, column: usize, severity, message: String, rule| {
        Finding::at(&script.file, (line, column), severity, message, rule)
    };
    let pre = match crate::syntax::prepass::prepass(&script.text) {
        Ok(pre) => pre,
        Err(e) => return vec![at(e.line, e.column, Severity::Error, e.message, "syntax")],
    };
    let ast = match AstModule::parse(&script.file, pre.text.clone(), &crate::syntax::dialect()) {
        Ok(ast) => ast,
        Err(e) => {
            let (line, column) = e.span().map_or((0, 0), |s| {
                let b = s.resolve_span().begin;
                let (l, c) = pre.map.original(b.line, b.column);
                (l + 1, c + 1)
            });
            let message = e.without_diagnostic().to_string();
            return vec![at(line, column, Severity::Error, message, "syntax")];
        }
    };
    let mut out = Vec::new();
    // Scripts and modules may rebind their top-level names; Starlark test
    // files may not (`function-starlark test` runs them in Go's test
    // dialect). A second star import is not a rebinding of `*` (the
    // runtime expands stars before this check runs).
    let test_file = script.file.ends_with("_test.star");
    if test_file
        && let Err(e) = crate::syntax::static_check::check_global_reassignment(&ast, &pre.map)
        && !e.message.ends_with(" *")
    {
        out.push(at(e.line, e.column, Severity::Error, e.message, "rebound"));
    }
    let tree = rules::Tree {
        ast: &ast,
        map: &pre.map,
        file: &script.file,
    };
    let mut names = names.clone();
    names.extend(star_names(script, &ast));
    if test_file {
        names.insert(crate::go::names::RENAMED_ASSERT.to_owned());
    }
    for lint in ast.lint(Some(&names)) {
        let (severity, rule) = match lint.short_name.as_str() {
            "using-undefined" => (Severity::Error, "undefined"),
            // A star import binds what the module exports.
            "unused-load" if lint.problem.contains("`*`") => continue,
            "unused-load" => (Severity::Warning, "unused-load"),
            "duplicate-key" => (Severity::Error, "duplicate-key"),
            _ => continue,
        };
        let message = crate::go::names::unreserve_in_text(&lint.problem);
        out.push(tree.finding(lint.location.span, severity, message, rule));
    }
    for load in ast.loads() {
        if let Some((severity, message, oci)) = load_problem(script, load.module_id) {
            let mut f = tree.finding(load.span.span, severity, message, "load");
            f.oci = oci;
            out.push(f);
        }
    }
    rules::check(&tree, signatures, &mut out);
    let scope = typed_scope(script, &ast, &pre.map);
    for problem in crate::typed::judge::judge(&ast, &scope) {
        let mut f = tree.finding(problem.span, Severity::Error, problem.message, problem.rule);
        f.fix = match problem.fix {
            crate::typed::judge::Fix::None => None,
            crate::typed::judge::Fix::Rename(to) => Some(Remedy::Replace(to)),
            crate::typed::judge::Fix::Add {
                fields,
                span,
                empty,
                dict,
            } => {
                // Before the closing bracket, the span's last character.
                let end = tree.finding(span, Severity::Error, String::new(), "").end;
                let entry = |(name, value): (String, String)| {
                    if dict {
                        format!("{}: {value}", crate::syntax::string_literal(&name))
                    } else {
                        format!("{name} = {value}")
                    }
                };
                end.map(|(line, column)| Remedy::Insert {
                    entries: fields.into_iter().map(entry).collect(),
                    at: (line, column.saturating_sub(1)),
                    first: empty,
                })
            }
        };
        out.push(f);
    }
    // `check` judges a Composition's bodies by rendering it
    // (`crds::check`); an editor, which does not render, judges them here.
    if let Some(schemas) = schemas
        && (every_body
            || Path::new(&script.file)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("star")))
    {
        bodies::check(&tree, schemas, &|t| module_text(script, t), &mut out);
    }
    let lines: Vec<&str> = script.text.lines().collect();
    out.retain(|f| {
        !silenced(
            lines.get(f.line.wrapping_sub(1)).copied().unwrap_or(""),
            f.rule,
        )
    });
    for f in &mut out {
        if f.line > 0 {
            f.line += script.offset.0;
            f.column += script.offset.1;
        }
        if let Some((line, column)) = &mut f.end {
            *line += script.offset.0;
            *column += script.offset.1;
        }
        if let Some(Remedy::Insert {
            at: (line, column), ..
        }) = &mut f.fix
        {
            *line += script.offset.0;
            *column += script.offset.1;
        }
    }
    out
}

/// The names a script's star imports bind: every public top-level name of
/// the module (`load("m.star", "*")`), or the namespace (`ns = "*"`).
fn star_names(script: &Script, ast: &AstModule) -> Vec<String> {
    let mut out = Vec::new();
    let seen = std::cell::RefCell::new(HashSet::new());
    for load in ast.loads() {
        for (local, their) in &load.symbols {
            if *their != "*" {
                continue;
            }
            if *local != "*" {
                out.push((*local).to_owned());
                continue;
            }
            // The module as read for its constructors (cached by content:
            // a provider's module is read once, not on every change).
            if let Some(module) = modules::typed_module(script, load.module_id, &seen) {
                out.extend(
                    module
                        .exported
                        .iter()
                        .filter(|n| !n.starts_with('_'))
                        .cloned(),
                );
            }
        }
    }
    out
}

/// Whether a line's `# check: ignore[...]` comment covers `rule`.
fn silenced(line: &str, rule: &str) -> bool {
    let Some((_, comment)) = line.split_once("# check: ignore") else {
        return false;
    };
    match comment.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((rules, _)) => rules.split(',').any(|r| r.trim() == rule),
        None => true,
    }
}

/// The schemas of the CRDs and XRDs under `dir`.
pub fn schemas_in(dir: &Path) -> Schemas {
    Schemas::from_objects(&crate::render::load::objects(dir).unwrap_or_default())
}

/// Every schema finding of the Compositions of `files` (`--crds`).
fn schema_findings(
    files: &[PathBuf],
    args: &CheckArgs,
    options: crate::render::Options,
) -> Vec<Finding> {
    let Some(dir) = &args.crds else {
        return Vec::new();
    };
    let schemas = schemas_in(dir);
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(16 << 20)
        .build()
    else {
        return Vec::new();
    };
    let function = crate::render::function(options, |_| {});
    let mut out = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e != "star"))
    {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let docs = crate::builtins::yaml::documents_as_json(&text).unwrap_or_default();
        for composition in docs
            .iter()
            .filter(|d| d.get("kind").and_then(Value::as_str) == Some("Composition"))
        {
            let sources = scripts(file)
                .into_iter()
                .map(|s| (s.text, s.offset))
                .collect();
            let target = crds::Target {
                file,
                composition,
                sources,
            };
            out.extend(runtime.block_on(crds::check(
                &target,
                &schemas,
                args.xr.as_deref(),
                &function,
            )));
        }
    }
    out
}

/// Every finding under `paths`, in file and position order.
pub fn findings(paths: &[PathBuf]) -> Vec<Finding> {
    findings_with(paths, None)
}

fn findings_with(
    paths: &[PathBuf],
    schemas: Option<(&CheckArgs, crate::render::Options)>,
) -> Vec<Finding> {
    let found = crate::render::load::files_under(paths, &|name| {
        let lower = name.to_ascii_lowercase();
        [".star", ".yaml", ".yml"]
            .iter()
            .any(|e| lower.ends_with(e))
    });
    let names = predeclared();
    let signatures = signatures::all();
    let crds = schemas
        .as_ref()
        .and_then(|(args, _)| args.crds.as_deref())
        .map(schemas_in);
    let mut out: Vec<Finding> = found
        .iter()
        .flat_map(|f| scripts(f))
        .flat_map(|s| check_script(&s, &names, &signatures, crds.as_ref(), false))
        .collect();
    if let Some((args, options)) = schemas {
        if args.oci {
            fetch_oci(&mut out, &options);
        }
        out.extend(schema_findings(&found, args, options));
    }
    out.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    out.dedup();
    out
}

/// What an editor shows for the file `path` holding `text` (not yet
/// saved): every finding of its scripts, and with `schemas` those of the
/// literal `Resource()` bodies of every script, inline ones included
/// (Compositions are not rendered here).
pub struct Checker {
    names: HashSet<String>,
    signatures: std::collections::HashMap<String, signatures::Params>,
}

impl Default for Checker {
    fn default() -> Self {
        Checker {
            names: predeclared(),
            signatures: signatures::all(),
        }
    }
}

impl Checker {
    /// The findings of `text` as the content of `path`, in position order.
    pub fn findings(&self, path: &Path, text: String, schemas: Option<&Schemas>) -> Vec<Finding> {
        let mut out: Vec<Finding> = scripts_in(path, text)
            .iter()
            .flat_map(|s| check_script(s, &self.names, &self.signatures, schemas, true))
            .collect();
        out.sort_by_key(|f| (f.line, f.column));
        out.dedup();
        out
    }
}

/// Runs the check and prints the findings; exit status 1 when one is an
/// error.
pub fn main(args: &CheckArgs, options: crate::render::Options) -> ExitCode {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let found = findings_with(&paths, Some((args, options)));
    match args.format {
        Format::Text => {
            for f in &found {
                println!("{}", f.text());
            }
        }
        Format::Json => {
            let list: Vec<Value> = found.iter().map(Finding::json).collect();
            println!("{}", Value::Array(list));
        }
    }
    if found.iter().any(|f| f.severity == Severity::Error) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::{block_offset, silenced};

    #[test]
    fn an_inline_script_is_found_in_its_composition() {
        let yaml = "spec:\n  source: |\n    x = 1\n    y = 2\n";
        assert_eq!(block_offset(yaml, "x = 1\ny = 2\n"), (2, 4));
    }

    #[test]
    fn ignore_comments_silence_all_or_some_rules() {
        assert!(silenced("x = y  # check: ignore", "undefined"));
        assert!(silenced(
            "x = y  # check: ignore[undefined, arity]",
            "undefined"
        ));
        assert!(!silenced("x = y  # check: ignore[arity]", "undefined"));
        assert!(!silenced("x = y", "undefined"));
    }
}
