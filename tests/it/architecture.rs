//! The layout keeps its shape: every top-level module imports only modules
//! of lower layers (so nothing imports in a circle), and no source file
//! but tests grows past 1,000 lines.
//!
//! The layers, top to bottom (the STYLE guide's order, with each module
//! placed): a module may use `crate::x` only for an `x` of a lower layer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each top-level module and its layer; higher layers use lower ones.
const LAYERS: &[(&str, u8)] = &[
    ("server", 18),
    ("cli", 17),
    ("lsp", 16),
    ("debugger", 16),
    ("generate", 15),
    ("push", 15),
    ("test_runner", 15),
    ("check", 15),
    ("format", 15),
    ("render", 14),
    // The fuzz targets' bodies: the request path and each parser below it.
    ("fuzzing", 14),
    ("docs", 14),
    ("crd", 14),
    ("testing", 14),
    ("function", 13),
    ("metrics", 12),
    // One layer, so neither may use the other: the transport carries jobs
    // to a runner it knows only as `wire::Runs`.
    ("transport", 11),
    ("runner", 11),
    ("wire", 10),
    ("loader", 9),
    // The typed-schema model `check` and the editor read.
    ("typed", 8),
    ("syntax", 7),
    ("bindings", 7),
    ("apply", 7),
    ("builtins", 6),
    ("effects", 5),
    ("request", 4),
    ("convert", 3),
    ("values", 2),
    ("input", 2),
    ("go", 1),
    ("error", 1),
    ("limits", 1),
    ("meter", 1),
    ("cache", 1),
    ("panics", 1),
    ("openapi", 1),
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_owned();
    (name != "lib" && name != "main").then_some(name)
}

/// The text of a file without its unit tests, which may reach anywhere.
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests")
        .map_or(text, |at| &text[..at])
}

fn is_test_file(file: &Path) -> bool {
    file.file_name()
        .is_some_and(|n| n == "tests.rs" || n.to_string_lossy().ends_with("_tests.rs"))
}

#[test]
fn modules_use_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let Some(&own) = layers.get(module.as_str()) else {
            wrong.push(format!(
                "{}: module {module} has no layer in LAYERS",
                file.display()
            ));
            continue;
        };
        if is_test_file(file) {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a source file");
        for used in without_tests(&text).split("crate::").skip(1) {
            let name: String = used
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name == module {
                continue;
            }
            if let Some(&theirs) = layers.get(name.as_str())
                && theirs >= own
            {
                wrong.push(format!(
                    "{}: {module} (layer {own}) uses {name} (layer {theirs})",
                    file.strip_prefix(&src).unwrap_or(file).display()
                ));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_source_file_passes_a_thousand_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let long: Vec<String> = files
        .iter()
        .filter(|f| !is_test_file(f))
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            (lines > 1000).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files past 1,000 lines:\n{}",
        long.join("\n")
    );
}

/// The file a `crate::a::b::...` or `super::...` path names, seen from
/// `file`: the deepest source file the path's segments lead to.
fn file_of_path(src: &Path, file: &Path, path: &str) -> Option<PathBuf> {
    // The module `file` is: its path under src/ without `.rs`; `lib.rs`
    // and `main.rs` are the crate root.
    let relative = file.strip_prefix(src).ok()?.with_extension("");
    let mut module: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if module.len() == 1 && (module[0] == "lib" || module[0] == "main") {
        module.clear();
    }
    let mut segments: Vec<&str> = path.split("::").collect();
    let mut base: Vec<String> = match segments.first() {
        Some(&"crate") => {
            segments.remove(0);
            Vec::new()
        }
        Some(&"super") => {
            let mut base = module.clone();
            while segments.first() == Some(&"super") {
                segments.remove(0);
                base.pop();
            }
            base
        }
        _ => return None,
    };
    let mut found = None;
    for segment in segments {
        let name: String = segment
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            break;
        }
        base.push(name);
        let candidate = src.join(format!("{}.rs", base.join("/")));
        if candidate.is_file() {
            found = Some(candidate);
        } else {
            break;
        }
    }
    found.or_else(|| {
        base.pop();
        (!base.is_empty())
            .then(|| src.join(format!("{}.rs", base.join("/"))))
            .filter(|p| p.is_file())
    })
}

/// The files `text` (of `file`) imports through `crate::` and `super::`
/// paths outside comments (a doc link is not an import).
fn imported_files(src: &Path, file: &Path, text: &str) -> Vec<PathBuf> {
    let code: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let text = code.as_str();
    let mut out = Vec::new();
    for prefix in ["crate::", "super::"] {
        for (at, _) in text.match_indices(prefix) {
            // The whole path: `crate::a::b::c`, `super::super::x`.
            let path: String = text[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if let Some(target) = file_of_path(src, file, &path)
                && target != file
            {
                out.push(target);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Walks the import graph depth first from `file`; a file met again on
/// `path` closes a circle.
fn visit<'a>(
    file: &'a PathBuf,
    graph: &'a BTreeMap<PathBuf, Vec<PathBuf>>,
    path: &mut Vec<&'a PathBuf>,
    done: &mut std::collections::BTreeSet<&'a PathBuf>,
    circles: &mut Vec<String>,
) {
    if let Some(at) = path.iter().position(|p| *p == file) {
        let names: Vec<String> = path[at..]
            .iter()
            .chain(std::iter::once(&file))
            .map(|p| p.display().to_string())
            .collect();
        circles.push(names.join(" -> "));
        return;
    }
    if !done.insert(file) {
        return;
    }
    path.push(file);
    for next in graph.get(file).into_iter().flatten() {
        visit(next, graph, path, done, circles);
    }
    path.pop();
}

#[test]
fn no_source_files_import_each_other_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let graph: BTreeMap<PathBuf, Vec<PathBuf>> = files
        .iter()
        .filter(|f| !is_test_file(f))
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("a source file");
            (f.clone(), imported_files(&src, f, without_tests(&text)))
        })
        .collect();
    let mut circles = Vec::new();
    let mut done = std::collections::BTreeSet::new();
    for file in graph.keys() {
        visit(file, &graph, &mut Vec::new(), &mut done, &mut circles);
    }
    assert!(
        circles.is_empty(),
        "source files that import each other in a circle:\n{}",
        circles
            .join("\n")
            .replace(&format!("{}/", src.display()), "")
    );
}

/// The `use` lines of every non-test source file under `src/<dir>` (and
/// `src/<dir>.rs`), as `(file, line)`.
fn use_lines(dir: &str) -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    if src.join(dir).is_dir() {
        sources(&src.join(dir), &mut files);
    }
    files.push(src.join(format!("{dir}.rs")));
    let mut out = Vec::new();
    for file in files.iter().filter(|f| f.is_file() && !is_test_file(f)) {
        let text = std::fs::read_to_string(file).expect("a source file");
        let name = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        for line in without_tests(&text).lines() {
            let line = line.trim();
            if line.starts_with("use ") || line.starts_with("pub use ") {
                out.push((name.clone(), line.to_owned()));
            }
        }
    }
    out
}

#[test]
fn the_transport_knows_nothing_of_starlark_or_the_runner() {
    let wrong: Vec<String> = use_lines("transport")
        .into_iter()
        .filter(|(_, line)| line.contains("starlark::") || line.contains("crate::runner"))
        .map(|(file, line)| format!("{file}: {line}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "the transport reaches past jobs:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_handler_uses_no_internals_of_the_transport_or_the_runner() {
    // The handler gives the transport jobs and reads its answers; the
    // runner it never meets (the server hands it one as `wire::Runs`).
    let wrong: Vec<String> = use_lines("function")
        .into_iter()
        .filter(|(_, line)| line.contains("crate::runner") || line.contains("crate::transport::"))
        .filter(|(_, line)| line != "use crate::transport::Engine;")
        .map(|(file, line)| format!("{file}: {line}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "the handler reaches into the engine:\n{}",
        wrong.join("\n")
    );
}
