//! A Composition's inline modules as documents of their own: a `load()` of
//! a module key from its script reaches `starlark:/<YAML path>/<key>`,
//! whose text is the module's, and locations in it are moved back into the
//! YAML file for the editor.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use starlark_lsp::server::LspUri;

use super::documents::Documents;

/// The `starlark:` URI of module `key` of the YAML file `yaml`.
pub fn uri(yaml: &Path, key: &str) -> LspUri {
    LspUri::Starlark(PathBuf::from(format!("{}/{key}", yaml.display())))
}

/// The YAML file and module key a module's path names.
pub fn split(path: &Path) -> Option<(PathBuf, String)> {
    let text = path.to_str()?;
    [".yaml/", ".yml/"].iter().find_map(|ext| {
        let at = text.find(ext)? + ext.len() - 1;
        Some((PathBuf::from(&text[..at]), text[at + 1..].to_owned()))
    })
}

/// The editor's URI of a file.
pub fn file_uri(path: &Path) -> Option<String> {
    super::documents::editor_uri(&LspUri::File(path.to_path_buf()))
}

/// The YAML text of `yaml`: as the editor holds it, else as saved.
pub fn yaml_text(documents: &Documents, yaml: &Path) -> Option<String> {
    file_uri(yaml)
        .and_then(|u| documents.get(&u))
        .map(|d| d.text)
        .or_else(|| std::fs::read_to_string(yaml).ok())
}

/// Module `key` of `yaml`: its text, and the line and indentation it
/// starts at in the YAML.
pub fn module(documents: &Documents, yaml: &Path, key: &str) -> Option<(String, (usize, usize))> {
    let text = yaml_text(documents, yaml)?;
    crate::check::inline_scripts(&text)
        .into_iter()
        .find(|(caller, _, _)| caller == key)
        .map(|(_, text, at)| (text, at))
}

/// Moves the positions of locations in inline modules (`starlark:` URIs)
/// to the module's place in its YAML file.
pub fn relocate(documents: &Documents, value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in ["targetUri", "uri"] {
                let Some(target) = map.get(key).and_then(Value::as_str) else {
                    continue;
                };
                let Some(path) = target.strip_prefix("starlark:") else {
                    continue;
                };
                let Some((yaml, name)) = split(Path::new(path)) else {
                    continue;
                };
                let (Some((_, (line, indent))), Some(file)) =
                    (module(documents, &yaml, &name), file_uri(&yaml))
                else {
                    continue;
                };
                map.insert(key.to_owned(), json!(file));
                for v in map.values_mut() {
                    shift(v, line, indent);
                }
                return;
            }
            for v in map.values_mut() {
                relocate(documents, v);
            }
        }
        Value::Array(items) => {
            for v in items {
                relocate(documents, v);
            }
        }
        _ => {}
    }
}

/// Adds `lines` and `columns` to every position in `value`.
fn shift(value: &mut Value, lines: usize, columns: usize) {
    match value {
        Value::Object(map) => {
            if map.len() == 2
                && let (Some(l), Some(c)) = (
                    map.get("line").and_then(Value::as_u64),
                    map.get("character").and_then(Value::as_u64),
                )
            {
                map.insert("line".to_owned(), json!(l + lines as u64));
                map.insert("character".to_owned(), json!(c + columns as u64));
                return;
            }
            for v in map.values_mut() {
                shift(v, lines, columns);
            }
        }
        Value::Array(items) => {
            for v in items {
                shift(v, lines, columns);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::split;

    #[test]
    fn a_module_path_names_its_yaml_and_key() {
        let (yaml, key) = split(Path::new("/w/c.yaml/lib/helpers.star")).expect("split");
        assert_eq!(yaml, Path::new("/w/c.yaml"));
        assert_eq!(key, "lib/helpers.star");
        assert!(split(Path::new("/w/helpers.star")).is_none());
    }
}
