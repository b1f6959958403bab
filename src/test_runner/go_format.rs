//! Starlark tests written for the Go implementation's test runner: a
//! `*_test.star` file that loads `assert.star`. Run as that runner runs
//! them: the file's top level once, with none of a request's globals
//! (`oxr`, `Resource`, ...) and top-level names bound once; then each
//! `test_*` function it defines, with no arguments, in definition order
//! (one that takes parameters is skipped). A failed assertion is reported
//! and the test goes on. Loads reach the files beside the test (flat
//! names and `./` paths) and the embedded standard library.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use function_sdk_rust::proto::v1::RunFunctionRequest;

use super::go_assert;
use crate::input::{Checked, OciSettings, Script, UsageApi};
use crate::loader::Sources;
use crate::loader::oci::OciResolver;
use crate::runner::Runtime;
use crate::runner::test_file::FileOutcome;

/// Whether the test file `source` is written for the Go implementation's
/// runner: it loads `assert.star`.
pub fn is_go_format(source: &str) -> bool {
    crate::syntax::loads::load_targets_of(source)
        .iter()
        .any(|t| t == go_assert::MODULE)
}

/// The absolute path of `path`, cleaned lexically (a mounted file's path
/// is kept, not resolved through links).
pub fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Runs the test file at `path` on `runtime` (a [`Runtime::for_tests`]),
/// calling the tests whose names `select` takes.
pub async fn run(
    runtime: &Runtime,
    oci: &OciResolver,
    path: &Path,
    select: &(dyn Fn(&str) -> bool + Sync),
) -> FileOutcome {
    let source = match std::fs::read_to_string(path) {
        Ok(source) => source,
        Err(e) => return FileOutcome::Failed(format!("{}: {e}", path.display())),
    };
    let file = absolute(path);
    let checked = Checked {
        script: Script {
            filename: file.display().to_string(),
            source,
        },
        script_dir: file.parent().map(Path::to_path_buf),
        modules: BTreeMap::new(),
        module_paths: Vec::new(),
        usage_api: UsageApi::V2,
        sequencing_ttl: None,
        validate_schemas: false,
        oci: OciSettings::default(),
    };
    let gathered = Sources::gather(&checked, oci, &RunFunctionRequest::default()).await;
    let sources = match gathered.sources {
        Ok(sources) => sources,
        Err(e) => return FileOutcome::Failed(e.to_string()),
    };
    let given = HashMap::from([(go_assert::MODULE.to_owned(), go_assert::module())]);
    // Evaluation needs the deep native stack the engine's threads have.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(runtime.limits().stack_bytes)
            .spawn_scoped(scope, || {
                runtime.run_test_file(&checked.script, &sources, given, select)
            })
            .map_or_else(
                |e| FileOutcome::Failed(format!("cannot start a thread for the test: {e}")),
                |thread| {
                    thread.join().unwrap_or_else(|_| {
                        FileOutcome::Failed("the test file stopped the interpreter".to_owned())
                    })
                },
            )
    })
}

/// A failure as Go's runner prints it: its first line indented by four
/// spaces, the others (a traceback's frames) as they are.
pub fn indented(failure: &str) -> String {
    format!("    {failure}")
}

/// `--- PASS: NAME (0.00s)` or `--- FAIL: NAME (0.00s)`.
pub fn verdict(name: &str, passed: bool, seconds: f64) -> String {
    let word = if passed { "PASS" } else { "FAIL" };
    format!("--- {word}: {name} ({seconds:.2}s)")
}
