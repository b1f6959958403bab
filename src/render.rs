//! `function-starlark render XR COMPOSITION [FUNCTIONS]`: what `crossplane
//! render` prints for a Composition whose pipeline steps are all this
//! function, with the steps run in-process (no Docker, no server).
//!
//! The pipeline is crossplane render's: the observed XR and composed
//! resources, an empty desired state, the context from `--context-files`
//! and `--context-values`; each step gets the previous step's desired state
//! and context, its input and credentials, and is run again while the
//! resources and schemas it requires change (at most five times more); a
//! Fatal result stops the render. The output is the XR (with the Ready
//! condition and the conditions the steps returned), the composed resources
//! with the metadata Crossplane adds, and with `-r` the steps' results, as
//! one YAML stream.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use function_sdk_rust::proto::v1::{
    Capability, CredentialData, Credentials, MatchLabels, RequestMeta, Resource, ResourceSelector,
    Resources, RunFunctionRequest, RunFunctionResponse, Severity, State, credentials,
    resource_selector,
};
use serde_json::Value;

use crate::function::StarlarkFunction;
use crate::input::Settings;
use crate::limits::Limits;
use crate::loader::oci::{OciConfig, OciResolver};
use crate::metrics::Metrics;
use crate::runner::Runtime;

pub mod load;
pub mod operation;
pub mod output;

use load::{object, objects, string_at};

/// The annotation naming a composed resource in its Composition.
pub const RESOURCE_NAME_ANNOTATION: &str = "crossplane.io/composition-resource-name";

/// How many times more a step runs while its requirements change
/// (Crossplane's limit).
const MAX_REQUIREMENTS_ITERATIONS: usize = 5;

/// `render`'s arguments and flags (crossplane render's, where they apply).
#[derive(clap::Args, Debug, Clone)]
pub struct RenderArgs {
    /// A YAML file specifying the composite resource (XR) to render, or an
    /// Operation, CronOperation or WatchOperation (then the next argument
    /// is the Functions file).
    pub composite_resource: PathBuf,
    /// A YAML file specifying the Composition to use to render the XR. Must
    /// be mode: Pipeline.
    pub composition: Option<PathBuf>,
    /// A YAML file or directory of the Functions the pipeline names. A step
    /// whose Function's package is not function-starlark is an error;
    /// without this argument, a step is run here when its function's name
    /// contains `starlark`.
    pub functions: Option<PathBuf>,
    /// The resource a WatchOperation watched: every step requires it as
    /// `ops.crossplane.io/watched-resource`, and it is among the required
    /// resources.
    #[arg(short = 'w', long, value_name = "PATH")]
    pub watched_resource: Option<PathBuf>,
    /// Context key and file of JSON/YAML to pass to the pipeline
    /// (KEY=FILE; repeat the flag for more keys).
    #[arg(long = "context-files", value_parser = key_value)]
    pub context_files: Vec<(String, String)>,
    /// Context key and JSON/YAML value to pass to the pipeline (KEY=VALUE;
    /// repeat the flag for more keys). Takes precedence over --context-files.
    #[arg(long = "context-values", value_parser = key_value)]
    pub context_values: Vec<(String, String)>,
    /// Include informational and warning messages from the steps in the
    /// output, as resources of kind Result.
    #[arg(short = 'r', long)]
    pub include_function_results: bool,
    /// Include a copy of the input XR's spec and metadata in the output.
    #[arg(short = 'x', long = "include-full-xr")]
    pub include_full_xr: bool,
    /// Include the context in the output, as a resource of kind Context.
    #[arg(short = 'c', long)]
    pub include_context: bool,
    /// A YAML file or directory of the observed composed resources.
    #[arg(short = 'o', long, value_name = "PATH")]
    pub observed_resources: Option<PathBuf>,
    /// A YAML file or directory of resources the steps may require.
    #[arg(short = 'e', long, value_name = "PATH")]
    pub required_resources: Option<PathBuf>,
    /// Like --required-resources (crossplane render's deprecated name).
    #[arg(long, value_name = "PATH")]
    pub extra_resources: Option<PathBuf>,
    /// A YAML file or directory of Secrets the steps' credentials name.
    #[arg(long, value_name = "PATH")]
    pub function_credentials: Option<PathBuf>,
}

fn key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))
}

/// Why a render failed; each names the file or step at fault.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("{0}")]
    Invalid(String),
    #[error(
        "pipeline step {step:?} uses function {function:?}, which is not function-starlark; render runs only function-starlark steps (crossplane render runs the others)"
    )]
    OtherFunction { step: String, function: String },
    #[error("pipeline step {step:?} returned a fatal result: {message}")]
    Fatal { step: String, message: String },
    #[error(
        "pipeline step {0:?}: requirements didn't stabilize after the maximum number of iterations ({MAX_REQUIREMENTS_ITERATIONS})"
    )]
    Unstable(String),
}

/// The server settings a render runs scripts with (the same flags).
pub struct Options {
    pub limits: Limits,
    pub cache_size: usize,
    pub scripts_dir: PathBuf,
    pub oci: OciConfig,
    /// The debugger watching the runs (`function-starlark dap`).
    pub debugger: Option<Arc<dyn crate::runner::debugging::Debugger>>,
}

/// Runs `render` and prints its output; the process's exit status.
pub fn main(args: &RenderArgs, options: Options) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(16 << 20)
        .build();
    let result = match runtime {
        Ok(runtime) => runtime.block_on(render(args, options)),
        Err(e) => Err((
            "composite resource",
            RenderError::Invalid(format!("cannot start the async runtime: {e}")),
        )),
    };
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err((what, e)) => {
            eprintln!("function-starlark: error: cannot render {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The inputs of a render, read from its files.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The composite resource.
    pub xr: Value,
    /// The Composition (mode Pipeline).
    pub composition: Value,
    /// The observed composed resources.
    pub observed: Vec<Value>,
    /// What required-resource selectors pick from.
    pub required: Vec<Value>,
    /// Secrets the steps' credentials name.
    pub secrets: Vec<Value>,
    /// The pipeline's initial context.
    pub context: serde_json::Map<String, Value>,
    /// The Functions that are function-starlark, when they were given.
    pub starlark_functions: Option<Vec<String>>,
}

/// Checks that `composition` composes `xr`'s kind in a pipeline.
pub fn check_types(xr: &Value, composition: &Value) -> Result<(), RenderError> {
    let type_ref = composition
        .pointer("/spec/compositeTypeRef")
        .cloned()
        .unwrap_or_default();
    let (want_kind, want_api) = (
        string_at(&type_ref, "kind"),
        string_at(&type_ref, "apiVersion"),
    );
    let (kind, api) = (string_at(xr, "kind"), string_at(xr, "apiVersion"));
    if want_kind != kind {
        return Err(RenderError::Invalid(format!(
            "composition's compositeTypeRef.kind ({want_kind}) does not match XR's kind ({kind})"
        )));
    }
    if want_api != api {
        return Err(RenderError::Invalid(format!(
            "composition's compositeTypeRef.apiVersion ({want_api}) does not match XR's apiVersion ({api})"
        )));
    }
    if string_at(composition, "spec.mode") != "Pipeline" {
        return Err(RenderError::Invalid(format!(
            "render only supports Composition Function pipelines: Composition {:?} must use spec.mode: Pipeline",
            string_at(composition, "metadata.name")
        )));
    }
    Ok(())
}

/// The inputs of a composite's render: `args`' XR and Composition.
fn read_inputs(args: &RenderArgs) -> Result<Inputs, RenderError> {
    let xr = object(&args.composite_resource)?;
    let Some(path) = &args.composition else {
        return Err(RenderError::Invalid(
            "render needs a Composition after the XR: render XR COMPOSITION [FUNCTIONS]".into(),
        ));
    };
    if args.watched_resource.is_some() {
        return Err(RenderError::Invalid(
            "--watched-resource is for a WatchOperation; a composite has none".into(),
        ));
    }
    let composition = object(path)?;
    check_types(&xr, &composition)?;
    read_rest(args, xr, composition, args.functions.as_deref())
}

/// The inputs of an Operation's render: the Operation `object` stands
/// for, the Functions file after it, the watched resource.
fn read_operation_inputs(args: &RenderArgs, object: &Value) -> Result<Inputs, RenderError> {
    if args.functions.is_some() {
        return Err(RenderError::Invalid(
            "an Operation's render takes the Functions file right after it: render OPERATION [FUNCTIONS]".into(),
        ));
    }
    if args.observed_resources.is_some() {
        return Err(RenderError::Invalid(
            "an Operation observes nothing: -o is --observed-resources here (crossplane operation render's -o, --include-full-operation, is always on)".into(),
        ));
    }
    let mut operation = operation::operation_of(object)?;
    let mut inputs = read_rest(args, Value::Null, Value::Null, args.composition.as_deref())?;
    if let Some(path) = &args.watched_resource {
        let watched = load::object(path)?;
        operation::inject_watched(&mut operation, &watched);
        inputs.required.push(watched);
    }
    inputs.xr = operation;
    Ok(inputs)
}

/// The inputs beyond the XR and the Composition, from `args`' flags and
/// the Functions file at `functions`.
fn read_rest(
    args: &RenderArgs,
    xr: Value,
    composition: Value,
    functions: Option<&std::path::Path>,
) -> Result<Inputs, RenderError> {
    let starlark_functions = match functions {
        None => None,
        Some(path) => Some(
            objects(path)?
                .iter()
                .filter(|f| string_at(f, "spec.package").contains("function-starlark"))
                .map(|f| string_at(f, "metadata.name").to_owned())
                .collect(),
        ),
    };
    let optional = |path: &Option<PathBuf>| -> Result<Vec<Value>, RenderError> {
        path.as_deref().map_or(Ok(Vec::new()), objects)
    };
    let mut required = optional(&args.extra_resources)?;
    required.extend(optional(&args.required_resources)?);
    let mut context = serde_json::Map::new();
    let mut add_context = |key: &str, text: &str, from: &str| -> Result<(), RenderError> {
        let value = crate::builtins::yaml::documents_as_json(text)
            .ok()
            .and_then(|docs| docs.into_iter().next())
            .ok_or_else(|| {
                RenderError::Invalid(format!(
                    "cannot unmarshal YAML/JSON for context key {key:?} ({from})"
                ))
            })?;
        context.insert(key.to_owned(), value);
        Ok(())
    };
    for (key, file) in &args.context_files {
        let text = std::fs::read_to_string(file).map_err(|e| RenderError::Read {
            path: file.clone(),
            message: e.to_string(),
        })?;
        add_context(key, &text, file)?;
    }
    for (key, value) in &args.context_values {
        add_context(key, value, "--context-values")?;
    }
    Ok(Inputs {
        xr,
        composition,
        observed: optional(&args.observed_resources)?,
        required,
        secrets: optional(&args.function_credentials)?,
        context,
        starlark_functions,
    })
}

/// A protobuf Struct from a JSON object.
fn to_struct(v: &Value) -> pbjson_types::Struct {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

/// A JSON object from a protobuf Struct.
pub fn from_struct(s: Option<&pbjson_types::Struct>) -> Value {
    s.and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()))
}

/// The resources of `pool` a selector picks, in name order, as crossplane
/// render's filtering fetcher picks them; `None` when nothing is given.
fn fetch(pool: &[Value], selector: &ResourceSelector) -> Option<Resources> {
    if pool.is_empty() {
        return None;
    }
    let mut sorted: Vec<&Value> = pool.iter().collect();
    sorted.sort_by(|a, b| string_at(a, "metadata.name").cmp(string_at(b, "metadata.name")));
    let mut out = Resources::default();
    for r in sorted {
        if string_at(r, "apiVersion") != selector.api_version
            || string_at(r, "kind") != selector.kind
        {
            continue;
        }
        // A selector with a namespace selects in that namespace only.
        if let Some(ns) = selector.namespace.as_deref().filter(|ns| !ns.is_empty())
            && string_at(r, "metadata.namespace") != ns
        {
            continue;
        }
        let item = Resource {
            resource: Some(to_struct(r)),
            ..Resource::default()
        };
        match &selector.r#match {
            Some(resource_selector::Match::MatchName(name)) => {
                if name == string_at(r, "metadata.name") {
                    out.items = vec![item];
                    return Some(out);
                }
                continue;
            }
            Some(resource_selector::Match::MatchLabels(MatchLabels { labels })) => {
                let have = r.pointer("/metadata/labels");
                let matches = labels.iter().all(|(k, v)| {
                    have.and_then(|l| l.get(k)).and_then(Value::as_str) == Some(v.as_str())
                });
                if !matches {
                    continue;
                }
            }
            None => {}
        }
        out.items.push(item);
    }
    Some(out)
}

/// A step's bootstrap selector (`requirements.requiredResources[]`).
fn selector_of(v: &Value) -> ResourceSelector {
    let labels: HashMap<String, String> = load::strings(v.get("matchLabels"));
    let r#match = match v.get("name").and_then(Value::as_str) {
        Some(name) => Some(resource_selector::Match::MatchName(name.to_owned())),
        None if v.get("matchLabels").is_some() => {
            Some(resource_selector::Match::MatchLabels(MatchLabels {
                labels,
            }))
        }
        None => None,
    };
    ResourceSelector {
        api_version: string_at(v, "apiVersion").to_owned(),
        kind: string_at(v, "kind").to_owned(),
        namespace: v
            .get("namespace")
            .and_then(Value::as_str)
            .map(str::to_owned),
        r#match,
    }
}

/// The credentials a step names, from the Secrets given.
fn credentials_of(
    step: &Value,
    secrets: &[Value],
) -> Result<HashMap<String, Credentials>, RenderError> {
    let mut out = HashMap::new();
    for c in step
        .get("credentials")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if string_at(c, "source") != "Secret" || c.get("secretRef").is_none() {
            continue;
        }
        let (name, namespace) = (
            string_at(c, "secretRef.name"),
            string_at(c, "secretRef.namespace"),
        );
        let secret = secrets
            .iter()
            .find(|s| {
                string_at(s, "metadata.name") == name
                    && string_at(s, "metadata.namespace") == namespace
            })
            .ok_or_else(|| {
                RenderError::Invalid(format!(
                    "cannot get credentials from secret {name:?}: secret {name:?} not found"
                ))
            })?;
        let mut data = HashMap::new();
        for (k, v) in secret
            .get("data")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap_or_default())
                .map_err(|e| {
                    RenderError::Invalid(format!("secret {name:?}: data.{k} is not base64: {e}"))
                })?;
            data.insert(k.clone(), bytes);
        }
        for (k, v) in secret
            .get("stringData")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            data.insert(
                k.clone(),
                v.as_str().unwrap_or_default().as_bytes().to_vec(),
            );
        }
        out.insert(
            string_at(c, "name").to_owned(),
            Credentials {
                source: Some(credentials::Source::CredentialData(CredentialData { data })),
            },
        );
    }
    Ok(out)
}

/// The step's name, when its function is function-starlark; otherwise an
/// error naming the step and its function.
fn starlark_step<'a>(step: &'a Value, inputs: &Inputs) -> Result<&'a str, RenderError> {
    let name = string_at(step, "step");
    let function_name = string_at(step, "functionRef.name");
    let ours = match &inputs.starlark_functions {
        Some(names) => names.iter().any(|n| n == function_name),
        None => function_name.contains("starlark"),
    };
    if ours {
        Ok(name)
    } else {
        Err(RenderError::OtherFunction {
            step: name.to_owned(),
            function: function_name.to_owned(),
        })
    }
}

/// A step's request, observing nothing: what Crossplane 2 says of itself,
/// the desired state and context so far, the step's input and credentials,
/// and the resources its requirements name up front.
fn step_request(
    step: &Value,
    inputs: &Inputs,
    desired: &State,
    context: Option<&pbjson_types::Struct>,
) -> Result<RunFunctionRequest, RenderError> {
    let required_resources = step
        .pointer("/requirements/requiredResources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|sel| {
            (
                string_at(sel, "requirementName").to_owned(),
                fetch(&inputs.required, &selector_of(sel)).unwrap_or_default(),
            )
        })
        .collect();
    Ok(RunFunctionRequest {
        meta: Some(request_meta()),
        desired: Some(desired.clone()),
        input: step.get("input").map(to_struct),
        context: context.cloned(),
        credentials: credentials_of(step, &inputs.secrets)?,
        required_resources,
        ..RunFunctionRequest::default()
    })
}

/// What Crossplane 2 sends with every request: the capabilities it has.
fn request_meta() -> RequestMeta {
    RequestMeta {
        tag: String::new(),
        capabilities: [
            Capability::Capabilities,
            Capability::RequiredResources,
            Capability::Credentials,
            Capability::Conditions,
            Capability::RequiredSchemas,
        ]
        .into_iter()
        .map(|c| c as i32)
        .collect(),
    }
}

/// Runs one step, again while its requirements change.
async fn run_step(
    function: &StarlarkFunction,
    step: &str,
    mut request: RunFunctionRequest,
    pool: &[Value],
) -> Result<RunFunctionResponse, RenderError> {
    let bootstrap = request.required_resources.clone();
    let mut requirements = None;
    for _ in 0..=MAX_REQUIREMENTS_ITERATIONS {
        let response = function.handle(request.clone()).await;
        if response
            .results
            .iter()
            .any(|r| r.severity == Severity::Fatal as i32)
        {
            return Ok(response);
        }
        if response.requirements == requirements {
            return Ok(response);
        }
        requirements.clone_from(&response.requirements);
        let wanted = response.requirements.clone().unwrap_or_default();
        request.extra_resources = wanted
            .extra_resources
            .iter()
            .map(|(name, sel)| (name.clone(), fetch(pool, sel).unwrap_or_default()))
            .collect();
        request.required_resources = bootstrap.clone();
        for (name, sel) in &wanted.resources {
            request
                .required_resources
                .insert(name.clone(), fetch(pool, sel).unwrap_or_default());
        }
        request.context.clone_from(&response.context);
    }
    Err(RenderError::Unstable(step.to_owned()))
}

/// The function a render runs steps on: this binary's engine, on threads,
/// with what scripts print written to stderr (or handed to the debugger);
/// `extra` adds globals (the test runner's `assert`).
pub fn function(
    options: Options,
    extra: impl FnOnce(&mut starlark::environment::GlobalsBuilder),
) -> StarlarkFunction {
    let debugger = options.debugger.clone();
    let runtime = Arc::new(
        Runtime::with_globals(options.limits, options.cache_size, |globals| {
            extra(globals);
            if let Some(debugger) = &debugger {
                debugger.globals(globals);
            }
        })
        .with_debugger(options.debugger),
    );
    let mut registry = prometheus_client::registry::Registry::default();
    StarlarkFunction::new(
        runtime,
        Settings::from_process(options.scripts_dir),
        Metrics::register(&mut registry),
    )
    .with_oci(Arc::new(OciResolver::new(options.oci)))
    .with_prints(match debugger {
        Some(debugger) => Arc::new(move |_script: &str, text: &str| debugger.print(text)),
        None => Arc::new(|_script: &str, text: &str| eprintln!("{text}")),
    })
}

/// What a pipeline ends with.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The last step's desired state.
    pub desired: State,
    /// Every step's conditions, in order.
    pub conditions: Vec<function_sdk_rust::proto::v1::Condition>,
    /// Every step's results (none Fatal) as `Result` objects.
    pub results: Vec<Value>,
    /// The last step's context.
    pub context: Option<pbjson_types::Struct>,
}

impl Outcome {
    /// The output documents: the XR, the composed resources, then the
    /// results and the context when asked for.
    pub fn documents(
        &self,
        inputs: &Inputs,
        full_xr: bool,
        results: bool,
        context: bool,
    ) -> Vec<Value> {
        output::Rendered {
            xr: &inputs.xr,
            composition: string_at(&inputs.composition, "metadata.name"),
            observed: &inputs.observed,
            desired: &self.desired,
            conditions: &self.conditions,
            results: &self.results,
            context: self.context.as_ref(),
        }
        .documents(full_xr, results, context)
    }
}

/// The render's whole output text, or what was being rendered and why it
/// failed.
pub(crate) async fn render(
    args: &RenderArgs,
    options: Options,
) -> Result<String, (&'static str, RenderError)> {
    let first = object(&args.composite_resource).map_err(|e| ("composite resource", e))?;
    if operation::is_operation(&first) {
        let failed = |e| ("operation", e);
        let inputs = read_operation_inputs(args, &first).map_err(failed)?;
        let function = function(options, |_| {});
        let outcome = operation::pipeline(&function, &inputs)
            .await
            .map_err(failed)?;
        return output::text(&operation::documents(
            &inputs.xr,
            &outcome,
            args.include_function_results,
            args.include_context,
        ))
        .map_err(failed);
    }
    let failed = |e| ("composite resource", e);
    let inputs = read_inputs(args).map_err(failed)?;
    let function = function(options, |_| {});
    let outcome = pipeline(&function, &inputs).await.map_err(failed)?;
    output::text(&outcome.documents(
        &inputs,
        args.include_full_xr,
        args.include_function_results,
        args.include_context,
    ))
    .map_err(failed)
}

/// Runs the Composition's pipeline on `inputs`.
pub async fn pipeline(
    function: &StarlarkFunction,
    inputs: &Inputs,
) -> Result<Outcome, RenderError> {
    let observed_resources: HashMap<String, Resource> = inputs
        .observed
        .iter()
        .map(|r| {
            let name = r
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(RESOURCE_NAME_ANNOTATION))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            (
                name,
                Resource {
                    resource: Some(to_struct(r)),
                    ..Resource::default()
                },
            )
        })
        .collect();
    let observed = State {
        composite: Some(Resource {
            resource: Some(to_struct(&inputs.xr)),
            ..Resource::default()
        }),
        resources: observed_resources,
    };
    let mut desired = State::default();
    let mut context = Some(to_struct(&Value::Object(inputs.context.clone())));
    let mut results = Vec::new();
    let mut conditions = Vec::new();
    let steps = inputs
        .composition
        .pointer("/spec/pipeline")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for step in &steps {
        let name = starlark_step(step, inputs)?;
        let request = RunFunctionRequest {
            observed: Some(observed.clone()),
            ..step_request(step, inputs, &desired, context.as_ref())?
        };
        let response = run_step(function, name, request, &inputs.required).await?;
        desired = response.desired.clone().unwrap_or_default();
        context.clone_from(&response.context);
        conditions.extend(response.conditions.iter().cloned());
        for r in &response.results {
            if r.severity == Severity::Fatal as i32 {
                return Err(RenderError::Fatal {
                    step: name.to_owned(),
                    message: r.message.clone(),
                });
            }
            results.push(output::result_object(name, r));
        }
    }
    Ok(Outcome {
        desired,
        conditions,
        results,
        context,
    })
}
