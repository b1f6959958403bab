//! `function-starlark fmt` against its oracle, buildifier `--type=bzl`
//! (built by scripts/tools.sh from github.com/bazelbuild/buildtools): the
//! same bytes on every `.star` file of the repository and every script
//! inside the examples' Compositions; a second run changes nothing;
//! comments are kept; a file that does not parse is left as it was.
//! Without buildifier the oracle test skips on a laptop and fails under
//! `CI=true`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use function_starlark::format::format;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.star` file under the repository's examples, stdlib, tests and
/// editors.
fn star_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("node_modules") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "star") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for dir in ["examples", "stdlib", "tests", "editors"] {
        walk(&root().join(dir), &mut out);
    }
    out.sort();
    assert!(out.len() > 90, "the corpus is there: {}", out.len());
    out
}

/// The inline scripts (sources and modules) of the examples' YAML files.
fn composition_scripts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples")
        .flatten()
        .flat_map(|e| std::fs::read_dir(e.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let Ok(doc) = <serde_json::Value as serde::Deserialize>::deserialize(doc) else {
                continue;
            };
            for step in doc
                .pointer("/spec/pipeline")
                .and_then(|p| p.as_array())
                .into_iter()
                .flatten()
            {
                if step.pointer("/input/kind").and_then(|k| k.as_str()) != Some("StarlarkInput") {
                    continue;
                }
                let name = format!("{} step {}", file.display(), step["step"]);
                if let Some(s) = step.pointer("/input/spec/source").and_then(|s| s.as_str()) {
                    out.push((format!("{name} source"), s.to_owned()));
                }
                if let Some(m) = step
                    .pointer("/input/spec/modules")
                    .and_then(|m| m.as_object())
                {
                    for (k, v) in m {
                        out.push((
                            format!("{name} module {k}"),
                            v.as_str().unwrap_or("").to_owned(),
                        ));
                    }
                }
            }
        }
    }
    assert!(
        out.len() >= 20,
        "the examples hold their scripts: {}",
        out.len()
    );
    out
}

fn buildifier() -> Option<PathBuf> {
    let gopath = Command::new("go")
        .args(["env", "GOPATH"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let found = gopath
        .map(|g| Path::new(&g).join("bin/buildifier"))
        .filter(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "buildifier is missing (scripts/tools.sh builds it), and CI=true requires it"
        );
        eprintln!("skipping: buildifier is not installed (scripts/tools.sh builds it)");
    }
    found
}

/// buildifier's output for `text`, `None` when it refuses the text (the
/// Go dialect's `while`, syntax errors).
fn oracle(buildifier: &Path, text: &str) -> Option<String> {
    let mut child = Command::new(buildifier)
        .arg("--type=bzl")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("buildifier runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("written");
    let out = child.wait_with_output().expect("buildifier ends");
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).expect("UTF-8"))
}

#[test]
fn fmt_prints_what_buildifier_prints_on_every_script_of_the_repository() {
    let Some(buildifier) = buildifier() else {
        return;
    };
    let mut inputs: Vec<(String, String)> = star_files()
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            (p.display().to_string(), text)
        })
        .collect();
    inputs.extend(composition_scripts());
    inputs.push(("comments".to_owned(), COMMENTED.to_owned()));
    let mut compared = 0;
    let mut refused = Vec::new();
    for (name, text) in &inputs {
        let Some(want) = oracle(&buildifier, text) else {
            refused.push(name.clone());
            continue;
        };
        let got = format(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}: fmt and buildifier differ");
        compared += 1;
    }
    assert!(compared > 120, "compared {compared}");
    // What buildifier refuses is the Go dialect (`while`, tab indentation)
    // or a syntax error kept on purpose; nothing else.
    let expected = [
        "editors/vscode/test/grammar/script.star",
        "tests/check/syntax.star",
        "tests/fixtures/compile_error_after_while.star",
        "tests/fixtures/runtime_error_position.star",
        "tests/fixtures/while_tabs_assert.star",
        "tests/format/tabs.star",
    ];
    let refused: Vec<String> = refused
        .iter()
        .map(|r| {
            r.trim_start_matches(&format!("{}/", root().display()))
                .to_owned()
        })
        .collect();
    assert_eq!(refused, expected);
}

#[test]
fn fmt_changes_nothing_the_second_time() {
    let mut inputs: Vec<(String, String)> = star_files()
        .into_iter()
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).expect("readable"),
            )
        })
        .collect();
    inputs.extend(composition_scripts());
    inputs.push(("comments".to_owned(), COMMENTED.to_owned()));
    let mut formatted = 0;
    for (name, text) in inputs {
        let Ok(once) = format(&text) else {
            continue;
        };
        let twice = format(&once).unwrap_or_else(|e| panic!("{name} formatted: {e}"));
        assert_eq!(once, twice, "{name}: a second run changed it");
        formatted += 1;
    }
    assert!(formatted > 110, "formatted {formatted}");
}

const COMMENTED: &str = r#"# file header
load("z.star", "b", "a")  # why z
# before x
x = {  # opening
    # inside, first
    "k": 1,  # after k

    # after a blank line
    "j": [1,
          2],  # after j
    # before the brace
}
def f(a,  # first parameter
      b):
    """Doc."""
    # before return
    return a + b  # sum
    # end of f, indented
# end of f, dedented
if x:  # if
    pass
else:  # else
    pass
y = f(
    1,
    # before the last argument
    2,
)
# file trailer
"#;

#[test]
fn every_comment_is_kept() {
    let once = format(COMMENTED).expect("formats");
    let comments = |text: &str| -> Vec<String> {
        let mut c: Vec<String> = text
            .lines()
            .filter_map(|l| l.find('#').map(|i| l[i..].trim().to_owned()))
            .collect();
        c.sort();
        c
    };
    assert_eq!(comments(&once), comments(COMMENTED), "{once}");
    assert!(
        once.contains("load(\"z.star\", \"a\", \"b\")  # why z"),
        "{once}"
    );
}

fn run_fmt(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .arg("fmt")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("fmt runs")
}

#[test]
fn a_file_that_does_not_parse_is_left_as_it_was_with_its_error() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let broken = "x = [1,\ny = 2\n";
    std::fs::write(dir.path().join("broken.star"), broken).expect("written");
    std::fs::write(dir.path().join("fine.star"), "x=1\n").expect("written");
    let out = run_fmt(&["broken.star", "fine.star"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("broken.star:2:3: syntax error near =")
            && stderr.contains("left as it was"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("broken.star")).expect("readable"),
        broken
    );
    // The other file is still formatted.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("fine.star")).expect("readable"),
        "x = 1\n"
    );
}

#[test]
fn check_names_what_is_not_formatted_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir(dir.path().join("lib")).expect("a folder");
    std::fs::write(dir.path().join("lib/a.star"), "x=1\n").expect("written");
    std::fs::write(dir.path().join("b.star"), "x = 1\n").expect("written");
    let out = run_fmt(&["--check", "."], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "./lib/a.star\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lib/a.star")).expect("readable"),
        "x=1\n"
    );
    assert!(run_fmt(&["."], dir.path()).status.success());
    assert!(run_fmt(&["--check", "."], dir.path()).status.success());
}

#[test]
fn a_composition_has_its_scripts_formatted_and_its_yaml_left_as_it_was() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let yaml = "\
# a Composition
apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata: {name: c}   # flow style stays
spec:
  mode: Pipeline
  pipeline:
  - step: one
    functionRef: {name: function-starlark}
    input:
      apiVersion: starlark.fn.crossplane.io/v1alpha1
      kind: StarlarkInput
      spec:
        source: |
          load('lib.star','f')
          Resource('a', {'kind':'ConfigMap'}, labels={'x':f()})

        modules:
          lib.star: |
            def f(): return 'y'
  - step: other
    functionRef: {name: function-patch-and-transform}
    input:
      kind: Resources
      note: |
        x=1
";
    std::fs::write(dir.path().join("composition.yaml"), yaml).expect("written");
    assert!(run_fmt(&["composition.yaml"], dir.path()).status.success());
    let got = std::fs::read_to_string(dir.path().join("composition.yaml")).expect("readable");
    let want = yaml
        .replace(
            "          load('lib.star','f')\n          Resource('a', {'kind':'ConfigMap'}, labels={'x':f()})\n",
            "          load(\"lib.star\", \"f\")\n\n          Resource(\"a\", {\"kind\": \"ConfigMap\"}, labels = {\"x\": f()})\n",
        )
        .replace(
            "            def f(): return 'y'\n",
            "            def f():\n                return \"y\"\n",
        );
    assert_eq!(got, want);
}

#[test]
fn hostile_nesting_is_an_error_not_a_crash() {
    let deep = format!("x = {}{}\n", "[".repeat(50_000), "]".repeat(50_000));
    let e = format(&deep).expect_err("too deep");
    assert!(
        e.to_string().contains("nested more than 1000 levels"),
        "{e}"
    );
    let chain = format!("x = {}\n", vec!["a"; 100_000].join(" + "));
    assert!(format(&chain).is_err());
    let ok = format!("x = {}1{}\n", "(".repeat(900), ")".repeat(900));
    assert!(format(&ok).is_ok());
}

#[test]
fn stdin_is_formatted_to_stdout_with_the_go_dialects_tabs_and_while() {
    let text = std::fs::read_to_string(root().join("tests/format/tabs.star")).expect("readable");
    let mut child = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .arg("fmt")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("fmt runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{text}while x:\n\tx -= 1\n").as_bytes())
        .expect("written");
    let out = child.wait_with_output().expect("fmt ends");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "def f():\n    x = 1\n    return x\n\nwhile x:\n    x -= 1\n"
    );
}

#[test]
fn loads_move_to_the_top_merged_and_sorted() {
    let text = std::fs::read_to_string(root().join("tests/format/loads.star")).expect("readable");
    assert_eq!(
        format(&text).expect("formats"),
        "load(\"a.bzl\", \"x\", \"z\")\nload(\"b.bzl\", \"y\")\n\nfoo()\n"
    );
}
