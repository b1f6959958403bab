//! The embedded standard library's own Starlark tests: every
//! `stdlib/tests/*_test.star` passes under `function-starlark test` (its
//! `test_*` functions with `assert`, against `NAME.request.yaml` when
//! present), and every
//! `stdlib/tests/errors/*.star` must fail with the fragment its first line
//! names (`# expect-error: <fragment>`) and, when its second line says
//! `# reject-error: <text>`, without that text. A `NAME.response.yaml`
//! beside a test script pins its whole response.

use crate::common;

use std::path::{Path, PathBuf};

fn scripts(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.expect("a directory entry").path())
                .filter(|p| p.extension().is_some_and(|e| e == "star"))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn run(script: &Path) -> serde_json::Value {
    let source = std::fs::read_to_string(script).expect("a readable test script");
    let request = std::fs::read_to_string(script.with_extension("request.yaml"))
        .unwrap_or_else(|_| "meta: {tag: stdlib-test}".to_owned());
    common::json(&common::run(&source, &request))
}

#[test]
fn every_stdlib_test_passes_under_the_test_runner() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["test", "stdlib/tests"])
        .output()
        .expect("function-starlark runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let summary = stdout.lines().last().unwrap_or_default();
    let passed: usize = summary
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 30, "every stdlib test ran: {summary}");
}

#[test]
fn the_pinned_stdlib_responses_hold() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib/tests");
    let mut pinned = 0;
    for script in scripts(&root) {
        let response = script.with_extension("response.yaml");
        if !response.exists() {
            continue;
        }
        let rsp = run(&script);
        assert!(
            common::fatal(&rsp).is_none(),
            "{}: {:?}",
            script.display(),
            common::fatal(&rsp)
        );
        let relative = response
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .expect("inside the crate");
        common::assert_golden(&relative.to_string_lossy(), &rsp);
        pinned += 1;
    }
    assert!(pinned >= 2, "the pinned responses were found");
}

#[test]
fn every_stdlib_error_case_fails_as_expected() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib/tests/errors");
    for script in scripts(&root) {
        let source = std::fs::read_to_string(&script).expect("a readable test script");
        let Some(fragment) = source
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect-error:"))
        else {
            panic!(
                "{}: first line must be `# expect-error: ...`",
                script.display()
            );
        };
        let fragment = fragment.trim();
        let rsp = run(&script);
        let message = common::fatal(&rsp)
            .unwrap_or_else(|| panic!("{}: expected a failure", script.display()));
        assert!(
            message.contains(fragment),
            "{}: {message}",
            script.display()
        );
        if let Some(rejected) = source
            .lines()
            .nth(1)
            .and_then(|l| l.strip_prefix("# reject-error:"))
        {
            assert!(
                !message.contains(rejected.trim()),
                "{}: the message must not say {:?}: {message}",
                script.display(),
                rejected.trim()
            );
        }
    }
}
