//! `function-starlark gen` as a user runs it: on every example's CRDs and
//! XRDs at once, on real providers' CRD sets and on Kubernetes' own
//! OpenAPI document (fetched as Go modules through the module proxy:
//! `scripts/tools.sh` downloads them), every module it writes loads,
//! passes `check`, builds a valid object with `apiVersion` and `kind`
//! preset, and rejects a wrong field at run time with the schema's
//! message. `--package` modules published with `function-starlark push`
//! load each other from the registry.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("function-starlark runs")
}

fn succeeded(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Each module under `dir` (by its path from `dir`) and the kinds its
/// docstring lists.
fn kinds(dir: &Path) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).expect("a directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let name = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if !function_starlark::loader::is_module_file(&name) {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a module");
            let listed = text
                .lines()
                .find_map(|l| l.strip_prefix("Kinds: "))
                .map(|l| {
                    l.trim_end_matches('.')
                        .split(", ")
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            out.push((name, listed));
        }
    }
    out.sort();
    out
}

/// A test file at the root of `dir` (in the Go runner's format, whose
/// files load the modules beside them with `./`) loading every kind of
/// every module, each of which must refuse a field it does not declare.
fn unknown_field_tests(dir: &Path) -> usize {
    let mut loads = String::from("load(\"assert.star\", \"assert\")\n");
    let mut checks = String::from("def test_every_kind_refuses_an_unknown_field():\n");
    let mut count = 0;
    for (module, kinds) in kinds(dir) {
        for kind in kinds {
            count += 1;
            let _ = writeln!(loads, "load(\"./{module}\", K{count} = {kind:?})");
            let _ = writeln!(
                checks,
                "    assert.fails(lambda: K{count}(notAField = 1), \"notAField: unknown field\")"
            );
        }
    }
    std::fs::write(dir.join("generated_test.star"), loads + &checks).expect("write the test");
    count
}

/// The directory of a Go module version, downloaded through the proxy
/// (with the Go toolchain `toolchain` when the module needs a newer one).
fn go_module(module: &str, toolchain: Option<&str>) -> Option<PathBuf> {
    let mut go = Command::new("go");
    go.args(["mod", "download", "-json", module]);
    if let Some(t) = toolchain {
        go.env("GOTOOLCHAIN", t);
    }
    let out = go.output().ok()?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    json["Dir"]
        .as_str()
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
}

/// A module version the test needs, or `None` (the test skipped) where
/// it cannot be had outside CI.
fn needed(module: &str, toolchain: Option<&str>) -> Option<PathBuf> {
    let dir = go_module(module, toolchain);
    if dir.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{module} cannot be downloaded (scripts/tools.sh downloads it)"
        );
        eprintln!("SKIPPED: {module} cannot be downloaded");
    }
    dir
}

#[test]
fn every_examples_kinds_generate_together_and_each_refuses_an_unknown_field() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("a temporary directory");
    let dir = out.path();
    // Ten examples hold the same Usage CRD, several the same XRD group: one
    // run over all of them.
    let crds: Vec<String> = crate::common::example_dirs()
        .iter()
        .map(|e| e.join("crds"))
        .filter(|d| d.is_dir())
        .map(|d| d.display().to_string())
        .collect();
    for source in ["crd", "xrd"] {
        let mut args = vec!["gen", source];
        args.extend(crds.iter().map(String::as_str));
        args.extend(["-o", "."]);
        succeeded(&format!("gen {source}"), &run(dir, &args));
    }
    let modules = kinds(dir);
    assert!(
        modules
            .iter()
            .any(|(m, _)| m == "s3.aws.upbound.io/v1beta1.star"),
        "{modules:?}"
    );
    assert!(
        modules
            .iter()
            .any(|(m, k)| m == "protection.crossplane.io/v1beta1.star"
                && k.contains(&"Usage".to_owned())),
        "{modules:?}"
    );
    let checked = run(dir, &["check", "."]);
    assert!(
        checked.status.success() && checked.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
    let count = unknown_field_tests(dir);
    assert!(count >= 20, "the examples hold many kinds, got {count}");
    succeeded(
        "the generated tests",
        &run(dir, &["test", "generated_test.star"]),
    );
    // Reading the same files again changes nothing.
    let again = tempfile::tempdir().expect("a temporary directory");
    let mut args = vec!["gen", "crd"];
    args.extend(crds.iter().map(String::as_str));
    args.extend(["-o", again.path().to_str().unwrap()]);
    succeeded("gen crd again", &run(dir, &args));
    let first = std::fs::read_to_string(dir.join("s3.aws.upbound.io/v1beta1.star")).unwrap();
    let second =
        std::fs::read_to_string(again.path().join("s3.aws.upbound.io/v1beta1.star")).unwrap();
    assert_eq!(first, second, "the output is deterministic");
    let _ = root;
}

#[test]
fn a_generated_kind_builds_its_object_and_names_the_wrong_field() {
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bucket-topic/crds");
    let out = tempfile::tempdir().expect("a temporary directory");
    succeeded(
        "gen crd",
        &run(
            out.path(),
            &["gen", "crd", crds.to_str().expect("UTF-8"), "-o", "."],
        ),
    );
    let module = std::fs::read_to_string(out.path().join("s3.aws.upbound.io/v1beta1.star"))
        .expect("s3.aws.upbound.io/v1beta1.star");
    assert!(
        module.contains("BUCKET_SPEC_DELETION_POLICY_DELETE = \"Delete\""),
        "{module}"
    );
    // A managed resource's shared fields say what they do.
    assert!(
        module.contains("doc = \"The desired state of the external resource."),
        "{module}"
    );
    let script = "\
load(\"assert.star\", \"assert\")
load(\"./s3.aws.upbound.io/v1beta1.star\", \"Bucket\", \"BucketSpec\", \"BucketSpecForProvider\", \"BUCKET_SPEC_DELETION_POLICY_DELETE\")

def test_bucket():
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
    succeeded("the test", &run(out.path(), &["test", "bucket_test.star"]));

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

#[test]
fn two_different_definitions_of_one_kind_are_named() {
    let out = tempfile::tempdir().expect("a temporary directory");
    let crd = |description: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: ks.g.io}}\n\
             spec:\n  group: g.io\n  names: {{kind: K, plural: ks}}\n  scope: Cluster\n  versions:\n  - name: v1\n    served: true\n    storage: true\n\
             \x20   schema:\n      openAPIV3Schema:\n        type: object\n        description: {description}\n"
        )
    };
    std::fs::write(out.path().join("a.yaml"), crd("one")).unwrap();
    std::fs::write(out.path().join("b.yaml"), crd("two")).unwrap();
    let done = run(out.path(), &["gen", "crd", "a.yaml", "b.yaml", "-o", "out"]);
    assert_eq!(done.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&done.stderr)
            .contains("a.yaml and b.yaml define g.io/v1/K differently"),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

/// provider-kubernetes v1.4.1 serves every kind twice (cluster-scoped and
/// namespaced groups, as every Crossplane v2 provider does); provider-aws
/// v0.52.0 is the largest provider the module proxy serves here (199
/// CRDs).
#[test]
fn real_providers_generate_in_seconds_and_every_kind_refuses_an_unknown_field() {
    let providers = [
        (
            "github.com/crossplane-contrib/provider-kubernetes@v1.4.1",
            Some("go1.27.3"),
        ),
        ("github.com/crossplane-contrib/provider-aws@v0.52.0", None),
    ];
    for (module, toolchain) in providers {
        let Some(source) = needed(module, toolchain) else {
            continue;
        };
        let out = tempfile::tempdir().expect("a temporary directory");
        let dir = out.path();
        let crds = source.join("package/crds");
        let started = Instant::now();
        let listed = succeeded(
            module,
            &run(dir, &["gen", "crd", crds.to_str().unwrap(), "-o", "."]),
        );
        let took = started.elapsed();
        eprintln!("{module}: {} modules in {took:?}", listed.lines().count());
        let modules = kinds(dir);
        if module.contains("provider-kubernetes") {
            for both in [
                "kubernetes.crossplane.io/v1alpha2.star",
                "kubernetes.m.crossplane.io/v1alpha1.star",
            ] {
                assert!(
                    modules.iter().any(|(m, _)| m == both),
                    "{both} in {modules:?}"
                );
            }
        }
        let checked = run(dir, &["check", "."]);
        assert!(
            checked.status.success() && checked.stdout.is_empty(),
            "{module}: {}",
            String::from_utf8_lossy(&checked.stdout)
        );
        let count = unknown_field_tests(dir);
        assert!(count >= 5, "{module}: {count} kinds");
        // Megabytes of modules: a debug build on a busy machine needs more
        // than a script's default ten seconds to load them all.
        succeeded(
            module,
            &run(
                dir,
                &["--timeout-seconds", "600", "test", "generated_test.star"],
            ),
        );
    }
}

/// Kubernetes' own kinds from its OpenAPI document, copied into each
/// group's module; with `--package`, loaded from the published package
/// instead.
#[test]
fn kubernetes_kinds_come_from_its_openapi_document_and_load_from_their_package() {
    let Some(kubernetes) = needed("k8s.io/kubernetes@v1.35.4", None) else {
        return;
    };
    let swagger = kubernetes.join("api/openapi-spec/swagger.json");
    let out = tempfile::tempdir().expect("a temporary directory");
    let dir = out.path();
    succeeded(
        "gen openapi",
        &run(
            dir,
            &["gen", "openapi", swagger.to_str().unwrap(), "-o", "."],
        ),
    );
    let apps = std::fs::read_to_string(dir.join("apps/v1.star")).expect("apps/v1.star");
    assert!(
        !apps.contains("\nload("),
        "without --package a module loads nothing"
    );
    let script = "\
load(\"assert.star\", \"assert\")
load(\"./apps/v1.star\", \"Deployment\", \"DeploymentSpec\", \"ObjectMeta\", \"LabelSelector\", \"PodTemplateSpec\", \"PodSpec\", \"Container\")

def test_deployment():
    d = Deployment(
        metadata = ObjectMeta(name = \"web\", labels = {\"app\": \"web\"}),
        spec = DeploymentSpec(
            selector = LabelSelector(matchLabels = {\"app\": \"web\"}),
            template = PodTemplateSpec(spec = PodSpec(containers = [Container(name = \"web\", image = \"nginx\")])),
        ),
    )
    assert.eq(d[\"apiVersion\"], \"apps/v1\")
    assert.eq(d[\"kind\"], \"Deployment\")
    assert.fails(lambda: DeploymentSpec(replicas = \"three\", selector = {}, template = {}), \"replicas\")
    assert.fails(lambda: Container(image = \"nginx\"), \"name: required field missing\")
    assert.fails(lambda: Deployment(spec = {\"replicaz\": 1}), \"replicaz: unknown field\")
";
    std::fs::write(dir.join("deployment_test.star"), script).unwrap();
    succeeded(
        "the Deployment test",
        &run(dir, &["test", "deployment_test.star"]),
    );
    let core = std::fs::read_to_string(dir.join("core/v1.star")).expect("core/v1.star");
    assert!(core.contains("ConfigMap = schema("), "core/v1.star");

    // The OpenAPI 3 documents, as a cluster serves them at /openapi/v3/...
    let v3 = tempfile::tempdir().expect("a temporary directory");
    let docs = kubernetes.join("api/openapi-spec/v3");
    succeeded(
        "gen openapi (v3)",
        &run(
            dir,
            &[
                "gen",
                "openapi",
                docs.join("api__v1_openapi.json").to_str().unwrap(),
                docs.join("apis__apps__v1_openapi.json").to_str().unwrap(),
                "-o",
                v3.path().to_str().unwrap(),
            ],
        ),
    );
    let apps =
        std::fs::read_to_string(v3.path().join("apps/v1.star")).expect("apps/v1.star from v3");
    assert!(
        apps.contains("Deployment = schema("),
        "apps/v1.star from v3"
    );

    // Published: modules load each other from the package.
    let registry = crate::common::registry::Registry::start();
    let package = format!("oci://{}/schemas/k8s:v1.35", registry.host);
    let published = tempfile::tempdir().expect("a temporary directory");
    succeeded(
        "gen openapi --package",
        &run(
            dir,
            &[
                "gen",
                "openapi",
                swagger.to_str().unwrap(),
                "-o",
                published.path().to_str().unwrap(),
                "--package",
                &package,
            ],
        ),
    );
    let apps = std::fs::read_to_string(published.path().join("apps/v1.star")).unwrap();
    assert!(
        apps.contains(&format!("load(\"{package}/core/v1.star\", ")),
        "apps/v1.star loads core's types from the package"
    );
    succeeded(
        "push",
        &run(
            dir,
            &["push", published.path().to_str().unwrap(), &package[6..]],
        ),
    );
    let script = format!(
        "load(\"assert.star\", \"assert\")\n\
         load(\"{package}/apps/v1.star\", \"Deployment\")\n\
         load(\"{package}/core/v1.star\", \"PodSpec\")\n\
         def test_published():\n\
         \x20   d = Deployment(spec = {{\"selector\": {{}}, \"template\": {{\"spec\": PodSpec(containers = [])}}}})\n\
         \x20   assert.eq(d[\"kind\"], \"Deployment\")\n\
         \x20   assert.fails(lambda: Deployment(spec = {{\"replicaz\": 1}}), \"replicaz: unknown field\")\n"
    );
    std::fs::write(dir.join("published_test.star"), script).unwrap();
    succeeded(
        "the published test",
        &run(dir, &["test", "published_test.star"]),
    );
}
