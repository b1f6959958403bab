//! Reading the files `render` is given: YAML streams (or JSON) from a file,
//! or from every `.yaml`, `.yml` and `.json` file of a directory in name
//! order, as Kubernetes objects.

use std::path::Path;

use serde_json::Value;

use super::RenderError;

/// Every document of the file at `path`, or of the files of the directory
/// at `path`.
pub fn objects(path: &Path) -> Result<Vec<Value>, RenderError> {
    let unreadable = |e: std::io::Error| RenderError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    if path.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(path)
            .map_err(unreadable)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && p.extension()
                        .and_then(|e| e.to_str())
                        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
            })
            .collect();
        files.sort();
        let mut out = Vec::new();
        for file in files {
            out.extend(objects(&file)?);
        }
        return Ok(out);
    }
    let text = std::fs::read_to_string(path).map_err(unreadable)?;
    crate::builtins::yaml::documents_as_json(&text)
        .map(|docs| docs.into_iter().filter(|d| !d.is_null()).collect())
        .map_err(|message| RenderError::Read {
            path: path.display().to_string(),
            message,
        })
}

/// The one object of the file at `path` (its first document).
pub fn object(path: &Path) -> Result<Value, RenderError> {
    objects(path)?
        .into_iter()
        .next()
        .ok_or_else(|| RenderError::Read {
            path: path.display().to_string(),
            message: "the file holds no YAML document".to_owned(),
        })
}

/// The string at `path` (dot-separated keys) of `object`, or "".
pub fn string_at<'a>(object: &'a Value, path: &str) -> &'a str {
    path.split('.')
        .try_fold(object, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The files under `paths` (a file given is taken as it is) whose name
/// `wanted` accepts, each directory in name order; directories whose name
/// starts with `.` and `target/` are skipped. For the subcommands that
/// search a tree (`test`, `check`).
pub fn files_under(
    paths: &[std::path::PathBuf],
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<std::path::PathBuf> {
    fn walk(path: &Path, wanted: &dyn Fn(&str) -> bool, out: &mut Vec<std::path::PathBuf>) {
        if path.is_file() {
            out.push(path.to_path_buf());
            return;
        }
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        let mut entries: Vec<std::path::PathBuf> =
            entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for entry in entries {
            let name = entry
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if entry.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    walk(&entry, wanted, out);
                }
            } else if wanted(&name) {
                out.push(entry);
            }
        }
    }
    let mut out = Vec::new();
    for path in paths {
        walk(path, wanted, &mut out);
    }
    out
}

/// The string values of a JSON object (`matchLabels`, `modules`), by key.
pub fn strings<C: FromIterator<(String, String)>>(object: Option<&Value>) -> C {
    object
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect()
}
