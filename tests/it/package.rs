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
