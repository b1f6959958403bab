//! The gRPC handler: a RunFunctionRequest in, a RunFunctionResponse out.
//! Every failure becomes a Fatal result in a normal response.

use std::sync::Arc;
use std::time::Instant;

use function_sdk_rust::proto::v1::function_runner_service_server::FunctionRunnerService;
use function_sdk_rust::proto::v1::{Capability, RunFunctionRequest, RunFunctionResponse};
use function_sdk_rust::{request as sdk_request, response};
use tonic::{Request, Response, Status};
use tracing::Instrument;

use crate::error::Error;
use crate::input::{self, Plan, Settings};
use crate::loader::Sources;
use crate::loader::oci::OciResolver;
use crate::metrics::Metrics;
use crate::runtime::apply::{self, DependencySettings};
use crate::runtime::{Outcome, Runtime};

/// The Normal result of an empty mounted script.
pub const PASSTHROUGH_MESSAGE: &str =
    "function-starlark: input parsed successfully (passthrough mode)";

/// The composition function.
#[derive(Clone)]
pub struct StarlarkFunction {
    runtime: Arc<Runtime>,
    settings: Arc<Settings>,
    metrics: Metrics,
    oci: Arc<OciResolver>,
}

impl StarlarkFunction {
    /// A function running scripts on `runtime`, with an OCI resolver of
    /// default settings (`IfNotPresent`).
    pub fn new(runtime: Arc<Runtime>, settings: Settings, metrics: Metrics) -> Self {
        StarlarkFunction {
            runtime,
            settings: Arc::new(settings),
            metrics,
            oci: Arc::new(OciResolver::default()),
        }
    }

    /// The same function, resolving OCI modules with `oci` (its settings
    /// and its caches).
    #[must_use]
    pub fn with_oci(mut self, oci: Arc<OciResolver>) -> Self {
        self.oci = oci;
        self
    }

    /// The OCI resolver, shared by every request.
    pub fn oci(&self) -> &Arc<OciResolver> {
        &self.oci
    }

    /// Answers one request.
    pub async fn handle(&self, request: RunFunctionRequest) -> RunFunctionResponse {
        let tag = request
            .meta
            .as_ref()
            .map(|m| m.tag.clone())
            .unwrap_or_default();
        // Every log line of the request carries its tag through this span.
        let span = tracing::info_span!("run_function", tag = %tag);
        self.handle_tagged(request, tag).instrument(span).await
    }

    async fn handle_tagged(&self, request: RunFunctionRequest, tag: String) -> RunFunctionResponse {
        let started = Instant::now();
        let mut rsp = response::to(&request, response::DEFAULT_TTL);
        let decoded = input::decode(request.input.as_ref())
            .and_then(|i| input::script_filename(&i).map(|filename| (i, filename)));
        let (decoded, filename) = match decoded {
            Ok(ok) => ok,
            Err(e) => {
                tracing::info!(tag, error = %e, "cannot run function");
                response::fatal(&mut rsp, e.to_string());
                return rsp;
            }
        };
        let labels = Metrics::labels(&filename);
        if let Err(e) = self.run(&mut rsp, request, decoded, &labels).await {
            tracing::info!(tag, script = filename, error = %e, "script failed");
            response::fatal(&mut rsp, e.to_string());
        }
        self.metrics.reconciliations.get_or_create(&labels).inc();
        self.metrics
            .reconciliation_duration
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
        rsp
    }

    async fn run(
        &self,
        rsp: &mut RunFunctionResponse,
        request: RunFunctionRequest,
        decoded: input::StarlarkInput,
        labels: &crate::metrics::Labels,
    ) -> Result<(), Error> {
        let checked = match input::check(decoded, &self.settings)? {
            Plan::Passthrough { .. } => {
                response::normal(rsp, PASSTHROUGH_MESSAGE);
                return Ok(());
            }
            Plan::Run(checked) => checked,
        };
        log_capabilities(&request);
        let request = Arc::new(request);
        let gathered = Sources::gather(&checked, &self.oci, &request).await;
        if let Some(elapsed) = gathered.oci_resolve {
            self.metrics
                .oci_resolve_duration
                .get_or_create(labels)
                .observe(elapsed.as_secs_f64());
        }
        let sources = gathered.sources?;
        let run = self
            .runtime
            .run(checked.script.clone(), sources, request.clone())
            .await;
        self.metrics
            .execution_duration
            .get_or_create(labels)
            .observe(run.elapsed.as_secs_f64());
        for (script, hit) in run.context.compilations.borrow().iter() {
            let cache = if *hit {
                &self.metrics.cache_hits
            } else {
                &self.metrics.cache_misses
            };
            cache.get_or_create(&Metrics::labels(script)).inc();
        }
        let effects = &run.context.effects;
        let skipped = effects.skipped.borrow().len() as u64;
        if skipped > 0 {
            self.metrics
                .resources_skipped
                .get_or_create(labels)
                .inc_by(skipped);
        }
        match run.outcome {
            Outcome::Failed(Error::Fatal(message)) => {
                apply::apply_fatal(rsp, effects, message);
                Ok(())
            }
            Outcome::Failed(e) => Err(e),
            Outcome::Completed { dxr, context } => {
                let settings = DependencySettings {
                    usage_api: checked.usage_api,
                    sequencing_ttl: checked.sequencing_ttl.as_deref(),
                };
                let applied =
                    apply::apply_success(rsp, &request, effects, dxr, context, &settings)?;
                self.metrics
                    .resources_emitted
                    .get_or_create(labels)
                    .inc_by(applied.emitted as u64);
                if applied.deferred > 0 {
                    self.metrics
                        .resources_deferred
                        .get_or_create(labels)
                        .inc_by(applied.deferred as u64);
                }
                Ok(())
            }
        }
    }
}

/// Capabilities only change what is logged: the response is the same
/// whatever Crossplane advertises.
fn log_capabilities(request: &RunFunctionRequest) {
    if !sdk_request::advertises_capabilities(request) {
        tracing::debug!("crossplane does not advertise capabilities");
        return;
    }
    for (capability, what) in [
        (Capability::Conditions, "conditions"),
        (Capability::RequiredResources, "required resources"),
    ] {
        if !sdk_request::has_capability(request, capability) {
            tracing::debug!(
                capability = what,
                "crossplane does not advertise a capability"
            );
        }
    }
}

#[tonic::async_trait]
impl FunctionRunnerService for StarlarkFunction {
    async fn run_function(
        &self,
        request: Request<RunFunctionRequest>,
    ) -> Result<Response<RunFunctionResponse>, Status> {
        Ok(Response::new(self.handle(request.into_inner()).await))
    }
}
