//! `function-starlark test` as a user runs it: the examples' composition
//! tests and the standard library's Starlark tests pass; a failing
//! assertion prints what was expected, what came out and where, and exits
//! 1; a broken script fails its test with its own error and position;
//! `--run`, `--junit` and `--update` do what they say.

use std::path::Path;
use std::process::{Command, Output};

fn test(dir: &Path, args: &[&str]) -> (Output, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .current_dir(dir)
        .env_remove("FUNCTION_ADDRESS")
        .arg("test")
        .args(args)
        .output()
        .expect("function-starlark runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, stdout)
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_example_and_the_standard_library_pass() {
    let (out, stdout) = test(root(), &["examples", "stdlib"]);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let examples = std::fs::read_dir(root().join("examples"))
        .expect("examples/")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().join("composition_test.yaml").exists())
        })
        .count();
    assert!(examples >= 13, "every example has a composition test");
    let summary = stdout.lines().last().expect("a summary line");
    let passed: usize = summary
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("N passed");
    assert!(passed >= examples + 30, "{summary}");
    assert!(summary.ends_with(" passed, 0 failed"), "{summary}");
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}

#[test]
fn a_failing_assertion_says_what_and_where_and_exits_1() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(dir.path(), "lib.star", "def double(x):\n    return 2 * x\n");
    write(
        dir.path(),
        "lib_test.star",
        "load(\"lib.star\", \"double\")\n\ndef test_ok():\n    assert.eq(double(2), 4)\n    assert.fails(lambda: double(None), \"unknown binary op\")\n\ndef test_wrong():\n    assert.eq(double(3), 7, \"three\")\n\ndef test_broken():\n    x = {}[\"missing\"]\n",
    );
    let (out, stdout) = test(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("ok    ./lib_test.star::test_ok"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAIL  ./lib_test.star::test_wrong"),
        "{stdout}"
    );
    assert!(
        stdout.contains("lib_test.star:8:"),
        "the assertion's line: {stdout}"
    );
    assert!(
        stdout.contains("assert.eq: got 6, want 7 (three)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("lib_test.star:11:"),
        "the broken line: {stdout}"
    );
    assert!(stdout.contains("key \"missing\" not in dict"), "{stdout}");
    assert!(stdout.ends_with("1 passed, 2 failed\n"), "{stdout}");

    let (out, stdout) = test(dir.path(), &["--run", "test_ok$"]);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.ends_with("1 passed, 0 failed\n"), "{stdout}");

    let junit = dir.path().join("report.xml");
    let (_, _) = test(
        dir.path(),
        &["--junit", junit.to_str().expect("UTF-8 path")],
    );
    let xml = std::fs::read_to_string(&junit).expect("the JUnit report");
    assert!(xml.contains("tests=\"3\" failures=\"2\""), "{xml}");
    assert!(
        xml.contains("<failure message=\"Error in assert.eq: assert.eq: got 6, want 7 (three)\""),
        "{xml}"
    );
}

#[test]
fn a_composition_test_checks_fields_and_update_records_the_output() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let example = root().join("examples/bucket-topic");
    for file in ["xr.yaml", "composition.yaml", "functions.yaml"] {
        std::fs::copy(example.join(file), dir.path().join(file)).expect("copy");
    }
    write(
        dir.path(),
        "bucket_test.yaml",
        "tests:\n  - name: region\n    xr: xr.yaml\n    composition: composition.yaml\n    expect:\n      output: out.yaml\n      resources:\n        bucket:\n          fields: {spec.forProvider.region: us-east-2}\n        queue: absent\n",
    );
    let (out, stdout) = test(dir.path(), &["--update"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "resources.bucket: spec.forProvider.region: want \"us-east-2\", got \"eu-west-1\""
        ),
        "{stdout}"
    );
    let recorded = std::fs::read_to_string(dir.path().join("out.yaml")).expect("--update wrote it");
    assert_eq!(
        recorded,
        std::fs::read_to_string(example.join("expected.yaml")).expect("expected.yaml")
    );
    // A changed output is shown where it parts from the recording.
    write(
        dir.path(),
        "out.yaml",
        &recorded.replace("eu-west-1", "eu-central-1"),
    );
    let (_, stdout) = test(dir.path(), &[]);
    assert!(stdout.contains("output differs from"), "{stdout}");
    assert!(
        stdout.contains('-') && stdout.contains("eu-central-1"),
        "{stdout}"
    );
}

/// The report's times, which depend on the machine, as `(T)`.
fn untimed(stdout: &str) -> String {
    let times = regex::Regex::new(r"\(\d+\.\d\ds\)").expect("a pattern");
    times.replace_all(stdout, "(T)").into_owned()
}

#[test]
fn go_format_tests_run_unchanged_and_report_as_the_go_runner_does() {
    let (out, stdout) = test(root(), &["--format", "go", "tests/go-format"]);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(
        untimed(&stdout),
        "# naming_test.star
=== RUN   test_resource_name
--- PASS: test_resource_name (T)
=== RUN   test_unknown_environments_fail
--- PASS: test_unknown_environments_fail (T)
=== RUN   test_short_names_are_cut
--- PASS: test_short_names_are_cut (T)
  SKIP  test_takes_a_parameter (has parameters)
# tags_test.star
=== RUN   test_tags_merge
--- PASS: test_tags_merge (T)
=== RUN   test_typed_spec
--- PASS: test_typed_spec (T)
=== RUN   test_floats_within_one_ulp
--- PASS: test_floats_within_one_ulp (T)
ok\t6 tests passed
"
    );
    // The same tests in this function's own report.
    let (out, stdout) = test(root(), &["tests/go-format"]);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("ok    tests/go-format/lib/naming_test.star::test_resource_name"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "skip  tests/go-format/lib/naming_test.star::test_takes_a_parameter (has parameters)"
        ),
        "{stdout}"
    );
    assert!(stdout.ends_with("6 passed, 0 failed\n"), "{stdout}");
}

#[test]
fn a_failing_go_format_assertion_names_file_test_and_line_and_the_test_goes_on() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir(dir.path().join("lib")).expect("lib/");
    write(
        &dir.path().join("lib"),
        "naming.star",
        "def resource_name(name, env):\n    return 'acme-%s-%s' % (name, env)\n",
    );
    write(
        &dir.path().join("lib"),
        "naming_test.star",
        "load('assert.star', 'assert')\nload('./naming.star', 'resource_name')\n\nassert.eq(1, 2)  # top level: not counted\n\ndef test_name():\n    assert.eq(resource_name('db', 'prod'), 'acme-db-production')\n    assert.true(False, 'reported too')\n\ndef test_error():\n    x = {}['missing']\n\ndef test_sees_no_request():\n    assert.fails(lambda: json.encode(1) + 1, 'unknown binary op')\n",
    );
    write(
        dir.path(),
        "broken_test.star",
        "load('assert.star', 'assert')\n\ndef test_reads_the_xr():\n    assert.eq(oxr, None)\n",
    );
    let (out, stdout) = test(dir.path(), &["--format", "go"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let file = dir.path().join("lib/naming_test.star");
    let broken = dir.path().join("broken_test.star");
    assert_eq!(
        untimed(&stdout),
        format!(
            "# broken_test.star
FAIL  broken_test.star
    {broken}:4:15: undefined: oxr (did you mean chr?)
# naming_test.star
=== RUN   test_name
    Traceback (most recent call last):
  {file}:7:14: in test_name
Error: \"acme-db-prod\" != \"acme-db-production\"
    Traceback (most recent call last):
  {file}:8:16: in test_name
Error: reported too
--- FAIL: test_name (T)
=== RUN   test_error
    Traceback (most recent call last):
  {file}:11:11: in test_error
Error: key \"missing\" not in dict
--- FAIL: test_error (T)
=== RUN   test_sees_no_request
--- PASS: test_sees_no_request (T)
FAIL\t4 tests: 1 passed, 3 failed
",
            broken = broken.display(),
            file = file.display()
        )
    );
    // `--run` calls only the tests it names.
    let (out, stdout) = test(dir.path(), &["--format", "go", "--run", "sees_no_request"]);
    assert!(
        stdout.contains("=== RUN   test_sees_no_request"),
        "{stdout}"
    );
    assert!(!stdout.contains("=== RUN   test_name"), "{stdout}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "the broken file still fails: {stdout}"
    );
}
