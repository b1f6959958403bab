//! Hostile inputs against the real server (worker processes, the
//! default): each gets the answer it must get, and the server keeps
//! serving. Timings and memory are the hostile benchmark's business
//! (`cargo bench --bench hostile`).

#[path = "../benches/support/mod.rs"]
mod support;

use std::time::Duration;

use function_sdk_rust::proto::v1::{RunFunctionResponse, Severity};
use prost::Message;
use serde_json::Value;
use support::hostile::{Case, Expect, cases};
use support::{call, connect, request, runtime, start};

/// Builds the cases on a thread whose stack holds the deepest request's
/// encoding (debug builds use far more stack per level).
fn all_cases() -> Vec<Case> {
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(cases)
        .expect("a thread")
        .join()
        .expect("the cases build")
}

#[test]
fn every_hostile_input_gets_its_answer_and_the_server_keeps_serving() {
    let args: Vec<String> = ["--metrics-address", "", "--timeout-seconds", "3"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut server = start(&support::this_binary(), &args);
    let rt = runtime();
    let channel = rt
        .block_on(connect(&server.address))
        .expect("the server accepts connections");
    let mut wrong = Vec::new();
    for case in all_cases() {
        let answer = rt.block_on(async {
            tokio::time::timeout(Duration::from_mins(1), call(channel.clone(), case.request))
                .await
                .unwrap_or_else(|_| panic!("{}: no answer within a minute", case.name))
        });
        let got = match &answer {
            Err(status) => format!("refused: {}", status.message()),
            Ok(bytes) => {
                let rsp = RunFunctionResponse::decode(bytes.clone()).expect("a response");
                rsp.results
                    .iter()
                    .find(|r| r.severity == Severity::Fatal as i32)
                    .map_or_else(
                        || "answered".to_owned(),
                        |r| format!("Fatal: {}", r.message),
                    )
            }
        };
        let ok = match case.expect {
            Expect::Success => got == "answered",
            Expect::Fatal(_) | Expect::Budget => {
                got.starts_with("Fatal: ") && case.expect.fatal_matches(&got)
            }
            Expect::Refused(text) => got.starts_with("refused: ") && got.contains(text),
        };
        if !ok {
            wrong.push(format!(
                "{}: expected {:?}, got {}",
                case.name,
                case.expect,
                got.chars().take(300).collect::<String>()
            ));
        }
        assert!(
            server
                .child
                .try_wait()
                .expect("the server's status")
                .is_none(),
            "{}: the server died",
            case.name
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let good = request(
        "Resource(\"cm\", {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"})\n",
        &Value::Null,
        Vec::new(),
    );
    let answer = rt.block_on(call(channel, good)).expect("still serving");
    let rsp = RunFunctionResponse::decode(answer).expect("a response");
    assert!(rsp.desired.is_some_and(|d| d.resources.contains_key("cm")));
}
