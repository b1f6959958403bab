//! What a `load()` target names, decided from the target and the file that
//! loads it, in the Go implementation's order: relative loads (`./`, by
//! the caller's kind), short forms of the default registry, `oci://` URLs,
//! inline module keys (which may contain `/`), then flat local names.

use super::oci::reference::{parse_url, quote};
use super::stdlib;

/// The file a `load` target names, once classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A local name: inline modules, then the search directories.
    Local(String),
    /// A file beside a file read from the file system (`./x.star` from a
    /// mounted script or a module found beside it), by its cleaned path.
    File(String),
    /// A module of the embedded standard library.
    Stdlib(String),
    /// A file of an OCI artifact, by its full `oci://` URL.
    Oci(String),
}

impl Target {
    /// The key the module is known by in this request: in errors,
    /// positions, and the once-per-request cache.
    pub fn key(&self) -> &str {
        match self {
            Target::Local(k) | Target::File(k) | Target::Stdlib(k) | Target::Oci(k) => k,
        }
    }
}

/// Why a target cannot be classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A short form with no default registry to expand it with.
    NoDefaultRegistry(String),
    /// Any other malformed target: a relative load its caller cannot make,
    /// or a local name with a path separator, without `.star`, or naming a
    /// test file.
    Invalid(String),
}

impl From<Refusal> for String {
    fn from(r: Refusal) -> String {
        match r {
            Refusal::NoDefaultRegistry(m) | Refusal::Invalid(m) => m,
        }
    }
}

/// How the refusal of a relative load from a file without a directory
/// ends, after saying so; star imports report it without the advice.
pub const NO_DIRECTORY_ADVICE: &str = ". Use a flat module name or move to a ConfigMap";

/// How the refusal of an OCI package-local load into a subdirectory ends;
/// star imports report it without the parenthesis.
pub const NOT_FLAT_DETAIL: &str = " (no subdirectories)";

/// Classifies the target `raw` of a `load` in the file `caller`; `inline`
/// tells the keys of the request's inline modules.
pub fn classify(
    raw: &str,
    caller: &str,
    default_registry: Option<&str>,
    inline: &dyn Fn(&str) -> bool,
) -> Result<Target, String> {
    classify_target(raw, caller, default_registry, inline).map_err(String::from)
}

/// [`classify`], telling a missing default registry apart.
// Module names are matched exactly, as the reference does: `X.STAR` is not a module.
#[allow(clippy::case_sensitive_file_extension_comparisons)]
pub fn classify_target(
    raw: &str,
    caller: &str,
    default_registry: Option<&str>,
    inline: &dyn Fn(&str) -> bool,
) -> Result<Target, Refusal> {
    let invalid = |m: String| Err(Refusal::Invalid(m));
    if raw.starts_with("../") {
        return invalid(escapes(raw));
    }
    if let Some(rest) = raw.strip_prefix("./") {
        if caller.starts_with("oci://") {
            return package_local(raw, rest, caller);
        }
        if caller.contains('/') {
            return beside(raw, rest, caller);
        }
        return invalid(format!(
            "relative load {} requires a filesystem-sourced module; inline modules have no directory context{NO_DIRECTORY_ADVICE}",
            quote(raw)
        ));
    }
    if !raw.starts_with("oci://") && raw.contains(':') {
        return match default_registry {
            Some(registry) => Ok(Target::Oci(format!("oci://{registry}/{raw}"))),
            None => match stdlib::resolve(raw) {
                Some(key) => Ok(Target::Stdlib(key.to_owned())),
                None => Err(Refusal::NoDefaultRegistry(format!(
                    "load target {} requires a default OCI registry; set STARLARK_OCI_DEFAULT_REGISTRY env var on the function pod or spec.ociDefaultRegistry in function input",
                    quote(raw)
                ))),
            },
        };
    }
    if raw.starts_with("oci://") {
        return Ok(Target::Oci(raw.to_owned()));
    }
    // An inline module is found by its exact key, which may be a path.
    if inline(raw) {
        return Ok(Target::Local(raw.to_owned()));
    }
    if raw.contains('/') || raw.contains('\\') {
        return invalid(format!(
            "module name {} must not contain path separators",
            quote(raw)
        ));
    }
    if !raw.ends_with(".star") {
        return invalid(format!("module name {} must end with .star", quote(raw)));
    }
    if raw.ends_with("_test.star") {
        return invalid(format!(
            "module name {} is a test file and cannot be loaded as a module",
            quote(raw)
        ));
    }
    Ok(Target::Local(raw.to_owned()))
}

fn escapes(raw: &str) -> String {
    format!(
        "relative load {} rejected: path must not escape the caller's directory",
        quote(raw)
    )
}

/// `./x.star` from a file of an OCI artifact: a file at its root.
#[allow(clippy::case_sensitive_file_extension_comparisons)]
fn package_local(raw: &str, rest: &str, caller: &str) -> Result<Target, Refusal> {
    if !raw.ends_with(".star") || rest.contains('/') {
        return Err(Refusal::Invalid(format!(
            "OCI package-local load {} must be a flat sibling{NOT_FLAT_DETAIL}",
            quote(raw)
        )));
    }
    // Relative to the caller's artifact root, with its tag or digest as written.
    let parent = parse_url(caller).map_err(|e| {
        Refusal::Invalid(format!(
            "parsing OCI parent {} for package-local load {}: {e}",
            quote(caller),
            quote(raw)
        ))
    })?;
    Ok(Target::Oci(format!(
        "oci://{}/{rest}",
        parent.artifact.text
    )))
}

/// `./path.star` from a file read from the file system: the file at that
/// path from the caller's directory, which it must not leave; test files
/// are never modules.
#[allow(clippy::case_sensitive_file_extension_comparisons)]
fn beside(raw: &str, rest: &str, caller: &str) -> Result<Target, Refusal> {
    if !raw.ends_with(".star") {
        return Err(Refusal::Invalid(format!(
            "relative load {} must end with .star",
            quote(raw)
        )));
    }
    if rest.ends_with("_test.star") {
        return Err(Refusal::Invalid(format!(
            "relative load {} rejected: test files (*_test.star) cannot be loaded as modules",
            quote(raw)
        )));
    }
    if !is_local(rest) {
        return Err(Refusal::Invalid(escapes(raw)));
    }
    let dir = caller.rsplit_once('/').map_or(".", |(dir, _)| dir);
    let dir = if dir.is_empty() { "/" } else { dir };
    Ok(Target::File(clean(&format!("{dir}/{rest}"))))
}

/// Go's `filepath.IsLocal` on Unix: a relative, non-empty path that does
/// not climb above its start.
fn is_local(path: &str) -> bool {
    if path.is_empty() || path.starts_with('/') {
        return false;
    }
    let mut depth = 0usize;
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => depth += 1,
        }
    }
    true
}

/// Go's `filepath.Clean` on Unix: the shortest path naming the same file,
/// lexically (no link is followed: a mounted ConfigMap's files are links).
fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            _ => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// The last element of a path, as Go's `filepath.Base` gives it.
pub fn base(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify3(raw: &str, caller: &str, registry: Option<&str>) -> Result<Target, String> {
        classify(raw, caller, registry, &|_| false)
    }

    #[test]
    fn local_names_must_be_flat_star_files_that_are_not_tests() {
        assert_eq!(
            classify3("h.star", "composition.star", None),
            Ok(Target::Local("h.star".into()))
        );
        for (raw, fragment) in [
            ("lib/h.star", "must not contain path separators"),
            ("lib\\h.star", "must not contain path separators"),
            ("helpers", "must end with .star"),
            ("", "must end with .star"),
            (
                "h_test.star",
                "module name \"h_test.star\" is a test file and cannot be loaded as a module",
            ),
        ] {
            let err = classify3(raw, "composition.star", None).unwrap_err();
            assert!(err.contains(fragment), "{raw}: {err}");
        }
    }

    #[test]
    fn inline_keys_are_found_as_written_even_as_paths() {
        let inline = |k: &str| k == "lib/naming.star" || k == "lib/x_test.star";
        for key in ["lib/naming.star", "lib/x_test.star"] {
            assert_eq!(
                classify(key, "composition.star", None, &inline),
                Ok(Target::Local(key.into()))
            );
        }
        let err = classify("lib/other.star", "composition.star", None, &inline).unwrap_err();
        assert!(err.contains("must not contain path separators"), "{err}");
    }

    #[test]
    fn relative_loads_follow_the_callers_kind() {
        let refused = [
            (
                "../x.star",
                "/scripts/cm/main.star",
                "relative load \"../x.star\" rejected: path must not escape the caller's directory",
            ),
            (
                "./x.star",
                "composition.star",
                "relative load \"./x.star\" requires a filesystem-sourced module; inline modules have no directory context. Use a flat module name or move to a ConfigMap",
            ),
            (
                "./x.txt",
                "/scripts/cm/main.star",
                "relative load \"./x.txt\" must end with .star",
            ),
            (
                "./x_test.star",
                "/scripts/cm/main.star",
                "relative load \"./x_test.star\" rejected: test files (*_test.star) cannot be loaded as modules",
            ),
            (
                "./a/../../x.star",
                "/scripts/cm/main.star",
                "relative load \"./a/../../x.star\" rejected: path must not escape the caller's directory",
            ),
            (
                ".//etc/x.star",
                "/scripts/cm/main.star",
                "rejected: path must not escape the caller's directory",
            ),
            (
                "./sub/x.star",
                "oci://r.io/acme/p:v1/main.star",
                "OCI package-local load \"./sub/x.star\" must be a flat sibling (no subdirectories)",
            ),
        ];
        for (raw, caller, want) in refused {
            let err = classify3(raw, caller, None).unwrap_err();
            assert!(err.contains(want), "{raw} from {caller}: {err}");
        }
        for (raw, caller, want) in [
            (
                "./helper.star",
                "/scripts/cm/main.star",
                "/scripts/cm/helper.star",
            ),
            (
                "./lib/utils.star",
                "/scripts/cm/main.star",
                "/scripts/cm/lib/utils.star",
            ),
            (
                "./a/../b.star",
                "/scripts/cm/main.star",
                "/scripts/cm/b.star",
            ),
            ("./x.star", "lib/naming.star", "lib/x.star"),
            ("./x.star", "/main.star", "/x.star"),
        ] {
            assert_eq!(
                classify3(raw, caller, None),
                Ok(Target::File(want.to_owned())),
                "{raw} from {caller}"
            );
        }
    }

    #[test]
    fn paths_clean_as_go_cleans_them() {
        for (path, want) in [
            ("/a/b/../c", "/a/c"),
            ("/../a", "/a"),
            ("a/./b//c", "a/b/c"),
            ("../a", "../a"),
            ("a/..", "."),
        ] {
            assert_eq!(clean(path), want, "{path}");
        }
        assert_eq!(base("/scripts/cm/main.star"), "main.star");
        assert_eq!(base("main.star"), "main.star");
    }

    #[test]
    fn short_forms_need_a_default_registry_unless_they_name_the_stdlib() {
        let err = classify3("lib:v1/x.star", "composition.star", None).unwrap_err();
        assert!(
            err.contains("requires a default OCI registry")
                && err.contains("STARLARK_OCI_DEFAULT_REGISTRY")
                && err.contains("spec.ociDefaultRegistry"),
            "{err}"
        );
        assert!(matches!(
            classify3("starlark-stdlib:v1/naming.star", "c.star", None),
            Ok(Target::Stdlib(_))
        ));
    }

    #[test]
    fn short_forms_expand_with_the_default_registry() {
        // Short forms, with a tag or a digest, expand with the default registry, stdlib
        // short forms too; the embedded stdlib answers only when no default registry is
        // configured, and without one other short forms are refused.
        let hex = "ab".repeat(32);
        assert_eq!(
            classify3("lib:v1/x.star", "c.star", Some("ghcr.io/acme")),
            Ok(Target::Oci("oci://ghcr.io/acme/lib:v1/x.star".into()))
        );
        assert_eq!(
            classify3(
                &format!("lib@sha256:{hex}/x.star"),
                "c.star",
                Some("ghcr.io/acme")
            ),
            Ok(Target::Oci(format!(
                "oci://ghcr.io/acme/lib@sha256:{hex}/x.star"
            )))
        );
        assert_eq!(
            classify3(
                "starlark-stdlib:v1/naming.star",
                "c.star",
                Some("ghcr.io/acme")
            ),
            Ok(Target::Oci(
                "oci://ghcr.io/acme/starlark-stdlib:v1/naming.star".into()
            ))
        );
        // Any colon makes a target OCI, valid or not.
        assert_eq!(
            classify3("a:b.star", "c.star", Some("r.io")),
            Ok(Target::Oci("oci://r.io/a:b.star".into()))
        );
        assert!(matches!(
            classify_target("lib:v1/x.star", "c.star", None, &|_| false),
            Err(Refusal::NoDefaultRegistry(_))
        ));
    }

    #[test]
    fn package_local_loads_are_relative_to_the_callers_artifact_root() {
        let hex = "cd".repeat(32);
        for (caller, expected) in [
            (
                "oci://r.io/acme/p:v2/apps/v1.star",
                "oci://r.io/acme/p:v2/meta.star",
            ),
            (
                &format!("oci://r.io/acme/p@sha256:{hex}/main.star") as &str,
                &format!("oci://r.io/acme/p@sha256:{hex}/meta.star") as &str,
            ),
        ] {
            assert_eq!(
                classify3("./meta.star", caller, None),
                Ok(Target::Oci(expected.to_owned()))
            );
        }
        let err = classify3("./x.star", "oci://bad", None).unwrap_err();
        assert!(err.contains("parsing OCI parent"), "{err}");
        // Explicit OCI targets are kept as written; local names stay local
        // whoever the caller is.
        assert_eq!(
            classify3("oci://r.io/a/b:v1/x.star", "c.star", None),
            Ok(Target::Oci("oci://r.io/a/b:v1/x.star".into()))
        );
        assert_eq!(
            classify3("h.star", "oci://r.io/a/b:v1/x.star", None),
            Ok(Target::Local("h.star".into()))
        );
    }
}
