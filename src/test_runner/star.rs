//! Starlark unit tests: a `*_test.star` file's `test_*` functions, each
//! run on its own (the file's top level, then the function) as a
//! composition script, with the `assert` module. The request is the
//! file's `NAME.request.yaml` when there is one (a RunFunctionRequest in
//! YAML: `observed`, `context`, ...), else an empty one; `load()` reaches
//! the files beside the test and the embedded standard library.

use std::path::Path;

use function_sdk_rust::proto::v1::{RunFunctionRequest, Severity};
use serde_json::json;

use super::Case;
use crate::function::StarlarkFunction;

/// The `test_*` functions a file defines at top level, in order.
pub fn test_names(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|line| line.strip_prefix("def "))
        .filter_map(|rest| rest.split_once('(').map(|(name, _)| name.trim()))
        .filter(|name| name.starts_with("test_"))
        .map(str::to_owned)
        .collect()
}

/// The cases of one test file.
pub fn cases(path: &Path) -> Vec<Case> {
    let source = std::fs::read_to_string(path).unwrap_or_default();
    let names = test_names(&source);
    if names.is_empty() {
        // A file of top-level checks is one test.
        return vec![Case::star(path, None)];
    }
    names
        .into_iter()
        .map(|name| Case::star(path, Some(name)))
        .collect()
}

/// The request a test of `path` runs against.
fn request(path: &Path) -> Result<RunFunctionRequest, String> {
    let stem = path.with_extension("request.yaml");
    if !stem.exists() {
        return Ok(RunFunctionRequest::default());
    }
    let text = std::fs::read_to_string(&stem).map_err(|e| format!("{}: {e}", stem.display()))?;
    let doc = crate::builtins::yaml::documents_as_json(&text)
        .map_err(|e| format!("{}: {e}", stem.display()))?
        .into_iter()
        .next()
        .unwrap_or_default();
    serde_json::from_value(doc)
        .map_err(|e| format!("{}: not a RunFunctionRequest: {e}", stem.display()))
}

/// Runs one test function (or the whole file): why it failed.
pub async fn run(
    function: &StarlarkFunction,
    path: &Path,
    test: Option<&str>,
) -> Result<(), String> {
    let mut source =
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(name) = test {
        source.push('\n');
        source.push_str(name);
        source.push_str("()\n");
    }
    let dir = path
        .parent()
        .and_then(|d| {
            std::fs::canonicalize(if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            })
            .ok()
        })
        .unwrap_or_default();
    let mut request = request(path)?;
    request.input = serde_json::from_value(json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": {"source": source, "modulePaths": [dir.display().to_string()]},
    }))
    .ok();
    let response = function.handle(request).await;
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match response
        .results
        .iter()
        .find(|r| r.severity == Severity::Fatal as i32)
    {
        Some(fatal) => Err(tidy(
            &fatal.message.replace(crate::input::INLINE_FILENAME, &file),
            test.is_some(),
        )),
        None => Ok(()),
    }
}

/// A Fatal message as a test failure: the traceback's frames without the
/// runner's own call of the test, and the error once.
fn tidy(message: &str, called: bool) -> String {
    let body = message
        .strip_prefix("starlark execution failed: ")
        .unwrap_or(message);
    let body = body
        .strip_prefix("starlark execution error: ")
        .unwrap_or(body);
    let mut lines: Vec<&str> = body
        .lines()
        .filter(|l| *l != "Traceback (most recent call last):")
        .map(str::trim_start)
        .collect();
    if called && lines.len() > 1 && lines[0].ends_with(": in <toplevel>") {
        lines.remove(0);
    }
    let message = crate::runner::errors::error_message(body);
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    if let (Some(last), Some(message)) = (out.last_mut(), message)
        && let Some((head, _)) = last.split_once(": ")
    {
        *last = format!("{head}: {message}");
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::{test_names, tidy};

    #[test]
    fn a_failure_shows_the_tests_frames_and_the_error_once() {
        let message = "starlark execution failed: starlark execution error: Traceback (most recent call last):\n  t_test.star:14:12: in <toplevel>\n  t_test.star:9:14: in test_b\nError in assert.eq: assert.eq: got 6, want 7: assert.eq: got 6, want 7";
        assert_eq!(
            tidy(message, true),
            "t_test.star:9:14: in test_b\nError in assert.eq: assert.eq: got 6, want 7"
        );
    }

    #[test]
    fn test_functions_are_the_top_level_defs_named_test() {
        let source = "def helper():\n    pass\ndef test_a():\n    pass\n    def test_inner():\n        pass\ndef test_b(x = 1):\n    pass\n";
        assert_eq!(test_names(source), vec!["test_a", "test_b"]);
    }
}
