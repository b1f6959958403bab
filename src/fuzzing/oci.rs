//! OCI load targets (`oci://registry/repository:tag/file`, or `@sha256:`)
//! and artifact references.
//!
//! A target that parses prints back (from its artifact's text and its file)
//! to a target that parses the same; an artifact's fields print back to a
//! reference with the same fields.

use crate::loader::oci::reference::{
    ArtifactRef, parse_artifact_ref, parse_url, validate_default_registry,
};

/// The target's body.
pub fn oci_reference(data: &[u8]) {
    let Some(text) = super::text(data) else {
        return;
    };
    let _ = validate_default_registry(text);
    if let Ok(artifact) = parse_artifact_ref(text) {
        prints_back(&artifact);
    }
    let target = if text.starts_with("oci://") {
        text.to_owned()
    } else {
        format!("oci://{text}")
    };
    let Ok(url) = parse_url(&target) else {
        return;
    };
    let printed = format!("oci://{}/{}", url.artifact.text, url.file);
    assert_eq!(
        parse_url(&printed).as_ref(),
        Ok(&url),
        "{target:?} printed back as {printed:?}"
    );
    prints_back(&url.artifact);
}

/// `artifact`'s fields, printed as a reference, parse to the same fields.
fn prints_back(artifact: &ArtifactRef) {
    assert_eq!(
        parse_artifact_ref(&artifact.text).as_ref(),
        Ok(artifact),
        "{:?} parses differently the second time",
        artifact.text
    );
    let printed = match &artifact.digest {
        Some(digest) => format!("{}/{}@{digest}", artifact.registry, artifact.repository),
        None => format!(
            "{}/{}:{}",
            artifact.registry, artifact.repository, artifact.tag
        ),
    };
    let again = parse_artifact_ref(&printed)
        .unwrap_or_else(|e| panic!("{artifact:?} printed as {printed:?} does not parse: {e}"));
    assert_eq!(
        (
            &again.registry,
            &again.repository,
            &again.tag,
            &again.digest
        ),
        (
            &artifact.registry,
            &artifact.repository,
            &artifact.tag,
            &artifact.digest
        ),
        "{artifact:?} printed as {printed:?}"
    );
}
