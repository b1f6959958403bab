//! Hostile inputs against the release server: `cargo bench --bench hostile`.
//!
//! For every input of `support/hostile.rs`, prints what it got, how long
//! the answer took, how long the server kept working after answering (CPU
//! still being spent by any of its processes), and the most memory the
//! server and its workers held meanwhile, against the bound
//! idle + budget x runs at once + 64 MiB. Then loads the server with 100
//! concurrent good requests, alone and beside 4 endless scripts, and
//! prints both p99 latencies.
//!
//! The server runs with `--timeout-seconds 5` (and the default 256 MiB
//! budget) unless
//! `BENCH_ARGS` says otherwise; `BENCH_ONLY` picks cases by name prefix.

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

mod support;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use function_sdk_rust::proto::v1::{RunFunctionResponse, Severity};
use prost::Message;
use serde_json::Value;
use support::hostile::{Expect, cases};
use support::{Sampler, call, connect, memory_kib, mib, ms, request, runtime, start, tree};

/// CPU time the process tree has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    tree(pid)
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .map(|stat| {
            // The fields after the command name (which may hold spaces).
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let field = |i: usize| {
                fields
                    .get(i)
                    .and_then(|f| f.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            // utime and stime are fields 14 and 15 of stat, 12 and 13 here.
            field(11) + field(12)
        })
        .sum()
}

/// How long the tree keeps spending CPU once it answered: the first
/// moment a 100 ms window passes without a tick spent.
fn busy_after(pid: u32) -> Duration {
    let started = Instant::now();
    let mut before = cpu_ticks(pid);
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = cpu_ticks(pid);
        if now == before || started.elapsed() > Duration::from_secs(30) {
            return started.elapsed().saturating_sub(Duration::from_millis(100));
        }
        before = now;
    }
}

/// What an answer was, in a few words.
fn outcome(answer: &Result<Bytes, tonic::Status>) -> (String, Option<String>) {
    match answer {
        Err(status) => (
            format!("refused ({:?})", status.code()),
            Some(status.message().to_owned()),
        ),
        Ok(bytes) => {
            let rsp = RunFunctionResponse::decode(bytes.clone()).unwrap_or_default();
            match rsp
                .results
                .iter()
                .find(|r| r.severity == Severity::Fatal as i32)
            {
                Some(fatal) => ("Fatal".to_owned(), Some(fatal.message.clone())),
                None => ("answered".to_owned(), None),
            }
        }
    }
}

fn matches(expect: Expect, answer: &Result<Bytes, tonic::Status>) -> bool {
    let (_, message) = outcome(answer);
    match (expect, answer, message) {
        (Expect::Success, Ok(_), None) => true,
        (Expect::Refused(text), Err(_), Some(m)) => m.contains(text),
        (expect, Ok(_), Some(m)) => expect.fatal_matches(&m),
        _ => false,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let mut args = support::our_args();
    if std::env::var("BENCH_ARGS").is_err() {
        args.extend(["--timeout-seconds", "5"].iter().map(|s| (*s).to_owned()));
    }
    let heap_mib = args
        .iter()
        .position(|a| a == "--max-heap-mib")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(256);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2)) as u64;
    // The fast lane plus the slow lane of twice as many.
    let runs_at_once = cores * 3;
    let server = start(&support::this_binary(), &args);
    std::thread::sleep(Duration::from_millis(500));
    let pid = server.child.id();
    let (idle_rss, _) = memory_kib(pid);
    let bound = idle_rss + heap_mib * 1024 * runs_at_once + 64 * 1024;
    let only = std::env::var("BENCH_ONLY").ok();
    let rt = runtime();
    let channel = rt
        .block_on(connect(&server.address))
        .expect("the server accepts connections");
    let mut table = String::from(
        "| input | expected | got | answer s | busy after s | peak RSS MiB | within bound |\n|---|---|---|---|---|---|---|\n",
    );
    let mut failures = 0;
    for case in cases() {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|n| case.name.starts_with(n.trim())))
        {
            continue;
        }
        let memory = Sampler::start(pid);
        let sent = Instant::now();
        let answer = rt.block_on(call(channel.clone(), case.request.clone()));
        let took = sent.elapsed();
        let busy = busy_after(pid);
        let (peak, _) = memory.peaks();
        drop(memory);
        let ok = matches(case.expect, &answer);
        failures += usize::from(!ok);
        let (got, message) = outcome(&answer);
        eprintln!(
            "{}: {got} in {:.2}s{}",
            case.name,
            took.as_secs_f64(),
            message
                .map(|m| format!(": {}", m.chars().take(160).collect::<String>()))
                .unwrap_or_default()
        );
        let _ = writeln!(
            table,
            "| {} | {:?} | {}{} | {:.2} | {:.2} | {:.0} | {} |",
            case.name,
            case.expect,
            got,
            if ok { "" } else { " (unexpected)" },
            took.as_secs_f64(),
            busy.as_secs_f64(),
            mib(peak),
            if peak <= bound { "yes" } else { "NO" }
        );
    }
    println!("\n{table}");
    println!(
        "bound: idle {:.0} MiB + {heap_mib} MiB x {runs_at_once} runs + 64 MiB = {:.0} MiB; {failures} unexpected answers\n",
        mib(idle_rss),
        mib(bound)
    );
    mixed(&rt, &server.address);
}

/// p99 of 100 concurrent good requests, alone and beside 4 endless scripts.
fn mixed(rt: &tokio::runtime::Runtime, address: &str) {
    let good = request(
        "for i in range(10):\n    Resource(\"r%d\" % i, {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"data\": {\"i\": str(i)}})\n",
        &Value::Null,
        Vec::new(),
    );
    let endless = request("while True:\n    pass\n", &Value::Null, Vec::new());
    let burst = |with_hostile: bool| -> (Duration, usize) {
        rt.block_on(async {
            let channel = connect(address).await.expect("a connection");
            let hostile: Vec<_> = (0..if with_hostile { 4 } else { 0 })
                .map(|_| tokio::spawn(call(channel.clone(), endless.clone())))
                .collect();
            // Let the endless scripts get going.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let mut latencies = Vec::new();
            let mut wrong = 0;
            for _ in 0..5 {
                let calls: Vec<_> = (0..100)
                    .map(|_| {
                        let (channel, good) = (channel.clone(), good.clone());
                        tokio::spawn(async move {
                            let sent = Instant::now();
                            let answer = call(channel, good).await;
                            (sent.elapsed(), answer)
                        })
                    })
                    .collect();
                for c in calls {
                    let (took, answer) = c.await.expect("a call");
                    if !matches(Expect::Success, &answer) {
                        wrong += 1;
                    }
                    latencies.push(took);
                }
            }
            for h in hostile {
                h.abort();
            }
            latencies.sort();
            (latencies[latencies.len() * 99 / 100], wrong)
        })
    };
    let (alone, wrong_alone) = burst(false);
    let (beside, wrong_beside) = burst(true);
    println!("| 100 concurrent good requests (x5) | p99 ms | wrong answers |\n|---|---|---|");
    println!("| alone | {:.2} | {wrong_alone} |", ms(alone));
    println!(
        "| beside 4 endless scripts | {:.2} | {wrong_beside} |",
        ms(beside)
    );
    println!("\nratio {:.2} (target: under 3)", ms(beside) / ms(alone));
}
