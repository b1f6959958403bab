//! Hostile inputs against the real server (worker processes, the
//! default): each gets the answer it must get, and the server keeps
//! serving. Timings and memory are the hostile benchmark's business
//! (`cargo bench --bench hostile`).

use crate::support;

use std::time::Duration;

use function_sdk_rust::proto::v1::{RunFunctionResponse, Severity};
use function_starlark::wire::depth::{TooDeep, check_request};
use prost::Message;
use serde_json::Value;
use support::hostile::{Expect, cases};
use support::{call, connect, deep_observed, request, runtime, start};

#[test]
fn every_hostile_input_gets_its_answer_and_the_server_keeps_serving() {
    const TIMEOUT_SECONDS: u64 = 10;
    let timeout = TIMEOUT_SECONDS.to_string();
    let args: Vec<String> = ["--metrics-address", "", "--timeout-seconds", &timeout]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut server = start(&support::this_binary(), &args);
    let rt = runtime();
    let channel = rt
        .block_on(connect(&server.address))
        .expect("the server accepts connections");
    // All at once: the server queues what its lanes cannot take yet, and
    // the slowest case (one that runs to its deadline) sets the pace. How
    // long a case waits in the queue depends on the machine's cores (the
    // lanes) and how busy it is, so the deadline is what holds even if the
    // server ran one case at a time: each run ends by the server's timeout,
    // and a few seconds for the transport. Only a hung request misses it.
    let cases = cases();
    let deadline = Duration::from_secs(cases.len() as u64 * (TIMEOUT_SECONDS + 5));
    let answers = rt.block_on(async {
        let calls: Vec<_> = cases
            .into_iter()
            .map(|case| {
                let channel = channel.clone();
                tokio::spawn(async move {
                    let answer =
                        tokio::time::timeout(deadline, call(channel, case.request.clone())).await;
                    (case, answer)
                })
            })
            .collect();
        let mut answers = Vec::new();
        for call in calls {
            answers.push(call.await.expect("a call"));
        }
        answers
    });
    let mut wrong = Vec::new();
    for (case, answer) in answers {
        let Ok(answer) = answer else {
            wrong.push(format!("{}: no answer within {deadline:?}", case.name));
            continue;
        };
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
            Expect::Fatal(_) | Expect::Budget | Expect::FatalOrLate(_) => {
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
    }
    assert!(
        server
            .child
            .try_wait()
            .expect("the server's status")
            .is_none(),
        "the server died"
    );
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

mod generated {
    //! Random scripts and requests: whatever arrives, the server answers
    //! and keeps running.

    use bytes::Bytes;
    use function_sdk_rust::proto::v1::{Resource, RunFunctionRequest, State};
    use pbjson_types::value::Kind;
    use pbjson_types::{ListValue, Struct, Value as PbValue};
    use proptest::prelude::*;
    use prost::Message;
    use serde_json::Value;

    use super::support::{call, connect, request, runtime, start};

    /// Fragments scripts are made of: valid, half-valid and hostile.
    const FRAGMENTS: &[&str] = &[
        "x = ",
        "[",
        "]",
        "(",
        ")",
        "{",
        "}",
        "1",
        " + ",
        " * ",
        "\"s\"",
        ", ",
        ":",
        "\n",
        "    ",
        "def f(a):\n",
        "    return ",
        "for i in range(3):\n",
        "while True:\n",
        "if x:\n",
        "Resource(\"r\", ",
        "{\"apiVersion\": \"v1\", \"kind\": \"C\"}",
        ")\n",
        "oxr",
        ".spec",
        "[0]",
        "lambda: ",
        "json.encode(",
        "yaml.decode(\"a: [\")",
        "load(\"m.star\", \"y\")\n",
        "\"\"\"",
        "'",
        "#",
        "\\",
        "é",
        "\t",
        "fail(",
        "**",
        "x.extend(x)",
        "dict.merge(",
        "regex.find_all(\"a*\", ",
        "str(",
        "f(f(",
    ];

    fn script() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::collection::vec(prop::sample::select(FRAGMENTS), 0..60)
                .prop_map(|parts| parts.concat()),
            "\\PC{0,300}",
            (1usize..30_000).prop_map(|n| format!("x = {}{}\n", "[".repeat(n), "]".repeat(n / 2))),
        ]
    }

    fn value(depth: u32) -> BoxedStrategy<PbValue> {
        let leaf = prop_oneof![
            Just(Kind::NullValue(0)),
            any::<f64>().prop_map(Kind::NumberValue),
            "\\PC{0,40}".prop_map(Kind::StringValue),
            any::<bool>().prop_map(Kind::BoolValue),
        ];
        leaf.prop_recursive(depth, 200, 6, |inner| {
            prop_oneof![
                prop::collection::hash_map("\\PC{0,10}", inner.clone(), 0..6).prop_map(|m| {
                    Kind::StructValue(Struct {
                        fields: m
                            .into_iter()
                            .map(|(k, v)| (k, PbValue { kind: Some(v) }))
                            .collect(),
                    })
                }),
                prop::collection::vec(inner, 0..6).prop_map(|l| {
                    Kind::ListValue(ListValue {
                        values: l.into_iter().map(|v| PbValue { kind: Some(v) }).collect(),
                    })
                }),
            ]
        })
        .prop_map(|kind| PbValue { kind: Some(kind) })
        .boxed()
    }

    /// A request with a random observed composite and a script reading it.
    fn shaped_request() -> impl Strategy<Value = Bytes> {
        prop::collection::hash_map("\\PC{0,10}", value(8), 0..8).prop_map(|fields| {
            let input = super::support::to_struct(&serde_json::json!({
                "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
                "kind": "StarlarkInput",
                "spec": {"source": "dxr[\"status\"] = {\"seen\": json.encode(oxr)}\nResource(\"copy\", dict(oxr, apiVersion=\"v1\", kind=\"C\"))\n"},
            }));
            Bytes::from(
                RunFunctionRequest {
                    input: Some(input),
                    observed: Some(State {
                        composite: Some(Resource {
                            resource: Some(Struct { fields }),
                            ..Resource::default()
                        }),
                        ..State::default()
                    }),
                    ..RunFunctionRequest::default()
                }
                .encode_to_vec(),
            )
        })
    }

    fn any_request() -> impl Strategy<Value = Bytes> {
        prop_oneof![
            script().prop_map(|s| request(&s, &Value::Null, Vec::new())),
            shaped_request(),
            prop::collection::vec(any::<u8>(), 0..2000).prop_map(Bytes::from),
        ]
    }

    #[test]
    fn the_server_answers_whatever_it_is_sent() {
        let args: Vec<String> = ["--metrics-address", "", "--timeout-seconds", "2"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let server = std::cell::RefCell::new(start(&super::support::this_binary(), &args));
        let rt = runtime();
        let address = server.borrow().address.clone();
        let channel = rt.block_on(connect(&address)).expect("a connection");
        let config = ProptestConfig {
            cases: 150,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        proptest!(config, |(req in any_request())| {
            let answer = rt.block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(30), call(channel.clone(), req)).await
            });
            prop_assert!(answer.is_ok(), "no answer within 30 s");
            let alive = server.borrow_mut().child.try_wait().expect("a status").is_none();
            prop_assert!(alive, "the server died");
        });
    }
}

#[test]
fn requests_as_deep_as_go_accepts_pass_the_depth_check() {
    // Request > State > Resource, then three levels per map, two per list.
    assert_eq!(check_request(&deep_observed(3_000, 0)), Ok(()));
    assert_eq!(check_request(&deep_observed(1, 4_990)), Ok(()));
    assert_eq!(check_request(&[]), Ok(()));
}

#[test]
fn deeper_requests_are_refused_naming_the_limit() {
    assert_eq!(check_request(&deep_observed(3_400, 0)), Err(TooDeep));
    assert_eq!(check_request(&deep_observed(1, 5_100)), Err(TooDeep));
    assert!(TooDeep.to_string().contains("10000 protobuf messages"));
}
