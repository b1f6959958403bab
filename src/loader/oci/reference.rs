//! OCI load targets: `oci://<registry>/<repository>:<tag>/<file>` and
//! `oci://<registry>/<repository>@sha256:<hex>/<file>`, split and validated
//! strictly (no default registry, no implicit tag), and the default registry
//! short forms expand with.

use std::fmt;

/// Docker Hub's canonical registry name.
pub const DOCKER_HUB: &str = "index.docker.io";

const DIGEST_MARKER: &str = "@sha256:";

/// A parsed `oci://` load target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciUrl {
    /// The whole target, as written after expansion: the module key.
    pub url: String,
    /// The artifact part, as written (`ghcr.io/acme/lib:v1`).
    pub artifact: ArtifactRef,
    /// The path of the file inside the artifact (`apps/v1.star`).
    pub file: String,
}

/// A strictly validated artifact reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArtifactRef {
    /// The reference exactly as written: the artifact's identity.
    pub text: String,
    /// The registry host (and port), `docker.io` canonicalised to `index.docker.io`.
    pub registry: String,
    /// The repository path.
    pub repository: String,
    /// The tag; empty for digest references.
    pub tag: String,
    /// `sha256:<64 hex>` for digest references.
    pub digest: Option<String>,
}

impl fmt::Display for ArtifactRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Splits and validates an `oci://` target.
// Module names are matched exactly: `X.STAR` is not a module.
#[allow(clippy::case_sensitive_file_extension_comparisons)]
pub fn parse_url(url: &str) -> Result<OciUrl, String> {
    let Some(rest) = url.strip_prefix("oci://") else {
        return Err(format!(
            "OCI load target must start with oci:// prefix, got {}",
            quote(url)
        ));
    };
    if rest.is_empty() {
        return Err(format!(
            "OCI load target {} missing file path after oci://",
            quote(url)
        ));
    }
    let wrap = |reason: &str| format!("parsing OCI load target {}: {reason}", quote(url));
    let (reference, file) = if let Some(at) = rest.find(DIGEST_MARKER) {
        let after = at + DIGEST_MARKER.len();
        match rest[after..].find('/') {
            Some(slash) if after + slash + 1 < rest.len() => {
                (&rest[..after + slash], &rest[after + slash + 1..])
            }
            _ => return Err(wrap("missing file path after digest")),
        }
    } else if let Some(colon) = rest.rfind(':') {
        match rest[colon..].find('/') {
            Some(slash) if colon + slash + 1 < rest.len() => {
                (&rest[..colon + slash], &rest[colon + slash + 1..])
            }
            _ => return Err(wrap("missing file path after tag")),
        }
    } else if rest.contains('/') && rest.ends_with(".star") {
        return Err(wrap("tag or digest required"));
    } else {
        return Err(wrap("missing file path"));
    };
    if !file.ends_with(".star") {
        return Err(format!(
            "OCI load target file {} must end with .star",
            quote(file)
        ));
    }
    Ok(OciUrl {
        url: url.to_owned(),
        artifact: parse_artifact_ref(reference)?,
        file: file.to_owned(),
    })
}

/// Validates the artifact part of a target: a tag reference, or a digest
/// reference when it contains `@`.
pub fn parse_artifact_ref(text: &str) -> Result<ArtifactRef, String> {
    if text.contains('@') {
        parse_digest_ref(text)
            .map_err(|e| format!("parsing OCI digest reference {}: {e}", quote(text)))
    } else {
        parse_tag_ref(text).map_err(|e| format!("parsing OCI tag reference {}: {e}", quote(text)))
    }
}

fn parse_tag_ref(text: &str) -> Result<ArtifactRef, String> {
    let (base, tag) = match text.rsplit_once(':') {
        Some((base, tag)) if !tag.contains('/') => (base, tag),
        _ => return Err("a tag is required (no implicit latest)".to_owned()),
    };
    check_tag(tag)?;
    let (registry, repository) = parse_repository(base)?;
    Ok(ArtifactRef {
        text: text.to_owned(),
        registry,
        repository,
        tag: tag.to_owned(),
        digest: None,
    })
}

fn parse_digest_ref(text: &str) -> Result<ArtifactRef, String> {
    let mut parts = text.split('@');
    let (Some(base), Some(digest), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err("a digest reference must contain exactly one '@'".to_owned());
    };
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return Err(format!("unsupported digest algorithm: {digest}"));
    };
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(format!(
            "digest {digest} must be sha256: followed by 64 lowercase hexadecimal digits"
        ));
    }
    // `repo:tag@sha256:...`: the tag is ignored, the digest is fetched.
    let base = match base.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') && check_tag(tag).is_ok() => repo,
        _ => base,
    };
    let (registry, repository) = parse_repository(base)?;
    Ok(ArtifactRef {
        text: text.to_owned(),
        registry,
        repository,
        tag: String::new(),
        digest: Some(digest.to_owned()),
    })
}

/// `<registry>/<repository>`, with an explicit registry.
fn parse_repository(name: &str) -> Result<(String, String), String> {
    let (registry, repository) = match name.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') => (first, rest),
        _ => {
            return Err(format!(
                "the registry must be given explicitly (a first path component with a '.' or a ':'), got {}",
                quote(name)
            ));
        }
    };
    let registry = check_registry(registry)?;
    check_repository(repository)?;
    if registry == DOCKER_HUB && !repository.contains('/') {
        return Err(format!(
            "Docker Hub repositories need their full path (library/{repository})"
        ));
    }
    Ok((registry, repository.to_owned()))
}

/// A URI authority `host[:port]`; `docker.io` becomes `index.docker.io`.
fn check_registry(registry: &str) -> Result<String, String> {
    let invalid = || format!("registry {} is not a valid host[:port]", quote(registry));
    let (host, port) = if let Some(bracketed) = registry.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').ok_or_else(invalid)?;
        if host.is_empty()
            || !host
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return Err(invalid());
        }
        match after.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if after.is_empty() => (host, None),
            None => return Err(invalid()),
        }
    } else {
        match registry.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (registry, None),
        }
    };
    if port.is_some_and(|p| !p.bytes().all(|b| b.is_ascii_digit())) {
        return Err(format!("registry {} has an invalid port", quote(registry)));
    }
    let bracketed = registry.starts_with('[');
    let host_ok = bracketed
        || host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b">-._~!$&'()*+,;=<\"".contains(&b) || b >= 0x80);
    if !host_ok {
        return Err(invalid());
    }
    Ok(if registry == "docker.io" {
        DOCKER_HUB.to_owned()
    } else {
        registry.to_owned()
    })
}

fn check_repository(repository: &str) -> Result<(), String> {
    if !(2..=255).contains(&repository.len()) {
        return Err(format!(
            "repository {} must be 2 to 255 characters long",
            quote(repository)
        ));
    }
    if !repository
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-./".contains(&b))
    {
        return Err(format!(
            "repository {} can only contain the characters a-z 0-9 _ - . /",
            quote(repository)
        ));
    }
    Ok(())
}

fn check_tag(tag: &str) -> Result<(), String> {
    if !(1..=127).contains(&tag.len()) {
        return Err(format!(
            "tag {} must be 1 to 127 characters long",
            quote(tag)
        ));
    }
    if !tag
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
    {
        return Err(format!(
            "tag {} can only contain the characters A-Z a-z 0-9 _ - .",
            quote(tag)
        ));
    }
    Ok(())
}

/// Checks a normalised default registry: `<registry>/validate` must be a
/// strict repository reference.
pub fn validate_default_registry(registry: &str) -> Result<(), String> {
    let invalid =
        |reason: String| format!("invalid default OCI registry {}: {reason}", quote(registry));
    let (host, path) = registry.split_once('/').unwrap_or((registry, ""));
    if !host.contains('.') && !host.contains(':') {
        return Err(invalid(format!(
            "{} is not a registry host (a registry host has a '.' or a ':')",
            quote(host)
        )));
    }
    let host = check_registry(host).map_err(invalid)?;
    if !path.is_empty() {
        check_repository(&format!("{path}/validate")).map_err(|_| {
            invalid(format!(
                "the path {} is not a valid repository prefix (a-z 0-9 _ - . /, at most 246 characters)",
                quote(path)
            ))
        })?;
    }
    if host == DOCKER_HUB && path.is_empty() {
        return Err(invalid(
            "Docker Hub needs a namespace (docker.io/<namespace>)".to_owned(),
        ));
    }
    Ok(())
}

/// A string in double quotes with Go-style escaping (JSON's for ASCII).
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_registry_with_a_port_is_split_from_the_tag() {
        // `localhost:5000` is the registry and `latest`, after the repository, the tag.
        let u = parse_url("oci://localhost:5000/mods:latest/m.star").unwrap();
        assert_eq!(u.artifact.registry, "localhost:5000");
        assert_eq!(u.artifact.repository, "mods");
        assert_eq!(u.artifact.tag, "latest");
        assert_eq!(u.file, "m.star");
        assert_eq!(u.artifact.text, "localhost:5000/mods:latest");
    }

    #[test]
    fn docker_hub_is_canonicalised_but_the_ref_keeps_its_spelling() {
        // `docker.io` becomes `index.docker.io`, while the artifact text keeps
        // `docker.io`; a Docker Hub repository needs a namespace.
        let u = parse_url("oci://docker.io/library/x:v1/a.star").unwrap();
        assert_eq!(u.artifact.registry, "index.docker.io");
        assert_eq!(u.artifact.repository, "library/x");
        assert_eq!(u.artifact.text, "docker.io/library/x:v1");
        let err = parse_url("oci://docker.io/x:v1/a.star").unwrap_err();
        assert!(err.contains("parsing OCI tag reference"), "{err}");
    }

    #[test]
    fn digest_references_need_a_full_sha256() {
        // A digest is `sha256:` and 64 lowercase hex digits; the artifact then has no
        // tag.
        let u = parse_url(&format!("oci://ghcr.io/acme/lib@sha256:{HEX}/x.star")).unwrap();
        assert_eq!(u.artifact.tag, "");
        assert_eq!(
            u.artifact.digest.as_deref(),
            Some(format!("sha256:{HEX}").as_str())
        );
        assert_eq!(u.artifact.text, format!("ghcr.io/acme/lib@sha256:{HEX}"));
        assert_eq!(u.file, "x.star");
        let err = parse_url("oci://ghcr.io/acme/lib@sha256:abc/x.star").unwrap_err();
        assert!(err.starts_with("parsing OCI digest reference"), "{err}");
        let err = parse_url(&format!(
            "oci://ghcr.io/acme/lib@sha256:{}/x.star",
            HEX.to_uppercase()
        ))
        .unwrap_err();
        assert!(err.contains("parsing OCI digest reference"), "{err}");
        // A tag before the digest is accepted and ignored.
        let u = parse_url(&format!("oci://ghcr.io/acme/lib:v1@sha256:{HEX}/x.star")).unwrap();
        assert_eq!(u.artifact.repository, "acme/lib");
        assert!(u.artifact.digest.is_some());
    }

    #[test]
    fn shapes_without_a_file_or_a_tag_are_rejected() {
        // No tag or digest, no file after them, no `oci://` prefix, or a file not
        // ending in `.star`.
        for (url, fragment) in [
            ("oci://ghcr.io/acme/lib/x.star", "tag or digest required"),
            ("oci://ghcr.io/acme/lib:v1", "missing file path after tag"),
            ("oci://ghcr.io/acme/lib:v1/", "missing file path after tag"),
            ("oci://ghcr.io/acme/lib", "missing file path"),
            (
                &format!("oci://ghcr.io/acme/lib@sha256:{HEX}"),
                "missing file path after digest",
            ),
            ("oci://", "missing file path after oci://"),
            (
                "ghcr.io/acme/lib:v1/x.star",
                "must start with oci:// prefix",
            ),
            (
                "oci://ghcr.io/acme/lib:v1/readme.txt",
                "must end with .star",
            ),
        ] {
            let err = parse_url(url).unwrap_err();
            assert!(err.contains(fragment), "{url}: {err}");
        }
        // A port mistaken for a tag fails reference validation.
        let err = parse_url("oci://localhost:5000/repo/x.star").unwrap_err();
        assert!(err.starts_with("parsing OCI tag reference"), "{err}");
    }

    #[test]
    fn nested_files_keep_their_path() {
        let u = parse_url("oci://ghcr.io/acme/p:v2/apps/v1.star").unwrap();
        assert_eq!(
            (
                u.artifact.registry.as_str(),
                u.artifact.repository.as_str(),
                u.artifact.tag.as_str(),
                u.file.as_str()
            ),
            ("ghcr.io", "acme/p", "v2", "apps/v1.star")
        );
        assert_eq!(u.artifact.text, "ghcr.io/acme/p:v2");
    }

    #[test]
    fn references_are_validated_strictly() {
        for bad in [
            "oci://ghcr.io/Acme/lib:v1/x.star",
            "oci://acme/lib:v1/x.star",
            "oci://ghcr.io/a:v1/x.star",
            "oci://ghcr.io/acme/lib:bad!tag/x.star",
            "oci://gh cr.io/acme/lib:v1/x.star",
            "oci://ghcr.io:port/acme/lib:v1/x.star",
            "oci://user@ghcr.io/acme/lib:v1/x.star",
        ] {
            let err = parse_url(bad).unwrap_err();
            assert!(err.contains("parsing OCI"), "{bad}: {err}");
        }
        assert!(
            parse_url(&format!(
                "oci://ghcr.io/acme/lib:{}/x.star",
                "t".repeat(127)
            ))
            .is_ok()
        );
        assert!(
            parse_url(&format!(
                "oci://ghcr.io/acme/lib:{}/x.star",
                "t".repeat(128)
            ))
            .is_err()
        );
        assert!(parse_url("oci://[::1]:5000/mods:v1/x.star").is_ok());
    }

    #[test]
    fn default_registries_are_validated() {
        // A default registry is a host with a '.' or a ':', optionally followed by a
        // lowercase repository prefix; Docker Hub needs one. Normalising it is the
        // input's (input.rs).
        for good in ["ghcr.io/acme", "ghcr.io", "localhost:5050"] {
            assert!(validate_default_registry(good).is_ok(), "{good}");
        }
        for bad in [
            "acme",
            "ghcr.io/Acme",
            "not a registry!",
            "docker.io",
            "!!!invalid!!!",
        ] {
            let err = validate_default_registry(bad).unwrap_err();
            assert!(
                err.starts_with("invalid default OCI registry"),
                "{bad}: {err}"
            );
        }
    }
}
