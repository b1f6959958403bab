//! The side-by-side load benchmark: `cargo bench --bench load`.
//!
//! Starts the release server on loopback, loads it over gRPC with
//! pre-serialised requests from a client that keeps responses as raw bytes
//! (decoding them would measure the client; it speaks HTTP/2 with `h2`
//! alone, see `support::h2_client`), and prints p50, p99, requests per
//! second, the server's CPU time per call (its worker processes included)
//! and the client's, idle and peak RSS per workload at concurrency 1 and
//! 16. With `PEER=<binary>` the same runs against another function
//! binary (started with `--insecure --address`) in the same run, and the
//! table gives the ratios this / peer. The two servers run side by side
//! and take turns: each workload and concurrency is measured in rounds,
//! this function then the peer, the order swapped every round, and each
//! server's rounds are pooled. A machine whose speed drifts over minutes
//! (shared VMs do) then slows both alike; measuring one server's whole
//! series after the other's put that drift into the ratios. First, a
//! no-op gRPC server in this process (tonic, as this function's) is
//! measured the same way: what the transport and the client cost on this
//! machine with a server that sleeps between calls.
//!
//! With `BENCH_CLIENT=grpc-go` the load comes from grpc-go instead, the
//! client library Crossplane calls functions with (tools/grpcload, built
//! with `go` on first use): one connection with Crossplane's service
//! config, requests and answers as raw bytes. `BENCH_TLS=1` (with
//! grpc-go) serves and calls over mTLS with certificates laid out as
//! Crossplane mounts them; the no-op row is then left out.
//!
//! Environment: `BENCH_SECONDS` (per workload, concurrency and server,
//! default 3), `BENCH_ROUNDS` (the turns those seconds are cut into,
//! default 2), `BENCH_ONLY` (a comma-separated list of workload names),
//! `BENCH_CONCURRENCY` (default `1,16`), `THIS` (another build of this
//! function, such as the shipped profile-guided one,
//! `target/x86_64-unknown-linux-gnu/release/function-starlark`),
//! `BENCH_ARGS` (extra flags for this function, such as `--isolation
//! threads`), `BENCH_SETTLE` (seconds to wait after the load before
//! reading memory once more; idle workers exit after 60 s), `BENCH_SAVE`
//! (a folder to write each request to, as `<workload>.bin`, for tracing a
//! server under `tools/grpcload` by hand), `BENCH_RATE` (with grpc-go:
//! the callers together start that many calls a second, evenly spaced, as
//! a controller reconciling now and then does; a call's CPU then includes
//! waking up for it, which on a VM is most of it).

// Latencies and sizes become ratios and percentiles: float arithmetic on
// counts far below 2^52.
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

mod support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use function_sdk_rust::proto::v1::{RunFunctionResponse, Severity};
use prost::Message;
use serde_json::Value;
use support::workloads::{Workload, workloads};
use support::{
    Sampler, Server, context_switches, cpu_micros, h2_client, memory_kib, mib, ms, request,
    runtime, start,
};

/// One server's series at one workload and concurrency, its turns pooled.
#[derive(Clone, Copy, Default)]
struct Sample {
    p50: Duration,
    p99: Duration,
    rps: f64,
    errors: usize,
    /// CPU time the server's processes spent per call, in microseconds.
    cpu_us: f64,
    /// Context switches of the server's threads per call (not counted for
    /// the in-process no-op server).
    switches: f64,
    /// CPU time the client spent per call, in microseconds: what the
    /// server could not use of the machine's cores.
    client_us: f64,
}

/// What the turns of one series measured so far.
#[derive(Default)]
struct Series {
    latencies: Vec<Duration>,
    errors: usize,
    /// Seconds under load.
    wall: f64,
    /// Calls made, warm-up included.
    calls: usize,
    client_nanos: u64,
    /// The server's CPU time and context switches (its workers included).
    server_micros: u64,
    server_switches: u64,
}

impl Series {
    fn sample(&self) -> Sample {
        let mut latencies = self.latencies.clone();
        latencies.sort_unstable();
        let at = |q: f64| {
            latencies
                .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
                .copied()
                .unwrap_or_default()
        };
        let per_call = |total: f64| total / self.calls.max(1) as f64;
        Sample {
            p50: at(0.50),
            p99: at(0.99),
            rps: latencies.len() as f64 / self.wall.max(f64::EPSILON),
            errors: self.errors,
            cpu_us: per_call(self.server_micros as f64),
            switches: per_call(self.server_switches as f64),
            client_us: per_call(self.client_nanos as f64 / 1000.0),
        }
    }
}

const WARM_UP_CALLS: usize = 20;

/// `BENCH_RATE`: calls a second from all callers together, 0 for one call
/// after another.
fn rate() -> f64 {
    std::env::var("BENCH_RATE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0)
}

/// Loads the server at `address` with `request` from `concurrency` callers
/// for `seconds`, and adds what it measured to `series`: through the h2
/// client, or through grpc-go when `BENCH_CLIENT=grpc-go`.
fn measure(address: &str, request: &Bytes, concurrency: usize, seconds: f64, series: &mut Series) {
    if let Some(grpcload) = grpc_go() {
        measure_grpc_go(grpcload, address, request, concurrency, seconds, series);
        return;
    }
    measure_h2(address, request, concurrency, seconds, series);
}

/// The grpc-go load tool (tools/grpcload, built on first use into
/// target/), when `BENCH_CLIENT=grpc-go`.
fn grpc_go() -> Option<&'static Path> {
    static TOOL: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    TOOL.get_or_init(|| {
        if std::env::var("BENCH_CLIENT").as_deref() != Ok("grpc-go") {
            return None;
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = root.join("target/tools/grpcload");
        let built = std::process::Command::new("go")
            .args(["build", "-o"])
            .arg(&out)
            .arg(".")
            .current_dir(root.join("tools/grpcload"))
            .status()
            .expect("go builds tools/grpcload");
        assert!(built.success(), "tools/grpcload does not build");
        Some(out)
    })
    .as_deref()
}

/// One turn through grpc-go: the tool runs the load and reports every
/// latency and its own CPU time.
fn measure_grpc_go(
    tool: &Path,
    address: &str,
    request: &Bytes,
    concurrency: usize,
    seconds: f64,
    series: &mut Series,
) {
    let file = std::env::temp_dir().join(format!("grpcload-{}.bin", std::process::id()));
    std::fs::write(&file, request).expect("the request file");
    let mut command = std::process::Command::new(tool);
    if let Some(pki) = support::pki() {
        command.arg("-certs").arg(pki.client_dir());
    }
    let out = command
        .args(["-address", address, "-request"])
        .arg(&file)
        .args(["-concurrency", &concurrency.to_string()])
        .args(["-seconds", &seconds.to_string()])
        .args(["-warmup", &WARM_UP_CALLS.to_string()])
        .args(["-rate", &rate().to_string()])
        .output()
        .expect("grpcload runs");
    assert!(
        out.status.success(),
        "grpcload: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("grpcload's JSON");
    let number = |k: &str| report[k].as_f64().unwrap_or(0.0);
    let latencies = report["latencies_us"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    series.latencies.extend(
        latencies
            .iter()
            .filter_map(Value::as_u64)
            .map(Duration::from_micros),
    );
    let errors = number("errors") as usize;
    series.errors += errors;
    series.calls += WARM_UP_CALLS + latencies.len() + errors;
    series.wall += number("seconds");
    series.client_nanos += (number("cpu_us") * 1000.0) as u64;
}

fn measure_h2(
    address: &str,
    request: &Bytes,
    concurrency: usize,
    seconds: f64,
    series: &mut Series,
) {
    // A client runtime of its own, on one thread: the client must not take
    // a second core from the server.
    let rt = runtime();
    // The client runtime runs on this thread only (tasks included).
    let client_before = support::thread_cpu_nanos();
    rt.block_on(async {
        let client = h2_client::connect(address)
            .await
            .expect("the server accepts connections");
        let request = h2_client::Framed::new(request);
        // Warm up: caches, connections, allocator.
        for _ in 0..WARM_UP_CALLS {
            let _ = client.call(&request).await;
        }
        let until = Instant::now() + Duration::from_secs_f64(seconds);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..concurrency {
            let client = client.clone();
            let request = request.clone();
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut errors = 0;
                while Instant::now() < until {
                    let sent = Instant::now();
                    match client.call(&request).await {
                        Ok(_) => latencies.push(sent.elapsed()),
                        Err(_) => errors += 1,
                    }
                }
                (latencies, errors)
            }));
        }
        let mut answered = 0;
        for task in tasks {
            let (l, e) = task.await.expect("a client task");
            answered += l.len();
            series.latencies.extend(l);
            series.errors += e;
            series.calls += e;
        }
        series.wall += started.elapsed().as_secs_f64();
        series.calls += WARM_UP_CALLS + answered;
    });
    series.client_nanos += support::thread_cpu_nanos().saturating_sub(client_before);
}

/// A gRPC server on tonic, as this function's, that answers RunFunction at
/// once with an empty response: what the transport and the client cost
/// before any function does anything. Runs on one thread of this process,
/// on tokio's current-thread runtime, as this function serves by default
/// (`--server-threads 1`).
mod noop {
    use std::convert::Infallible;
    use std::future::{Ready, ready};
    use std::task::{Context, Poll};

    use bytes::Bytes;
    use tonic::codegen::{Body, BoxFuture, Service, StdError, http};
    use tonic::server::{Grpc, NamedService, UnaryService};

    use super::support::{RawCodec, free_port};

    #[derive(Clone)]
    struct Noop;

    impl NamedService for Noop {
        const NAME: &'static str = "apiextensions.fn.proto.v1.FunctionRunnerService";
    }

    struct Answer;

    impl UnaryService<Bytes> for Answer {
        type Response = Bytes;
        type Future = Ready<Result<tonic::Response<Bytes>, tonic::Status>>;
        fn call(&mut self, _: tonic::Request<Bytes>) -> Self::Future {
            ready(Ok(tonic::Response::new(Bytes::new())))
        }
    }

    impl<B> Service<http::Request<B>> for Noop
    where
        B: Body + Send + 'static,
        B::Error: Into<StdError> + Send + 'static,
    {
        type Response = http::Response<tonic::body::Body>;
        type Error = Infallible;
        type Future = BoxFuture<Self::Response, Self::Error>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, request: http::Request<B>) -> Self::Future {
            Box::pin(async move { Ok(Grpc::new(RawCodec).unary(Answer, request).await) })
        }
    }

    /// Starts the server; its address.
    pub fn start() -> String {
        let address = format!("127.0.0.1:{}", free_port());
        let bind = address.parse().expect("a loopback address");
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime")
                .block_on(
                    tonic::transport::Server::builder()
                        .add_service(Noop)
                        .serve(bind),
                )
                .expect("the no-op server serves");
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        address
    }
}

/// Every measurement of one server.
struct Report {
    started_in: Duration,
    /// `(RSS, PSS)` of the process tree two seconds after its first
    /// answer, in KiB.
    idle: (u64, u64),
    /// The largest `(RSS, PSS)` sampled while loaded, in KiB.
    peak: (u64, u64),
    /// `(RSS, PSS)` after `BENCH_SETTLE` idle seconds following the load.
    settled: Option<(u64, u64)>,
    samples: Vec<(String, usize, Sample)>,
}

/// A server under measurement: started, checked, its memory sampled.
struct Subject {
    name: &'static str,
    server: Server,
    idle: (u64, u64),
    memory: Sampler,
    /// One per workload and concurrency, in the order they are measured;
    /// the last is the one under measurement.
    series: Vec<Series>,
}

impl Subject {
    /// Starts `binary`, reads its idle memory, and checks that it answers
    /// every workload as expected.
    fn start(name: &'static str, binary: &Path, args: &[String], workloads: &[Workload]) -> Self {
        eprintln!("{name}: {}", binary.display());
        let server = start(binary, args);
        // Idle: two seconds after the first answer (a worker of this
        // function hands back what its runs freed after one second without
        // jobs).
        std::thread::sleep(Duration::from_secs(2));
        let idle = memory_kib(server.child.id());
        let memory = Sampler::start(server.child.id());
        let rt = runtime();
        for w in workloads {
            // Through the measuring client, so that what it reads is checked too.
            let answer = if support::pki().is_some() {
                rt.block_on(async {
                    let channel = support::connect(&server.address)
                        .await
                        .map_err(|e| e.to_string())?;
                    support::call(channel, w.request.clone())
                        .await
                        .map_err(|e| e.to_string())
                })
            } else {
                rt.block_on(async {
                    let client = h2_client::connect(&server.address).await?;
                    client.call(&h2_client::Framed::new(&w.request)).await
                })
            }
            .unwrap_or_else(|e| panic!("{}: no answer from {}: {e}", w.name, binary.display()));
            let decoded =
                RunFunctionResponse::decode(answer.clone()).expect("a RunFunctionResponse");
            let fatal = decoded
                .results
                .iter()
                .find(|r| r.severity == Severity::Fatal as i32);
            let text = String::from_utf8_lossy(&answer);
            assert!(
                fatal.is_none() && text.contains(w.expect),
                "{}: unexpected answer from {}: {:?}",
                w.name,
                binary.display(),
                fatal.map_or_else(
                    || text.chars().take(400).collect::<String>(),
                    |r| r.message.clone()
                )
            );
        }
        Subject {
            name,
            server,
            idle,
            memory,
            series: Vec::new(),
        }
    }

    /// One turn of load on the series under measurement.
    fn turn(&mut self, request: &Bytes, concurrency: usize, seconds: f64) {
        let pid = self.server.child.id();
        let cpu_before = cpu_micros(pid);
        let switches_before = context_switches(pid);
        let series = self.series.last_mut().expect("a series under measurement");
        measure(&self.server.address, request, concurrency, seconds, series);
        series.server_micros += cpu_micros(pid).saturating_sub(cpu_before);
        series.server_switches += context_switches(pid).saturating_sub(switches_before);
    }

    fn print(&self, workload: &str, concurrency: usize) {
        let s = self.series.last().expect("a series measured").sample();
        eprintln!(
            "  {:<4} {workload:<24} c={concurrency:<3} p50 {:>9.3} ms  p99 {:>9.3} ms  {:>8.0} req/s  {:>6.0} µs CPU/call  {:>5.1} switches/call  client {:>4.0} µs/call{}",
            self.name,
            ms(s.p50),
            ms(s.p99),
            s.rps,
            s.cpu_us,
            s.switches,
            s.client_us,
            if s.errors > 0 {
                format!("  ({} errors)", s.errors)
            } else {
                String::new()
            }
        );
    }

    /// The peaks under load; stops sampling.
    fn loaded(self, labels: &[(String, usize)]) -> (Server, Report) {
        let peak = self.memory.peaks();
        drop(self.memory);
        let samples = labels
            .iter()
            .zip(&self.series)
            .map(|((name, c), series)| (name.clone(), *c, series.sample()))
            .collect();
        let report = Report {
            started_in: self.server.started_in,
            idle: self.idle,
            peak,
            settled: None,
            samples,
        };
        (self.server, report)
    }
}

/// Writes each workload's request to `dir`, named after the workload
/// (`floor.bin`, `10-resources.bin`, ...).
fn save_requests(dir: &Path, workloads: &[Workload]) {
    std::fs::create_dir_all(dir).expect("the BENCH_SAVE folder");
    for Workload { name, request, .. } in workloads {
        let file: String = name
            .split(['(', ','])
            .next()
            .unwrap_or(name)
            .trim()
            .replace(' ', "-");
        std::fs::write(dir.join(format!("{file}.bin")), request).expect("a request file");
    }
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is a filter that
    // `cargo test --benches` style runs use, so a test run stays quick.
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let seconds: f64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2)
        .max(1);
    let levels: Vec<usize> = std::env::var("BENCH_CONCURRENCY")
        .unwrap_or_else(|_| "1,16".to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let only = std::env::var("BENCH_ONLY").ok();
    let workloads: Vec<Workload> = workloads()
        .into_iter()
        .filter(|w| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|n| w.name.starts_with(n.trim())))
        })
        .collect();
    let floor_request = request("x = 1\n", &Value::Null, Vec::new());
    if let Some(dir) = std::env::var_os("BENCH_SAVE").map(PathBuf::from) {
        save_requests(&dir, &workloads);
    }
    assert!(
        support::pki().is_none() || grpc_go().is_some(),
        "BENCH_TLS=1 needs BENCH_CLIENT=grpc-go (the h2 client speaks plaintext)"
    );
    assert!(
        rate() == 0.0 || grpc_go().is_some(),
        "BENCH_RATE needs BENCH_CLIENT=grpc-go (the h2 client calls one after another)"
    );
    let noop = noop::start();
    // The no-op server speaks plaintext only.
    let noop_levels: &[usize] = if support::pki().is_some() {
        &[]
    } else {
        &levels
    };
    let transport: Vec<(usize, Sample)> = noop_levels
        .iter()
        .map(|&c| {
            // The no-op server's threads are this process's other threads.
            let process_before = support::process_cpu_nanos();
            let mut series = Series::default();
            measure(&noop, &floor_request, c, seconds, &mut series);
            let process = support::process_cpu_nanos().saturating_sub(process_before);
            // The server's CPU: this process's, less the client thread's
            // (grpc-go's client is a process of its own).
            let client = if grpc_go().is_some() {
                0
            } else {
                series.client_nanos
            };
            series.server_micros = process.saturating_sub(client) / 1000;
            (c, series.sample())
        })
        .collect();
    for (c, s) in &transport {
        eprintln!(
            "  no-op server             c={c:<3} p50 {:>9.3} ms  p99 {:>9.3} ms  {:>8.0} req/s  {:>6.0} µs CPU/call  client {:>4.0} µs/call",
            ms(s.p50),
            ms(s.p99),
            s.rps,
            s.cpu_us,
            s.client_us
        );
    }
    let mut subjects = vec![Subject::start(
        "this",
        &support::this_binary(),
        &support::our_args(),
        &workloads,
    )];
    // The peer serves metrics on :8080 and has no flag to move them.
    if let Some(peer) = std::env::var_os("PEER").map(PathBuf::from) {
        subjects.push(Subject::start("peer", &peer, &[], &workloads));
    }
    let mut labels = Vec::new();
    for w in &workloads {
        for &c in &levels {
            labels.push((w.name.to_owned(), c));
            for subject in &mut subjects {
                subject.series.push(Series::default());
            }
            for round in 0..rounds {
                let mut order: Vec<usize> = (0..subjects.len()).collect();
                if round % 2 == 1 {
                    order.reverse();
                }
                for i in order {
                    subjects[i].turn(&w.request, c, seconds / rounds as f64);
                }
            }
            for subject in &subjects {
                subject.print(w.name, c);
            }
        }
    }
    let (servers, mut reports): (Vec<Server>, Vec<Report>) =
        subjects.into_iter().map(|s| s.loaded(&labels)).unzip();
    if let Some(seconds) = std::env::var("BENCH_SETTLE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
    {
        eprintln!("  idle for {seconds} s");
        std::thread::sleep(Duration::from_secs_f64(seconds));
        for (server, report) in servers.iter().zip(&mut reports) {
            report.settled = Some(memory_kib(server.child.id()));
        }
    }
    drop(servers);
    print_table(&reports[0], reports.get(1), &transport);
}

fn print_table(this: &Report, peer: Option<&Report>, transport: &[(usize, Sample)]) {
    let mut out = String::new();
    let client = if grpc_go().is_some() { "grpc-go" } else { "h2" };
    let transport_kind = if support::pki().is_some() {
        "mTLS"
    } else {
        "plaintext"
    };
    let pace = if rate() > 0.0 {
        format!(", paced at {} calls a second", rate())
    } else {
        String::new()
    };
    let _ = writeln!(out, "\nClient: {client}, {transport_kind}{pace}.");
    let _ = writeln!(
        out,
        "\n| workload | c | p50 ms | p99 ms | req/s | CPU µs/call | client CPU µs/call |{}",
        if peer.is_some() {
            " peer p50 | peer p99 | peer req/s | peer CPU µs/call | p50 ratio | p99 ratio | req/s ratio | CPU ratio |"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "|---|---|---|---|---|---|---|{}",
        if peer.is_some() {
            "---|---|---|---|---|---|---|---|"
        } else {
            ""
        }
    );
    let sample = |out: &mut String, name: &str, c: usize, s: &Sample| {
        let _ = write!(
            out,
            "| {name} | {c} | {:.3} | {:.3} | {:.0} | {:.0} | {:.0} |",
            ms(s.p50),
            ms(s.p99),
            s.rps,
            s.cpu_us,
            s.client_us
        );
    };
    for (i, (name, c, s)) in this.samples.iter().enumerate() {
        sample(&mut out, name, *c, s);
        if let Some(peer) = peer {
            let (_, _, g) = &peer.samples[i];
            let _ = write!(
                out,
                " {:.3} | {:.3} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
                ms(g.p50),
                ms(g.p99),
                g.rps,
                g.cpu_us,
                ms(s.p50) / ms(g.p50),
                ms(s.p99) / ms(g.p99),
                s.rps / g.rps,
                if g.cpu_us > 0.0 {
                    format!("{:.2}", s.cpu_us / g.cpu_us)
                } else {
                    String::new()
                }
            );
        }
        out.push('\n');
    }
    for (c, s) in transport {
        sample(&mut out, "no-op server (transport floor)", *c, s);
        if peer.is_some() {
            out.push_str(" | | | | | | | |");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "\n| process | exec to first answer | idle RSS MiB | idle PSS MiB | peak RSS MiB | peak PSS MiB |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let row = |out: &mut String, name: &str, r: &Report| {
        let _ = writeln!(
            out,
            "| {name} | {:.1} ms | {:.1} | {:.1} | {:.1} | {:.1} |",
            ms(r.started_in),
            mib(r.idle.0),
            mib(r.idle.1),
            mib(r.peak.0),
            mib(r.peak.1)
        );
    };
    row(&mut out, "this", this);
    if let Some(peer) = peer {
        row(&mut out, "peer", peer);
        let ratio = |a: u64, b: u64| a as f64 / b as f64;
        let _ = writeln!(
            out,
            "| ratio | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            ms(this.started_in) / ms(peer.started_in),
            ratio(this.idle.0, peer.idle.0),
            ratio(this.idle.1, peer.idle.1),
            ratio(this.peak.0, peer.peak.0),
            ratio(this.peak.1, peer.peak.1)
        );
    }
    let settled = |r: &Report| {
        r.settled.map_or_else(String::new, |(rss, pss)| {
            format!("{:.1} / {:.1}", mib(rss), mib(pss))
        })
    };
    if this.settled.is_some() {
        let _ = writeln!(
            out,
            "\nRSS / PSS MiB after BENCH_SETTLE idle seconds: this {}{}",
            settled(this),
            peer.map_or_else(String::new, |p| format!(", peer {}", settled(p)))
        );
    }
    let _ = writeln!(
        out,
        "\nRSS and PSS are summed over the server and its worker processes; PSS counts a page shared by several of them once."
    );
    print!("{out}");
}
