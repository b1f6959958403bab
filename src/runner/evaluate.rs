//! One job, start to end, on the current thread: the request decoded, the
//! script run, its effects applied to the response, the response encoded.
//! This is what a runtime does for the transport ([`Runs`]), in a worker
//! process or on a worker thread alike.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use function_sdk_rust::response;

use super::run;
use super::runtime::Runtime;
use crate::apply::{self, DependencySettings};
use crate::error::Error;
use crate::input::{Script, UsageApi};
use crate::limits::Limits;
use crate::meter::Meter;
use crate::wire::codec::{decode, outcome_of, truncate, truncate_messages};
use crate::wire::job::{Answer, Compilation, Job, Outcome, Print, Runs};
use crate::wire::response::encode_response;

impl Runs for Runtime {
    fn run(&self, job: Job, cancel: &AtomicBool, hard: bool) -> Answer {
        evaluate(self, job, cancel, hard)
    }

    fn limits(&self) -> &Limits {
        Runtime::limits(self)
    }
}

/// Runs `job` on the current thread, metering its memory (`hard`: going
/// over the budget aborts the process, for worker processes).
fn evaluate(runtime: &Runtime, mut job: Job, cancel: &AtomicBool, hard: bool) -> Answer {
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
        run::Outcome::Failed(Error::Fatal(message)) => {
            answer.failure = Some(message.clone());
            answer.outcome = Outcome::Fatal as i32;
            apply::apply_fatal(&mut rsp, effects, message);
            Ok(())
        }
        run::Outcome::Failed(e) => Err(e),
        run::Outcome::Completed {
            dxr,
            context,
            output,
        } => {
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
                apply::Written {
                    dxr,
                    context,
                    output,
                },
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
    answer.response = encode_response(rsp, bodies);
    answer.peak_bytes = Meter::peak() as u64;
    answer.run_nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    drop(meter);
    answer
}
