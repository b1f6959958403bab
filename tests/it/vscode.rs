//! The VS Code extension (`editors/vscode`): its grammar names every
//! builtin the runtime registers (the registry is the one list:
//! `UPDATE_GOLDEN=1` rewrites the grammar's), and the grammar tests under
//! `editors/vscode/test/grammar` (vscode-tmgrammar-test, from the npm
//! registry: `scripts/tools.sh` installs the extension's packages) pass on
//! a script and on a Composition whose inline source and modules are
//! highlighted as Starlark. Without the packages the grammar tests skip,
//! except under `CI=true`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn extension() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/editors/vscode"))
}

/// The names the grammar lists in `repository[key]`'s `(a|b|c)` match.
fn listed(grammar: &Value, key: &str) -> BTreeSet<String> {
    let pattern = grammar["repository"][key]["match"]
        .as_str()
        .unwrap_or_default();
    let inside = pattern
        .split_once("])(")
        .or_else(|| pattern.split_once("\\b("))
        .map_or("", |(_, rest)| rest.split(')').next().unwrap_or_default());
    inside
        .split('|')
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `repository[key]`'s match with `names` as its alternatives.
fn with_names(grammar: &mut Value, key: &str, names: &BTreeSet<String>) {
    let pattern = grammar["repository"][key]["match"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let old = listed(grammar, key)
        .into_iter()
        .collect::<Vec<_>>()
        .join("|");
    let new = names
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("|");
    grammar["repository"][key]["match"] =
        Value::String(pattern.replacen(&format!("({old})"), &format!("({new})"), 1));
}

#[test]
fn the_grammar_names_every_builtin_the_runtime_registers() {
    let project: BTreeSet<String> = function_starlark::docs::project_names()
        .into_iter()
        .collect();
    let namespaces: BTreeSet<String> = project
        .iter()
        .filter(|n| function_starlark::docs::module_members(n).is_some())
        .cloned()
        .collect();
    let functions: BTreeSet<String> = project
        .iter()
        .filter(|n| !namespaces.contains(*n) && n.chars().next().is_some_and(char::is_alphabetic))
        .filter(|n| !n.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .cloned()
        .collect();
    let runtime =
        function_starlark::runner::Runtime::new(function_starlark::limits::Limits::default(), 1);
    let starlark: BTreeSet<String> = runtime
        .global_names()
        .into_iter()
        .filter(|n| {
            !project.contains(n)
                && !n.starts_with('_')
                && n.chars().next().is_some_and(char::is_lowercase)
        })
        .filter(|n| !n.starts_with(function_starlark::syntax::prepass::RESERVED_PREFIX))
        .collect();
    let globals: BTreeSet<String> = function_starlark::bindings::REQUEST_GLOBALS
        .iter()
        .map(|g| (*g).to_owned())
        .collect();

    let path = extension().join("syntaxes/starlark.tmLanguage.json");
    let text = std::fs::read_to_string(&path).expect("the grammar");
    let mut grammar: Value = serde_json::from_str(&text).expect("JSON");
    let lists = [
        ("builtin-namespaces", namespaces),
        ("builtin-functions", functions),
        ("starlark-functions", starlark),
        ("request-globals", globals),
    ];
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        for (key, names) in &lists {
            with_names(&mut grammar, key, names);
        }
        let mut out = serde_json::to_string_pretty(&grammar).expect("JSON");
        out.push('\n');
        std::fs::write(&path, out).expect("the grammar is writable");
        return;
    }
    for (key, names) in &lists {
        assert!(!names.is_empty(), "{key}");
        assert_eq!(
            &listed(&grammar, key),
            names,
            "{key}: run with UPDATE_GOLDEN=1 to write the registry's names into the grammar"
        );
    }
}

#[test]
fn the_grammar_tests_pass() {
    let runner = extension().join("node_modules/.bin/vscode-tmgrammar-test");
    if !runner.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "vscode-tmgrammar-test is not installed (scripts/tools.sh runs npm ci in editors/vscode)"
        );
        eprintln!("SKIPPED: vscode-tmgrammar-test is not installed");
        return;
    }
    let out = Command::new(&runner)
        .current_dir(extension().join("test/grammar"))
        .args(["--config", "package.json", "*.star", "*.yaml"])
        .output()
        .expect("vscode-tmgrammar-test runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("script.star") && said.contains("composition.yaml"),
        "both files ran: {said}"
    );
}

/// `editors/vscode/package.sh` packs the extension as a user installs it:
/// the manifest, its code, the grammars, the language configuration, the
/// licence and the language client, at the function's version, and
/// nothing of the folder's tests or tools.
#[test]
fn the_extension_packages_with_what_it_needs_and_nothing_else() {
    if !extension().join("node_modules/.bin/vsce").exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "vsce is not installed (scripts/tools.sh runs npm ci in editors/vscode)"
        );
        eprintln!("SKIPPED: vsce is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let vsix = dir.path().join("function-starlark.vsix");
    let out = Command::new(extension().join("package.sh"))
        .arg(&vsix)
        .output()
        .expect("package.sh runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\nfor n in zipfile.ZipFile(sys.argv[1]).namelist(): print(n)",
        ])
        .arg(&vsix)
        .output()
        .expect("python3 lists the archive");
    let names = String::from_utf8_lossy(&listed.stdout).into_owned();
    for wanted in [
        "extension/package.json",
        "extension/extension.js",
        "extension/language-configuration.json",
        "extension/syntaxes/starlark.tmLanguage.json",
        "extension/syntaxes/starlark-in-yaml.tmLanguage.json",
        "extension/LICENSE.txt",
        "extension/node_modules/vscode-languageclient/package.json",
    ] {
        assert!(names.lines().any(|n| n == wanted), "{wanted} in {names}");
    }
    for unwanted in [
        "extension/test/",
        "extension/package.sh",
        "node_modules/vscode-tmgrammar-test",
        "node_modules/@vscode/vsce",
    ] {
        assert!(!names.contains(unwanted), "{unwanted} packed: {names}");
    }
    let manifest = Command::new("python3")
        .args(["-c", "import sys, zipfile\nprint(zipfile.ZipFile(sys.argv[1]).read('extension/package.json').decode())"])
        .arg(&vsix)
        .output()
        .expect("python3 reads the manifest");
    let manifest: Value = serde_json::from_slice(&manifest.stdout).expect("the manifest is JSON");
    let version = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("package/version.sh"))
        .output()
        .expect("version.sh runs");
    assert_eq!(
        manifest["version"],
        String::from_utf8_lossy(&version.stdout).trim()
    );
}
