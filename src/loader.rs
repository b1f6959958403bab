//! What `load()` can reach, gathered before evaluation: the loader walks
//! the load graph from the main script, reads every module it finds
//! (inline modules, the mounted script directory and `modulePaths`, the
//! embedded standard library), and hands the runtime a table of sources.
//! Evaluation then never does I/O; starlark's loader interface is
//! synchronous, and the runtime answers it from this table.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;

use crate::input::Checked;

pub mod stdlib;

/// Where a module came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `spec.modules`.
    Inline,
    /// A search directory.
    File,
    /// The standard library compiled into the binary.
    Stdlib,
}

/// A module's source, or why a local name could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The module's text.
    Source(Origin, String),
    /// The lookup error, reported when a `load` reaches it.
    Error(String),
}

/// Everything the request's scripts can load, by module key.
#[derive(Debug, Default, Clone)]
pub struct Sources {
    modules: HashMap<String, Found>,
    dirs: Vec<PathBuf>,
    default_registry: Option<String>,
}

/// The file a `load` target names, once classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A local name: inline modules, then the search directories.
    Local(String),
    /// A module of the embedded standard library.
    Stdlib(String),
}

impl Target {
    /// The key the module is known by in this request: in errors,
    /// positions, and the once-per-request cache.
    pub fn key(&self) -> &str {
        match self {
            Target::Local(k) | Target::Stdlib(k) => k,
        }
    }
}

/// Classifies the target `raw` of a `load` in the file `caller`.
// Module names are matched exactly, as the reference does: `X.STAR` is not a module.
#[allow(clippy::case_sensitive_file_extension_comparisons)]
pub fn classify(raw: &str, caller: &str, default_registry: Option<&str>) -> Result<Target, String> {
    if raw.starts_with("./") && raw.ends_with(".star") && !raw[2..].contains('/') {
        return Err(format!(
            "package-local load {raw:?} is only valid from OCI modules; caller {caller:?} is not an OCI module"
        ));
    }
    if !raw.starts_with("oci://") && raw.contains(':') {
        if default_registry.is_none()
            && let Some(key) = stdlib::resolve(raw)
        {
            return Ok(Target::Stdlib(key.to_owned()));
        }
        return Err(match default_registry {
            None => format!(
                "load target {raw:?} requires a default OCI registry; set STARLARK_OCI_DEFAULT_REGISTRY env var on the function pod or spec.ociDefaultRegistry in function input"
            ),
            Some(registry) => format!(
                "OCI module \"oci://{registry}/{raw}\" not resolved; loading modules from OCI registries is not supported yet"
            ),
        });
    }
    if raw.starts_with("oci://") {
        return Err(format!(
            "OCI module {raw:?} not resolved; loading modules from OCI registries is not supported yet"
        ));
    }
    if raw.contains('/') || raw.contains('\\') {
        return Err(format!(
            "module name {raw:?} must not contain path separators"
        ));
    }
    if !raw.ends_with(".star") {
        return Err(format!("module name {raw:?} must end with .star"));
    }
    Ok(Target::Local(raw.to_owned()))
}

impl Sources {
    /// Reads every module the main script can reach, following loads
    /// transitively. Lookup failures are kept, not raised: the reference
    /// reports them when the `load` statement runs.
    pub async fn gather(checked: &Checked, default_registry: Option<String>) -> Sources {
        let mut dirs = Vec::new();
        if let Some(dir) = &checked.script_dir {
            dirs.push(dir.clone());
        }
        dirs.extend(checked.module_paths.iter().map(PathBuf::from));
        let mut sources = Sources {
            modules: HashMap::new(),
            dirs,
            default_registry,
        };
        // The inline modules are all available whether or not they are
        // loaded; walk from the main script and from each of them.
        let mut queue: VecDeque<(String, String)> = VecDeque::new();
        queue.push_back((
            checked.script.filename.clone(),
            checked.script.source.clone(),
        ));
        for (name, text) in &checked.modules {
            sources
                .modules
                .insert(name.clone(), Found::Source(Origin::Inline, text.clone()));
            queue.push_back((name.clone(), text.clone()));
        }
        while let Some((caller, text)) = queue.pop_front() {
            for raw in load_targets(&text) {
                let Ok(target) = classify(&raw, &caller, sources.default_registry.as_deref())
                else {
                    continue;
                };
                let key = target.key().to_owned();
                if sources.modules.contains_key(&key) {
                    continue;
                }
                let found = match &target {
                    Target::Stdlib(key) => stdlib::source(key).map_or_else(
                        || {
                            Found::Error(format!(
                                "module {key:?} not found in the standard library"
                            ))
                        },
                        |s| Found::Source(Origin::Stdlib, s.to_owned()),
                    ),
                    Target::Local(name) => sources.read_local(name).await,
                };
                if let Found::Source(_, text) = &found {
                    queue.push_back((key.clone(), text.clone()));
                }
                sources.modules.insert(key, found);
            }
        }
        sources
    }

    async fn read_local(&self, name: &str) -> Found {
        for dir in &self.dirs {
            let path = dir.join(name);
            match tokio::fs::read(&path).await {
                Ok(bytes) => {
                    return match String::from_utf8(bytes) {
                        Ok(text) => Found::Source(Origin::File, text),
                        Err(_) => Found::Error(format!(
                            "reading module {name:?} from {}: the file is not UTF-8 text",
                            dir.display()
                        )),
                    };
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Found::Error(format!(
                        "reading module {name:?} from {}: {e}",
                        dir.display()
                    ));
                }
            }
        }
        let mut searched = vec!["inline modules".to_owned()];
        searched.extend(self.dirs.iter().map(|d| d.display().to_string()));
        Found::Error(format!(
            "module {name:?} not found; searched: {}",
            searched.join(", ")
        ))
    }

    /// The default registry short forms expand with, if any.
    pub fn default_registry(&self) -> Option<&str> {
        self.default_registry.as_deref()
    }

    /// The source of the module `key`, or why it is unavailable.
    pub fn get(&self, key: &str) -> Result<&str, String> {
        match self.modules.get(key) {
            Some(Found::Source(_, text)) => Ok(text),
            Some(Found::Error(e)) => Err(e.clone()),
            None => Err(format!(
                "module {key:?} not found; it was not reachable before evaluation"
            )),
        }
    }

    /// Sources for tests: inline modules only.
    pub fn inline(modules: BTreeMap<String, String>) -> Sources {
        Sources {
            modules: modules
                .into_iter()
                .map(|(k, v)| (k, Found::Source(Origin::Inline, v)))
                .collect(),
            ..Sources::default()
        }
    }
}

/// The targets of a source's top-level `load` statements. A source that
/// does not parse has none: its compile error is reported when it runs.
pub fn load_targets(text: &str) -> Vec<String> {
    let Ok(pre) = crate::runtime::prepass::prepass(text) else {
        return Vec::new();
    };
    let dialect = crate::runtime::dialect();
    match starlark::syntax::AstModule::parse("scan.star", pre.text, &dialect) {
        Ok(ast) => ast.loads().iter().map(|l| l.module_id.to_owned()).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_must_be_flat_star_files() {
        assert_eq!(
            classify("h.star", "composition.star", None),
            Ok(Target::Local("h.star".into()))
        );
        for (raw, fragment) in [
            ("lib/h.star", "must not contain path separators"),
            ("lib\\h.star", "must not contain path separators"),
            ("./sub/x.star", "must not contain path separators"),
            ("helpers", "must end with .star"),
            ("", "must end with .star"),
        ] {
            let err = classify(raw, "composition.star", None).unwrap_err();
            assert!(err.contains(fragment), "{raw}: {err}");
        }
    }

    #[test]
    fn package_local_loads_need_an_oci_caller() {
        let err = classify("./x.star", "composition.star", None).unwrap_err();
        assert!(
            err.contains("./x.star")
                && err.contains("composition.star")
                && err.contains("not an OCI module"),
            "{err}"
        );
    }

    #[test]
    fn short_forms_need_a_default_registry_unless_they_name_the_stdlib() {
        let err = classify("lib:v1/x.star", "composition.star", None).unwrap_err();
        assert!(
            err.contains("requires a default OCI registry")
                && err.contains("STARLARK_OCI_DEFAULT_REGISTRY")
                && err.contains("spec.ociDefaultRegistry"),
            "{err}"
        );
        assert!(matches!(
            classify("starlark-stdlib:v1/naming.star", "c.star", None),
            Ok(Target::Stdlib(_))
        ));
    }

    #[test]
    fn load_targets_are_read_from_top_level_load_statements() {
        let text = "load(\"a.star\", \"x\")\nload(\"b.star\", y = \"z\")\nx\n";
        assert_eq!(
            load_targets(text),
            vec!["a.star".to_owned(), "b.star".to_owned()]
        );
        assert!(load_targets("x = (").is_empty());
    }
}
