//! The side-by-side load benchmark: `cargo bench --bench load`.
//!
//! Starts the release server on loopback, loads it over gRPC with
//! pre-serialised requests from a client that keeps responses as raw bytes
//! (decoding them would measure the client; it speaks HTTP/2 with `h2`
//! alone, see `support::h2_client`), and prints p50, p99, requests per
//! second, the server's CPU time per call (its worker processes included)
//! and the client's, idle and peak RSS per workload at concurrency 1 and
//! 16. With `PEER=<binary>` the same runs against another function
//! binary (started with `--insecure --address`) in the same run, and a
//! second table gives the ratios this / peer. First, a no-op gRPC server
//! in this process (tonic, as this function's) is measured the same way:
//! what the transport and the client cost on this machine with a server
//! that sleeps between calls.
//!
//! Environment: `BENCH_SECONDS` (per workload and concurrency, default 3),
//! `BENCH_ONLY` (a comma-separated list of workload names),
//! `BENCH_CONCURRENCY` (default `1,16`), `THIS` (another build of this
//! function, such as the shipped static one,
//! `target/x86_64-unknown-linux-musl/release/function-starlark`), `BENCH_ARGS`
//! (extra flags for this function, such as `--isolation threads`),
//! `BENCH_SETTLE` (seconds to wait after the load before reading memory
//! once more; idle workers exit after 60 s).

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
    Sampler, context_switches, cpu_micros, h2_client, memory_kib, mib, ms, request, runtime, start,
};

/// One measured run.
#[derive(Clone, Copy, Default)]
struct Sample {
    p50: Duration,
    p99: Duration,
    rps: f64,
    errors: usize,
    /// Calls made, warm-up included.
    calls: usize,
    /// CPU time the server's processes spent per call, in microseconds
    /// (not known for the in-process no-op server).
    cpu_us: Option<f64>,
    /// Context switches of the server's threads per call.
    switches: Option<f64>,
    /// CPU time the client spent per call, in microseconds: what the
    /// server could not use of the machine's cores.
    client_us: f64,
}

const WARM_UP_CALLS: usize = 20;

fn measure(address: &str, request: &Bytes, concurrency: usize, seconds: f64) -> Sample {
    // A client runtime of its own, on one thread: the client must not take
    // a second core from the server.
    let rt = runtime();
    // The client runtime runs on this thread only (tasks included).
    let client_before = support::thread_cpu_nanos();
    let mut sample = rt.block_on(async {
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
        let mut latencies = Vec::new();
        let mut errors = 0;
        for task in tasks {
            let (l, e) = task.await.expect("a client task");
            latencies.extend(l);
            errors += e;
        }
        let wall = started.elapsed().as_secs_f64();
        latencies.sort();
        let at = |q: f64| {
            latencies
                .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
                .copied()
                .unwrap_or_default()
        };
        Sample {
            p50: at(0.50),
            p99: at(0.99),
            rps: latencies.len() as f64 / wall,
            errors,
            calls: WARM_UP_CALLS + latencies.len() + errors,
            cpu_us: None,
            switches: None,
            client_us: 0.0,
        }
    });
    let client = support::thread_cpu_nanos().saturating_sub(client_before);
    sample.client_us = client as f64 / 1000.0 / sample.calls.max(1) as f64;
    sample
}

/// A gRPC server on tonic, as this function's, that answers RunFunction at
/// once with an empty response: what the transport and the client cost
/// before any function does anything. Runs on two threads in this process.
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
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
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

fn bench(
    binary: &Path,
    args: &[String],
    workloads: &[Workload],
    levels: &[usize],
    seconds: f64,
) -> Report {
    let server = start(binary, args);
    // Idle: two seconds after the first answer (a worker of this function
    // hands back what its runs freed after one second without jobs).
    std::thread::sleep(Duration::from_secs(2));
    let idle = memory_kib(server.child.id());
    let memory = Sampler::start(server.child.id());
    let rt = runtime();
    for w in workloads {
        // Through the measuring client, so that what it reads is checked too.
        let answer = rt
            .block_on(async {
                let client = h2_client::connect(&server.address).await?;
                client.call(&h2_client::Framed::new(&w.request)).await
            })
            .unwrap_or_else(|e| panic!("{}: no answer from {}: {e}", w.name, binary.display()));
        let decoded = RunFunctionResponse::decode(answer.clone()).expect("a RunFunctionResponse");
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
    let mut samples = Vec::new();
    for w in workloads {
        for &c in levels {
            let cpu_before = cpu_micros(server.child.id());
            let switches_before = context_switches(server.child.id());
            let mut sample = measure(&server.address, &w.request, c, seconds);
            let cpu = cpu_micros(server.child.id()).saturating_sub(cpu_before);
            let switches = context_switches(server.child.id()).saturating_sub(switches_before);
            sample.cpu_us = Some(cpu as f64 / sample.calls.max(1) as f64);
            sample.switches = Some(switches as f64 / sample.calls.max(1) as f64);
            eprintln!(
                "  {:<24} c={c:<3} p50 {:>9.3} ms  p99 {:>9.3} ms  {:>8.0} req/s  {:>6.0} µs CPU/call  {:>5.1} switches/call  client {:>4.0} µs/call{}",
                w.name,
                ms(sample.p50),
                ms(sample.p99),
                sample.rps,
                sample.cpu_us.unwrap_or_default(),
                sample.switches.unwrap_or_default(),
                sample.client_us,
                if sample.errors > 0 {
                    format!("  ({} errors)", sample.errors)
                } else {
                    String::new()
                }
            );
            samples.push((w.name.to_owned(), c, sample));
        }
    }
    let peak = memory.peaks();
    let settled = std::env::var("BENCH_SETTLE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map(|seconds| {
            eprintln!("  idle for {seconds} s");
            std::thread::sleep(Duration::from_secs_f64(seconds));
            memory_kib(server.child.id())
        });
    Report {
        started_in: server.started_in,
        idle,
        peak,
        settled,
        samples,
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
    let noop = noop::start();
    let transport: Vec<(usize, Sample)> = levels
        .iter()
        .map(|&c| {
            // The no-op server's threads are this process's other threads.
            let process_before = support::process_cpu_nanos();
            let mut sample = measure(&noop, &floor_request, c, seconds);
            let process = support::process_cpu_nanos().saturating_sub(process_before);
            let client = sample.client_us * sample.calls as f64;
            sample.cpu_us =
                Some(((process as f64 / 1000.0) - client).max(0.0) / sample.calls.max(1) as f64);
            (c, sample)
        })
        .collect();
    for (c, s) in &transport {
        eprintln!(
            "  no-op server             c={c:<3} p50 {:>9.3} ms  p99 {:>9.3} ms  {:>8.0} req/s  {:>6.0} µs CPU/call  client {:>4.0} µs/call",
            ms(s.p50),
            ms(s.p99),
            s.rps,
            s.cpu_us.unwrap_or_default(),
            s.client_us
        );
    }
    let ours = support::this_binary();
    eprintln!("this function: {}", ours.display());
    let this = bench(&ours, &support::our_args(), &workloads, &levels, seconds);
    // The peer serves metrics on :8080 and has no flag to move them.
    let peer = std::env::var_os("PEER").map(PathBuf::from).map(|p| {
        eprintln!("peer: {}", p.display());
        bench(&p, &[], &workloads, &levels, seconds)
    });
    print_table(&this, peer.as_ref(), &transport);
}

fn print_table(this: &Report, peer: Option<&Report>, transport: &[(usize, Sample)]) {
    let mut out = String::new();
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
            "| {name} | {c} | {:.3} | {:.3} | {:.0} | {} | {:.0} |",
            ms(s.p50),
            ms(s.p99),
            s.rps,
            s.cpu_us.map_or_else(String::new, |us| format!("{us:.0}")),
            s.client_us
        );
    };
    for (i, (name, c, s)) in this.samples.iter().enumerate() {
        sample(&mut out, name, *c, s);
        if let Some(peer) = peer {
            let (_, _, g) = &peer.samples[i];
            let _ = write!(
                out,
                " {:.3} | {:.3} | {:.0} | {} | {:.2} | {:.2} | {:.2} | {} |",
                ms(g.p50),
                ms(g.p99),
                g.rps,
                g.cpu_us.map_or_else(String::new, |us| format!("{us:.0}")),
                ms(s.p50) / ms(g.p50),
                ms(s.p99) / ms(g.p99),
                s.rps / g.rps,
                match (s.cpu_us, g.cpu_us) {
                    (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                    _ => String::new(),
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
