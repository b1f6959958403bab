//! `function-starlark push DIR REF`: publishes the `.star` files under a
//! directory (`gen`'s output, a library of modules) as the OCI module
//! package the loader pulls (docs/modules.md, "Publishing modules to a
//! registry"): one bundle layer, a tar of the files under their paths from
//! `DIR` (`s3.aws.upbound.io/v1beta1.star`), with the modules' artifact
//! type. Credentials come from the Docker config (`$DOCKER_CONFIG` or
//! `~/.docker/config.json`), as the loader reads them; registries on
//! loopback, and any with `--insecure`, are spoken to over plain HTTP.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::{Client, Reference};

use crate::loader::oci::credentials::{DockerConfig, host_config_path};
use crate::loader::oci::extract::{ARTIFACT_TYPE, BUNDLE_LAYER_TYPE, MAX_FILE_BYTES, MAX_FILES};

/// The config an OCI 1.1 artifact carries when it has none.
const EMPTY_CONFIG_TYPE: &str = "application/vnd.oci.empty.v1+json";

/// `push`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct PushArgs {
    /// The directory whose `.star` files (not `*_test.star`) are published.
    pub dir: PathBuf,
    /// Where to: `registry/repository:tag`, with or without `oci://`.
    pub reference: String,
    /// Speak plain HTTP to the registry (registries on loopback always are).
    #[arg(long)]
    pub insecure: bool,
}

/// The files to publish, by their path from `dir`, sorted.
fn files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> Result<(), String> {
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                walk(root, &path, out)?;
                continue;
            }
            let name = path
                .strip_prefix(root)
                .map_err(|e| e.to_string())?
                .to_string_lossy()
                .replace('\\', "/");
            if !crate::loader::is_module_file(&name) {
                continue;
            }
            let bytes =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if bytes.len() as u64 > MAX_FILE_BYTES {
                return Err(format!(
                    "{name} is {} bytes; the loader takes files of at most {MAX_FILE_BYTES}: split it",
                    bytes.len()
                ));
            }
            out.push((name, bytes));
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    if out.is_empty() {
        return Err(format!("no .star file under {}", dir.display()));
    }
    if out.len() > MAX_FILES {
        return Err(format!(
            "{} .star files under {}; the loader takes at most {MAX_FILES} per package",
            out.len(),
            dir.display()
        ));
    }
    Ok(out)
}

/// One reproducible tar of `files`: fixed owner, mode and time.
fn bundle(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, String> {
    let mut tar = tar::Builder::new(Vec::new());
    for (name, bytes) in files {
        let mut header = tar::Header::new_ustar();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, name, bytes.as_slice())
            .map_err(|e| format!("cannot pack {name}: {e}"))?;
    }
    tar.into_inner().map_err(|e| e.to_string())
}

/// Whether a registry is on this machine.
fn loopback(registry: &str) -> bool {
    let host = registry.rsplit_once(':').map_or(registry, |(h, _)| h);
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn push(args: &PushArgs) -> Result<String, String> {
    let text = args.reference.trim_start_matches("oci://");
    let reference: Reference = text.parse().map_err(|e| {
        format!(
            "{:?} is not an OCI reference (registry/repository:tag): {e}",
            args.reference
        )
    })?;
    if reference.tag().is_none() && reference.digest().is_none() {
        return Err(format!("{:?} names no tag: add one (:v1)", args.reference));
    }
    let files = files(&args.dir)?;
    let layer = ImageLayer::new(bundle(&files)?, BUNDLE_LAYER_TYPE.to_owned(), None);
    let config = Config::new(b"{}".to_vec(), EMPTY_CONFIG_TYPE.to_owned(), None);
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some("application/vnd.oci.image.manifest.v1+json".to_owned()),
        config: OciDescriptor {
            media_type: EMPTY_CONFIG_TYPE.to_owned(),
            digest: config.sha256_digest(),
            size: 2,
            ..OciDescriptor::default()
        },
        layers: vec![OciDescriptor {
            media_type: BUNDLE_LAYER_TYPE.to_owned(),
            digest: layer.sha256_digest(),
            size: i64::try_from(layer.data.len()).unwrap_or(i64::MAX),
            ..OciDescriptor::default()
        }],
        artifact_type: Some(ARTIFACT_TYPE.to_owned()),
        ..OciImageManifest::default()
    };
    let protocol = if args.insecure || loopback(reference.registry()) {
        ClientProtocol::Http
    } else {
        ClientProtocol::Https
    };
    let auth = match host_config_path(|k| std::env::var(k).ok()) {
        Some(path) => DockerConfig::read(&path)
            .await
            .and_then(|c| c.lookup(reference.registry(), reference.repository())),
        None => None,
    }
    .unwrap_or(oci_client::secrets::RegistryAuth::Anonymous);
    let client = Client::new(ClientConfig {
        protocol,
        ..ClientConfig::default()
    });
    client
        .push(&reference, &[layer], config, &auth, Some(manifest))
        .await
        .map_err(|e| format!("cannot push to {text}: {e}"))?;
    Ok(format!("pushed {} modules to oci://{text}", files.len()))
}

/// Publishes the directory and says what it pushed.
pub fn main(args: &PushArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("push: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(push(args)) {
        Ok(said) => {
            println!("{said}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("push: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_holds_every_module_under_its_path_and_no_test() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("apps")).unwrap();
        std::fs::write(dir.path().join("apps/v1.star"), "X = 1\n").unwrap();
        std::fs::write(dir.path().join("lib.star"), "Y = 2\n").unwrap();
        std::fs::write(dir.path().join("lib_test.star"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        let files = files(dir.path()).unwrap();
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["apps/v1.star", "lib.star"]);
        let tar = bundle(&files).unwrap();
        assert_eq!(tar, bundle(&files).unwrap(), "reproducible");
        let unpacked = crate::loader::oci::extract::bundle_files(&tar, "test").unwrap();
        assert_eq!(
            unpacked.get("apps/v1.star").map(String::as_str),
            Some("X = 1\n")
        );
    }

    #[test]
    fn registries_on_this_machine_are_spoken_to_over_http() {
        assert!(loopback("127.0.0.1:5000") && loopback("localhost:5000") && loopback("localhost"));
        assert!(!loopback("registry.example.com"));
    }
}
