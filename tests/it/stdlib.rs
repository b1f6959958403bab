//! The embedded standard library's own Starlark tests: every
//! `stdlib/tests/*_test.star` must run without a Fatal result (against
//! `NAME.request.yaml` when present), and every
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
fn every_stdlib_test_script_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib/tests");
    let tests = scripts(&root);
    assert!(tests.len() >= 4, "one test script per module at least");
    let mut pinned = 0;
    for script in tests {
        let rsp = run(&script);
        assert!(
            common::fatal(&rsp).is_none(),
            "{}: {:?}",
            script.display(),
            common::fatal(&rsp)
        );
        let response = script.with_extension("response.yaml");
        if response.exists() {
            let relative = response
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .expect("inside the crate");
            common::assert_golden(&relative.to_string_lossy(), &rsp);
            pinned += 1;
        }
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
