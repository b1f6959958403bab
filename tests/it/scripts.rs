//! Script fixtures with golden responses: every `tests/fixtures/NAME.star`
//! runs against `NAME.request.yaml` (or an empty request) and its response
//! must equal `tests/golden/NAME.yaml`. `UPDATE_GOLDEN=1` regenerates.

use crate::common;

use std::path::Path;

#[test]
fn every_fixture_script_produces_its_golden_response() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut scripts: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/fixtures exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "star"))
        .collect();
    scripts.sort();
    assert!(!scripts.is_empty());
    for script in scripts {
        let name = script
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 name");
        let source = std::fs::read_to_string(&script).expect("the script is readable");
        let request = std::fs::read_to_string(root.join(format!("{name}.request.yaml")))
            .unwrap_or_else(|_| "meta: {tag: fixture}".to_owned());
        let rsp = common::run(&source, &request);
        common::assert_golden(&format!("tests/golden/{name}.yaml"), &common::json(&rsp));
    }
}
