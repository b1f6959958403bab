//! The RunFunction handler: request bytes in, response bytes out. Every
//! failure a response can carry becomes a Fatal result in it; only a
//! request that cannot be read at all is answered with a gRPC status.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use function_sdk_rust::proto::v1::{Capability, RunFunctionRequest, RunFunctionResponse};
use function_sdk_rust::{request as sdk_request, response};
use prost::Message;
use tonic::Status;
use tracing::Instrument;

use crate::engine::job::RequestHead;
use crate::engine::{Answer, Engine, Job, depth, evaluate};
use crate::input::{self, Plan, Settings, UsageApi};
use crate::loader::Sources;
use crate::loader::oci::OciResolver;
use crate::metrics::Metrics;
use crate::runtime::Runtime;

/// The Normal result of an empty mounted script.
pub const PASSTHROUGH_MESSAGE: &str =
    "function-starlark: input parsed successfully (passthrough mode)";

/// The composition function.
#[derive(Clone)]
pub struct StarlarkFunction {
    engine: Arc<Engine>,
    settings: Arc<Settings>,
    metrics: Metrics,
    oci: Arc<OciResolver>,
}

impl StarlarkFunction {
    /// A function running scripts on worker threads over `runtime`, with an
    /// OCI resolver of default settings (`IfNotPresent`).
    pub fn new(runtime: Arc<Runtime>, settings: Settings, metrics: Metrics) -> Self {
        Self::with_engine(Arc::new(Engine::threads(runtime)), settings, metrics)
    }

    /// A function running scripts on `engine`.
    pub fn with_engine(engine: Arc<Engine>, settings: Settings, metrics: Metrics) -> Self {
        StarlarkFunction {
            engine,
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

    /// The engine scripts run on.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Answers one request given as a value (tests, the CLI).
    pub async fn handle(&self, request: RunFunctionRequest) -> RunFunctionResponse {
        let bytes = Bytes::from(request.encode_to_vec());
        match self.handle_bytes(bytes).await {
            Ok(rsp) => RunFunctionResponse::decode(rsp).unwrap_or_default(),
            Err(status) => {
                let mut rsp = response::to(&request, response::DEFAULT_TTL);
                response::fatal(&mut rsp, status.message().to_owned());
                rsp
            }
        }
    }

    /// Answers one request as it came off the wire.
    pub async fn handle_bytes(&self, bytes: Bytes) -> Result<Bytes, Status> {
        depth::check_request(&bytes).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let head = RequestHead::decode(bytes.as_ref()).map_err(|e| {
            Status::invalid_argument(format!("cannot decode the RunFunctionRequest: {e}"))
        })?;
        let tag = head
            .meta
            .as_ref()
            .map(|m| m.tag.clone())
            .unwrap_or_default();
        // Every log line of the request carries its tag through this span.
        let span = tracing::info_span!("run_function", tag = %tag);
        self.handle_tagged(bytes, head, tag).instrument(span).await
    }

    async fn handle_tagged(
        &self,
        bytes: Bytes,
        head: RequestHead,
        tag: String,
    ) -> Result<Bytes, Status> {
        let started = Instant::now();
        let decoded = input::decode(head.input.as_ref())
            .and_then(|i| input::script_filename(&i).map(|filename| (i, filename)));
        let (decoded, filename) = match decoded {
            Ok(ok) => ok,
            Err(e) => {
                tracing::info!(tag, error = %e, "cannot run function");
                return respond(evaluate::failed(&bytes, &e));
            }
        };
        let labels = Metrics::labels(&filename);
        let answer = self.run(bytes, head, decoded, &labels).await;
        if let Some(failure) = &answer.failure {
            tracing::info!(tag, script = filename, error = %failure, "script failed");
        }
        self.metrics.reconciliations.get_or_create(&labels).inc();
        self.metrics
            .reconciliation_duration
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
        respond(answer)
    }

    async fn run(
        &self,
        bytes: Bytes,
        head: RequestHead,
        decoded: input::StarlarkInput,
        labels: &crate::metrics::Labels,
    ) -> Answer {
        let checked = match input::check(decoded, &self.settings) {
            Ok(Plan::Passthrough { .. }) => match evaluate::decode(&bytes) {
                Ok(request) => {
                    let mut rsp = response::to(&request, response::DEFAULT_TTL);
                    response::normal(&mut rsp, PASSTHROUGH_MESSAGE);
                    return Answer {
                        response: evaluate::encode(rsp),
                        ..Answer::default()
                    };
                }
                Err(refusal) => {
                    return Answer {
                        status: Some(refusal),
                        ..Answer::default()
                    };
                }
            },
            Ok(Plan::Run(checked)) => checked,
            Err(e) => return evaluate::failed(&bytes, &e),
        };
        let request = head.into_request();
        log_capabilities(&request);
        let gathered = Sources::gather(&checked, &self.oci, &request).await;
        if let Some(elapsed) = gathered.oci_resolve {
            self.metrics
                .oci_resolve_duration
                .get_or_create(labels)
                .observe(elapsed.as_secs_f64());
        }
        let sources = match gathered.sources {
            Ok(sources) => sources,
            Err(e) => return evaluate::failed(&bytes, &e),
        };
        let job = Job {
            request: bytes,
            filename: checked.script.filename,
            source: checked.script.source,
            modules: Job::modules_of(&sources),
            default_registry: sources.default_registry().map(str::to_owned),
            usage_api_v1: checked.usage_api == UsageApi::V1,
            sequencing_ttl: checked.sequencing_ttl,
            timeout_ms: u64::try_from(self.engine.limits().timeout.as_millis()).unwrap_or(u64::MAX),
        };
        let answer = self.engine.run(job).await;
        for print in &answer.prints {
            tracing::debug!(script = print.script, msg = %print.text, "starlark print");
        }
        self.record(&answer, labels);
        answer
    }

    fn record(&self, answer: &Answer, labels: &crate::metrics::Labels) {
        self.metrics
            .execution_duration
            .get_or_create(labels)
            .observe(std::time::Duration::from_nanos(answer.run_nanos).as_secs_f64());
        for compilation in &answer.compilations {
            let cache = if compilation.hit {
                &self.metrics.cache_hits
            } else {
                &self.metrics.cache_misses
            };
            cache
                .get_or_create(&Metrics::labels(&compilation.script))
                .inc();
        }
        if answer.skipped > 0 {
            self.metrics
                .resources_skipped
                .get_or_create(labels)
                .inc_by(answer.skipped);
        }
        if answer.emitted > 0 {
            self.metrics
                .resources_emitted
                .get_or_create(labels)
                .inc_by(answer.emitted);
        }
        if answer.deferred > 0 {
            self.metrics
                .resources_deferred
                .get_or_create(labels)
                .inc_by(answer.deferred);
        }
    }
}

/// The call's result for an answer.
fn respond(answer: Answer) -> Result<Bytes, Status> {
    match answer.status {
        Some(refusal) => Err(Status::new(
            tonic::Code::from_i32(refusal.code),
            refusal.message,
        )),
        None => Ok(answer.response),
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
