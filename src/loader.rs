//! What `load()` can reach, gathered before evaluation: the loader walks
//! the load graph from the main script, reads every module it finds
//! (inline modules, the mounted script directory and `modulePaths`, the
//! embedded standard library, OCI artifacts — see [`oci`]), and hands the
//! runtime a table of sources.
//! Evaluation then never does I/O; starlark's loader interface is
//! synchronous, and the runtime answers it from this table.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use function_sdk_rust::proto::v1::RunFunctionRequest;

use crate::error::Error;
use crate::input::Checked;

pub mod oci;
pub mod stdlib;
pub mod target;

pub use target::{Refusal, Target, classify, classify_target};

use oci::reference::{parse_url, quote};
use oci::{Access, OciResolver, Resolution};

/// Where a module came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `spec.modules`.
    Inline = 0,
    /// A search directory.
    File = 1,
    /// The standard library compiled into the binary.
    Stdlib = 2,
    /// An OCI artifact.
    Oci = 3,
}

/// A module's source, or why a local name could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The module's text.
    Source(Origin, Arc<str>),
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

/// What gathering produced: the sources, or the Fatal error of the module
/// phase, and the time OCI resolution took when it ran.
pub struct Gathered {
    /// The module table, or why the request fails.
    pub sources: Result<Sources, Error>,
    /// Set when the request had OCI targets to resolve.
    pub oci_resolve: Option<Duration>,
}

/// How a file's loads are followed while gathering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// The main script and inline modules: every target; a short form
    /// without a default registry fails the request.
    Root,
    /// Modules read from search directories: every target that classifies.
    File,
    /// Files of OCI artifacts, whose OCI targets the resolver already
    /// followed: local names and the standard library only.
    Oci,
}

impl Sources {
    /// Reads every module the request can reach before evaluation: walks
    /// the loads of the main script and of every inline module, resolves
    /// the OCI targets found (fetching their artifacts), and reads each
    /// local module any of those files names, until nothing new turns up.
    /// Local lookup failures are kept, not raised: they are reported when
    /// the `load` statement runs.
    pub async fn gather(
        checked: &Checked,
        resolver: &OciResolver,
        request: &RunFunctionRequest,
    ) -> Gathered {
        if let Some(registry) = &checked.oci.default_registry
            && let Err(e) = oci::reference::validate_default_registry(registry)
        {
            return Gathered {
                sources: Err(Error::Modules(format!(
                    "validating default OCI registry: {e}"
                ))),
                oci_resolve: None,
            };
        }
        let mut dirs = Vec::new();
        if let Some(dir) = &checked.script_dir {
            dirs.push(dir.clone());
        }
        dirs.extend(checked.module_paths.iter().map(PathBuf::from));
        let mut sources = Sources {
            modules: HashMap::new(),
            dirs,
            default_registry: checked.oci.default_registry.clone(),
        };
        let registry = checked.oci.default_registry.as_deref();
        // The inline modules are all available whether or not they are
        // loaded; walk from the main script and from each of them.
        let mut queue: VecDeque<(String, Arc<str>, Scan)> = VecDeque::new();
        queue.push_back((
            checked.script.filename.clone(),
            Arc::from(checked.script.source.as_str()),
            Scan::Root,
        ));
        for (name, text) in &checked.modules {
            let text: Arc<str> = Arc::from(text.as_str());
            sources
                .modules
                .insert(name.clone(), Found::Source(Origin::Inline, text.clone()));
            queue.push_back((name.clone(), text, Scan::Root));
        }
        let mut pending = Vec::new();
        let mut seen_oci: HashSet<String> = HashSet::new();
        let mut resolution: Option<Resolution<'_>> = None;
        let mut resolve_time: Option<Duration> = None;
        loop {
            while let Some((caller, text, scan)) = queue.pop_front() {
                for raw in crate::syntax::loads::load_targets_of(&text).iter() {
                    let inline = |key: &str| sources.is_inline(key);
                    let target = match classify_target(raw, &caller, registry, &inline) {
                        Ok(target) => target,
                        Err(Refusal::NoDefaultRegistry(e)) if scan == Scan::Root => {
                            return Gathered {
                                sources: Err(Error::Modules(format!(
                                    "scanning for OCI load targets: {e}"
                                ))),
                                oci_resolve: resolve_time,
                            };
                        }
                        Err(_) => continue,
                    };
                    let key = target.key().to_owned();
                    let found = match &target {
                        Target::Oci(url) => {
                            // A malformed URL is left to fail, naming its
                            // problem, when its load runs.
                            if scan != Scan::Oci
                                && seen_oci.insert(url.clone())
                                && let Ok(url) = parse_url(url)
                            {
                                pending.push(url);
                            }
                            continue;
                        }
                        _ if sources.modules.contains_key(&key) => continue,
                        Target::Stdlib(key) => stdlib::source(key).map_or_else(
                            || {
                                Found::Error(format!(
                                    "module {key:?} not found in the standard library"
                                ))
                            },
                            |s| Found::Source(Origin::Stdlib, Arc::from(s)),
                        ),
                        Target::Local(name) => sources.read_local(name).await,
                        Target::File(path) => read_beside(raw, path, &caller).await,
                    };
                    if let Found::Source(_, text) = &found {
                        queue.push_back((key.clone(), text.clone(), Scan::File));
                    }
                    sources.modules.insert(key, found);
                }
            }
            if pending.is_empty() {
                break;
            }
            // The OCI steps are boxed: their futures are large, and inline
            // they would make every request's future (most never resolve
            // an OCI module) kilobytes larger, copied as it moves.
            if resolution.is_none() {
                let access = Box::pin(Access::new(&checked.oci, request, resolver.config())).await;
                resolution = Some(Resolution::new(resolver, access, registry));
            }
            let Some(resolution) = resolution.as_mut() else {
                continue;
            };
            let started = std::time::Instant::now();
            let outcome = Box::pin(resolution.resolve(std::mem::take(&mut pending))).await;
            resolve_time = Some(resolve_time.unwrap_or_default() + started.elapsed());
            let entries = match outcome {
                Ok(entries) => entries,
                Err(e) => {
                    return Gathered {
                        sources: Err(Error::Modules(format!("resolving OCI modules: {e}"))),
                        oci_resolve: resolve_time,
                    };
                }
            };
            for (key, text) in entries {
                let known = matches!(
                    sources.modules.get(&key),
                    Some(Found::Source(Origin::Oci, _))
                );
                if !known {
                    sources
                        .modules
                        .insert(key.clone(), Found::Source(Origin::Oci, text.clone()));
                    queue.push_back((key, text, Scan::Oci));
                }
            }
        }
        Gathered {
            sources: Ok(sources),
            oci_resolve: resolve_time,
        }
    }

    /// Whether `key` is one of the request's inline modules.
    pub fn is_inline(&self, key: &str) -> bool {
        matches!(
            self.modules.get(key),
            Some(Found::Source(Origin::Inline, _))
        )
    }

    /// [`classify`]s the target `raw` of a `load` in `caller` for this
    /// request: its default registry, its inline modules.
    pub fn classify(&self, raw: &str, caller: &str) -> Result<Target, String> {
        classify(raw, caller, self.default_registry(), &|key| {
            self.is_inline(key)
        })
    }

    async fn read_local(&self, name: &str) -> Found {
        for dir in &self.dirs {
            let path = dir.join(name);
            match tokio::fs::read(&path).await {
                Ok(bytes) => {
                    return match String::from_utf8(bytes) {
                        Ok(text) => Found::Source(Origin::File, Arc::from(text)),
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
            None if key.starts_with("oci://") => Err(match parse_url(key) {
                Ok(_) => format!(
                    "OCI module {} not resolved; ensure the OCI reference was resolvable before execution",
                    quote(key)
                ),
                Err(e) => format!(
                    "OCI module {} not resolved; ensure the OCI reference was resolvable before execution ({e})",
                    quote(key)
                ),
            }),
            None => Err(format!(
                "module {key:?} not found; it was not reachable before evaluation"
            )),
        }
    }

    /// Every module of the table, by key.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Found)> {
        self.modules.iter().map(|(k, f)| (k.as_str(), f))
    }

    /// A table of `entries`, as [`Sources::entries`] gave them (for a run
    /// in another process).
    pub fn from_entries(
        entries: impl IntoIterator<Item = (String, Found)>,
        default_registry: Option<String>,
    ) -> Sources {
        Sources {
            modules: entries.into_iter().collect(),
            dirs: Vec::new(),
            default_registry,
        }
    }

    /// Sources for tests: inline modules only.
    pub fn inline(modules: BTreeMap<String, String>) -> Sources {
        Sources {
            modules: modules
                .into_iter()
                .map(|(k, v)| (k, Found::Source(Origin::Inline, Arc::from(v))))
                .collect(),
            ..Sources::default()
        }
    }
}

/// Reads the file `path` that `./raw` in `caller` names.
async fn read_beside(raw: &str, path: &str, caller: &str) -> Found {
    match tokio::fs::read(path).await {
        Ok(bytes) => String::from_utf8(bytes).map_or_else(
            |_| {
                Found::Error(format!(
                    "reading module {raw:?} from {path}: the file is not UTF-8 text"
                ))
            },
            |text| Found::Source(Origin::File, Arc::from(text)),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Found::Error(format!(
            "module {raw:?} not found; resolved to {path} from caller {}",
            target::base(caller)
        )),
        Err(e) => Found::Error(format!("reading module {raw:?} from {path}: {e}")),
    }
}

/// Whether a file name is a module's (`.star`, and not a `*_test.star`
/// test file, which is never loaded).
#[allow(clippy::case_sensitive_file_extension_comparisons)]
pub fn is_module_file(name: &str) -> bool {
    // Module names are matched exactly, as the reference does.
    name.ends_with(".star") && !name.ends_with("_test.star")
}

/// The targets of a source's top-level `load` statements.
pub fn load_targets(text: &str) -> Vec<String> {
    crate::syntax::loads::load_targets(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unresolved_oci_modules_say_so_and_why() {
        let sources = Sources::default();
        let err = sources.get("oci://r.io/acme/lib:v1/x.star").unwrap_err();
        assert_eq!(
            err,
            "OCI module \"oci://r.io/acme/lib:v1/x.star\" not resolved; ensure the OCI reference was resolvable before execution"
        );
        let err = sources.get("oci://r.io/acme/lib/x.star").unwrap_err();
        assert!(
            err.contains("not resolved") && err.contains("tag or digest required"),
            "{err}"
        );
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
