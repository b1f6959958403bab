//! `function-starlark gen crd|xrd FILE|DIR -o DIR`: a Starlark module of
//! typed `schema()` constructors for each kind (and version) the CRDs or
//! XRDs declare, to `load()` from scripts so that the editor completes
//! their fields and the run validates them.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

mod module;

/// What `gen` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Source {
    /// CustomResourceDefinitions: the kinds a Composition composes.
    Crd,
    /// CompositeResourceDefinitions: the XRs themselves.
    Xrd,
}

/// `gen`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct GenArgs {
    /// `crd` or `xrd`.
    #[arg(value_enum)]
    pub source: Source,
    /// YAML files, or directories of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The directory the modules are written to (made if missing).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
}

impl Source {
    fn kind(self) -> &'static str {
        match self {
            Source::Crd => "CustomResourceDefinition",
            Source::Xrd => "CompositeResourceDefinition",
        }
    }

    fn command(self) -> &'static str {
        match self {
            Source::Crd => "crd",
            Source::Xrd => "xrd",
        }
    }
}

/// `Bucket` -> `bucket`, `XAppBackend` -> `x_app_backend`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
        let prev_lower =
            i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
        if c.is_ascii_uppercase() && i > 0 && (prev_lower || next_lower) {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// Every `(file name, module text)` of one definition object.
fn modules(object: &Value, source: Source, from: &str) -> Vec<(String, String)> {
    let spec = object.get("spec").cloned().unwrap_or_default();
    let text = |p: &str| {
        spec.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (group, kind) = (text("/group"), text("/names/kind"));
    let versions: Vec<&Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.pointer("/schema/openAPIV3Schema").is_some())
        .collect();
    versions
        .iter()
        .filter_map(|v| {
            let version = v.get("name").and_then(Value::as_str)?;
            let schema = v.pointer("/schema/openAPIV3Schema")?;
            let file = if versions.len() == 1 {
                format!("{}.star", snake(&kind))
            } else {
                format!("{}_{version}.star", snake(&kind))
            };
            let text = module::generate(&module::Definition {
                api_version: format!("{group}/{version}"),
                kind: kind.clone(),
                schema,
                source: from.to_owned(),
                command: source.command(),
            });
            Some((file, text))
        })
        .collect()
}

fn run(args: &GenArgs) -> Result<Vec<PathBuf>, String> {
    let files = crate::render::load::files_under(&args.paths, &|name| {
        let lower = name.to_ascii_lowercase();
        [".yaml", ".yml"].iter().any(|e| lower.ends_with(e))
    });
    let mut written = Vec::new();
    for file in &files {
        let objects = crate::render::load::objects(file).map_err(|e| e.to_string())?;
        let from = file
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        for object in objects
            .iter()
            .filter(|o| o.get("kind").and_then(Value::as_str) == Some(args.source.kind()))
        {
            for (name, text) in modules(object, args.source, &from) {
                std::fs::create_dir_all(&args.output)
                    .map_err(|e| format!("cannot make {}: {e}", args.output.display()))?;
                let path = args.output.join(&name);
                if written.contains(&path) {
                    return Err(format!(
                        "two definitions give {name}: generate them into different directories"
                    ));
                }
                std::fs::write(&path, text)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                written.push(path);
            }
        }
    }
    if written.is_empty() {
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
    Ok(written)
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
    use super::snake;

    #[test]
    fn file_names_are_snake_case() {
        assert_eq!(snake("Bucket"), "bucket");
        assert_eq!(snake("XAppBackend"), "x_app_backend");
        assert_eq!(snake("BucketPolicy"), "bucket_policy");
        assert_eq!(snake("IAMMember"), "iam_member");
    }
}
