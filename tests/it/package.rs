//! The Crossplane package: the input CRD is generated from the Rust input
//! type and must match `package/input/`; the package metadata must name
//! the function. `UPDATE_GOLDEN=1` rewrites the CRD.

use crate::common;

use std::path::Path;

#[test]
fn the_input_crd_matches_the_rust_input_type() {
    let crd = function_starlark::crd::starlark_input_crd();
    common::assert_golden(
        "package/input/starlark.fn.crossplane.io_starlarkinputs.yaml",
        &crd,
    );
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    for field in [
        "source",
        "scriptConfigRef",
        "modules",
        "modulePaths",
        "dockerConfigSecret",
        "dockerConfigCredential",
        "ociDefaultRegistry",
        "ociInsecureRegistries",
        "usageAPIVersion",
        "sequencingTTL",
    ] {
        assert!(spec.get(field).is_some(), "the CRD lacks spec.{field}");
    }
}

#[test]
fn the_package_metadata_describes_the_function() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("package/crossplane.yaml"))
        .expect("package/crossplane.yaml");
    let meta = &common::documents(&text)[0];
    assert_eq!(meta["apiVersion"], "meta.pkg.crossplane.io/v1beta1");
    assert_eq!(meta["kind"], "Function");
    assert_eq!(meta["metadata"]["name"], "function-starlark");
    for key in [
        "meta.crossplane.io/maintainer",
        "meta.crossplane.io/source",
        "meta.crossplane.io/description",
    ] {
        assert!(meta["metadata"]["annotations"][key].is_string(), "{key}");
    }
    // Crossplane refuses to run an Operation step whose function does not
    // declare `operation`; one that declares nothing counts as
    // composition-only.
    assert_eq!(
        meta["spec"]["capabilities"],
        serde_json::json!(["composition", "operation"])
    );
}

/// The release build trains on the crossplane CLI's renders of every
/// example (package/pgo.sh runs package/render-examples.sh): here the same
/// script renders them with the debug binary, so that an example of a new
/// kind (an Operation's has no XR) cannot break the release build unseen.
#[test]
fn the_release_builds_training_renders_every_example_of_every_kind() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(oracle) = crate::render::oracle() else {
        assert!(
            std::env::var_os("RENDER_REQUIRED").is_none()
                && std::env::var("CI").as_deref() != Ok("true"),
            "the crossplane CLI or Crossplane's core binary is missing, and RENDER_REQUIRED or CI=true requires them"
        );
        eprintln!("SKIPPED: the crossplane CLI or Crossplane's core binary is not installed");
        return;
    };
    let server = crate::support::start(
        Path::new(env!("CARGO_BIN_EXE_function-starlark")),
        &crate::support::our_args(),
    );
    let out = std::process::Command::new(root.join("package/render-examples.sh"))
        .arg(&server.address)
        .env("CROSSPLANE_CLI", &oracle.cli)
        .env("CROSSPLANE_CORE", &oracle.core)
        .output()
        .expect("package/render-examples.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut kinds = std::collections::BTreeSet::new();
    for dir in std::fs::read_dir(root.join("examples")).expect("examples/") {
        let name = dir.expect("an entry").file_name();
        let name = name.to_string_lossy();
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("rendered examples/{name}/ ")))
            .unwrap_or_else(|| panic!("examples/{name} was not rendered:\n{stdout}"));
        kinds.insert(line.rsplit('(').next().unwrap_or_default().to_owned());
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["composition)", "operation)"],
        "both kinds of example are among the examples"
    );
}

/// One version everywhere: package/version.sh (Cargo.toml's, on a commit
/// without a release tag), `function-starlark --version`, and a section of
/// CHANGELOG.md, which a release publishes as its notes.
#[test]
fn the_version_comes_from_one_place_and_has_release_notes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |program: &Path, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .expect("runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, version, _) = run(&root.join("package/version.sh"), &[]);
    assert!(ok);
    let tagged = std::process::Command::new("git")
        .args(["describe", "--tags", "--exact-match", "--match", "v[0-9]*"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| o.status.success());
    if !tagged {
        assert_eq!(version, env!("CARGO_PKG_VERSION"));
        let (ok, printed, _) = run(
            Path::new(env!("CARGO_BIN_EXE_function-starlark")),
            &["--version"],
        );
        assert!(ok);
        assert_eq!(printed, format!("function-starlark {version}"));
    }
    let (ok, notes, err) = run(&root.join("package/changelog.sh"), &[&version]);
    assert!(ok, "CHANGELOG.md has no section for {version}: {err}");
    assert!(notes.contains("linux/arm64"), "{notes}");
    let (ok, _, err) = run(&root.join("package/changelog.sh"), &["0.0.0-none"]);
    assert!(!ok && err.contains("no section \"## 0.0.0-none\""), "{err}");
}
