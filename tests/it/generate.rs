//! `function-starlark gen crd|xrd` as a user runs it on the examples' CRDs
//! and XRDs: every module it writes loads, passes `check`, builds a valid
//! object with `apiVersion` and `kind` preset, and rejects a wrong field at
//! run time with the schema's message.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("function-starlark runs")
}

/// The kind's own constructor: the last one a module defines.
fn top_constructor(module: &str) -> String {
    module
        .lines()
        .filter_map(|l| l.strip_suffix(" = schema("))
        .next_back()
        .expect("a constructor")
        .to_owned()
}

#[test]
fn generated_modules_load_pass_check_and_reject_wrong_fields() {
    let mut modules = 0;
    for example in crate::common::example_dirs() {
        let crds = example.join("crds");
        let out = tempfile::tempdir().expect("a temporary directory");
        let dir = out.path();
        // Some examples compose only built-in kinds: no CRD, an XRD.
        let mut written = 0;
        for source in ["crd", "xrd"] {
            let done = run(
                dir,
                &["gen", source, crds.to_str().expect("UTF-8"), "-o", "."],
            );
            let stderr = String::from_utf8_lossy(&done.stderr);
            assert!(
                done.status.success() || stderr.contains("with a schema in"),
                "{}: gen {source}: {stderr}",
                example.display()
            );
            written += String::from_utf8_lossy(&done.stdout).lines().count();
        }
        assert!(written > 0, "{}: nothing generated", example.display());
        let checked = run(dir, &["check", "."]);
        assert!(
            checked.status.success() && checked.stdout.is_empty(),
            "{}: {}",
            example.display(),
            String::from_utf8_lossy(&checked.stdout)
        );
        let mut tests = String::new();
        for entry in std::fs::read_dir(dir).expect("the output") {
            let path = entry.expect("an entry").path();
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).expect("a module");
            let top = top_constructor(&text);
            modules += 1;
            let _ = write!(
                tests,
                "load({name:?}, {top}_{modules} = {top:?})\n\
                 assert.fails(lambda: {top}_{modules}(notAField = 1), \"notAField: unknown field\")\n"
            );
        }
        std::fs::write(dir.join("generated_test.star"), tests).expect("write");
        let tested = run(dir, &["test", "."]);
        assert!(
            tested.status.success(),
            "{}: {}",
            example.display(),
            String::from_utf8_lossy(&tested.stdout)
        );
    }
    assert!(modules >= 20, "the examples hold many kinds, got {modules}");
}

#[test]
fn a_generated_kind_builds_its_object_and_names_the_wrong_field() {
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bucket-topic/crds");
    let out = tempfile::tempdir().expect("a temporary directory");
    let done = run(
        out.path(),
        &["gen", "crd", crds.to_str().expect("UTF-8"), "-o", "."],
    );
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let bucket = std::fs::read_to_string(out.path().join("bucket.star")).expect("bucket.star");
    assert!(
        bucket.contains("BUCKET_SPEC_DELETION_POLICY_DELETE = \"Delete\""),
        "{bucket}"
    );
    let script = "\
load(\"bucket.star\", \"Bucket\", \"BucketSpec\", \"BucketSpecForProvider\", \"BUCKET_SPEC_DELETION_POLICY_DELETE\")

b = Bucket(spec = BucketSpec(
    forProvider = BucketSpecForProvider(region = \"eu-west-1\", tags = {\"team\": \"a\"}),
    deletionPolicy = BUCKET_SPEC_DELETION_POLICY_DELETE,
))
assert.eq(b[\"apiVersion\"], \"s3.aws.upbound.io/v1beta1\")
assert.eq(b[\"kind\"], \"Bucket\")
assert.eq(b[\"spec\"][\"forProvider\"][\"region\"], \"eu-west-1\")
assert.fails(lambda: BucketSpec(forProvider = {\"regoin\": \"x\"}), 'forProvider.regoin: unknown field \\(did you mean \"region\"\\?\\)')
assert.fails(lambda: BucketSpecForProvider(region = 42), \"region\")
assert.fails(lambda: BucketSpec(forProvider = {\"region\": \"x\"}, deletionPolicy = \"Keep\"), \"deletionPolicy\")
";
    std::fs::write(out.path().join("bucket_test.star"), script).expect("write");
    let tested = run(out.path(), &["test", "bucket_test.star"]);
    assert!(
        tested.status.success(),
        "{}",
        String::from_utf8_lossy(&tested.stdout)
    );

    let none = run(
        out.path(),
        &[
            "gen",
            "xrd",
            crds.join("buckets.yaml").to_str().expect("UTF-8"),
            "-o",
            "x",
        ],
    );
    assert_eq!(none.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&none.stderr)
            .contains("no CompositeResourceDefinition with a schema in"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
}
