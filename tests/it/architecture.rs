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
    ("server", 16),
    ("cli", 15),
    ("test_runner", 14),
    ("check", 14),
    ("render", 13),
    ("docs", 13),
    ("crd", 13),
    ("testing", 13),
    ("function", 12),
    ("metrics", 11),
    ("engine", 10),
    ("loader", 9),
    ("input", 8),
    ("syntax", 7),
    ("bindings", 7),
    ("apply", 7),
    ("builtins", 6),
    ("effects", 5),
    ("request", 4),
    ("convert", 3),
    ("values", 2),
    ("go", 1),
    ("error", 1),
    ("meter", 1),
    ("memcopy", 1),
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
