//! The RunFunction handler: request bytes in, response bytes out. Every
//! failure a response can carry becomes a Fatal result in it; only a
//! request that cannot be read at all is answered with a gRPC status.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use function_sdk_rust::proto::v1::{Capability, RunFunctionRequest, RunFunctionResponse};
use function_sdk_rust::{request as sdk_request, response};
use prost::Message;
use tonic::Status;
use tracing::Instrument;

use crate::error::Error;
use crate::input::cache::{CheckedCache, Input};
use crate::input::{self, Plan, Settings};
use crate::loader::Sources;
use crate::loader::oci::OciResolver;
use crate::metrics::{Metrics, Series};
use crate::transport::Engine;
use crate::wire::codec::{self, failed};
use crate::wire::job::RequestHead;
use crate::wire::{Answer, Job, Outcome, Runs, depth};

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
    /// Inputs checked before, by their bytes.
    inputs: Arc<CheckedCache>,
    /// Where `print()` output goes besides the debug log (the CLI's stderr).
    prints: Option<PrintSink>,
}

/// Receives what a script printed: the file and the text.
pub type PrintSink = Arc<dyn Fn(&str, &str) + Send + Sync>;

impl StarlarkFunction {
    /// A function running scripts on worker threads, each job on `runner`, with an
    /// OCI resolver of default settings (`IfNotPresent`).
    pub fn new(runner: Arc<dyn Runs>, settings: Settings, metrics: Metrics) -> Self {
        Self::with_engine(Arc::new(Engine::threads(runner)), settings, metrics)
    }

    /// A function running scripts on `engine`.
    pub fn with_engine(engine: Arc<Engine>, settings: Settings, metrics: Metrics) -> Self {
        StarlarkFunction {
            engine,
            settings: Arc::new(settings),
            metrics,
            oci: Arc::new(OciResolver::default()),
            inputs: Arc::default(),
            prints: None,
        }
    }

    /// The same function, handing what scripts print to `sink` too.
    #[must_use]
    pub fn with_prints(mut self, sink: PrintSink) -> Self {
        self.prints = Some(sink);
        self
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

    /// The inputs checked before, which read a request's input first.
    pub fn inputs(&self) -> &CheckedCache {
        &self.inputs
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
        self.handle_bytes_within(bytes, None).await
    }

    /// Answers one request as it came off the wire, within `deadline` (the
    /// caller's gRPC deadline, when it gave one) as well as the run's own
    /// time limit.
    pub async fn handle_bytes_within(
        &self,
        bytes: Bytes,
        deadline: Option<Duration>,
    ) -> Result<Bytes, Status> {
        depth::check_request(&bytes).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let cannot_decode =
            |e| Status::invalid_argument(format!("cannot decode the RunFunctionRequest: {e}"));
        // From `Bytes`, the input's bytes are a view of the request, not a copy.
        let mut head = RequestHead::decode(bytes.clone()).map_err(cannot_decode)?;
        let input = self
            .inputs
            .read(&std::mem::take(&mut head.input))
            .map_err(cannot_decode)?;
        let tag = head
            .meta
            .as_ref()
            .map(|m| m.tag.clone())
            .unwrap_or_default();
        // Every log line of the request carries its tag through this span.
        let span = tracing::info_span!("run_function", tag = %tag);
        self.handle_tagged(bytes, head, input, deadline)
            .instrument(span)
            .await
    }

    async fn handle_tagged(
        &self,
        bytes: Bytes,
        head: RequestHead,
        input: Input,
        deadline: Option<Duration>,
    ) -> Result<Bytes, Status> {
        let started = Instant::now();
        let (answer, series) = self.run(bytes, head, input, started, deadline).await;
        let outcome = answer.outcome();
        self.metrics.result(outcome);
        series.reconciliations().inc();
        series
            .reconciliation_duration()
            .observe(started.elapsed().as_secs_f64());
        let script = series.script();
        tracing::info!(
            script,
            xr_kind = answer.xr_kind,
            xr_name = answer.xr_name,
            outcome = outcome.label(),
            emitted = answer.emitted,
            deferred = answer.deferred,
            skipped = answer.skipped,
            ticks = answer.ticks,
            peak_bytes = answer.peak_bytes,
            duration_ms = started.elapsed().as_secs_f64() * 1000.0,
            error = answer.failure.as_deref().unwrap_or(""),
            "run function"
        );
        respond(answer)
    }

    /// The answer, and the series its metrics go under.
    async fn run(
        &self,
        bytes: Bytes,
        head: RequestHead,
        input: Input,
        started: Instant,
        deadline: Option<Duration>,
    ) -> (Answer, Arc<Series>) {
        let checked = match self.plan(input).await {
            Ok(Plan::Passthrough { filename }) => {
                let series = self.metrics.series(&filename);
                let answer = match codec::decode(&bytes) {
                    Ok(request) => {
                        let mut rsp = response::to(&request, response::DEFAULT_TTL);
                        response::normal(&mut rsp, PASSTHROUGH_MESSAGE);
                        Answer {
                            response: codec::encode(rsp),
                            ..Answer::default()
                        }
                    }
                    Err(refusal) => Answer {
                        status: Some(refusal),
                        outcome: Outcome::InputError as i32,
                        ..Answer::default()
                    },
                };
                return (answer, series);
            }
            Ok(Plan::Run(checked)) => checked,
            Err(e) => return (failed(&bytes, &e), self.metrics.unresolved()),
        };
        let series = self.metrics.series(&checked.script.filename);
        let request = head.into_request();
        log_capabilities(&request);
        let gather = Sources::gather(&checked, &self.oci, &request);
        let gathered = match deadline {
            None => gather.await,
            Some(deadline) => {
                let left = deadline.saturating_sub(started.elapsed());
                let Ok(gathered) = tokio::time::timeout(left, gather).await else {
                    let e = Error::Modules(format!(
                        "resolving modules took longer than the {}s the caller allowed for the call",
                        deadline.as_secs_f64()
                    ));
                    return (failed(&bytes, &e), series);
                };
                gathered
            }
        };
        if let Some(elapsed) = gathered.oci_resolve {
            series.oci_resolve_duration().observe(elapsed.as_secs_f64());
        }
        let sources = match gathered.sources {
            Ok(sources) => sources,
            Err(e) => return (failed(&bytes, &e), series),
        };
        // The run gets what is left of the caller's deadline, when that is
        // sooner than the time limit.
        let mut timeout = self.engine.limits().timeout;
        if let Some(deadline) = deadline {
            timeout = timeout.min(deadline.saturating_sub(started.elapsed()));
        }
        let job = Job::of(bytes, *checked, &sources, timeout);
        let answer = self.engine.run(job).await;
        for print in &answer.prints {
            tracing::debug!(script = print.script, msg = %print.text, "starlark print");
            if let Some(sink) = &self.prints {
                sink(&print.script, &print.text);
            }
        }
        record(&answer, &series);
        (answer, series)
    }

    /// What to do with a request's input, as [`Self::inputs`] read it:
    /// the plan of an input seen before, else the input decoded and
    /// checked (and kept when it can be, see [`CheckedCache::keep`]).
    pub async fn plan(&self, input: Input) -> Result<Plan, Error> {
        let (input, key, encoded) = match input {
            Input::Known(kept) => return Ok(Plan::Run(Box::new(kept.checked().clone()))),
            Input::Decoded {
                input,
                key,
                encoded,
            } => (input, key, encoded),
        };
        // `check` reads the script that `script_filename` found named.
        let input = input::decode(input.as_ref()).and_then(|input| {
            input::script_filename(&input, &self.settings.scripts_dir).map(|_| input)
        })?;
        if input
            .spec
            .as_ref()
            .is_some_and(|s| s.script_config_ref.is_some())
        {
            // A mounted script is read from disk: off the async threads.
            let settings = Arc::clone(&self.settings);
            return tokio::task::spawn_blocking(move || input::check(input, &settings))
                .await
                .unwrap_or_else(|e| {
                    Err(Error::ScriptConfig(format!(
                        "reading the mounted script: {e}"
                    )))
                });
        }
        let plan = input::check(input, &self.settings)?;
        if let Plan::Run(checked) = &plan {
            self.inputs.keep(key, &encoded, checked);
        }
        Ok(plan)
    }
}

/// Records what the run of `answer` cost and did under its script's series.
fn record(answer: &Answer, series: &Series) {
    series
        .execution_duration()
        .observe(Duration::from_nanos(answer.run_nanos).as_secs_f64());
    #[allow(clippy::cast_precision_loss)]
    {
        series.run_ticks().observe(answer.ticks as f64);
        series.run_peak_bytes().observe(answer.peak_bytes as f64);
    }
    for compilation in &answer.compilations {
        if compilation.hit {
            series.cache_hits().inc();
        } else {
            series.cache_misses().inc();
        }
    }
    if answer.skipped > 0 {
        series
            .resources_skipped(&answer.xr_kind)
            .inc_by(answer.skipped);
    }
    if answer.emitted > 0 {
        series.resources_emitted().inc_by(answer.emitted);
    }
    if answer.deferred > 0 {
        series.resources_deferred().inc_by(answer.deferred);
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
