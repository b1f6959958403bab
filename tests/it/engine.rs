//! The pool of worker processes with one worker, driven in-process: a job
//! sent behind another one still gets its own answer, soon, whatever the
//! one ahead of it does (dies, runs long, takes a little too long). Each
//! test takes the pool's other rules out of play with [`Pool::timing`].

use crate::common::runtime;
use crate::support;

use std::time::{Duration, Instant};

use function_sdk_rust::proto::v1::RunFunctionResponse;
use function_starlark::limits::Limits;
use function_starlark::transport::processes::Pool;
use function_starlark::transport::worker::Config;
use function_starlark::wire::{Answer, Job};
use prost::Message;
use serde_json::Value;

/// Longer than any test runs: a rule that never fires.
const NEVER: Duration = Duration::from_hours(1);

/// A pool of one worker (so that a second job waits behind the first),
/// started from the built binary, withdrawing a job after `withdraw_after`
/// behind a run and demoting a run after `demote_after`.
fn pool(limits: Limits, withdraw_after: Duration, demote_after: Duration) -> Pool {
    pool_of(support::this_binary(), limits, withdraw_after, demote_after)
}

/// [`pool`], its workers started as `exe`.
fn pool_of(
    exe: std::path::PathBuf,
    limits: Limits,
    withdraw_after: Duration,
    demote_after: Duration,
) -> Pool {
    let limits = Limits {
        concurrency: 1,
        ..limits
    };
    Pool::new(Config::new(&limits, 16, false))
        .expect("a pool")
        .spawning(exe)
        .timing(withdraw_after, demote_after)
}

/// Encoding a structure that shares itself `depth` times over: the work
/// doubles with each level (18 takes about 1 s in a debug build, 75 ms in
/// a release build; 64 runs until the wall-clock limit).
fn shared_encoding(depth: u32) -> String {
    format!(
        "def build():\n    d = {{}}\n    for i in range({depth}):\n        d = {{\"a\": d, \"b\": d}}\n    return d\nx = json.encode(build())\n"
    )
}

fn job(source: &str) -> Job {
    Job {
        request: support::request(source, &Value::Null, Vec::new()),
        filename: "composition.star".to_owned(),
        source: source.to_owned(),
        timeout_ms: 10_000,
        ..Job::default()
    }
}

/// The `who` status field the script set, or the Fatal message.
fn outcome(answer: &Answer) -> Result<String, String> {
    if let Some(failure) = &answer.failure {
        return Err(failure.clone());
    }
    let rsp = RunFunctionResponse::decode(answer.response.clone()).expect("a response");
    let status = rsp
        .desired
        .and_then(|d| d.composite)
        .and_then(|c| c.resource)
        .and_then(|r| r.fields.get("status").cloned())
        .expect("a status");
    let json = function_sdk_rust::resource::pb_to_json(&status);
    Ok(json["who"].as_str().unwrap_or_default().to_owned())
}

/// A script that sets `status.who` after `work`.
fn who(name: &str, work: &str) -> String {
    format!("{work}set_xr_status(\"who\", \"{name}\")\n")
}

/// Runs `first`, then (once it has started) `second`, on the pool; both
/// answers and how long each took.
fn run_two(pool: &Pool, first: Job, second: Job) -> ((Answer, Duration), (Answer, Duration)) {
    runtime().block_on(async {
        // The worker is started (and warm) before the jobs come.
        pool.warm_up().await.expect("a worker starts");
        let started = Instant::now();
        let a = async {
            let answer = pool.run(first).await;
            (answer, started.elapsed())
        };
        let b = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let sent = Instant::now();
            let answer = pool.run(second).await;
            (answer, sent.elapsed())
        };
        tokio::join!(a, b)
    })
}

#[test]
fn a_job_behind_a_worker_that_dies_is_run_by_the_next_worker() {
    let pool = pool(
        Limits {
            max_heap_bytes: 64 << 20,
            ..Limits::default()
        },
        NEVER,
        NEVER,
    );
    // A native call asking for far more than the budget at once ends the
    // worker, after work that keeps it busy while the second job comes.
    let bomb = format!("{}y = list(range(40000000))\n", shared_encoding(16));
    let ((a, _), (b, _)) = run_two(&pool, job(&bomb), job(&who("b", "")));
    let failure = outcome(&a).expect_err("the bomb fails");
    assert!(failure.contains("memory budget"), "{failure}");
    assert_eq!(outcome(&b), Ok("b".to_owned()), "the job behind it ran");
}

#[test]
fn a_job_behind_a_long_run_is_answered_long_before_the_run_ends() {
    let pool = pool(
        Limits {
            timeout: Duration::from_secs(4),
            ..Limits::default()
        },
        NEVER,
        Duration::from_millis(100),
    );
    // Demoted after 100 ms, the long run gives the job behind it back.
    let ((a, a_took), (b, b_took)) = run_two(&pool, job(&shared_encoding(64)), job(&who("b", "")));
    let failure = outcome(&a).expect_err("the long run fails");
    assert!(failure.contains("wall-clock limit"), "{failure}");
    assert!(
        a_took >= Duration::from_secs(3),
        "the long run ran: {a_took:?}"
    );
    assert_eq!(outcome(&b), Ok("b".to_owned()));
    assert!(
        b_took < Duration::from_secs(2),
        "the job behind the long run waited {b_took:?}"
    );
}

#[test]
fn a_job_withdrawn_from_behind_a_run_is_skipped_there_and_answered_once() {
    let pool = pool(Limits::default(), Duration::from_millis(20), NEVER);
    // The run outlasts the 20 ms a job may wait behind it: that job goes
    // back to the queue, the worker skips its copy after the run, then
    // runs it as the queue's next job. Each gets its own answer.
    let slow = who("a", &shared_encoding(18));
    let ((a, a_took), (b, _)) = run_two(&pool, job(&slow), job(&who("b", "")));
    assert_eq!(outcome(&a), Ok("a".to_owned()));
    assert_eq!(outcome(&b), Ok("b".to_owned()));
    assert!(
        a_took > Duration::from_millis(40),
        "the first run must outlast the wait a job behind it is allowed ({a_took:?})"
    );
}

/// The resident bytes of this process's children started as `exe`,
/// summed (other tests start workers of their own beside this one).
fn resident_of(exe: &std::path::Path) -> u64 {
    let exe = exe.to_string_lossy().into_owned();
    support::tree(std::process::id())
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with(exe.as_bytes()))
        })
        .map(support::process_resident_kib)
        .sum::<u64>()
        * 1024
}

#[test]
fn a_worker_left_without_jobs_hands_back_what_its_runs_freed() {
    // The worker is started through a link of its own, to be told apart.
    let dir = std::env::temp_dir().join(format!("starlark-tidy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let exe = dir.join("tidy-worker");
    let _ = std::fs::remove_file(&exe);
    std::os::unix::fs::symlink(support::this_binary(), &exe).expect("a link");
    // The wall-clock limits (the pool's and the job's) are raised out of
    // the way, as for the server's run in tests/it/operability.rs: a debug
    // build on a slow machine under the parallel tests' load can take
    // longer than 10 s.
    let limits = Limits {
        timeout: Duration::from_mins(2),
        ..Limits::default()
    };
    let pool = pool_of(exe.clone(), limits, NEVER, NEVER);
    runtime().block_on(async {
        pool.warm_up().await.expect("a worker starts");
        // About 40 MB of strings, all dropped when the run ends.
        let heavy = who("a", "x = len([str(i) * 50 for i in range(100000)])\n");
        let heavy = Job {
            timeout_ms: u64::try_from(pool.limits().timeout.as_millis()).expect("two minutes"),
            ..job(&heavy)
        };
        assert_eq!(outcome(&pool.run(heavy).await), Ok("a".to_owned()));
        let after_run = resident_of(&exe);
        tokio::time::sleep(Duration::from_millis(3500)).await;
        let idle = resident_of(&exe);
        assert!(
            idle > 0 && idle + (16 << 20) < after_run,
            "resident {} MiB after the run, {} MiB idle",
            after_run >> 20,
            idle >> 20
        );
    });
    drop(pool);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A request's future is copied as it is built (each async function's
/// future moved into its caller's, the whole into its box); the OCI
/// steps, which most requests never take, are boxed so that they do not
/// make it kilobytes larger (8.6 KB before, in this test build).
#[test]
fn a_request_future_stays_small() {
    let function = crate::common::function();
    let future = function.handle_bytes_within(bytes::Bytes::new(), None);
    let size = std::mem::size_of_val(&future);
    assert!(size <= 4096, "a request's future is {size} bytes");
}
