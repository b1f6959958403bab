//! One job, start to end, on the current thread: the request decoded, the
//! script run, its effects applied to the response, the response encoded.
//! Worker processes and in-process worker threads both run jobs here.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use bytes::Bytes;
use function_sdk_rust::proto::v1::RunFunctionResponse;
use function_sdk_rust::response;

use super::job::{Answer, Compilation, Job, Outcome, Print, Refusal};
use crate::apply::{self, DependencySettings};
use crate::engine::runtime::{self, Runtime};
use crate::error::Error;
use crate::input::{Script, UsageApi};
use crate::meter::Meter;
use crate::request::Request;

/// Runs `job` on the current thread, metering its memory (`hard`: going
/// over the budget aborts the process, for worker processes).
pub fn evaluate(runtime: &Runtime, mut job: Job, cancel: &AtomicBool, hard: bool) -> Answer {
    let started = Instant::now();
    let deadline = started + Duration::from_millis(job.timeout_ms);
    let meter = Meter::start(runtime.limits().max_heap_bytes, hard);
    let request = match decode(&job.request) {
        Ok(request) => Arc::new(request),
        Err(refusal) => {
            return Answer {
                status: Some(refusal),
                outcome: Outcome::InputError as i32,
                ..Answer::default()
            };
        }
    };
    let mut rsp = response::to(&request, response::DEFAULT_TTL);
    let mut bodies = apply::EncodedBodies::new();
    let script = Script {
        filename: std::mem::take(&mut job.filename),
        source: std::mem::take(&mut job.source),
    };
    let sources = job.sources();
    let run = runtime.run_until(&script, &sources, request.clone(), cancel, deadline);
    let effects = &run.context.effects;
    let mut answer = Answer {
        ticks: run.ticks,
        compilations: run
            .context
            .compilations
            .borrow()
            .iter()
            .map(|(script, hit)| Compilation {
                script: script.clone(),
                hit: *hit,
            })
            .collect(),
        skipped: effects.skipped.borrow().len() as u64,
        xr_kind: run.context.xr_kind.clone(),
        xr_name: run.context.xr_name.clone(),
        prints: std::mem::take(&mut *run.context.prints.borrow_mut())
            .into_iter()
            .map(|(script, text)| Print { script, text })
            .collect(),
        ..Answer::default()
    };
    let applied = match run.outcome {
        runtime::Outcome::Failed(Error::Fatal(message)) => {
            answer.failure = Some(message.clone());
            answer.outcome = Outcome::Fatal as i32;
            apply::apply_fatal(&mut rsp, effects, message);
            Ok(())
        }
        runtime::Outcome::Failed(e) => Err(e),
        runtime::Outcome::Completed { dxr, context } => {
            let settings = DependencySettings {
                usage_api: if job.usage_api_v1 {
                    UsageApi::V1
                } else {
                    UsageApi::V2
                },
                sequencing_ttl: job.sequencing_ttl.as_deref(),
                validate_schemas: job.validate_schemas,
            };
            apply::apply_success(
                &mut rsp,
                &mut bodies,
                &request,
                effects,
                dxr,
                context,
                &settings,
            )
            .map(|applied| {
                answer.emitted = applied.emitted as u64;
                answer.deferred = applied.deferred as u64;
            })
        }
    };
    if let Err(e) = applied {
        answer.outcome = if run.context.load_failed.get()
            && matches!(e, Error::Compile(_) | Error::Runtime(_))
        {
            Outcome::ModuleError as i32
        } else {
            outcome_of(&e) as i32
        };
        let message = e.to_string();
        answer.failure = Some(message.clone());
        response::fatal(&mut rsp, message);
    }
    truncate_messages(&mut rsp);
    if let Some(failure) = &mut answer.failure {
        truncate(failure);
    }
    answer.response = super::wire::encode_response(rsp, bodies);
    answer.peak_bytes = Meter::peak() as u64;
    answer.run_nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    drop(meter);
    answer
}

/// The longest message a result or condition carries, in bytes. A
/// message is read by people in `kubectl describe`; a longer one (a
/// script can `fail()` with 100 MB) is cut, saying so.
pub const MAX_MESSAGE_BYTES: usize = 64 << 10;

/// How a cut message ends (after ` ... [truncated: N`).
pub(crate) const TRUNCATED_END: &str = " bytes in all]";

/// Cuts `text` to [`MAX_MESSAGE_BYTES`], at a character boundary.
fn truncate(text: &mut String) {
    truncate_to(text, MAX_MESSAGE_BYTES);
}

/// Cuts `text` to `most` bytes, at a character boundary, saying so.
pub(crate) fn truncate_to(text: &mut String, most: usize) {
    if text.len() <= most {
        return;
    }
    let total = text.len();
    let mut cut = most;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    let _ = write!(text, " ... [truncated: {total}{TRUNCATED_END}");
}

/// Cuts every message of the response (see [`MAX_MESSAGE_BYTES`]).
fn truncate_messages(rsp: &mut RunFunctionResponse) {
    for result in &mut rsp.results {
        truncate(&mut result.message);
    }
    for condition in &mut rsp.conditions {
        if let Some(message) = &mut condition.message {
            truncate(message);
        }
    }
}

/// The request. Its depth was checked by the server before it made a job
/// of it (`StarlarkFunction::handle_bytes_within`): protobuf decodes it
/// without a recursion limit, and walking a 1 MB request again would cost
/// 6% of a run reading 200 observed resources.
pub fn decode(bytes: &Bytes) -> Result<Request, Refusal> {
    debug_assert!(
        super::depth::check_request(bytes).is_ok(),
        "a job's request is checked for depth before it is run"
    );
    Request::decode(bytes).map_err(|e| Refusal {
        code: tonic::Code::InvalidArgument as i32,
        message: format!("cannot decode the RunFunctionRequest: {e}"),
    })
}

/// The response as bytes.
pub fn encode(rsp: RunFunctionResponse) -> Bytes {
    super::wire::encode_response(rsp, apply::EncodedBodies::new())
}

/// The outcome class of a failure.
pub fn outcome_of(e: &Error) -> Outcome {
    match e {
        Error::Fatal(_) => Outcome::Fatal,
        Error::StepLimit => Outcome::StepLimit,
        Error::MemoryLimit { .. } => Outcome::HeapLimit,
        Error::TimeLimit { .. } => Outcome::TimeLimit,
        Error::Input(_)
        | Error::MissingSource
        | Error::ScriptConfig(_)
        | Error::Observed { .. }
        | Error::Globals { .. }
        | Error::SequencingTtl { .. } => Outcome::InputError,
        Error::Modules(_) => Outcome::ModuleError,
        Error::Internal(_) => Outcome::Internal,
        Error::Compile(_)
        | Error::Runtime(_)
        | Error::Dependency(_)
        | Error::Dxr(_)
        | Error::Context(_) => Outcome::ScriptError,
    }
}

/// The answer of a job that ended without one of its own (a run stopped
/// from outside, a worker that died): a Fatal result on the request's
/// copied-forward state.
pub fn failed(request: &Bytes, error: &Error) -> Answer {
    let outcome = outcome_of(error) as i32;
    match decode(request) {
        Ok(request) => {
            let mut rsp = response::to(&request, response::DEFAULT_TTL);
            let mut message = error.to_string();
            truncate(&mut message);
            response::fatal(&mut rsp, message.clone());
            Answer {
                response: encode(rsp),
                outcome,
                failure: Some(message),
                ..Answer::default()
            }
        }
        Err(refusal) => Answer {
            status: Some(refusal),
            outcome: Outcome::InputError as i32,
            ..Answer::default()
        },
    }
}
