//! The `schema()` constructors the workspace's modules define (`gen`'s
//! output, hand-written libraries), by name: an undefined name that one of
//! them defines gets a quick fix loading it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Folders never searched: build output, dependencies, version control.
const SKIPPED: [&str; 4] = ["target", "node_modules", ".git", ".github"];

/// At most this many files are read, so that a huge tree cannot stall
/// the server's start.
const MAX_FILES: usize = 20_000;

/// Constructor name -> the modules defining it, under `root`.
pub fn constructors(root: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    let mut read = 0;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.is_dir() {
                if !SKIPPED.contains(&name.as_str()) {
                    pending.push(path);
                }
                continue;
            }
            if !crate::loader::is_module_file(&name) {
                continue;
            }
            read += 1;
            if read > MAX_FILES {
                break;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for line in text.lines() {
                let Some((name, _)) = line.split_once(" = schema(") else {
                    continue;
                };
                if !name.is_empty()
                    && !name.starts_with('_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    out.entry(name.to_owned()).or_default().push(path.clone());
                }
            }
        }
    }
    // The modules of a name in path order: `kubernetes.crossplane.io`
    // before `kubernetes.m.crossplane.io`.
    for modules in out.values_mut() {
        modules.sort();
        modules.dedup();
    }
    out
}

/// How a file in `dir` loads `module`: `./` and its path below `dir`, or
/// `None` when it is not below (a load cannot climb out of its directory).
pub fn load_target(dir: &Path, module: &Path) -> Option<String> {
    let below = module.strip_prefix(dir).ok()?;
    Some(format!("./{}", below.to_string_lossy().replace('\\', "/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspaces_constructors_are_found_with_their_modules() {
        let root = tempfile::tempdir().unwrap();
        let schemas = root.path().join("schemas/s3.aws.upbound.io");
        std::fs::create_dir_all(&schemas).unwrap();
        std::fs::create_dir_all(root.path().join("target")).unwrap();
        std::fs::write(
            schemas.join("v1beta1.star"),
            "Bucket = schema(\n    \"Bucket\",\n)\n_Hidden = schema(\"H\")\n",
        )
        .unwrap();
        std::fs::write(
            root.path().join("target/x.star"),
            "Skipped = schema(\"S\")\n",
        )
        .unwrap();
        let found = constructors(root.path());
        assert_eq!(found.keys().collect::<Vec<_>>(), ["Bucket"]);
        assert_eq!(
            load_target(root.path(), &found["Bucket"][0]).as_deref(),
            Some("./schemas/s3.aws.upbound.io/v1beta1.star")
        );
        assert_eq!(load_target(&schemas.join("x"), &found["Bucket"][0]), None);
    }
}
