//! What an operator sees of the real server: the outcome counter, bounded
//! `script` labels, one log line per request (and no secrets in any),
//! deadlines (the caller's, OCI registries'), the size limit, and a clean
//! shutdown on SIGTERM.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use function_sdk_rust::proto::v1::{
    CredentialData, Credentials, Resource, RunFunctionRequest, RunFunctionResponse, Severity,
    State, credentials,
};
use prost::Message;
use serde_json::{Value, json};
use support::{call, connect, free_port, request, runtime, to_struct};

/// A server whose log lines are kept.
struct Logged {
    child: Child,
    address: String,
    metrics: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Logged {
    let address = format!("127.0.0.1:{}", free_port());
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(support::this_binary())
        .args([
            "--insecure",
            "--address",
            &address,
            "--metrics-address",
            &metrics,
        ])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the function starts");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let stderr = child.stderr.take().expect("stderr is piped");
    let kept = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            kept.lock().unwrap().push(line);
        }
    });
    let server = Logged {
        child,
        address,
        metrics,
        lines,
    };
    let rt = runtime();
    let deadline = Instant::now() + Duration::from_secs(30);
    rt.block_on(async {
        loop {
            assert!(
                Instant::now() < deadline,
                "the server did not answer in time"
            );
            if let Ok(channel) = connect(&server.address).await
                && call(channel, request("x = 1\n", &Value::Null, Vec::new()))
                    .await
                    .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    server
}

fn scrape(address: &str) -> String {
    let mut conn = std::net::TcpStream::connect(address).expect("the metrics endpoint");
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("a request");
    let mut out = String::new();
    conn.read_to_string(&mut out).expect("an answer");
    out
}

/// The value of the first counter sample whose line contains every
/// fragment.
fn sample(metrics: &str, fragments: &[&str]) -> u64 {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| fragments.iter().all(|f| l.contains(f)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

fn send(address: &str, bytes: Bytes) -> Result<RunFunctionResponse, tonic::Status> {
    runtime().block_on(async {
        let channel = connect(address).await.expect("a connection");
        call(channel, bytes)
            .await
            .map(|b| RunFunctionResponse::decode(b).expect("a response"))
    })
}

/// Sends `x = 1` and checks it is answered without a Fatal result.
fn answers_a_trivial_script(server: &Logged) {
    let rsp = send(
        &server.address,
        request("x = 1\n", &Value::Null, Vec::new()),
    )
    .expect("an answer");
    assert_eq!(fatal(&rsp), None);
}

fn fatal(rsp: &RunFunctionResponse) -> Option<&str> {
    rsp.results
        .iter()
        .find(|r| r.severity == Severity::Fatal as i32)
        .map(|r| r.message.as_str())
}

fn input_request(input: &Value) -> Bytes {
    Bytes::from(
        RunFunctionRequest {
            input: Some(to_struct(input)),
            ..RunFunctionRequest::default()
        }
        .encode_to_vec(),
    )
}

#[test]
fn every_outcome_class_moves_its_counter() {
    // Time enough for a debug build to spend its steps on a busy machine;
    // the time limit has a server of its own.
    let server = start(&["--timeout-seconds", "120"]);
    let hurried = start(&["--timeout-seconds", "1"]);
    let cases: Vec<(&str, Bytes)> = vec![
        ("ok", request("x = 1\n", &Value::Null, Vec::new())),
        (
            "script_error",
            request("x = 1 + \"a\"\n", &Value::Null, Vec::new()),
        ),
        (
            "fatal",
            request("fatal(\"stop\")\n", &Value::Null, Vec::new()),
        ),
        (
            "step_limit",
            request("while True:\n    pass\n", &Value::Null, Vec::new()),
        ),
        (
            "heap_limit",
            request(
                "def f():\n    l = [1]\n    for i in range(100):\n        l += l\nf()\n",
                &Value::Null,
                Vec::new(),
            ),
        ),
        (
            "time_limit",
            request(
                "def build():\n    d = {\"end\": 1}\n    for i in range(64):\n        d = {\"a\": d, \"b\": d}\n    return d\nx = build() == build()\n",
                &Value::Null,
                Vec::new(),
            ),
        ),
        (
            "input_error",
            input_request(&json!({"spec": {"sourc": "x = 1"}})),
        ),
        (
            "module_error",
            request("load(\"missing.star\", \"x\")\n", &Value::Null, Vec::new()),
        ),
    ];
    for (class, bytes) in cases {
        let server = if class == "time_limit" {
            &hurried
        } else {
            &server
        };
        let before = sample(
            &scrape(&server.metrics),
            &[
                "function_starlark_results_total",
                &format!("outcome=\"{class}\""),
            ],
        );
        let _ = send(&server.address, bytes);
        let after = sample(
            &scrape(&server.metrics),
            &[
                "function_starlark_results_total",
                &format!("outcome=\"{class}\""),
            ],
        );
        assert_eq!(after, before + 1, "{class}: the counter moves by one");
    }
}

#[test]
fn script_labels_are_bounded_and_unknown_names_are_not_labels() {
    let dir = tempfile::tempdir().expect("a scripts directory");
    for i in 0..230 {
        let config = dir.path().join(format!("cm{i}"));
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join(format!("s{i}.star")), "x = 1\n").unwrap();
    }
    let scripts = dir.path().to_str().unwrap().to_owned();
    let server = start(&["--scripts-dir", &scripts]);
    let by_name = |name: &str, key: &str| {
        input_request(&json!({"spec": {"scriptConfigRef": {"name": name, "key": key}}}))
    };
    for i in 0..230 {
        let rsp = send(
            &server.address,
            by_name(&format!("cm{i}"), &format!("s{i}.star")),
        )
        .expect("an answer");
        assert_eq!(fatal(&rsp), None);
    }
    for i in 0..300 {
        let rsp = send(
            &server.address,
            by_name(&format!("typo{i}"), &format!("k{i}.star")),
        )
        .expect("an answer");
        assert!(fatal(&rsp).is_some(), "a missing script is a Fatal result");
    }
    let metrics = scrape(&server.metrics);
    let labels: std::collections::BTreeSet<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("function_starlark_reconciliations_total"))
        .filter_map(|l| l.split("script=\"").nth(1)?.split('"').next())
        .collect();
    assert!(
        labels.len() <= function_starlark::metrics::MAX_SCRIPT_LABELS + 2,
        "{} labels",
        labels.len()
    );
    assert!(
        labels.contains("other") && labels.contains("(unresolved)"),
        "{labels:?}"
    );
    assert!(
        !labels.iter().any(|l| l.starts_with('k')),
        "no label from a name that did not resolve"
    );
    assert!(
        server
            .lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("script=\\\"other\\\"")),
        "a warning names the cap"
    );
}

#[test]
fn each_request_logs_one_line_with_its_fields_and_no_secret() {
    let server = start(&["--debug"]);
    let secret = "s3cr3t-value-1234";
    let mut req = RunFunctionRequest::decode(request(
        "set_connection_details({\"password\": get(oxr, \"spec.password\", \"\")})\nResource(\"r\", {\"apiVersion\": \"v1\", \"kind\": \"C\"}, connection_details={\"token\": \"s3cr3t-value-1234\"})\nprint(\"hello from the script\")\n",
        &Value::Null,
        Vec::new(),
    ))
    .unwrap();
    req.meta = Some(function_sdk_rust::proto::v1::RequestMeta {
        tag: "tag-7".into(),
        ..Default::default()
    });
    req.observed = Some(State {
        composite: Some(Resource {
            resource: Some(to_struct(
                &json!({"apiVersion": "x/v1", "kind": "XDatabase", "metadata": {"name": "db-1"}, "spec": {"password": secret}}),
            )),
            connection_details: [("password".to_owned(), secret.as_bytes().to_vec())]
                .into_iter()
                .collect(),
            ..Resource::default()
        }),
        ..State::default()
    });
    req.credentials.insert(
        "registry".into(),
        Credentials {
            source: Some(credentials::Source::CredentialData(CredentialData {
                data: [("token".to_owned(), secret.as_bytes().to_vec())]
                    .into_iter()
                    .collect(),
            })),
        },
    );
    let rsp = send(&server.address, Bytes::from(req.encode_to_vec())).expect("an answer");
    assert_eq!(fatal(&rsp), None);
    std::thread::sleep(Duration::from_millis(200));
    let lines = server.lines.lock().unwrap().clone();
    // The debug log is for people: fields read `key=value`. Its stderr is
    // a pipe here, as in a pod, so no colour codes.
    assert!(
        !lines.iter().any(|l| l.contains('\u{1b}')),
        "no ANSI escape in a log that is not a terminal: {lines:#?}"
    );
    let line = lines
        .iter()
        .find(|l| l.contains("run function") && l.contains("tag-7"))
        .unwrap_or_else(|| panic!("a line for the request in {lines:#?}"));
    for field in [
        "script=\"composition.star\"",
        "xr_kind=\"XDatabase\"",
        "xr_name=\"db-1\"",
        "outcome=\"ok\"",
        "emitted=1",
        "deferred=0",
        "skipped=0",
        "ticks=",
        "peak_bytes=",
        "duration_ms=",
    ] {
        assert!(line.contains(field), "{field} in {line}");
    }
    assert!(
        lines.iter().any(|l| l.contains("starlark print")
            && l.contains("hello from the script")
            && l.contains("tag-7")),
        "print() at debug with the request's fields"
    );
    assert!(
        !lines.iter().any(|l| l.contains(secret)),
        "no secret in the log"
    );
}

#[test]
fn a_call_deadline_ends_the_run_and_frees_its_worker() {
    let server = start(&["--timeout-seconds", "30"]);
    let rt = runtime();
    let pid = server.child.id();
    let started = Instant::now();
    let status = rt.block_on(async {
        let channel = connect(&server.address).await.unwrap();
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.unwrap();
        let mut req = tonic::Request::new(request(
            "def spin():\n    n = 0\n    for i in range(1 << 40):\n        n += i\nspin()\n",
            &Value::Null,
            Vec::new(),
        ));
        req.set_timeout(Duration::from_secs(2));
        grpc.unary::<_, Bytes, _>(
            req,
            tonic::codegen::http::uri::PathAndQuery::from_static(
                "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction",
            ),
            support::RawCodec,
        )
        .await
    });
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the call ended at its deadline"
    );
    let _ = status;
    // The run stops with the caller's deadline: soon after, the worker
    // processes spend no CPU. Only they are counted (the server tidies its
    // memory a second after the call, on its own time), and the quiet half
    // second may come a little late on a busy machine; a run still
    // spinning never gives one.
    let ticks = || {
        support::tree(pid)
            .into_iter()
            .filter(|&p| p != pid)
            .map(cpu_ticks)
            .sum::<u64>()
    };
    let quiet_by = Instant::now() + Duration::from_secs(3);
    let mut quiet = false;
    while !quiet && Instant::now() < quiet_by {
        let before = ticks();
        std::thread::sleep(Duration::from_millis(500));
        quiet = ticks() <= before + 2;
    }
    assert!(quiet, "a worker is still busy after the deadline");
}

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    // Fields 14 and 15 of stat (utime and stime) counted from the state
    // letter, field 3; taken by position, since some fields before them
    // may be negative (tpgid is -1 without a terminal).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    field(14).unwrap_or(0) + field(15).unwrap_or(0)
}

#[test]
fn an_oversized_request_is_resource_exhausted() {
    let server = start(&["--max-recv-message-size", "100000"]);
    let big = "x = 1\n".repeat(40_000);
    let status = send(&server.address, request(&big, &Value::Null, Vec::new())).unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    assert!(
        status.message().contains("--max-recv-message-size"),
        "{status:?}"
    );
}

#[test]
fn a_trickling_registry_fails_the_request_at_the_fetch_timeout_naming_it() {
    // A registry that answers one byte every second, forever.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let registry = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
                let mut buf = [0u8; 1024];
                let _ = conn.read(&mut buf);
                for b in b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
                    .iter()
                    .cycle()
                {
                    if conn.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
        }
    });
    let server = start(&["--oci-fetch-timeout", "2s"]);
    let address = server.address.clone();
    let slow = std::thread::spawn(move || {
        let started = Instant::now();
        let rsp = send(
            &address,
            request(
                &format!("load(\"oci://{registry}/x/lib:v1/a.star\", \"f\")\n"),
                &Value::Null,
                Vec::new(),
            ),
        )
        .expect("an answer");
        (started.elapsed(), fatal(&rsp).map(str::to_owned), registry)
    });
    // Meanwhile, other requests are answered.
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    answers_a_trivial_script(&server);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "another request waited on the registry"
    );
    let (took, message, registry) = slow.join().unwrap();
    let message = message.expect("a Fatal result");
    assert!(took < Duration::from_secs(6), "answered after {took:?}");
    assert!(
        message.contains(&registry) && message.contains("--oci-fetch-timeout"),
        "{message}"
    );
}

#[test]
fn sigterm_lets_calls_in_flight_finish_then_exits_zero() {
    // The 8 runs queue behind the workers and take about a second each
    // in a debug build: on a machine busy with other work they need tens
    // of seconds, so the grace period is long enough for any of them.
    let mut server = start(&["--shutdown-grace-seconds", "120"]);
    let address = server.address.clone();
    let slow = "def wait():\n    n = 0\n    for i in range(100000):\n        n += i\n    return n\nx = wait()\n";
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let address = address.clone();
            std::thread::spawn(move || send(&address, request(slow, &Value::Null, Vec::new())))
        })
        .collect();
    // Signal once every call is in flight (started by the server, beside
    // the one `start` sent): a call still connecting when the server stops
    // accepting is not one of the calls this test is about, and on a busy
    // machine 8 connections can take a while.
    let deadline = Instant::now() + Duration::from_secs(20);
    while sample(&scrape(&server.metrics), &["grpc_server_started_total"]) < 9 {
        assert!(Instant::now() < deadline, "the 8 calls did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = Instant::now();
    Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    for call in calls {
        let rsp = call.join().unwrap().expect("answered during the drain");
        assert_eq!(fatal(&rsp), None);
    }
    let status = server.child.wait().expect("the server exits");
    assert!(status.success(), "exit status {status}");
    assert!(
        signalled.elapsed() < Duration::from_mins(2),
        "within the grace period"
    );
}

#[test]
fn a_worker_whose_server_died_stops_its_run() {
    // A run the step counter cannot stop (one call iterating a trillion
    // numbers) and the wall clock would stop only after ten minutes: the
    // server that would kill it dies instead, without a word to its
    // worker.
    let mut server = start(&["--timeout-seconds", "600"]);
    let address = server.address.clone();
    let endless = "x = max(range(1000000000000))\n";
    std::thread::spawn(move || send(&address, request(endless, &Value::Null, Vec::new())));
    let deadline = Instant::now() + Duration::from_secs(30);
    let busy = loop {
        let tree = support::tree(server.child.id());
        if let Some(busy) = tree[1..].iter().copied().find(|pid| cpu_ticks(*pid) > 50) {
            break busy;
        }
        assert!(Instant::now() < deadline, "no worker took the run");
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = server.child.kill();
    let _ = server.child.wait();
    let deadline = Instant::now() + Duration::from_secs(20);
    while running(busy) {
        assert!(
            Instant::now() < deadline,
            "worker {busy} still runs 20 s after its server died"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether a process exists and has not exited (an orphan that exited
/// stays a zombie until its new parent reaps it).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            Some(!rest.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}

/// The server's worker processes now.
fn workers(server: &Logged) -> usize {
    support::tree(server.child.id()).len() - 1
}

/// Waits until the server's idle workers have exited.
fn wait_for_no_workers(server: &Logged) {
    let until = Instant::now() + Duration::from_secs(10);
    while workers(server) > 0 {
        assert!(
            Instant::now() < until,
            "idle workers still run 10 s after their last request"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_request_during_the_warm_up_waits_for_its_worker() {
    // `start` sends its first request as soon as the port answers, while
    // the warm-up worker is still starting: that request is served by the
    // warm-up worker, not by a second process, and so is the next.
    let server = start(&[]);
    assert_eq!(workers(&server), 1, "one worker after the first request");
    answers_a_trivial_script(&server);
    assert_eq!(
        workers(&server),
        1,
        "the same worker serves the next request"
    );
}

#[test]
fn without_polling_requests_are_answered_by_the_same_worker() {
    // `--worker-poll-micros 0`: the server and the worker sleep on the
    // socket at once instead of polling it first; the answers are the
    // same and the worker is reused.
    let server = start(&["--worker-poll-micros", "0"]);
    for _ in 0..3 {
        answers_a_trivial_script(&server);
    }
    assert_eq!(workers(&server), 1, "one worker served every request");
}

#[test]
fn idle_workers_exit_and_the_next_request_starts_one() {
    // 3 s: on a loaded machine starting the server can take more than 1 s,
    // and the first worker must still be there to be seen.
    let server = start(&["--worker-idle-seconds", "3", "--debug"]);
    assert!(workers(&server) >= 1, "a worker answered the first request");
    wait_for_no_workers(&server);
    // Asked to leave, not killed: it ends as a finished process does
    // (a profile-generating build writes its counters then). The line is
    // logged once the worker is reaped, so it may come a little later.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server
        .lines
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.contains("a retired worker exited on its own") && l.contains("exit status: 0"))
    {
        assert!(
            Instant::now() < deadline,
            "the idle worker was not seen leaving on its own"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Only a worker answers: the answer shows one was started for it.
    answers_a_trivial_script(&server);
}

#[test]
fn workers_stay_while_requests_keep_coming() {
    // Requests one at a time, every 0.5 s for 4 s, against a 2 s idle
    // retirement: the worker serving them is never retired for idleness
    // (a slow run retires its worker too, but not as idle, so the check
    // reads the idle retirements the server logs).
    let server = start(&["--worker-idle-seconds", "2", "--debug"]);
    let retirements = || {
        server
            .lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("idle workers exit"))
            .count()
    };
    wait_for_no_workers(&server);
    let before = retirements();
    for _ in 0..8 {
        send(
            &server.address,
            request("x = 1\n", &Value::Null, Vec::new()),
        )
        .expect("an answer");
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        retirements(),
        before,
        "a worker serving a request every 0.5 s was retired as idle"
    );
    // Once idle, it is retired and logged: the count above could move.
    // (The first workers may have left as slow runs on a loaded machine,
    // which logs nothing.)
    wait_for_no_workers(&server);
    assert!(
        retirements() > before,
        "the busy worker's idle retirement is logged"
    );
}

/// Reads the server process's resident memory (its workers' not
/// included) now and once it has been quiet for a while, and checks it
/// handed back more than `at_least` bytes.
fn assert_hands_back(server: &Logged, at_least: u64) {
    let resident = || support::process_resident_kib(server.child.id()) * 1024;
    let after_calls = resident();
    std::thread::sleep(Duration::from_millis(3500));
    let quiet = resident();
    assert!(
        quiet + at_least < after_calls,
        "resident {} MiB after the calls, {} MiB once quiet",
        after_calls >> 20,
        quiet >> 20
    );
}

#[test]
fn a_quiet_server_hands_back_what_its_runs_freed() {
    // On threads the runs allocate in the server itself: about 40 MB of
    // strings each, dropped when the run ends, which the allocator would
    // keep for reuse. A second after the last call the server returns it.
    // The wall-clock limit is raised out of the way: a debug build on a
    // slow machine, under the parallel tests' load, took more than the
    // default 10 s for one run.
    let server = start(&["--isolation", "threads", "--timeout-seconds", "120"]);
    let heavy = request(
        "x = len([str(i) * 50 for i in range(100000)])\n",
        &Value::Null,
        Vec::new(),
    );
    for _ in 0..2 {
        let rsp = send(&server.address, heavy.clone()).expect("an answer");
        assert_eq!(fatal(&rsp), None);
    }
    assert_hands_back(&server, 16 << 20);
}

#[test]
fn a_quiet_server_hands_back_what_a_burst_of_large_requests_used() {
    // Sixteen requests of about 1 MB at once: the server holds them all
    // while its worker runs them one by one, then frees them, and the
    // allocator would keep that memory for reuse.
    let server = start(&[]);
    let observed: Vec<(String, Value)> = (0..100)
        .map(|i| {
            let filler = "x".repeat(10_000);
            (
                format!("r{i}"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"filler": filler}}),
            )
        })
        .collect();
    let large = request("x = len(observed)\n", &Value::Null, observed);
    runtime().block_on(async {
        let channel = connect(&server.address).await.expect("a connection");
        let calls: Vec<_> = (0..16)
            .map(|_| tokio::spawn(call(channel.clone(), large.clone())))
            .collect();
        for answer in calls {
            answer.await.expect("a call").expect("an answer");
        }
    });
    assert_hands_back(&server, 8 << 20);
}
