//! `function-starlark gen crd|xrd|openapi PATH... -o DIR`: typed
//! `schema()` constructors for every kind (and version) the CRDs or XRDs
//! declare, or every object type of Kubernetes OpenAPI documents, one
//! module per API group and version: `DIR/<group>/<version>.star`
//! (`core/v1.star` for Kubernetes' own group). A script names the module
//! from the kind's `apiVersion`. A module that uses another group's types
//! (Kubernetes' Deployment uses core's PodSpec) holds its own copy of
//! them, or, with `--package REF`, loads them from the OCI package `REF`
//! the modules are published as (`function-starlark push DIR REF`).
//! Loaded, the constructors validate the objects scripts build, and the
//! editor and `check` know their fields.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

mod managed;
mod module;
mod read;

/// What `gen` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Source {
    /// CustomResourceDefinitions: the kinds a Composition composes.
    Crd,
    /// CompositeResourceDefinitions: the XRs themselves.
    Xrd,
    /// Kubernetes OpenAPI documents (JSON, OpenAPI 2 or 3): Kubernetes'
    /// own kinds, from `k8s.io/kubernetes`'s `api/openapi-spec` or a
    /// cluster's `/openapi/v2` and `/openapi/v3/...`.
    Openapi,
}

/// `gen`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct GenArgs {
    /// `crd`, `xrd` or `openapi`.
    #[arg(value_enum)]
    pub source: Source,
    /// YAML (or, for `openapi`, JSON) files, or directories of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The directory the modules are written to (made if missing).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// The OCI package the modules will be published as
    /// (`oci://registry/repo:tag`, or a short form of the default
    /// registry, `repo:tag`): modules load each other's types from it
    /// instead of holding copies.
    #[arg(long, value_name = "REF")]
    pub package: Option<String>,
}

impl Source {
    fn kind(self) -> &'static str {
        match self {
            Source::Crd => "CustomResourceDefinition",
            Source::Xrd => "CompositeResourceDefinition",
            Source::Openapi => "OpenAPI document",
        }
    }

    fn command(self) -> &'static str {
        match self {
            Source::Crd => "crd",
            Source::Xrd => "xrd",
            Source::Openapi => "openapi",
        }
    }
}

/// Everything the files under `args.paths` define.
fn read_all(args: &GenArgs) -> Result<read::Read, String> {
    let json = args.source == Source::Openapi;
    let files = crate::render::load::files_under(&args.paths, &|name| {
        let lower = name.to_ascii_lowercase();
        let wanted: &[&str] = if json { &[".json"] } else { &[".yaml", ".yml"] };
        wanted.iter().any(|e| lower.ends_with(e))
    });
    let mut all = read::Read::default();
    for file in &files {
        if json {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let document: Value = serde_json::from_str(&text)
                .map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
            all.openapi(&document, file)?;
        } else {
            let objects = crate::render::load::objects(file).map_err(|e| e.to_string())?;
            all.definitions(&objects, args.source, file)?;
        }
    }
    Ok(all)
}

fn run(args: &GenArgs) -> Result<Vec<PathBuf>, String> {
    if let Some(package) = &args.package {
        check_package(package)?;
    }
    let all = read_all(args)?;
    let mut files: Vec<&str> = all.types.values().map(|d| d.file.as_str()).collect();
    files.sort_unstable();
    files.dedup();
    if files.is_empty() {
        return Err(format!(
            "no {} with a schema in {}: give the files or directories that hold them",
            args.source.kind(),
            args.paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let options = module::Options {
        package: args.package.as_deref(),
        command: args.source.command(),
    };
    let mut written = Vec::new();
    for file in files {
        let path = args.output.join(file);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        }
        std::fs::write(&path, module::generate(file, &all, &options))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// `--package` names where the modules will be: an `oci://` artifact or a
/// short form of the default registry, with a tag or digest.
fn check_package(package: &str) -> Result<(), String> {
    let url = if package.starts_with("oci://") {
        format!("{}/x.star", package.trim_end_matches('/'))
    } else {
        format!(
            "oci://example.invalid/{}/x.star",
            package.trim_end_matches('/')
        )
    };
    crate::loader::oci::reference::parse_url(&url)
        .map(|_| ())
        .map_err(|e| {
            format!("--package {package:?} is not an OCI package with a tag or digest (oci://registry/repo:tag, or repo:tag of the default registry): {e}")
        })
}

/// Writes the modules and names each on stdout.
pub fn main(args: &GenArgs) -> ExitCode {
    match run(args) {
        Ok(written) => {
            for path in written {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen {}: {e}", args.source.command());
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check_package;

    #[test]
    fn a_package_must_be_an_oci_reference_with_a_tag() {
        assert!(check_package("oci://registry.example.com/acme/schemas:v1").is_ok());
        assert!(check_package("schemas:v1").is_ok());
        assert!(check_package("oci://registry.example.com/acme/schemas").is_err());
    }
}
