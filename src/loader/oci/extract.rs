//! What a module artifact must look like, and how its files come out of it
//! (docs/modules.md, "Publishing modules to a registry"): the artifact
//! type, then either one tar layer (bundle mode) or one layer per file named
//! by its title annotation (per-file mode), with the path, count and size
//! limits.

use std::collections::BTreeMap;
use std::io::Read;

use oci_client::manifest::{OciDescriptor, OciImageManifest};

use super::reference::quote;

/// The artifact type of a module artifact (manifest `artifactType`, or
/// the config media type of older publishing tools).
pub const ARTIFACT_TYPE: &str = "application/vnd.fn-starlark.modules.v1+tar";

/// The media type of the one layer of a bundle.
pub const BUNDLE_LAYER_TYPE: &str = "application/vnd.fn-starlark.layer.v1.tar";

/// The layer annotation that names a file in per-file mode.
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// At most this many `.star` files per artifact.
pub const MAX_FILES: usize = 1000;

/// At most this many bytes per `.star` file (exactly this many is fine).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The largest layer blob downloaded, compressed or not.
pub const MAX_LAYER_BYTES: u64 = 256 << 20;

/// The most bytes a bundle may decompress to; bounds the work a
/// compression bomb can cause.
pub const MAX_UNPACKED_BYTES: u64 = 2 << 30;

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

/// The files of an artifact, by normalised path.
pub type Files = BTreeMap<String, String>;

/// How an artifact's layers hold its files.
#[derive(Debug, Clone)]
pub enum Layout {
    /// One tar layer.
    Bundle(OciDescriptor),
    /// One layer per `.star` file, by file name, in manifest order.
    PerFile(Vec<(String, OciDescriptor)>),
}

/// Checks the manifest of the artifact `reference` and says which layers
/// to download.
pub fn layout(manifest: &OciImageManifest, reference: &str) -> Result<Layout, String> {
    let artifact_type = manifest
        .artifact_type
        .as_deref()
        .filter(|t| !t.is_empty())
        .unwrap_or(&manifest.config.media_type);
    if artifact_type != ARTIFACT_TYPE {
        return Err(format!(
            "unexpected artifact type {} for {reference}; expected {} for Starlark module bundles",
            quote(artifact_type),
            quote(ARTIFACT_TYPE)
        ));
    }
    if manifest.layers.is_empty() {
        return Err(format!("OCI artifact {reference} has no layers"));
    }
    if let [layer] = manifest.layers.as_slice()
        && layer.media_type == BUNDLE_LAYER_TYPE
    {
        return Ok(Layout::Bundle(layer.clone()));
    }
    let mut files: Vec<(String, OciDescriptor)> = Vec::new();
    for layer in &manifest.layers {
        let distinct = files
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if distinct >= MAX_FILES {
            return Err(too_many(reference));
        }
        let Some(title) = layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(TITLE_ANNOTATION))
        else {
            continue;
        };
        if title.contains("..") {
            return Err(format!(
                "path traversal detected in layer title {} from {reference}",
                quote(title)
            ));
        }
        let name = clean(title);
        if !is_star(&name) {
            continue;
        }
        // A later layer with the same name replaces an earlier one.
        files.retain(|(n, _)| *n != name);
        files.push((name, layer.clone()));
    }
    Ok(Layout::PerFile(files))
}

/// The content of one per-file layer: decompressed when it carries gzip or
/// zstd magic, at most [`MAX_FILE_BYTES`].
pub fn file_content(name: &str, blob: &[u8], reference: &str) -> Result<String, String> {
    let mut out = Vec::new();
    let read = decompressed(blob)
        .and_then(|r| r.take(MAX_FILE_BYTES + 1).read_to_end(&mut out))
        .map_err(|e| format!("reading layer {name} for {reference}: {e}"));
    read?;
    if out.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(name, reference));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The `.star` files of a bundle layer.
pub fn bundle_files(blob: &[u8], reference: &str) -> Result<Files, String> {
    let tar_error = |e: std::io::Error| format!("reading tar from {reference}: {e}");
    let reader = decompressed(blob).map_err(tar_error)?;
    let mut archive = tar::Archive::new(reader.take(MAX_UNPACKED_BYTES));
    let mut files = Files::new();
    for entry in archive.entries().map_err(tar_error)? {
        let mut entry = entry.map_err(tar_error)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if raw.contains("..") {
            return Err(format!(
                "path traversal detected in tar entry {} from {reference}",
                quote(&raw)
            ));
        }
        let cleaned = clean(&raw);
        let name = cleaned.trim_start_matches('/');
        if !is_star(name) {
            continue;
        }
        if !files.contains_key(name) && files.len() >= MAX_FILES {
            return Err(too_many(reference));
        }
        if entry.size() > MAX_FILE_BYTES {
            return Err(too_large(name, reference));
        }
        let mut content = Vec::new();
        (&mut entry)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut content)
            .map_err(tar_error)?;
        if content.len() as u64 > MAX_FILE_BYTES {
            return Err(too_large(name, reference));
        }
        files.insert(
            name.to_owned(),
            String::from_utf8_lossy(&content).into_owned(),
        );
    }
    Ok(files)
}

fn too_many(reference: &str) -> String {
    format!("OCI artifact {reference} exceeds maximum file count ({MAX_FILES})")
}

fn too_large(name: &str, reference: &str) -> String {
    format!("file {name} in {reference} exceeds maximum size ({MAX_FILE_BYTES} bytes)")
}

/// A reader of `blob`, decompressing it when it starts with gzip or zstd magic.
fn decompressed(blob: &[u8]) -> std::io::Result<Box<dyn Read + '_>> {
    if blob.starts_with(GZIP_MAGIC) {
        Ok(Box::new(flate2::read::MultiGzDecoder::new(blob)))
    } else if blob.starts_with(ZSTD_MAGIC) {
        let decoder = ruzstd::decoding::StreamingDecoder::new(blob)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
        Ok(Box::new(decoder))
    } else {
        Ok(Box::new(blob))
    }
}

/// True when the last path segment ends with `.star` (case matters, as
/// for every module name).
#[allow(clippy::case_sensitive_file_extension_comparisons)]
fn is_star(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|last| last.ends_with(".star"))
}

/// Lexical path cleaning, as Go's `path.Clean` does for paths without
/// `..`: empty and `.` segments are dropped; a leading `/` is kept.
fn clean(path: &str) -> String {
    let segments: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let joined = segments.join("/");
    if path.starts_with('/') {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn manifest(
        artifact_type: Option<&str>,
        config: &str,
        layers: Vec<OciDescriptor>,
    ) -> OciImageManifest {
        OciImageManifest {
            artifact_type: artifact_type.map(str::to_owned),
            config: OciDescriptor {
                media_type: config.to_owned(),
                ..OciDescriptor::default()
            },
            layers,
            ..OciImageManifest::default()
        }
    }

    fn layer(media_type: &str, title: Option<&str>) -> OciDescriptor {
        OciDescriptor {
            media_type: media_type.to_owned(),
            annotations: title
                .map(|t| BTreeMap::from([(TITLE_ANNOTATION.to_owned(), t.to_owned())])),
            ..OciDescriptor::default()
        }
    }

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, content) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            // Names are written raw so that `..` can be tested.
            let bytes = name.as_bytes();
            header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            header.set_cksum();
            builder.append(&header, *content).unwrap();
        }
        builder.into_inner().unwrap()
    }

    #[test]
    fn the_artifact_type_comes_from_the_manifest_or_the_config() {
        let l = || vec![layer(BUNDLE_LAYER_TYPE, None)];
        assert!(matches!(
            layout(
                &manifest(
                    Some(ARTIFACT_TYPE),
                    "application/vnd.oci.empty.v1+json",
                    l()
                ),
                "r"
            ),
            Ok(Layout::Bundle(_))
        ));
        assert!(matches!(
            layout(&manifest(None, ARTIFACT_TYPE, l()), "r"),
            Ok(Layout::Bundle(_))
        ));
        assert!(matches!(
            layout(&manifest(Some(""), ARTIFACT_TYPE, l()), "r"),
            Ok(Layout::Bundle(_))
        ));
        let err = layout(
            &manifest(Some("application/other"), ARTIFACT_TYPE, l()),
            "r:v1",
        )
        .unwrap_err();
        assert_eq!(
            err,
            "unexpected artifact type \"application/other\" for r:v1; expected \"application/vnd.fn-starlark.modules.v1+tar\" for Starlark module bundles"
        );
        let err = layout(&manifest(Some(ARTIFACT_TYPE), "x", vec![]), "r:v1").unwrap_err();
        assert_eq!(err, "OCI artifact r:v1 has no layers");
    }

    #[test]
    fn per_file_layers_are_named_by_their_titles() {
        let m = manifest(
            Some(ARTIFACT_TYPE),
            "x",
            vec![
                layer("text/plain", Some("a.star")),
                layer("text/plain", None),
                layer("text/plain", Some("README.md")),
                layer("text/plain", Some("./lib//b.star")),
                layer("text/plain", Some("/abs.star")),
            ],
        );
        let Ok(Layout::PerFile(files)) = layout(&m, "r") else {
            panic!()
        };
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.star", "lib/b.star", "/abs.star"]);
        let m = manifest(
            Some(ARTIFACT_TYPE),
            "x",
            vec![layer("t", Some("x/../y.star"))],
        );
        assert!(
            layout(&m, "r")
                .unwrap_err()
                .contains("path traversal detected in layer title")
        );
        let many: Vec<OciDescriptor> = (0..=MAX_FILES)
            .map(|i| layer("t", Some(&format!("f{i}.star"))))
            .collect();
        let err = layout(&manifest(Some(ARTIFACT_TYPE), "x", many), "r").unwrap_err();
        assert_eq!(err, "OCI artifact r exceeds maximum file count (1000)");
    }

    #[test]
    fn bundles_keep_star_files_with_their_paths() {
        let blob = tar_of(&[
            ("a.star", b"a = 1\n"),
            ("./apps//v1.star", b"v = 1\n"),
            ("/root.star", b"r = 1\n"),
            ("README.md", b"x"),
        ]);
        let files = bundle_files(&blob, "r").unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["a.star", "apps/v1.star", "root.star"]
        );
        for compressed in [
            {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                std::io::Write::write_all(&mut e, &blob).unwrap();
                e.finish().unwrap()
            },
            ruzstd::encoding::compress_to_vec(
                blob.as_slice(),
                ruzstd::encoding::CompressionLevel::Fastest,
            ),
        ] {
            assert_eq!(bundle_files(&compressed, "r").unwrap(), files);
        }
    }

    #[test]
    fn bundles_enforce_paths_and_limits() {
        for name in ["../../etc/passwd.star", "apps/../../x.star", "a..b.star"] {
            let err = bundle_files(&tar_of(&[(name, b"x")]), "r").unwrap_err();
            assert!(
                err.starts_with("path traversal detected in tar entry"),
                "{name}: {err}"
            );
        }
        let exact = vec![b'#'; 1 << 20];
        assert!(bundle_files(&tar_of(&[("big.star", &exact)]), "r").is_ok());
        let over = vec![b'#'; (1 << 20) + 1];
        let err = bundle_files(&tar_of(&[("big.star", &over)]), "r").unwrap_err();
        assert_eq!(
            err,
            "file big.star in r exceeds maximum size (1048576 bytes)"
        );
        let names: Vec<String> = (0..=MAX_FILES).map(|i| format!("f{i}.star")).collect();
        let entries: Vec<(&str, &[u8])> = names
            .iter()
            .map(|n| (n.as_str(), b"x".as_slice()))
            .collect();
        let err = bundle_files(&tar_of(&entries), "r").unwrap_err();
        assert!(err.contains("maximum file count (1000)"), "{err}");
        assert_eq!(
            bundle_files(&tar_of(&entries[..MAX_FILES]), "r")
                .unwrap()
                .len(),
            MAX_FILES
        );
    }

    #[test]
    fn per_file_contents_are_decompressed_and_limited() {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut e, b"x = 1\n").unwrap();
        assert_eq!(
            file_content("x.star", &e.finish().unwrap(), "r").unwrap(),
            "x = 1\n"
        );
        assert_eq!(file_content("x.star", b"y = 2\n", "r").unwrap(), "y = 2\n");
        let err = file_content("x.star", &vec![b' '; (1 << 20) + 1], "r").unwrap_err();
        assert!(err.contains("exceeds maximum size"), "{err}");
    }
}
