//! The fuzz targets' replay: every target's body (`src/fuzzing.rs`) over
//! its committed corpus (`fuzz/corpus/<target>/`) and its regression
//! inputs (`fuzz/regressions/<target>/`, each an input that once failed),
//! on stable and without libFuzzer. The differential targets ask Go's
//! libraries when `go` is installed; under `CI=true` it must be.
//! `seeds` writes the corpora's starting points (`scripts/fuzz.sh seeds`).

mod seeds;

use std::path::{Path, PathBuf};

use function_starlark::fuzzing::{Body, ORACLES, TARGETS, oracle};
use function_starlark::limits::Limits;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The inputs of `target` in `fuzz/<kind>/<target>/`, sorted.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(fuzz_dir().join(kind).join(target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file() && p.file_name().is_none_or(|n| n != "README.md"))
        .collect();
    files.sort();
    files
}

/// Runs `target` over its corpus and regressions; fails with every input
/// that fails, and the message it failed with.
fn replay(target: &str) {
    let body: Body = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, body)| *body)
        .expect("a target of that name");
    if let Some((_, tool)) = ORACLES.iter().find(|(name, _)| *name == target) {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        if !oracle::available(tool) {
            assert!(
                !ci,
                "tools/{tool} cannot run, and CI=true needs Go's answers"
            );
            eprintln!("{target}: Go is not available; checking without tools/{tool}");
        }
    }
    let corpus = inputs("corpus", target);
    let regressions = inputs("regressions", target);
    assert!(!corpus.is_empty(), "fuzz/corpus/{target}/ is empty");
    let files: Vec<PathBuf> = corpus.iter().chain(&regressions).cloned().collect();
    // On the stack a script run's thread has, which the parsers' recursion
    // is bounded for (the fuzzers run with it too).
    let failed = std::thread::Builder::new()
        .stack_size(Limits::default().stack_bytes)
        .spawn(move || {
            let mut failed = Vec::new();
            for path in files {
                let data = std::fs::read(&path).expect("a readable input");
                if let Err(panic) = std::panic::catch_unwind(|| body(&data)) {
                    let message = function_starlark::panics::message(&*panic);
                    failed.push(format!("{}: {message}", path.display()));
                }
            }
            failed
        })
        .expect("a thread")
        .join()
        .expect("the replay does not panic outside a body");
    assert!(
        failed.is_empty(),
        "{} of {} inputs fail:\n{}",
        failed.len(),
        corpus.len() + regressions.len(),
        failed.join("\n")
    );
}

#[test]
fn every_target_has_a_replay_here() {
    let replayed = [
        "yaml",
        "json",
        "regex",
        "syntax",
        "oci_reference",
        "duration",
        "depth",
        "request",
        "float",
        "encoding",
    ];
    let targets: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(targets, replayed);
    for target in targets {
        let file = fuzz_dir().join("fuzz_targets").join(format!("{target}.rs"));
        assert!(file.is_file(), "{} is missing", file.display());
    }
}

#[test]
fn yaml_corpus_and_regressions_pass() {
    replay("yaml");
}

#[test]
fn json_corpus_and_regressions_pass() {
    replay("json");
}

#[test]
fn regex_corpus_and_regressions_pass() {
    replay("regex");
}

#[test]
fn syntax_corpus_and_regressions_pass() {
    replay("syntax");
}

#[test]
fn oci_reference_corpus_and_regressions_pass() {
    replay("oci_reference");
}

#[test]
fn duration_corpus_and_regressions_pass() {
    replay("duration");
}

#[test]
fn depth_corpus_and_regressions_pass() {
    replay("depth");
}

#[test]
fn request_corpus_and_regressions_pass() {
    replay("request");
}

#[test]
fn float_corpus_and_regressions_pass() {
    replay("float");
}

#[test]
fn encoding_corpus_and_regressions_pass() {
    replay("encoding");
}
