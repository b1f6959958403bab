//! `function-starlark check` as a user runs it: a seeded corpus of
//! mistakes (`tests/check/*.star`, each line marked `# expect: RULE[, ...]`)
//! is caught with the right line and rule and nothing else; the examples
//! and the standard library pass clean; a mistake in a Composition's inline
//! script is reported at its line in the YAML file.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn check(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .current_dir(dir)
        .arg("check")
        .args(args)
        .output()
        .expect("function-starlark runs")
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `(file name, line, rule)` of every `# expect:` marker of the corpus.
fn expected() -> BTreeSet<(String, u64, String)> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("tests/check")).expect("tests/check") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).expect("readable");
        for (i, line) in text.lines().enumerate() {
            if let Some((_, rules)) = line.split_once("# expect: ") {
                for rule in rules.split(',') {
                    out.insert((name.clone(), i as u64 + 1, rule.trim().to_owned()));
                }
            }
        }
    }
    out
}

#[test]
fn the_seeded_mistakes_are_found_at_their_lines_and_nothing_else() {
    let out = check(root(), &["--format", "json", "tests/check"]);
    assert_eq!(out.status.code(), Some(1), "errors fail the check");
    let findings: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).expect("--format json prints a list");
    let got: BTreeSet<(String, u64, String)> = findings
        .iter()
        .map(|f| {
            let file = f["file"].as_str().expect("a file");
            let name = Path::new(file)
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            (
                name,
                f["line"].as_u64().expect("a line"),
                f["rule"].as_str().expect("a rule").to_owned(),
            )
        })
        .collect();
    let want = expected();
    assert!(want.len() >= 15, "the corpus has its markers");
    assert_eq!(
        got, want,
        "findings (left) against the corpus's markers (right)"
    );
}

#[test]
fn the_examples_and_the_standard_library_pass_clean() {
    let out = check(root(), &["examples", "stdlib"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_compositions_inline_script_is_checked_at_its_yaml_lines() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let composition = "apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: c
spec:
  compositeTypeRef: {apiVersion: example.org/v1, kind: X}
  mode: Pipeline
  pipeline:
    - step: one
      functionRef: {name: function-starlark}
      input:
        apiVersion: starlark.fn.crossplane.io/v1alpha1
        kind: StarlarkInput
        spec:
          source: |
            region = oxr.spec.region
            Resource(\"bucket\", {\"region\": regoin})  # check: ignore[arity]
";
    std::fs::write(dir.path().join("composition.yaml"), composition).expect("write");
    let out = check(dir.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(
        stdout.trim(),
        "./composition.yaml:17:43: error: Use of undefined variable `regoin` [undefined]"
    );
}

#[test]
fn crds_validate_the_rendered_resources_at_their_resource_calls() {
    let example = root().join("examples/bucket-topic");
    let crds = example.join("crds");
    let crds_arg = crds.to_str().expect("UTF-8 path");
    let out = check(&example, &["--crds", crds_arg, "composition.yaml"]);
    assert!(
        out.status.success(),
        "the example passes: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The same Composition with a field the CRD does not know, a tag of
    // the wrong type and a read of an undeclared XR field.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let text = std::fs::read_to_string(example.join("composition.yaml")).expect("composition");
    let broken = text
        .replace(
            "\"tags\": {\"team\": team, \"retention\": str(oxr.spec.retentionDays)},",
            "\"tags\": {\"team\": team, \"retention\": oxr.spec.retentionDays}, \"colour\": get(oxr, \"spec.colour\", \"red\"),",
        );
    // The topic loses its required region (spelt wrong) and gets a
    // deletion policy outside the enum.
    let broken = broken.replace(
        "\"region\": region,\n                        \"displayName\"",
        "\"regoin\": region,\n                        \"displayName\"",
    );
    let broken = broken.replace(
        "\"kind\": \"Topic\",\n                \"spec\": {\n",
        "\"kind\": \"Topic\",\n                \"spec\": {\"deletionPolicy\": \"Keep\",\n",
    );
    assert_ne!(broken, text, "the seeded mistakes went in");
    std::fs::write(dir.path().join("composition.yaml"), &broken).expect("write");
    std::fs::copy(example.join("xr.yaml"), dir.path().join("xr.yaml")).expect("copy");
    let out = check(dir.path(), &["--crds", crds_arg]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let line = broken
        .lines()
        .position(|l| l.contains("bucket = Resource(\"bucket\""))
        .expect("the Resource call")
        + 1;
    for want in [
        format!(":{line}:"),
        "Resource \"bucket\" (Bucket): spec.forProvider.colour: unknown field [schema]".to_owned(),
        "Resource \"bucket\" (Bucket): spec.forProvider.tags.retention: want string, got integer [schema]".to_owned(),
        "warning: oxr.spec.colour is not declared by the XRD of XNotifiedBucket [xr-field]".to_owned(),
        "Resource \"topic\" (Topic): spec.forProvider.region: required field missing [schema]".to_owned(),
        "Resource \"topic\" (Topic): spec.forProvider.regoin: unknown field [schema]".to_owned(),
        "Resource \"topic\" (Topic): spec.deletionPolicy: \"Keep\" is not one of \"Orphan\", \"Delete\" [schema]".to_owned(),
    ] {
        assert!(stdout.contains(&want), "{want:?} in:\n{stdout}");
    }
}

/// A module's literal bodies, as a new user tries `check --crds` on one:
/// each wrong field at its own line, what is computed left alone.
#[test]
fn crds_judge_the_literal_bodies_of_modules_at_their_fields() {
    let crds = root().join("examples/bucket-topic/crds");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let module = "\
def bucket(name, region):
    return Resource(name, {
        \"apiVersion\": \"s3.aws.upbound.io/v1beta1\",
        \"kind\": \"Bucket\",
        \"spec\": {\"forProvider\": {
            \"versionning\": True,
            \"region\": 42,
            \"tags\": {\"team\": name.upper()},
        }},
    })

FOR_PROVIDER = mutable_struct(region = \"eu-west-1\", colour = \"red\")
Resource(\"b2\", {\"apiVersion\": \"s3.aws.upbound.io/v1beta1\", \"kind\": \"Bucket\",
    \"spec\": {\"forProvider\": FOR_PROVIDER}})
Resource(\"fine\", {\"apiVersion\": \"s3.aws.upbound.io/v1beta1\", \"kind\": \"Bucket\",
    \"spec\": {\"forProvider\": {\"region\": FOR_PROVIDER.region}}})
";
    std::fs::write(dir.path().join("bucket.star"), module).expect("write");
    let plain = check(dir.path(), &["bucket.star"]);
    assert!(plain.status.success(), "without --crds nothing is judged");
    let out = check(
        dir.path(),
        &["--crds", crds.to_str().expect("UTF-8"), "bucket.star"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let want = [
        "bucket.star:6:13: error: Resource (Bucket): spec.forProvider.versionning: unknown field [schema]",
        "bucket.star:7:13: error: Resource (Bucket): spec.forProvider.region: want string, got integer [schema]",
        "bucket.star:12:53: error: Resource \"b2\" (Bucket): spec.forProvider.colour: unknown field [schema]",
    ];
    let got: Vec<&str> = stdout.lines().collect();
    assert_eq!(got, want, "{stdout}");
}

/// Bodies built with `gen`'s constructors are judged too: the kind comes
/// from the constructor's presets.
#[test]
fn crds_judge_bodies_built_by_generated_constructors() {
    let crds = root().join("examples/bucket-topic/crds");
    let crds_arg = crds.to_str().expect("UTF-8");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = check(dir.path(), &[]);
    assert!(out.status.success());
    let generated = std::process::Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .current_dir(dir.path())
        .args(["gen", "crd", crds_arg, "-o", "."])
        .output()
        .expect("gen runs");
    assert!(generated.status.success());
    let script = "\
load(\"./s3.aws.upbound.io/v1beta1.star\", \"Bucket\", \"BucketSpec\", \"BucketSpecForProvider\")

Resource(\"bucket\", Bucket(spec = BucketSpec(
    forProvider = BucketSpecForProvider(
        region = \"eu-west-1\",
        objectLockEnabled = \"yes\",
    ),
    deletionPolicy = \"Keep\",
)))
";
    std::fs::write(dir.path().join("main.star"), script).expect("write");
    let out = check(dir.path(), &["--crds", crds_arg, "main.star"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let got: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        got,
        [
            "main.star:6:9: error: Resource \"bucket\" (Bucket): spec.forProvider.objectLockEnabled: want boolean, got string [schema]",
            // The constructors judge their own calls, with no CRD needed.
            "main.star:6:29: error: BucketSpecForProvider: objectLockEnabled: expected bool, got string (\"yes\") [field-type]",
            "main.star:8:5: error: Resource \"bucket\" (Bucket): spec.deletionPolicy: \"Keep\" is not one of \"Orphan\", \"Delete\" [schema]",
            "main.star:8:22: error: BucketSpec: deletionPolicy: value \"Keep\" not in enum [\"Orphan\", \"Delete\"] [field-enum]",
        ],
        "{stdout}"
    );
}

#[test]
fn every_example_passes_check_against_the_crds_of_its_kinds() {
    for dir in crate::common::example_dirs() {
        let out = check(&dir, &["--crds", "crds", "composition.yaml"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}: {stdout}", dir.display());
        // Built-in kinds (ConfigMap, Service, ...) have no CRD: an info.
        for line in stdout.lines() {
            assert!(line.contains(": info: "), "{}: {line}", dir.display());
        }
    }
}

#[tokio::test]
async fn oci_loads_are_listed_and_with_oci_fetched_from_a_real_registry() {
    let registry = crate::common::registry::Registry::start();
    let artifact = crate::common::registry::Artifact::bundle(&[(
        "helpers.star",
        "def double(x):\n    return 2 * x\n",
    )]);
    registry.push("lib/mods", "v1", &artifact).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let host = &registry.host;
    std::fs::write(
        dir.path().join("main.star"),
        format!(
            "load(\"oci://{host}/lib/mods:v1/helpers.star\", \"double\")\nload(\"oci://{host}/lib/mods:v1/absent.star\", \"nope\")\nx = double(nope)\n"
        ),
    )
    .expect("write");
    let dir_path = dir.path().to_path_buf();
    let (listed, fetched) =
        tokio::task::spawn_blocking(move || (check(&dir_path, &[]), check(&dir_path, &["--oci"])))
            .await
            .expect("check runs");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert_eq!(
        listed.matches(": info: load of OCI module").count(),
        2,
        "{listed}"
    );
    let stdout = String::from_utf8_lossy(&fetched.stdout);
    assert_eq!(fetched.status.code(), Some(1), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "the module that exists is fetched and dropped: {stdout}"
    );
    assert!(
        lines[0].starts_with("./main.star:2:6: error: cannot fetch OCI module"),
        "{stdout}"
    );
    assert!(lines[0].contains("absent.star"), "{stdout}");
}

/// A Composition's inline source is judged as a file is: a constructor its
/// inline module defines, called with an unknown field and without a
/// required one, reported at the YAML's lines.
#[test]
fn constructor_calls_in_a_compositions_inline_source_are_judged() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let composition = r#"apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: typed
spec:
  compositeTypeRef: {apiVersion: example.org/v1, kind: XTyped}
  mode: Pipeline
  pipeline:
  - step: run
    functionRef: {name: function-starlark}
    input:
      apiVersion: starlark.fn.crossplane.io/v1alpha1
      kind: StarlarkInput
      spec:
        modules:
          types.star: |
            Spec = schema("Spec", region = field(type = "string", required = True))
        source: |
          load("types.star", "Spec")
          Resource("r", {"spec": Spec(regoin = "eu")})
"#;
    std::fs::write(dir.path().join("composition.yaml"), composition).expect("write");
    let out = check(dir.path(), &["composition.yaml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let got: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        got,
        [
            "composition.yaml:20:34: error: Spec: region: required field missing [missing-field]",
            "composition.yaml:20:39: error: Spec: regoin: unknown field (did you mean \"region\"?) [unknown-field]",
        ],
        "{stdout}"
    );
}
