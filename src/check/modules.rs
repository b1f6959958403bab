//! What a script's `load()`s reach, for `check` and the editor: a module's
//! text (inline modules, files beside the script, the embedded standard
//! library, OCI modules pulled in this process), the typed scope of
//! `schema()` constructors read from them, and the pulling of OCI modules
//! (`--oci`, and the editor's on every document it opens).

use std::collections::HashSet;
use std::path::Path;

use starlark::syntax::AstModule;

use super::{Finding, Script, Severity, scripts_in};
use crate::loader::Target;

/// The typed scope of the file `path` holding `text` (a Composition's:
/// its first step's inline source), for the editor; `None` when the
/// script does not parse (as while it is being typed).
pub fn typed_scope_of(path: &Path, text: &str) -> Option<crate::typed::Module> {
    let script = scripts_in(path, text.to_owned())
        .into_iter()
        .find(|s| s.caller == crate::input::INLINE_FILENAME || s.offset == (0, 0))?;
    let (ast, map) = crate::syntax::parse_quietly(&script.file, &script.text)?;
    Some(typed_scope(&script, &ast, &map))
}

/// The `schema()` constructors and constants a script sees: its own and
/// those of the modules it loads, read statically (each module's text read
/// once per process, by its content).
pub(super) fn typed_scope(
    script: &Script,
    ast: &AstModule,
    map: &crate::syntax::line_map::LineMap,
) -> crate::typed::Module {
    let seen = std::cell::RefCell::new(HashSet::new());
    crate::typed::read(ast, map, None, &|target| {
        typed_module(script, target, &seen)
    })
}

/// The schema view of the module `target`, read with its own loads.
pub(super) fn typed_module(
    script: &Script,
    target: &str,
    seen: &std::cell::RefCell<HashSet<String>>,
) -> Option<std::sync::Arc<crate::typed::Module>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    // Modules read, by their text: a provider's modules are megabytes, read
    // again on every change in the editor otherwise.
    type Read = HashMap<(String, u64), Arc<crate::typed::Module>>;
    static READ: OnceLock<Mutex<Read>> = OnceLock::new();
    if !seen.borrow_mut().insert(target.to_owned()) {
        return None;
    }
    let text = module_text(script, target)?;
    let key = (
        target.to_owned(),
        std::hash::BuildHasher::hash_one(&foldhash::quality::FixedState::default(), &text),
    );
    let cache = READ.get_or_init(Mutex::default);
    if let Some(m) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Some(m);
    }
    let (module_ast, module_map) = crate::syntax::parse_quietly(target, &text)?;
    let module = Arc::new(crate::typed::read(
        &module_ast,
        &module_map,
        Some(target),
        &|t| typed_module(script, t, seen),
    ));
    if let Ok(mut c) = cache.lock() {
        if c.len() > 512 {
            c.clear();
        }
        c.insert(key, module.clone());
    }
    Some(module)
}

/// The text of the module `target` a script loads, when it can be found
/// (an OCI module's once [`fetch_oci_modules`] has pulled it).
pub(super) fn module_text(script: &Script, target: &str) -> Option<String> {
    if let Some(text) = script.modules.get(target) {
        return Some(text.clone());
    }
    if let Ok(Target::Oci(url)) = crate::loader::classify(
        target,
        &script.caller,
        script.default_registry.as_deref(),
        &|key| script.modules.contains_key(key),
    ) {
        return match pulled(&url)? {
            Ok(text) => Some(text.to_string()),
            Err(_) => None,
        };
    }
    if let Some(key) = crate::loader::stdlib::resolve(target) {
        return crate::loader::stdlib::source(key).map(str::to_owned);
    }
    std::fs::read_to_string(script.dir.join(target)).ok()
}

/// OCI modules pulled in this process (by the editor), by full URL: their
/// text, or why they could not be had.
type Pulled = std::collections::HashMap<String, Result<std::sync::Arc<str>, String>>;

fn pulled_store() -> &'static std::sync::Mutex<Pulled> {
    static PULLED: std::sync::OnceLock<std::sync::Mutex<Pulled>> = std::sync::OnceLock::new();
    PULLED.get_or_init(std::sync::Mutex::default)
}

/// What pulling the OCI module `url` gave, if it was pulled.
pub(super) fn pulled(url: &str) -> Option<Result<std::sync::Arc<str>, String>> {
    pulled_store().lock().ok()?.get(url).cloned()
}

/// Pulls the OCI modules the file `path` holding `text` loads (and what
/// they load), with the loader's client, caches and the Docker config's
/// credentials, once per process; `check` and the editor then read their
/// schemas, and a module that cannot be had is an error on its `load()`.
pub fn fetch_oci_modules(path: &Path, text: &str) {
    use crate::loader::oci::{Access, OciResolver, Resolution, reference::parse_url};
    static RESOLVER: std::sync::OnceLock<OciResolver> = std::sync::OnceLock::new();
    let mut wanted = Vec::new();
    for script in scripts_in(path, text.to_owned()) {
        for target in crate::loader::load_targets(&script.text) {
            if let Ok(Target::Oci(url)) = crate::loader::classify(
                &target,
                &script.caller,
                script.default_registry.as_deref(),
                &|key| script.modules.contains_key(key),
            ) && pulled(&url).is_none()
                && !wanted.contains(&url)
            {
                wanted.push(url);
            }
        }
    }
    if wanted.is_empty() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let resolver =
        RESOLVER.get_or_init(|| OciResolver::new(crate::loader::oci::OciConfig::default()));
    let settings = crate::input::OciSettings::default();
    let request = function_sdk_rust::proto::v1::RunFunctionRequest::default();
    for url in wanted {
        let result = runtime.block_on(async {
            let access = Access::new(&settings, &request, resolver.config()).await;
            let target = parse_url(&url)?;
            Resolution::new(resolver, access, None)
                .resolve(vec![target])
                .await
        });
        let Ok(mut store) = pulled_store().lock() else {
            return;
        };
        match result {
            Ok(entries) => {
                for (key, text) in entries {
                    store.insert(key, Ok(text));
                }
            }
            Err(e) => {
                store.insert(url, Err(e));
            }
        }
    }
}

/// `--oci`: fetches the OCI module of each `load` info; one that comes
/// drops its finding, one that does not becomes an error saying why.
pub(super) fn fetch_oci(findings: &mut Vec<Finding>, options: &crate::render::Options) {
    use crate::loader::oci::{Access, OciResolver, Resolution, reference::parse_url};
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let resolver = OciResolver::new(options.oci.clone());
    let settings = crate::input::OciSettings::default();
    let request = function_sdk_rust::proto::v1::RunFunctionRequest::default();
    let mut keep = Vec::new();
    for mut f in std::mem::take(findings) {
        let Some(url) = f.oci.clone() else {
            keep.push(f);
            continue;
        };
        let fetched = runtime.block_on(async {
            let access = Access::new(&settings, &request, resolver.config()).await;
            let target = parse_url(&url)?;
            Resolution::new(&resolver, access, None)
                .resolve(vec![target])
                .await
        });
        if let Err(e) = fetched {
            f.severity = Severity::Error;
            f.message = format!("cannot fetch OCI module {url:?}: {e}");
            keep.push(f);
        }
    }
    *findings = keep;
}
