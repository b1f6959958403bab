//! `docs/builtins.md` is generated from the builtins' doc comments; this
//! fails when the checked-in file drifts. `UPDATE_GOLDEN=1` rewrites it.

#[test]
fn the_builtins_reference_matches_the_doc_comments() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/builtins.md");
    let generated = function_starlark::docs::builtins_markdown();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &generated).expect("docs/builtins.md is writable");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/builtins.md is out of date with the builtins' doc comments; run UPDATE_GOLDEN=1 cargo test --test docs"
    );
}
