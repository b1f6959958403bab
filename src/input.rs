//! The `StarlarkInput` of a pipeline step: decoded strictly, then checked
//! once into [`Checked`], which the rest of the function trusts.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

use pbjson_types::Struct;
use serde::Deserialize;

use crate::error::Error;

pub mod cache;

/// The file name inline scripts carry in errors and metrics.
pub const INLINE_FILENAME: &str = "composition.star";

/// The key read from a mounted script directory when none is given.
pub const DEFAULT_KEY: &str = "main.star";

/// The input as written in the Composition (`starlark.fn.crossplane.io/v1alpha1`).
/// `apiVersion` and `kind` are accepted but not checked, as the reference does.
#[derive(Debug, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StarlarkInput {
    /// Usually `starlark.fn.crossplane.io/v1alpha1`; not checked.
    pub api_version: Option<String>,
    /// Usually `StarlarkInput`; not checked.
    pub kind: Option<String>,
    /// Ordinary object metadata; ignored.
    pub metadata: Option<serde_json::Value>,
    /// What to run and how.
    pub spec: Option<Spec>,
}

/// `spec` of the input.
#[derive(Debug, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    /// The inline script.
    pub source: Option<String>,
    /// A script mounted from a ConfigMap under the scripts directory.
    pub script_config_ref: Option<ScriptConfigRef>,
    /// Inline modules by name, for `load()`.
    pub modules: Option<BTreeMap<String, String>>,
    /// Extra module search directories.
    pub module_paths: Option<Vec<String>>,
    /// Secret holding registry credentials (module system).
    pub docker_config_secret: Option<String>,
    /// Request credential holding a Docker config (module system).
    pub docker_config_credential: Option<String>,
    /// Registry for short OCI module references.
    pub oci_default_registry: Option<String>,
    /// Registries reached over plain HTTP.
    pub oci_insecure_registries: Option<Vec<String>>,
    /// `v1` selects the Crossplane 1.x Usage API; anything else v2.
    #[serde(rename = "usageAPIVersion")]
    pub usage_api_version: Option<String>,
    /// Response TTL while creation sequencing defers resources (Go duration).
    #[serde(rename = "sequencingTTL")]
    pub sequencing_ttl: Option<String>,
    /// Validate every composed resource against the schema of its kind,
    /// which the function requires from Crossplane (the required-schemas
    /// capability), and report each problem as a Warning result. Not in the
    /// Go implementation.
    #[serde(rename = "validateSchemas")]
    pub validate_schemas: Option<bool>,
}

/// Where a mounted script lives: `<scripts dir>/<name>/<key>`.
#[derive(Debug, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptConfigRef {
    /// The directory: the ConfigMap's mount name.
    pub name: Option<String>,
    /// The file in it; `main.star` when empty.
    pub key: Option<String>,
}

/// Which Usage API generated Usage resources use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageApi {
    /// `apiextensions.crossplane.io/v1beta1` (Crossplane 1.x).
    V1,
    /// `protection.crossplane.io/v1beta1` (Crossplane 2.x), the default.
    V2,
}

impl UsageApi {
    /// The Usage resources' apiVersion.
    pub fn api_version(self) -> &'static str {
        match self {
            UsageApi::V1 => "apiextensions.crossplane.io/v1beta1",
            UsageApi::V2 => "protection.crossplane.io/v1beta1",
        }
    }
}

/// Reads an environment variable.
pub type EnvLookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Process settings the input is checked against.
pub struct Settings {
    /// Where ConfigMaps with scripts are mounted (`/scripts`).
    pub scripts_dir: PathBuf,
    /// Reads an environment variable. It must answer the same for the
    /// life of the function: checked inputs are kept (`input::cache`).
    pub env: EnvLookup,
}

/// The environment variables the input falls back to.
const ENV_FALLBACKS: [&str; 4] = [
    "STARLARK_USAGE_API_VERSION",
    "STARLARK_OCI_DEFAULT_REGISTRY",
    "STARLARK_OCI_INSECURE_REGISTRIES",
    "STARLARK_DOCKER_CONFIG_SECRET",
];

impl Settings {
    /// Settings for a real process: `/scripts` and the process environment.
    /// The reference reads the variables on every request; a process's
    /// environment only changes if the process changes it, so this reads
    /// them once, here (a lookup scanned the whole environment per request
    /// and variable).
    pub fn from_process(scripts_dir: PathBuf) -> Self {
        let known: HashMap<&'static str, Option<String>> = ENV_FALLBACKS
            .iter()
            .map(|&name| (name, std::env::var(name).ok()))
            .collect();
        Settings {
            scripts_dir,
            env: Box::new(move |name| match known.get(name) {
                Some(value) => value.clone(),
                None => std::env::var(name).ok(),
            }),
        }
    }

    /// A non-empty environment variable.
    fn env(&self, name: &str) -> Option<String> {
        (self.env)(name).filter(|v| !v.is_empty())
    }
}

/// The script to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// `composition.star` for inline scripts, else the key: shown in errors
    /// and used as the `script` metric label.
    pub filename: String,
    /// The source text.
    pub source: String,
}

/// A decoded input whose script has been chosen and read.
#[derive(Debug, Clone)]
pub struct Checked {
    /// What to run.
    pub script: Script,
    /// The directory of `scriptConfigRef`, first module search path.
    pub script_dir: Option<PathBuf>,
    /// Inline modules.
    pub modules: BTreeMap<String, String>,
    /// Extra module search directories.
    pub module_paths: Vec<String>,
    /// The Usage flavour.
    pub usage_api: UsageApi,
    /// `spec.sequencingTTL` as given; parsed only when dependencies exist.
    pub sequencing_ttl: Option<String>,
    /// `spec.validateSchemas`.
    pub validate_schemas: bool,
    /// OCI module settings, spec values over environment values.
    pub oci: OciSettings,
}

/// A request's OCI module settings, once spec and environment are merged.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OciSettings {
    /// The normalised, validated default registry short forms expand with.
    pub default_registry: Option<String>,
    /// Registries reached over plain HTTP, without credentials.
    pub insecure_registries: Vec<String>,
    /// The mounted registry-credentials secret.
    pub docker_config_secret: Option<String>,
    /// The request credential holding a Docker config.
    pub docker_config_credential: Option<String>,
}

/// What a decoded input asks for.
#[derive(Debug)]
pub enum Plan {
    /// Run this script.
    Run(Box<Checked>),
    /// The mounted script is empty: answer with the passthrough result.
    Passthrough {
        /// The script's file name (the metric label).
        filename: String,
    },
}

/// Decodes the request's input. A missing input decodes as an empty object.
pub fn decode(input: Option<&Struct>) -> Result<StarlarkInput, Error> {
    let Some(input) = input else {
        return Ok(StarlarkInput::default());
    };
    let json = function_sdk_rust::resource::struct_to_json(input);
    serde_path_to_error::deserialize(json).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            Error::Input(format!("decoding StarlarkInput: {inner}"))
        } else {
            Error::Input(format!("decoding StarlarkInput field {path}: {inner}"))
        }
    })
}

/// The `spec` of each StarlarkInput step in the pipeline of a document
/// (a Composition's or an Operation's), in order.
pub fn pipeline_inputs(doc: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    doc.pointer("/spec/pipeline")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter(|step| {
            step.pointer("/input/kind")
                .and_then(serde_json::Value::as_str)
                == Some("StarlarkInput")
        })
        .filter_map(|step| step.pointer("/input/spec"))
}

/// The script's file name once the source check passes: known before the
/// script is read, so failures to read it are still labelled. A mounted
/// script is named by its path (`/scripts/NAME/KEY`), which its relative
/// loads (`./helper.star`) start from.
pub fn script_filename(input: &StarlarkInput, scripts_dir: &Path) -> Result<String, Error> {
    let spec = input.spec.as_ref();
    let source = spec.and_then(|s| s.source.as_deref()).unwrap_or_default();
    let reference = spec.and_then(|s| s.script_config_ref.as_ref());
    match (source.is_empty(), reference) {
        (false, _) => Ok(INLINE_FILENAME.to_owned()),
        (true, None) => Err(Error::MissingSource),
        (true, Some(r)) => Ok(scripts_dir
            .join(r.name.as_deref().unwrap_or_default())
            .join(script_key(r))
            .display()
            .to_string()),
    }
}

/// The key of the mounted script's file in its ConfigMap.
fn script_key(r: &ScriptConfigRef) -> &str {
    non_empty(r.key.as_deref()).unwrap_or(DEFAULT_KEY)
}

/// Chooses and reads the script and settles every setting.
pub fn check(input: StarlarkInput, settings: &Settings) -> Result<Plan, Error> {
    let filename = script_filename(&input, &settings.scripts_dir)?;
    let spec = input.spec.unwrap_or_default();
    let script_dir = match &spec.script_config_ref {
        Some(r) => Some(script_dir(&settings.scripts_dir, r)?),
        None => None,
    };
    let source = if let Some(source) = non_empty(spec.source.as_deref()) {
        source.to_owned()
    } else {
        let dir = script_dir
            .as_deref()
            .expect("script_filename accepted the input, so a scriptConfigRef is present");
        let reference = spec
            .script_config_ref
            .as_ref()
            .expect("script_filename accepted the input, so a scriptConfigRef is present");
        let name = reference.name.as_deref().unwrap_or_default();
        let text = read_script(dir, name, script_key(reference))?;
        if text.is_empty() {
            return Ok(Plan::Passthrough { filename });
        }
        text
    };
    let usage_api = match non_empty(spec.usage_api_version.as_deref())
        .map(str::to_owned)
        .or_else(|| settings.env("STARLARK_USAGE_API_VERSION"))
        .as_deref()
    {
        Some("v1") => UsageApi::V1,
        _ => UsageApi::V2,
    };
    let oci = oci_settings(&spec, settings)?;
    Ok(Plan::Run(Box::new(Checked {
        script: Script { filename, source },
        script_dir,
        modules: spec.modules.unwrap_or_default(),
        module_paths: spec.module_paths.unwrap_or_default(),
        usage_api,
        sequencing_ttl: spec.sequencing_ttl.filter(|s| !s.is_empty()),
        validate_schemas: spec.validate_schemas.unwrap_or(false),
        oci,
    })))
}

/// Merges the OCI fields of `spec` with the environment variables behind them:
/// a non-empty spec value wins. The loader checks that a default registry
/// that is set is valid, even when nothing uses it.
fn oci_settings(spec: &Spec, settings: &Settings) -> Result<OciSettings, Error> {
    let registry = non_empty(spec.oci_default_registry.as_deref())
        .map(str::to_owned)
        .or_else(|| settings.env("STARLARK_OCI_DEFAULT_REGISTRY"))
        .map(|r| normalize_default_registry(&r))
        .filter(|r| !r.is_empty());
    let insecure_registries = match spec.oci_insecure_registries.as_deref() {
        Some(list) if !list.is_empty() => list.to_vec(),
        _ => settings
            .env("STARLARK_OCI_INSECURE_REGISTRIES")
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    };
    Ok(OciSettings {
        default_registry: registry,
        insecure_registries,
        docker_config_secret: non_empty(spec.docker_config_secret.as_deref())
            .map(str::to_owned)
            .or_else(|| settings.env("STARLARK_DOCKER_CONFIG_SECRET")),
        docker_config_credential: non_empty(spec.docker_config_credential.as_deref())
            .map(str::to_owned),
    })
}

fn non_empty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

/// The default registry as configured: one leading `oci://` and every
/// trailing `/` removed. Empty means "not set".
fn normalize_default_registry(raw: &str) -> String {
    raw.strip_prefix("oci://")
        .unwrap_or(raw)
        .trim_end_matches('/')
        .to_owned()
}

/// True when `p` is non-empty, relative, and never climbs above its base.
pub(crate) fn stays_inside(p: &str) -> bool {
    if p.is_empty() {
        return false;
    }
    let mut depth = 0usize;
    for component in Path::new(p).components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

fn script_dir(base: &Path, r: &ScriptConfigRef) -> Result<PathBuf, Error> {
    let name = r.name.as_deref().unwrap_or_default();
    if !stays_inside(name) {
        return Err(Error::ScriptConfig(format!(
            "script ConfigMap name {name:?} contains path traversal"
        )));
    }
    Ok(base.join(name))
}

fn read_script(dir: &Path, name: &str, key: &str) -> Result<String, Error> {
    if !stays_inside(key) {
        return Err(Error::ScriptConfig(format!(
            "script key {key:?} contains path traversal"
        )));
    }
    let path = dir.join(key);
    match std::fs::read(&path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            Error::ScriptConfig(format!(
                "reading script file {:?}: the file is not UTF-8 text",
                path.display().to_string()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::ScriptConfig(format!(
            "script file {:?} not found; ensure the ConfigMap {name:?} is mounted via DeploymentRuntimeConfig",
            path.display().to_string()
        ))),
        Err(e) => Err(Error::ScriptConfig(format!(
            "reading script file {:?}: {e}",
            path.display().to_string()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `v`, a JSON object, as a protobuf `Struct`.
    pub(super) fn pb(v: serde_json::Value) -> Struct {
        let serde_json::Value::Object(m) = v else {
            panic!("object expected")
        };
        function_sdk_rust::resource::json_to_struct(&m)
    }

    fn settings(dir: &Path) -> Settings {
        Settings {
            scripts_dir: dir.to_path_buf(),
            env: Box::new(|_| None),
        }
    }

    fn plan(v: serde_json::Value, dir: &Path) -> Result<Plan, Error> {
        check(decode(Some(&pb(v)))?, &settings(dir))
    }

    #[test]
    fn the_lookup_answers_as_the_process_environment_for_every_name() {
        let settings = Settings::from_process(PathBuf::from("/scripts"));
        for name in ENV_FALLBACKS
            .iter()
            .chain(&["PATH", "HOME", "NO_SUCH_VARIABLE_HERE"])
        {
            assert_eq!((settings.env)(name), std::env::var(name).ok(), "{name}");
        }
    }

    #[test]
    fn default_registries_are_normalised() {
        assert_eq!(
            normalize_default_registry("oci://ghcr.io/acme/"),
            "ghcr.io/acme"
        );
        assert_eq!(normalize_default_registry("ghcr.io/acme"), "ghcr.io/acme");
    }

    #[test]
    fn a_missing_input_fails_the_source_check_not_the_decoder() {
        let input = decode(None).unwrap();
        let err = check(input, &settings(Path::new("/scripts"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.source or spec.scriptConfigRef is required"
        );
    }

    #[test]
    fn unknown_members_are_rejected_with_their_path() {
        let err = plan(
            json!({"spec": {"source": "x = 1", "foo": 1}}),
            Path::new("/"),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("cannot get Function input: "), "{msg}");
        assert!(msg.contains("spec") && msg.contains("foo"), "{msg}");
    }

    #[test]
    fn type_mismatches_are_rejected() {
        for bad in [
            json!({"spec": "x"}),
            json!({"spec": {"source": 1}}),
            json!({"spec": {"modules": {"a": 1}}}),
        ] {
            let err = plan(bad, Path::new("/")).unwrap_err();
            assert!(err.to_string().starts_with("cannot get Function input: "));
        }
    }

    #[test]
    fn identity_fields_are_not_checked() {
        let p = plan(
            json!({"apiVersion": "other/v9", "kind": "Whatever", "spec": {"source": "x = 1"}}),
            Path::new("/"),
        )
        .unwrap();
        let Plan::Run(c) = p else {
            panic!("expected a run")
        };
        assert_eq!(c.script.filename, "composition.star");
        assert_eq!(c.usage_api, UsageApi::V2);
    }

    #[test]
    fn usage_api_v1_is_selected_by_spec_or_environment() {
        let p = plan(
            json!({"spec": {"source": "x", "usageAPIVersion": "v1"}}),
            Path::new("/"),
        )
        .unwrap();
        let Plan::Run(c) = p else { panic!() };
        assert_eq!(c.usage_api, UsageApi::V1);
        let s = Settings {
            scripts_dir: "/".into(),
            env: Box::new(|k| (k == "STARLARK_USAGE_API_VERSION").then(|| "v1".to_owned())),
        };
        let input = decode(Some(&pb(
            json!({"spec": {"source": "x", "usageAPIVersion": "garbage"}}),
        )))
        .unwrap();
        let Plan::Run(c) = check(input, &s).unwrap() else {
            panic!()
        };
        assert_eq!(
            c.usage_api,
            UsageApi::V2,
            "a non-empty spec value wins over the environment"
        );
        let input = decode(Some(&pb(json!({"spec": {"source": "x"}})))).unwrap();
        let Plan::Run(c) = check(input, &s).unwrap() else {
            panic!()
        };
        assert_eq!(c.usage_api, UsageApi::V1);
    }

    fn oci(
        spec: serde_json::Value,
        env: &'static [(&'static str, &'static str)],
    ) -> Result<OciSettings, Error> {
        let s = Settings {
            scripts_dir: "/".into(),
            env: Box::new(move |k| {
                env.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }),
        };
        let input = decode(Some(&pb(json!({"spec": spec})))).unwrap();
        match check(input, &s)? {
            Plan::Run(c) => Ok(c.oci),
            Plan::Passthrough { .. } => panic!("a run was expected"),
        }
    }

    #[test]
    fn the_default_registry_comes_from_spec_or_environment() {
        // The spec's registry wins over the environment's; an `oci://` prefix and a
        // trailing slash are dropped.
        let env: &[(&str, &str)] = &[("STARLARK_OCI_DEFAULT_REGISTRY", "ghcr.io/env")];
        let o = oci(
            json!({"source": "x", "ociDefaultRegistry": "ghcr.io/spec"}),
            env,
        )
        .unwrap();
        assert_eq!(o.default_registry.as_deref(), Some("ghcr.io/spec"));
        let o = oci(json!({"source": "x"}), env).unwrap();
        assert_eq!(o.default_registry.as_deref(), Some("ghcr.io/env"));
        let o = oci(
            json!({"source": "x", "ociDefaultRegistry": "oci://ghcr.io/acme/"}),
            &[],
        )
        .unwrap();
        assert_eq!(o.default_registry.as_deref(), Some("ghcr.io/acme"));
        // Validating it is the loader's (tests/it/oci.rs), before any module
        // is looked for.
        let o = oci(
            json!({"source": "x = 1", "ociDefaultRegistry": "!!!invalid!!!"}),
            &[],
        );
        assert_eq!(
            o.unwrap().default_registry.as_deref(),
            Some("!!!invalid!!!")
        );
        assert_eq!(
            oci(json!({"source": "x"}), &[]).unwrap().default_registry,
            None
        );
    }

    #[test]
    fn insecure_registries_and_credentials_merge_spec_and_environment() {
        // A non-empty spec value wins; an empty list falls back to the environment,
        // whose comma-separated list is trimmed and loses its empty entries.
        let env: &[(&str, &str)] = &[
            ("STARLARK_OCI_INSECURE_REGISTRIES", " a:1 , ,b:2"),
            ("STARLARK_DOCKER_CONFIG_SECRET", "env-secret"),
        ];
        let o = oci(json!({"source": "x"}), env).unwrap();
        assert_eq!(o.insecure_registries, ["a:1", "b:2"]);
        assert_eq!(o.docker_config_secret.as_deref(), Some("env-secret"));
        assert_eq!(o.docker_config_credential, None);
        let o = oci(
            json!({"source": "x", "ociInsecureRegistries": ["c:3"], "dockerConfigSecret": "s", "dockerConfigCredential": "c"}),
            env,
        )
        .unwrap();
        assert_eq!(o.insecure_registries, ["c:3"]);
        assert_eq!(o.docker_config_secret.as_deref(), Some("s"));
        assert_eq!(o.docker_config_credential.as_deref(), Some("c"));
        let o = oci(json!({"source": "x", "ociInsecureRegistries": []}), env).unwrap();
        assert_eq!(o.insecure_registries, ["a:1", "b:2"]);
    }

    #[test]
    fn path_traversal_is_refused_in_name_and_key() {
        for r in [
            json!({"name": "../escape"}),
            json!({"name": "/etc/x"}),
            json!({"name": ""}),
            json!({"name": "ok", "key": "../../x"}),
        ] {
            let err = plan(
                json!({"spec": {"scriptConfigRef": r}}),
                Path::new("/scripts"),
            )
            .unwrap_err();
            assert!(err.to_string().contains("path traversal"), "{err}");
        }
        assert!(stays_inside("a/b") && stays_inside("a/../b") && !stays_inside("a/../../b"));
    }

    #[test]
    fn a_missing_mounted_script_names_the_file_and_the_fix() {
        let err = plan(
            json!({"spec": {"scriptConfigRef": {"name": "my-script", "key": "main.star"}}}),
            Path::new("/scripts"),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"loading script from ConfigMap: script file "/scripts/my-script/main.star" not found; ensure the ConfigMap "my-script" is mounted via DeploymentRuntimeConfig"#
        );
    }

    #[test]
    fn mounted_scripts_use_the_default_key_and_empty_files_pass_through() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("my-scripts")).unwrap();
        std::fs::write(dir.path().join("my-scripts/main.star"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join("my-scripts/empty.star"), "").unwrap();
        let Plan::Run(c) = plan(
            json!({"spec": {"scriptConfigRef": {"name": "my-scripts"}}}),
            dir.path(),
        )
        .unwrap() else {
            panic!()
        };
        let path = dir.path().join("my-scripts/main.star");
        assert_eq!(c.script.filename, path.display().to_string());
        assert_eq!(c.script.source, "x = 1\n");
        assert_eq!(
            c.script_dir.as_deref(),
            Some(dir.path().join("my-scripts").as_path())
        );
        let p = plan(
            json!({"spec": {"scriptConfigRef": {"name": "my-scripts", "key": "empty.star"}}}),
            dir.path(),
        )
        .unwrap();
        let path = dir
            .path()
            .join("my-scripts/empty.star")
            .display()
            .to_string();
        assert!(matches!(p, Plan::Passthrough { filename } if filename == path));
    }
}
