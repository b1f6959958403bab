//! Where a request's time goes, in-process: `cargo bench --bench stages`.
//!
//! For each workload of the load benchmark, times (median of many calls,
//! on one thread) the server's share of a call before the run (reading the
//! head and the input, gathering sources, building the job), the job's
//! encoding for a worker process, the run itself as a worker does it
//! (`evaluate`: the request decoded, the script run, the response built
//! and encoded), the same run handed to another thread that sleeps
//! between jobs or polls for them, and the whole handler with worker
//! threads. On the 2-core VM of docs/performance.md, a run handed to a
//! thread that slept took two to ten times as long as the same run on a
//! thread that polled: waking a CPU costs more than the wake-up itself.

#![allow(clippy::cast_precision_loss)]

mod support;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::time::{Duration, Instant};

use bytes::Bytes;
use function_starlark::function::StarlarkFunction;
use function_starlark::input::{Plan, Settings};
use function_starlark::limits::Limits;
use function_starlark::loader::Sources;
use function_starlark::metrics::Metrics;
use function_starlark::runner::Runtime;
use function_starlark::wire::Runs;
use function_starlark::wire::job::{Job, RequestHead};
use prost::Message;
use support::workloads::workloads;

/// The median time of `f` over about `budget` of calls.
fn median(budget: Duration, mut f: impl FnMut()) -> Duration {
    for _ in 0..20 {
        f();
    }
    let mut times = Vec::new();
    let started = Instant::now();
    while started.elapsed() < budget || times.len() < 50 {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

fn settings() -> Settings {
    Settings {
        scripts_dir: "/scripts".into(),
        env: Box::new(|_| None),
    }
}

/// The server's share of a call before the run, as the handler does it.
async fn prepare(function: &StarlarkFunction, bytes: &Bytes) -> Job {
    let mut head = RequestHead::decode(bytes.clone()).expect("a request");
    let input = function
        .inputs()
        .read(&std::mem::take(&mut head.input))
        .expect("an input");
    let Plan::Run(checked) = function.plan(input).await.expect("a checked input") else {
        panic!("a script to run")
    };
    let request = head.into_request();
    let sources = Sources::gather(&checked, function.oci(), &request)
        .await
        .sources
        .expect("sources");
    Job::of(bytes.clone(), *checked, &sources, Duration::from_secs(10))
}

/// Receives from `rx`, asleep on it or polling it (yielding between polls).
fn receive<T>(rx: &Receiver<T>, poll: bool) -> Option<T> {
    if !poll {
        return rx.recv().ok();
    }
    loop {
        match rx.try_recv() {
            Ok(value) => return Some(value),
            Err(TryRecvError::Empty) => std::thread::yield_now(),
            Err(TryRecvError::Disconnected) => return None,
        }
    }
}

/// The median time of `job` handed to another thread and answered, both
/// threads sleeping on their channel or (`poll`) polling it.
fn handed_over(runtime: &Arc<Runtime>, job: &Job, budget: Duration, poll: bool) -> Duration {
    let (jobs_tx, jobs_rx) = channel::<Job>();
    let (answers_tx, answers_rx) = channel();
    let thread_runtime = runtime.clone();
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let cancel = AtomicBool::new(false);
            while let Some(job) = receive(&jobs_rx, poll) {
                let _ = answers_tx.send(thread_runtime.run(job, &cancel, false));
            }
        })
        .expect("a thread");
    let took = median(budget, || {
        jobs_tx.send(job.clone()).expect("sent");
        receive(&answers_rx, poll).expect("an answer");
    });
    drop(jobs_tx);
    let _ = worker.join();
    took
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let budget = Duration::from_secs_f64(
        std::env::var("BENCH_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1.0),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let runtime = Arc::new(Runtime::new(Limits::default(), 64));
    let function = StarlarkFunction::new(runtime.clone(), settings(), Metrics::default());
    let cancel = AtomicBool::new(false);
    println!(
        "| workload | prepare µs | job encode+decode µs | evaluate µs | on a sleeping thread µs | on a polling thread µs | handler (threads) µs |"
    );
    println!("|---|---|---|---|---|---|---|");
    let only = std::env::var("BENCH_ONLY").ok();
    let only_eval = std::env::var_os("BENCH_EVAL_ONLY").is_some();
    for w in workloads().into_iter().filter(|w| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|n| w.name.starts_with(n.trim())))
    }) {
        if only_eval {
            let job = rt.block_on(prepare(&function, &w.request));
            let eval = median(budget, || {
                let _ = runtime.run(job.clone(), &cancel, false);
            });
            println!(
                "| {} | evaluate {:.1} µs |",
                w.name,
                eval.as_secs_f64() * 1e6
            );
            continue;
        }
        let prepare_time = median(budget, || {
            rt.block_on(prepare(&function, &w.request));
        });
        let job = rt.block_on(prepare(&function, &w.request));
        let wire = median(budget, || {
            let bytes = Bytes::from(job.encode_to_vec());
            let _ = Job::decode(bytes).expect("a job");
        });
        let eval = median(budget, || {
            let answer = runtime.run(job.clone(), &cancel, false);
            assert!(answer.failure.is_none(), "{}: {:?}", w.name, answer.failure);
        });
        let on_thread = handed_over(&runtime, &job, budget, false);
        let on_spinning = handed_over(&runtime, &job, budget, true);
        let handler = median(budget, || {
            rt.block_on(function.handle_bytes(w.request.clone()))
                .expect("an answer");
        });
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            w.name,
            us(prepare_time),
            us(wire),
            us(eval),
            us(on_thread),
            us(on_spinning),
            us(handler)
        );
    }
}
