//! A soak run against the release server: `cargo bench --bench soak`.
//!
//! Sends `SOAK_REQUESTS` (default 10,000) requests, each naming a different
//! `scriptConfigRef`: every other one a mounted script of its own (so each
//! compiles, is cached and gets a metrics label until the caps), the rest
//! a ConfigMap that does not exist (a Fatal result). After every tenth of
//! the run it prints the server's memory (its process tree, RSS and PSS)
//! and the number of metric series it exports, then the start and peak
//! memory, whether memory stayed flat and the series under the label cap.
//!
//! `BENCH_CONCURRENCY` (default 8) calls are in flight at once;
//! `BENCH_ARGS` adds server flags.

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

mod support;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use bytes::Bytes;
use function_sdk_rust::proto::v1::RunFunctionRequest;
use prost::Message;
use serde_json::json;
use support::{Sampler, call, connect, memory_kib, mib, runtime, start, this_binary, to_struct};

/// The metric series the server exports now (sample lines, not comments).
fn series(metrics: &str) -> usize {
    let mut stream = TcpStream::connect(metrics).expect("the metrics port answers");
    let _ = write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {metrics}\r\nConnection: close\r\n\r\n"
    );
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    body.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count()
}

/// The request naming ConfigMap `name`, key `key`.
fn by_ref(name: &str, key: &str) -> Bytes {
    let input = json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": {"scriptConfigRef": {"name": name, "key": key}},
    });
    let request = RunFunctionRequest {
        input: Some(to_struct(&input)),
        observed: Some(function_sdk_rust::proto::v1::State {
            composite: Some(function_sdk_rust::proto::v1::Resource {
                resource: Some(to_struct(&support::xr())),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..RunFunctionRequest::default()
    };
    Bytes::from(request.encode_to_vec())
}

fn main() {
    let total: usize = std::env::var("SOAK_REQUESTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let concurrency: usize = std::env::var("BENCH_CONCURRENCY")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(8);
    let dir = tempfile::tempdir().expect("a scripts directory");
    let requests: Vec<Bytes> = (0..total)
        .map(|i| {
            let name = format!("cm-{i:05}-{:08x}", i.wrapping_mul(2_654_435_761));
            let key = format!("s{i}.star");
            if i % 2 == 0 {
                let config = dir.path().join(&name);
                std::fs::create_dir_all(&config).expect("a ConfigMap directory");
                let script = format!(
                    "n = {i}\nResource(\"r\", {{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"data\": {{\"n\": str(n) * 20}}}})\n"
                );
                std::fs::write(config.join(&key), script).expect("a script");
            }
            by_ref(&name, &key)
        })
        .collect();

    let metrics = format!("127.0.0.1:{}", support::free_port());
    let mut args = vec![
        "--metrics-address".to_owned(),
        metrics.clone(),
        "--scripts-dir".to_owned(),
        dir.path().display().to_string(),
    ];
    if let Ok(extra) = std::env::var("BENCH_ARGS") {
        args.extend(extra.split_whitespace().map(str::to_owned));
    }
    let server = start(&this_binary(), &args);
    let pid = server.child.id();
    let (resident, proportional) = memory_kib(pid);
    println!(
        "soak: {total} requests, {} distinct mounted scripts and {} missing ones, {concurrency} in flight",
        total.div_ceil(2),
        total / 2
    );
    println!("| requests | RSS MiB | PSS MiB | series | failed calls |");
    println!("|---------:|--------:|--------:|-------:|-------------:|");
    println!(
        "| 0 | {:.1} | {:.1} | {} | 0 |",
        mib(resident),
        mib(proportional),
        series(&metrics)
    );
    let sampler = Sampler::start(pid);
    let rt = runtime();
    let step = total.div_ceil(10).max(1);
    let mut failed = 0;
    let mut rows: Vec<(u64, usize)> = Vec::new();
    for (n, chunk) in requests.chunks(step).enumerate() {
        failed += rt.block_on(async {
            let mut failed = 0;
            for wave in chunk.chunks(concurrency) {
                let calls: Vec<_> = wave
                    .iter()
                    .map(|bytes| {
                        let address = server.address.clone();
                        let bytes = bytes.clone();
                        tokio::spawn(async move {
                            let channel = connect(&address).await.ok()?;
                            call(channel, bytes).await.ok()
                        })
                    })
                    .collect();
                for c in calls {
                    if !matches!(c.await, Ok(Some(_))) {
                        failed += 1;
                    }
                }
            }
            failed
        });
        let (rss, pss) = memory_kib(pid);
        let count = series(&metrics);
        rows.push((rss, count));
        println!(
            "| {} | {:.1} | {:.1} | {count} | {failed} |",
            ((n + 1) * step).min(total),
            mib(rss),
            mib(pss)
        );
    }
    let first = rows.first().map_or(0, |r| r.0);
    let last = rows.last().map_or(0, |r| r.0);
    let most_series = rows.iter().map(|r| r.1).max().unwrap_or(0);
    let growth = (last as f64 - first as f64) / first.max(1) as f64 * 100.0;
    let (highest, highest_shared) = sampler.peaks();
    println!();
    println!(
        "RSS at the start {:.1} MiB, peak {:.1} MiB (PSS peak {:.1} MiB)",
        mib(resident),
        mib(highest),
        mib(highest_shared)
    );
    println!(
        "RSS after the first tenth {:.1} MiB, at the end {:.1} MiB ({growth:+.1}%): {}",
        mib(first),
        mib(last),
        if growth.abs() <= 10.0 {
            "flat"
        } else {
            "NOT flat"
        }
    );
    println!(
        "series at most {most_series} (script label cap {}): {}",
        function_starlark::metrics::MAX_SCRIPT_LABELS,
        if failed == 0 {
            "every call answered"
        } else {
            "some calls failed"
        }
    );
}
