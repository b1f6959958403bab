//! The real binary, started on loopback and called over gRPC, as
//! Crossplane calls it: plaintext (`--insecure`) and mTLS.

use crate::common::{self, runtime};

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use function_sdk_rust::proto::v1::function_runner_service_client::FunctionRunnerServiceClient;
use function_sdk_rust::proto::v1::{RunFunctionRequest, RunFunctionResponse};
use serde_json::json;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// A function process that is killed when dropped.
struct Server {
    child: Child,
    address: String,
    metrics: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn start(extra_args: &[&str]) -> Server {
    start_logging(extra_args, Stdio::null())
}

fn start_logging(extra_args: &[&str], stderr: Stdio) -> Server {
    let address = format!("127.0.0.1:{}", free_port());
    let metrics = format!("127.0.0.1:{}", free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .args(["--address", &address, "--metrics-address", &metrics])
        .args(extra_args)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("the function binary starts");
    let server = Server {
        child,
        address,
        metrics,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&server.address).is_err() {
        assert!(
            Instant::now() < deadline,
            "the function did not listen in time"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// Starts the function with its log in a file of `dir`, which
/// [`log_entry`] reads back once the server is dropped.
fn start_logging_to(dir: &Path, extra_args: &[&str]) -> Server {
    let file = std::fs::File::create(dir.join("stderr.log")).expect("a log file");
    start_logging(extra_args, Stdio::from(file))
}

/// The first JSON line holding `message` in the log [`start_logging_to`]
/// wrote in `dir`, parsed and as written.
fn log_entry(dir: &Path, message: &str) -> (serde_json::Value, String) {
    let text = std::fs::read_to_string(dir.join("stderr.log")).expect("the log is readable");
    let line = text
        .lines()
        .find(|l| l.contains(message))
        .unwrap_or_else(|| panic!("no line with {message:?} logged:\n{text}"));
    let entry = serde_json::from_str(line).expect("a JSON log line");
    (entry, line.to_owned())
}

async fn plaintext_client(address: &str) -> FunctionRunnerServiceClient<Channel> {
    let channel = Endpoint::from_shared(format!("http://{address}"))
        .expect("a valid endpoint")
        .connect()
        .await
        .expect("the function accepts a plaintext connection");
    FunctionRunnerServiceClient::new(channel)
}

fn request(source: &str) -> RunFunctionRequest {
    common::with_source(
        common::request(
            r"
meta: {tag: serve-test}
observed:
  composite:
    resource:
      apiVersion: example.org/v1
      kind: XBucket
      metadata: {name: xr-1}
      spec: {region: eu-west-1}
",
        ),
        source,
    )
}

fn fatal_message(rsp: &RunFunctionResponse) -> Option<String> {
    rsp.results
        .iter()
        .find(|r| r.severity == function_sdk_rust::proto::v1::Severity::Fatal as i32)
        .map(|r| r.message.clone())
}

const GOOD: &str = r#"
Resource("bucket", {"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket", "spec": {"forProvider": {"region": oxr.spec.region}}})
"#;

#[test]
fn plaintext_calls_get_desired_resources_and_bad_input_gets_fatal_results() {
    // Each bad input must meet its own limit: a wall clock long enough
    // that no step or memory limit is beaten to it on a busy machine.
    let server = start(&["--insecure", "--timeout-seconds", "120"]);
    runtime().block_on(async {
        let mut client = plaintext_client(&server.address).await;
        let rsp = client
            .run_function(request(GOOD))
            .await
            .expect("RunFunction answers")
            .into_inner();
        assert_eq!(
            rsp.meta.as_ref().map(|m| m.tag.as_str()),
            Some("serve-test")
        );
        let body = common::json(&rsp)["desired"]["resources"]["bucket"]["resource"].clone();
        assert_eq!(body["spec"]["forProvider"]["region"], "eu-west-1");
        assert_eq!(
            body["metadata"]["labels"]["function-starlark.crossplane.io/resource-name"],
            "bucket"
        );

        let mut missing_source = request("");
        missing_source.input = Some(common::to_struct(&json!({"spec": {}})));
        let mut other_kind = request("");
        other_kind.input = Some(common::to_struct(&json!({
            "apiVersion": "pt.fn.crossplane.io/v1beta1",
            "kind": "Resources",
            "resources": [{"name": "bucket"}],
        })));
        let mut malformed = request("");
        malformed.input = Some(common::to_struct(
            &json!({"spec": {"source": "x = 1", "modules": ["a"]}}),
        ));
        let bad: Vec<(&str, RunFunctionRequest, &str)> = vec![
            (
                "missing source",
                missing_source,
                "spec.source or spec.scriptConfigRef is required",
            ),
            (
                "another function's input",
                other_kind,
                "cannot get Function input: ",
            ),
            (
                "malformed spec field",
                malformed,
                "cannot get Function input: ",
            ),
            (
                "syntax error",
                request("x = ("),
                "starlark compilation error: composition.star:1:",
            ),
            (
                "runtime error",
                request("x = {}['missing_key']"),
                "starlark execution error: ",
            ),
            (
                "fatal()",
                request("fatal('cannot proceed: database unavailable')"),
                "cannot proceed: database unavailable",
            ),
            (
                "infinite loop",
                request("while True:\n    pass\n"),
                "exceeded execution limit (1000000 steps): possible infinite loop",
            ),
            (
                "memory bomb (repeat)",
                request("x = 'abc' * 1000000 * 1000000"),
                "excessive repeat",
            ),
            (
                "memory bomb (large repeat)",
                request("x = [1] * 100000000"),
                "memory budget",
            ),
            (
                "memory bomb (doubling)",
                request("def grow():\n    x = ['a']\n    for i in range(40):\n        x = x + x\ngrow()\n"),
                "memory budget",
            ),
            (
                "deep recursion",
                request("def f(n):\n    return f(n + 1)\nf(0)\n"),
                "starlark execution error: ",
            ),
        ];
        for (what, req, want) in bad {
            let rsp = client
                .run_function(req)
                .await
                .unwrap_or_else(|s| panic!("{what}: a gRPC error instead of a response: {s}"))
                .into_inner();
            let message = fatal_message(&rsp).unwrap_or_else(|| panic!("{what}: no Fatal result"));
            assert!(message.contains(want), "{what}: {message}");
            assert_eq!(rsp.results.len(), 1, "{what}: only the Fatal result");
        }

        // Still serving after all of that.
        let rsp = client
            .run_function(request(GOOD))
            .await
            .expect("still answers")
            .into_inner();
        assert!(fatal_message(&rsp).is_none());
    });
}

#[test]
fn a_hundred_concurrent_requests_mixing_good_and_failing_scripts_all_get_their_answer() {
    // The endless loops must end on the execution limit, not the
    // wall-clock one: in a debug build on a machine busy with other work
    // they went past 10 s. Each costs a worker a second or more of CPU, so
    // five of them stand for the kind; the other failing scripts are cheap.
    let server = start(&["--insecure", "--timeout-seconds", "120"]);
    runtime().block_on(async {
        let client = plaintext_client(&server.address).await;
        let mut calls = Vec::new();
        for i in 0..100 {
            let mut client = client.clone();
            calls.push(tokio::spawn(async move {
                let source = match i % 4 {
                    0 => format!("Resource('r{i}', {{'apiVersion': 'v1', 'kind': 'ConfigMap', 'data': {{'i': '{i}'}}}})"),
                    1 if i % 20 == 1 => "while True:\n    pass\n".to_owned(),
                    1 => format!("x = {{}}['missing {i}']"),
                    2 => format!("fatal('stop {i}')"),
                    _ => "x = (".to_owned(),
                };
                let rsp = client.run_function(request(&source)).await.expect("answers").into_inner();
                (i, rsp)
            }));
        }
        for call in calls {
            let (i, rsp) = call.await.expect("the task completes");
            let json = common::json(&rsp);
            match i % 4 {
                0 => assert_eq!(json["desired"]["resources"][format!("r{i}")]["resource"]["data"]["i"], i.to_string()),
                1 => {
                    let message = fatal_message(&rsp).unwrap();
                    let expected = if i % 20 == 1 { "exceeded execution limit".to_owned() } else { format!("missing {i}") };
                    assert!(message.contains(&expected), "{message}");
                }
                2 => assert_eq!(fatal_message(&rsp).unwrap(), format!("stop {i}")),
                _ => assert!(fatal_message(&rsp).unwrap().contains("compilation error")),
            }
        }
    });
}

/// Writes one file of the server's certificate folder.
fn write(dir: &Path, name: &str, content: &str) {
    std::fs::write(dir.join(name), content).expect("a certificate file");
}

#[test]
fn mtls_serves_clients_with_a_certificate_from_the_ca_only() {
    let pki = crate::support::certificates();
    let dir = tempfile::tempdir().expect("a temp dir");
    write(dir.path(), "tls.crt", &pki.server.0);
    write(dir.path(), "tls.key", &pki.server.1);
    write(dir.path(), "ca.crt", &pki.ca);
    let server = start(&["--tls-certs-dir", dir.path().to_str().expect("utf-8 path")]);
    runtime().block_on(async {
        let endpoint = |identity: Option<Identity>| {
            let mut tls = ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(&pki.ca))
                .domain_name("localhost");
            if let Some(identity) = identity {
                tls = tls.identity(identity);
            }
            Endpoint::from_shared(format!("https://{}", server.address))
                .expect("a valid endpoint")
                .tls_config(tls)
                .expect("a TLS config")
        };
        let channel = endpoint(Some(Identity::from_pem(&pki.client.0, &pki.client.1)))
            .connect()
            .await
            .expect("an mTLS connection with a client certificate");
        let rsp = FunctionRunnerServiceClient::new(channel)
            .run_function(request(GOOD))
            .await
            .expect("RunFunction answers over mTLS")
            .into_inner();
        assert!(fatal_message(&rsp).is_none());

        let refused = match endpoint(None).connect().await {
            Err(_) => true,
            Ok(channel) => FunctionRunnerServiceClient::new(channel)
                .run_function(request(GOOD))
                .await
                .is_err(),
        };
        assert!(refused, "a client without a certificate must be refused");
    });
}

#[test]
fn metrics_are_served_with_the_script_label_after_a_request() {
    const SCRIPT: &str = "db = Resource('db', {'apiVersion': 'v1', 'kind': 'DB'})\nResource('app', {'apiVersion': 'v1', 'kind': 'App'}, depends_on=[db])\nskip_resource('legacy', 'replaced')\n";
    let server = start(&["--insecure"]);
    runtime().block_on(async {
        let mut client = plaintext_client(&server.address).await;
        // Twice: the second run finds the compiled script in the cache.
        for _ in 0..2 {
            client.run_function(request(SCRIPT)).await.expect("answers");
        }
    });
    let mut stream =
        std::net::TcpStream::connect(&server.metrics).expect("the metrics port listens");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("a scrape request");
    let mut body = String::new();
    stream.read_to_string(&mut body).expect("a scrape response");
    for series in [
        "function_starlark_reconciliations_total{script=\"composition.star\"} 2",
        "function_starlark_reconciliation_duration_seconds_count{script=\"composition.star\"} 2",
        "function_starlark_execution_duration_seconds_count{script=\"composition.star\"} 2",
        // db each time; app is deferred (db is never observed here).
        "function_starlark_resources_emitted_total{script=\"composition.star\"} 2",
        "function_starlark_resources_deferred_total{script=\"composition.star\"} 2",
        "function_starlark_resources_skipped_total{script=\"composition.star\",composite_kind=\"XBucket\"} 2",
        "grpc_server_handled_total{",
    ] {
        assert!(body.contains(series), "missing {series} in:\n{body}");
    }
    // Each worker process keeps its own cache, and only answered runs
    // count: two runs count two compilations, misses or hits. Usually the
    // first is a miss and the second a hit, but on a busy machine a run
    // may pass DEMOTE_AFTER and the second request find a fresh worker.
    let count = |name: &str| -> u64 {
        body.lines()
            .find(|l| l.starts_with(name) && l.contains("composition.star"))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0)
    };
    let misses = count("function_starlark_cache_misses_total");
    let hits = count("function_starlark_cache_hits_total");
    assert!(misses + hits == 2, "{misses} misses, {hits} hits:\n{body}");
}

#[test]
fn structured_logs_carry_the_request_tag() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = start_logging_to(dir.path(), &["--insecure"]);
    runtime().block_on(async {
        let mut client = plaintext_client(&server.address).await;
        client
            .run_function(request("x = {}['missing']"))
            .await
            .expect("answers");
    });
    drop(server);
    let (entry, line) = log_entry(dir.path(), "run function");
    assert_eq!(entry["span"]["tag"], "serve-test", "{line}");
    assert_eq!(entry["fields"]["outcome"], "script_error", "{line}");
    assert!(
        entry["fields"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("missing")),
        "{line}"
    );
}

/// `--server-threads`: one thread (the default), a given count, or one per
/// core for 0; each serves, and the start-up line says how many it has.
#[test]
fn the_server_serves_on_the_threads_it_is_given_and_says_how_many() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    for (args, threads) in [
        (&[][..], 1),
        (&["--server-threads", "3"][..], 3),
        (&["--server-threads", "0"][..], cores),
    ] {
        let dir = tempfile::tempdir().expect("a temp dir");
        let server = start_logging_to(dir.path(), &[&["--insecure"][..], args].concat());
        let rsp = runtime().block_on(async {
            let mut client = plaintext_client(&server.address).await;
            client
                .run_function(request(
                    "Resource('bucket', {'apiVersion': 'v1', 'kind': 'ConfigMap'})",
                ))
                .await
                .expect("answers")
                .into_inner()
        });
        drop(server);
        assert!(
            rsp.desired
                .and_then(|d| d.resources.get("bucket").cloned())
                .is_some(),
            "{args:?}: no desired bucket"
        );
        let (entry, line) = log_entry(dir.path(), "serving FunctionRunnerService");
        assert_eq!(
            entry["fields"]["server_threads"], threads,
            "{args:?}: {line}"
        );
    }
}
