//! `function-starlark render` as a user runs it: for every example, the
//! same files and flags as the crossplane render test (tests/it/render.rs)
//! must print exactly the example's `expected.yaml`, which is what
//! `crossplane render` printed. Also: a step of another function and a
//! script's Fatal result fail with a message naming them, and `print()`
//! output goes to stderr, not into the YAML.

use std::path::Path;
use std::process::{Command, Output};

use crate::common;

pub fn render(dir: &Path, extra: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_function-starlark"));
    cmd.current_dir(dir)
        .env_remove("FUNCTION_ADDRESS")
        .args([
            "render",
            "xr.yaml",
            "composition.yaml",
            "functions.yaml",
            "-r",
        ])
        .args(extra);
    if dir.join("observed.yaml").exists() {
        cmd.args(["-o", "observed.yaml"]);
    }
    if dir.join("required-resources.yaml").exists() {
        cmd.args(["-e", "required-resources.yaml"]);
    }
    cmd.output().expect("function-starlark runs")
}

#[test]
fn render_prints_what_crossplane_render_printed_for_every_example() {
    for dir in common::example_dirs() {
        let out = render(&dir, &[]);
        assert!(
            out.status.success(),
            "render failed for {}:\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = std::fs::read_to_string(dir.join("expected.yaml")).expect("expected.yaml");
        let got = String::from_utf8(out.stdout).expect("UTF-8 output");
        assert_eq!(
            got,
            expected,
            "{}: render output differs from expected.yaml",
            dir.display()
        );
    }
}

/// A temporary copy of `examples/bucket-topic` with its script replaced.
fn case_with_script(script: &str, function_name: &str) -> tempfile::TempDir {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bucket-topic");
    let dir = tempfile::tempdir().expect("a temporary directory");
    for file in ["xr.yaml", "functions.yaml"] {
        std::fs::copy(source.join(file), dir.path().join(file)).expect("copy");
    }
    let mut indented = String::new();
    for line in script.lines() {
        indented.push_str("            ");
        indented.push_str(line);
        indented.push('\n');
    }
    let composition = format!(
        "apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: t
spec:
  compositeTypeRef:
    apiVersion: example.crossplane.io/v1
    kind: XNotifiedBucket
  mode: Pipeline
  pipeline:
    - step: first
      functionRef:
        name: {function_name}
      input:
        apiVersion: starlark.fn.crossplane.io/v1alpha1
        kind: StarlarkInput
        spec:
          source: |
{indented}"
    );
    std::fs::write(dir.path().join("composition.yaml"), composition).expect("write");
    dir
}

#[test]
fn a_step_of_another_function_fails_naming_it() {
    let dir = case_with_script("x = 1", "function-patch-and-transform");
    let out = render(dir.path(), &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pipeline step \"first\" uses function \"function-patch-and-transform\""),
        "{err}"
    );
}

#[test]
fn a_fatal_result_stops_the_render_with_the_scripts_error() {
    let dir = case_with_script("x = 1\ny = {}[\"missing\"]", "function-starlark");
    let out = render(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pipeline step \"first\" returned a fatal result"),
        "{err}"
    );
    assert!(
        err.contains("composition.star:2"),
        "the script's position: {err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn print_goes_to_stderr_and_the_context_can_be_shown() {
    let dir = case_with_script(
        "print(\"hello from the script\")\ncontext[\"seen\"] = True",
        "function-starlark",
    );
    let out = render(
        dir.path(),
        &[
            "-c",
            "--context-values",
            "apiextensions.crossplane.io/environment={\"a\": 1}",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(String::from_utf8_lossy(&out.stderr).contains("hello from the script"));
    assert!(!stdout.contains("hello from the script"));
    let docs = common::documents(&stdout);
    let context = docs.last().expect("a Context document");
    assert_eq!(context["kind"], "Context");
    assert_eq!(context["fields"]["seen"], true);
    assert_eq!(
        context["fields"]["apiextensions.crossplane.io/environment"]["a"],
        1
    );
}

/// A requirement with `namespace=` is answered from the given resources in
/// that namespace only, by name and by labels.
#[test]
fn required_resources_are_selected_in_the_requirements_namespace() {
    let dir = case_with_script(
        "require_extra_resource('by_name', 'v1', 'ConfigMap', match_name='settings', namespace='team-a')
require_extra_resources('by_labels', 'v1', 'ConfigMap', match_labels={'shared': 'true'}, namespace='team-a')
require_extra_resources('everywhere', 'v1', 'ConfigMap', match_labels={'shared': 'true'})
Resource('seen', {'apiVersion': 'v1', 'kind': 'ConfigMap', 'data': {
    'by_name': get_extra_resource('by_name', 'data.team', 'none'),
    'by_labels': str(len(get_extra_resources('by_labels'))),
    'everywhere': str(len(get_extra_resources('everywhere'))),
}})",
        "function-starlark",
    );
    let config_map = |ns: &str| {
        format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {ns}\n  labels: {{shared: \"true\"}}\ndata:\n  team: {ns}\n"
        )
    };
    std::fs::write(
        dir.path().join("required-resources.yaml"),
        config_map("team-b") + &config_map("team-a"),
    )
    .expect("write");
    let out = render(dir.path(), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = common::documents(&String::from_utf8_lossy(&out.stdout));
    let seen = docs
        .iter()
        .find(|d| d["metadata"]["annotations"]["crossplane.io/composition-resource-name"] == "seen")
        .expect("the resource");
    assert_eq!(
        seen["data"],
        serde_json::json!({"by_name": "team-a", "by_labels": "1", "everywhere": "2"})
    );
}

/// An Operation whose script fails: the render stops with the step and
/// the script's position, as Crossplane fails the Operation with them.
#[test]
fn a_failing_operation_names_the_step_and_the_scripts_line() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(
        dir.path().join("operation.yaml"),
        "apiVersion: ops.crossplane.io/v1alpha1
kind: Operation
metadata:
  name: broken
spec:
  mode: Pipeline
  pipeline:
    - step: check
      functionRef:
        name: function-starlark
      input:
        apiVersion: starlark.fn.crossplane.io/v1alpha1
        kind: StarlarkInput
        spec:
          source: |
            output[\"seen\"] = 1
            y = {}[\"missing\"]
",
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .current_dir(dir.path())
        .args(["render", "operation.yaml"])
        .output()
        .expect("function-starlark runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot render operation: pipeline step \"check\" returned a fatal result")
            && err.contains("composition.star:2:"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing is printed");
    // An Operation observes nothing: -o is refused with why.
    let out = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .current_dir(dir.path())
        .args(["render", "operation.yaml", "-o", "operation.yaml"])
        .output()
        .expect("function-starlark runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("an Operation observes nothing"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
